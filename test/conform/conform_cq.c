/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues (fi_cq(3)), poll and wait sets (fi_poll(3)) and
 * cancel (fi_endpoint(3)).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* Small messages stay below the hook's default FI_MRLEASE_MIN_SIZE; the
 * large one is resolved through the lease cache in every setting. */
#define SMALL 64
#define LARGE (64 * 1024)

struct bufs {
	char *s, *r;
};

/* The rig of o, buffers of len bytes on each side ("sbuf", "rbuf") and
 * nctx contexts named ctx0, ctx1, ...; returns cf_rig_open's error. */
static int
rig_open(struct cf_rig *r, const struct cf_opts *o, struct bufs *b, size_t len,
	 struct fi_context2 *ctx, int nctx)
{
	char name[32];
	int ret;

	ret = cf_rig_open(r, o);
	if (ret)
		return ret;
	b->s = mrlt_alloc(len);
	b->r = mrlt_alloc(len);
	memset(b->s, 0x3c, len);
	cf_name(b->s, len, "sbuf");
	cf_name(b->r, len, "rbuf");
	for (int i = 0; i < nctx; i++) {
		snprintf(name, sizeof(name), "ctx%d", i);
		cf_name(&ctx[i], sizeof(ctx[i]), name);
	}
	return 0;
}

/*
 * fi_cq(3): completions carry the application's context and the flags of
 * the operation; a receive's entry its length, buffer, tag and remote CQ
 * data; fi_cq_readfrom the sender's address; a receive too small for its
 * message completes in error (-FI_EAVAIL, then fi_cq_readerr with olen).
 */
int
cf_cq_rw(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED};
	struct fi_context2 ctx[8];
	struct fi_cq_tagged_entry e;
	struct cf_rig r;
	struct bufs b;
	ssize_t rc;
	int ret;

	ret = rig_open(&r, &o, &b, LARGE, ctx, 8);
	if (ret)
		return cf_setup_failed(ret);
	cf_out("cq context: %s", cf_ptr(r.cq[0]->fid.context));
	cf_out("read empty: %s", cf_rc(fi_cq_read(r.cq[1], &e, 1)));
	cf_out("readfrom empty: %s",
	       cf_rc(fi_cq_readfrom(r.cq[1], &e, 1, NULL)));
	cf_print_cqerr("readerr empty", r.cq[1]);

	cf_post_recv_send(&r, b.r, b.s, SMALL, &ctx[0], &ctx[1]);
	cf_reap_print(&r, 0, "send", false);
	cf_reap_print(&r, 1, "recv", true);

	cf_out("trecv: %s",
	       cf_rc(CF_POST(&r, fi_trecv(r.ep[1], b.r, LARGE, NULL, r.peer[1],
					  0x55, 0, &ctx[2]))));
	cf_out("tsend large: %s",
	       cf_rc(CF_POST(&r, fi_tsend(r.ep[0], b.s, LARGE, NULL, r.peer[0],
					  0x55, &ctx[3]))));
	cf_reap_print(&r, 0, "tsend", false);
	cf_reap_print(&r, 1, "trecv", true);
	cf_out("data: %s", !memcmp(b.s, b.r, LARGE) ? "delivered" : "wrong");

	if (r.d.info->domain_attr->cq_data_size) {
		cf_out("recv: %s",
		       cf_rc(CF_POST(&r, fi_recv(r.ep[1], b.r, SMALL, NULL,
						 r.peer[1], &ctx[4]))));
		cf_out("senddata: %s",
		       cf_rc(CF_POST(&r,
				     fi_senddata(r.ep[0], b.s, SMALL, NULL,
						 0x1234, r.peer[0], &ctx[5]))));
		cf_reap_print(&r, 0, "senddata", false);
		cf_reap_print(&r, 1, "recv data", false);
	}

	/* Two entries read at once. */
	cf_out("recv: %s", cf_rc(CF_POST(&r, fi_recv(r.ep[1], b.r, SMALL, NULL,
						     r.peer[1], &ctx[6]))));
	cf_out("recv: %s",
	       cf_rc(CF_POST(&r, fi_recv(r.ep[1], b.r + SMALL, SMALL, NULL,
					 r.peer[1], &ctx[7]))));
	for (int i = 0; i < 2; i++) {
		cf_out("send: %s",
		       cf_rc(CF_POST(&r, fi_send(r.ep[0], b.s, SMALL, NULL,
						 r.peer[0], &ctx[i]))));
		cf_reap_print(&r, 0, "send", false);
	}
	{
		struct fi_cq_tagged_entry two[2];
		double end = cf_now_ms() + CF_WAIT_S * 1e3;
		int got = 0;

		memset(two, 0, sizeof(two));
		while (got < 2 && cf_now_ms() < end) {
			rc = fi_cq_read(r.cq[1], two + got, 2 - got);
			if (rc > 0)
				got += (int) rc;
			else if (rc != -FI_EAGAIN)
				break;
		}
		cf_out("two receives: %d", got);
		for (int i = 0; i < got; i++)
			cf_print_cqe("recv", &two[i]);
	}

	/* A message larger than its receive. */
	cf_out("small recv: %s",
	       cf_rc(CF_POST(&r, fi_recv(r.ep[1], b.r, 16, NULL, r.peer[1],
					 &ctx[0]))));
	cf_out("send: %s", cf_rc(CF_POST(&r, fi_send(r.ep[0], b.s, SMALL, NULL,
						     r.peer[0], &ctx[1]))));
	cf_reap_print(&r, 1, "truncated recv", false);
	cf_reap_print(&r, 0, "its send", false);
	cf_close_all();
	return CF_DONE;
}

