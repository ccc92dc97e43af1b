# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the provider end to end, every layer at once:
# transfers under the strict checker (FI_HOOK='mrcheck;mrlease'), failures
# injected, a real MPI job.

# mrcheck catches what it claims to (otherwise the other tests prove nothing).
check_PROGRAMS += test/e2e/test_e2e_mrcheck
test_e2e_test_e2e_mrcheck_SOURCES = test/e2e/test_e2e_mrcheck.c $(XFER_TEST_SOURCES)
test_e2e_test_e2e_mrcheck_LDADD = $(XFER_TEST_LDADD)
SUITE += test/e2e/test_e2e_mrcheck

# The checker sees stale remote keys (FI_MRCHECK_FRAMES=1): an RMA or
# atomic with the key of pages unmapped and mapped again is reported, one
# with the new pages' key is not, on every loopback provider.
check_PROGRAMS += test/e2e/test_e2e_stale_key
test_e2e_test_e2e_stale_key_SOURCES = test/e2e/test_e2e_stale_key.c $(XFER_TEST_SOURCES)
test_e2e_test_e2e_stale_key_LDADD = $(XFER_TEST_LDADD)
SUITE += test/e2e/test_e2e_stale_key

# Every op family, errors, cancel, ep close, selective completion,
# FI_MULTI_RECV, counters-only, remote-access MRs, on every loopback provider.
check_PROGRAMS += test/e2e/test_e2e_xfer
test_e2e_test_e2e_xfer_SOURCES = test/e2e/test_e2e_xfer.c $(XFER_TEST_SOURCES)
test_e2e_test_e2e_xfer_LDADD = $(XFER_TEST_LDADD)
SUITE += test/e2e/test_e2e_xfer
# The same with FI_MR_LOCAL domains: the "always resolve" policy alone.
SUITE += $(top_srcdir)/test/e2e/e2e_mr_local.sh
EXTRA_DIST += test/e2e/e2e_mr_local.sh

# Invalidating a value keeps the registration it shares with its
# neighbours open under their in-flight GETs (span resolver), end to end.
check_PROGRAMS += test/e2e/test_e2e_invalidate_inflight
test_e2e_test_e2e_invalidate_inflight_SOURCES = test/e2e/test_e2e_invalidate_inflight.c $(XFER_TEST_SOURCES)
test_e2e_test_e2e_invalidate_inflight_LDADD = $(XFER_TEST_LDADD)
SUITE += test/e2e/test_e2e_invalidate_inflight

# Threads posting NULL-desc RMA over malloc/free churn while another thread
# invalidates; also under ThreadSanitizer.
check_PROGRAMS += test/e2e/test_e2e_stress
test_e2e_test_e2e_stress_SOURCES = test/e2e/test_e2e_stress.c $(XFER_TEST_SOURCES)
test_e2e_test_e2e_stress_LDADD = $(XFER_TEST_LDADD)
SUITE += test/e2e/test_e2e_stress
SUITE_CONCURRENCY += test/e2e/test_e2e_stress

# Threads posting NULL-descriptor transfers while registrations, posts and
# completions fail (test/e2e/test_e2e_fault_stress.c says which case proves what);
# the script runs each case in a process of its own. Also under
# ThreadSanitizer.
check_PROGRAMS += test/e2e/test_e2e_fault_stress
test_e2e_test_e2e_fault_stress_SOURCES = test/e2e/test_e2e_fault_stress.c $(XFER_TEST_SOURCES)
test_e2e_test_e2e_fault_stress_LDADD = $(XFER_TEST_LDADD)
SUITE += $(top_srcdir)/test/e2e/fault_stress.sh
SUITE_CONCURRENCY += $(top_srcdir)/test/e2e/fault_stress.sh
EXTRA_DIST += test/e2e/fault_stress.sh

# A real MPI job (Open MPI over libfabric) through FI_HOOK=mrlease, run by
# test/e2e/mpi.sh; the program is built only when
# configure found Open MPI's mpicc.
if HAVE_MPI
check_PROGRAMS += test/e2e/mpi/mpi_check
test_e2e_mpi_mpi_check_SOURCES = test/e2e/mpi/mpi_check.c
test_e2e_mpi_mpi_check_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
test_e2e_mpi_mpi_check_LDADD = $(MPI_LIBS) -ldl
endif
SUITE += $(top_srcdir)/test/e2e/mpi.sh
EXTRA_DIST += test/e2e/mpi.sh test/e2e/mpi/mpi_check.c
