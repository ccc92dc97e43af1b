/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/thread_bench: does mrlease's rate scale with posting threads as the
 * provider's does? One FI_THREAD_SAFE domain over
 * loopback tcp;ofi_rxm per process; N = 1 or 2 posting threads, each with
 * an endpoint pair and a CQ of its own on that domain, each writing with
 * fi_write from its own source buffers into its own registered target,
 * THREAD_BENCH_WINDOW writes in flight per thread. Three modes, each in
 * processes of its own (libfabric reads FI_HOOK once per process):
 *
 *   nohook  no hook, the application registers its buffers (desc given)
 *   lease   FI_HOOK=mrlease, FI_MRLEASE_MIN_SIZE=0, desc NULL: every
 *           operand leased from the cache, each thread its own entries
 *   shared  as lease, but every thread writes from the same buffer: one
 *           entry whose reference count all threads write, the cache's
 *           shared state at its most contended
 *
 * A mode's scaling factor is its aggregate rate with 2 threads over its
 * rate with 1; the figure is lease's (and shared's) scaling factor over
 * nohook's (target >= 0.95): what the provider's own locks and the
 * machine's two CPUs allow is the baseline, and a cache whose shared state
 * serialised the threads would fall below it. The same by CPU time
 * (cpu_sr_*): writes per CPU second of the process with 2 threads over
 * with 1, lease's over nohook's. On a shared machine the elapsed scaling
 * follows how much of the two CPUs other processes left; the CPU figure
 * does not, and contention on shared state (cache lines moving between
 * the threads, spinning) shows in it as CPU time per write. The rates of lease
 * over nohook at N = 1 and N = 2 are printed too, with the cache's statistics
 * (every timed lookup a hit).
 *
 * Method (xfer_bench's, unpinned: two threads need both CPUs). One server
 * child per mode, its threads started once and waiting on a condition
 * variable between slices; the idle servers wait in read(). Per size,
 * every round runs the six slices (mode x N) in a pseudo-random order, of
 * the same number of writes per thread (about SLICE_SECONDS at the N = 1
 * median rate). A round's scaling factor of a mode is the ratio of its two
 * slices in that round, and its ratio of scaling factors is lease's over
 * nohook's from the same round; the figure is the median over rounds with
 * quartiles. THREAD_BENCH_GENERATIONS sets of fresh children share the
 * rounds. A slice's time runs from the release of its threads to the last
 * one's last completion.
 *
 * Environment: THREAD_BENCH_ROUNDS (default 40), THREAD_BENCH_GENERATIONS
 * (default 5), THREAD_BENCH_WINDOW (default 16), THREAD_BENCH_PROV (default
 * tcp;ofi_rxm), BENCH_TIMEOUT, BENCH_DATA_DIR (write thread_bench.dat
 * there for bench/plot.sh). A server by hand:
 * printf 'slice 4096 2 1000\nquit\n' | thread_bench --serve lease (its
 * FI_* environment is set only when started by the parent).
 * Last line: RESULT key=value ...
 */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>

#include "../test/common/xfer_util.h"
#include "bench_util.h"

enum { M_NOHOOK, M_LEASE, M_SHARED, NMODES };
static const char *const mode_names[NMODES] = {"nohook", "lease", "shared"};

static const size_t sizes[] = {64, 4096, 65536};
#define NSIZES	    (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_BUF	    ((size_t) 65536)
#define MAX_THREADS 2
#define MAX_WINDOW  64
/* Source buffers per thread, taken in turn. */
#define LANE_BUFS 2

#define MAX_ROUNDS    200
#define SLICE_SECONDS 0.08
#define CALIB_SECONDS 0.3

static const char *
bench_prov(void)
{
	return bu_env_str("THREAD_BENCH_PROV", "tcp;ofi_rxm");
}

static int
window_size(void)
{
	return (int) bu_env_clamp("THREAD_BENCH_WINDOW", 16, 1, MAX_WINDOW);
}

/* ---- server: one mode, its threads ---------------------------------- */

/* One posting thread's objects: lane 0 uses the pair's endpoints and CQ,
 * lane 1 has its own, on the same domain and AV. */
struct lane {
	struct fid_ep *ep[2];
	struct fid_cq *cq;
	fi_addr_t addr[2];
	bool owned;
	char *src, *dst;
	struct fid_mr *src_mr, *dst_mr;
	size_t next;
	struct fi_context2 ctx[MAX_WINDOW];
	int free_ctx[MAX_WINDOW], nfree;
	/* The slice this thread runs; set under the server's lock. */
	size_t size;
	long n;
	int ret;
};

struct server {
	int mode, window;
	struct mrlt_pair pair;
	struct lane lane[MAX_THREADS];
	pthread_t thread[MAX_THREADS];
	int nthreads; /* started */
	/* lock protects go, active, done and quit; the threads wait on
	 * start, the server thread on finished. */
	pthread_mutex_t lock;
	pthread_cond_t start, finished;
	uint64_t go; /* slice generation */
	int active, done;
	bool quit;
};

static int
lane_open(struct server *sv, struct lane *l)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .size = 1024};
	struct mrlt_pair *p = &sv->pair;
	char name[2][256];
	size_t len;
	int ret;

	l->owned = true;
	ret = fi_cq_open(p->domain, &cq_attr, &l->cq, NULL);
	for (int i = 0; !ret && i < 2; i++) {
		ret = fi_endpoint(p->domain, p->info, &l->ep[i], NULL);
		if (!ret)
			ret = fi_ep_bind(l->ep[i], &p->av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(l->ep[i], &l->cq->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(l->ep[i]);
		len = sizeof(name[i]);
		if (!ret)
			ret = fi_getname(&l->ep[i]->fid, name[i], &len);
	}
	for (int i = 0; !ret && i < 2; i++)
		if (fi_av_insert(p->av, name[i], 1, &l->addr[i], 0, NULL) != 1)
			ret = -FI_EOTHER;
	return ret;
}

static void
lane_close(struct lane *l)
{
	if (l->src_mr)
		fi_close(&l->src_mr->fid);
	if (l->dst_mr)
		fi_close(&l->dst_mr->fid);
	if (l->owned) {
		for (int i = 0; i < 2; i++)
			if (l->ep[i])
				fi_close(&l->ep[i]->fid);
		if (l->cq)
			fi_close(&l->cq->fid);
	}
	free(l->src);
	free(l->dst);
}

static int
lane_post(struct server *sv, struct lane *l, size_t size)
{
	/* shared: every thread's operand is lane 0's first buffer. */
	char *src = sv->mode == M_SHARED ?
			    sv->lane[0].src :
			    l->src + (l->next++ % LANE_BUFS) * MAX_BUF;
	void *desc = sv->mode == M_NOHOOK ? fi_mr_desc(l->src_mr) : NULL;
	int c = l->free_ctx[--l->nfree];
	ssize_t ret;

	while ((ret = fi_write(l->ep[0], src, size, desc, l->addr[1],
			       mrlt_pair_rma_addr(&sv->pair, l->dst, l->dst),
			       fi_mr_key(l->dst_mr), &l->ctx[c])) == -FI_EAGAIN)
		(void) fi_cq_read(l->cq, NULL, 0);
	if (ret) {
		l->free_ctx[l->nfree++] = c;
		fprintf(stderr, "thread_bench %s: fi_write: %s\n",
			mode_names[sv->mode], fi_strerror((int) -ret));
	}
	return (int) ret;
}

static int
lane_reap(struct server *sv, struct lane *l, int keep)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n;

	while (sv->window - l->nfree > keep) {
		n = fi_cq_read(l->cq, e, 16);
		if (n == -FI_EAGAIN)
			continue;
		if (n < 0) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(l->cq, &err, 0);
			fprintf(stderr, "thread_bench %s: write failed: %s\n",
				mode_names[sv->mode], fi_strerror(err.err));
			return -FI_EIO;
		}
		for (ssize_t i = 0; i < n; i++)
			l->free_ctx[l->nfree++] =
				(int) ((struct fi_context2 *) e[i].op_context -
				       l->ctx);
	}
	return 0;
}

