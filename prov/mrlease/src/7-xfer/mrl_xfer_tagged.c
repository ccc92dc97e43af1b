/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_tsend/fi_trecv and friends: the entry points, with the posting code of
 * mrl_xfer_msg.c and mrl_xfer_inline.h (mrl_xfer_msg_owned, mrl_xfer_msg_op,
 * mrl_xfer_msg_post). Peeks and FI_DISCARD go to the provider as they are; a
 * claiming receive keeps the application's context, its leases held by the
 * receive CQ's claims table (mrl_xfer_claim.c).
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_xfer_inline.h"

struct fi_ops_tagged mrl_xfer_tagged_ops;

/* The single-buffer hit path's out-of-line halves (mrl_xfer_inline.h). */
/* clang-format off */
static MRL_MSG_OP(mrl_xfer_tagged_recv_op, MRL_TRECV)
static MRL_MSG_OP(mrl_xfer_tagged_send_op, MRL_TSEND)
static MRL_MSG_OP(mrl_xfer_tagged_senddata_op, MRL_TSENDDATA)

static ssize_t __attribute__((noinline, noclone))
mrl_xfer_tagged_recv_pop(struct fid_ep *fep, void *buf, size_t len, void *desc,
			 fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			 void *context)
/* clang-format on */
{
	(void) desc;
	return mrl_xfer_msg_pop(MRL_TRECV, fep, buf, len, src_addr, tag, ignore,
				0, context, mrl_xfer_tagged_recv_op);
}

static ssize_t __attribute__((noinline, noclone))
mrl_xfer_tagged_send_pop(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest_addr, uint64_t tag,
			 void *context)
{
	(void) desc;
	return mrl_xfer_msg_pop(MRL_TSEND, fep, buf, len, dest_addr, tag, 0, 0,
				context, mrl_xfer_tagged_send_op);
}

static ssize_t __attribute__((noinline, noclone))
mrl_xfer_tagged_senddata_pop(struct fid_ep *fep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest_addr,
			     uint64_t tag, void *context)
{
	(void) desc;
	return mrl_xfer_msg_pop(MRL_TSENDDATA, fep, buf, len, dest_addr, tag, 0,
				data, context, mrl_xfer_tagged_senddata_op);
}

/* The slow path of the iov calls. */
static ssize_t
mrl_xfer_tagged_slowv(struct mrl_ep *ep, enum mrl_msg_kind kind,
		      const struct iovec *iov, void **desc, size_t count,
		      fi_addr_t addr, uint64_t tag, uint64_t ignore,
		      void *context)
{
	struct mrl_msg_call c = {
		.kind = kind,
		.iov = iov,
		.desc = desc,
		.count = count,
		.addr = addr,
		.tag = tag,
		.ignore = ignore,
		.context = context,
	};

	return mrl_xfer_msg_slow(ep, &c);
}

/* The app's msg calls. */
static ssize_t
mrl_xfer_tagged_slowmsg(struct mrl_ep *ep, enum mrl_msg_kind kind,
			const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct mrl_msg_call c = {
		.kind = kind,
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.addr = msg->addr,
		.tag = msg->tag,
		.ignore = msg->ignore,
		.context = msg->context,
		.data = msg->data,
	};

	return mrl_xfer_msg_post(ep, &c, flags, true);
}

/* mrl_xfer_tagged_recv, the operand below the threshold with no descriptor:
 * counted and forwarded, out of line so that the caller keeps no frame. */
static ssize_t __attribute__((noinline, noclone))
mrl_xfer_tagged_recv_small(struct fid_ep *fep, void *buf, size_t len,
			   void *desc, fi_addr_t src_addr, uint64_t tag,
			   uint64_t ignore, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);

	mrl_xfer_count_small(ep->ext, MRL_RX, len);
	return fi_trecv(ep->inner, buf, len, desc, src_addr, tag, ignore,
			context);
}

static ssize_t
mrl_xfer_tagged_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
		     fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
		     void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool;
	struct mrl_op *op;

	if (desc)
		return fi_trecv(ep->inner, buf, len, desc, src_addr, tag,
				ignore, context);
	if (len < x->dir[MRL_RX].min)
		return mrl_xfer_tagged_recv_small(fep, buf, len, desc, src_addr,
						  tag, ignore, context);
	pool = x->dir[MRL_RX].single;
	op = mrl_xfer_msg_owned(MRL_TRECV, x, pool, fep, buf, len, src_addr,
				tag, ignore, 0, context);
	if (!op)
		return mrl_xfer_tagged_recv_pop(fep, buf, len, desc, src_addr,
						tag, ignore, context);
	return mrl_xfer_tagged_recv_op(pool->cache, (uintptr_t) buf, len, op);
}

static ssize_t
mrl_xfer_tagged_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t src_addr, uint64_t tag,
		      uint64_t ignore, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, iov, desc, count, x->dir[MRL_RX].min))
		return fi_trecvv(ep->inner, iov, desc, count, src_addr, tag,
				 ignore, context);
	return mrl_xfer_tagged_slowv(ep, MRL_TRECV, iov, desc, count, src_addr,
				     tag, ignore, context);
}

