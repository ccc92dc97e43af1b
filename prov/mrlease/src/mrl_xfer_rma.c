/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_read/fi_write and friends: local operands are resolved like sends
 * (all RMA is the transmit direction); the remote side (rma_iov, key) is
 * the application's and passes untouched.
 */
#include "config.h"

#include <rdma/fi_errno.h>

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

/* The slow path of read, write and writedata: one buffer. */
static ssize_t mrl_rma_slow(struct mrl_ep *ep, enum mrl_rma_kind kind,
			    void *buf, size_t len, fi_addr_t peer,
			    uint64_t addr, uint64_t key, uint64_t data,
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
	return mrl_rma_slow(ep, MRL_RMA_READ, buf, len, src_addr, addr, key, 0,
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
	return mrl_rma_slow(ep, MRL_RMA_WRITE, (void *)buf, len, dest_addr,
			    addr, key, 0, context);
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
	return mrl_rma_slow(ep, MRL_RMA_WRITEDATA, (void *)buf, len, dest_addr,
			    addr, key, data, context);
}

void mrl_xfer_rma_init(void)
{
	mrl_xfer_rma_ops = mrl_ep_rma_ops;
	mrl_xfer_rma_ops.read = mrl_rma_read;
	mrl_xfer_rma_ops.readv = mrl_rma_readv;
	mrl_xfer_rma_ops.readmsg = mrl_rma_readmsg;
	mrl_xfer_rma_ops.write = mrl_rma_write;
	mrl_xfer_rma_ops.writev = mrl_rma_writev;
	mrl_xfer_rma_ops.writemsg = mrl_rma_writemsg;
	mrl_xfer_rma_ops.writedata = mrl_rma_writedata;
}
