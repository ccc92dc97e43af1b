/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the data-path tests and benchmarks add to the shared pair of
 * fixture_rdm.h: the loopback providers they run on, re-executing the
 * program with another FI_HOOK (libfabric reads it once per process), the
 * loaded plugin's provider, and anonymous memory of their own.
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

/* The mrlease plugin's provider as libfabric got it (NULL: not loaded):
 * its cleanup is what fi_fini runs at exit. */
struct fi_provider *xfer_plugin_provider(void);

/*
 * One message from ep[0] to ep[1] with desc NULL on both sides (both
 * operands leased), completions read (CQ, or counters: `n` counts the
 * rounds of a counters-only pair, the counters' expected values), bytes
 * checked. Returns 0, a negative fi_errno, or XFER_WRONG_BYTES.
 */
#define XFER_WRONG_BYTES 1
int xfer_round_trip(struct mrlt_pair *p, char *src, char *dst, size_t len,
		    uint64_t seed, uint64_t n);
/* What a round trip's non-zero result says. */
const char *xfer_round_error(int ret);

/* len bytes of fresh private anonymous memory, or NULL. */
void *xfer_map_anon(size_t len);

#endif /* XFER_UTIL_H */
