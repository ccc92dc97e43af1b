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
 * flight; it answers with the elapsed seconds). The parent commands one child at a time, so the
 * others wait in read() and the slice has the CPU to itself. Per size: one
 * calibration round (every mode one short slice; N is then chosen so a
 * slice takes about SLICE_SECONDS at the modes' median rate), then
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
 * [--window W] [--empty-polls P] [--op write|send]) is the single run the
 * callgrind recipe uses: per size a warm-up and BLOCKS timed slices,
 * "size S rate R regs G polls P ops O" lines (the fastest slice's rate),
 * then "total_regs T" and "totals polls P ops O" over the whole child.
 * With --op send it measures fi_send to the other endpoint with a fi_recv
 * posted first (both with desc NULL in modes 2 and 5), one operation = both
 * completions (bench/xfer_ir.sh XFER_IR_OP=send).
 *
 * Hook instructions per operation (hit path) with valgrind, if installed:
 * callgrind runs mode 2 at 16 KiB (>= the default FI_MRLEASE_MIN_SIZE, so
 * every write is a cache hit after the first) with window 1 for N1 and N2
 * writes, and, only if the two runs made different numbers of empty CQ
 * polls, once more with N1 writes plus P extra empty polls. The
 * hook's cost H of a run is the self cost of every function in
 * libmrlease-fi.so plus what those functions spend in objects other than
 * libfabric and the hook (libc locks, memcpy); the provider's own work is
 * excluded. Then
 *     per empty poll  c = (H3 - H1) / P
 *     per write       ((H2 - H1) - c * (extra polls2 - extra polls1)) / (N2 - N1)
 * which removes set-up and teardown and the variable number of empty polls.
 * As a cross-check the whole process's instructions per write + completion
 * ("totals:" of the same runs, and of N1/N2 runs of modes 1 and 4) give what
 * mrlease and libfabric's noop hook add over no hook, everything included
 * (both instances: over rxm and over the tcp domain rxm opens).
 * The recipe by hand:
 *     FI_HOOK=mrlease FI_PROVIDER_PATH=<builddir>/prov/mrlease/.libs \
 *     valgrind --tool=callgrind --callgrind-out-file=cg.N \
 *         bench/xfer_bench --child 2 --sizes 16384 --iters N --window 1
 * for two values of N, then sum the self cost of libmrlease-fi.so's
 * functions (callgrind_annotate --inclusive=no cg.N | grep -v libfabric)
 * and divide the difference by the difference in N. bench/xfer_ir.sh does
 * exactly that and prints the figure per function, with the lease cache's
 * share (its inline hit path) apart.
 *
 * Environment: XFER_BENCH_REPS (rounds per size, default 40, at most
 * MAX_REPS), XFER_BENCH_GENERATIONS (sets of fresh children sharing the
 * rounds, default 20: a process's own bias, about +-2% at 8 B to 4 KiB and
 * +-3-5% at 16 KiB from one set of children to the next, is what limits
 * the resolution; about 6 minutes in all with callgrind),
 * XFER_BENCH_TIMEOUT (seconds a child may take to answer before it is
 * killed, default 120), XFER_BENCH_WINDOW (writes in flight per child,
 * default 32), XFER_BENCH_CPU (the one CPU every child runs on; default the
 * highest-numbered allowed, -1 unpinned), XFER_BENCH_CALLGRIND=0 to skip
 * valgrind (=only: just the callgrind figure), XFER_BENCH_PROV (default
 * tcp;ofi_rxm).
 * Last line: RESULT key=value ...
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "../test/xfer_util.h"
#include "bench_util.h"

enum { MODE_APP = 1, MODE_LEASE = 2, MODE_PEROP = 3, MODE_NOOP = 4,
       MODE_LEASE_ALL = 5, NMODES = 5 };

/* Modes in which mrlease resolves the operands (desc NULL). */
static bool mode_leases(int mode)
{
	return mode == MODE_LEASE || mode == MODE_LEASE_ALL;
}

static const char *const mode_names[] = { "", "app", "lease", "perop", "noop",
					  "lease0" };

static const size_t bench_sizes[] = { 8, 64, 512, 4096, 16384, 65536 };
#define NSIZES (sizeof(bench_sizes) / sizeof(bench_sizes[0]))
#define MAX_BUF 65536
#define MAX_WINDOW 64
#define MAX_REPS 160

static const char *bench_prov(void)
{
	return bu_env_str("XFER_BENCH_PROV", "tcp;ofi_rxm");
}

/* ---- child: one mode ------------------------------------------------ */

struct child_opts {
	int mode;
	size_t sizes[NSIZES];
	size_t nsizes;
	long iters;      /* 0: per-size default */
	int window;
	long empty_polls;
	bool send;       /* --op send: fi_send/fi_recv pairs, not fi_write */
	bool serve;      /* --serve: timed slices on the parent's command */
};

/* Timed slices per size of a single run (the fastest slice's rate). */
#define BLOCKS 5

/* 30000 writes below 16 KiB (rates within 1% run to run when pinned), 1 GiB
 * of data from 16 KiB up (their runs move by several percent: memory
 * bandwidth is the host's). */
static long default_iters(size_t size)
{
	long n = (long)((1UL << 30) / size);

	if (size < 16384 && n > 30000)
		n = 30000;
	return n < 4000 ? 4000 : n;
}

struct slot {
	struct fi_context2 ctx;
	struct fi_context2 rctx; /* --op send: the receive's */
	struct fid_mr *mr; /* mode 3: this write's registration */
	int pending;       /* completions still to come (2 for a send) */
};

struct run {
	struct mrlt_pair *pair;
	int mode;
	bool send;
	struct fid_mr *rdst_mr; /* --op send, modes 1 and 4: receive buffer */
	char *src, *dst;
	struct fid_mr *src_mr, *dst_mr;
	uint64_t regs;   /* registrations made by the application */
	long polls;      /* fi_cq_read calls in the timed loops */
	long all_polls, all_ops; /* over the whole child, for callgrind */
	struct slot slots[MAX_WINDOW];
	int free_slots[MAX_WINDOW], nfree;
};

/* Post with expr, retrying on -FI_EAGAIN after a zero-count CQ read that
 * drives progress without consuming completions (reap() reads those). */
#define RETRY_POST(r, expr)                                                    \
	({                                                                     \
		ssize_t retry_r_;                                              \
		while ((retry_r_ = (expr)) == -FI_EAGAIN)                      \
			(void)fi_cq_read((r)->pair->cq, NULL, 0);              \
		retry_r_;                                                      \
	})

static int post_write(struct run *r, size_t size)
{
	struct slot *s = &r->slots[r->free_slots[--r->nfree]];
	void *desc = NULL;
	ssize_t ret;

	if (r->mode == MODE_PEROP) {
		ret = fi_mr_reg(r->pair->domain, r->src, size,
				r->send ? FI_SEND : FI_WRITE, 0,
				0x10000 + (uint64_t)(s - r->slots), 0, &s->mr, NULL);
		if (ret)
			return (int)ret;
		r->regs++;
		desc = fi_mr_desc(s->mr);
	} else if (!mode_leases(r->mode)) {
		desc = fi_mr_desc(r->src_mr);
	}
	s->pending = 1;
	if (r->send) {
		void *rdesc = r->rdst_mr ? fi_mr_desc(r->rdst_mr) : NULL;

		ret = RETRY_POST(r, fi_recv(r->pair->ep[1], r->dst, size, rdesc,
					    FI_ADDR_UNSPEC, &s->rctx));
		if (ret) {
			r->free_slots[r->nfree++] = (int)(s - r->slots);
			return (int)ret;
		}
		s->pending = 2;
	}
	ret = r->send ?
		RETRY_POST(r, fi_send(r->pair->ep[0], r->src, size, desc,
				      r->pair->addr[1], &s->ctx)) :
		RETRY_POST(r, fi_write(r->pair->ep[0], r->src, size, desc,
				       r->pair->addr[1],
				       mrlt_pair_rma_addr(r->pair, r->dst, r->dst),
				       fi_mr_key(r->dst_mr), &s->ctx));
	if (ret) {
		r->free_slots[r->nfree++] = (int)(s - r->slots);
		return (int)ret;
	}
	r->all_ops++;
	return 0;
}

/* Read completions until at most `keep` writes are outstanding. */
static int reap(struct run *r, int window, int keep)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n;

	while (window - r->nfree > keep) {
		n = fi_cq_read(r->pair->cq, e, 16);
		r->polls++;
		r->all_polls++;
		if (n == -FI_EAGAIN)
			continue;
		if (n < 0) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(r->pair->cq, &err, 0);
			fprintf(stderr, "write failed: %s\n", fi_strerror(err.err));
			return -FI_EIO;
		}
		for (ssize_t i = 0; i < n; i++) {
			/* A slot's send or receive context: the slot. */
			struct slot *s = &r->slots[((char *)e[i].op_context -
						    (char *)r->slots) /
						   sizeof(struct slot)];

			if (--s->pending)
				continue;
			if (s->mr) {
				fi_close(&s->mr->fid);
				s->mr = NULL;
			}
			r->free_slots[r->nfree++] = (int)(s - r->slots);
		}
	}
	return 0;
}

