/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration (fi_mr(3)) and triggered operations (fi_trigger(3)).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>

#include "conform.h"

#define MR_LEN (64 * 1024)

/* Requested keys: used only when the provider does not pick its own. */
#define KEY_A 0x1a1
#define KEY_B 0x2b2
#define KEY_C 0x3c3
#define KEY_D 0x4d4

static bool
prov_key(const struct cf_rig *r)
{
	return r->d.info->domain_attr->mr_mode & FI_MR_PROV_KEY;
}

uint64_t
cf_rma_addr(const struct cf_rig *r, const void *buf)
{
	return r->d.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
		       (uint64_t) (uintptr_t) buf :
		       0;
}

/* What an application may rely on of an MR it registered: its context,
 * whether it has a descriptor, and the key it asked for (a provider's own
 * key differs between runs). */
static void
mr_print(struct fid_mr *mr, const char *what)
{
	cf_out("%s: ctx=%s desc=%s", what, cf_ptr(mr->fid.context),
	       fi_mr_desc(mr) ? "set" : "NULL");
}

/* The key of an MR, as the application may rely on it. */
static void
mr_key_print(const struct cf_rig *r, struct fid_mr *mr, const char *what,
	     uint64_t want_key)
{
	uint64_t key = fi_mr_key(mr);

	cf_out("%s: key=%s", what,
	       key == FI_KEY_NOTAVAIL ? "FI_KEY_NOTAVAIL" :
	       prov_key(r)	      ? "provider's" :
	       key == want_key	      ? "requested" :
					"other");
}

void
cf_mr_attach(const struct cf_rig *r, struct fid_mr *mr, struct fid_ep *ep,
	  const char *what)
{
	if (!(r->d.info->domain_attr->mr_mode & FI_MR_ENDPOINT))
		return;
	cf_out("%s bind ep: %s", what, cf_rc(fi_mr_bind(mr, &ep->fid, 0)));
	cf_out("%s enable: %s", what, cf_rc(fi_mr_enable(mr)));
}

ssize_t
cf_mr_reg(struct cf_rig *r, void *buf, size_t len, uint64_t access, uint64_t key,
    struct fid_mr **mr, void *ctx, const char *what)
{
	int ret = fi_mr_reg(r->d.domain, buf, len, access, 0, key, 0, mr, ctx);

	cf_out("%s: %s", what, cf_rc(ret));
	if (ret) {
		*mr = NULL;
		return ret;
	}
	mrlt_track_fid(&(*mr)->fid);
	cf_name(*mr, 0, what);
	mr_print(*mr, what);
	return 0;
}

/*
 * fi_mr(3): fi_mr_reg, fi_mr_regv and fi_mr_regattr give a handle per
 * call with the application's context; requested keys are honoured and
 * unique; the descriptor serves local operands and the key remote ones;
 * closing one handle leaves another on the same memory working; bind,
 * refresh and raw keys answer as the provider does.
 */
