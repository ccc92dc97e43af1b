/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The interval index of a cache domain (mrl_btree.c): a B+tree of entries
 * keyed by base, each inner slot carrying the max end of its subtree.
 *
 * Rules it keeps. Bases are unique per tree. In every node the used keys
 * are strictly increasing and unused keys are UINTPTR_MAX (so searches run
 * branch free over all slots); key[i] of an inner node is a lower bound of
 * child i's keys (key[0] is never compared) and max_end[i] the largest end
 * below child i; every leaf is at the same depth, `height` levels down.
 * Structural changes take nodes from, and give them back to, a reserve the
 * caller filled beforehand (mrl_btree_need says how many an insert can
 * take): the tree itself never allocates, so it can change under a lock
 * that forbids malloc. It does no locking: the cache's write sections
 * serialise changes, its read sections let lookups run beside none.
 *
 * The predecessor search (mrl_btree_find_pred) is inline: it is the index
 * walk of every lookup that misses the hot slots.
 */
#ifndef MRL_BTREE_H
#define MRL_BTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mrl_cache.inl"

#define MRL_BT_FAN	 16
#define MRL_BT_MAX_DEPTH 12 /* 16^12 entries: unreachable */
#define MRL_BT_KEEP	 4 /* reserve nodes kept after a domain closes */
#define MRL_BT_LINE	 64

/* Line-aligned allocations: keys in two lines, pointers in the next two
 * (all a predecessor search reads), the header after them (writers and the
 * fallback search only). A leaf is 264 bytes: 16.5 bytes per entry. */
struct mrl_btnode {
	uintptr_t key[MRL_BT_FAN]; /* base, or lower bound */
	void *ptr[MRL_BT_FAN]; /* leaf: registration; inner: node */
	uint16_t count;
	bool leaf;
};

/* Inner nodes add the max end of each child's subtree. */
struct mrl_btinner {
	struct mrl_btnode node;
	uintptr_t max_end[MRL_BT_FAN];
};

/* One domain's index. */
struct mrl_btree {
	struct mrl_btnode *root; /* NULL: empty */
	unsigned height; /* levels, leaves included */
};

/* Nodes structural changes take and give back (a chain through ptr[0]),
 * per kind: [0] inner, [1] leaves. */
struct mrl_btree_reserve {
	struct mrl_btnode *spare[2];
	unsigned nspare[2];
};

static inline size_t
mrl_btree_node_size(bool leaf)
{
	return leaf ? sizeof(struct mrl_btnode) : sizeof(struct mrl_btinner);
}

/* Lines of a node the predecessor search reads: keys and pointers (not the
 * header, not the max ends). */
static inline void
mrl_btree_prefetch_search(const struct mrl_btnode *n)
{
	const char *k = (const char *) n->key, *p = (const char *) n->ptr;

	__builtin_prefetch(k);
	__builtin_prefetch(k + MRL_BT_LINE);
	__builtin_prefetch(p);
	__builtin_prefetch(p + MRL_BT_LINE);
}

/* The largest i in [1, 15] with key[i] <= k, else 0 (unused keys are
 * UINTPTR_MAX): a quaternary search, two dependent rounds of three
 * independent compares, no branches. */
static inline int
mrl_btree_search16(const uintptr_t *key, uintptr_t k)
{
	int q = ((key[4] <= k) + (key[8] <= k) + (key[12] <= k)) << 2;

	return q + (key[q + 1] <= k) + (key[q + 2] <= k) + (key[q + 3] <= k);
}

/*
 * The usual hit: the entry with the nearest base <= start, if it reaches end.
 * A descent of `height` levels, one quaternary search per node, the next
 * node's search lines prefetched as soon as its address is known. NULL means
 * "not the predecessor": the caller falls back to mrl_btree_find_cover (a
 * wide entry further left, or no cover at all).
 */
