# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache (its rules: mrl_cache.h; its
# units: mrl_cache_int.h), and its binding to libfabric domains
# (mrl_lease_domain.c: registrar, personality domain state).
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_arena.h \
	prov/mrlease/include/mrl_cache.h \
	prov/mrlease/src/cache/mrl_arena.c \
	prov/mrlease/src/cache/mrl_btree.c \
	prov/mrlease/src/cache/mrl_btree.h \
	prov/mrlease/src/cache/mrl_cache.c \
	prov/mrlease/src/cache/mrl_cache_fork.c \
	prov/mrlease/src/cache/mrl_cache_int.h \
	prov/mrlease/src/cache/mrl_cache_lease.c \
	prov/mrlease/src/cache/mrl_cache_miss.c \
	prov/mrlease/src/cache/mrl_cache_miss.h \
	prov/mrlease/src/cache/mrl_cache_stats.c \
	prov/mrlease/src/cache/mrl_filter.c \
	prov/mrlease/src/cache/mrl_filter.h \
	prov/mrlease/src/cache/mrl_readers.c \
	prov/mrlease/src/cache/mrl_readers.h \
	prov/mrlease/src/cache/mrl_slab.c \
	prov/mrlease/src/cache/mrl_slab.h \
	prov/mrlease/include/mrl_lease.h \
	prov/mrlease/src/cache/mrl_lease_domain.c