static int
lane_run(struct server *sv, struct lane *l, size_t size, long n)
{
	int ret;

	for (long i = 0; i < n; i++) {
		if (!l->nfree && (ret = lane_reap(sv, l, sv->window - 1)))
			return ret;
		if ((ret = lane_post(sv, l, size)))
			return ret;
	}
	return lane_reap(sv, l, 0);
}

struct worker_arg {
	struct server *sv;
	int idx;
};

/* A posting thread: one slice per generation it is active in. */
static void *
worker(void *p)
{
	struct worker_arg *a = p;
	struct server *sv = a->sv;
	struct lane *l = &sv->lane[a->idx];
	uint64_t seen = 0;

	for (;;) {
		bool mine;

		pthread_mutex_lock(&sv->lock);
		while (!sv->quit && sv->go == seen)
			pthread_cond_wait(&sv->start, &sv->lock);
		if (sv->quit) {
			pthread_mutex_unlock(&sv->lock);
			return NULL;
		}
		seen = sv->go;
		mine = a->idx < sv->active;
		pthread_mutex_unlock(&sv->lock);
		if (!mine)
			continue;
		l->ret = lane_run(sv, l, l->size, l->n);
		pthread_mutex_lock(&sv->lock);
		sv->done++;
		pthread_cond_signal(&sv->finished);
		pthread_mutex_unlock(&sv->lock);
	}
}

