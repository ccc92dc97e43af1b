# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the data path's tests (prov/mrlease/src/7-xfer/), each
# under FI_HOOK=mrlease on real providers over loopback.

# Leases from post to completion under FI_HOOK=mrlease on every provider.
check_PROGRAMS += test/xfer/test_xfer_lease
test_xfer_test_xfer_lease_SOURCES = test/xfer/test_xfer_lease.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_lease_LDADD = $(XFER_TEST_LDADD)
SUITE += test/xfer/test_xfer_lease

# Endpoint close racing a CQ reader inside a completion of its pool (shared
# pools): held deterministically in the window by the endpoint's test hook,
# and the natural race many times; also under ThreadSanitizer.
check_PROGRAMS += test/xfer/test_xfer_close_race
test_xfer_test_xfer_close_race_SOURCES = test/xfer/test_xfer_close_race.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_close_race_LDADD = $(XFER_TEST_LDADD)
SUITE += test/xfer/test_xfer_close_race
SUITE_CONCURRENCY += test/xfer/test_xfer_close_race

# FI_MULTI_RECV with two CQ readers on a shared pool: a reader held on a
# non-final entry while another reads the final one and posts again (the
# guarded CQ's deferral, mrl_xfer_cq.c and mrl_xfer_op.c); also endpoint close with the
# op deferred. Also under ThreadSanitizer.
check_PROGRAMS += test/xfer/test_xfer_multi_recv_race
test_xfer_test_xfer_multi_recv_race_SOURCES = test/xfer/test_xfer_multi_recv_race.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_multi_recv_race_LDADD = $(XFER_TEST_LDADD)
SUITE += test/xfer/test_xfer_multi_recv_race
SUITE_CONCURRENCY += test/xfer/test_xfer_multi_recv_race

# Claiming receives (MPI_Mprobe/MPI_Mrecv) through the strict checker:
# leased, hidden on selective endpoints, released at completion, error or
# endpoint close; two threads probing and claiming on one CQ (also under
# ThreadSanitizer).
check_PROGRAMS += test/xfer/test_xfer_claim
test_xfer_test_xfer_claim_SOURCES = test/xfer/test_xfer_claim.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_claim_LDADD = $(XFER_TEST_LDADD)
SUITE += test/xfer/test_xfer_claim
SUITE_CONCURRENCY += test/xfer/test_xfer_claim

# Endpoints opened through endpoint2 lease exactly like fi_endpoint's (CQ,
# selective completion, counters only) on every loopback provider.
check_PROGRAMS += test/xfer/test_xfer_endpoint2
test_xfer_test_xfer_endpoint2_SOURCES = test/xfer/test_xfer_endpoint2.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_endpoint2_LDADD = $(XFER_TEST_LDADD)
SUITE += test/xfer/test_xfer_endpoint2

# Refused closes leave every class usable; libfabric's cleanup while a
# thread posts; fork while a thread is inside leased transfers (children
# exit or start clean, none hangs) on every loopback provider.
check_PROGRAMS += test/xfer/test_xfer_lifecycle
test_xfer_test_xfer_lifecycle_SOURCES = test/xfer/test_xfer_lifecycle.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_lifecycle_LDADD = $(XFER_TEST_LDADD)
SUITE += test/xfer/test_xfer_lifecycle

# Remote-access registrations (FI_MRLEASE_REMOTE=cache|forward) on every
# loopback provider with RMA: the per-request pattern, exact matches only,
# unmap, invalidate, eviction, the idle delay (with and without the closer),
# domain close, forwarded reasons, rxm's inner registrations, threads
# registering while another unmaps (also under ThreadSanitizer), and a
# client process writing through a server process's keys.
# test/xfer/xfer_remote.sh runs one process per group of settings.
check_PROGRAMS += test/xfer/test_xfer_remote
test_xfer_test_xfer_remote_SOURCES = test/xfer/test_xfer_remote.c $(XFER_TEST_SOURCES)
test_xfer_test_xfer_remote_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/xfer/xfer_remote.sh
SUITE_CONCURRENCY += $(top_srcdir)/test/xfer/xfer_remote.sh
EXTRA_DIST += test/xfer/xfer_remote.sh
