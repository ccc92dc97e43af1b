/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pins in real transfers under the strict checker (FI_HOOK='mrcheck;mrlease',
 * mrcheck below mrlease, acting as a provider that requires FI_MR_LOCAL and
 * fails on an MR closed under an operation): a pin's descriptor is a live
 * registration covering the operand, operands inside a pin are served by
 * it, and closing a pin while a transfer still uses its registration keeps
 * that registration open until the transfer completes.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#define ARENA (256 * 1024)

static struct mrlt_pair pair;
static char *arena, *target;
static struct fid_mr *target_mr;
static size_t page;

static struct fi_mrlease_stats
stats(void)
{
	struct fi_mrlease_stats s;

	memset(&s, 0xff, sizeof(s));
	if (pair.mrl->query_stats(pair.domain, &s, sizeof(s)))
		mrlt_fail(__FILE__, __LINE__, "query_stats failed");
	return s;
}

/* A pair with a page-aligned source arena and a remote-writable target. */
static int
fixture_open(void)
{
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm"};
	int ret;

	ret = mrlt_pair_open(&opts, &pair);
	if (ret)
		return ret;
	/* mrcheck sits below mrlease, so only its process-wide counters
	 * (chk_all) are reachable, which is what mrlt_violations reads. */
	if (!pair.mrl || !pair.chk_all)
		return -FI_ENOSYS;
	if (posix_memalign((void **) &arena, page, ARENA) ||
	    posix_memalign((void **) &target, page, ARENA))
		return -FI_ENOMEM;
	return mrlt_pair_mr_reg(&pair, target, ARENA, FI_REMOTE_WRITE,
				&target_mr);
}

static void
fixture_close(void)
{
	if (target_mr && fi_close(&target_mr->fid))
		mrlt_fail(__FILE__, __LINE__, "closing the target MR failed");
	target_mr = NULL;
	if (mrlt_pair_close(&pair))
		mrlt_fail(__FILE__, __LINE__, "closing the pair failed");
	free(arena);
	free(target);
	arena = target = NULL;
}

/* fi_write [src, src + len) (desc as given) to the same offset of target. */
static ssize_t
post_write(const char *src, size_t len, void *desc, void *ctx)
{
	return MRLT_PAIR_POST(
		&pair, fi_write(pair.ep[0], src, len, desc, pair.addr[1],
				mrlt_pair_rma_addr(&pair, target,
						   target + (src - arena)),
				fi_mr_key(target_mr), ctx));
}

/* What the checker saw must be nothing wrong, and the bytes must land. */
static void
check_landed(const char *src, size_t len, uint64_t seed)
{
	CHECK_EQ(-1,
		 mrlt_wait_pattern(&pair, target + (src - arena), len, seed));
	CHECK_EQ(0, mrlt_violations(&pair));
}

/* fi_mr_desc on a pin is a live registration covering the operand: a
 * provider requiring FI_MR_LOCAL (the checker) accepts it. A desc that
 * were the hook's own wrapper, or a closed MR, would fault on verbs. */
static void
test_pin_descriptor_is_accepted_by_a_strict_provider(void)
{
	struct mrlt_comp comp;
	struct fid_mr *pin;
	int ctx;

	CHECK_FI(pair.mrl->pin(pair.domain, arena, ARENA, &pin));
	mrlt_fill(arena + 5 * page + 3, 50000, 11);
	CHECK_FI(
		post_write(arena + 5 * page + 3, 50000, fi_mr_desc(pin), &ctx));
	CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
	CHECK_PTR(&ctx, comp.ctx);
	CHECK_EQ(0, comp.err);
	check_landed(arena + 5 * page + 3, 50000, 11);
	CHECK_EQ(0, fi_close(&pin->fid));
}

/* A NULL-descriptor operand inside a pinned arena is a hit on the pin:
 * the point of pinning is no registration on the hot path. */
static void
test_null_desc_operand_inside_a_pin_uses_the_pin(void)
{
	struct fi_mrlease_stats pinned, after;
	struct mrlt_comp comp;
	struct fid_mr *pin;
	int ctx;

	CHECK_FI(pair.mrl->pin(pair.domain, arena, ARENA, &pin));
	pinned = stats();
	for (int i = 0; i < 8; i++) {
		char *src = arena + (size_t) i * 7 * page + 100;

		mrlt_fill(src, 9000, 20 + i);
		CHECK_FI(post_write(src, 9000, NULL, &ctx));
		CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
		CHECK_EQ(0, comp.err);
		check_landed(src, 9000, 20 + i);
	}
	after = stats();
	CHECK_EQ(pinned.registrations, after.registrations);
	CHECK(after.hits >= pinned.hits + 8);
	CHECK_EQ(0, after.leases - pinned.leases);
	CHECK_EQ(0, fi_close(&pin->fid));
}

/* The crash leases prevent, through the public API: the pin is released (as an
 * allocator would drop an arena) while a transfer leasing its registration
 * is in flight. The registration must outlive the pin until the transfer
 * completes; the checker fails the test if it closes earlier. */
static void
test_pin_closed_under_an_inflight_transfer_stays_registered(void)
{
	struct fi_mrlease_stats pinned, released, done;
	struct mrlt_comp comp;
	struct fid_mr *pin;
	int ctx;

	CHECK_FI(pair.mrl->pin(pair.domain, arena, ARENA, &pin));
	pinned = stats();
	mrlt_fill(arena + page, 100000, 31);
	CHECK_FI(post_write(arena + page, 100000, NULL, &ctx));

	CHECK_EQ(0, fi_close(&pin->fid));
	released = stats();
	CHECK_EQ(pinned.entries - 1, released.entries);
	CHECK_EQ(pinned.deregistrations, released.deregistrations);

	CHECK_EQ(1, mrlt_reap(&pair, &comp, 1));
	CHECK_EQ(0, comp.err);
	check_landed(arena + page, 100000, 31);
	done = stats();
	CHECK_EQ(released.deregistrations + 1, done.deregistrations);
	CHECK_EQ(0, done.leases);
}

/* Each test gets a fresh pair: open it, run the test, close everything. */
static void (*current)(void);

static void
with_fixture(void)
{
	int ret = fixture_open();

	if (ret == -FI_ENODATA)
		mrlt_skip_current("tcp;ofi_rxm is not available");
	else if (ret)
		mrlt_fail(__FILE__, __LINE__,
			  "fixture: %s (mrlease %s, "
			  "mrcheck %s)",
			  fi_strerror(-ret), pair.mrl ? "on" : "off",
			  pair.chk_all ? "on" : "off");
	else
		current();
	fixture_close();
}

#define RUN(fn) (current = fn, mrlt_run(#fn, with_fixture))

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=0", NULL};

	mrlt_select(argc - 1, argv + 1);
	page = (size_t) sysconf(_SC_PAGESIZE);
	xfer_reexec(argv, "mrcheck;mrlease", env);
	RUN(test_pin_descriptor_is_accepted_by_a_strict_provider);
	RUN(test_null_desc_operand_inside_a_pin_uses_the_pin);
	RUN(test_pin_closed_under_an_inflight_transfer_stays_registered);
	return mrlt_done();
}
