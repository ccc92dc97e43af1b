/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor while the allocator purges as hard as it can: threads
 * post fi_write, fi_read and fi_send with NULL descriptors from buffers
 * malloc'd and freed in churn (64 B to 4 MiB: allocator runs, heap, mmapped
 * chunks) over tcp;ofi_rxm treated as pinning (FI_MRLEASE_PINNING=yes) with
 * the monitor forced, so every cached registration lives only while the
 * monitor watches it and every purge (madvise, munmap, heap trim) reaches
 * the monitor while other threads are inside misses and leased transfers.
 * mrcheck sits under mrlease with its frame checker on (FI_MRCHECK_FRAMES=1,
 * mrcheck.h): a post given a registration whose pages were purged and
 * faulted in again elsewhere, which over verbs would move the old pages'
 * bytes, is a violation even though tcp moves the right ones.
 *
 * Run once per allocator by monitor_alloc.sh, which names it as the first
 * argument and sets its purge options: glibc (trim threshold and top pad
 * 0), jemalloc (decay 0) and mimalloc (purge delay 0), the latter two by
 * LD_PRELOAD. Bounded by iteration counts; each wait is bounded too.
 *
 * The workers call the allocator under one lock (alloc_lock). The monitor
 * guarantees that once munmap has returned, no lookup in any thread sees the
 * range (mrl_monitor.h); a userfaultfd event is only posted after the kernel
 * has freed the addresses, so another thread's mmap running *during* that
 * munmap can be given the same addresses before the monitor hears of it.
 * With the lock, every free() has returned before another thread's malloc()
 * starts, which is the order the guarantee covers; posts, misses, leases
 * and the monitor's invalidations still run concurrently.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#define WORKERS	     3
#define ITERS	     300
#define LIVE	     5 /* buffers a worker keeps before freeing */
#define MAX_LEN	     (4u << 20)
#define JOIN_SECONDS 120 /* a worker still running then is hung */

/* Operand sizes: allocator runs, small and large heap chunks, chunks glibc
 * mmaps (above 128 KiB), huge extents; each gets a random tail. */
static const size_t sizes[] = {
	64,    200,    1000,   4096,	 9000,	   20000,
	70000, 150000, 300000, 1u << 20, 2u << 20, 3u << 20,
};

struct worker {
	int id;
	struct mrlt_pair pair;
	char *target; /* mmapped: no allocator purges it */
	struct fid_mr *target_mr; /* FI_REMOTE_READ | FI_REMOTE_WRITE */
	void *live[LIVE]; /* malloc'd, freed when pushed out */
	unsigned live_next;
	uint64_t rng;
	long ops;
	char err[256]; /* the worker's first failure */
	atomic_int finished;
};

static struct worker workers[WORKERS];
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static void *
alloc_locked(size_t len)
{
	void *p;

	pthread_mutex_lock(&alloc_lock);
	p = malloc(len);
	pthread_mutex_unlock(&alloc_lock);
	return p;
}

static void
free_locked(void *p)
{
	pthread_mutex_lock(&alloc_lock);
	free(p);
	pthread_mutex_unlock(&alloc_lock);
}
/* A worker did not finish in time: nothing may be closed or exit()ed. */
static bool hung;

