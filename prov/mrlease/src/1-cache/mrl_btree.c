/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The interval index (rules in mrl_btree.h): a B+tree keyed by base, each
 * inner child slot carrying the max end of its subtree, so a covering or
 * overlap query prunes whole subtrees. Fanout 16 keeps a million entries
 * within five levels whose upper three stay in cache. Leaves hold only bases
 * and entry pointers (an entry's end is read from the entry, which a lease
 * touches anyway). Removals do not merge siblings: an emptied node is
 * unlinked, the root collapses. Nodes come from the caller's reserve and
 * return to it; this file never takes a lock and allocates only in
 * mrl_btree_node_alloc.
 */
#include "config.h"

#include <string.h>

#include "mrl_arena.h"
#include "mrl_assert.h"
#include "mrl_btree.h"
#include "mrl_slab.h"

struct mrl_btpath {
	struct mrl_btnode *node[MRL_BT_MAX_DEPTH];
	int idx[MRL_BT_MAX_DEPTH];
	int depth;
};

/* Max end below slot i: the entry's end in a leaf, the subtree's otherwise. */
static inline uintptr_t
bt_max(const struct mrl_btnode *n, int i)
{
	return n->leaf ? ((const struct mrl_registration *) n->ptr[i])->end :
			 ((const struct mrl_btinner *) n)->max_end[i];
}

static inline void
bt_set_max(struct mrl_btnode *n, int i, uintptr_t max_end)
{
	if (!n->leaf)
		((struct mrl_btinner *) n)->max_end[i] = max_end;
}

/* Child of an inner node whose range holds k: the number of bounds <= k past
 * key[0]. Branch-free over all slots: no mispredicted exits, so independent
 * lookups overlap their misses. */
static inline int
bt_child(const struct mrl_btnode *n, uintptr_t k)
{
	int c = 0;

	for (int i = 1; i < MRL_BT_FAN; i++)
		c += n->key[i] <= k;
	return c;
}

/* Number of keys <= k in a leaf (the predecessor is that minus one). */
static inline int
bt_rank(const struct mrl_btnode *n, uintptr_t k)
{
	int c = 0;

	for (int i = 0; i < MRL_BT_FAN; i++)
		c += n->key[i] <= k;
	return c;
}

static uintptr_t
bt_node_max(const struct mrl_btnode *n)
{
	uintptr_t m = 0;

	for (int i = 0; i < n->count; i++)
		if (bt_max(n, i) > m)
			m = bt_max(n, i);
	return m;
}

/* A node's lines at once, so the pointer line a search needs is not a second
 * dependent miss after the key lines. */
static inline void
bt_prefetch(const struct mrl_btnode *n)
{
	for (size_t off = 0; off < mrl_btree_node_size(false);
	     off += MRL_BT_LINE)
		__builtin_prefetch((const char *) n + off);
}

static unsigned
bt_height(const struct mrl_btnode *n)
{
	unsigned h = 0;

	for (; n; n = n->leaf ? NULL : n->ptr[0])
		h++;
	return h;
}

/* ---- queries ------------------------------------------------------------ */

/* Any entry in the subtree with end >= end (the caller knows one exists). */
static struct mrl_registration *
bt_any_end(const struct mrl_btnode *n, uintptr_t end)
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
 * In a node, children left of the one holding `start` have every base <=
 * start, so their max end alone says whether they hold a cover; only the
 * child holding `start` needs a recursive look. In a leaf the predecessor is
 * tried first (the usual hit), then entries further left (a wide entry
 * behind a narrow one).
 */
static struct mrl_registration *
bt_find_cover(const struct mrl_btnode *n, uintptr_t start, uintptr_t end)
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

struct mrl_registration *
mrl_btree_find_cover(const struct mrl_btree *t, uintptr_t start, uintptr_t end)
{
	return bt_find_cover(t->root, start, end);
}

/* Children (and leaf slots) left of the one holding end - 1 have every base
 * < end; the nearest ones are tried first. */
static struct mrl_registration *
bt_find_overlap(const struct mrl_btnode *n, uintptr_t start, uintptr_t end)
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
	if (bt_max(n, i) > start &&
	    (r = bt_find_overlap(n->ptr[i], start, end)))
		return r;
	for (i--; i >= 0; i--)
		if (bt_max(n, i) > start)
			return bt_any_end(n->ptr[i], start + 1);
	return NULL;
}

struct mrl_registration *
mrl_btree_find_overlap(const struct mrl_btree *t, uintptr_t start,
		       uintptr_t end)
{
	return bt_find_overlap(t->root, start, end);
}

