# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache's statistics and capacity:
# snapshots that stay possible under threads, process-wide
# counts past the statistic slots, caps restored as leases end. Threads,
# so also under TSan.
check_PROGRAMS += test/test_cache_stats
test_test_cache_stats_SOURCES = test/test_cache_stats.c
test_test_cache_stats_LDADD = test/libmrltest.la test/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_cache_stats
SUITE_CONCURRENCY += test/test_cache_stats
