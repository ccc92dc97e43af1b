/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/xfer_bench: fi_write message rate over loopback tcp;ofi_rxm, 8 B to
 * 64 KiB, in five modes, in one run:
 *
 *   1 "app"    no hook, the application registers its buffer once
 *   2 "lease"  FI_HOOK=mrlease, desc NULL (the cache resolves operands of at
 *              least FI_MRLEASE_MIN_SIZE; smaller ones pass through)
 *   3 "perop"  no hook, the application registers and closes per operation
 *   4 "noop"   FI_HOOK=noop (libfabric's own passthrough hook), app descs
 *   5 "lease0" as 2 with FI_MRLEASE_MIN_SIZE=0: every operand resolved, what
 *              the default minimum size saves (informs its choice)
 *
 * libfabric reads FI_HOOK once per process, so every mode runs in a child
 * (this program re-executed with --child MODE and its environment).
 *
 * Method: the modes are interleaved slice by slice, so that they share the
 * host's noise. On a shared VM the machine's speed drifts over seconds to
 * minutes; modes measured a few seconds apart saw different machines (modes
 * 2 and 5, identical code at 16 KiB and up, differed by 3%). The parent
 * starts one --serve child per mode at once, all on the one CPU
 * bu_pin_one_cpu() picks. Each child opens its endpoint pair, registers, warms
 * up every size, says "ready" and then runs one timed slice per command on
 * its stdin ("slice SIZE N": N writes of SIZE, XFER_BENCH_WINDOW of them in
 * flight; it answers with the elapsed seconds). The parent commands one child
 * at a time, so the others wait in read() and the slice has the CPU to itself.
 * Per size: one calibration round (every mode one short slice; N is then chosen
 * so a slice takes about SLICE_SECONDS at the modes' median rate), then
 * XFER_BENCH_REPS rounds in which every mode runs one slice of N writes, in
 * a different pseudo-random mode order per round. The rounds are shared by
 * XFER_BENCH_GENERATIONS sets of fresh children (see measure(): a process
 * keeps its own bias, which pairing cannot cancel; modes 2 and 5 run the
 * same code at 16 KiB and up, yet one pair of processes measured 0.960
 * and 0.986 against mode 1). A round lasts well under
 * a second, so the two slices of a pair see nearly the same machine. What
 * pairing does not remove is interference shorter than a round (another
 * process on the CPU, or memory traffic from the other CPU at 16 KiB and
 * up, during one slice): it hits one side of a pair and only slows it. The
 * median over rounds drops those rounds while they are a minority; the
 * quartiles printed show how often they were not (on this 2-vCPU VM about
 * +-1% quiet, +-5-10% with a compiler running on the other CPU).
 *
 * Figures per size: each mode's median slice rate, and for the pairs
 * (2)/(1), (2)/(4), (2)/(3), (5)/(1), (4)/(1) the MEDIAN OVER ROUNDS OF THE
 * ROUND'S PAIRED RATIO (host drift cancels within a round) with its
 * interquartile range, which is the measurement's resolution. (4)/(1) is
 * libfabric's noop hook against no hook: what being hooked costs at all
 * (with tcp;ofi_rxm the noop hook is installed twice, over rxm and over
 * tcp; mrlease's inner instance steps aside there unless
 * FI_MRLEASE_HOOK_INNER=1, so mode 2 crosses one layer). The
 * RESULT keys r21_SIZE, r24_SIZE, r23_SIZE, r51_SIZE, r41_SIZE, min_r21,
 * min_r24 are these paired medians;
 * min_r21x and min_r24x are the smallest ratio of the medians over the sizes
 * (printed per size on a '#' line). Every round's (2)/(1) and (2)/(4) are
 * printed on '#' lines. Registrations: each mode's provider registrations
 * in the timed slices per size, and its child's total over the whole run
 * (warm-up, calibration and every round: regs_MODE in RESULT). Mode 2/5: the
 * cache's registrations from query_stats, process-wide so the instance under
 * rxm counts too; modes 1, 3, 4: the application's own fi_mr_reg calls.
 *
 * A child run without --serve (--child MODE [--sizes S] [--iters N]
 * [--window W] [--empty-polls P] [--op write|send]) is a single run: per
 * size a warm-up and BLOCKS timed slices, "size S rate R regs G polls P ops
 * O" lines (the fastest slice's rate), then "total_regs T" and "totals
 * polls P ops O" over the whole child. With --op send it measures fi_send
 * to the other endpoint with a fi_recv posted first (both with desc NULL in
 * modes 2 and 5), one operation = both completions. bench/xfer_ir.sh runs
 * such children under callgrind for the hook's instructions per operation
 * (the only instruction counts; bench/README.md).
 *
 * Environment: XFER_BENCH_REPS (rounds per size, default 40, at most
 * MAX_REPS), XFER_BENCH_GENERATIONS (sets of fresh children sharing the
 * rounds, default 20: a process's own bias, about +-2% at 8 B to 4 KiB and
 * +-3-5% at 16 KiB from one set of children to the next, is what limits
 * the resolution; about 5 minutes in all),
 * XFER_BENCH_TIMEOUT (seconds a child may take to answer before it is
 * killed, default 120), XFER_BENCH_WINDOW (writes in flight per child,
 * default 32), XFER_BENCH_CPU (the one CPU every child runs on; default the
 * highest-numbered allowed, -1 unpinned), XFER_BENCH_PROV (default
 * tcp;ofi_rxm).
 * Last line: RESULT key=value ...
 *
 * Sources: xfer_bench_child.c (a child: one mode, its endpoints and timed
 * slices), xfer_bench_rounds.c (the parent's children and interleaved
 * rounds), xfer_bench.c (figures, RESULT line, command line).
 */
#ifndef XFER_BENCH_H
#define XFER_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_util.h"

enum {
	MODE_APP = 1,
	MODE_LEASE = 2,
	MODE_PEROP = 3,
	MODE_NOOP = 4,
	MODE_LEASE_ALL = 5,
	NMODES = 5
};

/* Modes in which mrlease resolves the operands (desc NULL). */
static inline bool
mode_leases(int mode)
{
	return mode == MODE_LEASE || mode == MODE_LEASE_ALL;
}

#define NSIZES 6
extern const char *const mode_names[NMODES + 1];
extern const size_t bench_sizes[NSIZES];
#define MAX_BUF	   65536
#define MAX_WINDOW 64
#define MAX_REPS   160

/* The provider measured (XFER_BENCH_PROV). */
const char *bench_prov(void);

/* ---- a child: one mode (xfer_bench_child.c) -------------------------- */

struct child_opts {
	int mode;
	size_t sizes[NSIZES];
	size_t nsizes;
	long iters; /* 0: per-size default */
	int window;
	long empty_polls;
	bool send; /* --op send: fi_send/fi_recv pairs, not fi_write */
	bool serve; /* --serve: timed slices on the parent's command */
};

/* 30000 writes below 16 KiB (rates within 1% run to run when pinned), 1 GiB
 * of data from 16 KiB up (their runs move by several percent: memory
 * bandwidth is the host's). */
long default_iters(size_t size);

/* A single run: every size of o, each warmed up and then timed in BLOCKS
 * slices (the report is the fastest slice's rate), then o->empty_polls
 * empty CQ reads (the callgrind recipe prices one with them). */
int child_main(const struct child_opts *o);

/*
 * --serve: warm up every size, say "ready", then run one timed slice per
 * command on stdin until "quit":
 *     "slice SIZE N"  ->  "slice secs S regs G polls P"
 *     "quit"          ->  the totals lines of a single run, then exit
 * The parent commands one child at a time: the others wait in read() and
 * never compete with a slice for the CPU. End of input without "quit"
 * means the parent is gone: exit 1.
 */
int serve_main(const struct child_opts *o);

/* ---- the parent's children and rounds (xfer_bench_rounds.c) ---------- */

/* Target length of one timed slice: long against the timer and the switch
 * between children, short against the host's drift within a round. */
#define SLICE_SECONDS 0.08
/* Writes per calibration slice: default_iters / CALIB_DIV (at most a few
 * tens of ms at every size). */
#define CALIB_DIV 20

/* A --serve child: one mode, commanded through its stdin. */
struct server {
	struct bu_server bu;
	int mode;
	uint64_t total_regs; /* its registrations over the whole run, at quit */
};

/* Every round's slice rate per size and mode, and the provider
 * registrations of all timed slices. */
struct rounds {
	int n;
	long iters[NSIZES]; /* writes per slice */
	double rate[NSIZES][NMODES + 1][MAX_REPS];
	uint64_t regs[NSIZES][NMODES + 1];
};

/*
 * All of the interleaved measurement, in `generations` sets of fresh
 * children, each running its share of the rounds: a process keeps its own
 * bias for its whole life (where its buffers and the loopback's socket
 * buffers landed in physical memory, so which cache sets they share), which
 * pairing cannot cancel; the median over rounds then spans several
 * processes per mode. Every child is gone on return. -FI_ENODATA: the
 * provider is unavailable.
 */
int measure(struct server sv[NMODES + 1], struct rounds *ro, int generations);

#endif /* XFER_BENCH_H */
