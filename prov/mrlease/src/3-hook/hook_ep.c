/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint family: endpoints, scalable endpoints and their tx/rx
 * contexts, shared rx contexts (all struct mrl_ep, told apart by fclass),
 * shared tx contexts (struct mrl_stx), and the fi_ops_ep table they share
 * with passive endpoints. Data-transfer tables are in hook_xfer.c.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

static enum mrl_class
mrl_hook_ep_class(size_t fclass)
{
	switch (fclass) {
	case FI_CLASS_SEP:
		return MRL_CLASS_SEP;
	case FI_CLASS_TX_CTX:
		return MRL_CLASS_TX_CTX;
	case FI_CLASS_RX_CTX:
		return MRL_CLASS_RX_CTX;
	case FI_CLASS_SRX_CTX:
		return MRL_CLASS_SRX_CTX;
	default:
		return MRL_CLASS_EP;
	}
}

/* The fi_ops_ep of any object that has one: ep family, stx, pep. */
static struct fi_ops_ep *
mrl_hook_ep_ops_of(struct fid *fid, struct fid **inner)
{
	if (!mrl_hook_is_hook_fid(fid))
		return NULL;
	*inner = mrl_hook_inner_fid(fid);
	switch (mrl_hook_class_of(fid)) {
	case MRL_CLASS_EP:
	case MRL_CLASS_SEP:
	case MRL_CLASS_TX_CTX:
	case MRL_CLASS_RX_CTX:
	case MRL_CLASS_SRX_CTX:
		return container_of(*inner, struct fid_ep, fid)->ops;
	case MRL_CLASS_STX_CTX:
		return container_of(*inner, struct fid_stx, fid)->ops;
	case MRL_CLASS_PEP:
		return container_of(*inner, struct fid_pep, fid)->ops;
	default:
		return NULL;
	}
}

#define MRL_EP_OPS_OK(ops, op) FI_CHECK_OP(ops, struct fi_ops_ep, op)

static ssize_t
mrl_hook_ep_cancel(fid_t fid, void *context)
{
	struct fid *inner;
	struct fi_ops_ep *ops = mrl_hook_ep_ops_of(fid, &inner);

	if (!MRL_EP_OPS_OK(ops, cancel))
		return -FI_ENOSYS;
	return ops->cancel(inner, context);
}

static int
mrl_hook_ep_getopt(fid_t fid, int level, int optname, void *optval,
		   size_t *optlen)
{
	struct fid *inner;
	struct fi_ops_ep *ops = mrl_hook_ep_ops_of(fid, &inner);

	if (!MRL_EP_OPS_OK(ops, getopt))
		return -FI_ENOSYS;
	return ops->getopt(inner, level, optname, optval, optlen);
}

static int
mrl_hook_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		   size_t optlen)
{
	struct fid *inner;
	struct fi_ops_ep *ops = mrl_hook_ep_ops_of(fid, &inner);

	if (!MRL_EP_OPS_OK(ops, setopt))
		return -FI_ENOSYS;
	return ops->setopt(inner, level, optname, optval, optlen);
}

static int
mrl_hook_ep_ctx_open(struct fid_ep *sep_fid, int index, void *attr, bool tx,
		     struct fid_ep **ctx_fid, void *context)
{
	struct mrl_ep *sep = mrl_hook_ep_of(sep_fid);
	struct fi_ops_ep *ops = sep->inner->ops;
	struct mrl_ep_open opening = {0};
	struct mrl_ep *ctx;
	int ret;

	if (tx ? !MRL_EP_OPS_OK(ops, tx_ctx) : !MRL_EP_OPS_OK(ops, rx_ctx))
		return -FI_ENOSYS;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -FI_ENOMEM;
	ctx->domain = sep->domain;
	ctx->sep = sep;
	ctx->ep.fid.fclass = tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX;
	ctx->ep.fid.context = context;
	ctx->ep.fid.ops =
		&mrl_fid_ops[tx ? MRL_CLASS_TX_CTX : MRL_CLASS_RX_CTX];

