/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache against two peers on the same workload, in the same run:
 *   mutex_map  a global-mutex ordered map: one mutex over a Rust
 *         BTreeMap<usize, RegionEntry> with Arc<Registration> values,
 *         modelled faithfully (see mxmap_* below): predecessor lookup by
 *         range(..=start).next_back(), and an invalidate that walks
 *         range(..end) in order from the first entry, collects those with
 *         end > start, then removes them;
 *   ucx   UCX's registration cache (ucs_rcache_get / region_put, memory
 *         events off, no-op registration), when built with libucx-dev; no
 *         invalidate figure (n/a).
 *   ofi   libfabric's util MR cache, the one its providers (verbs, efa, cxi,
 *         opx) keep: ofi_mr_cache_search / ofi_mr_cache_delete and
 *         ofi_mr_cache_notify, its monitor watching nothing, compiled from
 *         libfabric 2.1's source, which `make bench` fetches, into a module
 *         loaded at run time (bench/utilmr/utilmr.h); its limits above the
 *         largest size, so nothing is evicted. A run without it says so on
 *         its RESULT line (ofi_peer=MISSING).
 * And one reference that is not a peer:
 *   mutex_array  mutex_map idealised: the same mutex and Arc-like
 *         registration over a sorted array (24 bytes per entry, one binary
 *         search, invalidate scanning every entry below `end`). An ordered
 *         map with O(n) inserts that no real map reaches: a lower bound, not
 *         a peer. Its ratios are printed (ratio_mutex_array_*) for
 *         orientation only.
 * Registrations go through the counting registrar with no records (no
 * provider), so figures are the caches' own cost.
 *
 * Figures (ns per operation: per size, GENERATIONS sets of fresh processes,
 * one per cache, each running REPS repetitions alternating with the
 * others'; a generation's figure is the median over its repetitions, and
 * the figure is the best generation's, the smallest time or the largest
 * scale2, see measure_all):
 *   hit_hot_N   lookup + lease + release of the same entry, N entries
 *   hit_rand_N  the same on uniformly random entries
 *   inv_miss    invalidate of a range overlapping nothing (a gap between
 *               entries, random) at 1e6 entries; inv_miss_out: outside all
 *   scale2      2-thread / 1-thread hit throughput, distinct hot entries
 *   mem_lat     (reference, not a figure of any cache) ns of one dependent
 *               random load over 64 MiB: the machine's memory latency when
 *               the 1e6 figures ran, taken in the same repetitions
 *   bpe         bytes per entry (malloc'd bytes delta, in-use heap plus
 *               mmap'd blocks, / entries; for mrlease plus the idle entry
 *               slabs it adopted from earlier sizes' closed domains and
 *               every huge-page chunk it mapped, whole)
 * Entries are one page each, two pages apart, at synthetic addresses.
 *
 * Usage: cache_bench [--quick]   (--quick: 3 generations, fewer ops)
 *        CACHE_BENCH_GENERATIONS (default 5) and CACHE_BENCH_REPS
 *        (repetitions per generation, default 1), each 1 to 16;
 *        CACHE_BENCH_CPU, the CPU of every cache's process (default the
 *        highest allowed)
 *        cache_bench --drive IMPL hot|rand|inv|inv_out N OPS
 *            (one figure alone: for valgrind and A/B runs of two builds)
 */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "common/cache_registrar.h"
#include "1-cache/mrl_arena.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"

#ifdef HAVE_UCS
#include <ucs/memory/rcache.h>
#endif
#include "bench_util.h"
#include "utilmr/utilmr.h"

#define ADDR0 ((uintptr_t) 0x100000000000ull)
static size_t page;
/* Generations of fresh processes per size, repetitions in each
 * (CACHE_BENCH_GENERATIONS, CACHE_BENCH_REPS). */
#define MAX_GENS 16
#define MAX_REPS 16
static int gens = 5, reps = 1;
static double op_scale = 1.0;

/* A count from the environment, 1 to max; dflt when unset or not a count. */
static int
env_count(const char *name, int dflt, int max)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return dflt;
	n = strtol(v, &end, 10);
	if (*end || n < 1 || n > max) {
		fprintf(stderr,
			"cache_bench: %s=%s is not a count from 1 to %d\n",
			name, v, max);
		exit(2);
	}
	return (int) n;
}

static inline uintptr_t
entry_base(size_t i)
{
	return ADDR0 + 2 * i * page;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The 1-minute load average: figures from a shared 2-core machine are only
 * comparable with it (scale2 needs both cores free). */
static double
load1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* The kernel's transparent huge page mode (the bracketed word of
 * /sys/kernel/mm/transparent_hugepage/enabled): with "always" every cache's
 * heap may get huge pages, with "madvise" only mrlease's arena asks for
 * them, and the random-hit figures follow the page walks they spare. */
static void
thp_mode(char *buf, size_t len)
{
	char all[128], *a, *b;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fgets(all, sizeof(all), f) && (a = strchr(all, '[')) &&
	    (b = strchr(a, ']'))) {
		*b = '\0';
		snprintf(buf, len, "%s", a + 1);
	}
	fclose(f);
}

static size_t
heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* ---- the implementations under test ------------------------------------- */

struct impl {
	const char *name;
	void *(*create)(size_t n);
	void (*destroy)(void *c);
	/* lookup + lease + release; returns 0 on a hit */
	int (*hit)(void *c, uintptr_t s, uintptr_t e);
	/* invalidate [s, e); NULL when the peer has no such call */
	int (*inv)(void *c, uintptr_t s, uintptr_t e);
	size_t inv_ops_div; /* fewer invalidate ops for O(n) ones */
};

/* Fills a cache whose hit registers on a miss: n entries, one per slot. */
static void *
fill_by_hits(int (*hit)(void *c, uintptr_t s, uintptr_t e), void *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hit(c, entry_base(i), entry_base(i) + page))
			abort();
	return c;
}

/* mrlease */
struct mrl_b {
	struct mrl_cache *cache;
	struct mrl_cache_domain *dom;
	struct creg creg;
};

static int
mrl_hit(void *c, uintptr_t s, uintptr_t e)
{
	struct mrl_b *b = c;
	struct mrl_registration *r;

	if (mrl_cache_acquire(b->dom, s, e, &r))
		return -1;
	mrl_cache_lease_release(r);
	return 0;
}

