/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What runs inside bench/monitor_bench's measured processes: the server of
 * one configuration (--serve: the munmap test, the unmap and reuse loops)
 * and the hit driver callgrind counts (--hit). See monitor_bench.c.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "../test/common/xfer_util.h"
#include "monitor_bench.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "mrl_monitor.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* The monitor's watch granularity (mrl_monitor.h, "Watching"). */
#define BLOCK	   ((size_t) 2 << 20)
#define REUSE_BUFS 4
/* Untimed iterations before a slice: the first misses of its buffers. */
#define WARM_ITERS (2 * REUSE_BUFS)
/* Past FI_MRLEASE_MONITOR_CHURN's default passes for every buffer, at
 * their largest (16 times 8: a range that kept churning). */
#define REUSE_FRESH_WARM_ITERS ((16 * 8 + 2) * REUSE_BUFS)

/* ---- child: one configuration's server ---------------------------------- */

/* The environment of a configuration, set by its child itself before
 * libfabric's first call reads it. */
static void
child_env(int mode)
{
	bu_child_env();
	setenv("FI_HOOK", "mrlease", 1);
	setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
	setenv("FI_MRLEASE_PINNING", mb_mode_pinning[mode], 1);
	setenv("FI_MRLEASE_MONITOR", mb_mode_monitor[mode], 1);
	if (mb_mode_churn[mode])
		setenv("FI_MRLEASE_MONITOR_CHURN", mb_mode_churn[mode], 1);
	else
		unsetenv("FI_MRLEASE_MONITOR_CHURN");
	unsetenv("FI_MRLEASE_STATS");
}

struct child {
	struct mrlt_pair pair;
	char *dst;
	struct fid_mr *dst_mr;
	struct fi_context2 ctx;
	bool monitored; /* the configuration runs the monitor */
};

static int
child_open(struct child *c, int mode)
{
	struct mrlt_pair_opts xo = {.prov = mb_prov(),
				    .caps = FI_MSG | FI_RMA,
				    .thread_domain = mode == MODE_WATCHNC};
	int ret;

	memset(c, 0, sizeof(*c));
	ret = mrlt_pair_open(&xo, &c->pair);
	if (ret) {
		fprintf(stderr, "monitor_bench child: %s\n", fi_strerror(-ret));
		return ret == -FI_ENODATA ? 77 : 1;
	}
	if (!c->pair.mrl) {
		fprintf(stderr,
			"monitor_bench child: FI_HOOK=mrlease but no %s\n",
			FI_MRLEASE_OPS_1);
		goto err_close;
	}
	c->dst = aligned_alloc(mb_page, MAX_LOOP);
	if (!c->dst)
		goto err_close;
	memset(c->dst, 0, MAX_LOOP);
	ret = mrlt_pair_mr_reg(&c->pair, c->dst, MAX_LOOP, FI_REMOTE_WRITE,
			       &c->dst_mr);
	if (ret) {
		fprintf(stderr, "monitor_bench child: fi_mr_reg: %s\n",
			fi_strerror(-ret));
		goto err_free;
	}
	return 0;

err_free:
	free(c->dst);
err_close:
	mrlt_pair_close(&c->pair);
	return 1;
}

static int
child_close(struct child *c)
{
	int ret = fi_close(&c->dst_mr->fid);

	if (mrlt_pair_close(&c->pair))
		ret = 1;
	free(c->dst);
	return ret ? 1 : 0;
}

/* One fi_write of [src, src + len) with desc NULL, waited for: the
 * operand's lease is released before this returns. */
static int
write_wait(struct child *c, const void *src, size_t len)
{
	struct fi_cq_tagged_entry e;
	ssize_t n;

	while ((n = fi_write(c->pair.ep[0], src, len, NULL, c->pair.addr[1],
			     mrlt_pair_rma_addr(&c->pair, c->dst, c->dst),
			     fi_mr_key(c->dst_mr), &c->ctx)) == -FI_EAGAIN)
		(void) fi_cq_read(c->pair.cq, NULL, 0);
	if (n) {
		fprintf(stderr, "monitor_bench child: fi_write: %s\n",
			fi_strerror((int) -n));
		return -1;
	}
	while ((n = fi_cq_read(c->pair.cq, &e, 1)) == -FI_EAGAIN)
		;
	if (n < 0) {
		struct fi_cq_err_entry err = {0};

		fi_cq_readerr(c->pair.cq, &err, 0);
		fprintf(stderr, "monitor_bench child: write failed: %s\n",
			fi_strerror(err.err));
		return -1;
	}
	return 0;
}

