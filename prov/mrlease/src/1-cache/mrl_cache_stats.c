/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's statistics: the shared counters misses and retires
 * add to, and the queries that read them with the per-thread counts
 * (mrl_cache.h "Statistics": counters never go back between two snapshots,
 * gauges are never negative, registrations >= deregistrations and hits <=
 * lookups).
 */
#include "config.h"

#include <string.h>

#include "mrl_readers.h"

/* Release, so that a query reading deregistrations before registrations
 * (acquire) counts the registration of every deregistration it counts. */
void
mrl_cache_stat_add(struct mrl_cache_domain *dom, size_t off, int64_t n)
{
	atomic_fetch_add_explicit(
		(atomic_uint_least64_t *) ((char *) &dom->stats + off),
		(uint64_t) n, memory_order_release);
	atomic_fetch_add_explicit(
		(atomic_uint_least64_t *) ((char *) &dom->cache->stats + off),
		(uint64_t) n, memory_order_release);
}

/*
 * A query reads counters that other threads keep changing, one at a time,
 * so each is read in an order that keeps what is derived from them possible
 * (see "Statistics" in mrl_cache.h):
 * - deregistrations before registrations: a registration is counted (with
 *   release) before anything can deregister it, so registrations >=
 *   deregistrations;
 * - per-thread counts: released leases, then other leases, then index
 *   misses, then lookups. Every count is a release store, a lookup is
 *   counted before its miss on the same thread, and a lease before it can
 *   be released anywhere, so the hits and live leases derived come out
 *   >= 0 (clamped anyway: a domain on the shared slot sees other domains'
 *   releases);
 * - hits (lookups - misses, two sums read one after the other) can still
 *   run ahead of later reads: reported as the most any query reported
 *   (hits_seen), never more than the lookups read.
 */
static void
stats_copy_slow(const struct mrl_slow_stats *s, struct fi_mrlease_stats *out)
{
	int64_t gauge;

	out->deregistrations =
		atomic_load_explicit(&s->deregistrations, memory_order_acquire);
	out->registrations =
		atomic_load_explicit(&s->registrations, memory_order_acquire);
	out->misses = atomic_load_explicit(&s->misses, memory_order_relaxed);
	out->invalidations =
		atomic_load_explicit(&s->invalidations, memory_order_relaxed);
	out->retired_leased =
		atomic_load_explicit(&s->retired_leased, memory_order_relaxed);
	out->evictions =
		atomic_load_explicit(&s->evictions, memory_order_relaxed);
	gauge = (int64_t) atomic_load_explicit(&s->entries,
					       memory_order_relaxed);
	out->entries = gauge > 0 ? (uint64_t) gauge : 0;
	gauge = (int64_t) atomic_load_explicit(&s->registered_bytes,
					       memory_order_relaxed);
	out->registered_bytes = gauge > 0 ? (uint64_t) gauge : 0;
	out->monitor_invalidations = atomic_load_explicit(
		&s->monitor_invalidations, memory_order_relaxed);
	out->not_retained =
		atomic_load_explicit(&s->not_retained, memory_order_relaxed);
	out->deferred_closes =
		atomic_load_explicit(&s->deferred_closes, memory_order_relaxed);
	for (size_t i = 0; i < MRL_MISS_REASONS; i++)
		(&out->miss_cold)[i] =
			atomic_load_explicit(&s->miss[i], memory_order_relaxed);
	for (size_t i = 0; i < FI_MRLEASE_HIST_BUCKETS; i++) {
		out->reg_size_hist[i] = atomic_load_explicit(
			&s->size_hist[i], memory_order_relaxed);
		out->reg_ns_hist[i] = atomic_load_explicit(
			&s->ns_hist[i], memory_order_relaxed);
	}
}

_Static_assert(offsetof(struct fi_mrlease_stats, miss_not_retained) ==
		       offsetof(struct fi_mrlease_stats, miss_cold) +
			       (MRL_MISS_NOT_RETAINED * sizeof(uint64_t)),
	       "miss_* fields in enum mrl_miss_reason order");

