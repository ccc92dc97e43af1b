/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The passthrough layer over a fake provider, for the translations no
 * provider on this machine exercises: rxm's flow-control ops (only verbs
 * implements them), the installed-twice nesting, FI_ALIAS, ops past the
 * end of an inner table, NULL inner ops and tables, error entries larger
 * than ours. Links the layer directly (libmrlease-core) with no
 * personality; no libfabric provider is opened.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "mrl_hook.h"
#include "common/mrlt.h"

/* ---- the fake provider ------------------------------------------ */

/* Same layout as libfabric's ofi_ops_flow_ctrl / ofi_ops_dynamic_rbuf. */
struct flow_ops {
	size_t size;
	bool (*available)(struct fid_ep *ep);
	int (*enable)(struct fid_ep *ep, uint64_t threshold);
	void (*add_credits)(struct fid_ep *ep, uint64_t credits);
	void (*set_send_handler)(struct fid_domain *domain,
				 ssize_t (*h)(struct fid_ep *ep,
					      uint64_t credits));
};

struct rbuf_entry {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	void *ep_context;
};

struct rbuf_ops {
	size_t size;
	ssize_t (*get_rbuf)(struct rbuf_entry *entry, struct iovec *iov,
			    size_t *count);
};

/* What the fake saw last. */
static struct {
	struct fid_ep *flow_ep; /* ep given to available/enable/add_credits */
	struct fid_domain *flow_domain;
	ssize_t (*send_handler)(struct fid_ep *ep, uint64_t credits);
	struct rbuf_ops *rbuf;
	struct fid_ep *send_ep;
	void *readerr_buf;
	int nested_domains; /* domains opened through the nested hook */
	struct fid_fabric *nested_fabric; /* the "core" fabric hooked inside */
	struct fid_domain *nested_domain;
	uint32_t eq_event;
	struct fi_eq_cm_entry eq_entry;
	bool eq_full;
	void *open_context; /* context the last open was given */
} fake;

static int
fake_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static int
fake_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void) fid;
	(void) bfid;
	(void) flags;
	return 0;
}

static bool
fake_available(struct fid_ep *ep)
{
	fake.flow_ep = ep;
	return true;
}
static int
fake_enable(struct fid_ep *ep, uint64_t t)
{
	(void) t;
	fake.flow_ep = ep;
	return 0;
}
static void
fake_add_credits(struct fid_ep *ep, uint64_t c)
{
	(void) c;
	fake.flow_ep = ep;
}
static void
fake_set_send_handler(struct fid_domain *d,
		      ssize_t (*h)(struct fid_ep *, uint64_t))
{
	fake.flow_domain = d;
	fake.send_handler = h;
}

static struct flow_ops fake_flow_ops = {
	.size = sizeof(struct flow_ops),
	.available = fake_available,
	.enable = fake_enable,
	.add_credits = fake_add_credits,
	.set_send_handler = fake_set_send_handler,
};

static int
fake_domain_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	(void) fid;
	(void) flags;
	(void) context;
	if (!strcmp(name, "ofix_flow_ctrl_v1")) {
		*ops = &fake_flow_ops;
		return 0;
	}
	if (!strcmp(name, "fake_private_v1")) {
		*ops = &fake_flow_ops;
		return 0;
	}
	return -FI_ENOSYS;
}

static int
fake_domain_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	(void) fid;
	(void) flags;
	(void) context;
	if (strcmp(name, "ofix_dynamic_rbuf_v2"))
		return -FI_ENOSYS;
	fake.rbuf = ops;
	return 0;
}

/* An ep whose control() answers FI_ALIAS with a new fake ep. */
static int fake_ep_control(struct fid *fid, int command, void *arg);

static struct fi_ops fake_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fake_close,
	.bind = fake_no_bind,
	.control = fake_ep_control,
};

static ssize_t
fake_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	  fi_addr_t dest, void *context)
{
	(void) buf;
	(void) desc;
	(void) dest;
	(void) context;
	fake.send_ep = ep;
	return (ssize_t) len;
}

