/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Entry slabs, and every allocation of the lease cache (rules in
 * mrl_slab.h).
 *
 * A domain's slabs grow with it (32 entries, then as many as it has, at
 * most MRL_SLAB_MAX: a small domain costs about 1.6 KB, a large one wastes
 * at most one slab). When a domain is freed, every entry of its slabs is
 * free; the slabs go to an idle list that the next domain to need entries
 * adopts. One small leaf lock (mrl_pool_lock) guards free lists, slab lists
 * and the idle list.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "mrl_arena.h"
#include "mrl_cache_int.h"
#include "mrl_slab.h"

/* ---- allocations -------------------------------------------------------- */

/* mrl_cache_fail_allocs(): the next n allocations below fail (tests). */
static atomic_uint mrl_fail_allocs;

void
mrl_cache_fail_allocs(unsigned n)
{
	atomic_store_explicit(&mrl_fail_allocs, n, memory_order_relaxed);
}

static inline bool
slab_injected_failure(void)
{
	unsigned v =
		atomic_load_explicit(&mrl_fail_allocs, memory_order_relaxed);

	while (MRL_UNLIKELY(v))
		if (atomic_compare_exchange_weak_explicit(
			    &mrl_fail_allocs, &v, v - 1, memory_order_relaxed,
			    memory_order_relaxed))
			return true;
	return false;
}

/* Never called under cache->lock or flt_lock. */
void *
mrl_slab_calloc(size_t size)
{
	if (slab_injected_failure())
		return NULL;
	return calloc(1, size);
}

/* Never called under cache->lock. */
void *
mrl_slab_alloc_lines(size_t size, size_t huge_after)
{
	if (slab_injected_failure())
		return NULL;
	return mrl_arena_alloc(size, huge_after);
}

/* ---- entry slabs -------------------------------------------------------- */

#define MRL_SLAB_MIN 32
#define MRL_SLAB_MAX 256
static pthread_mutex_t mrl_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrl_slab *mrl_slabs_idle;
static size_t mrl_slabs_idle_bytes;

static inline size_t
slab_bytes(uint32_t n)
{
	return sizeof(struct mrl_slab) + n * (sizeof(struct mrl_registration) +
					      sizeof(struct mrl_reg_cold));
}

/* Give `slab` to dom: its entries onto dom's free list (mrl_pool_lock). */
static void
slab_adopt(struct mrl_cache_domain *dom, struct mrl_slab *slab)
{
	slab->domain = dom;
	slab->next = dom->pool.slabs;
	dom->pool.slabs = slab;
	dom->pool.entries += slab->n;
	for (uint32_t i = slab->n; i-- > 0;) {
		mrl_reg_cold(&slab->reg[i])->next = dom->pool.free;
		dom->pool.free = &slab->reg[i];
	}
}

struct mrl_registration *
mrl_slab_entry_alloc(struct mrl_cache_domain *dom)
{
	struct mrl_slab_pool *pool = &dom->pool;
	struct mrl_registration *reg;
	struct mrl_slab *slab;
	uint32_t n;

	pthread_mutex_lock(&mrl_pool_lock);
	if (!pool->free && mrl_slabs_idle) {
		slab = mrl_slabs_idle;
		mrl_slabs_idle = slab->next;
		mrl_slabs_idle_bytes -= slab_bytes(slab->n);
		slab_adopt(dom, slab);
	}
	n = pool->entries < MRL_SLAB_MIN ? MRL_SLAB_MIN :
	    pool->entries > MRL_SLAB_MAX ? MRL_SLAB_MAX :
					   (uint32_t) pool->entries;
	while (!pool->free) {
		pthread_mutex_unlock(&mrl_pool_lock);
		slab = mrl_slab_alloc_lines(slab_bytes(n),
					    dom->cache->huge_after);
		if (!slab)
			return NULL;
		slab->n = n;
		for (uint32_t i = 0; i < n; i++) {
			atomic_init(&slab->reg[i].refs, 0);
			slab->reg[i].idx = (uint16_t) i;
		}
		pthread_mutex_lock(&mrl_pool_lock);
		slab_adopt(dom, slab);
	}
	reg = pool->free;
	pool->free = mrl_reg_cold(reg)->next;
	pthread_mutex_unlock(&mrl_pool_lock);
	/* A stale hot slot may still CAS refs (mrl_cache_lease.c): everything
	 * but refs is plain, refs is only ever accessed atomically. idx never
	 * changes. */
	mrl_assert(mrl_reg_state(reg) != MRL_REG_LIVE &&
		   mrl_reg_state(reg) != MRL_REG_RETIRED);
	reg->base = reg->end = 0;
	reg->desc = NULL;
	reg->slot = 0;
	reg->state = MRL_REG_NEW;
	mrl_reg_cold(reg)->mr = NULL;
	mrl_reg_cold(reg)->next = NULL;
	return reg;
}

size_t
mrl_cache_pool_idle_bytes(void)
{
	size_t n;

	pthread_mutex_lock(&mrl_pool_lock);
	n = mrl_slabs_idle_bytes;
	pthread_mutex_unlock(&mrl_pool_lock);
	return n;
}

void
mrl_slab_entry_free(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = mrl_reg_domain(reg);

	/* Never an entry still indexed, or retired with its registration
	 * open. */
	mrl_assert(mrl_reg_state(reg) == MRL_REG_NEW ||
		   mrl_reg_state(reg) == MRL_REG_CLOSED);
	pthread_mutex_lock(&mrl_pool_lock);
	mrl_reg_cold(reg)->next = dom->pool.free;
	dom->pool.free = reg;
	pthread_mutex_unlock(&mrl_pool_lock);
}

void
mrl_slab_domain_release(struct mrl_cache_domain *dom)
{
	struct mrl_slab *slab;

	pthread_mutex_lock(&mrl_pool_lock);
	while ((slab = dom->pool.slabs)) {
		dom->pool.slabs = slab->next;
		slab->domain = NULL;
		slab->next = mrl_slabs_idle;
		mrl_slabs_idle = slab;
		mrl_slabs_idle_bytes += slab_bytes(slab->n);
	}
	dom->pool.free = NULL;
	dom->pool.entries = 0;
	pthread_mutex_unlock(&mrl_pool_lock);
}

void
mrl_slab_fork_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&mrl_pool_lock);
	else
		pthread_mutex_unlock(&mrl_pool_lock);
}
