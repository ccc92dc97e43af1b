/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Leases (rules in mrl_cache.h): lookups through the hot slots and the
 * index, misses that register and insert, tracked and pinned entries.
 *
 * Rules it keeps. A lookup leases only a live entry and only by
 * increment-if-not-zero, inside a read section or under cache->lock (a hot
 * way is trusted only while its domain's generation is unchanged). A miss
 * registers with no cache lock held, is visible to invalidate (pending)
 * until it is indexed, and indexes its entry only in a write section whose
 * node reserve already holds what the insert takes; a failure leaves
 * nothing.
 */
#include "config.h"

#include <pthread.h>
#include <time.h>

#include <rdma/fi_errno.h>

#include "mrl_readers.h"
#include "mrl_slab.h"

/* Index walks by this thread (mrl_cache_thread_index_walks, for tests). */
static __thread uint64_t mrl_index_walks
	__attribute__((tls_model("initial-exec")));

uint64_t
mrl_cache_thread_index_walks(void)
{
	return mrl_index_walks;
}

/* ---- node reserve ------------------------------------------------------- */

/* ---- node reserve ------------------------------------------------------- */

/*
 * A write section that may insert an entry at `base` into dom's index: the
 * node reserve holds what that insert can take (mrl_btree_need, computed
 * inside the section on the index as it is), allocated beforehand with no
 * lock held, so the insert never runs short halfway and the reserve stays as
 * small as the inserts need (usually empty: a split's nodes are allocated
 * just before it). Returns -FI_ENOMEM (no lock held) if the reserve cannot
 * be filled.
 */
static int
write_enter_reserved(struct mrl_cache *cache, struct mrl_cache_domain *dom,
		     uintptr_t base)
{
	struct mrl_btnode *chain = NULL, *n;
	unsigned need[2], want[2];

	for (;;) {
		mrl_readers_write_enter(cache);
		mrl_btree_need(&dom->index, base, need);
		if (cache->spare.nspare[false] >= need[false] &&
		    cache->spare.nspare[true] >= need[true])
			return 0;
		for (int leaf = 0; leaf < 2; leaf++)
			want[leaf] =
				cache->spare.nspare[leaf] < need[leaf] ?
					need[leaf] - cache->spare.nspare[leaf] :
					0;
		mrl_readers_write_exit(cache);
		for (int leaf = 0; leaf < 2; leaf++) {
			for (unsigned i = 0; i < want[leaf]; i++) {
				n = mrl_btree_node_alloc(leaf,
							 cache->huge_after);
				if (!n)
					break;
				n->ptr[0] = chain;
				chain = n;
			}
		}
		if (!chain)
			return -FI_ENOMEM;
		pthread_mutex_lock(&cache->lock);
		while (chain) {
			n = chain;
			chain = n->ptr[0];
			mrl_btree_reserve_give(&cache->spare, n);
		}
		pthread_mutex_unlock(&cache->lock);
	}
}

/* ---- lookup ------------------------------------------------------------- */

/* A lease by increment-if-not-zero, marking the entry used: false at a zero
 * count, a retired entry's last drop or (found in the index) an entry whose
 * lent index reference a releasing thread is settling (see lend_locked),
 * which no one else may revive. */
static inline bool
lease_take(struct mrl_registration *reg)
{
	unsigned refs = atomic_load_explicit(&reg->refs, memory_order_relaxed);

	do {
		if (MRL_UNLIKELY(!(refs & MRL_REF_COUNT)))
			return false;
		mrl_assert((refs & MRL_REF_COUNT) != MRL_REF_COUNT);
	} while (!atomic_compare_exchange_weak_explicit(
		&reg->refs, &refs, (refs + 1) | MRL_REF_USED,
		memory_order_acquire, memory_order_relaxed));
	return true;
}

/*
 * The hit path of a send loop: one of the thread's last two entries for this
 * domain (one hot way), leased without a read section. The way is trusted
 * only while the domain's generation is the one seen when it was filled
 * (every retire changes it).
 * Entries are slab memory that is never unmapped, so the reference is taken
 * first (increment if not zero) and the generation checked again: unchanged
 * means no retire happened since the fill, so the reference is on that very
 * entry, which a retire could not have freed. Otherwise it is given back.
 */
static inline struct mrl_registration *
hot_lease(struct mrl_cache_domain *dom, struct mrl_hot *hot, uintptr_t start,
	  uintptr_t end)
{
	struct mrl_registration *reg = hot->reg;
	uint64_t gen = hot->gen;

	if (!(hot->base <= start && end <= hot->end) ||
	    atomic_load_explicit(&dom->hot.gen, memory_order_acquire) != gen ||
	    !lease_take(reg))
		return NULL;
	if (MRL_UNLIKELY(atomic_load_explicit(&dom->hot.gen,
					      memory_order_acquire) != gen)) {
		mrl_cache_ref_put(reg);
		return NULL;
	}
	return reg;
}

/* What a lookup accepts: any covering entry, or only one based at start. */
enum mrl_find {
	MRL_FIND_NONE, /* pins: always insert */
	MRL_FIND_COVER, /* base <= start, end >= end */
	MRL_FIND_BASED, /* base == start, end >= end */
};

static inline __attribute__((always_inline)) struct mrl_registration *
find_entry(struct mrl_cache_domain *dom, enum mrl_find mode, uintptr_t start,
	   uintptr_t end)
{
	struct mrl_registration *e = NULL;

	if (mode == MRL_FIND_COVER) {
		e = mrl_btree_find_pred(&dom->index, start, end);
		if (MRL_UNLIKELY(e == NULL))
			e = mrl_btree_find_cover(&dom->index, start, end);
	} else if (mode == MRL_FIND_BASED) {
		e = mrl_btree_find_based(&dom->index, start, end);
	}
	/* The index holds live entries only: a retired one is never found. */
	mrl_assert(!e || (mrl_reg_state(e) == MRL_REG_LIVE &&
			  e->base <= start && end <= e->end));
	return e;
}

/*
 * Matching entry from the index, leased, hot slot refilled; the caller is in
 * a read section or holds the mutex (so the entry is live and the generation
 * read here is one under which it was). The entry refreshes the way already
 * naming it (its gen may be stale; a recycled entry gets its new range), else
 * way 0 moves to way 1 and the entry takes way 0: a thread alternating two
 * entries keeps both.
 */
static inline __attribute__((always_inline)) struct mrl_registration *
index_lease(struct mrl_cache_domain *dom, struct mrl_reader *rec,
	    enum mrl_find mode, uintptr_t start, uintptr_t end)
{
	struct mrl_registration *reg = find_entry(dom, mode, start, end);
	struct mrl_hot *hot = rec->t.hot[dom->hot.slot];
	struct mrl_hot fill;

	if (!reg || !lease_take(reg))
		return NULL;
	/* The shared statistic slot's hot slot would serve several domains. */
	if (!rec->shared && dom->hot.slot != MRL_CACHE_STAT_SLOTS - 1) {
		fill = (struct mrl_hot){
			reg,
			atomic_load_explicit(&dom->hot.gen,
					     memory_order_relaxed),
			reg->base, reg->end};
		if (hot[1].reg == reg) {
			hot[1] = fill;
		} else {
			if (hot[0].reg != reg)
				hot[1] = hot[0];
			hot[0] = fill;
		}
	}
	return reg;
}

/* try_hot: false when the inline hit path just failed on the hot slot. */
static inline __attribute__((always_inline)) struct mrl_registration *
lookup_lease(struct mrl_cache_domain *dom, struct mrl_reader *rec,
	     enum mrl_find mode, uintptr_t start, uintptr_t end, bool try_hot)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *reg = NULL;
	struct mrl_hot *hot = rec->t.hot[dom->hot.slot];

	mrl_reader_count(rec, dom->hot.slot, MRL_TCNT_LOOKUPS, 1);
	for (int w = 0; try_hot && w < MRL_HOT_WAYS; w++) {
		if (mode == MRL_FIND_COVER || hot[w].base == start)
			reg = hot_lease(dom, &hot[w], start, end);
		if (MRL_LIKELY(reg != NULL))
			return reg;
	}
	mrl_index_walks++;
	if (MRL_LIKELY(mrl_readers_enter(rec, cache))) {
		reg = index_lease(dom, rec, mode, start, end);
		mrl_readers_exit(rec);
	} else {
		pthread_mutex_lock(&cache->lock);
		reg = index_lease(dom, rec, mode, start, end);
		pthread_mutex_unlock(&cache->lock);
	}
	if (!reg)
		mrl_reader_count(rec, dom->hot.slot, MRL_TCNT_MISSES, 1);
	return reg;
}

