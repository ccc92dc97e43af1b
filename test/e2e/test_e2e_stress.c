/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stress over tcp;ofi_rxm with mrcheck under mrlease: several threads post
 * RMA writes and reads with NULL descs over allocator-style churn (malloc
 * and free of varied sizes, each range invalidated before it is freed as an
 * allocator's purge hook would) while another thread invalidates recently
 * used ranges. Guards against: a registration closed under a transfer
 * (mrcheck), a stale registration handed to a post after invalidate, a
 * registration closed twice or never, lost completions. Bounded by
 * iteration counts. Runs under TSan too (SUITE_CONCURRENCY).
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#define WORKERS 3
#define ITERS	120
#define SLOT	(256u * 1024)
#define RING	64

static const size_t sizes[] = {64, 1000, 4096, 20000, 70000, 200000};

static struct mrlt_pair pair;
static char *target;
static struct fid_mr *target_mr;
static atomic_int workers_left;
static atomic_int invalidator_running;
static atomic_long failures;

/* Recently used ranges, for the invalidating thread. */
static struct {
	_Atomic(uintptr_t) addr;
	_Atomic(size_t) len;
} ring[RING];
static atomic_uint ring_next;

static void
publish(const void *addr, size_t len)
{
	unsigned i = atomic_fetch_add(&ring_next, 1) % RING;

	atomic_store(&ring[i].len, len);
	atomic_store(&ring[i].addr, (uintptr_t) addr);
}

static ssize_t
post_rma(bool write, void *buf, size_t len, char *remote, struct mrlt_op *op)
{
	uint64_t raddr = mrlt_pair_rma_addr(&pair, target, remote);
	ssize_t ret;
	long tries = 0;

	atomic_store(&op->done, 0);
	op->err = 0;
	do {
		ret = write ? fi_write(pair.ep[0], buf, len, NULL, pair.addr[1],
				       raddr, fi_mr_key(target_mr), &op->ctx) :
			      fi_read(pair.ep[0], buf, len, NULL, pair.addr[1],
				      raddr, fi_mr_key(target_mr), &op->ctx);
		if (ret == -FI_EAGAIN && mrlt_pair_poll_ops(&pair))
			break;
	} while (ret == -FI_EAGAIN && ++tries < MRLT_MAX_POLLS);
	return ret;
}

static void *
worker(void *arg)
{
	int t = (int) (intptr_t) arg;
	char *remote = target + (size_t) t * SLOT;
	struct mrlt_op op;

	/* Churn only once the invalidator runs, so the two always overlap. */
	while (!atomic_load(&invalidator_running))
		sched_yield();
	for (int i = 0; i < ITERS; i++) {
		size_t len = sizes[(size_t) (t * 7 + i) %
				   (sizeof(sizes) / sizeof(sizes[0]))];
		uint64_t seed = (uint64_t) t * 100000 + (uint64_t) i;
		char *a = malloc(len), *b = malloc(len);

		if (!a || !b)
			goto fail;
		mrlt_fill(a, len, seed);
		memset(b, 0, len);
		if (post_rma(true, a, len, remote, &op) ||
		    mrlt_op_wait(&pair, &op))
			goto fail;
		if (post_rma(false, b, len, remote, &op) ||
		    mrlt_op_wait(&pair, &op))
			goto fail;
		if (mrlt_verify(b, len, seed) != -1)
			goto fail;
		publish(a, len);
		publish(b, len);
		/* The allocator's purge hook: before the pages go back. */
		pair.mrl->invalidate(a, len);
		pair.mrl->invalidate(b, len);
		free(a);
		free(b);
		continue;
	fail:
		atomic_fetch_add(&failures, 1);
		free(a);
		free(b);
		break;
	}
	atomic_fetch_sub(&workers_left, 1);
	return NULL;
}

static void *
invalidator(void *arg)
{
	unsigned k = 0;

	(void) arg;
	atomic_store(&invalidator_running, 1);
	while (atomic_load(&workers_left) > 0) {
		unsigned i = k++ % RING;
		uintptr_t addr = atomic_load(&ring[i].addr);
		size_t len = atomic_load(&ring[i].len);

		if (addr)
			pair.mrl->invalidate((void *) addr, len);
		if ((k & 63) == 0)
			sched_yield();
	}
	return NULL;
}

/* Every registration must be closed exactly once and none under a
 * transfer, with writes and reads landing intact throughout the churn. */
static void
test_threads_post_over_churn_while_another_invalidates(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA,
				      .thread_safe = true};
	struct fi_mrlease_stats all;
	struct mrcheck_stats chk0 = {0}, chk1 = {0};
	struct mrcheck_ops *chk;
	struct fi_mrlease_ops *mrl;
	pthread_t th[WORKERS + 1];
	int ret;

	ret = mrlt_pair_open(&opts, &pair);
	if (ret == -FI_ENODATA) {
		mrlt_skip(__func__, "tcp;ofi_rxm unavailable");
		return;
	}
	CHECK_FI(ret);
	CHECK_MSG(pair.mrl, "mrlease not stacked (%s unavailable)",
		  FI_MRLEASE_OPS_1);
	mrl = pair.mrl;
	chk = pair.chk_all;
	CHECK_MSG(chk, "mrcheck not stacked");
	CHECK_FI(chk->query(chk, &chk0, sizeof(chk0)));
	target = aligned_alloc(4096, WORKERS * SLOT);
	CHECK(target);
	CHECK_FI(mrlt_pair_mr_reg(&pair, target, WORKERS * SLOT,
				  FI_REMOTE_READ | FI_REMOTE_WRITE,
				  &target_mr));
	atomic_store(&workers_left, WORKERS);
	for (int t = 0; t < WORKERS; t++)
		CHECK(!pthread_create(&th[t], NULL, worker,
				      (void *) (intptr_t) t));
	CHECK(!pthread_create(&th[WORKERS], NULL, invalidator, NULL));
	for (int t = 0; t <= WORKERS; t++)
		pthread_join(th[t], NULL);
	CHECK_EQ(0, atomic_load(&failures));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_EQ(0, mrlt_live_leases(&pair));
	/* The churn really went through the cache: lookups, registrations
	 * beyond the first per buffer, invalidations. */
	CHECK_FI(mrl->query_stats(pair.domain, &all, sizeof(all)));
	printf("# lookups %llu hits %llu registrations %llu invalidations %llu "
	       "retired_leased %llu\n",
	       (unsigned long long) all.lookups, (unsigned long long) all.hits,
	       (unsigned long long) all.registrations,
	       (unsigned long long) all.invalidations,
	       (unsigned long long) all.retired_leased);
	CHECK(all.lookups >= 2 * WORKERS * ITERS);
	CHECK(all.registrations > WORKERS);
	CHECK(all.invalidations > 0);
	CHECK_FI(fi_close(&target_mr->fid));
	CHECK_FI(mrlt_pair_close(&pair));
	free(target);

	/* After the domain closed: every registration closed exactly once. */
	CHECK_FI(chk->query(chk, &chk1, sizeof(chk1)));
	CHECK_EQ(chk1.mr_opened - chk0.mr_opened,
		 chk1.mr_closed - chk0.mr_closed);
	CHECK_EQ(0, chk1.violations - chk0.violations);
	CHECK_FI(mrl->query_stats(NULL, &all, sizeof(all)));
	CHECK_EQ(all.registrations, all.deregistrations);
	CHECK_EQ(0, all.leases);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=0", NULL};

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrcheck;mrlease", env);
	MRLT_RUN(test_threads_post_over_churn_while_another_invalidates);
	return mrlt_done();
}
