# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the data path end to end.

XFER_TEST_SOURCES = test/xfer_util.c test/xfer_util.h
XFER_TEST_LDADD = test/libmrltest.la -ldl $(FABRIC_LIBS)

# mrcheck catches what it claims to (otherwise the other tests prove nothing).
check_PROGRAMS += test/test_e2e_mrcheck
test_test_e2e_mrcheck_SOURCES = test/test_e2e_mrcheck.c $(XFER_TEST_SOURCES)
test_test_e2e_mrcheck_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_e2e_mrcheck

# Every op family, errors, cancel, ep close, selective completion,
# FI_MULTI_RECV, counters-only, remote-access MRs, on every loopback provider.
check_PROGRAMS += test/test_e2e_xfer
test_test_e2e_xfer_SOURCES = test/test_e2e_xfer.c $(XFER_TEST_SOURCES)
test_test_e2e_xfer_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_e2e_xfer
# The same with FI_MR_LOCAL domains: the "always resolve" policy alone.
SUITE += $(top_srcdir)/test/e2e_mr_local.sh
EXTRA_DIST += test/e2e_mr_local.sh

# The seed's production crash end to end (span-shared registration,
# invalidate under in-flight GETs).
check_PROGRAMS += test/test_e2e_seed
test_test_e2e_seed_SOURCES = test/test_e2e_seed.c $(XFER_TEST_SOURCES)
test_test_e2e_seed_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_e2e_seed

# Threads posting NULL-desc RMA over malloc/free churn while another thread
# invalidates; also under ThreadSanitizer.
check_PROGRAMS += test/test_e2e_stress
test_test_e2e_stress_SOURCES = test/test_e2e_stress.c $(XFER_TEST_SOURCES)
test_test_e2e_stress_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_e2e_stress
SUITE_CONCURRENCY += test/test_e2e_stress

# ---- leases on the data path ----
# Leases from post to completion under FI_HOOK=mrlease on every provider.
check_PROGRAMS += test/test_xfer_lease
test_test_xfer_lease_SOURCES = test/test_xfer_lease.c $(XFER_TEST_SOURCES)
test_test_xfer_lease_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_xfer_lease

# Endpoint close racing a CQ reader inside a completion of its pool (shared
# pools): held deterministically in the window by the endpoint's test hook,
# and the natural race many times; also under ThreadSanitizer.
check_PROGRAMS += test/test_xfer_close_race
test_test_xfer_close_race_SOURCES = test/test_xfer_close_race.c $(XFER_TEST_SOURCES)
test_test_xfer_close_race_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_xfer_close_race
SUITE_CONCURRENCY += test/test_xfer_close_race

# FI_MULTI_RECV with two CQ readers on a shared pool: a reader held on a
# non-final entry while another reads the final one and posts again (the
# guarded CQ's deferral, mrl_completion_cq.c); also endpoint close with the
# op deferred. Also under ThreadSanitizer.
check_PROGRAMS += test/test_xfer_multi_recv_race
test_test_xfer_multi_recv_race_SOURCES = test/test_xfer_multi_recv_race.c $(XFER_TEST_SOURCES)
test_test_xfer_multi_recv_race_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_xfer_multi_recv_race
SUITE_CONCURRENCY += test/test_xfer_multi_recv_race

# Claiming receives (MPI_Mprobe/MPI_Mrecv) through the strict checker:
# leased, hidden on selective endpoints, released at completion, error or
# endpoint close; two threads probing and claiming on one CQ (also under
# ThreadSanitizer).
check_PROGRAMS += test/test_xfer_claim
test_test_xfer_claim_SOURCES = test/test_xfer_claim.c $(XFER_TEST_SOURCES)
test_test_xfer_claim_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_xfer_claim
SUITE_CONCURRENCY += test/test_xfer_claim