/* Ends before senddata: fi_senddata must get -FI_ENOSYS, not a wild call. */
static struct fi_ops_msg fake_msg_ops = {
	.size = offsetof(struct fi_ops_msg, senddata),
	.send = fake_send,
};

/* rma present but without read. */
static struct fi_ops_rma fake_rma_ops = {.size = sizeof(struct fi_ops_rma)};

static struct fid_ep *
fake_ep_new(void *context)
{
	struct fid_ep *ep = calloc(1, sizeof(*ep));

	ep->fid.fclass = FI_CLASS_EP;
	ep->fid.context = context;
	ep->fid.ops = &fake_ep_fi_ops;
	ep->msg = &fake_msg_ops;
	ep->rma = &fake_rma_ops;
	/* no ops, cm, tagged, atomic, collective tables at all */
	return ep;
}

static int
fake_ep_control(struct fid *fid, int command, void *arg)
{
	struct fi_alias *alias = arg;

	if (command != FI_ALIAS)
		return -FI_ENOSYS;
	/* Like most providers: the alias keeps the original's context. */
	*alias->fid = &fake_ep_new(fid->context)->fid;
	return 0;
}

static int
fake_endpoint(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep,
	      void *context)
{
	(void) d;
	(void) info;
	*ep = fake_ep_new(context);
	return 0;
}

static ssize_t
fake_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	(void) cq;
	(void) flags;
	fake.readerr_buf = buf;
	buf->err = FI_ECANCELED;
	return 1;
}

static struct fi_ops_cq fake_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.readerr = fake_cq_readerr,
	/* read etc. NULL */
};

static struct fi_ops fake_plain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fake_close,
	.bind = fake_no_bind,
};

static int
fake_cq_open(struct fid_domain *d, struct fi_cq_attr *attr, struct fid_cq **cq,
	     void *context)
{
	(void) d;
	(void) attr;
	fake.open_context = context;
	*cq = calloc(1, sizeof(**cq));
	(*cq)->fid.fclass = FI_CLASS_CQ;
	(*cq)->fid.context = context;
	(*cq)->fid.ops = &fake_plain_fi_ops;
	(*cq)->ops = &fake_cq_ops;
	return 0;
}

static int
fake_av_open(struct fid_domain *d, struct fi_av_attr *attr, struct fid_av **av,
	     void *context)
{
	(void) d;
	(void) attr;
	fake.open_context = context;
	*av = calloc(1, sizeof(**av));
	(*av)->fid.fclass = FI_CLASS_AV;
	(*av)->fid.context = context;
	(*av)->fid.ops = &fake_plain_fi_ops;
	return 0;
}

static int
fake_cntr_open(struct fid_domain *d, struct fi_cntr_attr *attr,
	       struct fid_cntr **cntr, void *context)
{
	(void) d;
	(void) attr;
	fake.open_context = context;
	*cntr = calloc(1, sizeof(**cntr));
	(*cntr)->fid.fclass = FI_CLASS_CNTR;
	(*cntr)->fid.context = context;
	(*cntr)->fid.ops = &fake_plain_fi_ops;
	return 0;
}

/* Ends before query_atomic: an op newer than the inner table. */
static struct fi_ops_domain fake_domain_ops = {
	.size = offsetof(struct fi_ops_domain, query_atomic),
	.av_open = fake_av_open,
	.endpoint = fake_endpoint,
	.cq_open = fake_cq_open,
	.cntr_open = fake_cntr_open,
};

static struct fi_ops fake_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fake_close,
	.bind = fake_no_bind,
	.ops_open = fake_domain_ops_open,
	.ops_set = fake_domain_ops_set,
};

static struct fi_ops_fabric fake_fabric_ops;

/* The outer fake plays a utility provider: it opens a "core" domain
 * through a second hook instance inside its own domain open. */
