/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_MULTI_RECV with two CQ readers on a shared (FI_THREAD_SAFE) pool: a
 * leased multi-recv buffer is one op with many completions. Reader A's
 * inner read returns a non-final entry naming the buffer's op X and A is
 * held (MRL_XFER_CTL_TEST_READING, mrl_xfer_ctl.h) before translating it; the
 * main thread (reader B) reads X's final entry (FI_MULTI_RECV), which
 * releases X's lease, and posts another leased receive, which would take X
 * off the pool if X had gone back. Then A translates: it must report the
 * multi-recv buffer's own context and leave the new receive alone (still
 * leased, later completed with its own context, data intact). Without the
 * guarded CQ's deferral A reads the new receive's context and completes it
 * (its lease released under a receive still posted).
 *
 * Deterministic: the hand-overs are spins on atomics (bounded, no sleeps);
 * the provider's ordering (a buffer's completions in order, the final one
 * last) makes A's held entry a non-final one of X.
 *
 * Reader A reads with each of the guarded CQ's read calls (enum a_call):
 * fi_cq_read, readfrom, sread, sreadfrom (readerr for error entries).
 * The blocking ones are given a timeout per call and a bounded number of
 * calls, so a bug fails the case instead of hanging it. Their CQ has a
 * wait object (FI_WAIT_UNSPEC): fi_cq(3) forbids the blocking calls on one
 * without (tcp;ofi_rxm's util CQ then dereferences its NULL wait set).
 *
 * Runs itself again with FI_HOOK=mrlease and FI_MRLEASE_MIN_SIZE=64.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/fixture_rdm.h"
#include "7-xfer/mrl_xfer_ctl.h"
#include "common/mrlt.h"
#include "common/xfer_util.h"

#define MSG 4096
/* The buffer holds three messages; it is released (FI_MULTI_RECV) once
 * less than two fit, i.e. at the second. */
#define BUF	       (3 * MSG)
#define MIN_MULTI_RECV (2 * MSG)
#define MAX_SENDS      4

static const char *prov;

/* The read call reader A makes. */
enum a_call {
	A_READ,
	A_READFROM,
	A_SREAD,
	A_SREADFROM,
};

/* A blocking read waits at most this long per call, and A makes at most
 * A_SREAD_CALLS of them (the wall bound of mrlt_wait_until_int). */
#define A_SREAD_TIMEOUT_MS 100
#define A_SREAD_CALLS	   (MRLT_WAIT_SECONDS * 1000 / A_SREAD_TIMEOUT_MS)

enum phase {
	PHASE_ARMED, /* A reads; the hook holds its first non-final recv */
	PHASE_HELD, /* A is held after its inner read */
	PHASE_RELEASED, /* A may translate */
	PHASE_DONE, /* A returned its entry */
};

struct race {
	struct mrlt_pair *p;
	enum a_call call;
	atomic_int phase;
	atomic_long holds;
	/* What A's read returned for its recv entry (after translation). */
	void *a_ctx;
	uint64_t a_flags;
	size_t a_len;
	int a_err;
	/* Send completions A read before it was held. */
	void *a_sends[MAX_SENDS];
	int a_nsends;
	pthread_t th;
	bool started;
};

static _Thread_local bool is_reader_a;

/* The test hook (guarded reads only), on every reading thread. */
static void
hold_reader_a(void *arg, const void *entries, ssize_t n)
{
	struct race *r = arg;
	const struct fi_cq_tagged_entry *e = entries;

	if (!is_reader_a || atomic_load(&r->phase) != PHASE_ARMED || n != 1 ||
	    !(e->flags & FI_RECV) || (e->flags & FI_MULTI_RECV))
		return;
	atomic_fetch_add(&r->holds, 1);
	atomic_store(&r->phase, PHASE_HELD);
	(void) mrlt_wait_until_int(&r->phase, PHASE_RELEASED);
}

static bool
a_call_blocks(enum a_call call)
{
	return call == A_SREAD || call == A_SREADFROM;
}

/* One read of one entry by reader A, with the call of the case. */
static ssize_t
a_read(struct race *r, struct fi_cq_tagged_entry *e)
{
	struct fid_cq *cq = r->p->cq;
	fi_addr_t src;

	switch (r->call) {
	case A_READFROM:
		return fi_cq_readfrom(cq, e, 1, &src);
	case A_SREAD:
		return fi_cq_sread(cq, e, 1, NULL, A_SREAD_TIMEOUT_MS);
	case A_SREADFROM:
		return fi_cq_sreadfrom(cq, e, 1, &src, NULL,
				       A_SREAD_TIMEOUT_MS);
	case A_READ:
	default:
		return fi_cq_read(cq, e, 1);
	}
}

/* Reader A: one entry per read until it has a receive's completion. */
static void *
reader_a(void *arg)
{
	struct race *r = arg;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	long polls = 0;
	long max_polls =
		a_call_blocks(r->call) ? A_SREAD_CALLS : MRLT_MAX_POLLS;

	is_reader_a = true;
	while (++polls < max_polls) {
		ssize_t n = a_read(r, &e);

		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(r->p->cq, &err, 0) > 0) {
				r->a_ctx = err.op_context;
				r->a_err = err.err ? err.err : FI_EOTHER;
				break;
			}
			continue;
		}
		if (n != 1)
			continue;
		if (e.flags & FI_RECV) {
			r->a_ctx = e.op_context;
			r->a_flags = e.flags;
			r->a_len = e.len;
			break;
		}
		if (r->a_nsends < MAX_SENDS)
			r->a_sends[r->a_nsends++] = e.op_context;
	}
	atomic_store(&r->phase, PHASE_DONE);
	return NULL;
}

