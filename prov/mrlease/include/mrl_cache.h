/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache: memory registrations indexed by address range, per domain.
 *
 * What it holds. A cache (one per process in the provider) holds cache
 * domains, one per core domain. A cache domain indexes *entries*: each entry is
 * one registration ([base, end) registered through the domain's registrar,
 * giving an opaque MR handle and a descriptor) and is reachable by a covering
 * lookup while it is *live*. An entry leaves the index (is *retired*) by
 * invalidate, clear_domain (domain close), unpin, eviction, or replacement by a
 * newer entry at the same base; a retired entry is never found again.
 *
 * Who holds references. A registration carries one atomic reference count:
 * +1 for the index while the entry is live (unless lent, see "Capacity"),
 * +1 per lease (an in-flight operation, a user MR handle served from the
 * cache, a pin). The registrar's close runs exactly once, when the count of
 * a retired entry drops to zero. It runs on the thread dropping the last
 * reference and never while any cache lock is held (closing can re-enter an
 * allocator or a memory hook that calls back into the cache). A cache domain
 * lives until it is closed *and* its last registration is gone, so a lease
 * may outlive mrl_cache_domain_close() (its registrar must still accept the
 * close then).
 *
 * Locks. One mutex per cache (cache->lock) serialises every change of the
 * indexes (a B+tree per domain, keyed by base, with the max end of each
 * subtree), the CLOCK hands, the domain list, the pending-miss list and the
 * index node reserve. A writer also raises the cache's writer flag and waits
 * until no reader is inside a read section of that cache. Readers take no
 * shared lock: each thread announces itself in its own cache line and walks
 * the index; a reader that sees a writer backs off to the mutex. Under the
 * mutex or the writer flag nothing may: call the registrar (register or
 * close), drop a reference that could be the last, call malloc/free, or call
 * back into the application (span resolver). Retired entries are chained
 * intrusively and their references dropped after the lock is released, so
 * invalidate never allocates memory. A small separate pool lock guards the
 * entry slabs; the filter's lock (installing its directory keys and nodes
 * before a write section) is never taken under cache->lock nor by
 * invalidate.
 *
 * Hit path. Each thread keeps, per domain, its last two entries (a 2-way hot
 * slot, so a thread alternating a send and a receive buffer hits on both) and
 * leases either with no read section at all: an increment-if-not-zero of the
 * reference count, kept only if the domain's generation (changed by every
 * retire) read after the increment is the one seen when that way was filled
 * (each way keeps its own copy; else the reference is given back). Way 0 is
 * tried first, then way 1; a way-1 hit stays in way 1 (no swap). A lookup
 * that walks the index fills the slot: the found entry refreshes its own way
 * if it is in one, else way 0 moves to way 1 and the entry takes way 0.
 * Entries live in slabs that are never unmapped (a closed domain's slabs
 * serve the next domain), so a stale way costs a wasted increment, never a
 * fault. The hit path therefore writes the leased
 * entry's reference count and the thread's own counters, nothing shared; two
 * threads on distinct entries do not slow each other. It and
 * mrl_cache_lease_release are inline (below); bench/README.md (xfer_ir) counts
 * their instructions.
 * Other lookups walk the index inside a read section: the nearest base first
 * (one descent, a quaternary search per node), the subtree max ends only when
 * that entry does not cover.
 *
 * Invalidate. A range outside the cache's bounds, or whose pages a
 * lock-free page-occupancy filter (counts per page, 2 MiB block and GiB,
 * updated in write sections; its size follows the GiBs and 2 MiB blocks the
 * entries touch) shows empty, returns after a few loads; then a
 * read-section index walk; only a real overlap takes the write section.
 *
 * Memory. An entry is 48 bytes (a 32-byte hot part and a 16-byte cold part
 * in its domain's slab), plus 16.5 bytes of index leaf; fixed costs grow
 * with the cache (slabs of 32 entries first, the filter per GiB and 2 MiB
 * block touched, an index node reserve of what the next insert can take).
 * Past FI_MRLEASE_HUGEPAGE_AFTER bytes (all caches), slabs and index nodes
 * come from 2 MiB chunks advised for huge pages (mrl_arena.h), so the two
 * misses of a random hit in a very large cache need no page walk.
 *
 * Misses. A miss resolves the extent (span resolver, else the operand's
 * page-aligned pages), registers it with no lock held, then inserts under the
 * lock after checking again: if another thread inserted a covering entry
 * meanwhile, the loser's registration is closed after the unlock and the
 * caller gets a lease on the winner. An invalidate that overlaps a miss still
 * registering marks it stale: that registration is handed to the caller as a
 * lease but never enters the index. A failed registration leaves nothing.
 *
 * Deferred closes. A memory monitor's invalidation (mrl_monitor.h) runs
 * inside a lookup or a completion read, on whichever thread finds its events
 * first, and retires entries of every domain; closing a registration there
 * would call into another domain's provider objects from a thread its
 * threading model may not allow, or re-enter the provider mid-post. So
 * mrl_cache_invalidate_deferred chains the registrations whose last
 * reference it dropped (intrusively, lock-free: it allocates nothing) on
 * their own domain's deferred list, closed by mrl_cache_domain_settle, i.e.
 * at the next call any thread makes into that domain's objects through the
 * hook (a lookup of the domain, its domain close, a completion read). A
 * domain opened free_threaded (FI_THREAD_SAFE: any thread may call it at
 * any time) puts them on the cache's list instead, which any domain's
 * settle, mrl_caches_close_deferred_shared (a monitor's closer thread) and
 * mrl_cache_close_deferred (explicit invalidate, cache destroy) close.
 * Whoever takes a list closes what it took outside every lock, so a domain
 * about to close (mrl_cache_domain_retire_unleased, then
 * mrl_cache_domain_close) settles, then waits until no other thread holds
 * one of its registrations taken off a list: a provider refuses to close a
 * domain with an MR open, and some (libfabric 1.17's rxm) cannot be asked
 * again. A thread taking a list counts what it took per domain under a
 * per-cache leaf lock, which the waiting close reads it under; pushes stay
 * lock-free. A thread closing deferred registrations never closes a domain
 * meanwhile, so the wait cannot come back to itself.
 *
 * Barrier. Between the monitor reading a kernel event (which lets the
 * unmapping thread return from munmap) and its invalidation taking effect, no
 * lookup may return an entry of the range going away. The monitor raises the
 * process-wide barrier (mrl_cache_barrier) before each read and it stays up
 * until the ranges read are invalidated; the hit path tests it with one load
 * and goes out of line while it is up, and every out-of-line lookup and
 * every settle (mrl_cache_domain_settle: a completion read, an MR call),
 * outside any lock and read section, calls the barrier's helper (the
 * monitor's drain, which applies the ranges) until it is down.
 *
 * Retention. A registrar may say, per miss, that the range is not watched
 * (struct mrl_registrar.watch): such a registration is handed to the caller
 * as a lease but never enters the index, so it closes at its last release
 * (counted as not retained). Pins are always indexed: the pin holds a lease.
 *
 * Fork. A child never closes a registration it inherited (its provider
 * objects are the parent's, whose locks may be held by threads that do not
 * exist in the child): registrations of a domain opened before the fork are
 * forgotten, not closed, when the child drops them; the child's own domains
 * (in a cache it creates) behave normally. The barrier is down in a child.
 *
 * Ranges: end is exclusive. A zero-length range is a no-op for invalidate
 * (returns 0) and -FI_EINVAL for acquire/lookup/pin; a range whose end wraps
 * past the address space (start + len overflows, or end < start) is
 * -FI_EINVAL everywhere.
 *
 * Keys. When the provider does not pick keys (no FI_MR_PROV_KEY), the cache
 * takes keys for its own registrations from the top half of the domain's
 * key space (mr_key_size bytes, at most 8), counting down from the largest
 * key; applications conventionally count up from 0 or 1, so they cannot
 * collide unless they use keys >= 2^(8*mr_key_size - 1). On -FI_ENOKEY the
 * next key is tried (MRL_CACHE_KEY_RETRIES times).
 *
 * Access: cache registrations are local only, MRL_CACHE_ACCESS.
 *
 * Capacity (per domain): at most max_count entries and max_size bytes;
 * beyond that, entries no lease holds and not pinned are evicted in
 * approximately least-recently-used order (CLOCK: a new entry and a hit mark
 * an entry used; the sweep runs over the index in address order from where
 * the last one stopped, wrapping, and gives used entries a second chance, so
 * an entry carries no list links). When the registrar refuses
 * with -FI_ENOMEM, -FI_ENOSPC or -FI_EAGAIN, unleased entries of that domain
 * are evicted (at least the refused length, at least one entry) and the
 * registration retried once. A leased or pinned entry is never evicted.
 * Eviction runs when an insert takes the domain over a cap, and again when
 * the last lease of an entry goes while the domain is still over: an insert
 * that cannot evict enough *lends* the index's reference of every leased,
 * unpinned entry to its leases (the entry stays indexed and leasable; its
 * count is its leases), so the release that takes such a count to zero
 * goes out of line, as a last reference does, and there, in a write
 * section, gives the index its reference back and evicts down to the caps,
 * closing what it evicted on that releasing thread after the lock. Nothing
 * leases a zero count (the hit path and index walks increment only a
 * non-zero one), so that thread alone settles it; a domain with nothing
 * lent pays nothing on release.
 *
 * Statistics. Counts are per thread (the hit path's) or shared atomics
 * (misses, registrations, retires), read one by one while they change, in an
 * order that keeps every snapshot possible: counters never go back between
 * two snapshots of the same domain (or cache) taken one after the other,
 * gauges (entries, leases, registered_bytes) are never negative,
 * registrations >= deregistrations and hits <= lookups. The fields are not
 * one instant's: a snapshot taken while traffic runs may, say, count a
 * lease as live whose release it missed.
 *
 * Limits: MRL_CACHE_MAX_THREADS threads get a lock-free read path at once
 * (more threads fall back to the mutex, still correct); MRL_CACHE_STAT_SLOTS
 * caches and domains open at once keep separate hit counters (beyond that,
 * their lookup/hit/lease/below-min counters share one slot: each such
 * domain reports the merged figures; the cache counts the slot once, from
 * when the first of its domains on it opens, and keeps what it counted
 * when the last is gone, as for any closed domain).
 *
 * Checks. Built with --enable-debug, the cache asserts these rules
 * (mrl_assert.h): a count never drops below zero, a lookup never returns a
 * retired entry, an entry is retired once and its registration closed once,
 * and the index keeps its order after every change.
 *
 * Implementation: prov/mrlease/src/1-cache/, one unit per subject (the list
 * opens mrl_cache_int.h); the inline hit path and the layout it reads are
 * mrl_cache.inl's. Their headers hold no rule of this interface.
 */
#ifndef MRL_CACHE_H
#define MRL_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext_mrlease.h>

#include "mrl_assert.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ------------------------------------------------------ */

/* Defaults for FI_MRLEASE_MAX_COUNT / FI_MRLEASE_MAX_SIZE, per domain. 16384
 * registrations stays well below verbs/efa MR limits (mlx5: millions, efa:
 * ~256k) and below rxm-over-verbs job footprints; 64 GiB registered per
 * domain is beyond typical RLIMIT_MEMLOCK-unlimited HPC nodes' working sets
 * yet bounds a runaway cache. 0 in the config means "the default". */
#define MRL_CACHE_DEFAULT_MAX_COUNT 16384u
#define MRL_CACHE_DEFAULT_MAX_SIZE  (64ull << 30)

/* Default for FI_MRLEASE_HUGEPAGE_AFTER: 8 MiB of slabs and index nodes is
 * about 100k entries, where the index stops fitting a core's share of L3
 * and a random hit starts paying page walks; a default-capped domain
 * (16384 entries, ~1.1 MB) never gets there. */
#define MRL_CACHE_DEFAULT_HUGE_AFTER ((size_t) 8 << 20)

/* Access of every cache registration: local only. */
#define MRL_CACHE_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE)

/* Keys tried after -FI_ENOKEY before a miss gives up. */
#define MRL_CACHE_KEY_RETRIES 64

/* Threads with a lock-free read path; caches + domains with own hit
 * counters. */
#define MRL_CACHE_MAX_THREADS 256
#define MRL_CACHE_STAT_SLOTS  64

struct mrl_cache_config {
	size_t max_count; /* entries per domain; 0: default */
	size_t max_size; /* registered bytes per domain; 0: default */
	size_t huge_after; /* slab and node bytes (all caches) after
			    * which they come from huge-page chunks
			    * (mrl_arena.h); 0: default, SIZE_MAX:
			    * never */
	const struct fi_provider *prov; /* for FI_WARN; may be NULL */
};

/*
 * How a domain registers: the only way the cache reaches libfabric, so unit
 * tests drive it with a counting fake and integration tests with fi_mr_reg.
 * reg() registers [addr, addr + len) with `access` and (when the provider does
 * not pick keys) `key`, returning an opaque handle and its descriptor; it
 * returns 0 or a negative -FI_E* code and leaves nothing on failure.
 * close() releases a handle reg() returned; called exactly once per handle,
 * never under a cache lock.
 */
struct mrl_registrar {
	int (*reg)(void *ctx, const void *addr, size_t len, uint64_t access,
		   uint64_t key, void **mr, void **desc);
	int (*close)(void *ctx, void *mr);
	/* Optional: before a miss registers [lo, hi), whether an entry for it
	 * may stay indexed past its last lease (true) or must live only while
	 * leased (false: nothing watches the range for unmapping). NULL: always
	 * retained. Called with no cache lock held, after the miss is visible
	 * to invalidate. */
	bool (*watch)(void *ctx, uintptr_t lo, uintptr_t hi);
	/* Optional: after close() of a registration of [lo, hi) returned 0,
	 * with no cache lock held (a watch may be released: mrl_monitor.h). */
	void (*released)(void *ctx, uintptr_t lo, uintptr_t hi);
};

struct mrl_domain_config {
	const struct mrl_registrar *registrar;
	void *ctx; /* passed to the registrar */
	bool prov_key; /* FI_MR_PROV_KEY: the provider picks keys */
	size_t mr_key_size; /* domain_attr->mr_key_size; 0 is taken as 8 */
	bool free_threaded; /* any thread may close its registrations at any
			     * time (FI_THREAD_SAFE): see "Deferred closes" */
};

/* ---- counters ----------------------------------------------------------- */

/* struct fi_mrlease_stats (rdma/fi_ext_mrlease.h) is the statistics record,
 * per domain and process-wide, so the extension API copies it out as is. */

/* ---- structures --------------------------------------------------------- */

struct mrl_cache; /* opaque: index, lock, domains */
struct mrl_cache_domain; /* opaque: one core domain's entries */
/* One registration and, while live, its index entry: opaque here; its
 * layout, what the inline hit path reads, is mrl_cache.inl's. mr and desc
 * never change after insertion, so any lease holder may read them
 * (mrl_registration_desc/_mr) without a lock. */
struct mrl_registration;

/*
 * The hit path is inline (src/1-cache/mrl_cache.inl), and only its callers
 * include it: the data path's posts and completions, the binding's MR
 * handles, and the tests and benchmarks that lease directly. It holds
 * mrl_cache_acquire, mrl_cache_lease_release and mrl_cache_domain_settle (their
 * rules are below, with the rest of the API) and the accessors
 * mrl_registration_desc, _mr and _refs. Everything else is out of line.
 */

/* Non-zero while a memory monitor has read unmap events whose ranges are not
 * invalidated yet (see "Barrier" above): a count the monitor raises and
 * lowers; lookups then go out of line. */
extern atomic_uint mrl_cache_barrier;

/* What a lookup that finds the barrier up calls, with no lock held, until
 * it is down (NULL: it only waits). */
void mrl_cache_barrier_set_helper(void (*help)(void));

/* Lookups that found the barrier up and waited (process-wide, for tests). */
uint64_t mrl_cache_barrier_waits(void);

/* ---- cache -------------------------------------------------------------- */

/* A cache: the provider opens one per process; tests and benchmarks open
 * their own so their figures and entries do not mix. */
int mrl_cache_create(const struct mrl_cache_config *config,
		     struct mrl_cache **cache);

/* Closes every still-open domain (clear_domain semantics) and frees the cache
 * once; registrations still leased keep their domain alive until released. */
void mrl_cache_destroy(struct mrl_cache *cache);

/* ---- domains ------------------------------------------------------------ */

/* A cache domain per core domain: its own index, CLOCK, limits and counters,
 * so closing one domain never touches another's registrations. */
int mrl_cache_domain_open(struct mrl_cache *cache,
			  const struct mrl_domain_config *config,
			  struct mrl_cache_domain **domain);

/*
 * clear_domain: retire every entry of the domain (leased ones stay open until
 * their last lease goes), then forget the handle. Called before the core
 * domain closes so a later invalidate or unpin never reaches a registration
 * whose domain is gone, and nothing closes twice. Its deferred closes are
 * done when it returns, by this thread or another (see "Deferred closes").
 * Never fails.
 */
void mrl_cache_domain_close(struct mrl_cache_domain *domain);

/*
 * Retire every entry of the domain that no lease holds (not pinned, not
 * leased), closing their registrations, and keep the domain open: for a
 * core domain about to close whose provider may refuse (-FI_EBUSY with
 * endpoints or MRs open). If it does, the domain works as before (misses
 * register again); if it closes, mrl_cache_domain_close follows. Like it,
 * returns once every deferred close of the domain is done, whoever took it.
 * Never fails.
 */
void mrl_cache_domain_retire_unleased(struct mrl_cache_domain *domain);

/* Domain closes (mrl_cache_domain_close, _retire_unleased) that waited for
 * a deferred close another thread had taken (process-wide, for tests). */
uint64_t mrl_cache_close_waits(void);

/* Install (fn != NULL) or remove the domain's span resolver, consulted on
 * misses only, with no cache lock held. */
void mrl_cache_set_span(struct mrl_cache_domain *domain, fi_mrlease_span_fn fn,
			void *arg);

/* ---- leases ------------------------------------------------------------- */

/*
 * A lease on a live registration covering [start, end) (any covering entry,
 * not only the one with the nearest base), registering and inserting one on a
 * miss. This is what resolves a NULL descriptor on the data path, so the hit
 * path takes no shared lock and writes no shared line. Returns 0 and *reg, or
 * -FI_EINVAL (empty/wrapping range) or the registrar's error.
 */
/* static inline int mrl_cache_acquire(struct mrl_cache_domain *domain,
 *				      uintptr_t start, uintptr_t end,
 *				      struct mrl_registration **reg);
 * in mrl_cache.inl. */

/*
 * A lease on a registration whose base is exactly `start` and whose end is >=
 * `end`, for operands a peer addresses from offset 0 of their MR (libfabric
 * 1.17 rxm rendezvous over a provider without FI_MR_VIRT_ADDR reads each iov
 * from the start of its MR, so the MR must begin at the iov).
 * - Hit: a live entry with base == start and end >= end is leased (counted as
 *   a lookup and a hit, through the same hot slot and lock-free index read as
 *   mrl_cache_acquire). A wider entry covering [start, end) from a lower base
 *   is NOT used.
 * - Miss: registers exactly [start, end) (no page rounding, no span resolver,
 *   no widening) with no lock held, then inserts it, replacing a live entry
 *   at the same base as mrl_cache_track does (the old one is retired; leases
 *   on it stay valid until released). If a concurrent miss inserted an entry
 *   at that base reaching `end` meanwhile, the caller gets a lease on it and
 *   this registration is closed after the unlock. An invalidate overlapping
 *   the registration in flight keeps it out of the index (the caller still
 *   gets it as a lease). Failure leaves nothing.
 * - The entry is an ordinary entry afterwards: covering lookups may return
 *   it, invalidate/eviction/clear_domain retire it.
 * Returns 0 and *reg, -FI_EINVAL if end <= start, or the registrar's error.
 */
int mrl_cache_acquire_based(struct mrl_cache_domain *domain, uintptr_t start,
			    uintptr_t end, struct mrl_registration **reg);

/* The same lookup without registering on a miss (NULL then): for the
 * extension API and for tests that must not create entries. */
struct mrl_registration *mrl_cache_lookup(struct mrl_cache_domain *domain,
					  uintptr_t start, uintptr_t end);

/* Another reference on a registration the caller already holds, e.g. to hand
 * one lease to an operation and keep another in a user MR handle. */
void mrl_cache_lease_get(struct mrl_registration *reg);

/* Drop one reference; the last one closes the registration (through the
 * registrar, on this thread, with no cache lock held). The last lease of an
 * entry in a domain over its caps evicts down to them, closing what it
 * evicts on this thread too (see "Capacity"). */
/* static inline void mrl_cache_lease_release(struct mrl_registration *reg);
 * in mrl_cache.inl. */

/*
 * Insert an entry for [start, end) with a registration the caller already
 * made (handle and descriptor; the cache takes it over and will close it),
 * replacing any entry at the same base (the replaced one's index reference is
 * dropped after the unlock). Returns a lease in *reg for the caller: index
 * and caller each hold one. On error the caller still owns mr.
 */
int mrl_cache_track(struct mrl_cache_domain *domain, uintptr_t start,
		    uintptr_t end, void *mr, void *desc,
		    struct mrl_registration **reg);

/* ---- invalidate, pin ---------------------------------------------------- */

/*
 * Retire every entry, in every domain of the cache, overlapping
 * [start, end). When it returns no lookup returns them; their registrations
 * close when their last lease goes, after the lock is released. Called by
 * allocator purge hooks, so it never allocates memory (registrations whose
 * last reference it held are closed through the registrar) and a
 * range overlapping nothing costs a bounds check or a few lock-free filter
 * loads. Returns 0, 0 for an empty range, -FI_EINVAL for a wrapping one
 * (end < start).
 */
int mrl_cache_invalidate(struct mrl_cache *cache, uintptr_t start,
			 uintptr_t end);

/*
 * invalidate for a memory monitor's events: the same retirement, but a
 * registration whose last reference it drops is put on the cache's deferred
 * list instead of being closed here (see "Deferred closes"); counted as a
 * monitor invalidation when it retires anything. Allocates nothing, takes
 * only cache->lock and the writer section (never held across a registrar
 * call or an allocation, so never by a thread blocked in munmap).
 */
int mrl_cache_invalidate_deferred(struct mrl_cache *cache, uintptr_t start,
				  uintptr_t end);

/* Close every deferred registration of the cache, every domain's list and
 * the cache's (on the calling thread, no cache lock held): for explicit
 * invalidate, cache destroy and tests. Cheap when the lists are empty. */
void mrl_cache_close_deferred(struct mrl_cache *cache);

/* Close the cache's list only (free_threaded domains' registrations). */
void mrl_cache_close_deferred_shared(struct mrl_cache *cache);

/*
 * A call into the domain's objects: apply the monitor's events read so far
 * (the barrier), then close the domain's deferred registrations and the
 * cache's shared ones, on this thread (no cache lock held, outside any read
 * section). One load each of the barrier and the domain's list when there
 * is nothing to do: for completion reads and MR calls.
 */
/* static inline void mrl_cache_domain_settle(struct mrl_cache_domain *domain);
 * in mrl_cache.inl. */

/*
 * Whether any live entry of any cache of the process, or a miss in flight,
 * overlaps [lo, hi): what keeps a monitor's watch of the range worth
 * having (conservative: true while a writer works). No lock held that a
 * cache takes.
 */
bool mrl_caches_in_use(uintptr_t lo, uintptr_t hi);

/* mrl_cache_invalidate_deferred on every cache of the process, the caches
 * given up at fi_fini included (their domains may still be in use). Returns
 * whether it put a registration on a cache's shared list, which no settle
 * takes while the barrier is down: a closer's work. */
bool mrl_caches_invalidate_deferred(uintptr_t start, uintptr_t end);

/* Apply the monitor's events read so far (the barrier), then
 * mrl_cache_close_deferred_shared on every cache of the process: a
 * monitor's closer (only free_threaded domains use the shared lists). */
void mrl_caches_close_deferred_shared(void);

/*
 * Register [base, base + len) now as a pinned entry (never evicted) and
 * return the pin's reference in *reg; operands inside it are hits. Replaces
 * an entry at the same base.
 */
int mrl_cache_pin(struct mrl_cache_domain *domain, uintptr_t base, size_t len,
		  struct mrl_registration **reg);

/* Release a pin: retire its entry if still live (leases keep it open) and
 * drop the pin's reference. Safe after invalidate or domain close retired it
 * already: nothing closes twice. */
void mrl_cache_unpin(struct mrl_registration *reg);

/* ---- statistics --------------------------------------------------------- */

/* Index walks (lookups that did not lease from a hot way) made by the calling
 * thread, over every cache: for tests, to tell a hot hit from an index hit
 * (both count as hits). A thread-local count on the out-of-line path only. */
uint64_t mrl_cache_thread_index_walks(void);

/* Counters of one domain. Cheap to keep: hit-path counters are per thread,
 * summed here. What a snapshot keeps: see "Statistics". Both queries first
 * wait out the barrier (the monitor's events read before the call are
 * applied and counted): call them with no cache lock held. */
void mrl_cache_domain_stats(struct mrl_cache_domain *domain,
			    struct fi_mrlease_stats *stats);

/* Counters of the whole cache (every domain, closed ones included). */
void mrl_cache_stats(struct mrl_cache *cache, struct fi_mrlease_stats *stats);

/* Fault injection for tests: the next n allocations the caches make (entry
 * slabs, index nodes, filter nodes; not caches or domains) fail as if out of
 * memory; 0 turns it off. Process-wide. */
void mrl_cache_fail_allocs(unsigned n);

/* Bytes of entry slabs idle in the process-wide list (left by closed
 * domains; the next domains adopt them; never given back): for
 * measurements. */
size_t mrl_cache_pool_idle_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* MRL_CACHE_H */