/* The order the per-thread counts are read in (see above). */
static const enum mrl_tcnt tcnt_read_order[] = {
	MRL_TCNT_BELOW_MIN,
	MRL_TCNT_LEASES_RELEASED,
	MRL_TCNT_LEASES_OTHER,
	MRL_TCNT_MISSES,
	MRL_TCNT_LOOKUPS,
};

/* lookups, hits and live leases from counts read in tcnt_read_order. */
static void
stats_copy_hot(const uint64_t hot[MRL_TCNT_COUNT],
	       atomic_uint_least64_t *hits_seen, struct fi_mrlease_stats *out)
{
	uint64_t lookups = hot[MRL_TCNT_LOOKUPS], hits, seen;
	int64_t leases;

	hits = hot[MRL_TCNT_MISSES] < lookups ? lookups - hot[MRL_TCNT_MISSES] :
						0;
	seen = atomic_load_explicit(hits_seen, memory_order_relaxed);
	while (seen < hits &&
	       !atomic_compare_exchange_weak_explicit(hits_seen, &seen, hits,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
	if (seen < hits)
		seen = hits; /* ours was stored */
	out->lookups = lookups;
	out->hits = seen < lookups ? seen : lookups;
	leases = (int64_t) (hits + hot[MRL_TCNT_LEASES_OTHER] -
			    hot[MRL_TCNT_LEASES_RELEASED]);
	out->leases = leases > 0 ? (uint64_t) leases : 0;
	out->miss_below_min = hot[MRL_TCNT_BELOW_MIN];
}

void
mrl_cache_domain_stats(struct mrl_cache_domain *dom,
		       struct fi_mrlease_stats *stats)
{
	uint64_t hot[MRL_TCNT_COUNT];

	/* Monitor events read before the call are applied and counted. */
	mrl_cache_barrier_wait();
	memset(stats, 0, sizeof(*stats));
	stats_copy_slow(&dom->stats, stats);
	for (size_t k = 0;
	     k < sizeof(tcnt_read_order) / sizeof(tcnt_read_order[0]); k++) {
		enum mrl_tcnt i = tcnt_read_order[k];

		hot[i] = mrl_readers_sum(dom->hot.slot, i) - dom->slot_base[i];
	}
	stats_copy_hot(hot, &dom->hits_seen, stats);
}

/* Under cache->lock: every domain's counts (closed ones in closed_hot; the
 * shared slot once, since its first domain of this cache opened). */
void
mrl_cache_stats(struct mrl_cache *cache, struct fi_mrlease_stats *stats)
{
	uint64_t hot[MRL_TCNT_COUNT];
	struct mrl_cache_domain *dom;

	mrl_cache_barrier_wait();
	memset(stats, 0, sizeof(*stats));
	stats_copy_slow(&cache->stats, stats);
	pthread_mutex_lock(&cache->lock);
	for (size_t k = 0;
	     k < sizeof(tcnt_read_order) / sizeof(tcnt_read_order[0]); k++) {
		enum mrl_tcnt i = tcnt_read_order[k];

		hot[i] = cache->closed_hot[i];
		for (dom = cache->domains; dom; dom = dom->next)
			if (dom->hot.slot != MRL_CACHE_STAT_SLOTS - 1)
				hot[i] += mrl_readers_sum(dom->hot.slot, i) -
					  dom->slot_base[i];
		if (cache->shared_domains)
			hot[i] += mrl_readers_sum(MRL_CACHE_STAT_SLOTS - 1, i) -
				  cache->shared_base[i];
	}
	pthread_mutex_unlock(&cache->lock);
	stats_copy_hot(hot, &cache->hits_seen, stats);
	stats->invalidations =
		mrl_readers_sum(cache->slot, MRL_TCNT_INVALIDATIONS) -
		cache->slot_base[MRL_TCNT_INVALIDATIONS];
}
