/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache as a data structure, over the counting registrar: covering
 * lookups, replacement, invalidate edges, documented range rules, capacity,
 * failures, keys, access, domains, stats. No memory is registered for real, so
 * addresses are synthetic (page multiples far from anything mapped).
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "common/cache_registrar.h"
#include "1-cache/mrl_arena.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "common/mrlt.h"

static uintptr_t page_size;
#define P(n) ((uintptr_t) 0x100000000ull + (uintptr_t) (n) *page_size)

static struct mrl_cache *cache;
static struct creg creg;
static struct mrl_cache_domain *dom;

static int
fixture_open_config(const struct mrl_cache_config *config)
{
	struct mrl_domain_config dconf;
	int ret;

	creg_init(&creg, NULL, 0);
	dconf = creg_domain_config(&creg);
	ret = mrl_cache_create(config, &cache);
	if (ret)
		return ret;
	return mrl_cache_domain_open(cache, &dconf, &dom);
}

static int
fixture_open(size_t max_count, size_t max_size)
{
	struct mrl_cache_config config = {.max_count = max_count,
					  .max_size = max_size};

	return fixture_open_config(&config);
}

static void
fixture_close(void)
{
	mrl_cache_destroy(cache);
	cache = NULL;
	dom = NULL;
}

/* Register [lo, hi) through the counting registrar and track it; returns the
 * caller's lease (NULL on failure). */
static struct mrl_registration *
track(struct mrl_cache_domain *d, struct creg *cr, uintptr_t lo, uintptr_t hi)
{
	struct mrl_registration *reg;
	void *mr, *desc;

	if (creg_registrar.reg(cr, (void *) lo, hi - lo, MRL_CACHE_ACCESS, 0,
			       &mr, &desc))
		return NULL;
	if (mrl_cache_track(d, lo, hi, mr, desc, &reg)) {
		creg_registrar.close(cr, mr);
		return NULL;
	}
	return reg;
}

static unsigned
refs(struct mrl_registration *reg)
{
	return mrl_registration_refs(reg);
}

/* An index keyed by base only answers with the nearest base: a narrow entry
 * in front of a wide one made every operand behind it miss and re-register. */
static void
test_lookup_finds_wide_entry_behind_narrow_one(void)
{
	struct mrl_registration *wide, *narrow, *got;

	CHECK_FI(fixture_open(0, 0));
	wide = track(dom, &creg, P(0), P(16));
	narrow = track(dom, &creg, P(8), P(9));
	CHECK(wide && narrow);
	for (int i = 1; i < 8; i++) {
		struct mrl_registration *r = track(dom, &creg, P(i), P(i) + 64);

		CHECK(r);
		mrl_cache_lease_release(r);
	}
	got = mrl_cache_lookup(dom, P(10), P(11));
	CHECK(got == wide);
	mrl_cache_lease_release(got);
	got = mrl_cache_lookup(dom, P(8) + 10, P(8) + 20);
	CHECK(got == wide || got == narrow);
	mrl_cache_lease_release(got);
	CHECK(mrl_cache_lookup(dom, P(15), P(17)) == NULL);
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(wide);
	mrl_cache_lease_release(narrow);
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* Brute force against the index, through inserts, replacements and
 * invalidates: a wrong max-end after a rotation silently misses entries. */
static void
test_covering_lookup_agrees_with_brute_force(void)
{
	enum { N = 3000, SPACE = 1 << 14, Q = 20000 };
	static uintptr_t lo[SPACE], hi[SPACE];
	struct mrl_registration *reg;
	uintptr_t s, e;
	bool expect;

	CHECK_FI(fixture_open(1u << 20, 0));
	srand(7);
	for (int i = 0; i < N; i++) {
		int b = rand() % SPACE, len = 1 + rand() % 64;

		if (i % 3 == 0)
			len = 1 + rand() % 2048; /* some wide ones */
		lo[b] = P(b);
		hi[b] = P(b + len);
		reg = track(dom, &creg, lo[b], hi[b]); /* replaces at b */
		CHECK(reg);
		mrl_cache_lease_release(reg);
		if (i % 10 == 9) {
			int c = rand() % SPACE;
			uintptr_t is = P(c), ie = P(c) + page_size / 2;

			CHECK_FI(mrl_cache_invalidate(cache, is, ie));
			for (int j = 0; j < SPACE; j++)
				if (hi[j] && lo[j] < ie && is < hi[j])
					lo[j] = hi[j] = 0;
		}
	}
	for (int q = 0; q < Q; q++) {
		int b = rand() % SPACE;

		s = P(b) + (uintptr_t) (rand() % 4096);
		e = s + 1 + (uintptr_t) (rand() % (q % 2 ? 64 : 64 * 4096));
		expect = false;
		for (int j = 0; j < SPACE && !expect; j++)
			expect = hi[j] && lo[j] <= s && e <= hi[j];
		reg = mrl_cache_lookup(dom, s, e);
		CHECK_MSG(expect == (reg != NULL),
			  "query %d [%#lx, %#lx): expected %d", q,
			  (unsigned long) s, (unsigned long) e, expect);
		if (reg) {
			CHECK(reg->base <= s && e <= reg->end);
			CHECK(hi[(reg->base - P(0)) / page_size] == reg->end);
			mrl_cache_lease_release(reg);
		}
	}
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* Invalidate skips its index walk when a lock-free page filter says nothing
 * is there; a wrong "nothing" would leave stale registrations cached. Entries
 * counted at page, 2 MiB and 1 GiB granularity must all be found. */
static void
test_invalidate_finds_entries_counted_at_every_filter_level(void)
{
	const uintptr_t mib2 = 2ull << 20, gib = 1ull << 30, g0 = 64 * gib;
	struct mrl_registration *r;
	struct {
		uintptr_t lo, hi, probe;
	} cases[] = {
		{g0 + 5 * page_size, g0 + 7 * page_size,
		 g0 + 6 * page_size + 10},
		{g0 + mib2, g0 + 3 * mib2, g0 + 2 * mib2 + 100 * page_size},
		{g0 + gib - page_size, g0 + 3 * gib + page_size,
		 g0 + 2 * gib + 7},
		{g0 + 5 * gib + 3, g0 + 5 * gib + 9,
		 g0 + 5 * gib + 8}, /* unaligned */
	};

	CHECK_FI(fixture_open(0, 0));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = track(dom, &creg, cases[i].lo, cases[i].hi);
		CHECK(r);
		mrl_cache_lease_release(r);
		/* A miss right next to it leaves it alone... */
		CHECK_FI(mrl_cache_invalidate(cache, cases[i].hi,
					      cases[i].hi + 1));
		CHECK_FI(mrl_cache_invalidate(cache, cases[i].lo - 1,
					      cases[i].lo));
		r = mrl_cache_lookup(dom, cases[i].lo, cases[i].hi);
		CHECK(r);
		mrl_cache_lease_release(r);
		/* ...one byte inside retires it. */
		CHECK_FI(mrl_cache_invalidate(cache, cases[i].probe,
					      cases[i].probe + 1));
		CHECK(mrl_cache_lookup(dom, cases[i].lo, cases[i].hi) == NULL);
		CHECK_EQ(i + 1, atomic_load(&creg.closed));
	}
	/* Everything gone: a second round over the same places is a miss. */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_FI(mrl_cache_invalidate(cache, cases[i].lo, cases[i].hi));
	fixture_close();
}

/* track() at a base already present must supersede it without closing a
 * registration an in-flight operation still holds. */
static void
test_track_at_same_base_replaces_and_old_lease_stays_open(void)
{
	struct mrl_registration *old, *new, *got;

	CHECK_FI(fixture_open(0, 0));
	old = track(dom, &creg, P(0), P(4));
	CHECK(old);
	new = track(dom, &creg, P(0), P(8));
	CHECK(new &&new != old);
	got = mrl_cache_lookup(dom, P(0), P(1));
	CHECK(got == new);
	mrl_cache_lease_release(got);
	CHECK_EQ(1, refs(old));
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(old);
	CHECK_EQ(1, atomic_load(&creg.closed));
	mrl_cache_lease_release(new);
	fixture_close();
	CHECK_EQ(2, atomic_load(&creg.closed));
}

/* End is exclusive: an allocator purging the page just before or after a
 * registration must not throw away a neighbour that only touches it. */
static void
test_invalidate_spares_ranges_that_only_touch(void)
{
	struct mrl_registration *reg, *got;

	CHECK_FI(fixture_open(0, 0));
	reg = track(dom, &creg, P(4), P(8));
	CHECK(reg);
	mrl_cache_lease_release(reg);
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(4)));
	CHECK_FI(mrl_cache_invalidate(cache, P(8), P(12)));
	got = mrl_cache_lookup(dom, P(4), P(8));
	CHECK(got == reg);
	mrl_cache_lease_release(got);
	CHECK_EQ(0, atomic_load(&creg.closed));
	CHECK_FI(mrl_cache_invalidate(cache, P(8) - 1, P(8)));
	CHECK(mrl_cache_lookup(dom, P(4), P(5)) == NULL);
	CHECK_EQ(1, atomic_load(&creg.closed));

	reg = track(dom, &creg, P(4), P(8));
	CHECK(reg);
	mrl_cache_lease_release(reg);
	CHECK_FI(mrl_cache_invalidate(cache, P(4), P(4) + 1));
	CHECK(mrl_cache_lookup(dom, P(6), P(7)) == NULL);
	CHECK_EQ(2, atomic_load(&creg.closed));
	fixture_close();
}

