# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: miss reasons and registration histograms of
# the lease cache's statistics, over the counting registrar.
check_PROGRAMS += test/test_stats_misses
test_test_stats_misses_SOURCES = test/test_stats_misses.c
test_test_stats_misses_LDADD = test/libmrltest.la test/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_stats_misses