static uint64_t
next_rand(struct worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static size_t
pick_len(struct worker *w)
{
	size_t base = sizes[next_rand(w) % (sizeof(sizes) / sizeof(sizes[0]))];
	size_t len = base + next_rand(w) % (base / 4 + 1);

	return len > MAX_LEN ? MAX_LEN : len;
}

/* Keep buf alive a few iterations, then free it: frees land between other
 * threads' posts rather than right after this thread's own. */
static void
retire_buf(struct worker *w, void *buf)
{
	unsigned i = w->live_next++ % LIVE;

	free_locked(w->live[i]);
	w->live[i] = buf;
}

static int
reap(struct worker *w, size_t n, const char *what)
{
	struct mrlt_comp comp[2];
	int ret = mrlt_reap(&w->pair, comp, n);

	if (ret < 0) {
		snprintf(w->err, sizeof(w->err), "%s: reap %s", what,
			 fi_strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < n; i++)
		if (comp[i].err) {
			snprintf(w->err, sizeof(w->err),
				 "%s: completion error %s", what,
				 fi_strerror(comp[i].err));
			return -comp[i].err;
		}
	return 0;
}

static int
post_failed(struct worker *w, const char *what, ssize_t ret)
{
	snprintf(w->err, sizeof(w->err), "%s: post %s", what,
		 fi_strerror((int) -ret));
	return (int) ret;
}

/* src (pattern seed) lands intact in the target through a NULL-desc write. */
static int
do_write(struct worker *w, void *src, size_t len, uint64_t seed)
{
	struct fi_context2 ctx;
	uint64_t raddr = mrlt_pair_rma_addr(&w->pair, w->target, w->target);
	ssize_t ret;
	long at;

	ret = MRLT_PAIR_POST(&w->pair, fi_write(w->pair.ep[0], src, len, NULL,
						w->pair.addr[1], raddr,
						fi_mr_key(w->target_mr), &ctx));
	if (ret)
		return post_failed(w, "fi_write", ret);
	if (reap(w, 1, "fi_write"))
		return -1;
	at = mrlt_wait_pattern(&w->pair, w->target, len, seed);
	if (at >= 0) {
		snprintf(w->err, sizeof(w->err),
			 "fi_write of %zu bytes: target byte %ld differs", len,
			 at);
		return -1;
	}
	return 0;
}

/* A zeroed malloc'd buffer to land in; NULL (and w->err) when none. */
static char *
alloc_dst(struct worker *w, size_t len)
{
	char *dst = alloc_locked(len);

	if (!dst)
		snprintf(w->err, sizeof(w->err), "malloc(%zu) failed", len);
	else
		memset(dst, 0, len);
	return dst;
}

/* dst (malloc'd) holds seed's pattern: checked, then kept alive a while. */
static int
landed(struct worker *w, char *dst, size_t len, uint64_t seed, const char *what)
{
	long at = mrlt_verify(dst, len, seed);

	retire_buf(w, dst);
	if (at >= 0) {
		snprintf(w->err, sizeof(w->err),
			 "%s of %zu bytes: byte %ld "
			 "differs where it landed",
			 what, len, at);
		return -1;
	}
	return 0;
}

/* The target's bytes land intact in a fresh malloc'd buffer (NULL desc). */
static int
do_read(struct worker *w, size_t len, uint64_t seed)
{
	struct fi_context2 ctx;
	uint64_t raddr = mrlt_pair_rma_addr(&w->pair, w->target, w->target);
	char *dst = alloc_dst(w, len);
	ssize_t ret;

	if (!dst)
		return -1;
	mrlt_fill(w->target, len, seed);
	ret = MRLT_PAIR_POST(&w->pair, fi_read(w->pair.ep[0], dst, len, NULL,
					       w->pair.addr[1], raddr,
					       fi_mr_key(w->target_mr), &ctx));
	if (ret) {
		free_locked(dst);
		return post_failed(w, "fi_read", ret);
	}
	if (reap(w, 1, "fi_read")) {
		free_locked(dst);
		return -1;
	}
	return landed(w, dst, len, seed, "fi_read");
}

/* src reaches a fresh malloc'd receive buffer; both descs NULL. */
static int
do_send(struct worker *w, void *src, size_t len, uint64_t seed)
{
	struct fi_context2 rctx, sctx;
	char *dst = alloc_dst(w, len);
	ssize_t ret;

	if (!dst)
		return -1;
	ret = MRLT_PAIR_POST(&w->pair, fi_recv(w->pair.ep[1], dst, len, NULL,
					       w->pair.addr[0], &rctx));
	if (!ret)
		ret = MRLT_PAIR_POST(&w->pair,
				     fi_send(w->pair.ep[0], src, len, NULL,
					     w->pair.addr[1], &sctx));
	if (ret) /* the receive may be posted still: dst stays allocated */
		return post_failed(w, "fi_recv/fi_send", ret);
	if (reap(w, 2, "fi_send"))
		return -1;
	return landed(w, dst, len, seed, "fi_send");
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < ITERS; i++) {
		size_t len = pick_len(w);
		uint64_t seed = (uint64_t) w->id << 32 | (uint64_t) i;
		char *src = NULL;
		int ret;

		if (i % 3 != 1) {
			src = alloc_locked(len);
			if (!src) {
				snprintf(w->err, sizeof(w->err),
					 "malloc(%zu) failed", len);
				break;
			}
			mrlt_fill(src, len, seed);
		}
		switch (i % 3) {
		case 0:
			ret = do_write(w, src, len, seed);
			break;
		case 1:
			ret = do_read(w, len, seed);
			break;
		default:
			ret = do_send(w, src, len, seed);
			break;
		}
		if (src)
			retire_buf(w, src);
		if (ret)
			break;
		w->ops++;
	}
	for (unsigned i = 0; i < LIVE; i++) {
		free_locked(w->live[i]);
		w->live[i] = NULL;
	}
	atomic_store(&w->finished, 1);
	return NULL;
}

/* Join every worker within JOIN_SECONDS; false (and `hung`) otherwise. */
static bool
join_workers(pthread_t *th)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += JOIN_SECONDS;
	for (int t = 0; t < WORKERS; t++)
		if (pthread_timedjoin_np(th[t], NULL, &deadline)) {
			printf("# worker %d hung after %ld operations\n", t,
			       workers[t].ops);
			hung = true;
		}
	return !hung;
}

