/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_send/fi_recv and friends, and the posting code the tagged calls
 * (mrl_xfer_tagged.c) share. Each call checks first whether an operand
 * needs a lease; if none does it is forwarded as is (the fast path). A
 * single-buffer call that needs one takes the hit path the RMA calls take
 * (one row each, mrl_xfer_single.h: an op off the owner's list or the
 * pool, one lease, the inner call in the same shape). Everything else goes
 * through mrl_xfer_msg_post, one body for msg and tagged calls of any
 * shape: leased non-msg calls keep their shape unless the route needs
 * FI_COMPLETION added, in which case they go out as the equivalent msg call
 * with the endpoint's default flags.
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
 * (mrl_cache_acquire_based through mrl_post.based: repeated sends of one
 * buffer hit it; mrl_xep.based_after is the limit, SIZE_MAX elsewhere). Shorter
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

#include "mrl_xfer_msg.h"

struct fi_ops_msg mrl_xfer_msg_ops;

/* Messages longer than this go by rendezvous (set once at init). */
size_t mrl_xfer_rndv_after = 16384;

static void
mrl_xfer_rndv_limit_init(void)
{
	const char *s = getenv("FI_OFI_RXM_BUFFER_SIZE");
	unsigned long long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoull(s, NULL, 0);
	/* Whatever rxm makes of a malformed value, a smaller limit only
	 * takes more exact registrations. */
	mrl_xfer_rndv_after = errno || v > SIZE_MAX ? 0 : (size_t) v;
}

/* Whether the leased operands of this send must start their registration
 * at their iov (see the top of this file). */
static bool
mrl_xfer_send_based(const struct mrl_xep *x, const struct iovec *iov,
		    size_t count)
{
	size_t total = 0;

	if (x->based_after == SIZE_MAX)
		return false;
	for (size_t i = 0; i < count; i++) {
		total += iov[i].iov_len;
		if (total > x->based_after || total < iov[i].iov_len)
			return true;
	}
	return false;
}

/* The inner call of c with local descriptors ldesc and context ctx: the
 * msg call with flags when as_msg, else c's own shape (single buffers as
 * the v call). */
static ssize_t
mrl_xfer_msg_issue(struct fid_ep *in, const struct mrl_msg_call *c,
		   void **ldesc, void *ctx, uint64_t flags, bool as_msg)
{
	bool tagged = mrl_xfer_msg_tagged(c->kind);
	bool tx = mrl_xfer_msg_dir(c->kind) == MRL_TX;

	if (as_msg && tagged) {
		struct fi_msg_tagged m = {
			.msg_iov = c->iov,
			.desc = ldesc,
			.iov_count = c->count,
			.addr = c->addr,
			.tag = c->tag,
			.ignore = c->ignore,
			.context = ctx,
			.data = c->data,
		};

		return tx ? fi_tsendmsg(in, &m, flags) :
			    fi_trecvmsg(in, &m, flags);
	}
	if (as_msg) {
		struct fi_msg m = {
			.msg_iov = c->iov,
			.desc = ldesc,
			.iov_count = c->count,
			.addr = c->addr,
			.context = ctx,
			.data = c->data,
		};

		return tx ? fi_sendmsg(in, &m, flags) :
			    fi_recvmsg(in, &m, flags);
	}
	switch (c->kind) {
	case MRL_SEND:
		return fi_sendv(in, c->iov, ldesc, c->count, c->addr, ctx);
	case MRL_SENDDATA:
		return fi_senddata(in, c->iov->iov_base, c->iov->iov_len,
				   ldesc[0], c->data, c->addr, ctx);
	case MRL_RECV:
		return fi_recvv(in, c->iov, ldesc, c->count, c->addr, ctx);
	case MRL_TSEND:
		return fi_tsendv(in, c->iov, ldesc, c->count, c->addr, c->tag,
				 ctx);
	case MRL_TSENDDATA:
		return fi_tsenddata(in, c->iov->iov_base, c->iov->iov_len,
				    ldesc[0], c->data, c->addr, c->tag, ctx);
	default:
		return fi_trecvv(in, c->iov, ldesc, c->count, c->addr, c->tag,
				 c->ignore, ctx);
	}
}