static int
fake_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		 struct fid_domain **domain, void *context)
{
	struct fid_domain *d = calloc(1, sizeof(*d));

	d->fid.fclass = FI_CLASS_DOMAIN;
	d->fid.context = context;
	d->fid.ops = &fake_domain_fi_ops;
	d->ops = &fake_domain_ops;
	*domain = d;
	if (fabric->fid.context == (void *) "outer" && fake.nested_fabric) {
		fake.nested_domains++;
		return fi_domain(fake.nested_fabric, info, &fake.nested_domain,
				 NULL);
	}
	return 0;
}

static ssize_t
fake_eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
	     uint64_t flags)
{
	(void) eq;
	(void) flags;
	if (!fake.eq_full)
		return -FI_EAGAIN;
	fake.eq_full = false;
	*event = fake.eq_event;
	memcpy(buf, &fake.eq_entry,
	       len < sizeof(fake.eq_entry) ? len : sizeof(fake.eq_entry));
	return sizeof(fake.eq_entry);
}

static ssize_t
fake_eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len,
	      uint64_t flags)
{
	(void) eq;
	(void) flags;
	fake.eq_event = event;
	memcpy(&fake.eq_entry, buf, len);
	fake.eq_full = true;
	return (ssize_t) len;
}

static struct fi_ops_eq fake_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = fake_eq_read,
	.write = fake_eq_write,
};

static int
fake_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
	     struct fid_eq **eq, void *context)
{
	(void) fabric;
	(void) attr;
	fake.open_context = context;
	*eq = calloc(1, sizeof(**eq));
	(*eq)->fid.fclass = FI_CLASS_EQ;
	(*eq)->fid.context = context;
	(*eq)->fid.ops = &fake_plain_fi_ops;
	(*eq)->ops = &fake_eq_ops;
	return 0;
}

static struct fi_ops_fabric fake_fabric_ops = {
	.size = offsetof(struct fi_ops_fabric, wait_open),
	.domain = fake_domain_open,
	.eq_open = fake_eq_open,
};

static struct fi_provider fake_prov = {.name = "fake"};
static struct fi_provider hook_prov = {.name = "mrlease-test"};

static struct fid_fabric *
hooked_fabric(const char *tag)
{
	struct fid_fabric *inner = calloc(1, sizeof(*inner)), *hook = NULL;
	struct fi_fabric_attr attr = {.fabric = inner};

	inner->fid.fclass = FI_CLASS_FABRIC;
	inner->fid.context = (void *) tag;
	inner->fid.ops = &fake_plain_fi_ops;
	inner->ops = &fake_fabric_ops;
	inner->api_version = FI_VERSION(1, 17);
	if (mrl_hook_fabric(&attr, &hook, &fake_prov))
		return NULL;
	return hook;
}

/* ---- tests ------------------------------------------------------- */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;

static struct fid_ep *app_send_handler_ep;
static ssize_t
app_send_handler(struct fid_ep *e, uint64_t credits)
{
	app_send_handler_ep = e;
	return (ssize_t) credits;
}

static void *app_rbuf_ep_context;
static ssize_t
app_get_rbuf(struct rbuf_entry *entry, struct iovec *iov, size_t *count)
{
	(void) iov;
	app_rbuf_ep_context = entry->ep_context;
	*count = 0;
	return 0;
}

static struct rbuf_ops app_rbuf_ops = {
	.size = sizeof(struct rbuf_ops),
	.get_rbuf = app_get_rbuf,
};

/* A utility provider opens its core domain inside the outer instance's
 * domain open; later issues resolve operands only at the outermost one. */
static void
test_domain_opened_inside_the_outer_open_is_inner(void)
{
	struct mrl_domain *outer = mrl_hook_domain_of(domain);

	CHECK(outer->outermost);
	CHECK_EQ(1, fake.nested_domains);
	CHECK(fake.nested_domain);
	CHECK(!mrl_hook_domain_of(fake.nested_domain)->outermost);
	CHECK_PTR((void *) "app-domain", domain->fid.context);
}