/* The initiator's completion may come before the target's copy: drive
 * progress until the last write's bytes are there. */
static int
wait_landed(struct child *c, size_t len, unsigned char v)
{
	for (long i = 0; i < MRLT_MAX_POLLS; i++) {
		if ((unsigned char) c->dst[0] == v &&
		    (unsigned char) c->dst[len - 1] == v)
			return 0;
		(void) fi_cq_read(c->pair.cq, NULL, 0);
	}
	fprintf(stderr,
		"monitor_bench child: the written bytes never arrived\n");
	return -1;
}

static void
query(struct child *c, struct fi_mrlease_stats *st)
{
	memset(st, 0, sizeof(*st));
	c->pair.mrl->query_stats(NULL, st, sizeof(*st));
}

/* The threads of this process (the monitor's task among them), from
 * /proc/self/task, and how many of them are the monitor's closer
 * (mrl-closer); -1 when it cannot be read. */
static int
thread_count(int *closers)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	*closers = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[sizeof("/proc/self/task//comm") + 256], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strcmp(comm, "mrl-closer\n"))
			(*closers)++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* What the configuration did per timed iteration, from the cache's
 * counters, and the process's threads (the end of an answer line). */
static void
print_counts(const struct fi_mrlease_stats *a, const struct fi_mrlease_stats *b,
	     long iters)
{
	double n = iters > 0 ? (double) iters : 1;
	int closers, threads = thread_count(&closers);

	printf(" regs %.3f events %.3f invalidations %.3f not_retained %.3f "
	       "deferred %.3f deregs %.3f threads %d closer %d\n",
	       (double) (b->registrations - a->registrations) / n,
	       (double) (b->monitor_events - a->monitor_events) / n,
	       (double) (b->monitor_invalidations - a->monitor_invalidations) /
		       n,
	       (double) (b->not_retained - a->not_retained) / n,
	       (double) (b->deferred_closes - a->deferred_closes) / n,
	       (double) (b->deregistrations - a->deregistrations) / n, threads,
	       closers);
}

/*
 * An address range of len bytes (a multiple of BLOCK), BLOCK-aligned, held
 * by a PROT_NONE mapping no one watches, so nothing else is placed there
 * and no event comes from it. 0 on failure.
 */
