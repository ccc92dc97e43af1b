/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/cost_bench: what mrlease saves where registrations are expensive.
 * Over tcp a registration is a table insert, so the
 * mrcheck provider is stacked below and given a registration cost
 * model (FI_MRCHECK_REG_COST*, fi_mrcheck(7)): every registration on
 * the domain the application opened spends a + b * bytes of its thread's
 * CPU time busy, by default UCX's InfiniBand model (a = 16 us, b = 0.06 ns
 * per byte). mrcheck runs with FI_MRCHECK_OFF=1 (the charge, no checks;
 * COST_BENCH_CHECK=1 turns its checks on too), so what differs between
 * modes is what an application pays.
 *
 * fi_write message rate over loopback tcp;ofi_rxm, 4 KiB to 4 MiB, each
 * write's source one of a working set of buffers taken in turn, into one
 * registered target, COST_BENCH_WINDOW writes in flight. Four modes, each
 * in processes of its own (libfabric reads FI_HOOK once per process):
 *
 *   app    FI_HOOK=mrcheck; the application registers each buffer of its
 *          working set once (the limit: no registration while measured)
 *   perop  FI_HOOK=mrcheck; the application registers each operand before
 *          its write and closes it at its completion (what an application
 *          without a cache does)
 *   lease  FI_HOOK='mrcheck;mrlease', FI_MRLEASE_MIN_SIZE=0, desc NULL:
 *          the cache registers each buffer once, then every write hits
 *   evict  as lease with FI_MRLEASE_MAX_COUNT=EVICT_CAP and a working set
 *          of EVICT_BUFS buffers, larger than the cache plus the window:
 *          every write misses, registers and evicts (the cache's worst
 *          case: what it costs when it cannot help)
 *
 * The working set of app, perop and lease is WORK_BUFS buffers. Every
 * child warms up each size (registering what it keeps) before it says
 * ready, so the figures are "once warm".
 *
 * Method (xfer_bench's). One server child per mode, all pinned to one CPU
 * (COST_BENCH_CPU, default the highest allowed, -1 unpinned); the parent
 * commands one timed slice at a time, the others wait in read(). Per size,
 * every round runs one slice of each mode in a pseudo-random order, of the
 * same number of writes (about SLICE_SECONDS at the modes' median rate,
 * calibrated in the first generation); a round's figure is the ratio of
 * two of its slices, so drift over seconds cancels. A ratio is the median
 * over generations of each generation's median of those paired ratios,
 * with the quartiles of every round's as the resolution.
 * COST_BENCH_GENERATIONS sets of fresh children share the rounds, since a
 * process keeps a bias of its own that pairing cannot cancel: the median of
 * the generations' medians keeps one biased child from moving the figure.
 *
 * Each slice also reports the registrations mrcheck charged and, in the
 * leased modes, the cache's misses and evictions; the run fails when a mode
 * did not do what it must (app or lease charged in a warm slice, perop not
 * once per write, evict not missing on most writes, the charge not
 * spending the model's time), so a cache that stopped caching cannot pass
 * for a fast one.
 *
 * Two clocks time each slice: elapsed time, what the application sees,
 * and the child's CPU time (CLOCK_PROCESS_CPUTIME_ID), what it spent. The
 * loops poll and never sleep, so alone on the CPU the two agree; on a
 * shared machine other processes take the CPU for part of a slice, which
 * only the elapsed figure counts. Every figure is given by both (RESULT
 * keys with _cpu for CPU time).
 *
 * Figures per size: each mode's median slice rate; lease/app (target
 * >= 0.98), lease/perop (what the cache saves, the figure users choose a
 * cache for), evict/perop and perop/app, each the median (above) of the paired
 * per-round ratio; saved_us, the time per write the cache saves against
 * perop (1/perop - 1/lease, paired, its median as the ratios'), beside
 * charge_us, the CPU time the model charged per registration; added_ns, the
 * time per write the hook adds against app (1/lease - 1/app, the same way):
 * lease/app in absolute terms, which do not move with the machine's speed
 * as the ratio does.
 *
 * Environment: COST_BENCH_ROUNDS (default 40), COST_BENCH_GENERATIONS
 * (default 5), COST_BENCH_WINDOW (writes in flight, default 8),
 * COST_BENCH_CPU, COST_BENCH_PROV (default tcp;ofi_rxm), COST_BENCH_CHECK,
 * FI_MRCHECK_REG_COST_NS and FI_MRCHECK_REG_COST_NS_PER_BYTE (the model; passed
 * to the children), BENCH_TIMEOUT (seconds a child may take to answer),
 * BENCH_DATA_DIR (write cost_bench.dat there for bench/plot.sh).
 *
 * A server by hand: printf 'slice 65536 100\nquit\n' | cost_bench --serve
 * lease (it sets its own FI_* environment only when started by the
 * parent). Last line: RESULT key=value ...
 */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_rma.h>

#include "../test/common/xfer_util.h"
#include "bench_util.h"
#include "bench_window.h"

enum { M_APP, M_PEROP, M_LEASE, M_EVICT, NMODES };
static const char *const mode_names[NMODES] = {"app", "perop", "lease",
					       "evict"};

static const size_t sizes[] = {4096, 16384, 65536, 262144, 1048576, 4194304};
#define NSIZES	(sizeof(sizes) / sizeof(sizes[0]))
#define MAX_BUF ((size_t) 4 << 20)

/* Working sets: WORK_BUFS fits any cache; EVICT_BUFS is larger than
 * EVICT_CAP plus the writes in flight, whose entries a lease keeps. */
#define WORK_BUFS  4
#define EVICT_BUFS 24
#define EVICT_CAP  4

#define MAX_ROUNDS    200
#define SLICE_SECONDS 0.12
#define CALIB_SECONDS 0.03

static const char *
bench_prov(void)
{
	return bu_env_str("COST_BENCH_PROV", "tcp;ofi_rxm");
}

static int
window_size(void)
{
	return (int) bu_env_clamp("COST_BENCH_WINDOW", 8, 1, BU_WINDOW_MAX);
}

static bool
mode_leases(int mode)
{
	return mode == M_LEASE || mode == M_EVICT;
}

/* ---- server: one mode ------------------------------------------------ */

struct child {
	int mode, window;
	struct mrlt_pair pair;
	char *bufs, *dst;
	size_t nbufs, next;
	struct fid_mr *buf_mr[EVICT_BUFS]; /* app */
	struct fid_mr *dst_mr;
	struct bu_window ops; /* the writes in flight */
	char who[32];
	size_t size; /* of run_writes' writes */
};

/* What a slice did, from mrcheck's and the cache's statistics. */
struct counts {
	uint64_t charged, charged_ns, misses, evictions;
};

static void
counts_now(struct child *c, struct counts *n)
{
	struct mrcheck_ops *chk =
		c->pair.chk_all ? c->pair.chk_all : c->pair.chk;
	struct mrcheck_stats cs;
	struct fi_mrlease_stats ls;

	memset(n, 0, sizeof(*n));
	if (chk && !chk->query(chk, &cs, sizeof(cs))) {
		n->charged = cs.reg_cost_charged;
		n->charged_ns = cs.reg_cost_ns;
	}
	if (c->pair.mrl && !c->pair.mrl->query_stats(NULL, &ls, sizeof(ls))) {
		n->misses = ls.misses;
		n->evictions = ls.evictions;
	}
}

/* One write of c->size bytes into slot (bu_window_run's post). */
static int
post_write(void *arg, struct bu_slot *s)
{
	struct child *c = arg;
	size_t size = c->size, b = c->next++ % c->nbufs;
	char *src = c->bufs + b * MAX_BUF;
	void *desc = NULL;
	ssize_t ret;

	if (c->mode == M_PEROP) {
		ret = fi_mr_reg(c->pair.domain, src, size, FI_WRITE, 0,
				0x10000 +
					(uint64_t) bu_window_index(&c->ops, s),
				0, &s->mr, NULL);
		if (ret)
			goto err;
		desc = fi_mr_desc(s->mr);
	} else if (c->mode == M_APP) {
		desc = fi_mr_desc(c->buf_mr[b]);
	}
	while ((ret = fi_write(c->pair.ep[0], src, size, desc, c->pair.addr[1],
			       mrlt_pair_rma_addr(&c->pair, c->dst, c->dst),
			       fi_mr_key(c->dst_mr), &s->ctx)) == -FI_EAGAIN)
		(void) fi_cq_read(c->pair.cq, NULL, 0);
	if (!ret)
		return 0;
err:
	bu_window_put(&c->ops, s);
	fprintf(stderr, "cost_bench %s: posting a %zu-byte write: %s\n",
		mode_names[c->mode], size, fi_strerror((int) -ret));
	return (int) ret;
}

static int
run_writes(struct child *c, size_t size, long n)
{
	c->size = size;
	return bu_window_run(&c->ops, n, post_write, c);
}

static void
child_close(struct child *c)
{
	for (size_t b = 0; b < c->nbufs; b++)
		if (c->buf_mr[b])
			fi_close(&c->buf_mr[b]->fid);
	if (c->dst_mr)
		fi_close(&c->dst_mr->fid);
	mrlt_pair_close(&c->pair);
	free(c->bufs);
	free(c->dst);
}

/* Open the pair, the buffers and what the mode registers up front.
 * 0, 77 (provider unavailable) or 1. */
static int
child_open(struct child *c, int mode)
{
	struct mrlt_pair_opts xo = {.prov = bench_prov(),
				    .caps = FI_MSG | FI_RMA};
	int ret;

	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->window = window_size();
	c->nbufs = mode == M_EVICT ? EVICT_BUFS : WORK_BUFS;
	ret = mrlt_pair_open(&xo, &c->pair);
	if (ret)
		return ret == -FI_ENODATA ? 77 : 1;
	if (mode_leases(mode) && !c->pair.mrl) {
		fprintf(stderr, "cost_bench %s: mrlease is not on the domain\n",
			mode_names[mode]);
		goto err;
	}
	c->bufs = aligned_alloc(4096, c->nbufs * MAX_BUF);
	c->dst = aligned_alloc(4096, MAX_BUF);
	if (!c->bufs || !c->dst)
		goto err;
	memset(c->bufs, 0x5a, c->nbufs * MAX_BUF);
	memset(c->dst, 0, MAX_BUF);
	ret = mrlt_pair_mr_reg(&c->pair, c->dst, MAX_BUF, FI_REMOTE_WRITE,
			       &c->dst_mr);
	for (size_t b = 0; !ret && mode == M_APP && b < c->nbufs; b++)
		ret = mrlt_pair_mr_reg(&c->pair, c->bufs + b * MAX_BUF, MAX_BUF,
				       FI_WRITE, &c->buf_mr[b]);
	if (ret) {
		fprintf(stderr, "cost_bench %s: fi_mr_reg: %s\n",
			mode_names[mode], fi_strerror(-ret));
		goto err;
	}
	snprintf(c->who, sizeof(c->who), "cost_bench %s", mode_names[mode]);
	bu_window_init(&c->ops, c->pair.cq, c->window, c->who);
	return 0;

err:
	child_close(c);
	return 1;
}

/*
 * --serve MODE: warm up every size (smallest first, so the leased modes'
 * entries end up covering the largest operand, as a warm cache would),
 * say "ready", then per command line:
 *     "slice SIZE N"    N writes -> "slice secs S cpu U charged C ns T misses M
 *                       evictions E" (S elapsed, U CPU seconds)
 *     "calib SIZE SECS" writes for about SECS -> "calib n N secs S"
 *     "quit"            exit
 */
static int
serve_main(int mode)
{
	struct child c;
	char line[128];
	int ret = child_open(&c, mode);

	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++)
		ret = run_writes(&c, sizes[i], (long) (3 * c.nbufs) + c.window);
	if (!ret)
		bu_serve_answer("ready\n");
	while (!ret && bu_serve_gets(line, sizeof(line))) {
		struct counts a, b;
		size_t size;
		long n = 0;
		double secs, t0, u0;

		if (!strcmp(line, "quit\n"))
			break;
		if (sscanf(line, "calib %zu %lf", &size, &secs) == 2 &&
		    size <= MAX_BUF) {
			t0 = bu_now_s();
			do {
				ret = run_writes(&c, size, c.window);
				n += c.window;
			} while (!ret && bu_now_s() - t0 < secs);
			bu_serve_answer("calib n %ld secs %.9f\n", n,
					bu_now_s() - t0);
			continue;
		}
		if (sscanf(line, "slice %zu %ld", &size, &n) != 2 || !size ||
		    size > MAX_BUF || n < 1) {
			fprintf(stderr, "cost_bench child: bad command: %s",
				line);
			ret = 1;
			break;
		}
		counts_now(&c, &a);
		u0 = bu_cpu_s();
		t0 = bu_now_s();
		ret = run_writes(&c, size, n);
		secs = bu_now_s() - t0;
		u0 = bu_cpu_s() - u0;
		counts_now(&c, &b);
		bu_serve_answer("slice secs %.9f cpu %.9f charged %" PRIu64
				" ns %" PRIu64 " misses %" PRIu64
				" evictions %" PRIu64 "\n",
				secs, u0, b.charged - a.charged,
				b.charged_ns - a.charged_ns,
				b.misses - a.misses, b.evictions - a.evictions);
	}
	child_close(&c);
	return ret ? 1 : 0;
}

/* ---- parent ---------------------------------------------------------- */

static void
child_env(void *arg)
{
	int mode = *(int *) arg;
	char evict_cap[16];

	bu_child_env_mrcheck();
	setenv("FI_HOOK", mode_leases(mode) ? "mrcheck;mrlease" : "mrcheck", 1);
	setenv("FI_MRCHECK_REG_COST", "1", 1);
	/* Its checks, when on, play a provider requiring FI_MR_LOCAL. */
	setenv("FI_MRCHECK_MR_LOCAL", "1", 1);
	if (getenv("COST_BENCH_CHECK") && *getenv("COST_BENCH_CHECK") == '1')
		unsetenv("FI_MRCHECK_OFF");
	else
		setenv("FI_MRCHECK_OFF", "1", 1);
	setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
	unsetenv("FI_MRLEASE_MAX_COUNT");
	unsetenv("FI_MRLEASE_MAX_SIZE");
	if (mode == M_EVICT) {
		snprintf(evict_cap, sizeof(evict_cap), "%d", EVICT_CAP);
		setenv("FI_MRLEASE_MAX_COUNT", evict_cap, 1);
	}
}

/* The two clocks a slice is timed by: elapsed (what the application
 * sees) and the child's CPU time (what it spent: on this shared machine
 * other processes take the CPU for part of a slice, which only the
 * elapsed figure counts). */
enum { T_WALL, T_CPU, NCLOCKS };
static const char *const clock_names[NCLOCKS] = {"elapsed", "CPU time"};
static const char *const clock_keys[NCLOCKS] = {"", "_cpu"};

/* One slice's answer. */
struct sample {
	double rate[NCLOCKS];
	double charged, ns, misses, evictions; /* per write */
};

static struct sample samples[NSIZES][NMODES][MAX_ROUNDS];
static long slice_writes[NSIZES];
static int mode_ids[NMODES] = {M_APP, M_PEROP, M_LEASE, M_EVICT};

static int
slice(struct bu_server *s, size_t size, long n, struct sample *out)
{
	char cmd[64], ans[256];
	double secs, cpu, charged, ns, misses, evictions;
	int ret;

	snprintf(cmd, sizeof(cmd), "slice %zu %ld", size, n);
	ret = bu_server_ask(s, cmd, ans, sizeof(ans));
	if (ret)
		return ret;
	if (sscanf(ans,
		   "slice secs %lf cpu %lf charged %lf ns %lf misses %lf "
		   "evictions %lf",
		   &secs, &cpu, &charged, &ns, &misses, &evictions) != 6 ||
	    secs <= 0 || cpu <= 0) {
		fprintf(stderr, "cost_bench: %s answered: %s", s->name, ans);
		return -FI_EOTHER;
	}
	out->rate[T_WALL] = n / secs;
	out->rate[T_CPU] = n / cpu;
	out->charged = charged / n;
	out->ns = charged ? ns / charged : 0;
	out->misses = misses / n;
	out->evictions = evictions / n;
	return 0;
}

/* Writes per slice at size i: SLICE_SECONDS at the modes' median rate. */
static int
calibrate(struct bu_server sv[NMODES], size_t i)
{
	double rate[NMODES], secs;
	char cmd[64], ans[128];
	long n;
	int ret;

	for (int m = 0; m < NMODES; m++) {
		snprintf(cmd, sizeof(cmd), "calib %zu %.3f", sizes[i],
			 CALIB_SECONDS);
		ret = bu_server_ask(&sv[m], cmd, ans, sizeof(ans));
		if (ret)
			return ret;
		if (sscanf(ans, "calib n %ld secs %lf", &n, &secs) != 2 ||
		    secs <= 0)
			return -FI_EOTHER;
		rate[m] = n / secs;
	}
	slice_writes[i] = (long) (SLICE_SECONDS * bu_median(rate, NMODES));
	if (slice_writes[i] < 4L * window_size())
		slice_writes[i] = 4L * window_size();
	return 0;
}

/* Rounds [r0, r1) of every size with one generation of servers. */
static int
measure_generation(int r0, int r1)
{
	struct bu_server sv[NMODES];
	int order[NMODES], ret;

	ret = bu_servers_start(sv, NMODES, mode_names, child_env, mode_ids);
	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		if (!r0)
			ret = calibrate(sv, i);
		for (int r = r0; r < r1 && !ret; r++) {
			bu_shuffle(order, NMODES, (int) i * MAX_ROUNDS + r);
			for (int k = 0; k < NMODES && !ret; k++)
				ret = slice(&sv[order[k]], sizes[i],
					    slice_writes[i],
					    &samples[i][order[k]][r]);
		}
	}
	return bu_servers_end(sv, NMODES, ret);
}

