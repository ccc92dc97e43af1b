/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache under threads: lookups and descriptor reads racing
 * invalidate and re-registration (on a real tcp domain), concurrent misses,
 * pins racing invalidates and domain close, a domain close while another
 * thread closes its deferred registrations. Runs again under ThreadSanitizer
 * (SUITE_CONCURRENCY). Threads line up with barriers and atomics, never sleeps.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "common/cache_registrar.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "common/mrlt.h"

static size_t page_size;
static struct creg_tcp tcp;
static bool have_tcp;
#define P(n) ((uintptr_t) 0x200000000ull + (uintptr_t) (n) *page_size)

struct fixture {
	struct mrl_cache *cache;
	struct mrl_cache_domain *dom;
	struct creg creg;
};

static int
fixture_open(struct fixture *f, struct fid_domain *domain, size_t max_count)
{
	struct mrl_cache_config config = {.max_count = max_count};
	struct mrl_domain_config dconf;
	int ret;

	creg_init(&f->creg, domain, 0);
	dconf = creg_domain_config(&f->creg);
	ret = mrl_cache_create(&config, &f->cache);
	if (ret)
		return ret;
	return mrl_cache_domain_open(f->cache, &dconf, &f->dom);
}

/* ---- readers vs. invalidate + re-register (a lease-less registry's race) */

enum { EXTENTS = 8, EXTENT_LEN = 32 * 1024, READERS = 3, ROUNDS = 60 };

struct race {
	struct fixture f;
	uint8_t *mem[EXTENTS];
	atomic_bool running;
	atomic_int started;
	atomic_long seen[READERS];
	atomic_int bad;
	uint64_t key;
};

static int
race_track(struct race *r, int i)
{
	struct mrl_registration *reg;
	void *mr, *desc;
	int ret;

	ret = creg_registrar.reg(&r->f.creg, r->mem[i], EXTENT_LEN,
				 MRL_CACHE_ACCESS, r->key++, &mr, &desc);
	if (ret)
		return ret;
	ret = mrl_cache_track(r->f.dom, (uintptr_t) r->mem[i],
			      (uintptr_t) r->mem[i] + EXTENT_LEN, mr, desc,
			      &reg);
	if (ret) {
		creg_registrar.close(&r->f.creg, mr);
		return ret;
	}
	mrl_cache_lease_release(reg);
	return 0;
}

struct reader_arg {
	struct race *race;
	int id;
};

static void *
race_reader(void *p)
{
	struct reader_arg *a = p;
	struct race *r = a->race;
	struct mrl_registration *lease;
	long seen = 0;
	bool first = true;

	while (first ||
	       atomic_load_explicit(&r->running, memory_order_relaxed)) {
		for (int i = 0; i < EXTENTS; i++) {
			uintptr_t base = (uintptr_t) r->mem[i];

			/* Half the readers may register on a miss (racing the
			 * writer's track at the same base), half only look. */
			if (a->id % 2) {
				if (mrl_cache_acquire(r->f.dom, base + 64,
						      base + 4096, &lease))
					lease = NULL;
			} else {
				lease = mrl_cache_lookup(r->f.dom, base,
							 base + 4096);
			}
			if (!lease)
				continue;
			/* What a post does: read the descriptor off a leased
			 * registration while another thread may retire it. */
			if (fi_mr_desc(creg_fid(mrl_registration_mr(lease))) !=
				    mrl_registration_desc(lease) ||
			    lease->base > base || lease->end < base + 4096 ||
			    mrl_registration_refs(lease) < 1)
				atomic_fetch_add(&r->bad, 1);
			seen++;
			mrl_cache_lease_release(lease);
		}
		if (first) {
			first = false;
			atomic_fetch_add(&r->started, 1);
		}
	}
	atomic_store(&r->seen[a->id], seen);
	return NULL;
}

/* Under a registry without leases, readers dereferenced a closed fid_mr and
 * faulted inside libfabric; with leases a reclaim is merely a retire. */
