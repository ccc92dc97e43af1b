/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The unmap loop, in the style of fabtests' fi_unmap_mem: map anonymous
 * memory at a fixed address, fill it with a pattern of its own, transfer it
 * with desc NULL (fi_send and fi_writemsg over tcp;ofi_rxm, every operand
 * resolved by mrlease: FI_MRLEASE_MIN_SIZE=0), verify every byte where it
 * landed, munmap; thousands of times from two threads. The threads hand
 * their two addresses to each other at every step, so each thread's
 * lookups cover ranges the other one has just unmapped.
 *
 * mrcheck sits under mrlease with its frame checker on (FI_MRCHECK_FRAMES=1,
 * see mrcheck.h): a post whose registration recorded other physical pages
 * than those now under its operand is a stale-frame violation, which over
 * a pinning provider (verbs, efa) would move the old pages' bytes. On tcp
 * the bytes stay right either way; only the checker sees the staleness.
 *
 * One case per process (FI_MRLEASE_* are read once): test/monitor/monitor_unmap.sh
 * runs this program under each FI_MRLEASE_PINNING / FI_MRLEASE_MONITOR
 * setting with the verdict it expects as argument: "stale" (entries
 * retained with nothing watching memory: the checker must see it) or
 * "clean" (no post may use a stale registration).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define THREADS 2
#define ITERS	2000 /* per thread */
#define SECONDS 10.0 /* per case: a slow build (TSan) stops earlier */
#define REGION	(64u * 1024) /* 16 pages */

struct worker {
	int t;
	pthread_t th;
	int iters; /* iterations completed */
	int moved; /* times a slot's address was taken */
	struct mrlt_op send, recv,
		write; /* live until completed, whatever happens */
	char why[256]; /* the first failure */
};

static struct mrlt_pair pair;
static char *target; /* a slot per thread, written by fi_writemsg */
static struct fid_mr *target_mr;
static char *recv_buf[THREADS];
/* Both threads meet here after every iteration: a slot unmapped by one
 * thread is mapped again by the other after the step. */
static pthread_barrier_t step;
static void *slot_addr[THREADS]; /* written by the slot's user, before step */
/* Where a slot moves when its hole was taken (map_slot). */
#define SPARES 1024
static char *spare;
static atomic_int spare_used;
static bool
	slot_reserved[THREADS]; /* still PROT_NONE from set-up: replace it */
/* Whether to stop after step i is stop[i % 2]: a thread already in step
 * i + 1 writes the other flag, so it cannot change the answer for step i
 * while a slower thread has still to read it (the barrier keeps them at
 * most one step apart). */
static atomic_int stop[2];
static double deadline;

static int
fail(struct worker *w, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(w->why, sizeof(w->why), fmt, args);
	va_end(args);
	return -1;
}

/* Post with expr, retrying on -FI_EAGAIN while the CQ progresses; bounded. */
#define POST(expr)                                         \
	({                                                 \
		ssize_t post_r_;                           \
		long post_n_ = 0;                          \
		while ((post_r_ = (expr)) == -FI_EAGAIN && \
		       ++post_n_ < MRLT_MAX_POLLS &&       \
		       !mrlt_pair_poll_ops(&pair))         \
			;                                  \
		post_r_;                                   \
	})

/* Map slot k at its address. Something else may have been mapped into the
 * hole munmap left (a sanitizer's chunk, a thread stack): then the slot
 * moves to a place of the spare reservation never used before. Not to
 * wherever mmap(NULL) puts it: the kernel frees an unmapped range before
 * the monitor can read its event, so it may hand the other thread's slot,
 * while that thread is still inside munmap, to this one, and a lookup then
 * is one the monitor never promised to order (see LIMITATIONS in
 * fi_mrlease(7)); the step barrier orders every other reuse. */
