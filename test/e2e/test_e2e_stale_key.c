/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The checker's remote keys (FI_MRCHECK_FRAMES=1) under the suite's stack
 * FI_HOOK='mrcheck;mrlease', on every loopback provider: a peer's RMA or
 * atomic whose key belongs to a registration of this process has its
 * target pages compared with those recorded at registration. A pinning
 * provider serves a key with the frames it pinned, so a key that outlived
 * its memory (munmap, then mmap at the same address) lets the peer write
 * into pages the process no longer has; over tcp nothing fails, and only
 * the checker can show it. Without this, a remote-key cache that keeps
 * keys past their memory passes every test.
 *
 * The target is a memfd mapping: after it is replaced, its old pages stay
 * in the file (as a pinning provider would hold them), so the new
 * anonymous pages can never land on the old frames and a fresh key is
 * never mistaken for a stale one.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#define TARGET_LEN (4 * 4096)

static const char *prov;

/* A registration for remote access whose pages were then replaced. */
struct target {
	char *buf;
	int fd;
	struct fid_mr *mr;
	uint64_t key;
};

static struct mrcheck_stats
stats_of(struct mrlt_pair *pair)
{
	struct mrcheck_stats st = {0};

	pair->chk_all->query(pair->chk_all, &st, sizeof(st));
	return st;
}

/* Open the pair for the current case; false (the case skipped or failed)
 * when it cannot run here. */
static bool
open_pair(struct mrlt_pair *pair)
{
	struct mrlt_pair_opts opts = {.prov = prov};
	struct mrcheck_stats st;

	if (!mrlt_pair_open_hooked(&opts, pair))
		return false;
	if (!pair->chk_all) {
		mrlt_pair_close(pair);
		mrlt_fail(__FILE__, __LINE__, "mrcheck not stacked");
		return false;
	}
	st = stats_of(pair);
	if (!st.frames_supported) {
		mrlt_pair_close(pair);
		mrlt_skip_current("%s",
				  st.frames_enabled ?
					  "/proc/self/pagemap gives no frame "
					  "numbers (needs CAP_SYS_ADMIN)" :
					  "FI_MRCHECK_FRAMES is not set");
		return false;
	}
	return true;
}

/* Register a memfd mapping for remote access, then put fresh anonymous
 * pages at its address (mmap MAP_FIXED over it), filled with zeros. */
