/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Failures injected below mrlease (mrcheck's FI_MRCHECK_FAULT_*, see
 * prov/mrcheck/include/mrcheck.h) over tcp;ofi_rxm with
 * FI_HOOK='mrcheck;mrlease' and FI_MRLEASE_MIN_SIZE=0, so every NULL descriptor
 * goes through the lease cache and every registration it makes can fail.
 *
 * One case per run (libfabric and mrcheck read their settings once per
 * process); the program re-executes itself with the case's environment:
 *   stress       registrations, posts and completions fail at random while
 *                threads post NULL-descriptor fi_write, fi_read and
 *                fi_send/fi_recv pairs over churned buffers (every other
 *                read into an MR the application registers itself);
 *   close        the application's MR, endpoints and domain refuse their
 *                first close (FI_MRCHECK_FAULT_CLOSE_ONCE=mr_remote,ep,domain);
 *   refused_domain  the provider itself refuses a domain close (sockets,
 *                endpoints open), no fault injected;
 *   close_cache  every MR refuses its first close, the cache's own
 *                registrations included (FI_MRCHECK_FAULT_CLOSE_ONCE=mr).
 * FI_MRCHECK_FAULT_SEED, when set, replaces the stress case's seed.
 * test/e2e/fault_stress.sh runs the cases of the suite.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"

#define PROV "tcp;ofi_rxm"

/* ------------------------------------------------------------------ */
/* Failures seen by any thread: the first one's text is kept.          */
/* ------------------------------------------------------------------ */

static atomic_long failures;
static pthread_mutex_t why_lock = PTHREAD_MUTEX_INITIALIZER;
static char why[512];

static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
failed(const char *fmt, ...)
{
	va_list args;

	if (atomic_fetch_add(&failures, 1))
		return;
	pthread_mutex_lock(&why_lock);
	va_start(args, fmt);
	vsnprintf(why, sizeof(why), fmt, args);
	va_end(args);
	pthread_mutex_unlock(&why_lock);
}

/* ------------------------------------------------------------------ */
/* stress                                                               */
/* ------------------------------------------------------------------ */

#define WORKERS 3
#define ITERS	150
#define SLOT	(256u * 1024)
#define MSG_MAX 200000
#define HEADER	16
/* An application retries a post refused for lack of resources; bounded. */
#define RESOURCE_RETRIES 10000

enum op_kind { OP_WRITE, OP_READ, OP_SEND, OP_RECV, OP_KINDS };

static const char *const op_name[OP_KINDS] = {"fi_write", "fi_read", "fi_send",
					      "fi_recv"};
static const uint64_t op_flag[OP_KINDS] = {FI_WRITE, FI_READ, FI_SEND, FI_RECV};

/* Sizes on both sides of rxm's eager limit. */
static const size_t sizes[] = {64, 1000, 4096, 20000, 70000, 200000};

/* One operation of one worker, posted as its context. */
struct op {
	struct fi_context2 ctx;
	enum op_kind kind;
	atomic_int done;
	int err; /* positive FI_E* of its error entry, 0 */
	size_t len; /* the completion's len */
};

struct tally {
	uint64_t eagain; /* posts retried on -FI_EAGAIN */
	uint64_t surfaced[MRCHECK_FAULT_CODES]; /* posts failed with a
						 * registration's code */
	uint64_t verified[OP_KINDS]; /* completed and checked */
	uint64_t app_mrs, app_mrs_refused; /* the application's own */
};

static struct mrlt_pair pair;
static char *target;
static struct fid_mr *target_mr;
static struct op ops[WORKERS][OP_KINDS];
static struct tally tallies[WORKERS];
static atomic_long errors_read;
static atomic_int started;

/* The op a completion names, which must be one of ours and of the kind
 * its flags say; NULL (and a failure) otherwise. */
static struct op *
op_of(void *ctx, uint64_t flags, const char *what)
{
	struct op *op = ctx;

	if (op < &ops[0][0] || op >= &ops[0][0] + WORKERS * OP_KINDS ||
	    (uintptr_t) ((char *) op - (char *) &ops[0][0]) % sizeof(*op)) {
		failed("%s with context %p, not an operation of this test",
		       what, ctx);
		return NULL;
	}
	if (!(flags & op_flag[op->kind])) {
		failed("%s of %s with flags %#llx", what, op_name[op->kind],
		       (unsigned long long) flags);
		return NULL;
	}
	return op;
}

/* An error entry: only injected ones may come, with the op's context. */
static void
read_error(void)
{
	struct fi_cq_err_entry err = {0};
	struct op *op;
	ssize_t n = fi_cq_readerr(pair.cq, &err, 0);

	if (n == -FI_EAGAIN) /* another thread took it */
		return;
	if (n != 1) {
		failed("fi_cq_readerr: %zd (%s)", n, fi_strerror((int) -n));
		return;
	}
	op = op_of(err.op_context, err.flags, "error entry");
	if (!op)
		return;
	if (err.err != FI_EIO || err.prov_errno != MRCHECK_FAULT_PROV_ERRNO) {
		failed("%s: error entry err %d prov_errno %d, not an injected "
		       "one",
		       op_name[op->kind], err.err, err.prov_errno);
		return;
	}
	atomic_fetch_add(&errors_read, 1);
	op->err = err.err;
	atomic_store(&op->done, 1);
}

