/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operation contexts and their pools (mrl_xfer_op.c): a struct mrl_op
 * carries a leased operation's application context and leases from post
 * to completion; each endpoint that leases has a pool of them, and every op
 * lives in one process-wide reserved region, so a completion's context is
 * recognised as ours by address alone. mrl_xfer.h states the rules (who
 * releases a lease, which thread touches which list, how long a pool
 * lives); this header holds the types, the pool's inline pops and
 * pushes, and the inline completion of an op.
 */
#ifndef MRL_XFER_OP_H
#define MRL_XFER_OP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "mrl_assert.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "mrl_hook.h"

/* Leases kept inside one op; an operation with more chains extra ops. */
#define MRL_OP_LEASES 4

/* ---- operation contexts ------------------------------------------------ */

enum mrl_op_state {
	MRL_OP_FREE, /* in a free list */
	MRL_OP_LIVE, /* posted, holds leases */
	MRL_OP_ORPHAN, /* its endpoint closed; leases already released */
	/* LIVE too, with one lease and no flag but MRL_OP_OWNED: the
	 * inline completion finds its case with the state's CAS alone. */
	MRL_OP_LIVE_OWNED,
	MRL_OP_LIVE_ONE, /* LIVE, one lease, no flag */
};

/* Whether an op in state s is posted and holds its leases. */
static inline bool
mrl_xfer_op_live(unsigned int s)
{
	return s == MRL_OP_LIVE || s >= MRL_OP_LIVE_OWNED;
}

enum mrl_op_flags {
	MRL_OP_HIDDEN = 1 << 0, /* the app asked no completion: consume it */
	MRL_OP_MULTI_RECV = 1
			    << 1, /* ends at a completion with FI_MULTI_RECV */
	MRL_OP_EXTRA = 1 << 2, /* lease overflow of another op, not posted */
	MRL_OP_CHAINED = 1 << 3, /* has extra ops (next) */
	MRL_OP_OWNED = 1 << 4, /* posted by its shared pool's owner */
	/* A claiming receive: posted with the application's context and
	 * found by it in its CQ's claims (mrl_xfer_claim.c). */
	MRL_OP_CLAIM = 1 << 5,
};

struct mrl_op_pool;

struct mrl_op {
	struct fi_context2 prov_ctx; /* first: the provider's scratch space */
	void *app_ctx; /* what the application passed */
	struct mrl_op_pool *pool;
	const struct mrl_domain *domain; /* pool->domain (NULL: dead chunk),
					  * one load for mrl_xfer_op_of_context */
	struct mrl_op *next; /* when live: extra leases; free in a
			      * serial pool: the next free op */
	/* Free on its pool's owner list: the next op there. */
	struct mrl_op *owned_next;
	/* Free in a shared pool: the next free op (mrl_xfer_op_code). */
	_Atomic uint32_t free_next;
	uint32_t code; /* mrl_xfer_op_code of this op */
	atomic_uint state; /* enum mrl_op_state */
	union {
		struct {
			uint16_t flags; /* enum mrl_op_flags */
			uint16_t nleases;
		};
		/* Both in one word (mrl_xfer_op_shape): a completion tells its
		 * inline case (one lease, no flag) with one compare. */
		uint32_t shape;
	};
	struct mrl_registration *leases[MRL_OP_LEASES];
};

/* The shape word of an op with these flags and leases. */
static inline uint32_t
mrl_xfer_op_shape(uint16_t flags, uint16_t nleases)
{
	union {
		struct {
			uint16_t flags, nleases;
		} s;
		uint32_t w;
	} u = {.s = {flags, nleases}};

	return u.w;
}

/* ---- per-endpoint pool --------------------------------------------------- */

struct mrl_op_chunk;

