/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fork() while the memory monitor runs (FI_MRLEASE_MONITOR=userfaultfd,
 * FI_MRLEASE_PINNING=yes over tcp;ofi_rxm, every operand resolved:
 * FI_MRLEASE_MIN_SIZE=0). The parent holds cached, watched entries; one
 * thread is inside leased NULL-desc writes the whole time (from a cached
 * buffer, then from a fresh mapping it unmaps: misses, monitor events and
 * deferred closes run across the forks) and another invalidates the cached
 * buffers as an allocator's purge hook would (the cache's writer side is
 * busy most of the time). The parent forks CHILDREN children one after
 * another; every other one calls exit(0) at once (libfabric's destructors
 * run on the inherited state), the rest open libfabric afresh, transfer
 * with desc NULL, unmap a buffer they used and transfer again from a new
 * mapping at the same address (their own monitor must have retired the old
 * entry), verify every byte and exit(0). Each child is waited for within
 * CHILD_SECONDS (a pidfd and poll), described (gdb) and killed otherwise;
 * the parent then carries on.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define CHILDREN      50
#define CHILD_SECONDS 20 /* bound of one child's life */
#define JOIN_SECONDS  60 /* bound of the threads' last round */
#define CACHED	      4 /* buffers the parent keeps cached */
#define BUF_LEN	      (64u * 1024)
#define TARGET_LEN    (1u << 20)
#define WRONG_BYTES   1 /* write_verified: the bytes differ */

/* Child exit statuses: which step failed. */
enum child_status {
	CHILD_OK = 0,
	CHILD_OPEN = 10, /* opening fabric, domain, endpoints */
	CHILD_MAP, /* mmap */
	CHILD_XFER1, /* first write, or its bytes */
	CHILD_REMAP, /* the same address again after munmap */
	CHILD_XFER2, /* write from the new mapping, or its bytes */
	CHILD_STALE, /* the old entry served the new mapping */
	CHILD_NO_EVENT, /* the munmap reached no monitor */
	CHILD_CLOSE, /* closing */
};

static const char *const child_step[] = {
	"open",
	"mmap",
	"first write",
	"mmap at the same address",
	"write from the new mapping",
	"old entry reused",
	"no monitor event for the munmap",
	"close",
};

/* Parent state: the pair, its target and the leasing thread's. */
static struct mrlt_pair pair;
static char *target;
static struct fid_mr *target_mr;
static char *cached[CACHED];
static atomic_int stop_leasing;
static atomic_long leased_writes;
static char leasing_err[256];
/* A thread or a child did not finish in time: exit without destructors. */
static bool hung;

static char *
map_anon(size_t len, void *at)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (at ? MAP_FIXED_NOREPLACE : 0),
		       -1, 0);

	if (p == MAP_FAILED || (at && p != at)) {
		if (p != MAP_FAILED)
			munmap(p, len);
		return NULL;
	}
	return p;
}

/* Write src (seed's pattern) to the start of tgt with desc NULL and check
 * the bytes that landed: 0, a negative fi_errno, or WRONG_BYTES. */
static int
write_verified(struct mrlt_pair *p, struct fid_mr *tmr, char *tgt,
	       const char *src, size_t len, uint64_t seed)
{
	struct fi_context2 ctx;
	struct mrlt_comp comp;
	ssize_t ret;

	ret = MRLT_PAIR_POST(p, fi_write(p->ep[0], src, len, NULL, p->addr[1],
					 mrlt_pair_rma_addr(p, tgt, tgt),
					 fi_mr_key(tmr), &ctx));
	if (ret)
		return (int) ret;
	ret = mrlt_reap(p, &comp, 1);
	if (ret < 0)
		return (int) ret;
	if (comp.err)
		return -comp.err;
	return mrlt_wait_pattern(p, tgt, len, seed) == -1 ? 0 : WRONG_BYTES;
}

