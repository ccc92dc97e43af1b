/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A real allocator wired to mrlease: a key-value store whose values live in a
 * dedicated jemalloc arena, moved to and from a peer over loopback
 * tcp;ofi_rxm with FI_HOOK=mrlease and NULL descriptors.
 *
 * The arena's extent hooks are the allocator side of the lease contract:
 *   - every chunk of memory the alloc hook maps is remembered, and the span
 *     resolver answers "which chunk holds this operand", so one cached
 *     registration covers a whole chunk and every value in it;
 *   - before jemalloc purges pages (or destroys a chunk) the hook calls
 *     ops->invalidate on them, from inside jemalloc, so no cached
 *     registration outlives the pages it maps;
 *   - dalloc and decommit opt out (jemalloc then purges and retains the
 *     pages), so a chunk is never partly unmapped or PROT_NONE while a
 *     registration may span it; split/merge move no pages and need no
 *     invalidate, and merges across two chunks are refused so every
 *     jemalloc extent lies inside one chunk.
 *
 * The workload is a key-value store's value-size transition: populate values,
 * read and write them from a peer, then, while reads (GETs) of some values are
 * in flight, free the others and repopulate them with a different size, which
 * makes jemalloc purge pages inside the chunk the in-flight reads' cached
 * registration covers. Every byte is verified, and the statistics show the
 * registrations follow chunks (not values) and that the invalidations ran.
 *
 * Output is TAP ("ok N - ...") so the test suite can run it as is:
 *   FI_PROVIDER_PATH=<dir of libmrlease-fi.so> FI_HOOK=mrlease \
 *   FI_TCP_IFACE=lo ./jemalloc_kv
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>

#define KEYS	    512 /* group A: keys [0, 256), group B: [256, 512) */
#define GROUP	    (KEYS / 2)
#define SLOT	    4096 /* the peer's landing slot per key */
#define SIZE_BEFORE 1000 /* value size, then after the transition */
#define SIZE_AFTER  2900
#define WINDOW	    64 /* transfers in flight in the steady phases */
#define MAX_CHUNKS  1024