struct mrl_op_pool {
	const struct mrl_domain *domain;
	/* Its endpoint's cache domain (mrl_xep.cache), for the hit path. */
	struct mrl_cache_domain *cache;
	/* Posts, completions and endpoint close never run at the same time
	 * (FI_THREAD_DOMAIN, FI_THREAD_COMPLETION: the application
	 * serialises every object sharing a completion structure): the free
	 * list is a plain list and ops' states change with plain stores.
	 * Otherwise ("shared") the free list is a lock-free stack that
	 * posters pop and completions push from any thread. */
	bool serial;
	struct mrl_op *free; /* serial: the free list */
	/* The thread that created the pool, its "owner" (usually the one
	 * that posts), keeps the ops it posted (MRL_OP_OWNED) and completed
	 * itself on a list of its own, linked by owned_next: plain pops and a
	 * release store per push, no read-modify-write. Only the owner
	 * changes it; endpoint close counts it (mrl_xfer_op_pool_settled). An op
	 * another thread completes goes to the free list or shared stack, so
	 * the list holds at most what the owner had in flight. */
	const void *owner; /* mrl_xfer_thread_self() of the creator */
	_Atomic(struct mrl_op *) owned;
	/* shared: top of the free stack, (ABA tag << 32) | mrl_xfer_op_code of
	 * the top op; code 0 (a chunk header, never an op) is empty. */
	_Atomic uint64_t shared;
	uintptr_t base; /* mrl_xfer_op_region_base, for codes */
	pthread_mutex_t lock; /* shared pools: guards chunks (growth,
			       * scans); nothing else under it */
	struct mrl_op_chunk *chunks;
	atomic_uint refs; /* endpoint + CQs holding orphans */
	/* The guard of the CQ its FI_MULTI_RECV ops complete on, set before
	 * the first leased one is posted (mrl_xfer_cq_guard_rx), NULL when
	 * nothing needs it (serial pool, internal route); `deferred`: how
	 * many of its ops wait on a guard's list (mrl_xfer_op_guard_defer). */
	struct mrl_cq_guard *_Atomic defer;
	atomic_uint deferred;
	/* TEST-ONLY (MRL_XFER_CTL_TEST_COMPLETING): called by the out-of-line
	 * mrl_xfer_op_complete between an op's state change and its return to
	 * the free list; NULL otherwise. */
	void (*_Atomic test_completing)(void *arg);
	void *test_arg;
};

/* The pool of no endpoint: owned by no thread, never has an op; the
 * single-buffer hit path of a direction that cannot take it
 * (mrl_xdir.single) sends every call to its slow path. */
extern struct mrl_op_pool mrl_xfer_op_pool_none
	__attribute__((visibility("hidden")));

/*
 * The reserved range every op lives in: [mrl_xfer_op_region_base, + size),
 * size 0 if it could not be reserved. Written once, by
 * mrl_xfer_op_region_init, which every pool and every CQ that translates
 * contexts calls when it is created; a completion reaches an op or a CQ
 * only after that (through pthread_once, then the application's own
 * hand-over of the CQ or the endpoint's lock-protected counter links), so
 * the reads are plain loads, which a CQ read folds into its compare.
 */
extern uintptr_t mrl_xfer_op_region_base __attribute__((visibility("hidden")));
extern size_t mrl_xfer_op_region_size __attribute__((visibility("hidden")));
void mrl_xfer_op_region_init(void);

/* Whether ctx points into the op region (an application context never
 * does; it is never dereferenced). */
static inline bool
mrl_xfer_op_in_region(const void *ctx)
{
	return (uintptr_t) ctx - mrl_xfer_op_region_base <
	       mrl_xfer_op_region_size;
}

/*
 * The op a completion's context names, if it is one of ours posted through
 * `domain`; NULL for application contexts, NULL, and the other instance's
 * ops.
 */
static inline struct mrl_op *
mrl_xfer_op_of_context(void *ctx, const struct mrl_domain *domain)
{
	struct mrl_op *op = ctx;

	if (!mrl_xfer_op_in_region(ctx) || op->domain != domain)
		return NULL;
	return op;
}

/* The calling thread's identity for pool ownership, unique among live
 * threads: its thread pointer (elsewhere the address of a thread-local).
 * A thread that reuses a dead owner's pointer becomes the owner, which is
 * safe (the dead one no longer touches the list). */
static inline const void *
mrl_xfer_thread_self(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	return __builtin_thread_pointer();
#else
	static __thread char self;

	return &self;
#endif
}