/* rxm calls the flow-control ops with its (hook) msg endpoints and gets
 * called back with the core endpoint: both directions must be mapped. */
static void
test_flow_ctrl_ops_translate_endpoints_both_ways(void)
{
	struct flow_ops *ops = NULL;
	struct mrl_ep *hep = mrl_hook_ep_of(ep);

	CHECK_FI(fi_open_ops(&fake.nested_domain->fid, "ofix_flow_ctrl_v1", 0,
			     (void **) &ops, NULL));
	CHECK(ops && ops != &fake_flow_ops);
	/* the endpoint below belongs to the nested (core) domain here */
	CHECK(ops->available(ep));
	CHECK_PTR(hep->inner, fake.flow_ep);
	fake.flow_ep = NULL;
	CHECK_EQ(0, ops->enable(ep, 4));
	CHECK_PTR(hep->inner, fake.flow_ep);
	fake.flow_ep = NULL;
	ops->add_credits(ep, 2);
	CHECK_PTR(hep->inner, fake.flow_ep);

	ops->set_send_handler(fake.nested_domain, app_send_handler);
	CHECK_PTR(mrl_hook_domain_of(fake.nested_domain)->inner,
		  fake.flow_domain);
	CHECK(fake.send_handler && fake.send_handler != app_send_handler);
	CHECK_EQ(7, fake.send_handler(hep->inner, 7));
	CHECK_PTR(ep, app_send_handler_ep);
}

/* tcp hands rxm's get_rbuf its endpoint's context, which below the hook is
 * the wrapper: rxm must get back the context it gave fi_endpoint. */
static void
test_dynamic_rbuf_gets_the_utility_providers_context(void)
{
	struct rbuf_entry entry = {0};
	struct iovec iov;
	size_t count = 1;

	CHECK_FI(fi_set_ops(&fake.nested_domain->fid, "ofix_dynamic_rbuf_v2", 0,
			    &app_rbuf_ops, NULL));
	CHECK(fake.rbuf && fake.rbuf != &app_rbuf_ops);
	entry.ep_context = mrl_hook_ep_of(ep)->inner->fid.context;
	CHECK_PTR(&ep->fid, entry.ep_context);
	CHECK_EQ(0, fake.rbuf->get_rbuf(&entry, &iov, &count));
	CHECK_PTR((void *) "app-ep", app_rbuf_ep_context);
	CHECK_PTR(&ep->fid, entry.ep_context);
}

/* Other private names carry inner fids in their signatures. */
static void
test_unknown_private_ops_are_not_forwarded(void)
{
	void *ops = NULL;

	CHECK_EQ(-FI_ENOSYS,
		 fi_open_ops(&domain->fid, "fake_private_v1", 0, &ops, NULL));
	CHECK(!ops);
}

/* Apps call fi_senddata/fi_read/fi_tsend/fi_query_atomic unconditionally
 * on some paths: a short or missing inner table must not be called. */
static void
test_ops_missing_below_return_enosys(void)
{
	char buf[8] = {0};
	struct fi_atomic_attr attr;

	CHECK_EQ(sizeof(buf), fi_send(ep, buf, sizeof(buf), NULL, 0, NULL));
	CHECK_PTR(mrl_hook_ep_of(ep)->inner, fake.send_ep);
	CHECK_EQ(-FI_ENOSYS,
		 fi_senddata(ep, buf, sizeof(buf), NULL, 0, 0, NULL));
	CHECK_EQ(-FI_ENOSYS,
		 fi_read(ep, buf, sizeof(buf), NULL, 0, 0, 0, NULL));
	CHECK_EQ(-FI_ENOSYS, fi_tsend(ep, buf, sizeof(buf), NULL, 0, 1, NULL));
	CHECK_EQ(-FI_ENOSYS,
		 fi_atomic(ep, buf, 1, NULL, 0, 0, 0, FI_UINT8, FI_SUM, NULL));
	CHECK_EQ(-FI_ENOSYS, fi_getopt(&ep->fid, FI_OPT_ENDPOINT,
				       FI_OPT_MIN_MULTI_RECV, buf, NULL));
	CHECK_EQ(-FI_ENOSYS, fi_connect(ep, buf, NULL, 0));
	CHECK_EQ(-FI_ENOSYS,
		 fi_query_atomic(domain, FI_UINT8, FI_SUM, &attr, 0));
	CHECK_EQ(-FI_ENOSYS, fi_wait_open(fabric, NULL, NULL));
}