/* A reader blocked in fi_cq_sread on another thread. */
struct cq_reader {
	struct fid_cq *cq;
	int timeout_ms;
	atomic_int started, done;
	ssize_t rc;
	struct fi_cq_tagged_entry e;
	double elapsed_ms;
};

static void *
cq_reader_main(void *arg)
{
	struct cq_reader *c = arg;
	double t0;

	atomic_store(&c->started, 1);
	t0 = cf_now_ms();
	c->rc = fi_cq_sread(c->cq, &c->e, 1, NULL, c->timeout_ms);
	c->elapsed_ms = cf_now_ms() - t0;
	atomic_store(&c->done, 1);
	return NULL;
}

/*
 * fi_cq(3): fi_cq_sread waits for a completion up to its timeout
 * (-FI_EAGAIN after it), returns one that arrives meanwhile, and returns
 * early when fi_cq_signal is called, before or during the wait;
 * fi_cq_sreadfrom gives the source too.
 */
int
cf_cq_sread(void)
{
	struct cf_opts o = {.cq = {.wait_obj = FI_WAIT_UNSPEC},
			    .thread_safe = true};
	struct cq_reader c = {0};
	struct fi_context2 ctx[4];
	struct fi_cq_tagged_entry e;
	struct cf_rig r;
	struct bufs b;
	pthread_t thread;
	fi_addr_t src;
	double t0;
	ssize_t rc;
	int ret;

	ret = rig_open(&r, &o, &b, LARGE, ctx, 4);
	if (ret)
		return cf_setup_failed(ret);

	t0 = cf_now_ms();
	rc = CF_BLOCKING("fi_cq_sread", 200,
			 fi_cq_sread(r.cq[1], &e, 1, NULL, 200));
	cf_out("sread empty (200 ms): %s %s", cf_rc(rc),
	       cf_timing(cf_now_ms() - t0, 200));
	cf_out("fi_cq_signal: %s", cf_rc(fi_cq_signal(r.cq[1])));
	t0 = cf_now_ms();
	rc = CF_BLOCKING("fi_cq_sread", 2000,
			 fi_cq_sread(r.cq[1], &e, 1, NULL, 2000));
	cf_out("sread after the signal: %s %s", cf_rc(rc),
	       cf_timing(cf_now_ms() - t0, 2000));

	cf_post_recv_send(&r, b.r, b.s, LARGE, &ctx[0], &ctx[1]);
	memset(&e, 0, sizeof(e));
	t0 = cf_now_ms();
	/* The sender's side needs progress too: its CQ is read. */
	/* A value no fi_addr_t of the run has: shows a source not written. */
	src = (fi_addr_t) 0x5eed5eed;
	cf_name_addr(src, "unwritten");
	for (rc = -FI_EAGAIN; rc == -FI_EAGAIN && cf_now_ms() - t0 < 5000;) {
		(void) fi_cq_read(r.cq[0], NULL, 0);
		rc = CF_BLOCKING(
			"fi_cq_sreadfrom", 100,
			fi_cq_sreadfrom(r.cq[1], &e, 1, &src, NULL, 100));
	}
	cf_out("sreadfrom: %s", cf_rc(rc));
	if (rc == 1) {
		cf_print_cqe("sreadfrom", &e);
		cf_out("sreadfrom src: %s", cf_addr(src));
	}
	memset(&e, 0, sizeof(e));
	rc = CF_BLOCKING("fi_cq_sread", 5000,
			 fi_cq_sread(r.cq[0], &e, 1, NULL, 5000));
	cf_out("sread send: %s", cf_rc(rc));
	if (rc == 1)
		cf_print_cqe("sread send", &e);

	/* A completion arriving while a reader waits. */
	c.cq = r.cq[1];
	c.timeout_ms = 5000;
	cf_out("recv: %s", cf_rc(CF_POST(&r, fi_recv(r.ep[1], b.r, SMALL, NULL,
						     r.peer[1], &ctx[2]))));
	if (pthread_create(&thread, NULL, cq_reader_main, &c))
		return CF_BROKEN;
	cf_wait_started(&c.started);
	cf_out("send: %s",
	       cf_rc(fi_send(r.ep[0], b.s, SMALL, NULL, r.peer[0], &ctx[3])));
	/* The sender's completion, read while the reader waits. */
	rc = CF_BLOCKING("fi_cq_sread", 5000,
			 fi_cq_sread(r.cq[0], &e, 1, NULL, 5000));
	cf_out("sread send: %s", cf_rc(rc));
	CF_BLOCKING("a thread in fi_cq_sread", 5000,
		    pthread_join(thread, NULL));
	cf_out("blocked sread: %s %s", cf_rc(c.rc),
	       cf_timing(c.elapsed_ms, 5000));
	if (c.rc == 1)
		cf_print_cqe("blocked sread", &c.e);

	/* fi_cq_signal during the wait. */
	memset(&c, 0, sizeof(c));
	c.cq = r.cq[1];
	c.timeout_ms = 3000;
	if (pthread_create(&thread, NULL, cq_reader_main, &c))
		return CF_BROKEN;
	if (cf_wait_started(&c.started))
		cf_out("fi_cq_signal: %s", cf_rc(fi_cq_signal(r.cq[1])));
	CF_BLOCKING("a thread in fi_cq_sread", 3000,
		    pthread_join(thread, NULL));
	cf_out("signalled sread: %s %s", cf_rc(c.rc),
	       cf_timing(c.elapsed_ms, 3000));
	cf_close_all();
	return CF_DONE;
}

