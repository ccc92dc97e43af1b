/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/monitor_bench: what the userfaultfd memory monitor costs (issue 12,
 * item 8), each figure against a baseline measured in the same run.
 *
 * Everything goes through libfabric: FI_HOOK=mrlease over loopback
 * tcp;ofi_rxm (MONITOR_BENCH_PROV), FI_MRLEASE_MIN_SIZE=0 so every operand
 * is leased, fi_write with desc NULL into a target buffer the application
 * registered, each write waited for. The monitor is the provider's own
 * (started by the domain, invalidating through the cache's deferred path),
 * so what is measured is what an application pays. Three configurations,
 * each in processes of its own (the parameters are read once per process):
 *
 *   mon    FI_MRLEASE_PINNING=yes FI_MRLEASE_MONITOR=userfaultfd: the
 *          provider treated as pinning, entries kept while watched
 *   perop  FI_MRLEASE_PINNING=yes FI_MRLEASE_MONITOR=none: nothing kept,
 *          every operand registered and closed at its completion
 *          ("registering per operation", the only safe alternative)
 *   off    FI_MRLEASE_PINNING=no FI_MRLEASE_MONITOR=none: entries kept,
 *          nothing watched (the cache without a monitor)
 *
 * Tests, each comparing two configurations:
 *
 *   munmap   mon vs off. Per iteration a 2 MiB block is mapped at a fixed
 *            2 MiB-aligned address, its first page written (in mon its
 *            entry is cached and the block watched), then munmap of one
 *            touched page, timed, of the kinds
 *              out     a page of another 2 MiB block, never watched: no
 *                      event (every iteration, first)
 *              in      a page in the middle of that block, overlapping no
 *                      entry: the kernel queues an event and the caller
 *                      waits until the monitor thread has read it
 *              cached  the first page, overlapping the cached entry: the
 *                      same, and the monitor retires the entry
 *            in and cached in alternate iterations, each the first watched
 *            munmap since the write (see munmap_once); the rest of the
 *            block is unmapped untimed. Figure: a slice's median ns per
 *            kind; mon/off ratio and mon - off ns.
 *   unmap    mon vs perop, per size: per iteration mmap the region at a
 *            fixed address, fill it, fi_write it, wait, munmap it (the loop
 *            of fabtests' fi_unmap_mem). Figure: the rate (target mon/perop
 *            >= 0.9), and unmap_added_us, what mon adds per iteration. Over
 *            tcp a registration costs little, so the ratio is a floor: on a
 *            provider whose registration plus close costs more than
 *            unmap_added_us, mon is the faster of the two. The time of each
 *            phase is printed too; the kernel may move cost between them
 *            (pages freed by munmap, faulted in by the next fill), so the
 *            rate is the figure.
 *   reuse    mon vs off, per size: fi_write of the same four buffers in
 *            turn, nothing unmapped, every write a hit. Figure: the rate;
 *            target mon/off >= 0.99.
 *
 * Method (xfer_bench's). The machine's speed drifts over seconds and other
 * work lands on its two CPUs. One server child per configuration stays up
 * for a generation, pinned with the others to one CPU (MONITOR_BENCH_CPU,
 * default the highest allowed; -1 unpinned), and runs a timed slice per
 * command; the idle ones wait in read(). A round runs, for every test, the
 * two configurations' slices back to back, the order alternating from round
 * to round and test to test. A round's figure is the paired ratio (or
 * difference) of its two slices; the result is the median over rounds, its
 * quartiles the resolution. MONITOR_BENCH_GENERATIONS sets of fresh children
 * share the rounds, since a process keeps a bias of its own that pairing
 * cannot cancel. Pinned, the monitor thread shares the unmapping thread's
 * CPU, as in an MPI rank bound to one core; unpinned, it wakes on the other.
 *
 * Each slice also reports, from the cache's statistics, what its
 * configuration did per iteration (registrations, monitor events,
 * invalidations, registrations not retained, deferred closes); the parent
 * prints the first of each and fails the run when one is not what the
 * configuration must do (for example mon's unmap loop without one monitor
 * invalidation per iteration).
 *
 * Callgrind part: the hit path's instructions with the monitor on and off,
 * by bench/xfer_ir.sh (leased mode only, 16 KiB, window 1) with
 * XFER_IR_LEASE_ENV = mon's and off's settings, alternately,
 * MONITOR_BENCH_IR_RUNS times each. valgrind has no userfaultfd system
 * call, so every run preloads bench/monitor_bench_uffd.c, which opens the
 * descriptor through /dev/userfaultfd; a mon run whose monitor did not start
 * (the provider warns) voids the figure. A run's count per write moves with
 * the posts retried on -FI_EAGAIN, which only add: each configuration's
 * figure is its smallest, ir_added = ir_on - ir_off, and ir_spread (how far
 * one configuration's runs fell apart) is its resolution.
 * MONITOR_BENCH_CALLGRIND=0 skips it.
 *
 * Environment: MONITOR_BENCH_ROUNDS (default 40), MONITOR_BENCH_GENERATIONS
 * (default 5), MONITOR_BENCH_SECS (seconds per loop slice, default 0.1),
 * MONITOR_BENCH_MUNMAPS (iterations per munmap slice, default 300),
 * MONITOR_BENCH_IR_RUNS (default 3), MONITOR_BENCH_CPU, MONITOR_BENCH_PROV,
 * MONITOR_BENCH_TIMEOUT (seconds a child may take to answer, default 120),
 * MONITOR_BENCH_CALLGRIND. About four minutes by default.
 *
 * A server by hand: printf 'unmap 4096 0.3\nquit\n' | monitor_bench --serve
 * mon (commands "munmap N", "unmap SIZE SECS", "reuse SIZE SECS", "quit";
 * it sets its own FI_* environment, see child_env).
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
#include "mrl_cache.h"
#include "mrl_monitor.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

enum { MODE_MON, MODE_PEROP, MODE_OFF, NMODES };

static const char *const mode_names[NMODES] = { "mon", "perop", "off" };
static const char *const mode_pinning[NMODES] = { "yes", "yes", "no" };
static const char *const mode_monitor[NMODES] = { "userfaultfd", "none", "none" };

/* The monitor's watch granularity (mrl_monitor.h, "Watching"). */
#define BLOCK ((size_t)2 << 20)
#define MAX_LOOP ((size_t)1 << 20)
#define REUSE_BUFS 4
#define MAX_ROUNDS 400
/* Untimed iterations before a slice: the first misses of its buffers. */
#define WARM_ITERS (2 * REUSE_BUFS)

static const size_t loop_sizes[] = { 4096, 65536, MAX_LOOP };
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

/* The build directory: up two levels from this program (bench/.libs aside). */
static void builddir_of_self(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[n > 0 ? n : 0] = '\0';
	for (int up = 0; up < 2; up++) {
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		if (up == 0 && (slash = strrchr(exe, '/')) && !strcmp(slash, "/.libs"))
			*slash = '\0';
	}
	snprintf(buf, len, "%s", exe);
}

/* ---- child: one configuration's server ---------------------------------- */

/* The environment of a configuration, set by its child itself before
 * libfabric's first call reads it. */
static void child_env(int mode)
{
	char builddir[PATH_MAX], path[PATH_MAX + 32];

	builddir_of_self(builddir, sizeof(builddir));
	snprintf(path, sizeof(path), "%s/prov/mrlease/.libs", builddir);
	setenv("FI_PROVIDER_PATH", path, 1);
	setenv("FI_TCP_IFACE", getenv("FI_TCP_IFACE") ? getenv("FI_TCP_IFACE") : "lo", 1);
	setenv("FI_HOOK", "mrlease", 1);
	setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
	setenv("FI_MRLEASE_PINNING", mode_pinning[mode], 1);
	setenv("FI_MRLEASE_MONITOR", mode_monitor[mode], 1);
	unsetenv("FI_MRLEASE_STATS");
}

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

/* What the configuration did per timed iteration, from the cache's
 * counters (the end of an answer line). */
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

/* Map at addr: over our own reservation (MAP_FIXED), or into a hole we
 * made (MAP_FIXED_NOREPLACE: fails if anything else took it meanwhile). */
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

static double munmap_ns(void *p, size_t len)
{
	double t0 = now_s();

	if (munmap(p, len))
		return -1;
	return (now_s() - t0) * 1e9;
}

/*
 * One munmap iteration (see the header) at block a and page b. The
 * monitor's thread sleeps until an event comes, and waking it costs more
 * than the next event right after (which finds it just gone back to wait):
 * the first munmap after the write is the one an application pays, so
 * `which` (0: in, 1: cached) is timed first and the other is not timed;
 * out, which wakes nobody, is timed before both. Sets t[which] and t[2].
 */
static int munmap_once(struct child *c, uintptr_t a, uintptr_t b, char v, int which,
		       double t[3])
{
	char *blk = map_at(a, BLOCK, PROT_READ | PROT_WRITE, true);
	char *out = map_at(b, page, PROT_READ | PROT_WRITE, true);
	char *pages[2];

	if (!blk || !out)
		return -1;
	/* No transparent huge page: unmapping one page of it would split
	 * it, a cost of its own. */
	madvise(blk, BLOCK, MADV_NOHUGEPAGE);
	pages[0] = blk + BLOCK / 2;
	pages[1] = blk;
	blk[0] = blk[BLOCK / 2] = out[0] = v;
	if (write_wait(c, blk, page))
		return -1;
	t[2] = munmap_ns(out, page);
	t[which] = munmap_ns(pages[which], page);
	if (t[2] < 0 || t[which] < 0 || munmap(pages[!which], page)) {
		fprintf(stderr, "monitor_bench child: munmap: %s\n", strerror(errno));
		return -1;
	}
	/* The rest, untimed (mon: one more event); then the holes are
	 * reserved again. */
	if (munmap(blk, BLOCK) || !map_at(a, BLOCK, PROT_NONE, false) ||
	    !map_at(b, page, PROT_NONE, false))
		return -1;
	return 0;
}

/* "munmap N": answers "munmap in NS cached NS out NS" (medians; in and
 * cached from alternate iterations) and the counts per timed iteration. */
static int child_munmap(struct child *c, long iters)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t a = reserve(2 * BLOCK);
	double *ns[3] = { NULL }, t[3];
	long got[3] = { 0 };
	int ret = -1;

	if (!a || iters < 2)
		return -1;
	for (int k = 0; k < 3; k++)
		if (!(ns[k] = calloc((size_t)iters, sizeof(double))))
			goto out;
	/* a + BLOCK: a block of its own, never watched. */
	for (long i = 0; i < WARM_ITERS; i++)
		if (munmap_once(c, a, a + BLOCK, (char)i, (int)(i & 1), t))
			goto out;
	query(c, &st0);
	for (long i = 0; i < iters; i++) {
		int which = (int)(i & 1);

		if (munmap_once(c, a, a + BLOCK, (char)i, which, t))
			goto out;
		ns[which][got[which]++] = t[which];
		ns[2][got[2]++] = t[2];
	}
	query(c, &st1);
	printf("munmap in %.1f cached %.1f out %.1f", median(ns[0], (int)got[0]),
	       median(ns[1], (int)got[1]), median(ns[2], (int)got[2]));
	print_counts(&st0, &st1, iters);
	ret = 0;
out:
	for (int k = 0; k < 3; k++)
		free(ns[k]);
	munmap((void *)a, 2 * BLOCK);
	return ret;
}

/* One iteration of the unmap loop at addr; adds the seconds spent mapping
 * and filling, writing, unmapping to phase[0..2]. */
static int unmap_once(struct child *c, uintptr_t addr, size_t size, unsigned char v,
		      double phase[3])
{
	double t0 = now_s(), t1, t2;
	char *p = map_at(addr, size, PROT_READ | PROT_WRITE, false);

	if (!p)
		return -1;
	memset(p, v, size);
	t1 = now_s();
	if (write_wait(c, p, size))
		return -1;
	t2 = now_s();
	if (munmap(p, size)) {
		fprintf(stderr, "monitor_bench child: munmap: %s\n", strerror(errno));
		return -1;
	}
	phase[0] += t1 - t0;
	phase[1] += t2 - t1;
	phase[2] += now_s() - t2;
	return 0;
}

/* "unmap SIZE SECS": answers "loop rate R" (iterations per second), the µs
 * per iteration of its phases ("map_us M write_us W munmap_us U": where
 * the monitor's cost lands) and the counts. */
static int child_unmap(struct child *c, size_t size, double secs)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t addr = reserve(BLOCK);
	double t0, t, phase[3] = { 0 };
	long n = 0;
	int ret = -1;

	if (!addr)
		return -1;
	/* A hole of our own, which each iteration maps into. */
	munmap((void *)addr, BLOCK);
	for (long i = 0; i < WARM_ITERS; i++)
		if (unmap_once(c, addr, size, (unsigned char)(i | 1), phase))
			return -1;
	memset(phase, 0, sizeof(phase));
	query(c, &st0);
	t0 = now_s();
	do {
		if (unmap_once(c, addr, size, (unsigned char)(++n | 1), phase))
			return -1;
	} while ((t = now_s() - t0) < secs);
	query(c, &st1);
	if (!wait_landed(c, size, (unsigned char)(n | 1))) {
		printf("loop rate %.1f map_us %.2f write_us %.2f munmap_us %.2f",
		       (double)n / t, phase[0] / n * 1e6, phase[1] / n * 1e6,
		       phase[2] / n * 1e6);
		print_counts(&st0, &st1, n);
		ret = 0;
	}
	return ret;
}

