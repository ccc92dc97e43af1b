/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/claim_bench: what the hook adds to a claiming receive (MPI_Mrecv:
 * fi_trecvmsg with FI_CLAIM after a peek with FI_PEEK | FI_CLAIM), beside
 * what it adds to a plain tagged receive. A claim's leases are found by
 * the application's context in its CQ's claims table (mrl_xfer_claim.c),
 * and while it is in flight every other entry of that CQ is looked up
 * there, so its path is not a plain receive's.
 *
 * One message of CLAIM_BENCH_SIZE bytes (default 16384, leased at the
 * default FI_MRLEASE_MIN_SIZE) at a time over loopback tcp;ofi_rxm, its
 * send from an application-registered buffer (only the receive leases),
 * received into one buffer with desc NULL:
 *   recv   fi_trecvmsg posted, then the send; both completions read
 *   claim  the send; peeks (FI_PEEK | FI_CLAIM) until one finds it; the
 *          claim (FI_CLAIM); all completions read
 * in two processes (libfabric reads FI_HOOK once per process): "bare", no
 * hook, and "hook", FI_HOOK=mrlease. Method (cost_bench's): both pinned to
 * one CPU (CLAIM_BENCH_CPU), the parent commands one timed slice at a
 * time; each round runs the four (process, op) slices in a pseudo-random
 * order, CLAIM_BENCH_OPS operations each; a round's figure is the hook's
 * added CPU time per operation (hook minus bare, paired within the round),
 * for recv and for claim. Medians over CLAIM_BENCH_ROUNDS rounds (default
 * 30) with quartiles; peeks per claim, so a claim that needed more peeks
 * in one process shows.
 *
 * Last line: RESULT recv_added_us=... claim_added_us=... (medians, CPU
 * time), claim_minus_recv_us (their paired difference), peeks_per_claim.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "../test/common/xfer_util.h"
#include "bench_util.h"

enum { S_BARE, S_HOOK, NSERVERS };
static const char *const server_names[NSERVERS] = {"bare", "hook"};
enum { OP_RECV, OP_CLAIM, NOPS };
static const char *const op_names[NOPS] = {"recv", "claim"};

#define MAX_ROUNDS 200
#define TAG	   0xc1a1

/* ---- server ---------------------------------------------------------- */

struct child {
	struct mrlt_pair pair;
	char *src, *dst;
	size_t size;
	struct fid_mr *src_mr;
	struct fi_context2 sctx, rctx;
	bool sent; /* the send's completion was read */
	long peeks;
};

/* Read until the receive side's entry comes (the send's is noted on the
 * way); its error entry -FI_ENOMSG (a peek that found nothing) sets
 * *nomsg. 0 or -FI_E*. */
static int
reap_recv(struct child *c, bool *nomsg)
{
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err;
	bool got = false;
	ssize_t n;

	while (!got) {
		n = fi_cq_read(c->pair.cq, e, 4);
		if (n == -FI_EAGAIN)
			continue;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(c->pair.cq, &err, 0) != 1 ||
			    err.op_context != &c->rctx ||
			    err.err != FI_ENOMSG || !nomsg)
				return -FI_EIO;
			*nomsg = true;
			return 0;
		}
		if (n < 0)
			return (int) n;
		for (ssize_t i = 0; i < n; i++) {
			if (e[i].op_context == &c->sctx)
				c->sent = true;
			else
				got = true;
		}
	}
	return 0;
}

/* Read until the send's entry came. */
static int
reap_send(struct child *c)
{
	struct fi_cq_tagged_entry e;
	ssize_t n;

	while (!c->sent) {
		n = fi_cq_read(c->pair.cq, &e, 1);
		if (n == 1 && e.op_context == &c->sctx)
			c->sent = true;
		else if (n != -FI_EAGAIN)
			return n < 0 ? (int) n : -FI_EOTHER;
	}
	return 0;
}

static ssize_t
trecvmsg(struct child *c, void *buf, uint64_t flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = c->size};
	struct fi_msg_tagged m = {.msg_iov = buf ? &iov : NULL,
				  .iov_count = buf ? 1 : 0,
				  .addr = FI_ADDR_UNSPEC,
				  .tag = TAG,
				  .context = &c->rctx};
	ssize_t ret;

	while ((ret = fi_trecvmsg(c->pair.ep[1], &m, flags)) == -FI_EAGAIN)
		(void) fi_cq_read(c->pair.cq, NULL, 0);
	return ret;
}

static ssize_t
tsend(struct child *c)
{
	ssize_t ret;

	while ((ret = fi_tsend(c->pair.ep[0], c->src, c->size,
			       fi_mr_desc(c->src_mr), c->pair.addr[1], TAG,
			       &c->sctx)) == -FI_EAGAIN)
		(void) fi_cq_read(c->pair.cq, NULL, 0);
	return ret;
}

