/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The overlap filter (rules in mrl_filter.h): per-page occupancy counts of
 * every live entry of the cache, so that an invalidate of pages no entry
 * touches returns after a few loads without entering a read section or
 * walking an index (allocators purge far more pages than were ever
 * registered).
 *
 * Three levels over address bits 46..12: a directory of the GiBs some entry
 * touches (an open-addressing hash table keyed by the GiB number, grown by
 * doubling, at least half empty), each slot counting entries covering the
 * whole GiB and pointing to a mid node; a mid node counts entries covering
 * whole 2 MiB blocks and points to leaves of 512 page counts. An entry adds
 * one at the coarsest level that it fully covers, so a 1 GiB arena costs one
 * count. Its size follows the cache's: a slot per GiB touched, a mid node
 * (4.6 KB) per GiB holding a partial entry, a leaf (512 B) per 2 MiB block
 * holding one; a cache of a few entries pays about 5 KB, none before its
 * first entry. A lookup is as deep as a radix table's: the directory
 * pointer, a slot, a mid node, a leaf.
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
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "mrl_filter.h"
#include "mrl_readers.h"
#include "mrl_slab.h"

#define MRL_FLT_FAN	512
#define MRL_FLT_PAGE	12
#define MRL_FLT_MID	21
#define MRL_FLT_TOP	30
#define MRL_FLT_LIMIT	((uintptr_t) 1 << 47)
#define MRL_FLT_SCAN	256 /* pages checked before answering "maybe" */
#define MRL_FLT_DIR_MIN 8 /* directory slots at first */

struct mrl_flt_leaf {
	atomic_uchar page[MRL_FLT_FAN];
};

struct mrl_flt_mid {
	_Atomic(struct mrl_flt_leaf *) leaf[MRL_FLT_FAN];
	atomic_uchar full[MRL_FLT_FAN]; /* entries covering a 2 MiB block */
};

struct mrl_flt_slot {
	atomic_uintptr_t key; /* GiB number + 1; 0: empty */
	_Atomic(struct mrl_flt_mid *) mid; /* NULL until a partial entry */
	atomic_uchar full; /* entries covering the GiB */
};

struct mrl_flt_dir {
	uintptr_t mask; /* slots - 1 */
	size_t used; /* keys (under flt_lock) */
	struct mrl_flt_dir *older; /* replaced, freed with the cache */
	struct mrl_flt_slot slot[];
};

static inline unsigned
flt_idx(uintptr_t a, int shift)
{
	return (unsigned) (a >> shift) & (MRL_FLT_FAN - 1);
}

static inline uintptr_t
flt_next(uintptr_t a, int shift)
{
	return (a | (((uintptr_t) 1 << shift) - 1)) + 1;
}

static inline bool
flt_covers(uintptr_t a, uintptr_t end, int shift)
{
	uintptr_t size = (uintptr_t) 1 << shift;

	return !(a & (size - 1)) && end - a >= size;
}

static inline void
flt_count(atomic_uchar *c, int delta)
{
	unsigned v = atomic_load_explicit(c, memory_order_relaxed);

	if (v < 255)
		atomic_store_explicit(c, (unsigned char) (v + delta),
				      memory_order_relaxed);
}

/* The slot of GiB `gib` in `dir`, or NULL. Linear probing; the table is at
 * most half full, so an empty slot ends every probe. */
static inline struct mrl_flt_slot *
flt_dir_find(struct mrl_flt_dir *dir, uintptr_t gib)
{
	uintptr_t k;

	for (uintptr_t i = gib & dir->mask;; i = (i + 1) & dir->mask) {
		k = atomic_load_explicit(&dir->slot[i].key,
					 memory_order_acquire);
		if (k == gib + 1)
			return &dir->slot[i];
		if (!k)
			return NULL;
	}
}

