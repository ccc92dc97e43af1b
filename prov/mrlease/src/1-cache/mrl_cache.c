/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's policy (rules in mrl_cache.h): references and their last
 * drop, the deferred closes of a monitor, retirement, capacity (CLOCK
 * eviction and lent index references), caches and domains, invalidate and
 * pins. Lookups and misses are mrl_cache_lease.c's.
 *
 * Rules it keeps. Every index change happens in a write section
 * (mrl_readers.h); under it nothing calls the registrar, drops a reference
 * that could be the last, allocates or calls the application: retired
 * entries are chained and their references dropped after the section. A
 * registration closes exactly once, on the thread dropping its last
 * reference, unless a monitor's invalidation dropped it (then its domain's
 * next settle, or a drain, closes it) or its domain is a parent's inherited
 * across fork (forgotten).
 * An entry is retired once: it leaves the index, the filter and the counts
 * together, and the domain's generation moves on, so no hot way leases it
 * again.
 *
 * The other units: mrl_readers.c (reader records, sections), mrl_slab.c
 * (entries, allocations), mrl_btree.c (the index), mrl_filter.c (the overlap
 * filter), mrl_cache_barrier.c (the barrier), mrl_cache_fork.c (fork),
 * mrl_cache_stats.c (queries), mrl_cache_lease.c (lookups, misses, pins).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "mrl_readers.h"
#include "mrl_slab.h"

/* ---- generations -------------------------------------------------------- */

/* Unique across domains, so a hot slot filled from one domain can never
 * validate against another that reuses its statistic slot. */
static atomic_uint_least64_t mrl_gen_source = 1;

static inline uint64_t
next_gen(void)
{
	uint64_t gen = atomic_fetch_add_explicit(&mrl_gen_source, 1,
						 memory_order_relaxed);

	return gen + 1;
}

/* ---- node reserve ------------------------------------------------------- */

/* Give back reserve nodes beyond a small stock (after mass removals), outside
 * the lock. Never called from invalidate, which must not call free(). */
static void
reserve_trim(struct mrl_cache *cache, unsigned keep)
{
	struct mrl_btnode *chain;

	pthread_mutex_lock(&cache->lock);
	chain = mrl_btree_reserve_trim(&cache->spare, keep);
	pthread_mutex_unlock(&cache->lock);
	mrl_btree_free_chain(chain);
}
/* ---- references --------------------------------------------------------- */

static void cache_unref(struct mrl_cache *cache);

/* The domain lives until closed and its last registration is gone, because
 * closing a registration needs its registrar. */
static void
cache_domain_unref(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_cache_domain **p;
	unsigned was =
		atomic_fetch_sub_explicit(&dom->refs, 1, memory_order_acq_rel);

	mrl_assert(was > 0); /* never below zero */
	if (was != 1)
		return;
	mrl_readers_write_enter(cache);
	for (p = &cache->domains; *p != dom; p = &(*p)->next)
		;
	*p = dom->next;
	/* Every lease of the domain was counted released before its last
	 * registration went: its counts are final. The shared slot is kept
	 * once, when the cache's last domain on it goes (per domain, the
	 * same counts would add up twice). */
	if (dom->hot.slot != MRL_CACHE_STAT_SLOTS - 1) {
		for (int i = 0; i < MRL_TCNT_COUNT; i++)
			cache->closed_hot[i] +=
				mrl_readers_sum(dom->hot.slot, i) -
				dom->slot_base[i];
	} else if (!--cache->shared_domains) {
		for (int i = 0; i < MRL_TCNT_COUNT; i++)
			cache->closed_hot[i] +=
				mrl_readers_sum(dom->hot.slot, i) -
				cache->shared_base[i];
	}
	mrl_readers_write_exit(cache);
	mrl_readers_slot_free(dom->hot.slot);
	mrl_slab_domain_release(dom);
	free(dom);
	cache_unref(cache);
}

/* Close a registration nobody references any more: outside every cache lock,
 * because the registrar's close may re-enter an allocator hook. */
static void defer_push(struct mrl_registration *reg);