/* An alias is a second handle on the same endpoint: it must be a hook
 * object too, or traffic posted on it bypasses the hook. */
static void
test_alias_is_a_wrapped_endpoint(void)
{
	struct fid *alias = NULL;
	struct fi_alias arg = {.fid = &alias, .flags = FI_SEND};
	char buf[4] = {0};

	CHECK_FI(fi_control(&ep->fid, FI_ALIAS, &arg));
	CHECK(alias && mrl_hook_is_hook_fid(alias));
	CHECK(alias != &ep->fid);
	CHECK_PTR(mrl_hook_ep_of(ep),
		  mrl_hook_ep_of(container_of(alias, struct fid_ep, fid))
			  ->alias_of);
	CHECK_EQ(sizeof(buf), fi_send(container_of(alias, struct fid_ep, fid),
				      buf, sizeof(buf), NULL, 0, NULL));
	CHECK_PTR(mrl_hook_inner_fid(alias), &fake.send_ep->fid);
	CHECK_EQ(0, fi_close(alias));
}

/* With FI_PEER the context is the owner's peer structure, which the provider
 * reads (fi_peer(3)); replaced by the hook's wrapper, rxm 2.x's EQ on its
 * collective fabric failed -FI_EINVAL and with it every EQ on tcp;ofi_rxm.
 * Without FI_PEER the provider gets the hook's own fid, as before. */
static void
test_peer_contexts_reach_the_provider_as_given(void)
{
	char owner[64] = "the owner's peer context";
	struct fi_eq_attr eq_attr = {.flags = FI_PEER};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .flags = FI_PEER};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .flags = FI_PEER};
	struct fi_cntr_attr cntr_attr = {.flags = FI_PEER};
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_av *av;

	CHECK_FI(fi_eq_open(fabric, &eq_attr, &eq, owner));
	CHECK_PTR(owner, fake.open_context);
	CHECK_EQ(0, fi_close(&eq->fid));
	CHECK_FI(fi_cq_open(domain, &cq_attr, &cq, owner));
	CHECK_PTR(owner, fake.open_context);
	CHECK_EQ(0, fi_close(&cq->fid));
	CHECK_FI(fi_av_open(domain, &av_attr, &av, owner));
	CHECK_PTR(owner, fake.open_context);
	CHECK_EQ(0, fi_close(&av->fid));
	CHECK_FI(fi_cntr_open(domain, &cntr_attr, &cntr, owner));
	CHECK_PTR(owner, fake.open_context);
	CHECK_EQ(0, fi_close(&cntr->fid));

	eq_attr.flags = 0;
	CHECK_FI(fi_eq_open(fabric, &eq_attr, &eq, owner));
	CHECK_PTR(&eq->fid, fake.open_context);
	CHECK_PTR(owner, eq->fid.context);
	CHECK_EQ(0, fi_close(&eq->fid));
	av_attr.flags = 0;
	CHECK_FI(fi_av_open(domain, &av_attr, &av, owner));
	CHECK_PTR(&av->fid, fake.open_context);
	CHECK_EQ(0, fi_close(&av->fid));
}

/* From api_version 1.20 the application's fi_cq_err_entry is larger than
 * the one compiled here: the hook must hand its buffer down, not a copy. */
