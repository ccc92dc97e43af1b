/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Invalidating memory keeps a registration open while transfers in flight
 * lease it, end to end over tcp;ofi_rxm with mrcheck under mrlease: values
 * laid out in one allocator extent are served by one cached registration
 * (span resolver); GETs into some values are in flight when a neighbour is
 * freed and invalidated and new values are populated. A registry that
 * closed the shared registration at the invalidate would close it under the
 * GETs (mrcheck: MR closed under an operation in flight), and the next post
 * would use a closed descriptor: a crash in production.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#define EXTENT	(2u << 20)
#define SLOT	(64u * 1024)
#define VALUE	(48u * 1024)
#define NVALUES 8

static char *extent;

/* The allocator's extent lookup: every value lives in the one extent. */
static int
extent_span(void *arg, const void *addr, size_t len, void **base,
	    size_t *span_len)
{
	(void) arg;
	if ((const char *) addr < extent ||
	    (const char *) addr + len > extent + EXTENT)
		return -1;
	*base = extent;
	*span_len = EXTENT;
	return 0;
}

/* freeing_one_value_must_not_deregister_a_neighbour_still_in_flight */
static void
test_invalidate_keeps_inflight_neighbours_registration_open(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA};
	struct mrlt_pair pair;
	struct fi_mrlease_stats st0, st;
	struct fi_context2 ctx[NVALUES];
	struct mrlt_comp comp[NVALUES];
	static const int first[] = {0, 1, 2}, later[] = {4, 5};
	char *remote = aligned_alloc(4096, NVALUES * SLOT);
	struct fid_mr *rmr = NULL;
	int ret;

	extent = aligned_alloc(EXTENT, EXTENT);
	CHECK(extent && remote);
	ret = mrlt_pair_open(&opts, &pair);
	if (ret == -FI_ENODATA) {
		mrlt_skip(__func__, "tcp;ofi_rxm unavailable");
		return;
	}
	CHECK_FI(ret);
	CHECK_MSG(pair.mrl, "mrlease not stacked (%s unavailable)",
		  FI_MRLEASE_OPS_1);
	CHECK_FI(pair.mrl->set_span(pair.domain, extent_span, NULL));
	for (int v = 0; v < NVALUES; v++)
		mrlt_fill(remote + v * SLOT, VALUE, 1000 + v);
	memset(extent, 0, EXTENT);
	CHECK_FI(mrlt_pair_mr_reg(&pair, remote, NVALUES * SLOT, FI_REMOTE_READ,
				  &rmr));
	st0 = mrlt_pair_stats(&pair);

	/* GETs into values 0..2: one registration covers the whole extent. */
	for (int i = 0; i < 3; i++) {
		int v = first[i];

		CHECK_FI(MRLT_PAIR_POST(
			&pair, fi_read(pair.ep[0], extent + v * SLOT, VALUE,
				       NULL, pair.addr[1],
				       mrlt_pair_rma_addr(&pair, remote,
							  remote + v * SLOT),
				       fi_mr_key(rmr), &ctx[v])));
	}
	st = mrlt_pair_stats(&pair);
	CHECK_EQ(1, st.registrations - st0.registrations);
	/* Still in flight: nothing has been read from the CQ yet. */
	CHECK_EQ(0, pair.nstash);
	CHECK(st.leases >= 3);

	/* Value 3 is freed: the allocator purges its pages. */
	CHECK_FI(pair.mrl->invalidate(extent + 3 * SLOT, VALUE));
	st = mrlt_pair_stats(&pair);
	CHECK_EQ(0, st.deregistrations - st0.deregistrations);
	CHECK_EQ(0, mrlt_violations(&pair));

	/* New values are populated and read while the old GETs fly. */
	for (int i = 0; i < 2; i++) {
		int v = later[i];

		CHECK_FI(MRLT_PAIR_POST(
			&pair, fi_read(pair.ep[0], extent + v * SLOT, VALUE,
				       NULL, pair.addr[1],
				       mrlt_pair_rma_addr(&pair, remote,
							  remote + v * SLOT),
				       fi_mr_key(rmr), &ctx[v])));
	}
	st = mrlt_pair_stats(&pair);
	CHECK_EQ(2, st.registrations - st0.registrations);

	CHECK_EQ(5, mrlt_reap(&pair, comp, 5));
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(0, comp[i].err);
		CHECK(comp[i].ctx >= (void *) &ctx[0] &&
		      comp[i].ctx < (void *) &ctx[NVALUES]);
	}
	for (int v = 0; v < NVALUES; v++) {
		if (v == 0 || v == 1 || v == 2 || v == 4 || v == 5)
			CHECK_EQ(-1, mrlt_verify(extent + v * SLOT, VALUE,
						 1000 + v));
	}
	/* The retired registration closed once its last GET completed. */
	st = mrlt_pair_stats(&pair);
	CHECK_EQ(1, st.deregistrations - st0.deregistrations);
	CHECK_EQ(0, st.leases);
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(fi_close(&rmr->fid));
	CHECK_FI(pair.mrl->set_span(pair.domain, NULL, NULL));
	CHECK_FI(mrlt_pair_close(&pair));
	free(extent);
	free(remote);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=0", NULL};

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrcheck;mrlease", env);
	MRLT_RUN(test_invalidate_keeps_inflight_neighbours_registration_open);
	return mrlt_done();
}
