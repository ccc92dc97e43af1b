/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_read/fi_write and friends: local operands are resolved like sends
 * (all RMA is the transmit direction); the remote side (rma_iov, key) is
 * the application's and passes untouched.
 */
#include "config.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_trigger.h>

#include "mrl_xfer_single.h"

struct fi_ops_rma mrl_xfer_rma_ops;

enum mrl_rma_kind { MRL_RMA_READ, MRL_RMA_WRITE, MRL_RMA_WRITEDATA };

/* One RMA post of any shape, as fi_msg_rma describes it. */
struct mrl_rma_call {
	enum mrl_rma_kind kind;
	const struct iovec *iov;
	void **desc; /* may be NULL: all NULL */
	size_t count;
	fi_addr_t peer;
	const struct fi_rma_iov *rma_iov;
	size_t rma_count; /* 1 for the non-msg calls */
	uint64_t data;
	void *context;
};

/* The inner call of c with local descriptors ldesc and context ctx: the
 * msg call with flags when as_msg, else c's own shape (single buffers as
 * the v call). */
static ssize_t
mrl_xfer_rma_issue(struct fid_ep *in, const struct mrl_rma_call *c,
		   void **ldesc, void *ctx, uint64_t flags, bool as_msg)
{
	const struct fi_rma_iov *r = c->rma_iov;

	if (as_msg) {
		struct fi_msg_rma m = {
			.msg_iov = c->iov,
			.desc = ldesc,
			.iov_count = c->count,
			.addr = c->peer,
			.rma_iov = r,
			.rma_iov_count = c->rma_count,
			.context = ctx,
			.data = c->data,
		};

		return c->kind == MRL_RMA_READ ? fi_readmsg(in, &m, flags) :
						 fi_writemsg(in, &m, flags);
	}
	switch (c->kind) {
	case MRL_RMA_READ:
		return fi_readv(in, c->iov, ldesc, c->count, c->peer, r->addr,
				r->key, ctx);
	case MRL_RMA_WRITE:
		return fi_writev(in, c->iov, ldesc, c->count, c->peer, r->addr,
				 r->key, ctx);
	default:
		return fi_writedata(in, c->iov->iov_base, c->iov->iov_len,
				    ldesc[0], c->data, c->peer, r->addr, r->key,
				    ctx);
	}
}

/* Post c with its local operands resolved: as the msg call with flags when
 * as_msg (the application's msg calls, converted calls), else in c's own
 * shape. */
static ssize_t
mrl_xfer_rma_post(struct mrl_ep *ep, const struct mrl_rma_call *c,
		  uint64_t flags, bool as_msg)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[MRL_TX];
	void *ldesc[MRL_XFER_IOV_MAX];
	struct mrl_post p;
	void *ctx;
	ssize_t ret;

	mrl_xfer_post_init(&p, x, MRL_TX);
	ret = mrl_xfer_post_iov(&p, c->iov, c->desc, c->count,
				as_msg ? d->min_msg : d->min, ldesc);
	if (ret)
		return mrl_xfer_post_end(&p, ret);
	ctx = mrl_xfer_post_context(&p, c->context, &flags);
	return mrl_xfer_post_end(&p, mrl_xfer_rma_issue(ep->inner, c, ldesc,
							ctx, flags, as_msg));
}

/* The slow path of a non-msg call (one remote iov covering the local
 * ones): the endpoint's default flags, as the msg call when the route
 * needs FI_COMPLETION. */
static ssize_t
mrl_xfer_rma_slow(struct mrl_ep *ep, enum mrl_rma_kind kind,
		  const struct iovec *iov, void **desc, size_t count,
		  fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data,
		  void *context)
{
	const struct mrl_xdir *d = &((struct mrl_xep *) ep->ext)->dir[MRL_TX];
	struct fi_rma_iov rma_iov = {.addr = addr, .key = key};
	struct mrl_rma_call c = {
		.kind = kind,
		.iov = iov,
		.desc = desc,
		.count = count,
		.peer = peer,
		.rma_iov = &rma_iov,
		.rma_count = 1,
		.data = data,
		.context = context,
	};
	uint64_t flags = d->op_flags;

	for (size_t i = 0; i < count; i++)
		rma_iov.len += iov[i].iov_len;
	if (kind == MRL_RMA_WRITEDATA)
		flags |= FI_REMOTE_CQ_DATA;
	return mrl_xfer_rma_post(ep, &c, flags, d->convert);
}