/* Contexts fi_poll returned, in a stable order (the set's order is the
 * provider's, and both runs must only agree on which). */
static void
poll_print(struct fid_poll *ps, const char *what)
{
	void *ctxs[8];
	const char *names_[8];
	int n = fi_poll(ps, ctxs, 8);
	char line[256] = "";

	if (n < 0) {
		cf_out("%s: %s", what, cf_rc(n));
		return;
	}
	for (int i = 0; i < n; i++)
		names_[i] = cf_ptr(ctxs[i]);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(names_[j - 1], names_[j]) > 0;
		     j--) {
			const char *t = names_[j];

			names_[j] = names_[j - 1];
			names_[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " %s", names_[i]);
	cf_out("%s: %d%s", what, n, line);
}

/*
 * fi_poll(3): a poll set over CQs and counters returns the application's
 * contexts of those with something new; fi_poll_del removes one.
 */
int
cf_poll_set(void)
{
	struct cf_opts o = {.cntrs = true};
	struct fi_poll_attr attr = {0};
	struct fi_context2 ctx[2];
	struct fi_cq_tagged_entry e;
	struct fid_poll *ps;
	struct cf_rig r;
	struct bufs b;
	int ret;

	ret = rig_open(&r, &o, &b, SMALL, ctx, 2);
	if (ret)
		return cf_setup_failed(ret);
	ret = fi_poll_open(r.d.domain, &attr, &ps);
	cf_out("fi_poll_open: %s", cf_rc(ret));
	if (ret)
		goto out;
	mrlt_track_fid(&ps->fid);
	cf_out("add cq1: %s", cf_rc(fi_poll_add(ps, &r.cq[1]->fid, 0)));
	cf_out("add rx1: %s", cf_rc(fi_poll_add(ps, &r.rx[1]->fid, 0)));
	cf_out("add tx0: %s", cf_rc(fi_poll_add(ps, &r.tx[0]->fid, 0)));
	poll_print(ps, "poll idle");

	cf_post_recv_send(&r, b.r, b.s, SMALL, &ctx[0], &ctx[1]);
	cf_out("rx1: %llu", (unsigned long long) cf_cntr_until(&r, r.rx[1], 1));
	cf_out("tx0: %llu", (unsigned long long) cf_cntr_until(&r, r.tx[0], 1));
	poll_print(ps, "poll after the transfer");
	cf_reap_print(&r, 1, "recv", false);
	cf_reap_print(&r, 0, "send", false);
	poll_print(ps, "poll drained");
	cf_out("del cq1: %s", cf_rc(fi_poll_del(ps, &r.cq[1]->fid, 0)));
	cf_out("del cq1 again: %s", cf_rc(fi_poll_del(ps, &r.cq[1]->fid, 0)));
	cf_post_recv_send(&r, b.r, b.s, SMALL, &ctx[0], &ctx[1]);
	cf_out("rx1: %llu", (unsigned long long) cf_cntr_until(&r, r.rx[1], 2));
	cf_out("tx0: %llu", (unsigned long long) cf_cntr_until(&r, r.tx[0], 2));
	poll_print(ps, "poll without cq1");
	cf_out("recv: %s", cf_rc(cf_reap(&r, 1, &e, NULL)));
	cf_out("send: %s", cf_rc(cf_reap(&r, 0, &e, NULL)));
	cf_out("del rx1: %s", cf_rc(fi_poll_del(ps, &r.rx[1]->fid, 0)));
	cf_out("del tx0: %s", cf_rc(fi_poll_del(ps, &r.tx[0]->fid, 0)));
out:
	cf_close_all();
	return CF_DONE;
}

