/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The glue between bench/cache_bench and libfabric's util MR cache
 * (utilmr.h). Compiled with libfabric 2.1's headers from the extracted
 * tarball and bench/utilmr/config.h, never with the system's libfabric
 * headers; linked with the libfabric sources bench/bench.mk compiles.
 */
#include <config.h>

#include <stdlib.h>

#include <ofi_mem.h>
#include <ofi_mr.h>

#include "utilmr.h"

struct utilmr {
	struct ofi_mr_cache cache;
	struct utilmr_config cfg;
};

/* What a provider keeps in entry->data (efa: struct efa_mr). */
struct utilmr_registration {
	void *mr, *desc;
};

/* ---- what the compiled sources call outside them ----------------------- */
/*
 * Their definitions live in files that pull in most of libfabric (fabric.c,
 * hmem.c, the osd files); these stand in for them. Only core_prov and
 * ofi_hmem_is_initialized are reached by the cache's paths; the rest serve
 * huge-page and non-shared buffer pools and the monitors' start-up, which
 * the benchmark never uses.
 */
struct fi_provider core_prov = {
	.version = FI_VERSION(2, 1),
	.fi_version = FI_VERSION(2, 1),
	.name = "core",
};

/* System memory is always initialized (libfabric's ofi_hmem_init); no
 * device memory here. */
bool
ofi_hmem_is_initialized(enum fi_hmem_iface iface)
{
	return iface == FI_HMEM_SYSTEM;
}

ssize_t
ofi_get_hugepage_size(void)
{
	return -FI_ENOSYS;
}

int
ofi_mmap_anon_pages(void **memptr, size_t size, int flags)
{
	(void) memptr;
	(void) size;
	(void) flags;
	return -FI_ENOSYS; /* the buffer pool falls back to memalign */
}

int
ofi_unmap_anon_pages(void *memptr, size_t size)
{
	(void) memptr;
	(void) size;
	return -FI_ENOSYS;
}

int
ofi_cpu_supports(unsigned func, unsigned reg, unsigned bit)
{
	(void) func;
	(void) reg;
	(void) bit;
	return 0;
}

/* ---- the monitor: watches nothing ---------------------------------------- */

static bool
utilmr_monitor_valid(struct ofi_mem_monitor *monitor,
		     const struct ofi_mr_info *info, struct ofi_mr_entry *entry)
{
	(void) monitor;
	(void) info;
	(void) entry;
	return true;
}

static struct ofi_mem_monitor utilmr_monitor = {
	.iface = FI_HMEM_SYSTEM,
	.init = ofi_monitor_init,
	.cleanup = ofi_monitor_cleanup,
	.start = ofi_monitor_start_no_op,
	.stop = ofi_monitor_stop_no_op,
	.subscribe = ofi_monitor_subscribe_no_op,
	.unsubscribe = ofi_monitor_unsubscribe_no_op,
	.valid = utilmr_monitor_valid,
	.name = "none",
};

static pthread_once_t utilmr_once = PTHREAD_ONCE_INIT;

/* What fi_ini does for these sources: the page sizes the buffer pool reads,
 * and the monitor's list and state. */
static void
utilmr_init_once(void)
{
	ofi_mem_init();
	utilmr_monitor.init(&utilmr_monitor);
}

/* ---- registrations ------------------------------------------------------- */

static int
utilmr_add_region(struct ofi_mr_cache *cache, struct ofi_mr_entry *entry)
{
	struct utilmr *c = container_of(cache, struct utilmr, cache);
	struct utilmr_registration *r = (void *) entry->data;

	return c->cfg.reg(c->cfg.ctx, entry->info.iov.iov_base,
			  entry->info.iov.iov_len, c->cfg.access, 0, &r->mr,
			  &r->desc);
}

static void
utilmr_delete_region(struct ofi_mr_cache *cache, struct ofi_mr_entry *entry)
{
	struct utilmr *c = container_of(cache, struct utilmr, cache);
	struct utilmr_registration *r = (void *) entry->data;

	c->cfg.close(c->cfg.ctx, r->mr);
}

/* ---- the cache ----------------------------------------------------------- */

int
utilmr_create(const struct utilmr_config *cfg, struct utilmr **cache)
{
	struct ofi_mem_monitor *monitors[OFI_HMEM_MAX] = {
		[FI_HMEM_SYSTEM] = &utilmr_monitor,
	};
	struct utilmr *c;
	int ret;

	pthread_once(&utilmr_once, utilmr_init_once);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->cfg = *cfg;
	c->cache.entry_data_size = sizeof(struct utilmr_registration);
	c->cache.add_region = utilmr_add_region;
	c->cache.delete_region = utilmr_delete_region;
	/* As a provider sets them (efa_mr_cache_open), before the init reads
	 * them. */
	cache_params.max_cnt = cfg->max_cnt;
	cache_params.max_size = cfg->max_size;
	ret = ofi_mr_cache_init(NULL, monitors, &c->cache);
	if (ret) {
		free(c);
		return ret;
	}
	*cache = c;
	return 0;
}

void
utilmr_destroy(struct utilmr *cache)
{
	ofi_mr_cache_cleanup(&cache->cache);
	free(cache);
}

int
utilmr_acquire(struct utilmr *cache, uintptr_t start, uintptr_t end,
	       void **lease)
{
	struct ofi_mr_info info = {0}; /* as efa_mr_cache_regattr fills it */
	struct ofi_mr_entry *entry;
	int ret;

	info.iov.iov_base = (void *) start;
	info.iov.iov_len = end - start;
	info.iface = FI_HMEM_SYSTEM;
	ret = ofi_mr_cache_search(&cache->cache, &info, &entry);
	if (ret)
		return ret;
	*lease = entry;
	return 0;
}

void
utilmr_release(struct utilmr *cache, void *lease)
{
	ofi_mr_cache_delete(&cache->cache, lease);
}

/* What a monitor's handler does for each cache it serves (ofi_monitor_notify
 * under mm_lock), for this one cache. */
void
utilmr_invalidate(struct utilmr *cache, uintptr_t start, uintptr_t end)
{
	pthread_mutex_lock(&mm_lock);
	ofi_mr_cache_notify(&cache->cache, (const void *) start, end - start);
	pthread_mutex_unlock(&mm_lock);
}
