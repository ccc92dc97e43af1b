/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Claiming receives (fi_trecvmsg with FI_CLAIM after a peek with
 * FI_PEEK | FI_CLAIM: MPI_Mprobe/MPI_Mrecv) through the strict checker,
 * FI_HOOK='mrcheck;mrlease' with FI_MRLEASE_MIN_SIZE=0: the claim's
 * buffer reaches the provider with a leased descriptor, the data arrives,
 * and the lease ends with the claim's completion, its error entry, or its
 * endpoint's close; on a selective endpoint a claim without FI_COMPLETION
 * is hidden. Two threads probing and claiming on one CQ each get their own
 * messages (also under ThreadSanitizer).
 *
 * Runs itself again with that environment. shm is left out: its peeks
 * (1.17) truncate the message away (test/conform's claim semantic).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "common/xfer_util.h"

#define SMALL 64
#define LARGE (256 * 1024) /* above rxm's rendezvous size */
#define TAG   0x5a00

static const char *const providers[] = {"tcp;ofi_rxm", "udp;ofi_rxd", "sockets",
					NULL};
static const char *prov;
/* Whether threads share the pair's CQ: completions mark struct mrlt_op
 * contexts done instead of going to the pair's stash. */
static bool threaded;

/* Post expr, retrying while the provider says -FI_EAGAIN (bounded). */
#define POST(p, expr)                                         \
	({                                                    \
		ssize_t post_r_;                              \
		long post_n_ = 0;                             \
		while ((post_r_ = (expr)) == -FI_EAGAIN &&    \
		       ++post_n_ < MRLT_MAX_POLLS) {          \
			if (threaded)                         \
				(void) mrlt_pair_poll_ops(p); \
			else                                  \
				mrlt_pair_progress(p);        \
		}                                             \
		post_r_;                                      \
	})

/* udp;ofi_rxd alone (no hook, checked): a truncated claim completes
 * without an error, and two threads probing and claiming on one endpoint
 * crash it. */
static bool
rxd_quirks(void)
{
	return !strcmp(prov, "udp;ofi_rxd");
}

/* sockets alone (no hook, checked under ThreadSanitizer): while two
 * threads probe and claim, its progress thread now and then reads a
 * message buffer of a large claimed message after it was freed. */
static bool
sockets_quirks(void)
{
	return !strcmp(prov, "sockets");
}

static bool
pair_open(struct mrlt_pair *p, struct mrlt_pair_opts opts)
{
	opts.prov = prov;
	opts.caps = FI_TAGGED;
	return mrlt_pair_open_hooked(&opts, p);
}

/* len bytes freed when the case returns, holding seed's pattern (0:
 * zeroes). */
static char *
buffer(size_t len, uint64_t seed)
{
	char *buf = mrlt_alloc(len);

	if (seed)
		mrlt_fill(buf, len, seed);
	return buf;
}

/* What every case ends with: no lease left, no violation, the pair
 * closed. */
static void
pair_done(struct mrlt_pair *p)
{
	CHECK_EQ(0, mrlt_live_leases(p));
	CHECK_EQ(0, mrlt_violations(p));
	CHECK_EQ(0, mrlt_pair_close(p));
}

/* Completions read while waiting for another one. */
struct seen {
	struct mrlt_comp c[16];
	int n;
};

/* The completion of ctx (error entries included): one seen before, or
 * read now, keeping the others. */
static int
comp_of(struct mrlt_pair *p, struct seen *s, void *ctx, struct mrlt_comp *out)
{
	int ret;

	for (;;) {
		for (int i = 0; i < s->n; i++) {
			if (s->c[i].ctx != ctx)
				continue;
			*out = s->c[i];
			s->c[i] = s->c[--s->n];
			return 0;
		}
		if (s->n == 16)
			return -FI_EOVERFLOW;
		ret = mrlt_reap(p, &s->c[s->n], 1);
		if (ret != 1)
			return ret < 0 ? ret : -FI_EOTHER;
		s->n++;
	}
}

/* Whether a completion of ctx was read. */
static bool
seen_has(const struct seen *s, const void *ctx)
{
	for (int i = 0; i < s->n; i++)
		if (s->c[i].ctx == ctx)
			return true;
	return false;
}

static ssize_t
tsend(struct mrlt_pair *p, const void *buf, size_t len, uint64_t tag, void *ctx)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
	struct fi_msg_tagged m = {.msg_iov = &iov,
				  .iov_count = 1,
				  .addr = p->addr[1],
				  .tag = tag,
				  .context = ctx};

	return POST(p, fi_tsendmsg(p->ep[0], &m, FI_COMPLETION));
}

