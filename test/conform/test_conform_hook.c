/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Conformance through FI_HOOK=mrlease: libfabric semantics an application
 * relies on (fi_eq(3), fi_cq(3), fi_poll(3), fi_trigger(3)) observed
 * through the hook on real providers over loopback, as they are without it.
 *
 * Each case runs in a child process of its own (libfabric reads FI_HOOK
 * once per process, and a crash then fails one case, not the program):
 * first with FI_HOOK=mrlease; when that fails, again without the hook (the
 * no-hook control). A case that fails on the bare provider too is skipped
 * with the control's reason, never counted as passed.
 *
 * Usage: test_conform_hook (the whole suite), or
 * test_conform_hook --case NAME PROVIDER (one case, in this process,
 * with whatever FI_HOOK is set).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "common/xfer_util.h"

/* fi_poll and fi_wait, poll sets and wait sets are deprecated from
 * libfabric 2.0 on, and still what several cases here are about. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* Seconds a child may take before it is killed (SIGALRM): a hang fails
 * its case. */
#define CHILD_ALARM 30

/* The provider of the case running in this (child) process. */
static const char *prov;
/* Whether this process runs with FI_HOOK set (the hooked run of a case). */
static bool hooked;

/* ------------------------------------------------------------------------
 * Set-up shared by the cases.
 */

/* Endpoint type a provider offers on its own: tcp (1.17) has MSG only. */
static enum fi_ep_type
prov_ep_type(void)
{
	return strcmp(prov, "tcp") ? FI_EP_RDM : FI_EP_MSG;
}

/* The hook is in the path exactly when this run is the hooked one. */
static bool
hook_matches(struct fid_domain *domain)
{
	void *ops = NULL;
	int ret = fi_open_ops(&domain->fid, FI_MRLEASE_OPS_1, 0, &ops, NULL);

	if ((ret == 0) != hooked) {
		mrlt_fail(__FILE__, __LINE__,
			  "FI_MRLEASE_OPS_1 on the "
			  "domain: %d, but FI_HOOK is %s",
			  ret, hooked ? "mrlease" : "unset");
		return false;
	}
	return true;
}

/* Fabric and domain for prov; false with the case skipped or failed. */
static bool
open_domain(struct mrlt_domain *d)
{
	struct fi_info *hints = mrlt_hints(prov, prov_ep_type(), FI_MSG);
	struct fi_info *info;
	int ret;

	ret = mrlt_getinfo(hints, NULL, NULL, 0, &info);
	if (ret == -FI_ENODATA) {
		mrlt_skip_current("%s offers no such info", prov);
		return false;
	}
	if (ret || mrlt_domain_open(info, d))
		return false;
	return hook_matches(d->domain);
}

/* An xfer pair with or without the hook, as this run is; false with the
 * case skipped (the provider cannot) or failed. */
static bool
pair_open(struct mrlt_pair_opts opts, struct mrlt_pair *p)
{
	int ret;

	opts.prov = prov;
	ret = mrlt_pair_open(&opts, p);
	/* Whatever a failed open left (nothing, or its buffer). */
	if (ret)
		mrlt_pair_close(p);
	if (ret == -FI_ENODATA || ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP) {
		mrlt_skip_current("%s cannot: %s", prov, fi_strerror(-ret));
		return false;
	}
	if (ret) {
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_open: %s",
			  fi_strerror(-ret));
		return false;
	}
	if (!p->mrl != !hooked) {
		mrlt_fail(__FILE__, __LINE__,
			  "FI_MRLEASE_OPS_1 %s, but "
			  "FI_HOOK is %s",
			  p->mrl ? "answers" : "refused",
			  hooked ? "mrlease" : "unset");
		mrlt_pair_close(p);
		return false;
	}
	if (opts.thread_safe &&
	    p->info->domain_attr->threading != FI_THREAD_SAFE) {
		mrlt_skip_current("%s: not FI_THREAD_SAFE", prov);
		mrlt_pair_close(p);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Event queues.
 */

/*
 * fi_eq(3): fi_eq_write inserts the application's own event, and a read
 * returns it as written. The hook took every fid it read for a provider's
 * and followed it, so an event naming non-fid memory crashed fi_eq_read.
 */
static void
test_eq_read_returns_application_written_events_untouched(void)
{
	struct mrlt_domain d;
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC,
				  .flags = FI_WRITE};
	/* Memory that is no fid: every word 0x4141... (read as a fid, its
	 * ops and context point nowhere). */
	uint64_t junk[16];
	struct fi_eq_entry in, out;
	struct fid_eq *eq;
	fid_t fids[5];
	uint32_t event;
	int ctx[5];

	if (!open_domain(&d))
		return;
	CHECK_FI(fi_eq_open(d.fabric, &attr, &eq, NULL));
	mrlt_track_fid(&eq->fid);
	memset(junk, 0x41, sizeof(junk));
	fids[0] = &d.fabric->fid;
	fids[1] = &eq->fid;
	fids[2] = NULL;
	fids[3] = (struct fid *) junk;
	fids[4] = &d.domain->fid;
	for (int i = 0; i < 5; i++) {
		in = (struct fi_eq_entry){.fid = fids[i],
					  .context = &ctx[i],
					  .data = 40 + i};
		CHECK_EQ(sizeof(in),
			 fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0));
	}
	for (int i = 0; i < 5; i++) {
		/* Peeked, then read (fi_eq_sread for one of them). */
		for (int peek = 1; peek >= 0; peek--) {
			memset(&out, 0, sizeof(out));
			event = ~0u;
			if (!peek && i == 2)
				CHECK_EQ(sizeof(out),
					 fi_eq_sread(eq, &event, &out,
						     sizeof(out), 1000, 0));
			else
				CHECK_EQ(sizeof(out),
					 fi_eq_read(eq, &event, &out,
						    sizeof(out),
						    peek ? FI_PEEK : 0));
			CHECK_EQ(FI_NOTIFY, event);
			CHECK_PTR(fids[i], out.fid);
			CHECK_PTR(&ctx[i], out.context);
			CHECK_EQ(40 + i, out.data);
		}
	}
	CHECK_EQ(-FI_EAGAIN, fi_eq_read(eq, &event, &out, sizeof(out), 0));
	/* What was written is not the hook's: never rewritten. */
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		CHECK_EQ(0x4141414141414141ULL, junk[i]);
}

/* ------------------------------------------------------------------------
 * fi_cq_signal.
 */

/* Every blocking read below is given this timeout; a signal must end it
 * well before (a read that ran into it was not woken by the signal). */
#define SREAD_TIMEOUT_MS 8000
/* How long the main thread waits for a blocked reader to return. */
#define READER_GUARD_S 30.0

/* fi_cq(3): a signalled sread returns -FI_EAGAIN (libfabric before 1.18's
 * util CQ said -FI_ECANCELED). */
static bool
signalled_read_rc(ssize_t rc)
{
	return rc == -FI_EAGAIN || rc == -FI_ECANCELED;
}

/*
 * fi_cq(3): fi_cq_signal unblocks fi_cq_sread. A signal given before the
 * read made the bare provider's sread return at once; through the hook the
 * read waited out its whole timeout (the hook retried the -FI_EAGAIN).
 */
