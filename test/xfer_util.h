/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the data-path tests and benchmarks add to the shared pair of
 * fixture_rdm.h: the loopback providers they run on, and re-executing the
 * program with another FI_HOOK (libfabric reads it once per process).
 */
#ifndef XFER_UTIL_H
#define XFER_UTIL_H

#include "fixture_rdm.h"

/* The providers every data-path test runs on, NULL-terminated. */
extern const char *const xfer_providers[];

/*
 * Make sure this process runs with FI_HOOK=hook (NULL: no hook), the mrcheck
 * plugin on FI_PROVIDER_PATH and the given extra "NAME=value" settings
 * (NULL-terminated, may be NULL). If the environment differs, re-executes
 * /proc/self/exe with argv and does not return; otherwise returns.
 */
void xfer_reexec(char **argv, const char *hook, const char *const *extra_env);

/*
 * TO BE REMOVED: the shared pair's former names; no test uses them any
 * more (fixture_rdm.h's mrlt_ names instead). Delete this block;
 * -DMRLT_NO_COMPAT leaves it out.
 */
#ifndef MRLT_NO_COMPAT
#define xfer_opts mrlt_pair_opts
#define xfer_pair mrlt_pair
#define xfer_pair_open mrlt_pair_open
#define xfer_pair_open_hooked mrlt_pair_open_hooked
#define xfer_pair_open_hooked_safe mrlt_pair_open_hooked_safe
#define xfer_pair_close mrlt_pair_close
#define xfer_comp mrlt_comp
#define XFER_MAX_POLLS MRLT_MAX_POLLS
#define XFER_STASH MRLT_STASH
#define xfer_reap mrlt_reap
#define xfer_reap_within mrlt_reap_within
#define xfer_reap_some mrlt_reap_some
#define xfer_progress mrlt_pair_progress
#define XFER_POST MRLT_PAIR_POST
#define xfer_wait_cntr mrlt_wait_cntr
#define xfer_mr_reg mrlt_pair_mr_reg
#define xfer_rma_addr mrlt_pair_rma_addr
#define xfer_live_leases mrlt_live_leases
#define xfer_violations mrlt_violations
#define xfer_wait_pattern mrlt_wait_pattern
#define xfer_pattern mrlt_pattern
#define xfer_fill mrlt_fill
#define xfer_verify mrlt_verify
#endif /* MRLT_NO_COMPAT */

#endif /* XFER_UTIL_H */
