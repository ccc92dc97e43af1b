/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The FI_MRLEASE_OPS_1 extension (include/rdma/fi_ext_mrlease.h), answered by
 * fi_open_ops on an mrlease fabric or domain.
 *
 * Every entry checks all of its input before it changes anything, so a bad
 * call returns -FI_EINVAL and leaves the cache as it was. invalidate is the
 * one an allocator calls from its purge path: it takes no lock of its own,
 * allocates nothing, and the cache closes the retired registrations after
 * dropping its lock, so it may run re-entrantly (for example from a purge
 * triggered by the provider's own malloc inside a registration).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_ext_mrlease.h>

#include "mrl_bind.h"
#include "mrl_plugin.h"
#include "mrl_monitor.h"

/* [addr, addr + len) as [*start, *end); false when addr + len wraps the
 * address space. */
static bool
mrl_ext_range(const void *addr, size_t len, uintptr_t *start, uintptr_t *end)
{
	*start = (uintptr_t) addr;
	*end = *start + len;
	return *end >= *start;
}

static int
mrl_ext_invalidate(const void *addr, size_t len)
{
	struct mrl_cache *cache;
	uintptr_t start, end;

	if (!mrl_ext_range(addr, len, &start, &end))
		return -FI_EINVAL;
	if (!len)
		return 0;

	/* No domain opened yet: nothing is cached, nothing to retire. */
	cache = mrl_bind_cache();
	if (!cache)
		return 0;
	/* Remote entries too: a peer's key must not outlive the pages. */
	mrl_bind_remote_invalidate(start, end);
	return mrl_cache_invalidate(cache, start, end);
}

static int
mrl_ext_pin(struct fid_domain *domain, const void *addr, size_t len,
	    struct fid_mr **mr)
{
	struct mrl_bind_domain *lease_domain;
	struct mrl_registration *reg;
	uintptr_t start, end;
	int ret;

	lease_domain = mrl_bind_domain_from_fid(domain);
	if (!lease_domain || !addr || !len || !mr ||
	    !mrl_ext_range(addr, len, &start, &end))
		return -FI_EINVAL;

	ret = mrl_cache_pin(lease_domain->cache_domain, start, len, &reg);
	if (ret)
		return ret;

	ret = mrl_bind_mr_open(lease_domain->domain, reg, MRL_BIND_PIN, NULL,
			       mr);
	if (ret)
		goto err_unpin;
	return 0;

err_unpin:
	mrl_cache_unpin(reg);
	return ret;
}

static int
mrl_ext_set_span(struct fid_domain *domain, fi_mrlease_span_fn fn, void *arg)
{
	struct mrl_bind_domain *lease_domain;

	lease_domain = mrl_bind_domain_from_fid(domain);
	if (!lease_domain)
		return -FI_EINVAL;
	mrl_cache_set_span(lease_domain->cache_domain, fn, fn ? arg : NULL);
	return 0;
}

/*
 * size lets the record grow: an older caller passes a smaller size and gets
 * the prefix it knows; a newer one passes a larger size and finds zeros past
 * what this version counts.
 */
static int
mrl_ext_query_stats(struct fid_domain *domain, struct fi_mrlease_stats *stats,
		    size_t size)
{
	struct mrl_bind_domain *lease_domain = NULL;
	struct fi_mrlease_stats counts;
	struct mrl_cache *cache;

	if (!stats || !size)
		return -FI_EINVAL;
	if (domain) {
		lease_domain = mrl_bind_domain_from_fid(domain);
		if (!lease_domain)
			return -FI_EINVAL;
	}

	memset(&counts, 0, sizeof(counts));
	if (lease_domain) {
		mrl_cache_domain_stats(lease_domain->cache_domain, &counts);
	} else {
		cache = mrl_bind_cache();
		if (cache)
			mrl_cache_stats(cache, &counts);
	}
	mrl_bind_remote_stats(lease_domain, &counts);
	/* The monitor is the process's: the same figure for every domain. */
	counts.monitor_events = mrl_monitor_events();

	if (size <= sizeof(counts)) {
		memcpy(stats, &counts, size);
	} else {
		memcpy(stats, &counts, sizeof(counts));
		memset((char *) stats + sizeof(counts), 0,
		       size - sizeof(counts));
	}
	return 0;
}

static struct fi_mrlease_ops mrl_ext_ops = {
	.size = sizeof(struct fi_mrlease_ops),
	.invalidate = mrl_ext_invalidate,
	.pin = mrl_ext_pin,
	.set_span = mrl_ext_set_span,
	.query_stats = mrl_ext_query_stats,
};

int
mrl_ext_ops_open(struct fid *hook_fid, const char *name, uint64_t flags,
		 void **ops, void *context)
{
	(void) context;

	if (!name || strcmp(name, FI_MRLEASE_OPS_1))
		return -FI_ENOSYS;
	if (hook_fid->fclass != FI_CLASS_FABRIC &&
	    hook_fid->fclass != FI_CLASS_DOMAIN)
		return -FI_ENOSYS;
	if (flags)
		return -FI_EBADFLAGS;
	if (!ops)
		return -FI_EINVAL;
	mrl_bind_keep_loaded();
	*ops = &mrl_ext_ops;
	return 0;
}