/* A pool for endpoints of `threading`: locked poster side unless the
 * application serialises calls on the endpoint, serial (see above) under
 * FI_THREAD_DOMAIN and FI_THREAD_COMPLETION. */
int mrl_xfer_op_pool_create(const struct mrl_domain *domain,
			    enum fi_threading threading,
			    struct mrl_op_pool **pool);
/* Drop one reference; the last returns the chunks to the region. */
void mrl_xfer_op_pool_unref(struct mrl_op_pool *pool);
/*
 * Endpoint close, after its ops were orphaned: whether every op except the
 * `out` ones (orphans and their extras, which never return) is back on the
 * free list, i.e. no completion of this pool is between its state change
 * and its push (the only window in which a completer touches the pool of an
 * op that was not orphaned). Always true for serial pools.
 */
bool mrl_xfer_op_pool_settled(struct mrl_op_pool *pool, size_t out);
/* A LIVE op with no leases, or NULL (-FI_ENOMEM: the region is exhausted). */
struct mrl_op *mrl_xfer_op_alloc(struct mrl_op_pool *pool);

/* An op's place in the region in 8-byte units (ops are 8-byte aligned
 * and the region is at most 32 GiB). */
static inline uint32_t
mrl_xfer_op_code(const struct mrl_op_pool *pool, const struct mrl_op *op)
{
	return (uint32_t) (((uintptr_t) op - pool->base) >> 3);
}

static inline struct mrl_op *
mrl_xfer_op_at(const struct mrl_op_pool *pool, uint32_t code)
{
	return (struct mrl_op *) (pool->base + ((uintptr_t) code << 3));
}

/*
 * A free op off the pool's free list (poster side), or NULL when the list
 * is empty (then mrl_xfer_op_alloc, which grows the pool). The op's fields are
 * stale except next, NULL in every free op off its list (mrl_xfer_op_put_chain
 * clears it in shared pools, mrl_xfer_op_get in serial ones); the poster
 * initialises the rest of what a live op needs.
 */
static inline struct mrl_op *
mrl_xfer_op_get_serial(struct mrl_op_pool *pool)
{
	struct mrl_op *op = pool->free;

	if (op) {
		pool->free = op->next;
		op->next = NULL;
	}
	return op;
}

