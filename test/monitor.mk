# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor end to end.

# The unmap loop (map at a fixed address, transfer with desc NULL, verify,
# munmap; two threads) under mrcheck's frame checker, once per
# FI_MRLEASE_PINNING / FI_MRLEASE_MONITOR setting; also under ThreadSanitizer.
check_PROGRAMS += test/test_monitor_unmap
test_test_monitor_unmap_SOURCES = test/test_monitor_unmap.c $(XFER_TEST_SOURCES)
test_test_monitor_unmap_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor_unmap.sh
SUITE_CONCURRENCY += $(top_srcdir)/test/monitor_unmap.sh
EXTRA_DIST += test/monitor_unmap.sh

# The monitor with the lease cache over the real kernel and the counting
# registrar: every way pages leave, no window after munmap returns, the VMA
# count, and the rules that keep the monitor from deadlocking; also under
# ThreadSanitizer.
check_PROGRAMS += test/test_monitor
test_test_monitor_SOURCES = test/test_monitor.c
test_test_monitor_LDADD = test/libmrltest.la test/libcachereg.la \
	prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_monitor
SUITE_CONCURRENCY += test/test_monitor