	if (tx) {
		struct fi_tx_attr *txa = attr;

		opening.tx_attr = txa;
		ctx->caps = txa ? txa->caps : sep->caps;
		ret = ops->tx_ctx(sep->inner, index, txa, &ctx->inner,
				  &ctx->ep.fid);
	} else {
		struct fi_rx_attr *rxa = attr;

		opening.rx_attr = rxa;
		ctx->caps = rxa ? rxa->caps : sep->caps;
		ret = ops->rx_ctx(sep->inner, index, rxa, &ctx->inner,
				  &ctx->ep.fid);
	}
	if (ret)
		goto err_free;
	mrl_hook_adopt_inner(&ctx->inner->fid, &ctx->ep.fid);

	ret = mrl_hook_ep_finish(ctx, &opening);
	if (ret)
		goto err_close;
	*ctx_fid = &ctx->ep;
	return 0;

err_close:
	fi_close(&ctx->inner->fid);
err_free:
	free(ctx);
	return ret;
}

static int
mrl_hook_ep_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **tx_ep, void *context)
{
	return mrl_hook_ep_ctx_open(sep, index, attr, true, tx_ep, context);
}

static int
mrl_hook_ep_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context)
{
	return mrl_hook_ep_ctx_open(sep, index, attr, false, rx_ep, context);
}

static ssize_t
mrl_hook_ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);

	if (!MRL_EP_OPS_OK(ep->inner->ops, rx_size_left))
		return -FI_ENOSYS;
	return ep->inner->ops->rx_size_left(ep->inner);
}

static ssize_t
mrl_hook_ep_tx_size_left(struct fid_ep *ep_fid)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);

	if (!MRL_EP_OPS_OK(ep->inner->ops, tx_size_left))
		return -FI_ENOSYS;
	return ep->inner->ops->tx_size_left(ep->inner);
}

struct fi_ops_ep mrl_hook_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = mrl_hook_ep_cancel,
	.getopt = mrl_hook_ep_getopt,
	.setopt = mrl_hook_ep_setopt,
	.tx_ctx = mrl_hook_ep_tx_ctx,
	.rx_ctx = mrl_hook_ep_rx_ctx,
	.rx_size_left = mrl_hook_ep_rx_size_left,
	.tx_size_left = mrl_hook_ep_tx_size_left,
};

/* ---- wrapping ------------------------------------------------------ */

void
mrl_hook_ep_set_tables(struct mrl_ep *ep)
{
	/* Every table is installed even where the inner endpoint lacks it:
	 * its forwarders then return -FI_ENOSYS instead of the application
	 * calling through a NULL table. */
	ep->ep.ops = &mrl_hook_ep_ops;
	ep->ep.cm = &mrl_hook_ep_cm_ops;
	ep->ep.msg = &mrl_hook_ep_msg_ops;
	ep->ep.tagged = &mrl_hook_ep_tagged_ops;
	ep->ep.rma = &mrl_hook_ep_rma_ops;
	ep->ep.atomic = &mrl_hook_ep_atomic_ops;
	ep->ep.collective = &mrl_hook_ep_collective_ops;
}

/* After the inner object opened: tables, personality, count. */
int
mrl_hook_ep_finish(struct mrl_ep *ep, const struct mrl_ep_open *opening)
{
	int ret = 0;

	if (opening->tx_attr)
		ep->op_flags[0] = opening->tx_attr->op_flags;
	if (opening->rx_attr)
		ep->op_flags[1] = opening->rx_attr->op_flags;
	mrl_hook_ep_set_tables(ep);
	if (mrl_hook_personality && mrl_hook_personality->ep_open) {
		ep->opening = opening;
		ret = mrl_hook_personality->ep_open(ep);
		ep->opening = NULL;
	}
	if (ret)
		return ret;
	ret = mrl_hook_ep_shim_apply(ep);
	if (ret) {
		/* Nothing was posted: what ep_open made goes as at a close. */
		if (mrl_hook_personality && mrl_hook_personality->ep_close)
			mrl_hook_personality->ep_close(ep);
		return ret;
	}
	mrl_hook_count_open(mrl_hook_class_of(&ep->ep.fid));
	return 0;
}

