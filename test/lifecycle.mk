# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: objects' lives at their edges (issue 16).

# Refused closes leave every class usable; libfabric's cleanup while a
# thread posts; fork while a thread is inside leased transfers (children
# exit or start clean, none hangs) on every loopback provider.
check_PROGRAMS += test/test_lifecycle
test_test_lifecycle_SOURCES = test/test_lifecycle.c $(XFER_TEST_SOURCES)
test_test_lifecycle_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_lifecycle
