/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues (fi_eq(3)) and connection management (fi_cm(3)).
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conform.h"

/* An EQ entry with room after it (events written with a payload). */
struct eq_event {
	struct fi_eq_entry e;
	uint8_t extra[16];
};

static void
print_eq_entry(const char *what, ssize_t rc, uint32_t event,
	       const struct fi_eq_entry *e)
{
	if (rc < 0) {
		cf_out("%s: %s", what, cf_rc(rc));
		return;
	}
	cf_out("%s: %s event=%s fid=%s ctx=%s data=%llu", what, cf_rc(rc),
	       fi_tostr(&event, FI_TYPE_EQ_EVENT), cf_ptr(e->fid),
	       cf_ptr(e->context), (unsigned long long) e->data);
}

static ssize_t
eq_read_print(struct fid_eq *eq, const char *what, size_t len, uint64_t flags)
{
	struct eq_event out;
	uint32_t event = ~0u;
	ssize_t rc;

	memset(&out, 0, sizeof(out));
	rc = fi_eq_read(eq, &event, &out, len, flags);
	print_eq_entry(what, rc, event, &out.e);
	return rc;
}

static void
eq_readerr_print(struct fid_eq *eq, const char *what, uint64_t flags)
{
	struct fi_eq_err_entry err;
	char buf[256] = "";
	const char *s;
	ssize_t rc;

	memset(&err, 0, sizeof(err));
	rc = fi_eq_readerr(eq, &err, flags);
	if (rc < 0) {
		cf_out("%s: %s", what, cf_rc(rc));
		return;
	}
	cf_out("%s: %s fid=%s ctx=%s data=%llu err=%s err_data=%s", what,
	       cf_rc(rc), cf_ptr(err.fid), cf_ptr(err.context),
	       (unsigned long long) err.data, cf_rc(-err.err),
	       err.err_data_size ? "set" : "none");
	s = fi_eq_strerror(eq, err.prov_errno, err.err_data, buf, sizeof(buf));
	cf_out("%s: fi_eq_strerror %s \"%s\"", what,
	       s == buf ? "=buf" :
	       s	? "other" :
			  "NULL",
	       s ? s : "");
}

static ssize_t
eq_write(struct fid_eq *eq, uint32_t event, fid_t fid, void *ctx, uint64_t data,
	 size_t len)
{
	struct eq_event in;

	memset(&in, 0, sizeof(in));
	in.e = (struct fi_eq_entry){.fid = fid, .context = ctx, .data = data};
	memset(in.extra, 0x5a, sizeof(in.extra));
	return fi_eq_write(eq, event, &in, len, 0);
}

/* Fabric, domain and an EQ with attr: false (with *status set) when the
 * semantic ends there. */
static bool
open_eq(struct mrlt_domain *d, struct fi_eq_attr *attr, struct fid_eq **eq,
	void *ctx, int *status)
{
	enum fi_wait_obj wait_obj;
	struct fi_info *info;
	int ret;

	ret = cf_info(0, 0, true, &info);
	if (ret) {
		*status = cf_setup_failed(ret);
		return false;
	}
	if (cf_domain_open(info, d)) {
		*status = CF_BROKEN;
		return false;
	}
	/* The requested wait object: a provider may write its choice back. */
	wait_obj = attr->wait_obj;
	ret = fi_eq_open(d->fabric, attr, eq, ctx);
	cf_out("fi_eq_open(wait %d): %s", (int) wait_obj, cf_rc(ret));
	if (ret) {
		*status = cf_setup_failed(ret);
		return false;
	}
	mrlt_track_fid(&(*eq)->fid);
	cf_name(*eq, 0, "eq");
	cf_name(ctx, 1, "ctx_eq");
	cf_out("eq context: %s", cf_ptr((*eq)->fid.context));
	return true;
}

/*
 * fi_eq(3): events the application writes come back as written, in order;
 * FI_PEEK reads without consuming; a buffer too small for the event is
 * refused; an empty EQ reads -FI_EAGAIN; a wait FD becomes readable once an
 * event is queued.
 */