/* Zero-length and wrapping ranges come from arithmetic bugs in callers; the
 * cache must answer as documented and never register or retire for them. */
static void
test_zero_length_and_wrapping_ranges_follow_documented_rules(void)
{
	struct mrl_registration *reg, *got;

	CHECK_FI(fixture_open(0, 0));
	reg = track(dom, &creg, P(4), P(8));
	CHECK(reg);
	mrl_cache_lease_release(reg);
	CHECK_EQ(0, mrl_cache_invalidate(cache, P(5), P(5)));
	CHECK_EQ(-FI_EINVAL, mrl_cache_invalidate(cache, P(7), P(5)));
	got = mrl_cache_lookup(dom, P(4), P(8));
	CHECK(got == reg);
	mrl_cache_lease_release(got);

	CHECK_EQ(-FI_EINVAL, mrl_cache_acquire(dom, P(5), P(5), &got));
	CHECK_EQ(-FI_EINVAL, mrl_cache_acquire(dom, P(6), P(5), &got));
	CHECK_EQ(-FI_EINVAL,
		 mrl_cache_acquire(dom, UINTPTR_MAX - 10, UINTPTR_MAX, &got));
	CHECK(mrl_cache_lookup(dom, P(5), P(5)) == NULL);
	CHECK_EQ(-FI_EINVAL, mrl_cache_pin(dom, P(5), 0, &got));
	CHECK_EQ(-FI_EINVAL, mrl_cache_pin(dom, UINTPTR_MAX - page_size + 1,
					   2 * page_size, &got));
	CHECK_EQ(-FI_EINVAL, mrl_cache_pin(dom, UINTPTR_MAX - 10, 5, &got));
	CHECK_EQ(1, atomic_load(&creg.registered));
	CHECK_EQ(0, atomic_load(&creg.closed));
	fixture_close();
	CHECK_EQ(1, atomic_load(&creg.closed));
}

/* Evicting an entry an operation still uses, or a pinned arena, would make
 * the next lookup register again (or, with a bug, close it under a post). */
static void
test_eviction_never_touches_leased_or_pinned_entries(void)
{
	struct mrl_registration *pin, *held[3], *r;
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(4, 0));
	CHECK_FI(mrl_cache_pin(dom, P(100), page_size, &pin));
	for (int i = 0; i < 3; i++)
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &held[i]));
	for (int i = 10; i < 20; i++) {
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &r));
		mrl_cache_lease_release(r);
	}
	mrl_cache_domain_stats(dom, &st);
	CHECK(st.evictions >= 9);
	CHECK(st.entries <= 5);
	r = mrl_cache_lookup(dom, P(100), P(100) + 8);
	CHECK(r == pin);
	mrl_cache_lease_release(r);
	for (int i = 0; i < 3; i++) {
		r = mrl_cache_lookup(dom, P(i), P(i) + 8);
		CHECK(r == held[i]);
		mrl_cache_lease_release(r);
	}
	/* Everything leased: over the limit rather than evicting a lease. */
	for (int i = 30; i < 33; i++)
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &r));
	mrl_cache_domain_stats(dom, &st);
	CHECK(st.entries >= 4);
	r = mrl_cache_lookup(dom, P(0), P(0) + 8);
	CHECK(r == held[0]);
	mrl_cache_lease_release(r);
	for (int i = 0; i < 3; i++)
		mrl_cache_lease_release(held[i]);
	for (int i = 30; i < 33; i++) {
		r = mrl_cache_lookup(dom, P(i), P(i) + 8);
		CHECK(r);
		mrl_cache_lease_release(r); /* the lookup's */
		mrl_cache_lease_release(r); /* the acquire's */
	}
	mrl_cache_unpin(pin);
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* max_size bounds registered bytes (pinned memory) as max_count bounds MRs. */
/* CLOCK is what keeps a send loop's buffers cached under pressure: an entry
 * hit since the last sweep must outlive one nobody touched. */