static void
test_cq_readerr_passes_the_applications_buffer(void)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT};
	union {
		struct fi_cq_err_entry e;
		char bigger[sizeof(struct fi_cq_err_entry) + 64];
	} buf;
	struct fid_cq *cq;

	CHECK_FI(fi_cq_open(domain, &attr, &cq, NULL));
	CHECK_EQ(1, fi_cq_readerr(cq, &buf.e, 0));
	CHECK_PTR(&buf.e, fake.readerr_buf);
	CHECK_EQ(FI_ECANCELED, buf.e.err);
	CHECK_EQ(-FI_ENOSYS, fi_cq_read(cq, &buf, 1));
	CHECK_EQ(0, fi_close(&cq->fid));
}

/* EQ events name the provider's fid: mapped back to the hook's; an event
 * the application wrote with its own fid, or none, stays as written. */
static void
test_eq_events_map_inner_fids_and_keep_app_written_ones(void)
{
	struct fi_eq_attr attr = {0};
	struct fi_eq_cm_entry entry;
	uint32_t event;
	struct fid_eq *eq;

	CHECK_FI(fi_eq_open(fabric, &attr, &eq, NULL));
	fake.eq_event = FI_CONNECTED;
	fake.eq_entry.fid = mrl_hook_inner_fid(&ep->fid);
	fake.eq_full = true;
	CHECK(fi_eq_read(eq, &event, &entry, sizeof(entry), 0) > 0);
	CHECK_EQ(FI_CONNECTED, event);
	CHECK_PTR(&ep->fid, entry.fid);

	entry.fid = &ep->fid;
	CHECK(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0) > 0);
	CHECK(fi_eq_read(eq, &event, &entry, sizeof(entry), 0) > 0);
	CHECK_PTR(&ep->fid, entry.fid);

	entry.fid = NULL;
	CHECK(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0) > 0);
	CHECK(fi_eq_read(eq, &event, &entry, sizeof(entry), 0) > 0);
	CHECK_PTR(NULL, entry.fid);
	CHECK_EQ(0, fi_close(&eq->fid));
}

/* ---- stepping aside (mrl_hook_fabric_bypass_domain) ------------------- */

static bool
bypass_always(const struct fi_info *i)
{
	(void) i;
	return true;
}

static const struct mrl_personality bypass_personality = {
	.name = "bypass-test",
	.bypass_inner = bypass_always,
};

/* A fresh outer/core pair whose outer domain opens the core one inside,
 * under a personality that lets inner domains step aside. */
struct pair {
	struct fid_fabric *outer, *core;
	struct fid_domain *domain;
	/* The set-up's nested pair, which main() closes: put back after. */
	struct fid_fabric *saved_fabric;
	struct fid_domain *saved_domain;
};

static void
pair_open(struct pair *p, bool eq_first)
{
	struct fid_eq *eq = NULL;

	*p = (struct pair){hooked_fabric("outer"), hooked_fabric("core"), NULL,
			   fake.nested_fabric, fake.nested_domain};
	CHECK(p->outer && p->core);
	if (eq_first) {
		CHECK_FI(fi_eq_open(p->core, NULL, &eq, NULL));
		CHECK(mrl_hook_is_hook_fid(&eq->fid));
		CHECK_EQ(0, fi_close(&eq->fid));
	}
	fake.nested_fabric = p->core;
	fake.nested_domain = NULL;
	mrl_hook_personality = &bypass_personality;
	CHECK_FI(fi_domain(p->outer, info, &p->domain, (void *) "app-domain"));
	mrl_hook_personality = NULL;
}

static void
pair_close(struct pair *p)
{
	CHECK_EQ(0, fi_close(&fake.nested_domain->fid));
	CHECK_EQ(0, fi_close(&p->domain->fid));
	CHECK_EQ(0, fi_close(&p->outer->fid));
	CHECK_EQ(0, fi_close(&p->core->fid));
	fake.nested_fabric = p->saved_fabric;
	fake.nested_domain = p->saved_domain;
}

/* The core domain a utility provider opens inside the outer instance is
 * handed over as the provider made it (its context the caller's), while
 * the outermost one stays wrapped; every later fabric-level object of the
 * core fabric is the provider's own too, or the provider would be given a
 * wrapper to bind its objects to. */