/* "reuse SIZE SECS": the same REUSE_BUFS buffers written in turn. */
static int child_reuse(struct child *c, size_t size, double secs)
{
	struct fi_mrlease_stats st0, st1;
	char *buf[REUSE_BUFS] = { NULL };
	double t0, t;
	long n = 0;
	int ret = -1;

	for (int i = 0; i < REUSE_BUFS; i++) {
		buf[i] = mmap(NULL, size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf[i] == MAP_FAILED) {
			buf[i] = NULL;
			goto out;
		}
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
		if (buf[i])
			munmap(buf[i], size);
	return ret;
}

/*
 * --serve MODE: open the pair, say "ready", then answer one command per
 * line on stdin until "quit" (see the header). End of input without
 * "quit" means the parent is gone: exit 1. A command that takes longer
 * than MONITOR_BENCH_TIMEOUT (a monitor that never reads, a lost
 * completion) ends the child by SIGALRM rather than blocking the run.
 */
static int serve_main(const char *mode_name)
{
	unsigned timeout = (unsigned)env_long("MONITOR_BENCH_TIMEOUT", 120);
	struct child c;
	char line[128];
	int mode = -1, ret;

	for (int m = 0; m < NMODES; m++)
		if (!strcmp(mode_name, mode_names[m]))
			mode = m;
	if (mode < 0)
		return 2;
	child_env(mode);
	alarm(timeout);
	ret = child_open(&c);
	if (ret)
		return ret;
	printf("ready\n");
	fflush(stdout);
	ret = 1;
	while (fgets(line, sizeof(line), stdin)) {
		size_t size;
		double secs;
		long n;
		int r;

		if (!strcmp(line, "quit\n")) {
			ret = 0;
			break;
		}
		alarm(timeout);
		if (sscanf(line, "munmap %ld", &n) == 1)
			r = child_munmap(&c, n);
		else if (sscanf(line, "unmap %zu %lf", &size, &secs) == 2 &&
			 size >= 1 && size <= MAX_LOOP)
			r = child_unmap(&c, size, secs);
		else if (sscanf(line, "reuse %zu %lf", &size, &secs) == 2 &&
			 size >= 1 && size <= MAX_LOOP)
			r = child_reuse(&c, size, secs);
		else
			r = -1;
		if (r) {
			fprintf(stderr, "monitor_bench %s: failed: %s", mode_name, line);
			break;
		}
		fflush(stdout);
	}
	alarm(0);
	if (child_close(&c))
		ret = 1;
	return ret;
}

/* ---- hit driver: the cache's hit path alone, for callgrind ---------------- */

/*
 * --hit on|off N: a cache of this program's own over a registrar that
 * registers nothing, one entry, N lease + release of it (the inline hit
 * path every leased operand takes). "on" starts the monitor, with the
 * provider's client (barrier around reads, deferred invalidation), and
 * watches the entry's block as the provider does over a pinning domain.
 * Single-threaded apart from the idle monitor, no network: its instruction
 * counts are exact, unlike a transfer's (see callgrind_hit). Answers
 * "hit monitor M retained R hits H".
 */
static void hit_init(void *arg)
{
	(void)arg;
	mrl_cache_thread_attach();
}

static void hit_hold(void *arg)
{
	(void)arg;
	mrl_cache_barrier_raise();
}

static void hit_invalidate(void *arg, uintptr_t start, uintptr_t end)
{
	mrl_cache_invalidate_deferred(arg, start, end);
}

static void hit_release(void *arg)
{
	(void)arg;
	mrl_cache_barrier_lower();
}

static int hit_reg(void *ctx, const void *addr, size_t len, uint64_t access,
		   uint64_t key, void **mr, void **desc)
{
	static char handle;

	(void)ctx, (void)addr, (void)len, (void)access, (void)key;
	*mr = &handle;
	*desc = NULL;
	return 0;
}

static int hit_close(void *ctx, void *mr)
{
	(void)ctx, (void)mr;
	return 0;
}

static bool hit_watch(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void)ctx;
	return mrl_monitor_watch(lo, hi);
}

