# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: conformance by transcript. test/conform/conform
# runs each libfabric semantic (EQ, CQ, poll and wait sets, counters, AV,
# MR, cancel, peeks and claims, triggered operations, endpoint options, CM)
# on every loopback provider without FI_HOOK and under each hook setting,
# and requires the same observable results.
check_PROGRAMS += test/conform/conform
test_conform_conform_SOURCES = test/conform/conform.c test/conform/conform.h \
	test/conform/conform_rig.c test/conform/conform_eq.c \
	test/conform/conform_cq.c test/conform/conform_claim.c \
	test/conform/conform_ctl.c test/conform/conform_mr.c \
	test/conform/conform_alias.c
test_conform_conform_LDADD = test/libmrltest.la $(FABRIC_LIBS)
SUITE += test/conform/conform