ssize_t
mrl_xfer_msg_post(struct mrl_ep *ep, const struct mrl_msg_call *c,
		  uint64_t flags, bool as_msg)
{
	struct mrl_xep *x = ep->ext;
	enum mrl_dir dir = mrl_xfer_msg_dir(c->kind);
	const struct mrl_xdir *d = &x->dir[dir];
	void *ldesc[MRL_XFER_IOV_MAX];
	struct mrl_post p;
	void *ctx;
	ssize_t ret;

	mrl_xfer_post_init(&p, x, dir);
	p.based = dir == MRL_TX && mrl_xfer_send_based(x, c->iov, c->count);
	ret = mrl_xfer_post_iov(&p, c->iov, c->desc, c->count,
				as_msg ? d->min_msg : d->min, ldesc);
	if (ret)
		return mrl_xfer_post_end(&p, ret);
	ctx = mrl_xfer_post_context(&p, c->context, &flags);
	return mrl_xfer_post_end(&p, mrl_xfer_msg_issue(ep->inner, c, ldesc,
							ctx, flags, as_msg));
}

ssize_t
mrl_xfer_msg_slow(struct mrl_ep *ep, const struct mrl_msg_call *c)
{
	const struct mrl_xdir *d =
		&((struct mrl_xep *) ep->ext)->dir[mrl_xfer_msg_dir(c->kind)];
	uint64_t flags = d->op_flags;

	if (c->kind == MRL_SENDDATA || c->kind == MRL_TSENDDATA)
		flags |= FI_REMOTE_CQ_DATA;
	return mrl_xfer_msg_post(ep, c, flags, d->convert);
}

ssize_t
mrl_xfer_msg_single_slow(enum mrl_msg_kind kind, const struct mrl_op_args *s,
			 void *context, int err)
{
	struct mrl_ep *ep = mrl_hook_ep_of(s->fep);
	struct iovec iov = {.iov_base = s->buf, .iov_len = s->len};
	void *desc = NULL;
	struct mrl_msg_call c = {
		.kind = kind,
		.iov = &iov,
		.desc = &desc,
		.count = 1,
		.addr = s->peer,
		.tag = s->a,
		.ignore = s->b,
		.data = s->c,
		.context = context,
	};
	int ret;

	if (!err)
		return mrl_xfer_msg_slow(ep, &c);
	ret = mrl_xfer_post_single_failed(ep->ext, s->buf, s->len, err);
	if (ret)
		return ret;
	return mrl_xfer_msg_issue(ep->inner, &c, &desc, context, 0, false);
}

/* The leased half's lease failed: its op given back, the call takes the
 * slow path with the operands the op held. */
ssize_t
mrl_xfer_msg_single_failed(enum mrl_msg_kind kind, struct mrl_op *op, int err)
{
	struct mrl_op_args s;
	void *context = mrl_xfer_op_give_back(op, &s);

	return mrl_xfer_msg_single_slow(kind, &s, context, err);
}

/* The single-buffer calls, one row each (mrl_xfer_single.h). */
/* clang-format off */
MRL_XFER_SINGLE(mrl_xfer_msg_recv, msg, MRL_RECV, MRL_RX,
	(void *buf, size_t len, void *desc, fi_addr_t peer, void *context),
	fi_recv, (buf, len, desc, peer, context),
	(),
	fi_recv(in, s->buf, s->len, desc, s->peer, op))

MRL_XFER_SINGLE(mrl_xfer_msg_send, msg, MRL_SEND, MRL_TX,
	(const void *buf, size_t len, void *desc, fi_addr_t peer,
	 void *context),
	fi_send, (buf, len, desc, peer, context),
	(),
	fi_send(in, s->buf, s->len, desc, s->peer, op))

