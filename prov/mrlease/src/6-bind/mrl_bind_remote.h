/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The remote registry's part of the binding's domain life and of the
 * memory monitor's client (mrl_bind.c calls these); its rules are
 * mrl_bind.h's "Remote registry".
 */
#ifndef MRL_BIND_REMOTE_H
#define MRL_BIND_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fi_ext_mrlease.h>

#include "mrl_hook.h"

struct mrl_bind_remote;

/* A registry for `domain` (registering on domain->inner); prov_key: the
 * provider picks keys, so the requested key is not part of a request (nor
 * on an inner instance, whose utility provider reads keys back).
 * cached: FI_MRLEASE_REMOTE=cache and the monitor runs. 0 or -FI_ENOMEM. */
int mrl_bind_remote_open(struct mrl_domain *domain, bool prov_key, bool cached,
			 struct mrl_bind_remote **remote);

/* Before the inner domain closes: close every entry no MR handle holds;
 * the registry keeps working if the provider refuses the close. */
void mrl_bind_remote_close_unleased(struct mrl_bind_remote *remote);

/* The inner domain closed: retire what is left (leased entries close at
 * their handle's fi_close) and let the registry go with its last entry. */
void mrl_bind_remote_closed(struct mrl_bind_remote *remote);

/* For mrl_live_domain_add: the registry's counters into stats. */
void mrl_bind_remote_more(void *remote, struct fi_mrlease_stats *stats);

/* The monitor's client (mrl_monitor.h): retire live entries overlapping
 * [start, end) on the draining thread (closing nothing; true when an
 * FI_THREAD_SAFE domain's entries now wait for the closer); whether a live
 * entry or a miss in flight overlaps [lo, hi); on the closer, close what
 * FI_THREAD_SAFE domains have due and say when the next is. */
bool mrl_bind_remote_monitor_invalidate(uintptr_t start, uintptr_t end);
bool mrl_bind_remote_in_use(uintptr_t lo, uintptr_t hi);
int mrl_bind_remote_close_shared(void);

/* A forked child forgets the parent's registries (never closing them). */
void mrl_bind_remote_fork_child(void);

#endif /* MRL_BIND_REMOTE_H */