struct mrl_registration *
mrl_cache_lookup(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end)
{
	if (end <= start)
		return NULL;
	mrl_cache_barrier_wait();
	return lookup_lease(dom, mrl_reader_self(), MRL_FIND_COVER, start, end,
			    true);
}

/* ---- registration ------------------------------------------------------- */

static uint64_t
next_key(struct mrl_cache_domain *dom)
{
	uint64_t key;

	if (dom->cfg.prov_key)
		return 0;
	key = atomic_fetch_sub_explicit(&dom->next_key, 1,
					memory_order_relaxed);
	if (key < dom->key_half) {
		/* Wrapped below the cache's half: start again from the top;
		 * keys still in use answer -FI_ENOKEY and are skipped. */
		atomic_store_explicit(&dom->next_key, dom->key_top,
				      memory_order_relaxed);
		key = atomic_fetch_sub_explicit(&dom->next_key, 1,
						memory_order_relaxed);
	}
	return key;
}

static bool
refused_for_resources(int ret)
{
	return ret == -FI_ENOMEM || ret == -FI_ENOSPC || ret == -FI_EAGAIN;
}

/*
 * Register [reg->base, reg->end) through the domain's registrar, with no
 * cache lock held: new keys on -FI_ENOKEY, and on a refusal for lack of
 * resources evict unleased entries of this domain and retry once.
 */
