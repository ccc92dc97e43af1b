/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrlease's run-time parameters: every knob is a FI_MRLEASE_* environment
 * variable defined with fi_param_define(), so `fi_info -e` lists it with its
 * type, default and meaning whenever libmrlease-fi.so is on the provider path.
 *
 * Life cycle: fi_prov_ini() calls mrl_params_define() (fi_info -e only sees
 * parameters defined there) and then mrl_params_load(), which fills the
 * process-wide `mrl_params` once. Nothing writes it afterwards, so any thread
 * may read it without a lock.
 *
 * Parsing is strict (libfabric 1.17's fi_param_get turns "abc" into 0 and
 * "-1" into SIZE_MAX for integer types): a number that is not a whole number
 * (optionally with a K/M/G/T binary suffix) inside its range, a boolean that
 * is none of 0/1/yes/no/true/false/on/off, a choice that is none of its
 * words, or empty text is refused: the default stays in place, and one line
 * on stderr names the variable, the value and the default used. That line
 * is printed at libfabric's default log level too (a typo must not pass
 * unseen), through FI_WARN when warnings are logged anyway.
 */
#ifndef MRL_PARAMS_H
#define MRL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/providers/fi_prov.h>

#include "mrl_cache.h"

/*
 * Defaults. The cache caps are the lease cache's own (mrl_cache.h explains
 * them: below verbs/efa MR limits, above a real job's working set).
 */
#define MRL_PARAMS_DEFAULT_MAX_COUNT ((size_t) MRL_CACHE_DEFAULT_MAX_COUNT)
#define MRL_PARAMS_DEFAULT_MAX_SIZE  ((size_t) MRL_CACHE_DEFAULT_MAX_SIZE)
/*
 * The smallest operand the outermost instance resolves when the provider
 * does not require FI_MR_LOCAL: rxm's eager limit. Below it the providers
 * here copy the payload (rxm eager, shm inline, efa eager within one MTU),
 * so a descriptor buys nothing, while a lease adds a cache lookup, an
 * operation context and a translated completion to every operation
 * (bench/README.md, xfer_ir, counts their instructions).
 */
#define MRL_PARAMS_DEFAULT_MIN_SIZE ((size_t) 16384)
#define MRL_PARAMS_DEFAULT_STATS    false
/* The cache's own (mrl_cache.h): only caches far beyond the default caps
 * reach it. */
#define MRL_PARAMS_DEFAULT_HUGEPAGE_AFTER \
	((size_t) MRL_CACHE_DEFAULT_HUGE_AFTER)
/* Off: an inner instance that cannot resolve anything (a utility provider's
 * core domain without FI_MR_LOCAL) steps aside; every operation then
 * crosses one hook layer, not two (bench/README.md, xfer_bench, has what
 * a layer costs). */
#define MRL_PARAMS_DEFAULT_HOOK_INNER false
/* Misses passed per range the monitor saw unmapped (mrl_bind_churn.h). */
#define MRL_PARAMS_DEFAULT_MONITOR_CHURN ((size_t) 8)

/*
 * Remote-access registrations (mrl_bind.h, "Remote registry"): forwarded by
 * default, so a key dies when the application closes its MR.
 * Idle: an RPC server re-registers a request's buffer within microseconds to
 * milliseconds of closing it, so one second keeps every such repeat a hit,
 * while a key the application closed answers a peer for at most a second
 * more, well inside the timeouts after which RPC clients give up on a reply.
 * Max: idle entries kept per domain, far above the buffers an RPC server
 * cycles through, far below provider MR limits.
 */
#define MRL_PARAMS_DEFAULT_REMOTE_IDLE ((size_t) 1000)
#define MRL_PARAMS_MIN_REMOTE_IDLE     ((size_t) 1)
#define MRL_PARAMS_MAX_REMOTE_IDLE     ((size_t) 3600000)
#define MRL_PARAMS_DEFAULT_REMOTE_MAX  ((size_t) 1024)
#define MRL_PARAMS_MIN_REMOTE_MAX      ((size_t) 1)
#define MRL_PARAMS_MAX_REMOTE_MAX      ((size_t) 1 << 20)

/* Live statistics (mrl_live.h): off; files in /dev/shm, rewritten once a
 * second (what a person watching mrlease-stat -w reads). */
#define MRL_PARAMS_DEFAULT_STATS_LIVE	  false
#define MRL_PARAMS_DEFAULT_STATS_DIR	  "/dev/shm"
#define MRL_PARAMS_DEFAULT_STATS_INTERVAL ((size_t) 1000)

