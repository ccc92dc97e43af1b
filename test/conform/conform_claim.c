/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Peeks and claims of tagged messages (fi_tagged(3): FI_PEEK, FI_CLAIM,
 * FI_DISCARD): a peek that finds nothing, a peek alone, a peek that claims
 * followed by the claiming receive (small, and above rxm's rendezvous
 * size), by a claim that discards, and a peek that discards; on an
 * endpoint whose CQ reports everything, and on a selective one, where
 * claims go with and without FI_COMPLETION.
 */
#include "config.h"

#include <string.h>

#include "conform.h"

#define SMALL 64
#define LARGE (64 * 1024)
#define NCTX  12

struct claim_rig {
	struct cf_rig r;
	char *s, *rb;
	struct fi_context2 ctx[NCTX];
	/* Flags every peek and send gets: FI_COMPLETION when selective. */
	uint64_t comp;
	/* A peek gave what fi_tagged(3) does not say (shm 1.17 truncates a
	 * peek's message away): the rest of the transcript is skipped. */
	bool no_peek;
};

/* A tagged receive message of buf (NULL: no iov) with desc NULL. */
static ssize_t
trecvmsg(struct claim_rig *c, void *buf, size_t len, uint64_t tag, void *ctx,
	 uint64_t flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_msg_tagged m = {
		.msg_iov = buf ? &iov : NULL,
		.iov_count = buf ? 1 : 0,
		.addr = c->r.peer[1],
		.tag = tag,
		.context = ctx,
	};

	return CF_POST(&c->r, fi_trecvmsg(c->r.ep[1], &m, flags));
}

/* Send len bytes tagged tag from ep0 (FI_COMPLETION: the send's entry is
 * read by send_reap). */
static void
send_tagged(struct claim_rig *c, size_t len, uint64_t tag, void *ctx)
{
	struct iovec iov = {.iov_base = c->s, .iov_len = len};
	struct fi_msg_tagged m = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = c->r.peer[0],
		.tag = tag,
		.context = ctx,
	};

	cf_out("tsendmsg %zu tag %#llx: %s", len, (unsigned long long) tag,
	       cf_rc(CF_POST(&c->r,
			     fi_tsendmsg(c->r.ep[0], &m, FI_COMPLETION))));
}

/* Peek (FI_PEEK | flags) until the message tagged tag has arrived, and
 * print what the peek that found it reported; each earlier one reports
 * -FI_ENOMSG. Anything else sets no_peek. */
static void
peek_found(struct claim_rig *c, uint64_t tag, void *ctx, uint64_t flags,
	   const char *what)
{
	double end = cf_now_ms() + CF_WAIT_S * 1e3;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t rc;

	c->no_peek = true;
	do {
		rc = trecvmsg(c, NULL, 0, tag, ctx, FI_PEEK | flags | c->comp);
		if (rc) {
			cf_out("%s: %s", what, cf_rc(rc));
			return;
		}
		memset(&e, 0, sizeof(e));
		rc = cf_reap(&c->r, 1, &e, NULL);
		if (rc == 1) {
			cf_print_cqe(what, &e);
			c->no_peek = false;
			return;
		}
		if (rc != -FI_EAVAIL) {
			cf_out("%s: %s", what, cf_rc(rc));
			return;
		}
		memset(&err, 0, sizeof(err));
		rc = fi_cq_readerr(c->r.cq[1], &err, 0);
		if (rc != 1 || err.err != FI_ENOMSG) {
			cf_out("%s: fi_cq_readerr %s ctx=%s err=%s", what,
			       cf_rc(rc), cf_ptr(err.op_context),
			       cf_rc(-err.err));
			return;
		}
		/* The message may need the sender's progress (rxd). */
		cf_progress(&c->r);
	} while (cf_now_ms() < end);
	cf_out("%s: never found", what);
}

/* Post a marker receive and its message (both FI_COMPLETION), then print
 * every receive-side entry up to the marker's: what an operation the
 * application asked no completion for left behind. */
static void
flush_to_marker(struct claim_rig *c, const char *what)
{
	struct fi_context2 *marker = &c->ctx[NCTX - 1];
	struct fi_cq_tagged_entry e;
	ssize_t rc;

	cf_out("marker trecvmsg: %s",
	       cf_rc(trecvmsg(c, c->rb + LARGE, SMALL, 0x1ff, marker,
			      FI_COMPLETION)));
	send_tagged(c, SMALL, 0x1ff, &c->ctx[NCTX - 2]);
	cf_reap_print(&c->r, 0, "marker send", false);
	for (int i = 0; i < 4; i++) {
		memset(&e, 0, sizeof(e));
		rc = cf_reap(&c->r, 1, &e, NULL);
		if (rc == -FI_EAVAIL) {
			cf_print_cqerr(what, c->r.cq[1]);
			continue;
		}
		if (rc != 1) {
			cf_out("%s: %s", what, cf_rc(rc));
			return;
		}
		if (e.op_context == marker) {
			cf_out("%s: then the marker", what);
			return;
		}
		cf_print_cqe(what, &e);
	}
}

static void
data_check(struct claim_rig *c, size_t len)
{
	cf_out("data: %s", !memcmp(c->s, c->rb, len) ? "delivered" : "wrong");
	memset(c->rb, 0, len);
}

/* A peek that claims, then the claiming receive of len bytes with
 * claim_flags (FI_CLAIM and maybe FI_COMPLETION). Without a completion
 * asked for on a selective endpoint, the marker shows what came. */