int
cf_eq_rw(void)
{
	struct fi_eq_attr attr = {.size = 16,
				  .flags = FI_WRITE,
				  .wait_obj = FI_WAIT_UNSPEC};
	struct fi_eq_attr fd_attr = {.size = 16,
				     .flags = FI_WRITE,
				     .wait_obj = FI_WAIT_FD};
	struct fid_eq *eq, *fd_eq;
	struct mrlt_domain d;
	struct eq_event out;
	struct pollfd pfd;
	char ctx_eq, ctx_fd_eq, buf[128];
	struct fi_context2 ctx[4];
	uint32_t event;
	int status, fd = -1, ret;

	if (!open_eq(&d, &attr, &eq, &ctx_eq, &status))
		return status;
	for (int i = 0; i < 4; i++) {
		snprintf(buf, sizeof(buf), "ctx%d", i);
		cf_name(&ctx[i], sizeof(ctx[i]), buf);
	}
	eq_read_print(eq, "read empty", sizeof(out.e), 0);
	eq_read_print(eq, "peek empty", sizeof(out.e), FI_PEEK);
	eq_readerr_print(eq, "readerr empty", 0);

	cf_out("write 0: %s", cf_rc(eq_write(eq, FI_NOTIFY, &eq->fid, &ctx[0],
					     100, sizeof(out.e))));
	cf_out("write 1: %s", cf_rc(eq_write(eq, FI_MR_COMPLETE, &d.domain->fid,
					     &ctx[1], 101, sizeof(out.e))));
	cf_out("write 2: %s",
	       cf_rc(eq_write(eq, FI_NOTIFY, NULL, NULL, 102, sizeof(out.e))));
	cf_out("write 3: %s", cf_rc(eq_write(eq, FI_NOTIFY, &d.fabric->fid,
					     &ctx[3], 103, sizeof(out))));

	eq_read_print(eq, "peek 0", sizeof(out.e), FI_PEEK);
	eq_read_print(eq, "peek 0 again", sizeof(out.e), FI_PEEK);
	eq_readerr_print(eq, "readerr with events queued", 0);
	eq_read_print(eq, "read 0", sizeof(out.e), 0);
	eq_read_print(eq, "read 1 short buffer", sizeof(out.e) - 1, 0);
	eq_read_print(eq, "read 1", sizeof(out.e), 0);
	eq_read_print(eq, "read 2", sizeof(out.e), 0);
	/* A payload written past the entry comes back whole. */
	memset(&out, 0, sizeof(out));
	event = ~0u;
	ret = (int) fi_eq_read(eq, &event, &out, sizeof(out), 0);
	print_eq_entry("read 3 with payload", ret, event, &out.e);
	cf_out("read 3 payload: %s",
	       out.extra[0] == 0x5a && out.extra[15] == 0x5a ? "intact" :
							       "lost");
	eq_read_print(eq, "read empty again", sizeof(out.e), 0);
	buf[0] = '\0';
	cf_out("fi_eq_strerror(0): \"%s\"",
	       fi_eq_strerror(eq, 0, NULL, buf, sizeof(buf)));

	/* A wait FD, where the provider offers one. */
	ret = fi_eq_open(d.fabric, &fd_attr, &fd_eq, &ctx_fd_eq);
	cf_out("fi_eq_open(FI_WAIT_FD): %s", cf_rc(ret));
	if (ret)
		goto out;
	mrlt_track_fid(&fd_eq->fid);
	cf_name(fd_eq, 0, "fd_eq");
	ret = fi_control(&fd_eq->fid, FI_GETWAIT, &fd);
	cf_out("FI_GETWAIT: %s fd=%s", cf_rc(ret), fd >= 0 ? "valid" : "none");
	if (ret || fd < 0)
		goto out;
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cf_out("fd before an event: %d", poll(&pfd, 1, 0));
	cf_out("write: %s", cf_rc(eq_write(fd_eq, FI_NOTIFY, &fd_eq->fid,
					   &ctx[0], 7, sizeof(out.e))));
	pfd.revents = 0;
	cf_out("fd with an event: %d", poll(&pfd, 1, 1000));
	eq_read_print(fd_eq, "read", sizeof(out.e), 0);
out:
	cf_close_all();
	return CF_DONE;
}