static void *
mrl_create(size_t n)
{
	struct mrl_b *b = calloc(1, sizeof(*b));
	struct mrl_cache_config cfg = {.max_count = 2 * n + 16,
				       .max_size = SIZE_MAX};
	struct mrl_domain_config dc;

	creg_init(&b->creg, NULL, CREG_NO_RECORDS);
	dc = creg_domain_config(&b->creg);
	if (mrl_cache_create(&cfg, &b->cache) ||
	    mrl_cache_domain_open(b->cache, &dc, &b->dom))
		abort();
	return fill_by_hits(mrl_hit, b, n);
}

static void
mrl_destroy(void *c)
{
	struct mrl_b *b = c;

	mrl_cache_destroy(b->cache);
	free(b);
}

static int
mrl_inv(void *c, uintptr_t s, uintptr_t e)
{
	return mrl_cache_invalidate(((struct mrl_b *) c)->cache, s, e);
}

/* mutex_array (reference): one mutex, sorted array by base, predecessor lookup,
 * Arc-like registrations */
struct mxarr_reg {
	atomic_long refs;
	void *mr;
};

struct mxarr_entry {
	uintptr_t base, end;
	struct mxarr_reg *reg;
};

struct mxarr_b {
	pthread_mutex_t lock;
	struct mxarr_entry *v;
	size_t n, cap;
	struct creg creg;
};

static void
mxarr_put(struct mxarr_b *b, struct mxarr_reg *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		creg_registrar.close(&b->creg, r->mr);
		free(r);
	}
}

static void *
mxarr_create(size_t n)
{
	struct mxarr_b *b = calloc(1, sizeof(*b));
	void *desc;

	pthread_mutex_init(&b->lock, NULL);
	creg_init(&b->creg, NULL, CREG_NO_RECORDS);
	for (size_t i = 0; i < n; i++) {
		struct mxarr_reg *r = malloc(sizeof(*r));

		atomic_init(&r->refs, 1);
		creg_registrar.reg(&b->creg, (void *) entry_base(i), page,
				   MRL_CACHE_ACCESS, 0, &r->mr, &desc);
		if (b->n == b->cap) { /* a growing ordered map */
			b->cap = b->cap ? 2 * b->cap : 16;
			b->v = realloc(b->v, b->cap * sizeof(*b->v));
		}
		b->v[b->n++] = (struct mxarr_entry){entry_base(i),
						    entry_base(i) + page, r};
	}
	return b;
}

static void
mxarr_destroy(void *c)
{
	struct mxarr_b *b = c;

	for (size_t i = 0; i < b->n; i++)
		mxarr_put(b, b->v[i].reg);
	free(b->v);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* covering(): the entry with the nearest base <= start, if it covers. */
static int
mxarr_hit(void *c, uintptr_t s, uintptr_t e)
{
	struct mxarr_b *b = c;
	struct mxarr_reg *r = NULL;
	size_t lo = 0, hi = b->n;

	pthread_mutex_lock(&b->lock);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->v[mid].base <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && e <= b->v[lo - 1].end) {
		r = b->v[lo - 1].reg;
		atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&b->lock);
	if (!r)
		return -1;
	mxarr_put(b, r);
	return 0;
}

/* invalidate(): regions.range(..end).filter(start < entry.end), removed. */
static int
mxarr_inv(void *c, uintptr_t s, uintptr_t e)
{
	struct mxarr_b *b = c;
	struct mxarr_reg *retired[64];
	size_t nret = 0, w = 0, i;

	pthread_mutex_lock(&b->lock);
	for (i = 0; i < b->n && b->v[i].base < e && nret < 64; i++) {
		if (s < b->v[i].end)
			retired[nret++] = b->v[i].reg;
		else
			b->v[w++] = b->v[i];
	}
	if (w != i)
		memmove(&b->v[w], &b->v[i], (b->n - i) * sizeof(*b->v));
	b->n -= i - w;
	pthread_mutex_unlock(&b->lock);
	for (i = 0; i < nret; i++)
		mxarr_put(b, retired[i]);
	return 0;
}

/*
 * mutex_map: a global-mutex ordered map as a Rust registry writes it, not
 * idealised: a global std::sync::Mutex over a BTreeMap<usize, RegionEntry>,
 * RegionEntry { end: usize, registration: Arc<Registration> } and
 * Registration { memory_region: *mut fid_mr }, looked up by
 * regions.range(..=start).next_back(). Modelled on the standard library's
 * node layout (alloc/collections/btree/node.rs, B = 6): a leaf is
 * #[repr(C)] { parent, parent_idx: u16, len: u16, keys: [usize; 11],
 * vals: [RegionEntry; 11] } = 280 bytes, an internal node adds edges: [_; 12]
 * = 376 bytes, each a separate allocation; it is a B-tree, so internal nodes
 * hold entries too. Keys are searched linearly in each node (search_node).
 * The tree has the shape ascending inserts leave (track() is called in
 * address order here): a full node splits at its middle and the new key
 * goes right, so every node but the rightmost keeps 6 of 11 keys and one key
 * between two siblings moves up; the builder below lays the nodes out in
 * that shape directly. Arc<Registration> is one 24-byte allocation (strong,
 * weak, the fid_mr pointer); a lease is Arc::clone (relaxed increment) and
 * its drop a release decrement. The unbounded lower end of range() descends
 * the leftmost edges; next_back() from the upper leaf edge yields the nearest
 * key <= start, tracked here on the way down (the same nodes Rust climbs back
 * through). invalidate() is regions.range(..end) walked in key order from the
 * first entry (the leftmost leaf, up through the parents, as Rust's leaf-edge
 * iterator goes), collecting the keys of entries with end > start, then
 * regions.remove(key) for each (see mxmap_inv).
 */
#define MXMAP_CAP  11
#define MXMAP_KEEP 6

struct mxmap_arc { /* ArcInner<Registration> */
	atomic_long strong, weak;
	void *mr;
};

struct mxmap_val { /* RegionEntry */
	uintptr_t end;
	struct mxmap_arc *reg;
};

struct mxmap_node { /* LeafNode<usize, RegionEntry> */
	struct mxmap_node *parent;
	uint16_t parent_idx, len;
	uintptr_t keys[MXMAP_CAP];
	struct mxmap_val vals[MXMAP_CAP];
};

struct mxmap_inode { /* InternalNode<usize, RegionEntry> */
	struct mxmap_node data;
	struct mxmap_node *edges[MXMAP_CAP + 1];
};

struct mxmap_b {
	pthread_mutex_t lock;
	struct mxmap_node *root;
	unsigned height; /* 0: the root is a leaf */
	struct creg creg;
};

