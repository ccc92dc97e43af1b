# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache's tests.

# The counting registrar (fake or over a real domain) the cache tests share.
check_LTLIBRARIES += test/libcachereg.la
test_libcachereg_la_SOURCES = test/cache_registrar.c test/cache_registrar.h
test_libcachereg_la_LIBADD = $(FABRIC_LIBS)

# The cache as a data structure, over the counting registrar.
check_PROGRAMS += test/test_cache
test_test_cache_SOURCES = test/test_cache.c
test_test_cache_LDADD = test/libmrltest.la test/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_cache

# The slab and node block source (huge-page chunks beyond a threshold);
# threads share it, so also under TSan.
check_PROGRAMS += test/test_arena
test_test_arena_SOURCES = test/test_arena.c
test_test_arena_LDADD = test/libmrltest.la prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_arena
SUITE_CONCURRENCY += test/test_arena

# The seed's scenarios on a real tcp domain (fi_mr_reg / fi_close).
check_PROGRAMS += test/test_cache_tcp
test_test_cache_tcp_SOURCES = test/test_cache_tcp.c
test_test_cache_tcp_LDADD = test/libmrltest.la test/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_cache_tcp

# Threads: readers vs. invalidate + re-register (tcp), concurrent misses,
# churn with eviction, pins vs. invalidate and domain close. Also under TSan.
check_PROGRAMS += test/test_cache_concurrency
test_test_cache_concurrency_SOURCES = test/test_cache_concurrency.c
test_test_cache_concurrency_LDADD = test/libmrltest.la test/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_cache_concurrency
SUITE_CONCURRENCY += test/test_cache_concurrency