static void
registration_destroy(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = mrl_reg_domain(reg);
	int ret = 0;

	/* Closed once: never indexed (a lost race, a stale or transient miss)
	 * or retired, nothing referencing it, not closed before. */
	mrl_assert(mrl_reg_state(reg) == MRL_REG_NEW ||
		   mrl_reg_state(reg) == MRL_REG_RETIRED);
	mrl_assert(!(atomic_load_explicit(&reg->refs, memory_order_relaxed) &
		     MRL_REF_COUNT));
	/* Inherited across fork: the parent's to close, not ours. */
	bool ours = MRL_LIKELY(dom->fork_gen ==
			       atomic_load_explicit(&mrl_cache_fork_gen,
						    memory_order_relaxed));

	if (ours)
		ret = dom->cfg.registrar->close(dom->cfg.ctx,
						mrl_reg_cold(reg)->mr);
	if (MRL_UNLIKELY(ret)) {
		/* The provider still has it open: forgetting it would leave
		 * its MR open for good (and its domain unclosable). It is
		 * closed again by the domain's next settle, at the latest its
		 * close. */
		MRL_CWARN(dom->cache,
			  "closing a cached registration: %s; "
			  "retried later\n",
			  fi_strerror(-ret));
		defer_push(reg);
		return;
	}
	if (ours && dom->cfg.registrar->released)
		dom->cfg.registrar->released(dom->cfg.ctx, reg->base, reg->end);
	mrl_reg_set_state(reg, MRL_REG_CLOSED);
	MRL_STAT_ADD(dom, deregistrations, 1);
	MRL_STAT_ADD(dom, registered_bytes, -(int64_t) (reg->end - reg->base));
	mrl_slab_entry_free(reg);
	cache_domain_unref(dom);
}

/*
 * The count of `reg` reached zero. Usually it was retired and the
 * registration closes here. If its index reference was lent (lend_locked),
 * it is still indexed and its last lease just went: nothing can lease a
 * zero count, so this thread alone settles it, in a write section: the
 * index takes its reference back, then the domain is evicted down to its
 * caps (this entry like any other unleased one); what that retires closes
 * here, after the lock. A domain with nothing lent skips the lock:
 * lending counts `lent` up before it lowers the count this thread saw
 * reach zero.
 */
static void
reference_last(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = mrl_reg_domain(reg);
	struct mrl_registration *chain = NULL;

	if (MRL_LIKELY(
		    !atomic_load_explicit(&dom->lent, memory_order_acquire))) {
		registration_destroy(reg);
		return;
	}
	mrl_readers_write_enter(dom->cache);
	if (!(reg->state & MRL_REG_LENT)) {
		/* Never lent, or retired since (which ended the loan). */
		mrl_readers_write_exit(dom->cache);
		registration_destroy(reg);
		return;
	}
	reg->state &= (uint8_t) ~MRL_REG_LENT;
	atomic_fetch_sub_explicit(&dom->lent, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&reg->refs, 1, memory_order_relaxed);
	mrl_cache_capacity_locked(dom, &chain);
	mrl_readers_write_exit(dom->cache);
	mrl_cache_drop_chain(chain);
}

void
mrl_registration_last(struct mrl_registration *reg)
{
	reference_last(reg);
}

/* A monitor's drop of a last reference: onto the deferred list (the
 * registration's cold `next` is free once it left its retire chain).
 * Returns whether that is the cache's shared list. */
static bool
ref_put_deferred(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = mrl_reg_domain(reg);
	unsigned was =
		atomic_fetch_sub_explicit(&reg->refs, 1, memory_order_acq_rel);

	mrl_assert(was & MRL_REF_COUNT); /* never below zero */
	if ((was & MRL_REF_COUNT) != 1)
		return false;
	MRL_STAT_ADD(dom, deferred_closes, 1);
	defer_push(reg);
	return dom->cfg.free_threaded;
}

/* The list a deferred registration of dom waits on (see "Deferred closes"
 * in mrl_cache.h). */
static _Atomic(struct mrl_registration *) *
defer_list(struct mrl_cache_domain *dom)
{
	return dom->cfg.free_threaded ? &dom->cache->deferred :
					&dom->hot.deferred;
}

/* Onto its deferred list: lock-free, allocates nothing. */
static void
defer_push(struct mrl_registration *reg)
{
	_Atomic(struct mrl_registration *) *list =
		defer_list(mrl_reg_domain(reg));
	struct mrl_registration *head;

	head = atomic_load_explicit(list, memory_order_relaxed);
	do
		mrl_reg_cold(reg)->next = head;
	while (!atomic_compare_exchange_weak_explicit(
		list, &head, reg, memory_order_release, memory_order_relaxed));
}

/* Take a list of the cache whole (NULL if empty: one load), counting each
 * registration in its domain's `closing` as it leaves the list, under
 * deferred_lock: a domain close that then finds the list empty sees in
 * `closing` what went to another thread (see domain_settle_all). */