static uintptr_t
reserve(size_t len)
{
	size_t span = len + BLOCK;
	char *p = mmap(NULL, span, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return 0;
	a = ((uintptr_t) p + BLOCK - 1) & ~(BLOCK - 1);
	if (a > (uintptr_t) p)
		munmap(p, a - (uintptr_t) p);
	if ((uintptr_t) p + span > a + len)
		munmap((void *) (a + len), (uintptr_t) p + span - (a + len));
	return a;
}

/* Map at addr: over our own reservation (MAP_FIXED), or into a hole we
 * made (MAP_FIXED_NOREPLACE: fails if anything else took it meanwhile). */
static void *
map_at(uintptr_t addr, size_t len, int prot, bool over_own)
{
	void *p = mmap((void *) addr, len, prot,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (over_own ? MAP_FIXED : MAP_FIXED_NOREPLACE),
		       -1, 0);

	if (p == MAP_FAILED || (uintptr_t) p != addr) {
		fprintf(stderr,
			"monitor_bench child: mmap at %#" PRIxPTR ": %s\n",
			addr, p == MAP_FAILED ? strerror(errno) : "moved");
		return NULL;
	}
	return p;
}

static double
munmap_ns(void *p, size_t len)
{
	double t0 = bu_now_s();

	if (munmap(p, len))
		return -1;
	return (bu_now_s() - t0) * 1e9;
}

/*
 * One munmap iteration (see the header) at block a and page b. The
 * monitor's task sleeps until an event comes, and waking it costs more
 * than the next event right after (which finds it just gone back to wait):
 * the first munmap after the write is the one an application pays, so
 * `which` (0: in, 1: cached) is timed first and the other is not timed;
 * out, which wakes nobody, is timed before both. Sets t[which] and t[2].
 */
static int
munmap_once(struct child *c, uintptr_t a, uintptr_t b, char v, int which,
	    double t[3])
{
	char *blk = map_at(a, BLOCK, PROT_READ | PROT_WRITE, true);
	char *out = map_at(b, mb_page, PROT_READ | PROT_WRITE, true);
	char *pages[2];

	if (!blk || !out)
		return -1;
	/* No transparent huge page: unmapping one page of it would split
	 * it, a cost of its own. */
	madvise(blk, BLOCK, MADV_NOHUGEPAGE);
	pages[0] = blk + BLOCK / 2;
	pages[1] = blk;
	blk[0] = blk[BLOCK / 2] = out[0] = v;
	if (write_wait(c, blk, mb_page))
		return -1;
	t[2] = munmap_ns(out, mb_page);
	t[which] = munmap_ns(pages[which], mb_page);
	if (t[2] < 0 || t[which] < 0 || munmap(pages[!which], mb_page)) {
		fprintf(stderr, "monitor_bench child: munmap: %s\n",
			strerror(errno));
		return -1;
	}
	/* The rest, untimed (mon: one more event); then the holes are
	 * reserved again. */
	if (munmap(blk, BLOCK) || !map_at(a, BLOCK, PROT_NONE, false) ||
	    !map_at(b, mb_page, PROT_NONE, false))
		return -1;
	return 0;
}

/* Whether a write's registration stays cached past its lease: with
 * FI_MRLEASE_PINNING=yes, only when the monitor runs and watches it. */
static bool
monitor_retains(struct child *c)
{
	struct fi_mrlease_stats st0, st1;
	char *p = mmap(NULL, mb_page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool retained;

	if (p == MAP_FAILED)
		return false;
	p[0] = 1;
	query(c, &st0);
	retained = !write_wait(c, p, mb_page);
	query(c, &st1);
	munmap(p, mb_page);
	return retained && st1.not_retained == st0.not_retained;
}

/* "munmap N": answers "munmap in NS cached NS out NS" (medians; in and
 * cached from alternate iterations) and the counts per timed iteration. */
static int
child_munmap(struct child *c, long iters)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t a = reserve(2 * BLOCK);
	double *ns[3] = {NULL}, t[3];
	long got[3] = {0};
	int ret = -1;

	if (!a || iters < 2)
		return -1;
	for (int k = 0; k < 3; k++)
		if (!(ns[k] = calloc((size_t) iters, sizeof(double))))
			goto out;
	/* a + BLOCK: a block of its own, never watched. */
	for (long i = 0; i < WARM_ITERS; i++)
		if (munmap_once(c, a, a + BLOCK, (char) i, (int) (i & 1), t))
			goto out;
	query(c, &st0);
	for (long i = 0; i < iters; i++) {
		int which = (int) (i & 1);

		if (munmap_once(c, a, a + BLOCK, (char) i, which, t))
			goto out;
		ns[which][got[which]++] = t[which];
		ns[2][got[2]++] = t[2];
	}
	query(c, &st1);
	printf("munmap in %.1f cached %.1f out %.1f",
	       bu_median(ns[0], (int) got[0]), bu_median(ns[1], (int) got[1]),
	       bu_median(ns[2], (int) got[2]));
	print_counts(&st0, &st1, iters);
	ret = 0;
out:
	for (int k = 0; k < 3; k++)
		free(ns[k]);
	munmap((void *) a, 2 * BLOCK);
	return ret;
}

/*
 * Call into the domain through the hook, as an application's progress loop
 * does: a CQ read, which applies what the monitor read and closes the
 * registrations its invalidations dropped (on a domain that is not
 * FI_THREAD_SAFE, the only way they close). Nothing is pending: the
 * answer is -FI_EAGAIN.
 */
static void
call_domain(struct child *c)
{
	struct fi_cq_tagged_entry e;

	(void) fi_cq_read(c->pair.cq, &e, 1);
}

/*
 * Whether the deregistrations counted pass `before` by the time this
 * returns, after one call into the domain (call_domain). On an
 * FI_THREAD_SAFE domain a helper thread closes them instead, soon after
 * the monitor reported the batch: wait for it, up to 200 ms. Untimed.
 */
static bool
closed_since(struct child *c, uint64_t before)
{
	bool safe = c->pair.info->domain_attr->threading == FI_THREAD_SAFE;
	struct fi_mrlease_stats st;
	double t0 = bu_now_s();

	call_domain(c);
	for (;;) {
		query(c, &st);
		if (st.deregistrations > before)
			return true;
		if (!safe || !c->monitored || bu_now_s() - t0 > 0.2)
			return false;
		usleep(100);
	}
}

/*
 * One released iteration at block a (see the header): the block mapped and
 * its first page written (watch: the entry cached, the block watched); that
 * page dropped (how 0: unmapped; 1: purged with MADV_DONTNEED, as an
 * allocator gives memory back; watch: an event, which retires the entry);
 * a call into the domain closes the dropped registration, the mapping's
 * last entry, so the hook releases the watch; then munmap of a page in the
 * middle of the block, timed (*ns): in watch a mapping that held an entry
 * and holds none now, in off one never watched. *closed: whether the
 * registration had closed before the timed call; *events: the monitor
 * events of the iteration (1 when the watch was released, 3 when not).
 */
static int
released_once(struct child *c, uintptr_t a, char v, int how, double *ns,
	      bool *closed, uint64_t *events)
{
	char *blk = map_at(a, BLOCK, PROT_READ | PROT_WRITE, true);
	struct fi_mrlease_stats st0, st1;

	if (!blk)
		return -1;
	madvise(blk, BLOCK, MADV_NOHUGEPAGE);
	blk[0] = blk[BLOCK / 2] = v;
	if (write_wait(c, blk, mb_page))
		return -1;
	query(c, &st0);
	if (how ? madvise(blk, mb_page, MADV_DONTNEED) : munmap(blk, mb_page)) {
		fprintf(stderr, "monitor_bench child: %s: %s\n",
			how ? "madvise" : "munmap", strerror(errno));
		return -1;
	}
	*closed = closed_since(c, st0.deregistrations);
	*ns = munmap_ns(blk + BLOCK / 2, mb_page);
	if (*ns < 0 || munmap(blk, BLOCK) ||
	    !map_at(a, BLOCK, PROT_NONE, false))
		return -1;
	/* Every event of a watched munmap is read before it returns. */
	query(c, &st1);
	*events = st1.monitor_events - st0.monitor_events;
	return 0;
}

/* "released N": answers "munmap released NS purged NS" (the medians of the
 * two ways of dropping the entry, in alternate iterations), "closed F"
 * (the fraction of iterations whose dropped registration had closed
 * before the timed munmap), "events E E" (monitor events per iteration of
 * each way) and the counts per timed iteration. */
static int
child_released(struct child *c, long iters)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t a = reserve(BLOCK);
	double *ns[2] = {NULL}, t;
	long got[2] = {0}, closed = 0;
	uint64_t ev, events[2] = {0};
	bool cl;
	int ret = -1;

	if (!a || iters < 2)
		return -1;
	for (int k = 0; k < 2; k++)
		if (!(ns[k] = calloc((size_t) iters, sizeof(double))))
			goto out;
	for (long i = 0; i < WARM_ITERS; i++)
		if (released_once(c, a, (char) i, (int) (i & 1), &t, &cl, &ev))
			goto out;
	call_domain(c);
	query(c, &st0);
	for (long i = 0; i < iters; i++) {
		int how = (int) (i & 1);

		if (released_once(c, a, (char) i, how, &ns[how][got[how]], &cl,
				  &ev))
			goto out;
		got[how]++;
		events[how] += ev;
		closed += cl;
	}
	/* Whatever the last iteration left to apply, before the counts. */
	call_domain(c);
	query(c, &st1);
	printf("munmap released %.1f purged %.1f closed %.3f events %.3f %.3f",
	       bu_median(ns[0], (int) got[0]), bu_median(ns[1], (int) got[1]),
	       (double) closed / (double) iters,
	       (double) events[0] / (double) got[0],
	       (double) events[1] / (double) got[1]);
	print_counts(&st0, &st1, iters);
	ret = 0;
out:
	for (int k = 0; k < 2; k++)
		free(ns[k]);
	munmap((void *) a, BLOCK);
	return ret;
}

