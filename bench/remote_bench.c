/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/remote_bench: the per-request remote pattern of an RPC framework
 * (Mercury's HG_Bulk_create / HG_Bulk_free): for each request the target
 * registers one of a few buffers with fi_mr_regattr for FI_REMOTE_WRITE |
 * FI_REMOTE_READ, the peer writes into it with the key, and the target
 * closes the MR. What FI_MRLEASE_REMOTE=cache saves there, against
 * forwarding every registration and against the limit, keys the
 * application registers once and keeps.
 *
 * Over loopback tcp;ofi_rxm (REMOTE_BENCH_PROV), FI_HOOK='mrcheck;mrlease'
 * in every mode, mrcheck with FI_MRCHECK_OFF=1 (no checks): below mrlease
 * it counts the registrations that reach the provider, and charges each
 * with its registration cost model (FI_MRCHECK_REG_COST*, fi_mrcheck(7)):
 *
 *   forward  FI_MRLEASE_REMOTE=forward (mrlease's default): every request
 *            registers at the provider
 *   cache    FI_MRLEASE_REMOTE=cache: a request whose registration matches
 *            one mrlease kept is served from it
 *   app      the application registers each buffer once and reuses its key
 *            (no registration per request: the limit), with cache's
 *            configuration, so that the two processes differ only in the
 *            registrations: FI_MRLEASE_REMOTE=cache starts the memory
 *            monitor, whose threads end glibc's single-threaded shortcuts
 *            (monitor_bench's reuse_mt says more), which an RPC server,
 *            multi-threaded already, does not have to lose
 *
 * each with the verbs-like model (UCX's InfiniBand figures: a = 16 us,
 * b = 0.06 ns per byte, or FI_MRCHECK_REG_COST_NS / _NS_PER_BYTE) and
 * without (a = b = 0: counted, not charged), so six configurations, each
 * in processes of its own (libfabric reads FI_HOOK and the parameters once
 * per process). Sizes 4 KiB .. 4 MiB; REMOTE_BENCH_WINDOW requests in
 * flight (default 4), request k on buffer k mod 4, each with a requested
 * key of its own buffer (so a domain without FI_MR_PROV_KEY can match it);
 * the writes' sources are registered once by the application in every
 * mode.
 *
 * Method (cost_bench's): one server child per configuration, all pinned to
 * one CPU (REMOTE_BENCH_CPU, default the highest allowed, -1 unpinned);
 * the parent commands one timed slice at a time. Per size, every round runs
 * one slice of each configuration in a pseudo-random order, of the same
 * number of requests (about SLICE_SECONDS at the configurations' median
 * rate); a ratio is the median over rounds of the round's paired ratio, so
 * drift over seconds cancels, and the rates are medians over rounds.
 * REMOTE_BENCH_GENERATIONS sets of fresh children share the rounds.
 *
 * Figures per size and model: each mode's median request rate, the
 * registrations that reached the provider per 1000 requests (mean over the
 * timed slices, so once warm), cache/app (target >= 0.95) and
 * cache/forward. The run fails when forward does not register once per
 * request or app registers while warm (the bench would measure something
 * else). A cache that does not cache (a build of mrlease without
 * FI_MRLEASE_REMOTE) is said, and reported (remote_cached=0), not failed.
 *
 * Environment: REMOTE_BENCH_ROUNDS (default 20), REMOTE_BENCH_GENERATIONS
 * (default 2), REMOTE_BENCH_WINDOW, REMOTE_BENCH_CPU, REMOTE_BENCH_PROV,
 * FI_MRCHECK_REG_COST_NS and FI_MRCHECK_REG_COST_NS_PER_BYTE (the model),
 * BENCH_TIMEOUT. A server by hand: printf 'slice 65536 100\nquit\n' |
 * remote_bench --serve cache_cost. Last line: RESULT key=value ...
 */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "../test/common/xfer_util.h"
#include "bench_util.h"
#include "bench_window.h"

enum { M_FORWARD, M_CACHE, M_APP, NMODES };
static const char *const mode_names[NMODES] = {"forward", "cache", "app"};
/* Configurations: mode + NMODES * with_cost. */
#define NCONFIGS (2 * NMODES)
static const char *const config_names[NCONFIGS] = {
	"forward", "cache", "app", "forward_cost", "cache_cost", "app_cost"};
static const char *const model_names[2] = {"nocost", "cost"};

static const size_t sizes[] = {4096, 16384, 65536, 262144, 1048576, 4194304};
#define NSIZES	   (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_BUF	   ((size_t) 4 << 20)
#define NBUFS	   4
#define MAX_WINDOW NBUFS
/* Requested keys (domains without FI_MR_PROV_KEY): one per buffer, the
 * same at every request, as an exact match in the cache needs. */
#define KEY_BASE 0x52000

#define MAX_ROUNDS    200
#define SLICE_SECONDS 0.1
#define CALIB_SECONDS 0.03

static const char *
bench_prov(void)
{
	return bu_env_str("REMOTE_BENCH_PROV", "tcp;ofi_rxm");
}

static int
window_size(void)
{
	return (int) bu_env_clamp("REMOTE_BENCH_WINDOW", 4, 1, MAX_WINDOW);
}

/* ---- server: one configuration ---------------------------------------- */

struct child {
	int mode, window;
	struct mrlt_pair pair;
	char *bufs, *src;
	struct fid_mr *src_mr;
	struct fid_mr *app_mr[NBUFS]; /* app: registered once */
	struct bu_window reqs; /* the requests in flight */
	size_t size; /* of run_requests' requests */
	char who[32];
};

/* Registrations that reached the provider, as mrcheck below counts them. */
static uint64_t
registrations(struct child *c)
{
	struct mrcheck_ops *chk =
		c->pair.chk_all ? c->pair.chk_all : mrcheck_loaded_ops();
	struct mrcheck_stats st;

	if (!chk || chk->query(chk, &st, sizeof(st)))
		return 0;
	return st.reg_cost_charged;
}

static int
target_reg(struct child *c, int b, size_t size, struct fid_mr **mr)
{
	struct iovec iov = {.iov_base = c->bufs + (size_t) b * MAX_BUF,
			    .iov_len = size};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE | FI_REMOTE_READ,
		.requested_key = KEY_BASE + (uint64_t) b,
	};

	return fi_mr_regattr(c->pair.domain, &attr, 0, mr);
}

/* One request of c->size bytes: register its buffer (but in app), the
 * peer writes (bu_window_run's post). Each slot owns a buffer: one request
 * at a time on it. The target closes its MR at the write's completion
 * (HG_Bulk_free). */
static int
post_request(void *arg, struct bu_slot *r)
{
	struct child *c = arg;
	int b = bu_window_index(&c->reqs, r);
	size_t size = c->size;
	void *desc = fi_mr_desc(c->src_mr);
	char *dst = c->bufs + (size_t) b * MAX_BUF;
	struct fi_msg_rma msg;
	struct fi_rma_iov rma;
	struct fid_mr *mr;
	struct iovec iov;
	ssize_t ret;

	if (c->mode == M_APP) {
		mr = c->app_mr[b];
	} else {
		ret = target_reg(c, b, size, &r->mr);
		if (ret)
			goto err;
		mr = r->mr;
	}
	iov = (struct iovec){.iov_base = c->src, .iov_len = size};
	rma = (struct fi_rma_iov){
		.addr = mrlt_pair_rma_addr(&c->pair, dst, dst),
		.len = size,
		.key = fi_mr_key(mr)};
	msg = (struct fi_msg_rma){.msg_iov = &iov,
				  .desc = &desc,
				  .iov_count = 1,
				  .addr = c->pair.addr[1],
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = &r->ctx};
	/* Completed once the bytes are at the target, so the target may
	 * close its MR then (Mercury closes it after the RPC's reply). */
	while ((ret = fi_writemsg(c->pair.ep[0], &msg,
				  FI_DELIVERY_COMPLETE | FI_COMPLETION)) ==
	       -FI_EAGAIN)
		(void) fi_cq_read(c->pair.cq, NULL, 0);
	if (!ret)
		return 0;
err:
	bu_window_put(&c->reqs, r);
	fprintf(stderr, "remote_bench %s: a %zu-byte request: %s\n",
		mode_names[c->mode], size, fi_strerror((int) -ret));
	return (int) ret;
}

static int
run_requests(struct child *c, size_t size, long n)
{
	c->size = size;
	return bu_window_run(&c->reqs, n, post_request, c);
}

static void
child_close(struct child *c)
{
	for (int b = 0; b < NBUFS; b++)
		if (c->app_mr[b])
			fi_close(&c->app_mr[b]->fid);
	if (c->src_mr)
		fi_close(&c->src_mr->fid);
	mrlt_pair_close(&c->pair);
	free(c->bufs);
	free(c->src);
}

/* 0, 77 (provider unavailable or unsuitable) or 1. */
static int
child_open(struct child *c, int mode)
{
	struct mrlt_pair_opts xo = {.prov = bench_prov(),
				    .caps = FI_MSG | FI_RMA};
	int ret;

	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->window = window_size();
	ret = mrlt_pair_open(&xo, &c->pair);
	if (ret)
		return ret == -FI_ENODATA ? 77 : 1;
	if (!c->pair.mrl) {
		fprintf(stderr,
			"remote_bench %s: mrlease is not on the domain\n",
			mode_names[mode]);
		goto err;
	}
	/* fi_mr_bind per request would be a pattern of its own. */
	if (c->pair.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		fprintf(stderr, "remote_bench: %s needs FI_MR_ENDPOINT\n",
			bench_prov());
		child_close(c);
		return 77;
	}
	c->bufs = aligned_alloc(4096, NBUFS * MAX_BUF);
	c->src = aligned_alloc(4096, MAX_BUF);
	if (!c->bufs || !c->src)
		goto err;
	memset(c->bufs, 0, NBUFS * MAX_BUF);
	memset(c->src, 0x5a, MAX_BUF);
	ret = fi_mr_reg(c->pair.domain, c->src, MAX_BUF, FI_WRITE, 0,
			KEY_BASE + NBUFS, 0, &c->src_mr, NULL);
	for (int b = 0; !ret && mode == M_APP && b < NBUFS; b++)
		ret = target_reg(c, b, MAX_BUF, &c->app_mr[b]);
	if (ret) {
		fprintf(stderr, "remote_bench %s: registering: %s\n",
			mode_names[mode], fi_strerror(-ret));
		goto err;
	}
	snprintf(c->who, sizeof(c->who), "remote_bench %s", mode_names[mode]);
	bu_window_init(&c->reqs, c->pair.cq, c->window, c->who);
	return 0;

err:
	child_close(c);
	return 1;
}

/*
 * --serve CONFIG: warm up every size, say "ready", then per command line:
 *     "slice SIZE N"    N requests -> "slice secs S regs R"
 *     "calib SIZE SECS" requests for about SECS -> "calib n N secs S"
 *     "quit"            exit
 */
static int
serve_main(int config)
{
	struct child c;
	char line[128];
	int ret = child_open(&c, config % NMODES);

	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++)
		ret = run_requests(&c, sizes[i], 2 * NBUFS + c.window);
	if (!ret)
		bu_serve_answer("ready\n");
	while (!ret && bu_serve_gets(line, sizeof(line))) {
		uint64_t regs;
		size_t size;
		long n = 0;
		double secs, t0;

		if (!strcmp(line, "quit\n"))
			break;
		if (sscanf(line, "calib %zu %lf", &size, &secs) == 2 && size &&
		    size <= MAX_BUF) {
			t0 = bu_now_s();
			do {
				ret = run_requests(&c, size, c.window);
				n += c.window;
			} while (!ret && bu_now_s() - t0 < secs);
			bu_serve_answer("calib n %ld secs %.9f\n", n,
					bu_now_s() - t0);
			continue;
		}
		if (sscanf(line, "slice %zu %ld", &size, &n) != 2 || !size ||
		    size > MAX_BUF || n < 1) {
			fprintf(stderr, "remote_bench child: bad command: %s",
				line);
			ret = 1;
			break;
		}
		regs = registrations(&c);
		t0 = bu_now_s();
		ret = run_requests(&c, size, n);
		secs = bu_now_s() - t0;
		regs = registrations(&c) - regs;
		bu_serve_answer("slice secs %.9f regs %" PRIu64 "\n", secs,
				regs);
	}
	child_close(&c);
	return ret ? 1 : 0;
}

/* ---- parent ---------------------------------------------------------- */

static void
child_env(void *arg)
{
	int config = *(int *) arg, mode = config % NMODES;

	bu_child_env_mrcheck();
	setenv("FI_HOOK", "mrcheck;mrlease", 1);
	setenv("FI_MRCHECK_OFF", "1", 1);
	setenv("FI_MRLEASE_REMOTE", mode == M_FORWARD ? "forward" : "cache", 1);
	unsetenv("FI_MRLEASE_MAX_COUNT");
	unsetenv("FI_MRLEASE_MAX_SIZE");
	/* Without the model mrcheck still counts the registrations: a model
	 * of zero cost. */
	if (config < NMODES) {
		setenv("FI_MRCHECK_REG_COST_NS", "0", 1);
		setenv("FI_MRCHECK_REG_COST_NS_PER_BYTE", "0", 1);
	} else {
		setenv("FI_MRCHECK_REG_COST", "1", 1);
	}
}

struct sample {
	double rate; /* requests per second */
	double regs; /* registrations at the provider per request */
};

static struct sample samples[NSIZES][NCONFIGS][MAX_ROUNDS];
static long slice_requests[NSIZES];
static int config_ids[NCONFIGS] = {0, 1, 2, 3, 4, 5};

static int
slice(struct bu_server *s, size_t size, long n, struct sample *out)
{
	char cmd[64], ans[256];
	double secs, regs;
	int ret;

	snprintf(cmd, sizeof(cmd), "slice %zu %ld", size, n);
	ret = bu_server_ask(s, cmd, ans, sizeof(ans));
	if (ret)
		return ret;
	if (sscanf(ans, "slice secs %lf regs %lf", &secs, &regs) != 2 ||
	    secs <= 0) {
		fprintf(stderr, "remote_bench: %s answered: %s", s->name, ans);
		return -FI_EOTHER;
	}
	out->rate = n / secs;
	out->regs = regs / n;
	return 0;
}

/* Requests per slice at size i: SLICE_SECONDS at the median rate. */
static int
calibrate(struct bu_server sv[NCONFIGS], size_t i)
{
	double rate[NCONFIGS], secs;
	char cmd[64], ans[128];
	long n;
	int ret;

	for (int m = 0; m < NCONFIGS; m++) {
		snprintf(cmd, sizeof(cmd), "calib %zu %.3f", sizes[i],
			 CALIB_SECONDS);
		ret = bu_server_ask(&sv[m], cmd, ans, sizeof(ans));
		if (ret)
			return ret;
		if (sscanf(ans, "calib n %ld secs %lf", &n, &secs) != 2 ||
		    secs <= 0 || n < 1)
			return -FI_EOTHER;
		rate[m] = n / secs;
	}
	slice_requests[i] = (long) (SLICE_SECONDS * bu_median(rate, NCONFIGS));
	if (slice_requests[i] < 4L * window_size())
		slice_requests[i] = 4L * window_size();
	return 0;
}

static int
measure_generation(int r0, int r1)
{
	struct bu_server sv[NCONFIGS];
	int order[NCONFIGS], ret;

	ret = bu_servers_start(sv, NCONFIGS, config_names, child_env,
			       config_ids);
	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		if (!r0)
			ret = calibrate(sv, i);
		for (int r = r0; r < r1 && !ret; r++) {
			bu_shuffle(order, NCONFIGS, (int) i * MAX_ROUNDS + r);
			for (int k = 0; k < NCONFIGS && !ret; k++)
				ret = slice(&sv[order[k]], sizes[i],
					    slice_requests[i],
					    &samples[i][order[k]][r]);
		}
	}
	return bu_servers_end(sv, NCONFIGS, ret);
}

/* Figures of one size under one model (cost 0 or 1). */
struct figures {
	double rate[NMODES]; /* median over rounds */
	double regs_k[NMODES]; /* registrations per 1000 requests, mean */
	double cache_app, cache_app_q1, cache_app_q3;
	double cache_fwd, cache_fwd_q1, cache_fwd_q3;
};

static void
paired(size_t i, int cost, int num, int den, int rounds, double *med,
       double *q1, double *q3)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = samples[i][num + NMODES * cost][r].rate /
		       samples[i][den + NMODES * cost][r].rate;
	*q1 = bu_quantile(v, rounds, 0.25);
	*med = bu_quantile(v, rounds, 0.5);
	*q3 = bu_quantile(v, rounds, 0.75);
}

