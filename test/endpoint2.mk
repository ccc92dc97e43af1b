# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# Endpoints opened through endpoint2 lease exactly like fi_endpoint's (CQ,
# selective completion, counters only) on every loopback provider.
check_PROGRAMS += test/test_endpoint2
test_test_endpoint2_SOURCES = test/test_endpoint2.c $(XFER_TEST_SOURCES)
test_test_endpoint2_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_endpoint2