/* The pairs reported: numerator mode, denominator mode. */
enum { P_LEASE_APP, P_LEASE_PEROP, P_EVICT_PEROP, P_PEROP_APP, NPAIRS };
static const int pairs[NPAIRS][2] = {
	{M_LEASE, M_APP},
	{M_LEASE, M_PEROP},
	{M_EVICT, M_PEROP},
	{M_PEROP, M_APP},
};
static const char *const pair_keys[NPAIRS] = {"lease_app", "lease_perop",
					      "evict_perop", "perop_app"};

struct figures {
	double rate[NCLOCKS][NMODES]; /* median slice rate */
	double med[NCLOCKS][NPAIRS], q1[NCLOCKS][NPAIRS], q3[NCLOCKS][NPAIRS];
	double charged[NMODES], misses[NMODES],
		evictions[NMODES]; /* per write, mean */
	double ns_per_charge; /* perop's mean charge */
	/* Per write, the median (as the ratios') of the paired difference of
	 * the inverse rates, [quartiles]: lease against perop (saved_us) and
	 * lease against app (added_ns) */
	double saved_us[NCLOCKS], saved_q1[NCLOCKS], saved_q3[NCLOCKS];
	double added_ns[NCLOCKS], added_q1[NCLOCKS], added_q3[NCLOCKS];
};

