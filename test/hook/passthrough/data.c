/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data transfer: msg, tagged, RMA and atomic ops move data with NULL and
 * registered descriptors, and every CQ format keeps what it carries.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "passthrough.h"

static const struct mrlt_peer_opts cntr_opts = {.cntrs = true};

/* Counters are optional: rxm in 1.17, for one, reports cntr_cnt 0. */
static bool
open_pair_cntrs(uint64_t extra, struct mrlt_domain *d, struct mrlt_peer *a,
		struct mrlt_peer *b, bool *cntrs)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fid_cntr *probe;
	int ret;

	if (!pt_open_domain(FI_EP_RDM, extra, d))
		return false;
	ret = fi_cntr_open(d->domain, &attr, &probe, NULL);
	printf("# probe cntr %d\n", ret);
	*cntrs = ret == 0;
	if (!ret && fi_close(&probe->fid))
		mrlt_fail(__FILE__, __LINE__, "fi_close(cntr) failed");
	if (ret && pt_baseline_rc("cntr", &ret) && ret == 0)
		mrlt_fail(__FILE__, __LINE__,
			  "fi_cntr_open fails under "
			  "FI_HOOK but not without the hook");
	return mrlt_rdm_pair_open(d, *cntrs ? &cntr_opts : NULL, a, b) == 0;
}

/* Round trip of every msg post variant with data verified, once with desc
 * NULL and once with the registered descriptor: a hook that drops an iov,
 * a desc or a context shows up as wrong data or a wrong op_context. */
static void
msg_round(struct mrlt_peer *a, struct mrlt_peer *b, size_t len, void *sdesc,
	  void *rdesc, char *src, char *dst, unsigned seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 sctx, rctx;
	struct iovec siov[2], riov[2];
	void *sd[2] = {sdesc, sdesc}, *rd[2] = {rdesc, rdesc};
	struct fi_msg msg;

	/* fi_send / fi_recv */
	mrlt_fill(src, len, seed);
	memset(dst, 0, len);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, rdesc, b->peer, &rctx), a,
			   b));
	CHECK_FI(MRLT_POST(fi_send(a->ep, src, len, sdesc, a->peer, &sctx), a,
			   b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_send"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK(entry.flags & FI_SEND);
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "fi_recv"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(entry.flags & FI_RECV);
	CHECK_EQ(len, entry.len);
	CHECK(!memcmp(src, dst, len));

	/* fi_sendv / fi_recvv, two halves each */
	mrlt_fill(src, len, seed + 1);
	memset(dst, 0, len);
	siov[0] = (struct iovec){src, len / 2};
	siov[1] = (struct iovec){src + len / 2, len - len / 2};
	riov[0] = (struct iovec){dst, len / 2};
	riov[1] = (struct iovec){dst + len / 2, len - len / 2};
	CHECK_FI(MRLT_POST(fi_recvv(b->ep, riov, rd, 2, b->peer, &rctx), a, b));
	CHECK_FI(MRLT_POST(fi_sendv(a->ep, siov, sd, 2, a->peer, &sctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_sendv"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "fi_recvv"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(!memcmp(src, dst, len));

	/* fi_sendmsg with remote CQ data / fi_recvmsg */
	mrlt_fill(src, len, seed + 2);
	memset(dst, 0, len);
	msg = (struct fi_msg){.msg_iov = riov,
			      .desc = rd,
			      .iov_count = 2,
			      .addr = b->peer,
			      .context = &rctx};
	CHECK_FI(MRLT_POST(fi_recvmsg(b->ep, &msg, 0), a, b));
	msg = (struct fi_msg){.msg_iov = siov,
			      .desc = sd,
			      .iov_count = 2,
			      .addr = a->peer,
			      .context = &sctx,
			      .data = 0xd00d};
	CHECK_FI(MRLT_POST(
		fi_sendmsg(a->ep, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION), a,
		b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_sendmsg"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "fi_recvmsg"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(entry.flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xd00d, entry.data);
	CHECK(!memcmp(src, dst, len));

	/* fi_senddata */
	mrlt_fill(src, len, seed + 3);
	memset(dst, 0, len);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, rdesc, b->peer, &rctx), a,
			   b));
	CHECK_FI(MRLT_POST(
		fi_senddata(a->ep, src, len, sdesc, 0xbeef, a->peer, &sctx), a,
		b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_senddata"));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "recv of senddata"));
	CHECK(entry.flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xbeef, entry.data);
	CHECK(!memcmp(src, dst, len));
}

static void
inject_round(struct mrlt_peer *a, struct mrlt_peer *b, char *src, char *dst,
	     unsigned seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 rctx;
	size_t len = 16;

	mrlt_fill(src, len, seed);
	memset(dst, 0, len);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, NULL, b->peer, &rctx), a,
			   b));
	CHECK_FI(MRLT_POST(fi_inject(a->ep, src, len, a->peer), a, b));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "recv of fi_inject"));
	CHECK(!memcmp(src, dst, len));
	mrlt_fill(src, len, seed + 1);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, NULL, b->peer, &rctx), a,
			   b));
	CHECK_FI(
		MRLT_POST(fi_injectdata(a->ep, src, len, 0x77, a->peer), a, b));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "recv of fi_injectdata"));
	CHECK_EQ(0x77, entry.data);
	CHECK(!memcmp(src, dst, len));
}

