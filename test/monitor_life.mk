# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor's life end to end.

# Stop, restart and descriptors; a task that cannot read (seccomp, in a
# child); prompt release of what it dropped; watches released; an overflow
# is not churn; a fork child starts with no churn. Over tcp;ofi_rxm with
# mrcheck below mrlease; test/monitor_life.sh runs one process per
# FI_MRLEASE_MONITOR_CHURN setting.
check_PROGRAMS += test/test_monitor_life
test_test_monitor_life_SOURCES = test/test_monitor_life.c $(XFER_TEST_SOURCES)
test_test_monitor_life_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/monitor_life.sh
EXTRA_DIST += test/monitor_life.sh
