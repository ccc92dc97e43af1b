/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the end-to-end data-path tests and bench/xfer_bench: a pair of
 * RDM endpoints on one domain over a real provider on loopback, completion
 * reaping with a bounded number of polls, registrations with the right key
 * and remote address for the domain's mr_mode, and re-executing the program
 * with another FI_HOOK (libfabric reads it once per process).
 *
 * Both endpoints share one CQ (or one pair of counters), so reading it
 * progresses both sides; tests tell completions apart by context.
 */
#ifndef XFER_UTIL_H
#define XFER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "rdma/fi_ext_mrlease.h"
#include "mrcheck/mrcheck.h"

/* The providers every data-path test runs on, NULL-terminated. */
extern const char *const xfer_providers[];

struct xfer_opts {
	const char *prov;      /* fabric_attr->prov_name, e.g. "tcp;ofi_rxm" */
	uint64_t caps;         /* 0: FI_MSG|FI_TAGGED|FI_RMA|FI_ATOMIC */
	bool mr_local;         /* open the domain with FI_MR_LOCAL in mr_mode */
	bool selective;        /* bind the CQ with FI_SELECTIVE_COMPLETION */
	bool counters_only;    /* bind counters, no CQ */
	bool thread_safe;      /* ask for FI_THREAD_SAFE */
	uint64_t rx_op_flags;  /* e.g. FI_MULTI_RECV */
	size_t min_multi_recv; /* FI_OPT_MIN_MULTI_RECV when non-zero */
	enum fi_wait_obj cq_wait; /* the CQ's wait object (0: FI_WAIT_NONE) */
};

struct xfer_pair {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;                 /* NULL when counters_only */
	struct fid_cntr *tx_cntr, *rx_cntr; /* only when counters_only */
	struct fid_ep *ep[2];
	fi_addr_t addr[2];                 /* addr[i]: ep[i]'s address in av */
	struct fi_mrlease_ops *mrl;        /* NULL without the mrlease hook */
	struct mrcheck_ops *chk;           /* domain counters, NULL without mrcheck */
	struct mrcheck_ops *chk_all;       /* process-wide counters */
	uint64_t next_key;
	/* Completions read while retrying a post (XFER_POST), handed out
	 * first by xfer_reap. */
	struct xfer_comp *stash;
	size_t nstash;
	uint64_t violations0, acknowledged0; /* process-wide, at open */
};

/*
 * Open fabric, domain, AV, CQ/counters and two enabled endpoints that know
 * each other. Returns -FI_ENODATA when the provider is not available (skip),
 * another -FI_E* code on failure. On failure nothing stays open.
 */
int xfer_pair_open(const struct xfer_opts *opts, struct xfer_pair *pair);
/*
 * xfer_pair_open for the current test case: a provider or feature that is
 * missing makes the case a skip, any other failure (or the mrlease hook not
 * active) fails it. True when the pair is open with the hook on.
 */
bool xfer_pair_open_hooked(const struct xfer_opts *opts, struct xfer_pair *pair);
/* The same for a case that needs FI_THREAD_SAFE endpoints (opts->thread_safe):
 * a provider that grants less makes the case a skip. */
bool xfer_pair_open_hooked_safe(const struct xfer_opts *opts, struct xfer_pair *pair);
/* Close everything; returns the first non-zero fi_close result. */
int xfer_pair_close(struct xfer_pair *pair);

/* One completion, from a CQ entry or an error entry. */
struct xfer_comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data, tag;
	int err;  /* 0, or the positive FI_E* of an error entry */
};

/* Poll budget for one completion: a test that hangs fails instead. */
#define XFER_MAX_POLLS 50000000L
#define XFER_STASH 1024

/*
 * Read exactly n completions (error entries included) from pair's CQ into
 * comps; returns n, or -FI_ETIMEDOUT when the poll budget runs out, or the
 * CQ's error code.
 */
int xfer_reap(struct xfer_pair *pair, struct xfer_comp *comps, size_t n);
/* The same with a poll budget of its own. */
int xfer_reap_within(struct xfer_pair *pair, struct xfer_comp *comps, size_t n,
		     long max_polls);
/* Read whatever is there now (at most n, one read call); returns the count. */
int xfer_reap_some(struct xfer_pair *pair, struct xfer_comp *comps, size_t n);
/* Drive progress once (read the CQ into the stash, or read counters). */
void xfer_progress(struct xfer_pair *pair);

/* Post with expr, retrying while it returns -FI_EAGAIN (connection set-up,
 * full queues) and driving progress in between; bounded. */
#define XFER_POST(pair, expr)                                                  \
	({                                                                     \
		ssize_t xfer_r_;                                               \
		long xfer_n_ = 0;                                              \
		while ((xfer_r_ = (expr)) == -FI_EAGAIN &&                     \
		       ++xfer_n_ < XFER_MAX_POLLS)                             \
			xfer_progress(pair);                                   \
		xfer_r_;                                                       \
	})

/* Wait until counter reaches value (bounded); counters_only pairs. */
int xfer_wait_cntr(struct fid_cntr *cntr, uint64_t value);

/*
 * Register buf with access; picks a requested key where the domain lacks
 * FI_MR_PROV_KEY and binds/enables where it has FI_MR_ENDPOINT.
 */
int xfer_mr_reg(struct xfer_pair *pair, void *buf, size_t len, uint64_t access,
		struct fid_mr **mr);
/* The remote address to give RMA/atomic calls for target buf inside mr. */
uint64_t xfer_rma_addr(const struct xfer_pair *pair, const void *mr_base,
		       const void *buf);

/* Live leases of the domain (query_stats), or -1 without the hook. */
long long xfer_live_leases(const struct xfer_pair *pair);
/* mrcheck violations (process-wide) since the pair opened, or -1 without
 * mrcheck. */
long long xfer_violations(const struct xfer_pair *pair);

/*
 * Make sure this process runs with FI_HOOK=hook (NULL: no hook), the mrcheck
 * plugin on FI_PROVIDER_PATH and the given extra "NAME=value" settings
 * (NULL-terminated, may be NULL). If the environment differs, re-executes
 * /proc/self/exe with argv and does not return; otherwise returns.
 */
void xfer_reexec(char **argv, const char *hook, const char *const *extra_env);

/* Wait (bounded progress, no sleeping) until buf holds the pattern of seed,
 * for the target of a write whose initiator completion may come first.
 * Returns -1 when it does, else the first differing index. */
long xfer_wait_pattern(struct xfer_pair *pair, const void *buf, size_t len,
		       uint64_t seed);

/* A deterministic byte pattern for seed and offset. */
static inline uint8_t xfer_pattern(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + i;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return (uint8_t)(x >> 32);
}
void xfer_fill(void *buf, size_t len, uint64_t seed);
/* Index of the first byte that differs from the pattern, or -1. */
long xfer_verify(const void *buf, size_t len, uint64_t seed);

#endif /* XFER_UTIL_H */