static char *
map_slot(struct worker *w, int k)
{
	int fixed = slot_reserved[k] ? MAP_FIXED : MAP_FIXED_NOREPLACE;
	char *p = mmap(slot_addr[k], REGION, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
	int next;

	slot_reserved[k] = false;
	if (p == MAP_FAILED && errno == EEXIST) {
		/* Ours alone: still PROT_NONE, never unmapped. */
		next = atomic_fetch_add(&spare_used, 1);
		if (next >= SPARES) {
			errno = ENOSPC;
			return NULL;
		}
		p = mmap(spare + (size_t) next * REGION, REGION,
			 PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	if (p == MAP_FAILED)
		return NULL;
	if (p != slot_addr[k]) {
		w->moved++;
		slot_addr[k] = p;
	}
	return p;
}

/* Send the region to the peer endpoint and check the receive buffer. */
static int
send_and_verify(struct worker *w, char *region, uint64_t seed)
{
	int t = w->t, ret;
	long at;

	ret = (int) POST(fi_recv(pair.ep[1 - t], recv_buf[t], REGION, NULL,
				 pair.addr[t], &mrlt_op_start(&w->recv)->ctx));
	if (ret)
		return fail(w, "fi_recv: %s", fi_strerror(-ret));
	ret = (int) POST(fi_send(pair.ep[t], region, REGION, NULL,
				 pair.addr[1 - t],
				 &mrlt_op_start(&w->send)->ctx));
	if (ret)
		return fail(w, "fi_send: %s", fi_strerror(-ret));
	if ((ret = mrlt_op_wait(&pair, &w->send)) ||
	    (ret = mrlt_op_wait(&pair, &w->recv)))
		return fail(w, "send completion: %s", fi_strerror(-ret));
	at = mrlt_verify(recv_buf[t], REGION, seed);
	if (at >= 0)
		return fail(w, "received byte %ld differs", at);
	return 0;
}

/* Write the region into the thread's target slot; delivery complete, so
 * the bytes are there when the completion is. */
static int
write_and_verify(struct worker *w, char *region, uint64_t seed)
{
	char *slot = target + (size_t) w->t * REGION;
	struct iovec iov = {.iov_base = region, .iov_len = REGION};
	struct fi_rma_iov rma = {
		.addr = mrlt_pair_rma_addr(&pair, target, slot),
		.len = REGION,
		.key = fi_mr_key(target_mr),
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.desc = NULL,
		.iov_count = 1,
		.addr = pair.addr[1 - w->t],
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = &mrlt_op_start(&w->write)->ctx,
	};
	int ret;
	long at;

	ret = (int) POST(fi_writemsg(pair.ep[w->t], &msg,
				     FI_DELIVERY_COMPLETE | FI_COMPLETION));
	if (ret)
		return fail(w, "fi_writemsg: %s", fi_strerror(-ret));
	if ((ret = mrlt_op_wait(&pair, &w->write)))
		return fail(w, "write completion: %s", fi_strerror(-ret));
	at = mrlt_verify(slot, REGION, seed);
	if (at >= 0)
		return fail(w, "written byte %ld differs", at);
	return 0;
}

/* Map, fill, send and write the region, verify both targets, unmap. */
static int
one_iteration(struct worker *w, int i)
{
	int k = (w->t + i) % THREADS;
	uint64_t seed = ((uint64_t) w->t << 32) | (uint64_t) i;
	char *region = map_slot(w, k);
	int ret;

	if (!region)
		return fail(w, "mmap: %s", strerror(errno));
	mrlt_fill(region, REGION, seed);
	ret = send_and_verify(w, region, seed);
	if (!ret)
		ret = write_and_verify(w, region, seed);
	if (munmap(region, REGION) && !ret)
		ret = fail(w, "munmap: %s", strerror(errno));
	return ret;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < ITERS; i++) {
		if (one_iteration(w, i))
			atomic_store(&stop[i % 2], 1);
		else
			w->iters++;
		if (mrlt_now() > deadline)
			atomic_store(&stop[i % 2], 1);
		pthread_barrier_wait(&step);
		if (atomic_load(&stop[i % 2]))
			break;
	}
	return NULL;
}

/* The long-lived memory: the write target (registered for remote writes)
 * and each thread's receive buffer; and the slots, reserved until their
 * first iteration maps them (thread t's first slot is t). */
static bool
setup_memory(void)
{
	target = xfer_map_anon(THREADS * REGION);
	if (!target || mrlt_pair_mr_reg(&pair, target, THREADS * REGION,
					FI_REMOTE_WRITE, &target_mr))
		return false;
	for (int t = 0; t < THREADS; t++) {
		recv_buf[t] = xfer_map_anon(REGION);
		slot_addr[t] = mmap(NULL, REGION, PROT_NONE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!recv_buf[t] || slot_addr[t] == MAP_FAILED)
			return false;
		slot_reserved[t] = true;
	}
	spare = mmap(NULL, (size_t) SPARES * REGION, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	atomic_store(&spare_used, 0);
	return spare != MAP_FAILED;
}

static void
teardown_memory(void)
{
	if (target_mr)
		fi_close(&target_mr->fid);
	target_mr = NULL;
	if (target)
		munmap(target, THREADS * REGION);
	target = NULL;
	for (int t = 0; t < THREADS; t++) {
		if (recv_buf[t])
			munmap(recv_buf[t], REGION);
		recv_buf[t] = NULL;
		if (slot_reserved[t])
			munmap(slot_addr[t], REGION);
		slot_reserved[t] = false;
	}
	/* What no slot took: the places slots took were unmapped by their
	 * last user, and may hold something else by now. */
	if (spare && spare != MAP_FAILED) {
		int used = atomic_load(&spare_used);

		used = used < SPARES ? used : SPARES;
		if (used < SPARES)
			munmap(spare + (size_t) used * REGION,
			       (size_t) (SPARES - used) * REGION);
	}
	spare = NULL;
}

struct outcome {
	struct mrcheck_stats before, after;
	struct fi_mrlease_stats cache;
	struct worker w[THREADS];
};

/* Run both threads' loops; false (and a failure recorded) if they could
 * not start. */
static bool
run_loops(struct outcome *o)
{
	struct mrcheck_ops *chk = pair.chk_all;
	int started = 0;

	if (!setup_memory()) {
		mrlt_fail(__FILE__, __LINE__, "setting up memory failed");
		return false;
	}
	atomic_store(&stop[0], 0);
	atomic_store(&stop[1], 0);
	deadline = mrlt_now() + SECONDS;
	pthread_barrier_init(&step, NULL, THREADS);
	chk->query(chk, &o->before, sizeof(o->before));
	for (int t = 0; t < THREADS; t++) {
		o->w[t].t = t;
		if (pthread_create(&o->w[t].th, NULL, worker_main, &o->w[t]))
			break;
		started++;
	}
	if (started < THREADS) {
		/* The other thread would wait at the step for ever. */
		mrlt_fail(__FILE__, __LINE__, "pthread_create failed");
		exit(EXIT_FAILURE);
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(o->w[t].th, NULL);
	pthread_barrier_destroy(&step);
	chk->query(chk, &o->after, sizeof(o->after));
	pair.mrl->query_stats(pair.domain, &o->cache, sizeof(o->cache));
	return true;
}

static const char *
env_or_unset(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "(unset)";
}

static void
report(const struct outcome *o)
{
	const struct mrcheck_stats *b = &o->before, *a = &o->after;

	printf("# FI_MRLEASE_PINNING=%s FI_MRLEASE_MONITOR=%s: %d+%d "
	       "iterations "
	       "(slots moved %d+%d times)\n",
	       env_or_unset("FI_MRLEASE_PINNING"),
	       env_or_unset("FI_MRLEASE_MONITOR"), o->w[0].iters, o->w[1].iters,
	       o->w[0].moved, o->w[1].moved);
	printf("# mrcheck: %llu posts checked, %llu frames recorded, %llu "
	       "compared, %llu stale-frame violations, %llu others\n",
	       (unsigned long long) (a->posts_checked - b->posts_checked),
	       (unsigned long long) (a->frames_recorded - b->frames_recorded),
	       (unsigned long long) (a->frames_checked - b->frames_checked),
	       (unsigned long long) (a->by_kind[MRCHECK_STALE_FRAME] -
				     b->by_kind[MRCHECK_STALE_FRAME]),
	       (unsigned long long) (a->violations - b->violations -
				     (a->by_kind[MRCHECK_STALE_FRAME] -
				      b->by_kind[MRCHECK_STALE_FRAME])));
	printf("# mrlease: %llu lookups, %llu hits, %llu registrations, %llu "
	       "not retained; monitor: %llu events, %llu invalidations\n",
	       (unsigned long long) o->cache.lookups,
	       (unsigned long long) o->cache.hits,
	       (unsigned long long) o->cache.registrations,
	       (unsigned long long) o->cache.not_retained,
	       (unsigned long long) o->cache.monitor_events,
	       (unsigned long long) o->cache.monitor_invalidations);
}

/* Set by unmap_loop when the loops ran and everything but the stale-frame
 * count held; each case then judges that count. */
static bool judged;
static uint64_t stale;

/*
 * Open the pair, run the loops, close everything, and check what holds in
 * every case: no thread failed (every byte right), each ran, the checker
 * compared frames and saw no violation other than stale frames. Those are
 * counted in `stale` and acknowledged, so the fabric closes.
 */
static void
unmap_loop(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA,
				      .thread_safe = true};
	static struct outcome o;
	struct mrcheck_stats st;
	bool ran;
	int closed;

	memset(&o, 0, sizeof(o));
	judged = false;
	if (!mrlt_pair_open_hooked_safe(&opts, &pair))
		return;
	if (!pair.chk_all ||
	    pair.chk_all->query(pair.chk_all, &st, sizeof(st))) {
		mrlt_pair_close(&pair);
		CHECK_MSG(false, "mrcheck not stacked");
	}
	if (!st.frames_supported) {
		mrlt_pair_close(&pair);
		mrlt_skip_current(
			"%s",
			st.frames_enabled ?
				"/proc/self/pagemap gives no frame numbers "
				"(needs CAP_SYS_ADMIN)" :
				"FI_MRCHECK_FRAMES is not set");
		return;
	}
	ran = run_loops(&o);
	teardown_memory();
	if (ran)
		report(&o);
	pair.chk_all->acknowledge(pair.chk_all);
	closed = mrlt_pair_close(&pair);
	CHECK(ran);
	CHECK_FI(closed);
	for (int t = 0; t < THREADS; t++) {
		CHECK_MSG(!o.w[t].why[0], "thread %d, iteration %d: %s", t,
			  o.w[t].iters, o.w[t].why);
		CHECK_MSG(o.w[t].iters > 0, "thread %d did not iterate", t);
	}
	CHECK(o.after.frames_checked > o.before.frames_checked);
	stale = o.after.by_kind[MRCHECK_STALE_FRAME] -
		o.before.by_kind[MRCHECK_STALE_FRAME];
	CHECK_EQ(stale, o.after.violations - o.before.violations);
	judged = true;
}

/* The checker itself: with entries kept past their last lease and nothing
 * watching memory, a post after munmap gets the old registration. If the
 * checker does not see it, the zero of the other cases proves nothing. */
static void
test_unmap_loop_shows_stale_registrations_when_retention_is_unwatched(void)
{
	unmap_loop();
	if (!judged)
		return;
	CHECK_MSG(stale > 0, "no stale-frame violation: the checker misses "
			     "registrations that outlived their pages");
}

/* A registration kept past munmap hands a pinning provider the pages that
 * left: silent corruption of a correct program. No post may ever get one. */
static void
test_unmap_loop_never_posts_a_stale_registration(void)
{
	unmap_loop();
	if (!judged)
		return;
	CHECK_EQ(0, stale);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=0",
					  "FI_MRCHECK_FRAMES=1", NULL};
	const char *expect = argc > 1 ? argv[1] : "";
	char prefix[128];

	if (strcmp(expect, "stale") && strcmp(expect, "clean")) {
		fprintf(stderr,
			"usage: %s stale|clean [case-name pattern...] (with "
			"FI_MRLEASE_PINNING "
			"and FI_MRLEASE_MONITOR set)\n",
			argv[0]);
		return 2;
	}
	mrlt_select(argc - 2, argv + 2);
	xfer_reexec(argv, "mrcheck;mrlease", env);
	snprintf(prefix, sizeof(prefix),
		 "PINNING=%s MONITOR=%s CHURN=%s: ",
		 env_or_unset("FI_MRLEASE_PINNING"),
		 env_or_unset("FI_MRLEASE_MONITOR"),
		 env_or_unset("FI_MRLEASE_MONITOR_CHURN"));
	mrlt_set_prefix(prefix);
	if (!strcmp(expect, "stale"))
		MRLT_RUN(
			test_unmap_loop_shows_stale_registrations_when_retention_is_unwatched);
	else
		MRLT_RUN(test_unmap_loop_never_posts_a_stale_registration);
	return mrlt_done();
}
