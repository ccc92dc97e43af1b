/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_send/fi_recv and friends. Each call checks first whether an operand
 * needs a lease; if none does it is forwarded as is (the fast path). Leased
 * non-msg calls keep their shape unless the route needs FI_COMPLETION added,
 * in which case they go out as the equivalent msg call with the endpoint's
 * default flags.
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_xfer.h"

struct fi_ops_msg mrl_xfer_msg_ops;

static ssize_t mrl_msg_sendmsg_slow(struct mrl_ep *ep, const struct fi_msg *msg,
				    uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	void *desc[MRL_XFER_IOV_MAX];
	struct fi_msg m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_post_init(&p, x, MRL_TX);
	ret = mrl_post_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
			   x->dir[MRL_TX].min_msg, desc);
	if (ret)
		return mrl_post_end(&p, ret);
	m.desc = desc;
	m.context = mrl_post_context(&p, msg->context, &flags);
	return mrl_post_end(&p, fi_sendmsg(ep->inner, &m, flags));
}

static ssize_t mrl_msg_recvmsg_slow(struct mrl_ep *ep, const struct fi_msg *msg,
				    uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	void *desc[MRL_XFER_IOV_MAX];
	struct fi_msg m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_post_init(&p, x, MRL_RX);
	ret = mrl_post_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
			   x->dir[MRL_RX].min_msg, desc);
	if (ret)
		return mrl_post_end(&p, ret);
	m.desc = desc;
	m.context = mrl_post_context(&p, msg->context, &flags);
	return mrl_post_end(&p, fi_recvmsg(ep->inner, &m, flags));
}

/* The slow path of the iov-shaped calls, send(v)/senddata and recv(v). */
static ssize_t mrl_msg_slow(struct mrl_ep *ep, enum mrl_dir dir,
			    const struct iovec *iov, void **desc, size_t count,
			    fi_addr_t addr, uint64_t data, bool with_data,
			    void *context)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[dir];
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = addr, .context = context, .data = data,
	};
	void *ldesc[MRL_XFER_IOV_MAX];
	uint64_t flags = d->op_flags;
	struct mrl_post p;
	void *ctx;
	ssize_t ret;

	if (with_data)
		flags |= FI_REMOTE_CQ_DATA;
	if (d->convert)
		return dir == MRL_TX ? mrl_msg_sendmsg_slow(ep, &msg, flags) :
				       mrl_msg_recvmsg_slow(ep, &msg, flags);

	mrl_post_init(&p, x, dir);
	ret = mrl_post_iov(&p, iov, desc, count, d->min, ldesc);
	if (ret)
		return mrl_post_end(&p, ret);
	ctx = mrl_post_context(&p, context, &flags);
	if (dir == MRL_RX)
		ret = fi_recvv(ep->inner, iov, ldesc, count, addr, ctx);
	else if (with_data)
		ret = fi_senddata(ep->inner, iov->iov_base, iov->iov_len,
				  ldesc[0], data, addr, ctx);
	else
		ret = fi_sendv(ep->inner, iov, ldesc, count, addr, ctx);
	return mrl_post_end(&p, ret);
}

static ssize_t mrl_msg_recv(struct fid_ep *fep, void *buf, size_t len,
			    void *desc, fi_addr_t src_addr, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	if (desc || len < x->dir[MRL_RX].min)
		return fi_recv(ep->inner, buf, len, desc, src_addr, context);
	return mrl_msg_slow(ep, MRL_RX, &iov, &desc, 1, src_addr, 0, false,
			    context);
}

static ssize_t mrl_msg_recvv(struct fid_ep *fep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src_addr,
			     void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(iov, desc, count, x->dir[MRL_RX].min))
		return fi_recvv(ep->inner, iov, desc, count, src_addr, context);
	return mrl_msg_slow(ep, MRL_RX, iov, desc, count, src_addr, 0, false,
			    context);
}

static ssize_t mrl_msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg,
			       uint64_t flags)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	/* A multi-recv buffer ends at a completion flag: leased only where
	 * completions carry flags. */
	if (((flags & FI_MULTI_RECV) && !x->dir[MRL_RX].flags_visible) ||
	    !mrl_iov_needs_lease(msg->msg_iov, msg->desc, msg->iov_count,
				 x->dir[MRL_RX].min_msg))
		return fi_recvmsg(ep->inner, msg, flags);
	return mrl_msg_recvmsg_slow(ep, msg, flags);
}

static ssize_t mrl_msg_send(struct fid_ep *fep, const void *buf, size_t len,
			    void *desc, fi_addr_t dest_addr, void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (desc || len < x->dir[MRL_TX].min)
		return fi_send(ep->inner, buf, len, desc, dest_addr, context);
	return mrl_msg_slow(ep, MRL_TX, &iov, &desc, 1, dest_addr, 0, false,
			    context);
}

static ssize_t mrl_msg_sendv(struct fid_ep *fep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t dest_addr,
			     void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_iov_needs_lease(iov, desc, count, x->dir[MRL_TX].min))
		return fi_sendv(ep->inner, iov, desc, count, dest_addr, context);
	return mrl_msg_slow(ep, MRL_TX, iov, desc, count, dest_addr, 0, false,
			    context);
}

static ssize_t mrl_msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg,
			       uint64_t flags)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_INJECT) ||
	    !mrl_iov_needs_lease(msg->msg_iov, msg->desc, msg->iov_count,
				 x->dir[MRL_TX].min_msg))
		return fi_sendmsg(ep->inner, msg, flags);
	return mrl_msg_sendmsg_slow(ep, msg, flags);
}

static ssize_t mrl_msg_senddata(struct fid_ep *fep, const void *buf, size_t len,
				void *desc, uint64_t data, fi_addr_t dest_addr,
				void *context)
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (desc || len < x->dir[MRL_TX].min)
		return fi_senddata(ep->inner, buf, len, desc, data, dest_addr,
				   context);
	return mrl_msg_slow(ep, MRL_TX, &iov, &desc, 1, dest_addr, data, true,
			    context);
}

void mrl_xfer_msg_init(void)
{
	mrl_xfer_msg_ops = mrl_ep_msg_ops;
	mrl_xfer_msg_ops.recv = mrl_msg_recv;
	mrl_xfer_msg_ops.recvv = mrl_msg_recvv;
	mrl_xfer_msg_ops.recvmsg = mrl_msg_recvmsg;
	mrl_xfer_msg_ops.send = mrl_msg_send;
	mrl_xfer_msg_ops.sendv = mrl_msg_sendv;
	mrl_xfer_msg_ops.sendmsg = mrl_msg_sendmsg;
	mrl_xfer_msg_ops.senddata = mrl_msg_senddata;
}
