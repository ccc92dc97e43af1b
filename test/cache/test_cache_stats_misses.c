/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Why misses missed and what they registered (the miss_* and reg_*_hist
 * fields of struct fi_mrlease_stats) over the counting registrar: each
 * way an entry leaves (eviction, the application's invalidate, the
 * monitor's, a registration kept only for its transfer) makes the next
 * miss at its range count under that reason, every other miss is cold,
 * the reasons add up to the misses, and each registration lands in the
 * bucket of its size.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "common/cache_registrar.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "common/mrlt.h"

static uintptr_t page_size;
#define P(n) ((uintptr_t) 0x500000000ull + (uintptr_t) (n) *page_size)

struct fixture {
	struct creg creg;
	struct mrl_cache *cache;
	struct mrl_cache_domain *dom;
};

static int
fixture_open(struct fixture *f, size_t max_count,
	     const struct mrl_registrar *registrar)
{
	struct mrl_cache_config config = {.max_count = max_count};
	struct mrl_domain_config dconf;
	int ret;

	creg_init(&f->creg, NULL, 0);
	dconf = creg_domain_config(&f->creg);
	if (registrar)
		dconf.registrar = registrar;
	ret = mrl_cache_create(&config, &f->cache);
	if (ret)
		return ret;
	ret = mrl_cache_domain_open(f->cache, &dconf, &f->dom);
	if (ret)
		mrl_cache_destroy(f->cache);
	return ret;
}

/* One lease of [P(n), P(n + pages)), released at once. */
static int
touch(struct fixture *f, unsigned n, unsigned pages)
{
	struct mrl_registration *reg;
	int ret = mrl_cache_acquire(f->dom, P(n), P(n + pages), &reg);

	if (!ret)
		mrl_cache_lease_release(reg);
	return ret;
}

static struct fi_mrlease_stats
stats_of(struct fixture *f)
{
	struct fi_mrlease_stats s;

	mrl_cache_domain_stats(f->dom, &s);
	return s;
}

static uint64_t
reasons_sum(const struct fi_mrlease_stats *s)
{
	return s->miss_cold + s->miss_evicted + s->miss_invalidated +
	       s->miss_monitor + s->miss_churn + s->miss_not_retained;
}

/* Without it a user cannot tell a cache too small (evicted) from an
 * allocator returning memory (invalidated): the two fixes differ. */
static void
test_miss_after_application_invalidate_counts_invalidated(void)
{
	struct fi_mrlease_stats s;
	struct fixture f;

	CHECK_FI(fixture_open(&f, 0, NULL));
	CHECK_FI(touch(&f, 0, 1));
	CHECK_FI(touch(&f, 0, 1)); /* a hit */
	CHECK_FI(mrl_cache_invalidate(f.cache, P(0), P(1)));
	CHECK_FI(touch(&f, 0, 1));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(2, s.misses);
	CHECK_EQ(1, s.miss_cold);
	CHECK_EQ(1, s.miss_invalidated);
	CHECK_EQ(s.misses, reasons_sum(&s));
}

/* A working set over FI_MRLEASE_MAX_COUNT shows as evicted misses. */
static void
test_miss_after_eviction_counts_evicted(void)
{
	struct fi_mrlease_stats s;
	struct fixture f;

	CHECK_FI(fixture_open(&f, 1, NULL));
	CHECK_FI(touch(&f, 0, 1));
	CHECK_FI(touch(&f, 4, 1)); /* evicts P(0) */
	CHECK_FI(touch(&f, 0, 1)); /* evicts P(4) */
	CHECK_FI(touch(&f, 4, 1));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(4, s.misses);
	CHECK_EQ(2, s.miss_cold);
	CHECK_EQ(2, s.miss_evicted);
	CHECK(s.evictions >= 2);
	CHECK_EQ(s.misses, reasons_sum(&s));
}

/* The monitor's invalidations are told apart from the application's. */
static void
test_miss_after_monitor_invalidate_counts_monitor(void)
{
	struct fi_mrlease_stats s;
	struct fixture f;

	CHECK_FI(fixture_open(&f, 0, NULL));
	CHECK_FI(touch(&f, 0, 2));
	CHECK_FI(mrl_cache_invalidate_deferred(f.cache, P(1), P(2)));
	mrl_cache_close_deferred(f.cache);
	CHECK_FI(touch(&f, 0, 2));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(1, s.miss_monitor);
	CHECK_EQ(0, s.miss_invalidated);
	CHECK_EQ(s.misses, reasons_sum(&s));
}

static bool
never_watched(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx, (void) lo, (void) hi;
	return false;
}

static void
released_noop(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx, (void) lo, (void) hi;
}

/* Registrations kept only for their transfer miss every time: a pinning
 * provider without a monitor (not retained) or memory that churns (a
 * watched domain declining a range). */
static void
test_transient_registrations_count_not_retained_or_churn(void)
{
	struct mrl_registrar unwatched = creg_registrar, churning;
	struct fi_mrlease_stats s;
	struct fixture f;

	unwatched.watch = never_watched;
	churning = unwatched;
	churning.released = released_noop;

	CHECK_FI(fixture_open(&f, 0, &unwatched));
	for (int i = 0; i < 3; i++)
		CHECK_FI(touch(&f, 0, 1));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(3, s.misses);
	CHECK_EQ(1, s.miss_cold);
	CHECK_EQ(2, s.miss_not_retained);
	CHECK_EQ(0, s.miss_churn);

	CHECK_FI(fixture_open(&f, 0, &churning));
	for (int i = 0; i < 3; i++)
		CHECK_FI(touch(&f, 0, 1));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(1, s.miss_cold);
	CHECK_EQ(2, s.miss_churn);
	CHECK_EQ(0, s.miss_not_retained);
}

/* The histograms answer "what sizes do we register, how long does the
 * provider take": every registration in exactly one bucket of each. */
static void
test_registrations_land_in_the_bucket_of_their_size(void)
{
	struct fi_mrlease_stats s;
	struct fixture f;
	uint64_t sizes = 0, times = 0;
	unsigned b64k;

	CHECK_FI(fixture_open(&f, 0, NULL));
	CHECK_FI(touch(&f, 0, 1)); /* one page */
	CHECK_FI(touch(&f, 100, 65536 / (unsigned) page_size)); /* 64 KiB */
	CHECK_FI(touch(&f, 200, 65536 / (unsigned) page_size));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	for (unsigned i = 0; i < FI_MRLEASE_HIST_BUCKETS; i++) {
		sizes += s.reg_size_hist[i];
		times += s.reg_ns_hist[i];
	}
	CHECK_EQ(3, s.registrations);
	CHECK_EQ(3, sizes);
	CHECK_EQ(3, times);
	/* 64 KiB = 2^16: bucket 16 - FI_MRLEASE_SIZE_HIST_SHIFT. */
	b64k = 16 - FI_MRLEASE_SIZE_HIST_SHIFT;
	CHECK_EQ(2, s.reg_size_hist[b64k]);
	if (page_size == 4096)
		CHECK_EQ(1, s.reg_size_hist[0]);
}

/* An entry retired for a reason not recorded (domain close, replacement)
 * or an overwritten ghost leaves a cold miss, never a wrong reason: the
 * ghost is taken by the first miss that reads it. */
static void
test_a_reason_is_counted_once(void)
{
	struct fi_mrlease_stats s;
	struct fixture f;

	CHECK_FI(fixture_open(&f, 0, NULL));
	CHECK_FI(touch(&f, 0, 1));
	CHECK_FI(mrl_cache_invalidate(f.cache, P(0), P(1)));
	CHECK_FI(touch(&f, 0, 1));
	CHECK_FI(mrl_cache_invalidate(f.cache, P(0), P(1)));
	CHECK_FI(touch(&f, 0, 1));
	s = stats_of(&f);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(3, s.misses);
	CHECK_EQ(1, s.miss_cold);
	CHECK_EQ(2, s.miss_invalidated);
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	page_size = (uintptr_t) sysconf(_SC_PAGESIZE);
	MRLT_RUN(test_miss_after_application_invalidate_counts_invalidated);
	MRLT_RUN(test_miss_after_eviction_counts_evicted);
	MRLT_RUN(test_miss_after_monitor_invalidate_counts_monitor);
	MRLT_RUN(test_transient_registrations_count_not_retained_or_churn);
	MRLT_RUN(test_registrations_land_in_the_bucket_of_their_size);
	MRLT_RUN(test_a_reason_is_counted_once);
	return mrlt_done();
}
