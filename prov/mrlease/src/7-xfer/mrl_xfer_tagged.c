/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_tsend/fi_trecv and friends: the entry points, with the posting code of
 * mrl_xfer_msg.c (mrl_xfer_msg.h: the slow path, the single-buffer rows'
 * check and slow path). Peeks and FI_DISCARD go to the provider as they are; a
 * claiming receive keeps the application's context, its leases held by the
 * receive CQ's claims table (mrl_xfer_claim.c).
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_xfer_msg.h"

struct fi_ops_tagged mrl_xfer_tagged_ops;

/* The single-buffer calls, one row each (mrl_xfer_single.h). */
/* clang-format off */
MRL_XFER_SINGLE(mrl_xfer_tagged_recv, msg, MRL_TRECV, MRL_RX,
	(void *buf, size_t len, void *desc, fi_addr_t peer, uint64_t tag,
	 uint64_t ignore, void *context),
	fi_trecv, (buf, len, desc, peer, tag, ignore, context),
	(s->a = tag, s->b = ignore),
	fi_trecv(in, s->buf, s->len, desc, s->peer, s->a, s->b, op))

MRL_XFER_SINGLE(mrl_xfer_tagged_send, msg, MRL_TSEND, MRL_TX,
	(const void *buf, size_t len, void *desc, fi_addr_t peer,
	 uint64_t tag, void *context),
	fi_tsend, (buf, len, desc, peer, tag, context),
	(s->a = tag),
	fi_tsend(in, s->buf, s->len, desc, s->peer, s->a, op))

MRL_XFER_SINGLE(mrl_xfer_tagged_senddata, msg, MRL_TSENDDATA, MRL_TX,
	(const void *buf, size_t len, void *desc, uint64_t data,
	 fi_addr_t peer, uint64_t tag, void *context),
	fi_tsenddata, (buf, len, desc, data, peer, tag, context),
	(s->a = tag, s->c = data),
	fi_tsenddata(in, s->buf, s->len, desc, s->c, s->peer, s->a, op))
/* clang-format on */

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
	    !mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc,
				      msg->iov_count, x->dir[MRL_RX].min_msg) ||
	    ((flags & FI_MULTI_RECV) && !mrl_xfer_msg_multi_recv_ok(x))) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_trecvmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_tagged_slowmsg(ep, MRL_TRECV, msg, flags);
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