static struct mrl_registration *
defer_take(struct mrl_cache *cache, _Atomic(struct mrl_registration *) *list)
{
	struct mrl_registration *chain, *reg;

	if (MRL_LIKELY(!atomic_load_explicit(list, memory_order_relaxed)))
		return NULL;
	pthread_mutex_lock(&cache->deferred_lock);
	chain = atomic_exchange_explicit(list, NULL, memory_order_acquire);
	for (reg = chain; reg; reg = mrl_reg_cold(reg)->next)
		atomic_fetch_add_explicit(&mrl_reg_domain(reg)->closing, 1,
					  memory_order_relaxed);
	pthread_mutex_unlock(&cache->deferred_lock);
	return chain;
}

/* Move a deferred list whole onto *chain (to be closed after the lock that
 * keeps the list's owner found). */
static void
defer_splice(struct mrl_cache *cache, _Atomic(struct mrl_registration *) *list,
	     struct mrl_registration **chain)
{
	struct mrl_registration *reg, *next;

	for (reg = defer_take(cache, list); reg; reg = next) {
		next = mrl_reg_cold(reg)->next;
		mrl_reg_cold(reg)->next = *chain;
		*chain = reg;
	}
}

/* One registration taken by defer_take is closed (or back on a list, its
 * close refused): a domain close waiting for the last one wakes. */
static void
defer_done(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	unsigned was = atomic_fetch_sub_explicit(&dom->closing, 1,
						 memory_order_acq_rel);

	mrl_assert(was > 0); /* never below zero */
	if (was != 1)
		return;
	pthread_mutex_lock(&cache->deferred_lock);
	pthread_cond_broadcast(&cache->deferred_done);
	pthread_mutex_unlock(&cache->deferred_lock);
}

/* Close a chain taken from deferred lists. */
static void
defer_close(struct mrl_registration *reg)
{
	struct mrl_registration *next;
	struct mrl_cache_domain *dom;

	for (; reg; reg = next) {
		next = mrl_reg_cold(reg)->next;
		dom = mrl_reg_domain(reg);
		/* The close may drop the domain's last reference but for
		 * this one, which keeps `closing` there to count down. */
		atomic_fetch_add_explicit(&dom->refs, 1, memory_order_relaxed);
		registration_destroy(reg);
		defer_done(dom);
		cache_domain_unref(dom);
	}
}

void
mrl_cache_close_deferred_shared(struct mrl_cache *cache)
{
	defer_close(defer_take(cache, &cache->deferred));
}

void
mrl_cache_close_deferred(struct mrl_cache *cache)
{
	struct mrl_registration *chain = NULL;
	struct mrl_cache_domain *dom;

	/* Taken under the lock, which keeps the domain list; closed after
	 * it (a registration on a list keeps its domain alive). */
	pthread_mutex_lock(&cache->lock);
	for (dom = cache->domains; dom; dom = dom->next)
		defer_splice(cache, &dom->hot.deferred, &chain);
	pthread_mutex_unlock(&cache->lock);
	defer_close(chain);
	mrl_cache_close_deferred_shared(cache);
}

/* The monitor's events applied, then the domain's own list and the cache's
 * shared one closed, on this thread. */
void
mrl_cache_domain_settle_slow(struct mrl_cache_domain *dom)
{
	mrl_cache_barrier_wait();
	defer_close(defer_take(dom->cache, &dom->hot.deferred));
	mrl_cache_close_deferred_shared(dom->cache);
}

/* Domain closes that waited for another thread's deferred closes. */
static atomic_uint_least64_t mrl_close_waits;

uint64_t
mrl_cache_close_waits(void)
{
	return atomic_load_explicit(&mrl_close_waits, memory_order_relaxed);
}

/*
 * Before and after the provider's domain close, which refuses while an MR
 * of the domain is open (and some providers' cannot be retried): settle,
 * then wait until every deferred registration of the domain that another
 * thread took (a closer, another domain's settle) is closed too. Taking a
 * list and counting it in `closing` happen under deferred_lock, so once
 * this thread's settle found the lists empty, `closing` read under that
 * lock holds everything it did not take. No lock is held across a close:
 * the others close theirs outside it and count down after. A close another
 * thread had refused is back on a list: the second settle tries it once.
 */
static void
domain_settle_all(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	bool waited = false;

	mrl_cache_domain_settle_slow(dom);
	pthread_mutex_lock(&cache->deferred_lock);
	while (atomic_load_explicit(&dom->closing, memory_order_acquire)) {
		if (!waited)
			atomic_fetch_add_explicit(&mrl_close_waits, 1,
						  memory_order_relaxed);
		waited = true;
		pthread_cond_wait(&cache->deferred_done, &cache->deferred_lock);
	}
	pthread_mutex_unlock(&cache->deferred_lock);
	if (waited)
		mrl_cache_domain_settle_slow(dom);
}