/* One slice: n writes of size in each of the first nthreads threads at
 * once; its elapsed seconds, or a negative code. */
static double
run_slice(struct server *sv, size_t size, int nthreads, long n)
{
	double t0, t1;
	int ret = 0;

	for (int t = 0; t < nthreads; t++) {
		sv->lane[t].size = size;
		sv->lane[t].n = n;
	}
	pthread_mutex_lock(&sv->lock);
	sv->active = nthreads;
	sv->done = 0;
	t0 = bu_now_s();
	sv->go++;
	pthread_cond_broadcast(&sv->start);
	while (sv->done < nthreads)
		pthread_cond_wait(&sv->finished, &sv->lock);
	t1 = bu_now_s();
	pthread_mutex_unlock(&sv->lock);
	for (int t = 0; t < nthreads; t++)
		if (sv->lane[t].ret)
			ret = sv->lane[t].ret;
	return ret ? ret : t1 - t0;
}

static void
server_close(struct server *sv)
{
	pthread_mutex_lock(&sv->lock);
	sv->quit = true;
	pthread_cond_broadcast(&sv->start);
	pthread_mutex_unlock(&sv->lock);
	for (int t = 0; t < sv->nthreads; t++)
		pthread_join(sv->thread[t], NULL);
	for (int t = MAX_THREADS - 1; t >= 0; t--)
		lane_close(&sv->lane[t]);
	mrlt_pair_close(&sv->pair);
}

