/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operation contexts: the reserved region they live in, per-endpoint pools,
 * and the one place an op's leases are given back (mrl_xfer_op_complete).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_xfer_op.h"

/*
 * Address space reserved for ops. PROT_NONE costs no memory and no commit
 * charge; chunks become readable and writable as pools grow. If the kernel
 * refuses the reservation, smaller ones are tried.
 */
#define MRL_REGION_MAX ((size_t) 16 << 30)
#define MRL_REGION_MIN ((size_t) 64 << 20)
#define MRL_CHUNK_SIZE ((size_t) 64 << 10)

struct mrl_op_chunk {
	struct mrl_op_chunk *next;
	size_t nops;
	/* ops follow, aligned to 64 bytes */
};

#define MRL_CHUNK_HDR 64u
#define MRL_CHUNK_OPS ((MRL_CHUNK_SIZE - MRL_CHUNK_HDR) / sizeof(struct mrl_op))

struct mrl_op_pool mrl_xfer_op_pool_none;
uintptr_t mrl_xfer_op_region_base;
size_t mrl_xfer_op_region_size;

/* Ops of returned chunks point here, so a stale context naming them is
 * seen as nobody's. */
static struct mrl_op_pool mrl_xfer_dead_pool;

/*
 * Region bookkeeping. region_lock guards next_chunk and free_chunks; it is
 * taken only when a pool grows or dies, never on a post or completion.
 */
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t region_once = PTHREAD_ONCE_INIT;
static uintptr_t region_next;
static struct mrl_op_chunk *free_chunks;

static void
mrl_xfer_region_reserve(void)
{
	void *base = MAP_FAILED;
	size_t size;

	for (size = MRL_REGION_MAX; size >= MRL_REGION_MIN; size /= 2) {
		base = mmap(NULL, size, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base != MAP_FAILED)
			break;
	}
	if (base == MAP_FAILED) {
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"cannot reserve address space for operation contexts: "
			"posts will not take leases\n");
		return;
	}
	region_next = (uintptr_t) base;
	mrl_xfer_op_region_base = (uintptr_t) base;
	mrl_xfer_op_region_size = size;
}

/* A child must not inherit region_lock held by a thread that does not
 * exist in it (its first endpoint would wait forever): held across fork. */
static void
mrl_xfer_region_fork_lock(void)
{
	pthread_mutex_lock(&region_lock);
}

static void
mrl_xfer_region_fork_unlock(void)
{
	pthread_mutex_unlock(&region_lock);
}

static void
mrl_xfer_region_once(void)
{
	mrl_xfer_region_reserve();
	pthread_atfork(mrl_xfer_region_fork_lock, mrl_xfer_region_fork_unlock,
		       mrl_xfer_region_fork_unlock);
}

void
mrl_xfer_op_region_init(void)
{
	pthread_once(&region_once, mrl_xfer_region_once);
}

static struct mrl_op_chunk *
mrl_xfer_chunk_get(void)
{
	struct mrl_op_chunk *chunk = NULL;
	uintptr_t end;

	mrl_xfer_op_region_init();
	end = mrl_xfer_op_region_base + mrl_xfer_op_region_size;

	pthread_mutex_lock(&region_lock);
	if (free_chunks) {
		chunk = free_chunks;
		free_chunks = chunk->next;
	} else if (region_next + MRL_CHUNK_SIZE <= end) {
		if (!mprotect((void *) region_next, MRL_CHUNK_SIZE,
			      PROT_READ | PROT_WRITE)) {
			chunk = (struct mrl_op_chunk *) region_next;
			region_next += MRL_CHUNK_SIZE;
		} else {
			FI_WARN(mrl_hook_prov, FI_LOG_CORE,
				"mprotect of an operation chunk: %s\n",
				strerror(errno));
		}
	}
	pthread_mutex_unlock(&region_lock);
	return chunk;
}

static void
mrl_xfer_chunk_put(struct mrl_op_chunk *chunk)
{
	struct mrl_op *ops = (struct mrl_op *) ((char *) chunk + MRL_CHUNK_HDR);

	for (size_t i = 0; i < chunk->nops; i++) {
		ops[i].pool = &mrl_xfer_dead_pool;
		ops[i].domain = NULL;
	}
	pthread_mutex_lock(&region_lock);
	chunk->next = free_chunks;
	free_chunks = chunk;
	pthread_mutex_unlock(&region_lock);
}

