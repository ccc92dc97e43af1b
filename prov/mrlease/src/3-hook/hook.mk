# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the passthrough layer (one file per fid class;
# prov/mrlease/include/mrl_hook.h is the map of every wrapper;
# mrl_hook_debug.h its test-only counters).
noinst_LTLIBRARIES += prov/mrlease/libmrl-hook.la
prov_mrlease_libmrl_hook_la_SOURCES = \
	prov/mrlease/include/mrl_hook.h \
	prov/mrlease/include/mrl_class.h \
	prov/mrlease/src/3-hook/mrl_hook_debug.h \
	prov/mrlease/src/3-hook/hook_fid.c \
	prov/mrlease/src/3-hook/hook_fabric.c \
	prov/mrlease/src/3-hook/hook_domain.c \
	prov/mrlease/src/3-hook/hook_eq.c \
	prov/mrlease/src/3-hook/hook_wait.c \
	prov/mrlease/src/3-hook/hook_av.c \
	prov/mrlease/src/3-hook/hook_cq.c \
	prov/mrlease/src/3-hook/hook_cntr.c \
	prov/mrlease/src/3-hook/hook_ep.c \
	prov/mrlease/src/3-hook/hook_cm.c \
	prov/mrlease/src/3-hook/hook_mr.c \
	prov/mrlease/src/3-hook/hook_xfer.c \
	prov/mrlease/src/3-hook/hook_opflags.c
# In the release tarball: included by mrl_hook.h (libfabric 1.x/2.x headers).
EXTRA_DIST += prov/mrlease/include/mrl_compat.h