/* 0, 77 (provider unavailable or not thread safe) or 1. */
static int
server_open(struct server *sv, int mode, struct worker_arg args[MAX_THREADS])
{
	struct mrlt_pair_opts xo = {.prov = bench_prov(),
				    .caps = FI_MSG | FI_RMA,
				    .thread_safe = true};
	int ret;

	memset(sv, 0, sizeof(*sv));
	sv->mode = mode;
	sv->window = window_size();
	pthread_mutex_init(&sv->lock, NULL);
	pthread_cond_init(&sv->start, NULL);
	pthread_cond_init(&sv->finished, NULL);
	ret = mrlt_pair_open(&xo, &sv->pair);
	if (ret)
		return ret == -FI_ENODATA ? 77 : 1;
	if (sv->pair.info->domain_attr->threading != FI_THREAD_SAFE) {
		fprintf(stderr,
			"thread_bench: %s grants no FI_THREAD_SAFE domain\n",
			bench_prov());
		mrlt_pair_close(&sv->pair);
		return 77;
	}
	if (mode != M_NOHOOK && !sv->pair.mrl) {
		fprintf(stderr,
			"thread_bench %s: mrlease is not on the domain\n",
			mode_names[mode]);
		goto err;
	}
	sv->lane[0] =
		(struct lane){.ep = {sv->pair.ep[0], sv->pair.ep[1]},
			      .cq = sv->pair.cq,
			      .addr = {sv->pair.addr[0], sv->pair.addr[1]}};
	for (int t = 0; t < MAX_THREADS; t++) {
		struct lane *l = &sv->lane[t];

		if (t && (ret = lane_open(sv, l)))
			goto err;
		l->src = aligned_alloc(4096, LANE_BUFS * MAX_BUF);
		l->dst = aligned_alloc(4096, MAX_BUF);
		if (!l->src || !l->dst)
			goto err;
		memset(l->src, 0x5a, LANE_BUFS * MAX_BUF);
		memset(l->dst, 0, MAX_BUF);
		ret = mrlt_pair_mr_reg(&sv->pair, l->dst, MAX_BUF,
				       FI_REMOTE_WRITE, &l->dst_mr);
		if (!ret && mode == M_NOHOOK)
			ret = mrlt_pair_mr_reg(&sv->pair, l->src,
					       LANE_BUFS * MAX_BUF, FI_WRITE,
					       &l->src_mr);
		if (ret)
			goto err;
		for (int i = 0; i < sv->window; i++)
			l->free_ctx[l->nfree++] = i;
	}
	for (int t = 0; t < MAX_THREADS; t++) {
		args[t] = (struct worker_arg){.sv = sv, .idx = t};
		if (pthread_create(&sv->thread[t], NULL, worker, &args[t]))
			goto err;
		sv->nthreads++;
	}
	return 0;

err:
	fprintf(stderr, "thread_bench %s: setting up: %s\n", mode_names[mode],
		fi_strerror(-ret));
	server_close(sv);
	return 1;
}

static uint64_t
cache_stat(struct server *sv, bool misses)
{
	struct fi_mrlease_stats st;

	if (!sv->pair.mrl || sv->pair.mrl->query_stats(NULL, &st, sizeof(st)))
		return 0;
	return misses ? st.misses : st.lookups;
}

/*
 * --serve MODE: warm up (every size, every thread), say "ready", then
 *     "slice SIZE T N"  N writes in each of T threads at once ->
 *                       "slice secs S cpu U lookups L misses M" (U: the
 *                       process's CPU seconds over the slice)
 *     "quit"
 */
static int
serve_main(int mode)
{
	static struct server sv;
	struct worker_arg args[MAX_THREADS];
	char line[128];
	int ret = server_open(&sv, mode, args);
	double secs = 0;

	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && secs >= 0; i++)
		secs = run_slice(&sv, sizes[i], MAX_THREADS, 4L * sv.window);
	ret = secs < 0;
	if (!ret)
		bu_serve_answer("ready\n");
	while (!ret && bu_serve_gets(line, sizeof(line))) {
		uint64_t l0, m0;
		double u0;
		size_t size;
		long n;
		int t;

		if (!strcmp(line, "quit\n"))
			break;
		if (sscanf(line, "slice %zu %d %ld", &size, &t, &n) != 3 ||
		    !size || size > MAX_BUF || t < 1 || t > MAX_THREADS ||
		    n < 1) {
			fprintf(stderr, "thread_bench child: bad command: %s",
				line);
			ret = 1;
			break;
		}
		l0 = cache_stat(&sv, false);
		m0 = cache_stat(&sv, true);
		u0 = bu_cpu_s();
		secs = run_slice(&sv, size, t, n);
		u0 = bu_cpu_s() - u0;
		if (secs < 0) {
			ret = 1;
			break;
		}
		bu_serve_answer("slice secs %.9f cpu %.9f lookups %" PRIu64
				" misses %" PRIu64 "\n",
				secs, u0, cache_stat(&sv, false) - l0,
				cache_stat(&sv, true) - m0);
	}
	server_close(&sv);
	return ret;
}