/* Read what the shared CQ has and mark those operations done. */
static void
poll_cq(void)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n = fi_cq_read(pair.cq, e, 8);

	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		read_error();
		return;
	}
	if (n < 0) {
		failed("fi_cq_read: %s", fi_strerror((int) -n));
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		struct op *op =
			op_of(e[i].op_context, e[i].flags, "completion");

		if (!op)
			continue;
		op->len = e[i].len;
		op->err = 0;
		atomic_store(&op->done, 1);
	}
}

/* 1: completed; 0: completed as an error entry; -1: no completion in time. */
static int
wait_op(struct op *op)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	while (!atomic_load(&op->done)) {
		if (mrlt_wait_over(&w)) {
			failed("%s: no completion in time", op_name[op->kind]);
			return -1;
		}
		poll_cq();
	}
	return op->err ? 0 : 1;
}

static enum mrcheck_fault_code
code_of(ssize_t ret)
{
	switch (ret) {
	case -FI_ENOMEM:
		return MRCHECK_FAULT_ENOMEM;
	case -FI_ENOKEY:
		return MRCHECK_FAULT_ENOKEY;
	case -FI_ENOSPC:
		return MRCHECK_FAULT_ENOSPC;
	default:
		return MRCHECK_FAULT_CODES;
	}
}

static ssize_t
post_once(struct op *op, void *buf, size_t len, void *desc, uint64_t raddr)
{
	void *ctx = &op->ctx;

	switch (op->kind) {
	case OP_WRITE:
		return fi_write(pair.ep[0], buf, len, NULL, pair.addr[1], raddr,
				fi_mr_key(target_mr), ctx);
	case OP_READ:
		return fi_read(pair.ep[0], buf, len, desc, pair.addr[1], raddr,
			       fi_mr_key(target_mr), ctx);
	case OP_SEND:
		return fi_send(pair.ep[0], buf, len, NULL, pair.addr[1], ctx);
	default:
		return fi_recv(pair.ep[1], buf, len, NULL, FI_ADDR_UNSPEC, ctx);
	}
}

/*
 * Post as an application would: retried while -FI_EAGAIN (progressing the
 * CQ), and, when `persist`, also after a registration's failure. Returns 1
 * when posted, 0 when it failed with a registration's code (counted), -1
 * on anything else (a failure).
 */
static int
post(int t, struct op *op, void *buf, size_t len, void *desc, uint64_t raddr,
     bool persist)
{
	struct tally *tl = &tallies[t];
	enum mrcheck_fault_code code;
	ssize_t ret;

	atomic_store(&op->done, 0);
	op->err = 0;
	for (int tries = 0; tries < RESOURCE_RETRIES; tries++) {
		struct mrlt_wait w;

		mrlt_wait_init(&w);
		while ((ret = post_once(op, buf, len, desc, raddr)) ==
			       -FI_EAGAIN &&
		       !mrlt_wait_over(&w)) {
			tl->eagain++;
			poll_cq();
		}
		if (!ret)
			return 1;
		code = code_of(ret);
		if (code == MRCHECK_FAULT_CODES) {
			failed("%s of %zu bytes: %zd (%s), not an injected "
			       "code",
			       op_name[op->kind], len, ret,
			       fi_strerror((int) -ret));
			return -1;
		}
		tl->surfaced[code]++;
		if (!persist)
			return 0;
	}
	failed("%s of %zu bytes: still refused after %d tries",
	       op_name[op->kind], len, RESOURCE_RETRIES);
	return -1;
}

/* A message says what it should hold: its seed and length first. */
static void
message_fill(char *m, size_t len, uint64_t seed)
{
	uint64_t l = len;

	mrlt_fill(m, len, seed);
	memcpy(m, &seed, sizeof(seed));
	memcpy(m + 8, &l, sizeof(l));
}

static bool
message_ok(const char *m, size_t got)
{
	uint64_t seed, len;

	memcpy(&seed, m, sizeof(seed));
	memcpy(&len, m + 8, sizeof(len));
	if (len != got || len < HEADER || len > MSG_MAX)
		return false;
	for (size_t i = HEADER; i < len; i++)
		if ((uint8_t) m[i] != mrlt_pattern(seed, i))
			return false;
	return true;
}

/* An RMA write then a read back of the worker's slot into b, with b_mr's
 * desc when given; verified when both completed. -1 on a failure. */
static int
rma_round(int t, char *a, char *b, struct fid_mr *b_mr, size_t len)
{
	uint64_t raddr =
		mrlt_pair_rma_addr(&pair, target, target + (size_t) t * SLOT);
	int wrote, got;

	wrote = post(t, &ops[t][OP_WRITE], a, len, NULL, raddr, false);
	if (wrote > 0)
		wrote = wait_op(&ops[t][OP_WRITE]);
	if (wrote < 0)
		return -1;
	memset(b, 0, len);
	got = post(t, &ops[t][OP_READ], b, len, b_mr ? fi_mr_desc(b_mr) : NULL,
		   raddr, false);
	if (got > 0)
		got = wait_op(&ops[t][OP_READ]);
	if (got < 0)
		return -1;
	if (!wrote || !got)
		return 0;
	if (memcmp(a, b, len)) {
		failed("worker %d: %zu bytes read back differ from those "
		       "written",
		       t, len);
		return -1;
	}
	tallies[t].verified[OP_WRITE]++;
	tallies[t].verified[OP_READ]++;
	return 0;
}

