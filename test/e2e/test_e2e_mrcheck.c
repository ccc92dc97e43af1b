/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The strict checker itself, with FI_HOOK=mrcheck alone (no mrlease above):
 * it must refuse and report what a provider requiring FI_MR_LOCAL would
 * crash on, and stay silent on correct use. Otherwise a test reporting
 * "zero violations" with mrlease stacked on top proves nothing.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "common/xfer_util.h"

static const char *prov = "tcp;ofi_rxm";

static struct mrcheck_stats
stats_of(struct mrlt_pair *pair)
{
	struct mrcheck_stats st = {0};

	if (pair->chk)
		pair->chk->query(pair->chk, &st, sizeof(st));
	return st;
}

static int
open_pair(struct mrlt_pair *pair)
{
	struct mrlt_pair_opts opts = {.prov = prov};

	return mrlt_pair_open(&opts, pair);
}

/* A NULL desc reaching a FI_MR_LOCAL provider is an invalid lkey: mrcheck
 * must fail the post and count it, or mrlease's resolution is unverified. */
static void
test_mrcheck_fails_a_post_with_null_desc(void)
{
	struct mrlt_pair pair;
	char buf[64] = {0};
	struct mrcheck_stats before, after;
	ssize_t ret;

	CHECK_FI(open_pair(&pair));
	CHECK(pair.chk != NULL);
	before = stats_of(&pair);
	ret = fi_send(pair.ep[0], buf, sizeof(buf), NULL, pair.addr[1], NULL);
	after = stats_of(&pair);
	CHECK_EQ(-FI_EINVAL, ret);
	CHECK_EQ(before.by_kind[MRCHECK_NO_DESC] + 1,
		 after.by_kind[MRCHECK_NO_DESC]);
	CHECK_EQ(1, pair.chk->acknowledge(pair.chk));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
}

/* Correct use (registered buffers, completions read) must never be flagged,
 * and the application must get its own contexts back. */
static void
test_mrcheck_accepts_live_descs_and_returns_app_contexts(void)
{
	struct mrlt_pair pair;
	char *src = malloc(4096), *dst = malloc(4096);
	struct fid_mr *smr = NULL, *dmr = NULL;
	struct fi_context2 sctx, rctx;
	struct mrlt_comp comp[2];
	bool saw_send = false, saw_recv = false;

	CHECK(src && dst);
	CHECK_FI(open_pair(&pair));
	mrlt_fill(src, 4096, 7);
	memset(dst, 0, 4096);
	CHECK_FI(mrlt_pair_mr_reg(&pair, src, 4096, FI_SEND, &smr));
	CHECK_FI(mrlt_pair_mr_reg(&pair, dst, 4096, FI_RECV, &dmr));
	CHECK_FI(fi_recv(pair.ep[1], dst, 4096, fi_mr_desc(dmr), pair.addr[0],
			 &rctx));
	CHECK_FI(MRLT_PAIR_POST(&pair,
				fi_send(pair.ep[0], src, 4096, fi_mr_desc(smr),
					pair.addr[1], &sctx)));
	CHECK_EQ(2, mrlt_reap(&pair, comp, 2));
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(0, comp[i].err);
		saw_send |= comp[i].ctx == &sctx;
		saw_recv |= comp[i].ctx == &rctx;
	}
	CHECK(saw_send && saw_recv);
	CHECK_EQ(-1, mrlt_verify(dst, 4096, 7));
	CHECK_EQ(0, stats_of(&pair).ops_in_flight);
	CHECK_FI(fi_close(&smr->fid));
	CHECK_FI(fi_close(&dmr->fid));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(src);
	free(dst);
}

/* The crash leases prevent: a registration closed while a transfer that uses it
 * is still posted. mrcheck must report it at the close. */