/* ---- the child ------------------------------------------------------- */

static int
child_stats(struct mrlt_pair *p, struct fi_mrlease_stats *dom,
	    struct fi_mrlease_stats *all)
{
	return p->mrl->query_stats(p->domain, dom, sizeof(*dom)) ||
	       p->mrl->query_stats(NULL, all, sizeof(*all));
}

/* A child's whole life on its own pair; returns its exit status. */
static enum child_status
child_transfer(int n)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA};
	struct mrlt_pair cp;
	struct fi_mrlease_stats dom0, all0, dom1, all1;
	struct fid_mr *cmr = NULL;
	enum child_status st = CHILD_OK;
	uint64_t seed = 1000u * (uint64_t) n;
	char *ctgt = NULL, *buf;

	if (mrlt_pair_open(&opts, &cp) || !cp.mrl)
		return CHILD_OPEN;
	ctgt = map_anon(BUF_LEN, NULL);
	buf = map_anon(BUF_LEN, NULL);
	if (!ctgt || !buf) {
		st = CHILD_MAP;
		goto out;
	}
	if (mrlt_pair_mr_reg(&cp, ctgt, BUF_LEN, FI_REMOTE_WRITE, &cmr)) {
		st = CHILD_OPEN;
		goto out;
	}
	mrlt_fill(buf, BUF_LEN, seed);
	if (write_verified(&cp, cmr, ctgt, buf, BUF_LEN, seed)) {
		st = CHILD_XFER1;
		goto out;
	}
	if (child_stats(&cp, &dom0, &all0)) {
		st = CHILD_OPEN;
		goto out;
	}
	munmap(buf, BUF_LEN);
	if (!map_anon(BUF_LEN, buf)) {
		buf = NULL;
		st = CHILD_REMAP;
		goto out;
	}
	mrlt_fill(buf, BUF_LEN, seed + 1);
	if (write_verified(&cp, cmr, ctgt, buf, BUF_LEN, seed + 1)) {
		st = CHILD_XFER2;
		goto out;
	}
	if (child_stats(&cp, &dom1, &all1)) {
		st = CHILD_OPEN;
		goto out;
	}
	/* The second write missed: the munmap retired the first entry. */
	if (dom1.misses == dom0.misses)
		st = CHILD_STALE;
	else if (all1.monitor_events == all0.monitor_events ||
		 dom1.monitor_invalidations == 0)
		st = CHILD_NO_EVENT;
	if (st)
		fprintf(stderr,
			"# child %d: misses %llu -> %llu, monitor_events "
			"%llu -> %llu, monitor_invalidations %llu\n",
			n, (unsigned long long) dom0.misses,
			(unsigned long long) dom1.misses,
			(unsigned long long) all0.monitor_events,
			(unsigned long long) all1.monitor_events,
			(unsigned long long) dom1.monitor_invalidations);
out:
	if (cmr && fi_close(&cmr->fid) && !st)
		st = CHILD_CLOSE;
	if (mrlt_pair_close(&cp) && !st)
		st = CHILD_CLOSE;
	if (buf)
		munmap(buf, BUF_LEN);
	if (ctgt)
		munmap(ctgt, BUF_LEN);
	return st;
}

/* ---- the parent ------------------------------------------------------ */

/* Leased writes until told to stop: a cached buffer (a hit on a watched
 * entry), then a fresh mapping (a miss) unmapped at once (a monitor event
 * and a deferred close), so forks land anywhere in those paths. */
