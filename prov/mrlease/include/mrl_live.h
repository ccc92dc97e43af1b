/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live statistics (FI_MRLEASE_STATS_LIVE=1): each process publishes the
 * statistics of its open lease-cache domains in a file of its own
 * (mrl_live_file.h has the layout and who may write what), which
 * mrlease-stat(1) reads while the process runs.
 *
 * How. A publisher thread, "mrl-stats", wakes every
 * FI_MRLEASE_STATS_INTERVAL ms and copies each domain's statistics query
 * (mrl_cache_domain_stats, the same as the extension's query_stats) into
 * the domain's slot. The hit path is not touched: the query reads the
 * counters it already keeps. The file and the thread are made at the first
 * domain open with the parameter set, in the user's own directory
 * (mrl_live_file.h says which and why); a directory that cannot hold the
 * file, or that is not the user's alone, gets one warning naming it (on
 * stderr when the log level hides warnings) and leaves live statistics off
 * for the process. The file goes at the provider's cleanup (fi_fini) or at
 * exit, whichever runs first, removed through the directory opened at start
 * whatever the working directory is then; a forked child publishes nothing
 * (the file is its parent's).
 *
 * Locks. One mutex (live.lock in mrl_live.c) protects the slots, the domain
 * table and the thread's life. Under it the publisher runs statistics
 * queries, which may apply the memory monitor's events (the barrier's
 * helper: cache locks, never a registrar call, never munmap of watched
 * memory); so it must never be taken by a thread holding a cache lock or
 * inside a read section, nor by the monitor's task. Domain open and close
 * take it with nothing else held.
 */
#ifndef MRL_LIVE_H
#define MRL_LIVE_H

#include <stdbool.h>

#include <rdma/fi_ext_mrlease.h>

struct mrl_cache_domain;

/* What a layer above adds to a domain's statistics (its own counters),
 * called under live.lock: it must take no lock a statistics query waits
 * for. */
typedef void (*mrl_live_more_fn)(void *arg, struct fi_mrlease_stats *stats);

/* Publish the domain from now on (nothing when live statistics are off);
 * more (may be NULL) adds to each of its snapshots until it is removed. */
void mrl_live_domain_add(struct mrl_cache_domain *dom, const char *provider,
			 bool outermost, mrl_live_more_fn more, void *more_arg);

/* Stop publishing it; call before the domain's statistics go. */
void mrl_live_domain_remove(struct mrl_cache_domain *dom);

/* Stop the publisher and remove the file (cleanup; idempotent). */
void mrl_live_fini(void);

#endif /* MRL_LIVE_H */