/* One iteration of the unmap loop at addr; adds the seconds spent mapping
 * and filling, writing, unmapping to phase[0..2]. */
static int
unmap_once(struct child *c, uintptr_t addr, size_t size, unsigned char v,
	   double phase[3])
{
	double t0 = bu_now_s(), t1, t2;
	char *p = map_at(addr, size, PROT_READ | PROT_WRITE, false);

	if (!p)
		return -1;
	memset(p, v, size);
	t1 = bu_now_s();
	if (write_wait(c, p, size))
		return -1;
	t2 = bu_now_s();
	if (munmap(p, size)) {
		fprintf(stderr, "monitor_bench child: munmap: %s\n",
			strerror(errno));
		return -1;
	}
	phase[0] += t1 - t0;
	phase[1] += t2 - t1;
	phase[2] += bu_now_s() - t2;
	return 0;
}

/* "unmap SIZE SECS": answers "loop rate R" (iterations per second), the µs
 * per iteration of its phases ("map_us M write_us W munmap_us U": where
 * the monitor's cost lands) and the counts. */
static int
child_unmap(struct child *c, size_t size, double secs)
{
	struct fi_mrlease_stats st0, st1;
	uintptr_t addr = reserve(BLOCK);
	double t0, t, phase[3] = {0};
	long n = 0;
	int ret = -1;

	if (!addr)
		return -1;
	/* A hole of our own, which each iteration maps into. */
	munmap((void *) addr, BLOCK);
	for (long i = 0; i < WARM_ITERS; i++)
		if (unmap_once(c, addr, size, (unsigned char) (i | 1), phase))
			return -1;
	memset(phase, 0, sizeof(phase));
	query(c, &st0);
	t0 = bu_now_s();
	do {
		if (unmap_once(c, addr, size, (unsigned char) (++n | 1), phase))
			return -1;
	} while ((t = bu_now_s() - t0) < secs);
	query(c, &st1);
	if (!wait_landed(c, size, (unsigned char) (n | 1))) {
		printf("loop rate %.1f map_us %.2f write_us %.2f munmap_us "
		       "%.2f",
		       (double) n / t, phase[0] / n * 1e6, phase[1] / n * 1e6,
		       phase[2] / n * 1e6);
		print_counts(&st0, &st1, n);
		ret = 0;
	}
	return ret;
}