static bool
wait_phase(struct race *r, int phase)
{
	return mrlt_wait_until_int(&r->phase, phase);
}

static bool
pair_open(struct mrlt_pair *p, enum a_call call)
{
	struct mrlt_pair_opts opts = {
		.prov = prov,
		.thread_safe = true,
		.caps = FI_MSG | FI_MULTI_RECV,
		.min_multi_recv = MIN_MULTI_RECV,
		.cq_wait = a_call_blocks(call) ? FI_WAIT_UNSPEC : FI_WAIT_NONE,
	};

	return mrlt_pair_open_hooked_safe(&opts, p);
}

struct sends {
	struct fi_context2 ctx[MAX_SENDS];
	bool done[MAX_SENDS];
	int n;
};

static bool
sends_done(const struct sends *s)
{
	for (int i = 0; i < s->n; i++)
		if (!s->done[i])
			return false;
	return true;
}

static void
sends_mark(struct sends *s, void *ctx)
{
	for (int i = 0; i < s->n; i++)
		if (ctx == &s->ctx[i])
			s->done[i] = true;
}

/* Send message i (pattern seed i + 1) from ep[0] to ep[1]. */
static void
send_one(struct mrlt_pair *p, struct sends *s, char *src)
{
	int i = s->n++;

	CHECK_FI(MRLT_PAIR_POST(p, fi_send(p->ep[0], src + (size_t) i * MSG,
					   MSG, NULL, p->addr[1], &s->ctx[i])));
}

/*
 * The common part: X posted and leased, A held on X's first (non-final)
 * entry, the main thread has read X's final entry and every send's
 * completion (leases 0). A failed check returns early: the caller releases
 * and joins A (r->started) whatever happened.
 */
static void
race_to_final(struct race *r, struct sends *s, char *src, char *xbuf,
	      struct fi_context2 *xctx, bool cancel)
{
	struct mrlt_pair *p = r->p;
	struct iovec riov = {xbuf, BUF};
	struct fi_msg rmsg = {.msg_iov = &riov,
			      .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC,
			      .context = xctx};
	struct mrl_xfer_test_reading hook = {.fn = hold_reader_a, .arg = r};
	bool final = false, more = false;
	long polls = 0;

	CHECK_FI(MRLT_PAIR_POST(p, fi_recvmsg(p->ep[1], &rmsg, FI_MULTI_RECV)));
	/* Leased (its CQ guarded first), or there is nothing to test. */
	CHECK_EQ(1, mrlt_live_leases(p));
	CHECK_FI(fi_control(&p->ep[1]->fid, MRL_XFER_CTL_TEST_READING, &hook));
	CHECK_EQ(0, pthread_create(&r->th, NULL, reader_a, r));
	r->started = true;
	send_one(p, s, src);
	CHECK(wait_phase(r, PHASE_HELD));
	/* Reader B: X's final entry (the one with FI_MULTI_RECV after a
	 * second message, or the cancel's error entry), and every send's
	 * completion. */
	if (cancel)
		CHECK_FI(fi_cancel(&p->ep[1]->fid, xctx));
	else
		send_one(p, s, src);
	for (int i = 0; i < r->a_nsends; i++)
		sends_mark(s, r->a_sends[i]);
	while ((!final || !sends_done(s)) && ++polls < MRLT_MAX_POLLS) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		ssize_t n = fi_cq_read(p->cq, &e, 1);

		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			CHECK_EQ(1, fi_cq_readerr(p->cq, &err, 0));
			CHECK_PTR(xctx, err.op_context);
			CHECK_EQ(FI_ECANCELED, err.err);
			CHECK(cancel);
			final = true;
			continue;
		}
		CHECK(n == 1 || n == -FI_EAGAIN);
		if (n != 1) {
			/* X took a message and nothing behind it says X was
			 * released: send another. */
			if (more && !final && s->n < MAX_SENDS - 1)
				send_one(p, s, src);
			more = false;
			continue;
		}
		sends_mark(s, e.op_context);
		if (e.op_context != xctx)
			continue;
		CHECK(!cancel);
		/* fi_cq(3): the release comes with the last message or in an
		 * entry of its own (FI_MULTI_RECV alone, no message: libfabric
		 * 2.x), whichever the provider chooses. */
		if (e.flags & FI_RECV)
			CHECK_EQ(MSG, e.len);
		else
			CHECK_EQ(FI_MULTI_RECV, e.flags & FI_MULTI_RECV);
		if (e.flags & FI_MULTI_RECV)
			final = true;
		else
			more = true;
	}
	CHECK(final);
	CHECK(sends_done(s));
	/* X's lease went with its final completion. */
	CHECK_EQ(0, mrlt_live_leases(p));
}