/* A reader blocked in fi_eq_sread on another thread. */
struct eq_reader {
	struct fid_eq *eq;
	int timeout_ms;
	atomic_int started, done;
	ssize_t rc;
	uint32_t event;
	struct fi_eq_entry e;
	double elapsed_ms;
};

static void *
eq_reader_main(void *arg)
{
	struct eq_reader *r = arg;
	double t0;

	atomic_store(&r->started, 1);
	t0 = cf_now_ms();
	r->rc = fi_eq_sread(r->eq, &r->event, &r->e, sizeof(r->e),
			    r->timeout_ms, 0);
	r->elapsed_ms = cf_now_ms() - t0;
	atomic_store(&r->done, 1);
	return NULL;
}

static void
nap_ms(long ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};

	nanosleep(&ts, NULL);
}

static void
on_sigusr1(int sig)
{
	(void) sig;
}

/*
 * fi_eq(3): fi_eq_sread returns -FI_EAGAIN when its timeout expires with
 * nothing to read, returns an event queued before or during the wait, can
 * peek, and returns to its caller when the thread is signalled.
 */
int
cf_eq_sread(void)
{
	struct fi_eq_attr attr = {.size = 16,
				  .flags = FI_WRITE,
				  .wait_obj = FI_WAIT_UNSPEC};
	struct fi_eq_attr none_attr = {.size = 16,
				       .flags = FI_WRITE,
				       .wait_obj = FI_WAIT_NONE};
	struct sigaction sa = {.sa_handler = on_sigusr1};
	struct eq_reader r = {0};
	struct fid_eq *eq, *none_eq;
	struct mrlt_domain d;
	struct fi_eq_entry e;
	struct fi_context2 ctx[3];
	pthread_t thread;
	uint32_t event;
	char ctx_eq, ctx_none;
	double t0, end;
	ssize_t rc;
	int status;

	if (!open_eq(&d, &attr, &eq, &ctx_eq, &status))
		return status;
	cf_name(&ctx[0], sizeof(ctx[0]), "ctx0");
	cf_name(&ctx[1], sizeof(ctx[1]), "ctx1");
	cf_name(&ctx[2], sizeof(ctx[2]), "ctx2");

	t0 = cf_now_ms();
	rc = CF_BLOCKING("fi_eq_sread", 200,
			 fi_eq_sread(eq, &event, &e, sizeof(e), 200, 0));
	cf_out("sread empty (200 ms): %s %s", cf_rc(rc),
	       cf_timing(cf_now_ms() - t0, 200));

	cf_out("write: %s",
	       cf_rc(eq_write(eq, FI_NOTIFY, &eq->fid, &ctx[0], 1, sizeof(e))));
	memset(&e, 0, sizeof(e));
	t0 = cf_now_ms();
	rc = CF_BLOCKING("fi_eq_sread", 2000,
			 fi_eq_sread(eq, &event, &e, sizeof(e), 2000, FI_PEEK));
	print_eq_entry("sread peek", rc, event, &e);
	memset(&e, 0, sizeof(e));
	rc = CF_BLOCKING("fi_eq_sread", 2000,
			 fi_eq_sread(eq, &event, &e, sizeof(e), 2000, 0));
	print_eq_entry("sread", rc, event, &e);
	cf_out("sread timing: %s", cf_timing(cf_now_ms() - t0, 2000));

	/* An event written while a reader waits ends its wait. */
	r.eq = eq;
	r.timeout_ms = 5000;
	if (pthread_create(&thread, NULL, eq_reader_main, &r)) {
		cf_out("pthread_create failed");
		return CF_BROKEN;
	}
	if (cf_wait_started(&r.started))
		cf_out("write while blocked: %s",
		       cf_rc(eq_write(eq, FI_NOTIFY, &eq->fid, &ctx[1], 2,
				      sizeof(e))));
	CF_BLOCKING("a thread in fi_eq_sread", 5000,
		    pthread_join(thread, NULL));
	print_eq_entry("blocked sread", r.rc, r.event, &r.e);
	cf_out("blocked sread timing: %s", cf_timing(r.elapsed_ms, 5000));

	/* A signal delivered to the waiting thread: sent again and again
	 * until the read returns, since one sent before the thread is inside
	 * its wait only interrupts what it does then. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	memset(&r, 0, sizeof(r));
	r.eq = eq;
	r.timeout_ms = 1500;
	if (pthread_create(&thread, NULL, eq_reader_main, &r)) {
		cf_out("pthread_create failed");
		return CF_BROKEN;
	}
	cf_wait_started(&r.started);
	end = cf_now_ms() + CF_WAIT_S * 1e3;
	while (!atomic_load(&r.done) && cf_now_ms() < end) {
		pthread_kill(thread, SIGUSR1);
		nap_ms(20);
	}
	CF_BLOCKING("a thread in fi_eq_sread", 1500,
		    pthread_join(thread, NULL));
	cf_out("signalled sread: %s %s", cf_rc(r.rc),
	       cf_timing(r.elapsed_ms, 1500));
	eq_read_print(eq, "read after the signal", sizeof(e), 0);

	/* fi_eq(3): no sread on an EQ without a wait object. */
	rc = fi_eq_open(d.fabric, &none_attr, &none_eq, &ctx_none);
	cf_out("fi_eq_open(FI_WAIT_NONE): %s", cf_rc(rc));
	if (!rc) {
		mrlt_track_fid(&none_eq->fid);
		t0 = cf_now_ms();
		rc = CF_BLOCKING(
			"fi_eq_sread", 200,
			fi_eq_sread(none_eq, &event, &e, sizeof(e), 200, 0));
		cf_out("sread on FI_WAIT_NONE: %s %s", cf_rc(rc),
		       cf_timing(cf_now_ms() - t0, 200));
	}
	cf_close_all();
	return CF_DONE;
}