void
test_msg_ops_move_data_with_null_and_registered_desc(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *smr, *rmr;
	char *src = mrlt_alloc(LARGE), *dst = mrlt_alloc(LARGE);
	bool cntrs;
	size_t sizes[] = {SMALL, LARGE};
	unsigned i;

	if (!open_pair_cntrs(0, &d, &a, &b, &cntrs))
		return;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, src, LARGE, FI_SEND, &smr));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, dst, LARGE, FI_RECV, &rmr));
	for (i = 0; i < 2; i++) {
		msg_round(&a, &b, sizes[i], NULL, NULL, src, dst, 10 * i);
		if (mrlt_failed())
			return;
		msg_round(&a, &b, sizes[i], fi_mr_desc(smr), fi_mr_desc(rmr),
			  src, dst, 10 * i + 5);
		if (mrlt_failed())
			return;
	}
	if (cntrs) {
		CHECK_FI(mrlt_cntr_wait(a.tx_cntr, 16, &a, &b, "tx counter"));
		CHECK_EQ(16, fi_cntr_read(a.tx_cntr));
		CHECK_FI(mrlt_cntr_wait(b.rx_cntr, 16, &b, &a, "rx counter"));
		CHECK_EQ(16, fi_cntr_read(b.rx_cntr));
	}
	inject_round(&a, &b, src, dst, 50);
}