/* Drop the index's references of entries retired under the lock, after it
 * was released; `defer`: from a monitor, which never closes. Returns
 * whether it put a registration on the cache's shared list. */
static bool
drop_chain_as(struct mrl_registration *chain, bool defer)
{
	struct mrl_registration *next;
	bool shared = false;

	for (; chain; chain = next) {
		next = mrl_reg_cold(chain)->next;
		/* The index's reference is still on it. */
		mrl_assert(mrl_reg_state(chain) == MRL_REG_RETIRED);
		if ((atomic_load_explicit(&chain->refs, memory_order_relaxed) &
		     MRL_REF_COUNT) > 1)
			MRL_STAT_ADD(mrl_reg_domain(chain), retired_leased, 1);
		if (defer)
			shared |= ref_put_deferred(chain);
		else
			mrl_cache_ref_put(chain);
	}
	return shared;
}

void
mrl_cache_drop_chain(struct mrl_registration *chain)
{
	drop_chain_as(chain, false);
}

/* ---- index maintenance (in write sections) ------------------------------ */

/* A live entry leaving the index: ends a loan of its index reference.
 * Returns whether there was one (then the index holds no reference to drop:
 * the entry's last lease, or the thread settling a zero count, closes it). */
static bool
unlend_locked(struct mrl_cache_domain *dom, struct mrl_registration *e)
{
	unsigned was;

	if (!(e->state & MRL_REG_LENT))
		return false;
	e->state &= (uint8_t) ~MRL_REG_LENT;
	was = atomic_fetch_sub_explicit(&dom->lent, 1, memory_order_relaxed);
	mrl_assert(was > 0);
	if (atomic_load_explicit(&e->refs, memory_order_relaxed) &
	    MRL_REF_COUNT)
		MRL_STAT_ADD(dom, retired_leased, 1);
	return true;
}

/* Take a live entry out of the index and chain it for mrl_cache_drop_chain
 * (unless its index reference was lent). */
static void
retire_locked(struct mrl_cache_domain *dom, struct mrl_registration *e,
	      struct mrl_registration **chain)
{
	bool lent;

	/* Retired once, and only what the index holds. */
	mrl_assert(mrl_reg_state(e) == MRL_REG_LIVE);
	mrl_assert(mrl_btree_find_base(&dom->index, e->base) == e);
	mrl_assert(dom->count > 0 && dom->bytes >= e->end - e->base);
	lent = unlend_locked(dom, e);
	mrl_btree_remove(&dom->index, &dom->cache->spare, e->base);
	mrl_reg_set_state(e, MRL_REG_RETIRED);
	mrl_filter_update(dom->cache, e->base, e->end, -1);
	dom->count--;
	dom->bytes -= e->end - e->base;
	atomic_store_explicit(&dom->hot.gen, next_gen(), memory_order_release);
	MRL_STAT_ADD(dom, entries, -1);
	if (lent)
		return;
	mrl_reg_cold(e)->next = *chain;
	*chain = e;
}

void
mrl_cache_bounds_extend(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi)
{
	if (lo < atomic_load_explicit(&cache->lo, memory_order_relaxed))
		atomic_store_explicit(&cache->lo, lo, memory_order_relaxed);
	if (hi > atomic_load_explicit(&cache->hi, memory_order_relaxed))
		atomic_store_explicit(&cache->hi, hi, memory_order_relaxed);
}

/* Index a new entry, replacing one at the same base (rule 2: track). */
void
mrl_cache_insert_locked(struct mrl_cache_domain *dom,
			struct mrl_registration *e,
			struct mrl_registration **chain)
{
	struct mrl_registration *old =
		mrl_btree_find_base(&dom->index, e->base);

	mrl_assert(mrl_reg_state(e) == MRL_REG_NEW && e->end > e->base);
	if (old)
		retire_locked(dom, old, chain);
	mrl_btree_insert(&dom->index, &dom->cache->spare, e);
	mrl_reg_set_state(e, MRL_REG_LIVE);
	mrl_filter_update(dom->cache, e->base, e->end, +1);
	dom->count++;
	dom->bytes += e->end - e->base;
	MRL_STAT_ADD(dom, entries, 1);
	mrl_cache_bounds_extend(dom->cache, e->base, e->end);
}

/* Whether a lease holds live entry `e` (its count less the index's
 * reference, unless that is lent). */