int
cf_mr(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_RMA};
	struct fi_context2 ctx[8];
	struct fid_mr *a, *b, *v, *rem, *rl, *z;
	struct fi_mr_attr attr;
	struct iovec iov[2];
	struct fid_cntr *cntr;
	struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP};
	struct cf_rig r;
	char *s, *d, ctxn[8][16];
	uint8_t raw[64];
	size_t raw_len = sizeof(raw);
	uint64_t base = 0;
	bool rma = true;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret == -FI_ENODATA) {
		o.caps = FI_MSG;
		rma = false;
		mrlt_close_all();
		ret = cf_rig_open(&r, &o);
	}
	if (ret)
		return cf_setup_failed(ret);
	s = mrlt_alloc(MR_LEN);
	d = mrlt_alloc(MR_LEN);
	memset(s, 0x6e, MR_LEN);
	cf_name(s, MR_LEN, "sbuf");
	cf_name(d, MR_LEN, "dbuf");
	for (int i = 0; i < 8; i++) {
		snprintf(ctxn[i], sizeof(ctxn[i]), "ctx%d", i);
		cf_name(&ctx[i], sizeof(ctx[i]), ctxn[i]);
	}

	if (cf_mr_reg(&r, s, MR_LEN, FI_SEND | FI_RECV, KEY_A, &a, &ctx[0], "mr_a"))
		goto out;
	cf_mr_attach(&r, a, r.ep[0], "mr_a");
	cf_mr_reg(&r, s, MR_LEN, FI_SEND | FI_RECV, KEY_B, &b, &ctx[1], "mr_b");
	if (b) {
		cf_mr_attach(&r, b, r.ep[0], "mr_b");
		cf_out("mr_b is mr_a: %s", b == a ? "yes" : "no");
	}

	iov[0] = (struct iovec){.iov_base = s, .iov_len = 4096};
	iov[1] = (struct iovec){.iov_base = s + 8192, .iov_len = 4096};
	ret = fi_mr_regv(r.d.domain, iov, 2, FI_SEND, 0, KEY_C, 0, &v, &ctx[3]);
	cf_out("regv 2 iovs: %s", cf_rc(ret));
	if (!ret) {
		mrlt_track_fid(&v->fid);
		cf_name(v, 0, "mr_v");
		mr_print(v, "mr_v");
	}
	ret = fi_mr_regv(r.d.domain, iov, 1, FI_SEND, 0, KEY_C + 1, 0, &v,
			 &ctx[3]);
	cf_out("regv 1 iov: %s", cf_rc(ret));
	if (!ret) {
		mrlt_track_fid(&v->fid);
		mr_print(v, "mr_v1");
	}

	memset(&attr, 0, sizeof(attr));
	iov[0] = (struct iovec){.iov_base = d, .iov_len = MR_LEN};
	attr.mr_iov = iov;
	attr.iov_count = 1;
	attr.access = FI_REMOTE_WRITE | FI_REMOTE_READ;
	attr.requested_key = KEY_D;
	attr.context = &ctx[4];
	attr.iface = FI_HMEM_SYSTEM;
	ret = fi_mr_regattr(r.d.domain, &attr, 0, &rem);
	cf_out("regattr remote: %s", cf_rc(ret));
	if (ret)
		goto out;
	mrlt_track_fid(&rem->fid);
	cf_name(rem, 0, "mr_rem");
	mr_print(rem, "mr_rem");
	mr_key_print(&r, rem, "mr_rem", KEY_D);
	cf_mr_attach(&r, rem, r.ep[1], "mr_rem");

	iov[0] = (struct iovec){.iov_base = s, .iov_len = MR_LEN};
	cf_out("refresh mr_a: %s", cf_rc(fi_mr_refresh(a, iov, 1, 0)));
	ret = fi_mr_raw_attr(rem, &base, raw, &raw_len, 0);
	cf_out("raw_attr mr_rem: %s", cf_rc(ret));
	ret = fi_cntr_open(r.d.domain, &cattr, &cntr, NULL);
	if (!ret) {
		mrlt_track_fid(&cntr->fid);
		cf_out("bind mr_rem to a counter: %s",
		       cf_rc(fi_mr_bind(rem, &cntr->fid, FI_REMOTE_WRITE)));
	}
	cf_mr_reg(&r, d, MR_LEN, FI_RECV, KEY_D + 1, &rl, &ctx[5], "mr_rl");
	if (rl)
		cf_mr_attach(&r, rl, r.ep[1], "mr_rl");
	cf_mr_reg(&r, s, 0, FI_SEND, KEY_D + 2, &z, &ctx[6], "zero length");

	/* Descriptors in use. */
	cf_out("recv: %s", cf_rc(CF_POST(&r, fi_recv(r.ep[1], d, MR_LEN,
						     rl ? fi_mr_desc(rl) : NULL,
						     r.peer[1], &ctx[0]))));
	cf_out("send: %s",
	       cf_rc(CF_POST(&r, fi_send(r.ep[0], s, MR_LEN, fi_mr_desc(a),
					 r.peer[0], &ctx[1]))));
	cf_reap_print(&r, 0, "send", false);
	cf_reap_print(&r, 1, "recv", false);
	cf_out("data: %s", !memcmp(s, d, MR_LEN) ? "delivered" : "wrong");

	/* One handle closed, the other on the same memory still works. */
	if (b)
		cf_out("close mr_b: %s", cf_rc(mrlt_close(&b->fid, "mr_b")));
	memset(d, 0, MR_LEN);
	cf_out("recv: %s", cf_rc(CF_POST(&r, fi_recv(r.ep[1], d, MR_LEN,
						     rl ? fi_mr_desc(rl) : NULL,
						     r.peer[1], &ctx[2]))));
	cf_out("send with mr_a: %s",
	       cf_rc(CF_POST(&r, fi_send(r.ep[0], s, MR_LEN, fi_mr_desc(a),
					 r.peer[0], &ctx[3]))));
	cf_reap_print(&r, 0, "send", false);
	cf_reap_print(&r, 1, "recv", false);
	cf_out("data: %s", !memcmp(s, d, MR_LEN) ? "delivered" : "wrong");

	if (rma) {
		memset(s, 0x71, MR_LEN);
		cf_out("write: %s",
		       cf_rc(CF_POST(&r,
				     fi_write(r.ep[0], s, MR_LEN, fi_mr_desc(a),
					      r.peer[0], cf_rma_addr(&r, d),
					      fi_mr_key(rem), &ctx[4]))));
		cf_reap_print(&r, 0, "write", false);
		/* The initiator's completion may come before the data lands
		 * (FI_TRANSMIT_COMPLETE): the target is progressed until it
		 * has. */
		for (double end = cf_now_ms() + CF_WAIT_S * 1e3;
		     memcmp(s, d, MR_LEN) && cf_now_ms() < end;)
			cf_progress(&r);
		cf_out("written: %s",
		       !memcmp(s, d, MR_LEN) ? "delivered" : "wrong");
		memset(s, 0, MR_LEN);
		cf_out("read: %s",
		       cf_rc(CF_POST(&r,
				     fi_read(r.ep[0], s, MR_LEN, fi_mr_desc(a),
					     r.peer[0], cf_rma_addr(&r, d),
					     fi_mr_key(rem), &ctx[5]))));
		cf_reap_print(&r, 0, "read", false);
		cf_out("read back: %s",
		       !memcmp(s, d, MR_LEN) ? "delivered" : "wrong");
	}