static void
test_eviction_spares_entries_hit_since_the_last_sweep(void)
{
	struct mrl_registration *r, *got[4];
	struct fi_mrlease_stats st;
	int gone = -1, present = 0;
	uintptr_t untouched = 0;

	CHECK_FI(fixture_open(4, 0));
	for (int i = 0; i < 5;
	     i++) { /* the fifth evicts one of the first four */
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &r));
		mrl_cache_lease_release(r);
	}
	for (int i = 0; i < 4; i++) {
		got[i] = mrl_cache_lookup(dom, P(i), P(i) + 8);
		if (!got[i])
			gone = i;
	}
	CHECK(gone >= 0);
	/* Hit every survivor but the first one found: that one must go next. */
	for (int i = 0, skipped = 0; i < 4; i++) {
		if (!got[i])
			continue;
		if (!skipped++) {
			untouched = got[i]->base; /* not hit from now on */
			mrl_cache_lease_release(got[i]);
			continue;
		}
		mrl_cache_lease_release(got[i]); /* hit: used bit set */
	}
	CHECK_FI(mrl_cache_acquire(dom, P(9), P(9) + 8, &r));
	mrl_cache_lease_release(r);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(2, st.evictions);
	CHECK(mrl_cache_lookup(dom, untouched, untouched + 8) == NULL);
	for (int i = 0; i < 4; i++) {
		if (i == gone || P(i) == untouched)
			continue;
		r = mrl_cache_lookup(dom, P(i), P(i) + 8);
		CHECK_MSG(r != NULL, "hit entry %d evicted", i);
		if (r) {
			present++;
			mrl_cache_lease_release(r);
		}
	}
	CHECK_EQ(2, present);
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

static void
test_eviction_keeps_registered_bytes_under_max_size(void)
{
	struct mrl_registration *r;
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 8 * page_size));
	for (int i = 0; i < 20; i++) {
		CHECK_FI(mrl_cache_acquire(dom, P(4 * i), P(4 * i + 2), &r));
		mrl_cache_lease_release(r);
	}
	mrl_cache_domain_stats(dom, &st);
	CHECK(st.entries <= 4);
	CHECK(st.registered_bytes <= 8 * page_size);
	fixture_close();
}

/* A failed registration that left an entry behind would hand out a handle
 * the provider never created. */
static void
test_failing_registrar_leaves_nothing_behind(void)
{
	struct mrl_registration *r;
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 0));
	atomic_store(&creg.fail_code, -FI_EIO);
	CHECK_EQ(-FI_EIO, mrl_cache_acquire(dom, P(0), P(1), &r));
	CHECK_EQ(-FI_EIO, mrl_cache_pin(dom, P(0), page_size, &r));
	CHECK(mrl_cache_lookup(dom, P(0), P(1)) == NULL);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(0, st.entries);
	CHECK_EQ(0, st.registrations);
	CHECK_EQ(0, st.registered_bytes);
	CHECK_EQ(0, st.leases);
	atomic_store(&creg.fail_code, 0);
	CHECK_FI(mrl_cache_acquire(dom, P(0), P(1), &r));
	mrl_cache_lease_release(r);
	fixture_close();
	CHECK_EQ(1, atomic_load(&creg.closed));
}

/* Providers refuse registrations when a device or RLIMIT_MEMLOCK is full; a
 * cache holding idle registrations must give them back and try again once. */
static void
test_resource_refusal_evicts_unleased_entries_and_retries_once(void)
{
	struct mrl_registration *r, *held[3];
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 0));
	atomic_store(&creg.max_live, 3);
	for (int i = 0; i < 3; i++) {
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &r));
		mrl_cache_lease_release(r);
	}
	CHECK_FI(mrl_cache_acquire(dom, P(10), P(10) + 8, &r));
	mrl_cache_domain_stats(dom, &st);
	CHECK(st.evictions >= 1);
	CHECK_EQ(1, atomic_load(&creg.refusals));
	mrl_cache_lease_release(r);

	/* All leased: one eviction round frees nothing, the retry fails. */
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(64)));
	for (int i = 0; i < 3; i++)
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &held[i]));
	atomic_store(&creg.refusals, 0);
	CHECK_EQ(-FI_ENOSPC, mrl_cache_acquire(dom, P(20), P(20) + 8, &r));
	CHECK_EQ(2, atomic_load(&creg.refusals));
	CHECK(mrl_cache_lookup(dom, P(20), P(20) + 8) == NULL);
	for (int i = 0; i < 3; i++)
		mrl_cache_lease_release(held[i]);
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
}

/* Providers without FI_MR_PROV_KEY take the caller's key: cache keys must
 * stay out of the application's range and survive a key already taken. */
static void
test_cache_keys_come_from_top_half_and_skip_taken_keys(void)
{
	struct mrl_registration *r;
	struct mrl_domain_config dconf;
	struct mrl_cache_domain *small, *prov;
	struct creg creg2, creg3;
	uint64_t k1, k2;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, P(0), P(1), &r));
	k1 = atomic_load(&creg.last_key);
	CHECK(k1 >= (1ull << 63));
	mrl_cache_lease_release(r);
	atomic_store(&creg.enokey_left, 3);
	CHECK_FI(mrl_cache_acquire(dom, P(2), P(3), &r));
	k2 = atomic_load(&creg.last_key);
	CHECK_EQ(3, atomic_load(&creg.refusals));
	CHECK(k2 < k1 && k2 >= (1ull << 63));
	mrl_cache_lease_release(r);

	creg_init(&creg2, NULL, 0);
	dconf = creg_domain_config(&creg2);
	dconf.mr_key_size = 2;
	CHECK_FI(mrl_cache_domain_open(cache, &dconf, &small));
	CHECK_FI(mrl_cache_acquire(small, P(0), P(1), &r));
	CHECK_EQ(0xffff, atomic_load(&creg2.last_key));
	mrl_cache_lease_release(r);

	creg_init(&creg3, NULL, 0);
	dconf = creg_domain_config(&creg3);
	dconf.prov_key = true;
	CHECK_FI(mrl_cache_domain_open(cache, &dconf, &prov));
	CHECK_FI(mrl_cache_acquire(prov, P(0), P(1), &r));
	CHECK_EQ(0, atomic_load(&creg3.last_key));
	mrl_cache_lease_release(r);
	fixture_close();
	CHECK_EQ(1, atomic_load(&creg2.closed));
	CHECK_EQ(1, atomic_load(&creg3.closed));
}

/* A cache registration shared between operations must never expose memory
 * to peers: local access only. */
static void
test_cache_registrations_are_local_only(void)
{
	struct mrl_registration *r;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, P(0), P(1), &r));
	CHECK_EQ(FI_SEND | FI_RECV | FI_READ | FI_WRITE,
		 atomic_load(&creg.last_access));
	mrl_cache_lease_release(r);
	CHECK_FI(mrl_cache_pin(dom, P(4), page_size, &r));
	CHECK_EQ(FI_SEND | FI_RECV | FI_READ | FI_WRITE,
		 atomic_load(&creg.last_access));
	mrl_cache_unpin(r);
	fixture_close();
}

