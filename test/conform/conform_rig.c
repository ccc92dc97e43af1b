/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transcript output and the rig every semantic starts from (conform.h).
 */
#include "config.h"

#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conform.h"
#include "rdma/fi_ext_mrlease.h"

const char *cf_prov;

/* ------------------------------------------------------------------------
 * Transcript.
 */

void
cf_out(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	putchar('\n');
	fflush(stdout);
}

#define CF_RING 8

static char *
ring_next(void)
{
	static char ring[CF_RING][256];
	static unsigned next;

	return ring[next++ % CF_RING];
}

/* Fabric errnos by name: the transcript reads as the man pages do. */
static const struct {
	int err;
	const char *name;
} errnames[] = {
	{FI_EPERM, "FI_EPERM"},
	{FI_ENOENT, "FI_ENOENT"},
	{FI_EINTR, "FI_EINTR"},
	{FI_EIO, "FI_EIO"},
	{FI_E2BIG, "FI_E2BIG"},
	{FI_EBADF, "FI_EBADF"},
	{FI_EAGAIN, "FI_EAGAIN"},
	{FI_ENOMEM, "FI_ENOMEM"},
	{FI_EACCES, "FI_EACCES"},
	{FI_EFAULT, "FI_EFAULT"},
	{FI_EBUSY, "FI_EBUSY"},
	{FI_ENODEV, "FI_ENODEV"},
	{FI_EINVAL, "FI_EINVAL"},
	{FI_EMFILE, "FI_EMFILE"},
	{FI_ENOSPC, "FI_ENOSPC"},
	{FI_ENOSYS, "FI_ENOSYS"},
	{FI_EWOULDBLOCK, "FI_EAGAIN"},
	{FI_ENOMSG, "FI_ENOMSG"},
	{FI_ENODATA, "FI_ENODATA"},
	{FI_EOVERFLOW, "FI_EOVERFLOW"},
	{FI_EMSGSIZE, "FI_EMSGSIZE"},
	{FI_ENOPROTOOPT, "FI_ENOPROTOOPT"},
	{FI_EOPNOTSUPP, "FI_EOPNOTSUPP"},
	{FI_EADDRINUSE, "FI_EADDRINUSE"},
	{FI_EADDRNOTAVAIL, "FI_EADDRNOTAVAIL"},
	{FI_ENETDOWN, "FI_ENETDOWN"},
	{FI_ENETUNREACH, "FI_ENETUNREACH"},
	{FI_ECONNABORTED, "FI_ECONNABORTED"},
	{FI_ECONNRESET, "FI_ECONNRESET"},
	{FI_ENOBUFS, "FI_ENOBUFS"},
	{FI_EISCONN, "FI_EISCONN"},
	{FI_ENOTCONN, "FI_ENOTCONN"},
	{FI_ESHUTDOWN, "FI_ESHUTDOWN"},
	{FI_ETIMEDOUT, "FI_ETIMEDOUT"},
	{FI_ECONNREFUSED, "FI_ECONNREFUSED"},
	{FI_EHOSTDOWN, "FI_EHOSTDOWN"},
	{FI_EHOSTUNREACH, "FI_EHOSTUNREACH"},
	{FI_EALREADY, "FI_EALREADY"},
	{FI_EINPROGRESS, "FI_EINPROGRESS"},
	{FI_EREMOTEIO, "FI_EREMOTEIO"},
	{FI_ECANCELED, "FI_ECANCELED"},
	{FI_EKEYREJECTED, "FI_EKEYREJECTED"},
	{FI_EOTHER, "FI_EOTHER"},
	{FI_ETOOSMALL, "FI_ETOOSMALL"},
	{FI_EOPBADSTATE, "FI_EOPBADSTATE"},
	{FI_EAVAIL, "FI_EAVAIL"},
	{FI_EBADFLAGS, "FI_EBADFLAGS"},
	{FI_ENOEQ, "FI_ENOEQ"},
	{FI_EDOMAIN, "FI_EDOMAIN"},
	{FI_ENOCQ, "FI_ENOCQ"},
	{FI_ECRC, "FI_ECRC"},
	{FI_ETRUNC, "FI_ETRUNC"},
	{FI_ENOKEY, "FI_ENOKEY"},
	{FI_ENOAV, "FI_ENOAV"},
	{FI_EOVERRUN, "FI_EOVERRUN"},
};

