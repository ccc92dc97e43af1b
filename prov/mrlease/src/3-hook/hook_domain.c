/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Domains: open (with the installed-twice bookkeeping), close, the domain
 * ops table, and the provider-private fi_open_ops names that utility
 * providers use on the core domains below them.
 *
 * Provider-private fi_open_ops / fi_set_ops names (libfabric 1.17)
 * -----------------------------------------------------------------
 * Utility providers open these on core objects that, under FI_HOOK, are
 * our wrappers. Ops tables of the object below take its own (inner) fids,
 * so a name is only forwarded when every fid in its signature is
 * translated:
 *
 *   "ofix_flow_ctrl_v1" (OFI_OPS_FLOW_CTRL), on a domain. Opened by ofi_rxm
 *       on its msg domain; implemented by verbs (tcp answers -FI_ENOSYS and
 *       rxm falls back to no flow control). Translated: available(),
 *       enable() and add_credits() get the inner endpoint;
 *       set_send_handler() gets the inner domain and a trampoline that maps
 *       the inner endpoint it is called with back to the hook endpoint
 *       before calling rxm's handler.
 *   "ofix_dynamic_rbuf_v2" (OFI_OPS_DYNAMIC_RBUF), fi_set_ops on a domain.
 *       Set by ofi_rxm (1.17) on its msg domain; tcp then asks rxm for a
 *       receive buffer per incoming message through get_rbuf(entry, ...).
 *       Translated: the inner domain gets a trampoline that replaces
 *       entry->ep_context (the inner endpoint's context, i.e. our wrapper)
 *       with the wrapper's own context (rxm's connection) around rxm's
 *       get_rbuf.
 *   "mrlease_ops_v1" (FI_MRLEASE_OPS_1), on a fabric or domain: routed to
 *       the plugin's personality (-FI_ENOSYS without one).
 *   "mrlease_debug_v1" (MRL_DEBUG_OPS_1), on any hook object: test-only
 *       counters (mrl_hook_debug.h).
 *   Any other name (fi_open_ops or fi_set_ops, any object): -FI_ENOSYS,
 *       logged at FI_LOG_INFO and counted (MRL_DEBUG_OPS_REFUSED). ofi_rxd
 * (1.17) opens no provider-private ops on its udp objects.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

_Thread_local int mrl_hook_nesting;

/* ---- provider-private ops ------------------------------------------ */

#define MRL_OFI_OPS_FLOW_CTRL	 "ofix_flow_ctrl_v1"
#define MRL_OFI_OPS_DYNAMIC_RBUF "ofix_dynamic_rbuf_v2"

typedef ssize_t (*mrl_flow_send_fn)(struct fid_ep *ep, uint64_t credits);

/* Layout of libfabric's struct ofi_ops_flow_ctrl (ofi_util.h, not installed).
 */
struct mrl_ofi_ops_flow_ctrl {
	size_t size;
	bool (*available)(struct fid_ep *ep);
	int (*enable)(struct fid_ep *ep, uint64_t threshold);
	void (*add_credits)(struct fid_ep *ep, uint64_t credits);
	void (*set_send_handler)(struct fid_domain *domain,
				 mrl_flow_send_fn send_handler);
};

/* Layout of libfabric's struct ofi_cq_rbuf_entry / ofi_ops_dynamic_rbuf
 * as named by "ofix_dynamic_rbuf_v2". */
struct mrl_ofi_cq_rbuf_entry {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	void *ep_context;
};

struct mrl_ofi_ops_dynamic_rbuf {
	size_t size;
	ssize_t (*get_rbuf)(struct mrl_ofi_cq_rbuf_entry *entry,
			    struct iovec *iov, size_t *count);
};