/* A miss registers whole pages around the operand, so neighbours on the same
 * page hit; the registered extent must contain the operand. */
static void
test_miss_registers_the_page_aligned_extent_of_the_operand(void)
{
	struct mrl_registration *r, *n;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, P(0) + 100, P(1) + 5, &r));
	CHECK(r->base == P(0) && r->end == P(2));
	CHECK_FI(mrl_cache_acquire(dom, P(1) + 6, P(1) + 100, &n));
	CHECK(n == r);
	CHECK_EQ(1, atomic_load(&creg.registered));
	mrl_cache_lease_release(n);
	mrl_cache_lease_release(r);
	fixture_close();
}

/* Rule 6 at unit level: the resolver widens, a span not containing the
 * operand is ignored, a hit never asks. */
static void
test_span_resolver_widens_and_foreign_span_is_ignored(void)
{
	struct creg_span ans = {.base = P(0), .len = 16 * page_size};
	struct mrl_registration *r, *n;

	CHECK_FI(fixture_open(0, 0));
	mrl_cache_set_span(dom, creg_span_fn, &ans);
	CHECK_FI(mrl_cache_acquire(dom, P(3), P(3) + 64, &r));
	CHECK(r->base == P(0) && r->end == P(16));
	CHECK_FI(mrl_cache_acquire(dom, P(15), P(16), &n));
	CHECK(n == r);
	CHECK_EQ(1, ans.calls);
	mrl_cache_lease_release(n);
	mrl_cache_lease_release(r);
	ans.base = P(100);
	CHECK_FI(mrl_cache_acquire(dom, P(40), P(40) + 64, &r));
	CHECK(r->base == P(40) && r->end == P(41));
	mrl_cache_lease_release(r);
	CHECK(mrl_cache_lookup(dom, P(100), P(101)) == NULL);
	mrl_cache_set_span(dom, NULL, NULL);
	fixture_close();
}

static void
invalidate_during_reg(void *arg)
{
	uintptr_t *range = arg;

	mrl_cache_invalidate(cache, range[0], range[1]);
}

/* An invalidate that runs while a miss is registering the same pages must
 * keep that registration out of the index, or stale pages stay cached. */
static void
test_invalidate_during_a_miss_keeps_it_out_of_the_index(void)
{
	uintptr_t range[2];
	struct mrl_registration *r;

	CHECK_FI(fixture_open(0, 0));
	range[0] = P(2);
	range[1] = P(3);
	creg.on_reg = invalidate_during_reg;
	creg.on_reg_arg = range;
	CHECK_FI(mrl_cache_acquire(dom, P(2), P(2) + 64, &r));
	CHECK(mrl_cache_lookup(dom, P(2), P(2) + 64) == NULL);
	CHECK_EQ(1, refs(r));
	mrl_cache_lease_release(r);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
}

/* rxm rendezvous over tcp reads each iov from offset 0 of its MR: a lease on
 * a wider entry starting below the operand would make the peer read the wrong
 * bytes, so acquire_based must register exactly [start, end). */
static void
test_acquire_based_registers_exact_range_even_inside_a_wider_entry(void)
{
	uintptr_t s = P(2) + 100, e = P(2) + 300;
	struct mrl_registration *wide, *r, *again;
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 0));
	wide = track(dom, &creg, P(0), P(16));
	CHECK(wide);
	CHECK_FI(mrl_cache_acquire_based(dom, s, e, &r));
	CHECK(r != wide);
	CHECK_EQ(2, atomic_load(&creg.registered));
	CHECK_EQ(s, atomic_load(&creg.last_addr));
	CHECK_EQ(e - s, atomic_load(&creg.last_len));
	CHECK(r->base == s && r->end == e);
	/* Second call, shorter operand at the same base: a hit, nothing new. */
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 150, &again));
	CHECK(again == r);
	mrl_cache_lease_release(again);
	/* From the index (the hot slot now names the wide entry). */
	again = mrl_cache_lookup(dom, P(5), P(6));
	CHECK(again == wide);
	mrl_cache_lease_release(again);
	CHECK_FI(mrl_cache_acquire_based(dom, s, e, &again));
	CHECK(again == r);
	mrl_cache_lease_release(again);
	CHECK_EQ(2, atomic_load(&creg.registered));
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(4, st.lookups);
	CHECK_EQ(3, st.hits);
	CHECK_EQ(1, st.misses);
	/* A base inside the new entry but not at it is not served by it. */
	CHECK_FI(mrl_cache_acquire_based(dom, s + 8, e, &again));
	CHECK(again != r && again->base == s + 8);
	CHECK_EQ(3, atomic_load(&creg.registered));
	mrl_cache_lease_release(again);
	CHECK_EQ(-FI_EINVAL, mrl_cache_acquire_based(dom, s, s, &again));
	CHECK_EQ(-FI_EINVAL, mrl_cache_acquire_based(dom, e, s, &again));
	mrl_cache_lease_release(r);
	mrl_cache_lease_release(wide);
	CHECK_EQ(0, atomic_load(&creg.closed));
	fixture_close();
	CHECK_EQ(3, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* A longer operand at the base of a shorter entry must replace it (as track
 * does) without closing the registration an in-flight send still uses. */
static void
test_acquire_based_replaces_shorter_entry_and_its_lease_stays_open(void)
{
	uintptr_t s = P(4) + 64;
	struct mrl_registration *shorter, *longer, *got;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 100, &shorter));
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 5000, &longer));
	CHECK(longer != shorter);
	CHECK_EQ(2, atomic_load(&creg.registered));
	CHECK_EQ(0, atomic_load(&creg.closed));
	CHECK_EQ(1, refs(shorter)); /* the index let go, the lease holds */
	got = mrl_cache_lookup(dom, s, s + 50);
	CHECK(got == longer);
	mrl_cache_lease_release(got);
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 100, &got));
	CHECK(got == longer);
	mrl_cache_lease_release(got);
	mrl_cache_lease_release(shorter);
	CHECK_EQ(1, atomic_load(&creg.closed));
	mrl_cache_lease_release(longer);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
	CHECK_EQ(2, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* An allocator purging the pages of a based entry must drop it, or the next
 * send from recycled memory would use a stale registration. */
static void
test_acquire_based_entry_is_removed_by_invalidate(void)
{
	uintptr_t s = P(6) + 8, range[2] = {P(9), P(10)};
	struct mrl_registration *r, *again;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 32, &r));
	mrl_cache_lease_release(r);
	CHECK_FI(mrl_cache_invalidate(cache, s + 31, s + 32));
	CHECK_EQ(1, atomic_load(&creg.closed));
	CHECK(mrl_cache_lookup(dom, s, s + 1) == NULL);
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 32, &again));
	CHECK_EQ(2, atomic_load(&creg.registered));
	mrl_cache_lease_release(again);
	/* Invalidate while a based miss registers: a lease, never indexed. */
	creg.on_reg = invalidate_during_reg;
	creg.on_reg_arg = range;
	CHECK_FI(mrl_cache_acquire_based(dom, P(9) + 16, P(9) + 48, &r));
	CHECK(mrl_cache_lookup(dom, P(9) + 16, P(9) + 17) == NULL);
	CHECK_EQ(1, refs(r));
	mrl_cache_lease_release(r);
	CHECK_EQ(2, atomic_load(&creg.closed));
	fixture_close();
	CHECK_EQ(3, atomic_load(&creg.registered));
	CHECK_EQ(3, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* Closing one domain (a worker going away) must leave another's entries
 * alone and let its own leased registrations close once, later. */
static void
test_clear_domain_retires_only_its_own_entries(void)
{
	struct mrl_cache_domain *other;
	struct mrl_domain_config dconf;
	struct mrl_registration *mine, *theirs, *r;
	struct creg creg2;

	CHECK_FI(fixture_open(0, 0));
	creg_init(&creg2, NULL, 0);
	dconf = creg_domain_config(&creg2);
	CHECK_FI(mrl_cache_domain_open(cache, &dconf, &other));
	CHECK_FI(mrl_cache_acquire(dom, P(0), P(1), &mine));
	CHECK_FI(mrl_cache_acquire(other, P(0), P(1), &theirs));
	mrl_cache_lease_release(theirs);
	mrl_cache_domain_close(dom);
	CHECK_EQ(1, refs(mine));
	CHECK_EQ(0, atomic_load(&creg.closed));
	r = mrl_cache_lookup(other, P(0), P(1));
	CHECK(r == theirs);
	mrl_cache_lease_release(r);
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(1)));
	CHECK_EQ(1, atomic_load(&creg2.closed));
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(mine);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* The counters are what operators read to size the cache: they must add up. */
static void
test_stats_count_lookups_hits_misses_and_leases(void)
{
	struct mrl_registration *r, *s;
	struct fi_mrlease_stats st, all;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, P(0), P(1), &r)); /* miss */
	CHECK_FI(mrl_cache_acquire(dom, P(0), P(1), &s)); /* hit */
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(2, st.lookups);
	CHECK_EQ(1, st.hits);
	CHECK_EQ(1, st.misses);
	CHECK_EQ(1, st.registrations);
	CHECK_EQ(1, st.entries);
	CHECK_EQ(2, st.leases);
	CHECK_EQ(page_size, st.registered_bytes);
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(1)));
	mrl_cache_lease_release(s);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(1, st.invalidations);
	CHECK_EQ(1, st.retired_leased);
	CHECK_EQ(0, st.entries);
	CHECK_EQ(1, st.leases);
	CHECK_EQ(0, st.deregistrations);
	mrl_cache_lease_release(r);
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(1, st.deregistrations);
	CHECK_EQ(0, st.registered_bytes);
	CHECK_EQ(0, st.leases);
	CHECK_FI(mrl_cache_invalidate(cache, P(50), P(51)));
	mrl_cache_stats(cache, &all);
	CHECK_EQ(2, all.invalidations);
	CHECK_EQ(2, all.lookups);
	CHECK_EQ(1, all.hits);
	fixture_close();
}