/* A receive and a send, both retried until posted so that receives and
 * sends stay paired across workers; the message received (whichever
 * worker sent it) is checked against its own header. */
static int
msg_round(int t, char *a, size_t len, char *r)
{
	struct op *rv = &ops[t][OP_RECV], *sd = &ops[t][OP_SEND];
	int got, sent;

	if (post(t, rv, r, MSG_MAX, NULL, 0, true) < 0 ||
	    post(t, sd, a, len, NULL, 0, true) < 0)
		return -1;
	sent = wait_op(sd);
	got = wait_op(rv);
	if (sent < 0 || got < 0)
		return -1;
	if (sent)
		tallies[t].verified[OP_SEND]++;
	if (!got)
		return 0;
	if (!message_ok(r, rv->len)) {
		failed("worker %d: a received message of %zu bytes does not "
		       "match "
		       "its header",
		       t, rv->len);
		return -1;
	}
	tallies[t].verified[OP_RECV]++;
	return 0;
}

/*
 * Every other round the application registers the read's destination
 * itself (local access: mrlease serves it from its cache, or forwards it
 * when the cache's registration failed), retrying while refused.
 */
static int
app_mr_reg(int t, void *buf, size_t len, int round, struct fid_mr **mr)
{
	static atomic_uint_fast64_t next_key = 0x100000;
	ssize_t ret = 0;

	*mr = NULL;
	if (round & 1)
		return 0;
	for (int tries = 0; tries < RESOURCE_RETRIES; tries++) {
		ret = fi_mr_reg(pair.domain, buf, len, FI_READ, 0,
				atomic_fetch_add(&next_key, 1), 0, mr, NULL);
		if (!ret) {
			tallies[t].app_mrs++;
			return 0;
		}
		if (code_of(ret) == MRCHECK_FAULT_CODES && ret != -FI_EAGAIN)
			break;
		tallies[t].app_mrs_refused++;
	}
	*mr = NULL;
	failed("worker %d: fi_mr_reg of %zu bytes: %zd (%s)", t, len, ret,
	       fi_strerror((int) -ret));
	return -1;
}

static void *
worker(void *arg)
{
	int t = (int) (intptr_t) arg;

	for (int k = 0; k < OP_KINDS; k++)
		ops[t][k].kind = (enum op_kind) k;
	atomic_fetch_add(&started, 1);
	while (atomic_load(&started) < WORKERS)
		sched_yield();
	for (int i = 0; i < ITERS && !atomic_load(&failures); i++) {
		size_t len = sizes[(size_t) (t * 5 + i) %
				   (sizeof(sizes) / sizeof(sizes[0]))];
		uint64_t seed = (uint64_t) t * 100000 + (uint64_t) i;
		/* Fresh buffers each round, handed back as an allocator's purge
		 * would: most operands miss and register. */
		char *a = malloc(len), *b = malloc(len), *r = malloc(MSG_MAX);
		struct fid_mr *b_mr = NULL;
		int ret = -1;

		if (a && b && r) {
			message_fill(a, len, seed);
			ret = app_mr_reg(t, b, len, i, &b_mr);
			if (!ret)
				ret = rma_round(t, a, b, b_mr, len);
			if (b_mr && fi_close(&b_mr->fid) && !ret) {
				failed("worker %d: closing the read's MR "
				       "failed",
				       t);
				ret = -1;
			}
			if (!ret)
				ret = msg_round(t, a, len, r);
		} else {
			failed("worker %d: out of memory", t);
		}
		pair.mrl->invalidate(a, len);
		pair.mrl->invalidate(b, len);
		pair.mrl->invalidate(r, MSG_MAX);
		free(a);
		free(b);
		free(r);
		if (ret)
			break;
	}
	return NULL;
}

static struct mrcheck_stats
chk_stats(struct mrcheck_ops *chk)
{
	struct mrcheck_stats st = {0};

	if (chk->query(chk, &st, sizeof(st)))
		failed("mrcheck query failed");
	return st;
}

/* An application's own registration, retried while it is refused. */
static int
mr_reg_retrying(void *buf, size_t len, struct fid_mr **mr)
{
	int ret;

	for (int tries = 0; tries < RESOURCE_RETRIES; tries++) {
		ret = mrlt_pair_mr_reg(&pair, buf, len,
				       FI_REMOTE_READ | FI_REMOTE_WRITE, mr);
		if (code_of(ret) == MRCHECK_FAULT_CODES && ret != -FI_EAGAIN)
			return ret;
	}
	return ret;
}

/* Registrations, posts and completions that fail must reach the
 * application as the provider's own errors, with the application's
 * context in every error entry, each operation's leases released and
 * nothing left registered: a lease kept by a refused post, an error entry
 * with mrlease's context or a registration leaked on a failure path would
 * break a long-running job one fault at a time. */
