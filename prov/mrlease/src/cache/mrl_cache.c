/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache (see mrl_cache.h for the invariants).
 *
 * Layout of this file: per-thread reader records (read sections and hit
 * counters), statistic slots, the entry slabs (hot and cold parts of each
 * entry, per domain), the interval index (a B+tree keyed by base, each inner
 * slot carrying the max end of its subtree), the overlap filter (a directory
 * of touched GiBs over page-count tables), read and write sections with the
 * node reserve, then the cache operations.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_arena.h"
#include "mrl_cache.h"

#define MRL_LIKELY(x) __builtin_expect(!!(x), 1)
#define MRL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MRL_CACHELINE 64
#if defined(__x86_64__) || defined(__i386__)
#define MRL_CPU_RELAX() __builtin_ia32_pause()
#else
#define MRL_CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif

#define MRL_CWARN(cache, ...)                                                  \
	do {                                                                   \
		if ((cache)->prov)                                             \
			FI_WARN((cache)->prov, FI_LOG_MR, __VA_ARGS__);        \
	} while (0)

/* reg->state: the state in the low bits, the pinned flag on top. */
enum mrl_reg_state {
	MRL_REG_NEW = 0,	/* allocated, not indexed yet */
	MRL_REG_LIVE,		/* in its domain's index */
	MRL_REG_RETIRED,	/* out of the index for good */
	MRL_REG_STATE_MASK = 3,
	MRL_REG_LENT = 1 << 6,		/* live, its index reference lent to
					 * its leases (see lend_locked) */
	MRL_REG_PINNED = 1 << 7,	/* held by a pin: never evicted */
};

_Static_assert(sizeof(struct mrl_registration) == 32, "hot part: 32 bytes");
_Static_assert(sizeof(struct mrl_reg_cold) == 16, "cold part: 16 bytes");
_Static_assert(offsetof(struct mrl_slab, reg) == MRL_CACHELINE, "slab header: one line");

static inline struct mrl_cache_domain *reg_domain(const struct mrl_registration *reg)
{
	return mrl_registration_slab(reg)->domain;
}

static inline struct mrl_reg_cold *reg_cold(const struct mrl_registration *reg)
{
	return mrl_registration_cold(reg);
}

static inline unsigned reg_state(const struct mrl_registration *reg)
{
	return reg->state & MRL_REG_STATE_MASK;
}

static inline void reg_set_state(struct mrl_registration *reg, unsigned state)
{
	reg->state = (uint8_t)((reg->state & MRL_REG_PINNED) | state);
}

/* ---- allocations -------------------------------------------------------- */

/* mrl_cache_fail_allocs(): the next n allocations below fail (tests). */
static atomic_uint mrl_fail_allocs;

void mrl_cache_fail_allocs(unsigned n)
{
	atomic_store_explicit(&mrl_fail_allocs, n, memory_order_relaxed);
}