/* A new key (flt_lock held): its fields first, the key last (release). */
static struct mrl_flt_slot *
flt_dir_put(struct mrl_flt_dir *dir, uintptr_t gib, struct mrl_flt_mid *mid,
	    unsigned full)
{
	uintptr_t i = gib & dir->mask;

	while (atomic_load_explicit(&dir->slot[i].key, memory_order_relaxed))
		i = (i + 1) & dir->mask;
	atomic_store_explicit(&dir->slot[i].mid, mid, memory_order_relaxed);
	atomic_store_explicit(&dir->slot[i].full, (unsigned char) full,
			      memory_order_relaxed);
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
static struct mrl_flt_slot *
flt_install(struct mrl_cache *cache, uintptr_t gib, bool want_mid)
{
	struct mrl_flt_dir *dir, *grown = NULL;
	struct mrl_flt_mid *mid = NULL;
	struct mrl_flt_slot *slot;
	uintptr_t want = 0;
	bool room;

	for (;;) {
		pthread_mutex_lock(&cache->flt_lock);
		dir = atomic_load_explicit(&cache->flt.dir,
					   memory_order_relaxed);
		slot = dir ? flt_dir_find(dir, gib) : NULL;
		room = dir && 2 * (dir->used + 1) <= dir->mask + 1;
		if (slot &&
		    (!want_mid ||
		     atomic_load_explicit(&slot->mid, memory_order_relaxed)))
			break;
		if (slot && mid) { /* the key is there, its mid node was not */
			atomic_store_explicit(&slot->mid, mid,
					      memory_order_release);
			mid = NULL;
			break;
		}
		if (!slot && room && (!want_mid || mid)) {
			slot = flt_dir_put(dir, gib, mid, 0);
			mid = NULL;
			break;
		}
		want = slot || room ? 0 :
		       dir	    ? 2 * (dir->mask + 1) :
				      MRL_FLT_DIR_MIN;
		if (want && grown && grown->mask + 1 >= want) {
			/* Full: the copy in a write section, then publish. */
			mrl_readers_write_enter(cache);
			for (uintptr_t i = 0; dir && i <= dir->mask; i++) {
				uintptr_t k = atomic_load_explicit(
					&dir->slot[i].key,
					memory_order_relaxed);

				if (k)
					flt_dir_put(
						grown, k - 1,
						atomic_load_explicit(
							&dir->slot[i].mid,
							memory_order_relaxed),
						atomic_load_explicit(
							&dir->slot[i].full,
							memory_order_relaxed));
			}
			grown->older = dir;
			atomic_store_explicit(&cache->flt.dir, grown,
					      memory_order_release);
			mrl_readers_write_exit(cache);
			grown = NULL;
			pthread_mutex_unlock(&cache->flt_lock);
			continue;
		}
		pthread_mutex_unlock(&cache->flt_lock);
		if (want_mid && !mid && !(mid = mrl_slab_calloc(sizeof(*mid))))
			goto err;
		if (want && (!grown || grown->mask + 1 < want)) {
			free(grown);
			grown = mrl_slab_calloc(sizeof(*grown) +
						want * sizeof(grown->slot[0]));
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
static inline struct mrl_flt_slot *
flt_slot(struct mrl_cache *cache, uintptr_t gib)
{
	struct mrl_flt_dir *dir =
		atomic_load_explicit(&cache->flt.dir, memory_order_acquire);

	return dir ? flt_dir_find(dir, gib) : NULL;
}

/* The leaf at *slot, installed first when `install` (a zeroed one, by CAS, no
 * lock held); NULL if missing or out of memory. */
static struct mrl_flt_leaf *
flt_leaf(_Atomic(struct mrl_flt_leaf *) *slot, bool install)
{
	struct mrl_flt_leaf *expected = NULL,
			    *n = atomic_load_explicit(slot,
						      memory_order_acquire);

	if (n || !install)
		return n;
	n = mrl_slab_calloc(sizeof(*n));
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
void
mrl_filter_update(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi,
		  int delta)
{
	bool install = delta == 0;
	struct mrl_flt_slot *slot;
	struct mrl_flt_mid *mid;
	struct mrl_flt_leaf *leaf;
	uintptr_t a;

	/* Given up (always "maybe"): no more nodes to install or count in. */
	if (atomic_load_explicit(&cache->flt.broken, memory_order_relaxed))
		return;
	if (hi > MRL_FLT_LIMIT) {
		if (delta)
			atomic_store_explicit(
				&cache->flt.unfiltered,
				atomic_load_explicit(&cache->flt.unfiltered,
						     memory_order_relaxed) +
					delta,
				memory_order_relaxed);
		return;
	}
	for (a = lo & ~(((uintptr_t) 1 << MRL_FLT_PAGE) - 1); a < hi;) {
		bool whole = flt_covers(a, hi, MRL_FLT_TOP);

		slot = flt_slot(cache, a >> MRL_FLT_TOP);
		if (install &&
		    (!slot ||
		     (!whole &&
		      !atomic_load_explicit(&slot->mid, memory_order_acquire))))
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
				flt_count(&mid->full[flt_idx(a, MRL_FLT_MID)],
					  delta);
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
		a += (uintptr_t) 1 << MRL_FLT_PAGE;
	}
	return;
broken:
	atomic_store_explicit(&cache->flt.broken, true, memory_order_relaxed);
}

/* False only if no live entry of the cache touches a page of [lo, hi). */
bool
mrl_filter_maybe(struct mrl_cache *cache, uintptr_t lo, uintptr_t hi)
{
	struct mrl_flt_dir *dir;
	struct mrl_flt_slot *slot;
	struct mrl_flt_mid *mid;
	struct mrl_flt_leaf *leaf;
	unsigned scanned = 0;
	uintptr_t a;

	if (hi > MRL_FLT_LIMIT ||
	    atomic_load_explicit(&cache->flt.unfiltered,
				 memory_order_relaxed) ||
	    atomic_load_explicit(&cache->flt.broken, memory_order_relaxed))
		return true;
	dir = atomic_load_explicit(&cache->flt.dir, memory_order_acquire);
	if (!dir)
		return false;
	for (a = lo & ~(((uintptr_t) 1 << MRL_FLT_PAGE) - 1); a < hi && a;) {
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
		a += (uintptr_t) 1 << MRL_FLT_PAGE;
	}
	return false;
}

void
mrl_filter_free(struct mrl_cache *cache)
{
	struct mrl_flt_dir *dir = atomic_load(&cache->flt.dir), *older;
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