static inline struct mrl_op *
mrl_xfer_chunk_ops(struct mrl_op_chunk *chunk)
{
	return (struct mrl_op *) ((char *) chunk + MRL_CHUNK_HDR);
}

/* Ops are coded in 32 bits of 8-byte units (mrl_xfer_op_code). */
_Static_assert(MRL_REGION_MAX / 8 <= (size_t) UINT32_MAX + 1,
	       "op codes do not fit in 32 bits");
_Static_assert(_Alignof(struct mrl_op) >= 8 && sizeof(struct mrl_op) % 8 == 0 &&
		       MRL_CHUNK_HDR % 8 == 0,
	       "ops are not 8-byte aligned");

void
mrl_xfer_op_put_chain(struct mrl_op_pool *pool, struct mrl_op *first,
		      struct mrl_op *last)
{
	uint64_t head, top;

	mrl_assert(atomic_load_explicit(&first->state, memory_order_relaxed) ==
		   MRL_OP_FREE);
	if (pool->serial) {
		last->next = pool->free;
		pool->free = first;
		return;
	}
	if ((first->flags & MRL_OP_OWNED) &&
	    pool->owner == mrl_xfer_thread_self()) {
		/* The owner's list links by owned_next; next stays NULL. */
		struct mrl_op *owned = atomic_load_explicit(
			&pool->owned, memory_order_relaxed);

		for (struct mrl_op *op = first, *next; op != last; op = next) {
			next = op->next;
			op->owned_next = next;
			op->next = NULL;
		}
		last->next = NULL;
		last->owned_next = owned;
		atomic_store_explicit(&pool->owned, first,
				      memory_order_release);
		return;
	}
	/* Shared free lists link by free_next; next stays NULL in free ops
	 * (mrl_xfer_op_get). */
	for (struct mrl_op *op = first, *next; op != last; op = next) {
		next = op->next;
		atomic_store_explicit(&op->free_next, next->code,
				      memory_order_relaxed);
		op->next = NULL;
	}
	last->next = NULL;
	head = atomic_load_explicit(&pool->shared, memory_order_relaxed);
	do {
		atomic_store_explicit(&last->free_next, (uint32_t) head,
				      memory_order_relaxed);
		top = (head & ~(uint64_t) UINT32_MAX) | first->code;
	} while (!atomic_compare_exchange_weak_explicit(
		&pool->shared, &head, top, memory_order_release,
		memory_order_relaxed));
}

/* Carve a new chunk into the pool's free list; poster side (under the
 * pool's lock if shared). */
static int
mrl_xfer_op_pool_grow(struct mrl_op_pool *pool)
{
	struct mrl_op_chunk *chunk = mrl_xfer_chunk_get();
	struct mrl_op *ops;

	if (!chunk)
		return -FI_ENOMEM;
	chunk->nops = MRL_CHUNK_OPS;
	ops = mrl_xfer_chunk_ops(chunk);
	for (size_t i = 0; i < chunk->nops; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].pool = pool;
		ops[i].domain = pool->domain;
		atomic_init(&ops[i].state, MRL_OP_FREE);
		atomic_init(&ops[i].free_next, 0);
		ops[i].code = mrl_xfer_op_code(pool, &ops[i]);
		ops[i].next = i + 1 < chunk->nops ? &ops[i + 1] : NULL;
	}
	chunk->next = pool->chunks;
	pool->chunks = chunk;
	mrl_xfer_op_put_chain(pool, ops, &ops[chunk->nops - 1]);
	return 0;
}

int
mrl_xfer_op_pool_create(const struct mrl_domain *domain,
			enum fi_threading threading, struct mrl_op_pool **pool)
{
	struct mrl_op_pool *p;
	int ret;

	mrl_xfer_op_region_init();
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->domain = domain;
	p->serial = threading == FI_THREAD_DOMAIN ||
		    threading == FI_THREAD_COMPLETION;
	p->base = mrl_xfer_op_region_base;
	p->owner = mrl_xfer_thread_self();
	atomic_init(&p->owned, NULL);
	atomic_init(&p->shared, 0);
	atomic_init(&p->refs, 1);
	atomic_init(&p->test_completing, NULL);
	atomic_init(&p->defer, NULL);
	atomic_init(&p->deferred, 0);
	ret = pthread_mutex_init(&p->lock, NULL);
	if (ret) {
		free(p);
		return -ret;
	}
	/* One chunk up front so the first posts do not grow the pool. */
	ret = mrl_xfer_op_pool_grow(p);
	if (ret)
		goto err_lock;
	*pool = p;
	return 0;

err_lock:
	pthread_mutex_destroy(&p->lock);
	free(p);
	return ret;
}

