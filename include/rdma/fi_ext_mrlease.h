/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrlease extension API.
 *
 * Obtained with fi_open_ops() on a fabric or domain opened while the
 * mrlease hook is active (FI_HOOK=mrlease):
 *
 *	struct fi_mrlease_ops *ops;
 *	ret = fi_open_ops(&domain->fid, FI_MRLEASE_OPS_1, 0, (void **)&ops,
 *NULL);
 *
 * Without the hook the call fails with -FI_ENOSYS. See fi_mrlease(7).
 */
#ifndef FI_EXT_MRLEASE_H
#define FI_EXT_MRLEASE_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_MRLEASE_OPS_1 "mrlease_ops_v1"

/* The power-of-two histograms of struct fi_mrlease_stats: bucket i holds
 * values in [2^(i + SHIFT), 2^(i + 1 + SHIFT)); bucket 0 also smaller ones,
 * the last bucket also larger ones. Sizes from 4 KiB, times from 128 ns. */
#define FI_MRLEASE_HIST_BUCKETS	   32
#define FI_MRLEASE_SIZE_HIST_SHIFT 12
#define FI_MRLEASE_NS_HIST_SHIFT   7

/* Counters of the lease cache, per domain or process-wide. */
struct fi_mrlease_stats {
	uint64_t lookups, hits, misses;
	uint64_t registrations, deregistrations;
	uint64_t invalidations; /* invalidate calls */
	uint64_t retired_leased; /* entries retired while a lease still held
				    them */
	uint64_t evictions;
	uint64_t entries; /* live cache entries */
	uint64_t leases; /* live leases */
	uint64_t registered_bytes; /* bytes covered by live registrations */
	/* Memory monitor (appended: a caller passing the older, smaller size
	 * gets the prefix it knows). */
	uint64_t monitor_events; /* unmap/remove/remap events read
				    (process-wide) */
	uint64_t
		monitor_invalidations; /* monitor events that retired entries */
	uint64_t not_retained; /* registrations kept only while leased:
				* their range was not watched */
	uint64_t deferred_closes; /* registrations a monitor invalidation
				   * left to another thread to close */
	/* Misses by why their range had no entry (appended; they add up to
	 * misses). A miss is put down to the last entry retired, or
	 * registration made, from the same first page. */
	uint64_t miss_cold; /* no such entry (first use, domain reopened,
			     * or the record of it was overwritten) */
	uint64_t miss_evicted; /* evicted by the caps (FI_MRLEASE_MAX_*) */
	uint64_t miss_invalidated; /* retired by the application's
				    * invalidate */
	uint64_t miss_monitor; /* retired by the memory monitor */
	uint64_t miss_churn; /* registered for its transfer only: unmapped
			      * recently (FI_MRLEASE_MONITOR_CHURN) */
	uint64_t miss_not_retained; /* registered for its transfer only:
				     * no monitor watched the range */
	/* Registrations by size: reg_size_hist[i] counts those of
	 * [2^(i + FI_MRLEASE_SIZE_HIST_SHIFT), 2^(i + 1 + SHIFT)) bytes, the
	 * first bucket everything smaller, the last everything larger. */
	uint64_t reg_size_hist[FI_MRLEASE_HIST_BUCKETS];
	/* The provider's fi_mr_reg of the registrations the cache made, by
	 * duration in ns, likewise from 2^FI_MRLEASE_NS_HIST_SHIFT ns. */
	uint64_t reg_ns_hist[FI_MRLEASE_HIST_BUCKETS];
	/* Operands posted without a descriptor and shorter than
	 * FI_MRLEASE_MIN_SIZE (empty ones aside), forwarded without a lookup
	 * (appended; counted apart: in neither lookups nor misses). */
	uint64_t miss_below_min;
	/* Registrations (fi_mr_reg/regv/regattr) the hook handed to the
	 * provider unchanged and uncached, by why (appended): remote access
	 * with FI_MRLEASE_REMOTE=forward; device memory (iface other than
	 * FI_HMEM_SYSTEM); FI_MR_DMABUF; a FI_MR_ENDPOINT domain (MRs bound to
	 * one endpoint); FI_RMA_EVENT (on a FI_MR_RMA_EVENT domain, or asked);
	 * remote access whose ranges the memory monitor cannot watch; a
	 * requested key the registry could not register with; an
	 * authorization key; anything else (other flags, empty or NULL
	 * ranges, several ranges for local access, a failed cache
	 * registration). Each is one provider registration. */
	uint64_t fwd_remote, fwd_device, fwd_dmabuf, fwd_endpoint;
	uint64_t fwd_rma_event, fwd_no_monitor, fwd_key, fwd_auth_key;
	uint64_t fwd_other;
	/* The remote registry (FI_MRLEASE_REMOTE=cache): remote-access
	 * requests looked up, served by a cached registration, registered
	 * with the provider; registrations closed; live entries (a gauge),
	 * of them with no MR of the application (a gauge); closed after
	 * FI_MRLEASE_REMOTE_IDLE, by invalidate or the memory monitor, and
	 * by FI_MRLEASE_REMOTE_MAX or a provider's refusal. */
	uint64_t remote_lookups, remote_hits, remote_registrations;
	uint64_t remote_deregistrations, remote_entries, remote_idle;
	uint64_t remote_idle_closes, remote_invalidated, remote_evicted;
};

/* What mrlease counts as requests (FI_MRLEASE_STATS, mrlease-stat): every
 * NULL-descriptor lookup and every registration request, the ones the
 * provider registered unchanged included, so the hit rate (hits of both
 * caches over requests) counts what the caches did not serve. */
static inline uint64_t
fi_mrlease_requests(const struct fi_mrlease_stats *s)
{
	return s->lookups + s->remote_lookups + s->fwd_remote + s->fwd_device +
	       s->fwd_dmabuf + s->fwd_endpoint + s->fwd_rma_event +
	       s->fwd_no_monitor + s->fwd_key + s->fwd_auth_key + s->fwd_other;
}

/* Hits over requests, 0 with no request. */
static inline double
fi_mrlease_hit_rate(const struct fi_mrlease_stats *s)
{
	uint64_t requests = fi_mrlease_requests(s);

	return requests ?
		       (double) (s->hits + s->remote_hits) / (double) requests :
		       0.0;
}

/*
 * Span resolver: given an operand [addr, addr + len), return in *span_base
 * and *span_len the extent that holds it (for example the allocator extent),
 * and 0; or a non-zero value to register only the operand's own pages. A
 * span that does not contain the operand is ignored.
 */
typedef int (*fi_mrlease_span_fn)(void *arg, const void *addr, size_t len,
				  void **span_base, size_t *span_len);

struct fi_mrlease_ops {
	size_t size;
	/* Retire every cached registration overlapping [addr, addr + len) in
	 * every domain; call before the pages are reclaimed. */
	int (*invalidate)(const void *addr, size_t len);
	/* Register an arena now; fi_close(&(*mr)->fid) releases the pin. */
	int (*pin)(struct fid_domain *domain, const void *addr, size_t len,
		   struct fid_mr **mr);
	/* Install (or with fn NULL, remove) the domain's span resolver. */
	int (*set_span)(struct fid_domain *domain, fi_mrlease_span_fn fn,
			void *arg);
	/* Statistics of one domain, or process-wide with domain NULL. */
	int (*query_stats)(struct fid_domain *domain,
			   struct fi_mrlease_stats *stats, size_t size);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_MRLEASE_H */