/* Let A translate its entry and wait for it. */
static void
release_a(struct race *r)
{
	atomic_store(&r->phase, PHASE_RELEASED);
	if (r->started && pthread_join(r->th, NULL))
		mrlt_fail(__FILE__, __LINE__, "pthread_join");
	r->started = false;
}

/* What A reported: the first message of the multi-recv buffer. */
static void
check_a_saw_x(struct race *r, struct fi_context2 *xctx)
{
	CHECK_EQ(1, atomic_load(&r->holds));
	CHECK_PTR(xctx, r->a_ctx);
	CHECK_EQ(0, r->a_err);
	CHECK(r->a_flags & FI_RECV);
	CHECK(!(r->a_flags & FI_MULTI_RECV));
	CHECK_EQ(MSG, r->a_len);
}

/* The receive posted after X's release completes now, with its own
 * context and data. */
static void
finish_y(struct mrlt_pair *p, struct sends *s, char *src, char *xbuf,
	 char *ybuf, struct fi_context2 *yctx)
{
	bool got_y = false;
	long polls = 0;

	/* Still posted and leased. */
	CHECK_EQ(1, mrlt_live_leases(p));
	send_one(p, s, src);
	while ((!got_y || !sends_done(s)) && ++polls < MRLT_MAX_POLLS) {
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(p->cq, &e, 1);

		CHECK(n == 1 || n == -FI_EAGAIN);
		if (n != 1)
			continue;
		sends_mark(s, e.op_context);
		if (e.op_context == yctx) {
			CHECK(e.flags & FI_RECV);
			CHECK_EQ(MSG, e.len);
			got_y = true;
		} else {
			/* Nothing else of ep[1] may complete. */
			CHECK(!(e.flags & FI_RECV));
		}
	}
	CHECK(got_y);
	/* X's messages (one before a cancel). */
	for (int i = 0; i < s->n - 1; i++)
		CHECK_EQ(-1, mrlt_verify(xbuf + (size_t) i * MSG, MSG,
					 (uint64_t) i + 1));
	CHECK_EQ(-1, mrlt_verify(ybuf, MSG, (uint64_t) s->n));
	CHECK_EQ(0, mrlt_live_leases(p));
}

static void
post_y(struct mrlt_pair *p, char *ybuf, struct fi_context2 *yctx)
{
	/* Without the deferral this takes X off the pool. */
	CHECK_FI(MRLT_PAIR_POST(
		p, fi_recv(p->ep[1], ybuf, MSG, NULL, FI_ADDR_UNSPEC, yctx)));
	CHECK_EQ(1, mrlt_live_leases(p));
}

static void
close_ep1(struct mrlt_pair *p)
{
	/* X is off its pool, waiting for A: close its endpoint. */
	CHECK_EQ(0, fi_close(&p->ep[1]->fid));
	p->ep[1] = NULL;
}

static char *
buffer(size_t len)
{
	char *b = NULL;

	if (posix_memalign((void **) &b, 4096, len))
		abort();
	memset(b, 0, len);
	return b;
}

static void
held_entry_across_reuse(enum a_call call, bool cancel)
{
	struct mrlt_pair p;
	struct race r = {.p = &p, .call = call};
	struct sends s = {.n = 0};
	struct fi_context2 xctx, yctx;
	char *src = buffer(MAX_SENDS * MSG), *xbuf = buffer(BUF);
	char *ybuf = buffer(MSG);

	atomic_init(&r.phase, PHASE_ARMED);
	atomic_init(&r.holds, 0);
	for (int i = 0; i < MAX_SENDS; i++)
		mrlt_fill(src + (size_t) i * MSG, MSG, (uint64_t) i + 1);
	if (pair_open(&p, call)) {
		race_to_final(&r, &s, src, xbuf, &xctx, cancel);
		if (!mrlt_failed())
			post_y(&p, ybuf, &yctx);
		release_a(&r);
		if (!mrlt_failed())
			check_a_saw_x(&r, &xctx);
		if (!mrlt_failed())
			finish_y(&p, &s, src, xbuf, ybuf, &yctx);
		if (mrlt_pair_close(&p))
			mrlt_fail(__FILE__, __LINE__, "mrlt_pair_close");
	}
	free(src);
	free(xbuf);
	free(ybuf);
}

