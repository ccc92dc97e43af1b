# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor end to end (issue 12).

# The unmap loop (map at a fixed address, transfer with desc NULL, verify,
# munmap; two threads) under mrcheck's frame checker, once per
# FI_MRLEASE_PINNING / FI_MRLEASE_MONITOR setting; also under ThreadSanitizer.
check_PROGRAMS += test/test_monitor_unmap
test_test_monitor_unmap_SOURCES = test/test_monitor_unmap.c $(XFER_TEST_SOURCES)
test_test_monitor_unmap_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor_unmap.sh
SUITE_CONCURRENCY += $(top_srcdir)/test/monitor_unmap.sh
EXTRA_DIST += test/monitor_unmap.sh
