/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path under FI_HOOK=mrlease on every loopback provider: posts with
 * desc NULL take leases through the cache and give every one back once the
 * provider reports the operation over, whatever ends it (completion, hidden
 * selective completion, cancel, endpoint close, a counters-only endpoint, a
 * multi-recv buffer's release). Data is verified and the domain's statistics
 * show the leases, hits and registrations.
 *
 * Runs itself again with FI_HOOK=mrlease and FI_MRLEASE_MIN_SIZE=64, and
 * with FI_HOOK unset as the no-hook control of the multi-recv and atomics
 * cases.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/xfer_util.h"

#define LEN		(64 * 1024)
#define MIN_SIZE	64
#define CONTROL_SECONDS 120 /* bound of a no-hook control's life */

static const char *prov;

/* Open a pair on the provider under test; a provider that cannot do it is
 * a skip, not a pass. */
static bool
pair_open(struct mrlt_pair *p, struct mrlt_pair_opts opts)
{
	opts.prov = prov;
	return mrlt_pair_open_hooked(&opts, p);
}

static void *
buffer(size_t len, uint64_t seed)
{
	void *buf = NULL;

	if (posix_memalign(&buf, 4096, len))
		abort();
	if (seed)
		mrlt_fill(buf, len, seed);
	else
		memset(buf, 0, len);
	return buf;
}

/* Read completions until both contexts were seen, none in error. */
static int
reap_two(struct mrlt_pair *p, void *a, void *b)
{
	struct mrlt_comp c[2];
	int ret = mrlt_reap(p, c, 2);

	if (ret != 2)
		return ret < 0 ? ret : -FI_EOTHER;
	if (c[0].err || c[1].err)
		return -(c[0].err ? c[0].err : c[1].err);
	if (!((c[0].ctx == a && c[1].ctx == b) ||
	      (c[0].ctx == b && c[1].ctx == a)))
		return -FI_EOTHER;
	return 0;
}

/* ---- no-hook controls --------------------------------------------------- */

/* The multi-recv case's buffer and message sizes. */
enum { MR_BUF = 16 * 1024, MR_MSG = 4 * 1024 };

/* What the bare provider does with a case's traffic, as the exit status of
 * the case's no-hook control. */
enum bare_status {
	BARE_AS_DOCUMENTED = 0,
	BARE_UNAVAILABLE, /* no such pair or feature: the case decides */
	BARE_KEPT, /* FI_MULTI_RECV not reported */
	BARE_EARLY, /* released before the minimum free space */
	BARE_WRONG, /* wrong results */
	BARE_ERROR, /* a post or completion failed */
	BARE_NSTATUS
};

static const char *const bare_said[BARE_NSTATUS] = {
	[BARE_KEPT] = "it never reports FI_MULTI_RECV",
	[BARE_EARLY] = "it releases the buffer before the minimum free space "
		       "is reached",
	[BARE_WRONG] = "wrong results",
	[BARE_ERROR] = "a post or a completion fails",
};

/*
 * The multi-recv case's traffic on the bare provider: three messages into a
 * buffer that holds four, the minimum free space two of them.
 * fi_endpoint(3): the buffer is released once less than that minimum is
 * left, after the third.
 */
static enum bare_status
bare_multi_recv(void)
{
	struct mrlt_pair p;
	struct mrlt_pair_opts opts = {.prov = prov,
				      .caps = FI_MSG | FI_MULTI_RECV,
				      .min_multi_recv = 2 * MR_MSG};
	struct fi_context2 rctx, sctx[3];
	char *dst = buffer(MR_BUF, 0), *src = buffer(3 * MR_MSG, 17);
	struct iovec riov = {dst, MR_BUF};
	struct fi_msg rmsg = {.msg_iov = &riov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = &rctx};
	enum bare_status st = BARE_AS_DOCUMENTED;
	int recvs = 0, sends = 0;
	bool released = false;
	struct mrlt_comp c;

	if (mrlt_pair_open(&opts, &p)) {
		st = BARE_UNAVAILABLE;
		goto out;
	}
	if (MRLT_PAIR_POST(&p, fi_recvmsg(p.ep[1], &rmsg, FI_MULTI_RECV)))
		st = BARE_ERROR;
	for (int i = 0; i < 3 && !st; i++)
		if (MRLT_PAIR_POST(&p,
				   fi_send(p.ep[0], src + i * MR_MSG, MR_MSG,
					   NULL, p.addr[1], &sctx[i])))
			st = BARE_ERROR;
	while (!st && (sends < 3 || !released)) {
		int ret = mrlt_reap(&p, &c, 1);

		if (ret == -FI_ETIMEDOUT)
			st = BARE_KEPT;
		else if (ret != 1 || c.err)
			st = BARE_ERROR;
		else if (c.ctx != &rctx)
			sends++;
		else if (c.flags & FI_RECV)
			recvs++;
		if (!st && c.ctx == &rctx && (c.flags & FI_MULTI_RECV)) {
			released = true;
			if (recvs < 3)
				st = BARE_EARLY;
		}
	}
	mrlt_pair_close(&p);
out:
	free(src);
	free(dst);
	return st;
}

/* The atomics case's fetch and compare atomics on the bare provider, with
 * registered operands: N-element uint64 FI_SUM, then FI_CSWAP. */
static enum bare_status
bare_atomics(void)
{
	enum { N = 64 };
	struct mrlt_pair p;
	struct mrlt_pair_opts opts = {.prov = prov};
	uint64_t *tgt = buffer(N * 8, 0), *src = buffer(N * 8, 0);
	uint64_t *res = buffer(N * 8, 0), *cmp = buffer(N * 8, 0);
	enum bare_status st = BARE_AS_DOCUMENTED;
	struct fi_context2 ctx;
	struct fid_mr *mr;
	struct mrlt_comp c;
	size_t count = 0;
	uint64_t raddr;

	if (mrlt_pair_open(&opts, &p)) {
		st = BARE_UNAVAILABLE;
		goto out;
	}
	if (fi_compare_atomicvalid(p.ep[0], FI_UINT64, FI_CSWAP, &count) ||
	    count < N ||
	    fi_fetch_atomicvalid(p.ep[0], FI_UINT64, FI_SUM, &count) ||
	    count < N ||
	    mrlt_pair_mr_reg(&p, tgt, N * 8, FI_REMOTE_READ | FI_REMOTE_WRITE,
			     &mr)) {
		st = BARE_UNAVAILABLE;
		goto close;
	}
	for (int i = 0; i < N; i++) {
		tgt[i] = 100 + i;
		src[i] = i;
		cmp[i] = 100 + 2 * i;
	}
	raddr = mrlt_pair_rma_addr(&p, tgt, tgt);
	if (MRLT_PAIR_POST(&p, fi_fetch_atomic(p.ep[0], src, N, NULL, res, NULL,
					       p.addr[1], raddr, fi_mr_key(mr),
					       FI_UINT64, FI_SUM, &ctx)) ||
	    mrlt_reap(&p, &c, 1) != 1 || c.err) {
		st = BARE_ERROR;
		goto close_mr;
	}
	for (int i = 0; i < N; i++) {
		if (res[i] != 100u + (uint64_t) i || tgt[i] != cmp[i])
			st = BARE_WRONG;
		src[i] = 7000 + (uint64_t) i;
	}
	if (!st &&
	    (MRLT_PAIR_POST(&p, fi_compare_atomic(p.ep[0], src, N, NULL, cmp,
						  NULL, res, NULL, p.addr[1],
						  raddr, fi_mr_key(mr),
						  FI_UINT64, FI_CSWAP, &ctx)) ||
	     mrlt_reap(&p, &c, 1) != 1 || c.err))
		st = BARE_ERROR;
	for (int i = 0; i < N && !st; i++)
		if (res[i] != cmp[i] || tgt[i] != src[i])
			st = BARE_WRONG;
close_mr:
	fi_close(&mr->fid);
close:
	mrlt_pair_close(&p);
out:
	free(tgt);
	free(src);
	free(res);
	free(cmp);
	return st;
}

/*
 * Whether the bare provider does what case `control` needs as its man page
 * says: the control (--bare CONTROL PROVIDER) in a child with FI_HOOK unset,
 * libfabric reading it once per process. Otherwise (a wrong result, an
 * error, a crash) the case is a skip with the control's reason: the
 * provider's, not the hook's.
 */
static bool
bare_sound(const char *control, const char *what)
{
	char *args[] = {"test_xfer_lease", "--bare", (char *) control,
			(char *) prov, NULL};
	int status, st;
	pid_t pid;

	pid = mrlt_spawn_bare(args);
	if (pid < 0) {
		mrlt_fail(__FILE__, __LINE__, "fork: %s", strerror(errno));
		return false;
	}
	status = mrlt_wait_child(pid, CONTROL_SECONDS);
	if (status == -1) {
		mrlt_skip_current("%s without the hook, %s: the control did "
				  "not exit within %d s",
				  prov, what, CONTROL_SECONDS);
		return false;
	}
	if (WIFSIGNALED(status)) {
		mrlt_skip_current(
			"%s without the hook, %s: killed by signal %d "
			"(%s)",
			prov, what, WTERMSIG(status),
			strsignal(WTERMSIG(status)));
		return false;
	}
	st = WEXITSTATUS(status);
	if (st == BARE_AS_DOCUMENTED || st == BARE_UNAVAILABLE)
		return true;
	if (st < BARE_NSTATUS && bare_said[st]) {
		mrlt_skip_current("%s without the hook, %s: %s", prov, what,
				  bare_said[st]);
		return false;
	}
	mrlt_fail(__FILE__, __LINE__, "the no-hook control %s exited with %d",
		  control, st);
	return false;
}

/* ---- cases -------------------------------------------------------------- */

/* A NULL-desc send/recv leases both buffers for exactly as long as they
 * are in flight; without it a provider needing FI_MR_LOCAL fails the post,
 * and a lease kept past completion pins a freed buffer's registration. */
static void
test_null_desc_send_recv_leases_until_completion(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	struct fi_mrlease_stats s0, s1, s2;
	char *src = buffer(LEN, 11), *dst = buffer(LEN, 0);

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_recv(p.ep[1], dst, LEN, NULL, FI_ADDR_UNSPEC, &rctx)));
	CHECK_EQ(1, mrlt_pair_stats(&p).leases);
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_send(p.ep[0], src, LEN, NULL, p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 11));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(0, s1.leases);
	CHECK(s1.registrations >= s0.registrations + 2);

	/* Again with the same buffers: hits, no new registration. */
	memset(dst, 0, LEN);
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_recv(p.ep[1], dst, LEN, NULL, FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_send(p.ep[0], src, LEN, NULL, p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 11));
	s2 = mrlt_pair_stats(&p);
	CHECK_EQ(0, s2.leases);
	CHECK_EQ(s1.registrations, s2.registrations);
	CHECK(s2.hits >= s1.hits + 2);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* The single-buffer tagged and data forms (fi_trecv, fi_tsend,
 * fi_tsenddata, fi_senddata) lease through the hit path too: a receive
 * holds its lease while posted, each completes once with its own context
 * (and the data entry keeps its data); a mixed-up kind in the shared hit
 * path would post the wrong call or lose a lease. */
