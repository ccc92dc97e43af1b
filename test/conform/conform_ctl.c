/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo's answer, counters (fi_cntr(3)), address vectors (fi_av(3))
 * and endpoint options (fi_endpoint(3)).
 */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"

/*
 * fi_getinfo(3): what the provider grants an application. The hook
 * passes the answer through (no capability, mode or limit changes).
 */
int
cf_info_attrs(void)
{
	struct fi_info *info;
	struct mrlt_domain d;
	struct fi_domain_attr *da;
	struct fi_ep_attr *ea;
	int ret;

	ret = cf_info(0, FI_MSG | FI_TAGGED | FI_RMA, false, &info);
	if (ret == -FI_ENODATA)
		ret = cf_info(0, FI_MSG | FI_TAGGED, false, &info);
	if (ret)
		return cf_setup_failed(ret);
	da = info->domain_attr;
	ea = info->ep_attr;
	cf_out("prov %s ep_type %s", info->fabric_attr->prov_name,
	       fi_tostr(&ea->type, FI_TYPE_EP_TYPE));
	cf_out("caps %s", cf_flags(info->caps, FI_TYPE_CAPS));
	cf_out("mode %s", cf_flags(info->mode, FI_TYPE_MODE));
	cf_out("addr_format %s",
	       fi_tostr(&info->addr_format, FI_TYPE_ADDR_FORMAT));
	cf_out("mr_mode %s", cf_flags((uint64_t) da->mr_mode, FI_TYPE_MR_MODE));
	cf_out("threading %s control %s data %s",
	       fi_tostr(&da->threading, FI_TYPE_THREADING),
	       fi_tostr(&da->control_progress, FI_TYPE_PROGRESS),
	       fi_tostr(&da->data_progress, FI_TYPE_PROGRESS));
	cf_out("av_type %s mr_key_size %zu cq_data_size %zu mr_iov_limit %zu",
	       fi_tostr(&da->av_type, FI_TYPE_AV_TYPE), da->mr_key_size,
	       da->cq_data_size, da->mr_iov_limit);
	cf_out("max_msg_size %zu msg_prefix_size %zu", ea->max_msg_size,
	       ea->msg_prefix_size);
	cf_out("tx caps %s op_flags %s inject %zu iov_limit %zu",
	       cf_flags(info->tx_attr->caps, FI_TYPE_CAPS),
	       cf_flags(info->tx_attr->op_flags, FI_TYPE_OP_FLAGS),
	       info->tx_attr->inject_size, info->tx_attr->iov_limit);
	cf_out("rx caps %s op_flags %s iov_limit %zu",
	       cf_flags(info->rx_attr->caps, FI_TYPE_CAPS),
	       cf_flags(info->rx_attr->op_flags, FI_TYPE_OP_FLAGS),
	       info->rx_attr->iov_limit);
	/* The hook wraps what is opened from the answer. */
	if (cf_domain_open(info, &d))
		return CF_BROKEN;
	cf_close_all();
	return CF_DONE;
}

/* A thread blocked in fi_cntr_wait. */
struct cntr_waiter {
	struct fid_cntr *cntr;
	uint64_t threshold;
	int timeout_ms;
	atomic_int started;
	int rc;
	double elapsed_ms;
};

static void *
cntr_waiter_main(void *arg)
{
	struct cntr_waiter *w = arg;
	double t0;

	atomic_store(&w->started, 1);
	t0 = cf_now_ms();
	w->rc = fi_cntr_wait(w->cntr, w->threshold, w->timeout_ms);
	w->elapsed_ms = cf_now_ms() - t0;
	return NULL;
}

/* Run a waiter for threshold and, once it runs, act(cntr, value). */
static void
cntr_wake(struct fid_cntr *cntr, uint64_t threshold,
	  int (*act)(struct fid_cntr *, uint64_t), uint64_t value,
	  const char *what)
{
	struct cntr_waiter w = {.cntr = cntr,
				.threshold = threshold,
				.timeout_ms = 3000};
	pthread_t thread;

	if (pthread_create(&thread, NULL, cntr_waiter_main, &w)) {
		cf_out("%s: pthread_create failed", what);
		return;
	}
	cf_wait_started(&w.started);
	cf_out("%s: %s", what, cf_rc(act(cntr, value)));
	CF_BLOCKING("a thread in fi_cntr_wait", 3000,
		    pthread_join(thread, NULL));
	cf_out("%s: wait %s %s", what, cf_rc(w.rc),
	       cf_timing(w.elapsed_ms, 3000));
}

