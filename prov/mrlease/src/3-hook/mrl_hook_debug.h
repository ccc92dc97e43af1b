/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TEST-ONLY: counters proving the passthrough layer is in the call path.
 *
 * Any hook object answers fi_open_ops(fid, MRL_DEBUG_OPS_1, 0, &ops, NULL)
 * with a struct mrl_debug_ops; ops->read() copies the process-wide counts of
 * the plugin that owns the object (mrlease and mrcheck each keep their own).
 * Counts only grow; they are updated with relaxed atomics on the control
 * path (open, close, event mapping) and in the dynamic-rbuf trampoline,
 * which runs once per message a utility provider receives that way. Not
 * installed, not a public API: the passthrough's units include it, and the
 * tests by path ("3-hook/mrl_hook_debug.h") to compare counts before and
 * after an action.
 */
#ifndef MRL_HOOK_DEBUG_H
#define MRL_HOOK_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "mrl_class.h" /* the counts are kept per wrapper class */

#define MRL_DEBUG_OPS_1 "mrlease_debug_v1"

enum mrl_debug_counter {
	MRL_DEBUG_OUTERMOST_DOMAINS, /* domains opened as the outermost instance
				      */
	MRL_DEBUG_INNER_DOMAINS, /* domains opened inside a utility provider */
	MRL_DEBUG_INNER_BYPASSED, /* such domains handed over unwrapped */
	MRL_DEBUG_EQ_EVENTS_MAPPED, /* EQ events whose fid was mapped back */
	MRL_DEBUG_POLL_MAPPED, /* poll results mapped back */
	MRL_DEBUG_FLOW_CTRL_OPENED, /* OFI_OPS_FLOW_CTRL translated */
	MRL_DEBUG_DYN_RBUF_SET, /* OFI_OPS_DYNAMIC_RBUF translated */
	MRL_DEBUG_DYN_RBUF_CALLS, /* get_rbuf calls mapped (one per message) */
	MRL_DEBUG_OPS_REFUSED, /* fi_open_ops/fi_set_ops names refused */
	MRL_DEBUG_NCOUNTERS
};

struct mrl_debug_counts {
	uint64_t opened[MRL_NCLASS]; /* wrappers created, per class */
	uint64_t closed[MRL_NCLASS]; /* wrappers closed (fi_close returned 0) */
	uint64_t counter[MRL_DEBUG_NCOUNTERS];
};

struct mrl_debug_ops {
	size_t size;
	void (*read)(struct mrl_debug_counts *counts);
};

/* The passthrough's own counts (hook_fid.c), kept by its units. */
void mrl_hook_count_open(enum mrl_class cls);
void mrl_hook_count_close(enum mrl_class cls);
void mrl_hook_count(enum mrl_debug_counter which);
void mrl_hook_debug_snapshot(struct mrl_debug_counts *counts);

#endif /* MRL_HOOK_DEBUG_H */