static void
test_cq_sread_after_signal_returns_before_its_timeout(void)
{
	struct mrlt_domain d;
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_UNSPEC,
				  .size = 64};
	struct fi_cq_tagged_entry e;
	struct fid_cq *cq;
	double t0, elapsed;
	ssize_t rc;
	int ret;

	if (!open_domain(&d))
		return;
	ret = fi_cq_open(d.domain, &attr, &cq, NULL);
	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL) {
		mrlt_skip_current("%s: no CQ with FI_WAIT_UNSPEC: %s", prov,
				  fi_strerror(-ret));
		return;
	}
	CHECK_FI(ret);
	mrlt_track_fid(&cq->fid);
	CHECK_FI(fi_cq_signal(cq));
	t0 = mrlt_now() * 1e3;
	rc = fi_cq_sread(cq, &e, 1, NULL, SREAD_TIMEOUT_MS);
	elapsed = mrlt_now() * 1e3 - t0;
	CHECK_MSG(signalled_read_rc(rc), "fi_cq_sread after fi_cq_signal: %zd",
		  rc);
	CHECK_MSG(elapsed < SREAD_TIMEOUT_MS / 2,
		  "fi_cq_sread after fi_cq_signal took %.0f ms of its %d ms "
		  "timeout: the signal was lost",
		  elapsed, SREAD_TIMEOUT_MS);
}

/* A reader blocked in fi_cq_sread or fi_cq_sreadfrom on another thread. */
struct blocked_reader {
	struct fid_cq *cq;
	bool from; /* fi_cq_sreadfrom */
	atomic_int started;
	atomic_int done;
	ssize_t rc;
	double elapsed_ms;
};

static void *
blocked_reader_main(void *arg)
{
	struct blocked_reader *r = arg;
	struct fi_cq_tagged_entry e[4];
	fi_addr_t src[4];
	double t0;

	atomic_store(&r->started, 1);
	t0 = mrlt_now() * 1e3;
	r->rc = r->from ? fi_cq_sreadfrom(r->cq, e, 4, src, NULL,
					  SREAD_TIMEOUT_MS) :
			  fi_cq_sread(r->cq, e, 4, NULL, SREAD_TIMEOUT_MS);
	r->elapsed_ms = mrlt_now() * 1e3 - t0;
	atomic_store(&r->done, 1);
	return NULL;
}

static int
blocked_reader_start(struct blocked_reader *r, pthread_t *thread)
{
	atomic_init(&r->started, 0);
	atomic_init(&r->done, 0);
	return pthread_create(thread, NULL, blocked_reader_main, r);
}

/* Wait (READER_GUARD_S at most, yielding) for the reader to return, join
 * it (it returns by its own timeout anyway) and check it was woken. */
static void
blocked_reader_check(struct blocked_reader *r, pthread_t thread)
{
	struct mrlt_wait w;
	bool done;

	mrlt_wait_init_for(&w, READER_GUARD_S);
	while (!(done = atomic_load(&r->done)) && !mrlt_wait_over(&w))
		sched_yield();
	pthread_join(thread, NULL);
	CHECK_MSG(done, "the blocked reader did not return within %.0f s",
		  READER_GUARD_S);
	CHECK_MSG(signalled_read_rc(r->rc), "signalled %s returned %zd",
		  r->from ? "fi_cq_sreadfrom" : "fi_cq_sread", r->rc);
	CHECK_MSG(r->elapsed_ms < SREAD_TIMEOUT_MS,
		  "%s returned after %.0f ms, its whole %d ms timeout: the "
		  "signal did not wake it",
		  r->from ? "fi_cq_sreadfrom" : "fi_cq_sread", r->elapsed_ms,
		  SREAD_TIMEOUT_MS);
}

/*
 * fi_cq(3): fi_cq_signal wakes a thread blocked in fi_cq_sread or
 * fi_cq_sreadfrom. Through the hook the woken read went back to wait for
 * the rest of its timeout, so a reader told to stop kept waiting.
 */
static void
cq_signal_wakes_a_blocked_reader(bool from)
{
	struct mrlt_pair p;
	struct blocked_reader r = {.from = from};
	pthread_t thread;

	if (!pair_open((struct mrlt_pair_opts){.cq_wait = FI_WAIT_UNSPEC,
					       .thread_safe = true},
		       &p))
		return;
	r.cq = p.cq;
	CHECK_EQ(0, blocked_reader_start(&r, &thread));
	/* Signalled once the reader runs; whether it is inside the wait yet
	 * or not, the signal must end that read. */
	if (!mrlt_wait_until_int(&r.started, 1))
		mrlt_fail(__FILE__, __LINE__, "reader never started");
	else
		CHECK_FI(fi_cq_signal(p.cq));
	blocked_reader_check(&r, thread);
	CHECK_EQ(0, mrlt_pair_close(&p));
}

static void
test_cq_signal_wakes_a_thread_blocked_in_sread(void)
{
	cq_signal_wakes_a_blocked_reader(false);
}

static void
test_cq_signal_wakes_a_thread_blocked_in_sreadfrom(void)
{
	cq_signal_wakes_a_blocked_reader(true);
}

#define HIDDEN_WRITES 8
#define HIDDEN_LEN    4096

/*
 * A blocked reader whose read returned only completions the hook hides
 * (leased writes posted without FI_COMPLETION under FI_SELECTIVE_
 * COMPLETION) waits again; a signal given then must still end the read.
 * The hook's retry took the signalled -FI_EAGAIN for another empty batch,
 * and over tcp;ofi_rxm a signal given just as the retry entered the
 * provider's sread again was lost (util CQs look at their signal flag, then
 * drain their wait fd): the read ran out its timeout, mostly on a loaded
 * machine.
 */
