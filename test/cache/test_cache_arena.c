/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The lease cache's line-aligned block source (mrl_arena.h): below the
 * threshold plain malloc'd blocks, beyond it blocks cut from 2 MiB-aligned
 * chunks, freed blocks reused by size, nothing ever handed out twice.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "1-cache/mrl_arena.h"
#include "common/mrlt.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#define SLAB 12352 /* an entry slab of 256 */
#define LEAF 264 /* an index leaf, rounded up to 320 in the arena */

static bool
all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Below the threshold a small cache must not hold a 2 MiB chunk: blocks come
 * from malloc and the arena maps nothing. */
static void
test_blocks_below_the_threshold_map_no_chunk(void)
{
	size_t mapped = mrl_arena_mapped_bytes();
	void *b[16];

	for (int i = 0; i < 16; i++) {
		b[i] = mrl_arena_alloc(LEAF, SIZE_MAX);
		CHECK(b[i] && (uintptr_t) b[i] % 64 == 0 &&
		      all_zero(b[i], LEAF));
		memset(b[i], 0xa5, LEAF);
	}
	for (int i = 0; i < 16; i++)
		mrl_arena_free(b[i], LEAF);
	CHECK_EQ(mapped, mrl_arena_mapped_bytes());
}

/* Beyond the threshold blocks are cut from chunks aligned to 2 MiB (the
 * kernel only backs aligned ranges with huge pages), zeroed, line-aligned,
 * never overlapping, across several chunks. */
static void
test_blocks_beyond_the_threshold_come_from_aligned_chunks(void)
{
	enum { N = 400 }; /* ~170 slabs per chunk: three chunks */
	static unsigned char *b[N];
	size_t mapped = mrl_arena_mapped_bytes();

	for (int i = 0; i < N; i++) {
		b[i] = mrl_arena_alloc(SLAB, 0);
		CHECK(b[i] && (uintptr_t) b[i] % 64 == 0 &&
		      all_zero(b[i], SLAB));
		if (!b[i])
			return;
		memset(b[i], i & 0xff, SLAB);
	}
	/* The first block of the first chunk starts on a 2 MiB boundary. */
	CHECK_EQ(0, (uintptr_t) b[0] % MRL_ARENA_CHUNK);
	CHECK(mrl_arena_mapped_bytes() - mapped >= 3 * MRL_ARENA_CHUNK);
	CHECK(mrl_arena_mapped_bytes() - mapped <= 3 * MRL_ARENA_CHUNK);
	for (int i = 0; i < N; i++) {
		/* A block overlapping the next would have been overwritten. */
		CHECK_MSG(b[i][0] == (i & 0xff) && b[i][SLAB - 1] == (i & 0xff),
			  "block %d overwritten", i);
		/* No block crosses its chunk's end. */
		CHECK((uintptr_t) b[i] / MRL_ARENA_CHUNK ==
		      ((uintptr_t) b[i] + SLAB - 1) / MRL_ARENA_CHUNK);
	}
	for (int i = 0; i < N; i++)
		mrl_arena_free(b[i], SLAB);
}

/* A freed block serves the next block of its size, zeroed again, so a cache
 * that closes and reopens domains does not map chunk after chunk. */
static void
test_freed_blocks_are_reused_by_size_and_zeroed(void)
{
	unsigned char *a, *b, *c;
	size_t mapped;

	a = mrl_arena_alloc(LEAF, 0);
	CHECK(a != NULL);
	if (!a)
		return;
	memset(a, 0xff, LEAF);
	mapped = mrl_arena_mapped_bytes();
	mrl_arena_free(a, LEAF);
	c = mrl_arena_alloc(448, 0); /* another size: not a's block */
	b = mrl_arena_alloc(LEAF, 0);
	CHECK(b == a && c != a);
	CHECK(all_zero(b, LEAF));
	CHECK_EQ(mapped, mrl_arena_mapped_bytes());
	mrl_arena_free(b, LEAF);
	mrl_arena_free(c, 448);
}

/* What the arena cannot serve (larger than a chunk, more sizes than it keeps
 * lists for) still works: from malloc, or left mapped when freed. */
