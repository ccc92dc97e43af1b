/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/monitor_bench: what the userfaultfd memory monitor costs (issue 12,
 * item 8), each figure against a baseline measured in the same run.
 *
 * Everything goes through libfabric: FI_HOOK=mrlease over loopback
 * tcp;ofi_rxm (MONITOR_BENCH_PROV), FI_MRLEASE_MIN_SIZE=0 so every operand
 * is leased, fi_write with desc NULL into a target buffer the application
 * registered. The monitor is the provider's own (started by the domain,
 * invalidating through the cache's deferred path), so what is measured is
 * what an application pays. Three configurations, each in processes of its
 * own (the parameters are read once per process):
 *
 *   mon    FI_MRLEASE_PINNING=yes FI_MRLEASE_MONITOR=userfaultfd: the
 *          provider treated as pinning, entries kept while watched
 *   perop  FI_MRLEASE_PINNING=yes FI_MRLEASE_MONITOR=none: nothing kept,
 *          every operand registered and closed at its completion
 *          ("registering per operation", the only safe alternative)
 *   off    FI_MRLEASE_PINNING=no FI_MRLEASE_MONITOR=none: entries kept,
 *          nothing watched (the cache as it was before the monitor)
 *
 * Tests, each a pair of configurations:
 *
 *   munmap   mon vs off. Per iteration a 2 MiB block is mapped at a fixed
 *            2 MiB-aligned address, its first page written with desc NULL
 *            (in mon its entry is cached and the block watched), then three
 *            timed munmap calls of one touched page each:
 *              in      a page in the middle of that block, overlapping no
 *                      entry: the kernel queues an event and the caller
 *                      waits until the monitor thread has read it
 *              cached  the first page, overlapping the cached entry: the
 *                      same, and the monitor retires the entry
 *              out     a page of another 2 MiB block, never watched: no
 *                      event
 *            The rest of the block is unmapped untimed. Figure: the median
 *            ns of each kind in a process; mon/off ratio and mon - off ns.
 *   unmap    mon vs perop, per size. Per iteration: mmap the region at a
 *            fixed address, fill it, fi_write it, wait for the completion,
 *            munmap it (the loop of fabtests' fi_unmap_mem). Figure: the
 *            rate; target mon/perop >= 0.9.
 *   reuse    mon vs off, per size: fi_write of the same four buffers in
 *            turn, each waited for, nothing unmapped (every write a hit).
 *            Figure: the rate; target mon/off >= 0.99.
 *
 * Method. The machine is small and noisy, and its speed drifts over
 * seconds. Per round, every test runs its two configurations in fresh
 * processes one right after the other, the order alternating from round to
 * round; a round's figure is the paired ratio (or difference), and the
 * result is the median over MONITOR_BENCH_ROUNDS rounds with its quartiles
 * (the measurement's resolution). Fresh processes also spread each process's
 * own bias (layout, CPU placement) over the rounds. The raw medians over
 * rounds are printed too. Children run pinned to one CPU like xfer_bench's
 * (MONITOR_BENCH_CPU), so the monitor thread shares the unmapping thread's
 * CPU, as in an MPI rank bound to a core; MONITOR_BENCH_CPU=-1 leaves them
 * unpinned (the monitor then wakes on the other CPU).
 *
 * Each child checks, from the cache's statistics, that its configuration
 * did what it is meant to (mon: one monitor invalidation and one
 * registration per unmap iteration, events only where a watched range went
 * away; perop: every write a registration not retained; reuse: no
 * registration in the timed loop) and prints those counts per iteration;
 * the parent prints them and fails the run if they are wrong.
 *
 * Callgrind part: the hit path's instructions with the monitor on and off,
 * by bench/xfer_ir.sh (mode 2 only, 16 KiB, window 1) run twice with
 * XFER_IR_LEASE_ENV = the mon and the off settings. valgrind has no
 * userfaultfd system call, so both runs preload bench/monitor_bench_uffd.c,
 * which opens the descriptor through /dev/userfaultfd instead; the mon run
 * is checked to have its monitor (with PINNING=yes and no monitor every
 * write would be a miss). ir_added = hook_ir_per_op(mon) - (off): exact
 * instruction counts, no noise. MONITOR_BENCH_CALLGRIND=0 skips it.
 *
 * Environment: MONITOR_BENCH_ROUNDS (default 15), MONITOR_BENCH_SECS (timed
 * seconds per loop process, default 0.3), MONITOR_BENCH_MUNMAPS (iterations
 * per munmap process, default 2000), MONITOR_BENCH_CPU, MONITOR_BENCH_PROV,
 * MONITOR_BENCH_TIMEOUT (seconds per child, default 120; 600 for each
 * callgrind script run), MONITOR_BENCH_CALLGRIND. About five minutes by
 * default.
 *
 * Usage: monitor_bench                  the whole run
 *        monitor_bench --child MODE munmap ITERS
 *        monitor_bench --child MODE unmap|reuse SIZE SECS
 *            (one process of one configuration, MODE mon|perop|off; it
 *            sets its own FI_* environment, see child_env)
 * Last line: RESULT key=value ...
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "../test/xfer_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

enum { MODE_MON, MODE_PEROP, MODE_OFF, NMODES };

static const char *const mode_names[NMODES] = { "mon", "perop", "off" };
static const char *const mode_pinning[NMODES] = { "yes", "yes", "no" };
static const char *const mode_monitor[NMODES] = { "userfaultfd", "none", "none" };

/* The monitor's watch granularity (mrl_monitor.h, "Watching"). */
#define BLOCK ((size_t)2 << 20)
#define MAX_LOOP (1UL << 20)
#define REUSE_BUFS 4
#define MAX_ROUNDS 200

static const size_t loop_sizes[] = { 4096, 65536, 1 << 20 };
#define NSIZES (sizeof(loop_sizes) / sizeof(loop_sizes[0]))

static size_t page;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *bench_prov(void)
{
	const char *prov = getenv("MONITOR_BENCH_PROV");

	return prov ? prov : "tcp;ofi_rxm";
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : def;
}

/* ---- child: one configuration, one test ---------------------------- */

struct child {
	struct xfer_pair pair;
	char *dst;
	struct fid_mr *dst_mr;
	struct fi_context2 ctx;
};

static int child_open(struct child *c)
{
	struct xfer_opts xo = { .prov = bench_prov(), .caps = FI_MSG | FI_RMA };
	int ret;

	memset(c, 0, sizeof(*c));
	ret = xfer_pair_open(&xo, &c->pair);
	if (ret) {
		fprintf(stderr, "monitor_bench child: %s\n", fi_strerror(-ret));
		return ret == -FI_ENODATA ? 77 : 1;
	}
	if (!c->pair.mrl) {
		fprintf(stderr, "monitor_bench child: FI_HOOK=mrlease but no %s\n",
			FI_MRLEASE_OPS_1);
		goto err_close;
	}
	c->dst = aligned_alloc(page, MAX_LOOP);
	if (!c->dst)
		goto err_close;
	memset(c->dst, 0, MAX_LOOP);
	ret = xfer_mr_reg(&c->pair, c->dst, MAX_LOOP, FI_REMOTE_WRITE, &c->dst_mr);
	if (ret) {
		fprintf(stderr, "monitor_bench child: fi_mr_reg: %s\n", fi_strerror(-ret));
		goto err_free;
	}
	return 0;

err_free:
	free(c->dst);
err_close:
	xfer_pair_close(&c->pair);
	return 1;
}

static int child_close(struct child *c)
{
	int ret = fi_close(&c->dst_mr->fid);

	if (xfer_pair_close(&c->pair))
		ret = 1;
	free(c->dst);
	return ret ? 1 : 0;
}

/* One fi_write of [src, src + len) with desc NULL, waited for: the
 * operand's lease is released before this returns. */
static int write_wait(struct child *c, const void *src, size_t len)
{
	struct fi_cq_tagged_entry e;
	ssize_t n;

	while ((n = fi_write(c->pair.ep[0], src, len, NULL, c->pair.addr[1],
			     xfer_rma_addr(&c->pair, c->dst, c->dst),
			     fi_mr_key(c->dst_mr), &c->ctx)) == -FI_EAGAIN)
		(void)fi_cq_read(c->pair.cq, NULL, 0);
	if (n) {
		fprintf(stderr, "monitor_bench child: fi_write: %s\n", fi_strerror((int)-n));
		return -1;
	}
	while ((n = fi_cq_read(c->pair.cq, &e, 1)) == -FI_EAGAIN)
		;
	if (n < 0) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(c->pair.cq, &err, 0);
		fprintf(stderr, "monitor_bench child: write failed: %s\n",
			fi_strerror(err.err));
		return -1;
	}
	return 0;
}

/* The initiator's completion may come before the target's copy: drive
 * progress until the last write's bytes are there. */
static int wait_landed(struct child *c, size_t len, unsigned char v)
{
	for (long i = 0; i < XFER_MAX_POLLS; i++) {
		if ((unsigned char)c->dst[0] == v && (unsigned char)c->dst[len - 1] == v)
			return 0;
		(void)fi_cq_read(c->pair.cq, NULL, 0);
	}
	fprintf(stderr, "monitor_bench child: the written bytes never arrived\n");
	return -1;
}

static void query(struct child *c, struct fi_mrlease_stats *st)
{
	memset(st, 0, sizeof(*st));
	c->pair.mrl->query_stats(NULL, st, sizeof(*st));
}

/* What one configuration did per iteration, from the cache's counters. */
static void print_counts(const struct fi_mrlease_stats *a,
			 const struct fi_mrlease_stats *b, long iters)
{
	double n = iters > 0 ? (double)iters : 1;

	printf(" regs %.3f events %.3f invalidations %.3f not_retained %.3f "
	       "deferred %.3f\n",
	       (double)(b->registrations - a->registrations) / n,
	       (double)(b->monitor_events - a->monitor_events) / n,
	       (double)(b->monitor_invalidations - a->monitor_invalidations) / n,
	       (double)(b->not_retained - a->not_retained) / n,
	       (double)(b->deferred_closes - a->deferred_closes) / n);
}

/*
 * An address range of len bytes (a multiple of BLOCK), BLOCK-aligned, held
 * by a PROT_NONE mapping no one watches, so nothing else is placed there
 * and no event comes from it. 0 on failure.
 */
static uintptr_t reserve(size_t len)
{
	size_t span = len + BLOCK;
	char *p = mmap(NULL, span, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return 0;
	a = ((uintptr_t)p + BLOCK - 1) & ~(BLOCK - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	if ((uintptr_t)p + span > a + len)
		munmap((void *)(a + len), (uintptr_t)p + span - (a + len));
	return a;
}

/* Map read-write at addr: over our own reservation (MAP_FIXED), or into a
 * hole we made (MAP_FIXED_NOREPLACE: fails if anything else took it). */
static void *map_at(uintptr_t addr, size_t len, int prot, bool over_own)
{
	void *p = mmap((void *)addr, len, prot,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (over_own ? MAP_FIXED : MAP_FIXED_NOREPLACE),
		       -1, 0);

	if (p == MAP_FAILED || (uintptr_t)p != addr) {
		fprintf(stderr, "monitor_bench child: mmap at %#" PRIxPTR ": %s\n",
			addr, p == MAP_FAILED ? strerror(errno) : "moved");
		return NULL;
	}
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The p-quantile (0..1) of v, linear between order statistics; sorts v. */
static double quantile(double *v, int n, double p)
{
	double pos = p * (n - 1);
	int lo = (int)pos;

	if (n < 1)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	if (lo >= n - 1)
		return v[n - 1];
	return v[lo] + (v[lo + 1] - v[lo]) * (pos - lo);
}

static double median(double *v, int n)
{
	return quantile(v, n, 0.5);
}

static double munmap_ns(void *p, size_t len)
{
	double t0 = now_s();

	if (munmap(p, len))
		return -1;
	return (now_s() - t0) * 1e9;
}

/* Iterations before the timed ones: connection set-up, first misses. */
#define WARM_ITERS 20

/*
 * The munmap test (see the header): prints
 * "munmap in NS cached NS out NS" and the counts per timed iteration.
 */
static int child_munmap(struct child *c, long iters)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t a, b;
	double *ns[3];
	char *blk, *out;
	int ret = 1;

	a = reserve(2 * BLOCK);
	if (!a)
		return 1;
	b = a + BLOCK;	/* a block of its own: never watched */
	for (int k = 0; k < 3; k++)
		ns[k] = calloc((size_t)iters, sizeof(double));
	if (!ns[0] || !ns[1] || !ns[2])
		goto out;
	for (long i = -WARM_ITERS; i < iters; i++) {
		if (i == 0)
			query(c, &st0);
		blk = map_at(a, BLOCK, PROT_READ | PROT_WRITE, true);
		out = map_at(b, page, PROT_READ | PROT_WRITE, true);
		if (!blk || !out)
			goto out;
		/* No transparent huge page: unmapping one page of it would
		 * split it, a cost of its own. */
		madvise(blk, BLOCK, MADV_NOHUGEPAGE);
		blk[0] = blk[BLOCK / 2] = out[0] = (char)i;
		if (write_wait(c, blk, page))
			goto out;
		double t_in = munmap_ns(blk + BLOCK / 2, page);
		double t_cached = munmap_ns(blk, page);
		double t_out = munmap_ns(out, page);

		if (t_in < 0 || t_cached < 0 || t_out < 0) {
			fprintf(stderr, "monitor_bench child: munmap: %s\n", strerror(errno));
			goto out;
		}
		if (i >= 0) {
			ns[0][i] = t_in;
			ns[1][i] = t_cached;
			ns[2][i] = t_out;
		}
		/* The rest, untimed (mon: one more event), then the holes are
		 * reserved again. */
		if (munmap(blk, BLOCK) || !map_at(a, BLOCK, PROT_NONE, false) ||
		    !map_at(b, page, PROT_NONE, false))
			goto out;
	}
	query(c, &st1);
	printf("munmap in %.1f cached %.1f out %.1f", median(ns[0], (int)iters),
	       median(ns[1], (int)iters), median(ns[2], (int)iters));
	print_counts(&st0, &st1, iters);
	ret = 0;
out:
	for (int k = 0; k < 3; k++)
		free(ns[k]);
	munmap((void *)a, 2 * BLOCK);
	return ret;
}

/* One iteration of the unmap loop at addr. */
static int unmap_once(struct child *c, uintptr_t addr, size_t size, unsigned char v)
{
	char *p = map_at(addr, size, PROT_READ | PROT_WRITE, false);

	if (!p)
		return -1;
	memset(p, v, size);
	if (write_wait(c, p, size))
		return -1;
	if (munmap(p, size)) {
		fprintf(stderr, "monitor_bench child: munmap: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The unmap loop for secs seconds after WARM_ITERS untimed iterations:
 * prints "loop rate R" (iterations per second) and the counts.
 */
static int child_unmap(struct child *c, size_t size, double secs)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t addr = reserve(BLOCK);
	double t0, t;
	long n = 0;

	if (!addr)
		return 1;
	/* A hole of our own: each iteration maps into it (NOREPLACE). */
	munmap((void *)addr, BLOCK);
	for (long i = 0; i < WARM_ITERS; i++)
		if (unmap_once(c, addr, size, (unsigned char)(i | 1)))
			return 1;
	query(c, &st0);
	t0 = now_s();
	do {
		if (unmap_once(c, addr, size, (unsigned char)(++n | 1)))
			return 1;
	} while ((t = now_s() - t0) < secs);
	query(c, &st1);
	if (wait_landed(c, size, (unsigned char)(n | 1)))
		return 1;
	printf("loop rate %.1f", (double)n / t);
	print_counts(&st0, &st1, n);
	return 0;
}

/* The reuse loop: the same REUSE_BUFS buffers written in turn. */
static int child_reuse(struct child *c, size_t size, double secs)
{
	struct fi_mrlease_stats st0, st1;
	char *buf[REUSE_BUFS];
	double t0, t;
	long n = 0;
	int ret = 1;

	for (int i = 0; i < REUSE_BUFS; i++) {
		buf[i] = mmap(NULL, size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf[i] == MAP_FAILED)
			return 1;
		memset(buf[i], 0x40 + i, size);
	}
	for (long i = 0; i < WARM_ITERS; i++)
		if (write_wait(c, buf[i % REUSE_BUFS], size))
			goto out;
	query(c, &st0);
	t0 = now_s();
	do {
		if (write_wait(c, buf[n++ % REUSE_BUFS], size))
			goto out;
	} while ((t = now_s() - t0) < secs);
	query(c, &st1);
	if (wait_landed(c, size, (unsigned char)(0x40 + (n - 1) % REUSE_BUFS)))
		goto out;
	printf("loop rate %.1f", (double)n / t);
	print_counts(&st0, &st1, n);
	ret = 0;
out:
	for (int i = 0; i < REUSE_BUFS; i++)
		munmap(buf[i], size);
	return ret;
}

static void child_env(int mode);

static int child_main(int argc, char **argv)
{
	struct child c;
	const char *test;
	int mode = -1, ret;

	if (argc < 5)
		return 2;
	for (int m = 0; m < NMODES; m++)
		if (!strcmp(argv[2], mode_names[m]))
			mode = m;
	if (mode < 0)
		return 2;
	test = argv[3];
	/* Before libfabric's first call, which reads them. */
	child_env(mode);
	/* A hang (a monitor that never reads, a lost completion) fails the
	 * run instead of blocking it. */
	alarm((unsigned)env_long("MONITOR_BENCH_TIMEOUT", 120));
	ret = child_open(&c);
	if (ret)
		return ret;
	if (!strcmp(test, "munmap"))
		ret = child_munmap(&c, strtol(argv[4], NULL, 10));
	else if (!strcmp(test, "unmap") && argc >= 6)
		ret = child_unmap(&c, strtoul(argv[4], NULL, 10), strtod(argv[5], NULL));
	else if (!strcmp(test, "reuse") && argc >= 6)
		ret = child_reuse(&c, strtoul(argv[4], NULL, 10), strtod(argv[5], NULL));
	else
		ret = 2;
	fflush(stdout);
	if (child_close(&c) && !ret)
		ret = 1;
	return ret;
}

/* ---- parent: rounds of paired children ----------------------------- */

/* What one child reported. */
struct sample {
	double v[3];		/* munmap: in, cached, out ns; loops: v[0] rate */
	double regs, events, invalidations, not_retained, deferred;
};

enum { TEST_MUNMAP, TEST_UNMAP, TEST_REUSE };

/* A test and the two configurations it compares: a against b. */
struct pairing {
	int test;
	size_t size;
	int a, b;
};

#define NPAIRINGS (1 + 2 * NSIZES)
static struct pairing pairings[NPAIRINGS];
static const char *const test_names[] = { "munmap", "unmap", "reuse" };

static struct sample samples[NPAIRINGS][MAX_ROUNDS][2];

static void self_dir(char *buf, size_t len, int up)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[n > 0 ? n : 0] = '\0';
	for (int i = 0; i < up; i++) {
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		if (i == 0 && (slash = strrchr(exe, '/')) && !strcmp(slash, "/.libs"))
			*slash = '\0';
	}
	snprintf(buf, len, "%s", exe);
}

/* The environment of a child of mode, set by the child itself before it
 * opens libfabric (so a child run by hand measures the same thing). */
static void child_env(int mode)
{
	char builddir[PATH_MAX], path[PATH_MAX + 32];

	self_dir(builddir, sizeof(builddir), 2);
	snprintf(path, sizeof(path), "%s/prov/mrlease/.libs", builddir);
	setenv("FI_PROVIDER_PATH", path, 1);
	setenv("FI_TCP_IFACE", getenv("FI_TCP_IFACE") ? getenv("FI_TCP_IFACE") : "lo", 1);
	setenv("FI_HOOK", "mrlease", 1);
	setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
	setenv("FI_MRLEASE_PINNING", mode_pinning[mode], 1);
	setenv("FI_MRLEASE_MONITOR", mode_monitor[mode], 1);
	unsetenv("FI_MRLEASE_STATS");
}

/*
 * Run argv (argv[0] a path) with stdout (and stderr too when `both`) into a
 * pipe, in a process group of its own, killed with its group after
 * timeout seconds; each output line goes to on_line. Returns the exit
 * status (as waitpid's), or -1.
 */
static int run_capture(char *const *argv, bool both, int timeout,
		       void (*on_line)(const char *line, void *arg), void *arg)
{
	int fd[2], status = -1;
	double deadline = now_s() + timeout;
	char buf[4096], line[1024];
	size_t ll = 0;
	pid_t pid;

	if (pipe2(fd, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		dup2(fd[1], STDOUT_FILENO);
		if (both)
			dup2(fd[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		struct pollfd pfd = { .fd = fd[0], .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1e3);
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, left) == 0) {
			fprintf(stderr, "monitor_bench: %s %s timed out\n", argv[0],
				argv[1] ? argv[1] : "");
			kill(-pid, SIGKILL);
			break;
		}
		n = read(fd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n' && ll < sizeof(line) - 1) {
				line[ll++] = buf[i];
				continue;
			}
			if (buf[i] != '\n')
				continue;
			line[ll] = '\0';
			ll = 0;
			on_line(line, arg);
		}
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

static void parse_sample(const char *line, void *arg)
{
	struct sample *s = arg;
	const char *counts = strstr(line, " regs ");

	if (!strncmp(line, "munmap ", 7))
		sscanf(line, "munmap in %lf cached %lf out %lf", &s->v[0], &s->v[1],
		       &s->v[2]);
	else if (!strncmp(line, "loop ", 5))
		sscanf(line, "loop rate %lf", &s->v[0]);
	else
		return;
	if (counts)
		sscanf(counts, " regs %lf events %lf invalidations %lf not_retained %lf "
		       "deferred %lf", &s->regs, &s->events, &s->invalidations,
		       &s->not_retained, &s->deferred);
}

/* One child of mode for pairing p; 0, -FI_ENODATA (provider missing) or
 * -FI_EOTHER. */
static int run_child(const struct pairing *p, int mode, struct sample *s)
{
	char self[PATH_MAX], arg_mode[16], arg_n[32], arg_secs[32];
	char *argv[] = { self, "--child", arg_mode, (char *)test_names[p->test],
			 arg_n, arg_secs, NULL };
	int status;

	self_dir(self, sizeof(self), 0);
	snprintf(arg_mode, sizeof(arg_mode), "%s", mode_names[mode]);
	if (p->test == TEST_MUNMAP) {
		snprintf(arg_n, sizeof(arg_n), "%ld", env_long("MONITOR_BENCH_MUNMAPS", 2000));
		argv[5] = NULL;
	} else {
		snprintf(arg_n, sizeof(arg_n), "%zu", p->size);
		snprintf(arg_secs, sizeof(arg_secs), "%s",
			 getenv("MONITOR_BENCH_SECS") ? getenv("MONITOR_BENCH_SECS") : "0.3");
	}
	memset(s, 0, sizeof(*s));
	status = run_capture(argv, false,
			     (int)env_long("MONITOR_BENCH_TIMEOUT", 120) + 10,
			     parse_sample, s);
	if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return -FI_ENODATA;
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) || s->v[0] <= 0) {
		fprintf(stderr, "monitor_bench: child %s %s %zu failed\n",
			mode_names[mode], test_names[p->test], p->size);
		return -FI_EOTHER;
	}
	return 0;
}

/*
 * Whether a child's counts are those of its configuration. A wrong count
 * means the monitor (or the retention policy) did not do its job, which
 * would make every figure meaningless.
 */
static bool counts_sane(const struct pairing *p, int mode, const struct sample *s,
			char *why, size_t len)
{
	bool ok = true;

	if (p->test == TEST_MUNMAP && mode == MODE_MON) {
		/* in, cached, rest: three events; only cached retires. */
		if (s->events < 2.99 || s->invalidations < 0.99 || s->regs < 0.99)
			ok = false;
	} else if (p->test == TEST_UNMAP && mode == MODE_MON) {
		if (s->invalidations < 0.99 || s->regs < 0.99 || s->not_retained > 0.01)
			ok = false;
	} else if (p->test == TEST_UNMAP && mode == MODE_PEROP) {
		if (s->not_retained < 0.99)
			ok = false;
	} else if (p->test == TEST_REUSE) {
		if (s->regs > 0 || s->invalidations > 0)
			ok = false;
	}
	if (mode != MODE_MON && s->events > 0)
		ok = false;
	snprintf(why, len, "%s %s %zu: regs %.3f events %.3f invalidations %.3f "
		 "not_retained %.3f deferred %.3f per iteration", mode_names[mode],
		 test_names[p->test], p->size, s->regs, s->events, s->invalidations,
		 s->not_retained, s->deferred);
	return ok;
}

static int pin_one_cpu(void)
{
	const char *env = getenv("MONITOR_BENCH_CPU");
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	if (env) {
		cpu = atoi(env);
		if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))
			return -1;
	} else {
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpu = c;
	}
	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
}

/* Median and quartiles of the rounds' figure f(a, b) of pairing p. */
struct figure {
	double med, q1, q3;
};

static struct figure figure_of(int p, int rounds, int k,
			       double (*f)(double a, double b))
{
	double v[MAX_ROUNDS];
	struct figure fig;

	for (int r = 0; r < rounds; r++)
		v[r] = f(samples[p][r][0].v[k], samples[p][r][1].v[k]);
	fig.q1 = quantile(v, rounds, 0.25);
	fig.med = quantile(v, rounds, 0.5);
	fig.q3 = quantile(v, rounds, 0.75);
	return fig;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static double diff(double a, double b)
{
	return a - b;
}

static double raw_median(int p, int rounds, int side, int k)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = samples[p][r][side].v[k];
	return median(v, rounds);
}

/* ---- callgrind part --------------------------------------------------- */

struct ir_run {
	double hook, cache;
	bool result, skipped, no_monitor;
};

static void parse_ir(const char *line, void *arg)
{
	struct ir_run *ir = arg;
	const char *h = strstr(line, "hook_ir_per_op="), *c = strstr(line, "cache_ir_per_op=");

	/* The provider's warning when a pinning domain gets no monitor. */
	if (strstr(line, "no memory monitor"))
		ir->no_monitor = true;
	if (strncmp(line, "RESULT ", 7))
		return;
	if (strstr(line, "skipped=1"))
		ir->skipped = true;
	if (h && c) {
		ir->hook = strtod(h + strlen("hook_ir_per_op="), NULL);
		ir->cache = strtod(c + strlen("cache_ir_per_op="), NULL);
		ir->result = true;
	}
}

/* bench/xfer_ir.sh in the leased mode only, with mode's settings. */
static int xfer_ir(int mode, struct ir_run *ir)
{
	char builddir[PATH_MAX], script[PATH_MAX + 32], env[3 * PATH_MAX];
	char *argv[] = { "/bin/bash", script, builddir, NULL };
	int status;

	self_dir(builddir, sizeof(builddir), 2);
	snprintf(script, sizeof(script), "%s/bench/xfer_ir.sh", MONITOR_BENCH_SRCDIR);
	if (access(script, R_OK))
		snprintf(script, sizeof(script), "%s/bench/xfer_ir", builddir);
	snprintf(env, sizeof(env),
		 "FI_MRLEASE_MIN_SIZE=0 FI_MRLEASE_PINNING=%s FI_MRLEASE_MONITOR=%s "
		 "FI_LOG_LEVEL=warn LD_PRELOAD=%s/bench/.libs/libmonitor_bench_uffd.so",
		 mode_pinning[mode], mode_monitor[mode], builddir);
	setenv("XFER_IR_LEASE_ENV", env, 1);
	setenv("XFER_IR_MODES", "2", 1);
	setenv("XFER_IR_REPEAT", "1", 1);
	memset(ir, 0, sizeof(*ir));
	status = run_capture(argv, true, 600, parse_ir, ir);
	unsetenv("XFER_IR_LEASE_ENV");
	unsetenv("XFER_IR_MODES");
	unsetenv("XFER_IR_REPEAT");
	return status != -1 && WIFEXITED(status) && !WEXITSTATUS(status) &&
	       ir->result && !ir->skipped ? 0 : -1;
}

/* ---- parent ------------------------------------------------------------ */

static int parent_main(void)
{
	int rounds = (int)env_long("MONITOR_BENCH_ROUNDS", 15);
	const char *cg = getenv("MONITOR_BENCH_CALLGRIND");
	struct ir_run ir_on = { 0 }, ir_off = { 0 };
	bool ir_ok = false, sane = true;
	double t0 = now_s(), load[1] = { -1 };
	int cpu, np = 0;
	time_t now = time(NULL);
	char when[64];

	signal(SIGPIPE, SIG_IGN);
	if (rounds < 1)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	pairings[np++] = (struct pairing){ TEST_MUNMAP, 0, MODE_MON, MODE_OFF };
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){ TEST_UNMAP, loop_sizes[i], MODE_MON,
						   MODE_PEROP };
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){ TEST_REUSE, loop_sizes[i], MODE_MON,
						   MODE_OFF };

	/* Callgrind first: the pinned rounds need not wait for valgrind. */
	if (!cg || strcmp(cg, "0")) {
		if (!xfer_ir(MODE_MON, &ir_on) && !xfer_ir(MODE_OFF, &ir_off) &&
		    !ir_on.no_monitor)
			ir_ok = true;
		if (ir_ok)
			printf("# callgrind, hook instructions per leased fi_write (16 KiB, "
			       "hit path): monitor on %.1f (cache %.1f), off %.1f (cache "
			       "%.1f)\n", ir_on.hook, ir_on.cache, ir_off.hook, ir_off.cache);
		else
			printf("# callgrind: %s\n",
			       ir_on.no_monitor ? "the monitor did not start under valgrind" :
						  "valgrind unavailable or failed");
	}

	cpu = pin_one_cpu();
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M %Z", localtime(&now));
	printf("# monitor_bench %s over %s: %d rounds, each test's two configurations "
	       "in fresh processes back to back, order alternating; CPU %d (-1: not "
	       "pinned)\n", when, bench_prov(), rounds, cpu);
	fflush(stdout);
	for (int r = 0; r < rounds; r++) {
		for (int p = 0; p < np; p++) {
			/* a first in even rounds of even pairings, and so on. */
			int first = (r + p) & 1;

			for (int k = 0; k < 2; k++) {
				int side = k ^ first;
				int mode = side ? pairings[p].b : pairings[p].a;
				struct sample *s = &samples[p][r][side];
				char why[256];
				int ret = run_child(&pairings[p], mode, s);

				if (ret == -FI_ENODATA) {
					printf("# provider %s unavailable: skipped\n"
					       "RESULT skipped=1\n", bench_prov());
					return 0;
				}
				if (ret)
					return 1;
				if (!counts_sane(&pairings[p], mode, s, why, sizeof(why))) {
					printf("# WRONG COUNTS (round %d) %s\n", r, why);
					sane = false;
				} else if (r == 0) {
					printf("# counts %s\n", why);
				}
			}
		}
	}

	struct figure mu[3], ma[3], fu[NPAIRINGS];
	static const char *const kinds[] = { "in", "cached", "out" };
	double min_unmap = 1e9, min_reuse = 1e9;

	printf("# munmap of one page, ns per call (median over rounds of each "
	       "process's median; ratio and added ns paired per round, [q1 q3]):\n");
	for (int k = 0; k < 3; k++) {
		mu[k] = figure_of(0, rounds, k, ratio);
		ma[k] = figure_of(0, rounds, k, diff);
		printf("#   %-6s  on %8.0f  off %8.0f  ratio %6.2f [%.2f %.2f]  "
		       "added %7.0f ns [%.0f %.0f]\n", kinds[k], raw_median(0, rounds, 0, k),
		       raw_median(0, rounds, 1, k), mu[k].med, mu[k].q1, mu[k].q3,
		       ma[k].med, ma[k].q1, ma[k].q3);
	}
	printf("# loops, iterations per second (median over rounds), paired ratio "
	       "[q1 q3]:\n");
	for (int p = 1; p < np; p++) {
		const struct pairing *pp = &pairings[p];

		fu[p] = figure_of(p, rounds, 0, ratio);
		printf("#   %-5s %7zu  %s %9.0f  %s %9.0f  ratio %.3f [%.3f %.3f]\n",
		       test_names[pp->test], pp->size, mode_names[pp->a],
		       raw_median(p, rounds, 0, 0), mode_names[pp->b],
		       raw_median(p, rounds, 1, 0), fu[p].med, fu[p].q1, fu[p].q3);
		if (pp->test == TEST_UNMAP && fu[p].med < min_unmap)
			min_unmap = fu[p].med;
		if (pp->test == TEST_REUSE && fu[p].med < min_reuse)
			min_reuse = fu[p].med;
	}
	if (getloadavg(load, 1) != 1)
		load[0] = -1;
	printf("# %.0f s in all; load average (1 min) at the end %.2f on %ld cpus\n",
	       now_s() - t0, load[0], sysconf(_SC_NPROCESSORS_ONLN));
	if (!sane)
		printf("# some configuration did not behave as configured: figures "
		       "invalid\n");

	printf("RESULT prov=%s rounds=%d cpu=%d load1=%.2f sane=%d", bench_prov(),
	       rounds, cpu, load[0], sane);
	if (ir_ok)
		printf(" ir_on=%.1f ir_off=%.1f ir_added=%.1f", ir_on.hook, ir_off.hook,
		       ir_on.hook - ir_off.hook);
	else
		printf(" ir_added=na");
	for (int k = 0; k < 3; k++)
		printf(" munmap_%s_ratio=%.2f munmap_%s_added_ns=%.0f munmap_%s_on_ns=%.0f "
		       "munmap_%s_off_ns=%.0f", kinds[k], mu[k].med, kinds[k], ma[k].med,
		       kinds[k], raw_median(0, rounds, 0, k), kinds[k],
		       raw_median(0, rounds, 1, k));
	for (int p = 1; p < np; p++) {
		const struct pairing *pp = &pairings[p];

		printf(" %s_%zu=%.3f %s_%s_%zu=%.0f %s_%s_%zu=%.0f", test_names[pp->test],
		       pp->size, fu[p].med, test_names[pp->test], mode_names[pp->a],
		       pp->size, raw_median(p, rounds, 0, 0), test_names[pp->test],
		       mode_names[pp->b], pp->size, raw_median(p, rounds, 1, 0));
	}
	printf(" min_unmap=%.3f min_reuse=%.3f\n", min_unmap, min_reuse);
	return sane ? 0 : 1;
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--child mon|perop|off munmap ITERS | "
		"--child mon|perop|off unmap|reuse SIZE SECS]\n", prog);
	return 2;
}

int main(int argc, char **argv)
{
	int ret;

	page = (size_t)sysconf(_SC_PAGESIZE);
	if (argc == 1)
		return parent_main();
	if (strcmp(argv[1], "--child"))
		return usage(argv[0]);
	ret = child_main(argc, argv);
	return ret == 2 ? usage(argv[0]) : ret;
}