static void
test_cq_signal_is_not_swallowed_by_hidden_completions(void)
{
	struct mrlt_pair p;
	struct blocked_reader r = {.from = false};
	struct fi_context2 ctx[HIDDEN_WRITES];
	char *src = NULL, *dst = NULL;
	struct fid_mr *mr = NULL;
	struct mrlt_wait w;
	pthread_t thread;
	bool running = false;
	long long leases;

	if (!hooked) {
		/* Without the hook nothing is hidden: the bare provider's
		 * half of this is test_cq_signal_wakes_a_thread_blocked_in_
		 * sread. */
		mrlt_skip_current("only the hook hides completions");
		return;
	}
	if (!pair_open((struct mrlt_pair_opts){.cq_wait = FI_WAIT_UNSPEC,
					       .selective = true,
					       .thread_safe = true},
		       &p))
		return;
	src = malloc(HIDDEN_LEN);
	dst = calloc(1, HIDDEN_LEN);
	if (!src || !dst) {
		mrlt_fail(__FILE__, __LINE__, "out of memory");
		goto out;
	}
	mrlt_fill(src, HIDDEN_LEN, 5);
	if (mrlt_pair_mr_reg(&p, dst, HIDDEN_LEN, FI_REMOTE_WRITE, &mr)) {
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_mr_reg failed");
		goto out;
	}
	r.cq = p.cq;
	if (blocked_reader_start(&r, &thread)) {
		mrlt_fail(__FILE__, __LINE__, "pthread_create failed");
		goto out;
	}
	running = true;
	if (!mrlt_wait_until_int(&r.started, 1)) {
		mrlt_fail(__FILE__, __LINE__, "reader never started");
		goto out;
	}
	/* Leased (FI_MRLEASE_MIN_SIZE=0), no completion asked: the hook
	 * asks the provider for one to release the lease, and hides it. */
	for (int i = 0; i < HIDDEN_WRITES; i++) {
		struct iovec iov = {.iov_base = src, .iov_len = HIDDEN_LEN};
		struct fi_rma_iov rma = {
			.addr = mrlt_pair_rma_addr(&p, dst, dst),
			.len = HIDDEN_LEN,
			.key = fi_mr_key(mr),
		};
		struct fi_msg_rma msg = {
			.msg_iov = &iov,
			.iov_count = 1,
			.addr = p.addr[1],
			.rma_iov = &rma,
			.rma_iov_count = 1,
			.context = &ctx[i],
		};
		ssize_t rc;
		struct mrlt_wait pw;

		mrlt_wait_init(&pw);
		while ((rc = fi_writemsg(p.ep[0], &msg, 0)) == -FI_EAGAIN &&
		       !mrlt_wait_over(&pw))
			sched_yield();
		if (rc) {
			mrlt_fail(__FILE__, __LINE__, "fi_writemsg: %zd", rc);
			goto out;
		}
	}
	/* The blocked reader read (and the hook dropped) every hidden
	 * completion: their leases are gone, and the read goes on. */
	mrlt_wait_init(&w);
	while ((leases = mrlt_live_leases(&p)) > 0 && !atomic_load(&r.done) &&
	       !mrlt_wait_over(&w))
		sched_yield();
	if (atomic_load(&r.done)) {
		mrlt_fail(__FILE__, __LINE__,
			  "the reader returned %zd "
			  "before the signal (hidden completions shown?)",
			  r.rc);
		goto out;
	}
	if (leases) {
		mrlt_fail(__FILE__, __LINE__,
			  "%lld leases still held: the "
			  "blocked reader never read the hidden "
			  "completions",
			  leases);
		goto out;
	}
	if (fi_cq_signal(p.cq))
		mrlt_fail(__FILE__, __LINE__, "fi_cq_signal failed");
out:
	if (running)
		blocked_reader_check(&r, thread);
	if (!mrlt_failed() && mrlt_wait_pattern(&p, dst, HIDDEN_LEN, 5) >= 0)
		mrlt_fail(__FILE__, __LINE__, "hidden writes lost data");
	if (mr)
		fi_close(&mr->fid);
	if (mrlt_pair_close(&p))
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_close failed");
	free(src);
	free(dst);
}

/* ------------------------------------------------------------------------
 * Triggered operations.
 */

#define TRIGGER_LEN 4096

/* Whether this run leases every operand. */
static bool
min_size_0_set(void)
{
	const char *v = getenv("FI_MRLEASE_MIN_SIZE");

	return v && !strcmp(v, "0");
}

