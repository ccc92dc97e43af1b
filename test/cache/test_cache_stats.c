/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's statistics and capacity over the counting registrar:
 * snapshots read while threads lease, release and invalidate stay possible
 * (counters never go back, gauges never negative, registrations >=
 * deregistrations, hits <= lookups); the process-wide counts keep every
 * domain, past the statistic slots and after the domains close; a burst of
 * leases over the caps is evicted down to them as its leases end. Runs
 * again under ThreadSanitizer (SUITE_CONCURRENCY). Threads line up with
 * atomics, never sleeps.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cache_registrar.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "common/mrlt.h"

static uintptr_t page_size;
#define P(n) ((uintptr_t) 0x300000000ull + (uintptr_t) (n) *page_size)

static int
open_cache(size_t max_count, size_t max_size, struct creg *creg,
	   struct mrl_cache **cache, struct mrl_cache_domain **dom)
{
	struct mrl_cache_config config = {.max_count = max_count,
					  .max_size = max_size};
	struct mrl_domain_config dconf;
	int ret;

	creg_init(creg, NULL, 0);
	dconf = creg_domain_config(creg);
	ret = mrl_cache_create(&config, cache);
	if (ret)
		return ret;
	ret = mrl_cache_domain_open(*cache, &dconf, dom);
	if (ret)
		mrl_cache_destroy(*cache);
	return ret;
}

/* ---- snapshots while threads lease and invalidate ----------------------- */

/* The counters of a snapshot (every field but the live entries, leases and
 * bytes, and the monitor's process-wide events): none may go back. */
#define COUNTER(f)                                       \
	{                                                \
		offsetof(struct fi_mrlease_stats, f), #f \
	}
static const struct {
	size_t off;
	const char *name;
} counters[] = {
	COUNTER(lookups),
	COUNTER(hits),
	COUNTER(misses),
	COUNTER(registrations),
	COUNTER(deregistrations),
	COUNTER(invalidations),
	COUNTER(retired_leased),
	COUNTER(evictions),
	COUNTER(monitor_invalidations),
	COUNTER(not_retained),
	COUNTER(deferred_closes),
};

static uint64_t
field(const struct fi_mrlease_stats *s, size_t off)
{
	return *(const uint64_t *) (const void *) ((const char *) s + off);
}

/* What one snapshot must never show, alone and after the one before it:
 * the first impossibility, or NULL. */
static const char *
impossible(const struct fi_mrlease_stats *s,
	   const struct fi_mrlease_stats *prev)
{
	static char back[64];

	if ((int64_t) s->leases < 0)
		return "negative live leases";
	if ((int64_t) s->entries < 0)
		return "negative entries";
	if ((int64_t) s->registered_bytes < 0)
		return "negative registered bytes";
	if (s->deregistrations > s->registrations)
		return "more deregistrations than registrations";
	if (s->hits > s->lookups)
		return "more hits than lookups";
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		if (field(s, counters[i].off) < field(prev, counters[i].off)) {
			snprintf(back, sizeof(back), "%s went back",
				 counters[i].name);
			return back;
		}
	}
	return NULL;
}

/* Snapshots taken at most, and for at most this long (seconds): on a
 * machine with fewer cores than threads, an impossible figure needs a
 * query preempted halfway, so the loop runs for a while. */
enum { POSTERS = 4, RANGES = 16, SNAPSHOTS = 1000000, SNAPSHOT_SECONDS = 2 };

struct traffic {
	struct mrl_cache *cache;
	struct mrl_cache_domain *dom;
	atomic_bool running;
	atomic_int started;
	atomic_long leased;
	atomic_int failed;
};

/* A posting thread: a lease per operation, released at its completion,
 * mostly hits, a miss whenever the invalidating thread got there first. */
static void *
traffic_post(void *p)
{
	struct traffic *t = p;
	struct mrl_registration *reg;
	long n = 0;

	atomic_fetch_add(&t->started, 1);
	while (atomic_load_explicit(&t->running, memory_order_relaxed)) {
		uintptr_t at = P((size_t) n % RANGES);

		if (mrl_cache_acquire(t->dom, at, at + 64, &reg)) {
			atomic_fetch_add(&t->failed, 1);
			break;
		}
		mrl_cache_lease_release(reg);
		n++;
	}
	atomic_fetch_add(&t->leased, n);
	return NULL;
}

static void *
traffic_invalidate(void *p)
{
	struct traffic *t = p;
	unsigned n = 0;

	atomic_fetch_add(&t->started, 1);
	while (atomic_load_explicit(&t->running, memory_order_relaxed)) {
		mrl_cache_invalidate(t->cache, P(n % RANGES),
				     P(n % RANGES + 1));
		n++;
	}
	return NULL;
}