static int
target_replaced(struct mrlt_pair *pair, struct target *t)
{
	void *at;
	int ret;

	memset(t, 0, sizeof(*t));
	t->fd = memfd_create("stale_key", MFD_CLOEXEC);
	if (t->fd < 0 || ftruncate(t->fd, TARGET_LEN))
		return -FI_ENOMEM;
	t->buf = mmap(NULL, TARGET_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
		      t->fd, 0);
	if (t->buf == MAP_FAILED)
		return -FI_ENOMEM;
	memset(t->buf, 0x5a, TARGET_LEN);
	ret = mrlt_pair_mr_reg(pair, t->buf, TARGET_LEN,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, &t->mr);
	if (ret)
		return ret;
	t->key = fi_mr_key(t->mr);
	if (munmap(t->buf, TARGET_LEN))
		return -FI_EINVAL;
	/* Never over what another thread may have mapped there meanwhile. */
	at = mmap(t->buf, TARGET_LEN, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (at != t->buf)
		return -FI_ENOMEM;
	memset(t->buf, 0, TARGET_LEN);
	return 0;
}

static int
target_close(struct target *t)
{
	int ret = t->mr ? fi_close(&t->mr->fid) : 0;

	if (t->buf && t->buf != MAP_FAILED)
		munmap(t->buf, TARGET_LEN);
	if (t->fd > 0)
		close(t->fd);
	return ret;
}

/* Read the one completion of the post just made (no error). */
static void
reap_one(struct mrlt_pair *pair, void *ctx)
{
	struct mrlt_comp comp;

	CHECK_EQ(1, mrlt_reap(pair, &comp, 1));
	CHECK_PTR(ctx, comp.ctx);
	CHECK_EQ(0, comp.err);
}

enum op {
	OP_WRITE,
	OP_READ,
	OP_INJECT_WRITE,
	OP_ATOMIC,
};

/*
 * Replace the target's pages, post op with the old key from ep[0] to ep[1],
 * let it finish, and check the checker reported exactly one stale remote
 * key (acknowledged, so the fabric closes) and nothing else.
 */
static void
stale_key_reported(enum op op)
{
	char src[TARGET_LEN], dst[TARGET_LEN];
	struct mrcheck_stats before, after;
	struct fi_context2 ctx;
	struct mrlt_pair pair;
	struct target t;
	uint64_t rma, one = 1;
	size_t n = 0;

	if (!open_pair(&pair))
		return;
	if (op == OP_ATOMIC &&
	    (fi_atomicvalid(pair.ep[0], FI_UINT64, FI_SUM, &n) || !n)) {
		mrlt_pair_close(&pair);
		mrlt_skip_current("no FI_UINT64 FI_SUM atomics over %s", prov);
		return;
	}
	CHECK_FI(target_replaced(&pair, &t));
	rma = mrlt_pair_rma_addr(&pair, t.buf, t.buf);
	mrlt_fill(src, sizeof(src), 41);
	before = stats_of(&pair);
	switch (op) {
	case OP_WRITE:
		CHECK_FI(MRLT_PAIR_POST(
			&pair, fi_write(pair.ep[0], src, TARGET_LEN, NULL,
					pair.addr[1], rma, t.key, &ctx)));
		reap_one(&pair, &ctx);
		break;
	case OP_READ:
		CHECK_FI(MRLT_PAIR_POST(
			&pair, fi_read(pair.ep[0], dst, TARGET_LEN, NULL,
				       pair.addr[1], rma, t.key, &ctx)));
		reap_one(&pair, &ctx);
		break;
	case OP_INJECT_WRITE:
		CHECK_FI(MRLT_PAIR_POST(&pair, fi_inject_write(pair.ep[0], src,
							       8, pair.addr[1],
							       rma, t.key)));
		/* No completion: the bytes arriving say it is over. */
		CHECK_EQ(-1, mrlt_wait_pattern(&pair, t.buf, 8, 41));
		break;
	case OP_ATOMIC:
		CHECK_FI(MRLT_PAIR_POST(&pair,
					fi_atomic(pair.ep[0], &one, 1, NULL,
						  pair.addr[1], rma, t.key,
						  FI_UINT64, FI_SUM, &ctx)));
		reap_one(&pair, &ctx);
		break;
	}
	after = stats_of(&pair);
	CHECK_EQ(before.by_kind[MRCHECK_STALE_REMOTE_KEY] + 1,
		 after.by_kind[MRCHECK_STALE_REMOTE_KEY]);
	CHECK_EQ(before.violations + 1, after.violations);
	CHECK_EQ(1, pair.chk_all->acknowledge(pair.chk_all));
	CHECK_FI(target_close(&t));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
}

/* A peer writing with a key whose pages were unmapped and mapped again
 * writes, on a pinning provider, into pages the process no longer has. */
static void
test_a_write_with_the_key_of_replaced_pages_is_reported_stale(void)
{
	stale_key_reported(OP_WRITE);
}

/* ... and a read with it returns the old pages' bytes. */
static void
test_a_read_with_the_key_of_replaced_pages_is_reported_stale(void)
{
	stale_key_reported(OP_READ);
}

/* Inject calls need no local desc, but their target is a key like any
 * other. */
static void
test_an_inject_write_with_the_key_of_replaced_pages_is_reported_stale(void)
{
	stale_key_reported(OP_INJECT_WRITE);
}

static void
test_an_atomic_with_the_key_of_replaced_pages_is_reported_stale(void)
{
	stale_key_reported(OP_ATOMIC);
}

/* The right use after a replacement: register the new pages and give the
 * peer their key. The checker compares the target and stays silent, and
 * the bytes land in the new pages. */
static void
test_a_write_with_the_key_of_the_new_pages_lands_there_unreported(void)
{
	struct mrcheck_stats before, after;
	struct fid_mr *fresh = NULL;
	char src[TARGET_LEN];
	struct fi_context2 ctx;
	struct mrlt_pair pair;
	struct target t;

	if (!open_pair(&pair))
		return;
	CHECK_FI(target_replaced(&pair, &t));
	CHECK_FI(fi_close(&t.mr->fid));
	t.mr = NULL;
	CHECK_FI(mrlt_pair_mr_reg(&pair, t.buf, TARGET_LEN,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &fresh));
	mrlt_fill(src, sizeof(src), 43);
	before = stats_of(&pair);
	CHECK_FI(MRLT_PAIR_POST(
		&pair, fi_write(pair.ep[0], src, TARGET_LEN, NULL, pair.addr[1],
				mrlt_pair_rma_addr(&pair, t.buf, t.buf),
				fi_mr_key(fresh), &ctx)));
	reap_one(&pair, &ctx);
	after = stats_of(&pair);
	CHECK_EQ(-1, mrlt_wait_pattern(&pair, t.buf, TARGET_LEN, 43));
	CHECK_EQ(before.violations, after.violations);
	CHECK_EQ(before.frames_remote_checked + TARGET_LEN / 4096,
		 after.frames_remote_checked);
	CHECK_FI(fi_close(&fresh->fid));
	CHECK_FI(target_close(&t));
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_FI(mrlt_pair_close(&pair));
}

static void
run_provider(const char *name)
{
	char label[160];

	prov = name;
	printf("# provider %s\n", name);
	fflush(stdout);
#define RUN(fn)                                                      \
	do {                                                         \
		snprintf(label, sizeof(label), "%s[%s]", #fn, name); \
		mrlt_run(label, fn);                                 \
	} while (0)
	RUN(test_a_write_with_the_key_of_replaced_pages_is_reported_stale);
	RUN(test_a_read_with_the_key_of_replaced_pages_is_reported_stale);
	RUN(test_an_inject_write_with_the_key_of_replaced_pages_is_reported_stale);
	RUN(test_an_atomic_with_the_key_of_replaced_pages_is_reported_stale);
	RUN(test_a_write_with_the_key_of_the_new_pages_lands_there_unreported);
#undef RUN
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRCHECK_FRAMES=1",
					  "FI_MRLEASE_MIN_SIZE=0", NULL};

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrcheck;mrlease", env);
	for (const char *const *p = xfer_providers; *p; p++)
		run_provider(*p);
	return mrlt_done();
}