static bool
all_zero(const void *buf, size_t len)
{
	const unsigned char *b = buf;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

enum trigger_family { TRIG_WRITE, TRIG_SEND, TRIG_TSEND, TRIG_ATOMIC };

static const char *const trigger_family_names[] = {
	[TRIG_WRITE] = "fi_writemsg",
	[TRIG_SEND] = "fi_sendmsg",
	[TRIG_TSEND] = "fi_tsendmsg",
	[TRIG_ATOMIC] = "fi_atomicmsg",
};

/* A small tagged send from ep[0] to ep[1] and its receive (a tag no
 * other receive takes), both completed with no completion of waiting
 * (the triggered op) among them. */
static bool
ping_passes_the_waiting_op(struct mrlt_pair *p, void *waiting)
{
	struct fi_context2 sctx, rctx;
	struct mrlt_comp c;
	uint64_t out = 7, in = 0;
	int seen = 0;

	if (MRLT_PAIR_POST(p, fi_trecv(p->ep[1], &in, sizeof(in), NULL,
				       FI_ADDR_UNSPEC, 0x51, 0, &rctx)) ||
	    MRLT_PAIR_POST(p, fi_tsend(p->ep[0], &out, sizeof(out), NULL,
				       p->addr[1], 0x51, &sctx)))
		return false;
	while (seen < 2) {
		if (mrlt_reap(p, &c, 1) != 1 || c.err || c.ctx == waiting)
			return false;
		seen += c.ctx == &sctx || c.ctx == &rctx;
	}
	return in == 7;
}

/* Post family's op from ep[0] to ep[1] (dst registered as mr for RMA and
 * atomics) with FI_TRIGGER and context trig. */
static ssize_t
trigger_post(struct mrlt_pair *p, enum trigger_family family, void *src,
	     void *dst, struct fid_mr *mr, struct fi_triggered_context *trig)
{
	struct iovec iov = {.iov_base = src, .iov_len = TRIGGER_LEN};
	struct fi_rma_iov rma = {.len = TRIGGER_LEN};
	struct fi_ioc ioc = {.addr = src, .count = 1};
	struct fi_rma_ioc rma_ioc = {.count = 1};

	if (mr) {
		rma.addr = rma_ioc.addr = mrlt_pair_rma_addr(p, dst, dst);
		rma.key = rma_ioc.key = fi_mr_key(mr);
	}
	switch (family) {
	case TRIG_WRITE: {
		struct fi_msg_rma m = {
			.msg_iov = &iov,
			.iov_count = 1,
			.addr = p->addr[1],
			.rma_iov = &rma,
			.rma_iov_count = 1,
			.context = trig,
		};
		return fi_writemsg(p->ep[0], &m, FI_TRIGGER);
	}
	case TRIG_SEND: {
		struct fi_msg m = {.msg_iov = &iov,
				   .iov_count = 1,
				   .addr = p->addr[1],
				   .context = trig};
		return fi_sendmsg(p->ep[0], &m, FI_TRIGGER);
	}
	case TRIG_TSEND: {
		struct fi_msg_tagged m = {.msg_iov = &iov,
					  .iov_count = 1,
					  .addr = p->addr[1],
					  .tag = 0x7a,
					  .context = trig};
		return fi_tsendmsg(p->ep[0], &m, FI_TRIGGER);
	}
	case TRIG_ATOMIC: {
		struct fi_msg_atomic m = {
			.msg_iov = &ioc,
			.iov_count = 1,
			.addr = p->addr[1],
			.rma_iov = &rma_ioc,
			.rma_iov_count = 1,
			.datatype = FI_UINT64,
			.op = FI_SUM,
			.context = trig,
		};
		return fi_atomicmsg(p->ep[0], &m, FI_TRIGGER);
	}
	}
	return -FI_EINVAL;
}

/*
 * fi_trigger(3): an op posted with FI_TRIGGER and a struct
 * fi_triggered_context runs once the application's counter reaches the
 * threshold, with the data its operand holds then, and completes with
 * that context. The hook handed the provider its own counter (or its op
 * as the context), so the provider read a foreign struct as a counter:
 * the op ran early with stale data, or crashed.
 */
static void
triggered_op_waits_for_its_threshold(enum trigger_family family)
{
	const char *what = trigger_family_names[family];
	struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP};
	/* Room for a struct fi_triggered_context2, what FI_CONTEXT2 asks. */
	union {
		struct fi_triggered_context c;
		struct fi_triggered_context2 c2;
	} trig = {.c = {.event_type = FI_TRIGGER_THRESHOLD}};
	struct fi_context2 rctx;
	struct mrlt_comp comps[2];
	struct fid_mr *mr = NULL;
	struct fid_cntr *cntr = NULL;
	struct mrlt_pair p;
	uint64_t *src = mrlt_alloc(TRIGGER_LEN), *dst = mrlt_alloc(TRIGGER_LEN);
	size_t ncomps = family == TRIG_SEND || family == TRIG_TSEND ? 2 : 1;
	ssize_t rc;
	int n;

	if (!pair_open((struct mrlt_pair_opts){.caps = FI_MSG | FI_TAGGED |
						       FI_RMA | FI_ATOMIC |
						       FI_TRIGGER},
		       &p))
		return;
	if (fi_cntr_open(p.domain, &cattr, &cntr, NULL)) {
		mrlt_fail(__FILE__, __LINE__, "fi_cntr_open failed");
		cntr = NULL;
		goto out;
	}
	/* The operand holds stale data until the op is due: the data it
	 * must carry is written after the post (fi_trigger(3)'s pipelines
	 * fill it from an earlier transfer). */
	if (family == TRIG_ATOMIC) {
		src[0] = 1000;
		dst[0] = 37;
	} else {
		mrlt_fill(src, TRIGGER_LEN, 99);
	}
	if ((family == TRIG_WRITE || family == TRIG_ATOMIC) &&
	    mrlt_pair_mr_reg(&p, dst, TRIGGER_LEN,
			     FI_REMOTE_WRITE | FI_REMOTE_READ, &mr)) {
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_mr_reg failed");
		goto out;
	}
	if (family == TRIG_SEND)
		rc = MRLT_PAIR_POST(&p, fi_recv(p.ep[1], dst, TRIGGER_LEN, NULL,
						FI_ADDR_UNSPEC, &rctx));
	else if (family == TRIG_TSEND)
		rc = MRLT_PAIR_POST(&p,
				    fi_trecv(p.ep[1], dst, TRIGGER_LEN, NULL,
					     FI_ADDR_UNSPEC, 0x7a, 0, &rctx));
	else
		rc = 0;
	if (rc) {
		mrlt_fail(__FILE__, __LINE__, "receive: %zd", rc);
		goto out;
	}

	trig.c.trigger.threshold.cntr = cntr;
	trig.c.trigger.threshold.threshold = 1;
	rc = MRLT_PAIR_POST(&p,
			    trigger_post(&p, family, src, dst, mr, &trig.c));
	if (rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP) {
		mrlt_skip_current("%s: %s with FI_TRIGGER: %s", prov, what,
				  fi_strerror((int) -rc));
		goto out;
	}
	if (rc) {
		mrlt_fail(__FILE__, __LINE__, "%s with FI_TRIGGER: %zd", what,
			  rc);
		goto out;
	}
	/* With every operand leased, the hook's op is the context the
	 * provider reads. */
	if (hooked && min_size_0_set() && mrlt_live_leases(&p) < 1) {
		mrlt_fail(__FILE__, __LINE__, "%s was not leased", what);
		goto out;
	}
	/* Below its threshold the op does nothing: a send posted after it
	 * arrives and completes while it waits (an op that ran at its post
	 * went first on the same queue). */
	if (!ping_passes_the_waiting_op(&p, &trig.c) ||
	    (family == TRIG_ATOMIC ? dst[0] != 37 :
				     !all_zero(dst, TRIGGER_LEN))) {
		mrlt_fail(__FILE__, __LINE__, "%s ran below its threshold",
			  what);
		goto out;
	}

	if (family == TRIG_ATOMIC)
		src[0] = 5;
	else
		mrlt_fill(src, TRIGGER_LEN, 23);
	if (fi_cntr_add(cntr, 1)) {
		mrlt_fail(__FILE__, __LINE__, "fi_cntr_add failed");
		goto out;
	}
	n = mrlt_reap(&p, comps, ncomps);
	if (n != (int) ncomps) {
		mrlt_fail(__FILE__, __LINE__,
			  "%s: %d of %zu completions "
			  "after the threshold",
			  what, n, ncomps);
		goto out;
	}
	for (size_t i = 0; i < ncomps; i++) {
		bool mine = comps[i].ctx == &trig.c;

		if (comps[i].err ||
		    !(mine || (ncomps == 2 && comps[i].ctx == &rctx))) {
			mrlt_fail(__FILE__, __LINE__,
				  "%s: completion %zu: "
				  "context %p (want %p), error %d",
				  what, i, comps[i].ctx, (void *) &trig.c,
				  comps[i].err);
			goto out;
		}
	}
	if (family == TRIG_ATOMIC) {
		struct mrlt_wait w;

		mrlt_wait_init(&w);
		while (__atomic_load_n(&dst[0], __ATOMIC_ACQUIRE) != 42 &&
		       !mrlt_wait_over(&w))
			mrlt_pair_progress(&p);
		if (dst[0] != 42)
			mrlt_fail(__FILE__, __LINE__,
				  "atomic sum: %" PRIu64 ", want 42", dst[0]);
	} else if (mrlt_wait_pattern(&p, dst, TRIGGER_LEN, 23) >= 0) {
		mrlt_fail(__FILE__, __LINE__, "%s delivered other data", what);
	}
	if (mrlt_live_leases(&p) > 0)
		mrlt_fail(__FILE__, __LINE__,
			  "%lld leases left after the "
			  "completion",
			  mrlt_live_leases(&p));
out:
	if (mr)
		fi_close(&mr->fid);
	if (cntr && fi_close(&cntr->fid))
		mrlt_fail(__FILE__, __LINE__, "closing the counter failed");
	if (mrlt_pair_close(&p))
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_close failed");
}

static void
test_triggered_write_waits_for_its_threshold(void)
{
	triggered_op_waits_for_its_threshold(TRIG_WRITE);
}

static void
test_triggered_send_waits_for_its_threshold(void)
{
	triggered_op_waits_for_its_threshold(TRIG_SEND);
}

static void
test_triggered_tsend_waits_for_its_threshold(void)
{
	triggered_op_waits_for_its_threshold(TRIG_TSEND);
}

static void
test_triggered_atomic_waits_for_its_threshold(void)
{
	triggered_op_waits_for_its_threshold(TRIG_ATOMIC);
}

/* ------------------------------------------------------------------------
 * Poll sets, wait sets and fi_trywait.
 */

#define HIDDEN_ROUNDS 4

/* Post one leased write from ep[0] into dst (registered as mr) with flags
 * (0 under FI_SELECTIVE_COMPLETION: no completion asked, so the hook asks
 * for one and hides it). */
