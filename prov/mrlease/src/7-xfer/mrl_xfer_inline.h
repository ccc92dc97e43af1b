/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path's posting and completing code shared by its source files:
 * operand resolution (struct mrl_post), the single-buffer hit path's two
 * halves, the msg and tagged post helpers, and the inline completion of an
 * op. Included only by the data path's .c files (prov/mrlease/src/7-xfer/);
 * mrl_xfer.h states the rules this code keeps.
 */
#ifndef MRL_XFER_INLINE_H
#define MRL_XFER_INLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "mrl_cache.h"
#include "mrl_hook.h"
#include "mrl_xfer.h"
#include "mrl_xfer_op.h"
#include "mrl_xfer_state.h"

/* Posts with more local iovs than this are forwarded unchanged. */
#define MRL_XFER_IOV_MAX 16

/* ---- completion (mrl_xfer_cq.c, mrl_xfer_cntr.c) ---------------------- */

/*
 * mrl_xfer_op_complete for a successful completion (the entry's flags at
 * flagsp, NULL: none), with the common cases inline: an op with one lease
 * and no flag but MRL_OP_OWNED (no extras, visible, not multi-recv), which
 * its poster marked MRL_OP_LIVE_OWNED or MRL_OP_LIVE_ONE: the state change (a
 * CAS, serial pools included: completion and endpoint close release the
 * leases once; the first CAS also tells the owner's case), the
 * application's context, the op back on its free list, then the lease
 * released from a copy: after the push the op may be reused, and nothing
 * touches the op or its pool (which a close may free once every op is
 * back) after it. The lease is the completer's own reference; the CQ being
 * read keeps the domain open.
 */
static inline __attribute__((always_inline)) bool
mrl_xfer_op_complete_ok(struct mrl_op *op, const uint64_t *flagsp,
			void **app_ctx)
{
	struct mrl_op_pool *pool = op->pool;
	struct mrl_registration *reg;
	unsigned int state = MRL_OP_LIVE_OWNED;

	/* Tested through the state it leaves (not its result: one
	 * instruction less on x86-64). */
	atomic_compare_exchange_strong_explicit(&op->state, &state, MRL_OP_FREE,
						memory_order_acq_rel,
						memory_order_acquire);
	if (__builtin_expect(state == MRL_OP_LIVE_OWNED, 1)) {
		/* Posted by its pool's owner. */
		*app_ctx = op->app_ctx;
		reg = op->leases[0];
		if (__builtin_expect(pool->owner == mrl_xfer_thread_self(), 1))
			mrl_xfer_op_put_owned(pool, op);
		else
			mrl_xfer_op_put(pool, op);
		mrl_cache_lease_release(reg);
		return true;
	}
	if (state == MRL_OP_LIVE_ONE)
		atomic_compare_exchange_strong_explicit(
			&op->state, &state, MRL_OP_FREE, memory_order_acq_rel,
			memory_order_acquire);
	if (state != MRL_OP_LIVE_ONE)
		return mrl_xfer_op_complete(op, flagsp ? *flagsp : 0, false,
					    app_ctx);
	*app_ctx = op->app_ctx;
	reg = op->leases[0];
	mrl_xfer_op_put(pool, op);
	mrl_cache_lease_release(reg);
	return true;
}

/* ---- post-path helpers (mrl_xfer_post.c), shared by the op families ---- */

/* One post being resolved: the op is taken on the first lease. */
struct mrl_post {
	struct mrl_xep *x;
	struct mrl_op *op;
	enum mrl_dir dir;
	bool based; /* leases start at their operand (a rendezvous send on
		     * an FI_MR_LOCAL domain without FI_MR_VIRT_ADDR) */
};

static inline void
mrl_xfer_post_init(struct mrl_post *p, struct mrl_xep *x, enum mrl_dir dir)
{
	p->x = x;
	p->op = NULL;
	p->dir = dir;
	p->based = false;
}

