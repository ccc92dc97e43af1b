/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Entry slabs and the lease cache's allocations (mrl_slab.c).
 *
 * Rules it keeps. Entries live in slabs owned by their domain and kept for
 * the process's life: freeing an entry never calls free() (a last release
 * may run inside an allocator hook) and a stale hot way never touches
 * unmapped memory. An entry's refs are only ever accessed atomically, and
 * never reset when it is recycled (a stale hot way may still CAS them); its
 * idx never changes. Every allocation the cache makes (slabs, index nodes,
 * filter nodes) goes through here, so mrl_cache_fail_allocs reaches them
 * all; none is made under cache->lock.
 */
#ifndef MRL_SLAB_H
#define MRL_SLAB_H

#include <stdbool.h>
#include <stddef.h>

struct mrl_cache_domain;
struct mrl_registration;

/* A free entry of dom (state NEW, no range, no handle), or NULL when out of
 * memory. */
struct mrl_registration *mrl_slab_entry_alloc(struct mrl_cache_domain *dom);

/* Give an entry that holds no registration back to its domain. */
void mrl_slab_entry_free(struct mrl_registration *reg);

/* A domain being freed (every entry free): its slabs become idle, for the
 * next domain to adopt. */
void mrl_slab_domain_release(struct mrl_cache_domain *dom);

/* Hold (true) or release the pool lock around fork. */
void mrl_slab_fork_lock(bool lock);

/* Zeroed memory (filter nodes). */
void *mrl_slab_calloc(size_t size);

/* Zeroed, line-aligned memory, from huge-page chunks once the caches are
 * large (mrl_arena.h): slabs and index nodes. */
void *mrl_slab_alloc_lines(size_t size, size_t huge_after);

#endif /* MRL_SLAB_H */