/* ---- parent ---------------------------------------------------------- */

static void
child_env(void *arg)
{
	int mode = *(int *) arg;

	bu_child_env();
	if (mode == M_NOHOOK)
		unsetenv("FI_HOOK");
	else
		setenv("FI_HOOK", "mrlease", 1);
	setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
}

/* [size][mode][threads - 1][round]: aggregate writes per second, and
 * writes per second of the process's CPU time. */
static double rate[NSIZES][NMODES][MAX_THREADS][MAX_ROUNDS];
static double crate[NSIZES][NMODES][MAX_THREADS][MAX_ROUNDS];
static long slice_writes[NSIZES];
static uint64_t lookups[NSIZES][NMODES], misses[NSIZES][NMODES];
static int mode_ids[NMODES] = {M_NOHOOK, M_LEASE, M_SHARED};

/* One slice; its aggregate rate in *r, per CPU second in *cr. */
static int
slice(struct bu_server *s, size_t i, int threads, long n, double *r, double *cr,
      uint64_t *lk, uint64_t *ms)
{
	char cmd[64], ans[160];
	uint64_t l, m;
	double secs, cpu;
	int ret;

	snprintf(cmd, sizeof(cmd), "slice %zu %d %ld", sizes[i], threads, n);
	ret = bu_server_ask(s, cmd, ans, sizeof(ans));
	if (ret)
		return ret;
	if (sscanf(ans,
		   "slice secs %lf cpu %lf lookups %" SCNu64 " misses %" SCNu64,
		   &secs, &cpu, &l, &m) != 4 ||
	    secs <= 0 || cpu <= 0) {
		fprintf(stderr, "thread_bench: %s answered: %s", s->name, ans);
		return -FI_EOTHER;
	}
	*r = (double) threads * n / secs;
	*cr = (double) threads * n / cpu;
	*lk += l;
	*ms += m;
	return 0;
}

/*
 * Writes per thread per slice at size i: SLICE_SECONDS at the modes' median
 * rate with one thread. Each mode writes for CALIB_SECONDS in short
 * slices: a single short burst runs faster than the steady state (the
 * writes only fill the socket buffers), and slices calibrated on it run
 * several times too long.
 */
static int
calibrate(struct bu_server sv[NMODES], size_t i)
{
	double cal[NMODES], r, cr;
	long n = 200;
	int ret = 0;

	for (int m = 0; m < NMODES && !ret; m++) {
		double secs = 0;
		long done = 0;

		while (!ret && secs < CALIB_SECONDS) {
			ret = slice(&sv[m], i, 1, n, &r, &cr, &lookups[i][m],
				    &misses[i][m]);
			secs += n / r;
			done += n;
		}
		cal[m] = done / secs;
	}
	slice_writes[i] =
		ret ? 0 : (long) (SLICE_SECONDS * bu_median(cal, NMODES));
	if (slice_writes[i] < 4L * window_size())
		slice_writes[i] = 4L * window_size();
	return ret;
}

static int
measure_generation(int r0, int r1)
{
	struct bu_server sv[NMODES];
	int order[NMODES * MAX_THREADS], ret;

	ret = bu_servers_start(sv, NMODES, mode_names, child_env, mode_ids);
	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++) {
		if (!r0) {
			ret = calibrate(sv, i);
			memset(lookups[i], 0, sizeof(lookups[i]));
			memset(misses[i], 0, sizeof(misses[i]));
		}
		for (int r = r0; r < r1 && !ret; r++) {
			bu_shuffle(order, NMODES * MAX_THREADS,
				   (int) i * MAX_ROUNDS + r);
			for (int k = 0; k < NMODES * MAX_THREADS && !ret; k++) {
				int m = order[k] / MAX_THREADS,
				    t = order[k] % MAX_THREADS;

				ret = slice(&sv[m], i, t + 1, slice_writes[i],
					    &rate[i][m][t][r],
					    &crate[i][m][t][r], &lookups[i][m],
					    &misses[i][m]);
			}
		}
	}
	return bu_servers_end(sv, NMODES, ret);
}