static void *
leasing_main(void *arg)
{
	(void) arg;
	for (uint64_t i = 0; !atomic_load(&stop_leasing); i++) {
		char *src = cached[i % CACHED], *fresh;
		size_t len = BUF_LEN >> (i % CACHED);
		uint64_t seed = 7u << 20 | i;
		int ret;

		mrlt_fill(src, len, seed);
		ret = write_verified(&pair, target_mr, target, src, len, seed);
		if (!ret) {
			fresh = map_anon(BUF_LEN, NULL);
			if (!fresh) {
				snprintf(leasing_err, sizeof(leasing_err),
					 "mmap failed");
				break;
			}
			mrlt_fill(fresh, BUF_LEN, ~seed);
			ret = write_verified(&pair, target_mr, target, fresh,
					     BUF_LEN, ~seed);
			munmap(fresh, BUF_LEN);
		}
		if (ret) {
			snprintf(leasing_err, sizeof(leasing_err),
				 "leased write %llu: %s",
				 (unsigned long long) i,
				 ret == WRONG_BYTES ? "wrong bytes" :
						      fi_strerror(-ret));
			break;
		}
		atomic_fetch_add(&leased_writes, 2);
	}
	return NULL;
}

/* An allocator's purge hook on the cached buffers, as fast as it goes: the
 * cache's writer side is busy most of the time, so forks often land while
 * a thread other than the forking one holds it. */
static void *
invalidating_main(void *arg)
{
	struct fi_mrlease_ops *mrl = arg;

	for (uint64_t i = 0; !atomic_load(&stop_leasing); i++)
		mrl->invalidate(cached[i % CACHED], BUF_LEN);
	return NULL;
}

static int
check_child(int n, int status)
{
	if (status == -1) {
		printf("# child %d did not exit within %d s: killed\n", n,
		       CHILD_SECONDS);
		return -1;
	}
	if (WIFSIGNALED(status)) {
		printf("# child %d killed by signal %d\n", n, WTERMSIG(status));
		return -1;
	}
	if (WEXITSTATUS(status) != CHILD_OK) {
		int s = WEXITSTATUS(status);

		printf("# child %d exited with %d (%s)\n", n, s,
		       s >= CHILD_OPEN && s <= CHILD_CLOSE ?
			       child_step[s - CHILD_OPEN] :
			       "?");
		return -1;
	}
	return 0;
}

static int
join_leasing(pthread_t th)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += JOIN_SECONDS;
	if (pthread_timedjoin_np(th, NULL, &deadline)) {
		hung = true;
		return -1;
	}
	return 0;
}

/* A child of a process whose monitor runs and whose other threads are
 * inside leased transfers and invalidations inherits no state it can trip
 * on (a lock a vanished thread held, the parent's monitor descriptor or
 * barrier, the parent's registrations): it exits, or opens libfabric and
 * its own monitor and transfers; and the parent carries on. */