static void
test_mrcheck_reports_mr_closed_under_inflight_op(void)
{
	struct mrlt_pair pair;
	char *dst = malloc(4096);
	struct fid_mr *dmr = NULL;
	struct fi_context2 rctx;
	struct mrlt_comp comp;
	struct mrcheck_stats before, after;

	CHECK(dst);
	CHECK_FI(open_pair(&pair));
	CHECK_FI(mrlt_pair_mr_reg(&pair, dst, 4096, FI_RECV, &dmr));
	CHECK_FI(fi_recv(pair.ep[1], dst, 4096, fi_mr_desc(dmr), pair.addr[0],
			 &rctx));
	CHECK_EQ(1, stats_of(&pair).ops_in_flight);
	before = stats_of(&pair);
	CHECK_FI(fi_close(&dmr->fid));
	after = stats_of(&pair);
	CHECK_EQ(before.by_kind[MRCHECK_CLOSE_IN_FLIGHT] + 1,
		 after.by_kind[MRCHECK_CLOSE_IN_FLIGHT]);
	CHECK_EQ(1, pair.chk->acknowledge(pair.chk));
	/* The receive is cancelled: its error entry carries our context. */
	CHECK_FI(fi_cancel(&pair.ep[1]->fid, &rctx));
	CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
	CHECK(comp.ctx == &rctx);
	CHECK_EQ(FI_ECANCELED, comp.err);
	CHECK_EQ(0, stats_of(&pair).ops_in_flight);
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(dst);
}

/* A cancelled receive is over: closing its MR afterwards is legal. */
static void
test_mrcheck_allows_close_after_cancel_completion(void)
{
	struct mrlt_pair pair;
	char *dst = malloc(4096);
	struct fid_mr *dmr = NULL;
	struct fi_context2 rctx;
	struct mrlt_comp comp;

	CHECK(dst);
	CHECK_FI(open_pair(&pair));
	CHECK_FI(mrlt_pair_mr_reg(&pair, dst, 4096, FI_RECV, &dmr));
	CHECK_FI(fi_trecv(pair.ep[1], dst, 4096, fi_mr_desc(dmr), pair.addr[0],
			  0x77, 0, &rctx));
	CHECK_FI(fi_cancel(&pair.ep[1]->fid, &rctx));
	CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
	CHECK(comp.ctx == &rctx);
	CHECK_EQ(FI_ECANCELED, comp.err);
	CHECK_FI(fi_close(&dmr->fid));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(dst);
}

/* Closing an endpoint ends its operations (the provider let go), so the
 * MR may be closed afterwards without a report. */
static void
test_mrcheck_ep_close_ends_outstanding_ops(void)
{
	struct mrlt_pair pair;
	char *dst = malloc(4096);
	struct fid_mr *dmr = NULL;
	struct fi_context2 rctx;

	CHECK(dst);
	CHECK_FI(open_pair(&pair));
	CHECK_FI(mrlt_pair_mr_reg(&pair, dst, 4096, FI_RECV, &dmr));
	CHECK_FI(fi_recv(pair.ep[1], dst, 4096, fi_mr_desc(dmr), pair.addr[0],
			 &rctx));
	CHECK_FI(fi_close(&pair.ep[1]->fid));
	pair.ep[1] = NULL;
	CHECK_EQ(0, stats_of(&pair).ops_in_flight);
	CHECK_FI(fi_close(&dmr->fid));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(dst);
}