static int
registration_open(struct mrl_cache_domain *dom, struct mrl_registration *reg)
{
	struct mrl_cache *cache = dom->cache;
	size_t len = reg->end - reg->base;
	struct mrl_registration *chain;
	struct timespec t0, t1;
	bool evicted = false;
	int ret, tries;

	for (;;) {
		for (tries = 0;; tries++) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			ret = dom->cfg.registrar->reg(
				dom->cfg.ctx, (void *) reg->base, len,
				MRL_CACHE_ACCESS, next_key(dom),
				&mrl_reg_cold(reg)->mr, &reg->desc);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (ret != -FI_ENOKEY || dom->cfg.prov_key ||
			    tries >= MRL_CACHE_KEY_RETRIES)
				break;
		}
		if (!ret)
			break;
		if (evicted || !refused_for_resources(ret)) {
			MRL_CWARN(cache,
				  "registering [%p, +%zu) for the cache: %s\n",
				  (void *) reg->base, len, fi_strerror(-ret));
			return ret;
		}
		chain = NULL;
		mrl_readers_write_enter(cache);
		mrl_cache_evict_locked(dom, len, 1, &chain);
		mrl_readers_write_exit(cache);
		mrl_cache_drop_chain(chain);
		evicted = true;
	}
	atomic_fetch_add_explicit(&dom->refs, 1, memory_order_relaxed);
	MRL_STAT_ADD(dom, registrations, 1);
	MRL_STAT_ADD(dom, registered_bytes, (int64_t) len);
	mrl_cache_miss_reg_count(dom, len,
		      (uint64_t) (t1.tv_sec - t0.tv_sec) * 1000000000u +
			      (uint64_t) t1.tv_nsec - (uint64_t) t0.tv_nsec);
	return 0;
}

static inline uintptr_t
page_down(struct mrl_cache *cache, uintptr_t a)
{
	return a & ~(uintptr_t) (cache->page_size - 1);
}