static void
test_fork_children_transfer_while_parent_leases(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA,
				      .thread_safe = true};
	struct fi_mrlease_ops *mrl;
	struct fi_mrlease_stats s0, s1, all;
	long writes_before, writes_during = 0;
	pthread_t th, inv;
	int failed_children = 0, transferring = 0;
	double t0;

	if (!mrlt_pair_open_hooked(&opts, &pair))
		return;
	mrl = pair.mrl;
	target = map_anon(TARGET_LEN, NULL);
	CHECK(target);
	CHECK_FI(mrlt_pair_mr_reg(&pair, target, TARGET_LEN, FI_REMOTE_WRITE,
				  &target_mr));
	for (int i = 0; i < CACHED; i++) {
		cached[i] = map_anon(BUF_LEN, NULL);
		CHECK(cached[i]);
		mrlt_fill(cached[i], BUF_LEN, (uint64_t) i);
		CHECK_EQ(0, write_verified(&pair, target_mr, target, cached[i],
					   BUF_LEN, (uint64_t) i));
	}
	/* The cached buffers are entries the monitor watches. */
	CHECK_FI(mrl->query_stats(pair.domain, &s0, sizeof(s0)));
	CHECK(s0.entries >= CACHED);
	CHECK_EQ(0, s0.not_retained);

	CHECK(!pthread_create(&th, NULL, leasing_main, NULL));
	if (pthread_create(&inv, NULL, invalidating_main, mrl)) {
		atomic_store(&stop_leasing, 1);
		pthread_join(th, NULL);
		CHECK_MSG(false, "pthread_create failed");
	}
	t0 = mrlt_now();
	for (int n = 0; n < CHILDREN; n++) {
		pid_t pid;
		int status;

		writes_before = atomic_load(&leased_writes);
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			failed_children++;
			printf("# fork %d: %s\n", n, strerror(errno));
			break;
		}
		if (pid == 0) {
			mrlt_leak_check_off();
			exit(n % 2 ? child_transfer(n) : CHILD_OK);
		}
		transferring += n % 2;
		status = mrlt_wait_child(pid, CHILD_SECONDS);
		if (check_child(n, status))
			failed_children++;
		writes_during += atomic_load(&leased_writes) - writes_before;
	}
	printf("# %d children (%d transferring) in %.1f s; the parent's "
	       "leasing "
	       "thread wrote %ld times meanwhile\n",
	       CHILDREN, transferring, mrlt_now() - t0, writes_during);
	atomic_store(&stop_leasing, 1);
	CHECK_MSG(!join_leasing(th) && !join_leasing(inv),
		  "the leasing or the invalidating thread hung (%d s)",
		  JOIN_SECONDS);
	CHECK_MSG(!leasing_err[0], "%s", leasing_err);
	CHECK_EQ(0, failed_children);
	CHECK(writes_during > 0);

	/* The parent carries on: its writes land, and its monitor still
	 * retires the entry of a buffer it unmaps. */
	CHECK_FI(mrl->query_stats(pair.domain, &s0, sizeof(s0)));
	for (int i = 0; i < CACHED; i++) {
		mrlt_fill(cached[i], BUF_LEN, 99u + (uint64_t) i);
		CHECK_EQ(0, write_verified(&pair, target_mr, target, cached[i],
					   BUF_LEN, 99u + (uint64_t) i));
	}
	munmap(cached[0], BUF_LEN);
	CHECK(map_anon(BUF_LEN, cached[0]));
	mrlt_fill(cached[0], BUF_LEN, 123);
	CHECK_EQ(0, write_verified(&pair, target_mr, target, cached[0], BUF_LEN,
				   123));
	CHECK_FI(mrl->query_stats(pair.domain, &s1, sizeof(s1)));
	printf("# parent after the children: lookups %llu misses %llu "
	       "monitor_invalidations %llu -> %llu deferred_closes %llu\n",
	       (unsigned long long) (s1.lookups - s0.lookups),
	       (unsigned long long) (s1.misses - s0.misses),
	       (unsigned long long) s0.monitor_invalidations,
	       (unsigned long long) s1.monitor_invalidations,
	       (unsigned long long) s1.deferred_closes);
	CHECK(s1.monitor_invalidations > s0.monitor_invalidations);
	CHECK(s1.misses > s0.misses);
	CHECK_EQ(0, mrlt_live_leases(&pair));

	CHECK_FI(fi_close(&target_mr->fid));
	target_mr = NULL;
	CHECK_FI(mrlt_pair_close(&pair));
	CHECK_FI(mrl->query_stats(NULL, &all, sizeof(all)));
	CHECK_EQ(all.registrations, all.deregistrations);
	CHECK_EQ(0, all.leases);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {
		"FI_MRLEASE_MIN_SIZE=0", "FI_MRLEASE_PINNING=yes",
		"FI_MRLEASE_MONITOR=userfaultfd", NULL};
	int status;

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrlease", env);
	MRLT_RUN(test_fork_children_transfer_while_parent_leases);
	status = mrlt_done();
	if (hung) {
		fflush(stdout);
		_exit(EXIT_FAILURE);
	}
	for (int i = 0; i < CACHED; i++)
		if (cached[i])
			munmap(cached[i], BUF_LEN);
	if (target)
		munmap(target, TARGET_LEN);
	return status;
}