static void
cntr_print(struct fid_cntr *c, const char *what)
{
	cf_out("%s: value %llu errors %llu", what,
	       (unsigned long long) fi_cntr_read(c),
	       (unsigned long long) fi_cntr_readerr(c));
}

/*
 * fi_cntr(3): counters count what the application adds and sets, errors
 * apart; counters bound to an endpoint count its completions (cf_cntr).
 * fi_cntr_wait returns at the threshold, -FI_ETIMEDOUT after its timeout,
 * and wakes when the counter moves (cf_cntr_wait): apart, so that a
 * provider whose waits hang (shm) is still compared on the rest.
 */
static int
cntr_semantic(bool waits)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_UNSPEC};
	struct cf_opts o = {.cntrs = true, .thread_safe = true};
	struct fi_context2 ctx[2];
	struct fid_cntr *c;
	struct cf_rig r;
	char *sbuf, *rbuf, ctx_c;
	double t0;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	ret = fi_cntr_open(r.d.domain, &attr, &c, &ctx_c);
	cf_out("fi_cntr_open: %s", cf_rc(ret));
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&c->fid);
	cf_name(c, 0, "cntr");
	cf_name(&ctx_c, 1, "ctx_cntr");
	if (waits)
		goto waits;
	cf_out("context: %s", cf_ptr(c->fid.context));
	cntr_print(c, "opened");
	cf_out("add 5: %s", cf_rc(fi_cntr_add(c, 5)));
	cntr_print(c, "after add");
	cf_out("set 2: %s", cf_rc(fi_cntr_set(c, 2)));
	cntr_print(c, "after set");
	cf_out("adderr 1: %s", cf_rc(fi_cntr_adderr(c, 1)));
	cntr_print(c, "after adderr");
	cf_out("seterr 7: %s", cf_rc(fi_cntr_seterr(c, 7)));
	cntr_print(c, "after seterr");

	/* Counters of an endpoint's operations. */
	sbuf = mrlt_alloc(4096);
	rbuf = mrlt_alloc(4096);
	cf_name(&ctx[0], sizeof(ctx[0]), "ctx0");
	cf_name(&ctx[1], sizeof(ctx[1]), "ctx1");
	cf_post_recv_send(&r, rbuf, sbuf, 4096, &ctx[0], &ctx[1]);
	cf_out("rx1: %llu", (unsigned long long) cf_cntr_until(&r, r.rx[1], 1));
	cf_out("tx0: %llu", (unsigned long long) cf_cntr_until(&r, r.tx[0], 1));
	cf_reap_print(&r, 1, "recv", false);
	cf_reap_print(&r, 0, "send", false);
	cntr_print(r.tx[0], "tx0");
	cntr_print(r.rx[1], "rx1");
	cntr_print(r.tx[1], "tx1");
	cntr_print(r.rx[0], "rx0");
	cf_close_all();
	return CF_DONE;

waits:
	cf_out("set 2: %s", cf_rc(fi_cntr_set(c, 2)));
	cf_out("wait 2: %s", cf_rc(CF_BLOCKING("fi_cntr_wait", 1000,
					       fi_cntr_wait(c, 2, 1000))));
	t0 = cf_now_ms();
	ret = CF_BLOCKING("fi_cntr_wait", 150, fi_cntr_wait(c, 10, 150));
	cf_out("wait 10 (150 ms): %s %s", cf_rc(ret),
	       cf_timing(cf_now_ms() - t0, 150));
	cntr_wake(c, 3, fi_cntr_add, 1, "add 1 while waiting for 3");
	/* An error counted before the wait: whether a wait started after it
	 * sees it is the provider's, and must not change with the hook. (One
	 * counted during the wait races with the wait's start.) */
	cf_out("adderr 1: %s", cf_rc(fi_cntr_adderr(c, 1)));
	t0 = cf_now_ms();
	ret = CF_BLOCKING("fi_cntr_wait", 150, fi_cntr_wait(c, 100, 150));
	cf_out("wait 100 (150 ms) after the error: %s %s", cf_rc(ret),
	       cf_timing(cf_now_ms() - t0, 150));
	cf_out("wait 3 with errors: %s",
	       cf_rc(CF_BLOCKING("fi_cntr_wait", 1000,
				 fi_cntr_wait(c, 3, 1000))));
	cf_close_all();
	return CF_DONE;
}

