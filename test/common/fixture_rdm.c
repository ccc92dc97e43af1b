/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "fixture_rdm.h"

#define FAIL(...) mrlt_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Run a libfabric call inside a tracked helper: on error record it and
 * return. */
#define TRY(expr)                                              \
	do {                                                   \
		long long try_rc_ = (long long) (expr);        \
		if (try_rc_ < 0) {                             \
			FAIL("%s = %lld (%s)", #expr, try_rc_, \
			     fi_strerror((int) -try_rc_));     \
			return (int) try_rc_;                  \
		}                                              \
	} while (0)

/* A step of an untracked helper: on error say which call failed (stderr, a
 * '#' line in the TAP log) and leave through `label`, which undoes. */
#define STEP(expr, label)                                               \
	do {                                                            \
		ret = (int) (expr);                                     \
		if (ret < 0) {                                          \
			fprintf(stderr, "# %s = %d (%s)\n", #expr, ret, \
				fi_strerror(-ret));                     \
			goto label;                                     \
		}                                                       \
	} while (0)

/* ------------------------------------------------------------------------
 * The steps both shapes of pair are built from: untracked, returning a
 * negative fi_errno and leaving nothing open on failure.
 */

/* fi_getinfo keeping the first result whose prov_name is exactly the hinted
 * one, preferring FI_SOCKADDR_IN; *info is a copy of it alone. */
static int
info_pick(const struct fi_info *hints, const char *node, const char *service,
	  uint64_t flags, struct fi_info **info)
{
	struct fi_info *list = NULL, *cur, *pick = NULL;
	const char *want = hints->fabric_attr->prov_name;
	int ret;

	*info = NULL;
	ret = fi_getinfo(MRLT_FI_VERSION, node, service, flags, hints, &list);
	if (ret)
		return ret;
	for (cur = list; cur; cur = cur->next) {
		if (want && strcmp(cur->fabric_attr->prov_name, want))
			continue;
		if (!pick || (pick->addr_format != FI_SOCKADDR_IN &&
			      cur->addr_format == FI_SOCKADDR_IN))
			pick = cur;
	}
	if (pick)
		*info = fi_dupinfo(pick);
	fi_freeinfo(list);
	if (!pick)
		return -FI_ENODATA;
	return *info ? 0 : -FI_ENOMEM;
}

static int
fabric_domain_open(struct fi_info *info, struct fid_fabric **fabric,
		   struct fid_domain **domain)
{
	int ret;

	*domain = NULL;
	STEP(fi_fabric(info->fabric_attr, fabric, NULL), err);
	STEP(fi_domain(*fabric, info, domain, NULL), err_fabric);
	return 0;
err_fabric:
	fi_close(&(*fabric)->fid);
err:
	*fabric = NULL;
	return ret;
}

/* What an endpoint is bound to: an AV, a CQ (with its flags) and up to four
 * counters (each with the events it counts). NULL members are skipped. */
struct ep_binds {
	struct fid_av *av;
	struct fid_cq *cq;
	uint64_t cq_flags;
	struct {
		struct fid_cntr *cntr;
		uint64_t flags;
	} cntr[4];
	size_t min_multi_recv; /* FI_OPT_MIN_MULTI_RECV when non-zero */
};

int
mrlt_set_shm_name(struct fid_ep *ep, const char *tag)
{
	static atomic_uint serial;
	const char *scheme = "fi_shm://";
	char name[96];

	snprintf(name, sizeof(name), "%s%s-%d-%u", scheme, tag, (int) getpid(),
		 atomic_fetch_add(&serial, 1));
	shm_unlink(name + strlen(scheme));
	mrlt_shm_remember(name + strlen(scheme));
	return fi_setname(&ep->fid, name, strlen(name) + 1);
}

/* An endpoint bound as b says (a name of its own under FI_ADDR_STR),
 * enabled, and its name in name (*namelen: in, the buffer's size). */
static int
ep_open(struct fid_domain *domain, struct fi_info *info,
	const struct ep_binds *b, void *ctx, struct fid_ep **ep, void *name,
	size_t *namelen)
{
	int ret;

	STEP(fi_endpoint(domain, info, ep, ctx), err);
	if (b->cq)
		STEP(fi_ep_bind(*ep, &b->cq->fid, b->cq_flags), err_ep);
	STEP(fi_ep_bind(*ep, &b->av->fid, 0), err_ep);
	for (size_t i = 0; i < sizeof(b->cntr) / sizeof(b->cntr[0]); i++)
		if (b->cntr[i].cntr)
			STEP(fi_ep_bind(*ep, &b->cntr[i].cntr->fid,
					b->cntr[i].flags),
			     err_ep);
	if (info->addr_format == FI_ADDR_STR)
		STEP(mrlt_set_shm_name(*ep, "mrltest"), err_ep);
	/* FI_OPT_MIN_MULTI_RECV: before fi_enable where the provider takes
	 * it there (fi_endpoint(3) recommends it; libfabric 2.x's rxm sizes
	 * its receive queue then and ignores a later value), after it
	 * everywhere (libfabric 1.17's shm faults on it before). */
	if (b->min_multi_recv &&
	    strstr(info->fabric_attr->prov_name, "ofi_rxm"))
		STEP(fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &b->min_multi_recv,
			       sizeof(b->min_multi_recv)),
		     err_ep);
	STEP(fi_enable(*ep), err_ep);
	if (b->min_multi_recv)
		STEP(fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &b->min_multi_recv,
			       sizeof(b->min_multi_recv)),
		     err_ep);
	STEP(fi_getname(&(*ep)->fid, name, namelen), err_ep);
	return 0;
