# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor's tests (prov/mrlease/src/2-monitor/),
# end to end: its life, and under stress.

# The unmap loop (map at a fixed address, transfer with desc NULL, verify,
# munmap; two threads) under mrcheck's frame checker, once per
# FI_MRLEASE_PINNING / FI_MRLEASE_MONITOR setting; also under ThreadSanitizer.
check_PROGRAMS += test/monitor/test_monitor_unmap
test_monitor_test_monitor_unmap_SOURCES = test/monitor/test_monitor_unmap.c $(XFER_TEST_SOURCES)
test_monitor_test_monitor_unmap_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor/monitor_unmap.sh
SUITE_CONCURRENCY += $(top_srcdir)/test/monitor/monitor_unmap.sh
EXTRA_DIST += test/monitor/monitor_unmap.sh

# The monitor with the lease cache over the real kernel and the counting
# registrar: every way pages leave, no window after munmap returns, the VMA
# count, and the rules that keep the monitor from deadlocking; also under
# ThreadSanitizer.
check_PROGRAMS += test/monitor/test_monitor
test_monitor_test_monitor_SOURCES = test/monitor/test_monitor.c
test_monitor_test_monitor_LDADD = test/common/libmrltest.la test/common/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/monitor/test_monitor
SUITE_CONCURRENCY += test/monitor/test_monitor

# Stop, restart and descriptors; a task that cannot read (seccomp, in a
# child); prompt release of what it dropped; watches released; an overflow
# is not churn; a fork child starts with no churn. Over tcp;ofi_rxm with
# mrcheck below mrlease; test/monitor/monitor_life.sh runs one process per
# FI_MRLEASE_MONITOR_CHURN setting.
check_PROGRAMS += test/monitor/test_monitor_life
test_monitor_test_monitor_life_SOURCES = test/monitor/test_monitor_life.c $(XFER_TEST_SOURCES)
test_monitor_test_monitor_life_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor/monitor_life.sh
EXTRA_DIST += test/monitor/monitor_life.sh

# NULL-descriptor transfers over malloc/free churn while glibc, jemalloc and
# mimalloc purge at once, the monitor forced over tcp;ofi_rxm treated as
# pinning, mrcheck's frame checker under mrlease. The script runs the program once per allocator (LD_PRELOAD); the
# preloaded ones are skipped under AddressSanitizer, whose allocator they
# would replace.
check_PROGRAMS += test/monitor/test_monitor_alloc
test_monitor_test_monitor_alloc_SOURCES = test/monitor/test_monitor_alloc.c $(XFER_TEST_SOURCES)
test_monitor_test_monitor_alloc_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor/monitor_alloc.sh
EXTRA_DIST += test/monitor/monitor_alloc.sh

# fork() while the monitor runs and threads are inside leased transfers and
# invalidations: children exit, or open libfabric afresh and transfer; the
# parent carries on. Not under ThreadSanitizer: it kills a child of a
# multi-threaded process that starts a thread (die_after_fork; the child's
# own monitor is one) and documents going on with die_after_fork=0 as
# unsupported.
check_PROGRAMS += test/monitor/test_monitor_fork
test_monitor_test_monitor_fork_SOURCES = test/monitor/test_monitor_fork.c $(XFER_TEST_SOURCES)
test_monitor_test_monitor_fork_LDADD = $(XFER_TEST_LDADD)
SUITE += test/monitor/test_monitor_fork