int
cf_cntr(void)
{
	return cntr_semantic(false);
}

int
cf_cntr_wait(void)
{
	return cntr_semantic(true);
}

/* fi_av_straddr's text with its numbers replaced (ports and names differ
 * between runs; the format must not). */
static void
straddr_print(struct fid_av *av, const void *addr, const char *what)
{
	char buf[256], norm[256];
	size_t len = sizeof(buf), j = 0;
	const char *s = fi_av_straddr(av, addr, buf, &len);

	if (!s) {
		cf_out("%s: NULL", what);
		return;
	}
	for (size_t i = 0; s[i] && j + 2 < sizeof(norm); i++) {
		if (isdigit((unsigned char) s[i])) {
			norm[j++] = 'N';
			while (isdigit((unsigned char) s[i + 1]))
				i++;
		} else {
			norm[j++] = s[i];
		}
	}
	norm[j] = '\0';
	cf_out("%s: %s \"%s\" len %s", what, s == buf ? "=buf" : "other", norm,
	       len == strlen(buf) + 1 ? "=strlen+1" : "other");
}

static void
av_lookup_print(struct fid_av *av, fi_addr_t fa, const char *name,
		size_t namelen, size_t room, const char *what)
{
	char buf[256];
	size_t len = room;
	int ret;

	memset(buf, 0, sizeof(buf));
	ret = fi_av_lookup(av, fa, buf, &len);
	cf_out("%s: %s addrlen %s %s", what, cf_rc(ret),
	       len == namelen ? "=name" : "other",
	       ret			   ? "-" :
	       !memcmp(buf, name, namelen) ? "the name" :
					     "another address");
}

/*
 * fi_av(3): insert returns the count inserted and an fi_addr_t per
 * address; lookup gives the address back (and its length when the buffer
 * is too small); remove makes the fi_addr_t unknown; straddr formats it.
 */
int
cf_av(void)
{
	struct cf_opts o = {.no_connect = true};
	struct fi_av_attr attr = {.count = 8};
	fi_addr_t fa[3] = {0, 0, 0};
	struct fid_av *av;
	struct cf_rig r;
	char bogus[256], ctx_av;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	if (r.msg) {
		cf_out("av: no AV on MSG endpoints");
		cf_close_all();
		return CF_DONE;
	}
	attr.type = r.d.info->domain_attr->av_type;
	ret = fi_av_open(r.d.domain, &attr, &av, &ctx_av);
	cf_out("fi_av_open: %s", cf_rc(ret));
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&av->fid);
	cf_name(av, 0, "av");
	cf_name(&ctx_av, 1, "ctx_av");
	/* fi_av(3) gives the AV the application's context, yet providers
	 * built on libfabric's util AV leave fid.context unset: an
	 * application can rely on nothing but "its own or NULL". */
	cf_out("context: %s", av->fid.context == &ctx_av || !av->fid.context ?
				      "the application's or NULL" :
				      cf_ptr(av->fid.context));

	ret = fi_av_insert(av, r.name[0], 1, &fa[0], 0, NULL);
	cf_out("insert ep0: %s%s", cf_rc(ret),
	       attr.type == FI_AV_TABLE ?
		       (fa[0] == 0 ? " fi_addr 0" : " fi_addr other") :
		       "");
	cf_name_addr(fa[0], "fa_ep0");
	ret = fi_av_insert(av, r.name[1], 1, &fa[1], 0, NULL);
	cf_out("insert ep1: %s %s", cf_rc(ret),
	       fa[1] == fa[0] ? "same fi_addr" : "new fi_addr");
	cf_name_addr(fa[1], "fa_ep1");
	av_lookup_print(av, fa[1], r.name[1], r.namelen[1], sizeof(bogus),
			"lookup ep1");
	av_lookup_print(av, fa[1], r.name[1], r.namelen[1], 1,
			"lookup ep1, 1-byte buffer");
	straddr_print(av, r.name[1], "straddr ep1");
	ret = fi_av_remove(av, &fa[1], 1, 0);
	cf_out("remove ep1: %s", cf_rc(ret));
	av_lookup_print(av, fa[1], r.name[1], r.namelen[1], sizeof(bogus),
			"lookup removed");
	av_lookup_print(av, fa[0], r.name[0], r.namelen[0], sizeof(bogus),
			"lookup ep0 after");
	memset(bogus, 0, sizeof(bogus));
	fa[2] = 0;
	ret = fi_av_insert(av, bogus, 1, &fa[2], 0, NULL);
	cf_out("insert zeroed address: %s %s", cf_rc(ret), cf_addr(fa[2]));
	ret = fi_av_insert(av, r.name[1], 1, &fa[1], 0, NULL);
	cf_out("insert ep1 again: %s", cf_rc(ret));
	cf_close_all();
	return CF_DONE;
}