err_ep:
	fi_close(&(*ep)->fid);
err:
	*ep = NULL;
	return ret;
}

/* Register buf in domain under `key`, then bind and enable it on ep when
 * the domain has FI_MR_ENDPOINT (ep must then be non-NULL). */
static int
mr_open(struct fid_domain *domain, const struct fi_info *info,
	struct fid_ep *ep, void *buf, size_t len, uint64_t access, uint64_t key,
	struct fid_mr **mr)
{
	int ret;

	STEP(fi_mr_reg(domain, buf, len, access, 0, key, 0, mr, NULL), err);
	if (!(info->domain_attr->mr_mode & FI_MR_ENDPOINT))
		return 0;
	STEP(ep ? 0 : -FI_EINVAL, err_mr);
	STEP(fi_mr_bind(*mr, &ep->fid, 0), err_mr);
	STEP(fi_mr_enable(*mr), err_mr);
	return 0;
err_mr:
	fi_close(&(*mr)->fid);
err:
	*mr = NULL;
	return ret;
}

uint64_t
mrlt_next_key(void)
{
	static _Atomic uint64_t next = 0x1000;

	return atomic_fetch_add(&next, 1);
}

/* ------------------------------------------------------------------------
 * Information and domains (tracked).
 */

struct fi_info *
mrlt_hints(const char *prov, enum fi_ep_type type, uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints) {
		fprintf(stderr, "mrlt: fi_allocinfo failed\n");
		abort();
	}
	hints->ep_attr->type = type;
	hints->caps = caps;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	if (prov) {
		hints->fabric_attr->prov_name = strdup(prov);
		if (!hints->fabric_attr->prov_name)
			abort();
	}
	return hints;
}

int
mrlt_getinfo(struct fi_info *hints, const char *node, const char *service,
	     uint64_t flags, struct fi_info **info)
{
	const char *want = hints->fabric_attr->prov_name;
	int ret = info_pick(hints, node, service, flags, info);

	if (ret && ret != -FI_ENODATA)
		FAIL("fi_getinfo(%s) = %d (%s)", want ? want : "any", ret,
		     fi_strerror(-ret));
	fi_freeinfo(hints);
	if (ret)
		return ret;
	mrlt_track_info(*info);
	return 0;
}

int
mrlt_domain_open(struct fi_info *info, struct mrlt_domain *d)
{
	memset(d, 0, sizeof(*d));
	d->info = info;
	TRY(fabric_domain_open(info, &d->fabric, &d->domain));
	mrlt_track_fid(&d->fabric->fid);
	mrlt_track_fid(&d->domain->fid);
	return 0;
}

/* ------------------------------------------------------------------------
 * Peers: an endpoint each with its own companions (tracked).
 */

static int
open_cntr(struct mrlt_domain *d, enum fi_wait_obj wait, struct fid_cntr **cntr)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = wait,
	};

	TRY(fi_cntr_open(d->domain, &attr, cntr, NULL));
	mrlt_track_fid(&(*cntr)->fid);
	return 0;
}

int
mrlt_peer_open(struct mrlt_domain *d, const struct mrlt_peer_opts *opts,
	       struct mrlt_peer *p)
{
	static const struct mrlt_peer_opts none;
	struct fi_cq_attr cq_attr = {0};
	struct fi_av_attr av_attr = {0};
	struct ep_binds b;

	if (!opts)
		opts = &none;
	memset(p, 0, sizeof(*p));
	p->dom = d;
	p->peer = FI_ADDR_UNSPEC;
	cq_attr.format =
		opts->cq_format ? opts->cq_format : FI_CQ_FORMAT_TAGGED;
	cq_attr.wait_obj = opts->cq_wait;
	cq_attr.size = 0;
	av_attr.type = d->info->domain_attr->av_type;

