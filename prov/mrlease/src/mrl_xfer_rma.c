/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_read/fi_write and friends: local operands are resolved like sends
 * (all RMA is the transmit direction); the remote side (rma_iov, key) is
 * the application's and passes untouched.
 */
#include "config.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_trigger.h>

#include "mrl_xfer.h"

struct fi_ops_rma mrl_xfer_rma_ops;

static ssize_t mrl_rma_msg_slow(struct mrl_ep *ep, const struct fi_msg_rma *msg,
				uint64_t flags, bool is_read)
{
	struct mrl_xep *x = ep->ext;
	void *desc[MRL_XFER_IOV_MAX];
	struct fi_msg_rma m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_post_init(&p, x, MRL_TX);
	ret = mrl_post_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
			   x->dir[MRL_TX].min_msg, desc);
	if (ret)
		return mrl_post_end(&p, ret);
	m.desc = desc;
	m.context = mrl_post_context(&p, msg->context, &flags);
	ret = is_read ? fi_readmsg(ep->inner, &m, flags) :
			fi_writemsg(ep->inner, &m, flags);
	return mrl_post_end(&p, ret);
}

enum mrl_rma_kind { MRL_RMA_READ, MRL_RMA_WRITE, MRL_RMA_WRITEDATA };

/* A non-msg call whose route needs FI_COMPLETION: as the msg call. */
static ssize_t __attribute__((noinline))
mrl_rma_convert(struct mrl_ep *ep, enum mrl_rma_kind kind,
		const struct iovec *iov, void **desc, size_t count,
		fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data,
		void *context)
{
	struct mrl_xep *x = ep->ext;
	struct fi_rma_iov rma_iov = { .addr = addr, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = peer, .rma_iov = &rma_iov, .rma_iov_count = 1,
		.context = context, .data = data,
	};
	uint64_t flags = x->dir[MRL_TX].op_flags;

	for (size_t i = 0; i < count; i++)
		rma_iov.len += iov[i].iov_len;
	if (kind == MRL_RMA_WRITEDATA)
		flags |= FI_REMOTE_CQ_DATA;
	return mrl_rma_msg_slow(ep, &msg, flags, kind == MRL_RMA_READ);
}

/* The slow path of read, write and writedata: one buffer, any route and
 * pool (converted calls, a shared or empty free list). */
static ssize_t __attribute__((noinline, cold))
mrl_rma_slow(struct mrl_ep *ep, enum mrl_rma_kind kind, void *buf, size_t len,
	     fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data,
	     void *context)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[MRL_TX];
	uint64_t flags = d->op_flags;
	struct mrl_post p;
	void *desc, *ctx;
	ssize_t ret;

	if (d->convert) {
		struct iovec iov = { .iov_base = buf, .iov_len = len };

		desc = NULL;
		return mrl_rma_convert(ep, kind, &iov, &desc, 1, peer, addr,
				       key, data, context);
	}
	mrl_post_init(&p, x, MRL_TX);
	ret = mrl_post_buf(&p, buf, len, NULL, d->min, &desc);
	if (ret)
		return mrl_post_end(&p, ret);
	ctx = mrl_post_context(&p, context, &flags);
	switch (kind) {
	case MRL_RMA_READ:
		ret = fi_read(ep->inner, buf, len, desc, peer, addr, key, ctx);
		break;
	case MRL_RMA_WRITE:
		ret = fi_write(ep->inner, buf, len, desc, peer, addr, key, ctx);
		break;
	case MRL_RMA_WRITEDATA:
		ret = fi_writedata(ep->inner, buf, len, desc, data, peer, addr,
				   key, ctx);
		break;
	}
	return mrl_post_end(&p, ret);
}

/* The lease for a single-buffer call failed: without FI_MR_LOCAL the call
 * goes out as the application made it (desc NULL), with it the post fails. */
static ssize_t __attribute__((noinline, cold))
mrl_rma_unleased(struct mrl_ep *ep, enum mrl_rma_kind kind, void *buf,
		 size_t len, fi_addr_t peer, uint64_t addr, uint64_t key,
		 uint64_t data, void *context, int ret)
{
	struct mrl_xep *x = ep->ext;

	if (x->mr_local) {
		mrl_post_lease_failed(buf, len, ret);
		return ret;
	}
	switch (kind) {
	case MRL_RMA_READ:
		return fi_read(ep->inner, buf, len, NULL, peer, addr, key,
			       context);
	case MRL_RMA_WRITE:
		return fi_write(ep->inner, buf, len, NULL, peer, addr, key,
				context);
	default:
		return fi_writedata(ep->inner, buf, len, NULL, data, peer, addr,
				    key, context);
	}
}

static void __attribute__((noinline, cold))
mrl_rma_post_failed(struct mrl_op *op)
{
	mrl_op_free_poster(op);
}

