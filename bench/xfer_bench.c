/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/xfer_bench (what it measures and how: xfer_bench.h): the figures
 * from the rounds, the RESULT line, and the command line.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "../test/common/xfer_util.h"
#include "xfer_bench.h"

const char *const mode_names[NMODES + 1] = {"",	     "app",  "lease",
					    "perop", "noop", "lease0"};
const size_t bench_sizes[NSIZES] = {8, 64, 512, 4096, 16384, 65536};

const char *
bench_prov(void)
{
	return bu_env_str("XFER_BENCH_PROV", "tcp;ofi_rxm");
}

/* The ratios reported, as (numerator mode, denominator mode). (4)/(1) is
 * libfabric's noop hook against no hook: what any hook costs here. */
enum { NPAIRS = 5 };
static const int pairs[NPAIRS][2] = {{2, 1}, {2, 4}, {2, 3}, {5, 1}, {4, 1}};

struct size_figures {
	double med[NMODES + 1]; /* median slice rate per mode */
	double paired[NPAIRS]; /* median of the per-round ratios */
	double q1[NPAIRS], q3[NPAIRS]; /* their quartiles */
	double of_medians[NPAIRS]; /* ratio of the medians */
};

/* Round r's ratio of pair p at size i. */
static double
round_ratio(const struct rounds *ro, size_t i, int p, int r)
{
	return ro->rate[i][pairs[p][0]][r] / ro->rate[i][pairs[p][1]][r];
}

static void
size_figures(const struct rounds *ro, size_t i, struct size_figures *f)
{
	double v[MAX_REPS];

	for (int m = 1; m <= NMODES; m++) {
		memcpy(v, ro->rate[i][m], sizeof(double) * (size_t) ro->n);
		f->med[m] = bu_median(v, ro->n);
	}
	for (int p = 0; p < NPAIRS; p++) {
		for (int r = 0; r < ro->n; r++)
			v[r] = round_ratio(ro, i, p, r);
		f->q1[p] = bu_quantile(v, ro->n, 0.25);
		f->paired[p] = bu_quantile(v, ro->n, 0.5);
		f->q3[p] = bu_quantile(v, ro->n, 0.75);
		f->of_medians[p] = f->med[pairs[p][0]] / f->med[pairs[p][1]];
	}
}

static double
min_d(double a, double b)
{
	return a < b ? a : b;
}

static void
print_figures(const struct rounds *ro, const struct size_figures fig[NSIZES])
{
	printf("# median slice rate per mode (ops/s); ratios: median over "
	       "rounds of "
	       "the round's paired ratio\n");
	printf("# %8s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s\n", "size",
	       "app/s", "lease/s", "perop/s", "noop/s", "lease0/s", "(2)/(1)",
	       "(2)/(4)", "(2)/(3)", "(5)/(1)", "(4)/(1)");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct size_figures *f = &fig[i];

		printf("  %8zu %10.0f %10.0f %10.0f %10.0f %10.0f %8.3f %8.3f "
		       "%8.3f %8.3f %8.3f\n",
		       bench_sizes[i], f->med[1], f->med[2], f->med[3],
		       f->med[4], f->med[5], f->paired[0], f->paired[1],
		       f->paired[2], f->paired[3], f->paired[4]);
	}
	printf("# ratio of the medians, and the quartiles of the paired ratios "
	       "(their spread is the resolution):\n");
	printf("# %8s %7s %8s %8s %8s %8s %15s %15s\n", "size", "writes",
	       "(2)/(1)", "(2)/(4)", "(2)/(3)", "(5)/(1)", "(2)/(1) q1-q3",
	       "(2)/(4) q1-q3");
	for (size_t i = 0; i < NSIZES; i++) {
		const struct size_figures *f = &fig[i];

		printf("# %8zu %7ld %8.3f %8.3f %8.3f %8.3f     %.3f-%.3f     "
		       "%.3f-%.3f\n",
		       bench_sizes[i], ro->iters[i], f->of_medians[0],
		       f->of_medians[1], f->of_medians[2], f->of_medians[3],
		       f->q1[0], f->q3[0], f->q1[1], f->q3[1]);
	}
	printf("# every round's paired ratio, in round order:\n");
	for (size_t i = 0; i < NSIZES; i++)
		for (int p = 0; p < 2; p++) {
			printf("#   %5zu (%d)/(%d):", bench_sizes[i],
			       pairs[p][0], pairs[p][1]);
			for (int r = 0; r < ro->n; r++)
				printf(" %.3f", round_ratio(ro, i, p, r));
			printf("\n");
		}
}

static void
print_registrations(const struct rounds *ro, const struct server sv[NMODES + 1])
{
	printf("# provider registrations per child of the last generation, its "
	       "whole "
	       "run (warm-up, calibration, its rounds):");
	for (int m = 1; m <= NMODES; m++)
		printf(" %s=%" PRIu64, mode_names[m], sv[m].total_regs);
	printf("\n# per size, all timed slices (app/lease/perop/noop/lease0):");
	for (size_t i = 0; i < NSIZES; i++)
		printf(" %zu:%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
		       "/%" PRIu64,
		       bench_sizes[i], ro->regs[i][1], ro->regs[i][2],
		       ro->regs[i][3], ro->regs[i][4], ro->regs[i][5]);
	printf("\n");
}