static int run_size(struct run *r, size_t size, long iters, int window)
{
	int ret;

	for (long i = 0; i < iters; i++) {
		if (!r->nfree) {
			ret = reap(r, window, window - 1);
			if (ret)
				return ret;
		}
		ret = post_write(r, size);
		if (ret)
			return ret;
	}
	return reap(r, window, 0);
}

static uint64_t lease_registrations(struct mrlt_pair *pair)
{
	struct fi_mrlease_stats st;

	if (!pair->mrl || pair->mrl->query_stats(NULL, &st, sizeof(st)))
		return 0;
	return st.registrations;
}

/* Close what child_open built (any part of it). Returns 0, or 1 if a close
 * failed. */
static int child_close(struct run *r)
{
	int ret = 0;

	if (r->src_mr)
		fi_close(&r->src_mr->fid);
	if (r->rdst_mr)
		fi_close(&r->rdst_mr->fid);
	if (r->dst_mr)
		fi_close(&r->dst_mr->fid);
	if (mrlt_pair_close(r->pair))
		ret = 1;
	free(r->src);
	free(r->dst);
	return ret;
}

/*
 * Open a child's endpoint pair and buffers, and register what its mode
 * registers up front (the target buffer always; the source in modes 1 and
 * 4). Returns 0, 77 when the provider is unavailable (the parent reports a
 * skip) or 1.
 */
static int child_open(const struct child_opts *o, struct mrlt_pair *pair,
		      struct run *r)
{
	struct mrlt_pair_opts xo = { .prov = bench_prov(), .caps = FI_MSG | FI_RMA };
	int ret;

