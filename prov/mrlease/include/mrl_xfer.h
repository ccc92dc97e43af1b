/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path of the mrlease personality: operand resolution on posts,
 * operation contexts that carry leases from post to completion, and the
 * completion paths (CQ reads, counters, cancel, endpoint close) that give
 * the leases back.
 *
 * What it guarantees.
 * - A post whose local operands need no lease (a descriptor given, an operand
 *   below the endpoint's threshold, an inject) is forwarded with the
 *   application's own arguments and context: no pool entry, no context swap.
 * - A post that takes leases passes the provider an operation context (a
 *   struct mrl_op, first member a struct fi_context2 the provider may write
 *   into) carrying the application's context and the leases. Each lease is
 *   released exactly once: when the provider reports the operation complete
 *   (success, error or cancel; for FI_MULTI_RECV when it releases the
 *   buffer), when the post fails, or when the endpoint closes (after the
 *   inner fi_close returned, so the provider has let go).
 * - Completion entries are mapped back to the application's context;
 *   completions the application did not ask for are consumed here and never
 *   reach it. A read whose entries were all consumed returns -FI_EAGAIN.
 *
 * How an operation context is recognised. Every struct mrl_op lives in one
 * process-wide reserved address range (mrl_op_region_base), so a completion's
 * op_context is ours exactly when it falls inside that range (one subtraction
 * and compare per entry), and the op's pool names the hook domain that
 * posted it (the other instance of a stacked pair never mistakes it for its
 * own). Application contexts are never dereferenced. The range is reserved
 * PROT_NONE and committed chunk by chunk, so an application object can never
 * sit inside it.
 *
 * Threading. Pools are per endpoint; completion runs on whichever thread
 * reads the CQ or counter. Under FI_THREAD_DOMAIN and FI_THREAD_COMPLETION
 * the application serialises every object sharing a completion structure,
 * so posts, completions and endpoint close never overlap: such "serial"
 * pools keep a plain free list and the out-of-line completion changes op
 * states with plain stores. Otherwise the free list is a lock-free stack
 * (ABA tag in the head word, ops named by 32-bit offsets in the region)
 * that posters pop and completions push from any thread, and an op's state
 * changes by CAS so that completion and endpoint close release its leases
 * once (the inline completion CASes in every pool: the CAS is also how it
 * tells its case). In front of either, the thread that created the pool
 * (its owner, usually the one posting) keeps the ops it posted and
 * completed itself on a list of its own: plain pop, release-store push. A
 * mutex is taken only to grow a shared pool or scan it (fi_cancel).
 * FI_MULTI_RECV ops, the only ones with several completions, are the
 * exception to "an entry naming an op is read once": on a shared pool
 * another reader may hold an earlier entry of one while its final
 * completion frees it, so the CQ they complete on is "guarded" before the
 * first is posted (reads counted, the op's return to the pool deferred
 * until the readers in flight at its final completion exited:
 * mrl_completion_cq.c, which also argues why it is safe and what is left).
 *
 * Stacked pairs. Such an inner domain is by default not wrapped at all
 * (mrl_fabric_bypass_domain, FI_MRLEASE_HOOK_INNER). When it is, its
 * endpoints, CQs and counters (a domain that can never lease:
 * mrl_xfer_domain_leases, the inner instance of tcp;ofi_rxm without
 * FI_MR_LOCAL) keep the passthrough's tables, with the CQ reads and RMA
 * calls a utility provider makes per operation forwarded without the
 * passthrough's per-call checks: they pay what the passthrough pays, or
 * less.
 *
 * Cost. A post that needs no lease pays one load of the endpoint's
 * threshold and a compare (or a loop over the iovs) before the inner call;
 * a CQ read with no op entry pays a range check per entry. The leased hit
 * path of a 16 KiB fi_write over tcp;ofi_rxm (FI_THREAD_SAFE, as rxm
 * returns it: a shared pool; bench/xfer_ir.sh, FI_MRLEASE_MIN_SIZE 16384),
 * hook self cost per write + completion, instructions on the path
 * (callgrind -dump-instr):
 *	mrl_rma_write 29 (the first half: checks, the owner's op, the
 *	operands into it; no stack frame), mrl_rma_write_op 51 (the leased
 *	half: 28 of it the cache's inline acquire), mrl_xcq_read_tagged 53
 *	(12 of it the cache's inline release): 133, 92 of data path (131 in
 *	xfer_ir.sh). The inner instance, which steps aside by default, cost
 *	11 more when hooked (FI_MRLEASE_HOOK_INNER=1: writemsg 5, two CQ
 *	reads 3 each), and its layer about 1% of a small write's rate
 *	(bench/xfer_bench, before and after). xfer_ir.sh reports 2-4
 *	more per write: posts the provider refuses with -FI_EAGAIN (a few per
 *	hundred writes) run both halves and give the op back. It was 211 (173
 *	of data path) before the owner list, the two halves, the inline
 *	single-entry read and the state-told completion.
 *	What is left on the data path: the passthrough-equivalent calls and
 *	their argument set-up (the inner fi_write's 8 arguments, 2 on the
 *	stack, read back from the op: 16), the operands stored in the op (9),
 *	the CQ read's frame and inner call (13), the range and domain checks
 *	(8), the state CAS (4), the owner checks (6), the list pop and push
 *	(5), the rest branches.
 * Single-buffer sends and receives (fi_send, fi_senddata, fi_recv and the
 * tagged ones) take the same two halves (mrl_msg_op, MRL_MSG_OWNED);
 * XFER_IR_OP=send (a 16 KiB fi_send to the other endpoint plus a fi_recv
 * posted before it, both leased, two completions read by one fi_cq_read):
 * 281 Ir of data path per pair, 365 with the cache (mrl_msg_send 27 +
 * mrl_msg_send_op 53, mrl_msg_recv 37 + mrl_msg_recv_op 47, the two-entry
 * read out of line in mrl_cq_deliver_from 115 + mrl_xcq_read_tagged 22,
 * the inner instance's dynamic-rbuf trampoline 46); was 358 and 608.
 * Measure with bench/xfer_ir.sh [BUILDDIR] (make bench runs it): the
 * callgrind runs of bench/xfer_bench --child 2 --sizes 16384 --window 1 for
 * 2000 and 6000 writes, the self cost of every function in libmrlease-fi.so
 * (the cache's part by source file), per function, divided by the
 * difference in writes; also no hook and FI_HOOK=noop whole-program
 * figures (medians of XFER_IR_REPEAT pairs, 3). Program totals alone are
 * too noisy for a hundred instructions (tcp progress polls a variable
 * number of times: a mode moves by tens from one pair to the next).
 *
 * Not leased (forwarded as is): posts with more than MRL_XFER_IOV_MAX local
 * iovs; tagged receives with FI_PEEK/FI_CLAIM/FI_DISCARD; FI_MULTI_RECV
 * buffers where completions carry no flags (FI_CQ_FORMAT_CONTEXT) or the
 * endpoint's rx caps (as opened) lack FI_MULTI_RECV;
 * aliases, shared receive contexts and scalable endpoints themselves (their
 * tx/rx contexts lease). On a selective endpoint, an operation the
 * application asked no completion for has its completion consumed here
 * when the application reads the CQ: an application that watches counters
 * and reads its CQ only for errors holds those leases until it does (or
 * closes the endpoint).
 *
 * Sends on FI_MR_LOCAL domains without FI_MR_VIRT_ADDR. A leased operand
 * of a msg or tagged send longer than rxm's eager limit
 * (FI_OFI_RXM_BUFFER_SIZE, 16 KiB) gets a registration starting exactly at
 * its iov: rxm 1.17's rendezvous has the peer read each iov at offset 0 of
 * its MR (mrl_xfer_msg.c).
 *
 * Lifetime. A pool lives while its endpoint is open, and after the endpoint
 * closed with operations outstanding ("orphans": their leases were released
 * at close) for as long as a CQ the endpoint was bound to might still hold
 * entries naming them: such CQs keep a reference until they close.
 * A shared pool is also kept by those CQs when a thread reading one of them
 * may still be inside a completion of one of its ops: the completer changes
 * the op's state (live -> FREE) and then pushes it back onto the pool (the
 * shared stack or its owner's list; the lease it copied is released after
 * the push, from the copy), and a close in between sees no orphan. Close
 * tells by counting the free stack and the owner's list (only completers
 * push while it runs, nobody pops): every op that is not an orphan must be
 * on one of them; a few sched_yield retries cover the
 * usual few-instruction window, a descheduled completer costs the pool's
 * memory until the CQs close. The hit path pays nothing for it (no
 * per-read or per-entry counter); a completer touches the pool only while
 * its op is LIVE (then close orphans it and the CQs keep the pool) or
 * between its state change and its push (then close does not see the
 * stack settled). Serial pools need none of it (close never overlaps a
 * completion). test_xfer_close_race stalls a completer in that window
 * (MRL_XFER_CTL_TEST_COMPLETING) while another thread closes.
 */
#ifndef MRL_XFER_CTL_H
#define MRL_XFER_CTL_H
#include <sys/types.h>
/*
 * TEST-ONLY: fi_control(&ep->fid, MRL_XFER_CTL_TEST_COMPLETING, &hook) on an
 * enabled endpoint that leases (-FI_EINVAL otherwise) makes every
 * completion of its ops that takes the out-of-line path (hidden,
 * multi-recv, chained, error) call hook.fn(hook.arg) on the completing
 * thread after the op's state changed and before it returns to the free
 * list (hook.fn NULL: off). test_xfer_close_race stalls a completer there
 * while another thread closes the endpoint. Costs the hit path nothing.
 * A test defines MRL_XFER_CTL_ONLY before including this header to get
 * only this part (the rest clashes with test/mrl_test.h).
 */
#define MRL_XFER_CTL_TEST_COMPLETING 0x6d726c01
struct mrl_xfer_test_completing {
	void (*fn)(void *arg);
	void *arg;
};
/*
 * TEST-ONLY: fi_control(&ep->fid, MRL_XFER_CTL_TEST_READING, &hook) on an
 * enabled endpoint whose receive CQ is guarded (it leased an FI_MULTI_RECV
 * buffer on a shared pool; -FI_EINVAL otherwise) makes every guarded read of
 * that CQ (read, readfrom, sread, sreadfrom) call hook.fn(hook.arg, entries,
 * n) on the reading thread after the inner read returned n > 0 entries (in
 * the CQ's format, contexts not yet translated) and before they are
 * translated (hook.fn NULL: off). test_xfer_multi_recv_race stalls a
 * reader there. Only guarded reads test it: other CQs pay nothing.
 */
#define MRL_XFER_CTL_TEST_READING 0x6d726c02
struct mrl_xfer_test_reading {
	void (*fn)(void *arg, const void *entries, ssize_t n);
	void *arg;
};

#endif /* MRL_XFER_CTL_H */

#ifndef MRL_XFER_CTL_ONLY
#ifndef MRL_XFER_H
#define MRL_XFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "mrl_cache.h"
#include "mrl_hook.h"

/* Leases kept inside one op; an operation with more chains extra ops. */
#define MRL_OP_LEASES 4
/* Posts with more local iovs than this are forwarded unchanged. */
#define MRL_XFER_IOV_MAX 16

/* ---- operation contexts ------------------------------------------------ */

enum mrl_op_state {
	MRL_OP_FREE,	/* in a free list */
	MRL_OP_LIVE,	/* posted, holds leases */
	MRL_OP_ORPHAN,	/* its endpoint closed; leases already released */
	/* LIVE too, with one lease and no flag but MRL_OP_OWNED: the
	 * inline completion finds its case with the state's CAS alone. */
	MRL_OP_LIVE_OWNED,
	MRL_OP_LIVE_ONE, /* LIVE, one lease, no flag */
};

/* Whether an op in state s is posted and holds its leases. */
static inline bool mrl_op_live(unsigned int s)
{
	return s == MRL_OP_LIVE || s >= MRL_OP_LIVE_OWNED;
}

enum mrl_op_flags {
	MRL_OP_HIDDEN = 1 << 0,	    /* the app asked no completion: consume it */
	MRL_OP_MULTI_RECV = 1 << 1, /* ends at a completion with FI_MULTI_RECV */
	MRL_OP_EXTRA = 1 << 2,	    /* lease overflow of another op, not posted */
	MRL_OP_CHAINED = 1 << 3,    /* has extra ops (next) */
	MRL_OP_OWNED = 1 << 4,	    /* posted by its shared pool's owner */
};

struct mrl_op_pool;

struct mrl_op {
	struct fi_context2 prov_ctx;	/* first: the provider's scratch space */
	void *app_ctx;			/* what the application passed */
	struct mrl_op_pool *pool;
	const struct mrl_domain *domain; /* pool->domain (NULL: dead chunk),
					  * one load for mrl_op_of_context */
	struct mrl_op *next;		/* when live: extra leases; free in a
					 * serial pool: the next free op */
	/* Free on its pool's owner list: the next op there. */
	struct mrl_op *owned_next;
	/* Free in a shared pool: the next free op (mrl_op_code). */
	_Atomic uint32_t free_next;
	uint32_t code;			/* mrl_op_code of this op */
	atomic_uint state;		/* enum mrl_op_state */
	union {
		struct {
			uint16_t flags;	/* enum mrl_op_flags */
			uint16_t nleases;
		};
		/* Both in one word (mrl_op_shape): a completion tells its
		 * inline case (one lease, no flag) with one compare. */
		uint32_t shape;
	};
	struct mrl_registration *leases[MRL_OP_LEASES];
};

/* The shape word of an op with these flags and leases. */
static inline uint32_t mrl_op_shape(uint16_t flags, uint16_t nleases)
{
	union {
		struct {
			uint16_t flags, nleases;
		} s;
		uint32_t w;
	} u = { .s = { flags, nleases } };

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
	struct mrl_op *free;		 /* serial: the free list */
	/* The thread that created the pool, its "owner" (usually the one
	 * that posts), keeps the ops it posted (MRL_OP_OWNED) and completed
	 * itself on a list of its own, linked by owned_next: plain pops and a
	 * release store per push, no read-modify-write. Only the owner
	 * changes it; endpoint close counts it (mrl_op_pool_settled). An op
	 * another thread completes goes to the free list or shared stack, so
	 * the list holds at most what the owner had in flight. */
	const void *owner;		 /* mrl_thread_self() of the creator */
	_Atomic(struct mrl_op *) owned;
	/* shared: top of the free stack, (ABA tag << 32) | mrl_op_code of
	 * the top op; code 0 (a chunk header, never an op) is empty. */
	_Atomic uint64_t shared;
	uintptr_t base;			 /* mrl_op_region_base, for codes */
	pthread_mutex_t lock;		 /* shared pools: guards chunks (growth,
					  * scans); nothing else under it */
	struct mrl_op_chunk *chunks;
	atomic_uint refs;		 /* endpoint + CQs holding orphans */
	/* The guard of the CQ its FI_MULTI_RECV ops complete on, set before
	 * the first leased one is posted (mrl_xep_guard_rx), NULL when
	 * nothing needs it (serial pool, internal route); `deferred`: how
	 * many of its ops wait on a guard's list (mrl_cq_guard_defer). */
	struct mrl_cq_guard *_Atomic defer;
	atomic_uint deferred;
	/* TEST-ONLY (MRL_XFER_CTL_TEST_COMPLETING): called by the out-of-line
	 * mrl_op_complete between an op's state change and its return to
	 * the free list; NULL otherwise. */
	void (*_Atomic test_completing)(void *arg);
	void *test_arg;
};

/* The pool of no endpoint: owned by no thread, never has an op; the
 * single-buffer hit path of a direction that cannot take it
 * (mrl_xdir.single) sends every call to its slow path. */
extern struct mrl_op_pool mrl_op_pool_none __attribute__((visibility("hidden")));

/*
 * The reserved range every op lives in: [mrl_op_region_base, + size), size
 * 0 if it could not be reserved. Written once, by mrl_op_region_init, which
 * every pool and every CQ that translates contexts calls when it is
 * created; a completion reaches an op or a CQ only after that (through
 * pthread_once, then the application's own hand-over of the CQ or the
 * endpoint's lock-protected counter links), so the reads are plain loads,
 * which a CQ read folds into its compare.
 */
extern uintptr_t mrl_op_region_base __attribute__((visibility("hidden")));
extern size_t mrl_op_region_size __attribute__((visibility("hidden")));
void mrl_op_region_init(void);

/* Whether ctx points into the op region (an application context never
 * does; it is never dereferenced). */
static inline bool mrl_op_in_region(const void *ctx)
{
	return (uintptr_t)ctx - mrl_op_region_base < mrl_op_region_size;
}

/*
 * The op a completion's context names, if it is one of ours posted through
 * `domain`; NULL for application contexts, NULL, and the other instance's
 * ops.
 */
static inline struct mrl_op *mrl_op_of_context(void *ctx,
					       const struct mrl_domain *domain)
{
	struct mrl_op *op = ctx;

	if (!mrl_op_in_region(ctx) || op->domain != domain)
		return NULL;
	return op;
}

/* The calling thread's identity for pool ownership, unique among live
 * threads: its thread pointer (one load on x86-64). A thread that reuses a
 * dead owner's pointer becomes the owner, which is safe (the dead one no
 * longer touches the list). */
static inline const void *mrl_thread_self(void)
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
int mrl_op_pool_create(const struct mrl_domain *domain,
		       enum fi_threading threading, struct mrl_op_pool **pool);
/* Drop one reference; the last returns the chunks to the region. */
void mrl_op_pool_unref(struct mrl_op_pool *pool);
/*
 * Endpoint close, after its ops were orphaned: whether every op except the
 * `out` ones (orphans and their extras, which never return) is back on the
 * free list, i.e. no completion of this pool is between its state change
 * and its push (the only window in which a completer touches the pool of an
 * op that was not orphaned). Always true for serial pools.
 */
bool mrl_op_pool_settled(struct mrl_op_pool *pool, size_t out);
/* A LIVE op with no leases, or NULL (-FI_ENOMEM: the region is exhausted). */
struct mrl_op *mrl_op_alloc(struct mrl_op_pool *pool);

/* An op's place in the region in 8-byte units (ops are 8-byte aligned
 * and the region is at most 32 GiB). */
static inline uint32_t mrl_op_code(const struct mrl_op_pool *pool,
				   const struct mrl_op *op)
{
	return (uint32_t)(((uintptr_t)op - pool->base) >> 3);
}

static inline struct mrl_op *mrl_op_at(const struct mrl_op_pool *pool,
				       uint32_t code)
{
	return (struct mrl_op *)(pool->base + ((uintptr_t)code << 3));
}

/*
 * A free op off the pool's free list (poster side), or NULL when the list
 * is empty (then mrl_op_alloc, which grows the pool). The op's fields are
 * stale except next, NULL in every free op off its list (mrl_op_put_chain
 * clears it in shared pools, mrl_op_get in serial ones); the poster
 * initialises the rest of what a live op needs.
 */
static inline struct mrl_op *mrl_op_get_serial(struct mrl_op_pool *pool)
{
	struct mrl_op *op = pool->free;

	if (op) {
		pool->free = op->next;
		op->next = NULL;
	}
	return op;
}

static inline struct mrl_op *mrl_op_get_shared(struct mrl_op_pool *pool)
{
	struct mrl_op *op;
	uint64_t head, top;

	head = atomic_load_explicit(&pool->shared, memory_order_acquire);
	do {
		if (!(uint32_t)head)
			return NULL;
		op = mrl_op_at(pool, (uint32_t)head);
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

static inline struct mrl_op *mrl_op_get(struct mrl_op_pool *pool)
{
	return pool->serial ? mrl_op_get_serial(pool) :
			      mrl_op_get_shared(pool);
}

/* The owner's pop (owner thread only): its own list first. */
static inline struct mrl_op *mrl_op_get_owned(struct mrl_op_pool *pool)
{
	struct mrl_op *op = atomic_load_explicit(&pool->owned,
						 memory_order_relaxed);

	if (!op)
		return mrl_op_get(pool);
	atomic_store_explicit(&pool->owned, op->owned_next,
			      memory_order_relaxed);
	return op;
}

/* Push the chain first .. last (linked by next; last->next ignored) onto
 * the pool's free list (the owner's own list when the owner returns an op
 * it posted); any thread. */
void mrl_op_put_chain(struct mrl_op_pool *pool, struct mrl_op *first,
		      struct mrl_op *last);

/* Push one op whose next is NULL (no extras) onto a shared pool's stack. */
static inline void mrl_op_put_shared(struct mrl_op_pool *pool,
				     struct mrl_op *op)
{
	uint64_t head, top;

	head = atomic_load_explicit(&pool->shared, memory_order_relaxed);
	do {
		atomic_store_explicit(&op->free_next, (uint32_t)head,
				      memory_order_relaxed);
		/* Only pops change the tag: a pop whose CAS would succeed
		 * on a stale next must have seen another pop meanwhile. */
		top = (head & ~(uint64_t)UINT32_MAX) | op->code;
	} while (!atomic_compare_exchange_weak_explicit(
		&pool->shared, &head, top, memory_order_release,
		memory_order_relaxed));
}

/* The owner's push of an op it posted (shared pools, owner thread only). */
static inline void mrl_op_put_owned(struct mrl_op_pool *pool,
				    struct mrl_op *op)
{
	op->owned_next = atomic_load_explicit(&pool->owned,
					      memory_order_relaxed);
	atomic_store_explicit(&pool->owned, op, memory_order_release);
}

/* Push one op whose next is NULL (no extras) onto the serial list or the
 * shared stack; any thread. */
static inline void mrl_op_put(struct mrl_op_pool *pool, struct mrl_op *op)
{
	if (pool->serial) {
		op->next = pool->free;
		pool->free = op;
		return;
	}
	mrl_op_put_shared(pool, op);
}

/* Add a lease to op (chaining an extra op when full); 0 or -FI_ENOMEM. */
int mrl_op_add_lease(struct mrl_op *op, struct mrl_registration *reg);
/* Release op's leases (and extra ops); the op keeps its state. */
void mrl_op_release_leases(struct mrl_op *op);
/* Return a LIVE op on the posting thread (its post failed). */
void mrl_op_free_poster(struct mrl_op *op);
/* Call fn on every op of the pool in state LIVE (not extras); poster side. */
void mrl_op_pool_foreach_live(struct mrl_op_pool *pool,
			      bool (*fn)(struct mrl_op *op, void *arg),
			      void *arg);

/*
 * One completion reported for op: hands back the application's context in
 * *app_ctx and releases the leases when the operation is over (any
 * completion, except for FI_MULTI_RECV ops: the one carrying FI_MULTI_RECV,
 * or an error). Returns whether the application must see the entry.
 */
bool mrl_op_complete(struct mrl_op *op, uint64_t flags, bool error,
		     void **app_ctx);

/*
 * mrl_op_complete for a successful completion (the entry's flags at flagsp,
 * NULL: none), with the common cases inline: an op with one lease and no
 * flag but MRL_OP_OWNED (no extras, visible, not multi-recv), which its
 * poster marked MRL_OP_LIVE_OWNED or MRL_OP_LIVE_ONE: the state change (a
 * CAS, serial pools included: completion and endpoint close release the
 * leases once; the first CAS also tells the owner's case), the application's context, the op back on its free
 * list, then the lease released from a copy: after the push the op may be
 * reused, and nothing touches the op or its pool (which a close may free
 * once every op is back) after it. The lease is the completer's own
 * reference; the CQ being read keeps the domain open.
 */
static inline __attribute__((always_inline)) bool
mrl_op_complete_ok(struct mrl_op *op, const uint64_t *flagsp, void **app_ctx)
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
		if (__builtin_expect(pool->owner == mrl_thread_self(), 1))
			mrl_op_put_owned(pool, op);
		else
			mrl_op_put(pool, op);
		mrl_lease_release(reg);
		return true;
	}
	if (state == MRL_OP_LIVE_ONE)
		atomic_compare_exchange_strong_explicit(
			&op->state, &state, MRL_OP_FREE, memory_order_acq_rel,
			memory_order_acquire);
	if (state != MRL_OP_LIVE_ONE)
		return mrl_op_complete(op, flagsp ? *flagsp : 0, false,
				       app_ctx);
	*app_ctx = op->app_ctx;
	reg = op->leases[0];
	mrl_op_put(pool, op);
	mrl_lease_release(reg);
	return true;
}

/* ---- endpoints ----------------------------------------------------------- */

enum mrl_dir { MRL_TX, MRL_RX, MRL_NDIR };

/* How one direction of an endpoint learns that a leased operation ended. */
enum mrl_route {
	MRL_ROUTE_NONE,		/* it cannot: never lease */
	MRL_ROUTE_ALL,		/* the app's CQ reports every operation */
	MRL_ROUTE_SELECTIVE,	/* the app's CQ, FI_SELECTIVE_COMPLETION */
	MRL_ROUTE_INTERNAL,	/* no app CQ: our own CQ on the inner ep */
};

/* What the post path of one direction needs, fixed at fi_enable. */
struct mrl_xdir {
	size_t min;		/* non-msg calls: smallest leased operand
				 * (SIZE_MAX: never lease) */
	size_t min_msg;		/* msg calls (explicit flags) */
	bool convert;		/* leased non-msg calls go out as msg calls
				 * with FI_COMPLETION (route needs it) */
	bool flags_visible;	/* completions carry flags (multi-recv) */
	/* rx: FI_MULTI_RECV buffers may lease (flags visible, the endpoint's
	 * rx caps have FI_MULTI_RECV, a pool); on a shared pool reading an
	 * app CQ that CQ is guarded first (mrl_xep_multi_recv_ok). */
	bool multi_recv;
	uint8_t route;		/* enum mrl_route */
	uint16_t live_flags;	/* op flags of a leased non-converted non-msg
				 * post (MRL_OP_MULTI_RECV from op_flags) */
	uint64_t op_flags;	/* default op flags, for converted calls */
	/* The endpoint's pool when single-buffer non-msg calls may take the
	 * hit path (leasing, not converted), else &mrl_op_pool_none. */
	struct mrl_op_pool *single;
	/* The owner's op shape and state for single-buffer calls (live_flags
	 * | MRL_OP_OWNED, one lease: mrl_post_op_live), so a receive's first
	 * half stores them without computing them. */
	uint32_t owned_shape, owned_state;
};

struct mrl_xcntr;

/* The domain requires local descriptors (FI_MR_LOCAL, or the older
 * FI_LOCAL_MR mode bit): leasing is mandatory. */
static inline bool mrl_domain_mr_local(const struct mrl_domain *dom)
{
	return (dom->mr_mode & FI_MR_LOCAL) || (dom->mode & MRL_FI_LOCAL_MR);
}

/* Local descriptors handed to the provider must name registrations that
 * start at the operand (FI_MR_LOCAL without FI_MR_VIRT_ADDR: rxm 1.17's
 * rendezvous reads from the MR's start; see mrl_xfer_msg.c). */
static inline bool mrl_domain_mr_at_operand(const struct mrl_domain *dom)
{
	return mrl_domain_mr_local(dom) &&
	       !(dom->mr_mode & (FI_MR_VIRT_ADDR | MRL_FI_MR_BASIC));
}

/* The data path's state of one hook endpoint (mrl_ep.ext). */
struct mrl_xep {
	struct mrl_xdir dir[MRL_NDIR];
	struct mrl_ep *ep;
	struct mrl_cache_domain *cache;	/* leases come from here */
	bool mr_local;			/* FI_MR_LOCAL: leasing is mandatory */
	/* Sends longer than this lease registrations starting at each iov
	 * (mrl_xfer_msg.c); SIZE_MAX: never. */
	size_t based_after;
	uint64_t op_flags[MRL_NDIR];	/* default op flags (+ FI_SETOPSFLAG) */
	struct mrl_op_pool *pool;	/* created at fi_enable if leasing */
	struct fid_cq *internal_cq;	/* inner CQ for MRL_ROUTE_INTERNAL */
	struct mrl_xcntr *progress[4];	/* counters that drain internal_cq */
	pthread_mutex_t drain_lock;	/* serialises internal_cq reads */
	uint64_t rx_caps;		/* rx caps from the open (0: unknown) */
	/* Leased FI_MULTI_RECV buffers may be posted: the rx CQ is guarded
	 * and pool->defer set, or nothing needs it (mrl_xep_guard_rx). */
	atomic_bool rx_guarded;
};

/* Make leased FI_MULTI_RECV posts safe on x (guard its rx CQ when its pool
 * is shared: mrl_completion_cq.c); 0, or the post goes out unleased. */
int mrl_xep_guard_rx(struct mrl_xep *x);

/* Whether an FI_MULTI_RECV post on x may lease (guarding its rx CQ on the
 * first one); false: forward it unleased. */
static inline bool mrl_xep_multi_recv_ok(struct mrl_xep *x)
{
	return x->dir[MRL_RX].multi_recv &&
	       (atomic_load_explicit(&x->rx_guarded, memory_order_acquire) ||
		!mrl_xep_guard_rx(x));
}

/*
 * Whether endpoints of domain can ever lease: it has a cache domain, and
 * FI_MR_LOCAL or it is the outermost instance. Endpoints, CQs and counters
 * of other domains (the inner instance of a stacked pair) keep the
 * passthrough's tables and pay exactly what it pays.
 */
bool mrl_xfer_domain_leases(struct mrl_domain *domain);

/* Personality callbacks (mrl_personality.c puts them in the table). */
int mrl_xfer_ep_open(struct mrl_ep *ep);
int mrl_xfer_ep_control(struct mrl_ep *ep, int command, void *arg);
void mrl_xfer_ep_close(struct mrl_ep *ep);
int mrl_xfer_cq_open(struct mrl_cq *cq);
void mrl_xfer_cq_close(struct mrl_cq *cq);
int mrl_xfer_cntr_open(struct mrl_cntr *cntr);
void mrl_xfer_cntr_close(struct mrl_cntr *cntr);
/* A domain's open and close (mrl_mr.c): the lease domain, then the MR
 * interception on it; closed in reverse order. */
int mrl_xfer_domain_open(struct mrl_domain *domain);
void mrl_xfer_domain_close(struct mrl_domain *domain);
void mrl_xfer_domain_closed(struct mrl_domain *domain);

/* ---- post-path helpers (mrl_xfer_post.c), shared by the op families ---- */

/* One post being resolved: the op is taken on the first lease. */
struct mrl_post {
	struct mrl_xep *x;
	struct mrl_op *op;
	enum mrl_dir dir;
	bool based;	/* leases start at their operand (a rendezvous send on
			 * an FI_MR_LOCAL domain without FI_MR_VIRT_ADDR) */
};

static inline void mrl_post_init(struct mrl_post *p, struct mrl_xep *x,
				 enum mrl_dir dir)
{
	p->x = x;
	p->op = NULL;
	p->dir = dir;
	p->based = false;
}

/* Warn that a mandatory lease (FI_MR_LOCAL) failed; out of line. */
void mrl_post_lease_failed(const void *buf, size_t len, int ret);

/* Lease [buf, buf + len) (a registration starting at buf if p->based)
 * and return its descriptor in *out. */
static inline int mrl_post_lease(struct mrl_post *p, const void *buf,
				 size_t len, void **out)
{
	struct mrl_registration *reg;
	uintptr_t start = (uintptr_t)buf;
	int ret;

	if (!p->op) {
		p->op = mrl_op_alloc(p->x->pool);
		if (!p->op)
			return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	ret = p->based ? mrl_cache_acquire_based(p->x->cache, start,
						 start + len, &reg) :
			 mrl_cache_acquire(p->x->cache, start, start + len, &reg);
	if (ret) {
		if (!p->x->mr_local)
			return 0; /* the provider copes with desc NULL */
		mrl_post_lease_failed(buf, len, ret);
		return ret;
	}
	if (p->op->nleases < MRL_OP_LEASES) /* no extras chained yet */
		p->op->leases[p->op->nleases++] = reg;
	else
		ret = mrl_op_add_lease(p->op, reg);
	if (ret) {
		mrl_lease_release(reg);
		return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	*out = mrl_registration_desc(reg);
	return 0;
}

/*
 * Resolve one operand: *out = desc, or for a NULL descriptor on an operand
 * of at least min bytes, a lease's descriptor. A failed lease on a domain
 * without FI_MR_LOCAL leaves the descriptor NULL (the provider copes); with
 * FI_MR_LOCAL it fails the post.
 */
static inline int mrl_post_buf(struct mrl_post *p, const void *buf,
			       size_t len, void *desc, size_t min,
			       void **out)
{
	*out = desc;
	if (desc || !buf || len < min)
		return 0;
	return mrl_post_lease(p, buf, len, out);
}

/* The same for count operands (desc may be NULL: all NULL). */
int mrl_post_iov(struct mrl_post *p, const struct iovec *iov, void **desc,
		 size_t count, size_t min, void **out);
int mrl_post_ioc(struct mrl_post *p, const struct fi_ioc *ioc, void **desc,
		 size_t count, enum fi_datatype datatype, size_t min, void **out);

/* A call forwarded with the application's context: a triggered one
 * names the inner counter (mrl_trigger_to_inner). */
static inline void mrl_post_trigger_fwd(uint64_t flags, void *app_ctx)
{
	if (__builtin_expect(!!(flags & FI_TRIGGER), 0))
		mrl_trigger_to_inner(flags, app_ctx);
}

/* A leased FI_TRIGGER call: op, the context the provider gets, holds a
 * copy of the application's triggered context naming the inner counter. */
void mrl_post_trigger_op(struct mrl_post *p, const void *app_ctx);

/*
 * After resolving: the context to give the provider, and the flags (the
 * call's, or the endpoint's defaults for non-msg calls), with FI_COMPLETION
 * added when the route needs it to learn the end of a leased op the
 * application asked no completion for.
 */
static inline void *mrl_post_context(struct mrl_post *p, void *app_ctx,
				     uint64_t *flags)
{
	struct mrl_op *op = p->op;
	const struct mrl_xdir *d = &p->x->dir[p->dir];

	if (!op)
		goto unleased;
	if (!op->nleases) {
		/* Every lease attempt fell back to desc NULL. */
		mrl_op_free_poster(op);
		p->op = NULL;
		goto unleased;
	}
	op->app_ctx = app_ctx;
	if (flags) {
		if (*flags & FI_TRIGGER)
			mrl_post_trigger_op(p, app_ctx);
		if (*flags & FI_MULTI_RECV)
			op->flags |= MRL_OP_MULTI_RECV;
		if (d->route == MRL_ROUTE_INTERNAL ||
		    (d->route == MRL_ROUTE_SELECTIVE &&
		     !(*flags & FI_COMPLETION))) {
			op->flags |= MRL_OP_HIDDEN;
			*flags |= FI_COMPLETION;
		}
	}
	if (op->shape == mrl_op_shape(0, 1))
		atomic_store_explicit(&op->state, MRL_OP_LIVE_ONE,
				      memory_order_relaxed);
	return op;

unleased:
	if (flags)
		mrl_post_trigger_fwd(*flags, app_ctx);
	return app_ctx;
}

/* After the inner post: on failure release what the post took. */
static inline ssize_t mrl_post_end(struct mrl_post *p, ssize_t ret)
{
	if (ret && p->op)
		mrl_op_free_poster(p->op);
	return ret;
}

/*
 * The single-buffer hit path. A single-buffer call (fi_read, fi_write,
 * fi_writedata, fi_send, fi_senddata, fi_recv and the tagged ones) whose
 * operand needs a lease runs in two halves, so that no register is saved
 * around the lease cache's out-of-line paths:
 * 1. the application's call, with no stack frame: its checks, an op (the
 *    pool's owner thread takes it off its own list inline: mrl_post_owned,
 *    mrl_post_owned_take; other threads in the call's out-of-line pop:
 *    mrl_post_pop), the call's operands and context stored in the op;
 * 2. the call's leased half (noinline, four arguments: cache, buffer,
 *    length, op): the lease into op->leases[0], the op LIVE, the inner call
 *    with the operands read back from the op and the op as its context (the
 *    first half made the op LIVE: mrl_post_op_live). A failed lease
 *    returns the op and takes the slow path.
 * The route of a call that is not converted reports it with no other op
 * flag.
 */

/* The operands of a single-buffer call, kept in its op between the two
 * halves: the provider's scratch space is ours until the inner call. */
struct mrl_op_args {
	struct fid_ep *fep;	/* the hook endpoint */
	void *buf;
	size_t len;
	fi_addr_t peer;
	uint64_t a, b, c;	/* rma: addr, key, data; msg: tag, ignore, data */
};

_Static_assert(sizeof(struct mrl_op_args) <= sizeof(struct fi_context2),
	       "single-buffer operands do not fit in the provider context");

static inline struct mrl_op_args *mrl_op_args(struct mrl_op *op)
{
	return (struct mrl_op_args *)(void *)&op->prov_ctx;
}

/* Store the operands every single-buffer call has (the family stores a, b,
 * c as its call has them). */
static inline void mrl_op_args_set(struct mrl_op *op, struct fid_ep *fep,
				   const void *buf, size_t len, fi_addr_t peer,
				   void *context)
{
	struct mrl_op_args *a = mrl_op_args(op);

	a->peer = peer;
	op->app_ctx = context;
	a->fep = fep;
	a->buf = (void *)buf;
	a->len = len;
}

/*
 * The first half's op when the calling thread owns the pool (`single` of
 * the call's direction): the top of its own list, not yet taken; NULL (no
 * buffer, mrl_op_pool_none, another thread, an empty list) sends the call
 * to its out-of-line pop. The caller stores the operands, then takes the op with
 * mrl_post_owned_take: fewer values live at once, no register to save.
 */
static inline struct mrl_op *mrl_post_owned(struct mrl_op_pool *pool,
					    const void *buf)
{
	if (!buf || pool->owner != mrl_thread_self())
		return NULL;
	return atomic_load_explicit(&pool->owned, memory_order_relaxed);
}

/* The state of a live single-buffer op with these flags. */
static inline unsigned int mrl_post_op_state(uint16_t flags)
{
	return flags == MRL_OP_OWNED ? MRL_OP_LIVE_OWNED :
	       !flags		     ? MRL_OP_LIVE_ONE :
					MRL_OP_LIVE;
}

/* The op's shape and state for a single-buffer call: LIVE before its lease
 * is taken (nothing looks at it in between but a concurrent fi_cancel,
 * which finds a context the provider does not know yet); a failed lease
 * sets it FREE again. */
static inline void mrl_post_op_live(struct mrl_op *op, uint16_t flags)
{
	op->shape = mrl_op_shape(flags, 1);
	atomic_store_explicit(&op->state, mrl_post_op_state(flags),
			      memory_order_relaxed);
}

/* Take the op mrl_post_owned returned, with the direction's owned shape
 * and state (mrl_xdir.owned_shape, owned_state) or the constant ones of
 * flags 0 (tx). */
static inline void mrl_post_owned_take(struct mrl_op_pool *pool,
				       struct mrl_op *op, uint32_t shape,
				       unsigned int state)
{
	atomic_store_explicit(&pool->owned, op->owned_next,
			      memory_order_relaxed);
	op->shape = shape;
	atomic_store_explicit(&op->state, state, memory_order_relaxed);
}

/* The out-of-line pop: an op for a single-buffer call with `flags` (and
 * MRL_OP_OWNED for the owner), or NULL (no buffer, mrl_op_pool_none, the
 * region is exhausted: the slow path). */
static inline struct mrl_op *mrl_post_pop(struct mrl_op_pool *pool,
					  const void *buf, uint16_t flags)
{
	struct mrl_op *op;

	if (!buf || !pool->owner) /* mrl_op_pool_none */
		return NULL;
	if (pool->owner == mrl_thread_self()) {
		op = mrl_op_get_owned(pool);
		flags |= MRL_OP_OWNED;
	} else {
		op = mrl_op_get(pool);
	}
	if (op)
		mrl_post_op_live(op, flags);
	return op;
}

/* A single-buffer call whose lease failed (err): with FI_MR_LOCAL the post
 * fails (err, warned), else 0: it goes out as the application made it
 * (desc NULL). */
int mrl_post_single_failed(const struct mrl_xep *x, const void *buf,
			   size_t len, int err);

/* Size in bytes of one element of an atomic datatype (0: unknown). */
size_t mrl_datatype_size(enum fi_datatype datatype);

/*
 * Whether a post must take the slow path: some local operand has no
 * descriptor and at least min bytes. Posts with more iovs than the slow path
 * can rewrite go out unchanged.
 */
static inline bool mrl_iov_needs_lease(const struct iovec *iov, void **desc,
				       size_t count, size_t min)
{
	if (min == SIZE_MAX || count > MRL_XFER_IOV_MAX)
		return false;
	for (size_t i = 0; i < count; i++)
		if ((!desc || !desc[i]) && iov[i].iov_len >= min)
			return true;
	return false;
}

static inline bool mrl_ioc_needs_lease(const struct fi_ioc *ioc, void **desc,
				       size_t count, enum fi_datatype datatype,
				       size_t min)
{
	size_t size = mrl_datatype_size(datatype);

	if (min == SIZE_MAX || count > MRL_XFER_IOV_MAX || !size)
		return false;
	for (size_t i = 0; i < count; i++)
		if ((!desc || !desc[i]) && ioc[i].count &&
		    ioc[i].count >= (min + size - 1) / size)
			return true;
	return false;
}

/* ---- msg and tagged posts (mrl_xfer_msg.c, mrl_xfer_tagged.c) --------- */

enum mrl_msg_kind {
	MRL_SEND, MRL_SENDDATA, MRL_RECV,	/* msg */
	MRL_TSEND, MRL_TSENDDATA, MRL_TRECV,	/* tagged */
};

static inline enum mrl_dir mrl_msg_dir(enum mrl_msg_kind kind)
{
	return kind == MRL_RECV || kind == MRL_TRECV ? MRL_RX : MRL_TX;
}

static inline bool mrl_msg_tagged(enum mrl_msg_kind kind)
{
	return kind >= MRL_TSEND;
}

/* One msg or tagged post of any shape, as the msg calls describe it. */
struct mrl_msg_call {
	enum mrl_msg_kind kind;
	const struct iovec *iov;
	void **desc;		/* may be NULL: all NULL */
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
ssize_t mrl_msg_post(struct mrl_ep *ep, const struct mrl_msg_call *c,
		     uint64_t flags, bool as_msg);
/* The slow path of a non-msg call: the endpoint's default flags, as the
 * msg call when the route needs FI_COMPLETION. */
ssize_t mrl_msg_slow(struct mrl_ep *ep, const struct mrl_msg_call *c);
/* A single-buffer call off the hit path: mrl_msg_slow (err 0), or its
 * lease failed (err: the post fails with FI_MR_LOCAL, else goes out with
 * desc NULL). */
ssize_t __attribute__((cold))
mrl_msg_single_slow(struct mrl_ep *ep, enum mrl_msg_kind kind, void *buf,
		    size_t len, fi_addr_t addr, uint64_t tag, uint64_t ignore,
		    uint64_t data, void *context, int err);

/* The operands of a msg or tagged call into its op (mrl_op_args: a = tag,
 * b = ignore, c = data). */
static inline __attribute__((always_inline)) void
mrl_msg_args_set(enum mrl_msg_kind kind, struct mrl_op *op,
		 struct fid_ep *fep, const void *buf, size_t len,
		 fi_addr_t addr, uint64_t tag, uint64_t ignore, uint64_t data,
		 void *context)
{
	struct mrl_op_args *a = mrl_op_args(op);

	if (mrl_msg_tagged(kind))
		a->a = tag;
	if (kind == MRL_TRECV)
		a->b = ignore;
	if (kind == MRL_SENDDATA || kind == MRL_TSENDDATA)
		a->c = data;
	mrl_op_args_set(op, fep, buf, len, addr, context);
}

/*
 * The lease of a leased half (single-buffer hit path): into a local first,
 * not op->leases[0], so no register is saved around the cache's inline
 * path; then into the op, with the descriptor the inner call takes.
 * Returns 0, or the cache's error with the op untouched.
 */
static inline __attribute__((always_inline)) int
mrl_op_lease_one(struct mrl_cache_domain *cache, uintptr_t buf, size_t len,
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
static inline void *mrl_op_give_back(struct mrl_op *op, struct mrl_op_args *a)
{
	void *context = op->app_ctx;

	*a = *mrl_op_args(op);
	atomic_store_explicit(&op->state, MRL_OP_FREE, memory_order_relaxed);
	mrl_op_put(op->pool, op);
	return context;
}

/* The lease failed in the leased half: the op goes back, the call takes
 * mrl_msg_single_slow with the operands it left in the op. */
ssize_t __attribute__((cold))
mrl_msg_op_failed(enum mrl_msg_kind kind, struct mrl_op *op, int err);

/*
 * The leased half of a send, senddata or recv (tagged too; the second half
 * of the single-buffer hit path): the lease into the op, the op LIVE, the
 * inner call in the application's shape with the operands the first half
 * stored in the op.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_msg_op(enum mrl_msg_kind kind, struct mrl_cache_domain *cache,
	   uintptr_t buf, size_t len, struct mrl_op *op)
{
	struct mrl_op_args *a = mrl_op_args(op);
	struct fid_ep *in;
	void *desc;
	ssize_t ret;
	int err;

	err = mrl_op_lease_one(cache, buf, len, op, &desc);
	if (__builtin_expect(err != 0, 0))
		return mrl_msg_op_failed(kind, op, err);
	in = mrl_ep_of(a->fep)->inner;
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
		mrl_op_free_poster(op);
	return ret;
}

/* Sends whose operand needs a registration starting at it (mrl_xfer_msg.c)
 * take the slow path. */
static inline bool mrl_msg_single_ok(enum mrl_msg_kind kind,
				     const struct mrl_xep *x, size_t len)
{
	return mrl_msg_dir(kind) == MRL_RX || len <= x->based_after;
}

/*
 * The first half of a msg or tagged call for a thread that is not its
 * pool's owner, or an owner whose list is empty (out of line): an op off
 * the pool, the operands into it, the leased half; anything else goes to
 * mrl_msg_single_slow.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_msg_pop(enum mrl_msg_kind kind, struct fid_ep *fep, const void *buf,
	    size_t len, fi_addr_t addr, uint64_t tag, uint64_t ignore,
	    uint64_t data, void *context,
	    ssize_t (*leased)(struct mrl_cache_domain *, uintptr_t, size_t,
			      struct mrl_op *))
{
	struct mrl_ep *ep = mrl_ep_of(fep);
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[mrl_msg_dir(kind)];
	struct mrl_op *op = NULL;

	if (mrl_msg_single_ok(kind, x, len))
		op = mrl_post_pop(d->single, buf,
				  mrl_msg_dir(kind) == MRL_RX ? d->live_flags :
								0);
	if (!op)
		return mrl_msg_single_slow(ep, kind, (void *)buf, len, addr,
					   tag, ignore, data, context, 0);
	mrl_msg_args_set(kind, op, fep, buf, len, addr, tag, ignore, data,
			 context);
	return leased(x->cache, (uintptr_t)buf, len, op);
}

/*
 * The first half of a msg or tagged call that needs a lease, for its
 * pool's owner (no stack frame): the op off its own list, the operands into
 * it, the leased half; `pop_call` (the out-of-line pop) otherwise. Uses
 * the call's x, fep, buf, len, addr, tag, ignore, data, context.
 */
#define MRL_MSG_OWNED(kind, leased, pop_call)                                \
	do {                                                                 \
		const struct mrl_xdir *d_ = &x->dir[mrl_msg_dir(kind)];      \
		struct mrl_op_pool *pool_ = d_->single;                      \
		struct mrl_op *op_;                                          \
                                                                             \
		if (!mrl_msg_single_ok(kind, x, len) ||                      \
		    !(op_ = mrl_post_owned(pool_, buf)))                     \
			return pop_call;                                     \
		mrl_msg_args_set(kind, op_, fep, buf, len, addr, tag,        \
				 ignore, data, context);                     \
		if (mrl_msg_dir(kind) == MRL_RX)                             \
			mrl_post_owned_take(pool_, op_, d_->owned_shape,     \
					    d_->owned_state);                \
		else                                                         \
			mrl_post_owned_take(                                 \
				pool_, op_, mrl_op_shape(MRL_OP_OWNED, 1),   \
				MRL_OP_LIVE_OWNED);                          \
		return leased(pool_->cache, (uintptr_t)buf, len, op_);       \
	} while (0)

/* The leased half of each kind, with the signature the first halves jump
 * to. */
#define MRL_MSG_OP(name, kind)                                               \
	ssize_t __attribute__((noinline))                                    \
	name(struct mrl_cache_domain *cache, uintptr_t buf, size_t len,      \
	     struct mrl_op *op)                                              \
	{                                                                    \
		return mrl_msg_op(kind, cache, buf, len, op);                \
	}

/* Op tables (mrl_xfer_*.c): the passthrough's, with every post that can
 * carry a local operand replaced; filled once by mrl_xfer_tables_init. */
extern struct fi_ops_msg mrl_xfer_msg_ops;
extern struct fi_ops_tagged mrl_xfer_tagged_ops;
extern struct fi_ops_rma mrl_xfer_rma_ops;
extern struct fi_ops_atomic mrl_xfer_atomic_ops;
void mrl_xfer_msg_init(void);
void mrl_xfer_tagged_init(void);
void mrl_xfer_rma_init(void);
void mrl_xfer_atomic_init(void);
/* An endpoint of a domain that never leases: its RMA calls forwarded
 * without the passthrough's per-call checks when the inner table has them. */
void mrl_xfer_rma_plain_install(struct mrl_ep *ep);

/* ---- completion side (mrl_completion_*.c) ------------------------------ */

/*
 * A guarded CQ's readers in flight and deferred ops (mrl_completion_cq.c):
 * word = (readers << 32) | mrl_op_code of the first deferred op (0: none;
 * the ops linked by free_next). The list is emptied, by the reader whose
 * exit takes the count to 0, in the same atomic step.
 */
#define MRL_CQ_GUARD_READER ((uint64_t)1 << 32)
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
bool mrl_cq_guard_defer(struct mrl_cq_guard *g, struct mrl_op *op);

/* The data path's state of a CQ (mrl_cq.ext). */
/* Completions a CQ reads ahead at most (struct mrl_xcq). */
#define MRL_XCQ_STASH 16

struct mrl_xcq {
	size_t entry_size;
	/* Reads go through the guarded table (mrl_xcq_guard): set once. */
	atomic_bool guarded;
	struct mrl_cq_guard guard;
	/* fi_cq_signal calls: a blocking read the hook would retry after a
	 * hidden batch returns instead when one came (mrl_completion_cq.c). */
	atomic_uint signals;
	/* Pools of endpoints closed with orphans, kept until the CQ closes. */
	pthread_mutex_t lock;		/* guards pools, the read table's
					 * switches (base, stash) and the
					 * stash; nothing is called in the
					 * provider under it but the reads
					 * that fill the stash */
	struct mrl_op_pool **pools;
	size_t npools, cap;
	/* The table reads use when the stash is empty: the format's, or the
	 * guarded one once guarded. */
	const struct fi_ops_cq *base;
	/* Completions read ahead for a poll set or fi_trywait that had to
	 * know whether one is the application's (mrl_xfer_cq_readable):
	 * translated, handed out first (the CQ reads through the stash
	 * table while any is here). */
	size_t nstash, stash_head;
	unsigned char stash[MRL_XCQ_STASH * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t stash_src[MRL_XCQ_STASH];
};

/* Whether cq has a completion the application can read, or an error
 * entry: 1, else 0, or -FI_EAGAIN when hidden entries were consumed; the
 * application's are kept for its next reads (personality cq_readable). */
int mrl_xfer_cq_readable(struct mrl_cq *cq);

/* Keep pool alive until cq closes (an endpoint closed with orphans). */
int mrl_xcq_hold_pool(struct mrl_cq *cq, struct mrl_op_pool *pool);
/* Switch cq's reads to the guarded ones (idempotent); its guard, or NULL
 * when cq does not translate (no ext). */
struct mrl_cq_guard *mrl_xcq_guard(struct mrl_cq *cq);

/* Counters drive internal CQs of counters-only endpoints (mrl_cntr.ext). */
struct mrl_xcntr {
	pthread_mutex_t lock;	/* guards eps; held while draining them, so an
				 * endpoint cannot close under a drain */
	atomic_size_t neps;
	struct mrl_xep **eps;
	size_t cap;
};

int mrl_xcntr_add(struct mrl_xcntr *c, struct mrl_xep *x);
void mrl_xcntr_remove(struct mrl_xcntr *c, struct mrl_xep *x);
/* Read x's internal CQ until empty, releasing what completed. */
void mrl_xep_drain(struct mrl_xep *x);

#endif /* MRL_XFER_H */
#endif /* MRL_XFER_CTL_ONLY */
