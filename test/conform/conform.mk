# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the conformance suite, libfabric's semantics through
# the hook as they are without it, two programs.

# test_conform, conformance by transcript: runs each libfabric semantic (EQ, CQ, poll and wait sets, counters, AV,
# MR, cancel, peeks and claims, triggered operations, endpoint options, CM)
# on every loopback provider without FI_HOOK and under each hook setting,
# and requires the same observable results.
check_PROGRAMS += test/conform/test_conform
test_conform_test_conform_SOURCES = test/conform/test_conform.c test/conform/conform.h \
	test/conform/conform_rig.c test/conform/conform_eq.c \
	test/conform/conform_cq.c test/conform/conform_claim.c \
	test/conform/conform_ctl.c test/conform/conform_mr.c \
	test/conform/conform_alias.c
test_conform_test_conform_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += test/conform/test_conform

# test_conform_hook: libfabric semantics through FI_HOOK=mrlease, each case in a child process with the hook and, when it
# fails, without (the no-hook control).
check_PROGRAMS += test/conform/test_conform_hook
test_conform_test_conform_hook_SOURCES = test/conform/test_conform_hook.c $(XFER_TEST_SOURCES)
test_conform_test_conform_hook_LDADD = $(XFER_TEST_LDADD)
SUITE += test/conform/test_conform_hook