/* Rounds up, or 0 if that wraps. */
static inline uintptr_t
page_up(struct mrl_cache *cache, uintptr_t a)
{
	uintptr_t r = (a + cache->page_size - 1) &
		      ~(uintptr_t) (cache->page_size - 1);

	return r < a ? 0 : r;
}

/* The extent a miss registers: the resolver's span when it contains the
 * operand (rule 6), otherwise the operand's own pages. */
static int
miss_extent(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end,
	    uintptr_t *lo, uintptr_t *hi)
{
	struct mrl_cache *cache = dom->cache;
	fi_mrlease_span_fn fn;
	void *arg, *sbase;
	size_t slen;
	uintptr_t sb, se;

	pthread_mutex_lock(&cache->lock);
	fn = dom->span;
	arg = dom->span_arg;
	pthread_mutex_unlock(&cache->lock);

	*lo = page_down(cache, start);
	*hi = page_up(cache, end);
	if (!*hi)
		return -FI_EINVAL;
	if (fn && !fn(arg, (void *) start, end - start, &sbase, &slen)) {
		sb = (uintptr_t) sbase;
		se = sb + slen;
		if (slen && se > sb && sb <= start && end <= se &&
		    page_up(cache, se)) {
			*lo = page_down(cache, sb);
			*hi = page_up(cache, se);
		}
	}
	return 0;
}

static void
pending_remove(struct mrl_cache *cache, struct mrl_pending *pending)
{
	struct mrl_pending **pp;

	for (pp = &cache->pending; *pp != pending; pp = &(*pp)->next)
		;
	*pp = pending->next;
	atomic_fetch_sub_explicit(&cache->pending_count, 1,
				  memory_order_seq_cst);
}

/*
 * Register and publish a new entry. `mode` asks to reuse an entry it accepts
 * found after registering (a concurrent miss won: ours is closed after the
 * unlock); pins (MRL_FIND_NONE) always insert. An invalidate or domain close
 * overlapping the registration in flight makes it an unindexed lease.
 */
static int
register_insert(struct mrl_cache_domain *dom, uintptr_t lo, uintptr_t hi,
		uint8_t flags, enum mrl_find mode, uintptr_t start,
		uintptr_t end, struct mrl_registration **out)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *reg, *won = NULL, *chain = NULL;
	struct mrl_pending pending = {.base = lo, .end = hi, .domain = dom};
	bool transient = false;
	int ret, rret;

	reg = mrl_slab_entry_alloc(dom);
	if (!reg)
		return -FI_ENOMEM;
	reg->base = lo;
	reg->end = hi;
	reg->slot = (uint8_t) dom->hot.slot;
	reg->state = flags;

	pthread_mutex_lock(&cache->lock);
	if (dom->closed) {
		pthread_mutex_unlock(&cache->lock);
		ret = -FI_EINVAL;
		goto err_free;
	}
	if (mode != MRL_FIND_NONE) {
		/* Another miss may have finished while we resolved the span. */
		won = find_entry(dom, mode, start, end);
		if (won && lease_take(won)) {
			pthread_mutex_unlock(&cache->lock);
			mrl_slab_entry_free(reg);
			*out = won;
			return 0;
		}
		won = NULL;
	}
	pending.next = cache->pending;
	cache->pending = &pending;
	atomic_fetch_add_explicit(&cache->pending_count, 1,
				  memory_order_seq_cst);
	mrl_cache_bounds_extend(cache, lo, hi);
	pthread_mutex_unlock(&cache->lock);

	/* Watched from here on, or an unmap before the watch leaves the range
	 * unregistered (verbs) or is the application's race; pins are leased
	 * for as long as they are indexed. */
	if (mode != MRL_FIND_NONE && dom->cfg.registrar->watch &&
	    !dom->cfg.registrar->watch(dom->cfg.ctx, lo, hi))
		transient = true;
	ret = registration_open(dom, reg);
	if (!ret)
		mrl_filter_update(cache, lo, hi, 0);

	rret = ret ? 0 : write_enter_reserved(cache, dom, lo);
	if (ret || rret)
		mrl_readers_write_enter(cache);
	if (ret || (rret && !pending.stale)) {
		pending_remove(cache, &pending);
		mrl_readers_write_exit(cache);
		if (ret)
			goto err_free;
		/* No memory for index nodes: the registration goes. */
		atomic_store_explicit(&reg->refs, 1, memory_order_release);
		mrl_cache_ref_put(reg);
		return rret;
	}
	if (pending.stale || transient) {
		/* A lease that never enters the index. */
		mrl_reg_set_state(reg, MRL_REG_RETIRED);
		atomic_store_explicit(&reg->refs, 1, memory_order_release);
		if (transient) {
			MRL_STAT_ADD(dom, not_retained, 1);
			/* A watched domain declines only ranges that churn. */
			mrl_cache_miss_note_gone(dom, lo,
				       dom->cfg.registrar->released ?
					       MRL_MISS_CHURN :
					       MRL_MISS_NOT_RETAINED);
		}
	} else if ((won = find_entry(dom, mode, start, end)) &&
		   lease_take(won)) {
		/* A concurrent miss won: ours closes below. */
	} else {
		won = NULL;
		atomic_store_explicit(&reg->refs, 2 | MRL_REF_USED,
				      memory_order_release);
		mrl_cache_insert_locked(dom, reg, &chain);
		mrl_cache_capacity_locked(dom, &chain);
	}
	/* Last: an invalidate that sees no pending miss sees the filter
	 * counts of the entry just inserted. */
	pending_remove(cache, &pending);
	mrl_readers_write_exit(cache);

	mrl_cache_drop_chain(chain);
	if (won) {
		atomic_store_explicit(&reg->refs, 1, memory_order_release);
		mrl_cache_ref_put(reg); /* the loser's registration */
		reg = won;
	}
	*out = reg;
	return 0;