/* fi_wait with a bounded timeout, printed with its timing. */
static void
wait_print(struct fid_wait *ws, const char *what, int timeout)
{
	double t0 = cf_now_ms();
	int ret = CF_BLOCKING("fi_wait", timeout, fi_wait(ws, timeout));

	cf_out("%s: %s %s", what, cf_rc(ret),
	       cf_timing(cf_now_ms() - t0, timeout));
}

/*
 * fi_poll(3): a wait set shared by CQs and counters (FI_WAIT_SET) is
 * signalled by a completion or a counter update; fi_wait times out with
 * -FI_ETIMEDOUT otherwise; fi_trywait says whether waiting is safe.
 */
int
cf_wait_set(void)
{
	struct cf_opts o = {.cntrs = true, .wait_set = true};
	struct fi_context2 ctx[2];
	struct fid *fids[2];
	struct cf_rig r;
	struct bufs b;
	double end;
	int ret;

	ret = rig_open(&r, &o, &b, SMALL, ctx, 2);
	if (ret)
		return cf_setup_failed(ret);
	fids[0] = &r.cq[1]->fid;
	fids[1] = &r.rx[1]->fid;
	cf_out("trywait idle: %s", cf_rc(fi_trywait(r.d.fabric, fids, 2)));
	wait_print(r.ws, "wait idle (100 ms)", 100);
	cf_out("fi_cntr_add(tx1): %s", cf_rc(fi_cntr_add(r.tx[1], 1)));
	wait_print(r.ws, "wait after fi_cntr_add", 2000);

	cf_post_recv_send(&r, b.r, b.s, SMALL, &ctx[0], &ctx[1]);
	/* Waits of 100 ms with the sender's side progressed between them,
	 * until the receive's completion is there. */
	end = cf_now_ms() + CF_WAIT_S * 1e3;
	do {
		ret = CF_BLOCKING("fi_wait", 100, fi_wait(r.ws, 100));
		(void) fi_cq_read(r.cq[0], NULL, 0);
	} while (fi_cntr_read(r.rx[1]) < 1 && cf_now_ms() < end);
	cf_out("rx1: %llu", (unsigned long long) fi_cntr_read(r.rx[1]));
	cf_out("trywait with a completion: %s",
	       cf_rc(fi_trywait(r.d.fabric, fids, 2)));
	/* Twice: the first wait may consume the wake-up the completion
	 * gave; the completion is still unread, so the second must return
	 * at once too. */
	wait_print(r.ws, "wait with a completion", 2000);
	wait_print(r.ws, "wait again, the completion still unread", 2000);
	cf_reap_print(&r, 1, "recv", false);
	cf_reap_print(&r, 0, "send", false);
	cf_close_all();
	return CF_DONE;
}