/* The reuse loop's buffers of one size: mapped on its first slice and kept
 * for the child's life, so every slice of it reuses memory that was never
 * unmapped (a slice that mapped its own would start at addresses the
 * previous slice just unmapped: churn, mrl_bind_churn.h). */
struct reuse_set {
	size_t size;
	char *buf[REUSE_BUFS];
};

static char **
reuse_bufs(size_t size, bool *fresh)
{
	static struct reuse_set sets[8];

	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		struct reuse_set *set = &sets[s];

		if (set->size && set->size != size)
			continue;
		if (!set->size) {
			for (int i = 0; i < REUSE_BUFS; i++) {
				set->buf[i] = mmap(
					NULL, size, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (set->buf[i] == MAP_FAILED)
					return NULL;
			}
			set->size = size;
			*fresh = true;
		}
		return set->buf;
	}
	return NULL;
}

/* "reuse SIZE SECS": the same REUSE_BUFS buffers written in turn. */
static int
child_reuse(struct child *c, size_t size, double secs)
{
	struct fi_mrlease_stats st0, st1;
	bool fresh = false;
	char **buf = reuse_bufs(size, &fresh);
	double t0, t;
	long n = 0;
	/* Fresh buffers may sit where the unmap loop's region was: their first
	 * misses register per operation (churn) before they are kept. */
	long warm = fresh ? REUSE_FRESH_WARM_ITERS : WARM_ITERS;

	if (!buf)
		return -1;
	for (int i = 0; i < REUSE_BUFS; i++)
		memset(buf[i], 0x40 + i, size);
	for (long i = 0; i < warm; i++)
		if (write_wait(c, buf[i % REUSE_BUFS], size))
			return -1;
	query(c, &st0);
	t0 = bu_now_s();
	do {
		if (write_wait(c, buf[n++ % REUSE_BUFS], size))
			return -1;
	} while ((t = bu_now_s() - t0) < secs);
	query(c, &st1);
	if (wait_landed(c, size, (unsigned char) (0x40 + (n - 1) % REUSE_BUFS)))
		return -1;
	printf("loop rate %.1f", (double) n / t);
	print_counts(&st0, &st1, n);
	return 0;
}