/* Time per write of mode `slow` minus mode `fast`, round by round at size
 * i by clock k, in `unit`s: its median as the ratios', and quartiles. */
static void
paired_cost(size_t i, int k, int slow, int fast, double unit, int rounds,
	    int gens, double *med, double *q1, double *q3)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = (1 / samples[i][slow][r].rate[k] -
			1 / samples[i][fast][r].rate[k]) /
		       unit;
	bu_figure_of_rounds(v, rounds, gens, med, q1, q3);
}

static void
figures_of(size_t i, int rounds, int gens, struct figures *f)
{
	double v[MAX_ROUNDS], ns = 0;

	memset(f, 0, sizeof(*f));
	for (int m = 0; m < NMODES; m++) {
		for (int r = 0; r < rounds; r++) {
			const struct sample *s = &samples[i][m][r];

			f->charged[m] += s->charged / rounds;
			f->misses[m] += s->misses / rounds;
			f->evictions[m] += s->evictions / rounds;
			if (m == M_PEROP)
				ns += s->ns / rounds;
		}
	}
	f->ns_per_charge = ns;
	for (int k = 0; k < NCLOCKS; k++) {
		for (int m = 0; m < NMODES; m++) {
			for (int r = 0; r < rounds; r++)
				v[r] = samples[i][m][r].rate[k];
			f->rate[k][m] = bu_median(v, rounds);
		}
		for (int p = 0; p < NPAIRS; p++) {
			for (int r = 0; r < rounds; r++)
				v[r] = samples[i][pairs[p][0]][r].rate[k] /
				       samples[i][pairs[p][1]][r].rate[k];
			bu_figure_of_rounds(v, rounds, gens, &f->med[k][p],
					    &f->q1[k][p], &f->q3[k][p]);
		}
		paired_cost(i, k, M_PEROP, M_LEASE, 1e-6, rounds, gens,
			    &f->saved_us[k], &f->saved_q1[k], &f->saved_q3[k]);
		paired_cost(i, k, M_LEASE, M_APP, 1e-9, rounds, gens,
			    &f->added_ns[k], &f->added_q1[k], &f->added_q3[k]);
	}
}