static inline bool alloc_injected_failure(void)
{
	unsigned v = atomic_load_explicit(&mrl_fail_allocs, memory_order_relaxed);

	while (MRL_UNLIKELY(v))
		if (atomic_compare_exchange_weak_explicit(&mrl_fail_allocs, &v, v - 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	return false;
}

/* Every allocation of filter nodes: zeroed. Never called under cache->lock
 * or flt_lock. */
static void *cache_alloc(size_t size)
{
	if (alloc_injected_failure())
		return NULL;
	return calloc(1, size);
}

/* Entry slabs and index nodes: zeroed and line-aligned, from huge-page
 * chunks once the caches are large (mrl_arena.h). Never called under
 * cache->lock. */
static void *cache_alloc_lines(size_t size, size_t huge_after)
{
	if (alloc_injected_failure())
		return NULL;
	return mrl_arena_alloc(size, huge_after);
}

/* Counters off the hit path: shared atomics, touched on misses/retires. */
struct mrl_slow_stats {
	atomic_uint_least64_t misses, registrations, deregistrations;
	atomic_uint_least64_t invalidations, retired_leased, evictions;
	atomic_uint_least64_t entries, registered_bytes;
	atomic_uint_least64_t monitor_invalidations, not_retained, deferred_closes;
};

/* ---- per-thread reader records ------------------------------------------ */

/*
 * One per thread, in its own cache lines. `active` names the cache whose index
 * the thread is reading (a "big-reader" lock: the reader writes only its own
 * line; a writer waits for every record naming its cache). hot[] remembers the
 * last two entries found in the index per slot (two ways); a way is valid
 * while its gen equals the domain's generation, which every retire changes,
 * so a stale way is never followed.
 * Counters are written by the owner only (load + store, no locked op) and
 * summed by queries. The overflow record is shared by threads past
 * MRL_CACHE_MAX_THREADS: it never reads lock-free and adds atomically.
 */
struct mrl_reader {
	_Alignas(MRL_CACHELINE) _Atomic(struct mrl_cache *) active;
	atomic_bool in_use;
	bool shared;
	_Alignas(MRL_CACHELINE) struct mrl_thread t;	/* hot slots, counters */
};

static struct mrl_reader mrl_readers[MRL_CACHE_MAX_THREADS + 1];
static atomic_uint mrl_readers_hwm;	/* records ever claimed: [0, hwm) */
static pthread_key_t mrl_reader_key;
static pthread_once_t mrl_reader_once = PTHREAD_ONCE_INIT;
static __thread struct mrl_reader *mrl_self
	__attribute__((tls_model("initial-exec")));
/* &mrl_self->t for a thread with its own record (the inline hit path);
 * mrl_fast_hot points to an empty record until then. */
static struct mrl_thread mrl_thread_empty;
__thread struct mrl_thread *mrl_fast __attribute__((tls_model("initial-exec")));
__thread struct mrl_thread *mrl_fast_hot
	__attribute__((tls_model("initial-exec"))) = &mrl_thread_empty;

/* Thread exit: give the record back (counters stay, they are history). */
static void reader_detach(void *arg)
{
	struct mrl_reader *rec = arg;

	for (size_t i = 0; i < MRL_CACHE_STAT_SLOTS; i++)
		for (size_t w = 0; w < MRL_HOT_WAYS; w++)
			rec->t.hot[i][w] = (struct mrl_hot){ NULL, 0, 0, 0 };
	mrl_self = NULL;
	mrl_fast = NULL;
	mrl_fast_hot = &mrl_thread_empty;
	atomic_store_explicit(&rec->in_use, false, memory_order_release);
}

static void reader_key_init(void)
{
	mrl_readers[MRL_CACHE_MAX_THREADS].shared = true;
	if (pthread_key_create(&mrl_reader_key, reader_detach))
		mrl_readers[0].shared = true; /* unreachable in practice */
}

/* First cache call on a thread: claim a record without malloc (invalidate
 * may run inside an allocator hook). */
static struct mrl_reader *reader_attach(void)
{
	struct mrl_reader *rec = &mrl_readers[MRL_CACHE_MAX_THREADS];
	unsigned hwm;

	pthread_once(&mrl_reader_once, reader_key_init);
	for (unsigned i = 0; i < MRL_CACHE_MAX_THREADS; i++) {
		bool expected = false;

		if (atomic_load_explicit(&mrl_readers[i].in_use, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&mrl_readers[i].in_use,
						    &expected, true))
			continue;
		rec = &mrl_readers[i];
		/* seq_cst: a writer that missed this record in its scan is
		 * ordered before our first read section, which then sees its
		 * writer flag (see write_enter). */
		hwm = atomic_load(&mrl_readers_hwm);
		while (hwm < i + 1 &&
		       !atomic_compare_exchange_weak(&mrl_readers_hwm, &hwm, i + 1))
			;
		if (pthread_setspecific(mrl_reader_key, rec)) {
			atomic_store(&rec->in_use, false);
			rec = &mrl_readers[MRL_CACHE_MAX_THREADS];
		}
		break;
	}
	mrl_self = rec;
	mrl_fast = rec->shared ? NULL : &rec->t;
	mrl_fast_hot = rec->shared ? &mrl_thread_empty : &rec->t;
	return rec;
}

/* Index walks by this thread (mrl_cache_thread_index_walks, for tests). */
static __thread uint64_t mrl_index_walks __attribute__((tls_model("initial-exec")));

uint64_t mrl_cache_thread_index_walks(void)
{
	return mrl_index_walks;
}

static inline struct mrl_reader *reader_self(void)
{
	struct mrl_reader *rec = mrl_self;

	return MRL_LIKELY(rec != NULL) ? rec : reader_attach();
}

/* After fork: records of threads that are gone neither read nor count as
 * readers a writer must wait for. */
static void readers_forget_others(void)
{
	for (unsigned i = 0; i < MRL_CACHE_MAX_THREADS; i++) {
		if (&mrl_readers[i] == mrl_self)
			continue;
		atomic_store_explicit(&mrl_readers[i].active, NULL, memory_order_relaxed);
		atomic_store_explicit(&mrl_readers[i].in_use, false, memory_order_relaxed);
	}
}

void mrl_cache_thread_attach(void)
{
	(void)reader_self();
}

/* Release, as mrl_count_own: a query that sees this count sees every count
 * made before it (see "statistics"). */
static inline void tcnt_add(struct mrl_reader *rec, unsigned slot,
			    enum mrl_tcnt which, uint64_t n)
{
	atomic_uint_least64_t *c = &rec->t.cnt[which][slot];

	if (MRL_UNLIKELY(rec->shared))
		atomic_fetch_add_explicit(c, n, memory_order_release);
	else
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
				      memory_order_release);
}

/* Acquire: counts read after this one include what happened before the
 * counts it saw. */
static uint64_t tcnt_sum(unsigned slot, enum mrl_tcnt which)
{
	unsigned hwm = atomic_load(&mrl_readers_hwm);
	uint64_t sum;

	sum = atomic_load_explicit(&mrl_readers[MRL_CACHE_MAX_THREADS].t.cnt[which][slot],
				   memory_order_acquire);
	for (unsigned i = 0; i < hwm; i++)
		sum += atomic_load_explicit(&mrl_readers[i].t.cnt[which][slot],
					    memory_order_acquire);
	return sum;
}

/* ---- statistic slots ---------------------------------------------------- */

/* Each cache and domain owns a slot of the per-thread counters, so the hit
 * path indexes an array instead of allocating per-thread state per domain.
 * Past MRL_CACHE_STAT_SLOTS - 1 users, the last slot is shared. */
static pthread_mutex_t mrl_slot_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned mrl_slot_users[MRL_CACHE_STAT_SLOTS];

static unsigned slot_alloc(uint64_t base[MRL_TCNT_COUNT])
{
	unsigned slot = MRL_CACHE_STAT_SLOTS - 1;

	pthread_mutex_lock(&mrl_slot_lock);
	for (unsigned i = 0; i < MRL_CACHE_STAT_SLOTS - 1; i++) {
		if (!mrl_slot_users[i]) {
			slot = i;
			break;
		}
	}
	mrl_slot_users[slot]++;
	pthread_mutex_unlock(&mrl_slot_lock);
	for (int i = 0; i < MRL_TCNT_COUNT; i++)
		base[i] = tcnt_sum(slot, i);
	return slot;
}

static void slot_free(unsigned slot)
{
	pthread_mutex_lock(&mrl_slot_lock);
	mrl_slot_users[slot]--;
	pthread_mutex_unlock(&mrl_slot_lock);
}

/* ---- generations -------------------------------------------------------- */

/* Unique across domains, so a hot slot filled from one domain can never
 * validate against another that reuses its statistic slot. */
static atomic_uint_least64_t mrl_gen_source = 1;

static inline uint64_t next_gen(void)
{
	return atomic_fetch_add_explicit(&mrl_gen_source, 1, memory_order_relaxed) + 1;
}

/* ---- barrier and fork ---------------------------------------------------- */

atomic_uint mrl_cache_barrier;

void mrl_cache_barrier_raise(void)
{
	atomic_fetch_add_explicit(&mrl_cache_barrier, 1, memory_order_seq_cst);
}

void mrl_cache_barrier_lower(void)
{
	atomic_fetch_sub_explicit(&mrl_cache_barrier, 1, memory_order_release);
}

/* Out-of-line lookups wait here while a monitor applies events it read: with
 * no lock held and outside any read section, so the monitor's write section
 * never waits for a waiter. */
static atomic_uint_least64_t mrl_barrier_waits;

uint64_t mrl_cache_barrier_waits(void)
{
	return atomic_load_explicit(&mrl_barrier_waits, memory_order_relaxed);
}

static void barrier_wait(void)
{
	if (MRL_LIKELY(!atomic_load_explicit(&mrl_cache_barrier, memory_order_acquire)))
		return;
	atomic_fetch_add_explicit(&mrl_barrier_waits, 1, memory_order_relaxed);
	for (unsigned spins = 0;
	     atomic_load_explicit(&mrl_cache_barrier, memory_order_acquire);
	     spins++) {
		if (spins < 128)
			MRL_CPU_RELAX();
		else
			sched_yield();
	}
}

/* Bumped in every child after fork: a domain opened under an older value is
 * the parent's, and its registrations are never closed by this process. */
static atomic_uint mrl_fork_gen;
static pthread_once_t mrl_fork_once = PTHREAD_ONCE_INIT;

/*
 * Every cache of the process, so fork can hold their locks: a child must not
 * inherit a lock another thread held (the monitor's write section, a miss
 * inserting), or its first domain open or invalidate would wait forever.
 */
static pthread_mutex_t mrl_caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrl_cache *mrl_caches;

static void fork_locks(bool lock);

static void fork_prepare(void)
{
	fork_locks(true);
}

static void fork_parent(void)
{
	fork_locks(false);
}

static void readers_forget_others(void);

static void fork_child(void)
{
	fork_locks(false);
	/* Threads other than this one do not exist here. */
	readers_forget_others();
	atomic_fetch_add_explicit(&mrl_fork_gen, 1, memory_order_relaxed);
	/* The monitor that raised it does not exist here. */
	atomic_store_explicit(&mrl_cache_barrier, 0, memory_order_relaxed);
}

static void fork_handler_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- structures --------------------------------------------------------- */

/* A miss between its registration and its insertion: an invalidate
 * overlapping it marks it stale so it never enters the index. */
struct mrl_pending {
	uintptr_t base, end;
	struct mrl_cache_domain *domain;
	bool stale;
	struct mrl_pending *next;
};

struct mrl_btnode;
struct mrl_flt_dir;

#define MRL_FLT_FAN 512

struct mrl_cache {
	/* Written by writers only, read by every reader. */
	_Alignas(MRL_CACHELINE) atomic_int writer;
	atomic_uintptr_t lo, hi;	/* bounds of live and pending entries */
	atomic_uint pending_count;
	struct mrl_cache_domain *domains; /* alive domains (closed ones too) */
	/* Overlap filter (see "overlap filter"): counts written under the
	 * lock, read by invalidate without any lock. */
	atomic_uint flt_unfiltered;	/* entries the filter cannot hold */
	atomic_bool flt_broken;		/* an allocation failed: always "maybe" */
	_Atomic(struct mrl_flt_dir *) flt_dir;	/* GiBs touched (NULL: none yet) */

	/*
	 * lock: protects the domains' indexes, CLOCK hands, counts and
	 * generations, the domain list and the pending list. Never held across
	 * a registrar call, a last reference drop, malloc/free, or a span
	 * resolver call.
	 */
	_Alignas(MRL_CACHELINE) pthread_mutex_t lock;
	struct mrl_pending *pending;
	size_t max_count, max_size;
	size_t huge_after;		/* see mrl_arena.h; SIZE_MAX: never */
	size_t page_size;
	const struct fi_provider *prov;
	unsigned slot;
	uint64_t slot_base[MRL_TCNT_COUNT];
	uint64_t closed_hot[MRL_TCNT_COUNT];	/* freed domains' counters */
	/* Alive domains on the shared statistic slot, and the slot's counts
	 * when the first of them opened: the cache counts the slot from then
	 * until the last is freed, then keeps that in closed_hot. */
	unsigned shared_domains;
	uint64_t shared_base[MRL_TCNT_COUNT];
	atomic_uint_least64_t hits_seen;	/* most hits a query reported */
	atomic_uint refs;		/* creator + alive domains */
	/* Registrations a monitor invalidation dropped last, to be closed by
	 * another thread (a lock-free stack through their cold `next`). */
	_Atomic(struct mrl_registration *) deferred;
	struct mrl_cache *next;		/* mrl_caches (under mrl_caches_lock) */
	struct mrl_btnode *spare[2];	/* index node reserves: inner, leaf */
	/* Installs filter keys and nodes (never with cache->lock held; never
	 * taken by invalidate); may take cache->lock inside it. */
	pthread_mutex_t flt_lock;
	unsigned nspare[2];
	struct mrl_slow_stats stats;
};

struct mrl_cache_domain {
	/* First, alone on its line: what the inline hit path reads (the
	 * generation changes on every retire, under cache->lock). */
	struct mrl_cache_domain_hot hot;
	_Alignas(MRL_CACHELINE) struct mrl_cache *cache;
	struct mrl_cache_domain *next;
	/* Under cache->lock (readers: inside a read section). */
	struct mrl_btnode *root;
	unsigned height;		/* levels of the index, leaves included */
	uintptr_t hand;			/* CLOCK: base last swept (if hand_set) */
	bool hand_set;
	size_t count, bytes;
	/* Entries whose index reference is lent (see lend_locked): written
	 * in write sections, read by the last-reference path without a lock,
	 * where 0 means "destroy, nothing to settle". */
	atomic_uint lent;
	bool closed;
	fi_mrlease_span_fn span;
	void *span_arg;

	struct mrl_domain_config cfg;
	uint64_t key_top, key_half;
	atomic_uint_least64_t next_key;
	uint64_t slot_base[MRL_TCNT_COUNT];
	atomic_uint refs;		/* open handle + registrations alive */
	unsigned fork_gen;		/* mrl_fork_gen when opened */
	struct mrl_slow_stats stats;
	atomic_uint_least64_t hits_seen;	/* most hits a query reported */
	/* Entry slabs and their free entries (under mrl_pool_lock). */
	struct mrl_slab *slabs;
	struct mrl_registration *free;
	size_t slab_entries;
};

/* ---- fork ---------------------------------------------------------------- */

static pthread_mutex_t mrl_pool_lock;	/* (entry slabs, below) */

/* Every cache lock in the order the code takes them (a cache's flt_lock
 * before its lock; the pool, slot and arena locks are leaves), released in
 * reverse. */
static void fork_locks(bool lock)
{
	struct mrl_cache *cache;

	if (lock) {
		pthread_mutex_lock(&mrl_caches_lock);
		for (cache = mrl_caches; cache; cache = cache->next) {
			pthread_mutex_lock(&cache->flt_lock);
			pthread_mutex_lock(&cache->lock);
		}
		pthread_mutex_lock(&mrl_pool_lock);
		pthread_mutex_lock(&mrl_slot_lock);
		mrl_arena_fork_lock(true);
		return;
	}
	mrl_arena_fork_lock(false);
	pthread_mutex_unlock(&mrl_slot_lock);
	pthread_mutex_unlock(&mrl_pool_lock);
	for (cache = mrl_caches; cache; cache = cache->next) {
		pthread_mutex_unlock(&cache->lock);
		pthread_mutex_unlock(&cache->flt_lock);
	}
	pthread_mutex_unlock(&mrl_caches_lock);
}

/* ---- entry slabs -------------------------------------------------------- */

/*
 * Entries come from slabs owned by their domain (so an entry needs no domain
 * pointer) and kept for the process's life, so freeing one (on a last
 * release, possibly inside an allocator hook) never calls free(), and a
 * stale hot way never touches unmapped memory. A domain's slabs grow with it
 * (32 entries, then as many as it has, at most MRL_SLAB_MAX: a small domain
 * costs about 1.6 KB, a large one wastes at most one slab). When a domain is
 * freed, every entry of its slabs is free; the slabs go to an idle list that
 * the next domain to need entries adopts. One small lock (mrl_pool_lock)
 * guards free lists, slab lists and the idle list.
 */
#define MRL_SLAB_MIN 32
#define MRL_SLAB_MAX 256
static pthread_mutex_t mrl_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrl_slab *mrl_slabs_idle;
static size_t mrl_slabs_idle_bytes;

static inline size_t slab_bytes(uint32_t n)
{
	return sizeof(struct mrl_slab) +
	       n * (sizeof(struct mrl_registration) + sizeof(struct mrl_reg_cold));
}

/* Give `slab` to dom: its entries onto dom's free list (mrl_pool_lock). */
static void slab_adopt(struct mrl_cache_domain *dom, struct mrl_slab *slab)
{
	slab->domain = dom;
	slab->next = dom->slabs;
	dom->slabs = slab;
	dom->slab_entries += slab->n;
	for (uint32_t i = slab->n; i-- > 0;) {
		reg_cold(&slab->reg[i])->next = dom->free;
		dom->free = &slab->reg[i];
	}
}

static struct mrl_registration *pool_alloc(struct mrl_cache_domain *dom)
{
	struct mrl_registration *reg;
	struct mrl_slab *slab;
	uint32_t n;

	pthread_mutex_lock(&mrl_pool_lock);
	if (!dom->free && mrl_slabs_idle) {
		slab = mrl_slabs_idle;
		mrl_slabs_idle = slab->next;
		mrl_slabs_idle_bytes -= slab_bytes(slab->n);
		slab_adopt(dom, slab);
	}
	n = dom->slab_entries < MRL_SLAB_MIN ? MRL_SLAB_MIN :
	    dom->slab_entries > MRL_SLAB_MAX ? MRL_SLAB_MAX : (uint32_t)dom->slab_entries;
	while (!dom->free) {
		pthread_mutex_unlock(&mrl_pool_lock);
		slab = cache_alloc_lines(slab_bytes(n), dom->cache->huge_after);
		if (!slab)
			return NULL;
		slab->n = n;
		for (uint32_t i = 0; i < n; i++) {
			atomic_init(&slab->reg[i].refs, 0);
			slab->reg[i].idx = (uint16_t)i;
		}
		pthread_mutex_lock(&mrl_pool_lock);
		slab_adopt(dom, slab);
	}
	reg = dom->free;
	dom->free = reg_cold(reg)->next;
	pthread_mutex_unlock(&mrl_pool_lock);
	/* A stale hot slot may still CAS refs (see hot_lease): everything but
	 * refs is plain, refs is only ever accessed atomically. idx never
	 * changes. */
	reg->base = reg->end = 0;
	reg->desc = NULL;
	reg->slot = 0;
	reg->state = MRL_REG_NEW;
	reg_cold(reg)->mr = NULL;
	reg_cold(reg)->next = NULL;
	return reg;
}

size_t mrl_cache_pool_idle_bytes(void)
{
	size_t n;

	pthread_mutex_lock(&mrl_pool_lock);
	n = mrl_slabs_idle_bytes;
	pthread_mutex_unlock(&mrl_pool_lock);
	return n;
}

static void pool_free(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = reg_domain(reg);

	pthread_mutex_lock(&mrl_pool_lock);
	reg_cold(reg)->next = dom->free;
	dom->free = reg;
	pthread_mutex_unlock(&mrl_pool_lock);
}

/* A domain being freed (every entry free): its slabs become idle. */
static void pool_release_domain(struct mrl_cache_domain *dom)
{
	struct mrl_slab *slab;

	pthread_mutex_lock(&mrl_pool_lock);
	while ((slab = dom->slabs)) {
		dom->slabs = slab->next;
		slab->domain = NULL;
		slab->next = mrl_slabs_idle;
		mrl_slabs_idle = slab;
		mrl_slabs_idle_bytes += slab_bytes(slab->n);
	}
	dom->free = NULL;
	dom->slab_entries = 0;
	pthread_mutex_unlock(&mrl_pool_lock);
}

/* ---- interval index ----------------------------------------------------- */

/*
 * A B+tree keyed by base (unique per domain), each inner child slot carrying
 * the max end of its subtree, so a covering or overlap query prunes whole
 * subtrees. Fanout 16 keeps a million entries within five levels whose upper
 * three stay in cache. Leaves hold only bases and entry pointers (an entry's
 * end is read from the entry, which a lease touches anyway): 16.5 bytes per
 * entry. key[i] of an inner node is a lower bound of child i's keys (key[0]
 * is never compared); unused keys are UINTPTR_MAX so searches run branch
 * free over all slots. Removals do not merge siblings: an emptied node is
 * unlinked, the root collapses.
 *
 * Readers walk it inside a read section; writers change it inside a write
 * section. Nodes come from the cache's reserves (refilled before a write
 * section, never malloc'd under the lock) and return to them.
 */
#define MRL_BT_FAN 16
#define MRL_BT_MAX_DEPTH 12	/* 16^12 entries: unreachable */
#define MRL_BT_KEEP 4		/* reserve nodes kept after a domain closes */

/* Line-aligned allocations: keys in two lines, pointers in the next two
 * (all a predecessor search reads), the header after them (writers and the
 * fallback search only). A leaf is 264 bytes: 16.5 bytes per entry. */
struct mrl_btnode {
	uintptr_t key[MRL_BT_FAN];	/* base, or lower bound */
	void *ptr[MRL_BT_FAN];		/* leaf: registration; inner: node */
	uint16_t count;
	bool leaf;
};

/* Inner nodes add the max end of each child's subtree. */
struct mrl_btinner {
	struct mrl_btnode node;
	uintptr_t max_end[MRL_BT_FAN];
};

static inline size_t bt_size(bool leaf)
{
	return leaf ? sizeof(struct mrl_btnode) : sizeof(struct mrl_btinner);
}

/* Max end below slot i: the entry's end in a leaf, the subtree's otherwise. */
static inline uintptr_t bt_max(const struct mrl_btnode *n, int i)
{
	return n->leaf ? ((const struct mrl_registration *)n->ptr[i])->end :
			 ((const struct mrl_btinner *)n)->max_end[i];
}

static inline void bt_set_max(struct mrl_btnode *n, int i, uintptr_t max_end)
{
	if (!n->leaf)
		((struct mrl_btinner *)n)->max_end[i] = max_end;
}

struct mrl_btpath {
	struct mrl_btnode *node[MRL_BT_MAX_DEPTH];
	int idx[MRL_BT_MAX_DEPTH];
	int depth;
};

/* Child of an inner node whose range holds k: the number of bounds <= k past
 * key[0]. Branch-free over all slots: no mispredicted exits, so independent
 * lookups overlap their misses. */
static inline int bt_child(const struct mrl_btnode *n, uintptr_t k)
{
	int c = 0;

	for (int i = 1; i < MRL_BT_FAN; i++)
		c += n->key[i] <= k;
	return c;
}

/* Number of keys <= k in a leaf (the predecessor is that minus one). */
static inline int bt_rank(const struct mrl_btnode *n, uintptr_t k)
{
	int c = 0;

	for (int i = 0; i < MRL_BT_FAN; i++)
		c += n->key[i] <= k;
	return c;
}

static uintptr_t bt_node_max(const struct mrl_btnode *n)
{
	uintptr_t m = 0;

	for (int i = 0; i < n->count; i++)
		if (bt_max(n, i) > m)
			m = bt_max(n, i);
	return m;
}

/* A node's lines at once, so the pointer line a search needs is not a second
 * dependent miss after the key lines. */
static inline void bt_prefetch(const struct mrl_btnode *n)
{
	for (size_t off = 0; off < bt_size(false); off += MRL_CACHELINE)
		__builtin_prefetch((const char *)n + off);
}

/* Lines of a node the predecessor search reads: keys and pointers (not the
 * header, not the max ends). */
static inline void bt_prefetch_search(const struct mrl_btnode *n)
{
	const char *k = (const char *)n->key, *p = (const char *)n->ptr;

	__builtin_prefetch(k);
	__builtin_prefetch(k + MRL_CACHELINE);
	__builtin_prefetch(p);
	__builtin_prefetch(p + MRL_CACHELINE);
}

/* The largest i in [1, 15] with key[i] <= k, else 0 (unused keys are
 * UINTPTR_MAX): a quaternary search, two dependent rounds of three
 * independent compares, no branches. */
static inline int bt_search16(const uintptr_t *key, uintptr_t k)
{
	int q = ((key[4] <= k) + (key[8] <= k) + (key[12] <= k)) << 2;

	return q + (key[q + 1] <= k) + (key[q + 2] <= k) + (key[q + 3] <= k);
}

/*
 * The usual hit: the entry with the nearest base <= start, if it reaches end.
 * A descent of `height` levels, one binary search per node, the next node's
 * search lines prefetched as soon as its address is known. NULL means "not
 * the predecessor": the caller falls back to bt_find_cover (a wide entry
 * further left, or no cover at all).
 */
static inline struct mrl_registration *
bt_find_pred(const struct mrl_btnode *n, unsigned height, uintptr_t start, uintptr_t end)
{
	struct mrl_registration *e;
	int i;

	if (MRL_UNLIKELY(!n))
		return NULL;
	for (; height > 1; height--) {
		n = n->ptr[bt_search16(n->key, start)];
		bt_prefetch_search(n);
	}
	i = bt_search16(n->key, start);
	if (MRL_UNLIKELY(n->key[i] > start))	/* i == 0, key[0] > start */
		return NULL;
	e = n->ptr[i];
	return e->end >= end ? e : NULL;
}

static unsigned bt_height(const struct mrl_btnode *n)
{
	unsigned h = 0;

	for (; n; n = n->leaf ? NULL : n->ptr[0])
		h++;
	return h;
}

/* Any entry in the subtree with end >= end (the caller knows one exists). */
static struct mrl_registration *bt_any_end(const struct mrl_btnode *n, uintptr_t end)
{
	for (;;) {
		int i = 0;

		while (i < n->count && bt_max(n, i) < end)
			i++;
		if (i == n->count)
			return NULL;
		if (n->leaf)
			return n->ptr[i];
		n = n->ptr[i];
	}
}

/*
 * Any entry with base <= start and end >= end. In a node, children left of
 * the one holding `start` have every base <= start, so their max end alone
 * says whether they hold a cover; only the child holding `start` needs a
 * recursive look. In a leaf the predecessor is tried first (the usual hit),
 * then entries further left (a wide entry behind a narrow one).
 */
static struct mrl_registration *bt_find_cover(const struct mrl_btnode *n,
					      uintptr_t start, uintptr_t end)
{
	struct mrl_registration *r;
	int i;

	if (!n)
		return NULL;
	if (n->leaf) {
		for (i = bt_rank(n, start) - 1; i >= 0; i--)
			if (bt_max(n, i) >= end)
				return n->ptr[i];
		return NULL;
	}
	i = bt_child(n, start);
	if (bt_max(n, i) >= end) {
		bt_prefetch(n->ptr[i]);
		if ((r = bt_find_cover(n->ptr[i], start, end)))
			return r;
	}
	for (i--; i >= 0; i--)
		if (bt_max(n, i) >= end)
			return bt_any_end(n->ptr[i], end);
	return NULL;
}

/* Any entry overlapping [start, end): base < end and end > start. Children
 * (and leaf slots) left of the one holding end - 1 have every base < end;
 * the nearest ones are tried first. */
static struct mrl_registration *bt_find_overlap(const struct mrl_btnode *n,
						uintptr_t start, uintptr_t end)
{
	struct mrl_registration *r;
	int i;

	if (!n)
		return NULL;
	if (n->leaf) {
		for (i = bt_rank(n, end - 1) - 1; i >= 0; i--)
			if (bt_max(n, i) > start)
				return n->ptr[i];
		return NULL;
	}
	i = bt_child(n, end - 1);
	if (bt_max(n, i) > start && (r = bt_find_overlap(n->ptr[i], start, end)))
		return r;
	for (i--; i >= 0; i--)
		if (bt_max(n, i) > start)
			return bt_any_end(n->ptr[i], start + 1);
	return NULL;
}

/* Descend to the leaf that holds (or would hold) base, recording the path. */
static struct mrl_btnode *bt_descend(struct mrl_btnode *n, uintptr_t base,
				     struct mrl_btpath *path)
{
	path->depth = 0;
	while (!n->leaf) {
		int i = bt_child(n, base);

		path->node[path->depth] = n;
		path->idx[path->depth++] = i;
		n = n->ptr[i];
	}
	return n;
}

static struct mrl_registration *bt_find_base(struct mrl_btnode *root, uintptr_t base)
{
	struct mrl_btpath path;
	struct mrl_btnode *leaf;

	if (!root)
		return NULL;
	leaf = bt_descend(root, base, &path);
	for (int i = 0; i < leaf->count; i++)
		if (leaf->key[i] == base)
			return leaf->ptr[i];
	return NULL;
}

/* The entry at exactly `base` if it reaches `end` (acquire_based). */
static struct mrl_registration *bt_find_based(struct mrl_btnode *root, uintptr_t base,
					      uintptr_t end)
{
	struct mrl_registration *e = bt_find_base(root, base);

	return e && e->end >= end ? e : NULL;
}

/* Recompute the max ends along the path to base after a change below. */
static void bt_fix_path(struct mrl_btnode *root, uintptr_t base)
{
	struct mrl_btpath path;

	if (!root || root->leaf)
		return;
	bt_descend(root, base, &path);
	for (int d = path.depth - 1; d >= 0; d--)
		bt_set_max(path.node[d], path.idx[d],
			   bt_node_max(path.node[d]->ptr[path.idx[d]]));
}

static void bt_insert_at(struct mrl_btnode *n, int pos, uintptr_t key,
			 uintptr_t max_end, void *ptr)
{
	int move = n->count - pos;

	memmove(&n->key[pos + 1], &n->key[pos], move * sizeof(n->key[0]));
	memmove(&n->ptr[pos + 1], &n->ptr[pos], move * sizeof(n->ptr[0]));
	if (!n->leaf)
		memmove(&((struct mrl_btinner *)n)->max_end[pos + 1],
			&((struct mrl_btinner *)n)->max_end[pos], move * sizeof(uintptr_t));
	n->key[pos] = key;
	n->ptr[pos] = ptr;
	bt_set_max(n, pos, max_end);
	n->count++;
}

static void bt_remove_at(struct mrl_btnode *n, int pos)
{
	int move = n->count - pos - 1;

	memmove(&n->key[pos], &n->key[pos + 1], move * sizeof(n->key[0]));
	memmove(&n->ptr[pos], &n->ptr[pos + 1], move * sizeof(n->ptr[0]));
	if (!n->leaf)
		memmove(&((struct mrl_btinner *)n)->max_end[pos],
			&((struct mrl_btinner *)n)->max_end[pos + 1], move * sizeof(uintptr_t));
	n->count--;
	n->key[n->count] = UINTPTR_MAX;
}

/* ---- node reserves (cache->lock) ---- */

static struct mrl_btnode *bt_node_take(struct mrl_cache *cache, bool leaf);
static void bt_node_give(struct mrl_cache *cache, struct mrl_btnode *n);

/*
 * Insert (key, max_end, ptr) at `pos` of `n`, splitting full nodes up the
 * path. An insert at the end of a full node moves nothing (the new slot
 * starts the right sibling), so ascending inserts leave full leaves.
 */
static void bt_insert_up(struct mrl_cache *cache, struct mrl_btnode **root,
			 struct mrl_btpath *path, struct mrl_btnode *n, int pos,
			 uintptr_t key, uintptr_t max_end, void *ptr)
{
	struct mrl_btnode *right, *parent;
	int mid, at;

	for (;;) {
		if (n->count < MRL_BT_FAN) {
			bt_insert_at(n, pos, key, max_end, ptr);
			return;
		}
		right = bt_node_take(cache, n->leaf);
		mid = pos == MRL_BT_FAN ? MRL_BT_FAN : MRL_BT_FAN / 2;
		right->count = (uint16_t)(MRL_BT_FAN - mid);
		memcpy(right->key, &n->key[mid], right->count * sizeof(n->key[0]));
		memcpy(right->ptr, &n->ptr[mid], right->count * sizeof(n->ptr[0]));
		if (!n->leaf)
			memcpy(((struct mrl_btinner *)right)->max_end,
			       &((struct mrl_btinner *)n)->max_end[mid],
			       right->count * sizeof(uintptr_t));
		n->count = (uint16_t)mid;
		for (int k = mid; k < MRL_BT_FAN; k++)
			n->key[k] = UINTPTR_MAX;
		if (pos >= mid)
			bt_insert_at(right, pos - mid, key, max_end, ptr);
		else
			bt_insert_at(n, pos, key, max_end, ptr);

		if (!path->depth) {
			parent = bt_node_take(cache, false);
			parent->count = 2;
			parent->key[0] = n->key[0];
			parent->ptr[0] = n;
			bt_set_max(parent, 0, bt_node_max(n));
			parent->key[1] = right->key[0];
			parent->ptr[1] = right;
			bt_set_max(parent, 1, bt_node_max(right));
			*root = parent;
			return;
		}
		path->depth--;
		parent = path->node[path->depth];
		at = path->idx[path->depth];
		bt_set_max(parent, at, bt_node_max(n));
		n = parent;
		pos = at + 1;
		key = right->key[0];
		max_end = bt_node_max(right);
		ptr = right;
	}
}

static void bt_insert(struct mrl_cache *cache, struct mrl_btnode **root,
		      struct mrl_registration *e)
{
	struct mrl_btpath path;
	struct mrl_btnode *leaf;
	int pos = 0;

	if (!*root) {
		*root = bt_node_take(cache, true);
		bt_insert_at(*root, 0, e->base, e->end, e);
		return;
	}
	leaf = bt_descend(*root, e->base, &path);
	while (pos < leaf->count && leaf->key[pos] < e->base)
		pos++;
	bt_insert_up(cache, root, &path, leaf, pos, e->base, e->end, e);
	bt_fix_path(*root, e->base);
}

static void bt_remove(struct mrl_cache *cache, struct mrl_btnode **root, uintptr_t base)
{
	struct mrl_btpath path;
	struct mrl_btnode *n, *only;
	int pos = 0;

	if (!*root)
		return;
	n = bt_descend(*root, base, &path);
	while (pos < n->count && n->key[pos] != base)
		pos++;
	if (pos == n->count)
		return;
	bt_remove_at(n, pos);
	/* Unlink emptied nodes upwards. */
	while (!n->count && path.depth) {
		bt_node_give(cache, n);
		path.depth--;
		n = path.node[path.depth];
		bt_remove_at(n, path.idx[path.depth]);
	}
	if (!n->count) {	/* the root emptied */
		bt_node_give(cache, n);
		*root = NULL;
		return;
	}
	while (!(*root)->leaf && (*root)->count == 1) {
		only = (*root)->ptr[0];
		bt_node_give(cache, *root);
		*root = only;
	}
	bt_fix_path(*root, base);
}

static struct mrl_btnode *bt_node_take(struct mrl_cache *cache, bool leaf)
{
	struct mrl_btnode *n = cache->spare[leaf];

	cache->spare[leaf] = n->ptr[0];
	cache->nspare[leaf]--;
	memset(n, 0, bt_size(leaf));
	for (int i = 0; i < MRL_BT_FAN; i++)
		n->key[i] = UINTPTR_MAX;	/* unused: never <= a searched key */
	n->leaf = leaf;
	return n;
}

static void bt_node_give(struct mrl_cache *cache, struct mrl_btnode *n)
{
	n->ptr[0] = cache->spare[n->leaf];
	cache->spare[n->leaf] = n;
	cache->nspare[n->leaf]++;
}

/* Every node of a subtree back to the reserves and every entry onto *chain
 * (clear_domain). */
static void bt_give_all(struct mrl_cache *cache, struct mrl_btnode *n,
			struct mrl_registration **chain)
{
	struct mrl_registration *e;

	if (!n)
		return;
	for (int i = 0; i < n->count; i++) {
		if (n->leaf) {
			e = n->ptr[i];
			reg_cold(e)->next = *chain;
			*chain = e;
		} else {
			bt_give_all(cache, n->ptr[i], chain);
		}
	}
	bt_node_give(cache, n);
}

/* The first entry with base > key, or >= key when !after (the CLOCK hand). */
static struct mrl_registration *bt_successor(const struct mrl_btnode *n, uintptr_t key,
					     bool after)
{
	const struct mrl_btnode *path[MRL_BT_MAX_DEPTH];
	int idx[MRL_BT_MAX_DEPTH], d = 0, i;

	if (!n)
		return NULL;
	while (!n->leaf) {
		path[d] = n;
		idx[d] = bt_child(n, key);
		n = n->ptr[idx[d++]];
	}
	for (;;) {
		for (i = 0; i < n->count; i++)
			if (after ? n->key[i] > key : n->key[i] >= key)
				return n->ptr[i];
		/* Past this leaf: the next subtree to the right, leftmost leaf. */
		while (d && idx[d - 1] + 1 >= path[d - 1]->count)
			d--;
		if (!d)
			return NULL;
		n = path[d - 1]->ptr[++idx[d - 1]];
		while (!n->leaf) {
			path[d] = n;
			idx[d++] = 0;
			n = n->ptr[0];
		}
	}
}

/* ---- overlap filter ----------------------------------------------------- */

/*
 * Per-page occupancy counts of every live entry of the cache, so that an
 * invalidate of pages no entry touches returns after a few loads without
 * entering a read section or walking an index (allocators purge far more
 * pages than were ever registered). Three levels over address bits 46..12:
 * a directory of the GiBs some entry touches (an open-addressing hash table
 * keyed by the GiB number, grown by doubling, at least half empty), each
 * slot counting entries covering the whole GiB and pointing to a mid node;
 * a mid node counts entries covering whole 2 MiB blocks and points to
 * leaves of 512 page counts. An entry adds one at the coarsest level that it
 * fully covers, so a 1 GiB arena costs one count. Its size follows the
 * cache's: a slot per GiB touched, a mid node (4.6 KB) per GiB holding a
 * partial entry, a leaf (512 B) per 2 MiB block holding one; a cache of a
 * few entries pays about 5 KB, none before its first entry. A lookup is as
 * deep as a radix table's: the directory pointer, a slot, a mid node, a leaf.
 *
 * Counts saturate at 255 and then stick (a false "maybe", never a false
 * "no"). Keys and nodes are installed before the write section that counts
 * an entry (under cache->flt_lock, allocating with no cache lock held; never
 * freed before the cache), counts change only inside write sections (a
 * directory growth copies them inside one too), so invalidate never
 * allocates and never takes flt_lock. Replaced directories stay readable
 * until the cache goes. Addresses above 2^47 (beyond user space on 4-level
 * x86-64 and arm64 48-bit) and entries the filter could not be extended for
 * make it answer "maybe".
 */
#define MRL_FLT_PAGE 12
#define MRL_FLT_MID 21
#define MRL_FLT_TOP 30
#define MRL_FLT_LIMIT ((uintptr_t)1 << 47)
#define MRL_FLT_SCAN 256	/* pages checked before answering "maybe" */
#define MRL_FLT_DIR_MIN 8	/* directory slots at first */

struct mrl_flt_leaf {
	atomic_uchar page[MRL_FLT_FAN];
};

struct mrl_flt_mid {
	_Atomic(struct mrl_flt_leaf *) leaf[MRL_FLT_FAN];
	atomic_uchar full[MRL_FLT_FAN];		/* entries covering a 2 MiB block */
};

struct mrl_flt_slot {
	atomic_uintptr_t key;			/* GiB number + 1; 0: empty */
	_Atomic(struct mrl_flt_mid *) mid;	/* NULL until a partial entry */
	atomic_uchar full;			/* entries covering the GiB */
};

struct mrl_flt_dir {
	uintptr_t mask;				/* slots - 1 */
	size_t used;				/* keys (under flt_lock) */
	struct mrl_flt_dir *older;		/* replaced, freed with the cache */
	struct mrl_flt_slot slot[];
};

static void write_enter(struct mrl_cache *cache);
static void write_exit(struct mrl_cache *cache);

static inline unsigned flt_idx(uintptr_t a, int shift)
{
	return (unsigned)(a >> shift) & (MRL_FLT_FAN - 1);
}

static inline uintptr_t flt_next(uintptr_t a, int shift)
{
	return (a | (((uintptr_t)1 << shift) - 1)) + 1;
}

static inline bool flt_covers(uintptr_t a, uintptr_t end, int shift)
{
	uintptr_t size = (uintptr_t)1 << shift;

	return !(a & (size - 1)) && end - a >= size;
}

static inline void flt_count(atomic_uchar *c, int delta)
{
	unsigned v = atomic_load_explicit(c, memory_order_relaxed);

	if (v < 255)
		atomic_store_explicit(c, (unsigned char)(v + delta), memory_order_relaxed);
}

/* The slot of GiB `gib` in `dir`, or NULL. Linear probing; the table is at
 * most half full, so an empty slot ends every probe. */
static inline struct mrl_flt_slot *flt_dir_find(struct mrl_flt_dir *dir, uintptr_t gib)
{
	uintptr_t k;

	for (uintptr_t i = gib & dir->mask;; i = (i + 1) & dir->mask) {
		k = atomic_load_explicit(&dir->slot[i].key, memory_order_acquire);
		if (k == gib + 1)
			return &dir->slot[i];
		if (!k)
			return NULL;
	}
}

/* A new key (flt_lock held): its fields first, the key last (release). */
static struct mrl_flt_slot *flt_dir_put(struct mrl_flt_dir *dir, uintptr_t gib,
					struct mrl_flt_mid *mid, unsigned full)
{
	uintptr_t i = gib & dir->mask;

	while (atomic_load_explicit(&dir->slot[i].key, memory_order_relaxed))
		i = (i + 1) & dir->mask;
	atomic_store_explicit(&dir->slot[i].mid, mid, memory_order_relaxed);
	atomic_store_explicit(&dir->slot[i].full, (unsigned char)full, memory_order_relaxed);
	atomic_store_explicit(&dir->slot[i].key, gib + 1, memory_order_release);
	dir->used++;
	return &dir->slot[i];
}

/*
 * Install GiB `gib` (and its mid node when `want_mid`), no cache lock held.
 * Allocations happen with flt_lock released; a full directory is replaced by
 * one twice its size inside a write section (the counts it copies change
 * only in write sections). NULL if out of memory.
 */
static struct mrl_flt_slot *flt_install(struct mrl_cache *cache, uintptr_t gib,
					bool want_mid)
{
	struct mrl_flt_dir *dir, *grown = NULL;
	struct mrl_flt_mid *mid = NULL;
	struct mrl_flt_slot *slot;
	uintptr_t want = 0;
	bool room;

	for (;;) {
		pthread_mutex_lock(&cache->flt_lock);
		dir = atomic_load_explicit(&cache->flt_dir, memory_order_relaxed);
		slot = dir ? flt_dir_find(dir, gib) : NULL;
		room = dir && 2 * (dir->used + 1) <= dir->mask + 1;
		if (slot && (!want_mid || atomic_load_explicit(&slot->mid, memory_order_relaxed)))
			break;
		if (slot && mid) {	/* the key is there, its mid node was not */
			atomic_store_explicit(&slot->mid, mid, memory_order_release);
			mid = NULL;
			break;
		}
		if (!slot && room && (!want_mid || mid)) {
			slot = flt_dir_put(dir, gib, mid, 0);
			mid = NULL;
			break;
		}
		want = slot || room ? 0 : dir ? 2 * (dir->mask + 1) : MRL_FLT_DIR_MIN;
		if (want && grown && grown->mask + 1 >= want) {
			/* Full: the copy in a write section, then publish. */
			write_enter(cache);
			for (uintptr_t i = 0; dir && i <= dir->mask; i++) {
				uintptr_t k = atomic_load_explicit(&dir->slot[i].key,
								   memory_order_relaxed);

				if (k)
					flt_dir_put(grown, k - 1,
						    atomic_load_explicit(&dir->slot[i].mid,
									 memory_order_relaxed),
						    atomic_load_explicit(&dir->slot[i].full,
									 memory_order_relaxed));
			}
			grown->older = dir;
			atomic_store_explicit(&cache->flt_dir, grown, memory_order_release);
			write_exit(cache);
			grown = NULL;
			pthread_mutex_unlock(&cache->flt_lock);
			continue;
		}
		pthread_mutex_unlock(&cache->flt_lock);
		if (want_mid && !mid && !(mid = cache_alloc(sizeof(*mid))))
			goto err;
		if (want && (!grown || grown->mask + 1 < want)) {
			free(grown);
			grown = cache_alloc(sizeof(*grown) + want * sizeof(grown->slot[0]));
			if (!grown)
				goto err;
			grown->mask = want - 1;
		}
	}
	pthread_mutex_unlock(&cache->flt_lock);
	free(mid);
	free(grown);
	return slot;
err:
	free(mid);
	free(grown);
	return NULL;
}

/* The slot of GiB `gib`, or NULL (lock-free). */
static inline struct mrl_flt_slot *flt_slot(struct mrl_cache *cache, uintptr_t gib)
{
	struct mrl_flt_dir *dir = atomic_load_explicit(&cache->flt_dir, memory_order_acquire);

	return dir ? flt_dir_find(dir, gib) : NULL;
}

/* The leaf at *slot, installed first when `install` (a zeroed one, by CAS, no
 * lock held); NULL if missing or out of memory. */
static struct mrl_flt_leaf *flt_leaf(_Atomic(struct mrl_flt_leaf *) *slot, bool install)
{
	struct mrl_flt_leaf *expected = NULL,
			    *n = atomic_load_explicit(slot, memory_order_acquire);

	if (n || !install)
		return n;
	n = cache_alloc(sizeof(*n));
	if (!n)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(slot, &expected, n,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		free(n);
		n = expected;
	}
	return n;
}

/*
 * Walk the decomposition of an entry's [lo, hi): the coarsest level each
 * part fully covers. delta 0 installs the keys and nodes the entry will count
 * in (before the write section, no lock held); +1/-1 counts it in or out
 * (inside a write section, nodes already there). A missing node leaves the
 * filter broken, i.e. always "maybe".
 */
static void flt_update(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi, int delta)
{
	bool install = delta == 0;
	struct mrl_flt_slot *slot;
	struct mrl_flt_mid *mid;
	struct mrl_flt_leaf *leaf;
	uintptr_t a;

	/* Given up (always "maybe"): no more nodes to install or count in. */
	if (atomic_load_explicit(&cache->flt_broken, memory_order_relaxed))
		return;
	if (hi > MRL_FLT_LIMIT) {
		if (delta)
			atomic_store_explicit(&cache->flt_unfiltered,
					      atomic_load_explicit(&cache->flt_unfiltered,
								   memory_order_relaxed) + delta,
					      memory_order_relaxed);
		return;
	}
	for (a = lo & ~(((uintptr_t)1 << MRL_FLT_PAGE) - 1); a < hi;) {
		bool whole = flt_covers(a, hi, MRL_FLT_TOP);

		slot = flt_slot(cache, a >> MRL_FLT_TOP);
		if (install && (!slot || (!whole && !atomic_load_explicit(&slot->mid,
									   memory_order_acquire))))
			slot = flt_install(cache, a >> MRL_FLT_TOP, !whole);
		if (!slot)
			goto broken;
		if (whole) {
			if (delta)
				flt_count(&slot->full, delta);
			a = flt_next(a, MRL_FLT_TOP);
			continue;
		}
		mid = atomic_load_explicit(&slot->mid, memory_order_acquire);
		if (!mid)
			goto broken;
		if (flt_covers(a, hi, MRL_FLT_MID)) {
			if (delta)
				flt_count(&mid->full[flt_idx(a, MRL_FLT_MID)], delta);
			a = flt_next(a, MRL_FLT_MID);
			continue;
		}
		leaf = flt_leaf(&mid->leaf[flt_idx(a, MRL_FLT_MID)], install);
		if (!leaf)
			goto broken;
		if (!delta) {
			a = flt_next(a, MRL_FLT_MID);
			continue;
		}
		flt_count(&leaf->page[flt_idx(a, MRL_FLT_PAGE)], delta);
		a += (uintptr_t)1 << MRL_FLT_PAGE;
	}
	return;
broken:
	atomic_store_explicit(&cache->flt_broken, true, memory_order_relaxed);
}

/* False only if no live entry of the cache touches a page of [lo, hi). */
static bool flt_maybe(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi)
{
	struct mrl_flt_dir *dir;
	struct mrl_flt_slot *slot;
	struct mrl_flt_mid *mid;
	struct mrl_flt_leaf *leaf;
	unsigned scanned = 0;
	uintptr_t a;

	if (hi > MRL_FLT_LIMIT ||
	    atomic_load_explicit(&cache->flt_unfiltered, memory_order_relaxed) ||
	    atomic_load_explicit(&cache->flt_broken, memory_order_relaxed))
		return true;
	dir = atomic_load_explicit(&cache->flt_dir, memory_order_acquire);
	if (!dir)
		return false;
	for (a = lo & ~(((uintptr_t)1 << MRL_FLT_PAGE) - 1); a < hi && a;) {
		slot = flt_dir_find(dir, a >> MRL_FLT_TOP);
		if (!slot) {
			a = flt_next(a, MRL_FLT_TOP);
			continue;
		}
		if (atomic_load_explicit(&slot->full, memory_order_relaxed))
			return true;
		mid = atomic_load_explicit(&slot->mid, memory_order_acquire);
		if (!mid) {
			a = flt_next(a, MRL_FLT_TOP);
			continue;
		}
		if (atomic_load_explicit(&mid->full[flt_idx(a, MRL_FLT_MID)],
					 memory_order_relaxed))
			return true;
		leaf = atomic_load_explicit(&mid->leaf[flt_idx(a, MRL_FLT_MID)],
					    memory_order_acquire);
		if (!leaf) {
			a = flt_next(a, MRL_FLT_MID);
			continue;
		}
		if (atomic_load_explicit(&leaf->page[flt_idx(a, MRL_FLT_PAGE)],
					 memory_order_relaxed) ||
		    ++scanned > MRL_FLT_SCAN)
			return true;
		a += (uintptr_t)1 << MRL_FLT_PAGE;
	}
	return false;
}

static void flt_free(struct mrl_cache *cache)
{
	struct mrl_flt_dir *dir = atomic_load(&cache->flt_dir), *older;
	struct mrl_flt_mid *mid;

	for (uintptr_t i = 0; dir && i <= dir->mask; i++) {
		mid = atomic_load(&dir->slot[i].mid);
		if (!mid)
			continue;
		for (unsigned k = 0; k < MRL_FLT_FAN; k++)
			free(atomic_load(&mid->leaf[k]));
		free(mid);
	}
	for (; dir; dir = older) {
		older = dir->older;
		free(dir);
	}
}

/* ---- read and write sections -------------------------------------------- */

/* Enter a lock-free read of `cache`'s indexes; false if a writer is active
 * (the caller then reads under the mutex). */
static inline bool read_enter(struct mrl_reader *rec, struct mrl_cache *cache)
{
	if (MRL_UNLIKELY(rec->shared))
		return false;
	atomic_store_explicit(&rec->active, cache, memory_order_seq_cst);
	if (MRL_LIKELY(!atomic_load_explicit(&cache->writer, memory_order_seq_cst)))
		return true;
	atomic_store_explicit(&rec->active, NULL, memory_order_release);
	return false;
}

static inline void read_exit(struct mrl_reader *rec)
{
	atomic_store_explicit(&rec->active, NULL, memory_order_release);
}

/* Exclusive access to the indexes: the mutex excludes other writers and
 * locked readers, the writer flag plus the scan excludes lock-free readers
 * (seq_cst pairs with read_enter: either the reader sees the flag or the
 * writer sees the reader). */
static void write_enter(struct mrl_cache *cache)
{
	unsigned hwm;

	pthread_mutex_lock(&cache->lock);
	atomic_store_explicit(&cache->writer, 1, memory_order_seq_cst);
	hwm = atomic_load(&mrl_readers_hwm);
	for (unsigned i = 0; i < hwm; i++) {
		/* A read section is a few loads; one that lasts is a preempted
		 * reader, so stop burning the CPU it needs. */
		for (unsigned spins = 0;
		     atomic_load_explicit(&mrl_readers[i].active, memory_order_acquire) == cache;
		     spins++) {
			if (spins < 128)
				MRL_CPU_RELAX();
			else
				sched_yield();
		}
	}
}

static void write_exit(struct mrl_cache *cache)
{
	atomic_store_explicit(&cache->writer, 0, memory_order_release);
	pthread_mutex_unlock(&cache->lock);
}

/*
 * Nodes an insert at `base` takes from the reserve (need[0] inner, need[1]
 * leaves): none when its leaf has room; else a leaf, an inner node per full
 * level above it, and a new root when every level is full. A replacement at
 * the same base removes the old entry first; that removal gives back every
 * node it unlinks (an emptied leaf, each emptied ancestor, a collapsed
 * root), and the first ancestor it leaves non-empty lost a child, so an
 * insert sent elsewhere by it splits at most the levels that were given
 * back: the estimate on the index before the removal is enough.
 */
static void bt_need(const struct mrl_btnode *root, uintptr_t base, unsigned need[2])
{
	const struct mrl_btnode *path[MRL_BT_MAX_DEPTH], *n = root;
	int d = 0;

	need[0] = need[1] = 0;
	if (!n) {
		need[1] = 1;
		return;
	}
	while (!n->leaf) {
		path[d++] = n;
		n = n->ptr[bt_child(n, base)];
	}
	if (n->count < MRL_BT_FAN)
		return;
	need[1] = 1;
	while (d && path[d - 1]->count == MRL_BT_FAN) {
		need[0]++;
		d--;
	}
	if (!d)
		need[0]++;	/* the root splits: a new root */
}

/*
 * A write section that may insert an entry at `base` into dom's index: the
 * node reserve holds what that insert can take (bt_need, computed inside the
 * section on the index as it is), allocated beforehand with no lock held, so
 * the insert never runs short halfway and the reserve stays as small as the
 * inserts need (usually empty: a split's nodes are allocated just before
 * it). Returns -FI_ENOMEM (no lock held) if the reserve cannot be filled.
 */
static int write_enter_reserved(struct mrl_cache *cache, struct mrl_cache_domain *dom,
				uintptr_t base)
{
	struct mrl_btnode *chain = NULL, *n;
	unsigned need[2], want[2];

	for (;;) {
		write_enter(cache);
		bt_need(dom->root, base, need);
		if (cache->nspare[false] >= need[false] && cache->nspare[true] >= need[true])
			return 0;
		for (int leaf = 0; leaf < 2; leaf++)
			want[leaf] = cache->nspare[leaf] < need[leaf] ?
					     need[leaf] - cache->nspare[leaf] : 0;
		write_exit(cache);
		for (int leaf = 0; leaf < 2; leaf++) {
			for (unsigned i = 0; i < want[leaf]; i++) {
				if (!(n = cache_alloc_lines(bt_size(leaf), cache->huge_after)))
					break;
				n->leaf = leaf;
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
			bt_node_give(cache, n);
		}
		pthread_mutex_unlock(&cache->lock);
	}
}

/* Give back reserve nodes beyond a small stock (after mass removals), outside
 * the lock. Never called from invalidate, which must not call free(). */
static void reserve_trim(struct mrl_cache *cache, unsigned keep)
{
	struct mrl_btnode *chain = NULL, *n;

	pthread_mutex_lock(&cache->lock);
	for (int leaf = 0; leaf < 2; leaf++) {
		while (cache->nspare[leaf] > keep) {
			n = cache->spare[leaf];
			cache->spare[leaf] = n->ptr[0];
			cache->nspare[leaf]--;
			n->ptr[0] = chain;
			chain = n;
		}
	}
	pthread_mutex_unlock(&cache->lock);
	while (chain) {
		n = chain;
		chain = n->ptr[0];
		mrl_arena_free(n, bt_size(n->leaf));
	}
}

/* ---- references --------------------------------------------------------- */

static void cache_unref(struct mrl_cache *cache);

/* Release, so that a query reading deregistrations before registrations
 * (acquire) counts the registration of every deregistration it counts. */
static void stat_add(struct mrl_cache_domain *dom, size_t off, int64_t n)
{
	atomic_fetch_add_explicit((atomic_uint_least64_t *)((char *)&dom->stats + off),
				  (uint64_t)n, memory_order_release);
	atomic_fetch_add_explicit((atomic_uint_least64_t *)((char *)&dom->cache->stats + off),
				  (uint64_t)n, memory_order_release);
}
#define STAT_ADD(dom, field, n) stat_add(dom, offsetof(struct mrl_slow_stats, field), n)

/* The domain lives until closed and its last registration is gone, because
 * closing a registration needs its registrar. */
static void domain_unref(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_cache_domain **p;

	if (atomic_fetch_sub_explicit(&dom->refs, 1, memory_order_acq_rel) != 1)
		return;
	write_enter(cache);
	for (p = &cache->domains; *p != dom; p = &(*p)->next)
		;
	*p = dom->next;
	/* Every lease of the domain was counted released before its last
	 * registration went: its counts are final. The shared slot is kept
	 * once, when the cache's last domain on it goes (per domain, the
	 * same counts would add up twice). */
	if (dom->hot.slot != MRL_CACHE_STAT_SLOTS - 1) {
		for (int i = 0; i < MRL_TCNT_COUNT; i++)
			cache->closed_hot[i] += tcnt_sum(dom->hot.slot, i) - dom->slot_base[i];
	} else if (!--cache->shared_domains) {
		for (int i = 0; i < MRL_TCNT_COUNT; i++)
			cache->closed_hot[i] += tcnt_sum(dom->hot.slot, i) -
						cache->shared_base[i];
	}
	write_exit(cache);
	slot_free(dom->hot.slot);
	pool_release_domain(dom);
	free(dom);
	cache_unref(cache);
}

/* Close a registration nobody references any more: outside every cache lock,
 * because the registrar's close may re-enter an allocator hook. */
static void defer_push(struct mrl_cache *cache, struct mrl_registration *reg);

static void registration_destroy(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = reg_domain(reg);
	int ret = 0;

	/* Inherited across fork: the parent's to close, not ours. */
	if (MRL_LIKELY(dom->fork_gen ==
		       atomic_load_explicit(&mrl_fork_gen, memory_order_relaxed)))
		ret = dom->cfg.registrar->close(dom->cfg.ctx, reg_cold(reg)->mr);
	if (MRL_UNLIKELY(ret)) {
		/* The provider still has it open: forgetting it would leave
		 * its MR open for good (and its domain unclosable). It is
		 * closed again by the next drain, at the latest the domain's
		 * close. */
		MRL_CWARN(dom->cache, "closing a cached registration: %s; "
			  "retried later\n", fi_strerror(-ret));
		defer_push(dom->cache, reg);
		return;
	}
	STAT_ADD(dom, deregistrations, 1);
	STAT_ADD(dom, registered_bytes, -(int64_t)(reg->end - reg->base));
	pool_free(reg);
	domain_unref(dom);
}

static void capacity_locked(struct mrl_cache_domain *dom,
			    struct mrl_registration **chain);
static void drop_chain(struct mrl_registration *chain);

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
static void reference_last(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = reg_domain(reg);
	struct mrl_registration *chain = NULL;

	if (MRL_LIKELY(!atomic_load_explicit(&dom->lent, memory_order_acquire))) {
		registration_destroy(reg);
		return;
	}
	write_enter(dom->cache);
	if (!(reg->state & MRL_REG_LENT)) {
		/* Never lent, or retired since (which ended the loan). */
		write_exit(dom->cache);
		registration_destroy(reg);
		return;
	}
	reg->state &= (uint8_t)~MRL_REG_LENT;
	atomic_fetch_sub_explicit(&dom->lent, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&reg->refs, 1, memory_order_relaxed);
	capacity_locked(dom, &chain);
	write_exit(dom->cache);
	drop_chain(chain);
}

static inline void ref_put(struct mrl_registration *reg)
{
	if ((atomic_fetch_sub_explicit(&reg->refs, 1, memory_order_acq_rel) &
	     MRL_REF_COUNT) == 1)
		reference_last(reg);
}

/* A monitor's drop of a last reference: onto the deferred list (the
 * registration's cold `next` is free once it left its retire chain). */
static void ref_put_deferred(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = reg_domain(reg);
	struct mrl_cache *cache = dom->cache;

	if ((atomic_fetch_sub_explicit(&reg->refs, 1, memory_order_acq_rel) &
	     MRL_REF_COUNT) != 1)
		return;
	STAT_ADD(dom, deferred_closes, 1);
	defer_push(cache, reg);
}

/* Onto the deferred list: lock-free, allocates nothing. */
static void defer_push(struct mrl_cache *cache, struct mrl_registration *reg)
{
	struct mrl_registration *head;

	head = atomic_load_explicit(&cache->deferred, memory_order_relaxed);
	do
		reg_cold(reg)->next = head;
	while (!atomic_compare_exchange_weak_explicit(&cache->deferred, &head, reg,
						       memory_order_release,
						       memory_order_relaxed));
}

void mrl_cache_drain(struct mrl_cache *cache)
{
	struct mrl_registration *reg, *next;

	if (MRL_LIKELY(!atomic_load_explicit(&cache->deferred, memory_order_relaxed)))
		return;
	reg = atomic_exchange_explicit(&cache->deferred, NULL, memory_order_acquire);
	for (; reg; reg = next) {
		next = reg_cold(reg)->next;
		registration_destroy(reg);
	}
}

/* Drop the index's references of entries retired under the lock, after it
 * was released; `defer`: from a monitor, which never closes. */
static void drop_chain_as(struct mrl_registration *chain, bool defer)
{
	struct mrl_registration *next;

	for (; chain; chain = next) {
		next = reg_cold(chain)->next;
		if ((atomic_load_explicit(&chain->refs, memory_order_relaxed) &
		     MRL_REF_COUNT) > 1)
			STAT_ADD(reg_domain(chain), retired_leased, 1);
		if (defer)
			ref_put_deferred(chain);
		else
			ref_put(chain);
	}
}

static void drop_chain(struct mrl_registration *chain)
{
	drop_chain_as(chain, false);
}

/* ---- index maintenance (under write_enter) ------------------------------ */

/* A live entry leaving the index: ends a loan of its index reference.
 * Returns whether there was one (then the index holds no reference to drop:
 * the entry's last lease, or the thread settling a zero count, closes it). */
static bool unlend_locked(struct mrl_cache_domain *dom, struct mrl_registration *e)
{
	if (!(e->state & MRL_REG_LENT))
		return false;
	e->state &= (uint8_t)~MRL_REG_LENT;
	atomic_fetch_sub_explicit(&dom->lent, 1, memory_order_relaxed);
	if (atomic_load_explicit(&e->refs, memory_order_relaxed) & MRL_REF_COUNT)
		STAT_ADD(dom, retired_leased, 1);
	return true;
}

/* Take a live entry out of the index and chain it for drop_chain (unless
 * its index reference was lent). */
static void retire_locked(struct mrl_cache_domain *dom, struct mrl_registration *e,
			  struct mrl_registration **chain)
{
	bool lent = unlend_locked(dom, e);

	bt_remove(dom->cache, &dom->root, e->base);
	dom->height = bt_height(dom->root);
	reg_set_state(e, MRL_REG_RETIRED);
	flt_update(dom->cache, e->base, e->end, -1);
	dom->count--;
	dom->bytes -= e->end - e->base;
	atomic_store_explicit(&dom->hot.gen, next_gen(), memory_order_release);
	STAT_ADD(dom, entries, -1);
	if (lent)
		return;
	reg_cold(e)->next = *chain;
	*chain = e;
}

static void bounds_extend(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi)
{
	if (lo < atomic_load_explicit(&cache->lo, memory_order_relaxed))
		atomic_store_explicit(&cache->lo, lo, memory_order_relaxed);
	if (hi > atomic_load_explicit(&cache->hi, memory_order_relaxed))
		atomic_store_explicit(&cache->hi, hi, memory_order_relaxed);
}

/* Index a new entry, replacing one at the same base (rule 2: track). */
static void insert_locked(struct mrl_cache_domain *dom, struct mrl_registration *e,
			  struct mrl_registration **chain)
{
	struct mrl_registration *old = bt_find_base(dom->root, e->base);

	if (old)
		retire_locked(dom, old, chain);
	bt_insert(dom->cache, &dom->root, e);
	dom->height = bt_height(dom->root);
	reg_set_state(e, MRL_REG_LIVE);
	flt_update(dom->cache, e->base, e->end, +1);
	dom->count++;
	dom->bytes += e->end - e->base;
	STAT_ADD(dom, entries, 1);
	bounds_extend(dom->cache, e->base, e->end);
}

/* Whether a lease holds live entry `e` (its count less the index's
 * reference, unless that is lent). */
static inline bool reg_leased(const struct mrl_registration *e)
{
	unsigned n = atomic_load_explicit(&e->refs, memory_order_relaxed) & MRL_REF_COUNT;

	return n > ((e->state & MRL_REG_LENT) ? 0u : 1u);
}

/*
 * CLOCK sweep over the index in address order, from where the last sweep
 * stopped (the hand, a base) and wrapping: leased or pinned entries are
 * skipped, entries hit since the last pass lose their used bit (a second
 * chance), the others are retired until `bytes` and `count` are freed (or
 * two rounds found nothing). No list per entry: the index is the clock face.
 */
static void evict_locked(struct mrl_cache_domain *dom, size_t bytes, size_t count,
			 struct mrl_registration **chain)
{
	size_t steps = 2 * dom->count + 1, freed_bytes = 0, freed = 0;
	struct mrl_registration *e;

	while (steps-- && (freed_bytes < bytes || freed < count)) {
		e = bt_successor(dom->root, dom->hand, dom->hand_set);
		if (!e)
			e = bt_successor(dom->root, 0, false);
		if (!e)
			break;
		dom->hand = e->base;
		dom->hand_set = true;
		if ((e->state & MRL_REG_PINNED) || reg_leased(e) ||
		    (atomic_fetch_and_explicit(&e->refs, ~MRL_REF_USED, memory_order_relaxed) &
		     MRL_REF_USED))
			continue;
		freed_bytes += e->end - e->base;
		freed++;
		retire_locked(dom, e, chain);
		STAT_ADD(dom, evictions, 1);
	}
}

static inline bool over_cap(const struct mrl_cache_domain *dom)
{
	return dom->count > dom->cache->max_count || dom->bytes > dom->cache->max_size;
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
static void lend_locked(struct mrl_cache_domain *dom, struct mrl_registration **chain)
{
	struct mrl_registration *e;
	uintptr_t base;
	unsigned refs;

	for (e = bt_successor(dom->root, 0, false); e && over_cap(dom);
	     e = bt_successor(dom->root, base, true)) {
		base = e->base;
		if (e->state & (MRL_REG_PINNED | MRL_REG_LENT))
			continue;
		/* Counted first: a count seen at zero implies lent != 0. */
		atomic_fetch_add_explicit(&dom->lent, 1, memory_order_relaxed);
		e->state |= MRL_REG_LENT;
		refs = atomic_load_explicit(&e->refs, memory_order_relaxed);
		while ((refs & MRL_REF_COUNT) > 1 &&
		       !atomic_compare_exchange_weak_explicit(&e->refs, &refs, refs - 1,
							      memory_order_release,
							      memory_order_relaxed))
			;
		if ((refs & MRL_REF_COUNT) > 1)
			continue;
		/* Its last lease went: not lent, evicted. */
		e->state &= (uint8_t)~MRL_REG_LENT;
		atomic_fetch_sub_explicit(&dom->lent, 1, memory_order_relaxed);
		retire_locked(dom, e, chain);
		STAT_ADD(dom, evictions, 1);
	}
}

/* Evict down to the caps, and lend what stays over them. */
static void capacity_locked(struct mrl_cache_domain *dom,
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
	evict_locked(dom, bytes, count, chain);
	if (over_cap(dom))
		lend_locked(dom, chain);
}

/* ---- cache -------------------------------------------------------------- */

int mrl_cache_create(const struct mrl_cache_config *config,
		     struct mrl_cache **cache_out)
{
	struct mrl_cache *cache;
	long page;
	int ret;

	cache = aligned_alloc(MRL_CACHELINE,
			      (sizeof(*cache) + MRL_CACHELINE - 1) & ~(size_t)(MRL_CACHELINE - 1));
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
	page = sysconf(_SC_PAGESIZE);
	cache->page_size = page > 0 ? (size_t)page : 4096;
	cache->max_count = config && config->max_count ? config->max_count :
							 MRL_CACHE_DEFAULT_MAX_COUNT;
	cache->max_size = config && config->max_size ? config->max_size :
						       MRL_CACHE_DEFAULT_MAX_SIZE;
	cache->huge_after = config && config->huge_after ? config->huge_after :
							   MRL_CACHE_DEFAULT_HUGE_AFTER;
	cache->prov = config ? config->prov : NULL;
	atomic_init(&cache->lo, UINTPTR_MAX);
	atomic_init(&cache->hi, 0);
	atomic_init(&cache->refs, 1);
	cache->slot = slot_alloc(cache->slot_base);
	pthread_once(&mrl_fork_once, fork_handler_install);
	pthread_mutex_lock(&mrl_caches_lock);
	cache->next = mrl_caches;
	mrl_caches = cache;
	pthread_mutex_unlock(&mrl_caches_lock);
	*cache_out = cache;
	return 0;

err_lock:
	pthread_mutex_destroy(&cache->lock);
err_free:
	free(cache);
	return ret;
}

static void cache_unref(struct mrl_cache *cache)
{
	struct mrl_cache **p;

	if (atomic_fetch_sub_explicit(&cache->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&mrl_caches_lock);
	for (p = &mrl_caches; *p != cache; p = &(*p)->next)
		;
	*p = cache->next;
	pthread_mutex_unlock(&mrl_caches_lock);
	reserve_trim(cache, 0);
	flt_free(cache);
	slot_free(cache->slot);
	pthread_mutex_destroy(&cache->flt_lock);
	pthread_mutex_destroy(&cache->lock);
	free(cache);
}

void mrl_cache_destroy(struct mrl_cache *cache)
{
	struct mrl_cache_domain *dom;

	if (!cache)
		return;
	mrl_cache_drain(cache);
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

int mrl_cache_domain_open(struct mrl_cache *cache,
			  const struct mrl_domain_config *config,
			  struct mrl_cache_domain **domain)
{
	struct mrl_cache_domain *dom;
	size_t key_bits;

	if (!cache || !config || !config->registrar || !config->registrar->reg ||
	    !config->registrar->close)
		return -FI_EINVAL;
	dom = aligned_alloc(MRL_CACHELINE, (sizeof(*dom) + MRL_CACHELINE - 1) &
					   ~(size_t)(MRL_CACHELINE - 1));
	if (!dom)
		return -FI_ENOMEM;
	memset(dom, 0, sizeof(*dom));
	dom->cache = cache;
	dom->cfg = *config;
	key_bits = config->mr_key_size && config->mr_key_size < 8 ?
			   8 * config->mr_key_size : 64;
	dom->key_top = key_bits == 64 ? UINT64_MAX : (1ull << key_bits) - 1;
	dom->key_half = 1ull << (key_bits - 1);
	atomic_init(&dom->next_key, dom->key_top);
	atomic_init(&dom->refs, 1);
	dom->fork_gen = atomic_load_explicit(&mrl_fork_gen, memory_order_relaxed);
	dom->hot.slot = slot_alloc(dom->slot_base);
	atomic_fetch_add(&cache->refs, 1);

	write_enter(cache);
	atomic_store_explicit(&dom->hot.gen, next_gen(), memory_order_release);
	dom->next = cache->domains;
	cache->domains = dom;
	if (dom->hot.slot == MRL_CACHE_STAT_SLOTS - 1 && !cache->shared_domains++)
		memcpy(cache->shared_base, dom->slot_base, sizeof(cache->shared_base));
	write_exit(cache);
	*domain = dom;
	return 0;
}

void mrl_cache_domain_close(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *all, *chain, *e;
	struct mrl_pending *p;

	write_enter(cache);
	if (dom->closed) {
		write_exit(cache);
		return;
	}
	dom->closed = true;
	/* Every live entry is in the index: it becomes the retire chain,
	 * but for those whose index reference is lent. */
	all = chain = NULL;
	bt_give_all(cache, dom->root, &all);
	while ((e = all)) {
		all = reg_cold(e)->next;
		if (!unlend_locked(dom, e)) {
			reg_cold(e)->next = chain;
			chain = e;
		}
		reg_set_state(e, MRL_REG_RETIRED);
		flt_update(cache, e->base, e->end, -1);
	}
	STAT_ADD(dom, entries, -(int64_t)dom->count);
	dom->root = NULL;
	dom->height = 0;
	dom->count = dom->bytes = 0;
	atomic_store_explicit(&dom->hot.gen, next_gen(), memory_order_release);
	for (p = cache->pending; p; p = p->next)
		if (p->domain == dom)
			p->stale = true;
	write_exit(cache);
	drop_chain(chain);
	/* The provider refuses to close a domain with MRs open: a monitor
	 * batch that retired some of its entries before us defers their
	 * closes until it lowers the barrier. */
	barrier_wait();
	mrl_cache_drain(cache);
	reserve_trim(cache, MRL_BT_KEEP);
	domain_unref(dom);
}

/*
 * Before the core domain's close, which the provider may still refuse: only
 * what nothing holds goes (an entry with no lease, not pinned, nothing but
 * the index on it), so the provider counts no registration of ours open,
 * while the domain keeps its index, span resolver, counters and open
 * handle. Leased and pinned entries stay: their registrations would stay
 * open anyway, and an endpoint still posting keeps its hits.
 */
void mrl_cache_domain_retire_unleased(struct mrl_cache_domain *dom)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *chain = NULL, *e;
	uintptr_t at = 0;
	bool after = false;

	write_enter(cache);
	while (!dom->closed && (e = bt_successor(dom->root, at, after))) {
		at = e->base;
		after = true;
		/* Exactly LIVE: no pin nor any other hold on it. */
		if (e->state != MRL_REG_LIVE ||
		    (atomic_load_explicit(&e->refs, memory_order_relaxed) &
		     MRL_REF_COUNT) != 1)
			continue;
		retire_locked(dom, e, &chain);
	}
	write_exit(cache);
	drop_chain(chain);
	/* As in domain close: deferred closes of this domain happen now. */
	barrier_wait();
	mrl_cache_drain(cache);
	reserve_trim(cache, MRL_BT_KEEP);
}

void mrl_cache_set_span(struct mrl_cache_domain *dom, fi_mrlease_span_fn fn,
			void *arg)
{
	pthread_mutex_lock(&dom->cache->lock);
	dom->span = fn;
	dom->span_arg = fn ? arg : NULL;
	pthread_mutex_unlock(&dom->cache->lock);
}

/* ---- lookup ------------------------------------------------------------- */

/* A lease by increment-if-not-zero, marking the entry used: false at a zero
 * count, a retired entry's last drop or (found in the index) an entry whose
 * lent index reference a releasing thread is settling (see lend_locked),
 * which no one else may revive. */
static inline bool lease_take(struct mrl_registration *reg)
{
	unsigned refs = atomic_load_explicit(&reg->refs, memory_order_relaxed);

	do {
		if (MRL_UNLIKELY(!(refs & MRL_REF_COUNT)))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&reg->refs, &refs,
							 (refs + 1) | MRL_REF_USED,
							 memory_order_acquire,
							 memory_order_relaxed));
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
	if (MRL_UNLIKELY(atomic_load_explicit(&dom->hot.gen, memory_order_acquire) != gen)) {
		ref_put(reg);
		return NULL;
	}
	return reg;
}

/* What a lookup accepts: any covering entry, or only one based at start. */
enum mrl_find {
	MRL_FIND_NONE,		/* pins: always insert */
	MRL_FIND_COVER,		/* base <= start, end >= end */
	MRL_FIND_BASED,		/* base == start, end >= end */
};

static inline __attribute__((always_inline)) struct mrl_registration *
find_entry(struct mrl_cache_domain *dom, enum mrl_find mode, uintptr_t start,
	   uintptr_t end)
{
	struct mrl_registration *e;

	if (mode == MRL_FIND_COVER) {
		e = bt_find_pred(dom->root, dom->height, start, end);
		return MRL_LIKELY(e != NULL) ? e : bt_find_cover(dom->root, start, end);
	}
	if (mode == MRL_FIND_BASED)
		return bt_find_based(dom->root, start, end);
	return NULL;
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
index_lease(struct mrl_cache_domain *dom, struct mrl_reader *rec, enum mrl_find mode,
	    uintptr_t start, uintptr_t end)
{
	struct mrl_registration *reg = find_entry(dom, mode, start, end);
	struct mrl_hot *hot = rec->t.hot[dom->hot.slot];
	struct mrl_hot fill;

	if (!reg || !lease_take(reg))
		return NULL;
	/* The shared statistic slot's hot slot would serve several domains. */
	if (!rec->shared && dom->hot.slot != MRL_CACHE_STAT_SLOTS - 1) {
		fill = (struct mrl_hot){ reg,
			atomic_load_explicit(&dom->hot.gen, memory_order_relaxed),
			reg->base, reg->end };
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
lookup_lease(struct mrl_cache_domain *dom, struct mrl_reader *rec, enum mrl_find mode,
	     uintptr_t start, uintptr_t end, bool try_hot)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *reg = NULL;
	struct mrl_hot *hot = rec->t.hot[dom->hot.slot];

	tcnt_add(rec, dom->hot.slot, MRL_TCNT_LOOKUPS, 1);
	for (int w = 0; try_hot && w < MRL_HOT_WAYS; w++) {
		if (mode == MRL_FIND_COVER || hot[w].base == start)
			reg = hot_lease(dom, &hot[w], start, end);
		if (MRL_LIKELY(reg != NULL))
			return reg;
	}
	mrl_index_walks++;
	if (MRL_LIKELY(read_enter(rec, cache))) {
		reg = index_lease(dom, rec, mode, start, end);
		read_exit(rec);
	} else {
		pthread_mutex_lock(&cache->lock);
		reg = index_lease(dom, rec, mode, start, end);
		pthread_mutex_unlock(&cache->lock);
	}
	if (!reg)
		tcnt_add(rec, dom->hot.slot, MRL_TCNT_MISSES, 1);
	return reg;
}

struct mrl_registration *mrl_cache_lookup(struct mrl_cache_domain *dom,
					  uintptr_t start, uintptr_t end)
{
	if (end <= start)
		return NULL;
	barrier_wait();
	return lookup_lease(dom, reader_self(), MRL_FIND_COVER, start, end, true);
}

/* ---- registration ------------------------------------------------------- */

static uint64_t next_key(struct mrl_cache_domain *dom)
{
	uint64_t key;

	if (dom->cfg.prov_key)
		return 0;
	key = atomic_fetch_sub_explicit(&dom->next_key, 1, memory_order_relaxed);
	if (key < dom->key_half) {
		/* Wrapped below the cache's half: start again from the top;
		 * keys still in use answer -FI_ENOKEY and are skipped. */
		atomic_store_explicit(&dom->next_key, dom->key_top, memory_order_relaxed);
		key = atomic_fetch_sub_explicit(&dom->next_key, 1, memory_order_relaxed);
	}
	return key;
}

static bool refused_for_resources(int ret)
{
	return ret == -FI_ENOMEM || ret == -FI_ENOSPC || ret == -FI_EAGAIN;
}

/*
 * Register [reg->base, reg->end) through the domain's registrar, with no
 * cache lock held: new keys on -FI_ENOKEY, and on a refusal for lack of
 * resources evict unleased entries of this domain and retry once.
 */
static int registration_open(struct mrl_cache_domain *dom, struct mrl_registration *reg)
{
	struct mrl_cache *cache = dom->cache;
	size_t len = reg->end - reg->base;
	struct mrl_registration *chain;
	bool evicted = false;
	int ret, tries;

	for (;;) {
		for (tries = 0;; tries++) {
			ret = dom->cfg.registrar->reg(dom->cfg.ctx, (void *)reg->base, len,
						      MRL_CACHE_ACCESS, next_key(dom),
						      &reg_cold(reg)->mr, &reg->desc);
			if (ret != -FI_ENOKEY || dom->cfg.prov_key ||
			    tries >= MRL_CACHE_KEY_RETRIES)
				break;
		}
		if (!ret)
			break;
		if (evicted || !refused_for_resources(ret)) {
			MRL_CWARN(cache, "registering [%p, +%zu) for the cache: %s\n",
				  (void *)reg->base, len, fi_strerror(-ret));
			return ret;
		}
		chain = NULL;
		write_enter(cache);
		evict_locked(dom, len, 1, &chain);
		write_exit(cache);
		drop_chain(chain);
		evicted = true;
	}
	atomic_fetch_add_explicit(&dom->refs, 1, memory_order_relaxed);
	STAT_ADD(dom, registrations, 1);
	STAT_ADD(dom, registered_bytes, (int64_t)len);
	return 0;
}

static inline uintptr_t page_down(struct mrl_cache *cache, uintptr_t a)
{
	return a & ~(uintptr_t)(cache->page_size - 1);
}

/* Rounds up, or 0 if that wraps. */
static inline uintptr_t page_up(struct mrl_cache *cache, uintptr_t a)
{
	uintptr_t r = (a + cache->page_size - 1) & ~(uintptr_t)(cache->page_size - 1);

	return r < a ? 0 : r;
}

/* The extent a miss registers: the resolver's span when it contains the
 * operand (rule 6), otherwise the operand's own pages. */
static int miss_extent(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end,
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
	if (fn && !fn(arg, (void *)start, end - start, &sbase, &slen)) {
		sb = (uintptr_t)sbase;
		se = sb + slen;
		if (slen && se > sb && sb <= start && end <= se && page_up(cache, se)) {
			*lo = page_down(cache, sb);
			*hi = page_up(cache, se);
		}
	}
	return 0;
}

static void pending_remove(struct mrl_cache *cache, struct mrl_pending *pending)
{
	struct mrl_pending **pp;

	for (pp = &cache->pending; *pp != pending; pp = &(*pp)->next)
		;
	*pp = pending->next;
	atomic_fetch_sub_explicit(&cache->pending_count, 1, memory_order_seq_cst);
}

/*
 * Register and publish a new entry. `mode` asks to reuse an entry it accepts
 * found after registering (a concurrent miss won: ours is closed after the
 * unlock); pins (MRL_FIND_NONE) always insert. An invalidate or domain close overlapping the
 * registration in flight makes it an unindexed lease.
 */
static int register_insert(struct mrl_cache_domain *dom, uintptr_t lo, uintptr_t hi,
			   uint8_t flags, enum mrl_find mode, uintptr_t start, uintptr_t end,
			   struct mrl_registration **out)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *reg, *won = NULL, *chain = NULL;
	struct mrl_pending pending = { .base = lo, .end = hi, .domain = dom };
	bool transient = false;
	int ret, rret;

	reg = pool_alloc(dom);
	if (!reg)
		return -FI_ENOMEM;
	reg->base = lo;
	reg->end = hi;
	reg->slot = (uint8_t)dom->hot.slot;
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
			pool_free(reg);
			*out = won;
			return 0;
		}
		won = NULL;
	}
	pending.next = cache->pending;
	cache->pending = &pending;
	atomic_fetch_add_explicit(&cache->pending_count, 1, memory_order_seq_cst);
	bounds_extend(cache, lo, hi);
	pthread_mutex_unlock(&cache->lock);

	/* Watched from here on, or an unmap before the watch leaves the range
	 * unregistered (verbs) or is the application's race; pins are leased
	 * for as long as they are indexed. */
	if (mode != MRL_FIND_NONE && dom->cfg.registrar->watch &&
	    !dom->cfg.registrar->watch(dom->cfg.ctx, lo, hi))
		transient = true;
	ret = registration_open(dom, reg);
	if (!ret)
		flt_update(cache, lo, hi, 0);

	rret = ret ? 0 : write_enter_reserved(cache, dom, lo);
	if (ret || rret)
		write_enter(cache);
	if (ret || (rret && !pending.stale)) {
		pending_remove(cache, &pending);
		write_exit(cache);
		if (ret)
			goto err_free;
		/* No memory for index nodes: the registration goes. */
		atomic_store_explicit(&reg->refs, 1, memory_order_release);
		ref_put(reg);
		return rret;
	}
	if (pending.stale || transient) {
		/* A lease that never enters the index. */
		reg_set_state(reg, MRL_REG_RETIRED);
		atomic_store_explicit(&reg->refs, 1, memory_order_release);
		if (transient)
			STAT_ADD(dom, not_retained, 1);
	} else if ((won = find_entry(dom, mode, start, end)) && lease_take(won)) {
		/* A concurrent miss won: ours closes below. */
	} else {
		won = NULL;
		atomic_store_explicit(&reg->refs, 2 | MRL_REF_USED, memory_order_release);
		insert_locked(dom, reg, &chain);
		capacity_locked(dom, &chain);
	}
	/* Last: an invalidate that sees no pending miss sees the filter
	 * counts of the entry just inserted. */
	pending_remove(cache, &pending);
	write_exit(cache);

	drop_chain(chain);
	if (won) {
		atomic_store_explicit(&reg->refs, 1, memory_order_release);
		ref_put(reg);	/* the loser's registration */
		reg = won;
	}
	*out = reg;
	return 0;

err_free:
	pool_free(reg);
	return ret;
}

int mrl_cache_acquire_slow(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end,
			   struct mrl_registration **out)
{
	struct mrl_reader *rec;
	struct mrl_registration *reg;
	uintptr_t lo, hi;
	int ret;

	if (MRL_UNLIKELY(end <= start))
		return -FI_EINVAL;
	barrier_wait();
	mrl_cache_drain(dom->cache);
	rec = reader_self();
	reg = lookup_lease(dom, rec, MRL_FIND_COVER, start, end, false);
	if (MRL_LIKELY(reg != NULL)) {
		*out = reg;
		return 0;
	}
	STAT_ADD(dom, misses, 1);
	ret = miss_extent(dom, start, end, &lo, &hi);
	if (ret)
		return ret;
	ret = register_insert(dom, lo, hi, 0, MRL_FIND_COVER, start, end, &reg);
	if (ret)
		return ret;
	tcnt_add(reader_self(), dom->hot.slot, MRL_TCNT_LEASES_OTHER, 1);
	*out = reg;
	return 0;
}

/* The inline hit path leased an entry retired since its hot slot was
 * filled: give the reference back and look again. */
int mrl_cache_acquire_stale(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end,
			    struct mrl_registration *stale, struct mrl_registration **out)
{
	ref_put(stale);
	return mrl_cache_acquire_slow(dom, start, end, out);
}

int mrl_cache_acquire_based(struct mrl_cache_domain *dom, uintptr_t start,
			    uintptr_t end, struct mrl_registration **out)
{
	struct mrl_registration *reg;
	int ret;

	if (MRL_UNLIKELY(end <= start))
		return -FI_EINVAL;
	barrier_wait();
	mrl_cache_drain(dom->cache);
	reg = lookup_lease(dom, reader_self(), MRL_FIND_BASED, start, end, true);
	if (MRL_LIKELY(reg != NULL)) {
		*out = reg;
		return 0;
	}
	STAT_ADD(dom, misses, 1);
	/* Exactly [start, end): the peer addresses the MR from its base. */
	ret = register_insert(dom, start, end, 0, MRL_FIND_BASED, start, end, &reg);
	if (ret)
		return ret;
	tcnt_add(reader_self(), dom->hot.slot, MRL_TCNT_LEASES_OTHER, 1);
	*out = reg;
	return 0;
}

int mrl_cache_track(struct mrl_cache_domain *dom, uintptr_t start, uintptr_t end,
		    void *mr, void *desc, struct mrl_registration **out)
{
	struct mrl_cache *cache = dom->cache;
	struct mrl_registration *reg, *chain = NULL;

	if (end <= start)
		return -FI_EINVAL;
	reg = pool_alloc(dom);
	if (!reg)
		return -FI_ENOMEM;
	reg->base = start;
	reg->end = end;
	reg->slot = (uint8_t)dom->hot.slot;
	reg_cold(reg)->mr = mr;
	reg->desc = desc;
	atomic_store_explicit(&reg->refs, 2 | MRL_REF_USED, memory_order_release);

	flt_update(cache, start, end, 0);
	if (write_enter_reserved(cache, dom, start)) {
		pool_free(reg);
		return -FI_ENOMEM;
	}
	if (dom->closed) {
		write_exit(cache);
		pool_free(reg);
		return -FI_EINVAL;
	}
	atomic_fetch_add_explicit(&dom->refs, 1, memory_order_relaxed);
	STAT_ADD(dom, registrations, 1);
	STAT_ADD(dom, registered_bytes, (int64_t)(end - start));
	insert_locked(dom, reg, &chain);
	capacity_locked(dom, &chain);
	write_exit(cache);

	drop_chain(chain);
	tcnt_add(reader_self(), dom->hot.slot, MRL_TCNT_LEASES_OTHER, 1);
	*out = reg;
	return 0;
}

void mrl_lease_get(struct mrl_registration *reg)
{
	atomic_fetch_add_explicit(&reg->refs, 1, memory_order_relaxed);
	tcnt_add(reader_self(), reg->slot, MRL_TCNT_LEASES_OTHER, 1);
}

/* mrl_lease_release on a thread without its own record (yet). */
void mrl_lease_count_release(struct mrl_registration *reg)
{
	tcnt_add(reader_self(), reg->slot, MRL_TCNT_LEASES_RELEASED, 1);
}

void mrl_registration_last(struct mrl_registration *reg)
{
	reference_last(reg);
}

/* ---- invalidate, pin ---------------------------------------------------- */

/* Whether any index of the cache may overlap [start, end): bounds first,
 * then a lock-free walk of each domain's index. */
static bool may_overlap(struct mrl_cache *cache, struct mrl_reader *rec,
			uintptr_t start, uintptr_t end)
{
	struct mrl_cache_domain *dom;
	bool found = false;

	if (atomic_load_explicit(&cache->pending_count, memory_order_seq_cst))
		return true;
	if (end <= atomic_load_explicit(&cache->lo, memory_order_relaxed) ||
	    start >= atomic_load_explicit(&cache->hi, memory_order_relaxed) ||
	    !flt_maybe(cache, start, end))
		return false;
	if (!read_enter(rec, cache))
		return true;
	for (dom = cache->domains; dom && !found; dom = dom->next)
		found = bt_find_overlap(dom->root, start, end) != NULL;
	read_exit(rec);
	return found;
}

/* Retire every entry overlapping [start, end) and mark overlapping misses
 * stale; a monitor's (`defer`) leaves closes to other threads. */
static int invalidate_range(struct mrl_cache *cache, uintptr_t start, uintptr_t end,
			    bool defer)
{
	struct mrl_reader *rec;
	struct mrl_registration *chain = NULL, *e;
	struct mrl_cache_domain *dom;
	struct mrl_pending *p;
	bool any, nonempty = false;

	if (MRL_UNLIKELY(end <= start))
		return end == start ? 0 : -FI_EINVAL;
	rec = reader_self();
	tcnt_add(rec, cache->slot, MRL_TCNT_INVALIDATIONS, 1);
	if (MRL_LIKELY(!may_overlap(cache, rec, start, end)))
		return 0;

	write_enter(cache);
	for (p = cache->pending; p; p = p->next)
		if (p->base < end && start < p->end)
			p->stale = true;
	for (dom = cache->domains; dom; dom = dom->next) {
		any = false;
		while ((e = bt_find_overlap(dom->root, start, end))) {
			retire_locked(dom, e, &chain);
			any = true;
		}
		if (any)
			STAT_ADD(dom, invalidations, 1);
		if (any && defer)
			STAT_ADD(dom, monitor_invalidations, 1);
		nonempty |= dom->root != NULL;
	}
	if (!nonempty && !cache->pending) {
		atomic_store_explicit(&cache->lo, UINTPTR_MAX, memory_order_relaxed);
		atomic_store_explicit(&cache->hi, 0, memory_order_relaxed);
	}
	write_exit(cache);
	drop_chain_as(chain, defer);
	return 0;
}

int mrl_cache_invalidate(struct mrl_cache *cache, uintptr_t start, uintptr_t end)
{
	int ret = invalidate_range(cache, start, end, false);

	mrl_cache_drain(cache);
	return ret;
}

int mrl_cache_invalidate_deferred(struct mrl_cache *cache, uintptr_t start,
				  uintptr_t end)
{
	return invalidate_range(cache, start, end, true);
}

int mrl_cache_pin(struct mrl_cache_domain *dom, uintptr_t base, size_t len,
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
	ret = register_insert(dom, lo, hi, MRL_REG_PINNED, MRL_FIND_NONE, 0, 0, out);
	if (ret)
		return ret;
	tcnt_add(reader_self(), dom->hot.slot, MRL_TCNT_LEASES_OTHER, 1);
	return 0;
}

void mrl_cache_unpin(struct mrl_registration *reg)
{
	struct mrl_cache_domain *dom = reg_domain(reg);
	struct mrl_registration *chain = NULL;

	write_enter(dom->cache);
	if (reg_state(reg) == MRL_REG_LIVE)
		retire_locked(dom, reg, &chain);
	write_exit(dom->cache);
	drop_chain(chain);
	mrl_lease_release(reg);
}

/* ---- statistics --------------------------------------------------------- */

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
static void slow_copy(const struct mrl_slow_stats *s, struct fi_mrlease_stats *out)
{
	int64_t gauge;

	out->deregistrations = atomic_load_explicit(&s->deregistrations, memory_order_acquire);
	out->registrations = atomic_load_explicit(&s->registrations, memory_order_acquire);
	out->misses = atomic_load_explicit(&s->misses, memory_order_relaxed);
	out->invalidations = atomic_load_explicit(&s->invalidations, memory_order_relaxed);
	out->retired_leased = atomic_load_explicit(&s->retired_leased, memory_order_relaxed);
	out->evictions = atomic_load_explicit(&s->evictions, memory_order_relaxed);
	gauge = (int64_t)atomic_load_explicit(&s->entries, memory_order_relaxed);
	out->entries = gauge > 0 ? (uint64_t)gauge : 0;
	gauge = (int64_t)atomic_load_explicit(&s->registered_bytes, memory_order_relaxed);
	out->registered_bytes = gauge > 0 ? (uint64_t)gauge : 0;
	out->monitor_invalidations = atomic_load_explicit(&s->monitor_invalidations,
							  memory_order_relaxed);
	out->not_retained = atomic_load_explicit(&s->not_retained, memory_order_relaxed);
	out->deferred_closes = atomic_load_explicit(&s->deferred_closes, memory_order_relaxed);
}

/* The order the per-thread counts are read in (see above). */
static const enum mrl_tcnt tcnt_read_order[] = {
	MRL_TCNT_LEASES_RELEASED, MRL_TCNT_LEASES_OTHER, MRL_TCNT_MISSES, MRL_TCNT_LOOKUPS,
};

/* lookups, hits and live leases from counts read in tcnt_read_order. */
static void hot_copy(const uint64_t hot[MRL_TCNT_COUNT], atomic_uint_least64_t *hits_seen,
		     struct fi_mrlease_stats *out)
{
	uint64_t lookups = hot[MRL_TCNT_LOOKUPS], hits, seen;
	int64_t leases;

	hits = hot[MRL_TCNT_MISSES] < lookups ? lookups - hot[MRL_TCNT_MISSES] : 0;
	seen = atomic_load_explicit(hits_seen, memory_order_relaxed);
	while (seen < hits &&
	       !atomic_compare_exchange_weak_explicit(hits_seen, &seen, hits,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
	if (seen < hits)
		seen = hits;	/* ours was stored */
	out->lookups = lookups;
	out->hits = seen < lookups ? seen : lookups;
	leases = (int64_t)(hits + hot[MRL_TCNT_LEASES_OTHER] - hot[MRL_TCNT_LEASES_RELEASED]);
	out->leases = leases > 0 ? (uint64_t)leases : 0;
}

void mrl_cache_domain_stats(struct mrl_cache_domain *dom, struct fi_mrlease_stats *stats)
{
	uint64_t hot[MRL_TCNT_COUNT];

	memset(stats, 0, sizeof(*stats));
	slow_copy(&dom->stats, stats);
	for (size_t k = 0; k < sizeof(tcnt_read_order) / sizeof(tcnt_read_order[0]); k++) {
		enum mrl_tcnt i = tcnt_read_order[k];

		hot[i] = tcnt_sum(dom->hot.slot, i) - dom->slot_base[i];
	}
	hot_copy(hot, &dom->hits_seen, stats);
}

/* Under cache->lock: every domain's counts (closed ones in closed_hot; the
 * shared slot once, since its first domain of this cache opened). */
void mrl_cache_stats(struct mrl_cache *cache, struct fi_mrlease_stats *stats)
{
	uint64_t hot[MRL_TCNT_COUNT];
	struct mrl_cache_domain *dom;

	memset(stats, 0, sizeof(*stats));
	slow_copy(&cache->stats, stats);
	pthread_mutex_lock(&cache->lock);
	for (size_t k = 0; k < sizeof(tcnt_read_order) / sizeof(tcnt_read_order[0]); k++) {
		enum mrl_tcnt i = tcnt_read_order[k];

		hot[i] = cache->closed_hot[i];
		for (dom = cache->domains; dom; dom = dom->next)
			if (dom->hot.slot != MRL_CACHE_STAT_SLOTS - 1)
				hot[i] += tcnt_sum(dom->hot.slot, i) - dom->slot_base[i];
		if (cache->shared_domains)
			hot[i] += tcnt_sum(MRL_CACHE_STAT_SLOTS - 1, i) - cache->shared_base[i];
	}
	pthread_mutex_unlock(&cache->lock);
	hot_copy(hot, &cache->hits_seen, stats);
	stats->invalidations = tcnt_sum(cache->slot, MRL_TCNT_INVALIDATIONS) -
			       cache->slot_base[MRL_TCNT_INVALIDATIONS];
}