struct figures {
	double rate[NMODES][MAX_THREADS]; /* medians */
	double scale[NMODES], scale_q1[NMODES], scale_q3[NMODES];
	/* lease and shared: scaling factor over nohook's, per round */
	double sr[NMODES], sr_q1[NMODES], sr_q3[NMODES];
	/* lease and shared over nohook at each N, per round */
	double vs[NMODES][MAX_THREADS];
	/* By CPU time: writes per CPU second with 2 threads over with 1 (1
	 * when a second thread costs no CPU per write, whatever share of the
	 * machine the process got), and that over nohook's, per round */
	double eff[NMODES], er[NMODES], er_q1[NMODES], er_q3[NMODES];
};

static void
figures_of(size_t i, int rounds, struct figures *f)
{
	double v[MAX_ROUNDS];

	for (int m = 0; m < NMODES; m++) {
		for (int t = 0; t < MAX_THREADS; t++) {
			memcpy(v, rate[i][m][t],
			       sizeof(double) * (size_t) rounds);
			f->rate[m][t] = bu_median(v, rounds);
			for (int r = 0; r < rounds; r++)
				v[r] = rate[i][m][t][r] /
				       rate[i][M_NOHOOK][t][r];
			f->vs[m][t] = bu_median(v, rounds);
		}
		for (int r = 0; r < rounds; r++)
			v[r] = rate[i][m][1][r] / rate[i][m][0][r];
		f->scale_q1[m] = bu_quantile(v, rounds, 0.25);
		f->scale[m] = bu_quantile(v, rounds, 0.5);
		f->scale_q3[m] = bu_quantile(v, rounds, 0.75);
		for (int r = 0; r < rounds; r++)
			v[r] = (rate[i][m][1][r] / rate[i][m][0][r]) /
			       (rate[i][M_NOHOOK][1][r] /
				rate[i][M_NOHOOK][0][r]);
		f->sr_q1[m] = bu_quantile(v, rounds, 0.25);
		f->sr[m] = bu_quantile(v, rounds, 0.5);
		f->sr_q3[m] = bu_quantile(v, rounds, 0.75);
		for (int r = 0; r < rounds; r++)
			v[r] = crate[i][m][1][r] / crate[i][m][0][r];
		f->eff[m] = bu_median(v, rounds);
		for (int r = 0; r < rounds; r++)
			v[r] = (crate[i][m][1][r] / crate[i][m][0][r]) /
			       (crate[i][M_NOHOOK][1][r] /
				crate[i][M_NOHOOK][0][r]);
		f->er_q1[m] = bu_quantile(v, rounds, 0.25);
		f->er[m] = bu_quantile(v, rounds, 0.5);
		f->er_q3[m] = bu_quantile(v, rounds, 0.75);
	}
}