static void
test_blocks_the_arena_cannot_serve_still_work(void)
{
	unsigned char *big = mrl_arena_alloc(3 * MRL_ARENA_CHUNK, 0), *odd[12];

	CHECK(big && (uintptr_t) big % 64 == 0 &&
	      all_zero(big, 3 * MRL_ARENA_CHUNK));
	mrl_arena_free(big, 3 * MRL_ARENA_CHUNK);
	for (int i = 0; i < 12; i++) {
		odd[i] = mrl_arena_alloc(64 * (20 + (size_t) i), 0);
		CHECK(odd[i] != NULL);
	}
	for (int i = 0; i < 12; i++)
		mrl_arena_free(odd[i], 64 * (20 + (size_t) i));
	mrl_arena_free(NULL, 64);
}

enum { THREADS = 4, HELD = 64, ROUNDS = 3000 };

static atomic_int bad;

/* Allocate and free blocks of two sizes, each stamped with its owner and
 * checked before it goes back: a block handed to two threads at once would
 * show the other's stamp. */
static void *
churn(void *arg)
{
	uint32_t stamp = (uint32_t) (uintptr_t) arg, *held[HELD] = {0};
	size_t size[HELD] = {0};

	for (int i = 0; i < ROUNDS; i++) {
		int k = i % HELD;

		if (held[k]) {
			if (held[k][0] != stamp ||
			    held[k][size[k] / 4 - 1] != stamp)
				atomic_fetch_add(&bad, 1);
			mrl_arena_free(held[k], size[k]);
		}
		size[k] = (i & 1) ? LEAF : 448;
		held[k] = mrl_arena_alloc(size[k], 0);
		if (!held[k] || !all_zero((unsigned char *) held[k], size[k])) {
			atomic_fetch_add(&bad, 1);
			return NULL;
		}
		held[k][0] = held[k][size[k] / 4 - 1] = stamp;
	}
	for (int k = 0; k < HELD; k++)
		mrl_arena_free(held[k], size[k]);
	return NULL;
}

/* Several caches' threads take and give back blocks at once (misses on
 * every thread): the arena's lists must never hand a block out twice. */
static void
test_threads_never_share_a_block(void)
{
	pthread_t th[THREADS];

	for (uintptr_t t = 0; t < THREADS; t++)
		CHECK(!pthread_create(&th[t], NULL, churn, (void *) (t + 1)));
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	CHECK_EQ(0, atomic_load(&bad));
}

/* Under AddressSanitizer a freed arena block is poisoned until it is handed
 * out again, so a use after free of an index node or slab is reported as it
 * would be for a malloc'd one. */
static void
test_freed_arena_blocks_are_poisoned_under_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
	unsigned char *b = mrl_arena_alloc(LEAF, 0), *again, *next;

	CHECK(b && !__asan_region_is_poisoned(b, LEAF));
	if (!b)
		return;
	next = mrl_arena_alloc(LEAF, 0);
	CHECK(next);
	mrl_arena_free(b, LEAF);
	CHECK(__asan_address_is_poisoned(b));
	CHECK(__asan_address_is_poisoned(b + LEAF - 1));
	/* The free list is per size and LIFO: the same block comes back,
	 * whole and usable. */
	again = mrl_arena_alloc(LEAF, 0);
	CHECK_PTR(b, again);
	CHECK(!__asan_region_is_poisoned(again, LEAF) && all_zero(again, LEAF));
	mrl_arena_free(again, LEAF);
	mrl_arena_free(next, LEAF);
#else
	mrlt_skip_current("not an AddressSanitizer build");
#endif
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(test_blocks_below_the_threshold_map_no_chunk);
	MRLT_RUN(test_blocks_beyond_the_threshold_come_from_aligned_chunks);
	MRLT_RUN(test_freed_blocks_are_reused_by_size_and_zeroed);
	MRLT_RUN(test_blocks_the_arena_cannot_serve_still_work);
	MRLT_RUN(test_threads_never_share_a_block);
	MRLT_RUN(test_freed_arena_blocks_are_poisoned_under_asan);
	return mrlt_done();
}
