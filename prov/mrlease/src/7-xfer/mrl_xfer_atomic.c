/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics: up to three local operand sets per call (source, compare,
 * result), each an fi_ioc array counted in datatype elements. All three are
 * resolved into one operation context. Single-buffer calls go out as their
 * v form (same semantics) or, where the route needs FI_COMPLETION, as the
 * msg form.
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_xfer_post.h"

struct fi_ops_atomic mrl_xfer_atomic_ops;

enum mrl_atomic_kind { MRL_ATOMIC_WRITE, MRL_ATOMIC_FETCH, MRL_ATOMIC_COMPARE };

/* The local operand sets of one atomic call. */
struct mrl_atomic_ops {
	const struct fi_ioc *src;
	void **src_desc;
	size_t src_count;
	const struct fi_ioc *cmp;
	void **cmp_desc;
	size_t cmp_count;
	struct fi_ioc *res;
	void **res_desc;
	size_t res_count;
};

static bool
mrl_xfer_atomic_needs_lease(struct mrl_xep *x, const struct mrl_atomic_ops *a,
			    enum fi_datatype datatype, size_t min)
{
	int src, cmp = 0, res = 0;

	src = mrl_xfer_ioc_below_min(a->src, a->src_desc, a->src_count,
				     datatype, min);
	if (src < 0 ||
	    (cmp = mrl_xfer_ioc_below_min(a->cmp, a->cmp_desc, a->cmp_count,
					  datatype, min)) < 0 ||
	    (res = mrl_xfer_ioc_below_min(a->res, a->res_desc, a->res_count,
					  datatype, min)) < 0)
		return true;
	if (src + cmp + res)
		mrl_cache_count_below_min(x->cache, (uint64_t) (src + cmp + res));
	return false;
}

/* Resolve all three sets into src/cmp/res descriptor arrays. */
static int
mrl_xfer_atomic_resolve(struct mrl_post *p, const struct mrl_atomic_ops *a,
			enum fi_datatype datatype, size_t min, void **src,
			void **cmp, void **res)
{
	int ret;

	if (a->src_count > MRL_XFER_IOV_MAX ||
	    a->cmp_count > MRL_XFER_IOV_MAX || a->res_count > MRL_XFER_IOV_MAX)
		return -FI_EINVAL;
	ret = mrl_xfer_post_ioc(p, a->src, a->src_desc, a->src_count, datatype,
				min, src);
	if (!ret)
		ret = mrl_xfer_post_ioc(p, a->cmp, a->cmp_desc, a->cmp_count,
					datatype, min, cmp);
	if (!ret)
		ret = mrl_xfer_post_ioc(p, a->res, a->res_desc, a->res_count,
					datatype, min, res);
	return ret;
}

static ssize_t
mrl_xfer_atomic_msg_slow(struct mrl_ep *ep, enum mrl_atomic_kind kind,
			 const struct fi_msg_atomic *msg,
			 const struct mrl_atomic_ops *a, uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	void *src[MRL_XFER_IOV_MAX], *cmp[MRL_XFER_IOV_MAX];
	void *res[MRL_XFER_IOV_MAX];
	struct fi_msg_atomic m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_xfer_post_init(&p, x, MRL_TX);
	ret = mrl_xfer_atomic_resolve(&p, a, msg->datatype,
				      x->dir[MRL_TX].min_msg, src, cmp, res);
	if (ret)
		return mrl_xfer_post_end(&p, ret);
	m.desc = src;
	m.context = mrl_xfer_post_context(&p, msg->context, &flags);
	switch (kind) {
	case MRL_ATOMIC_WRITE:
		ret = fi_atomicmsg(ep->inner, &m, flags);
		break;
	case MRL_ATOMIC_FETCH:
		ret = fi_fetch_atomicmsg(ep->inner, &m, a->res, res,
					 a->res_count, flags);
		break;
	case MRL_ATOMIC_COMPARE:
		ret = fi_compare_atomicmsg(ep->inner, &m, a->cmp, cmp,
					   a->cmp_count, a->res, res,
					   a->res_count, flags);
		break;
	}
	return mrl_xfer_post_end(&p, ret);
}