static void
mxmap_put(struct mxmap_b *b, struct mxmap_arc *r)
{
	/* Rust: a release decrement, then an acquire fence on the last; one
	 * acq_rel decrement is the same instruction on x86 (and TSan takes no
	 * fences). */
	if (atomic_fetch_sub_explicit(&r->strong, 1, memory_order_acq_rel) ==
	    1) {
		creg_registrar.close(&b->creg, r->mr);
		free(r);
	}
}

/* One level of the ascending-insert shape: nodes of MXMAP_KEEP keys (the last
 * up to MXMAP_CAP), one key between two nodes moved up into *up. `child`
 * (internal levels) holds nk + 1 nodes; NULL for leaves. Returns the count of
 * nodes made and their keys moved up (nodes - 1). */
static size_t
mxmap_level(const uintptr_t *keys, const struct mxmap_val *vals, size_t nk,
	    struct mxmap_node **child, struct mxmap_node **out,
	    uintptr_t *up_keys, struct mxmap_val *up_vals)
{
	size_t k = 0, c = 0, nodes = 0;

	for (;;) {
		size_t take = nk - k <= MXMAP_CAP ? nk - k : MXMAP_KEEP;
		struct mxmap_node *n;

		n = child ? calloc(1, sizeof(struct mxmap_inode)) :
			    calloc(1, sizeof(struct mxmap_node));
		if (!n)
			abort();
		n->len = (uint16_t) take;
		memcpy(n->keys, &keys[k], take * sizeof(*keys));
		memcpy(n->vals, &vals[k], take * sizeof(*vals));
		if (child) {
			for (size_t i = 0; i <= take; i++) {
				((struct mxmap_inode *) n)->edges[i] =
					child[c + i];
				child[c + i]->parent = n;
				child[c + i]->parent_idx = (uint16_t) i;
			}
			c += take + 1;
		}
		k += take;
		out[nodes++] = n;
		if (k == nk)
			return nodes;
		up_keys[nodes - 1] = keys[k];
		up_vals[nodes - 1] = vals[k];
		k++;
	}
}

static void *
mxmap_create(size_t n)
{
	struct mxmap_b *b = calloc(1, sizeof(*b));
	uintptr_t *keys = malloc(n * sizeof(*keys));
	struct mxmap_val *vals = malloc(n * sizeof(*vals));
	struct mxmap_node **nodes =
		malloc((n / MXMAP_KEEP + 2) * sizeof(*nodes));
	struct mxmap_node **child = NULL;
	size_t nk = n, made;
	void *desc;

	if (!b || !keys || !vals || !nodes)
		abort();
	pthread_mutex_init(&b->lock, NULL);
	creg_init(&b->creg, NULL, CREG_NO_RECORDS);
	for (size_t i = 0; i < n; i++) {
		struct mxmap_arc *r = malloc(sizeof(*r));

		if (!r)
			abort();
		atomic_init(&r->strong, 1);
		atomic_init(&r->weak, 1);
		creg_registrar.reg(&b->creg, (void *) entry_base(i), page,
				   MRL_CACHE_ACCESS, 0, &r->mr, &desc);
		keys[i] = entry_base(i);
		vals[i] = (struct mxmap_val){entry_base(i) + page, r};
	}
	/* Bottom-up; the scratch arrays are reused level by level (keys moved
	 * up are written behind the ones still being read). */
	for (;;) {
		made = mxmap_level(keys, vals, nk, child, nodes, keys, vals);
		if (made == 1)
			break;
		nk = made - 1;
		if (!child)
			child = malloc((n / MXMAP_KEEP + 2) * sizeof(*child));
		if (!child)
			abort();
		memcpy(child, nodes, made * sizeof(*nodes));
		b->height++;
	}
	b->root = nodes[0];
	free(child);
	free(nodes);
	free(keys);
	free(vals);
	return b;
}

static void
mxmap_free(struct mxmap_b *b, struct mxmap_node *n, unsigned h)
{
	for (unsigned i = 0; i < n->len; i++)
		if (n->vals[i].reg)
			mxmap_put(b, n->vals[i].reg);
	if (h)
		for (unsigned i = 0; i <= n->len; i++)
			mxmap_free(b, ((struct mxmap_inode *) n)->edges[i],
				   h - 1);
	free(n);
}