err_free:
	mrl_slab_entry_free(reg);
	return ret;
}

int
mrl_cache_acquire_slow(struct mrl_cache_domain *dom, uintptr_t start,
		       uintptr_t end, struct mrl_registration **out)
{
	struct mrl_reader *rec;
	struct mrl_registration *reg;
	uintptr_t lo, hi;
	int ret;

	if (MRL_UNLIKELY(end <= start))
		return -FI_EINVAL;
	mrl_cache_domain_settle_slow(dom);
	rec = mrl_reader_self();
	reg = lookup_lease(dom, rec, MRL_FIND_COVER, start, end, false);
	if (MRL_LIKELY(reg != NULL)) {
		*out = reg;
		return 0;
	}
	MRL_STAT_ADD(dom, misses, 1);
	ret = miss_extent(dom, start, end, &lo, &hi);
	mrl_cache_miss_count(dom, ret ? start : lo);
	if (ret)
		return ret;
	ret = register_insert(dom, lo, hi, 0, MRL_FIND_COVER, start, end, &reg);
	if (ret)
		return ret;
	mrl_reader_count(mrl_reader_self(), dom->hot.slot,
			 MRL_TCNT_LEASES_OTHER, 1);
	*out = reg;
	return 0;
}

/* The inline hit path leased an entry retired since its hot slot was
 * filled: give the reference back and look again. */
int
mrl_cache_acquire_stale(struct mrl_cache_domain *dom, uintptr_t start,
			uintptr_t end, struct mrl_registration *stale,
			struct mrl_registration **out)
{
	mrl_cache_ref_put(stale);
	return mrl_cache_acquire_slow(dom, start, end, out);
}

int
mrl_cache_acquire_based(struct mrl_cache_domain *dom, uintptr_t start,
			uintptr_t end, struct mrl_registration **out)
{
	struct mrl_registration *reg;
	int ret;

	if (MRL_UNLIKELY(end <= start))
		return -FI_EINVAL;
	mrl_cache_domain_settle_slow(dom);
	reg = lookup_lease(dom, mrl_reader_self(), MRL_FIND_BASED, start, end,
			   true);
	if (MRL_LIKELY(reg != NULL)) {
		*out = reg;
		return 0;
	}
	MRL_STAT_ADD(dom, misses, 1);
	mrl_cache_miss_count(dom, start);
	/* Exactly [start, end): the peer addresses the MR from its base. */
	ret = register_insert(dom, start, end, 0, MRL_FIND_BASED, start, end,
			      &reg);
	if (ret)
		return ret;
	mrl_reader_count(mrl_reader_self(), dom->hot.slot,
			 MRL_TCNT_LEASES_OTHER, 1);
	*out = reg;
	return 0;
}

