/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Aliases (fi_endpoint(3) FI_ALIAS): another handle on an endpoint with
 * default op flags of its own, posting through the endpoint's queues,
 * completing on its CQ and counters; and triggered operations
 * (fi_trigger(3)) posted through one.
 */
#include "config.h"

#include <string.h>
#include <sys/uio.h>

#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>

#include "conform.h"

#define ALIAS_LEN (64 * 1024)
#define ALIAS_MSGS 4
/* Rounds of the triggered write through an alias: a write that runs at
 * once instead of at its threshold loses a race now and then. */
#define ALIAS_ROUNDS 200

/* The exit status when the first fi_ep_alias answered ret. */
static int
alias_unoffered(int ret)
{
	if (!cf_unsupported(ret) && ret != -FI_EINVAL)
		return CF_BROKEN;
	printf("# fi_ep_alias: %s\n", cf_rc(ret));
	cf_close_all();
	return CF_UNOFFERED;
}

/* fi_ep_alias of ep with flags, tracked and named; prints its result. */
static int
alias_open(struct fid_ep *ep, uint64_t flags, struct fid_ep **alias,
	   const char *name)
{
	int ret = mrlt_ep_alias(ep, alias, flags);

	uint64_t rest = flags & ~(uint64_t) (FI_TRANSMIT | FI_RECV);

	/* fi_tostr names neither direction flag. */
	cf_out("fi_ep_alias(%s%s%s): %s",
	       flags & FI_TRANSMIT ? "FI_TRANSMIT " : "",
	       flags & FI_RECV ? "FI_RECV " : "",
	       rest || !flags ? cf_flags(rest, FI_TYPE_OP_FLAGS) : "",
	       cf_rc(ret));
	if (ret)
		return ret;
	mrlt_track_fid(&(*alias)->fid);
	cf_name(*alias, 0, name);
	return 0;
}

/* Which of the ALIAS_MSGS patterns [p, p + ALIAS_LEN) holds, or -1. */
static int
pattern_of(const unsigned char *p)
{
	for (int i = 0; i < ALIAS_MSGS; i++)
		if (p[0] == 0x10 + i && p[ALIAS_LEN - 1] == 0x10 + i &&
		    p[ALIAS_LEN / 2] == 0x10 + i)
			return i;
	return -1;
}

static void
flags_accepted(struct cf_rig *r)
{
	static const uint64_t sets[] = {
		FI_TRANSMIT,
		FI_RECV,
		FI_TRANSMIT | FI_TRIGGER,
		FI_TRANSMIT | FI_COMPLETION,
		FI_RECV | FI_COMPLETION,
		FI_TRANSMIT | FI_INJECT_COMPLETE,
		FI_TRANSMIT | FI_DELIVERY_COMPLETE,
		FI_TRANSMIT | FI_RECV,
		0,
	};

	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		struct fid_ep *a;

		if (!alias_open(r->ep[0], sets[i], &a, "alias"))
			cf_out("alias close: %s", cf_rc(mrlt_close(&a->fid, "alias")));
	}
}

/*
 * fi_endpoint(3): fi_ep_alias gives a handle whose flags are the default
 * op flags of the direction they name; sends, receives and writes posted
 * on the alias and on the endpoint go out in order through the same
 * queues and complete on the endpoint's CQ with their own contexts.
 */