/* A request/response thread alternates a send and a receive buffer: a
 * one-entry hot slot missed on every acquire and walked the index each time. */
static void
test_alternating_two_entries_on_one_thread_hits_both_hot_ways(void)
{
	uintptr_t sa = P(0) + 64, ea = P(0) + 512, sb = P(4) + 64,
		  eb = P(4) + 512;
	struct mrl_registration *a, *b, *r;
	struct fi_mrlease_stats st0, st;
	uint64_t walks;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, sa, ea, &a)); /* misses */
	CHECK_FI(mrl_cache_acquire(dom, sb, eb, &b));
	CHECK(a != b);
	mrl_cache_lease_release(a);
	mrl_cache_lease_release(b);
	/* One index walk each fills the ways (a miss does not). */
	for (int i = 0; i < 2; i++) {
		CHECK_FI(mrl_cache_acquire(dom, sa, ea, &r));
		mrl_cache_lease_release(r);
		CHECK_FI(mrl_cache_acquire(dom, sb, eb, &r));
		mrl_cache_lease_release(r);
	}
	mrl_cache_domain_stats(dom, &st0);
	walks = mrl_cache_thread_index_walks();
	for (int i = 0; i < 100; i++) {
		CHECK_FI(mrl_cache_acquire(dom, sa + i, ea, &r));
		if (r != a)
			CHECK(r == a);
		mrl_cache_lease_release(r);
		CHECK_FI(mrl_cache_acquire(dom, sb, eb - i, &r));
		if (r != b)
			CHECK(r == b);
		mrl_cache_lease_release(r);
	}
	/* All 200 from the hot ways: no index walk, nothing registered. */
	CHECK_EQ(walks, mrl_cache_thread_index_walks());
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(st0.lookups + 200, st.lookups);
	CHECK_EQ(st0.hits + 200, st.hits);
	CHECK_EQ(0, st.leases);
	CHECK_EQ(2, atomic_load(&creg.registered));
	/* An operand neither way covers walks the index (and misses). */
	CHECK_FI(mrl_cache_acquire(dom, P(8), P(8) + 8, &r));
	CHECK_EQ(walks + 1, mrl_cache_thread_index_walks());
	mrl_cache_lease_release(r);
	fixture_close();
	CHECK_EQ(3, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* A hot way's entry retired while a lease keeps it open still takes the
 * increment: only the way's generation stops it being leased again. */
static void
test_retire_makes_both_hot_ways_miss_and_never_leases_retired_entries(void)
{
	uintptr_t sa = P(0) + 64, ea = P(0) + 512, sb = P(4) + 64,
		  eb = P(4) + 512;
	uintptr_t sc = P(12) + 64, ec = P(12) + 512;
	struct mrl_registration *a, *b, *c, *r;
	uint64_t walks;

	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, sa, ea, &a)); /* misses, held */
	CHECK_FI(mrl_cache_acquire(dom, sb, eb, &b));
	CHECK_FI(mrl_cache_acquire(dom, sc, ec, &c)); /* stays live */
	for (int i = 0; i < 2; i++) { /* way 0: b, way 1: a */
		CHECK_FI(mrl_cache_acquire(dom, sa, ea, &r));
		CHECK(r == a);
		mrl_cache_lease_release(r);
		CHECK_FI(mrl_cache_acquire(dom, sb, eb, &r));
		CHECK(r == b);
		mrl_cache_lease_release(r);
	}
	/* Retire a (way 1) only: a is re-registered, b (way 0) still leased. */
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(1)));
	walks = mrl_cache_thread_index_walks();
	CHECK_FI(mrl_cache_acquire(dom, sa, ea, &r));
	CHECK(r != a && r->base <= sa && r->end >= ea);
	CHECK_EQ(4, atomic_load(&creg.registered));
	mrl_cache_lease_release(r);
	CHECK_FI(mrl_cache_acquire(dom, sb, eb, &r));
	CHECK(r == b);
	mrl_cache_lease_release(r);
	/* Both ways were stale (the domain's generation changed): two walks. */
	CHECK_EQ(walks + 2, mrl_cache_thread_index_walks());
	/* Refill both ways, then retire both entries while leased. */
	for (int i = 0; i < 2; i++) {
		CHECK_FI(mrl_cache_acquire(dom, sa, ea, &r));
		mrl_cache_lease_release(r);
		CHECK_FI(mrl_cache_acquire(dom, sb, eb, &r));
		mrl_cache_lease_release(r);
	}
	mrl_cache_lease_release(a);
	CHECK_FI(mrl_cache_acquire(dom, sa, ea, &a)); /* hot: way 1 */
	walks = mrl_cache_thread_index_walks();
	CHECK_FI(mrl_cache_invalidate(cache, P(0), P(8)));
	CHECK_FI(mrl_cache_acquire(dom, sa, ea, &r));
	CHECK(r != a);
	mrl_cache_lease_release(r);
	CHECK_FI(mrl_cache_acquire(dom, sb, eb, &r));
	CHECK(r != b);
	mrl_cache_lease_release(r);
	CHECK_EQ(walks + 2, mrl_cache_thread_index_walks());
	CHECK_EQ(6, atomic_load(&creg.registered));
	/* A retire elsewhere in the domain also turns the ways stale; the live
	 * entry comes back from the index. */
	CHECK_FI(mrl_cache_invalidate(cache, P(12), P(13)));
	CHECK_FI(mrl_cache_acquire(dom, sb, eb, &r));
	CHECK(r != b && r->base <= sb && r->end >= eb);
	CHECK_EQ(walks + 3, mrl_cache_thread_index_walks());
	CHECK_EQ(6, atomic_load(&creg.registered));
	mrl_cache_lease_release(r);
	mrl_cache_lease_release(a);
	mrl_cache_lease_release(b);
	mrl_cache_lease_release(c);
	CHECK_EQ(4, atomic_load(&creg.closed)); /* a twice, b, c */
	fixture_close();
	CHECK_EQ(6, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* A process with more domains than statistic slots (rxm stacks two per
 * fabric) must keep working: the extra domains share one counter slot. */
static void
test_domains_beyond_the_stat_slots_share_one_and_still_work(void)
{
	enum { N = MRL_CACHE_STAT_SLOTS + 8 };
	static struct mrl_cache_domain *doms[N];
	static struct creg cregs[N];
	struct mrl_domain_config dconf;
	struct mrl_registration *r;
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 0));
	for (int i = 0; i < N; i++) {
		creg_init(&cregs[i], NULL, 0);
		dconf = creg_domain_config(&cregs[i]);
		CHECK_FI(mrl_cache_domain_open(cache, &dconf, &doms[i]));
		CHECK_FI(mrl_cache_acquire(doms[i], P(i), P(i) + 8, &r));
		mrl_cache_lease_release(r);
		CHECK_FI(mrl_cache_acquire(doms[i], P(i), P(i) + 8,
					   &r)); /* hit */
		mrl_cache_lease_release(r);
	}
	mrl_cache_stats(cache, &st);
	CHECK_EQ(2 * N, st.lookups);
	CHECK_EQ(N, st.hits);
	CHECK_EQ(N, st.entries);
	CHECK_EQ(0, st.leases);
	mrl_cache_domain_stats(doms[0], &st);
	CHECK_EQ(1, st.hits);
	for (int i = 0; i < N; i++)
		mrl_cache_domain_close(doms[i]);
	for (int i = 0; i < N; i++)
		CHECK_EQ(1, atomic_load(&cregs[i].closed));
	fixture_close();
}