struct mrl_util_ops {
	/* OFI_OPS_FLOW_CTRL of the inner domain, and the utility provider's
	 * send handler (called with hook endpoints). */
	struct mrl_ofi_ops_flow_ctrl *flow_inner;
	mrl_flow_send_fn send_handler;
	/* OFI_OPS_DYNAMIC_RBUF the utility provider set on us (it expects
	 * entry->ep_context to be its own endpoint context). */
	struct mrl_ofi_ops_dynamic_rbuf *rbuf_outer;
};

static struct mrl_util_ops *
mrl_hook_util_ops_get(struct mrl_domain *domain)
{
	if (!domain->util_ops)
		domain->util_ops = calloc(1, sizeof(*domain->util_ops));
	return domain->util_ops;
}

static struct mrl_ep *
mrl_hook_util_ep(struct fid *fid)
{
	if (!fid || !mrl_hook_is_hook_fid(fid) ||
	    mrl_hook_class_of(fid) < MRL_CLASS_EP ||
	    mrl_hook_class_of(fid) > MRL_CLASS_SRX_CTX)
		return NULL;
	return container_of(fid, struct mrl_ep, ep.fid);
}

#define MRL_FLOW_OK(u, op)                                                     \
	((u) && (u)->flow_inner &&                                             \
	 (u)->flow_inner->size > offsetof(struct mrl_ofi_ops_flow_ctrl, op) && \
	 (u)->flow_inner->op)

static bool
mrl_hook_flow_available(struct fid_ep *ep_fid)
{
	struct mrl_ep *ep = mrl_hook_util_ep(ep_fid ? &ep_fid->fid : NULL);

	if (!ep || !MRL_FLOW_OK(ep->domain->util_ops, available))
		return false;
	return ep->domain->util_ops->flow_inner->available(ep->inner);
}

static int
mrl_hook_flow_enable(struct fid_ep *ep_fid, uint64_t threshold)
{
	struct mrl_ep *ep = mrl_hook_util_ep(ep_fid ? &ep_fid->fid : NULL);

	if (!ep)
		return -FI_EINVAL;
	if (!MRL_FLOW_OK(ep->domain->util_ops, enable))
		return -FI_ENOSYS;
	return ep->domain->util_ops->flow_inner->enable(ep->inner, threshold);
}

static void
mrl_hook_flow_add_credits(struct fid_ep *ep_fid, uint64_t credits)
{
	struct mrl_ep *ep = mrl_hook_util_ep(ep_fid ? &ep_fid->fid : NULL);

	if (ep && MRL_FLOW_OK(ep->domain->util_ops, add_credits))
		ep->domain->util_ops->flow_inner->add_credits(ep->inner,
							      credits);
}

/* Called by the provider below with its own endpoint. */
static ssize_t
mrl_hook_flow_send_trampoline(struct fid_ep *inner_ep, uint64_t credits)
{
	struct mrl_ep *ep = mrl_hook_util_ep(mrl_hook_of_inner(&inner_ep->fid));

	if (!ep) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_DATA,
			"flow control: endpoint %p is not hooked\n",
			(void *) inner_ep);
		return -FI_EINVAL;
	}
	if (!ep->domain->util_ops || !ep->domain->util_ops->send_handler)
		return -FI_ENOSYS;
	return ep->domain->util_ops->send_handler(&ep->ep, credits);
}

static void
mrl_hook_flow_set_send_handler(struct fid_domain *domain_fid,
			       mrl_flow_send_fn send_handler)
{
	struct mrl_domain *domain;

	if (!domain_fid || !mrl_hook_is_hook_fid(&domain_fid->fid) ||
	    mrl_hook_class_of(&domain_fid->fid) != MRL_CLASS_DOMAIN)
		return;
	domain = mrl_hook_domain_of(domain_fid);
	if (!MRL_FLOW_OK(domain->util_ops, set_send_handler))
		return;
	domain->util_ops->send_handler = send_handler;
	domain->util_ops->flow_inner->set_send_handler(
		domain->inner,
		send_handler ? mrl_hook_flow_send_trampoline : NULL);
}