out:
	cf_close_all();
	return CF_DONE;
}

/*
 * fi_mr(3): without FI_MR_PROV_KEY an MR's key is the one the application
 * requested, whatever its access, and a key already in use in the domain
 * is refused with -FI_ENOKEY.
 */
int
cf_mr_key(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_RMA};
	struct fid_mr *a, *b, *c, *e;
	struct cf_rig r;
	char *s, *d, ctx[4];
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret == -FI_ENODATA) {
		o.caps = FI_MSG;
		ret = cf_rig_open(&r, &o);
	}
	if (ret)
		return cf_setup_failed(ret);
	s = mrlt_alloc(MR_LEN);
	d = mrlt_alloc(MR_LEN);
	cf_out("provider keys: %s", prov_key(&r) ? "yes" : "no");
	if (!cf_mr_reg(&r, s, MR_LEN, FI_SEND | FI_RECV, KEY_A, &a, &ctx[0], "local"))
		mr_key_print(&r, a, "local", KEY_A);
	if (!prov_key(&r) &&
	    !cf_mr_reg(&r, d, 4096, FI_SEND, KEY_A, &b, &ctx[1], "local, its key"))
		mr_key_print(&r, b, "local, its key", KEY_A);
	if (!cf_mr_reg(&r, d, MR_LEN, FI_REMOTE_WRITE, KEY_B, &c, &ctx[2], "remote"))
		mr_key_print(&r, c, "remote", KEY_B);
	if (!prov_key(&r) && !cf_mr_reg(&r, s, 4096, FI_RECV, KEY_B, &e, &ctx[3],
				  "local, remote's key"))
		mr_key_print(&r, e, "local, remote's key", KEY_B);
	cf_close_all();
	return CF_DONE;
}

#define TRIG_LEN 4096

union trig_ctx {
	struct fi_triggered_context c;
	struct fi_triggered_context2 c2;
};

/* A tagged ping from ep0 to ep1 and its completions. */
static void
ping(struct cf_rig *r, struct fi_context2 *ctx)
{
	uint64_t out = 7, in = 0;

	cf_out("ping trecv: %s",
	       cf_rc(CF_POST(r, fi_trecv(r->ep[1], &in, sizeof(in), NULL,
					 r->peer[1], 0x51, 0, &ctx[0]))));
	cf_out("ping tsend: %s",
	       cf_rc(CF_POST(r, fi_tsend(r->ep[0], &out, sizeof(out), NULL,
					 r->peer[0], 0x51, &ctx[1]))));
	cf_reap_print(r, 0, "ping tx", false);
	cf_reap_print(r, 1, "ping rx", false);
}