static inline struct mrl_registration *
mrl_btree_find_pred(const struct mrl_btree *t, uintptr_t start, uintptr_t end)
{
	const struct mrl_btnode *n = t->root;
	struct mrl_registration *e;
	unsigned height = t->height;
	int i;

	if (__builtin_expect(!n, 0))
		return NULL;
	for (; height > 1; height--) {
		n = n->ptr[mrl_btree_search16(n->key, start)];
		mrl_btree_prefetch_search(n);
	}
	i = mrl_btree_search16(n->key, start);
	if (__builtin_expect(n->key[i] > start, 0)) /* i == 0, key[0] > start */
		return NULL;
	e = n->ptr[i];
	return e->end >= end ? e : NULL;
}

/* ---- queries (a read section or the writer's lock) ---------------------- */

/* Any entry with base <= start and end >= end. */
struct mrl_registration *mrl_btree_find_cover(const struct mrl_btree *t,
					      uintptr_t start, uintptr_t end);

/* Any entry overlapping [start, end): base < end and end > start. */
struct mrl_registration *mrl_btree_find_overlap(const struct mrl_btree *t,
						uintptr_t start, uintptr_t end);

/* The entry at exactly `base`, or NULL. */
struct mrl_registration *mrl_btree_find_base(const struct mrl_btree *t,
					     uintptr_t base);

/* The entry at exactly `base` if it reaches `end`. */
struct mrl_registration *mrl_btree_find_based(const struct mrl_btree *t,
					      uintptr_t base, uintptr_t end);

/* The first entry with base > key, or >= key when !after (ordered walks,
 * the CLOCK hand). */
struct mrl_registration *mrl_btree_successor(const struct mrl_btree *t,
					     uintptr_t key, bool after);

/* ---- changes (the writer's lock and write section) ---------------------- */

/* Nodes an insert at `base` can take from the reserve: need[0] inner,
 * need[1] leaves. */
void mrl_btree_need(const struct mrl_btree *t, uintptr_t base,
		    unsigned need[2]);

/* Index e at e->base, which no entry of t has: the reserve must hold what
 * mrl_btree_need asked for. */
void mrl_btree_insert(struct mrl_btree *t, struct mrl_btree_reserve *res,
		      struct mrl_registration *e);

/* Take the entry at `base` out (nothing if none); emptied nodes go back to
 * the reserve. */
void mrl_btree_remove(struct mrl_btree *t, struct mrl_btree_reserve *res,
		      uintptr_t base);

/* Empty the tree: every node back to the reserve, every entry onto *chain
 * (through its cold `next`). */
void mrl_btree_give_all(struct mrl_btree *t, struct mrl_btree_reserve *res,
			struct mrl_registration **chain);

/* ---- node reserve ------------------------------------------------------- */

/* A new node for the reserve (zeroed, line-aligned; through the cache's
 * allocations, so fault injection reaches it): no lock may be held. */
struct mrl_btnode *mrl_btree_node_alloc(bool leaf, size_t huge_after);

/* Put a node (new or given back) into the reserve. */
void mrl_btree_reserve_give(struct mrl_btree_reserve *res,
			    struct mrl_btnode *n);

/* Take every node beyond `keep` of each kind out of the reserve, as a chain
 * for mrl_btree_free_chain (called after the lock is dropped). */
struct mrl_btnode *mrl_btree_reserve_trim(struct mrl_btree_reserve *res,
					  unsigned keep);

void mrl_btree_free_chain(struct mrl_btnode *chain);

/* ---- invariants --------------------------------------------------------- */

/* The rules above on the nodes from the root to the leaf holding (or that
 * would hold) `base`: cheap, for after each change in debug builds.
 * Returns true when they hold. */
bool mrl_btree_check_path(const struct mrl_btree *t, uintptr_t base);

/* The rules above on the whole tree, and `count` entries in it (SIZE_MAX:
 * any): for tests. Returns true when they hold. */
bool mrl_btree_check(const struct mrl_btree *t, size_t count);

#endif /* MRL_BTREE_H */