static void
test_descriptors_stay_valid_while_invalidate_reregisters_underneath(void)
{
	static struct race r;
	struct reader_arg args[READERS];
	pthread_t th[READERS];
	long total = 0;

	memset(&r, 0, sizeof(r));
	r.key = 1;
	for (int i = 0; i < EXTENTS; i++) {
		r.mem[i] = aligned_alloc(page_size, EXTENT_LEN);
		CHECK(r.mem[i]);
	}
	CHECK_FI(fixture_open(&r.f, tcp.domain, 0));
	for (int i = 0; i < EXTENTS; i++)
		CHECK_FI(race_track(&r, i));
	atomic_store(&r.running, true);
	for (int i = 0; i < READERS; i++) {
		args[i] = (struct reader_arg){&r, i};
		CHECK(!pthread_create(&th[i], NULL, race_reader, &args[i]));
	}
	while (atomic_load(&r.started) < READERS)
		sched_yield();
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < EXTENTS; i++)
			CHECK_FI(mrl_cache_invalidate(
				r.f.cache, (uintptr_t) r.mem[i],
				(uintptr_t) r.mem[i] + EXTENT_LEN));
		for (int i = 0; i < EXTENTS; i++)
			CHECK_FI(race_track(&r, i));
	}
	atomic_store(&r.running, false);
	for (int i = 0; i < READERS; i++) {
		pthread_join(th[i], NULL);
		total += atomic_load(&r.seen[i]);
	}
	CHECK_EQ(0, atomic_load(&r.bad));
	CHECK(total > 0);
	mrl_cache_destroy(r.f.cache);
	CHECK_EQ(atomic_load(&r.f.creg.registered),
		 atomic_load(&r.f.creg.closed));
	CHECK_EQ(0, atomic_load(&r.f.creg.double_closed));
	for (int i = 0; i < EXTENTS; i++)
		free(r.mem[i]);
}

/* ---- concurrent misses -------------------------------------------------- */

struct miss_arg {
	struct fixture *f;
	uintptr_t start, end;
	struct mrl_registration *got;
	int ret;
	int rounds;
	pthread_barrier_t *go;
	bool based; /* mrl_cache_acquire_based */
};

static void *
miss_thread(void *p)
{
	struct miss_arg *a = p;

	a->ret = a->based ? mrl_cache_acquire_based(a->f->dom, a->start, a->end,
						    &a->got) :
			    mrl_cache_acquire(a->f->dom, a->start, a->end,
					      &a->got);
	return NULL;
}

/*
 * Two misses of [start, end) at once (acquire or acquire_based), both past
 * the registrar before either inserts: one entry, both callers leased on it,
 * the loser's registration closed once, after the unlock. *got: the entry
 * with the callers' two leases still held, or NULL after a failed check.
 */
static void
race_two_misses(struct fixture *f, uintptr_t start, uintptr_t end, bool based,
		struct mrl_registration **got)
{
	pthread_barrier_t gate;
	struct miss_arg a[2];
	pthread_t th[2];
	struct fi_mrlease_stats st;

	*got = NULL;
	CHECK(!pthread_barrier_init(&gate, NULL, 2));
	f->creg.gate = &gate;
	atomic_store(&f->creg.gate_uses, 2);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct miss_arg){.f = f,
					 .start = start,
					 .end = end,
					 .based = based};
		CHECK(!pthread_create(&th[i], NULL, miss_thread, &a[i]));
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	f->creg.gate = NULL;
	pthread_barrier_destroy(&gate);
	CHECK_FI(a[0].ret);
	CHECK_FI(a[1].ret);
	CHECK(a[0].got == a[1].got);
	CHECK_EQ(2, atomic_load(&f->creg.registered));
	CHECK_EQ(1, atomic_load(&f->creg.closed)); /* the loser's, already */
	mrl_cache_domain_stats(f->dom, &st);
	CHECK_EQ(1, st.entries);
	*got = a[0].got;
}

