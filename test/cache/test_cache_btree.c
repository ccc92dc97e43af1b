/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's interval index alone (mrl_btree.h), over entries in a
 * slab the test builds: lookups by base, cover and overlap, node splits and
 * unlinks at the fanout's boundaries, the ordered walk, the node reserve's
 * estimate, and a randomized sequence checked against a sorted array after
 * every step. MRL_BTREE_SEED=N replays a sequence (the seed is printed).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "1-cache/mrl_btree.h"
#include "common/mrlt.h"

#define PAGE ((uintptr_t) 4096)
#define NENT 4096

/* Entries the tree points to: a slab (header, hot parts, cold parts), so
 * mrl_registration_cold() works as in the cache. */
static struct mrl_slab *
slab_new(uint32_t n)
{
	size_t bytes =
		sizeof(struct mrl_slab) + n * (sizeof(struct mrl_registration) +
					       sizeof(struct mrl_reg_cold));
	struct mrl_slab *slab = aligned_alloc(64, (bytes + 63) & ~(size_t) 63);

	if (!slab)
		abort();
	memset(slab, 0, bytes);
	slab->n = n;
	for (uint32_t i = 0; i < n; i++)
		slab->reg[i].idx = (uint16_t) i;
	return slab;
}

struct fixture {
	struct mrl_btree tree;
	struct mrl_btree_reserve res;
	struct mrl_slab *slab;
};

static void
fx_init(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	fx->slab = slab_new(NENT);
}

static void
fx_fini(struct fixture *fx)
{
	struct mrl_registration *chain = NULL;

	mrl_btree_give_all(&fx->tree, &fx->res, &chain);
	mrl_btree_free_chain(mrl_btree_reserve_trim(&fx->res, 0));
	free(fx->slab);
}

static unsigned
spare_nodes(const struct fixture *fx)
{
	return fx->res.nspare[0] + fx->res.nspare[1];
}

/* Fill the reserve with what an insert at `base` can take, as the cache
 * does before its write section; need[] is what the tree asked for. */
static void
reserve_for(struct fixture *fx, uintptr_t base, unsigned need[2])
{
	mrl_btree_need(&fx->tree, base, need);
	for (int leaf = 0; leaf < 2; leaf++)
		while (fx->res.nspare[leaf] < need[leaf]) {
			struct mrl_btnode *n =
				mrl_btree_node_alloc(leaf, SIZE_MAX);

			if (!n)
				abort();
			mrl_btree_reserve_give(&fx->res, n);
		}
}

/* Entry i of the slab as [base, end), inserted; the nodes it took. */
static unsigned
insert(struct fixture *fx, unsigned i, uintptr_t base, uintptr_t end)
{
	struct mrl_registration *e = &fx->slab->reg[i];
	unsigned need[2], before;

	e->base = base;
	e->end = end;
	reserve_for(fx, base, need);
	before = spare_nodes(fx);
	mrl_btree_insert(&fx->tree, &fx->res, e);
	return before - spare_nodes(fx);
}

/* An empty index finds nothing, walks nothing, and asks for one leaf. */
static void
test_empty_index_finds_nothing(void)
{
	struct fixture fx;
	unsigned need[2];

	fx_init(&fx);
	CHECK(mrl_btree_find_pred(&fx.tree, PAGE, 2 * PAGE) == NULL);
	CHECK(mrl_btree_find_cover(&fx.tree, PAGE, 2 * PAGE) == NULL);
	CHECK(mrl_btree_find_overlap(&fx.tree, 0, UINTPTR_MAX) == NULL);
	CHECK(mrl_btree_find_base(&fx.tree, PAGE) == NULL);
	CHECK(mrl_btree_successor(&fx.tree, 0, false) == NULL);
	mrl_btree_need(&fx.tree, PAGE, need);
	CHECK_EQ(0, need[0]);
	CHECK_EQ(1, need[1]);
	CHECK(mrl_btree_check(&fx.tree, 0));
	fx_fini(&fx);
}