/* A non-blocking read of eq repeated for 2 s (this semantic is about the
 * events, not about blocking reads; on loopback they come at once, when
 * the provider gives them). */
static ssize_t
eq_poll(struct fid_eq *eq, uint32_t *event, struct fi_eq_entry *e)
{
	double end = cf_now_ms() + 2e3;
	ssize_t rc;

	while ((rc = fi_eq_read(eq, event, e, sizeof(*e), 0)) == -FI_EAGAIN &&
	       cf_now_ms() < end)
		sched_yield();
	return rc;
}

/*
 * fi_av(3) with FI_EVENT: an insert returns 0 at once and completes on the
 * bound EQ with FI_AV_COMPLETE naming the AV, the insert's context and
 * the count inserted; an address that fails is an error entry whose data
 * is its index.
 */
int
cf_av_event(void)
{
	struct cf_opts o = {.no_connect = true};
	struct fi_eq_attr eattr = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
	struct fi_av_attr attr = {.count = 8, .flags = FI_EVENT};
	struct fi_eq_err_entry err;
	struct fi_eq_entry e;
	struct fi_context2 ctx[2];
	fi_addr_t fa[2] = {0, 0};
	char names[2][256];
	struct fid_av *av;
	struct fid_eq *eq;
	struct cf_rig r;
	uint32_t event;
	char ctx_av;
	ssize_t rc;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	if (r.msg) {
		cf_out("av_event: no AV on MSG endpoints");
		cf_close_all();
		return CF_DONE;
	}
	cf_name(&ctx[0], sizeof(ctx[0]), "ctx0");
	cf_name(&ctx[1], sizeof(ctx[1]), "ctx1");
	ret = fi_eq_open(r.d.fabric, &eattr, &eq, NULL);
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&eq->fid);
	cf_name(eq, 0, "eq");
	attr.type = r.d.info->domain_attr->av_type;
	ret = fi_av_open(r.d.domain, &attr, &av, &ctx_av);
	cf_out("fi_av_open(FI_EVENT): %s", cf_rc(ret));
	if (ret)
		goto out;
	mrlt_track_fid(&av->fid);
	cf_name(av, 0, "av");
	cf_name(&ctx_av, 1, "ctx_av");
	cf_out("insert before the bind: %s",
	       cf_rc(fi_av_insert(av, r.name[0], 1, &fa[0], 0, &ctx[0])));
	ret = fi_av_bind(av, &eq->fid, 0);
	cf_out("fi_av_bind: %s", cf_rc(ret));
	if (ret)
		goto out;
	cf_out("insert: %s",
	       cf_rc(fi_av_insert(av, r.name[1], 1, &fa[1], 0, &ctx[0])));
	rc = eq_poll(eq, &event, &e);
	if (rc < 0)
		cf_out("event: %s", cf_rc(rc));
	else
		cf_out("event: %s %s fid=%s ctx=%s data=%llu", cf_rc(rc),
		       fi_tostr(&event, FI_TYPE_EQ_EVENT), cf_ptr(e.fid),
		       cf_ptr(e.context), (unsigned long long) e.data);
	cf_out("fi_addr: %s",
	       fa[1] == FI_ADDR_NOTAVAIL ? "FI_ADDR_NOTAVAIL" : "set");

	/* Two addresses, the second no peer's. */
	memcpy(names[0], r.name[0], r.namelen[0]);
	memset(names[1], 0, r.namelen[0]);
	cf_out("insert 2: %s",
	       cf_rc(fi_av_insert(av, names, 2, fa, 0, &ctx[1])));
	for (int i = 0; i < 3; i++) {
		memset(&e, 0, sizeof(e));
		rc = eq_poll(eq, &event, &e);
		if (rc == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			rc = fi_eq_readerr(eq, &err, 0);
			cf_out("error: %s fid=%s ctx=%s data=%llu err=%s",
			       cf_rc(rc), cf_ptr(err.fid), cf_ptr(err.context),
			       (unsigned long long) err.data, cf_rc(-err.err));
			continue;
		}
		if (rc < 0) {
			cf_out("event: %s", cf_rc(rc));
			break;
		}
		cf_out("event: %s %s fid=%s ctx=%s data=%llu", cf_rc(rc),
		       fi_tostr(&event, FI_TYPE_EQ_EVENT), cf_ptr(e.fid),
		       cf_ptr(e.context), (unsigned long long) e.data);
		if (event == FI_AV_COMPLETE)
			break;
	}
	cf_out("fi_addr[1]: %s",
	       fa[1] == FI_ADDR_NOTAVAIL ? "FI_ADDR_NOTAVAIL" : "set");