static int
parent_main(void)
{
	int reps = (int) bu_env_clamp("XFER_BENCH_REPS", 40, 1, MAX_REPS);
	int generations =
		(int) bu_env_clamp("XFER_BENCH_GENERATIONS", 20, 1, reps);
	static struct rounds ro;
	struct server sv[NMODES + 1];
	struct size_figures fig[NSIZES];
	double worst21 = 1e9, worst24 = 1e9, worst21x = 1e9, worst24x = 1e9;
	int ret, cpu;

	/* A child that died leaves a broken pipe: a write error, not a signal.
	 */
	signal(SIGPIPE, SIG_IGN);
	ro.n = reps;
	/* Unpinned on a 2-core machine, a child's threads and the loopback's
	 * kernel work land on one or on both cores from run to run, and its
	 * rate moves with that alone. */
	cpu = bu_pin_one_cpu("XFER_BENCH_CPU");
	printf("# xfer_bench: fi_write message rate over %s, modes interleaved "
	       "slice "
	       "by slice: %d rounds per size by %d generations of children, "
	       "~%.0f ms "
	       "per slice, children on CPU %d (-1: not pinned)\n",
	       bench_prov(), reps, generations, SLICE_SECONDS * 1e3, cpu);
	fflush(stdout);
	ret = measure(sv, &ro, generations);
	if (ret == -FI_ENODATA) {
		printf("# provider unavailable: skipped\nRESULT skipped=1\n");
		return 0;
	}
	if (ret) {
		fprintf(stderr, "xfer_bench: measurement failed\n");
		return 1;
	}

	for (size_t i = 0; i < NSIZES; i++) {
		size_figures(&ro, i, &fig[i]);
		worst21 = min_d(worst21, fig[i].paired[0]);
		worst24 = min_d(worst24, fig[i].paired[1]);
		worst21x = min_d(worst21x, fig[i].of_medians[0]);
		worst24x = min_d(worst24x, fig[i].of_medians[1]);
	}
	print_figures(&ro, fig);
	print_registrations(&ro, sv);

	/* The figures are only as quiet as the machine: say how busy it was. */
	double load1 = bu_load1();

	if (load1 >= 0)
		printf("# load average (1 min) at the end: %.2f on %ld cpus\n",
		       load1, sysconf(_SC_NPROCESSORS_ONLN));
	printf("RESULT prov=%s reps=%d cpu=%d load1=%.2f", bench_prov(), reps,
	       cpu, load1);
	for (size_t i = 0; i < NSIZES; i++)
		printf(" r21_%zu=%.3f r24_%zu=%.3f r23_%zu=%.3f r51_%zu=%.3f "
		       "r41_%zu=%.3f",
		       bench_sizes[i], fig[i].paired[0], bench_sizes[i],
		       fig[i].paired[1], bench_sizes[i], fig[i].paired[2],
		       bench_sizes[i], fig[i].paired[3], bench_sizes[i],
		       fig[i].paired[4]);
	printf(" min_r21=%.3f min_r24=%.3f min_r21x=%.3f min_r24x=%.3f",
	       worst21, worst24, worst21x, worst24x);
	for (int m = 1; m <= NMODES; m++)
		printf(" regs_%s=%" PRIu64, mode_names[m], sv[m].total_regs);
	printf("\n");
	return 0;
}

static int
parse_child(int argc, char **argv, struct child_opts *o)
{
	/* Writes in flight (default 32). */
	const char *window = getenv("XFER_BENCH_WINDOW");

	o->window = window ? atoi(window) : 32;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--serve")) {
			o->serve = true;
			continue;
		}
		if (!v)
			return -1;
		if (!strcmp(a, "--child"))
			o->mode = atoi(v);
		else if (!strcmp(a, "--sizes") && o->nsizes < NSIZES)
			o->sizes[o->nsizes++] = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--iters"))
			o->iters = atol(v);
		else if (!strcmp(a, "--window"))
			o->window = atoi(v);
		else if (!strcmp(a, "--empty-polls"))
			o->empty_polls = atol(v);
		else if (!strcmp(a, "--op") && !strcmp(v, "send"))
			o->send = true;
		else if (!strcmp(a, "--op") && !strcmp(v, "write"))
			o->send = false;
		else
			return -1;
		i++;
	}
	if (!o->nsizes) {
		memcpy(o->sizes, bench_sizes, sizeof(bench_sizes));
		o->nsizes = NSIZES;
	}
	if (o->mode < 1 || o->mode > NMODES || o->window < 1 ||
	    o->window > MAX_WINDOW)
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct child_opts o = {0};

	if (argc > 1) {
		if (parse_child(argc, argv, &o)) {
			fprintf(stderr,
				"usage: %s [--child MODE [--serve] [--sizes N] "
				"[--iters N] [--window N] [--empty-polls N] "
				"[--op write|send]]\n",
				argv[0]);
			return 2;
		}
		return o.serve ? serve_main(&o) : child_main(&o);
	}
	return parent_main();
}