/* Warn that a mandatory lease (FI_MR_LOCAL) failed; out of line. */
void mrl_xfer_post_lease_failed(const void *buf, size_t len, int ret);

/* Lease [buf, buf + len) (a registration starting at buf if p->based)
 * and return its descriptor in *out. */
static inline int
mrl_xfer_post_lease(struct mrl_post *p, const void *buf, size_t len, void **out)
{
	struct mrl_registration *reg;
	uintptr_t start = (uintptr_t) buf;
	int ret;

	if (!p->op) {
		p->op = mrl_xfer_op_alloc(p->x->pool);
		if (!p->op)
			return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	ret = p->based ?
		      mrl_cache_acquire_based(p->x->cache, start, start + len,
					      &reg) :
		      mrl_cache_acquire(p->x->cache, start, start + len, &reg);
	if (ret) {
		if (!p->x->mr_local)
			return 0; /* the provider copes with desc NULL */
		mrl_xfer_post_lease_failed(buf, len, ret);
		return ret;
	}
	if (p->op->nleases < MRL_OP_LEASES) /* no extras chained yet */
		p->op->leases[p->op->nleases++] = reg;
	else
		ret = mrl_xfer_op_add_lease(p->op, reg);
	if (ret) {
		mrl_cache_lease_release(reg);
		return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	*out = mrl_registration_desc(reg);
	return 0;
}

/* An operand without a descriptor shorter than min, forwarded as it is:
 * counted in miss_below_min unless it is empty or min is one that never
 * leases (SIZE_MAX). */
static inline void
mrl_xfer_count_below(struct mrl_xep *x, size_t len, size_t min)
{
	if (len && min != SIZE_MAX)
		mrl_cache_count_below_min(x->cache, 1);
}

/*
 * Resolve one operand: *out = desc, or for a NULL descriptor on an operand
 * of at least min bytes, a lease's descriptor. A failed lease on a domain
 * without FI_MR_LOCAL leaves the descriptor NULL (the provider copes); with
 * FI_MR_LOCAL it fails the post.
 */
static inline int
mrl_xfer_post_buf(struct mrl_post *p, const void *buf, size_t len, void *desc,
		  size_t min, void **out)
{
	*out = desc;
	if (desc)
		return 0;
	if (len < min) {
		mrl_xfer_count_below(p->x, len, min);
		return 0;
	}
	if (!buf)
		return 0;
	return mrl_xfer_post_lease(p, buf, len, out);
}

/* The same for count operands (desc may be NULL: all NULL). */
int mrl_xfer_post_iov(struct mrl_post *p, const struct iovec *iov, void **desc,
		      size_t count, size_t min, void **out);
int mrl_xfer_post_ioc(struct mrl_post *p, const struct fi_ioc *ioc, void **desc,
		      size_t count, enum fi_datatype datatype, size_t min,
		      void **out);

/* A call forwarded with the application's context: a triggered one
 * names the inner counter (mrl_hook_trigger_to_inner). */
static inline void
mrl_xfer_post_trigger_fwd(uint64_t flags, void *app_ctx)
{
	if (__builtin_expect(!!(flags & FI_TRIGGER), 0))
		mrl_hook_trigger_to_inner(flags, app_ctx);
}

/* A leased FI_TRIGGER call: op, the context the provider gets, holds a
 * copy of the application's triggered context naming the inner counter. */
void mrl_xfer_post_trigger_op(struct mrl_post *p, const void *app_ctx);

/*
 * After resolving: the context to give the provider, and the flags (the
 * call's, or the endpoint's defaults for non-msg calls), with FI_COMPLETION
 * added when the route needs it to learn the end of a leased op the
 * application asked no completion for.
 */
static inline void *
mrl_xfer_post_context(struct mrl_post *p, void *app_ctx, uint64_t *flags)
{
	struct mrl_op *op = p->op;
	const struct mrl_xdir *d = &p->x->dir[p->dir];

	if (!op)
		goto unleased;
	if (!op->nleases) {
		/* Every lease attempt fell back to desc NULL. */
		mrl_xfer_op_free_poster(op);
		p->op = NULL;
		goto unleased;
	}
	op->app_ctx = app_ctx;
	if (flags) {
		if (*flags & FI_TRIGGER)
			mrl_xfer_post_trigger_op(p, app_ctx);
		if (*flags & FI_MULTI_RECV)
			op->flags |= MRL_OP_MULTI_RECV;
		if (d->route == MRL_ROUTE_INTERNAL ||
		    (d->route == MRL_ROUTE_SELECTIVE &&
		     !(*flags & FI_COMPLETION))) {
			op->flags |= MRL_OP_HIDDEN;
			*flags |= FI_COMPLETION;
		}
	}
	if (op->shape == mrl_xfer_op_shape(0, 1))
		atomic_store_explicit(&op->state, MRL_OP_LIVE_ONE,
				      memory_order_relaxed);
	return op;

unleased:
	if (flags)
		mrl_xfer_post_trigger_fwd(*flags, app_ctx);
	return app_ctx;
}

/* After the inner post: on failure release what the post took. */
static inline ssize_t
mrl_xfer_post_end(struct mrl_post *p, ssize_t ret)
{
	if (ret && p->op)
		mrl_xfer_op_free_poster(p->op);
	return ret;
}

/*
 * The single-buffer hit path. A single-buffer call (fi_read, fi_write,
 * fi_writedata, fi_send, fi_senddata, fi_recv and the tagged ones) whose
 * operand needs a lease runs in two halves, so that no register is saved
 * around the lease cache's out-of-line paths:
 * 1. the application's call, with no stack frame: its checks, an op (the
 *    pool's owner thread takes it off its own list inline: mrl_xfer_post_owned,
 *    mrl_xfer_post_owned_take; other threads in the call's out-of-line pop:
 *    mrl_xfer_post_pop), the call's operands and context stored in the op;
 * 2. the call's leased half (noinline, four arguments: cache, buffer,
 *    length, op): the lease into op->leases[0], the op LIVE, the inner call
 *    with the operands read back from the op and the op as its context (the
 *    first half made the op LIVE: mrl_xfer_post_op_live). A failed lease
 *    returns the op and takes the slow path.
 * The route of a call that is not converted reports it with no other op
 * flag.
 */

/* The operands of a single-buffer call, kept in its op between the two
 * halves: the provider's scratch space is ours until the inner call. */
struct mrl_op_args {
	struct fid_ep *fep; /* the hook endpoint */
	void *buf;
	size_t len;
	fi_addr_t peer;
	uint64_t a, b, c; /* rma: addr, key, data; msg: tag, ignore, data */
};

_Static_assert(sizeof(struct mrl_op_args) <= sizeof(struct fi_context2),
	       "single-buffer operands do not fit in the provider context");

static inline struct mrl_op_args *
mrl_xfer_op_args(struct mrl_op *op)
{
	return (struct mrl_op_args *) (void *) &op->prov_ctx;
}

/* Store the operands every single-buffer call has (the family stores a, b,
 * c as its call has them). */
static inline void
mrl_xfer_op_args_set(struct mrl_op *op, struct fid_ep *fep, const void *buf,
		     size_t len, fi_addr_t peer, void *context)
{
	struct mrl_op_args *a = mrl_xfer_op_args(op);

	a->peer = peer;
	op->app_ctx = context;
	a->fep = fep;
	a->buf = (void *) buf;
	a->len = len;
}

/*
 * The first half's op when the calling thread owns the pool (`single` of
 * the call's direction): the top of its own list, not yet taken; NULL (no
 * buffer, mrl_xfer_op_pool_none, another thread, an empty list) sends the
 * call to its out-of-line pop. The caller stores the operands, then takes
 * the op with mrl_xfer_post_owned_take: fewer values live at once, no
 * register to save.
 */
static inline struct mrl_op *
mrl_xfer_post_owned(struct mrl_op_pool *pool, const void *buf)
{
	if (!buf || pool->owner != mrl_xfer_thread_self())
		return NULL;
	return atomic_load_explicit(&pool->owned, memory_order_relaxed);
}

/* The state of a live single-buffer op with these flags. */
static inline unsigned int
mrl_xfer_post_op_state(uint16_t flags)
{
	return flags == MRL_OP_OWNED ? MRL_OP_LIVE_OWNED :
	       !flags		     ? MRL_OP_LIVE_ONE :
				       MRL_OP_LIVE;
}

/* The op's shape and state for a single-buffer call: LIVE before its lease
 * is taken (nothing looks at it in between but a concurrent fi_cancel,
 * which finds a context the provider does not know yet); a failed lease
 * sets it FREE again. */
static inline void
mrl_xfer_post_op_live(struct mrl_op *op, uint16_t flags)
{
	op->shape = mrl_xfer_op_shape(flags, 1);
	atomic_store_explicit(&op->state, mrl_xfer_post_op_state(flags),
			      memory_order_relaxed);
}

/* Take the op mrl_xfer_post_owned returned, with the direction's owned shape
 * and state (mrl_xdir.owned_shape, owned_state) or the constant ones of
 * flags 0 (tx). */
static inline void
mrl_xfer_post_owned_take(struct mrl_op_pool *pool, struct mrl_op *op,
			 uint32_t shape, unsigned int state)
{
	atomic_store_explicit(&pool->owned, op->owned_next,
			      memory_order_relaxed);
	op->shape = shape;
	atomic_store_explicit(&op->state, state, memory_order_relaxed);
}

/* The out-of-line pop: an op for a single-buffer call with `flags` (and
 * MRL_OP_OWNED for the owner), or NULL (no buffer, mrl_xfer_op_pool_none, the
 * region is exhausted: the slow path). */
static inline struct mrl_op *
mrl_xfer_post_pop(struct mrl_op_pool *pool, const void *buf, uint16_t flags)
{
	struct mrl_op *op;

	if (!buf || !pool->owner) /* mrl_xfer_op_pool_none */
		return NULL;
	if (pool->owner == mrl_xfer_thread_self()) {
		op = mrl_xfer_op_get_owned(pool);
		flags |= MRL_OP_OWNED;
	} else {
		op = mrl_xfer_op_get(pool);
	}
	if (op)
		mrl_xfer_post_op_live(op, flags);
	return op;
}

/* A single-buffer call whose lease failed (err): with FI_MR_LOCAL the post
 * fails (err, warned), else 0: it goes out as the application made it
 * (desc NULL). */
int mrl_xfer_post_single_failed(const struct mrl_xep *x, const void *buf,
				size_t len, int err);

/*
 * mrl_xfer_count_below for a single-buffer post, against its direction's
 * smallest leased operand. The posts call it from a twin of their own
 * (mrl_xfer_msg_send_small...), so the hit path stays free of calls.
 */
static inline void
mrl_xfer_count_small(struct mrl_xep *x, enum mrl_dir dir, size_t len)
{
	mrl_xfer_count_below(x, len, x->dir[dir].min);
}

/*
 * Of count operands, how many without a descriptor are below min (empty ones
 * aside), or -1 when one of them needs a lease (at least min bytes). Posts
 * with more iovs than the slow path can rewrite go out unchanged: 0.
 */
static inline int
mrl_xfer_iov_below_min(const struct iovec *iov, void **desc, size_t count,
		       size_t min)
{
	int below = 0;

	if (min == SIZE_MAX || count > MRL_XFER_IOV_MAX)
		return 0;
	for (size_t i = 0; i < count; i++) {
		if (desc && desc[i])
			continue;
		if (iov[i].iov_len >= min)
			return -1;
		below += iov[i].iov_len != 0;
	}
	return below;
}

/* The same for atomic operands of datatype (an unknown one: 0). */
static inline int
mrl_xfer_ioc_below_min(const struct fi_ioc *ioc, void **desc, size_t count,
		       enum fi_datatype datatype, size_t min)
{
	size_t size = mrl_hook_datatype_size(datatype);
	int below = 0;

	if (min == SIZE_MAX || count > MRL_XFER_IOV_MAX || !size)
		return 0;
	for (size_t i = 0; i < count; i++) {
		if ((desc && desc[i]) || !ioc[i].count)
			continue;
		if (ioc[i].count >= (min + size - 1) / size)
			return -1;
		below++;
	}
	return below;
}

/* Whether a post must take the slow path (some operand needs a lease);
 * if not, the operands below min are counted (mrl_xfer_count_small). */
static inline bool
mrl_xfer_iov_needs_lease(struct mrl_xep *x, const struct iovec *iov,
			 void **desc, size_t count, size_t min)
{
	int below = mrl_xfer_iov_below_min(iov, desc, count, min);

	if (below > 0)
		mrl_cache_count_below_min(x->cache, (uint64_t) below);
	return below < 0;
}

/* ---- msg and tagged posts (mrl_xfer_msg.c, mrl_xfer_tagged.c) --------- */

enum mrl_msg_kind {
	MRL_SEND,
	MRL_SENDDATA,
	MRL_RECV, /* msg */
	MRL_TSEND,
	MRL_TSENDDATA,
	MRL_TRECV, /* tagged */
};

static inline enum mrl_dir
mrl_xfer_msg_dir(enum mrl_msg_kind kind)
{
	return kind == MRL_RECV || kind == MRL_TRECV ? MRL_RX : MRL_TX;
}

static inline bool
mrl_xfer_msg_tagged(enum mrl_msg_kind kind)
{
	return kind >= MRL_TSEND;
}

/* One msg or tagged post of any shape, as the msg calls describe it. */
struct mrl_msg_call {
	enum mrl_msg_kind kind;
	const struct iovec *iov;
	void **desc; /* may be NULL: all NULL */
	size_t count;
	fi_addr_t addr;
	uint64_t tag, ignore, data;
	void *context;
};

/* rxm's eager limit (FI_OFI_RXM_BUFFER_SIZE, 16384 by default). */
extern size_t mrl_xfer_rndv_after;

/* Post c with its local operands resolved: as the msg call with flags when
 * as_msg (the application's msg calls, converted calls), else in c's own
 * shape. */
ssize_t mrl_xfer_msg_post(struct mrl_ep *ep, const struct mrl_msg_call *c,
			  uint64_t flags, bool as_msg);
/* A claiming receive (FI_CLAIM without FI_PEEK or FI_DISCARD), its buffer
 * leased and its context the application's (mrl_xfer_claim.c). */
ssize_t mrl_xfer_tagged_claim(struct mrl_ep *ep,
			      const struct fi_msg_tagged *msg, uint64_t flags);
/* The slow path of a non-msg call: the endpoint's default flags, as the
 * msg call when the route needs FI_COMPLETION. */
ssize_t mrl_xfer_msg_slow(struct mrl_ep *ep, const struct mrl_msg_call *c);
/* A single-buffer call off the hit path: mrl_xfer_msg_slow (err 0), or its
 * lease failed (err: the post fails with FI_MR_LOCAL, else goes out with
 * desc NULL). */
ssize_t __attribute__((cold))
mrl_xfer_msg_single_slow(struct mrl_ep *ep, enum mrl_msg_kind kind, void *buf,
			 size_t len, fi_addr_t addr, uint64_t tag,
			 uint64_t ignore, uint64_t data, void *context,
			 int err);

/* The operands of a msg or tagged call into its op (mrl_xfer_op_args: a = tag,
 * b = ignore, c = data). */
static inline __attribute__((always_inline)) void
mrl_xfer_msg_args_set(enum mrl_msg_kind kind, struct mrl_op *op,
		      struct fid_ep *fep, const void *buf, size_t len,
		      fi_addr_t addr, uint64_t tag, uint64_t ignore,
		      uint64_t data, void *context)
{
	struct mrl_op_args *a = mrl_xfer_op_args(op);

	if (mrl_xfer_msg_tagged(kind))
		a->a = tag;
	if (kind == MRL_TRECV)
		a->b = ignore;
	if (kind == MRL_SENDDATA || kind == MRL_TSENDDATA)
		a->c = data;
	mrl_xfer_op_args_set(op, fep, buf, len, addr, context);
}

/*
 * The lease of a leased half (single-buffer hit path): into a local first,
 * not op->leases[0], so no register is saved around the cache's inline
 * path; then into the op, with the descriptor the inner call takes.
 * Returns 0, or the cache's error with the op untouched.
 */
static inline __attribute__((always_inline)) int
mrl_xfer_op_lease_one(struct mrl_cache_domain *cache, uintptr_t buf, size_t len,
		      struct mrl_op *op, void **desc)
{
	struct mrl_registration *reg;
	int err = mrl_cache_acquire(cache, buf, buf + len, &reg);

	if (__builtin_expect(err != 0, 0))
		return err;
	op->leases[0] = reg;
	*desc = mrl_registration_desc(reg);
	return 0;
}

/* A leased half whose lease failed gives its op back (never made LIVE to
 * the provider) and keeps the operands the first half stored in it, for
 * the slow path; returns the application's context. */
static inline void *
mrl_xfer_op_give_back(struct mrl_op *op, struct mrl_op_args *a)
{
	void *context = op->app_ctx;

	*a = *mrl_xfer_op_args(op);
	atomic_store_explicit(&op->state, MRL_OP_FREE, memory_order_relaxed);
	mrl_xfer_op_put(op->pool, op);
	return context;
}

/* The lease failed in the leased half: the op goes back, the call takes
 * mrl_xfer_msg_single_slow with the operands it left in the op. */
ssize_t __attribute__((cold))
mrl_xfer_msg_op_failed(enum mrl_msg_kind kind, struct mrl_op *op, int err);

/*
 * The leased half of a send, senddata or recv (tagged too; the second half
 * of the single-buffer hit path): the lease into the op, the op LIVE, the
 * inner call in the application's shape with the operands the first half
 * stored in the op.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_msg_op(enum mrl_msg_kind kind, struct mrl_cache_domain *cache,
		uintptr_t buf, size_t len, struct mrl_op *op)
{
	struct mrl_op_args *a = mrl_xfer_op_args(op);
	struct fid_ep *in;
	void *desc;
	ssize_t ret;
	int err;

	err = mrl_xfer_op_lease_one(cache, buf, len, op, &desc);
	if (__builtin_expect(err != 0, 0))
		return mrl_xfer_msg_op_failed(kind, op, err);
	in = mrl_hook_ep_of(a->fep)->inner;
	switch (kind) {
	case MRL_SEND:
		ret = fi_send(in, a->buf, a->len, desc, a->peer, op);
		break;
	case MRL_SENDDATA:
		ret = fi_senddata(in, a->buf, a->len, desc, a->c, a->peer, op);
		break;
	case MRL_RECV:
		ret = fi_recv(in, a->buf, a->len, desc, a->peer, op);
		break;
	case MRL_TSEND:
		ret = fi_tsend(in, a->buf, a->len, desc, a->peer, a->a, op);
		break;
	case MRL_TSENDDATA:
		ret = fi_tsenddata(in, a->buf, a->len, desc, a->c, a->peer,
				   a->a, op);
		break;
	default:
		ret = fi_trecv(in, a->buf, a->len, desc, a->peer, a->a, a->b,
			       op);
		break;
	}
	if (__builtin_expect(ret != 0, 0))
		mrl_xfer_op_free_poster(op);
	return ret;
}

/* Sends whose operand needs a registration starting at it (mrl_xfer_msg.c)
 * take the slow path. */
static inline bool
mrl_xfer_msg_single_ok(enum mrl_msg_kind kind, const struct mrl_xep *x,
		       size_t len)
{
	return mrl_xfer_msg_dir(kind) == MRL_RX || len <= x->based_after;
}

/*
 * The first half of a msg or tagged call for a thread that is not its
 * pool's owner, or an owner whose list is empty (out of line): an op off
 * the pool, the operands into it, the leased half; anything else goes to
 * mrl_xfer_msg_single_slow.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_msg_pop(enum mrl_msg_kind kind, struct fid_ep *fep, const void *buf,
		 size_t len, fi_addr_t addr, uint64_t tag, uint64_t ignore,
		 uint64_t data, void *context,
		 ssize_t (*leased)(struct mrl_cache_domain *, uintptr_t, size_t,
				   struct mrl_op *))
{
	struct mrl_ep *ep = mrl_hook_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[mrl_xfer_msg_dir(kind)];
	struct mrl_op *op = NULL;

	if (mrl_xfer_msg_single_ok(kind, x, len))
		op = mrl_xfer_post_pop(
			d->single, buf,
			mrl_xfer_msg_dir(kind) == MRL_RX ? d->live_flags : 0);
	if (!op)
		return mrl_xfer_msg_single_slow(ep, kind, (void *) buf, len,
						addr, tag, ignore, data,
						context, 0);
	mrl_xfer_msg_args_set(kind, op, fep, buf, len, addr, tag, ignore, data,
			      context);
	return leased(x->cache, (uintptr_t) buf, len, op);
}

/*
 * The first half of a msg or tagged call that needs a lease, for its
 * pool's owner (no stack frame; pool is x->dir[mrl_xfer_msg_dir(kind)].single):
 * the op off the owner's own list, taken with the call's operands stored in
 * it. The caller passes it to the call's leased half with pool->cache.
 * NULL (a send that needs a registration starting at its operand, no
 * buffer, another thread, an empty list): the caller takes its
 * out-of-line pop instead.
 */
static inline __attribute__((always_inline)) struct mrl_op *
mrl_xfer_msg_owned(enum mrl_msg_kind kind, const struct mrl_xep *x,
		   struct mrl_op_pool *pool, struct fid_ep *fep,
		   const void *buf, size_t len, fi_addr_t addr, uint64_t tag,
		   uint64_t ignore, uint64_t data, void *context)
{
	const struct mrl_xdir *d = &x->dir[mrl_xfer_msg_dir(kind)];
	struct mrl_op *op;

	if (!mrl_xfer_msg_single_ok(kind, x, len))
		return NULL;
	op = mrl_xfer_post_owned(pool, buf);
	if (!op)
		return NULL;
	mrl_xfer_msg_args_set(kind, op, fep, buf, len, addr, tag, ignore, data,
			      context);
	if (mrl_xfer_msg_dir(kind) == MRL_RX)
		mrl_xfer_post_owned_take(pool, op, d->owned_shape,
					 d->owned_state);
	else
		mrl_xfer_post_owned_take(pool, op,
					 mrl_xfer_op_shape(MRL_OP_OWNED, 1),
					 MRL_OP_LIVE_OWNED);
	return op;
}

/* The leased half of each kind, with the signature the first halves jump
 * to. */
#define MRL_MSG_OP(name, kind)                                          \
	ssize_t __attribute__((noinline))                               \
	name(struct mrl_cache_domain *cache, uintptr_t buf, size_t len, \
	     struct mrl_op *op)                                         \
	{                                                               \
		return mrl_xfer_msg_op(kind, cache, buf, len, op);      \
	}
#endif /* MRL_XFER_INLINE_H */