static const char *
errname(int err)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].err == err)
			return errnames[i].name;
	return NULL;
}

const char *
cf_rc(ssize_t rc)
{
	char *s = ring_next();
	const char *n = rc < 0 ? errname((int) -rc) : NULL;

	if (n)
		snprintf(s, 256, "-%s", n);
	else
		snprintf(s, 256, "%zd", rc);
	return s;
}

const char *
cf_flags(uint64_t flags, enum fi_type type)
{
	char *s = ring_next();

	snprintf(s, 256, "%s", flags ? fi_tostr(&flags, type) : "0");
	/* fi_tostr ends some lists with a separator. */
	for (size_t n = strlen(s); n && (s[n - 1] == ' ' || s[n - 1] == '|');)
		s[--n] = '\0';
	return s;
}

bool
cf_unsupported(ssize_t rc)
{
	return rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP || rc == -FI_ENODATA;
}

#define CF_NAMES 256

static struct {
	const char *p;
	size_t len;
	char name[32];
} names[CF_NAMES];
static size_t nnames;

void
cf_name(const void *p, size_t len, const char *name)
{
	if (!p || nnames == CF_NAMES)
		return;
	names[nnames].p = p;
	names[nnames].len = len;
	snprintf(names[nnames].name, sizeof(names[nnames].name), "%s", name);
	nnames++;
}

const char *
cf_ptr(const void *p)
{
	const char *c = p;
	char *s;

	if (!p)
		return "NULL";
	/* Newest first: a name given later wins (a fid reopened at the
	 * address of a closed one). */
	for (size_t i = nnames; i-- > 0;) {
		if (c == names[i].p)
			return names[i].name;
		if (c > names[i].p && c < names[i].p + names[i].len) {
			s = ring_next();
			snprintf(s, 256, "%s+%td", names[i].name,
				 c - names[i].p);
			return s;
		}
	}
	return "foreign";
}

static struct {
	fi_addr_t addr;
	char name[32];
} addr_names[16];
static size_t naddr_names;

void
cf_name_addr(fi_addr_t addr, const char *name)
{
	if (naddr_names == sizeof(addr_names) / sizeof(addr_names[0]))
		return;
	addr_names[naddr_names].addr = addr;
	snprintf(addr_names[naddr_names].name,
		 sizeof(addr_names[naddr_names].name), "%s", name);
	naddr_names++;
}

const char *
cf_addr(fi_addr_t addr)
{
	if (addr == FI_ADDR_UNSPEC)
		return "FI_ADDR_UNSPEC";
	if (addr == FI_ADDR_NOTAVAIL)
		return "FI_ADDR_NOTAVAIL";
	for (size_t i = naddr_names; i-- > 0;)
		if (addr_names[i].addr == addr)
			return addr_names[i].name;
	return "unnamed";
}

double
cf_now_ms(void)
{
	return mrlt_now() * 1e3;
}

const char *
cf_timing(double elapsed_ms, int timeout_ms)
{
	/* A wait that was cut short ends well before its timeout; one that
	 * ran out can only end later than it on a loaded machine. */
	return elapsed_ms < timeout_ms * 0.5 ? "early" : "timeout";
}

static double deadline_ms;
static const char *volatile blocked_in = "the semantic";

