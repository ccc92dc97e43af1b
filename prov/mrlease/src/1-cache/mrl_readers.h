/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-thread reader records, statistic slots, and the read and write
 * sections over a cache's indexes (mrl_readers.c).
 *
 * Rules it keeps. A thread writes only its own record (its read-section
 * announcement, its hot slots, its counters); a writer raises the cache's
 * writer flag under cache->lock and waits until no record names the cache,
 * so a read section never sees an index change, and a reader that sees the
 * flag backs off to the mutex. Claiming a record never allocates (invalidate
 * may run inside an allocator hook). Counters only grow; a query summing
 * them with acquire loads sees every count a thread made before the ones it
 * read. Threads past MRL_CACHE_MAX_THREADS share the overflow record: it
 * never reads lock-free and adds atomically.
 */
#ifndef MRL_READERS_H
#define MRL_READERS_H

#include "mrl_cache_int.h"

/*
 * One per thread, in its own cache lines. `active` names the cache whose index
 * the thread is reading (a "big-reader" lock: the reader writes only its own
 * line; a writer waits for every record naming its cache). hot[] remembers the
 * last two entries found in the index per slot (two ways); a way is valid
 * while its gen equals the domain's generation, which every retire changes,
 * so a stale way is never followed.
 * Counters are written by the owner only (load + store, no locked op) and
 * summed by queries.
 */
struct mrl_reader {
	_Alignas(MRL_CACHELINE) _Atomic(struct mrl_cache *) active;
	atomic_bool in_use;
	bool shared;
	_Alignas(MRL_CACHELINE) struct mrl_thread t; /* hot slots, counters */
};

extern struct mrl_reader mrl_readers[MRL_CACHE_MAX_THREADS + 1];
extern atomic_uint mrl_readers_hwm; /* records ever claimed: [0, hwm) */
extern __thread struct mrl_reader *mrl_readers_self
	__attribute__((tls_model("initial-exec")));

/* First cache call on a thread: claim a record. */
struct mrl_reader *mrl_readers_attach(void);

static inline struct mrl_reader *
mrl_reader_self(void)
{
	struct mrl_reader *rec = mrl_readers_self;

	return MRL_LIKELY(rec != NULL) ? rec : mrl_readers_attach();
}

/* After fork: records of threads that are gone neither read nor count as
 * readers a writer must wait for. */
void mrl_readers_forget_others(void);

/* Release, as mrl_count_own: a query that sees this count sees every count
 * made before it (see "Statistics" in mrl_cache.h). */
static inline void
mrl_reader_count(struct mrl_reader *rec, unsigned slot, enum mrl_tcnt which,
		 uint64_t n)
{
	atomic_uint_least64_t *c = &rec->t.cnt[which][slot];

	if (MRL_UNLIKELY(rec->shared))
		atomic_fetch_add_explicit(c, n, memory_order_release);
	else
		atomic_store_explicit(
			c, atomic_load_explicit(c, memory_order_relaxed) + n,
			memory_order_release);
}

/* Every thread's count `which` on `slot` (acquire: counts read after this
 * one include what happened before the counts it saw). */
uint64_t mrl_readers_sum(unsigned slot, enum mrl_tcnt which);

/* ---- statistic slots ---------------------------------------------------- */

/* A slot of the per-thread counters for a cache or domain (the last one is
 * shared past MRL_CACHE_STAT_SLOTS - 1 users), with its counts now in
 * base[]. */
unsigned mrl_readers_slot_alloc(uint64_t base[MRL_TCNT_COUNT]);
void mrl_readers_slot_free(unsigned slot);

/* Hold (true) or release the slot lock around fork. */
void mrl_readers_fork_lock(bool lock);

/* ---- read and write sections -------------------------------------------- */

/* Enter a lock-free read of `cache`'s indexes; false if a writer is active
 * (the caller then reads under the mutex). */
static inline bool
mrl_readers_enter(struct mrl_reader *rec, struct mrl_cache *cache)
{
	if (MRL_UNLIKELY(rec->shared))
		return false;
	atomic_store_explicit(&rec->active, cache, memory_order_seq_cst);
	if (MRL_LIKELY(!atomic_load_explicit(&cache->writer,
					     memory_order_seq_cst)))
		return true;
	atomic_store_explicit(&rec->active, NULL, memory_order_release);
	return false;
}

static inline void
mrl_readers_exit(struct mrl_reader *rec)
{
	atomic_store_explicit(&rec->active, NULL, memory_order_release);
}

/* Exclusive access to the cache's indexes (cache->lock, then no reader
 * left inside a read section of the cache). */
void mrl_readers_write_enter(struct mrl_cache *cache);
void mrl_readers_write_exit(struct mrl_cache *cache);

#endif /* MRL_READERS_H */
