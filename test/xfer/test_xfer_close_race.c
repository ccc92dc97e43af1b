/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint close racing a completion on a shared (FI_THREAD_SAFE) pool: one
 * thread reads the CQ while another closes the endpoint whose leased
 * operation that read is completing. The completer changes the op's state
 * and then pushes it back onto the endpoint's pool; a close in between must
 * not free the pool under it (ASan reports the push as a use after free).
 *
 * The window is a few instructions, so the test makes it wide without
 * sleeping: the completion is a hidden one (FI_SELECTIVE_COMPLETION, no
 * FI_COMPLETION asked), which takes the out-of-line mrl_xfer_op_complete, and the
 * endpoint's test hook (MRL_XFER_CTL_TEST_COMPLETING, mrl_xfer_ctl.h) holds
 * the completer inside that window until the main thread's fi_close
 * returned.
 * A second test runs the natural race (no hook) many times, for TSan, on
 * the providers that survive it without mrlease.
 *
 * Runs itself again with FI_HOOK=mrlease and FI_MRLEASE_MIN_SIZE=64.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "7-xfer/mrl_xfer_ctl.h"
#include "common/xfer_util.h"

#define LEN 4096

static const char *prov;

enum phase {
	PHASE_READING, /* the reader polls; the write is in flight */
	PHASE_STALLED, /* the completer is inside the window */
	PHASE_CLOSED, /* the endpoint's fi_close returned */
};

struct race {
	struct mrlt_pair *p;
	atomic_int phase;
	atomic_bool stop;
	atomic_long stalls; /* times the hook ran */
	long entries, errors; /* read by the reader thread */
};

/* The test hook, on the completing (reader) thread. */
static void
hold_completer(void *arg)
{
	struct race *r = arg;

	atomic_fetch_add(&r->stalls, 1);
	atomic_store(&r->phase, PHASE_STALLED);
	(void) mrlt_wait_until_int(&r->phase, PHASE_CLOSED);
}

static void *
reader(void *arg)
{
	struct race *r = arg;
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err;

	while (!atomic_load(&r->stop)) {
		ssize_t n = fi_cq_read(r->p->cq, e, 8);

		if (n > 0) {
			r->entries += n;
		} else if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(r->p->cq, &err, 0) > 0)
				r->errors++;
		}
	}
	return NULL;
}

static bool
pair_open(struct mrlt_pair *p)
{
	struct mrlt_pair_opts opts = {
		.prov = prov,
		.selective = true,
		.thread_safe = true,
	};

	return mrlt_pair_open_hooked_safe(&opts, p);
}

/*
 * One round: a leased write whose completion is hidden, a reader thread
 * polling the CQ, and ep[0] closed while the completer is held between the
 * op's state change and its push (stall) or right after the post (!stall).
 */
static void
close_during_completion(bool stall, int rounds)
{
	char *src = NULL, *tgt = NULL;
	long stalled = 0, entries = 0;

	if (posix_memalign((void **) &src, 4096, LEN) ||
	    posix_memalign((void **) &tgt, 4096, LEN))
		abort();
	mrlt_fill(src, LEN, 7);
	for (int round = 0; round < rounds && !mrlt_failed(); round++) {
		struct mrlt_pair p;
		struct fid_mr *mr = NULL;
		struct fi_context2 ctx;
		struct race r = {.p = &p};
		struct mrl_xfer_test_completing hook = {
			.fn = hold_completer,
			.arg = &r,
		};
		pthread_t th;

		if (!pair_open(&p))
			break;
		atomic_init(&r.phase, PHASE_READING);
		atomic_init(&r.stop, false);
		atomic_init(&r.stalls, 0);
		memset(tgt, 0, LEN);
		CHECK_FI(mrlt_pair_mr_reg(&p, tgt, LEN, FI_REMOTE_WRITE, &mr));
		if (stall)
			CHECK_FI(fi_control(&p.ep[0]->fid,
					    MRL_XFER_CTL_TEST_COMPLETING,
					    &hook));
		/* No FI_COMPLETION: the op's completion is hidden. */
		CHECK_FI(MRLT_PAIR_POST(
			&p, fi_write(p.ep[0], src, LEN, NULL, p.addr[1],
				     mrlt_pair_rma_addr(&p, tgt, tgt),
				     fi_mr_key(mr), &ctx)));
		CHECK_EQ(0, pthread_create(&th, NULL, reader, &r));
		if (stall)
			(void) mrlt_wait_until_int(&r.phase, PHASE_STALLED);
		CHECK_EQ(0, fi_close(&p.ep[0]->fid));
		p.ep[0] = NULL;
		atomic_store(&r.phase, PHASE_CLOSED);
		atomic_store(&r.stop, true);
		CHECK_EQ(0, pthread_join(th, NULL));
		stalled += atomic_load(&r.stalls);
		entries += r.entries;
		/* Hidden completions never reach the application. */
		CHECK_EQ(0, r.entries);
		CHECK_EQ(0, r.errors);
		CHECK_EQ(0, mrlt_live_leases(&p));
		if (mr)
			CHECK_EQ(0, fi_close(&mr->fid));
		CHECK_EQ(0, mrlt_pair_close(&p));
	}
	if (stall)
		CHECK_EQ(rounds, stalled);
	printf("# %s: %d rounds, completer held in the window %ld times\n",
	       prov, rounds, stalled);
	free(src);
	free(tgt);
}

/* The endpoint closes while a CQ reader is between a leased op's state
 * change and its return to the pool: freeing the pool there made the
 * reader push onto freed memory (use after free under ASan). */
static void
test_ep_close_waits_out_a_completion_inside_the_window(void)
{
	close_during_completion(true, 5);
}

/* The same race left to the scheduler, many times (TSan sees the pool's
 * accesses from both threads): every round closes cleanly and no lease
 * stays live. */
static void
test_ep_close_right_after_post_with_a_cq_reader_is_clean(void)
{
	close_during_completion(false, 20);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=64", NULL};
	/* The natural race only where libfabric 1.17 itself survives an
	 * endpoint closing under a concurrent CQ read (seen here, also
	 * without mrlease for rxm): rxm crashes in its progress, rxd's
	 * progress reads the datagram CQ its endpoint close just closed
	 * (ASan), shm closes a socket another thread's progress sends on
	 * (TSan). */
	static const struct {
		const char *prov;
		const char *no_natural;
	} provs[] = {
		{"tcp;ofi_rxm", "rxm 1.17 crashes in progress when an endpoint "
				"closes under a concurrent CQ read"},
		{"sockets", NULL},
		{"shm", "shm 1.17 closes a socket a concurrent CQ read sends "
			"on (TSan)"},
		{"udp;ofi_rxd", "rxd 1.17 progress reads the CQ its endpoint "
				"close closed (ASan)"},
	};
	char prefix[128];

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrlease", env);
	for (size_t i = 0; i < sizeof(provs) / sizeof(provs[0]); i++) {
		prov = provs[i].prov;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(
			test_ep_close_waits_out_a_completion_inside_the_window);
		if (!provs[i].no_natural)
			MRLT_RUN(
				test_ep_close_right_after_post_with_a_cq_reader_is_clean);
		else
			mrlt_skip("test_ep_close_right_after_post_with_a_"
				  "cq_reader_is_clean",
				  provs[i].no_natural);
	}
	return mrlt_done();
}