/* fi_trecvmsg on ep[1] of [buf, +len) (buf NULL: no iov), desc NULL. */
static ssize_t
trecvmsg(struct mrlt_pair *p, void *buf, size_t len, uint64_t tag, void *ctx,
	 uint64_t flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_msg_tagged m = {.msg_iov = buf ? &iov : NULL,
				  .iov_count = buf ? 1 : 0,
				  .addr = FI_ADDR_UNSPEC,
				  .tag = tag,
				  .context = ctx};

	return POST(p, fi_trecvmsg(p->ep[1], &m, flags));
}

/* Peek with FI_CLAIM until the message tagged tag is there (MPI_Mprobe). */
static int
peek_claim(struct mrlt_pair *p, struct seen *s, uint64_t tag, void *ctx)
{
	struct mrlt_comp c;
	ssize_t ret;

	for (long i = 0; i < MRLT_MAX_POLLS; i++) {
		ret = trecvmsg(p, NULL, 0, tag, ctx,
			       FI_PEEK | FI_CLAIM | FI_COMPLETION);
		if (!ret)
			ret = comp_of(p, s, ctx, &c);
		if (ret)
			return (int) ret;
		if (!c.err)
			return 0;
		if (c.err != FI_ENOMSG)
			return -c.err;
		mrlt_pair_progress(p);
	}
	return -FI_ETIMEDOUT;
}

/*
 * A message of len bytes sent with desc NULL, probed and claimed into dst
 * with desc NULL: the claim must pass the checker, take a lease through
 * the cache and keep it until its completion is read.
 */
static void
claim_round(size_t len)
{
	struct fi_context2 sctx, rctx;
	struct fi_mrlease_stats before, posted;
	char *src = buffer(len, 41), *dst = buffer(len, 0);
	struct mrlt_comp c;
	struct seen s = {.n = 0};
	struct mrlt_pair p;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		return;
	CHECK_FI(tsend(&p, src, len, TAG, &sctx));
	if (len == SMALL)
		CHECK_FI(comp_of(&p, &s, &sctx, &c));
	CHECK_FI(peek_claim(&p, &s, TAG, &rctx));
	before = mrlt_pair_stats(&p);
	CHECK_FI(trecvmsg(&p, dst, len, TAG, &rctx, FI_CLAIM));
	posted = mrlt_pair_stats(&p);
	CHECK(posted.lookups > before.lookups);
	if (len == SMALL)
		CHECK_EQ(before.leases + 1, posted.leases);
	CHECK_FI(comp_of(&p, &s, &rctx, &c));
	CHECK_EQ(0, c.err);
	CHECK_EQ(len, c.len);
	CHECK_EQ(TAG, c.tag);
	CHECK(c.flags & FI_RECV);
	if (len != SMALL)
		CHECK_FI(comp_of(&p, &s, &sctx, &c));
	CHECK_EQ(-1, mrlt_verify(dst, len, 41));
	pair_done(&p);
}

/* MPI_Mrecv through mrlease: the claim went to the provider with a NULL
 * desc (a provider requiring FI_MR_LOCAL fails it) and leased nothing. */
static void
test_a_claimed_receive_holds_a_lease_until_its_completion_is_read(void)
{
	claim_round(SMALL);
}

/* Above the rendezvous size the provider reads into the claimed buffer
 * after the call returns: the lease must outlive the post. */
static void
test_a_claimed_receive_above_the_rendezvous_size_arrives_whole(void)
{
	claim_round(LARGE);
}

/* A claim into a buffer shorter than its message ends in an error entry:
 * that entry must release the lease, or it stays until the endpoint
 * closes. */
static void
test_a_truncated_claim_releases_its_lease_at_its_error_entry(void)
{
	struct fi_context2 sctx, rctx;
	char *src = buffer(4 * SMALL, 43), *dst = buffer(4 * SMALL, 0);
	struct mrlt_comp c;
	struct seen s = {.n = 0};
	struct mrlt_pair p;
	int err;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		return;
	CHECK_FI(tsend(&p, src, 4 * SMALL, TAG + 1, &sctx));
	CHECK_FI(peek_claim(&p, &s, TAG + 1, &rctx));
	CHECK_FI(trecvmsg(&p, dst, SMALL, TAG + 1, &rctx, FI_CLAIM));
	CHECK_FI(comp_of(&p, &s, &rctx, &c));
	err = c.err;
	CHECK(err == FI_ETRUNC || (!err && rxd_quirks()));
	CHECK_FI(comp_of(&p, &s, &sctx, &c));
	pair_done(&p);
	if (!err && !mrlt_failed())
		mrlt_skip_current("%s reports a truncated claim as a success, "
				  "also without the hook",
				  prov);
}

