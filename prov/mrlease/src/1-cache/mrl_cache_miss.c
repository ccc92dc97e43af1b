/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Miss reasons and registration histograms (mrl_cache_miss.h).
 */
#include "config.h"

#include "mrl_cache_int.h"

/* Ghosts are keyed by 4 KiB page whatever the page size: the entries'
 * bases are page-aligned, so equal bases give equal keys. */
#define MRL_GHOST_PAGE_SHIFT 12

static atomic_uintptr_t *
ghost_slot(struct mrl_cache_domain *dom, uintptr_t page)
{
	/* Fibonacci hashing: neighbouring pages land far apart. */
	uint64_t h = (uint64_t) page * 0x9e3779b97f4a7c15ull;

	return &dom->ghosts.slot[h >> (64 - 8)];
}

_Static_assert(MRL_GHOSTS == 256, "ghost_slot takes 8 bits");
_Static_assert(MRL_MISS_REASONS <= 8, "a reason fits in 3 bits");

void
mrl_cache_miss_note_gone(struct mrl_cache_domain *dom, uintptr_t base,
			 enum mrl_miss_reason why)
{
	uintptr_t page = base >> MRL_GHOST_PAGE_SHIFT;

	atomic_store_explicit(ghost_slot(dom, page), (page << 3) | why,
			      memory_order_relaxed);
}

void
mrl_cache_miss_count(struct mrl_cache_domain *dom, uintptr_t lo)
{
	uintptr_t page = lo >> MRL_GHOST_PAGE_SHIFT;
	atomic_uintptr_t *slot = ghost_slot(dom, page);
	uintptr_t ghost = atomic_load_explicit(slot, memory_order_relaxed);
	enum mrl_miss_reason why = MRL_MISS_COLD;

	if (ghost && ghost >> 3 == page) {
		why = (enum mrl_miss_reason)(ghost & 7);
		/* Counted once: the next miss there has a reason of its own. */
		atomic_compare_exchange_strong_explicit(slot, &ghost, 0,
							memory_order_relaxed,
							memory_order_relaxed);
	}
	MRL_STAT_ADD(dom, miss[why], 1);
}

void
mrl_cache_miss_reg_count(struct mrl_cache_domain *dom, size_t len, uint64_t ns)
{
	MRL_STAT_ADD(dom,
		     size_hist[mrl_cache_miss_hist_bucket(
			     len, FI_MRLEASE_SIZE_HIST_SHIFT)],
		     1);
	if (ns != UINT64_MAX)
		MRL_STAT_ADD(dom,
			     ns_hist[mrl_cache_miss_hist_bucket(
				     ns, FI_MRLEASE_NS_HIST_SHIFT)],
			     1);
}