out:
	cf_close_all();
	return CF_DONE;
}

static const struct {
	int name;
	const char *text;
} opts[] = {
	{FI_OPT_MIN_MULTI_RECV, "MIN_MULTI_RECV"},
	{FI_OPT_CM_DATA_SIZE, "CM_DATA_SIZE"},
	{FI_OPT_BUFFERED_MIN, "BUFFERED_MIN"},
	{FI_OPT_BUFFERED_LIMIT, "BUFFERED_LIMIT"},
	{FI_OPT_SEND_BUF_SIZE, "SEND_BUF_SIZE"},
	{FI_OPT_RECV_BUF_SIZE, "RECV_BUF_SIZE"},
	{FI_OPT_TX_SIZE, "TX_SIZE"},
	{FI_OPT_RX_SIZE, "RX_SIZE"},
};

static void
getopts_print(struct fid_ep *ep, const char *when)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		size_t v = 0xdead, len = sizeof(v);
		int ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, opts[i].name, &v,
				    &len);

		if (ret)
			cf_out("%s getopt %s: %s", when, opts[i].text,
			       cf_rc(ret));
		else
			cf_out("%s getopt %s: 0 len %zu value %zu", when,
			       opts[i].text, len, v);
	}
}

static void
setopt_print(struct fid_ep *ep, int name, const char *text, size_t v,
	     const char *when)
{
	int ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, name, &v, sizeof(v));
	size_t back = 0xdead, len = sizeof(back);

	cf_out("%s setopt %s %zu: %s", when, text, v, cf_rc(ret));
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, name, &back, &len);
	cf_out("%s getopt %s: %s %zu", when, text, cf_rc(ret), ret ? 0 : back);
}

/*
 * fi_endpoint(3): fi_getopt/fi_setopt before and after fi_enable (what a
 * provider allows when is its own, and the same through the hook); too
 * small a buffer, an unknown option or level; FI_GETOPSFLAG and
 * FI_SETOPSFLAG. Two semantics, so that a provider that fails one part
 * (shm's fi_getopt before fi_enable) is still compared on the other.
 */