/* On a selective endpoint the hook asks the provider for the completion
 * of a claim the application asked none for: the application must not
 * see it, and reading past it must release the lease. */
static void
test_a_claim_without_fi_completion_on_a_selective_endpoint_stays_hidden(void)
{
	struct fi_context2 sctx, rctx, mctx, msctx;
	char *src = buffer(SMALL, 45), *dst = buffer(2 * SMALL, 0);
	struct mrlt_comp c;
	struct seen s = {.n = 0};
	struct mrlt_pair p;
	long spins = 0;

	if (!pair_open(&p, (struct mrlt_pair_opts){.selective = true}))
		return;
	CHECK_FI(tsend(&p, src, SMALL, TAG + 2, &sctx));
	CHECK_FI(comp_of(&p, &s, &sctx, &c));
	CHECK_FI(peek_claim(&p, &s, TAG + 2, &rctx));
	CHECK_FI(trecvmsg(&p, dst, SMALL, TAG + 2, &rctx, FI_CLAIM));
	CHECK_EQ(1, mrlt_live_leases(&p));
	/* A marker message read behind it. */
	CHECK_FI(trecvmsg(&p, dst + SMALL, SMALL, TAG + 3, &mctx,
			  FI_COMPLETION));
	CHECK_FI(tsend(&p, src, SMALL, TAG + 3, &msctx));
	CHECK_FI(comp_of(&p, &s, &mctx, &c));
	CHECK_FI(comp_of(&p, &s, &msctx, &c));
	while (mrlt_live_leases(&p) && ++spins < MRLT_MAX_POLLS)
		mrlt_pair_progress(&p);
	s.n += mrlt_reap_some(&p, s.c + s.n, (size_t) (16 - s.n));
	CHECK(!seen_has(&s, &rctx));
	CHECK_EQ(-1, mrlt_verify(dst, SMALL, 45));
	pair_done(&p);
}

/* The application closes the endpoint without reading the claim's
 * completion: the close must release the lease, and the claim must leave
 * the CQ's table (a later entry naming the context is not the claim's). */
static void
test_closing_the_endpoint_releases_the_lease_of_an_unread_claim(void)
{
	struct fi_context2 sctx, rctx;
	char *src = buffer(SMALL, 47), *dst = buffer(SMALL, 0);
	struct mrlt_comp c;
	struct seen s = {.n = 0};
	struct mrlt_pair p;

	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		return;
	CHECK_FI(tsend(&p, src, SMALL, TAG + 4, &sctx));
	CHECK_FI(comp_of(&p, &s, &sctx, &c));
	CHECK_FI(peek_claim(&p, &s, TAG + 4, &rctx));
	CHECK_FI(trecvmsg(&p, dst, SMALL, TAG + 4, &rctx, FI_CLAIM));
	CHECK_EQ(1, mrlt_live_leases(&p));
	CHECK_EQ(0, fi_close(&p.ep[1]->fid));
	p.ep[1] = NULL;
	pair_done(&p);
}

/* ---- two threads probing and claiming on one CQ ---------------------- */

#define ROUNDS 40

struct prober {
	struct mrlt_pair *p;
	uint64_t tag;
	char *dst; /* LARGE bytes */
	int failed_at; /* round + 1 of the first failure, 0: none */
	int err;
};

/* Message i of tag: small and large alternately (small only where the
 * provider cannot claim large ones from two threads), its bytes the
 * tag's. */
static size_t
msg_len(int i)
{
	return i % 2 && !sockets_quirks() ? LARGE : SMALL;
}

static uint64_t
msg_seed(uint64_t tag, int i)
{
	return tag << 8 | (uint64_t) i;
}