static inline bool
reg_leased(const struct mrl_registration *e)
{
	unsigned n = atomic_load_explicit(&e->refs, memory_order_relaxed) &
		     MRL_REF_COUNT;

	return n > ((e->state & MRL_REG_LENT) ? 0u : 1u);
}

/*
 * CLOCK sweep over the index in address order, from where the last sweep
 * stopped (the hand, a base) and wrapping: leased or pinned entries are
 * skipped, entries hit since the last pass lose their used bit (a second
 * chance), the others are retired until `bytes` and `count` are freed (or
 * two rounds found nothing). No list per entry: the index is the clock face.
 */
void
mrl_cache_evict_locked(struct mrl_cache_domain *dom, size_t bytes, size_t count,
		       struct mrl_registration **chain)
{
	size_t steps = 2 * dom->count + 1, freed_bytes = 0, freed = 0;
	struct mrl_registration *e;

	while (steps-- && (freed_bytes < bytes || freed < count)) {
		e = mrl_btree_successor(&dom->index, dom->hand, dom->hand_set);
		if (!e)
			e = mrl_btree_successor(&dom->index, 0, false);
		if (!e)
			break;
		dom->hand = e->base;
		dom->hand_set = true;
		if ((e->state & MRL_REG_PINNED) || reg_leased(e) ||
		    (atomic_fetch_and_explicit(&e->refs, ~MRL_REF_USED,
					       memory_order_relaxed) &
		     MRL_REF_USED))
			continue;
		freed_bytes += e->end - e->base;
		freed++;
		retire_locked(dom, e, chain);
		MRL_STAT_ADD(dom, evictions, 1);
		mrl_cache_miss_note_gone(dom, e->base, MRL_MISS_EVICTED);
	}
}

static inline bool
over_cap(const struct mrl_cache_domain *dom)
{
	return dom->count > dom->cache->max_count ||
	       dom->bytes > dom->cache->max_size;
}

/*
 * The domain is over a cap and every entry the sweep could evict is gone:
 * the index lends its reference of each leased, unpinned entry to the
 * entry's leases (the count drops by one, so it reaches zero, and takes the
 * release path's existing out-of-line branch, when the last lease goes;
 * reference_last then settles it). Entries found unleased meanwhile are
 * evicted while the domain is still over. This costs the release path
 * nothing unless the domain is over a cap.
 */
static void
lend_locked(struct mrl_cache_domain *dom, struct mrl_registration **chain)
{
	struct mrl_registration *e;
	uintptr_t base;
	unsigned refs;

	for (e = mrl_btree_successor(&dom->index, 0, false); e && over_cap(dom);
	     e = mrl_btree_successor(&dom->index, base, true)) {
		base = e->base;
		if (e->state & (MRL_REG_PINNED | MRL_REG_LENT))
			continue;
		/* Counted first: a count seen at zero implies lent != 0. */
		atomic_fetch_add_explicit(&dom->lent, 1, memory_order_relaxed);
		e->state |= MRL_REG_LENT;
		refs = atomic_load_explicit(&e->refs, memory_order_relaxed);
		while ((refs & MRL_REF_COUNT) > 1 &&
		       !atomic_compare_exchange_weak_explicit(
			       &e->refs, &refs, refs - 1, memory_order_release,
			       memory_order_relaxed))
			;
		if ((refs & MRL_REF_COUNT) > 1)
			continue;
		/* Its last lease went: not lent, evicted. */
		e->state &= (uint8_t) ~MRL_REG_LENT;
		atomic_fetch_sub_explicit(&dom->lent, 1, memory_order_relaxed);
		retire_locked(dom, e, chain);
		MRL_STAT_ADD(dom, evictions, 1);
		mrl_cache_miss_note_gone(dom, e->base, MRL_MISS_EVICTED);
	}
}

/* Evict down to the caps, and lend what stays over them. */
void
mrl_cache_capacity_locked(struct mrl_cache_domain *dom,
			  struct mrl_registration **chain)
{
	struct mrl_cache *cache = dom->cache;
	size_t count = 0, bytes = 0;

	if (dom->count > cache->max_count)
		count = dom->count - cache->max_count;
	if (dom->bytes > cache->max_size)
		bytes = dom->bytes - cache->max_size;
	if (!count && !bytes)
		return;
	mrl_cache_evict_locked(dom, bytes, count, chain);
	if (over_cap(dom))
		lend_locked(dom, chain);
}

/* ---- cache -------------------------------------------------------------- */

int
mrl_cache_create(const struct mrl_cache_config *config,
		 struct mrl_cache **cache_out)
{
	struct mrl_cache *cache;
	long page;
	int ret;

