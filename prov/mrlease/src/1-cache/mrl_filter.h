/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The overlap filter of a cache (mrl_filter.c): per-page occupancy counts of
 * every live entry, so that an invalidate of pages no entry touches returns
 * after a few lock-free loads.
 *
 * Rules it keeps. It never answers "no" for a page a live entry touches (a
 * false "maybe" is allowed: saturated counts, addresses past its limit, a
 * failed allocation). Keys and nodes are installed before the write section
 * that counts an entry (mrl_filter_update with delta 0: under the cache's
 * flt_lock, allocating with no cache lock held); counts change only inside
 * write sections; lookups (mrl_filter_maybe) take no lock and never
 * allocate, so invalidate can use it from an allocator's purge path. Nodes
 * are freed only with the cache.
 */
#ifndef MRL_FILTER_H
#define MRL_FILTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct mrl_cache;
struct mrl_flt_dir;

/* The filter's state read by invalidate without a lock (in the cache's first
 * line); the install lock is the cache's flt_lock. */
struct mrl_filter {
	atomic_uint unfiltered; /* entries the filter cannot hold */
	atomic_bool broken; /* an allocation failed: always "maybe" */
	_Atomic(struct mrl_flt_dir *) dir; /* GiBs touched (NULL: none yet) */
};

/*
 * Walk the decomposition of an entry's [lo, hi): delta 0 installs the keys
 * and nodes the entry will count in (before the write section, no cache
 * lock held); +1/-1 counts it in or out (inside a write section).
 */
void mrl_filter_update(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi,
		       int delta);

/* False only if no live entry of the cache touches a page of [lo, hi). */
bool mrl_filter_maybe(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi);

/* Free every node (the cache is going). */
void mrl_filter_free(struct mrl_cache *cache);

#endif /* MRL_FILTER_H */
