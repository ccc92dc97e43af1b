# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache. Its rules and API:
# prov/mrlease/include/mrl_cache.h; its units' internals: mrl_cache_int.h;
# the inline hit path its hot callers include: mrl_cache.inl. It includes no
# header of another layer.
noinst_LTLIBRARIES += prov/mrlease/libmrl-cache.la
prov_mrlease_libmrl_cache_la_SOURCES = \
	prov/mrlease/include/mrl_cache.h \
	prov/mrlease/src/1-cache/mrl_arena.c \
	prov/mrlease/src/1-cache/mrl_arena.h \
	prov/mrlease/src/1-cache/mrl_btree.c \
	prov/mrlease/src/1-cache/mrl_btree.h \
	prov/mrlease/src/1-cache/mrl_cache.c \
	prov/mrlease/src/1-cache/mrl_cache_barrier.c \
	prov/mrlease/src/1-cache/mrl_cache.inl \
	prov/mrlease/src/1-cache/mrl_cache_fork.c \
	prov/mrlease/src/1-cache/mrl_cache_int.h \
	prov/mrlease/src/1-cache/mrl_cache_lease.c \
	prov/mrlease/src/1-cache/mrl_cache_miss.c \
	prov/mrlease/src/1-cache/mrl_cache_miss.h \
	prov/mrlease/src/1-cache/mrl_cache_stats.c \
	prov/mrlease/src/1-cache/mrl_filter.c \
	prov/mrlease/src/1-cache/mrl_filter.h \
	prov/mrlease/src/1-cache/mrl_readers.c \
	prov/mrlease/src/1-cache/mrl_readers.h \
	prov/mrlease/src/1-cache/mrl_slab.c \
	prov/mrlease/src/1-cache/mrl_slab.h