/* Entries live in per-domain slabs of several sizes and find their cold part
 * (the registrar's handle) by index arithmetic: an off-by-one there would
 * close another entry's handle or read a neighbour's. */
static void
test_entries_in_every_slab_keep_their_own_handles(void)
{
	enum { N = 700 }; /* slabs of 32, 32, 64, 128, 256 and 256 */
	static struct mrl_registration *regs[N];
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 0));
	for (int i = 0; i < N; i++) {
		CHECK_FI(mrl_cache_acquire(dom, P(2 * i) + 8, P(2 * i) + 16,
					   &regs[i]));
		/* The counting registrar hands out its record as both. */
		CHECK(mrl_registration_mr(regs[i]) ==
		      mrl_registration_desc(regs[i]));
		CHECK(regs[i]->base == P(2 * i) &&
		      regs[i]->end == P(2 * i + 1));
	}
	for (int i = 0; i < N; i++) {
		CHECK(!creg_is_closed(mrl_registration_mr(regs[i])));
		for (int j = i + 1; j < N && j < i + 40; j++)
			CHECK(mrl_registration_mr(regs[i]) !=
			      mrl_registration_mr(regs[j]));
	}
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(N, st.entries);
	/* Retire every other one: each closes its own handle, and only that. */
	for (int i = 0; i < N; i += 2) {
		CHECK_FI(mrl_cache_invalidate(cache, P(2 * i), P(2 * i) + 1));
		CHECK(!creg_is_closed(
			mrl_registration_mr(regs[i]))); /* leased */
		mrl_cache_lease_release(regs[i]);
	}
	CHECK_EQ(N / 2, atomic_load(&creg.closed));
	for (int i = 1; i < N; i += 2) {
		CHECK(!creg_is_closed(mrl_registration_mr(regs[i])));
		mrl_cache_lease_release(regs[i]);
	}
	fixture_close();
	CHECK_EQ(N, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* A closed domain's entry slabs are kept (the lock-free hit path may still
 * touch them) and must be reused by the next domain, not leaked per domain. */
static void
test_closed_domain_slabs_are_adopted_by_the_next_domain(void)
{
	struct mrl_registration *r;
	size_t idle0, idle1, idle2;

	CHECK_FI(fixture_open(0, 0));
	for (int i = 0; i < 40; i++) {
		CHECK_FI(mrl_cache_acquire(dom, P(i), P(i) + 8, &r));
		mrl_cache_lease_release(r);
	}
	idle0 = mrl_cache_pool_idle_bytes();
	fixture_close();
	idle1 = mrl_cache_pool_idle_bytes();
	CHECK(idle1 >= idle0 + 40 * (sizeof(struct mrl_registration) +
				     sizeof(struct mrl_reg_cold)));
	CHECK_FI(fixture_open(0, 0));
	CHECK_FI(mrl_cache_acquire(dom, P(3), P(3) + 8, &r));
	idle2 = mrl_cache_pool_idle_bytes();
	CHECK(idle2 < idle1);
	CHECK(mrl_registration_mr(r) == mrl_registration_desc(r));
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(r);
	fixture_close();
	CHECK_EQ(1, atomic_load(&creg.closed));
}