/*
 * The hit path of a leased read, write or writedata: an op straight off the
 * poster's free list holding one lease, the inner call with the op as its
 * context. A non-msg call that is not converted needs no flag of the op
 * (the route reports it; FI_MULTI_RECV is a receive flag). Anything else
 * goes to mrl_rma_slow.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_rma_leased(enum mrl_rma_kind kind, struct fid_ep *fep, void *buf,
	       size_t len, fi_addr_t peer, uint64_t addr, uint64_t key,
	       uint64_t data, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool = x->pool;
	struct mrl_registration *reg;
	struct mrl_op *op;
	void *desc;
	ssize_t ret;

	if (!buf || !pool || x->dir[MRL_TX].convert ||
	    !(op = mrl_op_get(pool)))
		return mrl_rma_slow(ep, kind, buf, len, peer, addr, key, data,
				    context);
	ret = mrl_cache_acquire(x->cache, (uintptr_t)buf,
				(uintptr_t)buf + len, &reg);
	if (ret) {
		mrl_op_put(pool, op);
		return mrl_rma_unleased(ep, kind, buf, len, peer, addr, key,
					data, context, (int)ret);
	}
	mrl_op_set_live(op, context, 0, reg);
	desc = mrl_registration_desc(reg);
	switch (kind) {
	case MRL_RMA_READ:
		ret = fi_read(ep->inner, buf, len, desc, peer, addr, key, op);
		break;
	case MRL_RMA_WRITE:
		ret = fi_write(ep->inner, buf, len, desc, peer, addr, key, op);
		break;
	default:
		ret = fi_writedata(ep->inner, buf, len, desc, data, peer, addr,
				   key, op);
		break;
	}
	if (ret)
		mrl_rma_post_failed(op);
	return ret;
}

/* The leased calls, with the op's signature (noclone: no argument dropped)
 * so the check in front of them reaches them by a plain jump. */
static ssize_t __attribute__((noinline, noclone))
mrl_rma_read_leased(struct fid_ep *fep, void *buf, size_t len, void *desc,
		    fi_addr_t src_addr, uint64_t addr, uint64_t key,
		    void *context)
{
	(void)desc;
	return mrl_rma_leased(MRL_RMA_READ, fep, buf, len, src_addr, addr, key,
			      0, context);
}

static ssize_t __attribute__((noinline, noclone))
mrl_rma_write_leased(struct fid_ep *fep, const void *buf, size_t len,
		     void *desc, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key, void *context)
{
	(void)desc;
	return mrl_rma_leased(MRL_RMA_WRITE, fep, (void *)buf, len, dest_addr,
			      addr, key, 0, context);
}

static ssize_t __attribute__((noinline, noclone))
mrl_rma_writedata_leased(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, uint64_t data, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return mrl_rma_leased(MRL_RMA_WRITEDATA, fep, (void *)buf, len,
			      dest_addr, addr, key, data, context);
}

/* The slow path of readv and writev. */
static ssize_t mrl_rma_slowv(struct mrl_ep *ep, enum mrl_rma_kind kind,
			     const struct iovec *iov, void **desc, size_t count,
			     fi_addr_t peer, uint64_t addr, uint64_t key,
			     void *context)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[MRL_TX];
	void *ldesc[MRL_XFER_IOV_MAX];
	uint64_t flags = d->op_flags;
	struct mrl_post p;
	void *ctx;
	ssize_t ret;

	if (d->convert)
		return mrl_rma_convert(ep, kind, iov, desc, count, peer, addr,
				       key, 0, context);
	mrl_post_init(&p, x, MRL_TX);
	ret = mrl_post_iov(&p, iov, desc, count, d->min, ldesc);
	if (ret)
		return mrl_post_end(&p, ret);
	ctx = mrl_post_context(&p, context, &flags);
	ret = kind == MRL_RMA_READ ?
		fi_readv(ep->inner, iov, ldesc, count, peer, addr, key, ctx) :
		fi_writev(ep->inner, iov, ldesc, count, peer, addr, key, ctx);
	return mrl_post_end(&p, ret);
}

static ssize_t mrl_rma_read(struct fid_ep *fep, void *buf, size_t len,
			    void *desc, fi_addr_t src_addr, uint64_t addr,
			    uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (desc || len < x->dir[MRL_TX].min)
		return fi_read(ep->inner, buf, len, desc, src_addr, addr, key,
			       context);
	return mrl_rma_read_leased(fep, buf, len, desc, src_addr, addr, key,
				   context);
}

static ssize_t mrl_rma_readv(struct fid_ep *fep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(iov, desc, count, x->dir[MRL_TX].min))
		return fi_readv(ep->inner, iov, desc, count, src_addr, addr,
				key, context);
	return mrl_rma_slowv(ep, MRL_RMA_READ, iov, desc, count, src_addr,
			     addr, key, context);
}