static void
on_alarm(int sig)
{
	const char *what = blocked_in;

	(void) sig;
	/* write(2) only: the process may be anywhere. */
	if (write(STDOUT_FILENO, "# hang in ", 10) < 0 ||
	    write(STDOUT_FILENO, what, strlen(what)) < 0 ||
	    write(STDOUT_FILENO, "\n", 1) < 0)
		_exit(CF_HANG);
	_exit(CF_HANG);
}

void
cf_deadline_start(void)
{
	struct sigaction sa = {.sa_handler = on_alarm};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	deadline_ms = cf_now_ms() + CF_SEMANTIC_S * 1e3;
	alarm(CF_SEMANTIC_S);
}

void
cf_block_begin(const char *what, int timeout_ms)
{
	blocked_in = what;
	alarm((unsigned) (timeout_ms / 1000 + 4));
}

void
cf_block_end(void)
{
	double left = (deadline_ms - cf_now_ms()) / 1e3;

	blocked_in = "the semantic";
	alarm(left > 1 ? (unsigned) left : 1);
}

/* ------------------------------------------------------------------------
 * The rig.
 */

enum fi_ep_type
cf_ep_type(void)
{
	return strcmp(cf_prov, "tcp") ? FI_EP_RDM : FI_EP_MSG;
}

int
cf_info(enum fi_ep_type type, uint64_t caps, bool thread_safe,
	struct fi_info **info)
{
	struct fi_info *hints = mrlt_hints(cf_prov, type ? type : cf_ep_type(),
					   caps ? caps : FI_MSG | FI_TAGGED);
	int ret;

	if (thread_safe)
		hints->domain_attr->threading = FI_THREAD_SAFE;
	ret = mrlt_getinfo(hints, NULL, NULL, 0, info);
	if (ret)
		cf_out("getinfo(%s): %s", cf_flags(caps, FI_TYPE_CAPS),
		       cf_rc(ret));
	return ret;
}

int
cf_domain_open(struct fi_info *info, struct mrlt_domain *d)
{
	void *ops = NULL;
	int ret;

	ret = mrlt_domain_open(info, d);
	if (ret) {
		cf_out("domain: %s", cf_rc(ret));
		return ret;
	}
	cf_name(d->fabric, 0, "fabric");
	cf_name(d->domain, 0, "domain");
	ret = fi_open_ops(&d->domain->fid, FI_MRLEASE_OPS_1, 0, &ops, NULL);
	cf_out("@hook %d", ret == 0);
	return 0;
}

int
cf_setup_failed(int ret)
{
	return cf_unsupported(ret) ? CF_DONE : CF_BROKEN;
}

#define TRY(what, expr)                                              \
	do {                                                         \
		ssize_t try_rc_ = (ssize_t) (expr);                  \
		if (try_rc_ < 0) {                                   \
			cf_out("rig: %s: %s", what, cf_rc(try_rc_)); \
			return (int) try_rc_;                        \
		}                                                    \
	} while (0)

static void
name_indexed(const void *p, const char *base, int i)
{
	char n[32];

	snprintf(n, sizeof(n), "%s%d", base, i);
	cf_name(p, 0, n);
}

/* CQ and counters of one side: companions open before the endpoint, so
 * the tracked fids close endpoint first. */
static int
open_companions(struct cf_rig *r, const struct cf_opts *o, int i)
{
	struct fi_cq_attr cq = o->cq;
	struct fi_cntr_attr cntr = o->cntr;

	if (!cq.format)
		cq.format = FI_CQ_FORMAT_TAGGED;
	if (r->ws) {
		cq.wait_obj = cntr.wait_obj = FI_WAIT_SET;
		cq.wait_set = cntr.wait_set = r->ws;
	}
	TRY("fi_cq_open",
	    fi_cq_open(r->d.domain, &cq, &r->cq[i], &r->ctx_cq[i]));
	mrlt_track_fid(&r->cq[i]->fid);
	name_indexed(r->cq[i], "cq", i);
	name_indexed(&r->ctx_cq[i], "ctx_cq", i);
	if (o->cntrs) {
		if (!cntr.events)
			cntr.events = FI_CNTR_EVENTS_COMP;
		TRY("fi_cntr_open",
		    fi_cntr_open(r->d.domain, &cntr, &r->tx[i], &r->ctx_tx[i]));
		mrlt_track_fid(&r->tx[i]->fid);
		TRY("fi_cntr_open",
		    fi_cntr_open(r->d.domain, &cntr, &r->rx[i], &r->ctx_rx[i]));
		mrlt_track_fid(&r->rx[i]->fid);
		name_indexed(r->tx[i], "tx", i);
		name_indexed(r->rx[i], "rx", i);
		name_indexed(&r->ctx_tx[i], "ctx_tx", i);
		name_indexed(&r->ctx_rx[i], "ctx_rx", i);
	}
	return 0;
}