/* A reader holding a non-final entry of a leased multi-recv buffer while
 * another thread reads its final one and posts again: the op went back to
 * the pool and was reused, so the held entry reported the new receive's
 * context and completed it, releasing its lease under the posted receive. */
static void
test_multi_recv_entry_held_by_a_reader_keeps_its_context_across_reuse(void)
{
	held_entry_across_reuse(A_READ, false);
}

/* The same with reader A in fi_cq_readfrom: a guarded CQ's readfrom must
 * count its reader like read does, or the op it holds is reused under it. */
static void
test_multi_recv_entry_held_in_readfrom_keeps_its_context_across_reuse(void)
{
	held_entry_across_reuse(A_READFROM, false);
}

/* The same with reader A waiting in fi_cq_sread (a blocking read): an
 * uncounted sread let the final entry's reader recycle X under it. */
static void
test_multi_recv_entry_held_in_sread_keeps_its_context_across_reuse(void)
{
	held_entry_across_reuse(A_SREAD, false);
}

/* The same with reader A blocked in fi_cq_sreadfrom: its own path into
 * the provider (src_addr set) must be counted as sread's is. */
static void
test_multi_recv_entry_held_in_sreadfrom_keeps_its_context_across_reuse(void)
{
	held_entry_across_reuse(A_SREADFROM, false);
}

/* The same with the buffer's end an error entry (fi_cancel, read by
 * fi_cq_readerr): the error path frees the op as the final completion
 * does, and must defer it the same way. */
static void
test_multi_recv_cancel_while_a_reader_holds_an_entry_keeps_its_context(void)
{
	held_entry_across_reuse(A_READ, true);
}

/* Endpoint close while the multi-recv op waits on the CQ for reader A:
 * freeing its pool then left A translating an op of a freed pool (the
 * wrong context) and pushing it onto freed memory (use after free, ASan). */
static void
test_ep_close_with_a_deferred_multi_recv_op_frees_nothing_early(void)
{
	struct mrlt_pair p;
	struct race r = {.p = &p};
	struct sends s = {.n = 0};
	struct fi_context2 xctx;
	char *src = buffer(MAX_SENDS * MSG), *xbuf = buffer(BUF);

	atomic_init(&r.phase, PHASE_ARMED);
	atomic_init(&r.holds, 0);
	for (int i = 0; i < MAX_SENDS; i++)
		mrlt_fill(src + (size_t) i * MSG, MSG, (uint64_t) i + 1);
	if (pair_open(&p, r.call)) {
		race_to_final(&r, &s, src, xbuf, &xctx, false);
		if (!mrlt_failed())
			close_ep1(&p);
		release_a(&r);
		if (!mrlt_failed())
			check_a_saw_x(&r, &xctx);
		if (!mrlt_failed() && mrlt_verify(xbuf, MSG, 1) != -1)
			mrlt_fail(__FILE__, __LINE__, "X's first message");
		if (!mrlt_failed() && mrlt_live_leases(&p) != 0)
			mrlt_fail(__FILE__, __LINE__, "leases left");
		if (mrlt_pair_close(&p))
			mrlt_fail(__FILE__, __LINE__, "mrlt_pair_close");
	}
	free(src);
	free(xbuf);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=64", NULL};
	static const char *const provs[] = {"tcp;ofi_rxm", "sockets"};
	char prefix[128];

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrlease", env);
	for (size_t i = 0; i < sizeof(provs) / sizeof(provs[0]); i++) {
		prov = provs[i];
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(
			test_multi_recv_entry_held_by_a_reader_keeps_its_context_across_reuse);
		MRLT_RUN(
			test_multi_recv_entry_held_in_readfrom_keeps_its_context_across_reuse);
		MRLT_RUN(
			test_multi_recv_entry_held_in_sread_keeps_its_context_across_reuse);
		MRLT_RUN(
			test_multi_recv_entry_held_in_sreadfrom_keeps_its_context_across_reuse);
		MRLT_RUN(
			test_multi_recv_cancel_while_a_reader_holds_an_entry_keeps_its_context);
		MRLT_RUN(
			test_ep_close_with_a_deferred_multi_recv_op_frees_nothing_early);
	}
	return mrlt_done();
}