static ssize_t
post_write(struct mrlt_pair *p, void *src, void *dst, struct fid_mr *mr,
	   uint64_t flags, void *ctx)
{
	struct iovec iov = {.iov_base = src, .iov_len = HIDDEN_LEN};
	struct fi_rma_iov rma = {.addr = mrlt_pair_rma_addr(p, dst, dst),
				 .len = HIDDEN_LEN,
				 .key = fi_mr_key(mr)};
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = p->addr[1],
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = ctx,
	};

	return MRLT_PAIR_POST(p, fi_writemsg(p->ep[0], &msg, flags));
}

/* What reports a CQ ready in the readiness cases. */
enum ready_probe { PROBE_POLL, PROBE_TRYWAIT };

static const char *const ready_probe_names[] = {
	[PROBE_POLL] = "fi_poll",
	[PROBE_TRYWAIT] = "fi_trywait",
};

struct ready_set {
	enum ready_probe probe;
	struct fid_poll *poll;
};

/* Whether r's probe says p->cq has something to read (< 0: it failed). */
static int
ready_probe(struct mrlt_pair *p, struct ready_set *r)
{
	struct fid *fids[1] = {&p->cq->fid};
	void *ctx[2];
	int ret;

	switch (r->probe) {
	case PROBE_POLL:
		ret = fi_poll(r->poll, ctx, 2);
		if (ret > 0 && ctx[0] != p->cq->fid.context)
			return -FI_EOTHER;
		return ret;
	case PROBE_TRYWAIT:
		ret = fi_trywait(p->fabric, fids, 1);
		return ret == -FI_EAGAIN ? 1 : ret;
	}
	return -FI_EINVAL;
}

/*
 * fi_poll(3), fi_trywait: a CQ reported ready has a completion to read.
 * Through the hook a CQ holding only completions the hook hides (leased
 * ops the application asked none for) was reported, and the fi_cq_read
 * that followed returned -FI_EAGAIN: the hook had eaten the entry.
 */
static void
cq_ready_only_with_a_readable_completion(enum ready_probe probe)
{
	const char *what = ready_probe_names[probe];
	struct mrlt_pair_opts opts = {.selective = true,
				      .cq_wait = FI_WAIT_UNSPEC};
	struct ready_set r = {.probe = probe};
	struct fi_cq_tagged_entry e[4];
	struct fi_context2 ctx, vctx[HIDDEN_ROUNDS];
	int seen[HIDDEN_ROUNDS] = {0};
	struct fid_mr *mr = NULL;
	struct mrlt_pair p;
	char *src = mrlt_alloc(HIDDEN_LEN), *dst = mrlt_alloc(HIDDEN_LEN);
	struct mrlt_wait w;
	ssize_t rc;
	int ret;

	if (!pair_open(opts, &p))
		return;
	if (probe == PROBE_POLL) {
		struct fi_poll_attr attr = {0};

		ret = fi_poll_open(p.domain, &attr, &r.poll);
		if (ret) {
			mrlt_skip_current("%s: fi_poll_open: %s", prov,
					  fi_strerror(-ret));
			goto out;
		}
		if (fi_poll_add(r.poll, &p.cq->fid, 0)) {
			mrlt_fail(__FILE__, __LINE__, "fi_poll_add failed");
			goto out;
		}
	}
	if (mrlt_pair_mr_reg(&p, dst, HIDDEN_LEN, FI_REMOTE_WRITE, &mr)) {
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_mr_reg failed");
		goto out;
	}
	mrlt_fill(src, HIDDEN_LEN, 31);
	/* Hidden completions only: whenever the probe says ready, a read
	 * must return an entry (it cannot: none is the application's), until
	 * every hidden op has completed (its lease released). */
	for (int i = 0; i < HIDDEN_ROUNDS; i++) {
		rc = post_write(&p, src, dst, mr, 0, &ctx);
		if (rc) {
			mrlt_fail(__FILE__, __LINE__, "fi_writemsg: %zd", rc);
			goto out;
		}
	}
	mrlt_wait_init(&w);
	while (mrlt_live_leases(&p) > 0 && !mrlt_wait_over(&w)) {
		ret = ready_probe(&p, &r);
		if (ret < 0) {
			mrlt_fail(__FILE__, __LINE__, "%s: %s", what,
				  fi_strerror(-ret));
			goto out;
		}
		if (!ret)
			continue;
		rc = fi_cq_read(p.cq, e, 4);
		if (rc == -FI_EAGAIN) {
			mrlt_fail(__FILE__, __LINE__,
				  "%s reported the CQ "
				  "ready, fi_cq_read returned -FI_EAGAIN",
				  what);
			goto out;
		}
		if (rc > 0) {
			mrlt_fail(__FILE__, __LINE__,
				  "fi_cq_read returned "
				  "a completion nobody asked for (context "
				  "%p)",
				  e[0].op_context);
			goto out;
		}
	}
	if (mrlt_live_leases(&p) > 0) {
		mrlt_fail(__FILE__, __LINE__,
			  "hidden writes never "
			  "completed");
		goto out;
	}
	/* Completions the application asked for, between hidden ones:
	 * reported, then read one by one (fi_cq_readfrom, fi_cq_sread), none
	 * lost or repeated. */
	for (int i = 0; i < 2 * HIDDEN_ROUNDS; i++) {
		rc = post_write(&p, src, dst, mr, i % 2 ? FI_COMPLETION : 0,
				i % 2 ? (void *) &vctx[i / 2] : (void *) &ctx);
		if (rc) {
			mrlt_fail(__FILE__, __LINE__, "fi_writemsg: %zd", rc);
			goto out;
		}
	}
	mrlt_wait_init(&w);
	while (!(ret = ready_probe(&p, &r)) && !mrlt_wait_over(&w))
		;
	if (ret != 1) {
		mrlt_fail(__FILE__, __LINE__,
			  "%s never reported the "
			  "completions: %d",
			  what, ret);
		goto out;
	}
	for (int got = 0; got < HIDDEN_ROUNDS;) {
		fi_addr_t src_addr;

		rc = got % 2 ? fi_cq_sread(p.cq, e, 1, NULL, SREAD_TIMEOUT_MS) :
			       fi_cq_readfrom(p.cq, e, 1, &src_addr);
		if (rc == -FI_EAGAIN && !mrlt_wait_over(&w))
			continue;
		if (rc != 1 || e[0].op_context < (void *) &vctx[0] ||
		    e[0].op_context >= (void *) &vctx[HIDDEN_ROUNDS] ||
		    seen[(struct fi_context2 *) e[0].op_context - vctx]++) {
			mrlt_fail(__FILE__, __LINE__,
				  "%s said ready; "
				  "read %d: %zd, context %p",
				  what, got, rc,
				  rc == 1 ? e[0].op_context : NULL);
			goto out;
		}
		got++;
	}
	rc = fi_cq_read(p.cq, e, 4);
	if (rc != -FI_EAGAIN)
		mrlt_fail(__FILE__, __LINE__,
			  "a read after the last "
			  "completion: %zd",
			  rc);
out:
	if (mr)
		fi_close(&mr->fid);
	if (r.poll) {
		fi_poll_del(r.poll, &p.cq->fid, 0);
		fi_close(&r.poll->fid);
	}
	if (mrlt_pair_close(&p))
		mrlt_fail(__FILE__, __LINE__, "mrlt_pair_close failed");
}

