/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A window of operations in flight on one CQ, for the benchmarks that post
 * writes and wait for them (cost_bench, remote_bench): each operation owns
 * a slot, whose context the completion hands back and whose MR, when the
 * operation registered one, closes at its completion (as an application
 * registering per operation does).
 */
#ifndef BENCH_WINDOW_H
#define BENCH_WINDOW_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#define BU_WINDOW_MAX 16

struct bu_slot {
	struct fi_context2 ctx;
	struct fid_mr *mr; /* closed at the operation's completion */
};

struct bu_window {
	struct fid_cq *cq;
	const char *who; /* in messages: "cost_bench perop" */
	int size, nfree;
	int free[BU_WINDOW_MAX];
	struct bu_slot slot[BU_WINDOW_MAX];
};

/* size slots (at most BU_WINDOW_MAX), every one free. */
void bu_window_init(struct bu_window *w, struct fid_cq *cq, int size,
		    const char *who);
/* A free slot, its MR NULL; the caller posts with &slot->ctx. */
struct bu_slot *bu_window_take(struct bu_window *w);
/* Give back a slot whose operation was not posted (its MR closed). */
void bu_window_put(struct bu_window *w, struct bu_slot *slot);
int bu_window_index(const struct bu_window *w, const struct bu_slot *slot);
/* Read completions until at most keep operations are in flight; -FI_EIO
 * (said on stderr) when one failed. */
int bu_window_reap(struct bu_window *w, int keep);
/* n operations, post() issuing each into the slot it is given, then wait
 * for all of them; the first error. */
int bu_window_run(struct bu_window *w, long n,
		  int (*post)(void *arg, struct bu_slot *slot), void *arg);

#endif /* BENCH_WINDOW_H */
