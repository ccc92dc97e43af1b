/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_send/fi_recv and friends. Each call checks first whether an operand
 * needs a lease; if none does it is forwarded as is (the fast path). Leased
 * non-msg calls keep their shape unless the route needs FI_COMPLETION added,
 * in which case they go out as the equivalent msg call with the endpoint's
 * default flags.
 *
 * Rendezvous sends on FI_MR_LOCAL domains without FI_MR_VIRT_ADDR.
 * libfabric 1.17's rxm sends a message longer than its eager limit by
 * rendezvous: the peer reads the data out of the sender's registrations.
 * When the application's info has FI_MR_LOCAL, rxm uses the descriptors it
 * was given (otherwise it ignores them and registers the iovs itself), and
 * when the core provider lacks FI_MR_VIRT_ADDR (tcp) it tells the peer to
 * read each iov at offset 0 of that iov's MR, whatever the iov's offset
 * inside it. A cached registration covering more than the iov (page-rounded,
 * a span, an earlier wider entry) would send the wrong bytes. So on such a
 * domain every leased operand of a send (send, sendv, sendmsg, senddata,
 * tagged alike; inject forms never lease) whose message is longer than the
 * eager limit takes a registration that starts exactly at the iov
 * (mrl_cache_acquire_based: repeated sends of one buffer hit it). Shorter
 * messages are copied by rxm (eager, or SAR when the dynamic receive buffer
 * is off: never below the eager limit), so they keep the shared, wider
 * entries, and so do all sends on domains without FI_MR_LOCAL.
 *
 * The limit: rxm's eager limit is max(FI_OFI_RXM_BUFFER_SIZE,
 * FI_OFI_RXM_EAGER_LIMIT), 16384 by default, and rendezvous starts right
 * above it when tcp accepts the dynamic receive buffer ops (SAR is off then;
 * mrlease forwards those ops like the bare provider), so
 * FI_OFI_RXM_BUFFER_SIZE alone is a safe lower bound. Seen here with
 * FI_LOG_LEVEL=info: "Protocol limits: Eager: 16384, SAR: 16384"; with
 * FI_OFI_RXM_BUFFER_SIZE=0x2000, 8192; with FI_OFI_RXM_EAGER_LIMIT=1000,
 * still 16384.
 *
 * mr_mode, seen with FI_MR_LOCAL|FI_MR_VIRT_ADDR|FI_MR_ALLOCATED|
 * FI_MR_PROV_KEY in the hints: tcp;ofi_rxm, udp;ofi_rxd and sockets report
 * 0 (shm FI_MR_VIRT_ADDR); an application wanting FI_MR_LOCAL adds it to
 * the info it opens the domain with, and that is what the outermost mrlease
 * instance records (0x4); the inner instance over tcp sees 0.
 *
 * Receives keep the ordinary leases: with the default read rendezvous the
 * receiver reads into its own iovs by address (rxm's write rendezvous,
 * FI_OFI_RXM_USE_RNDV_WRITE=1, fails with -FI_ENOTCONN even without a hook
 * in 1.17).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "mrl_xfer.h"

struct fi_ops_msg mrl_xfer_msg_ops;

/* Messages longer than this go by rendezvous (set once at init). */
static size_t mrl_rndv_after = 16384;

static void mrl_rndv_limit_init(void)
{
	const char *s = getenv("FI_OFI_RXM_BUFFER_SIZE");
	unsigned long long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoull(s, NULL, 0);
	/* Whatever rxm makes of a malformed value, a smaller limit only
	 * takes more exact registrations. */
	mrl_rndv_after = errno || v > SIZE_MAX ? 0 : (size_t)v;
}

/* Whether the leased operands of this send must start their registration
 * at their iov (see the top of this file). */
static bool mrl_send_based(const struct mrl_xep *x, const struct iovec *iov,
			   size_t count)
{
	int mr_mode = x->ep->domain->mr_mode;
	size_t total = 0;

	if (!x->mr_local || (mr_mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC)))
		return false;
	for (size_t i = 0; i < count; i++) {
		total += iov[i].iov_len;
		if (total > mrl_rndv_after || total < iov[i].iov_len)
			return true;
	}
	return false;
}

/* mrl_post_lease with a registration starting at buf. Only on FI_MR_LOCAL
 * domains, where a failed lease fails the post. */
static int mrl_post_lease_based(struct mrl_post *p, const void *buf,
				size_t len, void **out)
{
	struct mrl_registration *reg;
	uintptr_t start = (uintptr_t)buf;
	int ret;

	if (!p->op && !(p->op = mrl_op_alloc(p->x->pool)))
		return -FI_EAGAIN;
	ret = mrl_cache_acquire_based(p->x->cache, start, start + len, &reg);
	if (ret) {
		mrl_post_lease_failed(buf, len, ret);
		return ret;
	}
	ret = mrl_op_add_lease(p->op, reg);
	if (ret) {
		mrl_lease_release(reg);
		return -FI_EAGAIN;
	}
	*out = mrl_registration_desc(reg);
	return 0;
}

/* mrl_post_iov for the local operands of a send (msg and tagged). */
int mrl_post_send_iov(struct mrl_post *p, const struct iovec *iov,
		      void **desc, size_t count, size_t min, void **out)
{
	int ret;

	if (!mrl_send_based(p->x, iov, count))
		return mrl_post_iov(p, iov, desc, count, min, out);
	for (size_t i = 0; i < count; i++) {
		out[i] = desc ? desc[i] : NULL;
		if (out[i] || !iov[i].iov_base || iov[i].iov_len < min)
			continue;
		ret = mrl_post_lease_based(p, iov[i].iov_base, iov[i].iov_len,
					   &out[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static ssize_t mrl_msg_sendmsg_slow(struct mrl_ep *ep, const struct fi_msg *msg,
				    uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	void *desc[MRL_XFER_IOV_MAX];
	struct fi_msg m = *msg;
	struct mrl_post p;
	ssize_t ret;

	mrl_post_init(&p, x, MRL_TX);
	ret = mrl_post_send_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
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
	ret = dir == MRL_TX ?
		mrl_post_send_iov(&p, iov, desc, count, d->min, ldesc) :
		mrl_post_iov(&p, iov, desc, count, d->min, ldesc);
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
	mrl_rndv_limit_init();
	mrl_xfer_msg_ops = mrl_ep_msg_ops;
	mrl_xfer_msg_ops.recv = mrl_msg_recv;
	mrl_xfer_msg_ops.recvv = mrl_msg_recvv;
	mrl_xfer_msg_ops.recvmsg = mrl_msg_recvmsg;
	mrl_xfer_msg_ops.send = mrl_msg_send;
	mrl_xfer_msg_ops.sendv = mrl_msg_sendv;
	mrl_xfer_msg_ops.sendmsg = mrl_msg_sendmsg;
	mrl_xfer_msg_ops.senddata = mrl_msg_senddata;
}