/*
 * Ranges (inclusive; the lower bound is 0 unless named). Wide enough for any
 * real job, narrow enough that no arithmetic on a value can wrap: a count or
 * size times a small factor, churn shifted by its 16-fold growth, and an
 * interval in milliseconds turned into nanoseconds and added to a clock.
 */
/* Far beyond any provider's MR limit (verbs and efa: millions). */
#define MRL_PARAMS_MAX_MAX_COUNT ((size_t) 1 << 30)
/* Bytes (MAX_SIZE, HUGEPAGE_AFTER): beyond a node's memory. */
#define MRL_PARAMS_MAX_BYTES ((size_t) 64 << 40)
/* An operand larger than this is a transfer no threshold should skip. */
#define MRL_PARAMS_MAX_MIN_SIZE	     ((size_t) 1 << 40)
#define MRL_PARAMS_MAX_MONITOR_CHURN ((size_t) 65536)
/* 1 ms to an hour; a publisher slower than that shows nothing live. */
#define MRL_PARAMS_MIN_STATS_INTERVAL ((size_t) 1)
#define MRL_PARAMS_MAX_STATS_INTERVAL ((size_t) 3600000)

/* FI_MRLEASE_MONITOR: when the memory monitor (mrl_monitor.h) runs. */
enum mrl_monitor_mode {
	MRL_MONITOR_AUTO, /* for domains whose provider pins pages */
	MRL_MONITOR_UFFD, /* for every domain (tests, benchmarks) */
	MRL_MONITOR_NONE,
};

/* FI_MRLEASE_REMOTE: what becomes of remote-access registrations. */
enum mrl_remote_mode {
	MRL_REMOTE_FORWARD, /* to the provider, unchanged, uncached */
	MRL_REMOTE_CACHE, /* the binding's remote registry: exact matches */
};

/* FI_MRLEASE_PINNING: which providers' registrations pin pages. */
enum mrl_pinning_mode {
	MRL_PINNING_AUTO, /* decided from the core provider's name */
	MRL_PINNING_YES, /* every provider */
	MRL_PINNING_NO, /* none */
};

struct mrl_params {
	size_t max_count; /* FI_MRLEASE_MAX_COUNT: cached entries per domain, 0
			     = no cap */
	size_t max_size; /* FI_MRLEASE_MAX_SIZE: cached bytes per domain, 0 = no
			    cap */
	size_t min_size; /* FI_MRLEASE_MIN_SIZE: smallest operand resolved
			    without FI_MR_LOCAL */
	bool stats; /* FI_MRLEASE_STATS: print a domain's statistics when it
		       closes */
	size_t hugepage_after; /* FI_MRLEASE_HUGEPAGE_AFTER: cache memory before
				  huge pages, 0 = never */
	bool hook_inner; /* FI_MRLEASE_HOOK_INNER: wrap inner domains with
			    nothing to do */
	int monitor; /* FI_MRLEASE_MONITOR: enum mrl_monitor_mode */
	int pinning; /* FI_MRLEASE_PINNING: enum mrl_pinning_mode */
	size_t monitor_churn; /* FI_MRLEASE_MONITOR_CHURN: misses registered per
			       * operation in a range just unmapped, 0 = none */
	bool stats_live; /* FI_MRLEASE_STATS_LIVE: publish a live statistics
			  * file (mrl_live.h) */
	const char *stats_dir; /* FI_MRLEASE_STATS_DIR: where it goes */
	size_t stats_interval; /* FI_MRLEASE_STATS_INTERVAL: ms between
				* publishes, MRL_PARAMS_MIN_STATS_INTERVAL to
				* MRL_PARAMS_MAX_STATS_INTERVAL */
	int remote; /* FI_MRLEASE_REMOTE: enum mrl_remote_mode */
	size_t remote_idle; /* FI_MRLEASE_REMOTE_IDLE: ms an unleased remote
			     * entry stays cached */
	size_t remote_max; /* FI_MRLEASE_REMOTE_MAX: unleased remote entries
			    * per domain */
};

/* The values in force; the defaults until mrl_params_load() runs. */
extern struct mrl_params mrl_params;

/* Define every FI_MRLEASE_* parameter for `prov`; call from fi_prov_ini(). */
int mrl_params_define(const struct fi_provider *prov);

/* Read the environment into mrl_params, refusing (one line on stderr each)
 * every value that does not parse or is out of range. */
void mrl_params_load(const struct fi_provider *prov);

#endif /* MRL_PARAMS_H */