static int
ep_opt(bool before)
{
	struct cf_opts o = {0};
	struct fi_eq_attr eattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cattr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr aattr = {0};
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_eq *eq;
	struct cf_rig r;
	uint64_t flags;
	size_t v, len;
	int ret;

	ret = cf_rig_open(&r, &o);
	if (ret)
		return cf_setup_failed(ret);
	ret = fi_cq_open(r.d.domain, &cattr, &cq, NULL);
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&cq->fid);
	if (!r.msg) {
		aattr.type = r.d.info->domain_attr->av_type;
		if (fi_av_open(r.d.domain, &aattr, &av, NULL))
			return CF_BROKEN;
		mrlt_track_fid(&av->fid);
	} else {
		if (fi_eq_open(r.d.fabric, &eattr, &eq, NULL))
			return CF_BROKEN;
		mrlt_track_fid(&eq->fid);
	}
	ret = fi_endpoint(r.d.domain, r.d.info, &ep, NULL);
	cf_out("fi_endpoint: %s", cf_rc(ret));
	if (ret)
		return CF_BROKEN;
	mrlt_track_fid(&ep->fid);
	if (!before)
		goto enable;
	getopts_print(ep, "before enable");
	setopt_print(ep, FI_OPT_MIN_MULTI_RECV, "MIN_MULTI_RECV", 1024,
		     "before enable");
	setopt_print(ep, FI_OPT_BUFFERED_LIMIT, "BUFFERED_LIMIT", 4096,
		     "before enable");
	v = 0xdead;
	len = 1;
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v,
			&len);
	cf_out("getopt 1-byte buffer: %s len %zu", cf_rc(ret), len);
	len = sizeof(v);
	cf_out("getopt unknown name: %s",
	       cf_rc(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, 4242, &v, &len)));
	len = sizeof(v);
	cf_out("getopt unknown level: %s",
	       cf_rc(fi_getopt(&ep->fid, 42, FI_OPT_MIN_MULTI_RECV, &v, &len)));
	cf_out("setopt unknown name: %s",
	       cf_rc(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, 4242, &v,
			       sizeof(v))));
	flags = FI_TRANSMIT;
	ret = fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
	cf_out("FI_GETOPSFLAG tx: %s %s", cf_rc(ret),
	       ret ? "-" : cf_flags(flags, FI_TYPE_OP_FLAGS));
	flags = FI_TRANSMIT | FI_COMPLETION;
	cf_out("FI_SETOPSFLAG tx: %s",
	       cf_rc(fi_control(&ep->fid, FI_SETOPSFLAG, &flags)));
	flags = FI_TRANSMIT;
	ret = fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
	cf_out("FI_GETOPSFLAG tx after: %s %s", cf_rc(ret),
	       ret ? "-" : cf_flags(flags, FI_TYPE_OP_FLAGS));
	flags = FI_RECV;
	ret = fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
	cf_out("FI_GETOPSFLAG rx: %s %s", cf_rc(ret),
	       ret ? "-" : cf_flags(flags, FI_TYPE_OP_FLAGS));
	/* Enabled before it closes: tcp;ofi_rxm fails to close an endpoint
	 * that never was. */
	before = true;

enable:
	cf_out("bind cq: %s",
	       cf_rc(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)));
	if (!r.msg) {
		cf_out("bind av: %s", cf_rc(fi_ep_bind(ep, &av->fid, 0)));
		if (r.d.info->addr_format == FI_ADDR_STR) {
			cf_out("fi_setname: %s",
			       cf_rc(mrlt_set_shm_name(ep, "conform-opt")));
		}
		cf_out("enable: %s", cf_rc(fi_enable(ep)));
		if (before)
			goto out;
		getopts_print(ep, "after enable");
		setopt_print(ep, FI_OPT_MIN_MULTI_RECV, "MIN_MULTI_RECV", 2048,
			     "after enable");
		setopt_print(ep, FI_OPT_BUFFERED_LIMIT, "BUFFERED_LIMIT", 8192,
			     "after enable");
	} else {
		cf_out("bind eq: %s", cf_rc(fi_ep_bind(ep, &eq->fid, 0)));
	}
	if (before)
		goto out;
	/* The rig's endpoints, enabled and connected. */
	getopts_print(r.ep[0], "connected");
	setopt_print(r.ep[0], FI_OPT_MIN_MULTI_RECV, "MIN_MULTI_RECV", 512,
		     "connected");
out:
	cf_close_all();
	return CF_DONE;
}

int
cf_ep_opt_before(void)
{
	return ep_opt(true);
}

int
cf_ep_opt(void)
{
	return ep_opt(false);
}
