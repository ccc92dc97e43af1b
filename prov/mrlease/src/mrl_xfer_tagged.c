/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_tsend/fi_trecv and friends: the same pattern as mrl_xfer_msg.c. A
 * tagged receive with FI_PEEK, FI_CLAIM or FI_DISCARD is never swapped: the
 * provider ties a claim to the context given at the peek.
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_xfer.h"

struct fi_ops_tagged mrl_xfer_tagged_ops;

/* mrl_xfer_msg.c: send operands, with registrations starting at each iov
 * where a rendezvous peer reads them from offset 0 of their MR. */
int mrl_post_send_iov(struct mrl_post *p, const struct iovec *iov,
		      void **desc, size_t count, size_t min, void **out);

#define MRL_TAGGED_NO_SWAP (FI_PEEK | FI_CLAIM | FI_DISCARD)

static ssize_t mrl_tagged_sendmsg_slow(struct mrl_ep *ep,
				       const struct fi_msg_tagged *msg,
				       uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	void *desc[MRL_XFER_IOV_MAX];
	struct fi_msg_tagged m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_post_init(&p, x, MRL_TX);
	ret = mrl_post_send_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
				x->dir[MRL_TX].min_msg, desc);
	if (ret)
		return mrl_post_end(&p, ret);
	m.desc = desc;
	m.context = mrl_post_context(&p, msg->context, &flags);
	return mrl_post_end(&p, fi_tsendmsg(ep->inner, &m, flags));
}

static ssize_t mrl_tagged_recvmsg_slow(struct mrl_ep *ep,
				       const struct fi_msg_tagged *msg,
				       uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	void *desc[MRL_XFER_IOV_MAX];
	struct fi_msg_tagged m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_post_init(&p, x, MRL_RX);
	ret = mrl_post_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
			   x->dir[MRL_RX].min_msg, desc);
	if (ret)
		return mrl_post_end(&p, ret);
	m.desc = desc;
	m.context = mrl_post_context(&p, msg->context, &flags);
	return mrl_post_end(&p, fi_trecvmsg(ep->inner, &m, flags));
}

/* The slow path of tsend(v)/tsenddata and trecv(v). */
static ssize_t mrl_tagged_slow(struct mrl_ep *ep, enum mrl_dir dir,
			       const struct iovec *iov, void **desc,
			       size_t count, fi_addr_t addr, uint64_t tag,
			       uint64_t ignore, uint64_t data, bool with_data,
			       void *context)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[dir];
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = addr, .tag = tag, .ignore = ignore,
		.context = context, .data = data,
	};
	void *ldesc[MRL_XFER_IOV_MAX];
	uint64_t flags = d->op_flags;
	struct mrl_post p;
	void *ctx;
	ssize_t ret;

	if (with_data)
		flags |= FI_REMOTE_CQ_DATA;
	if (d->convert)
		return dir == MRL_TX ?
			mrl_tagged_sendmsg_slow(ep, &msg, flags) :
			mrl_tagged_recvmsg_slow(ep, &msg, flags);

	mrl_post_init(&p, x, dir);
	ret = dir == MRL_TX ?
		mrl_post_send_iov(&p, iov, desc, count, d->min, ldesc) :
		mrl_post_iov(&p, iov, desc, count, d->min, ldesc);
	if (ret)
		return mrl_post_end(&p, ret);
	ctx = mrl_post_context(&p, context, &flags);
	if (dir == MRL_RX)
		ret = fi_trecvv(ep->inner, iov, ldesc, count, addr, tag, ignore,
				ctx);
	else if (with_data)
		ret = fi_tsenddata(ep->inner, iov->iov_base, iov->iov_len,
				   ldesc[0], data, addr, tag, ctx);
	else
		ret = fi_tsendv(ep->inner, iov, ldesc, count, addr, tag, ctx);
	return mrl_post_end(&p, ret);
}