/* An address no peer has: the endpoint's own name with every byte
 * zeroed (a string address: the empty string). */
static void
bogus_name(size_t len, char *out)
{
	memset(out, 0, len);
}

/* Wait (bounded) until eq has something: the read's result. */
static ssize_t
eq_wait_any(struct fid_eq *eq, struct cf_rig *r)
{
	double end = cf_now_ms() + CF_WAIT_S * 1e3;
	struct fi_eq_cm_entry cm;
	uint32_t event;
	ssize_t rc;

	do {
		rc = fi_eq_read(eq, &event, &cm, sizeof(cm), FI_PEEK);
		if (rc != -FI_EAGAIN)
			return rc;
		if (r)
			cf_progress(r);
	} while (cf_now_ms() < end);
	return rc;
}

/* The error entry and what reads see around it. */
static void
eq_error_transcript(struct fid_eq *eq, struct cf_rig *r)
{
	struct fi_eq_err_entry err;
	char err_data[256];
	ssize_t rc;

	rc = eq_wait_any(eq, r);
	cf_out("an entry arrives: %s", cf_rc(rc));
	eq_read_print(eq, "read with an error queued",
		      sizeof(struct fi_eq_entry), 0);
	eq_readerr_print(eq, "readerr peek", FI_PEEK);
	memset(&err, 0, sizeof(err));
	err.err_data = err_data;
	err.err_data_size = sizeof(err_data);
	rc = fi_eq_readerr(eq, &err, FI_PEEK);
	cf_out("readerr peek, own err_data: %s err_data=%s", cf_rc(rc),
	       rc < 0			? "-" :
	       err.err_data == err_data ? "own" :
	       err.err_data_size	? "other" :
					  "none");
	eq_readerr_print(eq, "readerr", 0);
	eq_readerr_print(eq, "readerr again", 0);
	eq_read_print(eq, "read after", sizeof(struct fi_eq_entry), 0);
}