int
cf_alias(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_RMA, .cntrs = true};
	struct fi_context2 sctx[ALIAS_MSGS], rctx[ALIAS_MSGS], wctx[2], mctx;
	struct fid_ep *atx, *arx, *acq;
	struct fid_mr *mr;
	unsigned char *s, *d;
	struct cf_rig r;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	ret = alias_open(r.ep[0], FI_TRANSMIT, &atx, "alias_tx");
	if (ret)
		return alias_unoffered(ret);
	flags_accepted(&r);
	if (alias_open(r.ep[1], FI_RECV, &arx, "alias_rx") ||
	    alias_open(r.ep[0], FI_TRANSMIT | FI_COMPLETION, &acq,
		       "alias_comp"))
		goto out;
	s = mrlt_alloc(ALIAS_MSGS * ALIAS_LEN);
	d = mrlt_alloc(ALIAS_MSGS * ALIAS_LEN);
	cf_name(s, ALIAS_MSGS * ALIAS_LEN, "sbuf");
	cf_name(d, ALIAS_MSGS * ALIAS_LEN, "dbuf");
	cf_name(&mctx, sizeof(mctx), "mctx");
	for (int i = 0; i < ALIAS_MSGS; i++) {
		char n[16];

		snprintf(n, sizeof(n), "sctx%d", i);
		cf_name(&sctx[i], sizeof(sctx[i]), n);
		snprintf(n, sizeof(n), "rctx%d", i);
		cf_name(&rctx[i], sizeof(rctx[i]), n);
		memset(s + i * ALIAS_LEN, 0x10 + i, ALIAS_LEN);
	}
	for (int i = 0; i < 2; i++) {
		char n[16];

		snprintf(n, sizeof(n), "wctx%d", i);
		cf_name(&wctx[i], sizeof(wctx[i]), n);
	}

	/* Receives and sends, alternating alias and endpoint. */
	for (int i = 0; i < ALIAS_MSGS; i++)
		cf_out("recv %d on %s: %s", i, i % 2 ? "ep1" : "alias_rx",
		       cf_rc(CF_POST(&r, fi_recv(i % 2 ? r.ep[1] : arx,
						 d + i * ALIAS_LEN, ALIAS_LEN,
						 NULL, r.peer[1], &rctx[i]))));
	for (int i = 0; i < ALIAS_MSGS; i++) {
		struct fid_ep *ep = i % 2 ? r.ep[0] : i ? acq : atx;

		cf_out("send %d on %s: %s", i, cf_ptr(ep),
		       cf_rc(CF_POST(&r, fi_send(ep, s + i * ALIAS_LEN,
						 ALIAS_LEN, NULL, r.peer[0],
						 &sctx[i]))));
	}
	for (int i = 0; i < ALIAS_MSGS; i++)
		cf_reap_print(&r, 0, "send", false);
	for (int i = 0; i < ALIAS_MSGS; i++)
		cf_reap_print(&r, 1, "recv", false);
	for (int i = 0; i < ALIAS_MSGS; i++)
		cf_out("dbuf[%d] holds send %d", i,
		       pattern_of(d + i * ALIAS_LEN));
	cf_out("tx counter: %llu, rx counter: %llu",
	       (unsigned long long) fi_cntr_read(r.tx[0]),
	       (unsigned long long) fi_cntr_read(r.rx[1]));

	/* Writes, through the alias and the endpoint. */
	memset(d, 0, ALIAS_MSGS * ALIAS_LEN);
	if (cf_mr_reg(&r, d, 2 * ALIAS_LEN, FI_REMOTE_WRITE, 0x5a5, &mr, &mctx,
		      "mr_d"))
		goto out;
	cf_mr_attach(&r, mr, r.ep[1], "mr_d");
	for (int i = 0; i < 2; i++)
		cf_out("write %d on %s: %s", i, i ? "ep0" : "alias_tx",
		       cf_rc(CF_POST(
			       &r, fi_write(i ? r.ep[0] : atx,
					    s + (i + 2) * ALIAS_LEN, ALIAS_LEN,
					    NULL, r.peer[0],
					    cf_rma_addr(&r, d) + i * ALIAS_LEN,
					    fi_mr_key(mr), &wctx[i]))));
	for (int i = 0; i < 2; i++)
		cf_reap_print(&r, 0, "write", false);
	for (double end = cf_now_ms() + CF_WAIT_S * 1e3;
	     (pattern_of(d) != 2 || pattern_of(d + ALIAS_LEN) != 3) &&
	     cf_now_ms() < end;)
		cf_progress(&r);
	for (int i = 0; i < 2; i++)
		cf_out("dbuf[%d] holds write of send %d", i,
		       pattern_of(d + i * ALIAS_LEN));
out:
	cf_close_all();
	return CF_DONE;
}

/* The write of A from s to d on ep0, as fi_writemsg with no flag when
 * the endpoint's defaults would trigger fi_write. */
static ssize_t
write_a(struct cf_rig *r, struct fid_mr *mr, unsigned char *s,
	unsigned char *d, struct fi_context2 *ctx, bool as_msg)
{
	struct iovec iov = {.iov_base = s, .iov_len = ALIAS_LEN};
	struct fi_rma_iov rma = {.addr = cf_rma_addr(r, d),
				 .len = ALIAS_LEN,
				 .key = fi_mr_key(mr)};
	struct fi_msg_rma m = {.msg_iov = &iov,
			       .iov_count = 1,
			       .addr = r->peer[0],
			       .rma_iov = &rma,
			       .rma_iov_count = 1,
			       .context = ctx};

	if (as_msg)
		return CF_POST(r, fi_writemsg(r->ep[0], &m, 0));
	return CF_POST(r, fi_write(r->ep[0], s, ALIAS_LEN, NULL, r->peer[0],
				   rma.addr, rma.key, ctx));
}

/* One round of a write of B triggered by default on trig_ep, then one of
 * A on ep0: 0 when the target holds B. */
