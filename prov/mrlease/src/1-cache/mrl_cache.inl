/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's inline hit path, private to the callers of the hot path
 * (the data path's posts and completions, the binding's MR handles, the
 * cache's own units through mrl_cache_int.h, and the tests and benchmarks
 * that lease directly): an entry's layout, the per-thread records a hit
 * reads and writes, and the inline functions over them. Fields are the
 * cache's; the rules are mrl_cache.h's.
 */
#ifndef MRL_CACHE_INL
#define MRL_CACHE_INL

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mrl_assert.h"
#include "mrl_cache.h"

/* ---- entries ------------------------------------------------------------ */

/*
 * One registration and, while live, its index entry. Its fields are the
 * cache's. mr and desc never change
 * after insertion, so any lease holder may read them without a lock.
 *
 * An entry is split in two parts kept in parallel arrays of a slab (struct
 * mrl_slab, one domain's): this 32-byte hot part, 32-byte aligned so it
 * never straddles a cache line (what a hit reads and writes: refs, base,
 * end, desc, slot), and a 16-byte cold part (mr, the retire/free chain)
 * found by index arithmetic. A registration pointer is its hot part. The
 * domain is the slab's, not stored per entry.
 */
struct mrl_registration {
	atomic_uint refs; /* index (while live) + leases, and
			   * MRL_REF_USED (CLOCK bit, set on hits) */
	uint8_t slot; /* internal (domain's counter slot) */
	uint8_t state; /* internal (live, retired; pinned) */
	uint16_t idx; /* internal (index in its slab) */
	uintptr_t base, end; /* registered [base, end) */
	void *desc; /* registrar's descriptor */
};

/* The cold part of an entry. */
struct mrl_reg_cold {
	void *mr; /* registrar's handle */
	struct mrl_registration *next; /* internal: retire chain, free list */
};

/*
 * A slab: a 64-byte header, then `n` hot parts, then `n` cold parts. Slabs
 * are kept for the process's life (the lock-free hit path may increment a
 * stale entry's count, so entry memory is never unmapped); a closed domain's
 * slabs go to a process-wide list that the next domain adopts.
 */
struct mrl_slab {
	struct mrl_cache_domain *domain; /* owner (set under the pool lock) */
	struct mrl_slab *next; /* the owner's slabs, or the idle list */
	uint32_t n; /* entries */
	/* n hot parts, then n cold */
	_Alignas(64) struct mrl_registration reg[];
};

static inline struct mrl_slab *
mrl_registration_slab(const struct mrl_registration *reg)
{
	return (struct mrl_slab *) (void *) ((char *) (uintptr_t) (reg -
								   reg->idx) -
					     offsetof(struct mrl_slab, reg));
}

static inline struct mrl_reg_cold *
mrl_registration_cold(const struct mrl_registration *reg)
{
	struct mrl_slab *slab = mrl_registration_slab(reg);

	return (struct mrl_reg_cold *) (void *) &slab->reg[slab->n] + reg->idx;
}

/* refs: the count in the low bits, the CLOCK "used" bit on top. */
#define MRL_REF_USED  (1u << 31)
#define MRL_REF_COUNT (MRL_REF_USED - 1)

/* ---- per-thread records: what a hit reads and writes ------------------- */

/*
 * The send loop's lease (the thread's last entry per domain, re-leased with
 * no lock and no index walk) and its release are inlined at the call sites;
 * everything else is out of line. Per thread: one hot slot and a row of
 * counters per statistic slot, written by the owner only (relaxed load +
 * store) and summed by queries. mrl_fast is NULL until the thread's first
 * out-of-line cache call, and stays NULL on threads past
 * MRL_CACHE_MAX_THREADS (they share one record and always go out of line).
 */
enum mrl_tcnt {
	MRL_TCNT_LOOKUPS,
	MRL_TCNT_MISSES, /* lookups that found nothing */
	MRL_TCNT_LEASES_OTHER, /* leases not taken by a hit */
	MRL_TCNT_LEASES_RELEASED,
	MRL_TCNT_INVALIDATIONS, /* used on a cache's slot */
	MRL_TCNT_BELOW_MIN, /* operands forwarded without a lookup */
	MRL_TCNT_COUNT
};

