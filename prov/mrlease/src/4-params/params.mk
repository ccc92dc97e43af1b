# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the parameters (FI_MRLEASE_*, read once into
# mrl_params; prov/mrlease/include/mrl_params.h), above the cache whose
# configuration they fill.
noinst_LTLIBRARIES += prov/mrlease/libmrl-params.la
prov_mrlease_libmrl_params_la_SOURCES = \
	prov/mrlease/include/mrl_assert.h \
	prov/mrlease/include/mrl_params.h \
	prov/mrlease/src/4-params/mrl_params.c
