# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the plugin glue -- the mrlease personality and
# the FI_MRLEASE_OPS_1 extension (prov/mrlease/include/mrl_plugin.h). The
# entry point, mrl_prov.c, is in Makefile.am (only it goes into the DL
# provider alone).
noinst_LTLIBRARIES += prov/mrlease/libmrl-plugin.la
prov_mrlease_libmrl_plugin_la_SOURCES = \
	prov/mrlease/include/mrl_plugin.h \
	prov/mrlease/src/8-plugin/mrl_ext.c \
	prov/mrlease/src/8-plugin/mrl_personality.c