int
mrl_cache_track(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end,
		void *mr, void *desc, struct mrl_registration **out)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *reg, *chain = NULL;

	if (end <= start)
		return -FI_EINVAL;
	reg = mrl_slab_entry_alloc(dom);
	if (!reg)
		return -FI_ENOMEM;
	reg->base = start;
	reg->end = end;
	reg->slot = (uint8_t) dom->hot.slot;
	mrl_reg_cold(reg)->mr = mr;
	reg->desc = desc;
	atomic_store_explicit(&reg->refs, 2 | MRL_REF_USED,
			      memory_order_release);

	mrl_filter_update(cache, start, end, 0);
	if (write_enter_reserved(cache, dom, start)) {
		mrl_slab_entry_free(reg);
		return -FI_ENOMEM;
	}
	if (dom->closed) {
		mrl_readers_write_exit(cache);
		mrl_slab_entry_free(reg);
		return -FI_EINVAL;
	}
	atomic_fetch_add_explicit(&dom->refs, 1, memory_order_relaxed);
	MRL_STAT_ADD(dom, registrations, 1);
	MRL_STAT_ADD(dom, registered_bytes, (int64_t) (end - start));
	mrl_cache_miss_reg_count(dom, end - start, UINT64_MAX);
	mrl_cache_insert_locked(dom, reg, &chain);
	mrl_cache_capacity_locked(dom, &chain);
	mrl_readers_write_exit(cache);

	mrl_cache_drop_chain(chain);
	mrl_reader_count(mrl_reader_self(), dom->hot.slot,
			 MRL_TCNT_LEASES_OTHER, 1);
	*out = reg;
	return 0;
}

void
mrl_cache_lease_get(struct mrl_registration *reg)
{
	unsigned was =
		atomic_fetch_add_explicit(&reg->refs, 1, memory_order_relaxed);

	mrl_assert(was & MRL_REF_COUNT); /* the caller holds one */
	mrl_reader_count(mrl_reader_self(), reg->slot, MRL_TCNT_LEASES_OTHER,
			 1);
}

/* mrl_cache_lease_release on a thread without its own record (yet). */
void
mrl_cache_lease_count_release(struct mrl_registration *reg)
{
	mrl_reader_count(mrl_reader_self(), reg->slot, MRL_TCNT_LEASES_RELEASED,
			 1);
}

struct mrl_thread *
mrl_cache_thread_attach(void)
{
	mrl_reader_self();
	return mrl_fast;
}

int
mrl_cache_pin(struct mrl_cache_domain *dom, uintptr_t base, size_t len,
	      struct mrl_registration **out)
{
	struct mrl_cache *cache = dom->cache;
	uintptr_t lo, hi;
	int ret;

	if (!len || base + len < base)
		return -FI_EINVAL;
	lo = page_down(cache, base);
	hi = page_up(cache, base + len);
	if (!hi)
		return -FI_EINVAL;
	ret = register_insert(dom, lo, hi, MRL_REG_PINNED, MRL_FIND_NONE, 0, 0,
			      out);
	if (ret)
		return ret;
	mrl_reader_count(mrl_reader_self(), dom->hot.slot,
			 MRL_TCNT_LEASES_OTHER, 1);
	return 0;
}

void
mrl_cache_unpin(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = mrl_reg_domain(reg);
	struct mrl_registration *chain = NULL;

	mrl_readers_write_enter(dom->cache);
	if (mrl_reg_state(reg) == MRL_REG_LIVE)
		mrl_cache_retire_locked(dom, reg, &chain);
	mrl_readers_write_exit(dom->cache);
	mrl_cache_drop_chain(chain);
	mrl_cache_lease_release(reg);
}