/*
 * fi_endpoint(3): fi_cancel ends a posted receive, which completes in
 * error with -FI_ECANCELED and its context; a context that names no
 * pending operation is not an error to cancel; the endpoint works on.
 */
int
cf_cancel(void)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED};
	struct fi_context2 ctx[6];
	struct cf_rig r;
	struct bufs b;
	int ret;

	ret = rig_open(&r, &o, &b, LARGE, ctx, 6);
	if (ret)
		return cf_setup_failed(ret);

	cf_out("recv: %s", cf_rc(CF_POST(&r, fi_recv(r.ep[1], b.r, LARGE, NULL,
						     r.peer[1], &ctx[0]))));
	cf_out("fi_cancel(recv): %s", cf_rc(fi_cancel(&r.ep[1]->fid, &ctx[0])));
	cf_reap_print(&r, 1, "cancelled recv", false);
	cf_out("trecv: %s",
	       cf_rc(CF_POST(&r, fi_trecv(r.ep[1], b.r, SMALL, NULL, r.peer[1],
					  0x77, 0, &ctx[1]))));
	cf_out("fi_cancel(trecv): %s",
	       cf_rc(fi_cancel(&r.ep[1]->fid, &ctx[1])));
	cf_reap_print(&r, 1, "cancelled trecv", false);
	cf_out("fi_cancel(unknown): %s",
	       cf_rc(fi_cancel(&r.ep[1]->fid, &ctx[2])));
	cf_out("read after: %s", cf_rc(fi_cq_read(r.cq[1], NULL, 0)));

	cf_post_recv_send(&r, b.r, b.s, LARGE, &ctx[3], &ctx[4]);
	cf_reap_print(&r, 0, "send", false);
	cf_reap_print(&r, 1, "recv", false);
	cf_out("fi_cancel(completed): %s",
	       cf_rc(fi_cancel(&r.ep[1]->fid, &ctx[3])));
	cf_out("fi_cancel(send done): %s",
	       cf_rc(fi_cancel(&r.ep[0]->fid, &ctx[4])));
	cf_out("read after: %s", cf_rc(fi_cq_read(r.cq[1], NULL, 0)));
	cf_close_all();
	return CF_DONE;
}