MRL_XFER_SINGLE(mrl_xfer_msg_senddata, msg, MRL_SENDDATA, MRL_TX,
	(const void *buf, size_t len, void *desc, uint64_t data,
	 fi_addr_t peer, void *context),
	fi_senddata, (buf, len, desc, data, peer, context),
	(s->c = data),
	fi_senddata(in, s->buf, s->len, desc, s->c, s->peer, op))
/* clang-format on */

/* The slow path of the iov calls. */
static ssize_t
mrl_xfer_msg_slowv(struct mrl_ep *ep, enum mrl_msg_kind kind,
		   const struct iovec *iov, void **desc, size_t count,
		   fi_addr_t addr, void *context)
{
	struct mrl_msg_call c = {
		.kind = kind,
		.iov = iov,
		.desc = desc,
		.count = count,
		.addr = addr,
		.context = context,
	};

	return mrl_xfer_msg_slow(ep, &c);
}

/* The app's msg calls. */
static ssize_t
mrl_xfer_msg_slowmsg(struct mrl_ep *ep, enum mrl_msg_kind kind,
		     const struct fi_msg *msg, uint64_t flags)
{
	struct mrl_msg_call c = {
		.kind = kind,
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.addr = msg->addr,
		.context = msg->context,
		.data = msg->data,
	};

	return mrl_xfer_msg_post(ep, &c, flags, true);
}

static ssize_t
mrl_xfer_msg_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		   size_t count, fi_addr_t src_addr, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, iov, desc, count, x->dir[MRL_RX].min))
		return fi_recvv(ep->inner, iov, desc, count, src_addr, context);
	return mrl_xfer_msg_slowv(ep, MRL_RECV, iov, desc, count, src_addr,
				  context);
}

static ssize_t
mrl_xfer_msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg,
		     uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	/* A multi-recv buffer ends at a completion flag: leased only where
	 * completions carry flags, the rx caps have FI_MULTI_RECV, and on a
	 * shared pool once the rx CQ is guarded (mrl_xfer_cq.c). */
	if (!mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc,
				      msg->iov_count, x->dir[MRL_RX].min_msg) ||
	    ((flags & FI_MULTI_RECV) && !mrl_xfer_msg_multi_recv_ok(x))) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_recvmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_msg_slowmsg(ep, MRL_RECV, msg, flags);
}

static ssize_t
mrl_xfer_msg_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		   size_t count, fi_addr_t dest_addr, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, iov, desc, count, x->dir[MRL_TX].min))
		return fi_sendv(ep->inner, iov, desc, count, dest_addr,
				context);
	return mrl_xfer_msg_slowv(ep, MRL_SEND, iov, desc, count, dest_addr,
				  context);
}

static ssize_t
mrl_xfer_msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg,
		     uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_INJECT) ||
	    !mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc, msg->iov_count,
				      x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_sendmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_msg_slowmsg(ep, MRL_SEND, msg, flags);
}

void
mrl_xfer_msg_init(void)
{
	mrl_xfer_rndv_limit_init();
	mrl_xfer_msg_ops = mrl_hook_ep_msg_ops;
	mrl_xfer_msg_ops.recv = mrl_xfer_msg_recv;
	mrl_xfer_msg_ops.recvv = mrl_xfer_msg_recvv;
	mrl_xfer_msg_ops.recvmsg = mrl_xfer_msg_recvmsg;
	mrl_xfer_msg_ops.send = mrl_xfer_msg_send;
	mrl_xfer_msg_ops.sendv = mrl_xfer_msg_sendv;
	mrl_xfer_msg_ops.sendmsg = mrl_xfer_msg_sendmsg;
	mrl_xfer_msg_ops.senddata = mrl_xfer_msg_senddata;
}