static int
bind_companions(struct cf_rig *r, const struct cf_opts *o, int i)
{
	TRY("fi_ep_bind(cq)", fi_ep_bind(r->ep[i], &r->cq[i]->fid,
					 FI_TRANSMIT | FI_RECV | o->cq_bind));
	if (o->cntrs) {
		TRY("fi_ep_bind(tx)", fi_ep_bind(r->ep[i], &r->tx[i]->fid,
						 FI_SEND | FI_WRITE | FI_READ));
		TRY("fi_ep_bind(rx)",
		    fi_ep_bind(r->ep[i], &r->rx[i]->fid, FI_RECV));
	}
	return 0;
}

static int
rdm_side_open(struct cf_rig *r, const struct cf_opts *o, int i)
{
	struct fi_av_attr av = {.type = r->d.info->domain_attr->av_type};
	int ret;

	ret = open_companions(r, o, i);
	if (ret)
		return ret;
	TRY("fi_av_open",
	    fi_av_open(r->d.domain, &av, &r->av[i], &r->ctx_av[i]));
	mrlt_track_fid(&r->av[i]->fid);
	name_indexed(r->av[i], "av", i);
	name_indexed(&r->ctx_av[i], "ctx_av", i);
	TRY("fi_endpoint",
	    fi_endpoint(r->d.domain, r->d.info, &r->ep[i], &r->ctx_ep[i]));
	mrlt_track_fid(&r->ep[i]->fid);
	name_indexed(r->ep[i], "ep", i);
	name_indexed(&r->ctx_ep[i], "ctx_ep", i);
	ret = bind_companions(r, o, i);
	if (ret)
		return ret;
	TRY("fi_ep_bind(av)", fi_ep_bind(r->ep[i], &r->av[i]->fid, 0));
	if (r->d.info->addr_format == FI_ADDR_STR)
		TRY("fi_setname", mrlt_set_shm_name(r->ep[i], "conform"));
	TRY("fi_enable", fi_enable(r->ep[i]));
	r->namelen[i] = sizeof(r->name[i]);
	TRY("fi_getname",
	    fi_getname(&r->ep[i]->fid, r->name[i], &r->namelen[i]));
	return 0;
}

static int
rdm_open(struct cf_rig *r, const struct cf_opts *o)
{
	int ret;

	for (int i = 0; i < 2; i++) {
		ret = rdm_side_open(r, o, i);
		if (ret)
			return ret;
		r->peer[i] = FI_ADDR_UNSPEC;
	}
	if (o->no_connect)
		return 0;
	for (int i = 0; i < 2; i++) {
		TRY("fi_av_insert", fi_av_insert(r->av[i], r->name[!i], 1,
						 &r->peer[i], 0, NULL));
	}
	cf_name_addr(r->peer[0], "addr_ep1");
	cf_name_addr(r->peer[1], "addr_ep0");
	return 0;
}

static int
msg_side_open(struct cf_rig *r, const struct cf_opts *o, int i,
	      struct fi_info *info)
{
	struct fi_eq_attr eq = {.wait_obj = FI_WAIT_UNSPEC};
	int ret;