	memset(r, 0, sizeof(*r));
	r->pair = pair;
	r->mode = o->mode;
	r->send = o->send;
	ret = mrlt_pair_open(&xo, pair);
	if (ret) {
		fprintf(stderr, "xfer_bench child: %s\n", fi_strerror(-ret));
		return ret == -FI_ENODATA ? 77 : 1;
	}
	if (mode_leases(o->mode) && !pair->mrl)
		fprintf(stderr, "xfer_bench: FI_HOOK=mrlease but no %s on the domain\n",
			FI_MRLEASE_OPS_1);
	r->src = aligned_alloc(4096, MAX_BUF);
	r->dst = aligned_alloc(4096, MAX_BUF);
	if (!r->src || !r->dst)
		goto err_close;
	memset(r->src, 0x5a, MAX_BUF);
	memset(r->dst, 0, MAX_BUF);
	ret = mrlt_pair_mr_reg(pair, r->dst, MAX_BUF, FI_REMOTE_WRITE, &r->dst_mr);
	if (!ret && (o->mode == MODE_APP || o->mode == MODE_NOOP)) {
		ret = mrlt_pair_mr_reg(pair, r->src, MAX_BUF,
				  o->send ? FI_SEND : FI_WRITE, &r->src_mr);
		r->regs++;
		if (!ret && o->send) {
			ret = mrlt_pair_mr_reg(pair, r->dst, MAX_BUF, FI_RECV,
					  &r->rdst_mr);
			r->regs++;
		}
	}
	if (ret) {
		fprintf(stderr, "xfer_bench: fi_mr_reg: %s\n", fi_strerror(-ret));
		goto err_close;
	}
	for (int i = 0; i < o->window; i++)
		r->free_slots[r->nfree++] = i;
	return 0;

err_close:
	child_close(r);
	return 1;
}

/* Connection set-up and first registrations of a size, untimed. */
static int warm_up(struct run *r, size_t size, long iters, int window)
{
	return run_size(r, size, iters / 10 + 1, window);
}

static void print_totals(struct run *r)
{
	printf("total_regs %" PRIu64 "\n", r->regs + lease_registrations(r->pair));
	printf("totals polls %ld ops %ld\n", r->all_polls, r->all_ops);
	fflush(stdout);
}

/* A single run: every size of o, each warmed up and then timed in BLOCKS
 * slices (the report is the fastest slice's rate), then o->empty_polls
 * empty CQ reads (the callgrind recipe prices one with them). */
static int child_main(const struct child_opts *o)
{
	struct mrlt_pair pair;
	struct run r;
	int ret = child_open(o, &pair, &r);

	if (ret)
		return ret;
	for (size_t i = 0; i < o->nsizes && !ret; i++) {
		size_t size = o->sizes[i];
		long iters = o->iters ? o->iters : default_iters(size);
		uint64_t regs0;
		double t0, t1, best;

		ret = warm_up(&r, size, iters, o->window);
		if (ret)
			break;
		regs0 = r.regs + lease_registrations(&pair);
		r.polls = 0;
		/* The rate of the fastest of BLOCKS equal slices: a neighbour
		 * on a shared core only ever slows a slice down. */
		best = 0;
		for (long b = 0, done = 0; b < BLOCKS && !ret; b++) {
			long n = (iters - done) / (BLOCKS - b);

			t0 = bu_now_s();
			ret = run_size(&r, size, n, o->window);
			t1 = bu_now_s();
			if (n / (t1 - t0) > best)
				best = n / (t1 - t0);
			done += n;
		}
		printf("size %zu rate %.1f regs %" PRIu64 " polls %ld ops %ld\n", size,
		       best, r.regs + lease_registrations(&pair) - regs0, r.polls, iters);
	}
	for (long i = 0; i < o->empty_polls && !ret; i++) {
		(void)fi_cq_read(pair.cq, NULL, 0);
		r.all_polls++;
	}
	print_totals(&r);
	if (child_close(&r))
		ret = 1;
	return ret ? 1 : 0;
}

/*
 * --serve: warm up every size, say "ready", then run one timed slice per
 * command on stdin until "quit":
 *     "slice SIZE N"  ->  "slice secs S regs G polls P"
 *     "quit"          ->  the totals lines of a single run, then exit
 * The parent commands one child at a time: the others wait in read() and
 * never compete with a slice for the CPU. End of input without "quit"
 * means the parent is gone: exit 1.
 */
static int serve_main(const struct child_opts *o)
{
	struct mrlt_pair pair;
	struct run r;
	char line[128];
	bool quit = false;
	int ret = child_open(o, &pair, &r);

	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++)
		ret = warm_up(&r, bench_sizes[i], default_iters(bench_sizes[i]),
			      o->window);
	if (!ret) {
		printf("ready\n");
		fflush(stdout);
	}
	while (!ret && !quit && fgets(line, sizeof(line), stdin)) {
		size_t size;
		long n;
		uint64_t regs0;
		double t0, secs;

		if (!strcmp(line, "quit\n")) {
			quit = true;
			break;
		}
		if (sscanf(line, "slice %zu %ld", &size, &n) != 2 || size < 1 ||
		    size > MAX_BUF || n < 1) {
			fprintf(stderr, "xfer_bench child: bad command: %s", line);
			ret = 1;
			break;
		}
		regs0 = r.regs + lease_registrations(&pair);
		r.polls = 0;
		t0 = bu_now_s();
		ret = run_size(&r, size, n, o->window);
		secs = bu_now_s() - t0;
		if (ret)
			break;
		printf("slice secs %.9f regs %" PRIu64 " polls %ld\n", secs,
		       r.regs + lease_registrations(&pair) - regs0, r.polls);
		fflush(stdout);
	}
	if (!ret && !quit) {
		fprintf(stderr, "xfer_bench child %d: commands ended without quit\n",
			o->mode);
		ret = 1;
	}
	if (quit)
		print_totals(&r);
	if (child_close(&r))
		ret = 1;
	return ret ? 1 : 0;
}

