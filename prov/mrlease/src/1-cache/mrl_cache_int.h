/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's internals shared by its units (the rules are
 * mrl_cache.h's): the cache and cache domain structures, an entry's state,
 * the shared statistics, and the process-wide parts that a memory monitor
 * and fork need (mrl_cache_barrier.c, mrl_cache_fork.c).
 *
 * Units: mrl_readers.c (per-thread reader records, statistic slots, read and
 * write sections), mrl_slab.c (entry slabs, the cache's allocations),
 * mrl_btree.c (the interval index), mrl_filter.c (the overlap filter),
 * mrl_cache_barrier.c (the barrier), mrl_cache_fork.c (fork),
 * mrl_cache_stats.c (statistics queries),
 * mrl_cache_lease.c (lookups, misses, pins) and mrl_cache.c (the policy:
 * references, retirement, capacity, caches and domains, invalidate).
 */
#ifndef MRL_CACHE_INT_H
#define MRL_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/providers/fi_log.h>

#include "mrl_assert.h"
#include "mrl_btree.h"
#include "mrl_cache.h"
#include "mrl_cache.inl"
#include "mrl_cache_miss.h"
#include "mrl_filter.h"

#define MRL_LIKELY(x)	__builtin_expect(!!(x), 1)
#define MRL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MRL_CACHELINE	64
#if defined(__x86_64__) || defined(__i386__)
#define MRL_CPU_RELAX() __builtin_ia32_pause()
#else
#define MRL_CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif

#define MRL_CWARN(cache, ...)                                           \
	do {                                                            \
		if ((cache)->prov)                                      \
			FI_WARN((cache)->prov, FI_LOG_MR, __VA_ARGS__); \
	} while (0)

/* reg->state: the state in the low bits, the pinned flag on top. */
enum mrl_reg_state {
	MRL_REG_NEW = 0, /* allocated, not indexed yet */
	MRL_REG_LIVE, /* in its domain's index */
	MRL_REG_RETIRED, /* out of the index for good */
	MRL_REG_CLOSED, /* its registration closed: a free entry */
	MRL_REG_STATE_MASK = 3,
	MRL_REG_LENT = 1 << 6, /* live, its index reference lent to
				* its leases (see lend_locked) */
	MRL_REG_PINNED = 1 << 7, /* held by a pin: never evicted */
};

_Static_assert(sizeof(struct mrl_registration) == 32, "hot part: 32 bytes");
_Static_assert(sizeof(struct mrl_reg_cold) == 16, "cold part: 16 bytes");
_Static_assert(offsetof(struct mrl_slab, reg) == MRL_CACHELINE,
	       "slab header: one line");

static inline struct mrl_cache_domain *
mrl_reg_domain(const struct mrl_registration *reg)
{
	return mrl_registration_slab(reg)->domain;
}

static inline struct mrl_reg_cold *
mrl_reg_cold(const struct mrl_registration *reg)
{
	return mrl_registration_cold(reg);
}

static inline unsigned
mrl_reg_state(const struct mrl_registration *reg)
{
	return reg->state & MRL_REG_STATE_MASK;
}

static inline void
mrl_reg_set_state(struct mrl_registration *reg, unsigned state)
{
	reg->state = (uint8_t) ((reg->state & MRL_REG_PINNED) | state);
}

/* Counters off the hit path: shared atomics, touched on misses/retires. */
struct mrl_slow_stats {
	atomic_uint_least64_t misses, registrations, deregistrations;
	atomic_uint_least64_t invalidations, retired_leased, evictions;
	atomic_uint_least64_t entries, registered_bytes;
	atomic_uint_least64_t monitor_invalidations, not_retained,
		deferred_closes;
	atomic_uint_least64_t miss[MRL_MISS_REASONS]; /* mrl_cache_miss.h */
	atomic_uint_least64_t size_hist[FI_MRLEASE_HIST_BUCKETS];
	atomic_uint_least64_t ns_hist[FI_MRLEASE_HIST_BUCKETS];
};

/* A miss between its registration and its insertion: an invalidate
 * overlapping it marks it stale so it never enters the index. */
struct mrl_pending {
	uintptr_t base, end;
	struct mrl_cache_domain *domain;
	bool stale;
	struct mrl_pending *next;
};

struct mrl_cache {
	/* Written by writers only, read by every reader. */
	_Alignas(MRL_CACHELINE) atomic_int writer;
	atomic_uintptr_t lo, hi; /* bounds of live and pending entries */
	atomic_uint pending_count;
	struct mrl_cache_domain *domains; /* alive domains (closed ones too) */
	/* Overlap filter: counts written under the lock, read by invalidate
	 * without any lock. */
	struct mrl_filter flt;

	/*
	 * lock: protects the domains' indexes, CLOCK hands, counts and
	 * generations, the domain list, the pending list and the index node
	 * reserve. Never held across a registrar call, a last reference drop,
	 * malloc/free, or a span resolver call.
	 */
	_Alignas(MRL_CACHELINE) pthread_mutex_t lock;
	struct mrl_pending *pending;
	size_t max_count, max_size;
	size_t huge_after; /* see mrl_arena.h; SIZE_MAX: never */
	size_t page_size;
	const struct fi_provider *prov;
	unsigned slot;
	uint64_t slot_base[MRL_TCNT_COUNT];
	uint64_t closed_hot[MRL_TCNT_COUNT]; /* freed domains' counters */
	/* Alive domains on the shared statistic slot, and the slot's counts
	 * when the first of them opened: the cache counts the slot from then
	 * until the last is freed, then keeps that in closed_hot. */
	unsigned shared_domains;
	uint64_t shared_base[MRL_TCNT_COUNT];
	atomic_uint_least64_t hits_seen; /* most hits a query reported */
	atomic_uint refs; /* creator + alive domains */
	/* Registrations a monitor invalidation dropped last, to be closed by
	 * another thread (a lock-free stack through their cold `next`). */
	_Atomic(struct mrl_registration *) deferred;
	/*
	 * deferred_lock: taking a deferred list of the cache (the shared one
	 * or a domain's) and counting what it took in each domain's `closing`
	 * happen together under it, so a domain close that finds the lists
	 * empty also finds every registration some thread took in `closing`;
	 * deferred_done is signalled when a domain's `closing` drops to zero.
	 * A leaf: nothing is called under it (no registrar call, no other
	 * lock, no allocation); pushes onto the lists never take it.
	 */
	pthread_mutex_t deferred_lock;
	pthread_cond_t deferred_done;
	struct mrl_cache *next; /* every cache (mrl_cache_fork.c) */
	struct mrl_btree_reserve spare; /* index node reserve (lock) */
	/* Installs filter keys and nodes (never with cache->lock held; never
	 * taken by invalidate); may take cache->lock inside it. */
	pthread_mutex_t flt_lock;
	struct mrl_slow_stats stats;
};

/* A domain's entry slabs and free entries (under the slab pool's lock). */
struct mrl_slab_pool {
	struct mrl_slab *slabs;
	struct mrl_registration *free;
	size_t entries;
};

struct mrl_cache_domain {
	/* First, alone on its line: what the inline hit path reads (the
	 * generation changes on every retire, under cache->lock). */
	struct mrl_cache_domain_hot hot;
	_Alignas(MRL_CACHELINE) struct mrl_cache *cache;
	struct mrl_cache_domain *next;
	/* Under cache->lock (readers: inside a read section). */
	struct mrl_btree index;
	uintptr_t hand; /* CLOCK: base last swept (if hand_set) */
	bool hand_set;
	size_t count, bytes;
	/* Entries whose index reference is lent (see lend_locked): written
	 * in write sections, read by the last-reference path without a lock,
	 * where 0 means "destroy, nothing to settle". */
	atomic_uint lent;
	bool closed;
	fi_mrlease_span_fn span;
	void *span_arg;

	struct mrl_domain_config cfg;
	uint64_t key_top, key_half;
	atomic_uint_least64_t next_key;
	uint64_t slot_base[MRL_TCNT_COUNT];
	atomic_uint refs; /* open handle + registrations alive */
	/* Its registrations taken off a deferred list by a thread that has
	 * not finished closing them (counted up under deferred_lock): what
	 * its close waits for (mrl_cache.h "Deferred closes"). */
	atomic_uint closing;
	unsigned fork_gen; /* mrl_cache_fork_gen when opened */
	struct mrl_slow_stats stats;
	atomic_uint_least64_t hits_seen; /* most hits a query reported */
	struct mrl_slab_pool pool;
	struct mrl_ghosts ghosts; /* why recent entries left (miss reasons) */
};

/* ---- policy shared by leases (mrl_cache.c) ----------------------------- */

/* Drop one reference; the last one goes out of line (mrl_registration_last:
 * closes the registration, or settles a lent index reference). Never under
 * a cache lock. */
static inline void
mrl_cache_ref_put(struct mrl_registration *reg)
{
	unsigned was =
		atomic_fetch_sub_explicit(&reg->refs, 1, memory_order_acq_rel);

	mrl_assert(was & MRL_REF_COUNT); /* never below zero */
	if ((was & MRL_REF_COUNT) == 1)
		mrl_registration_last(reg);
}

/* Drop the index's references of entries retired in a write section, after
 * it (their chain through the cold `next`). */
void mrl_cache_drop_chain(struct mrl_registration *chain);

/* Widen the cache's bounds of live and pending entries (under the lock). */
void mrl_cache_bounds_extend(struct mrl_cache *cache, uintptr_t lo,
			     uintptr_t hi);

/* In a write section: index a new entry, replacing (retiring onto *chain)
 * one at the same base; the node reserve holds what the insert takes. */
void mrl_cache_insert_locked(struct mrl_cache_domain *dom,
			     struct mrl_registration *e,
			     struct mrl_registration **chain);

/* In a write section: take a live entry out of the index onto *chain
 * (unless its index reference was lent). */
void mrl_cache_retire_locked(struct mrl_cache_domain *dom,
			     struct mrl_registration *e,
			     struct mrl_registration **chain);

/* In a write section: CLOCK-evict unleased, unpinned entries until `bytes`
 * and `count` are freed (or two rounds found nothing), onto *chain. */
void mrl_cache_evict_locked(struct mrl_cache_domain *dom, size_t bytes,
			    size_t count, struct mrl_registration **chain);

/* In a write section: evict down to the caps, and lend what stays over
 * them (mrl_cache.h "Capacity"). */
void mrl_cache_capacity_locked(struct mrl_cache_domain *dom,
			       struct mrl_registration **chain);

/* ---- statistics (mrl_cache_stats.c) ------------------------------------- */

/* Add n to one slow counter of the domain and of its cache (release). */
void mrl_cache_stat_add(struct mrl_cache_domain *dom, size_t off, int64_t n);
#define MRL_STAT_ADD(dom, field, n) \
	mrl_cache_stat_add(dom, offsetof(struct mrl_slow_stats, field), n)

/* ---- barrier (mrl_cache_barrier.c) and fork (mrl_cache_fork.c) ---------- */

/* Bumped in every child after fork: a domain opened under an older value is
 * the parent's, and its registrations are never closed by this process. */
extern atomic_uint mrl_cache_fork_gen;

/* Out-of-line lookups wait while the barrier is up (mrl_cache.h
 * "Barrier"): with no lock held and outside any read section. */
void mrl_cache_barrier_wait_slow(void);

static inline void
mrl_cache_barrier_wait(void)
{
	if (MRL_UNLIKELY(atomic_load_explicit(&mrl_cache_barrier,
					      memory_order_acquire)))
		mrl_cache_barrier_wait_slow();
}

/* Add a new cache to the process's list (installing the fork handlers the
 * first time), and take it out when it is freed. */
void mrl_cache_fork_add(struct mrl_cache *cache);
void mrl_cache_fork_remove(struct mrl_cache *cache);

/* fn(cache, arg) for every cache of the process, under the list's lock:
 * fn must not close a registration (a close may come back to this list). */
void mrl_caches_each(void (*fn)(struct mrl_cache *cache, void *arg),
		     void *arg);

#endif /* MRL_CACHE_INT_H */
