# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the plugin glue -- parameters (FI_MRLEASE_*), the
# mrlease personality and the FI_MRLEASE_OPS_1 extension. The entry point,
# mrl_prov.c, is in Makefile.am (only it goes into the DL provider alone).
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_assert.h \
	prov/mrlease/include/mrl_params.h \
	prov/mrlease/src/mrl_params.c
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/src/mrl_ext.c \
	prov/mrlease/src/mrl_personality.c