/* ---- parent: children, medians, ratios, callgrind ------------------- */

struct sample {
	double rate[NSIZES];
	uint64_t regs[NSIZES];
	uint64_t total_regs;
	long polls, ops;
	long all_polls, all_ops;
};

static void child_env(int mode)
{
	bu_child_env();
	unsetenv("FI_MRLEASE_MIN_SIZE");
	if (mode == MODE_LEASE_ALL)
		setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
	if (mode_leases(mode))
		setenv("FI_HOOK", "mrlease", 1);
	else if (mode == MODE_NOOP)
		setenv("FI_HOOK", "noop", 1);
	else
		unsetenv("FI_HOOK");
}

/* The environment of a --serve child, set in the child (bu_server_start). */
static void serve_env(void *mode)
{
	child_env(*(int *)mode);
}

/*
 * Start this program as a single-run child of mode (under the prefix
 * command, e.g. valgrind, if any) with args after the program name. Its
 * stdout goes to *out_fd, close-on-exec as every pipe end. Returns the pid
 * or -errno.
 */
static pid_t launch(int mode, char *const *prefix, char *const *args, int *out_fd)
{
	static char self[PATH_MAX];
	char *argv[32];
	int out[2], argc = 0, err;
	pid_t pid;

	/* The real path: under valgrind /proc/self/exe is valgrind. */
	if (!self[0]) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0)
			return -errno;
		self[n] = '\0';
	}
	for (; prefix && *prefix; prefix++)
		argv[argc++] = *prefix;
	argv[argc++] = self;
	for (; *args; args++)
		argv[argc++] = *args;
	argv[argc] = NULL;
	if (pipe2(out, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(out[0]);
		close(out[1]);
		return err;
	}
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		child_env(mode);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	*out_fd = out[0];
	return pid;
}

/*
 * Run this program as a single-run child (optionally under valgrind) and
 * parse its report. args: the child arguments after the program name.
 * Returns the number of sizes reported, -FI_ENODATA if the provider is
 * unavailable, or another negative code.
 */
static int spawn(int mode, char *const *prefix, char *const *args,
		 struct sample *out)
{
	int out_fd = -1, status;
	pid_t pid = launch(mode, prefix, args, &out_fd);
	FILE *in;
	char line[256];
	size_t idx = 0;

	if (pid < 0)
		return pid;
	in = fdopen(out_fd, "r");
	if (!in)
		close(out_fd);
	memset(out, 0, sizeof(*out));
	while (in && fgets(line, sizeof(line), in)) {
		size_t size;
		double rate;
		uint64_t regs;
		long polls, ops;

		if (sscanf(line, "size %zu rate %lf regs %" SCNu64 " polls %ld ops %ld",
			   &size, &rate, &regs, &polls, &ops) == 5 && idx < NSIZES) {
			out->rate[idx] = rate;
			out->regs[idx] = regs;
			out->polls += polls;
			out->ops += ops;
			idx++;
		} else if (sscanf(line, "totals polls %ld ops %ld", &polls, &ops) == 2) {
			out->all_polls = polls;
			out->all_ops = ops;
		} else {
			sscanf(line, "total_regs %" SCNu64, &out->total_regs);
		}
	}
	if (in)
		fclose(in);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return WIFEXITED(status) && WEXITSTATUS(status) == 77 ? -FI_ENODATA
								       : -FI_EOTHER;
	return (int)idx;
}

/*
 * Hook cost of a callgrind output: self cost of functions in the hook's
 * object plus calls from them into objects other than libfabric and the
 * hook. Returns -1 on a parse failure.
 */
static double hook_cost(const char *file)
{
	char line[4096], ob[1024] = "", cob[1024] = "";
	char names[4096][256];
	bool fn_in_hook = false, next_is_call = false;
	double total = 0;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	memset(names, 0, sizeof(names));
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *name;
		long id;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(p, "ob=", 3) || !strncmp(p, "cob=", 4)) {
			bool is_cob = p[0] == 'c';
			char *dst = is_cob ? cob : ob;

			p += is_cob ? 4 : 3;
			name = p;
			if (*p == '(') {
				id = strtol(p + 1, &name, 10);
				name = strchr(p, ')');
				name = name ? name + 1 : p;
				while (*name == ' ')
					name++;
				if (id >= 0 && id < 4096) {
					if (*name)
						snprintf(names[id], sizeof(names[id]), "%s", name);
					name = names[id];
				}
			}
			snprintf(dst, 1024, "%s", name);
			continue;
		}
		if (!strncmp(p, "fn=", 3)) {
			fn_in_hook = strstr(ob, "libmrlease-fi") != NULL;
			snprintf(cob, sizeof(cob), "%s", ob);
			continue;
		}
		if (!strncmp(p, "calls=", 6)) {
			next_is_call = true;
			continue;
		}
		if ((*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '*') {
			char *cost = strchr(p, ' ');
			double c = cost ? strtod(cost, NULL) : 0;

			if (!fn_in_hook) {
				next_is_call = false;
				continue;
			}
			if (next_is_call) {
				if (!strstr(cob, "libfabric") && !strstr(cob, "libmrlease-fi"))
					total += c;
				snprintf(cob, sizeof(cob), "%s", ob);
				next_is_call = false;
			} else {
				total += c;
			}
		}
	}
	fclose(f);
	return total;
}