static void
test_poll_set_reports_a_cq_only_with_a_readable_completion(void)
{
	cq_ready_only_with_a_readable_completion(PROBE_POLL);
}

static void
test_trywait_reports_a_cq_only_with_a_readable_completion(void)
{
	cq_ready_only_with_a_readable_completion(PROBE_TRYWAIT);
}

#define WAIT_SENDS 4
#define WAIT_LEN   64

/* Leases the hook holds in domain, or -1 without the hook. */
static long long
domain_leases(struct fid_domain *domain)
{
	struct fi_mrlease_ops *ops = NULL;
	struct fi_mrlease_stats stats;

	if (fi_open_ops(&domain->fid, FI_MRLEASE_OPS_1, 0, (void **) &ops,
			NULL) ||
	    ops->query_stats(domain, &stats, sizeof(stats)))
		return -1;
	return (long long) stats.leases;
}

/* Companions first: tracked fids close newest first. */
#define TRY_TRACK(expr, fidp)           \
	do {                            \
		int try_rc_ = (expr);   \
		if (try_rc_)            \
			return try_rc_; \
		mrlt_track_fid(fidp);   \
	} while (0)

/*
 * The sender of the wait-set case, around its CQ (on the wait set): an
 * endpoint bound FI_SELECTIVE_COMPLETION (mrlt_peer_open binds neither).
 */
static int
wait_sender_open(struct mrlt_domain *d, struct fid_cq *cq, struct mrlt_peer *s)
{
	struct fi_av_attr av_attr = {.type = d->info->domain_attr->av_type};
	int ret;

	memset(s, 0, sizeof(*s));
	s->dom = d;
	s->cq = cq;
	TRY_TRACK(fi_av_open(d->domain, &av_attr, &s->av, NULL), &s->av->fid);
	TRY_TRACK(fi_endpoint(d->domain, d->info, &s->ep, NULL), &s->ep->fid);
	ret = fi_ep_bind(s->ep, &cq->fid,
			 FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!ret && d->info->addr_format == FI_ADDR_STR)
		ret = mrlt_set_shm_name(s->ep, "conform-hook");
	if (!ret)
		ret = fi_enable(s->ep);
	s->namelen = sizeof(s->name);
	if (!ret)
		ret = fi_getname(&s->ep->fid, s->name, &s->namelen);
	return ret;
}

/*
 * One fi_wait (not blocking) on wait, and when it says the set was
 * signaled one fi_cq_read of cq into e. The provider may wake for its own
 * progress with nothing to read; what must not happen is a wake for a
 * completion the hook then hides: a read that found nothing while the
 * hook's leases dropped (it consumed hidden completions). Returns the
 * read's result (0 when fi_wait did not return 0); false with the case
 * failed.
 */
static bool
wait_then_read(struct fid_wait *wait, struct fid_cq *cq,
	       struct fid_domain *domain, struct fi_cq_tagged_entry *e,
	       ssize_t *rc)
{
	long long before = domain_leases(domain), after;
	int ret = fi_wait(wait, 0);

	*rc = 0;
	if (ret) {
		if (ret == -FI_ETIMEDOUT || ret == -FI_EAGAIN)
			return true;
		mrlt_fail(__FILE__, __LINE__, "fi_wait: %d", ret);
		return false;
	}
	*rc = fi_cq_read(cq, e, 4);
	after = domain_leases(domain);
	if (*rc == -FI_EAGAIN && after < before) {
		mrlt_fail(__FILE__, __LINE__,
			  "fi_wait returned 0, then "
			  "fi_cq_read -FI_EAGAIN while %lld hidden "
			  "completions were consumed: one the application "
			  "cannot read woke it",
			  before - after);
		return false;
	}
	if (*rc < 0 && *rc != -FI_EAGAIN) {
		mrlt_fail(__FILE__, __LINE__, "fi_cq_read: %zd", *rc);
		return false;
	}
	return true;
}

/*
 * fi_poll(3): fi_wait returns once one of the set's objects is signaled,
 * and the application then reads what signaled it. Through the hook a
 * wait set holding a CQ with only completions the hook hides (leased
 * sends the application asked none for) returned 0, and the fi_cq_read
 * that followed returned -FI_EAGAIN: the hook had eaten the entry.
 */
static void
test_wait_set_wakes_only_for_a_readable_completion(void)
{
	struct fi_wait_attr wait_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = FI_WAIT_SET};
	struct fi_context2 ctx[WAIT_SENDS], rctx[WAIT_SENDS + 1], vctx;
	struct fi_cq_tagged_entry e[4];
	struct mrlt_peer s, r;
	struct mrlt_domain d;
	struct fid_wait *wait;
	struct fid_cq *cq;
	struct mrlt_wait w;
	char *buf = mrlt_alloc(WAIT_LEN);
	char *rbuf = mrlt_alloc((WAIT_SENDS + 1) * WAIT_LEN);
	int received = 0, ret;
	ssize_t rc;

	if (!open_domain(&d))
		return;
	ret = fi_wait_open(d.fabric, &wait_attr, &wait);
	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL) {
		mrlt_skip_current("%s: fi_wait_open: %s", prov,
				  fi_strerror(-ret));
		return;
	}
	CHECK_FI(ret);
	mrlt_track_fid(&wait->fid);
	cq_attr.wait_set = wait;
	ret = fi_cq_open(d.domain, &cq_attr, &cq, NULL);
	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL) {
		mrlt_skip_current("%s: no CQ on a wait set: %s", prov,
				  fi_strerror(-ret));
		return;
	}
	CHECK_FI(ret);
	mrlt_track_fid(&cq->fid);
	CHECK_FI(wait_sender_open(&d, cq, &s));
	CHECK_FI(mrlt_peer_open(&d, NULL, &r));
	CHECK_FI(mrlt_peers_connect(&s, &r));
	for (int i = 0; i < WAIT_SENDS; i++)
		CHECK_EQ(0, MRLT_POST(fi_recv(r.ep, rbuf + i * WAIT_LEN,
					      WAIT_LEN, NULL, r.peer, &rctx[i]),
				      &r, &s));
	/* No completion asked: with every operand leased the hook asks the
	 * provider for one (to release the lease) and hides it. */
	for (int i = 0; i < WAIT_SENDS; i++) {
		struct iovec iov = {.iov_base = buf, .iov_len = WAIT_LEN};
		struct fi_msg msg = {.msg_iov = &iov,
				     .iov_count = 1,
				     .addr = s.peer,
				     .context = &ctx[i]};

		CHECK_EQ(0, MRLT_POST(fi_sendmsg(s.ep, &msg, 0), &s, &r));
	}
	/* Until every send arrived and its lease is gone, nothing the
	 * application asked for completes on the sender's CQ. */
	mrlt_wait_init(&w);
	while ((received < WAIT_SENDS || domain_leases(d.domain) > 0) &&
	       !mrlt_wait_over(&w)) {
		if (!wait_then_read(wait, cq, d.domain, e, &rc))
			return;
		CHECK_MSG(rc <= 0,
			  "fi_cq_read returned a completion nobody "
			  "asked for (context %p)",
			  e[0].op_context);
		rc = fi_cq_read(r.cq, e, 4);
		CHECK_MSG(rc > 0 || rc == -FI_EAGAIN,
			  "receiver's fi_cq_read: "
			  "%zd",
			  rc);
		if (rc > 0)
			received += (int) rc;
	}
	CHECK_MSG(received == WAIT_SENDS, "%d of %d sends arrived", received,
		  WAIT_SENDS);
	CHECK_MSG(domain_leases(d.domain) <= 0, "hidden sends never "
						"completed");
	/* One the application asks a completion for: fi_wait reports it and
	 * the read returns it. */
	CHECK_EQ(0,
		 MRLT_POST(fi_recv(r.ep, rbuf + WAIT_SENDS * WAIT_LEN, WAIT_LEN,
				   NULL, r.peer, &rctx[WAIT_SENDS]),
			   &r, &s));
	{
		struct iovec iov = {.iov_base = buf, .iov_len = WAIT_LEN};
		struct fi_msg msg = {.msg_iov = &iov,
				     .iov_count = 1,
				     .addr = s.peer,
				     .context = &vctx};

		CHECK_EQ(0, MRLT_POST(fi_sendmsg(s.ep, &msg, FI_COMPLETION), &s,
				      &r));
	}
	mrlt_wait_init(&w);
	do {
		if (!wait_then_read(wait, cq, d.domain, e, &rc))
			return;
		mrlt_progress(&r);
	} while (rc <= 0 && !mrlt_wait_over(&w));
	CHECK_MSG(rc == 1 && e[0].op_context == &vctx,
		  "fi_cq_read after "
		  "fi_wait: %zd, context %p (want %p)",
		  rc, rc > 0 ? e[0].op_context : NULL, (void *) &vctx);
}

