/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_read/fi_write and friends: local operands are resolved like sends
 * (all RMA is the transmit direction); the remote side (rma_iov, key) is
 * the application's and passes untouched.
 */
#include "config.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_trigger.h>

#include "mrl_xfer_inline.h"

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

/* A single-buffer call off the hit path: the slow path (err 0), or its
 * lease failed (err: mrl_xfer_post_single_failed). */
static ssize_t __attribute__((noinline, cold))
mrl_xfer_rma_single_slow(struct mrl_ep *ep, enum mrl_rma_kind kind, void *buf,
			 size_t len, fi_addr_t peer, uint64_t addr,
			 uint64_t key, uint64_t data, void *context, int err)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	void *desc = NULL;
	int ret;

	if (!err)
		return mrl_xfer_rma_slow(ep, kind, &iov, &desc, 1, peer, addr,
					 key, data, context);
	ret = mrl_xfer_post_single_failed(ep->ext, buf, len, err);
	if (ret)
		return ret;
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

/* The operands of an RMA call into its op (mrl_xfer_op_args: a = addr,
 * b = key, c = data). */
static inline __attribute__((always_inline)) void
mrl_xfer_rma_args_set(enum mrl_rma_kind kind, struct mrl_op *op,
		      struct fid_ep *fep, const void *buf, size_t len,
		      fi_addr_t peer, uint64_t addr, uint64_t key,
		      uint64_t data, void *context)
{
	struct mrl_op_args *a = mrl_xfer_op_args(op);

	a->a = addr;
	a->b = key;
	if (kind == MRL_RMA_WRITEDATA)
		a->c = data;
	mrl_xfer_op_args_set(op, fep, buf, len, peer, context);
}

/* The lease failed in the leased half: the op goes back, the call takes
 * mrl_xfer_rma_single_slow with the operands it left in the op. */
static ssize_t __attribute__((noinline, cold))
mrl_xfer_rma_op_failed(enum mrl_rma_kind kind, struct mrl_op *op, int err)
{
	struct mrl_op_args a;
	void *context = mrl_xfer_op_give_back(op, &a);

	return mrl_xfer_rma_single_slow(mrl_hook_ep_of(a.fep), kind, a.buf,
					a.len, a.peer, a.a, a.b, a.c, context,
					err);
}

