# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: libfabric semantics through FI_HOOK=mrlease,
# each case in a child process with the hook and, when it
# fails, without (the no-hook control).
check_PROGRAMS += test/test_conformance_hook
test_test_conformance_hook_SOURCES = test/test_conformance_hook.c $(XFER_TEST_SOURCES)
test_test_conformance_hook_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_conformance_hook