static bool
all_zero(const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/*
 * fi_trigger(3): an operation posted with FI_TRIGGER and a threshold
 * context waits until the application's counter reaches the threshold,
 * then runs with its operand's data of that moment and completes with
 * that context; one whose threshold is already reached runs at once.
 */
int
cf_trigger(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_TRIGGER};
	struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP};
	union trig_ctx t[3];
	struct fi_context2 ctx[4];
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	struct iovec iov;
	struct fi_rma_iov rma;
	struct fi_msg msg;
	struct fi_msg_rma rmsg;
	struct cf_rig r;
	char *s, *d;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	s = mrlt_alloc(TRIG_LEN);
	d = mrlt_alloc(TRIG_LEN);
	cf_name(s, TRIG_LEN, "sbuf");
	cf_name(d, TRIG_LEN, "dbuf");
	for (int i = 0; i < 3; i++) {
		char n[16];

		snprintf(n, sizeof(n), "trig%d", i);
		cf_name(&t[i], sizeof(t[i]), n);
		memset(&t[i], 0, sizeof(t[i]));
	}
	for (int i = 0; i < 4; i++) {
		char n[16];

		snprintf(n, sizeof(n), "ctx%d", i);
		cf_name(&ctx[i], sizeof(ctx[i]), n);
	}
	ret = fi_cntr_open(r.d.domain, &cattr, &cntr, NULL);
	cf_out("fi_cntr_open: %s", cf_rc(ret));
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&cntr->fid);

	/* A send waiting for 1. */
	cf_out("recv: %s", cf_rc(CF_POST(&r, fi_recv(r.ep[1], d, TRIG_LEN, NULL,
						     r.peer[1], &ctx[2]))));
	t[0].c.event_type = FI_TRIGGER_THRESHOLD;
	t[0].c.trigger.threshold.cntr = cntr;
	t[0].c.trigger.threshold.threshold = 1;
	memset(s, 0x11, TRIG_LEN);
	iov = (struct iovec){.iov_base = s, .iov_len = TRIG_LEN};
	msg = (struct fi_msg){.msg_iov = &iov,
			      .iov_count = 1,
			      .addr = r.peer[0],
			      .context = &t[0]};
	cf_out("triggered send: %s",
	       cf_rc(CF_POST(&r, fi_sendmsg(r.ep[0], &msg, FI_TRIGGER))));
	ping(&r, ctx);
	cf_out("below the threshold: dbuf %s",
	       all_zero(d, TRIG_LEN) ? "untouched" : "written");
	memset(s, 0x22, TRIG_LEN);
	cf_out("fi_cntr_add: %s", cf_rc(fi_cntr_add(cntr, 1)));
	cf_reap_print(&r, 0, "triggered send", false);
	cf_reap_print(&r, 1, "its recv", false);
	cf_out("data: %s", d[0] == 0x22 && d[TRIG_LEN - 1] == 0x22 ?
				   "of the trigger's time" :
			   d[0] == 0x11 ? "of the post's time" :
					  "other");

	/* A write waiting for 3, then one whose threshold is reached. */
	if (cf_mr_reg(&r, d, TRIG_LEN, FI_REMOTE_WRITE, 0x777, &mr, &ctx[3], "mr_d"))
		goto out;
	cf_mr_attach(&r, mr, r.ep[1], "mr_d");
	memset(d, 0, TRIG_LEN);
	memset(s, 0x33, TRIG_LEN);
	rma = (struct fi_rma_iov){.addr = cf_rma_addr(&r, d),
				  .len = TRIG_LEN,
				  .key = fi_mr_key(mr)};
	t[1].c.event_type = FI_TRIGGER_THRESHOLD;
	t[1].c.trigger.threshold.cntr = cntr;
	t[1].c.trigger.threshold.threshold = 3;
	rmsg = (struct fi_msg_rma){.msg_iov = &iov,
				   .iov_count = 1,
				   .addr = r.peer[0],
				   .rma_iov = &rma,
				   .rma_iov_count = 1,
				   .context = &t[1]};
	cf_out("triggered write: %s",
	       cf_rc(CF_POST(&r, fi_writemsg(r.ep[0], &rmsg, FI_TRIGGER))));
	cf_out("fi_cntr_add: %s", cf_rc(fi_cntr_add(cntr, 1)));
	ping(&r, ctx);
	cf_out("below the threshold: dbuf %s",
	       all_zero(d, TRIG_LEN) ? "untouched" : "written");
	cf_out("fi_cntr_set: %s", cf_rc(fi_cntr_set(cntr, 3)));
	cf_reap_print(&r, 0, "triggered write", false);
	for (double end = cf_now_ms() + CF_WAIT_S * 1e3;
	     d[TRIG_LEN - 1] != 0x33 && cf_now_ms() < end;)
		cf_progress(&r);
	cf_out("data: %s",
	       d[0] == 0x33 && d[TRIG_LEN - 1] == 0x33 ? "delivered" : "other");

	t[2].c.event_type = FI_TRIGGER_THRESHOLD;
	t[2].c.trigger.threshold.cntr = cntr;
	t[2].c.trigger.threshold.threshold = 2;
	rmsg.context = &t[2];
	cf_out("write past its threshold: %s",
	       cf_rc(CF_POST(&r, fi_writemsg(r.ep[0], &rmsg, FI_TRIGGER))));
	cf_reap_print(&r, 0, "write past its threshold", false);
out:
	cf_close_all();
	return CF_DONE;
}