static int callgrind_run_mode(int mode, long iters, long empty_polls,
			      const char *out, struct sample *s)
{
	char iters_s[32], polls_s[32], outopt[PATH_MAX + 32];
	char *prefix[] = { "valgrind", "--tool=callgrind", "--quiet", outopt, NULL };
	char mode_s[8];
	char *args[] = { "--child", mode_s, "--sizes", "16384", "--iters", iters_s,
			 "--window", "1", "--empty-polls", polls_s, NULL };

	snprintf(mode_s, sizeof(mode_s), "%d", mode);
	snprintf(iters_s, sizeof(iters_s), "%ld", iters);
	snprintf(polls_s, sizeof(polls_s), "%ld", empty_polls);
	snprintf(outopt, sizeof(outopt), "--callgrind-out-file=%s", out);
	return spawn(mode, prefix, args, s);
}

static int callgrind_run(long iters, long empty_polls, const char *out,
			 struct sample *s)
{
	return callgrind_run_mode(MODE_LEASE, iters, empty_polls, out, s);
}

/* Whole-process totals of the two mode-2 runs, reused by callgrind_modes. */
static double lease_totals[2];
static long lease_ops[2];

/* The whole process's instruction count ("totals:" line). */
static double callgrind_total(const char *file)
{
	char line[512];
	double total = -1;
	FILE *f = fopen(file, "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8))
			total = strtod(strchr(line, ':') + 1, NULL);
	if (f)
		fclose(f);
	return total;
}

/*
 * Whole-process instructions per write + completion in a mode, from two run
 * lengths (set-up removed); with window 1 every poll finds its completion,
 * so no poll noise. The difference between modes is what a hook adds, all
 * included (libfabric's own noop hook for comparison).
 */
static double callgrind_total_per_op(int mode, const long n[2], long *extra)
{
	char f[64];
	struct sample s[2];
	double t[2];

	for (int i = 0; i < 2; i++) {
		snprintf(f, sizeof(f), "/tmp/xfer_bench.cgt.%d.%d", (int)getpid(), i);
		if (callgrind_run_mode(mode, n[i], 0, f, &s[i]) < 1)
			return -1;
		t[i] = callgrind_total(f);
		unlink(f);
		if (t[i] < 0)
			return -1;
	}
	*extra = (s[0].all_polls - s[0].all_ops) + (s[1].all_polls - s[1].all_ops);
	return (t[1] - t[0]) / (double)(s[1].all_ops - s[0].all_ops);
}

/* Print whole-process Ir per op for modes 1, 4, 2 and the differences. */
static void callgrind_modes(double *lease_added, double *noop_added)
{
	const long n[2] = { 1000, 3000 };
	long extra[3] = { 0 };
	double app = callgrind_total_per_op(MODE_APP, n, &extra[0]);
	double noop = callgrind_total_per_op(MODE_NOOP, n, &extra[1]);
	double lease = lease_ops[1] > lease_ops[0] && lease_totals[0] > 0 ?
		(lease_totals[1] - lease_totals[0]) / (double)(lease_ops[1] - lease_ops[0]) :
		callgrind_total_per_op(MODE_LEASE, n, &extra[2]);

	*lease_added = *noop_added = -1;
	if (app < 0 || noop < 0 || lease < 0)
		return;
	*lease_added = lease - app;
	*noop_added = noop - app;
	printf("# callgrind whole process, Ir per fi_write + completion at 16 KiB: "
	       "app %.0f, noop %.0f (+%.0f), lease %.0f (+%.0f); empty polls "
	       "%ld/%ld/%ld\n", app, noop, *noop_added, lease, *lease_added,
	       extra[0], extra[1], extra[2]);
}

/* Instructions the hook adds per write + completion on the hit path. */
static double callgrind_per_op(void)
{
	const long n1 = 1000, n2 = 3000, p = 20000;
	char f[3][64];
	struct sample s[3];
	double h[3], per_poll = 0, extra[3] = { 0 };
	int runs = 2;

	if (system("valgrind --version >/dev/null 2>&1"))
		return -1;
	for (int i = 0; i < runs; i++) {
		snprintf(f[i], sizeof(f[i]), "/tmp/xfer_bench.cg.%d.%d", (int)getpid(), i);
		if (callgrind_run(i == 1 ? n2 : n1, i == 2 ? p : 0, f[i], &s[i]) < 1)
			return -1;
		h[i] = hook_cost(f[i]);
		if (i < 2) {
			lease_totals[i] = callgrind_total(f[i]);
			lease_ops[i] = s[i].all_ops;
		}
		unlink(f[i]);
		if (h[i] < 0)
			return -1;
		extra[i] = (double)(s[i].all_polls - s[i].all_ops);
		/* Reads that found nothing differ between the runs: a third
		 * run adds p of them to the first, which prices one. */
		if (i == 1 && extra[1] != extra[0])
			runs = 3;
	}
	if (s[1].all_ops <= s[0].all_ops)
		return -1;
	if (runs == 3) {
		if (extra[2] <= extra[0])
			return -1;
		per_poll = (h[2] - h[0]) / (extra[2] - extra[0]);
	}
	printf("# callgrind: hook Ir %.0f / %.0f for %ld / %ld writes with %.0f / %.0f "
	       "empty polls (%.1f Ir per empty poll%s)\n", h[0], h[1], s[0].all_ops,
	       s[1].all_ops, extra[0], extra[1], per_poll,
	       runs == 3 ? "" : ", not needed");
	return ((h[1] - h[0]) - per_poll * (extra[1] - extra[0])) /
	       (double)(s[1].all_ops - s[0].all_ops);
}

/* ---- parent: interleaved slices ------------------------------------- */

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
	long iters[NSIZES];  /* writes per slice */
	double rate[NSIZES][NMODES + 1][MAX_REPS];
	uint64_t regs[NSIZES][NMODES + 1];
};