/* Two operations missing the same buffer at once used to leave one
 * registration unreachable and never closed (or two entries, one leaked). */
static void
test_concurrent_misses_on_same_range_do_not_leak(void)
{
	static struct fixture f;
	struct mrl_registration *got;

	CHECK_FI(fixture_open(&f, NULL, 0));
	race_two_misses(&f, P(0) + 8, P(0) + 64, false, &got);
	if (got) {
		CHECK_EQ(3, mrl_registration_refs(got));
		mrl_cache_lease_release(got);
		mrl_cache_lease_release(got);
	}
	mrl_cache_destroy(f.cache);
	CHECK_EQ(2, atomic_load(&f.creg.closed));
}

/* The same race through acquire_based (rxm rendezvous iovs from two
 * threads): one entry at the base, the loser's registration closed once. */
static void
test_concurrent_based_misses_on_same_base_do_not_leak(void)
{
	static struct fixture f;
	struct mrl_registration *got;

	CHECK_FI(fixture_open(&f, NULL, 0));
	race_two_misses(&f, P(1) + 24, P(1) + 88, true, &got);
	if (got) {
		CHECK(got->base == P(1) + 24 && got->end == P(1) + 88);
		mrl_cache_lease_release(got);
		mrl_cache_lease_release(got);
	}
	mrl_cache_destroy(f.cache);
	CHECK_EQ(2, atomic_load(&f.creg.closed));
}

static void *
churn_thread(void *p)
{
	struct miss_arg *a = p;
	struct mrl_registration *r, *s;
	unsigned seed = (unsigned) a->start;

	pthread_barrier_wait(a->go);
	for (int i = 0; i < a->rounds; i++) {
		unsigned n = (unsigned) rand_r(&seed) % 16;

		if (mrl_cache_acquire(a->f->dom, P(n) + 8, P(n) + 64, &r)) {
			a->ret = -1;
			continue;
		}
		if (i % 3 == 0) {
			mrl_cache_lease_get(r);
			s = r;
			mrl_cache_lease_release(s);
		}
		if (i % 7 == 0)
			mrl_cache_invalidate(a->f->cache, P(n), P(n) + 1);
		mrl_cache_lease_release(r);
	}
	return NULL;
}

/* Misses, hits, invalidates and evictions (max_count 8) on every thread at
 * once: every registration closes exactly once and live leases return to 0. */