/*
 * The leased half of a read, write or writedata (the second half of the
 * single-buffer hit path, see mrl_xfer_inline.h): the lease into the op, the op
 * LIVE, the inner call with the operands the first half stored in the op.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_rma_op(enum mrl_rma_kind kind, struct mrl_cache_domain *cache,
		uintptr_t buf, size_t len, struct mrl_op *op)
{
	struct mrl_op_args *a = mrl_xfer_op_args(op);
	struct fid_ep *in;
	void *desc;
	ssize_t ret;
	int err;

	err = mrl_xfer_op_lease_one(cache, buf, len, op, &desc);
	if (__builtin_expect(err != 0, 0))
		return mrl_xfer_rma_op_failed(kind, op, err);
	in = mrl_hook_ep_of(a->fep)->inner;
	switch (kind) {
	case MRL_RMA_READ:
		ret = fi_read(in, a->buf, a->len, desc, a->peer, a->a, a->b,
			      op);
		break;
	case MRL_RMA_WRITE:
		ret = fi_write(in, a->buf, a->len, desc, a->peer, a->a, a->b,
			       op);
		break;
	default:
		ret = fi_writedata(in, a->buf, a->len, desc, a->c, a->peer,
				   a->a, a->b, op);
		break;
	}
	if (__builtin_expect(ret != 0, 0))
		mrl_xfer_op_free_poster(op);
	return ret;
}

#define MRL_RMA_OP(name, kind)                                          \
	static ssize_t __attribute__((noinline))                        \
	name(struct mrl_cache_domain *cache, uintptr_t buf, size_t len, \
	     struct mrl_op *op)                                         \
	{                                                               \
		return mrl_xfer_rma_op(kind, cache, buf, len, op);      \
	}
MRL_RMA_OP(mrl_xfer_rma_read_op, MRL_RMA_READ)
MRL_RMA_OP(mrl_xfer_rma_write_op, MRL_RMA_WRITE)
MRL_RMA_OP(mrl_xfer_rma_writedata_op, MRL_RMA_WRITEDATA)

/*
 * The first half for a thread that is not its pool's owner, or an owner
 * whose list is empty (out of line: the shared stack's CAS loop needs more
 * registers than a frameless call has): an op off the pool, the operands
 * into it, the leased half. Anything else goes to mrl_xfer_rma_single_slow.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_rma_pop(enum mrl_rma_kind kind, struct fid_ep *fep, const void *buf,
		 size_t len, fi_addr_t peer, uint64_t addr, uint64_t key,
		 uint64_t data, void *context,
		 ssize_t (*leased)(struct mrl_cache_domain *, uintptr_t, size_t,
				   struct mrl_op *))
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op *op;

	op = mrl_xfer_post_pop(x->dir[MRL_TX].single, buf, 0);
	if (!op)
		return mrl_xfer_rma_single_slow(ep, kind, (void *) buf, len,
						peer, addr, key, data, context,
						0);
	mrl_xfer_rma_args_set(kind, op, fep, buf, len, peer, addr, key, data,
			      context);
	return leased(x->cache, (uintptr_t) buf, len, op);
}

static ssize_t __attribute__((noinline, noclone))
mrl_xfer_rma_read_pop(struct fid_ep *fep, void *buf, size_t len, void *desc,
		      fi_addr_t src_addr, uint64_t addr, uint64_t key,
		      void *context)
{
	(void) desc;
	return mrl_xfer_rma_pop(MRL_RMA_READ, fep, buf, len, src_addr, addr,
				key, 0, context, mrl_xfer_rma_read_op);
}

static ssize_t __attribute__((noinline, noclone))
mrl_xfer_rma_write_pop(struct fid_ep *fep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest_addr, uint64_t addr,
		       uint64_t key, void *context)
{
	(void) desc;
	return mrl_xfer_rma_pop(MRL_RMA_WRITE, fep, buf, len, dest_addr, addr,
				key, 0, context, mrl_xfer_rma_write_op);
}

static ssize_t __attribute__((noinline, noclone))
mrl_xfer_rma_writedata_pop(struct fid_ep *fep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	(void) desc;
	return mrl_xfer_rma_pop(MRL_RMA_WRITEDATA, fep, buf, len, dest_addr,
				addr, key, data, context,
				mrl_xfer_rma_writedata_op);
}

/*
 * The first half of the hit path (mrl_xfer_inline.h) of a single-buffer RMA
 * call that needs a lease, for the pool's owner (no stack frame; pool is
 * x->dir[MRL_TX].single): the op off its own list, taken with the call's
 * operands stored in it. The caller passes it to the call's leased half
 * with pool->cache. NULL (no buffer, another thread, an empty list): the
 * caller takes its out-of-line pop instead.
 */
static inline __attribute__((always_inline)) struct mrl_op *
mrl_xfer_rma_owned(enum mrl_rma_kind kind, struct mrl_op_pool *pool,
		   struct fid_ep *fep, const void *buf, size_t len,
		   fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data,
		   void *context)
{
	struct mrl_op *op = mrl_xfer_post_owned(pool, buf);

	if (!op)
		return NULL;
	mrl_xfer_rma_args_set(kind, op, fep, buf, len, peer, addr, key, data,
			      context);
	mrl_xfer_post_owned_take(pool, op, mrl_xfer_op_shape(MRL_OP_OWNED, 1),
				 MRL_OP_LIVE_OWNED);
	return op;
}

/* mrl_xfer_rma_read, the operand below the threshold with no descriptor:
 * counted and forwarded, out of line so that the caller keeps no frame. */
static ssize_t __attribute__((noinline, noclone))
mrl_xfer_rma_read_small(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key,
			void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);

	mrl_xfer_count_small(ep->ext, MRL_TX, len);
	return fi_read(ep->inner, buf, len, desc, src_addr, addr, key, context);
}

