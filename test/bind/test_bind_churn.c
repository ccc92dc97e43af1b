/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The churn ring (mrl_bind_churn.h) as a data structure: how many misses a noted
 * range passes, what overlaps, how a new note of the same range doubles it,
 * that old ranges leave the ring, and that concurrent misses never pass
 * more than their share of one note.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "6-bind/mrl_bind_churn.h"
#include "common/mrlt.h"

#define PAGE ((uintptr_t) 4096)
#define BASE ((uintptr_t) 0x7f0000000000)

/* How many of `tries` misses on [lo, hi) pass. */
static unsigned
passes_of(uintptr_t lo, uintptr_t hi, uint64_t passes, unsigned tries)
{
	unsigned n = 0;

	for (unsigned i = 0; i < tries; i++)
		n += mrl_bind_churn_pass(lo, hi, passes);
	return n;
}

static void
test_a_noted_range_passes_exactly_its_count(void)
{
	mrl_bind_churn_reset();
	CHECK_EQ(0u, passes_of(BASE, BASE + PAGE, 3, 10));
	mrl_bind_churn_note(BASE, BASE + 16 * PAGE);
	CHECK_EQ(3u, passes_of(BASE + PAGE, BASE + 2 * PAGE, 3, 10));
}

static void
test_zero_passes_never_pass(void)
{
	mrl_bind_churn_reset();
	mrl_bind_churn_note(BASE, BASE + 16 * PAGE);
	CHECK_EQ(0u, passes_of(BASE, BASE + PAGE, 0, 10));
}

static void
test_only_overlapping_misses_pass(void)
{
	mrl_bind_churn_reset();
	mrl_bind_churn_note(BASE + 4 * PAGE, BASE + 8 * PAGE);
	CHECK(!mrl_bind_churn_pass(BASE, BASE + 4 * PAGE, 8)); /* ends at it */
	CHECK(!mrl_bind_churn_pass(BASE + 8 * PAGE, BASE + 9 * PAGE, 8));
	CHECK(mrl_bind_churn_pass(BASE + 3 * PAGE, BASE + 5 * PAGE, 8));
	CHECK(mrl_bind_churn_pass(BASE + 7 * PAGE, BASE + 12 * PAGE, 8));
	CHECK(mrl_bind_churn_pass(BASE, BASE + 64 * PAGE, 8)); /* covers it */
}

/* A range that churns again after its allowance gets twice as long a one,
 * up to 16 times the base; a new range starts at the base. */
static void
test_noting_the_same_range_again_doubles_its_count(void)
{
	static const unsigned want[] = {2, 4, 8, 16, 32, 32, 32};

	mrl_bind_churn_reset();
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		mrl_bind_churn_note(BASE, BASE + PAGE);
		CHECK_EQ(want[i], passes_of(BASE, BASE + PAGE, 2, 100));
	}
	mrl_bind_churn_note(BASE + PAGE, BASE + 2 * PAGE);
	CHECK_EQ(2u, passes_of(BASE + PAGE, BASE + 2 * PAGE, 2, 100));
}

/* A range pushed out of the ring and noted again starts over. */
static void
test_a_range_back_in_the_ring_starts_at_the_base(void)
{
	mrl_bind_churn_reset();
	for (int i = 0; i < 3; i++)
		mrl_bind_churn_note(BASE, BASE + PAGE);
	CHECK_EQ(8u, passes_of(BASE, BASE + PAGE, 2, 100));
	for (uintptr_t i = 1; i <= 64; i++)
		mrl_bind_churn_note(BASE + 2 * i * PAGE,
				    BASE + (2 * i + 1) * PAGE);
	mrl_bind_churn_note(BASE, BASE + PAGE);
	CHECK_EQ(2u, passes_of(BASE, BASE + PAGE, 2, 100));
}

/* No allowance wraps, however large the base. */
static void
test_a_huge_count_does_not_wrap(void)
{
	mrl_bind_churn_reset();
	for (int i = 0; i < 6; i++)
		mrl_bind_churn_note(BASE, BASE + PAGE);
	CHECK(mrl_bind_churn_pass(BASE, BASE + PAGE, UINT64_MAX / 3));
	CHECK(mrl_bind_churn_pass(BASE, BASE + PAGE, UINT64_MAX));
}

/* The ring holds a bounded number of ranges: enough newer ones push the
 * oldest out, and a miss there is watched again. */
static void
test_old_ranges_leave_the_ring(void)
{
	unsigned kept = 0;

	mrl_bind_churn_reset();
	mrl_bind_churn_note(BASE, BASE + PAGE);
	for (uintptr_t i = 1; i <= 4096; i++)
		mrl_bind_churn_note(BASE + 2 * i * PAGE,
				    BASE + (2 * i + 1) * PAGE);
	CHECK(!mrl_bind_churn_pass(BASE, BASE + PAGE, 8));
	/* The newest ones are still there. */
	for (uintptr_t i = 4096 - 3; i <= 4096; i++)
		kept += mrl_bind_churn_pass(BASE + 2 * i * PAGE,
					    BASE + (2 * i + 1) * PAGE, 8);
	CHECK_EQ(4u, kept);
}

#define RACERS 4
#define PASSES 100

static atomic_uint racer_passed;
static atomic_int racer_go;

static void *
racer(void *arg)
{
	unsigned n;

	(void) arg;
	while (!atomic_load(&racer_go))
		;
	n = passes_of(BASE, BASE + PAGE, PASSES, 1000);
	atomic_fetch_add(&racer_passed, n);
	return NULL;
}

/* Misses racing on one note pass PASSES times in all, not per thread. */
static void
test_concurrent_misses_share_one_count(void)
{
	pthread_t th[RACERS];

	mrl_bind_churn_reset();
	mrl_bind_churn_note(BASE, BASE + PAGE);
	atomic_store(&racer_passed, 0);
	atomic_store(&racer_go, 0);
	for (int i = 0; i < RACERS; i++)
		CHECK_EQ(0, pthread_create(&th[i], NULL, racer, NULL));
	atomic_store(&racer_go, 1);
	for (int i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ((unsigned) PASSES, atomic_load(&racer_passed));
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(test_a_noted_range_passes_exactly_its_count);
	MRLT_RUN(test_zero_passes_never_pass);
	MRLT_RUN(test_only_overlapping_misses_pass);
	MRLT_RUN(test_noting_the_same_range_again_doubles_its_count);
	MRLT_RUN(test_a_range_back_in_the_ring_starts_at_the_base);
	MRLT_RUN(test_a_huge_count_does_not_wrap);
	MRLT_RUN(test_old_ranges_leave_the_ring);
	MRLT_RUN(test_concurrent_misses_share_one_count);
	return mrlt_done();
}
