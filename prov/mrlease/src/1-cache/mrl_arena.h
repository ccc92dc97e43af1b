/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Line-aligned memory for the lease cache's entry slabs and index nodes,
 * from huge-page chunks once the cache is large.
 *
 * A random hit in a cache of a million entries makes two dependent misses
 * over ~70 MB (an index leaf, then the entry). With 4 KiB pages each also
 * needs a page walk; with 2 MiB pages one TLB entry covers thousands of
 * entries. So once the line-aligned memory held by every cache in the
 * process passes a threshold (FI_MRLEASE_HUGEPAGE_AFTER), further blocks are
 * cut from 2 MiB chunks advised MADV_HUGEPAGE (used when transparent huge
 * pages are enabled as "madvise" or "always"; plain pages otherwise). Below
 * the threshold blocks come from malloc, so a small cache never holds a
 * chunk.
 *
 * Chunks are never unmapped (entry slabs are type-stable memory the
 * lock-free hit path relies on); a freed block goes on a free list of its
 * size and serves the next block of that size (under AddressSanitizer the
 * arena poisons what it has not handed out, free blocks included, so a use
 * after free is reported as for malloc'd blocks). One mutex guards the arena;
 * it is a leaf lock (nothing else is taken under it) and never held while
 * calling into libfabric.
 */
#ifndef MRL_ARENA_H
#define MRL_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#define MRL_ARENA_CHUNK ((size_t) 2 << 20)

/* Zeroed, 64-byte aligned block of `size` bytes; from the arena when the
 * process's line-aligned cache memory is at least `huge_after` bytes
 * (SIZE_MAX: never). NULL when memory is exhausted. */
void *mrl_arena_alloc(size_t size, size_t huge_after);

/* Give back a block mrl_arena_alloc returned, with the same size. */
void mrl_arena_free(void *block, size_t size);

/* Bytes of chunks mapped so far (never shrinks): memory the caches hold
 * beyond what malloc reports. */
size_t mrl_arena_mapped_bytes(void);

/* Hold (true) or release the arena's lock around fork, so a child never
 * inherits it held (the cache's fork handlers call it). */
void mrl_arena_fork_lock(bool lock);

#endif /* MRL_ARENA_H */