static void
test_injected_failures_surface_as_the_providers_and_leak_nothing(void)
{
	/* FI_MR_LOCAL: mrlease must lease every operand or fail the post
	 * (without it, an operand it cannot lease goes down with its NULL
	 * descriptor, which the provider takes). */
	struct mrlt_pair_opts opts = {.prov = PROV,
				      .caps = FI_MSG | FI_RMA,
				      .thread_safe = true,
				      .mr_local = true};
	struct mrcheck_stats c0, c1, c2;
	struct fi_mrlease_stats all;
	struct fi_mrlease_ops *mrl;
	struct mrcheck_ops *chk;
	struct tally sum = {0};
	pthread_t th[WORKERS];
	uint64_t surfaced = 0;

	if (!mrlt_pair_open_hooked_safe(&opts, &pair))
		return;
	mrl = pair.mrl;
	chk = pair.chk_all;
	CHECK_MSG(chk, "mrcheck not stacked");
	c0 = chk_stats(chk);
	target = aligned_alloc(4096, WORKERS * SLOT);
	CHECK(target);
	CHECK_FI(mr_reg_retrying(target, WORKERS * SLOT, &target_mr));

	for (int t = 0; t < WORKERS; t++)
		CHECK(!pthread_create(&th[t], NULL, worker,
				      (void *) (intptr_t) t));
	for (int t = 0; t < WORKERS; t++)
		pthread_join(th[t], NULL);
	CHECK_MSG(!atomic_load(&failures), "%ld failure(s), first: %s",
		  atomic_load(&failures), why);
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_EQ(0, mrlt_live_leases(&pair));

	c1 = chk_stats(chk);
	for (int t = 0; t < WORKERS; t++) {
		sum.eagain += tallies[t].eagain;
		for (int k = 0; k < MRCHECK_FAULT_CODES; k++)
			sum.surfaced[k] += tallies[t].surfaced[k];
		for (int k = 0; k < OP_KINDS; k++)
			sum.verified[k] += tallies[t].verified[k];
		sum.app_mrs += tallies[t].app_mrs;
		sum.app_mrs_refused += tallies[t].app_mrs_refused;
	}
	for (int k = 0; k < MRCHECK_FAULT_CODES; k++)
		surfaced += sum.surfaced[k];
	printf("# injected: reg %llu (ENOMEM %llu EAGAIN %llu ENOKEY %llu "
	       "ENOSPC "
	       "%llu), post %llu, cq_err %llu\n",
	       (unsigned long long) (c1.faults_reg - c0.faults_reg),
	       (unsigned long long) (c1.faults_reg_by_code
					     [MRCHECK_FAULT_ENOMEM] -
				     c0.faults_reg_by_code
					     [MRCHECK_FAULT_ENOMEM]),
	       (unsigned long long) (c1.faults_reg_by_code
					     [MRCHECK_FAULT_EAGAIN] -
				     c0.faults_reg_by_code
					     [MRCHECK_FAULT_EAGAIN]),
	       (unsigned long long) (c1.faults_reg_by_code
					     [MRCHECK_FAULT_ENOKEY] -
				     c0.faults_reg_by_code
					     [MRCHECK_FAULT_ENOKEY]),
	       (unsigned long long) (c1.faults_reg_by_code
					     [MRCHECK_FAULT_ENOSPC] -
				     c0.faults_reg_by_code
					     [MRCHECK_FAULT_ENOSPC]),
	       (unsigned long long) (c1.faults_post - c0.faults_post),
	       (unsigned long long) (c1.faults_cq_err - c0.faults_cq_err));
	printf("# surfaced: ENOMEM %llu ENOKEY %llu ENOSPC %llu from posts, "
	       "%llu -FI_EAGAIN retried, %ld error entries\n",
	       (unsigned long long) sum.surfaced[MRCHECK_FAULT_ENOMEM],
	       (unsigned long long) sum.surfaced[MRCHECK_FAULT_ENOKEY],
	       (unsigned long long) sum.surfaced[MRCHECK_FAULT_ENOSPC],
	       (unsigned long long) sum.eagain, atomic_load(&errors_read));
	printf("# application MRs: %llu registered, %llu refusals retried\n",
	       (unsigned long long) sum.app_mrs,
	       (unsigned long long) sum.app_mrs_refused);
	printf("# verified: %llu writes read back, %llu messages received, "
	       "%llu sends completed; registrations %llu (%s keys)\n",
	       (unsigned long long) sum.verified[OP_READ],
	       (unsigned long long) sum.verified[OP_RECV],
	       (unsigned long long) sum.verified[OP_SEND],
	       (unsigned long long) (c1.mr_opened - c0.mr_opened),
	       pair.info->domain_attr->mr_mode & FI_MR_PROV_KEY ? "provider's" :
								  "requested");

	/* Every kind of fault happened, and the data still moved. */
	CHECK(c1.faults_reg > c0.faults_reg);
	CHECK(c1.faults_post > c0.faults_post);
	CHECK(c1.faults_cq_err > c0.faults_cq_err);
	CHECK(sum.verified[OP_READ] > 0 && sum.verified[OP_RECV] > 0);
	CHECK(sum.app_mrs > 0);
	/* Every error entry was an injected one, read once, by the
	 * application, with its own context (read_error checked each). */
	CHECK_EQ(c1.faults_cq_err - c0.faults_cq_err,
		 atomic_load(&errors_read));
	CHECK_EQ(c1.faults_cq_err_read - c0.faults_cq_err_read,
		 atomic_load(&errors_read));
	/* What the cache gave up on reached the post unchanged: never more
	 * of a code than was injected. -FI_EAGAIN is retried like the
	 * post's own and is not told apart. */
	CHECK(surfaced > 0);
	for (int k = 0; k < MRCHECK_FAULT_CODES; k++)
		CHECK(sum.surfaced[k] <=
		      c1.faults_reg_by_code[k] - c0.faults_reg_by_code[k]);
	/* A refusal for lack of resources reaches the post only after the
	 * cache evicted and tried again, which was refused too. */
	CHECK(2 * (sum.surfaced[MRCHECK_FAULT_ENOMEM] +
		   sum.surfaced[MRCHECK_FAULT_ENOSPC]) <=
	      (c1.faults_reg_by_code[MRCHECK_FAULT_ENOMEM] -
	       c0.faults_reg_by_code[MRCHECK_FAULT_ENOMEM]) +
		      (c1.faults_reg_by_code[MRCHECK_FAULT_ENOSPC] -
		       c0.faults_reg_by_code[MRCHECK_FAULT_ENOSPC]) +
		      (c1.faults_reg_by_code[MRCHECK_FAULT_EAGAIN] -
		       c0.faults_reg_by_code[MRCHECK_FAULT_EAGAIN]));
	/* Where the cache picks keys, -FI_ENOKEY is retried with another. */
	if (!(pair.info->domain_attr->mr_mode & FI_MR_PROV_KEY))
		CHECK(sum.surfaced[MRCHECK_FAULT_ENOKEY] <
		      c1.faults_reg_by_code[MRCHECK_FAULT_ENOKEY] -
			      c0.faults_reg_by_code[MRCHECK_FAULT_ENOKEY]);
	CHECK_EQ(0, c1.ops_in_flight);

	CHECK_FI(fi_close(&target_mr->fid));
	CHECK_FI(mrlt_pair_close(&pair));
	free(target);
	/* After everything closed: every registration closed once, none
	 * leased. */
	c2 = chk_stats(chk);
	CHECK_EQ(c2.mr_opened - c0.mr_opened, c2.mr_closed - c0.mr_closed);
	CHECK_EQ(0, c2.violations - c0.violations);
	CHECK_FI(mrl->query_stats(NULL, &all, sizeof(all)));
	printf("# after close: registrations %llu deregistrations %llu leases "
	       "%llu\n",
	       (unsigned long long) all.registrations,
	       (unsigned long long) all.deregistrations,
	       (unsigned long long) all.leases);
	CHECK_EQ(all.registrations, all.deregistrations);
	CHECK_EQ(0, all.leases);
}