static void
figures_of(size_t i, int cost, int rounds, struct figures *f)
{
	double v[MAX_ROUNDS];

	memset(f, 0, sizeof(*f));
	for (int m = 0; m < NMODES; m++) {
		for (int r = 0; r < rounds; r++) {
			v[r] = samples[i][m + NMODES * cost][r].rate;
			f->regs_k[m] += 1000 *
					samples[i][m + NMODES * cost][r].regs /
					rounds;
		}
		f->rate[m] = bu_median(v, rounds);
	}
	paired(i, cost, M_CACHE, M_APP, rounds, &f->cache_app, &f->cache_app_q1,
	       &f->cache_app_q3);
	paired(i, cost, M_CACHE, M_FORWARD, rounds, &f->cache_fwd,
	       &f->cache_fwd_q1, &f->cache_fwd_q3);
}

/* forward registers once per request and app never while warm, or the
 * bench measures something else; false (said) if not. */
static bool
sane(size_t i, int cost, const struct figures *f)
{
	if (f->regs_k[M_FORWARD] >= 999 && f->regs_k[M_FORWARD] <= 1001 &&
	    f->regs_k[M_APP] == 0)
		return true;
	fprintf(stderr,
		"remote_bench: %zu B %s: forward registered %.1f and app %.1f "
		"per 1000 requests (want 1000 and 0)\n",
		sizes[i], model_names[cost], f->regs_k[M_FORWARD],
		f->regs_k[M_APP]);
	return false;
}