	/* Companions first: tracked fids close newest first, and a provider
	 * refuses to close a CQ or AV an open endpoint is bound to. */
	TRY(fi_cq_open(d->domain, &cq_attr, &p->cq, p));
	mrlt_track_fid(&p->cq->fid);
	TRY(fi_av_open(d->domain, &av_attr, &p->av, p));
	mrlt_track_fid(&p->av->fid);
	if (opts->cntrs) {
		TRY(open_cntr(d, opts->cntr_wait, &p->tx_cntr));
		TRY(open_cntr(d, opts->cntr_wait, &p->rx_cntr));
		TRY(open_cntr(d, opts->cntr_wait, &p->rma_cntr));
		if (opts->remote_cntr)
			TRY(open_cntr(d, opts->cntr_wait, &p->remote_cntr));
	}
	b = (struct ep_binds){
		.av = p->av,
		.cq = p->cq,
		.cq_flags = FI_TRANSMIT | FI_RECV,
		.cntr = {{p->tx_cntr, FI_SEND},
			 {p->rx_cntr, FI_RECV},
			 {p->rma_cntr, FI_READ | FI_WRITE},
			 {p->remote_cntr, FI_REMOTE_WRITE | FI_REMOTE_READ}},
	};
	p->namelen = sizeof(p->name);
	TRY(ep_open(d->domain, d->info, &b, p, &p->ep, p->name, &p->namelen));
	mrlt_track_fid(&p->ep->fid);
	return 0;
}

int
mrlt_peers_connect(struct mrlt_peer *a, struct mrlt_peer *b)
{
	TRY(fi_av_insert(a->av, b->name, 1, &a->peer, 0, NULL));
	TRY(fi_av_insert(b->av, a->name, 1, &b->peer, 0, NULL));
	if (a->peer == FI_ADDR_NOTAVAIL || b->peer == FI_ADDR_NOTAVAIL) {
		FAIL("fi_av_insert returned FI_ADDR_NOTAVAIL");
		return -FI_EINVAL;
	}
	return 0;
}

int
mrlt_rdm_pair_open(struct mrlt_domain *d, const struct mrlt_peer_opts *opts,
		   struct mrlt_peer *a, struct mrlt_peer *b)
{
	int ret;

	ret = mrlt_peer_open(d, opts, a);
	if (!ret)
		ret = mrlt_peer_open(d, opts, b);
	if (!ret)
		ret = mrlt_peers_connect(a, b);
	return ret;
}

void
mrlt_progress(struct mrlt_peer *p)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;

	if (!p)
		return;
	if (p->eq)
		(void) fi_eq_read(p->eq, &event, &entry, sizeof(entry),
				  FI_PEEK);
	if (p->cq)
		(void) fi_cq_read(p->cq, NULL, 0);
	if (p->tx_cntr)
		(void) fi_cntr_read(p->tx_cntr);
	if (p->rx_cntr)
		(void) fi_cntr_read(p->rx_cntr);
}

static void
describe_cq_err(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err;
	ssize_t ret;

	memset(&err, 0, sizeof(err));
	ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0)
		FAIL("%s: error completion, and fi_cq_readerr = %zd (%s)", what,
		     ret, fi_strerror((int) -ret));
	else
		FAIL("%s: error completion err=%d (%s) prov_errno=%d (%s)",
		     what, err.err, fi_strerror(err.err), err.prov_errno,
		     fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
}