	cache = aligned_alloc(MRL_CACHELINE,
			      (sizeof(*cache) + MRL_CACHELINE - 1) &
				      ~(size_t) (MRL_CACHELINE - 1));
	if (!cache)
		return -FI_ENOMEM;
	memset(cache, 0, sizeof(*cache));
	ret = pthread_mutex_init(&cache->lock, NULL);
	if (ret) {
		ret = -ret;
		goto err_free;
	}
	ret = pthread_mutex_init(&cache->flt_lock, NULL);
	if (ret) {
		ret = -ret;
		goto err_lock;
	}
	ret = pthread_mutex_init(&cache->deferred_lock, NULL);
	if (ret) {
		ret = -ret;
		goto err_flt_lock;
	}
	ret = pthread_cond_init(&cache->deferred_done, NULL);
	if (ret) {
		ret = -ret;
		goto err_deferred_lock;
	}
	page = sysconf(_SC_PAGESIZE);
	cache->page_size = page > 0 ? (size_t) page : 4096;
	cache->max_count = config && config->max_count ?
				   config->max_count :
				   MRL_CACHE_DEFAULT_MAX_COUNT;
	cache->max_size = config && config->max_size ?
				  config->max_size :
				  MRL_CACHE_DEFAULT_MAX_SIZE;
	cache->huge_after = config && config->huge_after ?
				    config->huge_after :
				    MRL_CACHE_DEFAULT_HUGE_AFTER;
	cache->prov = config ? config->prov : NULL;
	atomic_init(&cache->lo, UINTPTR_MAX);
	atomic_init(&cache->hi, 0);
	atomic_init(&cache->refs, 1);
	cache->slot = mrl_readers_slot_alloc(cache->slot_base);
	mrl_cache_fork_add(cache);
	*cache_out = cache;
	return 0;

err_deferred_lock:
	pthread_mutex_destroy(&cache->deferred_lock);
err_flt_lock:
	pthread_mutex_destroy(&cache->flt_lock);
err_lock:
	pthread_mutex_destroy(&cache->lock);
err_free:
	free(cache);
	return ret;
}

static void
cache_unref(struct mrl_cache *cache)
{
	unsigned was = atomic_fetch_sub_explicit(&cache->refs, 1,
						 memory_order_acq_rel);

	mrl_assert(was > 0); /* never below zero */
	if (was != 1)
		return;
	mrl_cache_fork_remove(cache);
	reserve_trim(cache, 0);
	mrl_filter_free(cache);
	mrl_readers_slot_free(cache->slot);
	pthread_cond_destroy(&cache->deferred_done);
	pthread_mutex_destroy(&cache->deferred_lock);
	pthread_mutex_destroy(&cache->flt_lock);
	pthread_mutex_destroy(&cache->lock);
	free(cache);
}

void
mrl_cache_destroy(struct mrl_cache *cache)
{
	struct mrl_cache_domain *dom;

	if (!cache)
		return;
	mrl_cache_close_deferred(cache);
	for (;;) {
		pthread_mutex_lock(&cache->lock);
		for (dom = cache->domains; dom && dom->closed; dom = dom->next)
			;
		pthread_mutex_unlock(&cache->lock);
		if (!dom)
			break;
		mrl_cache_domain_close(dom);
	}
	cache_unref(cache);
}

/* ---- domains ------------------------------------------------------------ */

int
mrl_cache_domain_open(struct mrl_cache *cache,
		      const struct mrl_domain_config *config,
		      struct mrl_cache_domain **domain)
{
	struct mrl_cache_domain *dom;
	size_t key_bits;

	if (!cache || !config || !config->registrar ||
	    !config->registrar->reg || !config->registrar->close)
		return -FI_EINVAL;
	dom = aligned_alloc(MRL_CACHELINE, (sizeof(*dom) + MRL_CACHELINE -
					    1) & ~(size_t) (MRL_CACHELINE - 1));
	if (!dom)
		return -FI_ENOMEM;
	memset(dom, 0, sizeof(*dom));
	dom->cache = cache;
	dom->cfg = *config;
	key_bits = config->mr_key_size && config->mr_key_size < 8 ?
			   8 * config->mr_key_size :
			   64;
	dom->key_top = key_bits == 64 ? UINT64_MAX : (1ull << key_bits) - 1;
	dom->key_half = 1ull << (key_bits - 1);
	atomic_init(&dom->next_key, dom->key_top);
	atomic_init(&dom->refs, 1);
	dom->fork_gen =
		atomic_load_explicit(&mrl_cache_fork_gen, memory_order_relaxed);
	dom->hot.slot = mrl_readers_slot_alloc(dom->slot_base);
	atomic_fetch_add(&cache->refs, 1);