static void
print_figures(const struct figures fig[2][NSIZES], int rounds)
{
	for (int cost = 0; cost < 2; cost++) {
		printf("# %s: median request rate per mode (requests/s), "
		       "registrations at the provider per 1000 requests, "
		       "ratios: median over %d rounds of the paired ratio "
		       "[quartiles]\n",
		       cost ? "with the registration cost model" :
			      "without a registration cost",
		       rounds);
		printf("# %8s %9s %9s %9s %7s %7s %7s %21s %21s\n", "size",
		       "forward/s", "cache/s", "app/s", "fwd_rk", "cache_rk",
		       "app_rk", "cache/app", "cache/forward");
		for (size_t i = 0; i < NSIZES; i++) {
			const struct figures *f = &fig[cost][i];

			printf("  %8zu %9.0f %9.0f %9.0f %7.1f %7.1f %7.1f  "
			       "%5.3f [%5.3f %5.3f]  %5.3f [%5.3f %5.3f]\n",
			       sizes[i], f->rate[M_FORWARD], f->rate[M_CACHE],
			       f->rate[M_APP], f->regs_k[M_FORWARD],
			       f->regs_k[M_CACHE], f->regs_k[M_APP],
			       f->cache_app, f->cache_app_q1, f->cache_app_q3,
			       f->cache_fwd, f->cache_fwd_q1, f->cache_fwd_q3);
		}
	}
	printf("# requests per slice:");
	for (size_t i = 0; i < NSIZES; i++)
		printf(" %zu:%ld", sizes[i], slice_requests[i]);
	printf("\n");
}