/* Lookups at the edges of ranges (ends are exclusive): a covering lookup
 * that stopped at the nearest base would miss a wide entry behind a narrow
 * one and register the same pages again. */
static void
test_lookups_respect_range_edges_and_wide_entries(void)
{
	struct fixture fx;
	struct mrl_registration *r = NULL;

	fx_init(&fx);
	insert(&fx, 0, 0x1000, 0x3000);
	insert(&fx, 1, 0x5000, 0x6000);
	insert(&fx, 2, 0x100000, 0x900000); /* wide */
	insert(&fx, 3, 0x200000, 0x201000); /* narrow, inside the wide */
	CHECK(mrl_btree_check(&fx.tree, 4));

	CHECK_PTR(&fx.slab->reg[0], mrl_btree_find_base(&fx.tree, 0x1000));
	CHECK(mrl_btree_find_base(&fx.tree, 0x2000) == NULL);
	CHECK_PTR(&fx.slab->reg[0],
		  mrl_btree_find_based(&fx.tree, 0x1000, 0x3000));
	CHECK(mrl_btree_find_based(&fx.tree, 0x1000, 0x3001) == NULL);

	CHECK_PTR(&fx.slab->reg[0],
		  mrl_btree_find_pred(&fx.tree, 0x1000, 0x3000));
	CHECK_PTR(&fx.slab->reg[0],
		  mrl_btree_find_pred(&fx.tree, 0x2fff, 0x3000));
	CHECK(mrl_btree_find_pred(&fx.tree, 0x2fff, 0x3001) == NULL);
	CHECK(mrl_btree_find_pred(&fx.tree, 0xfff, 0x1001) == NULL);
	CHECK(mrl_btree_find_cover(&fx.tree, 0x2000, 0x5001) == NULL);

	/* The predecessor of 0x300000 is the narrow entry, which does not
	 * cover it: only the full cover search finds the wide one. */
	CHECK(mrl_btree_find_pred(&fx.tree, 0x300000, 0x301000) == NULL);
	CHECK_PTR(&fx.slab->reg[2],
		  mrl_btree_find_cover(&fx.tree, 0x300000, 0x301000));
	CHECK(mrl_btree_find_cover(&fx.tree, 0x300000, 0x900001) == NULL);

	CHECK(mrl_btree_find_overlap(&fx.tree, 0x3000, 0x5000) == NULL);
	CHECK_PTR(&fx.slab->reg[0],
		  mrl_btree_find_overlap(&fx.tree, 0x2fff, 0x5000));
	CHECK_PTR(&fx.slab->reg[1],
		  mrl_btree_find_overlap(&fx.tree, 0x3000, 0x5001));
	CHECK(mrl_btree_find_overlap(&fx.tree, 0x900000, 0xa00000) == NULL);
	r = mrl_btree_find_overlap(&fx.tree, 0x200800, 0x200900);
	CHECK(r == &fx.slab->reg[2] || r == &fx.slab->reg[3]);
	fx_fini(&fx);
}

/* Splits at the fanout: a full leaf splits into a new root and a leaf;
 * ascending inserts leave full leaves, so 16 * 16 of them fill two levels
 * exactly and the next splits three nodes. The reserve's estimate is what
 * each insert takes: an estimate short by one would make an insert under
 * the cache's lock run out of nodes halfway. */