/* The filter's directory of GiBs starts at 8 slots and doubles as entries
 * spread out; a key lost in a growth would make invalidate skip an entry. */
static void
test_filter_directory_grows_and_finds_every_gib(void)
{
	enum { G = 40 };
	const uintptr_t gib = 1ull << 30, g0 = 256 * gib,
			whole = g0 + 100 * gib;
	struct mrl_registration *r, *big, *inside;
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(0, 0));
	for (uintptr_t k = 0; k < G; k++) {
		/* Every third GiB skipped: the probes below cross empty ones.
		 */
		r = track(dom, &creg, g0 + 3 * k * gib + k * page_size,
			  g0 + 3 * k * gib + (k + 1) * page_size);
		CHECK(r);
		mrl_cache_lease_release(r);
	}
	big = track(dom, &creg, whole, whole + gib); /* counted per GiB */
	inside =
		track(dom, &creg, whole + 5 * page_size, whole + 6 * page_size);
	CHECK(big && inside);
	mrl_cache_lease_release(big);
	mrl_cache_lease_release(inside);
	/* Misses in every touched GiB and across the empty ones retire nothing.
	 */
	for (uintptr_t k = 0; k < G; k++)
		CHECK_FI(mrl_cache_invalidate(
			cache, g0 + 3 * k * gib + (k + 2) * page_size,
			g0 + 3 * k * gib + gib));
	CHECK_FI(mrl_cache_invalidate(cache, g0 + gib, g0 + 3 * gib));
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(G + 2, st.entries);
	CHECK_EQ(0, atomic_load(&creg.closed));
	/* A byte inside each retires exactly that one. */
	for (uintptr_t k = 0; k < G; k++) {
		uintptr_t a = g0 + 3 * k * gib + k * page_size + 17;

		CHECK_FI(mrl_cache_invalidate(cache, a, a + 1));
		CHECK(mrl_cache_lookup(dom, a, a + 1) == NULL);
		CHECK_EQ(k + 1, atomic_load(&creg.closed));
	}
	/* Inside the whole GiB, away from the small entry: only the big one. */
	CHECK_FI(mrl_cache_invalidate(cache, whole + gib / 2,
				      whole + gib / 2 + 1));
	CHECK_EQ(G + 1, atomic_load(&creg.closed));
	r = mrl_cache_lookup(dom, whole + 5 * page_size,
			     whole + 5 * page_size + 1);
	CHECK(r == inside);
	if (r)
		mrl_cache_lease_release(r);
	fixture_close();
	CHECK_EQ(G + 2, atomic_load(&creg.closed));
}

/* The index node reserve is filled to what the next insert can take, counted
 * on its path; a shortfall would crash a write section halfway. Ascending and
 * descending runs, replacements at the base of a lone entry (whose removal
 * sends the insert to a full neighbour) and holes, checked by lookups. */
static void
test_index_reserve_covers_every_insert_shape(void)
{
	enum { N = 6000 };
	static bool live[2 * N];
	struct mrl_registration *r;
	int n = 0;

	CHECK_FI(fixture_open(1u << 20, 0));
	for (int i = 0; i < N; i++) { /* ascending: appends split */
		r = track(dom, &creg, P(2 * i), P(2 * i + 1));
		CHECK(r);
		mrl_cache_lease_release(r);
		live[2 * i] = true;
	}
	for (int i = 2 * N - 1; i > 0; i -= 2) { /* descending, between */
		r = track(dom, &creg, P(i), P(i + 1));
		CHECK(r);
		mrl_cache_lease_release(r);
		live[i] = true;
	}
	/* Leaves with a lone entry: holes of 15 around every 16th. */
	for (int i = 0; i < 2 * N; i++) {
		if (i % 64 < 32 && i % 16) {
			CHECK_FI(mrl_cache_invalidate(cache, P(i), P(i) + 1));
			live[i] = false;
		}
	}
	for (int i = 0; i < 2 * N; i += 16) { /* replace the lone ones */
		r = track(dom, &creg, P(i), P(i + 1));
		CHECK(r);
		mrl_cache_lease_release(r);
		CHECK_FI(mrl_cache_acquire_based(dom, P(i) + 8, P(i) + 24, &r));
		mrl_cache_lease_release(r);
	}
	for (int i = 0; i < 2 * N; i++) {
		r = mrl_cache_lookup(dom, P(i) + 1, P(i) + 2);
		CHECK_MSG(live[i] == (r != NULL), "page %d", i);
		if (r) {
			CHECK(r->base == P(i) && r->end == P(i + 1));
			mrl_cache_lease_release(r);
		}
		n += live[i];
	}
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
	CHECK(n > N);
}

/* Acquire N one-page entries two pages apart, then find each again by a
 * lookup inside it; false at the first that misses or is wrong. */
static bool
fill_and_find(int n)
{
	struct mrl_registration *r;

	for (int i = 0; i < n; i++) {
		if (mrl_cache_acquire(dom, P(2 * i) + 8, P(2 * i) + 16, &r))
			return false;
		mrl_cache_lease_release(r);
	}
	for (int i = 0; i < n; i++) {
		r = mrl_cache_lookup(dom, P(2 * i) + 1, P(2 * i) + 2);
		if (!r)
			return false;
		mrl_cache_lease_release(r);
		if (r->base != P(2 * i) || r->end != P(2 * i + 1))
			return false;
	}
	return true;
}

/* Past FI_MRLEASE_HUGEPAGE_AFTER the cache's slabs and index nodes come from
 * huge-page chunks: entries there must resolve like any other, and a domain
 * closed and refilled must reuse the chunks rather than map more each time. */