/* Stale, foreign and too-short descs are as fatal as a NULL one. */
static void
test_mrcheck_rejects_closed_unknown_and_short_descs(void)
{
	struct mrlt_pair pair;
	char *buf = malloc(8192);
	struct fid_mr *mr = NULL, *stale = NULL;
	void *stale_desc;
	struct mrcheck_stats before, after;

	CHECK(buf);
	CHECK_FI(open_pair(&pair));
	CHECK_FI(mrlt_pair_mr_reg(&pair, buf, 4096, FI_SEND, &stale));
	stale_desc = fi_mr_desc(stale);
	CHECK_FI(fi_close(&stale->fid));
	CHECK_FI(mrlt_pair_mr_reg(&pair, buf, 4096, FI_SEND, &mr));
	before = stats_of(&pair);
	CHECK_EQ(-FI_EINVAL,
		 fi_send(pair.ep[0], buf, 64, stale_desc, pair.addr[1], NULL));
	CHECK_EQ(-FI_EINVAL, fi_send(pair.ep[0], buf, 64, (void *) 0x1234,
				     pair.addr[1], NULL));
	CHECK_EQ(-FI_EINVAL, fi_send(pair.ep[0], buf + 4000, 200,
				     fi_mr_desc(mr), pair.addr[1], NULL));
	after = stats_of(&pair);
	CHECK_EQ(before.by_kind[MRCHECK_CLOSED_DESC] + 1,
		 after.by_kind[MRCHECK_CLOSED_DESC]);
	CHECK_EQ(before.by_kind[MRCHECK_UNKNOWN_DESC] + 1,
		 after.by_kind[MRCHECK_UNKNOWN_DESC]);
	CHECK_EQ(before.by_kind[MRCHECK_NOT_COVERED] + 1,
		 after.by_kind[MRCHECK_NOT_COVERED]);
	CHECK_EQ(3, pair.chk->acknowledge(pair.chk));
	CHECK_FI(fi_close(&mr->fid));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(buf);
}

/* An RMA read lands in the local buffer until its completion: the local
 * MR is in use until then, and the data must arrive through mrcheck. */
static void
test_mrcheck_tracks_rma_read_until_completion(void)
{
	struct mrlt_pair pair;
	char *src = malloc(8192), *dst = malloc(8192);
	struct fid_mr *smr = NULL, *dmr = NULL;
	struct fi_context2 ctx;
	struct mrlt_comp comp;

	CHECK(src && dst);
	CHECK_FI(open_pair(&pair));
	mrlt_fill(src, 8192, 11);
	memset(dst, 0, 8192);
	CHECK_FI(mrlt_pair_mr_reg(&pair, src, 8192, FI_REMOTE_READ, &smr));
	CHECK_FI(mrlt_pair_mr_reg(&pair, dst, 8192, FI_READ, &dmr));
	CHECK_FI(MRLT_PAIR_POST(&pair,
				fi_read(pair.ep[0], dst, 8192, fi_mr_desc(dmr),
					pair.addr[1],
					mrlt_pair_rma_addr(&pair, src, src),
					fi_mr_key(smr), &ctx)));
	CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
	CHECK(comp.ctx == &ctx);
	CHECK_EQ(0, comp.err);
	CHECK_EQ(-1, mrlt_verify(dst, 8192, 11));
	CHECK_FI(fi_close(&dmr->fid));
	CHECK_FI(fi_close(&smr->fid));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(src);
	free(dst);
}

/* A triggered write keeps the application's struct fi_triggered_context
 * (the provider reads it) and is in flight until its completion: an MR
 * closed while it waits for its threshold is reported, as one closed under
 * any other operation. Otherwise mrlease could drop a triggered op's lease
 * before it ran and nothing would see it. On sockets (the loopback provider
 * with FI_TRIGGER and RMA). */