static void
test_splits_at_node_boundaries_take_what_was_reserved(void)
{
	struct fixture fx;
	unsigned need[2], taken;

	fx_init(&fx);
	for (unsigned i = 0; i < MRL_BT_FAN; i++)
		CHECK_EQ(i ? 0 : 1,
			 insert(&fx, i, (i + 1) * PAGE, (i + 2) * PAGE));
	CHECK_EQ(1, fx.tree.height);

	mrl_btree_need(&fx.tree, (MRL_BT_FAN + 1) * PAGE, need);
	CHECK_EQ(1, need[0]); /* a new root */
	CHECK_EQ(1, need[1]); /* a leaf */
	taken = insert(&fx, MRL_BT_FAN, (MRL_BT_FAN + 1) * PAGE,
		       (MRL_BT_FAN + 2) * PAGE);
	CHECK_EQ(2, taken);
	CHECK_EQ(2, fx.tree.height);
	CHECK(mrl_btree_check(&fx.tree, MRL_BT_FAN + 1));

	for (unsigned i = MRL_BT_FAN + 1; i < MRL_BT_FAN * MRL_BT_FAN; i++) {
		unsigned e = (i % MRL_BT_FAN) ? 0 : 1;

		CHECK_EQ(e, insert(&fx, i, (i + 1) * PAGE, (i + 2) * PAGE));
		CHECK(mrl_btree_check_path(&fx.tree, (i + 1) * PAGE));
	}
	CHECK_EQ(2, fx.tree.height);
	CHECK_EQ(MRL_BT_FAN, fx.tree.root->count);
	CHECK(mrl_btree_check(&fx.tree, MRL_BT_FAN * MRL_BT_FAN));

	mrl_btree_need(&fx.tree, (MRL_BT_FAN * MRL_BT_FAN + 1) * PAGE, need);
	CHECK_EQ(2, need[0]); /* the split root's sibling and a new root */
	CHECK_EQ(1, need[1]);
	CHECK_EQ(3, insert(&fx, MRL_BT_FAN * MRL_BT_FAN,
			   (MRL_BT_FAN * MRL_BT_FAN + 1) * PAGE,
			   (MRL_BT_FAN * MRL_BT_FAN + 2) * PAGE));
	CHECK_EQ(3, fx.tree.height);
	CHECK(mrl_btree_check(&fx.tree, MRL_BT_FAN * MRL_BT_FAN + 1));

	/* A split in the middle of a full leaf moves half of it; its parent
	 * (the root's full left child) splits too. */
	CHECK_EQ(2, insert(&fx, MRL_BT_FAN * MRL_BT_FAN + 1, PAGE + PAGE / 2,
			   PAGE + PAGE / 2 + 1));
	CHECK(mrl_btree_check(&fx.tree, MRL_BT_FAN * MRL_BT_FAN + 2));
	CHECK_PTR(&fx.slab->reg[MRL_BT_FAN * MRL_BT_FAN + 1],
		  mrl_btree_find_base(&fx.tree, PAGE + PAGE / 2));
	fx_fini(&fx);
}

/* Removals unlink emptied nodes and collapse the root: the last entry of a
 * lone right-hand path gives back its leaf, its inner node and the root;
 * emptying the tree gives back every node. A node kept after it emptied
 * would be searched by every later lookup. */
static void
test_removals_unlink_emptied_nodes_and_collapse_the_root(void)
{
	const unsigned n = MRL_BT_FAN * MRL_BT_FAN + 1;
	struct fixture fx;
	unsigned before;

	fx_init(&fx);
	for (unsigned i = 0; i < n; i++)
		insert(&fx, i, (i + 1) * PAGE, (i + 2) * PAGE);
	CHECK_EQ(3, fx.tree.height);
	before = spare_nodes(&fx);
	mrl_btree_remove(&fx.tree, &fx.res, n * PAGE);
	CHECK_EQ(before + 3, spare_nodes(&fx));
	CHECK_EQ(2, fx.tree.height);
	CHECK(mrl_btree_check(&fx.tree, n - 1));
	CHECK(mrl_btree_find_base(&fx.tree, n * PAGE) == NULL);

	/* Not there: nothing changes. */
	mrl_btree_remove(&fx.tree, &fx.res, n * PAGE);
	mrl_btree_remove(&fx.tree, &fx.res, PAGE + 1);
	CHECK(mrl_btree_check(&fx.tree, n - 1));

	/* From the middle out, checking after each. */
	for (unsigned k = 0; k < n - 1; k++) {
		unsigned i = (k * 97) % (n - 1); /* 97 is prime to 256 */

		mrl_btree_remove(&fx.tree, &fx.res, (i + 1) * PAGE);
		CHECK(mrl_btree_find_base(&fx.tree, (i + 1) * PAGE) == NULL);
		CHECK(mrl_btree_check(&fx.tree, n - 2 - k));
	}
	CHECK(fx.tree.root == NULL);
	CHECK_EQ(0, fx.tree.height);
	CHECK_EQ(1 + MRL_BT_FAN + 1 + 1 + 1, spare_nodes(&fx));
	fx_fini(&fx);
}