#define TRY(expr)                                                              \
	do {                                                                   \
		long rc_ = (long) (expr);                                      \
		if (rc_ < 0) {                                                 \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#expr, fi_strerror((int) -rc_));               \
			printf("not ok - %s failed\nBail out!\n", #expr);      \
			exit(EXIT_FAILURE);                                    \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* The arena: chunk table, extent hooks, span resolver                 */
/* ------------------------------------------------------------------ */

/*
 * Chunks the alloc hook mapped, [base, end). Guarded by chunk_lock, which
 * is only ever held for a table update or lookup: never across a call into
 * jemalloc, libfabric or mrlease.
 */
static struct chunk {
	uintptr_t base, end;
} chunks[MAX_CHUNKS];
static size_t chunk_count;
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set once the extension is open; the hooks invalidate through it. */
static struct fi_mrlease_ops *_Atomic mrlease;

static struct {
	atomic_ulong chunks_mapped; /* alloc hook calls that mapped memory */
	atomic_ulong reclaims; /* purge/destroy calls that invalidated */
	atomic_ulong reclaimed_bytes;
	atomic_ulong invalidate_errors;
	atomic_ulong spans_resolved; /* span resolver answers */
	atomic_ulong spans_refused; /* operands in no chunk */
} arena_counts;

/* The chunk holding [addr, addr + len), 0 and its bounds, or -FI_ENOENT. */
static int
chunk_find(uintptr_t addr, size_t len, struct chunk *found)
{
	int ret = -FI_ENOENT;

	pthread_mutex_lock(&chunk_lock);
	for (size_t i = 0; i < chunk_count; i++) {
		if (chunks[i].base <= addr && addr + len <= chunks[i].end) {
			*found = chunks[i];
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&chunk_lock);
	return ret;
}

static bool
chunk_add(uintptr_t base, size_t size)
{
	bool added = false;

	pthread_mutex_lock(&chunk_lock);
	if (chunk_count < MAX_CHUNKS) {
		chunks[chunk_count++] = (struct chunk){base, base + size};
		added = true;
	}
	pthread_mutex_unlock(&chunk_lock);
	return added;
}

/* Forget [base, end) of the chunk holding it (destroy unmaps it). */
static void
chunk_remove(uintptr_t base, uintptr_t end)
{
	pthread_mutex_lock(&chunk_lock);
	for (size_t i = 0; i < chunk_count; i++) {
		struct chunk *c = &chunks[i];

		if (c->base > base || end > c->end)
			continue;
		if (c->base == base && c->end == end) {
			*c = chunks[--chunk_count];
		} else if (c->base == base) {
			c->base = end;
		} else if (c->end == end) {
			c->end = base;
		} else if (chunk_count < MAX_CHUNKS) {
			/* A hole in the middle: keep both sides. */
			chunks[chunk_count++] = (struct chunk){end, c->end};
			c->end = base;
		} else {
			c->end = base; /* the tail is lost to the resolver */
		}
		break;
	}
	pthread_mutex_unlock(&chunk_lock);
}

static bool
same_chunk(uintptr_t a, uintptr_t b)
{
	struct chunk c;

	return !chunk_find(a, 1, &c) && c.base <= b && b < c.end;
}

/*
 * The lease contract: called before pages go away. Runs inside jemalloc
 * (which allows re-entry from hooks), with no lock of ours held.
 */
static void
reclaim_notice(void *addr, size_t len)
{
	struct fi_mrlease_ops *ops = atomic_load(&mrlease);

	atomic_fetch_add(&arena_counts.reclaims, 1);
	atomic_fetch_add(&arena_counts.reclaimed_bytes, len);
	if (ops && ops->invalidate(addr, len))
		atomic_fetch_add(&arena_counts.invalidate_errors, 1);
}

static void *
hook_alloc(extent_hooks_t *hooks, void *new_addr, size_t size, size_t alignment,
	   bool *zero, bool *commit, unsigned arena_ind)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE);
	size_t span = size + (alignment > page ? alignment : 0);
	uintptr_t base, aligned;
	void *map;

	(void) hooks, (void) arena_ind;
	map = mmap(new_addr, span, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	if (new_addr && map != new_addr) {
		munmap(map, span);
		return NULL;
	}
	base = (uintptr_t) map;
	aligned = alignment > page ? (base + alignment - 1) & ~(alignment - 1) :
				     base;
	if (aligned > base)
		munmap(map, aligned - base);
	if (aligned + size < base + span)
		munmap((void *) (aligned + size), base + span - aligned - size);

	if (!chunk_add(aligned, size)) {
		munmap((void *) aligned, size);
		return NULL;
	}
	atomic_fetch_add(&arena_counts.chunks_mapped, 1);
	*zero = true;
	*commit = true;
	return (void *) aligned;
}

/* Opt out: jemalloc keeps (retains) the pages, purging them first. */
static bool
hook_dalloc(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
	    unsigned arena_ind)
{
	(void) hooks, (void) addr, (void) size, (void) committed,
		(void) arena_ind;
	return true;
}

/* Arena destruction: the pages are unmapped for good. */
static void
hook_destroy(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
	     unsigned arena_ind)
{
	(void) hooks, (void) committed, (void) arena_ind;
	reclaim_notice(addr, size);
	chunk_remove((uintptr_t) addr, (uintptr_t) addr + size);
	munmap(addr, size);
}

/* Pages are always committed (decommit opts out), so commit has no work. */
static bool
hook_commit(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
	    size_t length, unsigned arena_ind)
{
	(void) hooks, (void) addr, (void) size, (void) offset, (void) length;
	(void) arena_ind;
	return false;
}

static bool
hook_decommit(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
	      size_t length, unsigned arena_ind)
{
	(void) hooks, (void) addr, (void) size, (void) offset, (void) length;
	(void) arena_ind;
	return true;
}

/* Lazy purging (MADV_FREE) opts out too: one reclaim path, the forced one. */
static bool
hook_purge_lazy(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
		size_t length, unsigned arena_ind)
{
	(void) hooks, (void) addr, (void) size, (void) offset, (void) length;
	(void) arena_ind;
	return true;
}

static bool
hook_purge_forced(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
		  size_t length, unsigned arena_ind)
{
	char *pages = (char *) addr + offset;

	(void) hooks, (void) size, (void) arena_ind;
	reclaim_notice(pages, length);
	return madvise(pages, length, MADV_DONTNEED) != 0;
}

static bool
hook_split(extent_hooks_t *hooks, void *addr, size_t size, size_t size_a,
	   size_t size_b, bool committed, unsigned arena_ind)
{
	(void) hooks, (void) addr, (void) size, (void) size_a, (void) size_b;
	(void) committed, (void) arena_ind;
	return false;
}

static bool
hook_merge(extent_hooks_t *hooks, void *addr_a, size_t size_a, void *addr_b,
	   size_t size_b, bool committed, unsigned arena_ind)
{
	(void) hooks, (void) size_a, (void) size_b, (void) committed;
	(void) arena_ind;
	return !same_chunk((uintptr_t) addr_a, (uintptr_t) addr_b);
}

static extent_hooks_t arena_hooks = {
	.alloc = hook_alloc,
	.dalloc = hook_dalloc,
	.destroy = hook_destroy,
	.commit = hook_commit,
	.decommit = hook_decommit,
	.purge_lazy = hook_purge_lazy,
	.purge_forced = hook_purge_forced,
	.split = hook_split,
	.merge = hook_merge,
};

/* mrlease's span resolver: widen an operand to the chunk that holds it. */
static int
chunk_span(void *arg, const void *addr, size_t len, void **span_base,
	   size_t *span_len)
{
	struct chunk c;

	(void) arg;
	if (chunk_find((uintptr_t) addr, len, &c)) {
		atomic_fetch_add(&arena_counts.spans_refused, 1);
		return -FI_ENOENT;
	}
	atomic_fetch_add(&arena_counts.spans_resolved, 1);
	*span_base = (void *) c.base;
	*span_len = c.end - c.base;
	return 0;
}

static unsigned
arena_create(void)
{
	extent_hooks_t *hooks = &arena_hooks;
	ssize_t immediately = 0;
	size_t len = sizeof(unsigned);
	unsigned index;
	char name[64];

	if (mallctl("arenas.create", &index, &len, &hooks, sizeof(hooks))) {
		printf("Bail out! mallctl arenas.create failed\n");
		exit(EXIT_FAILURE);
	}
	/* Purge freed pages at once, so the transition reclaims right away
	 * rather than after jemalloc's default ten-second decay. */
	snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", index);
	mallctl(name, NULL, NULL, &immediately, sizeof(immediately));
	snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", index);
	mallctl(name, NULL, NULL, &immediately, sizeof(immediately));
	return index;
}

static void
arena_purge(unsigned index)
{
	char name[64];

	snprintf(name, sizeof(name), "arena.%u.purge", index);
	mallctl(name, NULL, NULL, NULL, 0);
}

static void
arena_destroy(unsigned index)
{
	char name[64];

	snprintf(name, sizeof(name), "arena.%u.destroy", index);
	mallctl(name, NULL, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Fabric: a server (owns the values) and a peer (owns landing slots)   */
/* ------------------------------------------------------------------ */

struct side {
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t other;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct side server, peer;
static struct fid_mr *slots_mr;
static uint8_t *slots; /* KEYS * SLOT bytes, remote read/write */
static uint64_t slots_key, slots_addr;
static struct fi_context contexts[KEYS];
static size_t outstanding;

static void
side_open(struct side *side)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

	TRY(fi_domain(fabric, info, &side->domain, NULL));
	TRY(fi_endpoint(side->domain, info, &side->ep, NULL));
	TRY(fi_cq_open(side->domain, &cq_attr, &side->cq, NULL));
	TRY(fi_av_open(side->domain, &av_attr, &side->av, NULL));
	TRY(fi_ep_bind(side->ep, &side->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(side->ep, &side->av->fid, 0));
	TRY(fi_enable(side->ep));
}

static void
side_close(struct side *side)
{
	TRY(fi_close(&side->ep->fid));
	TRY(fi_close(&side->av->fid));
	TRY(fi_close(&side->cq->fid));
	TRY(fi_close(&side->domain->fid));
}

static void
sides_connect(void)
{
	char name[256];
	size_t len = sizeof(name);

	TRY(fi_getname(&peer.ep->fid, name, &len));
	TRY(fi_av_insert(server.av, name, 1, &server.other, 0, NULL));
	len = sizeof(name);
	TRY(fi_getname(&server.ep->fid, name, &len));
	TRY(fi_av_insert(peer.av, name, 1, &peer.other, 0, NULL));
}

/* Progress both sides; returns the server completions reaped. */
static size_t
progress(void)
{
	struct fi_cq_entry entries[16];
	struct fi_cq_err_entry err;
	ssize_t ret;

	(void) fi_cq_read(peer.cq, NULL, 0);
	ret = fi_cq_read(server.cq, entries, 16);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(server.cq, &err, 0);
		fprintf(stderr, "completion error: %s\n", fi_strerror(err.err));
		printf("not ok - a transfer failed\nBail out!\n");
		exit(EXIT_FAILURE);
	}
	TRY(ret);
	outstanding -= (size_t) ret;
	return (size_t) ret;
}

static void
drain(size_t until)
{
	while (outstanding > until)
		progress();
}

/* Post, progressing while the provider asks to retry. */
#define POST(expr)                                        \
	do {                                              \
		ssize_t post_rc_;                         \
		while ((post_rc_ = (expr)) == -FI_EAGAIN) \
			progress();                       \
		TRY(post_rc_);                            \
		outstanding++;                            \
	} while (0)

/* ------------------------------------------------------------------ */
/* The key-value store                                                 */
/* ------------------------------------------------------------------ */

static unsigned arena;
static uint8_t *values[KEYS];
static size_t sizes[KEYS];
static unsigned generations[KEYS];
static unsigned long values_stored;
static unsigned long reclaim_epochs; /* posting phases after a reclaim */
static unsigned long reclaims_seen;

static uint8_t
pattern(unsigned key, unsigned generation, size_t i)
{
	return (uint8_t) (key * 131u + generation * 17u + i * 7u + (i >> 8));
}

static void
fill(uint8_t *buf, unsigned key, unsigned generation, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(key, generation, i);
}

static bool
holds(const uint8_t *buf, unsigned key, unsigned generation, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(key, generation, i))
			return false;
	return true;
}

static void
value_store(unsigned key, size_t size, unsigned generation)
{
	values[key] = mallocx(size, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
	if (!values[key]) {
		printf("Bail out! mallocx(%zu) failed\n", size);
		exit(EXIT_FAILURE);
	}
	sizes[key] = size;
	generations[key] = generation;
	fill(values[key], key, generation, size);
	values_stored++;
}

static void
value_free(unsigned key)
{
	dallocx(values[key], MALLOCX_TCACHE_NONE);
	values[key] = NULL;
}

/* Counts a posting phase that follows a reclaim: each may re-register. */
static void
note_epoch(void)
{
	unsigned long reclaims = atomic_load(&arena_counts.reclaims);

	if (reclaims != reclaims_seen) {
		reclaims_seen = reclaims;
		reclaim_epochs++;
	}
}

/* GET: the peer reads value `key`; the server writes it into the peer's
 * slot, its local operand being the value itself, with desc NULL. */
static void
get_post(unsigned key)
{
	note_epoch();
	POST(fi_write(server.ep, values[key], sizes[key], NULL, server.other,
		      slots_addr + (uint64_t) key * SLOT, slots_key,
		      &contexts[key]));
}

/* PUT: the peer writes value `key`; the server reads the peer's slot into
 * the value, again with desc NULL. */
static void
put_post(unsigned key)
{
	note_epoch();
	POST(fi_read(server.ep, values[key], sizes[key], NULL, server.other,
		     slots_addr + (uint64_t) key * SLOT, slots_key,
		     &contexts[key]));
}

static int tap_number;
static int tap_failures;

static void
tap(bool ok, const char *name)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++tap_number, name);
	if (!ok)
		tap_failures++;
	fflush(stdout);
}

/* Every key of [first, last) holds generation's bytes at the peer. */
static bool
peer_holds(unsigned first, unsigned last)
{
	for (unsigned key = first; key < last; key++)
		if (!holds(slots + (size_t) key * SLOT, key, generations[key],
			   sizes[key]))
			return false;
	return true;
}

static void
get_range(unsigned first, unsigned last)
{
	memset(slots + (size_t) first * SLOT, 0,
	       (size_t) (last - first) * SLOT);
	for (unsigned key = first; key < last; key++) {
		get_post(key);
		drain(WINDOW - 1);
	}
	drain(0);
}

static void
phase_populate_and_put(void)
{
	bool ok = true;

	for (unsigned key = 0; key < KEYS; key++)
		value_store(key, SIZE_BEFORE, 0);

	/* The peer writes generation 1 of every value. */
	for (unsigned key = 0; key < KEYS; key++)
		fill(slots + (size_t) key * SLOT, key, 1, SIZE_BEFORE);
	for (unsigned key = 0; key < KEYS; key++) {
		put_post(key);
		generations[key] = 1;
		drain(WINDOW - 1);
	}
	drain(0);
	for (unsigned key = 0; key < KEYS; key++)
		ok = ok && holds(values[key], key, 1, sizes[key]);
	tap(ok, "values written by the peer (fi_read into the value, desc "
		"NULL) hold every byte");

	get_range(0, KEYS);
	tap(peer_holds(0, KEYS), "values read by the peer (fi_write from the "
				 "value, desc NULL) hold every byte");
}

/*
 * The value-size transition: GETs of group B are posted and left in
 * flight while group A is freed and repopulated with another size. Freeing
 * A empties its slabs, jemalloc purges their pages, and the hook
 * invalidates them: a chunk-wide registration that B's GETs lease is
 * retired under them and must stay open until they complete.
 */
static void
phase_transition(void)
{
	unsigned long reclaims_before = atomic_load(&arena_counts.reclaims);
	struct fi_mrlease_stats during;

	memset(slots + (size_t) GROUP * SLOT, 0, (size_t) GROUP * SLOT);
	for (unsigned key = GROUP; key < KEYS; key++)
		get_post(key);

	for (unsigned key = 0; key < GROUP; key++)
		value_free(key);
	arena_purge(arena);
	for (unsigned key = 0; key < GROUP; key++)
		value_store(key, SIZE_AFTER, 2);
	TRY(atomic_load(&mrlease)->query_stats(server.domain, &during,
					       sizeof(during)));

	printf("# transition: %zu GETs in flight, %lu reclaims, %" PRIu64
	       " leases held\n",
	       outstanding,
	       atomic_load(&arena_counts.reclaims) - reclaims_before,
	       during.leases);
	tap(atomic_load(&arena_counts.reclaims) > reclaims_before,
	    "freeing group A made jemalloc purge pages and the hook invalidate "
	    "them");

	drain(0);
	tap(peer_holds(GROUP, KEYS),
	    "GETs in flight across the invalidation delivered every byte");

	get_range(0, GROUP);
	tap(peer_holds(0, GROUP),
	    "repopulated values of the new size read back byte for byte");
}

/* ------------------------------------------------------------------ */

static void
print_stats(const char *title, const struct fi_mrlease_stats *s)
{
	printf("# %s\n", title);
	printf("#   %-22s %10" PRIu64 "\n", "lookups", s->lookups);
	printf("#   %-22s %10" PRIu64 "\n", "hits", s->hits);
	printf("#   %-22s %10" PRIu64 "\n", "misses", s->misses);
	printf("#   %-22s %10" PRIu64 "\n", "registrations", s->registrations);
	printf("#   %-22s %10" PRIu64 "\n", "deregistrations",
	       s->deregistrations);
	printf("#   %-22s %10" PRIu64 "\n", "invalidate calls",
	       s->invalidations);
	printf("#   %-22s %10" PRIu64 "\n", "retired while leased",
	       s->retired_leased);
	printf("#   %-22s %10" PRIu64 "\n", "evictions", s->evictions);
	printf("#   %-22s %10" PRIu64 "\n", "live entries", s->entries);
	printf("#   %-22s %10" PRIu64 "\n", "live leases", s->leases);
	printf("#   %-22s %10" PRIu64 "\n", "registered bytes",
	       s->registered_bytes);
}

static void
report(void)
{
	struct fi_mrlease_stats domain_stats, process_stats;
	unsigned long mapped = atomic_load(&arena_counts.chunks_mapped);
	unsigned long reclaims = atomic_load(&arena_counts.reclaims);

	struct fi_mrlease_ops *ops = atomic_load(&mrlease);

	TRY(ops->query_stats(server.domain, &domain_stats,
			     sizeof(domain_stats)));
	TRY(ops->query_stats(NULL, &process_stats, sizeof(process_stats)));

	printf("# arena: %lu chunks mapped, %lu values stored, %lu reclaims "
	       "(%lu KiB), %lu spans resolved, %lu refused, %lu posting "
	       "phases after a reclaim\n",
	       mapped, values_stored, reclaims,
	       atomic_load(&arena_counts.reclaimed_bytes) / 1024,
	       atomic_load(&arena_counts.spans_resolved),
	       atomic_load(&arena_counts.spans_refused), reclaim_epochs);
	print_stats("lease cache, server domain:", &domain_stats);
	print_stats("lease cache, process-wide:", &process_stats);

	tap(atomic_load(&arena_counts.invalidate_errors) == 0,
	    "every invalidate from jemalloc's purge path returned 0");
	tap(process_stats.invalidations >= reclaims && reclaims > 0,
	    "the cache counted the hook's invalidations");

	tap(domain_stats.lookups >= values_stored,
	    "NULL descriptors were resolved through the cache");
	/*
	 * A chunk is registered once, then again only after a reclaim retired
	 * it: at most chunks x (posting phases after a reclaim + 1)
	 * registrations, and far fewer than the values moved.
	 */
	tap(domain_stats.registrations <= mapped * (reclaim_epochs + 1) &&
		    domain_stats.registrations * 16 <= values_stored,
	    "registrations follow chunks, not values");
	tap(atomic_load(&arena_counts.spans_resolved) >=
			    domain_stats.registrations &&
		    atomic_load(&arena_counts.spans_refused) == 0,
	    "every registration was widened to the chunk holding its operand");
	tap(domain_stats.retired_leased > 0,
	    "a registration was retired while GETs leased it");
}

int
main(void)
{
	struct fi_info *hints;
	struct fi_mrlease_ops *ops;
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		return EXIT_FAILURE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_RMA;
	hints->mode = FI_CONTEXT;
	/* A GET completes once its bytes are in the peer's slot: the checks
	 * read the slot right after the server's completion. */
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	TRY(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info));
	fi_freeinfo(hints);
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));

	ret = fi_open_ops(&fabric->fid, FI_MRLEASE_OPS_1, 0, (void **) &ops,
			  NULL);
	if (ret) {
		printf("Bail out! the mrlease hook is not active (%s): run "
		       "with "
		       "FI_HOOK=mrlease and libmrlease-fi.so on "
		       "FI_PROVIDER_PATH\n",
		       fi_strerror(-ret));
		return EXIT_FAILURE;
	}
	atomic_store(&mrlease, ops);
	arena = arena_create();

	side_open(&server);
	side_open(&peer);
	sides_connect();
	TRY(ops->set_span(server.domain, chunk_span, NULL));

	if (posix_memalign((void **) &slots, SLOT, (size_t) KEYS * SLOT))
		return EXIT_FAILURE;
	TRY(fi_mr_reg(peer.domain, slots, (size_t) KEYS * SLOT,
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &slots_mr,
		      NULL));
	slots_key = fi_mr_key(slots_mr);
	slots_addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			     (uint64_t) (uintptr_t) slots :
			     0;

	phase_populate_and_put();
	phase_transition();
	report();

	/* Tear down: the arena goes first, its destroy hook invalidating its
	 * chunks while the extension is still there to tell. */
	for (unsigned key = 0; key < KEYS; key++)
		value_free(key);
	arena_destroy(arena);
	TRY(ops->set_span(server.domain, NULL, NULL));
	TRY(fi_close(&slots_mr->fid));
	side_close(&server);
	side_close(&peer);
	atomic_store(&mrlease, NULL);
	TRY(fi_close(&fabric->fid));
	fi_freeinfo(info);
	free(slots);

	printf("1..%d\n", tap_number);
	return tap_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