static void
test_mrcheck_tracks_a_triggered_write_until_it_runs(void)
{
	struct mrlt_pair_opts opts = {.prov = "sockets",
				      .caps = FI_MSG | FI_RMA | FI_TRIGGER};
	struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP};
	char *src = malloc(4096), *tgt = malloc(4096);
	struct fid_mr *smr = NULL, *tmr = NULL;
	struct fi_triggered_context2 t;
	struct fid_cntr *cntr = NULL;
	struct mrcheck_stats before, after;
	struct fi_rma_iov rma;
	struct iovec iov;
	struct fi_msg_rma msg;
	struct mrlt_pair pair;
	struct mrlt_comp comp;
	void *desc;
	int ret;

	CHECK(src && tgt);
	ret = mrlt_pair_open(&opts, &pair);
	if (ret == -FI_ENODATA) {
		mrlt_skip_current("sockets offers no FI_TRIGGER with RMA");
		free(src);
		free(tgt);
		return;
	}
	CHECK_FI(ret);
	CHECK_FI(fi_cntr_open(pair.domain, &cattr, &cntr, NULL));
	mrlt_fill(src, 4096, 29);
	memset(tgt, 0, 4096);
	CHECK_FI(mrlt_pair_mr_reg(&pair, src, 4096, FI_WRITE, &smr));
	CHECK_FI(mrlt_pair_mr_reg(&pair, tgt, 4096, FI_REMOTE_WRITE, &tmr));
	memset(&t, 0, sizeof(t));
	t.event_type = FI_TRIGGER_THRESHOLD;
	t.trigger.threshold.cntr = cntr;
	t.trigger.threshold.threshold = 1;
	iov = (struct iovec){.iov_base = src, .iov_len = 4096};
	rma = (struct fi_rma_iov){.addr = mrlt_pair_rma_addr(&pair, tgt, tgt),
				  .len = 4096,
				  .key = fi_mr_key(tmr)};
	desc = fi_mr_desc(smr);
	msg = (struct fi_msg_rma){.msg_iov = &iov,
				  .desc = &desc,
				  .iov_count = 1,
				  .addr = pair.addr[1],
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = &t};
	before = stats_of(&pair);
	CHECK_FI(
		MRLT_PAIR_POST(&pair, fi_writemsg(pair.ep[0], &msg,
						  FI_TRIGGER | FI_COMPLETION)));
	CHECK_EQ(before.ops_in_flight + 1, stats_of(&pair).ops_in_flight);
	CHECK_EQ(0, mrlt_reap_some(&pair, &comp, 1));
	CHECK_FI(fi_close(&smr->fid));
	after = stats_of(&pair);
	CHECK_EQ(before.by_kind[MRCHECK_CLOSE_IN_FLIGHT] + 1,
		 after.by_kind[MRCHECK_CLOSE_IN_FLIGHT]);
	CHECK_EQ(1, pair.chk->acknowledge(pair.chk));
	CHECK_FI(fi_cntr_add(cntr, 1));
	CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
	CHECK_PTR(&t, comp.ctx);
	CHECK_EQ(0, comp.err);
	CHECK_EQ(before.ops_in_flight, stats_of(&pair).ops_in_flight);
	CHECK_EQ(-1, mrlt_wait_pattern(&pair, tgt, 4096, 29));
	CHECK_FI(fi_close(&tmr->fid));
	CHECK_FI(fi_close(&cntr->fid));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
	free(src);
	free(tgt);
}

int
main(int argc, char **argv)
{
	struct mrlt_pair pair;
	struct mrlt_pair_opts opts = {.prov = prov};
	int ret;

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrcheck", NULL);
	ret = mrlt_pair_open(&opts, &pair);
	if (ret) {
		mrlt_skip("mrcheck", ret == -FI_ENODATA ?
					     "tcp;ofi_rxm unavailable" :
					     fi_strerror(-ret));
		return mrlt_done();
	}
	if (!pair.chk) {
		mrlt_pair_close(&pair);
		printf("# FI_HOOK=mrcheck did not stack mrcheck "
		       "(FI_PROVIDER_PATH=%s)\n",
		       getenv("FI_PROVIDER_PATH"));
		printf("not ok 1 - mrcheck is loaded\n1..1\n");
		return EXIT_FAILURE;
	}
	mrlt_pair_close(&pair);

	MRLT_RUN(test_mrcheck_fails_a_post_with_null_desc);
	MRLT_RUN(test_mrcheck_accepts_live_descs_and_returns_app_contexts);
	MRLT_RUN(test_mrcheck_reports_mr_closed_under_inflight_op);
	MRLT_RUN(test_mrcheck_allows_close_after_cancel_completion);
	MRLT_RUN(test_mrcheck_ep_close_ends_outstanding_ops);
	MRLT_RUN(test_mrcheck_rejects_closed_unknown_and_short_descs);
	MRLT_RUN(test_mrcheck_tracks_rma_read_until_completion);
	MRLT_RUN(test_mrcheck_tracks_a_triggered_write_until_it_runs);
	return mrlt_done();
}