/* The walk (the CLOCK hand's) visits every base once, in order, from any
 * key; a walk that skipped a leaf would never evict its entries. */
static void
test_ordered_walk_visits_every_base_once_in_order(void)
{
	struct fixture fx;
	struct mrl_registration *e;
	uintptr_t prev = 0;
	unsigned seen = 0;

	fx_init(&fx);
	for (unsigned i = 0; i < 1000; i++) {
		unsigned slot = (i * 389) % 1000; /* shuffled */

		insert(&fx, i, (slot + 1) * 2 * PAGE,
		       (slot + 1) * 2 * PAGE + PAGE);
	}
	CHECK(mrl_btree_check(&fx.tree, 1000));
	for (e = mrl_btree_successor(&fx.tree, 0, false); e;
	     e = mrl_btree_successor(&fx.tree, e->base, true)) {
		CHECK(e->base > prev);
		CHECK_EQ((seen + 1) * 2 * PAGE, e->base);
		prev = e->base;
		seen++;
	}
	CHECK_EQ(1000, seen);
	e = mrl_btree_successor(&fx.tree, 10 * PAGE, false);
	CHECK(e && e->base == 10 * PAGE);
	e = mrl_btree_successor(&fx.tree, 10 * PAGE, true);
	CHECK(e && e->base == 12 * PAGE);
	e = mrl_btree_successor(&fx.tree, 11 * PAGE, false);
	CHECK(e && e->base == 12 * PAGE);
	CHECK(mrl_btree_successor(&fx.tree, 2000 * PAGE, true) == NULL);
	fx_fini(&fx);
}

/* Emptying the tree at once (a domain's close) chains every entry once and
 * gives back every node. */
static void
test_give_all_chains_every_entry_once(void)
{
	struct fixture fx;
	struct mrl_registration *chain = NULL, *e;
	unsigned count = 0, sum = 0;

	fx_init(&fx);
	for (unsigned i = 0; i < 300; i++)
		insert(&fx, i, (i + 1) * PAGE, (i + 2) * PAGE);
	mrl_btree_give_all(&fx.tree, &fx.res, &chain);
	CHECK(fx.tree.root == NULL && fx.tree.height == 0);
	for (e = chain; e; e = mrl_registration_cold(e)->next) {
		count++;
		sum += e->idx;
	}
	CHECK_EQ(300, count);
	CHECK_EQ(300 * 299 / 2, sum);
	fx_fini(&fx);
}

/* The checker itself: an index whose keys are out of order, or whose max
 * end is stale, fails it (else the checks above could not fail). */
static void
test_check_rejects_a_corrupted_index(void)
{
	struct fixture fx;
	struct mrl_btnode *leaf;
	struct mrl_btinner *root;
	uintptr_t k;

	fx_init(&fx);
	for (unsigned i = 0; i < 40; i++)
		insert(&fx, i, (i + 1) * PAGE, (i + 2) * PAGE);
	CHECK(mrl_btree_check(&fx.tree, 40));
	CHECK(!mrl_btree_check(&fx.tree, 41));
	root = (struct mrl_btinner *) fx.tree.root;
	leaf = root->node.ptr[0];
	k = leaf->key[1];
	leaf->key[1] = leaf->key[2];
	leaf->key[2] = k;
	CHECK(!mrl_btree_check(&fx.tree, 40));
	CHECK(!mrl_btree_check_path(&fx.tree, leaf->key[0]));
	leaf->key[2] = leaf->key[1];
	leaf->key[1] = k;
	CHECK(mrl_btree_check(&fx.tree, 40));
	root->max_end[0]++;
	CHECK(!mrl_btree_check(&fx.tree, 40));
	CHECK(!mrl_btree_check_path(&fx.tree, PAGE));
	root->max_end[0]--;
	CHECK(mrl_btree_check_path(&fx.tree, PAGE));
	fx_fini(&fx);
}