/* ------------------------------------------------------------------ */
/* close, close_cache                                                  */
/* ------------------------------------------------------------------ */

#define TARGET	  (64 * 1024)
#define ROUND_LEN 20000

/*
 * A write, a read back and a message from ep[from] to the other endpoint,
 * NULL descriptors, into mr over target; every buffer handed back through
 * invalidate. NULL when all completed and matched, else what went wrong.
 */
static const char *
round_trip(struct mrlt_pair *p, int from, char *target_buf, struct fid_mr *mr,
	   uint64_t seed)
{
	static char text[256];
	struct fi_context2 ctx[3];
	struct mrlt_comp comp[2];
	int to = 1 - from;
	char *src = malloc(ROUND_LEN), *dst = malloc(ROUND_LEN),
	     *rbuf = malloc(ROUND_LEN);
	uint64_t raddr = mrlt_pair_rma_addr(p, target_buf, target_buf);
	const char *err = NULL;
	ssize_t ret;

#define ROUND_FAIL(...)                                    \
	do {                                               \
		snprintf(text, sizeof(text), __VA_ARGS__); \
		err = text;                                \
		goto out;                                  \
	} while (0)

	if (!src || !dst || !rbuf)
		ROUND_FAIL("out of memory");
	mrlt_fill(src, ROUND_LEN, seed);
	memset(dst, 0, ROUND_LEN);
	memset(rbuf, 0, ROUND_LEN);

	ret = MRLT_PAIR_POST(p, fi_write(p->ep[from], src, ROUND_LEN, NULL,
					 p->addr[to], raddr, fi_mr_key(mr),
					 &ctx[0]));
	if (ret)
		ROUND_FAIL("fi_write: %s", fi_strerror((int) -ret));
	if (mrlt_reap(p, comp, 1) != 1 || comp[0].err || comp[0].ctx != &ctx[0])
		ROUND_FAIL("fi_write: no clean completion (err %d)",
			   comp[0].err);
	if (mrlt_wait_pattern(p, target_buf, ROUND_LEN, seed) != -1)
		ROUND_FAIL(
			"fi_write: the target does not hold what was written");

	ret = MRLT_PAIR_POST(p, fi_read(p->ep[from], dst, ROUND_LEN, NULL,
					p->addr[to], raddr, fi_mr_key(mr),
					&ctx[1]));
	if (ret)
		ROUND_FAIL("fi_read: %s", fi_strerror((int) -ret));
	if (mrlt_reap(p, comp, 1) != 1 || comp[0].err || comp[0].ctx != &ctx[1])
		ROUND_FAIL("fi_read: no clean completion (err %d)",
			   comp[0].err);
	if (mrlt_verify(dst, ROUND_LEN, seed) != -1)
		ROUND_FAIL("fi_read: wrong bytes read back");

	ret = MRLT_PAIR_POST(p, fi_recv(p->ep[to], rbuf, ROUND_LEN, NULL,
					FI_ADDR_UNSPEC, &ctx[2]));
	if (ret)
		ROUND_FAIL("fi_recv: %s", fi_strerror((int) -ret));
	ret = MRLT_PAIR_POST(p, fi_send(p->ep[from], src, ROUND_LEN, NULL,
					p->addr[to], &ctx[0]));
	if (ret)
		ROUND_FAIL("fi_send: %s", fi_strerror((int) -ret));
	if (mrlt_reap(p, comp, 2) != 2 || comp[0].err || comp[1].err)
		ROUND_FAIL("fi_send/fi_recv: no clean completions");
	if (mrlt_verify(rbuf, ROUND_LEN, seed) != -1)
		ROUND_FAIL("fi_recv: wrong bytes received");
out:
#undef ROUND_FAIL
	if (p->mrl) {
		p->mrl->invalidate(src, ROUND_LEN);
		p->mrl->invalidate(dst, ROUND_LEN);
		p->mrl->invalidate(rbuf, ROUND_LEN);
	}
	free(src);
	free(dst);
	free(rbuf);
	return err;
}