static ssize_t mrl_tagged_recv(struct fid_ep *fep, void *buf, size_t len,
			       void *desc, fi_addr_t src_addr, uint64_t tag,
			       uint64_t ignore, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	if (desc || len < x->dir[MRL_RX].min)
		return fi_trecv(ep->inner, buf, len, desc, src_addr, tag,
				ignore, context);
	return mrl_tagged_slow(ep, MRL_RX, &iov, &desc, 1, src_addr, tag,
			       ignore, 0, false, context);
}

static ssize_t mrl_tagged_recvv(struct fid_ep *fep, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src_addr,
				uint64_t tag, uint64_t ignore, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(iov, desc, count, x->dir[MRL_RX].min))
		return fi_trecvv(ep->inner, iov, desc, count, src_addr, tag,
				 ignore, context);
	return mrl_tagged_slow(ep, MRL_RX, iov, desc, count, src_addr, tag,
			       ignore, 0, false, context);
}

static ssize_t mrl_tagged_recvmsg(struct fid_ep *fep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & MRL_TAGGED_NO_SWAP) ||
	    ((flags & FI_MULTI_RECV) && !x->dir[MRL_RX].flags_visible) ||
	    !mrl_iov_needs_lease(msg->msg_iov, msg->desc, msg->iov_count,
				 x->dir[MRL_RX].min_msg))
		return fi_trecvmsg(ep->inner, msg, flags);
	return mrl_tagged_recvmsg_slow(ep, msg, flags);
}

static ssize_t mrl_tagged_send(struct fid_ep *fep, const void *buf, size_t len,
			       void *desc, fi_addr_t dest_addr, uint64_t tag,
			       void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (desc || len < x->dir[MRL_TX].min)
		return fi_tsend(ep->inner, buf, len, desc, dest_addr, tag,
				context);
	return mrl_tagged_slow(ep, MRL_TX, &iov, &desc, 1, dest_addr, tag, 0,
			       0, false, context);
}

static ssize_t mrl_tagged_sendv(struct fid_ep *fep, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest_addr,
				uint64_t tag, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(iov, desc, count, x->dir[MRL_TX].min))
		return fi_tsendv(ep->inner, iov, desc, count, dest_addr, tag,
				 context);
	return mrl_tagged_slow(ep, MRL_TX, iov, desc, count, dest_addr, tag, 0,
			       0, false, context);
}

static ssize_t mrl_tagged_sendmsg(struct fid_ep *fep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_INJECT) ||
	    !mrl_iov_needs_lease(msg->msg_iov, msg->desc, msg->iov_count,
				 x->dir[MRL_TX].min_msg))
		return fi_tsendmsg(ep->inner, msg, flags);
	return mrl_tagged_sendmsg_slow(ep, msg, flags);
}

static ssize_t mrl_tagged_senddata(struct fid_ep *fep, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest_addr, uint64_t tag,
				   void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (desc || len < x->dir[MRL_TX].min)
		return fi_tsenddata(ep->inner, buf, len, desc, data, dest_addr,
				    tag, context);
	return mrl_tagged_slow(ep, MRL_TX, &iov, &desc, 1, dest_addr, tag, 0,
			       data, true, context);
}

void mrl_xfer_tagged_init(void)
{
	mrl_xfer_tagged_ops = mrl_ep_tagged_ops;
	mrl_xfer_tagged_ops.recv = mrl_tagged_recv;
	mrl_xfer_tagged_ops.recvv = mrl_tagged_recvv;
	mrl_xfer_tagged_ops.recvmsg = mrl_tagged_recvmsg;
	mrl_xfer_tagged_ops.send = mrl_tagged_send;
	mrl_xfer_tagged_ops.sendv = mrl_tagged_sendv;
	mrl_xfer_tagged_ops.sendmsg = mrl_tagged_sendmsg;
	mrl_xfer_tagged_ops.senddata = mrl_tagged_senddata;
}