/* ---- randomized, against a reference model ------------------------------ */

static uint64_t rng_state;

static uint64_t
rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* The model: per slot (base = slot * PAGE), the entry there or none. */
#define SLOTS 3000
static struct mrl_registration *model[SLOTS];

static struct mrl_registration *
model_pred(uintptr_t start)
{
	for (long s = (long) (start / PAGE); s >= 0; s--)
		if (s < SLOTS && model[s])
			return model[s];
	return NULL;
}

static bool
model_has_cover(uintptr_t start, uintptr_t end)
{
	for (unsigned s = 0; s < SLOTS && s * PAGE <= start; s++)
		if (model[s] && model[s]->end >= end)
			return true;
	return false;
}

static bool
model_has_overlap(uintptr_t start, uintptr_t end)
{
	for (unsigned s = 0; s < SLOTS && s * PAGE < end; s++)
		if (model[s] && model[s]->end > start)
			return true;
	return false;
}

/*
 * Inserts (a replacement at a taken base removes first, as the cache does),
 * removals and every query against the model, the whole tree checked after
 * each change: a lookup that disagrees with a sorted array is a hit on the
 * wrong registration, or a miss that registers the same pages twice.
 */
static void
test_random_sequence_matches_a_reference_model(void)
{
	const char *env = getenv("MRL_BTREE_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed1e55ull;
	unsigned free_idx[NENT], nfree = 0, count = 0, pred_hits = 0;
	struct fixture fx;

	printf("# seed %#llx (MRL_BTREE_SEED to replay)\n",
	       (unsigned long long) seed);
	rng_state = seed ? seed : 1;
	memset(model, 0, sizeof(model));
	fx_init(&fx);
	for (unsigned i = 0; i < NENT; i++)
		free_idx[nfree++] = NENT - 1 - i;

	for (unsigned step = 0; step < 40000; step++) {
		unsigned op = rng() % 8, s = rng() % SLOTS;
		uintptr_t base = s * PAGE, start, end;
		struct mrl_registration *r, *m;

		/* Grow to about 2000 entries, then churn around it. */
		if (op < 3 || (op < 5 && count < 2000)) {
			/* Mostly page-sized, sometimes wide. */
			uintptr_t len =
				(rng() % 4 ? 1 + rng() % 3 : 1 + rng() % 64) *
				PAGE;
			if (model[s]) {
				mrl_btree_remove(&fx.tree, &fx.res, base);
				free_idx[nfree++] = model[s]->idx;
				model[s] = NULL;
				count--;
			}
			insert(&fx, free_idx[--nfree], base, base + len);
			model[s] = mrl_btree_find_base(&fx.tree, base);
			CHECK_MSG(model[s] && model[s]->end == base + len,
				  "step %u: inserted %#lx not found", step,
				  (unsigned long) base);
			count++;
		} else if (op < 5) {
			mrl_btree_remove(&fx.tree, &fx.res, base);
			if (model[s]) {
				free_idx[nfree++] = model[s]->idx;
				model[s] = NULL;
				count--;
			}
			CHECK(mrl_btree_find_base(&fx.tree, base) == NULL);
		}
		if (op < 5)
			CHECK_MSG(mrl_btree_check(&fx.tree, count),
				  "step %u: index rules broken", step);

		start = rng() % (SLOTS * PAGE + 8 * PAGE);
		end = start + 1 + rng() % (8 * PAGE);
		r = mrl_btree_find_cover(&fx.tree, start, end);
		CHECK_MSG(r ? r->base <= start && r->end >= end :
			      !model_has_cover(start, end),
			  "step %u: cover of [%#lx, %#lx)", step,
			  (unsigned long) start, (unsigned long) end);
		CHECK_MSG(!!r == model_has_cover(start, end),
			  "step %u: cover of [%#lx, %#lx) missed", step,
			  (unsigned long) start, (unsigned long) end);
		/* The predecessor if it covers; NULL may also mean a leaf whose
		 * first entries went (the caller then searches for a cover). */
		m = model_pred(start);
		r = mrl_btree_find_pred(&fx.tree, start, end);
		pred_hits += r != NULL;
		CHECK_MSG(!r || (r == m && m->end >= end),
			  "step %u: predecessor of %#lx", step,
			  (unsigned long) start);
		r = mrl_btree_find_overlap(&fx.tree, start, end);
		CHECK_MSG(r ? r->base < end && r->end > start :
			      !model_has_overlap(start, end),
			  "step %u: overlap of [%#lx, %#lx)", step,
			  (unsigned long) start, (unsigned long) end);
		CHECK_MSG(!!r == model_has_overlap(start, end),
			  "step %u: overlap of [%#lx, %#lx) missed", step,
			  (unsigned long) start, (unsigned long) end);
		r = mrl_btree_find_based(&fx.tree, base, base + PAGE);
		CHECK(r == (model[s] && model[s]->end >= base + PAGE ?
				    model[s] :
				    NULL));
	}
	/* Most covering predecessors are found by the fast descent. */
	CHECK(pred_hits > 1000);
	/* The walk matches the model too. */
	{
		struct mrl_registration *e =
			mrl_btree_successor(&fx.tree, 0, false);

		for (unsigned s = 0; s < SLOTS; s++) {
			if (!model[s])
				continue;
			CHECK_PTR(model[s], e);
			e = mrl_btree_successor(&fx.tree, e->base, true);
		}
		CHECK(e == NULL);
	}
	fx_fini(&fx);
}

/* Inserts that take the most nodes: each with the reserve filled exactly to
 * the estimate, in descending and random order. */
static void
test_reserve_estimate_is_exactly_what_inserts_take(void)
{
	struct fixture fx;
	unsigned need[2], before, n = 0;

	fx_init(&fx);
	rng_state = 0x2545f491ull;
	for (unsigned i = 0; i < NENT; i++) {
		uintptr_t base =
			(i < NENT / 2 ? NENT - i : rng() % (64 * NENT)) * 2 *
			PAGE;

		if (mrl_btree_find_base(&fx.tree, base))
			continue;
		mrl_btree_free_chain(mrl_btree_reserve_trim(&fx.res, 0));
		reserve_for(&fx, base, need);
		before = spare_nodes(&fx);
		fx.slab->reg[n].base = base;
		fx.slab->reg[n].end = base + PAGE;
		mrl_btree_insert(&fx.tree, &fx.res, &fx.slab->reg[n++]);
		CHECK_EQ(need[0] + need[1], before - spare_nodes(&fx));
		CHECK(mrl_btree_check_path(&fx.tree, base));
	}
	CHECK(mrl_btree_check(&fx.tree, n));
	fx_fini(&fx);
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(test_empty_index_finds_nothing);
	MRLT_RUN(test_lookups_respect_range_edges_and_wide_entries);
	MRLT_RUN(test_splits_at_node_boundaries_take_what_was_reserved);
	MRLT_RUN(test_removals_unlink_emptied_nodes_and_collapse_the_root);
	MRLT_RUN(test_ordered_walk_visits_every_base_once_in_order);
	MRLT_RUN(test_give_all_chains_every_entry_once);
	MRLT_RUN(test_check_rejects_a_corrupted_index);
	MRLT_RUN(test_random_sequence_matches_a_reference_model);
	MRLT_RUN(test_reserve_estimate_is_exactly_what_inserts_take);
	return mrlt_done();
}