static void *
idle_thread(void *arg)
{
	(void) arg;
	for (;;)
		pause();
	return NULL;
}

/* offmt's and peropmt's second thread: it does nothing, but the process is then
 * multi-threaded as glibc and the kernel see it (what a monitor thread of
 * glibc's would make it). */
static int
idle_thread_start(void)
{
	pthread_t th;
	int ret = pthread_create(&th, NULL, idle_thread, NULL);

	if (ret) {
		fprintf(stderr, "monitor_bench: pthread_create: %s\n",
			strerror(ret));
		return -1;
	}
	return pthread_detach(th);
}

/*
 * --serve MODE: open the pair, say "ready", then answer one command per
 * line on stdin until "quit" (see the header). End of input without
 * "quit" means the parent is gone: exit 1. A command that takes longer
 * than MONITOR_BENCH_TIMEOUT (a monitor that never reads, a lost
 * completion) ends the child by SIGALRM rather than blocking the run.
 */
int
mb_serve_main(const char *mode_name)
{
	unsigned timeout = (unsigned) bu_env_long("MONITOR_BENCH_TIMEOUT", 120);
	struct child c;
	char line[128];
	int mode = -1, ret;

	for (int m = 0; m < NMODES; m++)
		if (!strcmp(mode_name, mb_mode_names[m]))
			mode = m;
	if (mode < 0)
		return 2;
	child_env(mode);
	if ((mode == MODE_OFFMT || mode == MODE_PEROPMT) && idle_thread_start())
		return 1;
	alarm(timeout);
	ret = child_open(&c, mode);
	if (ret)
		return ret;
	c.monitored = mb_mode_monitored(mode);
	if (c.monitored && !monitor_retains(&c)) {
		/* userfaultfd refused (kernel, privilege, seccomp): nothing to
		 * measure, which is not a failure of the benchmark. */
		child_close(&c);
		return 78;
	}
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
		else if (sscanf(line, "released %ld", &n) == 1)
			r = child_released(&c, n);
		else if (sscanf(line, "unmap %zu %lf", &size, &secs) == 2 &&
			 size >= 1 && size <= MAX_LOOP)
			r = child_unmap(&c, size, secs);
		else if (sscanf(line, "reuse %zu %lf", &size, &secs) == 2 &&
			 size >= 1 && size <= MAX_LOOP)
			r = child_reuse(&c, size, secs);
		else
			r = -1;
		if (r) {
			fprintf(stderr, "monitor_bench %s: failed: %s",
				mode_name, line);
			break;
		}
		fflush(stdout);
	}
	alarm(0);
	if (child_close(&c))
		ret = 1;
	return ret;
}

/* ---- hit driver: the cache's hit path alone, for callgrind ----------------
 */