static void
print_figures(const struct figures fig[NSIZES], int rounds)
{
	printf("# aggregate writes/s, medians; scaling = rate(2)/rate(1); "
	       "scaling "
	       "ratio = the mode's scaling over nohook's; all paired per "
	       "round, "
	       "median over %d rounds [quartiles]\n",
	       rounds);
	printf("# %6s %9s %9s %9s %9s %9s %9s %21s %21s %21s %21s\n", "size",
	       "nohook1", "nohook2", "lease1", "lease2", "shared1", "shared2",
	       "nohook scaling", "lease scaling", "lease/nohook scaling",
	       "shared/nohook scaling");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct figures *f = &fig[i];

		printf("  %6zu", sizes[i]);
		for (int m = 0; m < NMODES; m++)
			printf(" %9.0f %9.0f", f->rate[m][0], f->rate[m][1]);
		for (int m = 0; m < 2; m++)
			printf("  %5.3f [%5.3f %5.3f]", f->scale[m],
			       f->scale_q1[m], f->scale_q3[m]);
		for (int m = M_LEASE; m < NMODES; m++)
			printf("  %5.3f [%5.3f %5.3f]", f->sr[m], f->sr_q1[m],
			       f->sr_q3[m]);
		printf("\n");
	}
	printf("# lease/nohook and shared/nohook rate at N = 1 and 2 (paired "
	       "medians); "
	       "cache lookups and misses over every timed slice (lease, "
	       "shared); "
	       "writes per thread per slice\n");
	for (size_t i = 0; i < NSIZES; i++)
		printf("# %6zu lease %.3f %.3f shared %.3f %.3f; lookups "
		       "%" PRIu64 " %" PRIu64 " misses %" PRIu64 " %" PRIu64
		       "; %ld writes\n",
		       sizes[i], fig[i].vs[M_LEASE][0], fig[i].vs[M_LEASE][1],
		       fig[i].vs[M_SHARED][0], fig[i].vs[M_SHARED][1],
		       lookups[i][M_LEASE], lookups[i][M_SHARED],
		       misses[i][M_LEASE], misses[i][M_SHARED],
		       slice_writes[i]);
	printf("# by CPU time: writes per CPU second with 2 threads over with "
	       "1 "
	       "(nohook, lease, shared), and lease's and shared's over "
	       "nohook's "
	       "[quartiles]\n");
	for (size_t i = 0; i < NSIZES; i++)
		printf("# %6zu %.3f %.3f %.3f  lease %.3f [%.3f %.3f]  shared "
		       "%.3f "
		       "[%.3f %.3f]\n",
		       sizes[i], fig[i].eff[M_NOHOOK], fig[i].eff[M_LEASE],
		       fig[i].eff[M_SHARED], fig[i].er[M_LEASE],
		       fig[i].er_q1[M_LEASE], fig[i].er_q3[M_LEASE],
		       fig[i].er[M_SHARED], fig[i].er_q1[M_SHARED],
		       fig[i].er_q3[M_SHARED]);
}

static void
write_data(const struct figures fig[NSIZES], int rounds)
{
	FILE *f = bu_data_open("thread_bench");

	if (!f)
		return;
	fprintf(f, "# prov: %s\n# rounds: %d\n", bench_prov(), rounds);
	fprintf(f, "# size nohook1 nohook2 lease1 lease2 shared1 shared2 "
		   "scale_nohook q1 q3 scale_lease q1 q3 scale_shared q1 q3 "
		   "sr_lease q1 q3 sr_shared q1 q3 cpu_sr_lease q1 q3 "
		   "cpu_sr_shared q1 q3\n");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct figures *g = &fig[i];

		fprintf(f, "%zu", sizes[i]);
		for (int m = 0; m < NMODES; m++)
			fprintf(f, " %.1f %.1f", g->rate[m][0], g->rate[m][1]);
		for (int m = 0; m < NMODES; m++)
			fprintf(f, " %.4f %.4f %.4f", g->scale[m],
				g->scale_q1[m], g->scale_q3[m]);
		for (int m = M_LEASE; m < NMODES; m++)
			fprintf(f, " %.4f %.4f %.4f", g->sr[m], g->sr_q1[m],
				g->sr_q3[m]);
		for (int m = M_LEASE; m < NMODES; m++)
			fprintf(f, " %.4f %.4f %.4f", g->er[m], g->er_q1[m],
				g->er_q3[m]);
		fprintf(f, "\n");
	}
	fclose(f);
}

