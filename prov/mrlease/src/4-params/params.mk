# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the parameters (FI_MRLEASE_*, read once into
# mrl_params; prov/mrlease/include/mrl_params.h), above the cache whose
# configuration they fill.
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_assert.h \
	prov/mrlease/include/mrl_params.h \
	prov/mrlease/src/4-params/mrl_params.c
