# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor under stress (issue 12, item 5).

# NULL-descriptor transfers over malloc/free churn while glibc, jemalloc and
# mimalloc purge at once, the monitor forced over tcp;ofi_rxm treated as
# pinning. The script runs the program once per allocator (LD_PRELOAD); the
# preloaded ones are skipped under AddressSanitizer, whose allocator they
# would replace.
check_PROGRAMS += test/test_monitor_alloc
test_test_monitor_alloc_SOURCES = test/test_monitor_alloc.c $(XFER_TEST_SOURCES)
test_test_monitor_alloc_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor_alloc.sh
EXTRA_DIST += test/monitor_alloc.sh