/* The measured loop, alone in its function so callgrind counts only it
 * (--toggle-collect=hit_loop). */
static __attribute__((noinline)) int hit_loop(struct mrl_cache_domain *dom,
					      uintptr_t lo, uintptr_t hi, long n)
{
	struct mrl_registration *reg;

	for (long i = 0; i < n; i++) {
		if (mrl_cache_acquire(dom, lo, hi, &reg))
			return -1;
		mrl_lease_release(reg);
	}
	return 0;
}

static int hit_main(const char *mode, long n)
{
	bool on = !strcmp(mode, "on");
	struct mrl_registrar registrar = { .reg = hit_reg, .close = hit_close,
					   .watch = on ? hit_watch : NULL };
	struct mrl_domain_config dcfg = { .registrar = &registrar, .mr_key_size = 8 };
	struct mrl_cache_config ccfg = { 0 };
	struct mrl_monitor_client client = { .thread_init = hit_init, .hold = hit_hold,
					     .invalidate = hit_invalidate,
					     .release = hit_release };
	struct mrl_cache_domain *dom;
	struct mrl_registration *reg;
	struct fi_mrlease_stats st;
	struct mrl_cache *cache;
	uintptr_t buf;
	int ret = 1;

	if ((!on && strcmp(mode, "off")) || n < 1 || mrl_cache_create(&ccfg, &cache))
		return 2;
	client.arg = cache;
	if (on && mrl_monitor_start(NULL, &client))
		goto out_cache;
	if (mrl_cache_domain_open(cache, &dcfg, &dom))
		goto out_monitor;
	buf = (uintptr_t)mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((void *)buf == MAP_FAILED)
		goto out_domain;
	memset((void *)buf, 1, 4 * page);
	/* The miss (and the watch), outside the loop. */
	if (mrl_cache_acquire(dom, buf, buf + 4 * page, &reg))
		goto out_buf;
	mrl_lease_release(reg);
	if (hit_loop(dom, buf, buf + 4 * page, n))
		goto out_buf;
	mrl_cache_domain_stats(dom, &st);
	printf("hit monitor %d retained %d hits %" PRIu64 "\n", mrl_monitor_running(),
	       st.not_retained == 0 && st.registrations == 1, st.hits);
	ret = 0;
out_buf:
	/* Unwatched before it is unmapped: under valgrind a thread blocked in
	 * munmap holds valgrind's lock, and the monitor could never read the
	 * event that munmap waits for. */
	mrl_cache_domain_close(dom);
	mrl_monitor_stop();
	munmap((void *)buf, 4 * page);
	mrl_cache_destroy(cache);
	return ret;
out_domain:
	mrl_cache_domain_close(dom);
out_monitor:
	mrl_monitor_stop();
out_cache:
	mrl_cache_destroy(cache);
	return ret;
}