	mrl_readers_write_enter(cache);
	atomic_store_explicit(&dom->hot.gen, next_gen(), memory_order_release);
	dom->next = cache->domains;
	cache->domains = dom;
	if (dom->hot.slot == MRL_CACHE_STAT_SLOTS - 1 &&
	    !cache->shared_domains++)
		memcpy(cache->shared_base, dom->slot_base,
		       sizeof(cache->shared_base));
	mrl_readers_write_exit(cache);
	*domain = dom;
	return 0;
}

void
mrl_cache_domain_close(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *all, *chain, *e;
	struct mrl_pending *p;

	mrl_readers_write_enter(cache);
	if (dom->closed) {
		mrl_readers_write_exit(cache);
		return;
	}
	dom->closed = true;
	/* Every live entry is in the index: it becomes the retire chain,
	 * but for those whose index reference is lent. */
	all = chain = NULL;
	mrl_btree_give_all(&dom->index, &cache->spare, &all);
	while ((e = all)) {
		all = mrl_reg_cold(e)->next;
		if (!unlend_locked(dom, e)) {
			mrl_reg_cold(e)->next = chain;
			chain = e;
		}
		mrl_reg_set_state(e, MRL_REG_RETIRED);
		mrl_filter_update(cache, e->base, e->end, -1);
	}
	MRL_STAT_ADD(dom, entries, -(int64_t) dom->count);
	dom->count = dom->bytes = 0;
	atomic_store_explicit(&dom->hot.gen, next_gen(), memory_order_release);
	for (p = cache->pending; p; p = p->next)
		if (p->domain == dom)
			p->stale = true;
	mrl_readers_write_exit(cache);
	mrl_cache_drop_chain(chain);
	/* The provider refuses to close a domain with MRs open: a monitor
	 * batch that retired some of its entries before us has deferred
	 * their closes once it lowered the barrier. */
	domain_settle_all(dom);
	reserve_trim(cache, MRL_BT_KEEP);
	cache_domain_unref(dom);
}

/*
 * Before the core domain's close, which the provider may still refuse: only
 * what nothing holds goes (an entry with no lease, not pinned, nothing but
 * the index on it), so the provider counts no registration of ours open,
 * while the domain keeps its index, span resolver, counters and open
 * handle. Leased and pinned entries stay: their registrations would stay
 * open anyway, and an endpoint still posting keeps its hits.
 */
void
mrl_cache_domain_retire_unleased(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *chain = NULL, *e;
	uintptr_t at = 0;
	bool after = false;

	mrl_readers_write_enter(cache);
	while (!dom->closed &&
	       (e = mrl_btree_successor(&dom->index, at, after))) {
		at = e->base;
		after = true;
		/* Exactly LIVE: no pin nor any other hold on it. */
		if (e->state != MRL_REG_LIVE ||
		    (atomic_load_explicit(&e->refs, memory_order_relaxed) &
		     MRL_REF_COUNT) != 1)
			continue;
		retire_locked(dom, e, &chain);
	}
	mrl_readers_write_exit(cache);
	mrl_cache_drop_chain(chain);
	/* As in domain close: deferred closes of this domain are done when
	 * it returns, on this thread or another. */
	domain_settle_all(dom);
	reserve_trim(cache, MRL_BT_KEEP);
}

void
mrl_cache_set_span(struct mrl_cache_domain *dom, fi_mrlease_span_fn fn,
		   void *arg)
{
	pthread_mutex_lock(&dom->cache->lock);
	dom->span = fn;
	dom->span_arg = fn ? arg : NULL;
	pthread_mutex_unlock(&dom->cache->lock);
}

/* ---- invalidate, pin ---------------------------------------------------- */

/* Whether any index of the cache may overlap [start, end): bounds first,
 * then a lock-free walk of each domain's index. */
static bool
may_overlap(struct mrl_cache *cache, struct mrl_reader *rec, uintptr_t start,
	    uintptr_t end)
{
	struct mrl_cache_domain *dom;
	bool found = false;

	if (atomic_load_explicit(&cache->pending_count, memory_order_seq_cst))
		return true;
	if (end <= atomic_load_explicit(&cache->lo, memory_order_relaxed) ||
	    start >= atomic_load_explicit(&cache->hi, memory_order_relaxed) ||
	    !mrl_filter_maybe(cache, start, end))
		return false;
	if (!mrl_readers_enter(rec, cache))
		return true;
	for (dom = cache->domains; dom && !found; dom = dom->next)
		found = mrl_btree_find_overlap(&dom->index, start, end) != NULL;
	mrl_readers_exit(rec);
	return found;
}