static void
peek_and_claim(struct claim_rig *c, size_t len, uint64_t tag, int ctx,
	       uint64_t claim_flags)
{
	bool told = !c->comp || (claim_flags & FI_COMPLETION);

	send_tagged(c, len, tag, &c->ctx[ctx + 1]);
	peek_found(c, tag, &c->ctx[ctx], FI_CLAIM, "peek|claim");
	if (c->no_peek)
		return;
	cf_out("claim %zu (%s): %s", len,
	       cf_flags(claim_flags, FI_TYPE_OP_FLAGS),
	       cf_rc(trecvmsg(c, c->rb, len, tag, &c->ctx[ctx], claim_flags)));
	if (told) {
		cf_reap_print(&c->r, 1, "claim", false);
		cf_reap_print(&c->r, 0, "its send", false);
		data_check(c, len);
		return;
	}
	/* The send's entry follows the transfer, which the marker's
	 * completion then follows too. */
	cf_reap_print(&c->r, 0, "its send", false);
	flush_to_marker(c, "after claim");
	data_check(c, len);
}

static void
claim_cases(struct claim_rig *c)
{
	struct fi_cq_tagged_entry e;

	/* A peek that finds nothing. */
	cf_out("peek nothing: %s", cf_rc(trecvmsg(c, NULL, 0, 0x100, &c->ctx[0],
						  FI_PEEK | c->comp)));
	cf_reap_print(&c->r, 1, "peek nothing", false);

	/* A peek alone leaves the message for a receive. */
	send_tagged(c, SMALL, 0x101, &c->ctx[1]);
	peek_found(c, 0x101, &c->ctx[0], 0, "peek");
	if (c->no_peek)
		return;
	cf_out("trecv: %s",
	       cf_rc(trecvmsg(c, c->rb, SMALL, 0x101, &c->ctx[2], c->comp)));
	cf_reap_print(&c->r, 1, "trecv", false);
	cf_reap_print(&c->r, 0, "its send", false);
	data_check(c, SMALL);

	peek_and_claim(c, SMALL, 0x102, 3, FI_CLAIM | c->comp);
	peek_and_claim(c, LARGE, 0x103, 5, FI_CLAIM | c->comp);
	if (c->comp) {
		peek_and_claim(c, SMALL, 0x104, 3, FI_CLAIM);
		peek_and_claim(c, LARGE, 0x105, 5, FI_CLAIM);
	}
	if (c->no_peek)
		return;

	/* A claim that discards. */
	send_tagged(c, SMALL, 0x106, &c->ctx[8]);
	peek_found(c, 0x106, &c->ctx[7], FI_CLAIM, "peek|claim");
	if (c->no_peek)
		return;
	cf_out("claim|discard: %s",
	       cf_rc(trecvmsg(c, NULL, 0, 0x106, &c->ctx[7],
			      FI_CLAIM | FI_DISCARD | c->comp)));
	cf_reap_print(&c->r, 1, "claim|discard", false);
	cf_reap_print(&c->r, 0, "its send", false);

	/* A peek that discards: nothing is left to find. */
	send_tagged(c, SMALL, 0x107, &c->ctx[9]);
	peek_found(c, 0x107, &c->ctx[7], FI_DISCARD, "peek|discard");
	if (c->no_peek)
		return;
	cf_reap_print(&c->r, 0, "its send", false);
	cf_out("peek again: %s", cf_rc(trecvmsg(c, NULL, 0, 0x107, &c->ctx[0],
						FI_PEEK | c->comp)));
	cf_reap_print(&c->r, 1, "peek again", false);

	if (c->comp) {
		/* A peek without FI_COMPLETION on a selective endpoint. */
		cf_out("peek uncompleted: %s",
		       cf_rc(trecvmsg(c, NULL, 0, 0x108, &c->ctx[0], FI_PEEK)));
		flush_to_marker(c, "after peek");
	}
	cf_out("read after: %s", cf_rc(fi_cq_read(c->r.cq[1], &e, 1)));
}

static int
claim_semantic(bool selective)
{
	struct cf_opts o = {.caps = FI_TAGGED,
			    .cq_bind = selective ? FI_SELECTIVE_COMPLETION : 0};
	static struct claim_rig c;
	char name[16];
	int ret;

	memset(&c, 0, sizeof(c));
	ret = cf_rig_open(&c.r, &o);
	if (ret)
		return cf_setup_failed(ret);
	c.comp = selective ? FI_COMPLETION : 0;
	c.s = mrlt_alloc(LARGE);
	c.rb = mrlt_alloc(LARGE + SMALL); /* the marker's at the end */
	for (size_t i = 0; i < LARGE; i++)
		c.s[i] = (char) (i * 7 + 1);
	cf_name(c.s, LARGE, "sbuf");
	cf_name(c.rb, LARGE + SMALL, "rbuf");
	for (int i = 0; i < NCTX; i++) {
		snprintf(name, sizeof(name), "ctx%d", i);
		cf_name(&c.ctx[i], sizeof(c.ctx[i]), name);
	}
	claim_cases(&c);
	if (c.no_peek)
		cf_out("peeks: not as fi_tagged(3) says, the rest skipped");
	cf_close_all();
	return CF_DONE;
}

/* fi_tagged(3) peeks and claims on an endpoint whose CQ reports every
 * operation. */
int
cf_claim(void)
{
	return claim_semantic(false);
}

/* The same on a selective endpoint: claims with and without
 * FI_COMPLETION. */
int
cf_claim_selective(void)
{
	return claim_semantic(true);
}