/* The slow path of the non-msg calls, issued as their v form. */
static ssize_t
mrl_xfer_atomic_slow(struct mrl_ep *ep, enum mrl_atomic_kind kind,
		     const struct mrl_atomic_ops *a, fi_addr_t peer,
		     uint64_t addr, uint64_t key, enum fi_datatype datatype,
		     enum fi_op op, void *context)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[MRL_TX];
	void *src[MRL_XFER_IOV_MAX], *cmp[MRL_XFER_IOV_MAX];
	void *res[MRL_XFER_IOV_MAX];
	struct fi_rma_ioc rma_ioc = {.addr = addr, .key = key};
	uint64_t flags = d->op_flags;
	struct mrl_post p;
	void *ctx;
	ssize_t ret;

	if (d->convert) {
		struct fi_msg_atomic msg = {
			.msg_iov = a->src,
			.desc = a->src_desc,
			.iov_count = a->src_count,
			.addr = peer,
			.rma_iov = &rma_ioc,
			.rma_iov_count = 1,
			.datatype = datatype,
			.op = op,
			.context = context,
		};

		for (size_t i = 0; i < a->src_count; i++)
			rma_ioc.count += a->src[i].count;
		return mrl_xfer_atomic_msg_slow(ep, kind, &msg, a, flags);
	}

	mrl_xfer_post_init(&p, x, MRL_TX);
	ret = mrl_xfer_atomic_resolve(&p, a, datatype, d->min, src, cmp, res);
	if (ret)
		return mrl_xfer_post_end(&p, ret);
	ctx = mrl_xfer_post_context(&p, context, &flags);
	switch (kind) {
	case MRL_ATOMIC_WRITE:
		ret = fi_atomicv(ep->inner, a->src, src, a->src_count, peer,
				 addr, key, datatype, op, ctx);
		break;
	case MRL_ATOMIC_FETCH:
		ret = fi_fetch_atomicv(ep->inner, a->src, src, a->src_count,
				       a->res, res, a->res_count, peer, addr,
				       key, datatype, op, ctx);
		break;
	case MRL_ATOMIC_COMPARE:
		ret = fi_compare_atomicv(ep->inner, a->src, src, a->src_count,
					 a->cmp, cmp, a->cmp_count, a->res, res,
					 a->res_count, peer, addr, key,
					 datatype, op, ctx);
		break;
	}
	return mrl_xfer_post_end(&p, ret);
}

static ssize_t
mrl_xfer_atomic_write(struct fid_ep *fep, const void *buf, size_t count,
		      void *desc, fi_addr_t dest_addr, uint64_t addr,
		      uint64_t key, enum fi_datatype datatype, enum fi_op op,
		      void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct fi_ioc ioc = {.addr = (void *) buf, .count = count};
	struct mrl_atomic_ops a = {.src = &ioc,
				   .src_desc = &desc,
				   .src_count = 1};

	if (!mrl_xfer_atomic_needs_lease(x, &a, datatype, x->dir[MRL_TX].min))
		return fi_atomic(ep->inner, buf, count, desc, dest_addr, addr,
				 key, datatype, op, context);
	return mrl_xfer_atomic_slow(ep, MRL_ATOMIC_WRITE, &a, dest_addr, addr,
				    key, datatype, op, context);
}

