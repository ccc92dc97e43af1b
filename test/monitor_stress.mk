# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor under stress.

# NULL-descriptor transfers over malloc/free churn while glibc, jemalloc and
# mimalloc purge at once, the monitor forced over tcp;ofi_rxm treated as
# pinning, mrcheck's frame checker under mrlease. The script runs the program once per allocator (LD_PRELOAD); the
# preloaded ones are skipped under AddressSanitizer, whose allocator they
# would replace.
check_PROGRAMS += test/test_monitor_alloc
test_test_monitor_alloc_SOURCES = test/test_monitor_alloc.c $(XFER_TEST_SOURCES)
test_test_monitor_alloc_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor_alloc.sh
EXTRA_DIST += test/monitor_alloc.sh

# fork() while the monitor runs and threads are inside leased transfers and
# invalidations: children exit, or open libfabric afresh and transfer; the
# parent carries on. Not under ThreadSanitizer: it kills a child of a
# multi-threaded process that starts a thread (die_after_fork; the child's
# own monitor is one) and documents going on with die_after_fork=0 as
# unsupported.
check_PROGRAMS += test/test_monitor_fork
test_test_monitor_fork_SOURCES = test/test_monitor_fork.c $(XFER_TEST_SOURCES)
test_test_monitor_fork_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_monitor_fork