static int
parent_main(void)
{
	int rounds =
		(int) bu_env_clamp("REMOTE_BENCH_ROUNDS", 20, 1, MAX_ROUNDS);
	int gens = (int) bu_env_clamp("REMOTE_BENCH_GENERATIONS", 2, 1, rounds);
	static struct figures fig[2][NSIZES];
	double a, b, min_cache_app[2] = {1e9, 1e9}, max_cache_rk = 0;
	bool ok = true, cached;
	int ret = 0, cpu;

	signal(SIGPIPE, SIG_IGN);
	bu_reg_cost_model(&a, &b);
	cpu = bu_pin_one_cpu("REMOTE_BENCH_CPU");
	printf("# remote_bench: per-request remote registrations (register "
	       "for remote write, the peer writes, close) over %s through "
	       "FI_HOOK='mrcheck;mrlease', modes forward, cache, app, without "
	       "and with mrcheck's registration cost model (a=%.0f ns + "
	       "b=%.3f ns/B), interleaved slice by slice: %d rounds per size "
	       "by %d generations of children, window %d, children on CPU %d "
	       "(-1: not pinned), load %.2f\n",
	       bench_prov(), a, b, rounds, gens, window_size(), cpu,
	       bu_load1());
	fflush(stdout);
	for (int g = 0; g < gens && !ret; g++)
		ret = measure_generation(g * rounds / gens,
					 (g + 1) * rounds / gens);
	if (ret == -FI_ENODATA) {
		printf("# provider unavailable: skipped\nRESULT skipped=1\n");
		return 0;
	}
	if (ret) {
		fprintf(stderr, "remote_bench: measurement failed\n");
		return 1;
	}
	for (int cost = 0; cost < 2; cost++) {
		for (size_t i = 0; i < NSIZES; i++) {
			struct figures *f = &fig[cost][i];

			figures_of(i, cost, rounds, f);
			ok &= sane(i, cost, f);
			if (f->cache_app < min_cache_app[cost])
				min_cache_app[cost] = f->cache_app;
			if (f->regs_k[M_CACHE] > max_cache_rk)
				max_cache_rk = f->regs_k[M_CACHE];
		}
	}
	/* Warm, the cache registers nothing; a mrlease that forwards
	 * remote registrations whatever FI_MRLEASE_REMOTE says registers at
	 * every request, as forward does. */
	cached = max_cache_rk < 500;
	print_figures(fig, rounds);
	if (!cached)
		printf("# cache registered %.0f per 1000 requests: this "
		       "mrlease does not cache remote registrations "
		       "(FI_MRLEASE_REMOTE unknown?); cache measured "
		       "forward\n",
		       max_cache_rk);
	printf("# load average (1 min) at the end: %.2f\n", bu_load1());
	printf("RESULT prov=%s rounds=%d cpu=%d load1=%.2f sane=%d "
	       "remote_cached=%d reg_cost_ns=%.0f reg_cost_ns_per_byte=%.3f",
	       bench_prov(), rounds, cpu, bu_load1(), ok, cached, a, b);
	for (int cost = 0; cost < 2; cost++) {
		const char *k = cost ? "_cost" : "";

		for (size_t i = 0; i < NSIZES; i++) {
			const struct figures *f = &fig[cost][i];

			printf(" regs_per_k%s_%zu=%.0f/%.0f/%.0f", k, sizes[i],
			       f->regs_k[M_FORWARD], f->regs_k[M_CACHE],
			       f->regs_k[M_APP]);
			printf(" cache_app%s_%zu=%.3f cache_fwd%s_%zu=%.3f", k,
			       sizes[i], f->cache_app, k, sizes[i],
			       f->cache_fwd);
		}
		printf(" min_cache_app%s=%.3f", k, min_cache_app[cost]);
	}
	printf(" target_cache_app=0.95 target_met=%d\n",
	       min_cache_app[0] >= 0.95 && min_cache_app[1] >= 0.95);
	return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return bu_main(argc, argv, config_names, NCONFIGS, serve_main,
		       parent_main);
}