void
mrl_xfer_op_pool_unref(struct mrl_op_pool *pool)
{
	struct mrl_op_chunk *chunk, *next;

	if (atomic_fetch_sub_explicit(&pool->refs, 1, memory_order_acq_rel) !=
	    1)
		return;
	for (chunk = pool->chunks; chunk; chunk = next) {
		next = chunk->next;
		mrl_xfer_chunk_put(chunk);
	}
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

bool
mrl_xfer_op_pool_settled(struct mrl_op_pool *pool, size_t out)
{
	size_t total = 0, n = 0;
	struct mrl_op *op;
	uint32_t code;

	if (pool->serial)
		return true;
	for (struct mrl_op_chunk *c = pool->chunks; c; c = c->next)
		total += c->nops;
	/* No poster runs at close, so the stack only grows (pushes of
	 * completers): the list below a head read is stable. The acquire
	 * pairs with every push's release CAS, so a completer's accesses to
	 * the pool happen before whatever follows a settled answer. */
	code = (uint32_t) atomic_load_explicit(&pool->shared,
					       memory_order_acquire);
	while (code && n <= total) {
		n++;
		code = atomic_load_explicit(
			&mrl_xfer_op_at(pool, code)->free_next,
			memory_order_relaxed);
	}
	/* The owner's list: only its pushes change it now (the same
	 * argument, by its release stores). */
	for (op = atomic_load_explicit(&pool->owned, memory_order_acquire);
	     op && n <= total; op = op->owned_next)
		n++;
	return n + out == total;
}

struct mrl_op *
mrl_xfer_op_alloc(struct mrl_op_pool *pool)
{
	struct mrl_op *op = mrl_xfer_op_get(pool);

	if (!op) {
		/* Another poster may have grown it meanwhile: try again
		 * under the lock before growing. */
		if (!pool->serial)
			pthread_mutex_lock(&pool->lock);
		op = mrl_xfer_op_get(pool);
		if (!op && !mrl_xfer_op_pool_grow(pool))
			op = mrl_xfer_op_get(pool);
		if (!pool->serial)
			pthread_mutex_unlock(&pool->lock);
		if (!op)
			return NULL;
	}
	op->next = NULL;
	op->flags = 0;
	op->nleases = 0;
	op->app_ctx = NULL;
	atomic_store_explicit(&op->state, MRL_OP_LIVE, memory_order_relaxed);
	return op;
}

int
mrl_xfer_op_add_lease(struct mrl_op *op, struct mrl_registration *reg)
{
	struct mrl_op *extra;

	while (op->nleases == MRL_OP_LEASES) {
		if (!op->next) {
			extra = mrl_xfer_op_alloc(op->pool);
			if (!extra)
				return -FI_ENOMEM;
			extra->flags = MRL_OP_EXTRA;
			op->next = extra;
			op->flags |= MRL_OP_CHAINED;
		}
		op = op->next;
	}
	op->leases[op->nleases++] = reg;
	return 0;
}

void
mrl_xfer_op_release_leases(struct mrl_op *op)
{
	for (; op; op = op->next) {
		for (uint16_t i = 0; i < op->nleases; i++)
			mrl_cache_lease_release(op->leases[i]);
		op->nleases = 0;
	}
}

/* The op and its extras, states set FREE; returns the last of the chain. */
static struct mrl_op *
mrl_xfer_op_chain_free(struct mrl_op *op)
{
	struct mrl_op *last = op;

	for (;;) {
		atomic_store_explicit(&last->state, MRL_OP_FREE,
				      memory_order_relaxed);
		if (!last->next)
			return last;
		last = last->next;
	}
}

void
mrl_xfer_op_free_poster(struct mrl_op *op)
{
	struct mrl_op_pool *pool = op->pool;
	struct mrl_op *last;

	mrl_xfer_op_release_leases(op);
	last = mrl_xfer_op_chain_free(op);
	mrl_xfer_op_put_chain(pool, op, last);
}

void
mrl_xfer_op_pool_foreach_live(struct mrl_op_pool *pool,
			      bool (*fn)(struct mrl_op *op, void *arg),
			      void *arg)
{
	for (struct mrl_op_chunk *c = pool->chunks; c; c = c->next) {
		struct mrl_op *ops = mrl_xfer_chunk_ops(c);

		for (size_t i = 0; i < c->nops; i++) {
			if (ops[i].flags & MRL_OP_EXTRA ||
			    !mrl_xfer_op_live(atomic_load_explicit(
				    &ops[i].state, memory_order_acquire)))
				continue;
			if (!fn(&ops[i], arg))
				return;
		}
	}
}

bool
mrl_xfer_op_complete(struct mrl_op *op, uint64_t flags, bool error,
		     void **app_ctx)
{
	struct mrl_op_pool *pool = op->pool;
	unsigned int state;
	bool visible = error || !(op->flags & MRL_OP_HIDDEN);
	bool ours;

	*app_ctx = op->app_ctx;
	if ((op->flags & MRL_OP_MULTI_RECV) && !error &&
	    !(flags & FI_MULTI_RECV))
		return visible;

	if (pool->serial) {
		/* Nothing runs concurrently: plain state changes. */
		state = atomic_load_explicit(&op->state, memory_order_relaxed);
		ours = mrl_xfer_op_live(state);
		if (ours)
			atomic_store_explicit(&op->state, MRL_OP_FREE,
					      memory_order_relaxed);
	} else {
		/* Any live state to FREE (close makes it ORPHAN instead). */
		state = atomic_load_explicit(&op->state, memory_order_acquire);
		while (mrl_xfer_op_live(state) &&
		       !atomic_compare_exchange_weak_explicit(
			       &op->state, &state, MRL_OP_FREE,
			       memory_order_acq_rel, memory_order_acquire))
			;
		ours = mrl_xfer_op_live(state);
	}
	if (ours) {
		/* One pass over the op and its extras: release, free, push
		 * (a multi-recv op of a guarded CQ: defer the push). */
		struct mrl_op *last = op;
		struct mrl_cq_guard *guard;
		void (*completing)(void *) = atomic_load_explicit(
			&pool->test_completing, memory_order_acquire);

		if (completing)
			completing(pool->test_arg);

		for (;;) {
			for (uint16_t i = 0; i < last->nleases; i++)
				mrl_cache_lease_release(last->leases[i]);
			last->nleases = 0;
			if (!last->next)
				break;
			last = last->next;
			atomic_store_explicit(&last->state, MRL_OP_FREE,
					      memory_order_relaxed);
		}
		/* Another reader of the CQ may hold an earlier entry of this
		 * op and not have translated it yet: the op must not be
		 * reused before it did (mrl_xfer_cq_guard.c). */
		guard = op->flags & MRL_OP_MULTI_RECV ?
				atomic_load_explicit(&pool->defer,
						     memory_order_acquire) :
				NULL;
		if (!guard || !mrl_xfer_op_guard_defer(guard, op))
			mrl_xfer_op_put_chain(pool, op, last);
	} else if (state == MRL_OP_ORPHAN) {
		/* Its endpoint closed and released the leases; the pool is
		 * held by this CQ and never hands the op out again. */
		atomic_store_explicit(&op->state, MRL_OP_FREE,
				      memory_order_release);
	}
	return visible;
}

bool
mrl_xfer_op_guard_defer(struct mrl_cq_guard *g, struct mrl_op *op)
{
	struct mrl_op_pool *pool = op->pool;
	uint64_t old = atomic_load_explicit(&g->word, memory_order_relaxed);

	/* Before the op leaves every list: endpoint close must not see the
	 * pool settled without seeing this. */
	atomic_fetch_add_explicit(&pool->deferred, 1, memory_order_seq_cst);
	do {
		if (!(old >> 32)) {
			/* No reader counted (the finaliser read through
			 * the table of before the guard): nobody to wait
			 * for; the caller pushes it back. */
			atomic_fetch_sub_explicit(&pool->deferred, 1,
						  memory_order_relaxed);
			return false;
		}
		atomic_store_explicit(&op->free_next, (uint32_t) old,
				      memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(
		&g->word, &old, (old & ~(uint64_t) UINT32_MAX) | op->code,
		memory_order_acq_rel, memory_order_relaxed));
	return true;
}