/*
 * fi_eq(3): an operation that fails puts an error entry on the EQ; reads
 * return -FI_EAVAIL until fi_eq_readerr takes it; it names the
 * application's fid and context. Made by the provider: a refused
 * connection (MSG) or an asynchronous AV insert of an address that is no
 * peer's (RDM, fi_av(3) FI_EVENT).
 */
int
cf_eq_readerr(void)
{
	struct fi_eq_attr attr = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
	struct cf_opts o = {.no_connect = true};
	struct fi_av_attr av_attr = {.flags = FI_EVENT};
	struct fi_info *cli;
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_av *av;
	struct fid_pep *pep;
	struct cf_rig r;
	char addr[256], ctx_ep, ctx_av;
	size_t addrlen = sizeof(addr);
	struct fi_context2 ctx;
	fi_addr_t fa = 0;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	ret = fi_eq_open(r.d.fabric, &attr, &eq, NULL);
	cf_out("fi_eq_open: %s", cf_rc(ret));
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&eq->fid);
	cf_name(eq, 0, "err_eq");
	cf_name(&ctx, sizeof(ctx), "ctx");
	if (r.msg) {
		/* A listener's address, the listener gone. */
		ret = fi_passive_ep(r.d.fabric, r.d.info, &pep, NULL);
		if (!ret)
			ret = fi_listen(pep) ||
			      fi_getname(&pep->fid, addr, &addrlen) ||
			      fi_close(&pep->fid);
		cf_out("closed listener: %s", cf_rc(ret));
		cli = mrlt_track_info(fi_dupinfo(r.d.info));
		ret = fi_endpoint(r.d.domain, cli, &ep, &ctx_ep);
		cf_out("fi_endpoint: %s", cf_rc(ret));
		if (ret)
			return CF_BROKEN;
		mrlt_track_fid(&ep->fid);
		cf_name(ep, 0, "cli");
		cf_name(&ctx_ep, 1, "ctx_cli");
		cf_out("bind eq: %s", cf_rc(fi_ep_bind(ep, &eq->fid, 0)));
		cf_out("bind cq: %s", cf_rc(fi_ep_bind(ep, &r.cq[0]->fid,
						       FI_TRANSMIT | FI_RECV)));
		cf_out("enable: %s", cf_rc(fi_enable(ep)));
		cf_out("fi_connect: %s", cf_rc(fi_connect(ep, addr, NULL, 0)));
	} else {
		av_attr.type = r.d.info->domain_attr->av_type;
		ret = fi_av_open(r.d.domain, &av_attr, &av, &ctx_av);
		cf_out("fi_av_open(FI_EVENT): %s", cf_rc(ret));
		if (ret)
			return cf_setup_failed(ret);
		mrlt_track_fid(&av->fid);
		cf_name(av, 0, "ev_av");
		ret = fi_av_bind(av, &eq->fid, 0);
		cf_out("fi_av_bind: %s", cf_rc(ret));
		if (ret)
			goto out;
		bogus_name(r.namelen[1], addr);
		cf_out("insert bogus: %s",
		       cf_rc(fi_av_insert(av, addr, 1, &fa, 0, &ctx)));
	}
	eq_error_transcript(eq, &r);
out:
	cf_close_all();
	return CF_DONE;
}

/*
 * fi_cm(3) and fi_eq(3): connection events name the passive endpoint
 * (FI_CONNREQ) and the active endpoints (FI_CONNECTED, FI_SHUTDOWN) the
 * application opened; a rejected request reaches the client as an error
 * entry naming its endpoint.
 */