static int
trigger_round(struct cf_rig *r, struct fid_ep *trig_ep, struct fid_mr *mr,
	      unsigned char *s, unsigned char *d,
	      struct fi_triggered_context *t, struct fi_context2 *ctx,
	      bool print)
{
	uint64_t base = fi_cntr_read(r->tx[0]);
	ssize_t rc[2];
	int held;

	memset(t, 0, sizeof(*t));
	t->event_type = FI_TRIGGER_THRESHOLD;
	t->trigger.threshold.cntr = r->tx[0];
	t->trigger.threshold.threshold = base + 1;
	/* B waits for the endpoint's next completion, A's. */
	rc[0] = CF_POST(r, fi_write(trig_ep, s + ALIAS_LEN, ALIAS_LEN, NULL,
				    r->peer[0], cf_rma_addr(r, d),
				    fi_mr_key(mr), t));
	rc[1] = write_a(r, mr, s, d, ctx, trig_ep == r->ep[0]);
	if (print) {
		cf_out("triggered write of B on %s: %s", cf_ptr(trig_ep),
		       cf_rc(rc[0]));
		cf_out("write of A on ep0: %s", cf_rc(rc[1]));
	}
	if (rc[0] || rc[1])
		return -1;
	if (print) {
		cf_reap_print(r, 0, "first completion", false);
		cf_reap_print(r, 0, "second completion", false);
	} else {
		struct fi_cq_tagged_entry e;

		if (cf_reap(r, 0, &e, NULL) != 1 || e.op_context != ctx ||
		    cf_reap(r, 0, &e, NULL) != 1 || e.op_context != t)
			return -1;
	}
	if (cf_cntr_until(r, r->tx[0], base + 2) != base + 2)
		return -1;
	for (double end = cf_now_ms() + CF_WAIT_S * 1e3;
	     pattern_of(d) != 1 && cf_now_ms() < end;)
		cf_progress(r);
	held = pattern_of(d);
	if (print)
		cf_out("target holds: %s", held == 1 ? "B" :
					   held == 0 ? "A" :
						       "other");
	return held == 1 ? 0 : -1;
}

/*
 * fi_trigger(3) through an alias opened with FI_TRIGGER: a plain fi_write
 * on it is triggered (its context a struct fi_triggered_context naming
 * the endpoint's counter) and runs when the counter reaches its threshold,
 * here after the endpoint's own write that follows it, so the target ends
 * with the triggered write's bytes.
 */
int
cf_alias_trigger(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_RMA | FI_TRIGGER,
			    .cntrs = true};
	struct fi_triggered_context t;
	struct fi_context2 ctx, mctx;
	struct fid_ep *alias;
	struct fid_mr *mr;
	unsigned char *s, *d;
	struct cf_rig r;
	int ret, good = 1, round;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	ret = alias_open(r.ep[0], FI_TRANSMIT | FI_TRIGGER, &alias, "alias");
	if (ret)
		return alias_unoffered(ret);
	s = mrlt_alloc(2 * ALIAS_LEN);
	d = mrlt_alloc(ALIAS_LEN);
	cf_name(s, 2 * ALIAS_LEN, "sbuf");
	cf_name(d, ALIAS_LEN, "dbuf");
	cf_name(&t, sizeof(t), "trig");
	cf_name(&ctx, sizeof(ctx), "ctx");
	cf_name(&mctx, sizeof(mctx), "mctx");
	memset(s, 0x10, ALIAS_LEN); /* A */
	memset(s + ALIAS_LEN, 0x11, ALIAS_LEN); /* B */
	if (cf_mr_reg(&r, d, ALIAS_LEN, FI_REMOTE_WRITE, 0x6b6, &mr, &mctx,
		      "mr_d"))
		goto out;
	cf_mr_attach(&r, mr, r.ep[1], "mr_d");

	memset(d, 0, ALIAS_LEN);
	if (trigger_round(&r, alias, mr, s, d, &t, &ctx, true))
		goto out;
	for (round = 1; round < ALIAS_ROUNDS; round++) {
		memset(d, 0, ALIAS_LEN);
		if (trigger_round(&r, alias, mr, s, d, &t, &ctx, false))
			break;
		good++;
	}
	cf_out("rounds with B at the target: %d of %d", good, ALIAS_ROUNDS);

	/* The same on the endpoint itself, FI_TRIGGER its default. */
	uint64_t flags = FI_TRANSMIT | FI_TRIGGER;

	ret = fi_control(&r.ep[0]->fid, FI_SETOPSFLAG, &flags);
	cf_out("FI_SETOPSFLAG(FI_TRANSMIT FI_TRIGGER) on ep0: %s", cf_rc(ret));
	if (!ret) {
		memset(d, 0, ALIAS_LEN);
		if (!trigger_round(&r, r.ep[0], mr, s, d, &t, &ctx, true)) {
			flags = FI_TRANSMIT;
			cf_out("FI_SETOPSFLAG(FI_TRANSMIT) on ep0: %s",
			       cf_rc(fi_control(&r.ep[0]->fid, FI_SETOPSFLAG,
						&flags)));
			memset(d, 0, ALIAS_LEN);
			cf_out("plain write of A on ep0: %s",
			       cf_rc(write_a(&r, mr, s, d, &ctx, false)));
			cf_reap_print(&r, 0, "its completion", false);
		}
	}
out:
	cf_close_all();
	return CF_DONE;
}
