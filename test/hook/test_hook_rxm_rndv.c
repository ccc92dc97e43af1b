/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The passthrough layer under tcp;ofi_rxm with FI_MR_LOCAL: a two-iov
 * fi_sendv of 40000 bytes from one registration, run in a child process per
 * FI_HOOK setting, compared with the bare provider.
 *
 * Why: libfabric 1.17's rxm turns SAR off when its tcp domain accepts the
 * "ofix_dynamic_rbuf_v2" ops (the bare provider does), so anything above
 * 16 KiB goes by rendezvous. With FI_MR_LOCAL in the application's info rxm
 * puts the application's MR key in the rendezvous header and, since tcp
 * has no FI_MR_VIRT_ADDR, offset 0 for every iov: the receiver reads each
 * iov from the start of the MR, so the second iov arrives holding the
 * first iov's bytes. That is rxm's behaviour with no hook at all. The
 * built-in noop hook hides it only because it refuses the dynamic-rbuf ops
 * (rxm then keeps SAR up to 128 KiB and copies).
 *
 * The passthrough forwards the dynamic-rbuf ops, so it must deliver exactly
 * what the bare provider delivers (and, with the dynamic rbuf turned off,
 * every iov intact).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "common/xfer_util.h"

#define PROV "tcp;ofi_rxm"
#define LEN  40000

/* Child exit codes. */
enum {
	RNDV_INTACT = 0,
	RNDV_SECOND_IOV_HOLDS_FIRST = 10,
	RNDV_OTHER_CORRUPTION = 11,
	RNDV_ERROR = 12,
	RNDV_UNAVAILABLE = 77,
};

static int
child_sendv(void)
{
	struct mrlt_pair_opts opts = {.prov = PROV,
				      .caps = FI_MSG,
				      .mr_local = true};
	struct mrlt_pair pair;
	struct fid_mr *smr = NULL, *rmr = NULL;
	struct fi_context2 ctx[2];
	struct mrlt_comp comp[2];
	char *src, *dst;
	int ret, result = RNDV_ERROR;

	if (mrlt_pair_open(&opts, &pair))
		return RNDV_UNAVAILABLE;
	src = aligned_alloc(4096, 64 * 1024);
	dst = aligned_alloc(4096, 64 * 1024);
	if (!src || !dst)
		goto out;
	if (mrlt_pair_mr_reg(&pair, src, LEN, FI_SEND, &smr) ||
	    mrlt_pair_mr_reg(&pair, dst, LEN, FI_RECV, &rmr))
		goto out;
	{
		struct iovec iov[2] = {{src, LEN / 2},
				       {src + LEN / 2, LEN / 2}};
		void *desc[2] = {fi_mr_desc(smr), fi_mr_desc(smr)};

		mrlt_fill(src, LEN, 7);
		memset(dst, 0, LEN);
		if (MRLT_PAIR_POST(&pair, fi_recv(pair.ep[1], dst, LEN,
						  fi_mr_desc(rmr), pair.addr[0],
						  &ctx[1])) ||
		    MRLT_PAIR_POST(&pair, fi_sendv(pair.ep[0], iov, desc, 2,
						   pair.addr[1], &ctx[0])))
			goto out;
	}
	ret = mrlt_reap(&pair, comp, 2);
	if (ret != 2 || comp[0].err || comp[1].err)
		goto out;
	if (mrlt_verify(dst, LEN, 7) == -1)
		result = RNDV_INTACT;
	else if (!memcmp(dst + LEN / 2, src, LEN / 2))
		result = RNDV_SECOND_IOV_HOLDS_FIRST;
	else
		result = RNDV_OTHER_CORRUPTION;
out:
	if (rmr && fi_close(&rmr->fid))
		result = RNDV_ERROR;
	if (smr && fi_close(&smr->fid))
		result = RNDV_ERROR;
	if (mrlt_pair_close(&pair))
		result = RNDV_ERROR;
	free(src);
	free(dst);
	return result;
}

static char *self;

/* Runs the child under FI_HOOK=hook (NULL-terminated extra environment). */
static int
run_child(const char *hook, const char *const *env)
{
	char *argv[] = {self, (char *) "--child", NULL};
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		xfer_reexec(argv, hook, env); /* does not return */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static const char *
describe(int r)
{
	switch (r) {
	case RNDV_INTACT:
		return "every iov intact";
	case RNDV_SECOND_IOV_HOLDS_FIRST:
		return "second iov holds the first iov's bytes (rxm 1.17 "
		       "rendezvous, "
		       "FI_MR_LOCAL, no FI_MR_VIRT_ADDR)";
	case RNDV_OTHER_CORRUPTION:
		return "other corruption";
	case RNDV_UNAVAILABLE:
		return "provider unavailable";
	default:
		return "error";
	}
}

/* Fails if the passthrough changes what rxm does with FI_MR_LOCAL (e.g. by
 * dropping the dynamic-rbuf ops, or by forwarding iovs/descs differently). */
static void
test_passthrough_two_iov_rendezvous_sendv_matches_bare_provider(void)
{
	static const char *const off[] = {"FI_MRCHECK_OFF=1", NULL};
	static const char *const lease[] = {"FI_MRLEASE_MIN_SIZE=1G", NULL};
	int bare = run_child("", NULL);
	int pass, mrl;

	if (bare == RNDV_UNAVAILABLE) {
		mrlt_skip_current(PROV " unavailable");
		return;
	}
	pass = run_child("mrcheck", off);
	mrl = run_child("mrlease", lease);
	printf("# bare: %s; passthrough: %s; mrlease: %s\n", describe(bare),
	       describe(pass), describe(mrl));
	CHECK(bare == RNDV_INTACT || bare == RNDV_SECOND_IOV_HOLDS_FIRST);
	CHECK_EQ(bare, pass);
	CHECK_EQ(bare, mrl);
}

/* Fails if the passthrough loses an iov of a multi-iov send on rxm's
 * copying (SAR) path. */
static void
test_passthrough_two_iov_sar_sendv_delivers_every_iov(void)
{
	static const char *const env[] = {"FI_MRCHECK_OFF=1",
					  "FI_OFI_RXM_ENABLE_DYN_RBUF=0", NULL};
	int r = run_child("mrcheck", env);

	if (r == RNDV_UNAVAILABLE) {
		mrlt_skip_current(PROV " unavailable");
		return;
	}
	printf("# passthrough, dynamic rbuf off: %s\n", describe(r));
	CHECK_EQ(RNDV_INTACT, r);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_sendv();
	self = argv[0];
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(
		test_passthrough_two_iov_rendezvous_sendv_matches_bare_provider);
	MRLT_RUN(test_passthrough_two_iov_sar_sendv_delivers_every_iov);
	return mrlt_done();
}