static void
test_an_inner_domain_that_may_step_aside_is_the_providers_own(void)
{
	struct pair p;
	struct fid_eq *eq = NULL;
	struct fid_domain *later = NULL;

	pair_open(&p, false);
	CHECK(mrl_hook_is_hook_fid(&p.domain->fid));
	CHECK(mrl_hook_domain_of(p.domain)->outermost);
	CHECK(fake.nested_domain &&
	      !mrl_hook_is_hook_fid(&fake.nested_domain->fid));
	CHECK_PTR(&fake_domain_fi_ops, fake.nested_domain->fid.ops);
	CHECK_PTR(NULL, fake.nested_domain->fid.context);
	CHECK_FI(fi_eq_open(p.core, NULL, &eq, (void *) "core-eq"));
	CHECK(!mrl_hook_is_hook_fid(&eq->fid));
	CHECK_PTR(&fake_eq_ops, eq->ops);
	CHECK_PTR((void *) "core-eq", eq->fid.context);
	CHECK_EQ(0, fi_close(&eq->fid));
	/* A later domain of that fabric follows it, even the outermost kind
	 * (warned): its objects must bind to the EQ's kind. */
	mrl_hook_personality = &bypass_personality;
	CHECK_FI(fi_domain(p.core, info, &later, NULL));
	mrl_hook_personality = NULL;
	CHECK(!mrl_hook_is_hook_fid(&later->fid));
	CHECK_EQ(0, fi_close(&later->fid));
	pair_close(&p);
}

/* The first object opened on a fabric decides: one that wrapped an EQ
 * keeps wrapping, so the EQ never meets an unwrapped domain's objects. */
static void
test_a_fabric_that_wrapped_an_object_keeps_wrapping(void)
{
	struct pair p;

	pair_open(&p, true);
	CHECK(fake.nested_domain &&
	      mrl_hook_is_hook_fid(&fake.nested_domain->fid));
	CHECK(!mrl_hook_domain_of(fake.nested_domain)->outermost);
	pair_close(&p);
}

int
main(int argc, char **argv)
{
	struct fid_fabric *core;

	mrlt_select(argc - 1, argv + 1);
	mrl_hook_prov = &hook_prov;
	mrl_hook_personality = NULL;
	info = fi_allocinfo();
	core = hooked_fabric("core");
	fake.nested_fabric = core;
	fabric = hooked_fabric("outer");
	if (!info || !core || !fabric ||
	    fi_domain(fabric, info, &domain, (void *) "app-domain") ||
	    fi_endpoint(fake.nested_domain ? fake.nested_domain : domain, info,
			&ep, (void *) "app-ep")) {
		printf("not ok 1 - fake provider set-up\n");
		return 1;
	}

	MRLT_RUN(test_domain_opened_inside_the_outer_open_is_inner);
	MRLT_RUN(test_flow_ctrl_ops_translate_endpoints_both_ways);
	MRLT_RUN(test_dynamic_rbuf_gets_the_utility_providers_context);
	MRLT_RUN(test_unknown_private_ops_are_not_forwarded);
	MRLT_RUN(test_ops_missing_below_return_enosys);
	MRLT_RUN(test_alias_is_a_wrapped_endpoint);
	MRLT_RUN(test_cq_readerr_passes_the_applications_buffer);
	MRLT_RUN(test_peer_contexts_reach_the_provider_as_given);
	MRLT_RUN(test_eq_events_map_inner_fids_and_keep_app_written_ones);
	MRLT_RUN(test_an_inner_domain_that_may_step_aside_is_the_providers_own);
	MRLT_RUN(test_a_fabric_that_wrapped_an_object_keeps_wrapping);

	if (fi_close(&ep->fid) || fi_close(&fake.nested_domain->fid) ||
	    fi_close(&domain->fid) || fi_close(&fabric->fid) ||
	    fi_close(&core->fid))
		printf("not ok - closing the fake objects\n");
	fi_freeinfo(info);
	return mrlt_done();
}