int
mrl_hook_ep_wrap_alias(struct mrl_ep *aliased, struct fid_ep *inner,
		       uint64_t flags, struct mrl_ep **ep_out)
{
	static const struct mrl_ep_open opening; /* none of its own */
	size_t fclass = aliased->ep.fid.fclass;
	struct mrl_ep *ep;
	int ret;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = aliased->domain;
	ep->inner = inner;
	ep->ep.fid.fclass = fclass;
	ep->ep.fid.context = aliased->ep.fid.context;
	ep->ep.fid.ops = &mrl_fid_ops[mrl_hook_ep_class(fclass)];
	ep->alias_of = aliased;
	ep->sep = aliased->sep;
	ep->caps = aliased->caps;
	ep->bound = aliased->bound;
	/* fi_endpoint(3): the alias's flags are its defaults for the
	 * direction they name. */
	ep->op_flags[0] = aliased->op_flags[0];
	ep->op_flags[1] = aliased->op_flags[1];
	mrl_hook_ep_opflags_set(ep, flags,
				false); /* mrl_hook_ep_finish applies */
	/* Opened by the provider without our context: point it at us so
	 * events about it map back. */
	inner->fid.context = &ep->ep.fid;

	ret = mrl_hook_ep_finish(ep, &opening);
	if (ret)
		goto err_free;
	*ep_out = ep;
	return 0;

err_free:
	free(ep);
	return ret;
}

int
mrl_hook_ep_record_bind(struct mrl_ep *ep, struct fid *hook_bfid,
			uint64_t flags)
{
	struct mrl_ep_bindings *b = &ep->bound;

	if (!mrl_hook_is_hook_fid(hook_bfid))
		return 0;

	switch (mrl_hook_class_of(hook_bfid)) {
	case MRL_CLASS_CQ: {
		struct mrl_cq *cq =
			container_of(hook_bfid, struct mrl_cq, cq.fid);

		if (flags & FI_TRANSMIT) {
			b->tx_cq = cq;
			b->tx_cq_flags = flags;
		}
		if (flags & FI_RECV) {
			b->rx_cq = cq;
			b->rx_cq_flags = flags;
		}
		break;
	}
	case MRL_CLASS_CNTR: {
		struct mrl_cntr *c =
			container_of(hook_bfid, struct mrl_cntr, cntr.fid);

		if (flags & FI_SEND)
			b->send_cntr = c;
		if (flags & FI_RECV)
			b->recv_cntr = c;
		if (flags & FI_READ)
			b->read_cntr = c;
		if (flags & FI_WRITE)
			b->write_cntr = c;
		if (flags & FI_REMOTE_READ)
			b->remote_read_cntr = c;
		if (flags & FI_REMOTE_WRITE)
			b->remote_write_cntr = c;
		break;
	}
	case MRL_CLASS_AV:
		b->av = container_of(hook_bfid, struct mrl_av, av.fid);
		break;
	case MRL_CLASS_EQ:
		b->eq = container_of(hook_bfid, struct mrl_eq, eq.fid);
		break;
	case MRL_CLASS_SRX_CTX:
		b->srx = container_of(hook_bfid, struct mrl_ep, ep.fid);
		break;
	case MRL_CLASS_STX_CTX:
		b->stx = container_of(hook_bfid, struct mrl_stx, stx.fid);
		break;
	default:
		break;
	}
	return 0;
}

/* ---- opening ------------------------------------------------------- */

static struct mrl_ep *
mrl_hook_ep_alloc(struct mrl_domain *dom, size_t fclass, void *context)
{
	struct mrl_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->domain = dom;
	ep->ep.fid.fclass = fclass;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &mrl_fid_ops[mrl_hook_ep_class(fclass)];
	return ep;
}

/*
 * fi_endpoint, fi_endpoint2 and fi_scalable_ep. info->handle may be our
 * passive endpoint (translated in place for the call and restored: the
 * info may be larger than our compiled struct) or the provider's connreq
 * from an FI_CONNREQ event (passed as is). endpoint2 without flags is
 * fi_endpoint below a domain that has no endpoint2, as libfabric's
 * fi_endpoint2 makes it.
 */
