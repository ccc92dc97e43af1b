# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache, and its binding to libfabric
# domains (mrl_lease_domain.c: registrar, personality domain state).
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_arena.h \
	prov/mrlease/include/mrl_cache.h \
	prov/mrlease/src/cache/mrl_arena.c \
	prov/mrlease/src/cache/mrl_cache.c \
	prov/mrlease/include/mrl_lease.h \
	prov/mrlease/src/cache/mrl_lease_domain.c