/* Retire every entry overlapping [start, end) and mark overlapping misses
 * stale; a monitor's (`defer`) leaves closes to other threads, and says in
 * *shared whether it put any on the cache's shared list. */
static int
invalidate_range(struct mrl_cache *cache, uintptr_t start, uintptr_t end,
		 bool defer, bool *shared)
{
	struct mrl_reader *rec;
	struct mrl_registration *chain = NULL, *e;
	struct mrl_cache_domain *dom;
	struct mrl_pending *p;
	bool any, nonempty = false;

	if (MRL_UNLIKELY(end <= start))
		return end == start ? 0 : -FI_EINVAL;
	rec = mrl_reader_self();
	mrl_reader_count(rec, cache->slot, MRL_TCNT_INVALIDATIONS, 1);
	if (MRL_LIKELY(!may_overlap(cache, rec, start, end)))
		return 0;

	mrl_readers_write_enter(cache);
	for (p = cache->pending; p; p = p->next)
		if (p->base < end && start < p->end)
			p->stale = true;
	for (dom = cache->domains; dom; dom = dom->next) {
		any = false;
		while ((e = mrl_btree_find_overlap(&dom->index, start, end))) {
			retire_locked(dom, e, &chain);
			mrl_cache_miss_note_gone(dom, e->base,
				       defer ? MRL_MISS_MONITOR :
					       MRL_MISS_INVALIDATED);
			any = true;
		}
		if (any)
			MRL_STAT_ADD(dom, invalidations, 1);
		if (any && defer)
			MRL_STAT_ADD(dom, monitor_invalidations, 1);
		nonempty |= dom->index.root != NULL;
	}
	if (!nonempty && !cache->pending) {
		atomic_store_explicit(&cache->lo, UINTPTR_MAX,
				      memory_order_relaxed);
		atomic_store_explicit(&cache->hi, 0, memory_order_relaxed);
	}
	mrl_readers_write_exit(cache);
	*shared |= drop_chain_as(chain, defer);
	return 0;
}

int
mrl_cache_invalidate(struct mrl_cache *cache, uintptr_t start, uintptr_t end)
{
	bool shared = false;
	int ret = invalidate_range(cache, start, end, false, &shared);

	mrl_cache_close_deferred(cache);
	return ret;
}

int
mrl_cache_invalidate_deferred(struct mrl_cache *cache, uintptr_t start,
			      uintptr_t end)
{
	bool shared = false;

	return invalidate_range(cache, start, end, true, &shared);
}

/* ---- every cache of the process ----------------------------------------- */

struct caches_range {
	uintptr_t start, end;
	bool found, shared;
	struct mrl_registration *chain;
};

static void
caches_in_use_one(struct mrl_cache *cache, void *arg)
{
	struct caches_range *r = arg;

	if (!r->found)
		r->found =
			may_overlap(cache, mrl_reader_self(), r->start, r->end);
}

bool
mrl_caches_in_use(uintptr_t lo, uintptr_t hi)
{
	struct caches_range r = {.start = lo, .end = hi};

	mrl_caches_each(caches_in_use_one, &r);
	return r.found;
}

static void
caches_invalidate_one(struct mrl_cache *cache, void *arg)
{
	struct caches_range *r = arg;

	invalidate_range(cache, r->start, r->end, true, &r->shared);
}

bool
mrl_caches_invalidate_deferred(uintptr_t start, uintptr_t end)
{
	struct caches_range r = {.start = start, .end = end};

	mrl_caches_each(caches_invalidate_one, &r);
	return r.shared;
}

/* Takes a cache's shared list onto r->chain (closed after the list's
 * lock: a close may come back to it). */
static void
caches_take_shared_one(struct mrl_cache *cache, void *arg)
{
	defer_splice(cache, &cache->deferred,
		     &((struct caches_range *) arg)->chain);
}

void
mrl_caches_close_deferred_shared(void)
{
	struct caches_range r = {0};

	/* What the monitor read is applied first, as a settle does. */
	mrl_cache_barrier_wait();
	mrl_caches_each(caches_take_shared_one, &r);
	defer_close(r.chain);
}

/* retire_locked for mrl_cache_unpin, which lives beside mrl_cache_pin in
 * mrl_cache_lease.c: the policy keeps how an entry retires. */
void
mrl_cache_retire_locked(struct mrl_cache_domain *dom,
			struct mrl_registration *e,
			struct mrl_registration **chain)
{
	retire_locked(dom, e, chain);
}