	TRY("fi_eq_open", fi_eq_open(r->d.fabric, &eq, &r->eq[i], NULL));
	mrlt_track_fid(&r->eq[i]->fid);
	name_indexed(r->eq[i], "eq", i);
	ret = open_companions(r, o, i);
	if (ret)
		return ret;
	TRY("fi_endpoint",
	    fi_endpoint(r->d.domain, info, &r->ep[i], &r->ctx_ep[i]));
	mrlt_track_fid(&r->ep[i]->fid);
	name_indexed(r->ep[i], "ep", i);
	name_indexed(&r->ctx_ep[i], "ctx_ep", i);
	TRY("fi_ep_bind(eq)", fi_ep_bind(r->ep[i], &r->eq[i]->fid, 0));
	ret = bind_companions(r, o, i);
	if (ret)
		return ret;
	TRY("fi_enable", fi_enable(r->ep[i]));
	r->peer[i] = FI_ADDR_UNSPEC;
	return 0;
}

/* One non-blocking read of a CM event: the event, -FI_EAGAIN or an error.
 * What was read is added to log (the sides' events interleave as they
 * please: each side's log is printed in a fixed order). */
static ssize_t
cm_poll(struct fid_eq *eq, char *log, size_t loglen, uint32_t *event,
	struct fi_eq_cm_entry *cm, size_t len)
{
	struct fi_eq_err_entry err = {0};
	ssize_t rc = fi_eq_read(eq, event, cm, len, 0);
	size_t used = strlen(log);

	if (rc == -FI_EAGAIN)
		return rc;
	if (rc == -FI_EAVAIL) {
		rc = fi_eq_readerr(eq, &err, 0);
		snprintf(log + used, loglen - used,
			 " error entry %s fid=%s "
			 "err=%s;",
			 cf_rc(rc), cf_ptr(err.fid), cf_rc(-err.err));
		return -FI_EAVAIL;
	}
	if (rc < 0) {
		snprintf(log + used, loglen - used, " fi_eq_read %s;",
			 cf_rc(rc));
		return rc;
	}
	snprintf(log + used, loglen - used, " %s fid=%s info=%s;",
		 fi_tostr(event, FI_TYPE_EQ_EVENT), cf_ptr(cm->fid),
		 cm->info ? "set" : "NULL");
	return rc;
}

/* The connection's events, side by side, once it is up or failed. */
static void
cm_print(char log[3][256], bool print)
{
	static const char *const side[3] = {"pep", "ep0", "ep1"};

	for (int i = 0; i < 3 && print; i++)
		cf_out("cm %s:%s", side[i], log[i]);
}