static void servers_kill(struct server sv[NMODES + 1])
{
	for (int m = 1; m <= NMODES; m++)
		bu_server_kill(&sv[m].bu);
}

/* Start one --serve child per mode, all at once, and wait until every one
 * has warmed up. On failure every child is gone. */
static int servers_start(struct server sv[NMODES + 1])
{
	static char names[NMODES + 1][32];
	static int modes[NMODES + 1];
	/* Seconds a child may take to answer (XFER_BENCH_TIMEOUT, default 120). */
	int timeout_s = (int)bu_env_clamp("XFER_BENCH_TIMEOUT", 120, 0, 86399);
	int ret = 0;

	for (int m = 1; m <= NMODES; m++) {
		snprintf(names[m], sizeof(names[m]), "xfer_bench mode %s child", mode_names[m]);
		modes[m] = m;
		sv[m] = (struct server){ .mode = m,
					 .bu = { .name = names[m], .timeout_s = timeout_s } };
	}
	for (int m = 1; m <= NMODES && !ret; m++) {
		char mode_s[8];
		char *args[] = { "--child", mode_s, "--serve", NULL };

		snprintf(mode_s, sizeof(mode_s), "%d", m);
		ret = bu_server_start(&sv[m].bu, args, serve_env, &modes[m]);
		if (ret) {
			fprintf(stderr, "xfer_bench: starting mode %s: %s\n",
				mode_names[m], strerror(-ret));
			ret = -FI_EOTHER;
		}
	}
	for (int m = 1; m <= NMODES && !ret; m++)
		ret = bu_server_ready(&sv[m].bu);
	if (ret)
		servers_kill(sv);
	return ret;
}

/* One timed slice of n writes of size in a server; *secs its time, *regs
 * the provider registrations it made. */
static int server_slice(struct server *s, size_t size, long n, double *secs,
			uint64_t *regs)
{
	char cmd[64], line[128];
	long polls;
	int ret;

	snprintf(cmd, sizeof(cmd), "slice %zu %ld", size, n);
	ret = bu_server_ask(&s->bu, cmd, line, sizeof(line));
	if (ret)
		return ret;
	if (sscanf(line, "slice secs %lf regs %" SCNu64 " polls %ld", secs, regs,
		   &polls) != 3 || *secs <= 0) {
		fprintf(stderr, "xfer_bench: mode %s child: unexpected answer in a "
			"slice; killed\n", mode_names[s->mode]);
		bu_server_kill(&s->bu);
		return -FI_EOTHER;
	}
	return 0;
}

static void total_regs_line(const char *line, void *s)
{
	sscanf(line, "total_regs %" SCNu64, &((struct server *)s)->total_regs);
}

/* Tell a server to quit, read its totals and reap it (on every path). */
static int server_quit(struct server *s)
{
	return bu_server_quit(&s->bu, total_regs_line, s);
}

/*
 * Rounds [r0, r1) of every size: one N-write slice per mode per round, in a
 * shuffled order. The first generation (r0 == 0) calibrates N per size
 * first: each mode one slice of default_iters / CALIB_DIV writes, N from the
 * modes' median rate.
 */
static int measure_sizes(struct server sv[NMODES + 1], struct rounds *ro, int r0, int r1)
{
	double secs, calib[NMODES];
	uint64_t regs;
	int order[NMODES], ret;

	for (size_t i = 0; i < NSIZES; i++) {
		size_t size = bench_sizes[i];
		long n0 = default_iters(size) / CALIB_DIV;

		if (!r0) {
			for (int m = 1; m <= NMODES; m++) {
				ret = server_slice(&sv[m], size, n0, &secs, &regs);
				if (ret)
					return ret;
				calib[m - 1] = n0 / secs;
			}
			ro->iters[i] = (long)(SLICE_SECONDS * bu_median(calib, NMODES));
			if (ro->iters[i] < 100)
				ro->iters[i] = 100;
		}
		for (int r = r0; r < r1; r++) {
			/* A fixed pseudo-random order per round: no mode
			 * always runs right after the same other one (a slice
			 * can leave the machine slower or faster for the
			 * next: caches, memory returned). */
			bu_shuffle(order, NMODES, (int)i * ro->n + r);
			for (int k = 0; k < NMODES; k++) {
				int m = order[k] + 1;

				ret = server_slice(&sv[m], size, ro->iters[i], &secs, &regs);
				if (ret)
					return ret;
				ro->rate[i][m][r] = ro->iters[i] / secs;
				ro->regs[i][m] += regs;
			}
		}
	}
	return 0;
}

/*
 * All of the interleaved measurement, in `generations` sets of fresh
 * children, each running its share of the rounds: a process keeps its own
 * bias for its whole life (where its buffers and the loopback's socket
 * buffers landed in physical memory, so which cache sets they share), which
 * pairing cannot cancel; the median over rounds then spans several
 * processes per mode. Every child is gone on return. -FI_ENODATA: the
 * provider is unavailable.
 */