void
test_tagged_ops_match_tags_and_move_data(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *smr, *rmr;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 sctx, rctx, rctx2;
	char *src = mrlt_alloc(LARGE), *dst = mrlt_alloc(LARGE);
	char *dst2 = mrlt_alloc(SMALL);
	struct iovec siov = {src, LARGE}, riov = {dst, LARGE};
	struct fi_msg_tagged tmsg;
	void *sdesc, *rdesc;
	bool cntrs;

	if (!open_pair_cntrs(0, &d, &a, &b, &cntrs))
		return;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, src, LARGE, FI_SEND, &smr));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, dst, LARGE, FI_RECV, &rmr));
	sdesc = fi_mr_desc(smr);
	rdesc = fi_mr_desc(rmr);

	/* Two receives with different tags: the message must land in the one
	 * whose tag matches, whichever was posted first. */
	mrlt_fill(src, SMALL, 60);
	CHECK_FI(MRLT_POST(
		fi_trecv(b.ep, dst2, SMALL, NULL, b.peer, TAG + 1, 0, &rctx2),
		&a, &b));
	CHECK_FI(MRLT_POST(
		fi_trecv(b.ep, dst, SMALL, NULL, b.peer, TAG, 0, &rctx), &a,
		&b));
	CHECK_FI(MRLT_POST(fi_tsend(a.ep, src, SMALL, NULL, a.peer, TAG, &sctx),
			   &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_tsend"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "fi_trecv"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(entry.flags & FI_TAGGED);
	CHECK_EQ(TAG, entry.tag);
	CHECK(!memcmp(src, dst, SMALL));

	/* The other receive takes a large registered tsenddata. */
	mrlt_fill(src, LARGE, 61);
	memset(dst2, 0, SMALL);
	CHECK_FI(MRLT_POST(fi_tsenddata(a.ep, src, SMALL, sdesc, 0x42, a.peer,
					TAG + 1, &sctx),
			   &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_tsenddata"));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "second fi_trecv"));
	CHECK_PTR(&rctx2, entry.op_context);
	CHECK_EQ(TAG + 1, entry.tag);
	CHECK_EQ(0x42, entry.data);
	CHECK(!memcmp(src, dst2, SMALL));

	/* fi_tsendmsg / fi_trecvmsg with registered descs and ignore bits */
	mrlt_fill(src, LARGE, 62);
	memset(dst, 0, LARGE);
	tmsg = (struct fi_msg_tagged){.msg_iov = &riov,
				      .desc = &rdesc,
				      .iov_count = 1,
				      .addr = b.peer,
				      .tag = TAG & ~0xfULL,
				      .ignore = 0xf,
				      .context = &rctx};
	CHECK_FI(MRLT_POST(fi_trecvmsg(b.ep, &tmsg, 0), &a, &b));
	tmsg = (struct fi_msg_tagged){.msg_iov = &siov,
				      .desc = &sdesc,
				      .iov_count = 1,
				      .addr = a.peer,
				      .tag = TAG,
				      .context = &sctx};
	CHECK_FI(MRLT_POST(fi_tsendmsg(a.ep, &tmsg, FI_COMPLETION), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_tsendmsg"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "fi_trecvmsg"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK_EQ(TAG, entry.tag);
	CHECK_EQ(LARGE, entry.len);
	CHECK(!memcmp(src, dst, LARGE));

	if (cntrs) {
		CHECK_FI(mrlt_cntr_wait(a.tx_cntr, 3, &a, &b, "tx counter"));
		CHECK_EQ(3, fi_cntr_read(a.tx_cntr));
		CHECK_FI(mrlt_cntr_wait(b.rx_cntr, 3, &b, &a, "rx counter"));
		CHECK_EQ(3, fi_cntr_read(b.rx_cntr));
	}

	/* fi_tinject */
	mrlt_fill(src, 16, 63);
	CHECK_FI(MRLT_POST(fi_trecv(b.ep, dst, 16, NULL, b.peer, TAG, 0, &rctx),
			   &a, &b));
	CHECK_FI(MRLT_POST(fi_tinject(a.ep, src, 16, a.peer, TAG), &a, &b));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "recv of fi_tinject"));
	CHECK_EQ(TAG, entry.tag);
	CHECK(!memcmp(src, dst, 16));
}

/* RMA write and read in every variant, with data verified at the target
 * and counters checked: a hook that mixes up a key, an address or a desc
 * moves the wrong bytes. */
static void
rma_round(struct mrlt_domain *d, struct mrlt_peer *a, struct mrlt_peer *b,
	  size_t len, void *ldesc, char *local, char *target, uint64_t key,
	  unsigned seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	uint64_t raddr = mrlt_rma_addr(d, target);
	struct iovec iov[2];
	void *descs[2] = {ldesc, ldesc};
	struct fi_rma_iov rma = {.addr = raddr, .len = len, .key = key};
	struct fi_msg_rma msg;

	/* fi_write */
	mrlt_fill(local, len, seed);
	CHECK_FI(MRLT_POST(
		fi_write(a->ep, local, len, ldesc, a->peer, raddr, key, &ctx),
		a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_write"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(entry.flags & FI_WRITE);
	CHECK_FI(pt_wait_bytes(target, local, len, a, b, "fi_write"));

	/* fi_writemsg, two iovs */
	mrlt_fill(local, len, seed + 1);
	iov[0] = (struct iovec){local, len / 2};
	iov[1] = (struct iovec){local + len / 2, len - len / 2};
	msg = (struct fi_msg_rma){.msg_iov = iov,
				  .desc = descs,
				  .iov_count = 2,
				  .addr = a->peer,
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = &ctx};
	CHECK_FI(MRLT_POST(fi_writemsg(a->ep, &msg, FI_COMPLETION), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_writemsg"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK_FI(pt_wait_bytes(target, local, len, a, b, "fi_writemsg"));

	/* fi_writedata: the target sees the CQ data */
	mrlt_fill(local, len, seed + 2);
	CHECK_FI(MRLT_POST(fi_writedata(a->ep, local, len, ldesc, 0xabc,
					a->peer, raddr, key, &ctx),
			   a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_writedata"));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL,
			      "remote data of fi_writedata"));
	CHECK(entry.flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xabc, entry.data);
	CHECK_FI(pt_wait_bytes(target, local, len, a, b, "fi_writedata"));

	/* fi_read and fi_readv back into a cleared local buffer */
	mrlt_fill(target, len, seed + 3);
	memset(local, 0, len);
	CHECK_FI(MRLT_POST(
		fi_read(a->ep, local, len, ldesc, a->peer, raddr, key, &ctx), a,
		b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_read"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(entry.flags & FI_READ);
	CHECK(!memcmp(local, target, len));
	memset(local, 0, len);
	CHECK_FI(MRLT_POST(
		fi_readv(a->ep, iov, descs, 2, a->peer, raddr, key, &ctx), a,
		b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_readv"));
	CHECK(!memcmp(local, target, len));
	memset(local, 0, len);
	msg.context = &ctx;
	CHECK_FI(MRLT_POST(fi_readmsg(a->ep, &msg, FI_COMPLETION), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_readmsg"));
	CHECK(!memcmp(local, target, len));
}

void
test_rma_ops_move_data_with_null_and_registered_desc(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *lmr, *tmr;
	char *local = mrlt_alloc(LARGE), *target = mrlt_alloc(LARGE);
	bool cntrs;
	uint64_t key;
	unsigned i;
	size_t sizes[] = {SMALL, LARGE};

	if (!open_pair_cntrs(0, &d, &a, &b, &cntrs))
		return;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, local, LARGE, FI_READ | FI_WRITE, &lmr));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, LARGE,
			     FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	key = fi_mr_key(tmr);
	for (i = 0; i < 2; i++) {
		rma_round(&d, &a, &b, sizes[i], NULL, local, target, key,
			  20 * i);
		if (mrlt_failed())
			return;
		rma_round(&d, &a, &b, sizes[i], fi_mr_desc(lmr), local, target,
			  key, 20 * i + 10);
		if (mrlt_failed())
			return;
	}
	if (cntrs) {
		/* 4 rounds of 3 writes and 3 reads */
		CHECK_FI(mrlt_cntr_wait(a.rma_cntr, 24, &a, &b, "rma counter"));
		CHECK_EQ(24, fi_cntr_read(a.rma_cntr));
	}

	/* fi_inject_write and fi_inject_writedata */
	mrlt_fill(local, 16, 99);
	CHECK_FI(MRLT_POST(fi_inject_write(a.ep, local, 16, a.peer,
					   mrlt_rma_addr(&d, target), key),
			   &a, &b));
	CHECK_FI(pt_wait_bytes(target, local, 16, &a, &b, "fi_inject_write"));
}

/* FI_RMA_EVENT counters at the target count the writes and reads peers
 * make into its memory: the FI_REMOTE_WRITE|FI_REMOTE_READ bind must reach
 * the provider's endpoint with the provider's counter. */
void
test_remote_counter_counts_rma_at_the_target(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = {.cntrs = true, .remote_cntr = true};
	struct fid_mr *tmr;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	char *local = mrlt_alloc(SMALL), *target = mrlt_alloc(SMALL);
	uint64_t key, raddr;

	if (!pt_open_pair(FI_RMA_EVENT, &opts, &d, &a, &b))
		return;
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, SMALL,
			     FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	key = fi_mr_key(tmr);
	raddr = mrlt_rma_addr(&d, target);
	mrlt_fill(local, SMALL, 120);
	CHECK_FI(MRLT_POST(
		fi_write(a.ep, local, SMALL, NULL, a.peer, raddr, key, &ctx),
		&a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_write"));
	CHECK_FI(mrlt_cntr_wait(b.remote_cntr, 1, &b, &a, "remote counter"));
	CHECK_FI(pt_wait_bytes(target, local, SMALL, &a, &b, "fi_write"));
	CHECK_FI(MRLT_POST(
		fi_read(a.ep, local, SMALL, NULL, a.peer, raddr, key, &ctx), &a,
		&b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_read"));
	CHECK_FI(mrlt_cntr_wait(b.remote_cntr, 2, &b, &a, "remote counter"));
	CHECK_EQ(2, fi_cntr_read(b.remote_cntr));
	/* sockets' progress thread may bump the initiator's counter just after
	 * it writes the CQ entry: wait for it, then require the exact count. */
	CHECK_FI(
		mrlt_cntr_wait(a.rma_cntr, 2, &a, &b, "initiator rma counter"));
	CHECK_EQ(2, fi_cntr_read(a.rma_cntr));
}

/* Atomics go through their own ops table and fi_query_atomic: both must be
 * forwarded, and the results fetched must be the target's old values. */
void
test_atomic_ops_update_and_fetch(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *tmr, *omr, *rmr;
	struct fi_atomic_attr attr;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	uint64_t *target = mrlt_alloc(sizeof(uint64_t));
	uint64_t *operand = mrlt_alloc(sizeof(uint64_t));
	uint64_t *result = mrlt_alloc(sizeof(uint64_t));
	uint64_t *compare = mrlt_alloc(sizeof(uint64_t));
	uint64_t key, raddr;
	size_t count;

	if (!pt_open_pair(FI_ATOMIC, NULL, &d, &a, &b))
		return;
	if (!pt_offered("atomic", "fi_query_atomic(UINT64, SUM)",
			fi_query_atomic(d.domain, FI_UINT64, FI_SUM, &attr, 0)))
		return;
	CHECK_EQ(sizeof(uint64_t), attr.size);
	CHECK_FI(fi_atomicvalid(a.ep, FI_UINT64, FI_SUM, &count));
	CHECK(count >= 1);
	CHECK_FI(fi_fetch_atomicvalid(a.ep, FI_UINT64, FI_SUM, &count));
	CHECK_FI(fi_compare_atomicvalid(a.ep, FI_UINT64, FI_CSWAP, &count));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, sizeof(*target),
			     FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	key = fi_mr_key(tmr);
	raddr = mrlt_rma_addr(&d, target);

	*target = 100;
	*operand = 5;
	CHECK_FI(MRLT_POST(fi_atomic(a.ep, operand, 1, NULL, a.peer, raddr, key,
				     FI_UINT64, FI_SUM, &ctx),
			   &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_atomic SUM"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(entry.flags & FI_ATOMIC);

	*operand = 10;
	CHECK_FI(MRLT_POST(fi_fetch_atomic(a.ep, operand, 1, NULL, result, NULL,
					   a.peer, raddr, key, FI_UINT64,
					   FI_SUM, &ctx),
			   &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_fetch_atomic SUM"));
	CHECK_EQ(105, *result);

	*operand = 7;
	*compare = 115;
	CHECK_FI(MRLT_POST(fi_compare_atomic(a.ep, operand, 1, NULL, compare,
					     NULL, result, NULL, a.peer, raddr,
					     key, FI_UINT64, FI_CSWAP, &ctx),
			   &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_compare_atomic CSWAP"));
	CHECK_EQ(115, *result);
	CHECK_EQ(7, *target);

	/* again with registered descriptors for operand and result */
	CHECK_FI(mrlt_mr_reg(&d, a.ep, operand, sizeof(*operand), FI_WRITE,
			     &omr));
	CHECK_FI(mrlt_mr_reg(&d, a.ep, result, sizeof(*result), FI_READ, &rmr));
	*operand = 3;
	CHECK_FI(MRLT_POST(fi_fetch_atomic(a.ep, operand, 1, fi_mr_desc(omr),
					   result, fi_mr_desc(rmr), a.peer,
					   raddr, key, FI_UINT64, FI_SUM, &ctx),
			   &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL,
			      "fi_fetch_atomic with desc"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK_EQ(7, *result);
	CHECK_EQ(10, *target);
}

/*
 * Completions come back in the format the CQ was opened with and several
 * at a time: a hook that rewrites entries (contexts, leases) must step
 * through the application's array by that format's size and keep every
 * field. Checked for each format with a batch read of several entries.
 */
#define BATCH 4

static void
batch_round(enum fi_cq_format format)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = {.cq_format = format};
	struct fi_context2 sctx[BATCH], rctx[BATCH];
	char *src = mrlt_alloc(BATCH * SMALL), *dst = mrlt_alloc(BATCH * SMALL);
	size_t size =
		format == FI_CQ_FORMAT_CONTEXT ? sizeof(struct fi_cq_entry) :
		format == FI_CQ_FORMAT_MSG  ? sizeof(struct fi_cq_msg_entry) :
		format == FI_CQ_FORMAT_DATA ? sizeof(struct fi_cq_data_entry) :
					      sizeof(struct fi_cq_tagged_entry);
	char *entries = mrlt_alloc(BATCH * sizeof(struct fi_cq_tagged_entry));
	bool seen[BATCH] = {false};
	struct mrlt_wait w;
	int i, j, got = 0;
	ssize_t n;

	if (!pt_open_pair(0, &opts, &d, &a, &b))
		return;
	mrlt_fill(src, BATCH * SMALL, 140);
	for (i = 0; i < BATCH; i++)
		CHECK_FI(MRLT_POST(fi_recv(b.ep, dst + i * SMALL, SMALL, NULL,
					   b.peer, &rctx[i]),
				   &a, &b));
	for (i = 0; i < BATCH; i++)
		CHECK_FI(MRLT_POST(fi_senddata(a.ep, src + i * SMALL, SMALL,
					       NULL, 100 + i, a.peer, &sctx[i]),
				   &a, &b));
	mrlt_wait_init(&w);
	while (got < BATCH && !mrlt_wait_over(&w)) {
		n = fi_cq_read(b.cq, entries, BATCH);
		if (n == -FI_EAGAIN) {
			mrlt_progress(&a);
			continue;
		}
		CHECK_MSG(n > 0 && n <= BATCH - got,
			  "fi_cq_read(%d entries) = "
			  "%zd (%s)",
			  BATCH - got, n,
			  n < 0 ? fi_strerror((int) -n) : "too many");
		for (j = 0; j < n; j++) {
			struct fi_cq_tagged_entry *e =
				(void *) (entries + (size_t) j * size);
			int k = (int) ((struct fi_context2 *) e->op_context -
				       rctx);

			CHECK_MSG(
				k >= 0 && k < BATCH && !seen[k],
				"entry %d of "
				"%zd: op_context %p is no outstanding receive",
				j, n, e->op_context);
			seen[k] = true;
			if (format == FI_CQ_FORMAT_CONTEXT)
				continue;
			CHECK(e->flags & FI_RECV);
			CHECK_EQ(SMALL, e->len);
			if (format == FI_CQ_FORMAT_MSG)
				continue;
			CHECK(e->flags & FI_REMOTE_CQ_DATA);
			CHECK_EQ(100 + k, e->data);
		}
		got += (int) n;
	}
	CHECK_MSG(got == BATCH, "%d of %d receives completed", got, BATCH);
	CHECK(!memcmp(src, dst, BATCH * SMALL));
	for (i = 0; i < BATCH; i++) {
		CHECK_FI(mrlt_cq_wait(&a, &b, entries, NULL, "send"));
		CHECK_MSG(((struct fi_cq_entry *) entries)->op_context >=
					  (void *) sctx &&
				  ((struct fi_cq_entry *) entries)->op_context <
					  (void *) (sctx + BATCH),
			  "send completion with a foreign op_context");
	}
}

void
test_cq_format_context_batches_keep_every_context(void)
{
	batch_round(FI_CQ_FORMAT_CONTEXT);
}

void
test_cq_format_msg_batches_keep_len_and_flags(void)
{
	batch_round(FI_CQ_FORMAT_MSG);
}

void
test_cq_format_data_batches_keep_remote_data(void)
{
	batch_round(FI_CQ_FORMAT_DATA);
}

void
test_cq_format_tagged_batches_keep_remote_data(void)
{
	batch_round(FI_CQ_FORMAT_TAGGED);
}