int
mrlt_cq_wait(struct mrlt_peer *p, struct mrlt_peer *other, void *entry,
	     fi_addr_t *src_addr, const char *what)
{
	struct mrlt_wait w;
	ssize_t ret;

	mrlt_wait_init(&w);
	do {
		ret = src_addr ? fi_cq_readfrom(p->cq, entry, 1, src_addr) :
				 fi_cq_read(p->cq, entry, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			describe_cq_err(p->cq, what);
			return -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN) {
			FAIL("%s: fi_cq_read = %zd (%s)", what, ret,
			     fi_strerror((int) -ret));
			return ret < 0 ? (int) ret : -FI_EOTHER;
		}
		mrlt_progress(other);
	} while (!mrlt_wait_over(&w));
	FAIL("%s: no completion after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

int
mrlt_cq_wait_err(struct mrlt_peer *p, struct mrlt_peer *other,
		 struct fi_cq_err_entry *err, const char *what)
{
	struct fi_cq_tagged_entry entry;
	struct mrlt_wait w;
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	mrlt_wait_init(&w);
	do {
		ret = fi_cq_read(p->cq, &entry, 1);
		if (ret == -FI_EAVAIL) {
			ret = fi_cq_readerr(p->cq, err, 0);
			if (ret != 1) {
				FAIL("%s: fi_cq_readerr = %zd (%s)", what, ret,
				     fi_strerror((int) -ret));
				return ret < 0 ? (int) ret : -FI_EOTHER;
			}
			return 0;
		}
		if (ret == 1) {
			FAIL("%s: expected an error entry, got a completion "
			     "(flags %s)",
			     what,
			     fi_tostr(&entry.flags, FI_TYPE_CQ_EVENT_FLAGS));
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN) {
			FAIL("%s: fi_cq_read = %zd (%s)", what, ret,
			     fi_strerror((int) -ret));
			return ret < 0 ? (int) ret : -FI_EOTHER;
		}
		mrlt_progress(other);
	} while (!mrlt_wait_over(&w));
	FAIL("%s: no error entry after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

int
mrlt_cntr_wait(struct fid_cntr *cntr, uint64_t value, struct mrlt_peer *self,
	       struct mrlt_peer *other, const char *what)
{
	struct mrlt_wait w;
	uint64_t errs = fi_cntr_readerr(cntr), got;

	mrlt_wait_init(&w);
	do {
		got = fi_cntr_read(cntr);
		if (got >= value)
			return 0;
		if (fi_cntr_readerr(cntr) != errs) {
			FAIL("%s: counter error count rose to %llu (value "
			     "%llu)",
			     what, (unsigned long long) fi_cntr_readerr(cntr),
			     (unsigned long long) got);
			return -FI_EIO;
		}
		mrlt_progress(self);
		mrlt_progress(other);
	} while (!mrlt_wait_over(&w));
	FAIL("%s: counter at %llu, waited for %llu, after %lu polls", what,
	     (unsigned long long) got, (unsigned long long) value, w.spins);
	return -FI_ETIMEDOUT;
}

int
mrlt_mr_reg(struct mrlt_domain *d, struct fid_ep *ep, void *buf, size_t len,
	    uint64_t access, struct fid_mr **mr)
{
	if ((d->info->domain_attr->mr_mode & FI_MR_ENDPOINT) && !ep) {
		FAIL("FI_MR_ENDPOINT domain needs an endpoint to bind");
		return -FI_EINVAL;
	}
	TRY(mr_open(d->domain, d->info, ep, buf, len, access, mrlt_next_key(),
		    mr));
	mrlt_track_fid(&(*mr)->fid);
	return 0;
}

uint64_t
mrlt_rma_addr(const struct mrlt_domain *d, const void *buf)
{
	return (d->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		       (uint64_t) (uintptr_t) buf :
		       0;
}

/* ------------------------------------------------------------------------
 * FI_EP_MSG endpoints and pairs (tracked).
 */

ssize_t
mrlt_eq_poll(struct fid_eq *eq, uint32_t *event, void *buf, size_t len)
{
	struct fi_eq_err_entry err;
	ssize_t ret;

	ret = fi_eq_read(eq, event, buf, len, 0);
	if (ret >= 0)
		return *event;
	if (ret == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		ret = fi_eq_readerr(eq, &err, 0);
		if (ret < 0)
			FAIL("EQ error entry, and fi_eq_readerr = %zd (%s)",
			     ret, fi_strerror((int) -ret));
		else
			FAIL("EQ error entry: fid %p err=%d (%s) prov_errno=%d",
			     (void *) err.fid, err.err, fi_strerror(err.err),
			     err.prov_errno);
		return -FI_EAVAIL;
	}
	if (ret != -FI_EAGAIN)
		FAIL("fi_eq_read = %zd (%s)", ret, fi_strerror((int) -ret));
	return ret;
}

int
mrlt_eq_wait(struct fid_eq *eq, uint32_t expected, void *buf, size_t len,
	     struct mrlt_peer *a, struct mrlt_peer *b, const char *what)
{
	struct mrlt_wait w;
	uint32_t event;
	ssize_t ret;

	mrlt_wait_init(&w);
	do {
		ret = mrlt_eq_poll(eq, &event, buf, len);
		if (ret >= 0) {
			if (event == expected)
				return 0;
			FAIL("%s: EQ event %s, expected %s", what,
			     fi_tostr(&event, FI_TYPE_EQ_EVENT),
			     fi_tostr(&expected, FI_TYPE_EQ_EVENT));
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN)
			return (int) ret;
		mrlt_progress(a);
		mrlt_progress(b);
	} while (!mrlt_wait_over(&w));
	FAIL("%s: no EQ event after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

int
mrlt_eq_wait_err(struct fid_eq *eq, struct fi_eq_err_entry *err,
		 struct mrlt_peer *a, struct mrlt_peer *b, const char *what)
{
	struct fi_eq_cm_entry entry;
	struct mrlt_wait w;
	uint32_t event;
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	mrlt_wait_init(&w);
	do {
		ret = fi_eq_read(eq, &event, &entry, sizeof(entry), 0);
		if (ret == -FI_EAVAIL) {
			ret = fi_eq_readerr(eq, err, 0);
			if (ret < 0) {
				FAIL("%s: fi_eq_readerr = %zd (%s)", what, ret,
				     fi_strerror((int) -ret));
				return (int) ret;
			}
			return 0;
		}
		if (ret >= 0) {
			FAIL("%s: expected an EQ error entry, got event %s",
			     what, fi_tostr(&event, FI_TYPE_EQ_EVENT));
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN) {
			FAIL("%s: fi_eq_read = %zd (%s)", what, ret,
			     fi_strerror((int) -ret));
			return (int) ret;
		}
		mrlt_progress(a);
		mrlt_progress(b);
	} while (!mrlt_wait_over(&w));
	FAIL("%s: no EQ error entry after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

static int
open_eq(struct mrlt_domain *d, struct fid_eq **eq)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};

	TRY(fi_eq_open(d->fabric, &attr, eq, NULL));
	mrlt_track_fid(&(*eq)->fid);
	return 0;
}

int
mrlt_msg_ep_open(struct mrlt_domain *d, struct fi_info *info, const void *dest,
		 size_t destlen, struct fid_ep *srx, struct fid_eq **eq,
		 struct fid_ep **ep, struct fid_cq **cq)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};

	info = fi_dupinfo(info);
	if (!info) {
		FAIL("fi_dupinfo failed");
		return -FI_ENOMEM;
	}
	mrlt_track_info(info);
	if (dest) {
		free(info->dest_addr);
		info->dest_addr = malloc(destlen);
		if (!info->dest_addr)
			return -FI_ENOMEM;
		memcpy(info->dest_addr, dest, destlen);
		info->dest_addrlen = destlen;
	}
	if (srx)
		info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	TRY(open_eq(d, eq));
	TRY(fi_cq_open(d->domain, &cq_attr, cq, NULL));
	mrlt_track_fid(&(*cq)->fid);
	TRY(fi_endpoint(d->domain, info, ep, NULL));
	mrlt_track_fid(&(*ep)->fid);
	if (srx)
		TRY(fi_ep_bind(*ep, &srx->fid, 0));
	TRY(fi_ep_bind(*ep, &(*eq)->fid, 0));
	TRY(fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(*ep));
	return 0;
}

int
mrlt_pep_listen(struct mrlt_domain *d, struct fid_eq **eq, struct fid_pep **pep,
		void *addr, size_t *addrlen)
{
	TRY(open_eq(d, eq));
	TRY(fi_passive_ep(d->fabric, d->info, pep, NULL));
	mrlt_track_fid(&(*pep)->fid);
	TRY(fi_pep_bind(*pep, &(*eq)->fid, 0));
	TRY(fi_listen(*pep));
	TRY(fi_getname(&(*pep)->fid, addr, addrlen));
	return 0;
}

/* One step of the connection hand-shake: poll all three EQs once. */
static int
msg_pair_step(struct mrlt_msg_pair *p, struct fid_ep *srx, bool *srv_up,
	      bool *cli_up)
{
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t data[64];
	} ev;
	uint32_t event;
	ssize_t ret;

	ret = mrlt_eq_poll(p->pep_eq, &event, &ev, sizeof(ev));
	if (ret >= 0) {
		if (event != FI_CONNREQ || p->srv) {
			FAIL("passive EQ: unexpected event %s",
			     fi_tostr(&event, FI_TYPE_EQ_EVENT));
			return -FI_EOTHER;
		}
		p->connreq_fid = ev.cm.fid;
		p->connreq_handle = ev.cm.info->handle;
		mrlt_track_info(ev.cm.info);
		TRY(mrlt_msg_ep_open(p->dom, ev.cm.info, NULL, 0, srx,
				     &p->srv_eq, &p->srv, &p->srv_cq));
		p->srv_side.cq = p->srv_cq;
		p->srv_side.eq = p->srv_eq;
		TRY(fi_accept(p->srv, NULL, 0));
	} else if (ret != -FI_EAGAIN) {
		return (int) ret;
	}
	if (p->srv_eq && !*srv_up) {
		ret = mrlt_eq_poll(p->srv_eq, &event, &ev, sizeof(ev));
		if (ret >= 0) {
			if (event != FI_CONNECTED) {
				FAIL("server EQ: unexpected event %s",
				     fi_tostr(&event, FI_TYPE_EQ_EVENT));
				return -FI_EOTHER;
			}
			p->srv_connected_fid = ev.cm.fid;
			*srv_up = true;
		} else if (ret != -FI_EAGAIN) {
			return (int) ret;
		}
	}
	if (!*cli_up) {
		ret = mrlt_eq_poll(p->cli_eq, &event, &ev, sizeof(ev));
		if (ret >= 0) {
			if (event != FI_CONNECTED) {
				FAIL("client EQ: unexpected event %s",
				     fi_tostr(&event, FI_TYPE_EQ_EVENT));
				return -FI_EOTHER;
			}
			p->cli_connected_fid = ev.cm.fid;
			*cli_up = true;
		} else if (ret != -FI_EAGAIN) {
			return (int) ret;
		}
	}
	return 0;
}

int
mrlt_msg_pair_open(struct mrlt_domain *d, struct fid_ep *srx,
		   struct mrlt_msg_pair *p)
{
	char addr[128];
	size_t addrlen = sizeof(addr);
	bool srv_up = false, cli_up = false;
	struct mrlt_wait w;
	int ret;

	memset(p, 0, sizeof(*p));
	p->dom = d;
	TRY(mrlt_pep_listen(d, &p->pep_eq, &p->pep, addr, &addrlen));
	TRY(mrlt_msg_ep_open(d, d->info, addr, addrlen, NULL, &p->cli_eq,
			     &p->cli, &p->cli_cq));
	p->cli_side.cq = p->cli_cq;
	p->cli_side.eq = p->cli_eq;
	TRY(fi_connect(p->cli, addr, NULL, 0));

	mrlt_wait_init(&w);
	do {
		ret = msg_pair_step(p, srx, &srv_up, &cli_up);
		if (ret)
			return ret;
		if (srv_up && cli_up)
			return 0;
	} while (!mrlt_wait_over(&w));
	FAIL("connection not established after %lu polls (CONNREQ %s, server "
	     "%s, client %s)",
	     w.spins, p->srv ? "seen" : "missing",
	     srv_up ? "connected" : "waiting",
	     cli_up ? "connected" : "waiting");
	return -FI_ETIMEDOUT;
}

/* ------------------------------------------------------------------------
 * Shared pair: two endpoints, one AV, one CQ (or counters); untracked.
 */

static int
pair_getinfo(const struct mrlt_pair_opts *opts, struct fi_info **info)
{
	struct fi_info *hints;
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = opts->caps ? opts->caps :
				   FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	if (opts->rx_op_flags & FI_MULTI_RECV)
		hints->caps |= FI_MULTI_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading =
		opts->thread_safe ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
	hints->tx_attr->op_flags = 0;
	hints->rx_attr->op_flags = opts->rx_op_flags;
	hints->fabric_attr->prov_name = strdup(opts->prov);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return -FI_ENOMEM;
	}
	ret = info_pick(hints, NULL, NULL, 0, info);
	fi_freeinfo(hints);
	return ret;
}

/* The mrlease and mrcheck extension ops of the pair's domain and fabric;
 * absent means the hook is not stacked. */
static void
pair_open_ext(struct mrlt_pair *pair)
{
	struct mrcheck_ops *chk;
	struct mrcheck_stats st;

	if (fi_open_ops(&pair->domain->fid, FI_MRLEASE_OPS_1, 0,
			(void **) &pair->mrl, NULL))
		pair->mrl = NULL;
	if (fi_open_ops(&pair->domain->fid, MRCHECK_OPS_1, 0,
			(void **) &pair->chk, NULL))
		pair->chk = NULL;
	/* The layer above may not forward MRCHECK_OPS_1: then straight from
	 * the loaded plugin. */
	if (fi_open_ops(&pair->fabric->fid, MRCHECK_OPS_1, 0,
			(void **) &pair->chk_all, NULL))
		pair->chk_all = mrcheck_loaded_ops();
	chk = pair->chk_all ? pair->chk_all : pair->chk;
	if (chk && !chk->query(chk, &st, sizeof(st))) {
		pair->violations0 = st.violations;
		pair->acknowledged0 = st.acknowledged;
	}
}

static int
pair_ep_open(const struct mrlt_pair_opts *opts, struct mrlt_pair *pair, int i,
	     void *name, size_t *len)
{
	struct ep_binds b = {.av = pair->av,
			     .min_multi_recv = opts->min_multi_recv};

	if (opts->counters_only) {
		b.cntr[0].cntr = pair->tx_cntr;
		b.cntr[0].flags = FI_SEND | FI_WRITE | FI_READ;
		b.cntr[1].cntr = pair->rx_cntr;
		b.cntr[1].flags = FI_RECV;
	} else {
		b.cq = pair->cq;
		b.cq_flags = FI_TRANSMIT | FI_RECV |
			     (opts->selective ? FI_SELECTIVE_COMPLETION : 0);
	}
	return ep_open(pair->domain, pair->info, &b, NULL, &pair->ep[i], name,
		       len);
}

int
mrlt_pair_open(const struct mrlt_pair_opts *opts, struct mrlt_pair *pair)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .size = 1024,
				     .wait_obj = opts->cq_wait};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	char name[2][256];
	size_t len;
	int ret, i;

	memset(pair, 0, sizeof(*pair));
	pair->stash = calloc(MRLT_STASH, sizeof(*pair->stash));
	if (!pair->stash)
		return -FI_ENOMEM;
	ret = pair_getinfo(opts, &pair->info);
	if (ret == -FI_ENODATA) {
		mrlt_pair_close(pair);
		return ret;
	}
	if (ret)
		goto err;
	if (opts->mr_local)
		pair->info->domain_attr->mr_mode |= FI_MR_LOCAL;
	if (opts->thread_domain)
		pair->info->domain_attr->threading = FI_THREAD_DOMAIN;
	ret = fabric_domain_open(pair->info, &pair->fabric, &pair->domain);
	if (ret)
		goto err;
	pair_open_ext(pair);
	ret = fi_av_open(pair->domain, &av_attr, &pair->av, NULL);
	if (ret)
		goto err;
	if (opts->counters_only) {
		ret = fi_cntr_open(pair->domain, &cntr_attr, &pair->tx_cntr,
				   NULL);
		if (ret)
			goto err;
		ret = fi_cntr_open(pair->domain, &cntr_attr, &pair->rx_cntr,
				   NULL);
	} else {
		ret = fi_cq_open(pair->domain, &cq_attr, &pair->cq, NULL);
	}
	if (ret)
		goto err;
	for (i = 0; i < 2; i++) {
		len = sizeof(name[i]);
		ret = pair_ep_open(opts, pair, i, name[i], &len);
		if (ret)
			goto err;
	}
	for (i = 0; i < 2; i++) {
		ret = fi_av_insert(pair->av, name[i], 1, &pair->addr[i], 0,
				   NULL);
		if (ret != 1) {
			ret = ret < 0 ? ret : -FI_EOTHER;
			goto err;
		}
	}
	return 0;
err:
	fprintf(stderr, "# mrlt_pair_open(%s): %s\n", opts->prov,
		fi_strerror(-ret));
	mrlt_pair_close(pair);
	return ret;
}

bool
mrlt_pair_open_hooked(const struct mrlt_pair_opts *opts, struct mrlt_pair *pair)
{
	int ret = mrlt_pair_open(opts, pair);

	if (ret == -FI_ENODATA || ret == -FI_ENOCQ || ret == -FI_ENOSYS ||
	    ret == -FI_EOPNOTSUPP) {
		mrlt_skip_current("%s cannot: %s", opts->prov,
				  fi_strerror(-ret));
		return false;
	}
	if (ret) {
		FAIL("mrlt_pair_open: %s", fi_strerror(-ret));
		return false;
	}
	if (!pair->mrl) {
		FAIL("mrlease hook not active");
		mrlt_pair_close(pair);
		return false;
	}
	return true;
}

bool
mrlt_pair_open_hooked_safe(const struct mrlt_pair_opts *opts,
			   struct mrlt_pair *pair)
{
	if (!mrlt_pair_open_hooked(opts, pair))
		return false;
	if (pair->info->domain_attr->threading != FI_THREAD_SAFE) {
		mrlt_skip_current("%s: threading %d, not FI_THREAD_SAFE",
				  opts->prov,
				  (int) pair->info->domain_attr->threading);
		mrlt_pair_close(pair);
		return false;
	}
	return true;
}

static int
close_fid(struct fid *fid, int first)
{
	int ret;

	if (!fid)
		return first;
	ret = fi_close(fid);
	if (ret)
		fprintf(stderr, "# fi_close(class %zu) = %d (%s)\n",
			fid->fclass, ret, fi_strerror(-ret));
	return first ? first : ret;
}

int
mrlt_pair_close(struct mrlt_pair *pair)
{
	int ret = 0, i;

	for (i = 0; i < 2; i++)
		ret = close_fid(pair->ep[i] ? &pair->ep[i]->fid : NULL, ret);
	ret = close_fid(pair->cq ? &pair->cq->fid : NULL, ret);
	ret = close_fid(pair->tx_cntr ? &pair->tx_cntr->fid : NULL, ret);
	ret = close_fid(pair->rx_cntr ? &pair->rx_cntr->fid : NULL, ret);
	ret = close_fid(pair->av ? &pair->av->fid : NULL, ret);
	ret = close_fid(pair->domain ? &pair->domain->fid : NULL, ret);
	ret = close_fid(pair->fabric ? &pair->fabric->fid : NULL, ret);
	if (pair->info)
		fi_freeinfo(pair->info);
	free(pair->stash);
	memset(pair, 0, sizeof(*pair));
	return ret;
}
static int
pair_read_err(struct mrlt_pair *pair, struct mrlt_comp *comp)
{
	struct fi_cq_err_entry err = {0};
	int ret;

	ret = (int) fi_cq_readerr(pair->cq, &err, 0);
	if (ret < 0)
		return ret;
	comp->ctx = err.op_context;
	comp->flags = err.flags;
	comp->len = err.len;
	comp->buf = err.buf;
	comp->data = err.data;
	comp->tag = err.tag;
	comp->err = err.err ? err.err : FI_EOTHER;
	return 1;
}

static int
pair_read_cq(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n)
{
	struct fi_cq_tagged_entry entries[16];
	ssize_t ret;
	size_t i;

	if (n > 16)
		n = 16;
	ret = fi_cq_read(pair->cq, entries, n);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL)
		return pair_read_err(pair, comps);
	if (ret < 0)
		return (int) ret;
	for (i = 0; i < (size_t) ret; i++) {
		comps[i] = (struct mrlt_comp){
			.ctx = entries[i].op_context,
			.flags = entries[i].flags,
			.len = entries[i].len,
			.buf = entries[i].buf,
			.data = entries[i].data,
			.tag = entries[i].tag,
		};
	}
	return (int) ret;
}