/* AV, CQ and two enabled endpoints that know each other, on p->domain
 * (as mrlt_pair_open builds them), after the first set was closed. */
static int
open_children(struct mrlt_pair *p)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .size = 1024};
	char name[2][256];
	size_t len;
	int ret;

	ret = fi_av_open(p->domain, &av_attr, &p->av, NULL);
	if (ret)
		return ret;
	ret = fi_cq_open(p->domain, &cq_attr, &p->cq, NULL);
	if (ret)
		return ret;
	for (int i = 0; i < 2; i++) {
		ret = fi_endpoint(p->domain, p->info, &p->ep[i], NULL);
		if (!ret)
			ret = fi_ep_bind(p->ep[i], &p->av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(p->ep[i], &p->cq->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(p->ep[i]);
		len = sizeof(name[i]);
		if (!ret)
			ret = fi_getname(&p->ep[i]->fid, name[i], &len);
		if (ret)
			return ret;
	}
	for (int i = 0; i < 2; i++) {
		ret = fi_av_insert(p->av, name[i], 1, &p->addr[i], 0, NULL);
		if (ret != 1)
			return ret < 0 ? ret : -FI_EOTHER;
	}
	return 0;
}

/* The first close of fid must be refused and change nothing. */
#define CHECK_REFUSED(fid) CHECK_EQ(-FI_EBUSY, fi_close(fid))
#define CHECK_CLOSED(fid)  CHECK_EQ(0, fi_close(fid))
#define CHECK_ROUND(p, from, tgt, mr, seed)                                  \
	do {                                                                 \
		const char *round_why_ = round_trip(p, from, tgt, mr, seed); \
		CHECK_MSG(!round_why_, "round from ep[%d] (seed %d): %s",    \
			  (int) (from), (int) (seed), round_why_);           \
	} while (0)

/* Close mr (refused once) and the pair's CQ and AV. */
static void
close_mr_cq_av(struct mrlt_pair *p, struct fid_mr *mr)
{
	CHECK_REFUSED(&mr->fid);
	CHECK_CLOSED(&mr->fid);
	CHECK_CLOSED(&p->cq->fid);
	p->cq = NULL;
	CHECK_CLOSED(&p->av->fid);
	p->av = NULL;
}

/* Leak checks once everything is closed: every registration closed,
 * through mrcheck and by mrlease's count, no lease left. */
static void
check_nothing_left(struct mrcheck_ops *chk, struct fi_mrlease_ops *mrl,
		   const struct mrcheck_stats *c0, uint64_t refusals)
{
	struct mrcheck_stats c1 = chk_stats(chk);
	struct fi_mrlease_stats all;

	printf("# closes refused %llu; MRs opened %llu closed %llu\n",
	       (unsigned long long) (c1.faults_close - c0->faults_close),
	       (unsigned long long) (c1.mr_opened - c0->mr_opened),
	       (unsigned long long) (c1.mr_closed - c0->mr_closed));
	CHECK_FI(mrl->query_stats(NULL, &all, sizeof(all)));
	printf("# registrations %llu deregistrations %llu leases %llu\n",
	       (unsigned long long) all.registrations,
	       (unsigned long long) all.deregistrations,
	       (unsigned long long) all.leases);
	CHECK(c1.faults_close - c0->faults_close >= refusals);
	CHECK_EQ(c1.mr_opened - c0->mr_opened, c1.mr_closed - c0->mr_closed);
	CHECK_EQ(0, c1.violations - c0->violations);
	CHECK_EQ(all.registrations, all.deregistrations);
	CHECK_EQ(0, all.leases);
}

/* What a close case starts from: the pair, the counts before it, and the
 * application's remote-access MR over tgt. */
struct close_case {
	struct fi_mrlease_ops *mrl;
	struct mrcheck_ops *chk;
	struct mrcheck_stats c0;
	char *tgt;
	struct fid_mr *mr; /* NULL when the case cannot go on */
};

static void
close_case_open(struct close_case *cc)
{
	struct mrlt_pair_opts opts = {.prov = PROV, .caps = FI_MSG | FI_RMA};

	memset(cc, 0, sizeof(*cc));
	if (!mrlt_pair_open_hooked(&opts, &pair))
		return;
	cc->mrl = pair.mrl;
	cc->chk = pair.chk_all;
	CHECK_MSG(cc->chk, "mrcheck not stacked");
	cc->c0 = chk_stats(cc->chk);
	cc->tgt = mrlt_alloc(TARGET);
	CHECK_FI(mrlt_pair_mr_reg(&pair, cc->tgt, TARGET,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &cc->mr));
}

/* A close the provider refuses must leave the object exactly as usable as
 * before: an MR still takes RMA, an endpoint still posts and completes
 * NULL-descriptor transfers, a domain still opens endpoints whose
 * transfers lease through its cache; the second close succeeds and
 * nothing leaks. Guards the hook tearing its state down before it knows
 * the provider agreed (a use after free at the next post). */
static void
test_refused_closes_leave_mr_endpoints_and_domain_usable(void)
{
	struct fi_context2 ctx[2];
	struct mrlt_comp comp[2];
	struct close_case cc;
	char *tgt, *src, *rbuf;
	struct fid_mr *mr;

	close_case_open(&cc);
	if (!cc.mr)
		return;
	mr = cc.mr;
	tgt = cc.tgt;
	CHECK_ROUND(&pair, 0, tgt, mr, 1);

	/* The application's MR. */
	CHECK_REFUSED(&mr->fid);
	CHECK_ROUND(&pair, 0, tgt, mr, 2);
	CHECK_CLOSED(&mr->fid);
	CHECK_FI(mrlt_pair_mr_reg(&pair, tgt, TARGET,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));

	/* The endpoints, each used both ways after its refusal; ep[1] is
	 * refused with a leased receive outstanding, which must still
	 * complete into its buffer with its context, its lease released. */
	CHECK_REFUSED(&pair.ep[0]->fid);
	CHECK_ROUND(&pair, 0, tgt, mr, 3);
	CHECK_ROUND(&pair, 1, tgt, mr, 4);
	src = mrlt_alloc(ROUND_LEN);
	rbuf = mrlt_alloc(ROUND_LEN);
	mrlt_fill(src, ROUND_LEN, 9);
	CHECK_EQ(0,
		 MRLT_PAIR_POST(&pair, fi_recv(pair.ep[1], rbuf, ROUND_LEN,
					       NULL, FI_ADDR_UNSPEC, &ctx[0])));
	CHECK_REFUSED(&pair.ep[1]->fid);
	CHECK_EQ(0,
		 MRLT_PAIR_POST(&pair, fi_send(pair.ep[0], src, ROUND_LEN, NULL,
					       pair.addr[1], &ctx[1])));
	CHECK_EQ(2, mrlt_reap(&pair, comp, 2));
	CHECK(!comp[0].err && !comp[1].err);
	CHECK((comp[0].ctx == &ctx[0] && comp[1].ctx == &ctx[1]) ||
	      (comp[0].ctx == &ctx[1] && comp[1].ctx == &ctx[0]));
	CHECK_EQ(-1, mrlt_verify(rbuf, ROUND_LEN, 9));
	CHECK_EQ(0, mrlt_live_leases(&pair));
	CHECK_ROUND(&pair, 1, tgt, mr, 5);
	CHECK_ROUND(&pair, 0, tgt, mr, 6);
	CHECK_CLOSED(&pair.ep[0]->fid);
	pair.ep[0] = NULL;
	CHECK_CLOSED(&pair.ep[1]->fid);
	pair.ep[1] = NULL;
	close_mr_cq_av(&pair, mr);
	if (mrlt_failed())
		return;

	/* The domain, with nothing left open on it: refused, then it opens
	 * endpoints and leases again. */
	CHECK_REFUSED(&pair.domain->fid);
	CHECK_FI(open_children(&pair));
	CHECK_FI(mrlt_pair_mr_reg(&pair, tgt, TARGET,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
	CHECK_ROUND(&pair, 0, tgt, mr, 7);
	CHECK_ROUND(&pair, 1, tgt, mr, 8);
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_EQ(0, mrlt_live_leases(&pair));
	for (int i = 0; i < 2; i++) {
		CHECK_REFUSED(&pair.ep[i]->fid);
		CHECK_CLOSED(&pair.ep[i]->fid);
		pair.ep[i] = NULL;
	}
	close_mr_cq_av(&pair, mr);
	if (mrlt_failed())
		return;
	CHECK_CLOSED(&pair.domain->fid);
	pair.domain = NULL;
	CHECK_FI(mrlt_pair_close(&pair));
	/* Three MRs, four endpoints, one domain. */
	check_nothing_left(cc.chk, cc.mrl, &cc.c0, 8);
}

/* The provider's own refusal of a domain close, with endpoints and a CQ
 * open, must leave every layer as usable as an injected one: the
 * layers tear their domain state down before the provider answers.
 * On sockets: tcp;ofi_rxm frees its domain's pools before it refuses, and
 * double-frees them at the next close. */
static void
test_domain_close_the_provider_refuses_leaves_it_usable(void)
{
	struct mrlt_pair_opts opts = {.prov = "sockets",
				      .caps = FI_MSG | FI_RMA};
	struct fi_mrlease_ops *mrl;
	struct mrcheck_stats c0;
	struct mrcheck_ops *chk;
	struct fid_mr *mr;
	char *tgt;

	if (!mrlt_pair_open_hooked(&opts, &pair))
		return;
	mrl = pair.mrl;
	chk = pair.chk_all;
	CHECK_MSG(chk, "mrcheck not stacked");
	c0 = chk_stats(chk);
	tgt = mrlt_alloc(TARGET);
	CHECK_FI(mrlt_pair_mr_reg(&pair, tgt, TARGET,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
	CHECK_ROUND(&pair, 0, tgt, mr, 1);
	/* No MR of the application open: only the endpoints hold it. */
	CHECK_CLOSED(&mr->fid);
	CHECK_REFUSED(&pair.domain->fid);
	CHECK_FI(mrlt_pair_mr_reg(&pair, tgt, TARGET,
				  FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
	CHECK_ROUND(&pair, 0, tgt, mr, 2);
	CHECK_ROUND(&pair, 1, tgt, mr, 3);
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_EQ(0, mrlt_live_leases(&pair));
	CHECK_CLOSED(&mr->fid);
	CHECK_EQ(0, mrlt_pair_close(&pair));
	check_nothing_left(chk, mrl, &c0, 0);
}

/* A registration whose close the provider refuses stays the cache's to
 * close: otherwise it is counted as deregistered while the provider keeps
 * it, and the domain can never close (the provider refuses a domain with
 * MRs open). */
static void
test_cache_registration_refused_close_is_not_leaked(void)
{
	struct close_case cc;
	int ret;

	close_case_open(&cc);
	if (!cc.mr)
		return;
	/* Each round's buffers are invalidated: their registrations close
	 * (and are refused) while the domain is open. */
	for (int i = 0; i < 8; i++)
		CHECK_ROUND(&pair, i & 1, cc.tgt, cc.mr, 10 + i);
	CHECK_EQ(0, mrlt_violations(&pair));
	CHECK_EQ(0, mrlt_live_leases(&pair));
	CHECK_REFUSED(&cc.mr->fid);
	CHECK_CLOSED(&cc.mr->fid);
	ret = mrlt_pair_close(&pair);
	check_nothing_left(cc.chk, cc.mrl, &cc.c0, 1);
	CHECK_EQ(0, ret);
}

/* ------------------------------------------------------------------ */

int
main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "stress";
	const char *seed = getenv("FI_MRCHECK_FAULT_SEED");
	char seed_env[64];
	const char *stress_env[] = {
		"FI_MRLEASE_MIN_SIZE=0",
		"FI_MRCHECK_FAULT_REG=0.25",
		"FI_MRCHECK_FAULT_REG_CODES=ENOMEM,EAGAIN,ENOKEY,ENOSPC",
		"FI_MRCHECK_FAULT_POST=0.2",
		"FI_MRCHECK_FAULT_CQ_ERR=0.1",
		seed_env,
		NULL};
	static const char *const close_env[] = {
		"FI_MRLEASE_MIN_SIZE=0",
		"FI_MRCHECK_FAULT_CLOSE_ONCE=mr_remote,ep,domain", NULL};
	static const char *const refused_domain_env[] = {
		"FI_MRLEASE_MIN_SIZE=0", NULL};
	static const char *const close_cache_env[] = {
		"FI_MRLEASE_MIN_SIZE=0", "FI_MRCHECK_FAULT_CLOSE_ONCE=mr",
		NULL};

	mrlt_select(argc - 2, argv + 2);
	snprintf(seed_env, sizeof(seed_env), "FI_MRCHECK_FAULT_SEED=%s",
		 seed && *seed ? seed : "16");
	if (!strcmp(which, "stress")) {
		xfer_reexec(argv, "mrcheck;mrlease", stress_env);
		printf("# %s\n", seed_env);
		MRLT_RUN(
			test_injected_failures_surface_as_the_providers_and_leak_nothing);
	} else if (!strcmp(which, "close")) {
		xfer_reexec(argv, "mrcheck;mrlease", close_env);
		MRLT_RUN(
			test_refused_closes_leave_mr_endpoints_and_domain_usable);
	} else if (!strcmp(which, "refused_domain")) {
		xfer_reexec(argv, "mrcheck;mrlease", refused_domain_env);
		MRLT_RUN(
			test_domain_close_the_provider_refuses_leaves_it_usable);
	} else if (!strcmp(which, "close_cache")) {
		xfer_reexec(argv, "mrcheck;mrlease", close_cache_env);
		MRLT_RUN(test_cache_registration_refused_close_is_not_leaked);
	} else {
		fprintf(stderr,
			"usage: %s [stress|close|refused_domain|close_cache "
			"[case-name pattern...]]\n",
			argv[0]);
		return 2;
	}
	return mrlt_done();
}