int
cf_cm(void)
{
	struct cf_opts o = {.ep_type = FI_EP_MSG, .cm_log = true};
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t data[64];
	} ev;
	struct fi_info *cli;
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct cf_rig r;
	char addr[256], peer[256], ctx_cli;
	size_t addrlen = sizeof(addr), peerlen = sizeof(peer);
	uint32_t event;
	double end;
	ssize_t rc;
	int ret;

	if (strcmp(cf_prov, "tcp") && strcmp(cf_prov, "sockets")) {
		cf_out("cm: no MSG endpoints on %s", cf_prov);
		return CF_DONE;
	}
	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	ret = fi_getname(&r.pep->fid, addr, &addrlen);
	cf_out("fi_getname(pep): %s", cf_rc(ret));
	ret = fi_getpeer(r.ep[0], peer, &peerlen);
	cf_out("fi_getpeer(ep0): %s %s", cf_rc(ret),
	       !ret && peerlen == addrlen && !memcmp(peer, addr, addrlen) ?
		       "the listener's address" :
		       "another address");

	/* A second client, rejected. */
	ret = fi_eq_open(r.d.fabric, &attr, &eq, NULL);
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&eq->fid);
	cf_name(eq, 0, "cli_eq");
	cli = mrlt_track_info(fi_dupinfo(r.d.info));
	if (!cli || fi_endpoint(r.d.domain, cli, &ep, &ctx_cli))
		return CF_BROKEN;
	mrlt_track_fid(&ep->fid);
	cf_name(ep, 0, "cli");
	cf_name(&ctx_cli, 1, "ctx_cli");
	cf_out("cli bind: %s", cf_rc(fi_ep_bind(ep, &eq->fid, 0)));
	cf_out("cli bind cq: %s",
	       cf_rc(fi_ep_bind(ep, &r.cq[0]->fid, FI_TRANSMIT | FI_RECV)));
	cf_out("cli enable: %s", cf_rc(fi_enable(ep)));
	cf_out("cli connect: %s", cf_rc(fi_connect(ep, addr, "hi", 3)));
	end = cf_now_ms() + CF_WAIT_S * 1e3;
	do {
		rc = fi_eq_read(r.pep_eq, &event, &ev, sizeof(ev), 0);
	} while (rc == -FI_EAGAIN && cf_now_ms() < end);
	if (rc < 0) {
		cf_out("second FI_CONNREQ: %s", cf_rc(rc));
	} else {
		cf_out("second request: %s fid=%s info=%s data=%s",
		       fi_tostr(&event, FI_TYPE_EQ_EVENT), cf_ptr(ev.cm.fid),
		       ev.cm.info ? "set" : "NULL",
		       rc >= (ssize_t) sizeof(ev.cm) + 3 &&
				       !memcmp(ev.data, "hi", 3) ?
			       "hi" :
			       "other");
		if (ev.cm.info) {
			cf_out("fi_reject: %s",
			       cf_rc(fi_reject(r.pep, ev.cm.info->handle, NULL,
					       0)));
			fi_freeinfo(ev.cm.info);
		}
		eq_error_transcript(eq, NULL);
	}

	/* Shutdown: the peer's EQ reports it on its own endpoint. */
	cf_out("fi_shutdown(ep0): %s", cf_rc(fi_shutdown(r.ep[0], 0)));
	end = cf_now_ms() + CF_WAIT_S * 1e3;
	do {
		rc = fi_eq_read(r.eq[1], &event, &ev, sizeof(ev), 0);
		if (rc == -FI_EAGAIN)
			cf_progress(&r);
	} while (rc == -FI_EAGAIN && cf_now_ms() < end);
	if (rc < 0)
		cf_out("ep1 after the shutdown: %s", cf_rc(rc));
	else
		cf_out("ep1 after the shutdown: %s fid=%s",
		       fi_tostr(&event, FI_TYPE_EQ_EVENT), cf_ptr(ev.cm.fid));
	cf_close_all();
	return CF_DONE;
}