int
mrlt_reap_some(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n)
{
	size_t i;

	if (pair->nstash) {
		if (n > pair->nstash)
			n = pair->nstash;
		memcpy(comps, pair->stash, n * sizeof(*comps));
		pair->nstash -= n;
		for (i = 0; i < pair->nstash; i++)
			pair->stash[i] = pair->stash[i + n];
		return (int) n;
	}
	return pair_read_cq(pair, comps, n);
}

void
mrlt_pair_progress(struct mrlt_pair *pair)
{
	int ret;

	if (!pair->cq) {
		(void) fi_cntr_read(pair->tx_cntr);
		(void) fi_cntr_read(pair->rx_cntr);
		return;
	}
	if (pair->nstash == MRLT_STASH) {
		/* Full: progress without taking entries. */
		(void) fi_cq_read(pair->cq, NULL, 0);
		return;
	}
	ret = pair_read_cq(pair, pair->stash + pair->nstash,
			   MRLT_STASH - pair->nstash);
	if (ret > 0)
		pair->nstash += (size_t) ret;
	else if (ret < 0 && ret != -FI_EAGAIN)
		fprintf(stderr, "# mrlt_pair_progress: %s\n",
			fi_strerror(-ret));
}

int
mrlt_reap(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n)
{
	return mrlt_reap_within(pair, comps, n, MRLT_MAX_POLLS);
}