static struct mrl_ofi_ops_flow_ctrl mrl_hook_flow_ctrl_ops = {
	.size = sizeof(struct mrl_ofi_ops_flow_ctrl),
	.available = mrl_hook_flow_available,
	.enable = mrl_hook_flow_enable,
	.add_credits = mrl_hook_flow_add_credits,
	.set_send_handler = mrl_hook_flow_set_send_handler,
};

static int
mrl_hook_domain_open_flow_ctrl(struct mrl_domain *domain, uint64_t flags,
			       void **ops, void *context)
{
	struct mrl_ofi_ops_flow_ctrl *inner_ops = NULL;
	struct fid *inner = &domain->inner->fid;
	struct mrl_util_ops *util;
	int ret;

	if (!FI_CHECK_OP(inner->ops, struct fi_ops, ops_open))
		return -FI_ENOSYS;
	ret = inner->ops->ops_open(inner, MRL_OFI_OPS_FLOW_CTRL, flags,
				   (void **) &inner_ops, context);
	if (ret)
		return ret;
	if (!inner_ops)
		return -FI_ENOSYS;
	util = mrl_hook_util_ops_get(domain);
	if (!util)
		return -FI_ENOMEM;
	util->flow_inner = inner_ops;
	mrl_hook_count(MRL_DEBUG_FLOW_CTRL_OPENED);
	*ops = &mrl_hook_flow_ctrl_ops;
	return 0;
}

/* Called by the provider below with an entry naming its endpoint's
 * context, which is our wrapper: the utility provider gets its own. */
static ssize_t
mrl_hook_rbuf_get_trampoline(struct mrl_ofi_cq_rbuf_entry *entry,
			     struct iovec *iov, size_t *count)
{
	struct mrl_ep *ep = mrl_hook_util_ep(entry->ep_context);
	struct mrl_ofi_ops_dynamic_rbuf *outer;
	ssize_t ret;

	if (!ep || !ep->domain->util_ops || !ep->domain->util_ops->rbuf_outer) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_DATA,
			"dynamic rbuf: endpoint context %p is not hooked\n",
			entry->ep_context);
		return -FI_EINVAL;
	}
	outer = ep->domain->util_ops->rbuf_outer;
	mrl_hook_count(MRL_DEBUG_DYN_RBUF_CALLS);
	entry->ep_context = ep->ep.fid.context;
	ret = outer->get_rbuf(entry, iov, count);
	entry->ep_context = &ep->ep.fid;
	return ret;
}

static struct mrl_ofi_ops_dynamic_rbuf mrl_hook_rbuf_ops = {
	.size = sizeof(struct mrl_ofi_ops_dynamic_rbuf),
	.get_rbuf = mrl_hook_rbuf_get_trampoline,
};

static int
mrl_hook_domain_set_dynamic_rbuf(struct mrl_domain *domain, uint64_t flags,
				 void *ops, void *context)
{
	struct mrl_ofi_ops_dynamic_rbuf *outer = ops;
	struct fid *inner = &domain->inner->fid;
	struct mrl_util_ops *util;
	int ret;

	if (!outer || outer->size < sizeof(*outer) || !outer->get_rbuf)
		return -FI_EINVAL;
	if (!FI_CHECK_OP(inner->ops, struct fi_ops, ops_set))
		return -FI_ENOSYS;
	util = mrl_hook_util_ops_get(domain);
	if (!util)
		return -FI_ENOMEM;
	util->rbuf_outer = outer;
	ret = inner->ops->ops_set(inner, MRL_OFI_OPS_DYNAMIC_RBUF, flags,
				  &mrl_hook_rbuf_ops, context);
	if (ret) {
		util->rbuf_outer = NULL;
		return ret;
	}
	mrl_hook_count(MRL_DEBUG_DYN_RBUF_SET);
	return 0;
}

