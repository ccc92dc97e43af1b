/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live statistics under load: four threads write with desc NULL on one
 * FI_THREAD_SAFE tcp;ofi_rxm domain (each its own buffer, invalidated now
 * and then, so misses, registrations and closes keep coming) while a reader
 * maps the process's statistics file again and again. No snapshot may be
 * impossible: a counter never goes back from one snapshot to the next,
 * hits never exceed lookups, leases never go negative (as unsigned: never
 * huge), deregistrations never exceed registrations. Also under
 * ThreadSanitizer (SUITE_CONCURRENCY): the publisher thread's queries race
 * the posting threads by design.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "live_util.h"
#include "common/xfer_util.h"

#define WORKERS 4
#define ITERS	400
#define LEN	(64 * 1024)

static struct mrlt_pair pair;
static struct fid_mr *target_mr;
static char *target;
static atomic_int workers_left, failures;

static ssize_t
post_write(char *buf, char *remote, struct mrlt_op *op)
{
	uint64_t raddr = mrlt_pair_rma_addr(&pair, target, remote);
	ssize_t ret;
	long tries = 0;

	mrlt_op_start(op);
	do {
		ret = fi_write(pair.ep[0], buf, LEN, NULL, pair.addr[1], raddr,
			       fi_mr_key(target_mr), &op->ctx);
		if (ret == -FI_EAGAIN && mrlt_pair_poll_ops(&pair))
			break;
	} while (ret == -FI_EAGAIN && ++tries < MRLT_MAX_POLLS);
	return ret;
}

static void *
worker(void *arg)
{
	int t = (int) (intptr_t) arg;
	char *buf = aligned_alloc(4096, LEN);
	struct mrlt_op op;

	for (int i = 0; buf && i < ITERS; i++) {
		mrlt_fill(buf, LEN, (uint64_t) (t * ITERS + i));
		if (post_write(buf, target + (size_t) t * LEN, &op) ||
		    mrlt_op_wait(&pair, &op)) {
			atomic_fetch_add(&failures, 1);
			break;
		}
		/* A miss, a registration and a close every so often. */
		if (i % 16 == 15)
			pair.mrl->invalidate(buf, LEN);
	}
	if (!buf)
		atomic_fetch_add(&failures, 1);
	free(buf);
	atomic_fetch_sub(&workers_left, 1);
	return NULL;
}

/* What a snapshot of one domain must never show, alone and after the one
 * before it: the first impossibility, or NULL. */
static const char *
impossible(const struct fi_mrlease_stats *s,
	   const struct fi_mrlease_stats *prev)
{
	if (s->hits > s->lookups)
		return "hits > lookups";
	if (s->leases > (UINT64_MAX >> 1))
		return "negative leases";
	if (s->entries > (UINT64_MAX >> 1) ||
	    s->registered_bytes > (UINT64_MAX >> 1))
		return "negative gauge";
	if (s->deregistrations > s->registrations)
		return "deregistrations > registrations";
	if (!prev)
		return NULL;
	if (s->hits < prev->hits)
		return "hits went back";
	if (s->lookups < prev->lookups)
		return "lookups went back";
	if (s->misses < prev->misses)
		return "misses went back";
	if (s->registrations < prev->registrations ||
	    s->deregistrations < prev->deregistrations)
		return "registrations went back";
	if (s->miss_cold + s->miss_invalidated <
	    prev->miss_cold + prev->miss_invalidated)
		return "miss reasons went back";
	return NULL;
}

struct reader {
	unsigned long snapshots, rounds; /* read; distinct publishes seen */
	char why[256];
};

static void *
reader(void *arg)
{
	struct reader *r = arg;
	struct fi_mrlease_stats prev, now;
	struct mrl_live_proc *proc = malloc(sizeof(*proc));
	uint64_t last_round = 0;
	bool have = false;

	while (proc && !r->why[0] && atomic_load(&workers_left) > 0) {
		const char *bad;

		if (mrl_live_read_pid(live_dir(), (int) getpid(), proc) ||
		    proc->ndomains != 1)
			continue;
		memcpy(&now, mrl_live_stats(&proc->dom[0]), sizeof(now));
		bad = impossible(&now, have ? &prev : NULL);
		if (bad)
			snprintf(r->why, sizeof(r->why),
				 "%s: lookups %llu hits %llu leases %llu "
				 "(before: lookups %llu hits %llu)",
				 bad, (unsigned long long) now.lookups,
				 (unsigned long long) now.hits,
				 (unsigned long long) now.leases,
				 (unsigned long long) prev.lookups,
				 (unsigned long long) prev.hits);
		prev = now;
		have = true;
		r->snapshots++;
		if (proc->publishes != last_round)
			r->rounds++;
		last_round = proc->publishes;
	}
	free(proc);
	return NULL;
}

/* mrlease-stat shows a running job: a torn or backwards figure there
 * would send its reader chasing a cache bug that is not there. */
static void
test_snapshots_under_four_posting_threads_are_never_impossible(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm",
				      .caps = FI_MSG | FI_RMA,
				      .thread_safe = true};
	struct fi_mrlease_stats end;
	struct mrl_live_proc *proc = malloc(sizeof(*proc));
	pthread_t th[WORKERS], rd;
	struct reader r = {0};

	CHECK(proc);
	if (!mrlt_pair_open_hooked_safe(&opts, &pair)) {
		free(proc);
		return;
	}
	target = mrlt_alloc(WORKERS * LEN);
	CHECK_FI(mrlt_pair_mr_reg(&pair, target, WORKERS * LEN, FI_REMOTE_WRITE,
				  &target_mr));
	atomic_store(&workers_left, WORKERS);
	/* The file exists once the domain is open: the reader starts on it. */
	CHECK(!pthread_create(&rd, NULL, reader, &r));
	for (int t = 0; t < WORKERS; t++)
		CHECK(!pthread_create(&th[t], NULL, worker,
				      (void *) (intptr_t) t));
	for (int t = 0; t < WORKERS; t++)
		pthread_join(th[t], NULL);
	pthread_join(rd, NULL);
	printf("# %lu snapshots over %lu publishes\n", r.snapshots, r.rounds);
	CHECK_EQ(0, atomic_load(&failures));
	CHECK_MSG(!r.why[0], "%s", r.why);
	CHECK(r.snapshots > 0);

	/* Quiet: the figures published next are the query's. */
	CHECK(live_wait_rounds(getpid(), 2, proc));
	CHECK_EQ(1, proc->ndomains);
	end = mrlt_pair_stats(&pair);
	CHECK(!impossible(mrl_live_stats(&proc->dom[0]), NULL));
	CHECK_EQ(end.lookups, mrl_live_stats(&proc->dom[0])->lookups);
	CHECK_EQ(end.hits, mrl_live_stats(&proc->dom[0])->hits);
	CHECK(end.lookups >= (uint64_t) WORKERS * ITERS);
	CHECK_EQ(0, end.leases);
	free(proc);
	CHECK_FI(fi_close(&target_mr->fid));
	CHECK_FI(mrlt_pair_close(&pair));
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	/* Every millisecond: many rounds during the writes. */
	live_setup(argv, "1");
	MRLT_RUN(
		test_snapshots_under_four_posting_threads_are_never_impossible);
	return mrlt_done();
}