/* One way of a hot slot: valid while the domain's generation (changed by
 * every retire in it) is still `gen`; base/end are copies so the entry is not
 * read before it is leased. An empty way has end 0 and matches nothing. */
struct mrl_hot {
	struct mrl_registration *reg;
	uint64_t gen;
	uintptr_t base, end;
};

/* Ways per hot slot (both in one 64-byte line): way 0 the last entry found
 * in the index, way 1 the one before. */
#define MRL_HOT_WAYS 2

struct mrl_thread {
	struct mrl_hot hot[MRL_CACHE_STAT_SLOTS][MRL_HOT_WAYS];
	atomic_uint_least64_t cnt[MRL_TCNT_COUNT][MRL_CACHE_STAT_SLOTS];
};

extern __thread struct mrl_thread *mrl_fast
	__attribute__((tls_model("initial-exec")));
/* The same record for the acquire path, but never NULL: an empty record
 * (no hot slot matches) until the thread has its own. */
extern __thread struct mrl_thread *mrl_fast_hot
	__attribute__((tls_model("initial-exec")));
/* The record threads past MRL_CACHE_MAX_THREADS share (counted with
 * atomic adds, never read by a hit). */
extern struct mrl_thread *const mrl_thread_shared;

/* A per-thread counter: written by its thread only, read by stats with
 * acquire loads. On x86-64 one unlocked add to memory (a single aligned
 * store, so readers see the old or the new value; stores are ordered, as a
 * release); elsewhere, and under ThreadSanitizer, a relaxed load and a
 * release store, so a query that sees a count sees what the thread counted
 * before it (see "Statistics"). */
static inline void
mrl_count_own_add(atomic_uint_least64_t *c, uint64_t n)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	__asm__ __volatile__("addq %1, %0"
			     : "+m"(*(volatile uint64_t *) c)
			     : "er"(n));
#else
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_release);
#endif
}

static inline void
mrl_count_own(atomic_uint_least64_t *c)
{
	mrl_count_own_add(c, 1);
}

/* The first line of every cache domain: what the inline hit path reads. */
struct mrl_cache_domain_hot {
	atomic_uint_least64_t gen; /* changes on every retire */
	unsigned slot; /* statistic and hot slot */
	/* Registrations the monitor dropped, closed by the next settle: see
	 * "Deferred closes" (a lock-free stack through their cold `next`). */
	_Atomic(struct mrl_registration *) deferred;
};

/* ---- the hit path ------------------------------------------------------- */

/* Out-of-line parts of the inline functions below (not for direct use). */
int mrl_cache_acquire_slow(struct mrl_cache_domain *domain, uintptr_t start,
			   uintptr_t end, struct mrl_registration **reg);
int mrl_cache_acquire_stale(struct mrl_cache_domain *domain, uintptr_t start,
			    uintptr_t end, struct mrl_registration *stale,
			    struct mrl_registration **reg);
void mrl_cache_lease_count_release(struct mrl_registration *reg);
void mrl_registration_last(struct mrl_registration *reg);
void mrl_cache_domain_settle_slow(struct mrl_cache_domain *domain);

/*
 * The hit path: the entry of the first hot way covering the operand (way 0,
 * else way 1), leased by increment-if-not-zero (slab memory is never
 * unmapped, so a stale way costs a wasted increment), kept only if the
 * domain's generation is unchanged after the increment (no retire since that
 * way was filled: the reference is on that live entry). Anything else goes
 * out of line.
 */