int
mrl_hook_domain_ops_open(struct mrl_domain *domain, const char *name,
			 uint64_t flags, void **ops, void *context,
			 bool *handled)
{
	*handled = !strcmp(name, MRL_OFI_OPS_FLOW_CTRL);
	if (*handled)
		return mrl_hook_domain_open_flow_ctrl(domain, flags, ops,
						      context);
	return -FI_ENOSYS;
}

int
mrl_hook_domain_ops_set(struct mrl_domain *domain, const char *name,
			uint64_t flags, void *ops, void *context, bool *handled)
{
	*handled = !strcmp(name, MRL_OFI_OPS_DYNAMIC_RBUF);
	if (*handled)
		return mrl_hook_domain_set_dynamic_rbuf(domain, flags, ops,
							context);
	return -FI_ENOSYS;
}

/* ---- domain ops --------------------------------------------------- */

static int
mrl_hook_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		      enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, query_atomic))
		return -FI_ENOSYS;
	return dom->inner->ops->query_atomic(dom->inner, datatype, op, attr,
					     flags);
}

static int
mrl_hook_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			  struct fi_collective_attr *attr, uint64_t flags)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain,
			 query_collective))
		return -FI_ENOSYS;
	return dom->inner->ops->query_collective(dom->inner, coll, attr, flags);
}

struct fi_ops_domain mrl_hook_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = mrl_hook_av_open,
	.cq_open = mrl_hook_cq_open,
	.endpoint = mrl_hook_endpoint,
	.scalable_ep = mrl_hook_scalable_ep,
	.cntr_open = mrl_hook_cntr_open,
	.poll_open = mrl_hook_poll_open,
	.stx_ctx = mrl_hook_stx_ctx,
	.srx_ctx = mrl_hook_srx_ctx,
	.query_atomic = mrl_hook_query_atomic,
	.query_collective = mrl_hook_query_collective,
	.endpoint2 = mrl_hook_endpoint2,
};

/* ---- open / close ------------------------------------------------- */

static void
mrl_hook_domain_record_info(struct mrl_domain *dom, const struct fi_info *info)
{
	const char *prov = NULL;

	if (info->fabric_attr && info->fabric_attr->prov_name)
		prov = info->fabric_attr->prov_name;
	else if (dom->fabric->inner_prov && dom->fabric->inner_prov->name)
		prov = dom->fabric->inner_prov->name;
	snprintf(dom->prov_name, sizeof(dom->prov_name), "%s",
		 prov ? prov : "?");

	dom->caps = info->caps;
	dom->mode = info->mode;
	if (info->domain_attr) {
		dom->mr_mode = info->domain_attr->mr_mode;
		dom->mr_key_size = info->domain_attr->mr_key_size;
		dom->threading = info->domain_attr->threading;
	}
	dom->api_version = dom->fabric->fabric.api_version;
}

/* A domain of a bypassed fabric (mrl_hook_fabric_bypass_domain): the
 * provider's own, with the caller's context. */
static int
mrl_hook_domain_open_bypassed(struct mrl_fabric *fab, struct fi_info *info,
			      struct fid_domain **domain, uint64_t flags,
			      bool v2, void *context)
{
	int ret =
		v2 ? fab->inner->ops->domain2(fab->inner, info, domain, flags,
					      context) :
		     fab->inner->ops->domain(fab->inner, info, domain, context);

	if (ret)
		return ret;
	mrl_hook_count(MRL_DEBUG_INNER_BYPASSED);
	/* Only the fabric's first domain decided; a later one that would
	 * have been hooked is not, since its objects bind to the others. */
	if (mrl_hook_nesting == 0 || !mrl_hook_personality->bypass_inner(info))
		FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
			"domain %s over %s is not hooked: an earlier domain of "
			"its fabric stepped aside (set FI_MRLEASE_HOOK_INNER=1 "
			"to hook them all)\n",
			info->domain_attr && info->domain_attr->name ?
				info->domain_attr->name :
				"?",
			fab->inner_prov && fab->inner_prov->name ?
				fab->inner_prov->name :
				"?");
	FI_INFO(mrl_hook_prov, FI_LOG_DOMAIN,
		"%s left domain %s over %s unhooked (inner instance with "
		"nothing to do: its fabric's objects are the provider's own)\n",
		mrl_hook_personality && mrl_hook_personality->name ?
			mrl_hook_personality->name :
			mrl_hook_prov->name,
		info->domain_attr && info->domain_attr->name ?
			info->domain_attr->name :
			"?",
		fab->inner_prov && fab->inner_prov->name ?
			fab->inner_prov->name :
			"?");
	return 0;
}