/* What each mode must have done in its warm slices; false (said) if not. */
static bool
sane(size_t i, const struct figures *f, double model_ns)
{
	bool ok = true;

	if (f->charged[M_APP] > 0 || f->charged[M_LEASE] > 0) {
		fprintf(stderr,
			"cost_bench: %zu B: app or lease registered while warm "
			"(%.3f, %.3f per write)\n",
			sizes[i], f->charged[M_APP], f->charged[M_LEASE]);
		ok = false;
	}
	if (f->charged[M_PEROP] < 0.999 || f->charged[M_PEROP] > 1.001) {
		fprintf(stderr,
			"cost_bench: %zu B: perop charged %.3f registrations "
			"per write, not 1\n",
			sizes[i], f->charged[M_PEROP]);
		ok = false;
	}
	if (f->misses[M_EVICT] < 0.9 || f->charged[M_EVICT] < 0.9) {
		fprintf(stderr,
			"cost_bench: %zu B: evict missed %.3f and registered "
			"%.3f per write: the working set fits the cache\n",
			sizes[i], f->misses[M_EVICT], f->charged[M_EVICT]);
		ok = false;
	}
	if (f->ns_per_charge < model_ns) {
		fprintf(stderr,
			"cost_bench: %zu B: a charge spent %.0f ns, the model "
			"asks %.0f\n",
			sizes[i], f->ns_per_charge, model_ns);
		ok = false;
	}
	return ok;
}