/* The application's readmsg/writemsg. */
static ssize_t
mrl_xfer_rma_slowmsg(struct mrl_ep *ep, enum mrl_rma_kind kind,
		     const struct fi_msg_rma *msg, uint64_t flags)
{
	struct mrl_rma_call c = {
		.kind = kind,
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.peer = msg->addr,
		.rma_iov = msg->rma_iov,
		.rma_count = msg->rma_iov_count,
		.data = msg->data,
		.context = msg->context,
	};

	return mrl_xfer_rma_post(ep, &c, flags, true);
}

/* The single-buffer rows (mrl_xfer_single.h; the operands' a = addr,
 * b = key, c = data): every RMA call may take the hit path. */
static inline bool
mrl_xfer_rma_single_ok(enum mrl_rma_kind kind, const struct mrl_xep *x,
		       size_t len)
{
	(void) kind;
	(void) x;
	(void) len;
	return true;
}

/* A single-buffer call off the hit path: the slow path (err 0), or its
 * lease failed (err: mrl_xfer_post_single_failed), then it goes out with
 * desc NULL. */
static ssize_t __attribute__((noinline, cold))
mrl_xfer_rma_single_slow(enum mrl_rma_kind kind, const struct mrl_op_args *s,
			 void *context, int err)
{
	struct mrl_ep *ep = mrl_hook_ep_of(s->fep);
	struct iovec iov = {.iov_base = s->buf, .iov_len = s->len};
	struct fi_rma_iov rma_iov = {.addr = s->a, .len = s->len, .key = s->b};
	void *desc = NULL;
	struct mrl_rma_call c = {
		.kind = kind,
		.iov = &iov,
		.desc = &desc,
		.count = 1,
		.peer = s->peer,
		.rma_iov = &rma_iov,
		.rma_count = 1,
		.data = s->c,
		.context = context,
	};
	int ret;

	if (!err)
		return mrl_xfer_rma_slow(ep, kind, &iov, &desc, 1, s->peer,
					 s->a, s->b, s->c, context);
	ret = mrl_xfer_post_single_failed(ep->ext, s->buf, s->len, err);
	if (ret)
		return ret;
	return mrl_xfer_rma_issue(ep->inner, &c, &desc, context, 0, false);
}

/* The leased half's lease failed: its op given back, the call takes the
 * slow path with the operands the op held. */
static ssize_t __attribute__((noinline, cold))
mrl_xfer_rma_single_failed(enum mrl_rma_kind kind, struct mrl_op *op, int err)
{
	struct mrl_op_args s;
	void *context = mrl_xfer_op_give_back(op, &s);

	return mrl_xfer_rma_single_slow(kind, &s, context, err);
}

/* The single-buffer calls, one row each (mrl_xfer_single.h). */
/* clang-format off */
MRL_XFER_SINGLE(mrl_xfer_rma_read, rma, MRL_RMA_READ, MRL_TX,
	(void *buf, size_t len, void *desc, fi_addr_t peer, uint64_t addr,
	 uint64_t key, void *context),
	fi_read, (buf, len, desc, peer, addr, key, context),
	(s->a = addr, s->b = key),
	fi_read(in, s->buf, s->len, desc, s->peer, s->a, s->b, op))

MRL_XFER_SINGLE(mrl_xfer_rma_write, rma, MRL_RMA_WRITE, MRL_TX,
	(const void *buf, size_t len, void *desc, fi_addr_t peer,
	 uint64_t addr, uint64_t key, void *context),
	fi_write, (buf, len, desc, peer, addr, key, context),
	(s->a = addr, s->b = key),
	fi_write(in, s->buf, s->len, desc, s->peer, s->a, s->b, op))

MRL_XFER_SINGLE(mrl_xfer_rma_writedata, rma, MRL_RMA_WRITEDATA, MRL_TX,
	(const void *buf, size_t len, void *desc, uint64_t data,
	 fi_addr_t peer, uint64_t addr, uint64_t key, void *context),
	fi_writedata, (buf, len, desc, data, peer, addr, key, context),
	(s->a = addr, s->b = key, s->c = data),
	fi_writedata(in, s->buf, s->len, desc, s->c, s->peer, s->a, s->b, op))
/* clang-format on */

static ssize_t
mrl_xfer_rma_readv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		   size_t count, fi_addr_t src_addr, uint64_t addr,
		   uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, iov, desc, count, x->dir[MRL_TX].min))
		return fi_readv(ep->inner, iov, desc, count, src_addr, addr,
				key, context);
	return mrl_xfer_rma_slow(ep, MRL_RMA_READ, iov, desc, count, src_addr,
				 addr, key, 0, context);
}