static void
test_churn_on_all_threads_closes_every_registration_once(void)
{
	enum { THREADS = 4 };
	static struct fixture f;
	pthread_barrier_t go;
	struct miss_arg a[THREADS];
	pthread_t th[THREADS];
	struct fi_mrlease_stats st;

	CHECK_FI(fixture_open(&f, NULL, 8));
	CHECK(!pthread_barrier_init(&go, NULL, THREADS));
	for (int i = 0; i < THREADS; i++) {
		a[i] = (struct miss_arg){.f = &f,
					 .start = (uintptr_t) i + 1,
					 .rounds = 20000,
					 .go = &go};
		CHECK(!pthread_create(&th[i], NULL, churn_thread, &a[i]));
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(0, a[i].ret);
	mrl_cache_domain_stats(f.dom, &st);
	CHECK_EQ(0, st.leases);
	CHECK_EQ((uint64_t) THREADS * 20000, st.lookups);
	CHECK(st.entries <= 8);
	mrl_cache_destroy(f.cache);
	CHECK_EQ(atomic_load(&f.creg.registered), atomic_load(&f.creg.closed));
	CHECK_EQ(0, atomic_load(&f.creg.double_closed));
}

/* ---- the overlap filter growing under invalidates ----------------------- */

enum { GROW_THREADS = 2, GROW_GIBS = 96 };

struct grow_race {
	struct fixture f;
	pthread_barrier_t go;
	atomic_int done[GROW_THREADS]; /* entries inserted and published */
	atomic_int bad;
};

struct grow_arg {
	struct grow_race *r;
	int t;
};

/* Entry k of thread t: one page in its own GiB (every GiB a new directory
 * key, so the directory doubles several times while invalidates read it).
 * Inserted by track(), so no pending miss makes invalidate look anyway. */
static uintptr_t
grow_base(int t, int k)
{
	return ((uintptr_t) 1024 << 30) +
	       (((uintptr_t) k * GROW_THREADS + t) << 30) +
	       (uintptr_t) k * page_size;
}

static void *
grow_inserter(void *p)
{
	struct grow_arg *a = p;
	struct mrl_registration *lease;

	void *mr, *desc;

	pthread_barrier_wait(&a->r->go);
	for (int k = 0; k < GROW_GIBS; k++) {
		uintptr_t s = grow_base(a->t, k);

		/* track(): no pending miss for invalidate to see, only the
		 * filter and the index. */
		if (creg_registrar.reg(&a->r->f.creg, (void *) s, page_size,
				       MRL_CACHE_ACCESS, 0, &mr, &desc)) {
			atomic_fetch_add(&a->r->bad, 1);
			continue;
		}
		if (mrl_cache_track(a->r->f.dom, s, s + page_size, mr, desc,
				    &lease)) {
			creg_registrar.close(&a->r->f.creg, mr);
			atomic_fetch_add(&a->r->bad, 1);
			continue;
		}
		mrl_cache_lease_release(lease);
		atomic_store_explicit(&a->r->done[a->t], k + 1,
				      memory_order_release);
	}
	return NULL;
}

/* An invalidate that starts after an entry was inserted must retire it, also
 * while another thread grows the filter's directory (a key lost in the copy,
 * or a stale directory read as "nothing here", would leave it cached). */
static void
test_filter_growth_never_hides_an_inserted_entry(void)
{
	static struct grow_race r;
	struct grow_arg a[GROW_THREADS];
	pthread_t th[GROW_THREADS];
	struct mrl_registration *lease;
	int next[GROW_THREADS] = {0}, left = GROW_THREADS * GROW_GIBS;

	memset(&r, 0, sizeof(r));
	CHECK_FI(fixture_open(&r.f, NULL, 0));
	CHECK(!pthread_barrier_init(&r.go, NULL, GROW_THREADS + 1));
	for (int t = 0; t < GROW_THREADS; t++) {
		a[t] = (struct grow_arg){&r, t};
		CHECK(!pthread_create(&th[t], NULL, grow_inserter, &a[t]));
	}
	pthread_barrier_wait(&r.go);
	while (left && !atomic_load(&r.bad)) {
		for (int t = 0; t < GROW_THREADS; t++) {
			int done = atomic_load_explicit(&r.done[t],
							memory_order_acquire);

			for (; next[t] < done; next[t]++, left--) {
				uintptr_t s = grow_base(t, next[t]);

				if (mrl_cache_invalidate(r.f.cache, s + 100,
							 s + 101))
					atomic_fetch_add(&r.bad, 1);
				lease = mrl_cache_lookup(r.f.dom, s, s + 8);
				if (lease) {
					atomic_fetch_add(&r.bad, 1);
					mrl_cache_lease_release(lease);
				}
			}
		}
		if (atomic_load(&r.done[0]) + atomic_load(&r.done[1]) <
		    GROW_THREADS * GROW_GIBS)
			sched_yield();
	}
	for (int t = 0; t < GROW_THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&r.go);
	CHECK_EQ(0, atomic_load(&r.bad));
	CHECK_EQ(0, left);
	CHECK_EQ(GROW_THREADS * GROW_GIBS, atomic_load(&r.f.creg.closed));
	mrl_cache_destroy(r.f.cache);
	CHECK_EQ(atomic_load(&r.f.creg.registered),
		 atomic_load(&r.f.creg.closed));
}

/* ---- hot slots against retire and reuse --------------------------------- */

struct hot_race {
	struct fixture f;
	atomic_bool running;
	atomic_int started, bad;
	atomic_long seen;
};

static void *
hot_reader(void *p)
{
	struct hot_race *r = p;
	struct mrl_registration *lease;
	long seen = 0;
	bool first = true;

	while (first ||
	       atomic_load_explicit(&r->running, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++) {
			/* Alternate two entries (a send and a receive buffer),
			 * so both hot ways are leased from. */
			uintptr_t s = P(i & 1) + 8, e = P(i & 1) + 64;

			if (mrl_cache_acquire(r->f.dom, s, e, &lease))
				continue;
			/* Leased: must cover the operand and be open. */
			if (lease->base > s || lease->end < e ||
			    creg_is_closed(mrl_registration_mr(lease)) ||
			    mrl_registration_desc(lease) !=
				    mrl_registration_mr(lease))
				atomic_fetch_add(&r->bad, 1);
			seen++;
			mrl_cache_lease_release(lease);
		}
		if (first) {
			first = false;
			atomic_fetch_add(&r->started, 1);
		}
	}
	atomic_fetch_add(&r->seen, seen);
	return NULL;
}

/* The per-thread hot slot leases without a read section, from either of its
 * two ways: a way naming an entry retired and recycled for another range must
 * never be leased (that would hand out a closed or foreign registration). */
static void
test_hot_slot_never_leases_a_retired_or_recycled_entry(void)
{
	static struct hot_race r;
	struct mrl_registration *x;
	pthread_t th[2];

	memset(&r, 0, sizeof(r));
	CHECK_FI(fixture_open(&r.f, NULL, 0));
	atomic_store(&r.running, true);
	for (int i = 0; i < 2; i++)
		CHECK(!pthread_create(&th[i], NULL, hot_reader, &r));
	while (atomic_load(&r.started) < 2)
		sched_yield();
	for (int round = 0; round < 3000; round++) {
		/* Retire one hot entry or both (the readers hold them in
		 * either way), recycle entries through the pool at other
		 * ranges, then let the readers miss them back in. */
		mrl_cache_invalidate(r.f.cache, P(round % 3 == 1),
				     P(1 + (round % 3 != 0)));
		for (int k = 1; k < 4; k++) {
			if (mrl_cache_acquire(
				    r.f.dom, P(2 * k + round % 8 * 16),
				    P(2 * k + round % 8 * 16) + 8, &x) == 0)
				mrl_cache_lease_release(x);
		}
		mrl_cache_invalidate(r.f.cache, P(2), P(200));
	}
	atomic_store(&r.running, false);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(0, atomic_load(&r.bad));
	CHECK(atomic_load(&r.seen) > 0);
	mrl_cache_destroy(r.f.cache);
	CHECK_EQ(atomic_load(&r.f.creg.registered),
		 atomic_load(&r.f.creg.closed));
	CHECK_EQ(0, atomic_load(&r.f.creg.double_closed));
}

/* ---- pins against invalidate and domain close --------------------------- */

struct pin_race {
	struct fixture f;
	atomic_bool running, using;
	pthread_barrier_t go;
};

static void *
pin_invalidator(void *p)
{
	struct pin_race *r = p;

	pthread_barrier_wait(&r->go);
	while (atomic_load_explicit(&r->running, memory_order_relaxed))
		mrl_cache_invalidate(r->f.cache, P(0), P(4));
	return NULL;
}

static void *
pin_user(void *p)
{
	struct pin_race *r = p;
	struct mrl_registration *lease;

	pthread_barrier_wait(&r->go);
	while (atomic_load_explicit(&r->using, memory_order_relaxed)) {
		lease = mrl_cache_lookup(r->f.dom, P(1), P(2));
		if (lease)
			mrl_cache_lease_release(lease);
	}
	return NULL;
}

/* A pin released while an invalidate retires the same entry, or after the
 * domain closed, must close its registration once, not twice or never. */
static void
test_pin_release_racing_invalidate_and_domain_close_closes_once(void)
{
	static struct pin_race r;
	struct mrl_registration *pin;
	pthread_t inv, user;

	memset(&r, 0, sizeof(r));
	CHECK_FI(fixture_open(&r.f, NULL, 0));
	CHECK(!pthread_barrier_init(&r.go, NULL, 3));
	atomic_store(&r.running, true);
	atomic_store(&r.using, true);
	CHECK(!pthread_create(&inv, NULL, pin_invalidator, &r));
	CHECK(!pthread_create(&user, NULL, pin_user, &r));
	pthread_barrier_wait(&r.go);
	for (int i = 0; i < 2000; i++) {
		CHECK_FI(mrl_cache_pin(r.f.dom, P(0), 4 * page_size, &pin));
		mrl_cache_unpin(pin);
	}
	/* The domain handle is dead after close: its users stop first; the
	 * invalidates (cache-wide) keep racing the close. */
	atomic_store(&r.using, false);
	pthread_join(user, NULL);
	CHECK_FI(mrl_cache_pin(r.f.dom, P(0), 4 * page_size, &pin));
	mrl_cache_domain_close(r.f.dom);
	mrl_cache_unpin(pin);
	atomic_store(&r.running, false);
	pthread_join(inv, NULL);
	pthread_barrier_destroy(&r.go);
	mrl_cache_destroy(r.f.cache);
	CHECK_EQ(2001, atomic_load(&r.f.creg.registered));
	CHECK_EQ(2001, atomic_load(&r.f.creg.closed));
	CHECK_EQ(0, atomic_load(&r.f.creg.double_closed));
}

/* ---- a domain close vs. another thread's deferred closes ---------------- */

enum { HELD_ENTRIES = 16 };

/* A registrar whose first close on the "closer" thread blocks until the test
 * lets it go: the closer then holds the domain's deferred registrations,
 * taken off the shared list, while the domain closes. */
struct held {
	struct creg creg; /* first: the registrar's ctx is both */
	struct mrl_cache *cache;
	struct mrl_cache_domain *dom;
	atomic_int inside; /* the closer is blocked in a close */
	atomic_int release; /* the closer may go on */
	atomic_int done; /* the domain close returned */
	atomic_long open_at_return; /* registrations open when it did */
	bool whole; /* mrl_cache_domain_close, else _retire_unleased */
};

static __thread bool held_on_closer;

static int
held_close(void *ctx, void *mr)
{
	struct held *h = ctx;

	if (held_on_closer && !atomic_exchange(&h->inside, 1))
		mrlt_wait_until_int(&h->release, 1);
	return creg_registrar.close(&h->creg, mr);
}

/* creg_registrar with held_close (set by held_run). */
static struct mrl_registrar held_registrar;

static void *
held_closer(void *p)
{
	struct held *h = p;

	held_on_closer = true;
	mrl_cache_close_deferred_shared(h->cache);
	return NULL;
}

static void *
held_domain_close(void *p)
{
	struct held *h = p;

	if (h->whole)
		mrl_cache_domain_close(h->dom);
	else
		mrl_cache_domain_retire_unleased(h->dom);
	atomic_store(&h->open_at_return, atomic_load(&h->creg.live));
	atomic_store(&h->done, 1);
	return NULL;
}

/* The closer took the shared list whole and is closing it outside the lock
 * when the application closes the domain: the domain close must not return
 * while one of its registrations is still open, or the provider refuses the
 * domain's close (-FI_EBUSY), which some providers cannot be asked again. */
static void
held_run(bool whole)
{
	static struct held h;
	struct mrl_domain_config dconf;
	struct mrl_registration *lease;
	struct mrlt_wait w;
	pthread_t closer, closing;
	uint64_t waits0 = mrl_cache_close_waits();

	memset(&h, 0, sizeof(h));
	h.whole = whole;
	creg_init(&h.creg, NULL, 0);
	dconf = creg_domain_config(&h.creg);
	held_registrar = creg_registrar;
	held_registrar.close = held_close;
	dconf.registrar = &held_registrar;
	dconf.free_threaded = true;
	CHECK_FI(mrl_cache_create(NULL, &h.cache));
	CHECK_FI(mrl_cache_domain_open(h.cache, &dconf, &h.dom));
	for (int i = 0; i < HELD_ENTRIES; i++) {
		CHECK_FI(mrl_cache_acquire(h.dom, P(i), P(i + 1), &lease));
		mrl_cache_lease_release(lease);
	}
	/* What the monitor's drain does: every last reference is the
	 * index's, so every registration goes onto the shared list. */
	CHECK_FI(mrl_cache_invalidate_deferred(h.cache, P(0), P(HELD_ENTRIES)));
	CHECK_EQ(HELD_ENTRIES, atomic_load(&h.creg.live));
	CHECK(!pthread_create(&closer, NULL, held_closer, &h));
	CHECK(mrlt_wait_until_int(&h.inside, 1));
	CHECK(!pthread_create(&closing, NULL, held_domain_close, &h));
	/* Let the closer go once the close returned (the failure) or waits
	 * for it (no sleep: the close counts its waits). */
	mrlt_wait_init(&w);
	while (!atomic_load(&h.done) && mrl_cache_close_waits() == waits0 &&
	       !mrlt_wait_over(&w))
		sched_yield();
	atomic_store(&h.release, 1);
	pthread_join(closing, NULL);
	pthread_join(closer, NULL);
	if (!whole)
		mrl_cache_domain_close(h.dom);
	mrl_cache_destroy(h.cache);
	CHECK_MSG(atomic_load(&h.open_at_return) == 0,
		  "the domain close returned with %ld of its registrations "
		  "still open in the closer's hands",
		  atomic_load(&h.open_at_return));
	CHECK_EQ(HELD_ENTRIES, atomic_load(&h.creg.closed));
	CHECK_EQ(0, atomic_load(&h.creg.double_closed));
}

static void
test_retire_before_a_domain_close_waits_for_deferred_closes_another_thread_took(
	void)
{
	held_run(false);
}

static void
test_domain_close_waits_for_deferred_closes_another_thread_took(void)
{
	held_run(true);
}

int
main(int argc, char **argv)
{
	int ret;

	mrlt_select(argc - 1, argv + 1);
	page_size = (size_t) sysconf(_SC_PAGESIZE);
	have_tcp = creg_tcp_open(&tcp) == 0;
	if (have_tcp)
		MRLT_RUN(
			test_descriptors_stay_valid_while_invalidate_reregisters_underneath);
	else
		mrlt_skip("test_descriptors_stay_valid_while_invalidate_"
			  "reregisters_underneath",
			  "no tcp provider on loopback");
	MRLT_RUN(test_concurrent_misses_on_same_range_do_not_leak);
	MRLT_RUN(test_concurrent_based_misses_on_same_base_do_not_leak);
	MRLT_RUN(test_churn_on_all_threads_closes_every_registration_once);
	MRLT_RUN(test_hot_slot_never_leases_a_retired_or_recycled_entry);
	MRLT_RUN(test_filter_growth_never_hides_an_inserted_entry);
	MRLT_RUN(
		test_pin_release_racing_invalidate_and_domain_close_closes_once);
	MRLT_RUN(
		test_retire_before_a_domain_close_waits_for_deferred_closes_another_thread_took);
	MRLT_RUN(
		test_domain_close_waits_for_deferred_closes_another_thread_took);
	MRLT_RUN(test_every_registration_closed_exactly_once);
	if (have_tcp) {
		ret = creg_tcp_close(&tcp);
		if (ret) {
			printf("# closing the tcp domain: %s\n",
			       fi_strerror(-ret));
			return EXIT_FAILURE;
		}
	}
	return mrlt_done();
}