static int measure(struct server sv[NMODES + 1], struct rounds *ro, int generations)
{
	int ret = 0;

	for (int g = 0; g < generations && !ret; g++) {
		ret = servers_start(sv);
		if (ret)
			return ret;
		ret = measure_sizes(sv, ro, g * ro->n / generations,
				    (g + 1) * ro->n / generations);
		if (ret) {
			servers_kill(sv);
			return ret;
		}
		for (int m = 1; m <= NMODES; m++)
			if (server_quit(&sv[m]))
				ret = -FI_EOTHER;
	}
	return ret;
}

/* ---- parent: figures ------------------------------------------------- */

/* The ratios reported, as (numerator mode, denominator mode). (4)/(1) is
 * libfabric's noop hook against no hook: what any hook costs here. */
enum { NPAIRS = 5 };
static const int pairs[NPAIRS][2] = { { 2, 1 }, { 2, 4 }, { 2, 3 }, { 5, 1 }, { 4, 1 } };

struct size_figures {
	double med[NMODES + 1];       /* median slice rate per mode */
	double paired[NPAIRS];        /* median of the per-round ratios */
	double q1[NPAIRS], q3[NPAIRS]; /* their quartiles */
	double of_medians[NPAIRS];    /* ratio of the medians */
};

/* Round r's ratio of pair p at size i. */
static double round_ratio(const struct rounds *ro, size_t i, int p, int r)
{
	return ro->rate[i][pairs[p][0]][r] / ro->rate[i][pairs[p][1]][r];
}

static void size_figures(const struct rounds *ro, size_t i, struct size_figures *f)
{
	double v[MAX_REPS];

	for (int m = 1; m <= NMODES; m++) {
		memcpy(v, ro->rate[i][m], sizeof(double) * (size_t)ro->n);
		f->med[m] = bu_median(v, ro->n);
	}
	for (int p = 0; p < NPAIRS; p++) {
		for (int r = 0; r < ro->n; r++)
			v[r] = round_ratio(ro, i, p, r);
		f->q1[p] = bu_quantile(v, ro->n, 0.25);
		f->paired[p] = bu_quantile(v, ro->n, 0.5);
		f->q3[p] = bu_quantile(v, ro->n, 0.75);
		f->of_medians[p] = f->med[pairs[p][0]] / f->med[pairs[p][1]];
	}
}

static double min_d(double a, double b)
{
	return a < b ? a : b;
}

static void print_figures(const struct rounds *ro,
			  const struct size_figures fig[NSIZES])
{
	printf("# median slice rate per mode (ops/s); ratios: median over rounds of "
	       "the round's paired ratio\n");
	printf("# %8s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s\n", "size", "app/s",
	       "lease/s", "perop/s", "noop/s", "lease0/s", "(2)/(1)", "(2)/(4)",
	       "(2)/(3)", "(5)/(1)", "(4)/(1)");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct size_figures *f = &fig[i];

		printf("  %8zu %10.0f %10.0f %10.0f %10.0f %10.0f %8.3f %8.3f %8.3f %8.3f %8.3f\n",
		       bench_sizes[i], f->med[1], f->med[2], f->med[3], f->med[4],
		       f->med[5], f->paired[0], f->paired[1], f->paired[2], f->paired[3],
		       f->paired[4]);
	}
	printf("# ratio of the medians, and the quartiles of the paired ratios "
	       "(their spread is the resolution):\n");
	printf("# %8s %7s %8s %8s %8s %8s %15s %15s\n", "size", "writes", "(2)/(1)",
	       "(2)/(4)", "(2)/(3)", "(5)/(1)", "(2)/(1) q1-q3", "(2)/(4) q1-q3");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct size_figures *f = &fig[i];

		printf("# %8zu %7ld %8.3f %8.3f %8.3f %8.3f     %.3f-%.3f     %.3f-%.3f\n",
		       bench_sizes[i], ro->iters[i], f->of_medians[0], f->of_medians[1],
		       f->of_medians[2], f->of_medians[3], f->q1[0], f->q3[0], f->q1[1],
		       f->q3[1]);
	}
	printf("# every round's paired ratio, in round order:\n");
	for (size_t i = 0; i < NSIZES; i++)
		for (int p = 0; p < 2; p++) {
			printf("#   %5zu (%d)/(%d):", bench_sizes[i], pairs[p][0], pairs[p][1]);
			for (int r = 0; r < ro->n; r++)
				printf(" %.3f", round_ratio(ro, i, p, r));
			printf("\n");
		}
}

static void print_registrations(const struct rounds *ro,
				const struct server sv[NMODES + 1])
{
	printf("# provider registrations per child of the last generation, its whole "
	       "run (warm-up, calibration, its rounds):");
	for (int m = 1; m <= NMODES; m++)
		printf(" %s=%" PRIu64, mode_names[m], sv[m].total_regs);
	printf("\n# per size, all timed slices (app/lease/perop/noop/lease0):");
	for (size_t i = 0; i < NSIZES; i++)
		printf(" %zu:%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64,
		       bench_sizes[i], ro->regs[i][1], ro->regs[i][2], ro->regs[i][3],
		       ro->regs[i][4], ro->regs[i][5]);
	printf("\n");
}