static int
mrl_hook_ep_open_common(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep_fid, uint64_t flags, int how,
			void *context)
{
	enum { OPEN_EP, OPEN_EP2, OPEN_SEP };
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
	struct fi_ops_domain *ops = dom->inner->ops;
	struct fid *app_handle = NULL;
	bool peer = how == OPEN_EP2 && (flags & FI_PEER);
	struct mrl_ep_open opening = {
		.info = info,
		.flags = flags,
		.tx_attr = info ? info->tx_attr : NULL,
		.rx_attr = info ? info->rx_attr : NULL,
	};
	void *inner_ctx;
	struct mrl_ep *ep;
	int ret;

	if (how == OPEN_EP2 && !flags &&
	    !FI_CHECK_OP(ops, struct fi_ops_domain, endpoint2))
		how = OPEN_EP;
	if (how == OPEN_EP ?
		    !FI_CHECK_OP(ops, struct fi_ops_domain, endpoint) :
	    how == OPEN_EP2 ?
		    !FI_CHECK_OP(ops, struct fi_ops_domain, endpoint2) :
		    !FI_CHECK_OP(ops, struct fi_ops_domain, scalable_ep))
		return -FI_ENOSYS;

	ep = mrl_hook_ep_alloc(
		dom, how == OPEN_SEP ? FI_CLASS_SEP : FI_CLASS_EP, context);
	if (!ep)
		return -FI_ENOMEM;
	if (info)
		ep->caps = info->caps;
	inner_ctx = peer ? context : &ep->ep.fid;

	if (info && info->handle && mrl_hook_is_hook_fid(info->handle)) {
		app_handle = info->handle;
		info->handle = mrl_hook_inner_fid(app_handle);
	}
	if (how == OPEN_EP)
		ret = ops->endpoint(dom->inner, info, &ep->inner, inner_ctx);
	else if (how == OPEN_EP2)
		ret = ops->endpoint2(dom->inner, info, &ep->inner, flags,
				     inner_ctx);
	else
		ret = ops->scalable_ep(dom->inner, info, &ep->inner, inner_ctx);
	if (app_handle)
		info->handle = app_handle;
	if (ret)
		goto err_free;
	if (!peer)
		mrl_hook_adopt_inner(&ep->inner->fid, &ep->ep.fid);

	ret = mrl_hook_ep_finish(ep, &opening);
	if (ret)
		goto err_close;
	*ep_fid = &ep->ep;
	return 0;

err_close:
	fi_close(&ep->inner->fid);
err_free:
	free(ep);
	return ret;
}

int
mrl_hook_endpoint(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep, void *context)
{
	return mrl_hook_ep_open_common(domain, info, ep, 0, 0, context);
}

int
mrl_hook_endpoint2(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, uint64_t flags, void *context)
{
	return mrl_hook_ep_open_common(domain, info, ep, flags, 1, context);
}

int
mrl_hook_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **sep, void *context)
{
	return mrl_hook_ep_open_common(domain, info, sep, 0, 2, context);
}

int
mrl_hook_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		 struct fid_ep **rx_ep, void *context)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
	struct mrl_ep *srx;
	/* A peer SRX context (FI_PEER) carries the owner's ops: pass it as
	 * is. */
	bool peer = attr && (attr->op_flags & FI_PEER);
	struct mrl_ep_open opening = {.rx_attr = attr};
	int ret;

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, srx_ctx))
		return -FI_ENOSYS;

	srx = mrl_hook_ep_alloc(dom, FI_CLASS_SRX_CTX, context);
	if (!srx)
		return -FI_ENOMEM;
	if (attr)
		srx->caps = attr->caps;

	ret = dom->inner->ops->srx_ctx(dom->inner, attr, &srx->inner,
				       peer ? context : &srx->ep.fid);
	if (ret)
		goto err_free;
	if (!peer)
		mrl_hook_adopt_inner(&srx->inner->fid, &srx->ep.fid);
	ret = mrl_hook_ep_finish(srx, &opening);
	if (ret)
		goto err_close;
	*rx_ep = &srx->ep;
	return 0;

err_close:
	fi_close(&srx->inner->fid);
err_free:
	free(srx);
	return ret;
}

/* ---- shared tx context --------------------------------------------- */

int
mrl_hook_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		 struct fid_stx **stx_fid, void *context)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
	struct mrl_stx *stx;
	int ret;

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, stx_ctx))
		return -FI_ENOSYS;

	stx = calloc(1, sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	stx->domain = dom;
	stx->stx.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx.fid.context = context;
	stx->stx.fid.ops = &mrl_fid_ops[MRL_CLASS_STX_CTX];
	stx->stx.ops = &mrl_hook_ep_ops;

	ret = dom->inner->ops->stx_ctx(dom->inner, attr, &stx->inner,
				       &stx->stx.fid);
	if (ret)
		goto err_free;
	mrl_hook_adopt_inner(&stx->inner->fid, &stx->stx.fid);

	mrl_hook_count_open(MRL_CLASS_STX_CTX);
	*stx_fid = &stx->stx;
	return 0;

err_free:
	free(stx);
	return ret;
}