static inline int
mrl_cache_acquire(struct mrl_cache_domain *domain, uintptr_t start,
		  uintptr_t end, struct mrl_registration **out)
{
	struct mrl_cache_domain_hot *dh =
		(struct mrl_cache_domain_hot *) (void *) domain;
	struct mrl_thread *t = mrl_fast_hot;
	struct mrl_registration *reg;
	struct mrl_hot *hot;
	unsigned refs, slot;

	if (__builtin_expect(end <= start, 0) ||
	    __builtin_expect(atomic_load_explicit(&mrl_cache_barrier,
						  memory_order_acquire) != 0,
			     0))
		goto slow;
	slot = dh->slot;
	hot = &t->hot[slot][0];
	if (!(hot->base <= start && end <= hot->end)) {
		hot = &t->hot[slot][1];
		if (!(hot->base <= start && end <= hot->end))
			goto slow;
	}
	reg = hot->reg;
	refs = atomic_load_explicit(&reg->refs, memory_order_relaxed);
	if (__builtin_expect(!(refs & MRL_REF_COUNT), 0) ||
	    !atomic_compare_exchange_weak_explicit(
		    &reg->refs, &refs, (refs + 1) | MRL_REF_USED,
		    memory_order_acquire, memory_order_relaxed))
		goto slow;
	if (__builtin_expect(
		    atomic_load_explicit(&dh->gen, memory_order_acquire) !=
			    hot->gen,
		    0))
		return mrl_cache_acquire_stale(domain, start, end, reg, out);
	mrl_count_own(&t->cnt[MRL_TCNT_LOOKUPS][slot]);
	*out = reg;
	return 0;
slow:
	return mrl_cache_acquire_slow(domain, start, end, out);
}

static inline void
mrl_cache_lease_release(struct mrl_registration *reg)
{
	struct mrl_thread *t = mrl_fast;
	unsigned was;

	if (__builtin_expect(t != NULL, 1))
		mrl_count_own(&t->cnt[MRL_TCNT_LEASES_RELEASED][reg->slot]);
	else
		mrl_cache_lease_count_release(reg);
	was = atomic_fetch_sub_explicit(&reg->refs, 1, memory_order_acq_rel);
	mrl_assert(was & MRL_REF_COUNT); /* never below zero */
	if ((was & MRL_REF_COUNT) == 1)
		mrl_registration_last(reg);
}

/* The calling thread's record, claimed now if it has none (NULL past
 * MRL_CACHE_MAX_THREADS): out of line. */
struct mrl_thread *mrl_cache_thread_attach(void);

/*
 * n operands the data path forwarded without a lookup, each without a
 * descriptor and below FI_MRLEASE_MIN_SIZE (miss_below_min), counted in
 * the thread's record, claimed first if it has none; past
 * MRL_CACHE_MAX_THREADS in the shared one, atomically. Its caller gets a
 * frame (the call): posts that only tail-call the provider count from a
 * twin of their own.
 */
static inline void
mrl_cache_count_below_min(struct mrl_cache_domain *domain, uint64_t n)
{
	struct mrl_cache_domain_hot *dh =
		(struct mrl_cache_domain_hot *) (void *) domain;
	struct mrl_thread *t = mrl_fast;

	if (__builtin_expect(t == NULL, 0))
		t = mrl_cache_thread_attach();
	if (__builtin_expect(t != NULL, 1))
		mrl_count_own_add(&t->cnt[MRL_TCNT_BELOW_MIN][dh->slot], n);
	else
		atomic_fetch_add_explicit(
			&mrl_thread_shared->cnt[MRL_TCNT_BELOW_MIN][dh->slot],
			n, memory_order_release);
}

static inline void
mrl_cache_domain_settle(struct mrl_cache_domain *domain)
{
	struct mrl_cache_domain_hot *dh =
		(struct mrl_cache_domain_hot *) (void *) domain;

	if (__builtin_expect(
		    atomic_load_explicit(&mrl_cache_barrier,
					 memory_order_relaxed) != 0 ||
			    atomic_load_explicit(&dh->deferred,
						 memory_order_relaxed) != NULL,
		    0))
		mrl_cache_domain_settle_slow(domain);
}

/* References held on a registration (index unless lent + leases), for tests
 * and stats. */
static inline unsigned
mrl_registration_refs(const struct mrl_registration *reg)
{
	return atomic_load_explicit((atomic_uint *) &reg->refs,
				    memory_order_relaxed) &
	       MRL_REF_COUNT;
}

static inline void *
mrl_registration_desc(const struct mrl_registration *reg)
{
	return reg->desc;
}

static inline void *
mrl_registration_mr(const struct mrl_registration *reg)
{
	return mrl_registration_cold(reg)->mr;
}

#endif /* MRL_CACHE_INL */