static int
workers_open(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA};

	for (int t = 0; t < WORKERS; t++) {
		struct worker *w = &workers[t];

		w->id = t;
		w->rng = 0x9e3779b97f4a7c15ULL * (uint64_t) (t + 1);
		if (!mrlt_pair_open_hooked(&opts, &w->pair))
			return -1;
		w->target = mmap(NULL, MAX_LEN, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (w->target == MAP_FAILED) {
			w->target = NULL;
			mrlt_fail(__FILE__, __LINE__,
				  "mmap of the target failed");
			return -1;
		}
		if (mrlt_pair_mr_reg(&w->pair, w->target, MAX_LEN,
				     FI_REMOTE_READ | FI_REMOTE_WRITE,
				     &w->target_mr)) {
			mrlt_fail(__FILE__, __LINE__,
				  "target registration failed");
			return -1;
		}
	}
	return 0;
}

/* Close what workers_open opened; the first fi_close error, or 0. */
static int
workers_close(void)
{
	int ret = 0, r;

	for (int t = 0; t < WORKERS; t++) {
		struct worker *w = &workers[t];

		if (w->target_mr && (r = fi_close(&w->target_mr->fid)) && !ret)
			ret = r;
		w->target_mr = NULL;
		if (w->pair.domain && (r = mrlt_pair_close(&w->pair)) && !ret)
			ret = r;
		memset(&w->pair, 0, sizeof(w->pair));
		if (w->target)
			munmap(w->target, MAX_LEN);
		w->target = NULL;
	}
	return ret;
}

static void
print_stats(const char *what, const struct fi_mrlease_stats *s)
{
	printf("# %s: lookups %llu misses %llu registrations %llu "
	       "deregistrations %llu monitor_events %llu monitor_invalidations "
	       "%llu "
	       "not_retained %llu deferred_closes %llu\n",
	       what, (unsigned long long) s->lookups,
	       (unsigned long long) s->misses,
	       (unsigned long long) s->registrations,
	       (unsigned long long) s->deregistrations,
	       (unsigned long long) s->monitor_events,
	       (unsigned long long) s->monitor_invalidations,
	       (unsigned long long) s->not_retained,
	       (unsigned long long) s->deferred_closes);
}

/* Every byte of every NULL-desc write, read and send lands intact while the
 * allocator purges freed memory at once and the monitor invalidates it; a
 * stale entry, a lost invalidation, a deadlock between a purging free and a
 * miss, or a deferred close that never happens each fail it. */