int
mrlt_reap_within(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n,
		 long max_polls)
{
	size_t got = 0;
	long polls = 0;
	int ret;

	while (got < n) {
		ret = mrlt_reap_some(pair, comps + got, n - got);
		if (ret < 0)
			return ret;
		got += (size_t) ret;
		if (ret == 0 && ++polls > max_polls)
			return -FI_ETIMEDOUT;
		if (ret == 0 && (polls & 1023) == 0)
			sched_yield();
	}
	return (int) n;
}

int
mrlt_wait_cntr(struct fid_cntr *cntr, uint64_t value)
{
	long polls;

	for (polls = 0; polls < MRLT_MAX_POLLS; polls++) {
		if (fi_cntr_read(cntr) >= value)
			return 0;
		if (fi_cntr_readerr(cntr) > 0)
			return -FI_EIO;
		if ((polls & 1023) == 1023)
			sched_yield();
	}
	return -FI_ETIMEDOUT;
}

struct mrlt_op *
mrlt_op_start(struct mrlt_op *op)
{
	atomic_store(&op->done, 0);
	op->err = 0;
	return op;
}

int
mrlt_pair_poll_ops(struct mrlt_pair *pair)
{
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err = {0};
	ssize_t n = fi_cq_read(pair->cq, e, 8);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(pair->cq, &err, 0) == 1 && err.op_context) {
			struct mrlt_op *op = err.op_context;

			op->err = err.err ? err.err : FI_EOTHER;
			atomic_store(&op->done, 1);
		}
		return 0;
	}
	if (n < 0)
		return (int) n;
	for (ssize_t i = 0; i < n; i++)
		if (e[i].op_context)
			atomic_store(
				&((struct mrlt_op *) e[i].op_context)->done, 1);
	return 0;
}

