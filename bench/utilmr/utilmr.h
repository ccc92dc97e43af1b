/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libfabric's util MR cache (prov/util/src/util_mr_cache.c, libfabric 2.1) as
 * a peer of bench/cache_bench, behind plain C types: the caller never sees
 * libfabric's internal headers, which are 2.1's while the rest of the
 * benchmark is built against the system's libfabric.
 *
 * It is driven as libfabric's providers drive it (efa_mr.c, verbs): one cache
 * over a memory monitor, ofi_mr_cache_search for a lease (registering through
 * the cache's add_region on a miss), ofi_mr_cache_delete to release it, and
 * ofi_mr_cache_notify under the global mm_lock to invalidate, as a monitor's
 * event handler does. The monitor watches nothing (no uffd, no memhooks),
 * as mrlease runs without its monitor in cache_bench. Thread safety is the
 * cache's: every call takes mm_lock.
 */
#ifndef UTILMR_H
#define UTILMR_H

#include <stddef.h>
#include <stdint.h>

struct utilmr_config {
	/* Registers [addr, addr + len) and closes what it returned: the
	 * signatures of mrlease's registrar (struct mrl_registrar), so the
	 * benchmark hands both caches the same one. */
	int (*reg)(void *ctx, const void *addr, size_t len, uint64_t access,
		   uint64_t key, void **mr, void **desc);
	int (*close)(void *ctx, void *mr);
	void *ctx;
	uint64_t access; /* passed to reg() */
	/* libfabric's cache_params.max_cnt and max_size (FI_MR_CACHE_MAX_COUNT,
	 * FI_MR_CACHE_MAX_SIZE), read when the cache is created. */
	size_t max_cnt, max_size;
};

struct utilmr;

int utilmr_create(const struct utilmr_config *cfg, struct utilmr **cache);
/* ofi_mr_cache_cleanup: closes every registration; no lease may be held. */
void utilmr_destroy(struct utilmr *cache);
/* A lease on an entry covering [start, end), registered on a miss. */
int utilmr_acquire(struct utilmr *cache, uintptr_t start, uintptr_t end,
		   void **lease);
void utilmr_release(struct utilmr *cache, void *lease);
/* Uncaches every entry overlapping [start, end); an unleased one is closed
 * by the next acquire (libfabric's dead-region list) or by destroy. */
void utilmr_invalidate(struct utilmr *cache, uintptr_t start, uintptr_t end);

#endif /* UTILMR_H */