static void
mxmap_destroy(void *c)
{
	struct mxmap_b *b = c;

	mxmap_free(b, b->root, b->height);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static int
mxmap_hit(void *c, uintptr_t s, uintptr_t e)
{
	struct mxmap_b *b = c;
	const struct mxmap_node *n, *lo;
	const struct mxmap_val *v = NULL;
	struct mxmap_arc *r = NULL;
	unsigned h, i;

	pthread_mutex_lock(&b->lock);
	/* range(..): the lower edge runs down the leftmost edges. */
	for (lo = b->root, h = b->height; h; h--)
		lo = ((const struct mxmap_inode *) lo)->edges[0];
	__asm__ __volatile__("" : : "r"(lo));
	/* ..=start: search_node per level, linear. */
	for (n = b->root, h = b->height;; h--) {
		for (i = 0; i < n->len && n->keys[i] < s; i++)
			;
		if (i < n->len && n->keys[i] == s) {
			v = &n->vals[i];
			break;
		}
		if (i)
			v = &n->vals[i - 1]; /* next_back's candidate */
		if (!h)
			break;
		n = ((const struct mxmap_inode *) n)->edges[i];
	}
	if (v && e <= v->end && v->reg) {
		r = v->reg;
		atomic_fetch_add_explicit(&r->strong, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&b->lock);
	if (!r)
		return -1;
	mxmap_put(b, r);
	return 0;
}

/* In-order walk of the keys < end below n (height h), collecting up to
 * `max` keys of entries with end > start; false once a key >= end is seen
 * (the end of range(..end)). */
static bool
mxmap_walk(const struct mxmap_node *n, unsigned h, uintptr_t s, uintptr_t e,
	   uintptr_t *found, size_t *nfound, size_t max)
{
	for (unsigned i = 0;; i++) {
		if (h && !mxmap_walk(((const struct mxmap_inode *) n)->edges[i],
				     h - 1, s, e, found, nfound, max))
			return false;
		if (i == n->len)
			return true;
		if (n->keys[i] >= e)
			return false;
		if (s < n->vals[i].end && *nfound < max)
			found[(*nfound)++] = n->keys[i];
	}
}

/* regions.remove(key): a key in an internal node is replaced by its
 * predecessor (the last key of the rightmost leaf of its left edge), as
 * Rust does; the leaf then shifts. Rust also rebalances an underfull leaf
 * (steal or merge); this model does not (the figures never remove: an
 * invalidate that finds entries does not occur in them). A predecessor
 * leaf emptied that way leaves a tombstone (end 0, covering nothing). */
static struct mxmap_arc *
mxmap_remove(struct mxmap_b *b, uintptr_t key)
{
	struct mxmap_node *n = b->root, *leaf;
	struct mxmap_arc *r;
	unsigned h = b->height, i;

	for (;; h--) {
		for (i = 0; i < n->len && n->keys[i] < key; i++)
			;
		if (i < n->len && n->keys[i] == key)
			break;
		if (!h)
			return NULL;
		n = ((struct mxmap_inode *) n)->edges[i];
	}
	r = n->vals[i].reg;
	if (h) {
		for (leaf = ((struct mxmap_inode *) n)->edges[i]; --h;)
			leaf = ((struct mxmap_inode *) leaf)->edges[leaf->len];
		if (!leaf->len) { /* emptied (no rebalancing): a tombstone */
			n->vals[i] = (struct mxmap_val){0, NULL};
			return r;
		}
		n->keys[i] = leaf->keys[leaf->len - 1];
		n->vals[i] = leaf->vals[leaf->len - 1];
		leaf->len--;
		return r;
	}
	memmove(&n->keys[i], &n->keys[i + 1],
		(n->len - i - 1) * sizeof(n->keys[0]));
	memmove(&n->vals[i], &n->vals[i + 1],
		(n->len - i - 1) * sizeof(n->vals[0]));
	n->len--;
	return r;
}

static int
mxmap_inv(void *c, uintptr_t s, uintptr_t e)
{
	struct mxmap_b *b = c;
	struct mxmap_arc *retired[64];
	uintptr_t found[64];
	size_t nfound = 0, nret = 0;

	pthread_mutex_lock(&b->lock);
	if (b->root)
		mxmap_walk(b->root, b->height, s, e, found, &nfound, 64);
	for (size_t i = 0; i < nfound; i++) {
		struct mxmap_arc *r = mxmap_remove(b, found[i]);

		if (r)
			retired[nret++] = r;
	}
	pthread_mutex_unlock(&b->lock);
	for (size_t i = 0; i < nret; i++)
		mxmap_put(b, retired[i]);
	return 0;
}

#ifdef HAVE_UCS
/* UCX rcache, memory events off, no-op registration. */
static ucs_status_t
ucx_mem_reg(void *ctx, ucs_rcache_t *rc, void *arg, ucs_rcache_region_t *region,
	    uint16_t flags)
{
	(void) ctx;
	(void) rc;
	(void) arg;
	(void) region;
	(void) flags;
	return UCS_OK;
}

static void
ucx_mem_dereg(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *region)
{
	(void) ctx;
	(void) rc;
	(void) region;
}

static void
ucx_dump(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *region, char *buf,
	 size_t max)
{
	(void) ctx;
	(void) rc;
	(void) region;
	if (max)
		buf[0] = '\0';
}

static const ucs_rcache_ops_t ucx_ops = {
	.mem_reg = ucx_mem_reg,
	.mem_dereg = ucx_mem_dereg,
	.dump_region = ucx_dump,
};

static int
ucx_hit(void *c, uintptr_t s, uintptr_t e)
{
	ucs_rcache_region_t *region;

	if (ucs_rcache_get(c, (void *) s, e - s, PROT_READ | PROT_WRITE, NULL,
			   &region) != UCS_OK)
		return -1;
	ucs_rcache_region_put(c, region);
	return 0;
}

static void *
ucx_create(size_t n)
{
	ucs_rcache_params_t params = {
		.region_struct_size = sizeof(ucs_rcache_region_t),
		.alignment = UCS_RCACHE_MIN_ALIGNMENT,
		.max_alignment = page,
		.ucm_events = 0,
		.ucm_event_priority = 1000,
		.ops = &ucx_ops,
		.context = NULL,
		.flags = UCS_RCACHE_FLAG_NO_PFN_CHECK,
		.max_regions = (unsigned long) -1,
		.max_size = SIZE_MAX,
		.max_unreleased = SIZE_MAX,
	};
	ucs_rcache_t *rc;

	if (ucs_rcache_create(&params, "bench", NULL, &rc) != UCS_OK)
		abort();
	return fill_by_hits(ucx_hit, rc, n);
}

static void
ucx_destroy(void *c)
{
	ucs_rcache_destroy(c);
}
#endif

/*
 * libfabric's util MR cache over the same registrar as mrlease's. Its
 * sources are libfabric 2.1's, which `make bench` fetches and compiles into
 * a module of their own (bench/bench.mk), loaded here at run time: the
 * program itself builds without them, and a run without them says so on
 * its RESULT line rather than dropping the peer unnoticed.
 */
static struct {
	int (*create)(const struct utilmr_config *cfg, struct utilmr **cache);
	void (*destroy)(struct utilmr *cache);
	int (*acquire)(struct utilmr *cache, uintptr_t start, uintptr_t end,
		       void **lease);
	void (*release)(struct utilmr *cache, void *lease);
	void (*invalidate)(struct utilmr *cache, uintptr_t start,
			   uintptr_t end);
} um;
static char utilmr_missing[512];

/* Loads the module; on failure fills utilmr_missing with why (the reason
 * the build recorded, or the loader's) and returns -1. */
static int
utilmr_load(void)
{
	void *h = dlopen(UTILMR_MODULE, RTLD_NOW | RTLD_LOCAL);
	FILE *f;

	if (h) {
		*(void **) &um.create = dlsym(h, "utilmr_create");
		*(void **) &um.destroy = dlsym(h, "utilmr_destroy");
		*(void **) &um.acquire = dlsym(h, "utilmr_acquire");
		*(void **) &um.release = dlsym(h, "utilmr_release");
		*(void **) &um.invalidate = dlsym(h, "utilmr_invalidate");
		if (um.create && um.destroy && um.acquire && um.release &&
		    um.invalidate)
			return 0;
	}
	f = fopen(UTILMR_MODULE_MISSING, "r");
	if (!f || !fgets(utilmr_missing, sizeof(utilmr_missing), f))
		snprintf(utilmr_missing, sizeof(utilmr_missing),
			 "%s (run make bench to fetch and build it)",
			 h ? "module lacks utilmr_*" : dlerror());
	utilmr_missing[strcspn(utilmr_missing, "\n")] = '\0';
	if (f)
		fclose(f);
	return -1;
}

struct ofi_b {
	struct utilmr *cache;
	struct creg creg;
};

static int
ofi_hit(void *c, uintptr_t s, uintptr_t e)
{
	struct ofi_b *b = c;
	void *lease;

	if (um.acquire(b->cache, s, e, &lease))
		return -1;
	um.release(b->cache, lease);
	return 0;
}

static void *
ofi_create(size_t n)
{
	struct ofi_b *b = calloc(1, sizeof(*b));
	struct utilmr_config cfg = {
		.reg = creg_registrar.reg,
		.close = creg_registrar.close,
		.ctx = &b->creg,
		.access = MRL_CACHE_ACCESS,
		.max_cnt = 2 * n + 16, /* as mrlease's max_count */
		.max_size = SIZE_MAX,
	};

	creg_init(&b->creg, NULL, CREG_NO_RECORDS);
	if (um.create(&cfg, &b->cache))
		abort();
	return fill_by_hits(ofi_hit, b, n);
}

static void
ofi_destroy(void *c)
{
	struct ofi_b *b = c;

	um.destroy(b->cache);
	free(b);
}

static int
ofi_inv(void *c, uintptr_t s, uintptr_t e)
{
	um.invalidate(((struct ofi_b *) c)->cache, s, e);
	return 0;
}

/* The peers present in this run: ofi is taken out when its module is not. */
static struct impl impls[] = {
	{"mrlease", mrl_create, mrl_destroy, mrl_hit, mrl_inv, 1},
	{"mutex_map", mxmap_create, mxmap_destroy, mxmap_hit, mxmap_inv, 0},
#ifdef HAVE_UCS
	{"ucx", ucx_create, ucx_destroy, ucx_hit, NULL, 1},
#endif
	{"ofi", ofi_create, ofi_destroy, ofi_hit, ofi_inv, 1},
	/* Last: a reference, not a peer (see the header comment). */
	{"mutex_array", mxarr_create, mxarr_destroy, mxarr_hit, mxarr_inv, 0},
};
#define NIMPL (sizeof(impls) / sizeof(impls[0]))
static size_t nimpl = NIMPL;

/* Takes the ofi peer out of impls when its module did not load. */
static void
drop_missing_peers(void)
{
	for (size_t k = 0; k < nimpl; k++) {
		if (strcmp(impls[k].name, "ofi") || !utilmr_load())
			continue;
		memmove(&impls[k], &impls[k + 1],
			(nimpl - k - 1) * sizeof(impls[0]));
		nimpl--;
		return;
	}
}

/* ---- measurements ------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#define NIDX (1u << 20)
static uint32_t *idx;

static void
fill_idx(size_t n)
{
	for (size_t i = 0; i < NIDX; i++)
		idx[i] = (uint32_t) (rng() % n);
}

static int misses;

/*
 * Each figure is timed in short batches and the median batch is kept: the
 * machine is shared (2 cores, other jobs), and a batch shorter than a
 * scheduler slice is rarely preempted, so the median batch is the cost of
 * the operation rather than of the neighbours.
 */
#define MAX_BATCHES 16384
static double batch_ns[MAX_BATCHES];

static double batches_median(size_t nb);

/* Batches of `batch` in `ops`, at most MAX_BATCHES. */
static size_t
batch_count(size_t ops, size_t batch)
{
	return ops / batch < MAX_BATCHES ? ops / batch : MAX_BATCHES;
}

static double
run_hot(const struct impl *im, void *c, size_t ops, size_t which)
{
	uintptr_t s = entry_base(which) + 64, e = s + 256;
	size_t batch = 1000, nb = batch_count(ops, batch);
	double t0;

	for (size_t b = 0; b < nb; b++) {
		t0 = now_ns();
		for (size_t i = 0; i < batch; i++)
			misses += im->hit(c, s, e) != 0;
		batch_ns[b] = (now_ns() - t0) / batch;
	}
	return batches_median(nb);
}

static double
run_rand(const struct impl *im, void *c, size_t ops)
{
	size_t batch = 256, nb = batch_count(ops, batch), k = 0;
	double t0;

	for (size_t b = 0; b < nb; b++) {
		t0 = now_ns();
		for (size_t i = 0; i < batch; i++, k++) {
			uintptr_t s = entry_base(idx[k & (NIDX - 1)]) + 64;

			misses += im->hit(c, s, s + 256) != 0;
		}
		batch_ns[b] = (now_ns() - t0) / batch;
	}
	return batches_median(nb);
}

/*
 * The machine's own memory latency, for reading the random figures: one
 * dependent load per step of a random cycle over 64 MiB of lines on
 * ordinary pages (a DRAM access and, mostly, a page walk). A random hit at
 * 1e6 entries makes two such misses (an index leaf, then the entry), less
 * what huge pages spare (the walks) and what L3 still holds (some leaves).
 */
#define CHASE_LINES ((size_t) 1 << 20)
static uint64_t *chase;

static int
chase_init(void)
{
	chase = aligned_alloc(64, CHASE_LINES * 64);
	if (!chase)
		return -1;
	for (size_t i = 0; i < CHASE_LINES; i++)
		chase[i * 8] = i;
	for (size_t i = CHASE_LINES - 1; i > 0; i--) { /* Sattolo: one cycle */
		size_t j = rng() % i;
		uint64_t t = chase[i * 8];

		chase[i * 8] = chase[j * 8];
		chase[j * 8] = t;
	}
	return 0;
}

static double
run_mem_lat(size_t ops)
{
	size_t batch = 256, nb = batch_count(ops, batch);
	uint64_t at = 0;
	double t0;

	for (size_t b = 0; b < nb; b++) {
		t0 = now_ns();
		for (size_t i = 0; i < batch; i++)
			at = chase[at * 8];
		batch_ns[b] = (now_ns() - t0) / batch;
	}
	misses += at == UINT64_MAX; /* keeps the chase */
	return batches_median(nb);
}

/* A gap between two entries, random (outside: below every entry). */
static double
run_inv(const struct impl *im, void *c, size_t ops, bool outside)
{
	size_t batch = ops >= 256 * 16 ? 256 : 1, nb = batch_count(ops, batch),
	       k = 0;
	double t0;

	for (size_t b = 0; b < nb; b++) {
		t0 = now_ns();
		for (size_t i = 0; i < batch; i++, k++) {
			uintptr_t s =
				outside ?
					ADDR0 / 2 + (k & 1023) * page :
					entry_base(idx[k & (NIDX - 1)]) + page;

			im->inv(c, s, s + page);
		}
		batch_ns[b] = (now_ns() - t0) / batch;
	}
	return batches_median(nb);
}

struct thr_arg {
	const struct impl *im;
	void *c;
	size_t ops, which;
	pthread_barrier_t *go;
};

static void *
thr_main(void *p)
{
	struct thr_arg *a = p;
	uintptr_t s = entry_base(a->which) + 64, e = s + 256;
	cpu_set_t cpus;
	int bad = 0;

	CPU_ZERO(&cpus);
	CPU_SET((int) (a->which / 1000) % (int) sysconf(_SC_NPROCESSORS_ONLN),
		&cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	pthread_barrier_wait(a->go);
	for (size_t i = 0; i < a->ops; i++)
		bad += a->im->hit(a->c, s, e) != 0;
	if (bad)
		abort();
	return NULL;
}

/* Throughput (ops/ns) of `threads` threads each hitting its own entry. */
static double
run_threads(const struct impl *im, void *c, size_t ops, int threads)
{
	pthread_barrier_t go;
	struct thr_arg a[2];
	pthread_t th[2];
	double t0;

	pthread_barrier_init(&go, NULL, threads + 1);
	for (int i = 0; i < threads; i++) {
		a[i] = (struct thr_arg){im, c, ops, 1000 * (size_t) i + 1, &go};
		pthread_create(&th[i], NULL, thr_main, &a[i]);
	}
	pthread_barrier_wait(&go);
	t0 = now_ns();
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	return threads * ops / (now_ns() - t0);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
batches_median(size_t nb)
{
	return median(batch_ns, (int) nb);
}

/* ---- figures ------------------------------------------------------------ */

enum fig { HOT, RAND, INV, INV_OUT, SCALE, BPE, NFIG };
static const char *fig_name[NFIG] = {"hit_hot",	     "hit_rand", "inv_miss",
				     "inv_miss_out", "scale2",	 "bpe"};
static const size_t sizes[] = {1000, 10000, 100000, 1000000};
#define NSIZE 4
/* result[impl][size][figure]; negative: not measured */
static double result[NIMPL][NSIZE][NFIG];
static double mem_lat = -1; /* median of run_mem_lat, taken with 1e6 */

/* One repetition's figures of one cache: what its child sends back. */
struct rep_figs {
	double v[NFIG];
	int misses;
};

/* Bytes per entry of a cache just created, in its own process. */
static double
cache_bpe(const struct impl *im, size_t n, void **c)
{
	size_t idle = mrl_cache_pool_idle_bytes(), reused = 0;
	size_t chunks = mrl_arena_mapped_bytes(), before = heap_bytes();

	*c = im->create(n);
	/* mrlease keeps closed domains' entry slabs for the next domains: the
	 * ones this cache adopted were malloc'd before `before`; charge them
	 * here. */
	if (idle > mrl_cache_pool_idle_bytes())
		reused = idle - mrl_cache_pool_idle_bytes();
	/* Huge-page chunks (mrlease past FI_MRLEASE_HUGEPAGE_AFTER) are
	 * mapped, not malloc'd: charged whole, used or not. */
	chunks = mrl_arena_mapped_bytes() - chunks;
	return (double) (heap_bytes() - before + reused + chunks) / n;
}

/* One repetition of every figure of size n on cache c. */
static void
measure_rep(const struct impl *im, void *c, size_t n, struct rep_figs *out)
{
	size_t hot_ops = (size_t) (2e6 * op_scale),
	       rand_ops = (size_t) ((n >= 1000000 ? 1e6 : 2e6) * op_scale),
	       inv_ops = (size_t) (1e6 * op_scale),
	       thr_ops = (size_t) (4e6 * op_scale);

	misses = 0;
	for (int f = 0; f < NFIG; f++)
		out->v[f] = -1;
	run_hot(im, c, hot_ops / 10, 1); /* warm */
	out->v[HOT] = run_hot(im, c, hot_ops, 1);
	out->v[RAND] = run_rand(im, c, rand_ops);
	if (n == 1000000 && im->inv) {
		size_t ops = im->inv_ops_div ? inv_ops : 200;

		out->v[INV] = run_inv(im, c, ops, false);
		out->v[INV_OUT] = run_inv(im, c, ops, true);
	}
	if (n == 1000000) {
		double t1 = run_threads(im, c, thr_ops, 1);
		double t2 = run_threads(im, c, thr_ops, 2);

		out->v[SCALE] = t2 / t1;
	}
	out->misses = misses;
}

/*
 * A cache's process: creates it (its bytes per entry the first reply),
 * then runs one repetition per request until the parent closes the pipe.
 * Its heap holds that cache alone, so neither the other caches' blocks nor
 * what earlier sizes freed decide where its entries land, and every size
 * starts from the same state in every run.
 */
static void __attribute__((noreturn))
child_serve(const struct impl *im, size_t n, int cmd, int res)
{
	struct rep_figs figs;
	void *c;
	int r;

	free(chase); /* the parent's */
	chase = NULL;
	figs.v[BPE] = cache_bpe(im, n, &c);
	if (write(res, &figs, sizeof(figs)) != sizeof(figs))
		_exit(1);
	while (read(cmd, &r, sizeof(r)) == sizeof(r)) {
		measure_rep(im, c, n, &figs);
		if (write(res, &figs, sizeof(figs)) != sizeof(figs))
			_exit(1);
	}
	im->destroy(c);
	_exit(0);
}

struct child {
	pid_t pid;
	int cmd, res; /* the parent's ends */
};

/* The seed of the workload's random entries (fill_idx) in the generation
 * being measured: the parent draws it, its children fill from it, so every
 * cache of a generation hits the same entries. */
static uint64_t idx_seed;

/* Starts a cache's process: this program again (--child), so that every
 * process gets an address-space layout of its own (a forked one would
 * share the parent's, and so would every process of a run); `older` are
 * the ones started before it, whose pipe ends it must not keep (the
 * parent's close would not reach them). */
static int
child_start(const struct impl *im, size_t n, struct child *ch,
	    const struct child *older, size_t nolder)
{
	char self[4096], sn[32], scmd[16], sres[16], sseed[32], sscale[32];
	char *argv[] = {self,  "--child", (char *) im->name,
			sn,    scmd,	  sres,
			sseed, sscale,	  NULL};
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int cmd[2], res[2];

	if (len <= 0)
		return -1;
	self[len] = '\0';
	if (pipe(cmd))
		return -1;
	if (pipe(res)) {
		close(cmd[0]);
		close(cmd[1]);
		return -1;
	}
	snprintf(sn, sizeof(sn), "%zu", n);
	snprintf(scmd, sizeof(scmd), "%d", cmd[0]);
	snprintf(sres, sizeof(sres), "%d", res[1]);
	snprintf(sseed, sizeof(sseed), "%" PRIu64, idx_seed);
	snprintf(sscale, sizeof(sscale), "%.17g", op_scale);
	fflush(stdout);
	ch->pid = fork();
	if (!ch->pid) {
		for (size_t k = 0; k < nolder; k++) {
			close(older[k].cmd);
			close(older[k].res);
		}
		close(cmd[1]);
		close(res[0]);
		execv(self, argv);
		_exit(127);
	}
	close(cmd[0]);
	close(res[1]);
	if (ch->pid < 0) {
		close(cmd[1]);
		close(res[0]);
		return -1;
	}
	ch->cmd = cmd[1];
	ch->res = res[0];
	return 0;
}

/* A cache's process (child_start's arguments): fills the workload from
 * the generation's seed, then serves. */
static int
child_main(char **argv)
{
	const struct impl *im = NULL;
	size_t n = strtoul(argv[3], NULL, 10);

	for (size_t k = 0; k < nimpl; k++)
		if (!strcmp(argv[2], impls[k].name))
			im = &impls[k];
	if (!im || !n)
		return 2;
	rng_state = strtoull(argv[6], NULL, 10);
	op_scale = strtod(argv[7], NULL);
	fill_idx(n);
	/* One CPU, the highest allowed (CACHE_BENCH_CPU), whichever cache it
	 * is: which CPU a figure lands on, and what shares its core, moved the
	 * single-threaded figures from one run to the next (bench/README.md).
	 * scale2's threads pin themselves. */
	(void) bu_pin_one_cpu("CACHE_BENCH_CPU");
	child_serve(im, n, atoi(argv[4]), atoi(argv[5]));
}

static int
child_reply(struct child *ch, struct rep_figs *figs)
{
	return read(ch->res, figs, sizeof(*figs)) == sizeof(*figs) ? 0 : -1;
}

static int
child_stop(struct child *ch)
{
	int status;

	close(ch->cmd);
	close(ch->res);
	if (waitpid(ch->pid, &status, 0) != ch->pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

/* One generation at size sizes[si]: every cache in a fresh process of its
 * own (created one after the other, so no two fill at once), the
 * repetitions alternating between them: one runs while the others wait.
 * Its figures, the median of its repetitions, go to gv[cache][figure][g];
 * the memory latency of each repetition at 1e6 to lat[]. */
static int
measure_generation(int si, int g, double gv[NIMPL][NFIG][MAX_GENS], double *lat)
{
	size_t n = sizes[si],
	       rand_ops = (size_t) ((n >= 1000000 ? 1e6 : 2e6) * op_scale);
	struct child ch[NIMPL];
	double v[NIMPL][NFIG][MAX_REPS];
	struct rep_figs figs;
	int err = 0;

	for (size_t k = 0; k < nimpl; k++) {
		if (child_start(&impls[k], n, &ch[k], ch, k) ||
		    child_reply(&ch[k], &figs))
			return -1;
		gv[k][BPE][g] = figs.v[BPE];
	}
	for (int r = 0; r < reps && !err; r++) {
		if (n == 1000000)
			lat[g * reps + r] = run_mem_lat(rand_ops);
		for (size_t k = 0; k < nimpl && !err; k++) {
			err = write(ch[k].cmd, &r, sizeof(r)) != sizeof(r) ||
			      child_reply(&ch[k], &figs);
			misses += figs.misses;
			for (int f = 0; f < NFIG; f++)
				v[k][f][r] = figs.v[f];
		}
	}
	for (size_t k = 0; k < nimpl; k++)
		err |= child_stop(&ch[k]);
	if (err)
		return -1;
	for (size_t k = 0; k < nimpl; k++)
		for (int f = 0; f < NFIG; f++)
			if (f != BPE)
				gv[k][f][g] = v[k][f][0] < 0 ?
						      -1 :
						      median(v[k][f], reps);
	return 0;
}

/* The smallest (sign 1) or largest (sign -1) of n values: the generation
 * the machine and the process's layout disturbed least. */
static double
best_of(const double *v, int n, int sign)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = sign * v[i] < sign * m ? v[i] : m;
	return m;
}

/* Every cache at every size, over `gens` generations of processes, each
 * generation going through the sizes in turn, so that a figure's
 * generations are spread over the whole run. A process keeps a bias of its
 * own for its life (where its heap landed in physical memory and the
 * processor's caches), and so does a stretch of the run (what the host ran
 * beside the VM then): the same cache's hot hit came out about 20 or about
 * 40 ns from one process to the next, and one size's five generations run
 * back to back were once all slow. A figure is therefore the best
 * generation's, the smallest time (the largest scale2, a throughput
 * ratio), the least disturbed; bytes per entry, which does not move, the
 * median. */
static int
measure_all(void)
{
	static double gv[NSIZE][NIMPL][NFIG][MAX_GENS];
	double lat[MAX_GENS * MAX_REPS];

	for (int g = 0; g < gens; g++) {
		for (int si = 0; si < NSIZE; si++) {
			idx_seed = rng();
			if (measure_generation(si, g, gv[si], lat)) {
				printf("# a cache's process failed at %zu "
				       "entries\n",
				       sizes[si]);
				return -1;
			}
		}
	}
	mem_lat = median(lat, gens * reps);
	for (int si = 0; si < NSIZE; si++) {
		for (size_t k = 0; k < nimpl; k++) {
			for (int f = 0; f < NFIG; f++) {
				double *v = gv[si][k][f];

				if (v[0] < 0)
					result[k][si][f] = -1;
				else if (f == BPE)
					result[k][si][f] = median(v, gens);
				else
					result[k][si][f] = best_of(
						v, gens, f == SCALE ? -1 : 1);
			}
		}
	}
	return 0;
}

static const char *
size_tag(int si)
{
	static const char *t[] = {"1e3", "1e4", "1e5", "1e6"};

	return t[si];
}

/*
 * A driver for callgrind/cachegrind (not a measurement by itself):
 *   cache_bench --drive IMPL hot|rand N OPS
 * builds IMPL with N entries, then runs OPS / 10 hits to warm up and OPS hits
 * in drive_loop(), so
 *   valgrind --tool=callgrind '--toggle-collect=drive_loop*' bench/cache_bench
 * --drive ... gives instructions per operation (Ir / (1.1 * OPS); the pattern
 * because the compiler may clone it as drive_loop.constprop.0), and
 * --cache-sim=yes the last-level misses per operation, of the same workload
 * as the figures.
 */
static __attribute__((noinline)) void
drive_loop(const struct impl *im, void *c, size_t n, size_t ops, bool hot)
{
	for (size_t k = 0; k < ops; k++) {
		uintptr_t s = entry_base(hot ? 1 : idx[k & (NIDX - 1)]) + 64;

		misses += im->hit(c, s, s + 256) != 0;
	}
	(void) n;
}

static int
drive(int argc, char **argv)
{
	const struct impl *im = NULL;
	size_t n, ops;
	double t0;
	void *c;

	if (argc != 6)
		return 2;
	for (size_t k = 0; k < nimpl; k++)
		if (!strcmp(argv[2], impls[k].name))
			im = &impls[k];
	n = strtoul(argv[4], NULL, 0);
	ops = strtoul(argv[5], NULL, 0);
	if (!im || !n)
		return 2;
	fill_idx(n);
	c = im->create(n);
	if (!strcmp(argv[3], "inv") || !strcmp(argv[3], "inv_out")) {
		if (!im->inv)
			return 2;
		run_inv(im, c, ops / 10,
			!strcmp(argv[3], "inv_out")); /* warm */
		printf("drove %zu %s %s ops on %zu entries, %.2f median "
		       "batch\n",
		       ops, im->name, argv[3], n,
		       run_inv(im, c, ops, !strcmp(argv[3], "inv_out")));
		im->destroy(c);
		return 0;
	}
	drive_loop(im, c, n, ops / 10, !strcmp(argv[3], "hot")); /* warm */
	t0 = now_ns();
	drive_loop(im, c, n, ops, !strcmp(argv[3], "hot"));
	t0 = (now_ns() - t0) / (double) ops;
	printf("drove %zu %s %s ops on %zu entries, %d missed, %.2f ns/op "
	       "mean, %.2f median "
	       "batch\n",
	       ops, im->name, argv[3], n, misses, t0,
	       strcmp(argv[3], "hot") ? run_rand(im, c, ops) :
					run_hot(im, c, ops, 1));
	im->destroy(c);
	return misses ? 1 : 0;
}

int
main(int argc, char **argv)
{
	char line[8192], thp[32];
	size_t len = 0;
	const struct impl *peer;
	double start_load;

	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		gens = 3;
		op_scale = 0.2;
	}
	gens = env_count("CACHE_BENCH_GENERATIONS", gens, MAX_GENS);
	reps = env_count("CACHE_BENCH_REPS", reps, MAX_REPS);
	page = (size_t) sysconf(_SC_PAGESIZE);
	idx = malloc(NIDX * sizeof(*idx));
	if (!idx)
		return 1;
	drop_missing_peers();
	if (argc == 8 && !strcmp(argv[1], "--child"))
		return child_main(argv);
	if (argc > 1 && !strcmp(argv[1], "--drive"))
		return drive(argc, argv);
	if (chase_init())
		return 1;
	start_load = load1();
	thp_mode(thp, sizeof(thp));
	printf("# cache_bench: the best of %d generations of processes (each "
	       "cache in a fresh process of its own per size and generation), "
	       "each the median of %d alternating repetitions; ns/op unless "
	       "noted; load average %.2f at start; transparent huge pages: "
	       "%s\n",
	       gens, reps, start_load, thp);
	if (*utilmr_missing)
		printf("# WARNING: the ofi peer (libfabric's util MR cache) is "
		       "MISSING from this run: %s\n",
		       utilmr_missing);
	if (measure_all())
		return 1;
	if (misses) {
		printf("# %d lookups missed: the workload is broken\n", misses);
		return 1;
	}

	printf("# mutex_array is a reference, not a peer: an idealised ordered "
	       "map (a sorted\n"
	       "# array, O(n) inserts) that no real map reaches, a lower "
	       "bound\n");
	printf("%-14s", "figure");
	for (size_t k = 0; k < nimpl; k++)
		printf(" %12s", impls[k].name);
	for (size_t k = 1; k < nimpl; k++)
		printf("   gain_vs_%-5s", impls[k].name);
	printf("\n");
	for (int si = 0; si < NSIZE; si++) {
		for (int f = 0; f < NFIG; f++) {
			char name[32];

			if (result[0][si][f] < 0)
				continue;
			snprintf(name, sizeof(name), "%s_%s", fig_name[f],
				 size_tag(si));
			printf("%-14s", name);
			for (size_t k = 0; k < nimpl; k++)
				if (result[k][si][f] < 0)
					printf(" %12s", "n/a");
				else
					printf(" %12.2f", result[k][si][f]);
			/* ratio > 1: mrlease better (scale2: higher is better)
			 */
			for (size_t k = 1; k < nimpl; k++) {
				double x = result[0][si][f],
				       y = result[k][si][f];

				if (y < 0)
					printf(" %9s_%-4s", "n/a",
					       impls[k].name);
				else
					printf(" %8.2fx_%-4s",
					       f == SCALE ? x / y : y / x,
					       impls[k].name);
			}
			printf("\n");
		}
	}

	printf("# memory latency (dependent random load over 64 MiB, 4 KiB "
	       "pages): %.1f ns;\n"
	       "# a random hit at 1e6 costs that many of them:",
	       mem_lat);
	for (size_t k = 0; k < nimpl; k++)
		printf(" %s %.2f", impls[k].name,
		       result[k][NSIZE - 1][RAND] / mem_lat);
	printf("\n");
	len += snprintf(line + len, sizeof(line) - len,
			"RESULT ofi_peer=%s load1_start=%.2f load1=%.2f thp=%s "
			"mem_lat=%.1f",
			*utilmr_missing ? "MISSING" : "libfabric-2.1.0",
			start_load, load1(), thp, mem_lat);
	for (int si = 0; si < NSIZE; si++) {
		for (int f = 0; f < NFIG; f++) {
			if (result[0][si][f] < 0)
				continue;
			for (size_t k = 0; k < nimpl; k++) {
				if (result[k][si][f] < 0)
					continue;
				len += snprintf(line + len, sizeof(line) - len,
						" %s_%s_%s=%.2f",
						k ? impls[k].name : "mrl",
						fig_name[f], size_tag(si),
						result[k][si][f]);
			}
			for (size_t k = 1; k < nimpl; k++) {
				double x = result[0][si][f],
				       y = result[k][si][f];

				peer = &impls[k];
				if (y > 0)
					len += snprintf(
						line + len, sizeof(line) - len,
						" ratio_%s_%s_%s=%.2f",
						peer->name, fig_name[f],
						size_tag(si),
						f == SCALE ? x / y : y / x);
			}
		}
	}
	printf("%s\n", line);
	free(chase);
	free(idx);
	return 0;
}