/* A monitoring tool reading query_stats in a loop while 4 threads post and
 * one invalidates saw a negative live-lease count, hits going back and more
 * deregistrations than registrations: figures no application can act on. */
static void
test_stats_snapshots_stay_possible_while_threads_lease_and_invalidate(void)
{
	struct fi_mrlease_stats dom_prev, all_prev, s;
	pthread_t th[POSTERS + 1];
	struct traffic t = {0};
	const char *bad = NULL;
	struct mrlt_wait w;
	struct creg creg;
	int i, started;
	long n = 0;

	CHECK_FI(open_cache(0, 0, &creg, &t.cache, &t.dom));
	atomic_store(&t.running, true);
	for (i = 0, started = 0; i < POSTERS + 1; i++, started++)
		if (pthread_create(&th[i], NULL,
				   i < POSTERS ? traffic_post :
						 traffic_invalidate,
				   &t))
			break;
	while (atomic_load(&t.started) < started)
		sched_yield();
	memset(&dom_prev, 0, sizeof(dom_prev));
	memset(&all_prev, 0, sizeof(all_prev));
	mrlt_wait_init_for(&w, SNAPSHOT_SECONDS);
	for (; n < SNAPSHOTS && !bad && started == POSTERS + 1 &&
	       !mrlt_wait_over(&w);
	     n++) {
		mrl_cache_domain_stats(t.dom, &s);
		if ((bad = impossible(&s, &dom_prev)))
			break;
		dom_prev = s;
		mrl_cache_stats(t.cache, &s);
		if ((bad = impossible(&s, &all_prev)))
			break;
		all_prev = s;
	}
	atomic_store(&t.running, false);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(POSTERS + 1, started);
	printf("# %ld snapshots, %ld leases\n", n, atomic_load(&t.leased));
	CHECK_MSG(!bad,
		  "snapshot %ld, %s: lookups %llu hits %llu leases %lld "
		  "registrations %llu deregistrations %llu entries %lld",
		  n, bad, (unsigned long long) s.lookups,
		  (unsigned long long) s.hits, (long long) s.leases,
		  (unsigned long long) s.registrations,
		  (unsigned long long) s.deregistrations,
		  (long long) s.entries);
	CHECK_EQ(0, atomic_load(&t.failed));
	CHECK(atomic_load(&t.leased) > 0);
	/* Quiet now: the figures are exact. */
	mrl_cache_domain_stats(t.dom, &s);
	CHECK_EQ(0, s.leases);
	CHECK_EQ(s.registrations - s.deregistrations, s.entries);
	mrl_cache_destroy(t.cache);
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* ---- process-wide counts past the statistic slots ----------------------- */

enum { DOMAINS = MRL_CACHE_STAT_SLOTS + 6 };

/* With more domains than statistic slots, the process-wide lookups fell
 * when the domains closed: query_stats(NULL) must keep counting every
 * domain, closed ones included, whichever slot it had. */
static void
test_process_wide_counts_keep_every_domain_past_the_stat_slots(void)
{
	static struct mrl_cache_domain *doms[DOMAINS];
	struct fi_mrlease_stats open_st, st, prev;
	struct mrl_domain_config dconf;
	struct mrl_cache_config config = {0};
	struct mrl_registration *reg;
	struct mrl_cache *cache;
	struct creg creg;
	int opened = 0;

	creg_init(&creg, NULL, 0);
	dconf = creg_domain_config(&creg);
	CHECK_FI(mrl_cache_create(&config, &cache));
	/* Each domain leases while the later ones open, so the domains on the
	 * shared slot start counting at different points. */
	for (int i = 0; i < DOMAINS; i++) {
		if (mrl_cache_domain_open(cache, &dconf, &doms[i]))
			break;
		opened++;
		for (int d = 0; d <= i; d++) {
			for (int k = 0; k < 3; k++) {
				if (mrl_cache_acquire(doms[d], P(d), P(d) + 64,
						      &reg))
					break;
				mrl_cache_lease_release(reg);
			}
		}
	}
	mrl_cache_stats(cache, &open_st);
	prev = open_st;
	/* Oldest first, then the rest: the shared slot's first domain goes
	 * while the others still count on it. */
	for (int i = 0; i < opened; i++) {
		mrl_cache_domain_close(doms[i]);
		mrl_cache_stats(cache, &st);
		CHECK_MSG(st.lookups >= prev.lookups && st.hits >= prev.hits,
			  "closing domain %d: lookups %llu -> %llu, hits %llu "
			  "-> %llu",
			  i, (unsigned long long) prev.lookups,
			  (unsigned long long) st.lookups,
			  (unsigned long long) prev.hits,
			  (unsigned long long) st.hits);
		prev = st;
	}
	CHECK_EQ(DOMAINS, opened);
	CHECK_EQ(open_st.lookups, st.lookups);
	CHECK_EQ(open_st.hits, st.hits);
	CHECK_EQ(0, st.leases);
	CHECK_EQ((long long) DOMAINS * (DOMAINS + 1) / 2 * 3,
		 (long long) st.lookups);
	CHECK_EQ(DOMAINS, st.registrations);
	CHECK_EQ(DOMAINS, st.deregistrations);
	mrl_cache_destroy(cache);
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* ---- caps restored when leases end -------------------------------------- */

enum { BURST = 64 };

/* With FI_MRLEASE_MAX_COUNT=1, 64 operations in flight left 64 entries
 * cached after they completed, until the next miss: on a pinning provider
 * that is memory pinned beyond the cap for as long as traffic stops. */
static void
test_caps_restored_when_the_last_lease_of_a_burst_goes(void)
{
	struct mrl_registration *held[BURST], *again, *r;
	struct fi_mrlease_stats st;
	struct mrl_cache_domain *dom;
	struct mrl_cache *cache;
	struct creg creg;

	CHECK_FI(open_cache(1, page_size, &creg, &cache, &dom));
	for (int i = 0; i < BURST; i++)
		CHECK_FI(mrl_cache_acquire(dom, P(2 * i), P(2 * i) + 64,
					   &held[i]));
	/* Every entry is leased: over the caps rather than evicting a lease. */
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(BURST, st.entries);
	/* An entry over the caps still serves hits while leased... */
	CHECK_FI(mrl_cache_acquire(dom, P(2), P(2) + 8, &again));
	CHECK_PTR(held[1], again);
	CHECK_EQ(BURST, atomic_load(&creg.registered));
	/* ...and is not evicted while one of its leases remains. */
	mrl_cache_lease_release(held[1]);
	r = mrl_cache_lookup(dom, P(2), P(2) + 8);
	CHECK_PTR(again, r);
	mrl_cache_lease_release(r);
	for (int i = 0; i < BURST; i++)
		if (i != 1)
			mrl_cache_lease_release(held[i]);
	mrl_cache_domain_stats(dom, &st);
	CHECK_MSG(st.entries == 1, "%llu entries left over the cap of 1",
		  (unsigned long long) st.entries);
	CHECK(st.registered_bytes <= page_size);
	CHECK_EQ(1, st.registrations - st.deregistrations);
	mrl_cache_lease_release(again);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(1, st.entries);
	CHECK(st.registered_bytes <= page_size);
	CHECK_EQ(1, atomic_load(&creg.live));
	CHECK_EQ(BURST - 1, st.evictions);
	CHECK_EQ(0, st.leases);
	/* The survivor is a plain entry again: hit, released, kept. */
	CHECK_FI(mrl_cache_acquire(dom, P(2), P(2) + 8, &r));
	mrl_cache_lease_release(r);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(1, st.entries);
	CHECK_EQ(BURST, atomic_load(&creg.registered));
	mrl_cache_destroy(cache);
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* The bytes cap alone: a burst of wide operands leaves max_size bytes. */
static void
test_size_cap_restored_when_leases_end(void)
{
	struct mrl_registration *held[8];
	struct fi_mrlease_stats st;
	struct mrl_cache_domain *dom;
	struct mrl_cache *cache;
	struct creg creg;

	CHECK_FI(open_cache(0, 4 * page_size, &creg, &cache, &dom));
	for (int i = 0; i < 8; i++)
		CHECK_FI(mrl_cache_acquire(dom, P(8 * i), P(8 * i + 3),
					   &held[i]));
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(8 * 3 * page_size, st.registered_bytes);
	for (int i = 0; i < 8; i++)
		mrl_cache_lease_release(held[i]);
	mrl_cache_domain_stats(dom, &st);
	CHECK_MSG(st.registered_bytes <= 4 * page_size,
		  "%llu bytes over a cap of %llu",
		  (unsigned long long) st.registered_bytes,
		  (unsigned long long) (4 * page_size));
	CHECK_EQ(1, st.entries);
	mrl_cache_destroy(cache);
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* An entry over the caps whose leases outlive an invalidate, or its domain,
 * closes once, at its last release, like any retired entry. */
static void
test_entry_over_caps_retired_while_leased_closes_once(void)
{
	struct mrl_registration *held[4];
	struct fi_mrlease_stats st;
	struct mrl_cache_domain *dom;
	struct mrl_cache *cache;
	struct creg creg;

	CHECK_FI(open_cache(1, 0, &creg, &cache, &dom));
	for (int i = 0; i < 4; i++)
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 64, &held[i]));
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(1)));
	CHECK(mrl_cache_lookup(dom, P(0), P(0) + 8) == NULL);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(1, st.retired_leased);
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(held[0]);
	CHECK_EQ(1, atomic_load(&creg.closed));
	mrl_cache_lease_release(held[1]); /* settles: evicted, over the cap */
	CHECK_EQ(2, atomic_load(&creg.closed));
	mrl_cache_domain_close(dom);
	CHECK_EQ(2, atomic_load(&creg.closed));
	mrl_cache_lease_release(held[2]);
	mrl_cache_lease_release(held[3]);
	CHECK_EQ(4, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
	mrl_cache_destroy(cache);
}

/* ---- caps under threads -------------------------------------------------- */

enum {
	CAP_THREADS = 4,
	CAP_RANGES = 24,
	CAP_ROUNDS = 4000,
	CAP_MAX = 3,
	CAP_HELD = 4
};

struct capped {
	struct mrl_cache *cache;
	struct mrl_cache_domain *dom;
	atomic_int done;
	atomic_int bad;
};

/* Each thread holds a few leases at once (over the cap together), hits
 * others' entries, releases in another order, while thread 0 also
 * invalidates: every entry is settled by exactly one release. */
static void *
capped_worker(void *p)
{
	struct capped *c = ((void **) p)[0];
	unsigned id = (unsigned) (uintptr_t) ((void **) p)[1];
	struct mrl_registration *held[CAP_HELD] = {0};
	unsigned seed = id * 2654435761u + 1;

	for (int n = 0; n < CAP_ROUNDS; n++) {
		unsigned slot = (unsigned) n % CAP_HELD;
		uintptr_t at;

		seed = seed * 1103515245u + 12345u;
		at = P((seed >> 16) % CAP_RANGES);
		if (held[slot])
			mrl_cache_lease_release(held[slot]);
		held[slot] = NULL;
		if (mrl_cache_acquire(c->dom, at, at + 64, &held[slot])) {
			atomic_fetch_add(&c->bad, 1);
			held[slot] = NULL;
		} else if (held[slot]->base > at || held[slot]->end < at + 64) {
			atomic_fetch_add(&c->bad, 1);
		}
		if (id == 0 && n % 7 == 0)
			mrl_cache_invalidate(c->cache, at, at + page_size);
	}
	for (int i = 0; i < CAP_HELD; i++)
		if (held[i])
			mrl_cache_lease_release(held[i]);
	atomic_fetch_add(&c->done, 1);
	return NULL;
}

static void
test_caps_restored_under_threads_and_each_registration_closes_once(void)
{
	void *args[CAP_THREADS][2];
	pthread_t th[CAP_THREADS];
	struct fi_mrlease_stats st;
	struct capped c = {0};
	struct creg creg;
	int started = 0;

	CHECK_FI(open_cache(CAP_MAX, 0, &creg, &c.cache, &c.dom));
	for (int i = 0; i < CAP_THREADS; i++) {
		args[i][0] = &c;
		args[i][1] = (void *) (uintptr_t) i;
		if (pthread_create(&th[i], NULL, capped_worker, args[i]))
			break;
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(CAP_THREADS, started);
	CHECK_EQ(0, atomic_load(&c.bad));
	mrl_cache_domain_stats(c.dom, &st);
	CHECK_EQ(0, st.leases);
	CHECK_MSG(st.entries <= CAP_MAX, "%llu entries over a cap of %d",
		  (unsigned long long) st.entries, CAP_MAX);
	CHECK_EQ(st.entries, atomic_load(&creg.live));
	CHECK_EQ(st.registrations - st.deregistrations, st.entries);
	mrl_cache_destroy(c.cache);
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	page_size = (uintptr_t) sysconf(_SC_PAGESIZE);
	MRLT_RUN(
		test_stats_snapshots_stay_possible_while_threads_lease_and_invalidate);
	MRLT_RUN(
		test_process_wide_counts_keep_every_domain_past_the_stat_slots);
	MRLT_RUN(test_caps_restored_when_the_last_lease_of_a_burst_goes);
	MRLT_RUN(test_size_cap_restored_when_leases_end);
	MRLT_RUN(test_entry_over_caps_retired_while_leased_closes_once);
	MRLT_RUN(
		test_caps_restored_under_threads_and_each_registration_closes_once);
	MRLT_RUN(test_every_registration_closed_exactly_once);
	return mrlt_done();
}