static int
msg_open(struct cf_rig *r, const struct cf_opts *o)
{
	struct fi_eq_attr eq = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_info *cli;
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t data[64];
	} ev;
	char addr[128];
	size_t addrlen = sizeof(addr);
	bool up[2] = {false, false};
	char log[3][256] = {"", "", ""};
	uint32_t event;
	double end;
	ssize_t rc;
	int ret;

	TRY("fi_eq_open", fi_eq_open(r->d.fabric, &eq, &r->pep_eq, NULL));
	mrlt_track_fid(&r->pep_eq->fid);
	cf_name(r->pep_eq, 0, "pep_eq");
	TRY("fi_passive_ep",
	    fi_passive_ep(r->d.fabric, r->d.info, &r->pep, NULL));
	mrlt_track_fid(&r->pep->fid);
	cf_name(r->pep, 0, "pep");
	TRY("fi_pep_bind", fi_pep_bind(r->pep, &r->pep_eq->fid, 0));
	TRY("fi_listen", fi_listen(r->pep));
	TRY("fi_getname(pep)", fi_getname(&r->pep->fid, addr, &addrlen));
	cli = mrlt_track_info(fi_dupinfo(r->d.info));
	if (!cli)
		return -FI_ENOMEM;
	free(cli->dest_addr);
	cli->dest_addr = malloc(addrlen);
	if (!cli->dest_addr)
		return -FI_ENOMEM;
	memcpy(cli->dest_addr, addr, addrlen);
	cli->dest_addrlen = addrlen;
	ret = msg_side_open(r, o, 0, cli);
	if (ret)
		return ret;
	TRY("fi_connect", fi_connect(r->ep[0], addr, NULL, 0));

	end = cf_now_ms() + CF_WAIT_S * 1e3;
	while (!(up[0] && up[1]) && cf_now_ms() < end) {
		if (!r->ep[1]) {
			rc = cm_poll(r->pep_eq, log[0], sizeof(log[0]), &event,
				     &ev.cm, sizeof(ev));
			if (rc >= 0 && event == FI_CONNREQ) {
				mrlt_track_info(ev.cm.info);
				ret = msg_side_open(r, o, 1, ev.cm.info);
				if (ret)
					return ret;
				TRY("fi_accept", fi_accept(r->ep[1], NULL, 0));
			} else if (rc != -FI_EAGAIN) {
				cm_print(log, true);
				return rc < 0 ? (int) rc : -FI_EOTHER;
			}
		}
		for (int i = 0; i < 2; i++) {
			if (up[i] || !r->ep[i])
				continue;
			rc = cm_poll(r->eq[i], log[i + 1], sizeof(log[i + 1]),
				     &event, &ev.cm, sizeof(ev));
			if (rc >= 0 && event == FI_CONNECTED) {
				up[i] = true;
			} else if (rc != -FI_EAGAIN) {
				cm_print(log, true);
				return rc < 0 ? (int) rc : -FI_EOTHER;
			}
		}
	}
	cm_print(log, o->cm_log || !(up[0] && up[1]));
	if (!(up[0] && up[1])) {
		cf_out("rig: not connected within %.0f s", CF_WAIT_S);
		return -FI_ETIMEDOUT;
	}
	return 0;
}

int
cf_rig_open(struct cf_rig *r, const struct cf_opts *o)
{
	struct fi_info *info;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = cf_info(o->ep_type, o->caps, o->thread_safe, &info);
	if (ret)
		return ret;
	ret = cf_domain_open(info, &r->d);
	if (ret)
		return ret;
	r->msg = info->ep_attr->type == FI_EP_MSG;
	if (o->wait_set) {
		struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};

		ret = fi_wait_open(r->d.fabric, &wattr, &r->ws);
		cf_out("fi_wait_open: %s", cf_rc(ret));
		if (ret)
			return ret;
		mrlt_track_fid(&r->ws->fid);
		cf_name(r->ws, 0, "ws");
	}
	return r->msg ? msg_open(r, o) : rdm_open(r, o);
}

void
cf_progress(struct cf_rig *r)
{
	for (int i = 0; i < 2; i++) {
		if (r->cq[i])
			(void) fi_cq_read(r->cq[i], NULL, 0);
		if (r->tx[i])
			(void) fi_cntr_read(r->tx[i]);
		if (r->rx[i])
			(void) fi_cntr_read(r->rx[i]);
	}
	/* Every wait loop comes through here: other runs share the CPUs. */
	sched_yield();
}

ssize_t
cf_reap(struct cf_rig *r, int side, struct fi_cq_tagged_entry *e,
	fi_addr_t *src)
{
	double end = cf_now_ms() + CF_WAIT_S * 1e3;
	ssize_t rc;

	do {
		rc = src ? fi_cq_readfrom(r->cq[side], e, 1, src) :
			   fi_cq_read(r->cq[side], e, 1);
		if (rc != -FI_EAGAIN)
			return rc;
		if (r->cq[!side])
			(void) fi_cq_read(r->cq[!side], NULL, 0);
		sched_yield();
	} while (cf_now_ms() < end);
	return rc;
}