static ssize_t
mrl_xfer_atomic_writev(struct fid_ep *fep, const struct fi_ioc *iov,
		       void **desc, size_t count, fi_addr_t dest_addr,
		       uint64_t addr, uint64_t key, enum fi_datatype datatype,
		       enum fi_op op, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_atomic_ops a = {.src = iov,
				   .src_desc = desc,
				   .src_count = count};

	if (!mrl_xfer_atomic_needs_lease(x, &a, datatype, x->dir[MRL_TX].min))
		return fi_atomicv(ep->inner, iov, desc, count, dest_addr, addr,
				  key, datatype, op, context);
	return mrl_xfer_atomic_slow(ep, MRL_ATOMIC_WRITE, &a, dest_addr, addr,
				    key, datatype, op, context);
}

static ssize_t
mrl_xfer_atomic_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			 uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_atomic_ops a = {.src = msg->msg_iov,
				   .src_desc = msg->desc,
				   .src_count = msg->iov_count};

	if ((flags & FI_INJECT) ||
	    !mrl_xfer_atomic_needs_lease(x, &a, msg->datatype,
					 x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_atomicmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_atomic_msg_slow(ep, MRL_ATOMIC_WRITE, msg, &a, flags);
}

static ssize_t
mrl_xfer_atomic_readwrite(struct fid_ep *fep, const void *buf, size_t count,
			  void *desc, void *result, void *result_desc,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct fi_ioc ioc = {.addr = (void *) buf, .count = count};
	struct fi_ioc res = {.addr = result, .count = count};
	struct mrl_atomic_ops a = {
		.src = &ioc,
		.src_desc = &desc,
		.src_count = 1,
		.res = &res,
		.res_desc = &result_desc,
		.res_count = 1,
	};

	if (!mrl_xfer_atomic_needs_lease(x, &a, datatype, x->dir[MRL_TX].min))
		return fi_fetch_atomic(ep->inner, buf, count, desc, result,
				       result_desc, dest_addr, addr, key,
				       datatype, op, context);
	return mrl_xfer_atomic_slow(ep, MRL_ATOMIC_FETCH, &a, dest_addr, addr,
				    key, datatype, op, context);
}

static ssize_t
mrl_xfer_atomic_readwritev(struct fid_ep *fep, const struct fi_ioc *iov,
			   void **desc, size_t count, struct fi_ioc *resultv,
			   void **result_desc, size_t result_count,
			   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_atomic_ops a = {
		.src = iov,
		.src_desc = desc,
		.src_count = count,
		.res = resultv,
		.res_desc = result_desc,
		.res_count = result_count,
	};

	if (!mrl_xfer_atomic_needs_lease(x, &a, datatype, x->dir[MRL_TX].min))
		return fi_fetch_atomicv(ep->inner, iov, desc, count, resultv,
					result_desc, result_count, dest_addr,
					addr, key, datatype, op, context);
	return mrl_xfer_atomic_slow(ep, MRL_ATOMIC_FETCH, &a, dest_addr, addr,
				    key, datatype, op, context);
}

static ssize_t
mrl_xfer_atomic_readwritemsg(struct fid_ep *fep,
			     const struct fi_msg_atomic *msg,
			     struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_atomic_ops a = {
		.src = msg->msg_iov,
		.src_desc = msg->desc,
		.src_count = msg->iov_count,
		.res = resultv,
		.res_desc = result_desc,
		.res_count = result_count,
	};

	if (!mrl_xfer_atomic_needs_lease(x, &a, msg->datatype,
					 x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_fetch_atomicmsg(ep->inner, msg, resultv, result_desc,
					  result_count, flags);
	}
	return mrl_xfer_atomic_msg_slow(ep, MRL_ATOMIC_FETCH, msg, &a, flags);
}

static ssize_t
mrl_xfer_atomic_compwrite(struct fid_ep *fep, const void *buf, size_t count,
			  void *desc, const void *compare, void *compare_desc,
			  void *result, void *result_desc, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct fi_ioc ioc = {.addr = (void *) buf, .count = count};
	struct fi_ioc cmp = {.addr = (void *) compare, .count = count};
	struct fi_ioc res = {.addr = result, .count = count};
	struct mrl_atomic_ops a = {
		.src = &ioc,
		.src_desc = &desc,
		.src_count = 1,
		.cmp = &cmp,
		.cmp_desc = &compare_desc,
		.cmp_count = 1,
		.res = &res,
		.res_desc = &result_desc,
		.res_count = 1,
	};

	if (!mrl_xfer_atomic_needs_lease(x, &a, datatype, x->dir[MRL_TX].min))
		return fi_compare_atomic(ep->inner, buf, count, desc, compare,
					 compare_desc, result, result_desc,
					 dest_addr, addr, key, datatype, op,
					 context);
	return mrl_xfer_atomic_slow(ep, MRL_ATOMIC_COMPARE, &a, dest_addr, addr,
				    key, datatype, op, context);
}

static ssize_t
mrl_xfer_atomic_compwritev(struct fid_ep *fep, const struct fi_ioc *iov,
			   void **desc, size_t count,
			   const struct fi_ioc *comparev, void **compare_desc,
			   size_t compare_count, struct fi_ioc *resultv,
			   void **result_desc, size_t result_count,
			   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_atomic_ops a = {
		.src = iov,
		.src_desc = desc,
		.src_count = count,
		.cmp = comparev,
		.cmp_desc = compare_desc,
		.cmp_count = compare_count,
		.res = resultv,
		.res_desc = result_desc,
		.res_count = result_count,
	};

	if (!mrl_xfer_atomic_needs_lease(x, &a, datatype, x->dir[MRL_TX].min))
		return fi_compare_atomicv(ep->inner, iov, desc, count, comparev,
					  compare_desc, compare_count, resultv,
					  result_desc, result_count, dest_addr,
					  addr, key, datatype, op, context);
	return mrl_xfer_atomic_slow(ep, MRL_ATOMIC_COMPARE, &a, dest_addr, addr,
				    key, datatype, op, context);
}

static ssize_t
mrl_xfer_atomic_compwritemsg(struct fid_ep *fep,
			     const struct fi_msg_atomic *msg,
			     const struct fi_ioc *comparev, void **compare_desc,
			     size_t compare_count, struct fi_ioc *resultv,
			     void **result_desc, size_t result_count,
			     uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_atomic_ops a = {
		.src = msg->msg_iov,
		.src_desc = msg->desc,
		.src_count = msg->iov_count,
		.cmp = comparev,
		.cmp_desc = compare_desc,
		.cmp_count = compare_count,
		.res = resultv,
		.res_desc = result_desc,
		.res_count = result_count,
	};

	if (!mrl_xfer_atomic_needs_lease(x, &a, msg->datatype,
					 x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_compare_atomicmsg(
			ep->inner, msg, comparev, compare_desc, compare_count,
			resultv, result_desc, result_count, flags);
	}
	return mrl_xfer_atomic_msg_slow(ep, MRL_ATOMIC_COMPARE, msg, &a, flags);
}

void
mrl_xfer_atomic_init(void)
{
	mrl_xfer_atomic_ops = mrl_hook_ep_atomic_ops;
	mrl_xfer_atomic_ops.write = mrl_xfer_atomic_write;
	mrl_xfer_atomic_ops.writev = mrl_xfer_atomic_writev;
	mrl_xfer_atomic_ops.writemsg = mrl_xfer_atomic_writemsg;
	mrl_xfer_atomic_ops.readwrite = mrl_xfer_atomic_readwrite;
	mrl_xfer_atomic_ops.readwritev = mrl_xfer_atomic_readwritev;
	mrl_xfer_atomic_ops.readwritemsg = mrl_xfer_atomic_readwritemsg;
	mrl_xfer_atomic_ops.compwrite = mrl_xfer_atomic_compwrite;
	mrl_xfer_atomic_ops.compwritev = mrl_xfer_atomic_compwritev;
	mrl_xfer_atomic_ops.compwritemsg = mrl_xfer_atomic_compwritemsg;
}
