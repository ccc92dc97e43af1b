/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The single-buffer hit path: fi_read, fi_write, fi_writedata, fi_send,
 * fi_senddata, fi_recv, fi_tsend, fi_tsenddata and fi_trecv. Each is one
 * row, MRL_XFER_SINGLE in its family's file (mrl_xfer_rma.c, _msg.c,
 * _tagged.c), and the row makes its four functions:
 * - the entry point: a descriptor given goes to the provider as is; an
 *   operand below the direction's threshold goes to the counting twin;
 *   otherwise, on the thread that owns the pool, the top op of its own
 *   list takes the call's operands and context and goes to the leased half;
 *   anything else goes to the pop;
 * - name_small: the operand counted in miss_below_min, then forwarded;
 * - name_pop: an op off the pool (another thread, an empty owner's list),
 *   or, when none can be had, the family's slow path;
 * - name_op, the leased half: the lease into op->leases[0], then the inner
 *   call with the operands read back from the op and the op as its
 *   context. A failed lease gives the op back and takes the family's slow
 *   path with the operands it stored.
 * The op is LIVE before its lease is taken: nothing looks at it in between
 * but a concurrent fi_cancel, which finds a context the provider does not
 * know yet.
 *
 * A family provides, for the rows that name it as fam:
 *   bool mrl_xfer_<fam>_single_ok(kind, const struct mrl_xep *, size_t len)
 *     whether the call may take the hit path at all (inline);
 *   ssize_t mrl_xfer_<fam>_single_slow(kind, const struct mrl_op_args *,
 *     void *context, int err): the call off the hit path (err 0), or its
 *     lease failed (err);
 *   ssize_t mrl_xfer_<fam>_single_failed(kind, struct mrl_op *, int err):
 *     the leased half's failed lease (mrl_xfer_op_give_back, then the slow
 *     path).
 * Included only by the data path's .c files; mrl_xfer.h states the rules
 * this code keeps.
 */
#ifndef MRL_XFER_SINGLE_H
#define MRL_XFER_SINGLE_H

#include "mrl_xfer_post.h"

/* The operands of a single-buffer call, kept in its op between the entry
 * point and the leased half: the provider's scratch space is ours until
 * the inner call. */
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

/* Store the operands every single-buffer call has (the row stores a, b,
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

/* The state of a live single-buffer op with these flags. */
static inline unsigned int
mrl_xfer_post_op_state(uint16_t flags)
{
	return flags == MRL_OP_OWNED ? MRL_OP_LIVE_OWNED :
	       !flags		     ? MRL_OP_LIVE_ONE :
				       MRL_OP_LIVE;
}

/* The op's shape and state for a single-buffer call, LIVE (a failed lease
 * sets it FREE again). */
static inline void
mrl_xfer_post_op_live(struct mrl_op *op, uint16_t flags)
{
	op->shape = mrl_xfer_op_shape(flags, 1);
	atomic_store_explicit(&op->state, mrl_xfer_post_op_state(flags),
			      memory_order_relaxed);
}

/*
 * The entry point's op when the calling thread owns the pool (`single` of
 * the call's direction): the top of its own list, not yet taken; NULL (no
 * buffer, mrl_xfer_op_pool_none, another thread, an empty list) sends the
 * call to its pop. The entry stores the operands, then takes the op with
 * mrl_xfer_single_take.
 */
static inline struct mrl_op *
mrl_xfer_post_owned(struct mrl_op_pool *pool, const void *buf)
{
	if (!buf || pool->owner != mrl_xfer_thread_self())
		return NULL;
	return atomic_load_explicit(&pool->owned, memory_order_relaxed);
}

/* Take the op mrl_xfer_post_owned returned, LIVE with the owner's shape and
 * state of its direction: a receive's from mrl_xdir (owned_shape,
 * owned_state), the constant ones of flags 0 for the transmit direction. */
static inline __attribute__((always_inline)) void
mrl_xfer_single_take(const struct mrl_xep *x, enum mrl_dir dir,
		     struct mrl_op_pool *pool, struct mrl_op *op)
{
	const struct mrl_xdir *d = &x->dir[dir];

	atomic_store_explicit(&pool->owned, op->owned_next,
			      memory_order_relaxed);
	if (dir == MRL_RX) {
		op->shape = d->owned_shape;
		atomic_store_explicit(&op->state, d->owned_state,
				      memory_order_relaxed);
	} else {
		op->shape = mrl_xfer_op_shape(MRL_OP_OWNED, 1);
		atomic_store_explicit(&op->state, MRL_OP_LIVE_OWNED,
				      memory_order_relaxed);
	}
}

/* The pop: an op for a single-buffer call of direction dir, LIVE (with
 * MRL_OP_OWNED for the owner), or NULL (no buffer, mrl_xfer_op_pool_none,
 * the region is exhausted: the slow path). */