void
cf_print_cqe(const char *what, const struct fi_cq_tagged_entry *e)
{
	char more[200] = "";

	/* fi_cq(3): len, buf, data and tag describe received data;
	 * a send's entry carries its context and flags. */
	if (e->flags & FI_RECV) {
		snprintf(more, sizeof(more), " len=%zu buf=%s", e->len,
			 cf_ptr(e->buf));
		if (e->flags & FI_REMOTE_CQ_DATA)
			snprintf(more + strlen(more),
				 sizeof(more) - strlen(more), " data=%#llx",
				 (unsigned long long) e->data);
		if (e->flags & FI_TAGGED)
			snprintf(more + strlen(more),
				 sizeof(more) - strlen(more), " tag=%#llx",
				 (unsigned long long) e->tag);
	}
	cf_out("%s: ctx=%s flags=%s%s", what, cf_ptr(e->op_context),
	       cf_flags(e->flags, FI_TYPE_CQ_EVENT_FLAGS), more);
}

void
cf_print_cqerr(const char *what, struct fid_cq *cq)
{
	struct fi_cq_err_entry err;
	char buf[256] = "";
	const char *s;
	ssize_t rc;

	memset(&err, 0, sizeof(err));
	rc = fi_cq_readerr(cq, &err, 0);
	if (rc < 0) {
		cf_out("%s: fi_cq_readerr %s", what, cf_rc(rc));
		return;
	}
	cf_out("%s: fi_cq_readerr %s ctx=%s flags=%s err=%s olen=%zu", what,
	       cf_rc(rc), cf_ptr(err.op_context),
	       cf_flags(err.flags, FI_TYPE_CQ_EVENT_FLAGS), cf_rc(-err.err),
	       err.olen);
	cf_out("%s: prov_errno=%d err_data=%s", what, err.prov_errno,
	       err.err_data_size ? "set" : "none");
	s = fi_cq_strerror(cq, err.prov_errno, err.err_data, buf, sizeof(buf));
	cf_out("%s: fi_cq_strerror %s \"%s\"", what,
	       s == buf ? "=buf" :
	       s	? "other" :
			  "NULL",
	       s ? s : "");
}

void
cf_post_recv_send(struct cf_rig *r, void *rbuf, const void *sbuf, size_t len,
		  struct fi_context2 *rctx, struct fi_context2 *sctx)
{
	cf_out("recv: %s", cf_rc(CF_POST(r, fi_recv(r->ep[1], rbuf, len, NULL,
						    r->peer[1], rctx))));
	cf_out("send: %s", cf_rc(CF_POST(r, fi_send(r->ep[0], sbuf, len, NULL,
						    r->peer[0], sctx))));
}

void
cf_reap_print(struct cf_rig *r, int side, const char *what, bool from)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src = 0;
	ssize_t rc;

	memset(&e, 0, sizeof(e));
	rc = cf_reap(r, side, &e, from ? &src : NULL);
	if (rc == 1) {
		cf_print_cqe(what, &e);
		if (from)
			cf_out("%s: src=%s", what, cf_addr(src));
	} else if (rc == -FI_EAVAIL) {
		cf_out("%s: %s", what, cf_rc(rc));
		cf_print_cqerr(what, r->cq[side]);
	} else {
		cf_out("%s: %s", what, cf_rc(rc));
	}
}

bool
cf_wait_started(atomic_int *started)
{
	double end = cf_now_ms() + CF_WAIT_S * 1e3;

	while (!atomic_load(started) && cf_now_ms() < end)
		sched_yield();
	return atomic_load(started);
}

uint64_t
cf_cntr_until(struct cf_rig *r, struct fid_cntr *cntr, uint64_t value)
{
	double end = cf_now_ms() + CF_WAIT_S * 1e3;
	uint64_t v;

	while ((v = fi_cntr_read(cntr)) < value && cf_now_ms() < end)
		cf_progress(r);
	return v;
}

void
cf_close_all(void)
{
	cf_out("close: %s", cf_rc(mrlt_close_all()));
}
