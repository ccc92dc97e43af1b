/* SPDX-License-Identifier: BSD-2-Clause */
/* Line-aligned blocks for the lease cache, from huge-page chunks once the
 * cache is large (see mrl_arena.h). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mrl_arena.h"

/* Under AddressSanitizer every arena byte not handed out is poisoned (the
 * unused tail of a chunk, blocks on a free list), so a use after free of an
 * index node or slab is reported as it is for malloc'd ones. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define arena_poison(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define arena_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define arena_poison(p, n)   ((void) (p), (void) (n))
#define arena_unpoison(p, n) ((void) (p), (void) (n))
#endif

#define MRL_LINE	64
#define MRL_ARENA_SIZES 8 /* distinct block sizes with a free list */

struct mrl_free_block {
	struct mrl_free_block *next;
};

/* arena_lock protects everything below; nothing else is taken under it. */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

void
mrl_arena_fork_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&arena_lock);
	else
		pthread_mutex_unlock(&arena_lock);
}
/* Chunk addresses, for mrl_arena_free to tell arena blocks from malloc'd
 * ones in a few lines of one array (not a miss per chunk). */
static uintptr_t *arena_chunks;
static size_t arena_nchunks, arena_chunks_cap;
static char *arena_cur, *arena_end; /* the current chunk's free tail */
static struct {
	size_t size;
	struct mrl_free_block *head;
} arena_free[MRL_ARENA_SIZES];
/* Line-aligned bytes held by every cache, malloc'd or from the arena. */
static atomic_size_t lines_held;

static inline size_t
line_round(size_t size)
{
	return (size + MRL_LINE - 1) & ~(size_t) (MRL_LINE - 1);
}

/* A 2 MiB-aligned chunk (the kernel backs only aligned ranges with huge
 * pages): map twice the size, trim both ends. */
static char *
chunk_map(void)
{
	size_t len = 2 * MRL_ARENA_CHUNK, head;
	uintptr_t *grown;
	char *p;

	if (arena_nchunks == arena_chunks_cap) {
		grown = realloc(arena_chunks,
				(arena_chunks_cap * 2 + 8) * sizeof(*grown));
		if (!grown)
			return NULL;
		arena_chunks = grown;
		arena_chunks_cap = arena_chunks_cap * 2 + 8;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	head = (MRL_ARENA_CHUNK - (uintptr_t) p % MRL_ARENA_CHUNK) %
	       MRL_ARENA_CHUNK;
	if (head)
		munmap(p, head);
	munmap(p + head + MRL_ARENA_CHUNK, len - head - MRL_ARENA_CHUNK);
	p += head;
	/* Advice only: without THP the chunk still serves, on small pages. */
	(void) madvise(p, MRL_ARENA_CHUNK, MADV_HUGEPAGE);
	arena_poison(p, MRL_ARENA_CHUNK);
	arena_chunks[arena_nchunks++] = (uintptr_t) p;
	return p;
}

static struct mrl_free_block **
free_list(size_t size)
{
	for (int i = 0; i < MRL_ARENA_SIZES; i++) {
		if (arena_free[i].size == size)
			return &arena_free[i].head;
		if (!arena_free[i].size) {
			arena_free[i].size = size;
			return &arena_free[i].head;
		}
	}
	return NULL;
}

/* A block of `size` (a line multiple): a freed one, else the current chunk's
 * tail, else a new chunk (the old tail is left unused). */
static void *
arena_take(size_t size)
{
	struct mrl_free_block **list, *b;
	char *c;
	void *p = NULL;

	if (size > MRL_ARENA_CHUNK)
		return NULL;
	pthread_mutex_lock(&arena_lock);
	list = free_list(size);
	if (list && (b = *list)) {
		arena_unpoison(b, size);
		*list = b->next;
		p = b;
		goto out;
	}
	if ((size_t) (arena_end - arena_cur) < size) {
		if (!(c = chunk_map()))
			goto out;
		arena_cur = c;
		arena_end = c + MRL_ARENA_CHUNK;
	}
	p = arena_cur;
	arena_cur += size;
	arena_unpoison(p, size);
out:
	pthread_mutex_unlock(&arena_lock);
	return p;
}

static bool
in_arena(const void *block)
{
	uintptr_t chunk =
		(uintptr_t) block & ~(uintptr_t) (MRL_ARENA_CHUNK - 1);

	for (size_t i = 0; i < arena_nchunks; i++)
		if (arena_chunks[i] == chunk)
			return true;
	return false;
}

void *
mrl_arena_alloc(size_t size, size_t huge_after)
{
	size_t held = atomic_load_explicit(&lines_held, memory_order_relaxed);
	void *p = NULL;

	if (huge_after != SIZE_MAX && held >= huge_after)
		p = arena_take(line_round(size));
	/* Below the threshold, or no chunk to be had: plain pages (malloc
	 * packs a 264-byte leaf tighter than whole lines). */
	if (!p && posix_memalign(&p, MRL_LINE, size))
		return NULL;
	memset(p, 0, size);
	atomic_fetch_add_explicit(&lines_held, line_round(size),
				  memory_order_relaxed);
	return p;
}

void
mrl_arena_free(void *block, size_t size)
{
	struct mrl_free_block **list;
	bool ours;

	if (!block)
		return;
	atomic_fetch_sub_explicit(&lines_held, line_round(size),
				  memory_order_relaxed);
	pthread_mutex_lock(&arena_lock);
	ours = in_arena(block);
	if (ours) {
		/* More sizes than lists: the block stays mapped, unused. */
		if ((list = free_list(line_round(size)))) {
			((struct mrl_free_block *) block)->next = *list;
			*list = block;
		}
		arena_poison(block, line_round(size));
	}
	pthread_mutex_unlock(&arena_lock);
	if (!ours)
		free(block);
}

size_t
mrl_arena_mapped_bytes(void)
{
	size_t n;

	pthread_mutex_lock(&arena_lock);
	n = arena_nchunks;
	pthread_mutex_unlock(&arena_lock);
	return n * MRL_ARENA_CHUNK;
}