static void
print_figures(const struct figures fig[NSIZES], int rounds)
{
	for (int k = 0; k < NCLOCKS; k++) {
		printf("# by %s: median slice rate per mode (writes/s); "
		       "ratios: median of the generations' medians of the "
		       "round's paired ratio [quartiles over %d rounds]; "
		       "saved_us: per write, lease against perop, paired; "
		       "added_ns: per write, lease against app, paired\n",
		       clock_names[k], rounds);
		printf("# %8s %9s %9s %9s %9s %21s %21s %21s %23s %20s\n",
		       "size", "app/s", "perop/s", "lease/s", "evict/s",
		       "lease/app", "lease/perop", "evict/perop", "saved_us",
		       "added_ns");
		for (size_t i = 0; i < NSIZES; i++) {
			const struct figures *f = &fig[i];

			printf("  %8zu %9.0f %9.0f %9.0f %9.0f", sizes[i],
			       f->rate[k][M_APP], f->rate[k][M_PEROP],
			       f->rate[k][M_LEASE], f->rate[k][M_EVICT]);
			for (int p = 0; p < P_PEROP_APP; p++)
				printf("  %5.3f [%5.3f %5.3f]", f->med[k][p],
				       f->q1[k][p], f->q3[k][p]);
			printf("  %6.1f [%6.1f %6.1f]", f->saved_us[k],
			       f->saved_q1[k], f->saved_q3[k]);
			printf("  %4.0f [%5.0f %5.0f]\n", f->added_ns[k],
			       f->added_q1[k], f->added_q3[k]);
		}
	}
	printf("# per write, mean over the timed slices: registrations charged "
	       "(app/perop/lease/evict), cache misses and evictions "
	       "(lease/evict), "
	       "perop's CPU ns per charge; writes per slice\n");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct figures *f = &fig[i];

		printf("# %8zu charged %.3f/%.3f/%.3f/%.3f misses %.3f/%.3f "
		       "evictions "
		       "%.3f/%.3f charge %.0f ns; %ld writes\n",
		       sizes[i], f->charged[0], f->charged[1], f->charged[2],
		       f->charged[3], f->misses[M_LEASE], f->misses[M_EVICT],
		       f->evictions[M_LEASE], f->evictions[M_EVICT],
		       f->ns_per_charge, slice_writes[i]);
	}
}

