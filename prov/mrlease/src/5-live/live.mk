# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: live statistics (FI_MRLEASE_STATS_LIVE), the
# publisher of the per-process file (mrl_live.h) whose layout
# (mrl_live_file.h) mrlease-stat(1) reads.
noinst_LTLIBRARIES += prov/mrlease/libmrl-live.la
prov_mrlease_libmrl_live_la_SOURCES = \
	prov/mrlease/include/mrl_live.h \
	prov/mrlease/include/mrl_live_file.h \
	prov/mrlease/src/5-live/mrl_live.c