/* ------------------------------------------------------------------------
 * The cases, and how each runs.
 */

/* Loads the plugin (FI_PROVIDER's check at load). */
static void
test_getinfo_loads_the_plugin(void)
{
	struct fi_info *info = NULL;

	if (!fi_getinfo(MRLT_FI_VERSION, NULL, NULL, 0, NULL, &info))
		fi_freeinfo(info);
}

static const char *const fabric_providers[] = {"tcp", "tcp;ofi_rxm", "shm",
					       "sockets", NULL};
static const char *const rdm_providers[] = {"tcp;ofi_rxm", "shm", "sockets",
					    NULL};
static const char *const no_provider[] = {"any", NULL};

static const char *const min_size_0[] = {"FI_MRLEASE_MIN_SIZE=0", NULL};

struct conf_case {
	const char *name;
	void (*fn)(void);
	const char *const *provs;
	const char *const *env; /* extra NAME=value, NULL-terminated */
	bool parent_only; /* run by the parent's own test */
};

#define CASE(fn, provs, env)               \
	{                                  \
#fn, fn, provs, env, false \
	}
/* A case again with settings of its own (its TAP name says which). */
#define CASE_ENV(fn, provs, env) CASE(fn, provs, env)

static const struct conf_case cases[] = {
	CASE(test_eq_read_returns_application_written_events_untouched,
	     fabric_providers, NULL),
	CASE(test_cq_sread_after_signal_returns_before_its_timeout,
	     fabric_providers, NULL),
	CASE(test_cq_signal_wakes_a_thread_blocked_in_sread, rdm_providers,
	     NULL),
	CASE(test_cq_signal_wakes_a_thread_blocked_in_sreadfrom, rdm_providers,
	     NULL),
	CASE(test_cq_signal_is_not_swallowed_by_hidden_completions,
	     rdm_providers, min_size_0),
	CASE(test_triggered_write_waits_for_its_threshold, rdm_providers, NULL),
	CASE(test_triggered_send_waits_for_its_threshold, rdm_providers, NULL),
	CASE(test_triggered_tsend_waits_for_its_threshold, rdm_providers, NULL),
	CASE(test_triggered_atomic_waits_for_its_threshold, rdm_providers,
	     NULL),
	/* The same with every operand leased (the op is the context the
	 * provider reads). */
	CASE_ENV(test_triggered_write_waits_for_its_threshold, rdm_providers,
		 min_size_0),
	CASE_ENV(test_triggered_send_waits_for_its_threshold, rdm_providers,
		 min_size_0),
	CASE_ENV(test_triggered_tsend_waits_for_its_threshold, rdm_providers,
		 min_size_0),
	CASE_ENV(test_triggered_atomic_waits_for_its_threshold, rdm_providers,
		 min_size_0),
	CASE(test_poll_set_reports_a_cq_only_with_a_readable_completion,
	     rdm_providers, min_size_0),
	CASE(test_trywait_reports_a_cq_only_with_a_readable_completion,
	     rdm_providers, min_size_0),
	CASE(test_wait_set_wakes_only_for_a_readable_completion, rdm_providers,
	     min_size_0),
	{"test_getinfo_loads_the_plugin", test_getinfo_loads_the_plugin,
	 no_provider, NULL, true},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* What one child run of a case reported. */
enum child_verdict { CHILD_PASS, CHILD_FAIL, CHILD_SKIP };

struct child_run {
	enum child_verdict verdict;
	char why[512]; /* skip reason, or how it failed */
	char *output; /* stdout + stderr, NUL-terminated */
};

/* TAP line of the child's one case -> verdict. */
static void
child_parse(struct child_run *run, int status)
{
	const char *line = run->output, *skip;

	run->verdict = CHILD_FAIL;
	snprintf(run->why, sizeof(run->why), "reported no result");
	for (; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!strncmp(line, "not ok ", 7)) {
			snprintf(run->why, sizeof(run->why), "failed");
			break;
		}
		if (strncmp(line, "ok ", 3))
			continue;
		skip = strstr(line, " # SKIP ");
		if (skip &&
		    (!strchr(line, '\n') || skip < strchr(line, '\n'))) {
			run->verdict = CHILD_SKIP;
			snprintf(run->why, sizeof(run->why), "%.*s",
				 (int) strcspn(skip + 8, "\n"), skip + 8);
		} else {
			run->verdict = CHILD_PASS;
		}
		break;
	}
	if (WIFSIGNALED(status)) {
		run->verdict = CHILD_FAIL;
		snprintf(run->why, sizeof(run->why), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else if (WEXITSTATUS(status) && run->verdict != CHILD_FAIL) {
		run->verdict = CHILD_FAIL;
		snprintf(run->why, sizeof(run->why), "exited with status %d",
			 WEXITSTATUS(status));
	}
}

/*
 * Run case c for provider p in a child: with FI_HOOK=mrlease when hook,
 * else with FI_HOOK unset; c's env and extra_env (NULL-terminated, may be
 * NULL) added. Returns 0 with *run filled (free run->output), or -1.
 */
static int
child_run(const struct conf_case *c, const char *p, bool hook,
	  const char *const *extra_env, struct child_run *run)
{
	size_t len = 0, cap = 4096;
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	memset(run, 0, sizeof(*run));
	run->output = malloc(cap);
	if (!run->output || pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *args[] = {"test_conform_hook", "--case", (char *) c->name,
				(char *) p, NULL};

		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		if (hook)
			setenv("FI_HOOK", "mrlease", 1);
		else
			unsetenv("FI_HOOK");
		for (const char *const *kv = c->env; kv && *kv; kv++)
			putenv((char *) *kv);
		for (const char *const *kv = extra_env; kv && *kv; kv++)
			putenv((char *) *kv);
		alarm(CHILD_ALARM);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		if (cap - len < 1024) {
			char *more = realloc(run->output, cap * 2);

			if (!more)
				break;
			run->output = more;
			cap *= 2;
		}
		n = read(fds[0], run->output + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t) n;
	}
	run->output[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	/* One killed by its alarm, or crashed, left its shm regions. */
	mrlt_shm_sweep(pid);
	child_parse(run, status);
	return 0;
}

/* The child's output as TAP comments. */
static void
child_echo(const char *label, const struct child_run *run)
{
	const char *line = run->output;

	printf("# %s:\n", label);
	while (line && *line) {
		int n = (int) strcspn(line, "\n");

		printf("#   %.*s\n", n, line);
		line += n;
		if (*line)
			line++;
	}
}

/* The case and provider mrlt_run is running in the parent. */
static const struct conf_case *parent_case;
static const char *parent_prov;

/* One case on one provider: hooked, and the no-hook control if that
 * fails. */
static void
run_case_in_children(void)
{
	struct child_run run, control;

	if (child_run(parent_case, parent_prov, true, NULL, &run)) {
		mrlt_fail(__FILE__, __LINE__, "cannot run a child: %s",
			  strerror(errno));
		free(run.output);
		return;
	}
	if (run.verdict == CHILD_SKIP)
		mrlt_skip_current("%s", run.why);
	if (run.verdict != CHILD_FAIL)
		goto out;
	if (child_run(parent_case, parent_prov, false, NULL, &control)) {
		mrlt_fail(__FILE__, __LINE__, "cannot run the control: %s",
			  strerror(errno));
		free(control.output);
		goto out;
	}
	if (control.verdict == CHILD_FAIL) {
		child_echo("without the hook (control)", &control);
		mrlt_skip_current("%s: fails without the hook too (%s)",
				  parent_prov, control.why);
	} else {
		child_echo("with FI_HOOK=mrlease", &run);
		mrlt_fail(__FILE__, __LINE__,
			  "%s with FI_HOOK=mrlease; "
			  "without the hook: %s",
			  run.why,
			  control.verdict == CHILD_PASS ? "passes" :
							  control.why);
	}
	free(control.output);
out:
	free(run.output);
}

/* ------------------------------------------------------------------------
 * FI_PROVIDER naming the hook.
 */

/* Lines of out that are mrlease's warning about FI_PROVIDER. */
static int
provider_warnings(const char *out)
{
	int count = 0;

	for (const char *line = out; line && *line;) {
		size_t n = strcspn(line, "\n");
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int) n, line);
		if (strstr(buf, ":mrlease:") && strstr(buf, "FI_PROVIDER") &&
		    strstr(buf, "FI_HOOK=mrlease"))
			count++;
		line += n;
		if (*line)
			line++;
	}
	return count;
}

/*
 * FI_PROVIDER never selects a hook, and 'ofi_rxm;mrlease' leaves no core
 * provider: fi_getinfo said -FI_ENODATA and nothing told the user why.
 * Loading the plugin with FI_PROVIDER naming mrlease warns once with the
 * setting that works; other FI_PROVIDER values stay quiet.
 */
static void
test_fi_provider_naming_mrlease_warns_once_with_the_fix(void)
{
	static const struct {
		const char *value; /* NULL: unset */
		int warnings;
	} settings[] = {
		{"ofi_rxm;mrlease", 1}, {"tcp;ofi_rxm;mrlease", 1},
		{"mrlease", 1},		{"^mrlease", 1},
		{"tcp,mrlease", 1},	{"tcp;ofi_rxm", 0},
		{"mrleased", 0},	{NULL, 0},
	};
	const struct conf_case *load = &cases[NCASES - 1];

	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		char provider[128];
		const char *env[] = {"FI_LOG_LEVEL=warn", provider, NULL};
		struct child_run run;
		int got;

		snprintf(provider, sizeof(provider), "FI_PROVIDER=%s",
			 settings[i].value ? settings[i].value : "");
		if (!settings[i].value)
			env[1] = NULL;
		if (child_run(load, "any", true, env, &run)) {
			free(run.output);
			CHECK_MSG(false, "cannot run a child");
		}
		got = provider_warnings(run.output);
		if (got != settings[i].warnings || run.verdict != CHILD_PASS)
			child_echo(provider, &run);
		free(run.output);
		CHECK_MSG(got == settings[i].warnings,
			  "FI_PROVIDER=%s: %d warnings naming FI_HOOK=mrlease, "
			  "want %d",
			  settings[i].value ? settings[i].value : "(unset)",
			  got, settings[i].warnings);
	}
}