static ssize_t
mrl_xfer_rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
		  fi_addr_t src_addr, uint64_t addr, uint64_t key,
		  void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool;
	struct mrl_op *op;

	if (desc)
		return fi_read(ep->inner, buf, len, desc, src_addr, addr, key,
			       context);
	if (len < x->dir[MRL_TX].min)
		return mrl_xfer_rma_read_small(fep, buf, len, desc, src_addr,
					       addr, key, context);
	pool = x->dir[MRL_TX].single;
	op = mrl_xfer_rma_owned(MRL_RMA_READ, pool, fep, buf, len, src_addr,
				addr, key, 0, context);
	if (!op)
		return mrl_xfer_rma_read_pop(fep, buf, len, desc, src_addr,
					     addr, key, context);
	return mrl_xfer_rma_read_op(pool->cache, (uintptr_t) buf, len, op);
}

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

/* mrl_xfer_rma_write, the operand below the threshold with no descriptor:
 * counted and forwarded, out of line so that the caller keeps no frame. */
static ssize_t __attribute__((noinline, noclone))
mrl_xfer_rma_write_small(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest_addr, uint64_t addr,
			 uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);

	mrl_xfer_count_small(ep->ext, MRL_TX, len);
	return fi_write(ep->inner, buf, len, desc, dest_addr, addr, key,
			context);
}

static ssize_t
mrl_xfer_rma_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
		   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		   void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool;
	struct mrl_op *op;

	if (desc)
		return fi_write(ep->inner, buf, len, desc, dest_addr, addr, key,
				context);
	if (len < x->dir[MRL_TX].min)
		return mrl_xfer_rma_write_small(fep, buf, len, desc, dest_addr,
						addr, key, context);
	pool = x->dir[MRL_TX].single;
	op = mrl_xfer_rma_owned(MRL_RMA_WRITE, pool, fep, buf, len, dest_addr,
				addr, key, 0, context);
	if (!op)
		return mrl_xfer_rma_write_pop(fep, buf, len, desc, dest_addr,
					      addr, key, context);
	return mrl_xfer_rma_write_op(pool->cache, (uintptr_t) buf, len, op);
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

/* mrl_xfer_rma_writedata, the operand below the threshold with no descriptor:
 * counted and forwarded, out of line so that the caller keeps no frame. */
static ssize_t __attribute__((noinline, noclone))
mrl_xfer_rma_writedata_small(struct fid_ep *fep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);

	mrl_xfer_count_small(ep->ext, MRL_TX, len);
	return fi_writedata(ep->inner, buf, len, desc, data, dest_addr, addr,
			    key, context);
}

static ssize_t
mrl_xfer_rma_writedata(struct fid_ep *fep, const void *buf, size_t len,
		       void *desc, uint64_t data, fi_addr_t dest_addr,
		       uint64_t addr, uint64_t key, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	struct mrl_op_pool *pool;
	struct mrl_op *op;

	if (desc)
		return fi_writedata(ep->inner, buf, len, desc, data, dest_addr,
				    addr, key, context);
	if (len < x->dir[MRL_TX].min)
		return mrl_xfer_rma_writedata_small(fep, buf, len, desc, data,
						    dest_addr, addr, key,
						    context);
	pool = x->dir[MRL_TX].single;
	op = mrl_xfer_rma_owned(MRL_RMA_WRITEDATA, pool, fep, buf, len,
				dest_addr, addr, key, data, context);
	if (!op)
		return mrl_xfer_rma_writedata_pop(fep, buf, len, desc, data,
						  dest_addr, addr, key,
						  context);
	return mrl_xfer_rma_writedata_op(pool->cache, (uintptr_t) buf, len, op);
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

	/* The flag first: the inner endpoint's load can then replace fep
	 * in its register (no copy). */
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

	/* The flag first: the inner endpoint's load can then replace fep
	 * in its register (no copy). */
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