int
mrlt_op_wait(struct mrlt_pair *pair, struct mrlt_op *op)
{
	for (long polls = 0; !atomic_load(&op->done); polls++) {
		if (polls > MRLT_MAX_POLLS || mrlt_pair_poll_ops(pair))
			return -FI_ETIMEDOUT;
		if ((polls & 255) == 255)
			sched_yield();
	}
	return op->err ? -op->err : 0;
}

int
mrlt_pair_mr_reg(struct mrlt_pair *pair, void *buf, size_t len, uint64_t access,
		 struct fid_mr **mr)
{
	uint64_t mode = pair->info->domain_attr->mr_mode;
	uint64_t key = (mode & FI_MR_PROV_KEY) ? 0 : mrlt_next_key();
	/* On an FI_MR_ENDPOINT domain a remote-access MR serves the target. */
	struct fid_ep *ep =
		pair->ep[(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) ? 1 : 0];

	return mr_open(pair->domain, pair->info, ep, buf, len, access, key, mr);
}

uint64_t
mrlt_pair_rma_addr(const struct mrlt_pair *pair, const void *mr_base,
		   const void *buf)
{
	if (pair->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uint64_t) (uintptr_t) buf;
	return (uint64_t) ((const char *) buf - (const char *) mr_base);
}

struct fi_mrlease_stats
mrlt_pair_stats(const struct mrlt_pair *pair)
{
	struct fi_mrlease_stats stats;

	memset(&stats, 0, sizeof(stats));
	if (pair->mrl)
		pair->mrl->query_stats(pair->domain, &stats, sizeof(stats));
	return stats;
}

long long
mrlt_live_leases(const struct mrlt_pair *pair)
{
	struct fi_mrlease_stats stats;

	if (!pair->mrl ||
	    pair->mrl->query_stats(pair->domain, &stats, sizeof(stats)))
		return -1;
	return (long long) stats.leases;
}

long long
mrlt_violations(const struct mrlt_pair *pair)
{
	struct mrcheck_ops *chk = pair->chk_all ? pair->chk_all : pair->chk;
	struct mrcheck_stats stats;

	if (!chk || chk->query(chk, &stats, sizeof(stats)))
		return -1;
	return (long long) ((stats.violations - pair->violations0) -
			    (stats.acknowledged - pair->acknowledged0));
}

long
mrlt_wait_pattern(struct mrlt_pair *pair, const void *buf, size_t len,
		  uint64_t seed)
{
	long at = mrlt_verify(buf, len, seed);

	for (long i = 0; at >= 0 && i < MRLT_MAX_POLLS / 100; i++) {
		mrlt_pair_progress(pair);
		at = mrlt_verify(buf, len, seed);
	}
	return at;
}
