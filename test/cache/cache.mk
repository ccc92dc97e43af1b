# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache's tests (prov/mrlease/src/1-cache/).

# The cache as a data structure, over the counting registrar.
check_PROGRAMS += test/cache/test_cache
test_cache_test_cache_SOURCES = test/cache/test_cache.c
test_cache_test_cache_LDADD = test/common/libmrltest.la test/common/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/cache/test_cache

# The slab and node block source (huge-page chunks beyond a threshold);
# threads share it, so also under TSan.
check_PROGRAMS += test/cache/test_cache_arena
test_cache_test_cache_arena_SOURCES = test/cache/test_cache_arena.c
test_cache_test_cache_arena_LDADD = test/common/libmrltest.la prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/cache/test_cache_arena
SUITE_CONCURRENCY += test/cache/test_cache_arena

# Leases against a registry without them, on a real tcp domain (fi_mr_reg /
# fi_close).
check_PROGRAMS += test/cache/test_cache_tcp
test_cache_test_cache_tcp_SOURCES = test/cache/test_cache_tcp.c
test_cache_test_cache_tcp_LDADD = test/common/libmrltest.la test/common/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/cache/test_cache_tcp

# Threads: readers vs. invalidate + re-register (tcp), concurrent misses,
# churn with eviction, pins vs. invalidate and domain close, a domain close
# vs. another thread's deferred closes. Also under TSan.
check_PROGRAMS += test/cache/test_cache_concurrency
test_cache_test_cache_concurrency_SOURCES = test/cache/test_cache_concurrency.c
test_cache_test_cache_concurrency_LDADD = test/common/libmrltest.la test/common/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/cache/test_cache_concurrency
SUITE_CONCURRENCY += test/cache/test_cache_concurrency

# Statistics and capacity: snapshots that stay possible under threads, process-wide
# counts past the statistic slots, caps restored as leases end. Threads,
# so also under TSan.
check_PROGRAMS += test/cache/test_cache_stats
test_cache_test_cache_stats_SOURCES = test/cache/test_cache_stats.c
test_cache_test_cache_stats_LDADD = test/common/libmrltest.la test/common/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/cache/test_cache_stats
SUITE_CONCURRENCY += test/cache/test_cache_stats

# The lease cache's interval index (a B+tree,
# prov/mrlease/src/1-cache/mrl_btree.h) alone, against a reference model.
check_PROGRAMS += test/cache/test_cache_btree
test_cache_test_cache_btree_SOURCES = test/cache/test_cache_btree.c
test_cache_test_cache_btree_LDADD = test/common/libmrltest.la prov/mrlease/libmrlease-core.la \
	$(FABRIC_LIBS)
SUITE += test/cache/test_cache_btree

# Miss reasons and registration histograms of the cache's statistics, over
# the counting registrar.
check_PROGRAMS += test/cache/test_cache_stats_misses
test_cache_test_cache_stats_misses_SOURCES = test/cache/test_cache_stats_misses.c
test_cache_test_cache_stats_misses_LDADD = test/common/libmrltest.la \
	test/common/libcachereg.la prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/cache/test_cache_stats_misses