static int
one_recv(struct child *c)
{
	ssize_t ret;

	c->sent = false;
	ret = trecvmsg(c, c->dst, 0);
	if (!ret)
		ret = tsend(c);
	if (!ret)
		ret = reap_recv(c, NULL);
	return ret ? (int) ret : reap_send(c);
}

/* MPI_Mprobe and MPI_Mrecv. */
static int
one_claim(struct child *c)
{
	bool nomsg;
	ssize_t ret;

	c->sent = false;
	ret = tsend(c);
	do {
		nomsg = false;
		c->peeks++;
		if (!ret)
			ret = trecvmsg(c, NULL, FI_PEEK | FI_CLAIM);
		if (!ret)
			ret = reap_recv(c, &nomsg);
	} while (!ret && nomsg);
	if (!ret)
		ret = trecvmsg(c, c->dst, FI_CLAIM);
	if (!ret)
		ret = reap_recv(c, NULL);
	return ret ? (int) ret : reap_send(c);
}

static int
run_ops(struct child *c, int op, long n)
{
	int ret = 0;

	for (long i = 0; i < n && !ret; i++)
		ret = op == OP_CLAIM ? one_claim(c) : one_recv(c);
	return ret;
}

/* --serve NAME: warm up both ops, say "ready", then per command line
 *     "slice OP N"  N operations -> "slice cpu U peeks P" (CPU seconds,
 *                   peeks made)
 *     "quit"        exit */
static int
serve_main(int server)
{
	struct mrlt_pair_opts xo = {.prov = "tcp;ofi_rxm", .caps = FI_TAGGED};
	struct child c = {.size = (size_t) bu_env_clamp("CLAIM_BENCH_SIZE",
							16384, 1, 1 << 20)};
	char line[128], name[16];
	int ret;

	ret = mrlt_pair_open(&xo, &c.pair);
	if (ret)
		return ret == -FI_ENODATA ? 77 : 1;
	if ((server == S_HOOK) != (c.pair.mrl != NULL)) {
		fprintf(stderr, "claim_bench %s: the hook is %s the path\n",
			server_names[server], c.pair.mrl ? "in" : "not in");
		ret = 1;
	}
	c.src = aligned_alloc(4096, (c.size + 4095) / 4096 * 4096);
	c.dst = aligned_alloc(4096, (c.size + 4095) / 4096 * 4096);
	if (!ret && (!c.src || !c.dst))
		ret = 1;
	if (!ret) {
		memset(c.src, 0x5c, c.size);
		ret = mrlt_pair_mr_reg(&c.pair, c.src, c.size, FI_SEND,
				       &c.src_mr);
	}
	for (int op = 0; op < NOPS && !ret; op++)
		ret = run_ops(&c, op, 200);
	if (!ret)
		bu_serve_answer("ready\n");
	while (!ret && bu_serve_gets(line, sizeof(line))) {
		long n = 0, p0 = c.peeks;
		int op = -1;
		double u0;

		if (!strcmp(line, "quit\n"))
			break;
		if (sscanf(line, "slice %15s %ld", name, &n) == 2)
			for (int o = 0; o < NOPS; o++)
				if (!strcmp(name, op_names[o]))
					op = o;
		if (op < 0 || n < 1) {
			fprintf(stderr, "claim_bench child: bad command: %s",
				line);
			ret = 1;
			break;
		}
		u0 = bu_cpu_s();
		ret = run_ops(&c, op, n);
		bu_serve_answer("slice cpu %.9f peeks %ld\n", bu_cpu_s() - u0,
				c.peeks - p0);
	}
	if (ret > 1 || ret < 0)
		fprintf(stderr, "claim_bench %s: %s\n", server_names[server],
			fi_strerror(-ret));
	if (c.src_mr)
		fi_close(&c.src_mr->fid);
	mrlt_pair_close(&c.pair);
	free(c.src);
	free(c.dst);
	return ret ? 1 : 0;
}

/* ---- parent ---------------------------------------------------------- */

static void
child_env(void *arg)
{
	bu_child_env();
	unsetenv("FI_MRLEASE_MIN_SIZE");
	if (*(int *) arg == S_HOOK)
		setenv("FI_HOOK", "mrlease", 1);
	else
		unsetenv("FI_HOOK");
}

/* CPU microseconds per operation of each (server, op) slice, per round. */
static double us[NSERVERS][NOPS][MAX_ROUNDS];
static double peeks_per_claim[NSERVERS][MAX_ROUNDS];

static int
slice(struct bu_server *s, int op, long n, int server, int r)
{
	char cmd[64], ans[128];
	double cpu;
	long peeks;
	int ret;

	snprintf(cmd, sizeof(cmd), "slice %s %ld", op_names[op], n);
	ret = bu_server_ask(s, cmd, ans, sizeof(ans));
	if (ret)
		return ret;
	if (sscanf(ans, "slice cpu %lf peeks %ld", &cpu, &peeks) != 2 ||
	    cpu <= 0) {
		fprintf(stderr, "claim_bench: %s answered: %s", s->name, ans);
		return -FI_EOTHER;
	}
	us[server][op][r] = cpu / (double) n * 1e6;
	if (op == OP_CLAIM)
		peeks_per_claim[server][r] = (double) peeks / (double) n;
	return 0;
}