static int parent_main(void)
{
	int reps = (int)bu_env_clamp("XFER_BENCH_REPS", 40, 1, MAX_REPS);
	int generations = (int)bu_env_clamp("XFER_BENCH_GENERATIONS", 20, 1, reps);
	const char *env;
	static struct rounds ro;
	struct server sv[NMODES + 1];
	struct size_figures fig[NSIZES];
	double worst21 = 1e9, worst24 = 1e9, worst21x = 1e9, worst24x = 1e9;
	double ir = -1, lease_added = -1, noop_added = -1;
	int ret, cpu;

	/* A child that died leaves a broken pipe: a write error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	env = getenv("XFER_BENCH_CALLGRIND");
	if (env && !strcmp(env, "only")) {
		ir = callgrind_per_op();
		callgrind_modes(&lease_added, &noop_added);
		printf("RESULT hook_ir_per_op=%.1f lease_added_ir=%.0f noop_added_ir=%.0f\n",
		       ir, lease_added, noop_added);
		return ir < 0;
	}
	ro.n = reps;
	/* Unpinned on a 2-core machine, a child's threads and the loopback's
	 * kernel work land on one or on both cores from run to run, and its
	 * rate moves with that alone. */
	cpu = bu_pin_one_cpu("XFER_BENCH_CPU");
	printf("# xfer_bench: fi_write message rate over %s, modes interleaved slice "
	       "by slice: %d rounds per size by %d generations of children, ~%.0f ms "
	       "per slice, children on CPU %d (-1: not pinned)\n", bench_prov(), reps,
	       generations, SLICE_SECONDS * 1e3, cpu);
	fflush(stdout);
	ret = measure(sv, &ro, generations);
	if (ret == -FI_ENODATA) {
		printf("# provider unavailable: skipped\nRESULT skipped=1\n");
		return 0;
	}
	if (ret) {
		fprintf(stderr, "xfer_bench: measurement failed\n");
		return 1;
	}

	for (size_t i = 0; i < NSIZES; i++) {
		size_figures(&ro, i, &fig[i]);
		worst21 = min_d(worst21, fig[i].paired[0]);
		worst24 = min_d(worst24, fig[i].paired[1]);
		worst21x = min_d(worst21x, fig[i].of_medians[0]);
		worst24x = min_d(worst24x, fig[i].of_medians[1]);
	}
	print_figures(&ro, fig);
	print_registrations(&ro, sv);

	env = getenv("XFER_BENCH_CALLGRIND");
	if (!env || strcmp(env, "0")) {
		ir = callgrind_per_op();
		if (ir >= 0)
			callgrind_modes(&lease_added, &noop_added);
		if (ir < 0)
			printf("# callgrind: valgrind unavailable or failed\n");
		else
			printf("# hook instructions per fi_write + completion (hit path, "
			       "16 KiB): %.1f\n", ir);
	}

	/* The figures are only as quiet as the machine: say how busy it was. */
	double load1 = bu_load1();

	if (load1 >= 0)
		printf("# load average (1 min) at the end: %.2f on %ld cpus\n", load1,
		       sysconf(_SC_NPROCESSORS_ONLN));
	printf("RESULT prov=%s reps=%d cpu=%d load1=%.2f", bench_prov(), reps, cpu,
	       load1);
	for (size_t i = 0; i < NSIZES; i++)
		printf(" r21_%zu=%.3f r24_%zu=%.3f r23_%zu=%.3f r51_%zu=%.3f r41_%zu=%.3f",
		       bench_sizes[i], fig[i].paired[0], bench_sizes[i], fig[i].paired[1],
		       bench_sizes[i], fig[i].paired[2], bench_sizes[i], fig[i].paired[3],
		       bench_sizes[i], fig[i].paired[4]);
	printf(" min_r21=%.3f min_r24=%.3f min_r21x=%.3f min_r24x=%.3f", worst21,
	       worst24, worst21x, worst24x);
	for (int m = 1; m <= NMODES; m++)
		printf(" regs_%s=%" PRIu64, mode_names[m], sv[m].total_regs);
	if (ir >= 0)
		printf(" hook_ir_per_op=%.1f", ir);
	else
		printf(" hook_ir_per_op=na");
	if (lease_added >= 0 || noop_added >= 0)
		printf(" lease_added_ir=%.0f noop_added_ir=%.0f", lease_added, noop_added);
	printf("\n");
	return 0;
}

static int parse_child(int argc, char **argv, struct child_opts *o)
{
	/* Writes in flight (default 32). */
	const char *window = getenv("XFER_BENCH_WINDOW");

	o->window = window ? atoi(window) : 32;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--serve")) {
			o->serve = true;
			continue;
		}
		if (!v)
			return -1;
		if (!strcmp(a, "--child"))
			o->mode = atoi(v);
		else if (!strcmp(a, "--sizes") && o->nsizes < NSIZES)
			o->sizes[o->nsizes++] = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--iters"))
			o->iters = atol(v);
		else if (!strcmp(a, "--window"))
			o->window = atoi(v);
		else if (!strcmp(a, "--empty-polls"))
			o->empty_polls = atol(v);
		else if (!strcmp(a, "--op") && !strcmp(v, "send"))
			o->send = true;
		else if (!strcmp(a, "--op") && !strcmp(v, "write"))
			o->send = false;
		else
			return -1;
		i++;
	}
	if (!o->nsizes) {
		memcpy(o->sizes, bench_sizes, sizeof(bench_sizes));
		o->nsizes = NSIZES;
	}
	if (o->mode < 1 || o->mode > NMODES || o->window < 1 || o->window > MAX_WINDOW)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct child_opts o = { 0 };

	if (argc > 1) {
		if (parse_child(argc, argv, &o)) {
			fprintf(stderr, "usage: %s [--child MODE [--serve] [--sizes N] "
				"[--iters N] [--window N] [--empty-polls N] "
				"[--op write|send]]\n", argv[0]);
			return 2;
		}
		return o.serve ? serve_main(&o) : child_main(&o);
	}
	return parent_main();
}