/*
 * --hit on|off N: a cache of this program's own over a registrar that
 * registers nothing, one entry, N lease + release of it (the inline hit
 * path every leased operand takes). "on" starts the monitor, with the
 * provider's client (its barrier, deferred invalidation), and
 * watches the entry's block as the provider does over a pinning domain.
 * Single-threaded apart from the idle monitor, no network: its instruction
 * counts are exact, unlike a transfer's (see mb_callgrind_hit). Answers
 * "hit monitor M retained R hits H".
 */
static void
hit_invalidate(void *arg, uintptr_t start, uintptr_t end, bool all)
{
	(void) all;
	mrl_cache_invalidate_deferred(arg, start, end);
}

static bool
hit_in_use(void *arg, uintptr_t lo, uintptr_t hi)
{
	(void) arg;
	return mrl_caches_in_use(lo, hi);
}

static int
hit_reg(void *ctx, const void *addr, size_t len, uint64_t access, uint64_t key,
	void **mr, void **desc)
{
	static char handle;

	(void) ctx, (void) addr, (void) len, (void) access, (void) key;
	*mr = &handle;
	*desc = NULL;
	return 0;
}

static int
hit_close(void *ctx, void *mr)
{
	(void) ctx, (void) mr;
	return 0;
}

static bool
hit_watch(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	return mrl_monitor_watch(lo, hi);
}

static void
hit_released(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	mrl_monitor_release(lo, hi);
}

/* The measured loop, alone in its function so callgrind counts only it
 * (--toggle-collect=hit_loop). */
static __attribute__((noinline)) int
hit_loop(struct mrl_cache_domain *dom, uintptr_t lo, uintptr_t hi, long n)
{
	struct mrl_registration *reg;

	for (long i = 0; i < n; i++) {
		if (mrl_cache_acquire(dom, lo, hi, &reg))
			return -1;
		mrl_cache_lease_release(reg);
	}
	return 0;
}

int
mb_hit_main(const char *mode, long n)
{
	bool on = !strcmp(mode, "on");
	struct mrl_registrar registrar = {.reg = hit_reg,
					  .close = hit_close,
					  .watch = on ? hit_watch : NULL,
					  .released = on ? hit_released : NULL};
	struct mrl_domain_config dcfg = {.registrar = &registrar,
					 .mr_key_size = 8};
	struct mrl_cache_config ccfg = {0};
	struct mrl_monitor_client client = {.barrier = &mrl_cache_barrier,
					    .invalidate = hit_invalidate,
					    .in_use = hit_in_use};
	struct mrl_cache_domain *dom;
	struct mrl_registration *reg;
	struct fi_mrlease_stats st;
	struct mrl_cache *cache;
	uintptr_t buf;
	int ret = 1;

	if ((!on && strcmp(mode, "off")) || n < 1 ||
	    mrl_cache_create(&ccfg, &cache))
		return 2;
	client.arg = cache;
	mrl_cache_barrier_set_helper(mrl_monitor_drain);
	if (on && mrl_monitor_start(NULL, &client))
		goto out_cache;
	if (mrl_cache_domain_open(cache, &dcfg, &dom))
		goto out_monitor;
	buf = (uintptr_t) mmap(NULL, 4 * mb_page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((void *) buf == MAP_FAILED)
		goto out_domain;
	memset((void *) buf, 1, 4 * mb_page);
	/* The miss (and the watch), outside the loop. */
	if (mrl_cache_acquire(dom, buf, buf + 4 * mb_page, &reg))
		goto out_buf;
	mrl_cache_lease_release(reg);
	if (hit_loop(dom, buf, buf + 4 * mb_page, n))
		goto out_buf;
	mrl_cache_domain_stats(dom, &st);
	printf("hit monitor %d retained %d hits %" PRIu64 "\n",
	       mrl_monitor_running(),
	       st.not_retained == 0 && st.registrations == 1, st.hits);
	ret = 0;
out_buf:
	/* Unwatched before it is unmapped (the domain's close closes the
	 * entry, which releases its watch; the stop releases every watch):
	 * under valgrind a thread blocked in munmap holds valgrind's lock, and
	 * the monitor could never read the event that munmap waits for. */
	mrl_cache_domain_close(dom);
	mrl_monitor_stop();
	munmap((void *) buf, 4 * mb_page);
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