/* ---- parent: servers, rounds, figures ------------------------------------ */

/* What one slice answered. */
struct sample {
	double v[3];	/* munmap: in, cached, out ns; loops: v[0] the rate */
	double phase[3];	/* unmap: µs per iteration mapping, writing, unmapping */
	double regs, events, invalidations, not_retained, deferred;
};

enum { TEST_MUNMAP, TEST_UNMAP, TEST_REUSE };
static const char *const test_names[] = { "munmap", "unmap", "reuse" };

/* A test and the configurations it compares: a against b. */
struct pairing {
	int test;
	size_t size;
	int a, b;
};

#define NPAIRINGS (1 + 2 * NSIZES)
static struct pairing pairings[NPAIRINGS];
/* [pairing][round][0: a, 1: b] */
static struct sample samples[NPAIRINGS][MAX_ROUNDS][2];

struct server {
	pid_t pid;
	int cmd_fd, out_fd;
};

/* Start this program as --serve mode, stdin and stdout on pipes (all
 * close-on-exec, so no child holds another's pipe open). */
static int server_start(struct server *s, int mode)
{
	char self[PATH_MAX], *argv[] = { self, "--serve", (char *)mode_names[mode], NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int cmd[2], out[2];

	if (n <= 0)
		return -1;
	self[n] = '\0';
	if (pipe2(cmd, O_CLOEXEC))
		return -1;
	if (pipe2(out, O_CLOEXEC)) {
		close(cmd[0]);
		close(cmd[1]);
		return -1;
	}
	fflush(NULL);
	s->pid = fork();
	if (s->pid == 0) {
		dup2(cmd[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execv(self, argv);
		_exit(127);
	}
	close(cmd[0]);
	close(out[1]);
	s->cmd_fd = cmd[1];
	s->out_fd = out[0];
	if (s->pid < 0) {
		close(cmd[1]);
		close(out[0]);
		return -1;
	}
	return 0;
}

/* One answer line, read unbuffered so poll() sees what is left; false on
 * end of file or after MONITOR_BENCH_TIMEOUT seconds. */
static bool server_gets(struct server *s, char *line, size_t len)
{
	int timeout_ms = (int)env_long("MONITOR_BENCH_TIMEOUT", 120) * 1000 + 10000;
	size_t n = 0;

	while (n < len - 1) {
		struct pollfd pfd = { .fd = s->out_fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			return false;
		r = read(s->out_fd, &line[n], 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		if (line[n++] == '\n')
			break;
	}
	line[n] = '\0';
	return true;
}

/* Exit status of a server that ended (waited for); 77: provider missing. */
static int server_wait(struct server *s)
{
	int status = 0;

	close(s->cmd_fd);
	close(s->out_fd);
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	s->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void servers_stop(struct server sv[NMODES], bool kill_them)
{
	for (int m = 0; m < NMODES; m++) {
		if (sv[m].pid <= 0)
			continue;
		if (kill_them)
			kill(sv[m].pid, SIGKILL);
		else if (write(sv[m].cmd_fd, "quit\n", 5) != 5)
			kill(sv[m].pid, SIGKILL);
		server_wait(&sv[m]);
	}
}

/* Start one server per configuration and wait for each to be ready. 0,
 * -FI_ENODATA (provider missing) or -FI_EOTHER. */
static int servers_start(struct server sv[NMODES])
{
	char line[256];

	memset(sv, 0, NMODES * sizeof(*sv));
	for (int m = 0; m < NMODES; m++) {
		if (server_start(&sv[m], m))
			goto err;
		if (!server_gets(&sv[m], line, sizeof(line)) || strcmp(line, "ready\n")) {
			int status = server_wait(&sv[m]);

			servers_stop(sv, true);
			return status == 77 ? -FI_ENODATA : -FI_EOTHER;
		}
	}
	return 0;
err:
	fprintf(stderr, "monitor_bench: cannot start a child: %s\n", strerror(errno));
	servers_stop(sv, true);
	return -FI_EOTHER;
}

static bool parse_sample(const char *line, struct sample *s)
{
	const char *counts = strstr(line, " regs "), *phases = strstr(line, " map_us ");

	memset(s, 0, sizeof(*s));
	if (!(sscanf(line, "munmap in %lf cached %lf out %lf", &s->v[0], &s->v[1],
		     &s->v[2]) == 3 ||
	      sscanf(line, "loop rate %lf", &s->v[0]) == 1) || !counts)
		return false;
	if (phases)
		sscanf(phases, " map_us %lf write_us %lf munmap_us %lf", &s->phase[0],
		       &s->phase[1], &s->phase[2]);
	return sscanf(counts, " regs %lf events %lf invalidations %lf not_retained %lf "
		      "deferred %lf", &s->regs, &s->events, &s->invalidations,
		      &s->not_retained, &s->deferred) == 5 && s->v[0] > 0;
}

/* One slice of pairing p on mode's server. */
static int slice(struct server *s, const struct pairing *p, int mode, struct sample *out)
{
	char cmd[128], line[256];
	int len;

	if (p->test == TEST_MUNMAP)
		len = snprintf(cmd, sizeof(cmd), "munmap %ld\n",
			       env_long("MONITOR_BENCH_MUNMAPS", 300));
	else
		len = snprintf(cmd, sizeof(cmd), "%s %zu %s\n", test_names[p->test],
			       p->size, getenv("MONITOR_BENCH_SECS") ?
			       getenv("MONITOR_BENCH_SECS") : "0.1");
	if (write(s->cmd_fd, cmd, (size_t)len) != len ||
	    !server_gets(s, line, sizeof(line)) || !parse_sample(line, out)) {
		fprintf(stderr, "monitor_bench: %s child: no answer to %s", mode_names[mode],
			cmd);
		return -1;
	}
	return 0;
}

/*
 * Whether a slice's counts are its configuration's. A wrong count means the
 * monitor or the retention policy did not do its job, and the figures would
 * measure something else. Bounds leave room for the last iteration's event,
 * which the monitor may apply after the slice read its counters.
 */
static bool counts_sane(const struct pairing *p, int mode, const struct sample *s,
			char *why, size_t len)
{
	bool ok = true;

	if (p->test == TEST_MUNMAP && mode == MODE_MON)
		/* in, cached and the rest: three events; only cached retires
		 * an entry, which the next iteration registers again. */
		ok = s->events > 2.9 && s->invalidations > 0.9 && s->regs > 0.9;
	else if (p->test == TEST_UNMAP && mode == MODE_MON)
		ok = s->invalidations > 0.9 && s->regs > 0.9 && s->not_retained == 0;
	else if (p->test == TEST_UNMAP && mode == MODE_PEROP)
		ok = s->not_retained > 0.99;
	else if (p->test == TEST_REUSE)
		ok = s->regs == 0 && s->invalidations == 0;
	if (mode != MODE_MON && s->events > 0)
		ok = false;
	snprintf(why, len, "%-5s %s %zu: regs %.3f events %.3f invalidations %.3f "
		 "not_retained %.3f deferred %.3f per iteration", mode_names[mode],
		 test_names[p->test], p->size, s->regs, s->events, s->invalidations,
		 s->not_retained, s->deferred);
	return ok;
}

/* Rounds r0..r1-1 on one generation of servers. 0, or a negative code. */
static int run_rounds(struct server sv[NMODES], int np, int r0, int r1, bool *sane)
{
	char why[256];

	for (int r = r0; r < r1; r++) {
		for (int p = 0; p < np; p++) {
			int first = (r + p) & 1;

			for (int k = 0; k < 2; k++) {
				int side = k ^ first;
				int mode = side ? pairings[p].b : pairings[p].a;
				struct sample *s = &samples[p][r][side];

				if (slice(&sv[mode], &pairings[p], mode, s))
					return -FI_EOTHER;
				if (!counts_sane(&pairings[p], mode, s, why, sizeof(why))) {
					printf("# WRONG COUNTS (round %d) %s\n", r, why);
					*sane = false;
				} else if (r == 0) {
					printf("# counts %s\n", why);
				}
			}
		}
	}
	return 0;
}

/*
 * Pin this process, and so every child, to one CPU: MONITOR_BENCH_CPU, else
 * the highest-numbered one allowed (-1: no pinning). Returns the CPU, or -1.
 */
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

/* Median and quartiles over rounds of f(a's figure k, b's figure k). */
struct figure {
	double med, q1, q3;
};

static struct figure figure_of(int p, int rounds, int k, double (*f)(double a, double b))
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

/* Rates to the time per iteration a adds over b, in µs. */
static double added_us(double a, double b)
{
	return a > 0 && b > 0 ? (1 / a - 1 / b) * 1e6 : 0;
}

static double raw_median(int p, int rounds, int side, int k)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = samples[p][r][side].v[k];
	return median(v, rounds);
}

static double phase_median(int p, int rounds, int side, int k)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = samples[p][r][side].phase[k];
	return median(v, rounds);
}

/* ---- callgrind part ------------------------------------------------------ */

/*
 * Run argv (a program looked up in PATH) with the extra NAME=value settings
 * of env, its stdout and stderr handed line by line to on_line, in a
 * process group of its own that is killed after timeout seconds (a
 * valgrind run that hangs fails instead of blocking the benchmark). 0 when
 * it exited with status 0.
 */
static int run_lines(char *const argv[], char *const env[], int timeout,
		     void (*on_line)(const char *line, void *arg), void *arg)
{
	double deadline = now_s() + timeout;
	int fd[2], status = 1;
	char line[1024];
	size_t n = 0;
	pid_t pid;

	if (pipe2(fd, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(fd[1], STDOUT_FILENO);
		dup2(fd[1], STDERR_FILENO);
		for (; env && *env; env++)
			putenv(*env);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	while (pid > 0) {
		struct pollfd pfd = { .fd = fd[0], .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1e3);
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, left) == 0) {
			fprintf(stderr, "monitor_bench: %s timed out\n", argv[0]);
			kill(-pid, SIGKILL);
			break;
		}
		r = read(fd[0], &line[n], 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (line[n] == '\n' || n == sizeof(line) - 2) {
			line[n + 1] = '\0';
			on_line(line, arg);
			n = 0;
		} else {
			n++;
		}
	}
	close(fd[0]);
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* The preload that lets the monitor start under valgrind. */
static void preload_setting(char *buf, size_t len)
{
	char builddir[PATH_MAX];

	builddir_of_self(builddir, sizeof(builddir));
	snprintf(buf, len, "LD_PRELOAD=%s/bench/.libs/libmonitor_bench_uffd.so", builddir);
}

struct hit_run {
	bool monitor, retained;
};

static void parse_hit(const char *line, void *arg)
{
	struct hit_run *h = arg;
	int m, r;

	if (sscanf(line, "hit monitor %d retained %d", &m, &r) == 2) {
		h->monitor = m;
		h->retained = r;
	}
}

/*
 * Instructions of --hit MODE N's loop under callgrind (only the loop is
 * collected); -1 on failure or when "on" ran without its monitor.
 */
static double hit_instructions(const char *mode, long n)
{
	char self[PATH_MAX], out[64], out_arg[96], count[32], preload[PATH_MAX + 64];
	char *argv[] = { "valgrind", "--tool=callgrind", "--quiet",
			 "--toggle-collect=hit_loop", out_arg, self, "--hit",
			 (char *)mode, count, NULL };
	char *env[] = { preload, NULL };
	struct hit_run h = { 0 };
	double total = -1;
	char line[256];
	ssize_t len;
	FILE *f;
	int fd;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return -1;
	self[len] = '\0';
	snprintf(out, sizeof(out), "/tmp/monitor_bench.cg.XXXXXX");
	fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(out_arg, sizeof(out_arg), "--callgrind-out-file=%s", out);
	snprintf(count, sizeof(count), "%ld", n);
	preload_setting(preload, sizeof(preload));
	if (!run_lines(argv, env, 300, parse_hit, &h) && h.retained &&
	    h.monitor == !strcmp(mode, "on") && (f = fopen(out, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8))
				total = strtod(strchr(line, ':') + 1, NULL);
		fclose(f);
	}
	unlink(out);
	return total;
}

/* Instructions per lease + release of a hit, monitor on ([0]) and off
 * ([1]): exact, from two loop lengths (the difference drops the call). */
static bool callgrind_hit(double ir[2])
{
	static const char *const modes[2] = { "on", "off" };
	const long n1 = 1000, n2 = 11000;

	for (int k = 0; k < 2; k++) {
		double t1 = hit_instructions(modes[k], n1);
		double t2 = hit_instructions(modes[k], n2);

		if (t1 < 0 || t2 < 0)
			return false;
		ir[k] = (t2 - t1) / (double)(n2 - n1);
	}
	return true;
}

struct ir_run {
	double hook, cache;
	bool result, no_monitor;
};

static void parse_ir(const char *line, void *arg)
{
	const char *h = strstr(line, "hook_ir_per_op="), *c = strstr(line, "cache_ir_per_op=");
	struct ir_run *ir = arg;

	/* The provider's warning when a pinning domain gets no monitor. */
	if (strstr(line, "no memory monitor"))
		ir->no_monitor = true;
	if (!strncmp(line, "RESULT ", 7) && h && c) {
		ir->hook = strtod(h + strlen("hook_ir_per_op="), NULL);
		ir->cache = strtod(c + strlen("cache_ir_per_op="), NULL);
		ir->result = true;
	}
}

/* bench/xfer_ir.sh in the leased mode only, with mode's settings. 0 when
 * it gave a figure. */
static int xfer_ir(int mode, struct ir_run *ir)
{
	char builddir[PATH_MAX], script[PATH_MAX + 32], lease_env[3 * PATH_MAX];
	char preload[PATH_MAX + 64];
	char *argv[] = { "/bin/bash", script, builddir, NULL };
	char *env[] = { lease_env, "XFER_IR_MODES=2", "XFER_IR_REPEAT=1", NULL };

	builddir_of_self(builddir, sizeof(builddir));
	snprintf(script, sizeof(script), "%s/bench/xfer_ir.sh", MONITOR_BENCH_SRCDIR);
	if (access(script, R_OK))
		snprintf(script, sizeof(script), "%s/bench/xfer_ir", builddir);
	preload_setting(preload, sizeof(preload));
	snprintf(lease_env, sizeof(lease_env),
		 "XFER_IR_LEASE_ENV=FI_MRLEASE_MIN_SIZE=0 FI_MRLEASE_PINNING=%s "
		 "FI_MRLEASE_MONITOR=%s FI_LOG_LEVEL=warn %s", mode_pinning[mode],
		 mode_monitor[mode], preload);
	memset(ir, 0, sizeof(*ir));
	return !run_lines(argv, env, 600, parse_ir, ir) && ir->result ? 0 : -1;
}

/*
 * Hook instructions per leased write over the provider, the smallest of
 * runs alternating mon and off (see the header), and the larger of the two
 * configurations' spreads (largest - smallest run). False when valgrind is
 * missing or failed, or the monitor did not start under it.
 */
static bool callgrind_xfer(double ir[2], double cache[2], double *spread)
{
	int runs = (int)env_long("MONITOR_BENCH_IR_RUNS", 2);
	const int modes[2] = { MODE_MON, MODE_OFF };
	double hi[2] = { 0, 0 };
	struct ir_run one;

	ir[0] = ir[1] = cache[0] = cache[1] = 1e30;
	for (int i = 0; i < 2 * (runs < 1 ? 1 : runs); i++) {
		/* mon, off, off, mon, ... */
		int k = (i ^ (i >> 1)) & 1;

		if (xfer_ir(modes[k], &one)) {
			printf("# callgrind: valgrind unavailable or bench/xfer_ir.sh failed\n");
			return false;
		}
		if (one.no_monitor) {
			printf("# callgrind: the monitor did not start under valgrind\n");
			return false;
		}
		printf("# callgrind run %d, %-3s: %.1f hook Ir per write (cache %.1f)\n", i,
		       mode_names[modes[k]], one.hook, one.cache);
		fflush(stdout);
		if (one.hook < ir[k])
			ir[k] = one.hook;
		if (one.hook > hi[k])
			hi[k] = one.hook;
		if (one.cache < cache[k])
			cache[k] = one.cache;
	}
	/* How far runs of one configuration fell apart: the resolution. */
	*spread = hi[0] - ir[0] > hi[1] - ir[1] ? hi[0] - ir[0] : hi[1] - ir[1];
	return true;
}

/* ---- parent ---------------------------------------------------------------- */

/* What the callgrind part found (see the header). */
struct ir_figures {
	bool hit_ok, xfer_ok;
	double hit[2];			/* per lease + release: on, off */
	double xfer[2], cache[2];	/* per leased write: on, off */
	double spread;
};

static void print_figures(int np, int rounds, const struct ir_figures *irf, int cpu,
			  bool sane)
{
	static const char *const kinds[] = { "in", "cached", "out" };
	struct figure mu[3], ma[3], fu[NPAIRINGS], fa[NPAIRINGS];
	double min_unmap = 1e9, min_reuse = 1e9, load[1] = { -1 };

	printf("# munmap of one page, ns per call (median over rounds of each slice's "
	       "median; paired ratio and added ns [q1 q3]):\n");
	for (int k = 0; k < 3; k++) {
		mu[k] = figure_of(0, rounds, k, ratio);
		ma[k] = figure_of(0, rounds, k, diff);
		printf("#   %-6s  on %7.0f  off %7.0f  ratio %5.2f [%.2f %.2f]  "
		       "added %6.0f ns [%.0f %.0f]\n", kinds[k], raw_median(0, rounds, 0, k),
		       raw_median(0, rounds, 1, k), mu[k].med, mu[k].q1, mu[k].q3,
		       ma[k].med, ma[k].q1, ma[k].q3);
	}
	printf("# loops, iterations per second (median over rounds), paired ratio "
	       "[q1 q3]:\n");
	for (int p = 1; p < np; p++) {
		const struct pairing *pp = &pairings[p];

		fu[p] = figure_of(p, rounds, 0, ratio);
		fa[p] = figure_of(p, rounds, 0, added_us);
		printf("#   %-5s %7zu  %-5s %7.0f  %-5s %7.0f  ratio %.3f [%.3f %.3f]",
		       test_names[pp->test], pp->size, mode_names[pp->a],
		       raw_median(p, rounds, 0, 0), mode_names[pp->b],
		       raw_median(p, rounds, 1, 0), fu[p].med, fu[p].q1, fu[p].q3);
		if (pp->test == TEST_UNMAP)
			printf("  added %.1f us [%.1f %.1f]\n#     us per iteration "
			       "mapping+filling / writing / unmapping: %s %.1f / %.1f / %.1f, "
			       "%s %.1f / %.1f / %.1f", fa[p].med, fa[p].q1, fa[p].q3,
			       mode_names[pp->a], phase_median(p, rounds, 0, 0),
			       phase_median(p, rounds, 0, 1), phase_median(p, rounds, 0, 2),
			       mode_names[pp->b], phase_median(p, rounds, 1, 0),
			       phase_median(p, rounds, 1, 1), phase_median(p, rounds, 1, 2));
		printf("\n");
		if (pp->test == TEST_UNMAP && fu[p].med < min_unmap)
			min_unmap = fu[p].med;
		if (pp->test == TEST_REUSE && fu[p].med < min_reuse)
			min_reuse = fu[p].med;
	}
	if (getloadavg(load, 1) != 1)
		load[0] = -1;
	printf("# load average (1 min) at the end %.2f on %ld cpus\n", load[0],
	       sysconf(_SC_NPROCESSORS_ONLN));
	if (!sane)
		printf("# a configuration did not do what it is meant to: figures invalid\n");

	printf("RESULT prov=%s rounds=%d cpu=%d load1=%.2f sane=%d", bench_prov(),
	       rounds, cpu, load[0], sane);
	if (irf->hit_ok)
		printf(" ir_hit_added=%.1f ir_hit_on=%.1f ir_hit_off=%.1f",
		       irf->hit[0] - irf->hit[1], irf->hit[0], irf->hit[1]);
	else
		printf(" ir_hit_added=na");
	if (irf->xfer_ok)
		printf(" ir_added=%.1f ir_on=%.1f ir_off=%.1f ir_cache_added=%.1f "
		       "ir_spread=%.1f", irf->xfer[0] - irf->xfer[1], irf->xfer[0],
		       irf->xfer[1], irf->cache[0] - irf->cache[1], irf->spread);
	else
		printf(" ir_added=na");
	for (int k = 0; k < 3; k++)
		printf(" munmap_%s_ratio=%.2f munmap_%s_added_ns=%.0f munmap_%s_on_ns=%.0f "
		       "munmap_%s_off_ns=%.0f", kinds[k], mu[k].med, kinds[k], ma[k].med,
		       kinds[k], raw_median(0, rounds, 0, k), kinds[k],
		       raw_median(0, rounds, 1, k));
	for (int p = 1; p < np; p++) {
		const struct pairing *pp = &pairings[p];
		const char *t = test_names[pp->test];

		printf(" %s_%zu=%.3f", t, pp->size, fu[p].med);
		if (pp->test == TEST_UNMAP)
			printf(" %s_added_us_%zu=%.1f", t, pp->size, fa[p].med);
		printf(" %s_%s_%zu=%.0f %s_%s_%zu=%.0f", t, mode_names[pp->a], pp->size,
		       raw_median(p, rounds, 0, 0), t, mode_names[pp->b], pp->size,
		       raw_median(p, rounds, 1, 0));
	}
	printf(" min_unmap=%.3f min_reuse=%.3f\n", min_unmap, min_reuse);
}

static int parent_main(void)
{
	int rounds = (int)env_long("MONITOR_BENCH_ROUNDS", 40);
	int generations = (int)env_long("MONITOR_BENCH_GENERATIONS", 5);
	const char *cg = getenv("MONITOR_BENCH_CALLGRIND");
	struct ir_figures irf = { 0 };
	double t0 = now_s();
	bool sane = true;
	struct server sv[NMODES];
	time_t now = time(NULL);
	char when[64];
	int cpu, np = 0, ret;

	/* A child that died leaves a broken pipe: a write error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	generations = generations < 1 ? 1 : generations > rounds ? rounds : generations;
	pairings[np++] = (struct pairing){ TEST_MUNMAP, 0, MODE_MON, MODE_OFF };
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){ TEST_UNMAP, loop_sizes[i], MODE_MON,
						   MODE_PEROP };
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){ TEST_REUSE, loop_sizes[i], MODE_MON,
						   MODE_OFF };

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M %Z", localtime(&now));
	printf("# monitor_bench %s over %s\n", when, bench_prov());
	fflush(stdout);
	/* Before pinning: valgrind's runs use both CPUs. */
	if (!cg || strcmp(cg, "0")) {
		irf.hit_ok = callgrind_hit(irf.hit);
		if (irf.hit_ok)
			printf("# callgrind, the cache's hit path alone (lease + release, "
			       "exact): monitor on %.1f, off %.1f instructions\n", irf.hit[0],
			       irf.hit[1]);
		else
			printf("# callgrind: the hit driver failed, or ran without its "
			       "monitor\n");
		fflush(stdout);
		irf.xfer_ok = callgrind_xfer(irf.xfer, irf.cache, &irf.spread);
		if (irf.xfer_ok)
			printf("# callgrind, hook instructions per leased fi_write (16 KiB, "
			       "hit path), smallest of the runs: monitor on %.1f (cache "
			       "%.1f), off %.1f (cache %.1f); runs of one configuration %.1f "
			       "apart\n", irf.xfer[0], irf.cache[0], irf.xfer[1], irf.cache[1],
			       irf.spread);
	}

	cpu = pin_one_cpu();
	printf("# %d rounds by %d generations of children, slices back to back, "
	       "order alternating; children on CPU %d (-1: not pinned)\n", rounds,
	       generations, cpu);
	fflush(stdout);
	for (int g = 0; g < generations; g++) {
		ret = servers_start(sv);
		if (ret == -FI_ENODATA) {
			printf("# provider %s unavailable: skipped\nRESULT skipped=1\n",
			       bench_prov());
			return 0;
		}
		if (!ret)
			ret = run_rounds(sv, np, rounds * g / generations,
					 rounds * (g + 1) / generations, &sane);
		servers_stop(sv, ret != 0);
		if (ret) {
			fprintf(stderr, "monitor_bench: measurement failed\n");
			return 1;
		}
	}
	printf("# %.0f s in all\n", now_s() - t0);
	print_figures(np, rounds, &irf, cpu, sane);
	return sane ? 0 : 1;
}

int main(int argc, char **argv)
{
	int ret = 2;

	page = (size_t)sysconf(_SC_PAGESIZE);
	if (argc == 1)
		return parent_main();
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		ret = serve_main(argv[2]);
	else if (argc == 4 && !strcmp(argv[1], "--hit"))
		ret = hit_main(argv[2], strtol(argv[3], NULL, 10));
	if (ret == 2)
		fprintf(stderr, "usage: %s [--serve mon|perop|off | --hit on|off N]\n",
			argv[0]);
	return ret;
}