static inline __attribute__((always_inline)) struct mrl_op *
mrl_xfer_single_pop(const struct mrl_xep *x, enum mrl_dir dir, const void *buf)
{
	const struct mrl_xdir *d = &x->dir[dir];
	struct mrl_op_pool *pool = d->single;
	uint16_t flags = dir == MRL_RX ? d->live_flags : 0;
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

/* mrl_xfer_count_below for a single-buffer post, against its direction's
 * smallest leased operand. */
static inline void
mrl_xfer_count_small(struct mrl_xep *x, enum mrl_dir dir, size_t len)
{
	mrl_xfer_count_below(x, len, x->dir[dir].min);
}

/*
 * The leased half's lease: into a local first, then into the op, with the
 * descriptor the inner call takes. Returns 0, or the cache's error with the
 * op untouched.
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
 * the provider) and keeps the operands the entry point stored in it, for
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

/* A parenthesised list, unwrapped. */
#define MRL_XFER_LIST(...) __VA_ARGS__

/*
 * One single-buffer call, its four functions (above) from one row:
 *   name     the entry point; its twins are name_small, name_pop, name_op
 *   fam      the family whose check and slow path it takes (above)
 *   kind     the call for the family's slow path
 *   way      the operand's direction (MRL_TX, MRL_RX)
 *   params   its libfabric signature after the endpoint, naming the operand
 *            buf, len and desc, the peer's address peer and the
 *            application's context context
 *   fi_call  the libfabric call, as the inner endpoint gets it
 *   args     params' names in the call's order
 *   store    how the operands beyond buf, len, peer fill the op's a, b, c
 *            (s: the struct mrl_op_args being filled)
 *   issue    the inner call (in) of the leased half, from the op's operands
 *            (s), the lease's descriptor (desc) and the op (op)
 */
#define MRL_XFER_SINGLE(name, fam, kind, way, params, fi_call, args, store,   \
			issue)                                                \
	static ssize_t __attribute__((noinline))                              \
	name##_op(struct mrl_cache_domain *cache, uintptr_t start,            \
		  size_t size, struct mrl_op *op)                             \
	{                                                                     \
		struct mrl_op_args *s = mrl_xfer_op_args(op);                 \
		struct fid_ep *in;                                            \
		void *desc;                                                   \
		ssize_t ret;                                                  \
		int err;                                                      \
                                                                              \
		err = mrl_xfer_op_lease_one(cache, start, size, op, &desc);   \
		if (__builtin_expect(err != 0, 0))                            \
			return mrl_xfer_##fam##_single_failed(kind, op, err); \
		in = mrl_hook_ep_of(s->fep)->inner;                           \
		ret = issue;                                                  \
		if (__builtin_expect(ret != 0, 0))                            \
			mrl_xfer_op_free_poster(op);                          \
		return ret;                                                   \
	}                                                                     \
                                                                              \
	static ssize_t __attribute__((noinline, noclone))                     \
	name##_pop(struct fid_ep *fep, MRL_XFER_LIST params)                  \
	{                                                                     \
		struct mrl_xep *x = mrl_hook_ep_of(fep)->ext;                 \
		struct mrl_op_args slow, *s = &slow;                          \
		struct mrl_op *op = NULL;                                     \
                                                                              \
		(void) desc;                                                  \
		if (mrl_xfer_##fam##_single_ok(kind, x, len))                 \
			op = mrl_xfer_single_pop(x, way, buf);                \
		if (!op) {                                                    \
			slow = (struct mrl_op_args){.fep = fep,               \
						    .buf = (void *) buf,      \
						    .len = len,               \
						    .peer = peer};            \
			MRL_XFER_LIST store;                                  \
			return mrl_xfer_##fam##_single_slow(kind, s, context, \
							    0);               \
		}                                                             \
		s = mrl_xfer_op_args(op);                                     \
		MRL_XFER_LIST store;                                          \
		mrl_xfer_op_args_set(op, fep, buf, len, peer, context);       \
		return name##_op(x->cache, (uintptr_t) buf, len, op);         \
	}                                                                     \
                                                                              \
	static ssize_t __attribute__((noinline, noclone))                     \
	name##_small(struct fid_ep *fep, MRL_XFER_LIST params)                \
	{                                                                     \
		struct mrl_ep *ep = mrl_hook_ep_of(fep);                      \
                                                                              \
		mrl_xfer_count_small(ep->ext, way, len);                      \
		return fi_call(ep->inner, MRL_XFER_LIST args);                \
	}                                                                     \
                                                                              \
	static ssize_t name(struct fid_ep *fep, MRL_XFER_LIST params)         \
	{                                                                     \
		struct mrl_ep *ep = mrl_hook_ep_of(fep);                      \
		struct mrl_xep *x = ep->ext;                                  \
		struct mrl_op_pool *pool;                                     \
		struct mrl_op_args *s;                                        \
		struct mrl_op *op = NULL;                                     \
                                                                              \
		if (desc)                                                     \
			return fi_call(ep->inner, MRL_XFER_LIST args);        \
		if (len < x->dir[way].min)                                    \
			return name##_small(fep, MRL_XFER_LIST args);         \
		pool = x->dir[way].single;                                    \
		if (mrl_xfer_##fam##_single_ok(kind, x, len))                 \
			op = mrl_xfer_post_owned(pool, buf);                  \
		if (!op)                                                      \
			return name##_pop(fep, MRL_XFER_LIST args);           \
		s = mrl_xfer_op_args(op);                                     \
		MRL_XFER_LIST store;                                          \
		(void) s;                                                     \
		mrl_xfer_op_args_set(op, fep, buf, len, peer, context);       \
		mrl_xfer_single_take(x, way, pool, op);                       \
		return name##_op(pool->cache, (uintptr_t) buf, len, op);      \
	}

#endif /* MRL_XFER_SINGLE_H */