static ssize_t
mrl_xfer_rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
		     uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc, msg->iov_count,
				      x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_readmsg(ep->inner, msg, flags);
	}
	return mrl_xfer_rma_slowmsg(ep, MRL_RMA_READ, msg, flags);
}

static ssize_t
mrl_xfer_rma_writev(struct fid_ep *fep, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t dest_addr, uint64_t addr,
		    uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if (!mrl_xfer_iov_needs_lease(x, iov, desc, count, x->dir[MRL_TX].min))
		return fi_writev(ep->inner, iov, desc, count, dest_addr, addr,
				 key, context);
	return mrl_xfer_rma_slow(ep, MRL_RMA_WRITE, iov, desc, count, dest_addr,
				 addr, key, 0, context);
}

static ssize_t
mrl_xfer_rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
		      uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;

	if ((flags & FI_INJECT) ||
	    !mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc, msg->iov_count,
				      x->dir[MRL_TX].min_msg)) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_writemsg(ep->inner, msg, flags);
	}
	return mrl_xfer_rma_slowmsg(ep, MRL_RMA_WRITE, msg, flags);
}

/* ---- endpoints of domains that never lease ------------------------- */

/*
 * The passthrough's table with the calls a utility provider makes on every
 * RMA forwarded without its per-call checks (mrl_xfer_rma_plain_install
 * checked the inner table once). Triggered msg calls keep the passthrough's
 * counter translation.
 */
static struct fi_ops_rma mrl_xfer_plain_rma_ops;

static ssize_t
mrl_xfer_plain_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
		    fi_addr_t src_addr, uint64_t addr, uint64_t key,
		    void *context)
{
	struct fid_ep *in = mrl_hook_ep_of(fep)->inner;

	return in->rma->read(in, buf, len, desc, src_addr, addr, key, context);
}

static ssize_t
mrl_xfer_plain_write(struct fid_ep *fep, const void *buf, size_t len,
		     void *desc, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key, void *context)
{
	struct fid_ep *in = mrl_hook_ep_of(fep)->inner;

	return in->rma->write(in, buf, len, desc, dest_addr, addr, key,
			      context);
}

static ssize_t
mrl_xfer_plain_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
		       uint64_t flags)
{
	struct fid_ep *in;

	/* A triggered call keeps the passthrough's counter translation. */
	if (flags & FI_TRIGGER)
		return mrl_hook_ep_rma_ops.readmsg(fep, msg, flags);
	in = mrl_hook_ep_of(fep)->inner;
	return in->rma->readmsg(in, msg, flags);
}

static ssize_t
mrl_xfer_plain_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			uint64_t flags)
{
	struct fid_ep *in;

	/* A triggered call keeps the passthrough's counter translation. */
	if (flags & FI_TRIGGER)
		return mrl_hook_ep_rma_ops.writemsg(fep, msg, flags);
	in = mrl_hook_ep_of(fep)->inner;
	return in->rma->writemsg(in, msg, flags);
}

void
mrl_xfer_rma_plain_install(struct mrl_ep *ep)
{
	const struct fi_ops_rma *in = ep->inner->rma;

	if (ep->ep.rma != &mrl_hook_ep_rma_ops ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, read) ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, write) ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, readmsg) ||
	    !FI_CHECK_OP(in, struct fi_ops_rma, writemsg))
		return;
	ep->ep.rma = &mrl_xfer_plain_rma_ops;
}

void
mrl_xfer_rma_init(void)
{
	mrl_xfer_plain_rma_ops = mrl_hook_ep_rma_ops;
	mrl_xfer_plain_rma_ops.read = mrl_xfer_plain_read;
	mrl_xfer_plain_rma_ops.write = mrl_xfer_plain_write;
	mrl_xfer_plain_rma_ops.readmsg = mrl_xfer_plain_readmsg;
	mrl_xfer_plain_rma_ops.writemsg = mrl_xfer_plain_writemsg;
	mrl_xfer_rma_ops = mrl_hook_ep_rma_ops;
	mrl_xfer_rma_ops.read = mrl_xfer_rma_read;
	mrl_xfer_rma_ops.readv = mrl_xfer_rma_readv;
	mrl_xfer_rma_ops.readmsg = mrl_xfer_rma_readmsg;
	mrl_xfer_rma_ops.write = mrl_xfer_rma_write;
	mrl_xfer_rma_ops.writev = mrl_xfer_rma_writev;
	mrl_xfer_rma_ops.writemsg = mrl_xfer_rma_writemsg;
	mrl_xfer_rma_ops.writedata = mrl_xfer_rma_writedata;
}