static void
test_transfers_stay_exact_while_allocator_purges(void)
{
	struct fi_mrlease_ops *mrl;
	struct fi_mrlease_stats all;
	struct mrcheck_ops *chk;
	struct mrcheck_stats chk0, chk1;
	char last[256] = "";
	pthread_t th[WORKERS];
	int started = 0;

	if (workers_open()) {
		CHECK_EQ(0, workers_close());
		return;
	}
	mrl = workers[0].pair.mrl;
	chk = workers[0].pair.chk_all;
	if (!chk || chk->query(chk, &chk0, sizeof(chk0))) {
		workers_close();
		CHECK_MSG(false, "mrcheck not stacked");
	}
	for (; started < WORKERS; started++)
		if (pthread_create(&th[started], NULL, worker_main,
				   &workers[started]))
			break;
	if (started < WORKERS) {
		for (int t = 0; t < started; t++)
			pthread_join(th[t], NULL);
		workers_close();
		CHECK_MSG(false, "pthread_create failed");
	}
	CHECK_MSG(join_workers(th), "a worker hung (bound %d s)", JOIN_SECONDS);
	for (int t = 0; t < WORKERS; t++)
		CHECK_MSG(!workers[t].err[0],
			  "worker %d after %ld operations: %s", t,
			  workers[t].ops, workers[t].err);
	for (int t = 0; t < WORKERS; t++)
		CHECK_EQ(0, mrlt_live_leases(&workers[t].pair));
	printf("# %d workers x %d operations\n", WORKERS, ITERS);
	/* No post used a registration of pages that had left (the fabric
	 * would not close with the violation unacknowledged anyway). */
	CHECK_FI(chk->query(chk, &chk1, sizeof(chk1)));
	printf("# mrcheck: %llu posts checked, %llu frames compared, %llu "
	       "violations\n",
	       (unsigned long long) (chk1.posts_checked - chk0.posts_checked),
	       (unsigned long long) (chk1.frames_checked - chk0.frames_checked),
	       (unsigned long long) (chk1.violations - chk0.violations));
	if (chk1.violations != chk0.violations)
		chk->last_violation(chk, last, sizeof(last));
	CHECK_MSG(chk1.violations == chk0.violations, "last: %s", last);
	if (chk1.frames_supported)
		CHECK(chk1.frames_checked > chk0.frames_checked);
	else
		printf("# frames not compared: /proc/self/pagemap gives no "
		       "frame "
		       "numbers (needs CAP_SYS_ADMIN)\n");
	CHECK_EQ(0, workers_close());

	/* Nothing leaked: every registration (deferred ones included) closed
	 * with its domain, and the purges reached the cache through the
	 * monitor. */
	CHECK_FI(mrl->query_stats(NULL, &all, sizeof(all)));
	print_stats("process", &all);
	CHECK_EQ(all.registrations, all.deregistrations);
	CHECK_EQ(0, all.leases);
	CHECK(all.monitor_events > 0);
	CHECK(all.monitor_invalidations > 0);
}

static const char *alloc_name = "glibc";

/* The allocator named on the command line is the one malloc reaches: an
 * LD_PRELOAD that did not take effect would test glibc three times. */
static void
test_malloc_is_the_allocator_named(void)
{
	bool jemalloc = dlsym(RTLD_DEFAULT, "mallctl") != NULL;
	bool mimalloc = dlsym(RTLD_DEFAULT, "mi_version") != NULL;

	if (dlsym(RTLD_DEFAULT, "__asan_init"))
		printf("# malloc is AddressSanitizer's (it unmaps large chunks "
		       "on "
		       "free; glibc's options do nothing)\n");
	if (!strcmp(alloc_name, "jemalloc"))
		CHECK_MSG(jemalloc, "libjemalloc is not loaded");
	else if (!strcmp(alloc_name, "mimalloc"))
		CHECK_MSG(mimalloc, "libmimalloc is not loaded");
	else
		CHECK_MSG(!strcmp(alloc_name, "glibc") && !jemalloc &&
				  !mimalloc,
			  "%s: not glibc, jemalloc or mimalloc as loaded",
			  alloc_name);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {
		"FI_MRLEASE_MIN_SIZE=0", "FI_MRLEASE_PINNING=yes",
		"FI_MRLEASE_MONITOR=userfaultfd", "FI_MRCHECK_FRAMES=1", NULL};
	char prefix[64];
	int status;

	xfer_reexec(argv, "mrcheck;mrlease", env);
	if (argc > 1)
		alloc_name = argv[1];
	mrlt_select(argc - 2, argv + 2);
	snprintf(prefix, sizeof(prefix), "%s: ", alloc_name);
	mrlt_set_prefix(prefix);
	MRLT_RUN(test_malloc_is_the_allocator_named);
	MRLT_RUN(test_transfers_stay_exact_while_allocator_purges);
	status = mrlt_done();
	if (hung) {
		/* Threads are stuck inside the provider: exit without the
		 * destructors that would wait for them. */
		fflush(stdout);
		_exit(EXIT_FAILURE);
	}
	return status;
}
