/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Why a miss missed, and the histograms of what misses registered (the
 * miss_* and reg_*_hist fields of struct fi_mrlease_stats).
 *
 * A domain keeps a small direct-mapped table of *ghosts*: for each entry
 * retired by eviction or invalidation, and each registration made for its
 * transfer only, the page it started at and why it is not in the index. A
 * miss whose extent starts at a page with a ghost takes that reason (and
 * clears the ghost); any other miss is cold. Writers store whole words
 * (in write sections, or on the miss path), readers load them without a
 * lock: a ghost overwritten by another range only makes a miss cold.
 * Nothing here is on the hit path.
 */
#ifndef MRL_CACHE_MISS_H
#define MRL_CACHE_MISS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_ext_mrlease.h>

/* In the order of the miss_* fields of struct fi_mrlease_stats. */
enum mrl_miss_reason {
	MRL_MISS_COLD,
	MRL_MISS_EVICTED,
	MRL_MISS_INVALIDATED,
	MRL_MISS_MONITOR,
	MRL_MISS_CHURN,
	MRL_MISS_NOT_RETAINED,
	MRL_MISS_REASONS
};

/* Ghosts per domain: a power of two. */
#define MRL_GHOSTS 256

struct mrl_ghosts {
	/* (first page number << 3) | reason, 0 for none. */
	atomic_uintptr_t slot[MRL_GHOSTS];
};

struct mrl_cache_domain;

/* Remember why the entry starting at `base` is gone. */
void mrl_cache_miss_note_gone(struct mrl_cache_domain *dom, uintptr_t base,
			      enum mrl_miss_reason why);

/* A miss of an extent starting at `lo`: count it under its reason. */
void mrl_cache_miss_count(struct mrl_cache_domain *dom, uintptr_t lo);

/* A registration of len bytes the cache made, whose fi_mr_reg took ns
 * (UINT64_MAX: not timed, size only). */
void mrl_cache_miss_reg_count(struct mrl_cache_domain *dom, size_t len,
			      uint64_t ns);

/* The bucket of value in a histogram starting at 2^shift. */
static inline unsigned
mrl_cache_miss_hist_bucket(uint64_t value, unsigned shift)
{
	unsigned log2 = value ? 63u - (unsigned) __builtin_clzll(value) : 0;

	if (log2 <= shift)
		return 0;
	log2 -= shift;
	return log2 < FI_MRLEASE_HIST_BUCKETS ? log2 :
						FI_MRLEASE_HIST_BUCKETS - 1;
}

#endif /* MRL_CACHE_MISS_H */