/* Descend to the leaf that holds (or would hold) base, recording the path. */
static struct mrl_btnode *
bt_descend(struct mrl_btnode *n, uintptr_t base, struct mrl_btpath *path)
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

struct mrl_registration *
mrl_btree_find_base(const struct mrl_btree *t, uintptr_t base)
{
	struct mrl_btpath path;
	struct mrl_btnode *leaf;

	if (!t->root)
		return NULL;
	leaf = bt_descend(t->root, base, &path);
	for (int i = 0; i < leaf->count; i++)
		if (leaf->key[i] == base)
			return leaf->ptr[i];
	return NULL;
}

struct mrl_registration *
mrl_btree_find_based(const struct mrl_btree *t, uintptr_t base, uintptr_t end)
{
	struct mrl_registration *e = mrl_btree_find_base(t, base);

	return e && e->end >= end ? e : NULL;
}

struct mrl_registration *
mrl_btree_successor(const struct mrl_btree *t, uintptr_t key, bool after)
{
	const struct mrl_btnode *path[MRL_BT_MAX_DEPTH], *n = t->root;
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
		/* Past this leaf: the next subtree to the right, leftmost leaf.
		 */
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

/* ---- node reserve ------------------------------------------------------- */

static struct mrl_btnode *
bt_node_take(struct mrl_btree_reserve *res, bool leaf)
{
	struct mrl_btnode *n = res->spare[leaf];

	mrl_assert(n != NULL && res->nspare[leaf] > 0);
	res->spare[leaf] = n->ptr[0];
	res->nspare[leaf]--;
	memset(n, 0, mrl_btree_node_size(leaf));
	for (int i = 0; i < MRL_BT_FAN; i++)
		n->key[i] = UINTPTR_MAX; /* unused: never <= a searched key */
	n->leaf = leaf;
	return n;
}

void
mrl_btree_reserve_give(struct mrl_btree_reserve *res, struct mrl_btnode *n)
{
	n->ptr[0] = res->spare[n->leaf];
	res->spare[n->leaf] = n;
	res->nspare[n->leaf]++;
}

struct mrl_btnode *
mrl_btree_node_alloc(bool leaf, size_t huge_after)
{
	struct mrl_btnode *n =
		mrl_slab_alloc_lines(mrl_btree_node_size(leaf), huge_after);

	if (n)
		n->leaf = leaf;
	return n;
}

struct mrl_btnode *
mrl_btree_reserve_trim(struct mrl_btree_reserve *res, unsigned keep)
{
	struct mrl_btnode *chain = NULL, *n;

	for (int leaf = 0; leaf < 2; leaf++) {
		while (res->nspare[leaf] > keep) {
			n = res->spare[leaf];
			res->spare[leaf] = n->ptr[0];
			res->nspare[leaf]--;
			n->ptr[0] = chain;
			chain = n;
		}
	}
	return chain;
}

void
mrl_btree_free_chain(struct mrl_btnode *chain)
{
	struct mrl_btnode *n;

	while (chain) {
		n = chain;
		chain = n->ptr[0];
		mrl_arena_free(n, mrl_btree_node_size(n->leaf));
	}
}

/*
 * Nodes an insert at `base` takes from the reserve: none when its leaf has
 * room; else a leaf, an inner node per full level above it, and a new root
 * when every level is full. A replacement at the same base removes the old
 * entry first; that removal gives back every node it unlinks (an emptied
 * leaf, each emptied ancestor, a collapsed root), and the first ancestor it
 * leaves non-empty lost a child, so an insert sent elsewhere by it splits at
 * most the levels that were given back: the estimate on the index before
 * the removal is enough.
 */
void
mrl_btree_need(const struct mrl_btree *t, uintptr_t base, unsigned need[2])
{
	const struct mrl_btnode *path[MRL_BT_MAX_DEPTH], *n = t->root;
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
		need[0]++; /* the root splits: a new root */
}

/* ---- changes ------------------------------------------------------------ */

/* Recompute the max ends along the path to base after a change below. */
static void
bt_fix_path(struct mrl_btnode *root, uintptr_t base)
{
	struct mrl_btpath path;

	if (!root || root->leaf)
		return;
	bt_descend(root, base, &path);
	for (int d = path.depth - 1; d >= 0; d--)
		bt_set_max(path.node[d], path.idx[d],
			   bt_node_max(path.node[d]->ptr[path.idx[d]]));
}

static void
bt_insert_at(struct mrl_btnode *n, int pos, uintptr_t key, uintptr_t max_end,
	     void *ptr)
{
	int move = n->count - pos;

	memmove(&n->key[pos + 1], &n->key[pos], move * sizeof(n->key[0]));
	memmove(&n->ptr[pos + 1], &n->ptr[pos], move * sizeof(n->ptr[0]));
	if (!n->leaf)
		memmove(&((struct mrl_btinner *) n)->max_end[pos + 1],
			&((struct mrl_btinner *) n)->max_end[pos],
			move * sizeof(uintptr_t));
	n->key[pos] = key;
	n->ptr[pos] = ptr;
	bt_set_max(n, pos, max_end);
	n->count++;
}

static void
bt_remove_at(struct mrl_btnode *n, int pos)
{
	int move = n->count - pos - 1;

	memmove(&n->key[pos], &n->key[pos + 1], move * sizeof(n->key[0]));
	memmove(&n->ptr[pos], &n->ptr[pos + 1], move * sizeof(n->ptr[0]));
	if (!n->leaf)
		memmove(&((struct mrl_btinner *) n)->max_end[pos],
			&((struct mrl_btinner *) n)->max_end[pos + 1],
			move * sizeof(uintptr_t));
	n->count--;
	n->key[n->count] = UINTPTR_MAX;
}

/*
 * Insert (key, max_end, ptr) at `pos` of `n`, splitting full nodes up the
 * path. An insert at the end of a full node moves nothing (the new slot
 * starts the right sibling), so ascending inserts leave full leaves.
 */
static void
bt_insert_up(struct mrl_btree_reserve *res, struct mrl_btnode **root,
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
		right = bt_node_take(res, n->leaf);
		mid = pos == MRL_BT_FAN ? MRL_BT_FAN : MRL_BT_FAN / 2;
		right->count = (uint16_t) (MRL_BT_FAN - mid);
		memcpy(right->key, &n->key[mid],
		       right->count * sizeof(n->key[0]));
		memcpy(right->ptr, &n->ptr[mid],
		       right->count * sizeof(n->ptr[0]));
		if (!n->leaf)
			memcpy(((struct mrl_btinner *) right)->max_end,
			       &((struct mrl_btinner *) n)->max_end[mid],
			       right->count * sizeof(uintptr_t));
		n->count = (uint16_t) mid;
		for (int k = mid; k < MRL_BT_FAN; k++)
			n->key[k] = UINTPTR_MAX;
		if (pos >= mid)
			bt_insert_at(right, pos - mid, key, max_end, ptr);
		else
			bt_insert_at(n, pos, key, max_end, ptr);

		if (!path->depth) {
			parent = bt_node_take(res, false);
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

void
mrl_btree_insert(struct mrl_btree *t, struct mrl_btree_reserve *res,
		 struct mrl_registration *e)
{
	struct mrl_btpath path;
	struct mrl_btnode *leaf;
	int pos = 0;

	if (!t->root) {
		t->root = bt_node_take(res, true);
		bt_insert_at(t->root, 0, e->base, e->end, e);
		t->height = 1;
		return;
	}
	leaf = bt_descend(t->root, e->base, &path);
	while (pos < leaf->count && leaf->key[pos] < e->base)
		pos++;
	mrl_assert(pos == leaf->count || leaf->key[pos] != e->base);
	bt_insert_up(res, &t->root, &path, leaf, pos, e->base, e->end, e);
	bt_fix_path(t->root, e->base);
	t->height = bt_height(t->root);
	mrl_assert(mrl_btree_check_path(t, e->base));
}

void
mrl_btree_remove(struct mrl_btree *t, struct mrl_btree_reserve *res,
		 uintptr_t base)
{
	struct mrl_btpath path;
	struct mrl_btnode *n, *only;
	int pos = 0;

	if (!t->root)
		return;
	n = bt_descend(t->root, base, &path);
	while (pos < n->count && n->key[pos] != base)
		pos++;
	if (pos == n->count)
		return;
	bt_remove_at(n, pos);
	/* Unlink emptied nodes upwards. */
	while (!n->count && path.depth) {
		mrl_btree_reserve_give(res, n);
		path.depth--;
		n = path.node[path.depth];
		bt_remove_at(n, path.idx[path.depth]);
	}
	if (!n->count) { /* the root emptied */
		mrl_btree_reserve_give(res, n);
		t->root = NULL;
		t->height = 0;
		return;
	}
	while (!t->root->leaf && t->root->count == 1) {
		only = t->root->ptr[0];
		mrl_btree_reserve_give(res, t->root);
		t->root = only;
	}
	bt_fix_path(t->root, base);
	t->height = bt_height(t->root);
	mrl_assert(mrl_btree_find_base(t, base) == NULL);
	mrl_assert(mrl_btree_check_path(t, base));
}

static void
bt_give_all(struct mrl_btree_reserve *res, struct mrl_btnode *n,
	    struct mrl_registration **chain)
{
	struct mrl_registration *e;

	if (!n)
		return;
	for (int i = 0; i < n->count; i++) {
		if (n->leaf) {
			e = n->ptr[i];
			mrl_registration_cold(e)->next = *chain;
			*chain = e;
		} else {
			bt_give_all(res, n->ptr[i], chain);
		}
	}
	mrl_btree_reserve_give(res, n);
}

void
mrl_btree_give_all(struct mrl_btree *t, struct mrl_btree_reserve *res,
		   struct mrl_registration **chain)
{
	bt_give_all(res, t->root, chain);
	t->root = NULL;
	t->height = 0;
}

/* ---- invariants --------------------------------------------------------- */

/* One node's own rules: a count within the fanout (non-zero), used keys
 * strictly increasing within [lo, hi), unused keys UINTPTR_MAX, entries at
 * their keys. */
static bool
bt_node_ok(const struct mrl_btnode *n, uintptr_t lo, uintptr_t hi)
{
	if (!n->count || n->count > MRL_BT_FAN)
		return false;
	for (int i = 0; i < MRL_BT_FAN; i++) {
		if (i >= n->count) {
			if (n->key[i] != UINTPTR_MAX)
				return false;
			continue;
		}
		/* An inner key[0] is never compared (it may be stale). */
		if (!n->ptr[i] || (i > !n->leaf && n->key[i] <= n->key[i - 1]))
			return false;
		if ((i || n->leaf) && (n->key[i] < lo || n->key[i] >= hi))
			return false;
		if (n->leaf) {
			const struct mrl_registration *e = n->ptr[i];

			if (e->base != n->key[i] || e->end <= e->base)
				return false;
		}
	}
	return true;
}

/* The bounds of child i of inner node n, within the node's [lo, hi). */
static void
bt_child_bounds(const struct mrl_btnode *n, int i, uintptr_t *lo, uintptr_t *hi)
{
	if (i)
		*lo = n->key[i];
	if (i + 1 < n->count)
		*hi = n->key[i + 1];
}

bool
mrl_btree_check_path(const struct mrl_btree *t, uintptr_t base)
{
	const struct mrl_btnode *n = t->root;
	uintptr_t lo = 0, hi = UINTPTR_MAX;
	unsigned depth = 0;

	if (!n)
		return t->height == 0;
	if (!n->leaf && n->count < 2)
		return false; /* a root of one child collapses */
	for (;;) {
		int i;

		depth++;
		if (!bt_node_ok(n, lo, hi))
			return false;
		if (n->leaf)
			return depth == t->height;
		i = bt_child(n, base);
		for (int k = 0; k < n->count; k++)
			if (((const struct mrl_btinner *) n)->max_end[k] !=
			    bt_node_max(n->ptr[k]))
				return false;
		bt_child_bounds(n, i, &lo, &hi);
		n = n->ptr[i];
	}
}

/* The subtree's rules; counts its entries into *count. */
static bool
bt_check(const struct mrl_btnode *n, uintptr_t lo, uintptr_t hi, unsigned depth,
	 unsigned height, size_t *count)
{
	if (!bt_node_ok(n, lo, hi) || n->leaf != (depth == height))
		return false;
	if (n->leaf) {
		*count += n->count;
		return true;
	}
	for (int i = 0; i < n->count; i++) {
		uintptr_t clo = lo, chi = hi;

		if (((const struct mrl_btinner *) n)->max_end[i] !=
		    bt_node_max(n->ptr[i]))
			return false;
		bt_child_bounds(n, i, &clo, &chi);
		if (!bt_check(n->ptr[i], clo, chi, depth + 1, height, count))
			return false;
	}
	return true;
}

bool
mrl_btree_check(const struct mrl_btree *t, size_t count)
{
	size_t found = 0;

	if (!t->root)
		return t->height == 0 && (count == SIZE_MAX || count == 0);
	if (!t->root->leaf && t->root->count < 2)
		return false;
	if (!bt_check(t->root, 0, UINTPTR_MAX, 1, t->height, &found))
		return false;
	return count == SIZE_MAX || found == count;
}