static int
parent_main(void)
{
	int rounds =
		(int) bu_env_clamp("THREAD_BENCH_ROUNDS", 40, 1, MAX_ROUNDS);
	int gens = (int) bu_env_clamp("THREAD_BENCH_GENERATIONS", 5, 1, rounds);
	struct figures fig[NSIZES];
	double min_sr[NMODES] = {0, 1e9, 1e9}, min_er[NMODES] = {0, 1e9, 1e9};
	bool hits = true;
	int ret = 0;

	signal(SIGPIPE, SIG_IGN);
	printf("# thread_bench: fi_write rate over %s, 1 and 2 posting threads "
	       "on one "
	       "FI_THREAD_SAFE domain, %d rounds per size by %d generations of "
	       "children, window %d per thread, unpinned on %ld CPUs, load "
	       "%.2f\n",
	       bench_prov(), rounds, gens, window_size(),
	       sysconf(_SC_NPROCESSORS_ONLN), bu_load1());
	fflush(stdout);
	for (int g = 0; g < gens && !ret; g++)
		ret = measure_generation(g * rounds / gens,
					 (g + 1) * rounds / gens);
	if (ret == -FI_ENODATA) {
		printf("# provider unavailable or not thread safe: skipped\n"
		       "RESULT skipped=1\n");
		return 0;
	}
	if (ret) {
		fprintf(stderr, "thread_bench: measurement failed\n");
		return 1;
	}
	for (size_t i = 0; i < NSIZES; i++) {
		figures_of(i, rounds, &fig[i]);
		for (int m = M_LEASE; m < NMODES; m++) {
			if (fig[i].sr[m] < min_sr[m])
				min_sr[m] = fig[i].sr[m];
			if (fig[i].er[m] < min_er[m])
				min_er[m] = fig[i].er[m];
			/* Warm: a timed lookup that missed would measure the
			 * registrar, not the cache's shared state. */
			if (misses[i][m] || !lookups[i][m]) {
				fprintf(stderr,
					"thread_bench: %zu B %s: %" PRIu64
					" lookups, %" PRIu64
					" misses while warm\n",
					sizes[i], mode_names[m], lookups[i][m],
					misses[i][m]);
				hits = false;
			}
		}
	}
	print_figures(fig, rounds);
	write_data(fig, rounds);
	printf("# load average (1 min) at the end: %.2f\n", bu_load1());
	printf("RESULT prov=%s rounds=%d load1=%.2f sane=%d", bench_prov(),
	       rounds, bu_load1(), hits);
	for (size_t i = 0; i < NSIZES; i++)
		printf(" scale_nohook_%zu=%.3f scale_lease_%zu=%.3f "
		       "scale_shared_%zu=%.3f "
		       "sr_lease_%zu=%.3f sr_shared_%zu=%.3f "
		       "lease_nohook1_%zu=%.3f "
		       "lease_nohook2_%zu=%.3f",
		       sizes[i], fig[i].scale[M_NOHOOK], sizes[i],
		       fig[i].scale[M_LEASE], sizes[i], fig[i].scale[M_SHARED],
		       sizes[i], fig[i].sr[M_LEASE], sizes[i],
		       fig[i].sr[M_SHARED], sizes[i], fig[i].vs[M_LEASE][0],
		       sizes[i], fig[i].vs[M_LEASE][1]);
	for (size_t i = 0; i < NSIZES; i++)
		printf(" cpu_sr_lease_%zu=%.3f cpu_sr_shared_%zu=%.3f",
		       sizes[i], fig[i].er[M_LEASE], sizes[i],
		       fig[i].er[M_SHARED]);
	printf(" min_sr_lease=%.3f min_sr_shared=%.3f min_cpu_sr_lease=%.3f "
	       "min_cpu_sr_shared=%.3f\n",
	       min_sr[M_LEASE], min_sr[M_SHARED], min_er[M_LEASE],
	       min_er[M_SHARED]);
	return hits ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return bu_main(argc, argv, mode_names, NMODES, serve_main, parent_main);
}