static void
test_null_desc_tagged_and_data_sends_lease_once_each(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	struct mrlt_comp c[2];
	char *src = buffer(LEN, 13), *dst = buffer(LEN, 0);
	int r, rounds;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	/* The data forms only where the provider carries remote CQ data. */
	rounds = p.info->domain_attr->cq_data_size >= 4 ? 3 : 1;
	for (int round = 0; round < rounds && !mrlt_failed(); round++) {
		memset(dst, 0, LEN);
		if (round < 2)
			CHECK_FI(MRLT_PAIR_POST(
				&p, fi_trecv(p.ep[1], dst, LEN, NULL,
					     FI_ADDR_UNSPEC, 0x77 + round, 0,
					     &rctx)));
		else
			CHECK_FI(MRLT_PAIR_POST(
				&p, fi_recv(p.ep[1], dst, LEN, NULL,
					    FI_ADDR_UNSPEC, &rctx)));
		CHECK_EQ(1, mrlt_pair_stats(&p).leases);
		if (round == 0)
			CHECK_FI(MRLT_PAIR_POST(&p, fi_tsend(p.ep[0], src, LEN,
							     NULL, p.addr[1],
							     0x77, &sctx)));
		else if (round == 1)
			CHECK_FI(MRLT_PAIR_POST(
				&p, fi_tsenddata(p.ep[0], src, LEN, NULL, 0xd1,
						 p.addr[1], 0x78, &sctx)));
		else
			CHECK_FI(MRLT_PAIR_POST(
				&p, fi_senddata(p.ep[0], src, LEN, NULL, 0xd2,
						p.addr[1], &sctx)));
		CHECK_EQ(2, mrlt_reap(&p, c, 2));
		r = c[0].ctx == &rctx ? 0 : 1;
		CHECK_PTR(&rctx, c[r].ctx);
		CHECK_PTR(&sctx, c[!r].ctx);
		CHECK_EQ(0, c[0].err);
		CHECK_EQ(0, c[1].err);
		if (round) {
			CHECK(c[r].flags & FI_REMOTE_CQ_DATA);
			CHECK_EQ(round == 1 ? 0xd1 : 0xd2, c[r].data);
		}
		CHECK_EQ(-1, mrlt_verify(dst, LEN, 13));
		CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	}
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* Tagged v-form posts resolve every iov; a missed iov would reach an
 * FI_MR_LOCAL provider with desc NULL. */
static void
test_null_desc_tagged_iovs_lease_every_operand(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	char *src = buffer(LEN, 12), *dst = buffer(LEN, 0);
	struct iovec siov[2] = {{src, LEN / 2}, {src + LEN / 2, LEN / 2}};
	struct iovec riov[2] = {{dst, LEN / 4}, {dst + LEN / 4, 3 * LEN / 4}};
	struct fi_mrlease_stats s0;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	s0 = mrlt_pair_stats(&p);
	if (p.info->rx_attr->iov_limit < 2 || p.info->tx_attr->iov_limit < 2) {
		mrlt_skip_current("%s: iov_limit < 2", prov);
		mrlt_pair_close(&p);
		goto out;
	}
	CHECK_FI(MRLT_PAIR_POST(&p, fi_trecvv(p.ep[1], riov, NULL, 2,
					      FI_ADDR_UNSPEC, 0x77, 0, &rctx)));
	CHECK_EQ(2, mrlt_pair_stats(&p).leases);
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_tsendv(p.ep[0], siov, NULL, 2, p.addr[1], 0x77, &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 12));
	CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	CHECK(mrlt_pair_stats(&p).lookups >= s0.lookups + 4);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* RMA write then read with desc NULL on the local side; the target is an
 * application MR with remote access, which must never enter the cache
 * (widening it would expose memory the application never offered). */
static void
test_null_desc_rma_and_remote_mr_stays_out_of_cache(void)
{
	struct mrlt_pair p;
	struct fi_context2 wctx, rctx;
	char *src = buffer(LEN, 13), *tgt = buffer(LEN, 0),
	     *back = buffer(LEN, 0);
	struct fi_mrlease_stats s0, s1;
	struct fid_mr *mr = NULL;
	struct mrlt_comp c;
	uint64_t raddr;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(mrlt_pair_mr_reg(&p, tgt, LEN,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(s0.registrations, s1.registrations);
	CHECK_EQ(s0.entries, s1.entries);
	CHECK_EQ(s0.lookups, s1.lookups);
	raddr = mrlt_pair_rma_addr(&p, tgt, tgt);

	CHECK_FI(MRLT_PAIR_POST(&p, fi_write(p.ep[0], src, LEN, NULL, p.addr[1],
					     raddr, fi_mr_key(mr), &wctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_PTR(&wctx, c.ctx);
	CHECK_EQ(0, c.err);
	CHECK_EQ(-1, mrlt_verify(tgt, LEN, 13));
	CHECK_FI(MRLT_PAIR_POST(&p, fi_read(p.ep[0], back, LEN, NULL, p.addr[1],
					    raddr, fi_mr_key(mr), &rctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_PTR(&rctx, c.ctx);
	CHECK_EQ(0, c.err);
	CHECK_EQ(-1, mrlt_verify(back, LEN, 13));
	CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	CHECK(mrlt_pair_stats(&p).registrations >= s1.registrations + 2);
	CHECK_EQ(0, fi_close(&mr->fid));
	mr = NULL;
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(tgt);
	free(back);
}

/* Atomics lease source, compare and result buffers; a result buffer left
 * unleased is written by the provider through a missing descriptor. */
static void
test_null_desc_atomics_lease_source_compare_and_result(void)
{
	enum { N = 64 };
	struct mrlt_pair p;
	struct fi_context2 ctx;
	uint64_t *tgt = buffer(N * 8, 0), *src = buffer(N * 8, 0);
	uint64_t *res = buffer(N * 8, 0), *cmp = buffer(N * 8, 0);
	struct fid_mr *mr = NULL;
	struct mrlt_comp c;
	size_t count = 0;
	uint64_t raddr, before;

	if (!bare_sound("atomics", "uint64 fetch and compare atomics"))
		goto out;
	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	if (fi_compare_atomicvalid(p.ep[0], FI_UINT64, FI_CSWAP, &count) ||
	    count < N ||
	    fi_fetch_atomicvalid(p.ep[0], FI_UINT64, FI_SUM, &count) ||
	    count < N) {
		mrlt_skip_current("%s: no %d-element uint64 atomics", prov, N);
		mrlt_pair_close(&p);
		goto out;
	}
	for (int i = 0; i < N; i++) {
		tgt[i] = 100 + i;
		src[i] = i;
		cmp[i] = 100 + 2 * i;
	}
	CHECK_FI(mrlt_pair_mr_reg(&p, tgt, N * 8,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
	raddr = mrlt_pair_rma_addr(&p, tgt, tgt);
	/* Control: adds src[0] == 0 to one element, below the threshold,
	 * forwarded untouched. A
	 * provider that gets this wrong fails without the hook too. */
	CHECK_FI(MRLT_PAIR_POST(&p, fi_fetch_atomic(p.ep[0], src, 1, NULL, res,
						    NULL, p.addr[1], raddr,
						    fi_mr_key(mr), FI_UINT64,
						    FI_SUM, &ctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	if (c.err || res[0] != 100) {
		mrlt_skip_current("%s: fetch atomics return wrong results "
				  "without leases too",
				  prov);
		fi_close(&mr->fid);
		mrlt_pair_close(&p);
		goto out;
	}
	res[0] = 0;
	before = mrlt_pair_stats(&p).lookups;

	/* tgt += src, old values into res. */
	CHECK_FI(MRLT_PAIR_POST(&p, fi_fetch_atomic(p.ep[0], src, N, NULL, res,
						    NULL, p.addr[1], raddr,
						    fi_mr_key(mr), FI_UINT64,
						    FI_SUM, &ctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_EQ(0, c.err);
	CHECK_PTR(&ctx, c.ctx);
	CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	CHECK(mrlt_pair_stats(&p).lookups >= before + 2);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(100 + i, res[i]);
		CHECK_EQ(100 + 2 * i, tgt[i]);
	}
	/* Swap in src where tgt == cmp (everywhere). */
	for (int i = 0; i < N; i++)
		src[i] = 7000 + i;
	before = mrlt_pair_stats(&p).lookups;
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_compare_atomic(p.ep[0], src, N, NULL, cmp, NULL, res,
				      NULL, p.addr[1], raddr, fi_mr_key(mr),
				      FI_UINT64, FI_CSWAP, &ctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_EQ(0, c.err);
	CHECK(mrlt_pair_stats(&p).lookups >= before + 3);
	CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(100 + 2 * i, res[i]);
		CHECK_EQ(7000 + i, tgt[i]);
	}
	CHECK_EQ(0, fi_close(&mr->fid));
	mr = NULL;
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(tgt);
	free(src);
	free(res);
	free(cmp);
}

/* Posts that need no lease (a descriptor given, an operand below the
 * threshold, an inject) never touch the cache and keep the application's
 * context: the fast path must cost what the passthrough costs. */
static void
test_posts_needing_no_lease_skip_the_cache(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	char small[MIN_SIZE / 2] = "below the threshold";
	char in[MIN_SIZE / 2];
	struct fi_mrlease_stats s0;
	uint64_t below = 0;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &below,
		fi_recv(p.ep[1], in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(&p, &below,
				      fi_send(p.ep[0], small, sizeof(small),
					      NULL, p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK(!memcmp(in, small, sizeof(small)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &below,
		fi_recv(p.ep[1], in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_inject(p.ep[0], small, sizeof(small), p.addr[1])));
	{
		struct mrlt_comp c;

		CHECK_EQ(1, mrlt_reap(&p, &c, 1));
		CHECK_PTR(&rctx, c.ctx);
	}
	CHECK_EQ(s0.lookups, mrlt_pair_stats(&p).lookups);
	/* The receives and the send, not the inject (it never leases), per
	 * call: a call refused with -FI_EAGAIN counts too, as lookups do. */
	CHECK_EQ(s0.miss_below_min + below, mrlt_pair_stats(&p).miss_below_min);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:;
}

/* Every operand without a descriptor below FI_MRLEASE_MIN_SIZE is counted
 * in miss_below_min, whether its post went out as it was or leased another
 * operand, and never as a lookup; empty ones are not counted. */
static void
test_operands_below_the_threshold_are_counted_apart_from_lookups(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	char *src = buffer(LEN, 15), *dst = buffer(LEN, 0);
	char small[MIN_SIZE / 2] = "below", tiny[MIN_SIZE / 4] = "the threshold";
	char in_small[sizeof(small)], in_tiny[sizeof(tiny)];
	struct iovec mixed_s[2] = {{small, sizeof(small)}, {src, LEN}};
	struct iovec mixed_r[2] = {{in_small, sizeof(in_small)}, {dst, LEN}};
	struct iovec smalls[2] = {{small, sizeof(small)}, {tiny, sizeof(tiny)}};
	struct iovec in_smalls[2] = {{in_small, sizeof(in_small)},
				     {in_tiny, sizeof(in_tiny)}};
	struct fi_mrlease_stats s0, s1;
	uint64_t one = 0, two = 0, none = 0;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	if (p.info->rx_attr->iov_limit < 2 || p.info->tx_attr->iov_limit < 2) {
		mrlt_skip_current("%s: iov_limit < 2", prov);
		mrlt_pair_close(&p);
		goto out;
	}
	s0 = mrlt_pair_stats(&p);
	/* One small operand each beside a leased one: the slow path. */
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &one,
		fi_recvv(p.ep[1], mixed_r, NULL, 2, FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &one,
		fi_sendv(p.ep[0], mixed_s, NULL, 2, p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 15));
	CHECK(!memcmp(in_small, small, sizeof(small)));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(s0.miss_below_min + one, s1.miss_below_min);
	CHECK(s1.lookups >= s0.lookups + 2);
	/* Only small operands: forwarded as they are, each one counted. */
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &two,
		fi_recvv(p.ep[1], in_smalls, NULL, 2, FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &two,
		fi_sendv(p.ep[0], smalls, NULL, 2, p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK(!memcmp(in_tiny, tiny, sizeof(tiny)));
	CHECK_EQ(s1.miss_below_min + 2 * two,
		 mrlt_pair_stats(&p).miss_below_min);
	CHECK_EQ(s1.lookups, mrlt_pair_stats(&p).lookups);
	/* An empty message is not an operand below the threshold. */
	s1 = mrlt_pair_stats(&p);
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &none,
		fi_recv(p.ep[1], NULL, 0, NULL, FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(
		&p, &none, fi_send(p.ep[0], NULL, 0, NULL, p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK_EQ(s1.miss_below_min, mrlt_pair_stats(&p).miss_below_min);
	CHECK_EQ(s1.lookups, mrlt_pair_stats(&p).lookups);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* Each single-buffer post of a small operand without a descriptor (a
 * tagged send and receive, an RMA write and read) is counted once per call,
 * and one with a descriptor is not. */
static void
test_small_tagged_and_rma_posts_are_counted_below_the_threshold(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	char small[MIN_SIZE / 2] = "small tagged", in[sizeof(small)];
	char *tgt = buffer(LEN, 0);
	struct fid_mr *mr = NULL, *lmr = NULL;
	struct fi_mrlease_stats s0;
	struct mrlt_comp c;
	uint64_t calls = 0, raddr;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	CHECK_FI(mrlt_pair_mr_reg(&p, tgt, LEN,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
	raddr = mrlt_pair_rma_addr(&p, tgt, tgt);
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(
		MRLT_PAIR_POST_CALLS(&p, &calls,
				     fi_trecv(p.ep[1], in, sizeof(in), NULL,
					      FI_ADDR_UNSPEC, 0x5a, 0, &rctx)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(&p, &calls,
				      fi_tsend(p.ep[0], small, sizeof(small),
					       NULL, p.addr[1], 0x5a, &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK(!memcmp(in, small, sizeof(small)));
	CHECK_FI(MRLT_PAIR_POST_CALLS(&p, &calls,
				      fi_write(p.ep[0], small, sizeof(small),
					       NULL, p.addr[1], raddr,
					       fi_mr_key(mr), &sctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_EQ(0, c.err);
	CHECK_FI(MRLT_PAIR_POST_CALLS(&p, &calls,
				      fi_read(p.ep[0], in, sizeof(in), NULL,
					      p.addr[1], raddr, fi_mr_key(mr),
					      &rctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_EQ(0, c.err);
	CHECK(!memcmp(in, small, sizeof(small)));
	CHECK_EQ(s0.miss_below_min + calls, mrlt_pair_stats(&p).miss_below_min);
	CHECK_EQ(s0.lookups, mrlt_pair_stats(&p).lookups);
	/* With a descriptor: not counted. */
	CHECK_FI(fi_mr_reg(p.domain, small, sizeof(small), FI_WRITE, 0, 0, 0,
			   &lmr, NULL));
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(MRLT_PAIR_POST(&p, fi_write(p.ep[0], small, sizeof(small),
					     fi_mr_desc(lmr), p.addr[1], raddr,
					     fi_mr_key(mr), &sctx)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_EQ(0, c.err);
	CHECK_EQ(s0.miss_below_min, mrlt_pair_stats(&p).miss_below_min);
	CHECK_EQ(0, fi_close(&lmr->fid));
	lmr = NULL;
	CHECK_EQ(0, fi_close(&mr->fid));
	mr = NULL;
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(tgt);
}

/* An application MR asking local access only is served from the cache, its
 * descriptor works on posts, and closing it gives the lease back; an
 * application that registers per operation stops paying a registration. */
static void
test_local_mr_served_from_cache_and_its_desc_works(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	char *src = buffer(LEN, 14), *dst = buffer(LEN, 0);
	struct fid_mr *smr = NULL, *rmr = NULL;
	struct fi_mrlease_stats s0, s1;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(fi_mr_reg(p.domain, src, LEN, FI_SEND, 0, 0, 0, &smr, NULL));
	CHECK_FI(fi_mr_reg(p.domain, dst, LEN, FI_RECV, 0, 0, 0, &rmr, NULL));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(2, s1.leases);
	CHECK_EQ(s0.registrations + 2, s1.registrations);
	CHECK_FI(MRLT_PAIR_POST(&p, fi_recv(p.ep[1], dst, LEN, fi_mr_desc(rmr),
					    FI_ADDR_UNSPEC, &rctx)));
	CHECK_FI(MRLT_PAIR_POST(&p, fi_send(p.ep[0], src, LEN, fi_mr_desc(smr),
					    p.addr[1], &sctx)));
	CHECK_FI(reap_two(&p, &sctx, &rctx));
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 14));
	CHECK_EQ(0, fi_close(&smr->fid));
	smr = NULL;
	CHECK_EQ(0, fi_close(&rmr->fid));
	rmr = NULL;
	CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	/* Register again: a hit, not a registration. */
	CHECK_FI(fi_mr_reg(p.domain, src, LEN, FI_SEND, 0, 0, 0, &smr, NULL));
	CHECK_EQ(s1.registrations, mrlt_pair_stats(&p).registrations);
	CHECK_EQ(0, fi_close(&smr->fid));
	smr = NULL;
	CHECK_EQ(0, mrlt_pair_stats(&p).leases);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	if (smr)
		fi_close(&smr->fid);
	if (rmr)
		fi_close(&rmr->fid);
	free(src);
	free(dst);
}

/* A leased send the application posted without FI_COMPLETION on a
 * selective endpoint still releases its leases, and its completion never
 * reaches the application: reads that found only it say -FI_EAGAIN. */
static void
test_selective_completion_hides_what_the_app_did_not_ask(void)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	char *src = buffer(LEN, 15), *dst = buffer(LEN, 0);
	struct iovec siov = {src, LEN}, riov = {dst, LEN};
	struct fi_msg smsg = {.msg_iov = &siov,
			      .iov_count = 1,
			      .context = &sctx};
	struct fi_msg rmsg = {.msg_iov = &riov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = &rctx};
	struct fi_cq_tagged_entry e[8];
	struct mrlt_comp c;
	long spins = 0;
	ssize_t n;

	if (!pair_open(&p, (struct mrlt_pair_opts){.selective = true}))
		goto out;
	smsg.addr = p.addr[1];
	CHECK_FI(MRLT_PAIR_POST(&p, fi_recvmsg(p.ep[1], &rmsg, FI_COMPLETION)));
	CHECK_FI(MRLT_PAIR_POST(&p, fi_sendmsg(p.ep[0], &smsg, 0)));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_PTR(&rctx, c.ctx);
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 15));
	/* The send's completion is ours: reading must never show it, never
	 * return 0, and must release its leases. */
	while (mrlt_live_leases(&p) != 0 && ++spins < MRLT_MAX_POLLS) {
		n = fi_cq_read(p.cq, e, 8);
		CHECK_MSG(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
	}
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(-FI_EAGAIN, fi_cq_read(p.cq, e, 8));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* fi_cancel with the application's context cancels the leased receive (the
 * provider knows it by our op context) and the cancel completion gives the
 * leases back; a cancel that missed would leave the buffer pinned. */
static void
test_cancel_of_leased_recv_releases_leases(void)
{
	struct mrlt_pair p;
	struct fi_context2 rctx;
	char *dst = buffer(LEN, 0);
	struct mrlt_comp c;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_recv(p.ep[1], dst, LEN, NULL, FI_ADDR_UNSPEC, &rctx)));
	CHECK_EQ(1, mrlt_live_leases(&p));
	CHECK_FI(fi_cancel(&p.ep[1]->fid, &rctx));
	CHECK_EQ(1, mrlt_reap(&p, &c, 1));
	CHECK_PTR(&rctx, c.ctx);
	CHECK_EQ(FI_ECANCELED, c.err);
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(dst);
}

/* Closing an endpoint with leased operations outstanding releases their
 * leases once the provider let go; otherwise they leak for the domain's
 * lifetime and their registrations never close. */
static void
test_endpoint_close_releases_outstanding_leases(void)
{
	struct mrlt_pair p;
	struct fi_context2 rctx[3];
	char *dst = buffer(3 * LEN, 0);

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	for (int i = 0; i < 3; i++)
		CHECK_FI(MRLT_PAIR_POST(&p, fi_recv(p.ep[1], dst + i * LEN, LEN,
						    NULL, FI_ADDR_UNSPEC,
						    &rctx[i])));
	CHECK_EQ(3, mrlt_live_leases(&p));
	CHECK_EQ(0, fi_close(&p.ep[1]->fid));
	p.ep[1] = NULL;
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(dst);
}

/* An endpoint bound to counters only reports nothing per operation, yet
 * its leased operations must release their leases (here when the
 * application reads its counters). */
static void
test_counters_only_endpoint_releases_leases(void)
{
	struct mrlt_pair p;
	char *src = buffer(LEN, 16), *dst = buffer(LEN, 0);
	long spins = 0;

	if (!pair_open(&p, (struct mrlt_pair_opts){.counters_only = true}))
		goto out;
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_recv(p.ep[1], dst, LEN, NULL, FI_ADDR_UNSPEC, NULL)));
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_send(p.ep[0], src, LEN, NULL, p.addr[1], NULL)));
	CHECK_FI(mrlt_wait_cntr(p.rx_cntr, 1));
	CHECK_FI(mrlt_wait_cntr(p.tx_cntr, 1));
	CHECK_EQ(-1, mrlt_verify(dst, LEN, 16));
	while (mrlt_live_leases(&p) != 0 && ++spins < MRLT_MAX_POLLS) {
		fi_cntr_read(p.tx_cntr);
		fi_cntr_read(p.rx_cntr);
	}
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK(mrlt_pair_stats(&p).lookups >= 2);
	CHECK_EQ(0, fi_cntr_readerr(p.tx_cntr));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* A multi-recv buffer stays leased across the messages it receives and is
 * released when the provider reports FI_MULTI_RECV; releasing at the first
 * message would let the registration close under the rest. */
static void
test_multi_recv_buffer_released_with_fi_multi_recv(void)
{
	enum { BUF = MR_BUF, MSG = MR_MSG };
	struct mrlt_pair p;
	struct fi_context2 rctx, sctx[3];
	char *dst = buffer(BUF, 0), *src = buffer(3 * MSG, 17);
	struct iovec riov = {dst, BUF};
	struct fi_msg rmsg = {.msg_iov = &riov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = &rctx};
	struct mrlt_comp c;
	int recvs = 0, sends = 0;
	bool released = false;

	if (!bare_sound("multi-recv", "FI_OPT_MIN_MULTI_RECV 8192") ||
	    !pair_open(&p,
		       (struct mrlt_pair_opts){.caps = FI_MSG | FI_MULTI_RECV,
					       .min_multi_recv = 2 * MSG}))
		goto out;
	CHECK_FI(MRLT_PAIR_POST(&p, fi_recvmsg(p.ep[1], &rmsg, FI_MULTI_RECV)));
	CHECK_EQ(1, mrlt_live_leases(&p));
	for (int i = 0; i < 3; i++)
		CHECK_FI(
			MRLT_PAIR_POST(&p, fi_send(p.ep[0], src + i * MSG, MSG,
						   NULL, p.addr[1], &sctx[i])));
	while (sends < 3 || !released) {
		CHECK_EQ(1, mrlt_reap(&p, &c, 1));
		CHECK_EQ(0, c.err);
		if (c.ctx != &rctx) {
			sends++;
			continue;
		}
		if (c.flags & FI_RECV) {
			CHECK_EQ(MSG, c.len);
			recvs++;
		}
		if (c.flags & FI_MULTI_RECV)
			released = true;
		/* The buffer's lease, plus the sends not reported yet. */
		CHECK_EQ((released ? 0 : 1) + 3 - sends, mrlt_live_leases(&p));
	}
	CHECK_EQ(3, recvs);
	CHECK_EQ(-1, mrlt_verify(dst, 3 * MSG, 17));
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* One fi_cq_readfrom of what is there: each entry must be one of the n
 * receives at rctx, from ep[0]; *seen counts them. */
static void
readfrom_receives(struct mrlt_pair *p, struct fi_context2 *rctx, int n,
		  int *seen)
{
	struct fi_cq_tagged_entry e[16];
	fi_addr_t from[16];
	ssize_t got = fi_cq_readfrom(p->cq, e, 16, from);

	if (got == -FI_EAGAIN)
		return;
	CHECK_FI(got);
	CHECK(got > 0);
	for (ssize_t i = 0; i < got; i++) {
		CHECK_MSG(e[i].op_context >= (void *) &rctx[0] &&
				  e[i].op_context <= (void *) &rctx[n - 1],
			  "entry %zd: context %p is no receive", i,
			  e[i].op_context);
		CHECK_EQ(p->addr[0], from[i]);
		(*seen)++;
	}
}

/* MRLT_PAIR_POST with the retries' progress made by readfrom_receives: the
 * pair's own reads the receives into its stash, where no fi_cq_readfrom
 * sees them or their sources. */
#define POST_READING_FROM(pair, rctx, n, seen, expr)                 \
	({                                                           \
		ssize_t post_r_;                                     \
		long post_n_ = 0;                                    \
		while ((post_r_ = (expr)) == -FI_EAGAIN &&           \
		       ++post_n_ < MRLT_MAX_POLLS && !mrlt_failed()) \
			readfrom_receives(pair, rctx, n, seen);      \
		post_r_;                                             \
	})

/* Hidden completions removed from a readfrom batch take their source
 * addresses with them: each visible entry keeps its own src_addr, else the
 * application attributes a message to the wrong peer. */
static void
test_readfrom_keeps_src_addr_in_step_with_hidden_entries(void)
{
	enum { N = 4 };
	struct mrlt_pair p;
	struct fi_context2 sctx[N], rctx[N];
	char *src = buffer(N * LEN, 18), *dst = buffer(N * LEN, 0);
	struct iovec siov[N], riov[N];
	int seen = 0;
	long spins = 0;

	if (!pair_open(&p, (struct mrlt_pair_opts){.caps = FI_MSG | FI_SOURCE,
						   .selective = true}))
		goto out;
	for (int i = 0; i < N; i++) {
		struct fi_msg r = {.msg_iov = &riov[i],
				   .iov_count = 1,
				   .addr = FI_ADDR_UNSPEC,
				   .context = &rctx[i]};

		riov[i] = (struct iovec){dst + i * LEN, LEN};
		CHECK_FI(POST_READING_FROM(
			&p, rctx, N, &seen,
			fi_recvmsg(p.ep[1], &r, FI_COMPLETION)));
	}
	for (int i = 0; i < N; i++) {
		struct fi_msg m = {.msg_iov = &siov[i],
				   .iov_count = 1,
				   .addr = p.addr[1],
				   .context = &sctx[i]};

		siov[i] = (struct iovec){src + i * LEN, LEN};
		CHECK_FI(POST_READING_FROM(&p, rctx, N, &seen,
					   fi_sendmsg(p.ep[0], &m, 0)));
	}
	CHECK_EQ(0, p.nstash);
	while ((seen < N || mrlt_live_leases(&p)) && ++spins < MRLT_MAX_POLLS &&
	       !mrlt_failed())
		readfrom_receives(&p, rctx, N, &seen);
	CHECK_EQ(N, seen);
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(-1, mrlt_verify(dst, N * LEN, 18));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* More leased writes in flight than one chunk of op contexts holds, twice:
 * the pool grows under load and recycles its ops, and every write completes
 * once with its own context; a lost or doubly handed-out op context would
 * show as a missing or repeated context, or a lease left live. */
static void
test_leased_writes_past_one_chunk_complete_once_each(void)
{
	enum { N = 800, SLOT = 128 };
	struct mrlt_pair p;
	static struct fi_context2 ctx[N];
	static struct mrlt_comp c[N];
	static char seen[N];
	char *src = buffer(N * SLOT, 21), *tgt = buffer(N * SLOT, 0);
	struct fid_mr *mr = NULL;
	uint64_t raddr;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	CHECK_FI(mrlt_pair_mr_reg(&p, tgt, N * SLOT, FI_REMOTE_WRITE, &mr));
	raddr = mrlt_pair_rma_addr(&p, tgt, tgt);
	for (int round = 0; round < 2 && !mrlt_failed(); round++) {
		memset(seen, 0, sizeof(seen));
		memset(tgt, 0, N * SLOT);
		for (int i = 0; i < N && !mrlt_failed(); i++)
			CHECK_FI(MRLT_PAIR_POST(
				&p, fi_write(p.ep[0], src + i * SLOT, SLOT,
					     NULL, p.addr[1], raddr + i * SLOT,
					     fi_mr_key(mr), &ctx[i])));
		/* Ops go back to the pool only when their completion is
		 * read: what the retries did not read was in flight. */
		printf("# %s round %d: %zu writes in flight at the last post "
		       "(a 64 KiB chunk holds at most 630 op contexts)\n",
		       prov, round, N - p.nstash);
		CHECK_EQ(N, mrlt_reap(&p, c, N));
		for (int i = 0; i < N && !mrlt_failed(); i++) {
			long k = (struct fi_context2 *) c[i].ctx - ctx;

			CHECK_EQ(0, c[i].err);
			CHECK_MSG(k >= 0 && k < N && !seen[k],
				  "round %d: completion %d has context %p",
				  round, i, c[i].ctx);
			if (k >= 0 && k < N)
				seen[k] = 1;
		}
		CHECK_EQ(0, mrlt_live_leases(&p));
		CHECK_EQ(-1, mrlt_verify(tgt, N * SLOT, 21));
	}
	if (mr)
		CHECK_EQ(0, fi_close(&mr->fid));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(tgt);
}

/* A leased fi_writedata produces a target entry with no context (remote CQ
 * data): it must pass through untouched next to the initiator's mapped
 * one. */
static void
test_remote_cq_data_entry_passes_untouched(void)
{
	struct mrlt_pair p;
	struct fi_context2 wctx;
	char *src = buffer(LEN, 19), *tgt = buffer(LEN, 0);
	struct fid_mr *mr = NULL;
	struct mrlt_comp c[2];
	int mine;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	if (p.info->domain_attr->cq_data_size < 4) {
		mrlt_skip_current("%s: no remote CQ data", prov);
		mrlt_pair_close(&p);
		goto out;
	}
	CHECK_FI(mrlt_pair_mr_reg(&p, tgt, LEN, FI_REMOTE_WRITE, &mr));
	CHECK_FI(MRLT_PAIR_POST(
		&p, fi_writedata(p.ep[0], src, LEN, NULL, 0xC0DE, p.addr[1],
				 mrlt_pair_rma_addr(&p, tgt, tgt),
				 fi_mr_key(mr), &wctx)));
	CHECK_EQ(2, mrlt_reap(&p, c, 2));
	mine = c[0].ctx == &wctx ? 0 : 1;
	CHECK_PTR(&wctx, c[mine].ctx);
	CHECK_PTR(NULL, c[!mine].ctx);
	CHECK(c[!mine].flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xC0DE, c[!mine].data);
	CHECK_EQ(-1, mrlt_verify(tgt, LEN, 19));
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(0, fi_close(&mr->fid));
	mr = NULL;
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(tgt);
}

/* Posting and reaping phases of the thread-swap test, each on one thread. */
enum { SWAP_N = 64, SWAP_SLOT = 256 };

struct swap_phase {
	struct mrlt_pair *p;
	char *src;
	uint64_t raddr, key;
	struct fi_context2 *ctx;
	bool post, reap;
	int ret; /* 0, or the first failure */
};

static void *
swap_phase_run(void *arg)
{
	struct swap_phase *ph = arg;
	static struct mrlt_comp c[SWAP_N];
	char seen[SWAP_N] = {0};

	for (int i = 0; ph->post && i < SWAP_N && !ph->ret; i++)
		ph->ret = MRLT_PAIR_POST(
			ph->p, fi_write(ph->p->ep[0], ph->src + i * SWAP_SLOT,
					SWAP_SLOT, NULL, ph->p->addr[1],
					ph->raddr + i * SWAP_SLOT, ph->key,
					&ph->ctx[i]));
	if (!ph->reap || ph->ret)
		return NULL;
	if (mrlt_reap(ph->p, c, SWAP_N) != SWAP_N) {
		ph->ret = -FI_EOTHER;
		return NULL;
	}
	for (int i = 0; i < SWAP_N; i++) {
		long k = (struct fi_context2 *) c[i].ctx - ph->ctx;

		if (c[i].err || k < 0 || k >= SWAP_N || seen[k]) {
			ph->ret = -FI_EOTHER;
			return NULL;
		}
		seen[k] = 1;
	}
	return NULL;
}

/* Run phase on a new thread (other) or this one. */
static int
swap_phase(struct swap_phase *ph, bool other)
{
	pthread_t t;

	ph->ret = 0;
	if (!other) {
		swap_phase_run(ph);
		return ph->ret;
	}
	if (pthread_create(&t, NULL, swap_phase_run, ph))
		return -FI_EOTHER;
	pthread_join(t, NULL);
	return ph->ret;
}

/* Leased writes posted and completed on threads other than the one that
 * enabled the endpoint (which owns its op pool's private list), in every
 * mix: each completes once with its own context, data intact, no lease
 * left. Prevents an op lost or handed out twice between the owner's list
 * and the shared stack (the owner's ops completed elsewhere, another
 * thread's ops completed by the owner). */
static void
test_leased_writes_swap_posting_and_reaping_threads(void)
{
	static const bool plan[][2] = {
		/* post on another thread, reap on another thread */
		{true, true},
		{false, true},
		{true, false},
		{false, false},
	};
	struct mrlt_pair p;
	static struct fi_context2 ctx[SWAP_N];
	char *src = buffer(SWAP_N * SWAP_SLOT, 23);
	char *tgt = buffer(SWAP_N * SWAP_SLOT, 0);
	struct fid_mr *mr = NULL;
	struct swap_phase ph = {.p = &p, .src = src, .ctx = ctx};

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	CHECK_FI(mrlt_pair_mr_reg(&p, tgt, SWAP_N * SWAP_SLOT, FI_REMOTE_WRITE,
				  &mr));
	ph.raddr = mrlt_pair_rma_addr(&p, tgt, tgt);
	ph.key = mr ? fi_mr_key(mr) : 0;
	for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]) && !mrlt_failed();
	     i++) {
		memset(tgt, 0, SWAP_N * SWAP_SLOT);
		ph.post = true;
		ph.reap = false;
		CHECK_MSG(!swap_phase(&ph, plan[i][0]), "plan %zu: posts: %d",
			  i, ph.ret);
		ph.post = false;
		ph.reap = true;
		CHECK_MSG(!swap_phase(&ph, plan[i][1]), "plan %zu: reaps: %d",
			  i, ph.ret);
		CHECK_EQ(-1, mrlt_verify(tgt, SWAP_N * SWAP_SLOT, 23));
		CHECK_EQ(0, mrlt_live_leases(&p));
	}
	if (mr)
		CHECK_EQ(0, fi_close(&mr->fid));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(tgt);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=64", NULL};
	char prefix[128];

	if (argc == 4 && !strcmp(argv[1], "--bare")) {
		prov = argv[3];
		if (!strcmp(argv[2], "multi-recv"))
			return bare_multi_recv();
		if (!strcmp(argv[2], "atomics"))
			return bare_atomics();
		return 127;
	}
	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrlease", env);
	for (const char *const *pv = xfer_providers; *pv; pv++) {
		prov = *pv;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(test_null_desc_send_recv_leases_until_completion);
		MRLT_RUN(test_null_desc_tagged_iovs_lease_every_operand);
		MRLT_RUN(test_null_desc_tagged_and_data_sends_lease_once_each);
		MRLT_RUN(test_null_desc_rma_and_remote_mr_stays_out_of_cache);
		MRLT_RUN(
			test_null_desc_atomics_lease_source_compare_and_result);
		MRLT_RUN(test_posts_needing_no_lease_skip_the_cache);
		MRLT_RUN(
			test_operands_below_the_threshold_are_counted_apart_from_lookups);
		MRLT_RUN(
			test_small_tagged_and_rma_posts_are_counted_below_the_threshold);
		MRLT_RUN(test_local_mr_served_from_cache_and_its_desc_works);
		MRLT_RUN(
			test_selective_completion_hides_what_the_app_did_not_ask);
		MRLT_RUN(test_cancel_of_leased_recv_releases_leases);
		MRLT_RUN(test_endpoint_close_releases_outstanding_leases);
		MRLT_RUN(test_counters_only_endpoint_releases_leases);
		MRLT_RUN(test_multi_recv_buffer_released_with_fi_multi_recv);
		MRLT_RUN(
			test_readfrom_keeps_src_addr_in_step_with_hidden_entries);
		MRLT_RUN(test_remote_cq_data_entry_passes_untouched);
		MRLT_RUN(test_leased_writes_past_one_chunk_complete_once_each);
		MRLT_RUN(test_leased_writes_swap_posting_and_reaping_threads);
	}
	return mrlt_done();
}