static inline struct mrl_op *
mrl_xfer_op_get_shared(struct mrl_op_pool *pool)
{
	struct mrl_op *op;
	uint64_t head, top;

	head = atomic_load_explicit(&pool->shared, memory_order_acquire);
	do {
		if (!(uint32_t) head)
			return NULL;
		op = mrl_xfer_op_at(pool, (uint32_t) head);
		/* op may be popped and reused meanwhile: the read is of
		 * committed region memory, and the tag fails the CAS. */
		top = ((head >> 32) + 1) << 32 |
		      atomic_load_explicit(&op->free_next,
					   memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(
		&pool->shared, &head, top, memory_order_acquire,
		memory_order_acquire));
	return op;
}

static inline struct mrl_op *
mrl_xfer_op_get(struct mrl_op_pool *pool)
{
	return pool->serial ? mrl_xfer_op_get_serial(pool) :
			      mrl_xfer_op_get_shared(pool);
}

/* The owner's pop (owner thread only): its own list first. */
static inline struct mrl_op *
mrl_xfer_op_get_owned(struct mrl_op_pool *pool)
{
	struct mrl_op *op =
		atomic_load_explicit(&pool->owned, memory_order_relaxed);

	if (!op)
		return mrl_xfer_op_get(pool);
	atomic_store_explicit(&pool->owned, op->owned_next,
			      memory_order_relaxed);
	return op;
}

/* Push the chain first .. last (linked by next; last->next ignored) onto
 * the pool's free list (the owner's own list when the owner returns an op
 * it posted); any thread. */
void mrl_xfer_op_put_chain(struct mrl_op_pool *pool, struct mrl_op *first,
			   struct mrl_op *last);

/* Whether op may go back to a free list: its leases were released (it is
 * FREE: a second release would find it so) and it has no extras left. */
static inline bool
mrl_xfer_op_releasable(struct mrl_op *op)
{
	unsigned int s = atomic_load_explicit(&op->state, memory_order_relaxed);

	return !op->next && s == MRL_OP_FREE;
}

/* Push one op whose next is NULL (no extras) onto a shared pool's stack. */
static inline void
mrl_xfer_op_put_shared(struct mrl_op_pool *pool, struct mrl_op *op)
{
	uint64_t head, top;

	head = atomic_load_explicit(&pool->shared, memory_order_relaxed);
	do {
		atomic_store_explicit(&op->free_next, (uint32_t) head,
				      memory_order_relaxed);
		/* Only pops change the tag: a pop whose CAS would succeed
		 * on a stale next must have seen another pop meanwhile. */
		top = (head & ~(uint64_t) UINT32_MAX) | op->code;
	} while (!atomic_compare_exchange_weak_explicit(
		&pool->shared, &head, top, memory_order_release,
		memory_order_relaxed));
}

/* The owner's push of an op it posted (shared pools, owner thread only). */
static inline void
mrl_xfer_op_put_owned(struct mrl_op_pool *pool, struct mrl_op *op)
{
	mrl_assert(mrl_xfer_op_releasable(op));
	op->owned_next =
		atomic_load_explicit(&pool->owned, memory_order_relaxed);
	atomic_store_explicit(&pool->owned, op, memory_order_release);
}

/* Push one op whose next is NULL (no extras) onto the serial list or the
 * shared stack; any thread. */
static inline void
mrl_xfer_op_put(struct mrl_op_pool *pool, struct mrl_op *op)
{
	mrl_assert(mrl_xfer_op_releasable(op));
	if (pool->serial) {
		op->next = pool->free;
		pool->free = op;
		return;
	}
	mrl_xfer_op_put_shared(pool, op);
}

/* Add a lease to op (chaining an extra op when full); 0 or -FI_ENOMEM. */
int mrl_xfer_op_add_lease(struct mrl_op *op, struct mrl_registration *reg);
/* Release op's leases (and extra ops); the op keeps its state. */
void mrl_xfer_op_release_leases(struct mrl_op *op);
/* Return a LIVE op on the posting thread (its post failed). */
void mrl_xfer_op_free_poster(struct mrl_op *op);
/* Call fn on every op of the pool in state LIVE (not extras); poster side. */
void mrl_xfer_op_pool_foreach_live(struct mrl_op_pool *pool,
				   bool (*fn)(struct mrl_op *op, void *arg),
				   void *arg);

/*
 * One completion reported for op: hands back the application's context in
 * *app_ctx and releases the leases when the operation is over (any
 * completion, except for FI_MULTI_RECV ops: the one carrying FI_MULTI_RECV,
 * or an error). Returns whether the application must see the entry.
 */
bool mrl_xfer_op_complete(struct mrl_op *op, uint64_t flags, bool error,
			  void **app_ctx);

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

	/* The CAS's outcome is read from the state it leaves. */
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

/*
 * A guarded CQ's readers in flight and deferred ops (mrl_xfer_cq_guard.c):
 * word = (readers << 32) | mrl_xfer_op_code of the first deferred op (0: none;
 * the ops linked by free_next). The list is emptied, by the reader whose
 * exit takes the count to 0, in the same atomic step.
 */
#define MRL_CQ_GUARD_READER ((uint64_t) 1 << 32)
struct mrl_cq_guard {
	_Atomic uint64_t word;
	/* TEST-ONLY (MRL_XFER_CTL_TEST_READING). */
	void (*_Atomic test_reading)(void *arg, const void *entries, ssize_t n);
	void *test_arg;
};

/* The final completion of a multi-recv op of a guarded CQ (its leases
 * released, state FREE): keep it off its pool while other readers may hold
 * entries naming it. False when no reader is counted (then the caller
 * pushes it back now). */
bool mrl_xfer_op_guard_defer(struct mrl_cq_guard *g, struct mrl_op *op);

#endif /* MRL_XFER_OP_H */