static int
mrl_hook_domain_open_common(struct fid_fabric *fabric, struct fi_info *info,
			    struct fid_domain **domain, uint64_t flags, bool v2,
			    void *context)
{
	struct mrl_fabric *fab =
		container_of(fabric, struct mrl_fabric, fabric);
	struct mrl_domain *dom;
	/* A peer domain context (FI_PEER) refers to the owner's objects and
	 * must reach the provider as given. */
	bool peer = v2 && (flags & FI_PEER);
	int ret;

	if (!info)
		return -FI_EINVAL;
	if (v2 ? !FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, domain2) :
		 !FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, domain))
		return -FI_ENOSYS;
	if (mrl_hook_fabric_bypass_domain(fab, info))
		return mrl_hook_domain_open_bypassed(fab, info, domain, flags,
						     v2, context);

	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;

	dom->fabric = fab;
	dom->domain.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain.fid.context = context;
	dom->domain.fid.ops = &mrl_fid_ops[MRL_CLASS_DOMAIN];
	dom->domain.ops = &mrl_hook_domain_ops;
	dom->domain.mr = &mrl_hook_domain_mr_ops;
	dom->outermost = mrl_hook_nesting == 0;
	mrl_hook_domain_record_info(dom, info);

	/* A utility provider opens its core domain inside this call: the
	 * instance hooking that core domain sees mrl_hook_nesting > 0. */
	mrl_hook_nesting++;
	if (v2)
		ret = fab->inner->ops->domain2(
			fab->inner, info, &dom->inner, flags,
			peer ? context : &dom->domain.fid);
	else
		ret = fab->inner->ops->domain(fab->inner, info, &dom->inner,
					      &dom->domain.fid);
	mrl_hook_nesting--;
	if (ret)
		goto err_free;

	if (mrl_hook_personality && mrl_hook_personality->domain_open) {
		ret = mrl_hook_personality->domain_open(dom);
		if (ret) {
			FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
				"personality refused domain over %s: %s\n",
				dom->prov_name, fi_strerror(-ret));
			goto err_close;
		}
	}

	/* Events name the provider's domain (FI_MR_COMPLETE on some). */
	mrl_hook_adopt_inner(&dom->inner->fid, &dom->domain.fid);
	mrl_hook_count_open(MRL_CLASS_DOMAIN);
	mrl_hook_count(dom->outermost ? MRL_DEBUG_OUTERMOST_DOMAINS :
					MRL_DEBUG_INNER_DOMAINS);
	FI_INFO(mrl_hook_prov, FI_LOG_DOMAIN,
		"%s hooked domain %s over %s (%s instance)\n",
		mrl_hook_personality && mrl_hook_personality->name ?
			mrl_hook_personality->name :
			mrl_hook_prov->name,
		info->domain_attr && info->domain_attr->name ?
			info->domain_attr->name :
			"?",
		dom->prov_name, dom->outermost ? "outermost" : "inner");
	*domain = &dom->domain;
	return 0;

err_close:
	fi_close(&dom->inner->fid);
err_free:
	free(dom);
	return ret;
}

int
mrl_hook_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context)
{
	return mrl_hook_domain_open_common(fabric, info, domain, 0, false,
					   context);
}

int
mrl_hook_domain2_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, uint64_t flags, void *context)
{
	return mrl_hook_domain_open_common(fabric, info, domain, flags, true,
					   context);
}