static void
write_data(const struct figures fig[NSIZES], int rounds, double a, double b)
{
	FILE *f = bu_data_open("cost_bench");

	if (!f)
		return;
	fprintf(f, "# prov: %s\n# model: a=%.0f ns b=%.3f ns/B\n# rounds: %d\n",
		bench_prov(), a, b, rounds);
	fprintf(f,
		"# model_charge_us: perop's mean CPU time per registration\n");
	fprintf(f, "# columns, then the same again by CPU time: size app perop "
		   "lease "
		   "evict lease_app q1 q3 lease_perop q1 q3 evict_perop q1 q3 "
		   "saved_us q1 q3"
		   " | model_charge_us\n");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct figures *g = &fig[i];

		fprintf(f, "%zu", sizes[i]);
		for (int k = 0; k < NCLOCKS; k++) {
			fprintf(f, " %.1f %.1f %.1f %.1f", g->rate[k][M_APP],
				g->rate[k][M_PEROP], g->rate[k][M_LEASE],
				g->rate[k][M_EVICT]);
			for (int p = 0; p < P_PEROP_APP; p++)
				fprintf(f, " %.4f %.4f %.4f", g->med[k][p],
					g->q1[k][p], g->q3[k][p]);
			fprintf(f, " %.2f %.2f %.2f", g->saved_us[k],
				g->saved_q1[k], g->saved_q3[k]);
		}
		fprintf(f, " %.2f\n", g->ns_per_charge / 1e3);
	}
	fclose(f);
}