static ssize_t
mrl_xfer_tagged_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_CLAIM) && !(flags & (FI_PEEK | FI_DISCARD)))
		return mrl_xfer_tagged_claim(ep, msg, flags);
	/* Multi-recv buffers as in mrl_xfer_msg_recvmsg. */
	if ((flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) ||
	    !mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc, msg->iov_count,
				      x->dir[MRL_RX].min_msg) ||
	    ((flags & FI_MULTI_RECV) && !mrl_xfer_ep_multi_recv_ok(x))) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_trecvmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_tagged_slowmsg(ep, MRL_TRECV, msg, flags);
}

/* mrl_xfer_tagged_send, the operand below the threshold with no descriptor:
 * counted and forwarded, out of line so that the caller keeps no frame. */
static ssize_t __attribute__((noinline, noclone))
mrl_xfer_tagged_send_small(struct fid_ep *fep, const void *buf, size_t len,
			   void *desc, fi_addr_t dest_addr, uint64_t tag,
			   void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);

	mrl_xfer_count_small(ep->ext, MRL_TX, len);
	return fi_tsend(ep->inner, buf, len, desc, dest_addr, tag, context);
}

static ssize_t
mrl_xfer_tagged_send(struct fid_ep *fep, const void *buf, size_t len,
		     void *desc, fi_addr_t dest_addr, uint64_t tag,
		     void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool;
	struct mrl_op *op;

	if (desc)
		return fi_tsend(ep->inner, buf, len, desc, dest_addr, tag,
				context);
	if (len < x->dir[MRL_TX].min)
		return mrl_xfer_tagged_send_small(fep, buf, len, desc,
						  dest_addr, tag, context);
	pool = x->dir[MRL_TX].single;
	op = mrl_xfer_msg_owned(MRL_TSEND, x, pool, fep, buf, len, dest_addr,
				tag, 0, 0, context);
	if (!op)
		return mrl_xfer_tagged_send_pop(fep, buf, len, desc, dest_addr,
						tag, context);
	return mrl_xfer_tagged_send_op(pool->cache, (uintptr_t) buf, len, op);
}

static ssize_t
mrl_xfer_tagged_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t dest_addr, uint64_t tag,
		      void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, iov, desc, count, x->dir[MRL_TX].min))
		return fi_tsendv(ep->inner, iov, desc, count, dest_addr, tag,
				 context);
	return mrl_xfer_tagged_slowv(ep, MRL_TSEND, iov, desc, count, dest_addr,
				     tag, 0, context);
}

static ssize_t
mrl_xfer_tagged_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_INJECT) ||
	    !mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc, msg->iov_count,
				      x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_tsendmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_tagged_slowmsg(ep, MRL_TSEND, msg, flags);
}

/* mrl_xfer_tagged_senddata, the operand below the threshold with no descriptor:
 * counted and forwarded, out of line so that the caller keeps no frame. */
static ssize_t __attribute__((noinline, noclone))
mrl_xfer_tagged_senddata_small(struct fid_ep *fep, const void *buf, size_t len,
			       void *desc, uint64_t data, fi_addr_t dest_addr,
			       uint64_t tag, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);

	mrl_xfer_count_small(ep->ext, MRL_TX, len);
	return fi_tsenddata(ep->inner, buf, len, desc, data, dest_addr, tag,
			    context);
}

static ssize_t
mrl_xfer_tagged_senddata(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, uint64_t data, fi_addr_t dest_addr,
			 uint64_t tag, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool;
	struct mrl_op *op;

	if (desc)
		return fi_tsenddata(ep->inner, buf, len, desc, data, dest_addr,
				    tag, context);
	if (len < x->dir[MRL_TX].min)
		return mrl_xfer_tagged_senddata_small(fep, buf, len, desc, data,
						      dest_addr, tag, context);
	pool = x->dir[MRL_TX].single;
	op = mrl_xfer_msg_owned(MRL_TSENDDATA, x, pool, fep, buf, len,
				dest_addr, tag, 0, data, context);
	if (!op)
		return mrl_xfer_tagged_senddata_pop(fep, buf, len, desc, data,
						    dest_addr, tag, context);
	return mrl_xfer_tagged_senddata_op(pool->cache, (uintptr_t) buf, len,
					   op);
}

void
mrl_xfer_tagged_init(void)
{
	mrl_xfer_tagged_ops = mrl_hook_ep_tagged_ops;
	mrl_xfer_tagged_ops.recv = mrl_xfer_tagged_recv;
	mrl_xfer_tagged_ops.recvv = mrl_xfer_tagged_recvv;
	mrl_xfer_tagged_ops.recvmsg = mrl_xfer_tagged_recvmsg;
	mrl_xfer_tagged_ops.send = mrl_xfer_tagged_send;
	mrl_xfer_tagged_ops.sendv = mrl_xfer_tagged_sendv;
	mrl_xfer_tagged_ops.sendmsg = mrl_xfer_tagged_sendmsg;
	mrl_xfer_tagged_ops.senddata = mrl_xfer_tagged_senddata;
}
