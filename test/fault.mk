# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: failures injected under mrlease.

# Threads posting NULL-descriptor transfers while registrations, posts and
# completions fail (test/test_fault_stress.c says which case proves what);
# the script runs each case in a process of its own. Also under
# ThreadSanitizer.
check_PROGRAMS += test/test_fault_stress
test_test_fault_stress_SOURCES = test/test_fault_stress.c $(XFER_TEST_SOURCES)
test_test_fault_stress_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/fault_stress.sh
SUITE_CONCURRENCY += $(top_srcdir)/test/fault_stress.sh
EXTRA_DIST += test/fault_stress.sh
