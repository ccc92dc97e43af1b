# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache (issue 3).
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_arena.h \
	prov/mrlease/include/mrl_cache.h \
	prov/mrlease/src/mrl_arena.c \
	prov/mrlease/src/mrl_cache.c