static ssize_t mrl_rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			       uint64_t flags)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(msg->msg_iov, msg->desc, msg->iov_count,
				 x->dir[MRL_TX].min_msg))
		return fi_readmsg(ep->inner, msg, flags);
	return mrl_rma_msg_slow(ep, msg, flags, true);
}

static ssize_t mrl_rma_write(struct fid_ep *fep, const void *buf, size_t len,
			     void *desc, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (desc || len < x->dir[MRL_TX].min)
		return fi_write(ep->inner, buf, len, desc, dest_addr, addr, key,
				context);
	return mrl_rma_write_leased(fep, buf, len, desc, dest_addr, addr, key,
				    context);
}

static ssize_t mrl_rma_writev(struct fid_ep *fep, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest_addr,
			      uint64_t addr, uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(iov, desc, count, x->dir[MRL_TX].min))
		return fi_writev(ep->inner, iov, desc, count, dest_addr, addr,
				 key, context);
	return mrl_rma_slowv(ep, MRL_RMA_WRITE, iov, desc, count, dest_addr,
			     addr, key, context);
}

static ssize_t mrl_rma_writemsg(struct fid_ep *fep,
				const struct fi_msg_rma *msg, uint64_t flags)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_INJECT) ||
	    !mrl_iov_needs_lease(msg->msg_iov, msg->desc, msg->iov_count,
				 x->dir[MRL_TX].min_msg))
		return fi_writemsg(ep->inner, msg, flags);
	return mrl_rma_msg_slow(ep, msg, flags, false);
}

static ssize_t mrl_rma_writedata(struct fid_ep *fep, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest_addr, uint64_t addr,
				 uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (desc || len < x->dir[MRL_TX].min)
		return fi_writedata(ep->inner, buf, len, desc, data, dest_addr,
				    addr, key, context);
	return mrl_rma_writedata_leased(fep, buf, len, desc, data, dest_addr,
					addr, key, context);
}

/* ---- endpoints of domains that never lease ------------------------- */

/*
 * The passthrough's table with the calls a utility provider makes on every
 * RMA forwarded without its per-call checks (mrl_xfer_rma_plain_install
 * checked the inner table once). Triggered msg calls keep the passthrough's
 * counter translation.
 */
static struct fi_ops_rma mrl_plain_rma_ops;

static ssize_t mrl_plain_read(struct fid_ep *fep, void *buf, size_t len,
			      void *desc, fi_addr_t src_addr, uint64_t addr,
			      uint64_t key, void *context)
{
	struct fid_ep *in = mrl_ep_of(fep)->inner;

	return in->rma->read(in, buf, len, desc, src_addr, addr, key, context);
}

static ssize_t mrl_plain_write(struct fid_ep *fep, const void *buf,
			       size_t len, void *desc, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key, void *context)
{
	struct fid_ep *in = mrl_ep_of(fep)->inner;

	return in->rma->write(in, buf, len, desc, dest_addr, addr, key,
			      context);
}

static ssize_t mrl_plain_readmsg(struct fid_ep *fep,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	struct fid_ep *in = mrl_ep_of(fep)->inner;

	if (flags & FI_TRIGGER)
		return mrl_ep_rma_ops.readmsg(fep, msg, flags);
	return in->rma->readmsg(in, msg, flags);
}

static ssize_t mrl_plain_writemsg(struct fid_ep *fep,
				  const struct fi_msg_rma *msg, uint64_t flags)
{
	struct fid_ep *in = mrl_ep_of(fep)->inner;

	if (flags & FI_TRIGGER)
		return mrl_ep_rma_ops.writemsg(fep, msg, flags);
	return in->rma->writemsg(in, msg, flags);
}

void mrl_xfer_rma_plain_install(struct mrl_ep *ep)
{
	const struct fi_ops_rma *in = ep->inner->rma;

	if (ep->ep.rma != &mrl_ep_rma_ops ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, read) ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, write) ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, readmsg) ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, writemsg))
		return;
	ep->ep.rma = &mrl_plain_rma_ops;
}

void mrl_xfer_rma_init(void)
{
	mrl_plain_rma_ops = mrl_ep_rma_ops;
	mrl_plain_rma_ops.read = mrl_plain_read;
	mrl_plain_rma_ops.write = mrl_plain_write;
	mrl_plain_rma_ops.readmsg = mrl_plain_readmsg;
	mrl_plain_rma_ops.writemsg = mrl_plain_writemsg;
	mrl_xfer_rma_ops = mrl_ep_rma_ops;
	mrl_xfer_rma_ops.read = mrl_rma_read;
	mrl_xfer_rma_ops.readv = mrl_rma_readv;
	mrl_xfer_rma_ops.readmsg = mrl_rma_readmsg;
	mrl_xfer_rma_ops.write = mrl_rma_write;
	mrl_xfer_rma_ops.writev = mrl_rma_writev;
	mrl_xfer_rma_ops.writemsg = mrl_rma_writemsg;
	mrl_xfer_rma_ops.writedata = mrl_rma_writedata;
}