/* Median and quartiles of v[0..n) into q[3]. */
static void
quartiles(double *v, int n, double q[3])
{
	q[0] = bu_quantile(v, n, 0.25);
	q[1] = bu_quantile(v, n, 0.5);
	q[2] = bu_quantile(v, n, 0.75);
}

static int
parent_main(void)
{
	int rounds =
		(int) bu_env_clamp("CLAIM_BENCH_ROUNDS", 30, 1, MAX_ROUNDS);
	long n = bu_env_clamp("CLAIM_BENCH_OPS", 2000, 10, 1000000);
	int ids[NSERVERS] = {S_BARE, S_HOOK}, order[NSERVERS * NOPS];
	double v[MAX_ROUNDS], added[NOPS][3], diff[3], med[NSERVERS][NOPS],
		peeks[NSERVERS];
	struct bu_server sv[NSERVERS];
	char machine[256];
	int ret, cpu;

	signal(SIGPIPE, SIG_IGN);
	cpu = bu_pin_one_cpu("CLAIM_BENCH_CPU");
	bu_machine(machine, sizeof(machine));
	printf("# claim_bench: %ld B tagged receives over tcp;ofi_rxm, desc "
	       "NULL, plain and claimed, without and with FI_HOOK=mrlease: %d "
	       "rounds of %ld operations per slice, CPU %d\n# %s, load %.2f\n",
	       (long) bu_env_clamp("CLAIM_BENCH_SIZE", 16384, 1, 1 << 20),
	       rounds, n, cpu, machine, bu_load1());
	ret = bu_servers_start(sv, NSERVERS, server_names, child_env, ids);
	if (ret == -FI_ENODATA) {
		printf("RESULT skipped=1\n");
		return 0;
	}
	for (int r = 0; r < rounds && !ret; r++) {
		bu_shuffle(order, NSERVERS * NOPS, r);
		for (int k = 0; k < NSERVERS * NOPS && !ret; k++)
			ret = slice(&sv[order[k] / NOPS], order[k] % NOPS, n,
				    order[k] / NOPS, r);
	}
	ret = bu_servers_end(sv, NSERVERS, ret);
	if (ret) {
		fprintf(stderr, "claim_bench: %s\n", fi_strerror(-ret));
		return 1;
	}
	for (int s = 0; s < NSERVERS; s++) {
		for (int op = 0; op < NOPS; op++) {
			memcpy(v, us[s][op], sizeof(double) * (size_t) rounds);
			med[s][op] = bu_median(v, rounds);
		}
		memcpy(v, peeks_per_claim[s], sizeof(double) * (size_t) rounds);
		peeks[s] = bu_median(v, rounds);
	}
	for (int op = 0; op < NOPS; op++) {
		for (int r = 0; r < rounds; r++)
			v[r] = us[S_HOOK][op][r] - us[S_BARE][op][r];
		quartiles(v, rounds, added[op]);
	}
	for (int r = 0; r < rounds; r++)
		v[r] = (us[S_HOOK][OP_CLAIM][r] - us[S_BARE][OP_CLAIM][r]) -
		       (us[S_HOOK][OP_RECV][r] - us[S_BARE][OP_RECV][r]);
	quartiles(v, rounds, diff);
	printf("# CPU us per operation, median slice: %12s %12s\n", "bare",
	       "hook");
	for (int op = 0; op < NOPS; op++)
		printf("  %-38s %12.2f %12.2f\n", op_names[op], med[S_BARE][op],
		       med[S_HOOK][op]);
	printf("# peeks per claim (median slice): bare %.2f, hook %.2f\n",
	       peeks[S_BARE], peeks[S_HOOK]);
	printf("# added by the hook, us per operation, median of the paired "
	       "per-round difference [quartiles]:\n");
	for (int op = 0; op < NOPS; op++)
		printf("  %-6s %6.2f [%6.2f %6.2f]\n", op_names[op],
		       added[op][1], added[op][0], added[op][2]);
	printf("  claim minus recv %6.2f [%6.2f %6.2f]\n", diff[1], diff[0],
	       diff[2]);
	printf("RESULT recv_added_us=%.2f claim_added_us=%.2f "
	       "claim_minus_recv_us=%.2f peeks_per_claim=%.2f\n",
	       added[OP_RECV][1], added[OP_CLAIM][1], diff[1], peeks[S_HOOK]);
	return 0;
}

int
main(int argc, char **argv)
{
	return bu_main(argc, argv, server_names, NSERVERS, serve_main,
		       parent_main);
}