static void
test_huge_page_chunks_serve_a_large_cache_and_are_reused(void)
{
	struct mrl_cache_config huge = {.huge_after = 1},
				never = {.huge_after = SIZE_MAX};
	size_t mapped0 = mrl_arena_mapped_bytes(), mapped1;

	CHECK_FI(fixture_open_config(&never));
	CHECK(fill_and_find(3000));
	fixture_close();
	CHECK_EQ(mapped0, mrl_arena_mapped_bytes());

	CHECK_FI(fixture_open_config(&huge));
	CHECK(fill_and_find(3000));
	mapped1 = mrl_arena_mapped_bytes();
	CHECK(mapped1 > mapped0);
	fixture_close();
	/* Each round frees ~200 nodes (~64 KB) into the arena: without reuse,
	 * 100 rounds would map more chunks. */
	for (int round = 0; round < 100; round++) {
		CHECK_FI(fixture_open_config(&huge));
		CHECK(fill_and_find(3000));
		fixture_close();
	}
	CHECK_EQ(mapped1, mrl_arena_mapped_bytes());
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

/* Out of memory for an entry slab or index nodes must fail the acquire
 * before the index changes (its registration closed, nothing half-inserted),
 * and out of memory for the filter must leave it answering "maybe": a stale
 * "no" would skip an invalidate. The cache works normally afterwards. */
static void
test_allocation_failures_leave_nothing_behind(void)
{
	enum { N = 300 };
	const uintptr_t base = (uintptr_t) 512 << 30, mib2 = 2ull << 20;
	struct fi_mrlease_stats st;
	struct mrl_registration *r;
	int enomem = 0, ret;
	size_t entries = 0;

	CHECK_FI(fixture_open(0, 0));
	/* Pages of one 2 MiB block, its filter nodes made by the first: each
	 * acquire has its first slab or index node allocation fail once. */
	for (int i = 0; i < N; i++) {
		uintptr_t s = base + (uintptr_t) i * page_size;

		mrl_cache_fail_allocs(i ? 1 : 0);
		ret = mrl_cache_acquire(dom, s, s + 8, &r);
		mrl_cache_fail_allocs(0);
		if (ret) {
			CHECK_EQ(-FI_ENOMEM, ret);
			enomem++;
			CHECK(mrl_cache_lookup(dom, s, s + 8) == NULL);
			CHECK_EQ(entries, atomic_load(&creg.live));
			CHECK_FI(mrl_cache_acquire(dom, s, s + 8,
						   &r)); /* recovers */
		}
		mrl_cache_lease_release(r);
		entries++;
		mrl_cache_domain_stats(dom, &st);
		CHECK_EQ(entries, st.entries);
		CHECK_EQ(entries, atomic_load(&creg.live));
	}
	/* Every leaf split taking a single node failed (entry slabs too, when
	 * no closed domain left idle ones): ascending inserts split every 16.
	 */
	CHECK_MSG(enomem >= N / 16 - 3, "%d acquires failed", enomem);
	/* Free entries ready (so no slab is needed below): retired ones. */
	for (int i = 0; i < 8; i++) {
		uintptr_t s = base + (uintptr_t) (N + i) * page_size;

		CHECK_FI(mrl_cache_acquire(dom, s, s + 8, &r));
		mrl_cache_lease_release(r);
	}
	CHECK_FI(mrl_cache_invalidate(cache, base + N * page_size,
				      base + (N + 8) * page_size));
	/* An entry in a new 2 MiB block needs a filter leaf first: that
	 * failing leaves the acquire intact and the filter answering "maybe"
	 * from then on (the next entries are not counted in it at all). */
	for (int i = 0; i < 8; i++) {
		uintptr_t s = base + (uintptr_t) (i + 1) * mib2 + 5 * page_size;

		mrl_cache_fail_allocs(i ? 0 : 1);
		ret = mrl_cache_acquire(dom, s, s + 8, &r);
		mrl_cache_fail_allocs(0);
		CHECK_FI(ret);
		mrl_cache_lease_release(r);
		entries++;
	}
	for (int i = 0; i < N; i++) {
		uintptr_t s = base + (uintptr_t) i * page_size;

		r = mrl_cache_lookup(dom, s, s + 1);
		CHECK(r && r->base == s && r->end == s + page_size);
		if (r)
			mrl_cache_lease_release(r);
	}
	/* Invalidate finds every entry, filtered or not. */
	for (int i = 0; i < 8; i++) {
		uintptr_t s = base + (uintptr_t) (i + 1) * mib2 + 5 * page_size;

		CHECK_FI(mrl_cache_invalidate(cache, s + 100, s + 101));
		CHECK(mrl_cache_lookup(dom, s, s + 1) == NULL);
	}
	CHECK_FI(mrl_cache_invalidate(cache, base, base + N * page_size));
	mrl_cache_domain_stats(dom, &st);
	CHECK_EQ(0, st.entries);
	CHECK_EQ(0, atomic_load(&creg.live));
	fixture_close();
	CHECK_EQ(atomic_load(&creg.registered), atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	page_size = (uintptr_t) sysconf(_SC_PAGESIZE);
	MRLT_RUN(test_lookup_finds_wide_entry_behind_narrow_one);
	MRLT_RUN(test_covering_lookup_agrees_with_brute_force);
	MRLT_RUN(test_invalidate_finds_entries_counted_at_every_filter_level);
	MRLT_RUN(test_track_at_same_base_replaces_and_old_lease_stays_open);
	MRLT_RUN(test_invalidate_spares_ranges_that_only_touch);
	MRLT_RUN(test_zero_length_and_wrapping_ranges_follow_documented_rules);
	MRLT_RUN(test_eviction_never_touches_leased_or_pinned_entries);
	MRLT_RUN(test_eviction_spares_entries_hit_since_the_last_sweep);
	MRLT_RUN(test_eviction_keeps_registered_bytes_under_max_size);
	MRLT_RUN(test_failing_registrar_leaves_nothing_behind);
	MRLT_RUN(
		test_resource_refusal_evicts_unleased_entries_and_retries_once);
	MRLT_RUN(test_cache_keys_come_from_top_half_and_skip_taken_keys);
	MRLT_RUN(test_cache_registrations_are_local_only);
	MRLT_RUN(test_miss_registers_the_page_aligned_extent_of_the_operand);
	MRLT_RUN(test_span_resolver_widens_and_foreign_span_is_ignored);
	MRLT_RUN(test_invalidate_during_a_miss_keeps_it_out_of_the_index);
	MRLT_RUN(
		test_acquire_based_registers_exact_range_even_inside_a_wider_entry);
	MRLT_RUN(
		test_acquire_based_replaces_shorter_entry_and_its_lease_stays_open);
	MRLT_RUN(test_acquire_based_entry_is_removed_by_invalidate);
	MRLT_RUN(test_clear_domain_retires_only_its_own_entries);
	MRLT_RUN(test_stats_count_lookups_hits_misses_and_leases);
	MRLT_RUN(test_alternating_two_entries_on_one_thread_hits_both_hot_ways);
	MRLT_RUN(
		test_retire_makes_both_hot_ways_miss_and_never_leases_retired_entries);
	MRLT_RUN(test_domains_beyond_the_stat_slots_share_one_and_still_work);
	MRLT_RUN(test_entries_in_every_slab_keep_their_own_handles);
	MRLT_RUN(test_closed_domain_slabs_are_adopted_by_the_next_domain);
	MRLT_RUN(test_filter_directory_grows_and_finds_every_gib);
	MRLT_RUN(test_index_reserve_covers_every_insert_shape);
	MRLT_RUN(test_allocation_failures_leave_nothing_behind);
	MRLT_RUN(test_huge_page_chunks_serve_a_large_cache_and_are_reused);
	MRLT_RUN(test_every_registration_closed_exactly_once);
	return mrlt_done();
}