/* ------------------------------------------------------------------------ */

static int
run_one_case(const char *name, const char *p)
{
	char prefix[128];

	prov = p;
	hooked = getenv("FI_HOOK") && *getenv("FI_HOOK");
	snprintf(prefix, sizeof(prefix), "%s FI_HOOK=%s: ", p,
		 hooked ? getenv("FI_HOOK") : "(unset)");
	mrlt_set_prefix(prefix);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < NCASES; i++)
		if (!strcmp(cases[i].name, name)) {
			mrlt_run(cases[i].name, cases[i].fn);
			return mrlt_done();
		}
	fprintf(stderr, "no case %s\n", name);
	return EXIT_FAILURE;
}

int
main(int argc, char **argv)
{
	char prefix[128], name[256];

	if (argc == 4 && !strcmp(argv[1], "--case"))
		return run_one_case(argv[2], argv[3]);
	mrlt_select(argc - 1, argv + 1);
	/* FI_PROVIDER_PATH with the plugin; the children set FI_HOOK. */
	xfer_reexec(argv, NULL, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < NCASES; i++) {
		if (cases[i].parent_only)
			continue;
		parent_case = &cases[i];
		for (const char *const *p = cases[i].provs; *p; p++) {
			parent_prov = *p;
			snprintf(prefix, sizeof(prefix), "%s: ", *p);
			mrlt_set_prefix(prefix);
			snprintf(name, sizeof(name), "%s%s%s%s", cases[i].name,
				 cases[i].env ? " (" : "",
				 cases[i].env ? cases[i].env[0] : "",
				 cases[i].env ? ")" : "");
			mrlt_run(name, run_case_in_children);
		}
	}
	mrlt_set_prefix(NULL);
	MRLT_RUN(test_fi_provider_naming_mrlease_warns_once_with_the_fix);
	return mrlt_done();
}