static void *
prober_main(void *arg)
{
	struct prober *pr = arg;
	struct mrlt_op op;
	int ret = 0;

	for (int i = 0; i < ROUNDS && !ret; i++) {
		/* MPI_Improbe until found, then MPI_Imrecv, one context. */
		do {
			mrlt_op_start(&op);
			ret = (int) trecvmsg(pr->p, NULL, 0, pr->tag, &op,
					     FI_PEEK | FI_CLAIM);
			if (!ret)
				ret = mrlt_op_wait(pr->p, &op);
		} while (ret == -FI_ENOMSG);
		if (ret)
			break;
		mrlt_op_start(&op);
		ret = (int) trecvmsg(pr->p, pr->dst, msg_len(i), pr->tag, &op,
				     FI_CLAIM);
		if (!ret)
			ret = mrlt_op_wait(pr->p, &op);
		if (!ret && mrlt_verify(pr->dst, msg_len(i),
					msg_seed(pr->tag, i)) != -1)
			ret = -FI_EOTHER;
		if (ret)
			pr->failed_at = i + 1;
	}
	pr->err = ret;
	return NULL;
}

/* Both tags' messages in turn, each send buffer refilled once the send
 * that used it two rounds before completed; 0 or the first error. */
static int
send_rounds(struct mrlt_pair *p, const struct prober pr[2],
	    struct mrlt_op sop[2][ROUNDS], char *src[2][2])
{
	int ret = 0;

	for (int i = 0; i < ROUNDS && !ret; i++) {
		for (int k = 0; k < 2 && !ret; k++) {
			if (i >= 2)
				ret = mrlt_op_wait(p, &sop[k][i - 2]);
			if (ret)
				break;
			mrlt_fill(src[k][i % 2], msg_len(i),
				  msg_seed(pr[k].tag, i));
			ret = (int) tsend(p, src[k][i % 2], msg_len(i),
					  pr[k].tag, mrlt_op_start(&sop[k][i]));
		}
	}
	for (int k = 0; k < 2 && !ret; k++)
		for (int i = ROUNDS - 2; i < ROUNDS && !ret; i++)
			ret = mrlt_op_wait(p, &sop[k][i]);
	return ret;
}

/* MPI ranks probe from several threads on one endpoint: each claim's
 * lease must end with its own completion whichever thread reads it, and
 * no thread may complete another's claim. */
static void
test_two_threads_probing_and_claiming_each_get_their_own_messages(void)
{
	struct mrlt_pair_opts opts = {.prov = prov,
				      .caps = FI_TAGGED,
				      .thread_safe = true};
	struct prober pr[2];
	pthread_t t[2];
	struct mrlt_op sop[2][ROUNDS];
	char *src[2][2];
	struct mrlt_pair p;
	int started = 0, ret = -FI_EOTHER;

	if (rxd_quirks()) {
		mrlt_skip_current("%s alone (no hook) crashes when two threads "
				  "probe and claim on one endpoint",
				  prov);
		return;
	}
	if (!mrlt_pair_open_hooked_safe(&opts, &p))
		return;
	threaded = true;
	for (int k = 0; k < 2; k++) {
		pr[k] = (struct prober){
			.p = &p, .tag = TAG + 0x10 + k, .dst = buffer(LARGE, 0)};
		src[k][0] = buffer(LARGE, 0);
		src[k][1] = buffer(LARGE, 0);
	}
	for (int k = 0; k < 2; k++) {
		if (pthread_create(&t[k], NULL, prober_main, &pr[k]))
			break;
		started++;
	}
	/* The probers give up when the messages stop: their waits are
	 * bounded. */
	if (started == 2)
		ret = send_rounds(&p, pr, sop, src);
	for (int k = 0; k < started; k++)
		pthread_join(t[k], NULL);
	threaded = false;
	CHECK_EQ(2, started);
	CHECK_FI(ret);
	for (int k = 0; k < 2; k++)
		CHECK_MSG(!pr[k].err, "thread %d, round %d: %s", k,
			  pr[k].failed_at, fi_strerror(-pr[k].err));
	pair_done(&p);
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=0", NULL};
	char prefix[128];

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrcheck;mrlease", env);
	for (const char *const *pv = providers; *pv; pv++) {
		prov = *pv;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(
			test_a_claimed_receive_holds_a_lease_until_its_completion_is_read);
		MRLT_RUN(
			test_a_claimed_receive_above_the_rendezvous_size_arrives_whole);
		MRLT_RUN(
			test_a_truncated_claim_releases_its_lease_at_its_error_entry);
		MRLT_RUN(
			test_a_claim_without_fi_completion_on_a_selective_endpoint_stays_hidden);
		MRLT_RUN(
			test_closing_the_endpoint_releases_the_lease_of_an_unread_claim);
		MRLT_RUN(
			test_two_threads_probing_and_claiming_each_get_their_own_messages);
	}
	return mrlt_done();
}