static int
parent_main(void)
{
	int rounds = (int) bu_env_clamp("COST_BENCH_ROUNDS", 40, 1, MAX_ROUNDS);
	int gens = (int) bu_env_clamp("COST_BENCH_GENERATIONS", 5, 1, rounds);
	struct figures fig[NSIZES];
	double a, b, min_lease_app[NCLOCKS] = {1e9, 1e9};
	double min_lease_perop[NCLOCKS] = {1e9, 1e9};
	bool ok = true;
	int ret = 0, cpu;

	/* A child that died leaves a broken pipe: a write error, not a signal.
	 */
	signal(SIGPIPE, SIG_IGN);
	bu_reg_cost_model(&a, &b);
	cpu = bu_pin_one_cpu("COST_BENCH_CPU");
	printf("# cost_bench: fi_write rate over %s under mrcheck's "
	       "registration cost "
	       "model (a=%.0f ns + b=%.3f ns/B, CPU busy), modes interleaved "
	       "slice by "
	       "slice: %d rounds per size by %d generations of children, "
	       "window %d, "
	       "children on CPU %d (-1: not pinned), load %.2f\n",
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
		fprintf(stderr, "cost_bench: measurement failed\n");
		return 1;
	}
	for (size_t i = 0; i < NSIZES; i++) {
		figures_of(i, rounds, gens, &fig[i]);
		ok &= sane(i, &fig[i], a + b * (double) sizes[i]);
		for (int k = 0; k < NCLOCKS; k++) {
			if (fig[i].med[k][P_LEASE_APP] < min_lease_app[k])
				min_lease_app[k] = fig[i].med[k][P_LEASE_APP];
			if (fig[i].med[k][P_LEASE_PEROP] < min_lease_perop[k])
				min_lease_perop[k] =
					fig[i].med[k][P_LEASE_PEROP];
		}
	}
	print_figures(fig, rounds);
	write_data(fig, rounds, a, b);
	printf("# load average (1 min) at the end: %.2f\n", bu_load1());
	printf("RESULT prov=%s rounds=%d cpu=%d load1=%.2f sane=%d "
	       "reg_cost_ns=%.0f "
	       "reg_cost_ns_per_byte=%.3f",
	       bench_prov(), rounds, cpu, bu_load1(), ok, a, b);
	for (int k = 0; k < NCLOCKS; k++)
		for (size_t i = 0; i < NSIZES; i++) {
			for (int p = 0; p < NPAIRS; p++)
				printf(" %s%s_%zu=%.3f", pair_keys[p],
				       clock_keys[k], sizes[i],
				       fig[i].med[k][p]);
			printf(" saved_us%s_%zu=%.1f added_ns%s_%zu=%.0f",
			       clock_keys[k], sizes[i], fig[i].saved_us[k],
			       clock_keys[k], sizes[i], fig[i].added_ns[k]);
		}
	for (size_t i = 0; i < NSIZES; i++)
		printf(" charge_us_%zu=%.1f", sizes[i],
		       fig[i].ns_per_charge / 1e3);
	for (int k = 0; k < NCLOCKS; k++)
		printf(" min_lease_app%s=%.3f min_lease_perop%s=%.3f",
		       clock_keys[k], min_lease_app[k], clock_keys[k],
		       min_lease_perop[k]);
	printf("\n");
	return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return bu_main(argc, argv, mode_names, NMODES, serve_main, parent_main);
}
