/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * xfer_bench's parent side of the measurement: one --serve child per mode,
 * commanded one slice at a time, round after round, generation after
 * generation.
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

static void
child_env(int mode)
{
	bu_child_env();
	unsetenv("FI_MRLEASE_MIN_SIZE");
	if (mode == MODE_LEASE_ALL)
		setenv("FI_MRLEASE_MIN_SIZE", "0", 1);
	if (mode_leases(mode))
		setenv("FI_HOOK", "mrlease", 1);
	else if (mode == MODE_NOOP)
		setenv("FI_HOOK", "noop", 1);
	else
		unsetenv("FI_HOOK");
}

/* The environment of a --serve child, set in the child (bu_server_start). */
static void
serve_env(void *mode)
{
	child_env(*(int *) mode);
}

static void
servers_kill(struct server sv[NMODES + 1])
{
	for (int m = 1; m <= NMODES; m++)
		bu_server_kill(&sv[m].bu);
}

/* Start one --serve child per mode, all at once, and wait until every one
 * has warmed up. On failure every child is gone. */
static int
servers_start(struct server sv[NMODES + 1])
{
	static char names[NMODES + 1][32];
	static int modes[NMODES + 1];
	/* Seconds a child may take to answer (XFER_BENCH_TIMEOUT, default 120).
	 */
	int timeout_s = (int) bu_env_clamp("XFER_BENCH_TIMEOUT", 120, 0, 86399);
	int ret = 0;

	for (int m = 1; m <= NMODES; m++) {
		snprintf(names[m], sizeof(names[m]), "xfer_bench mode %s child",
			 mode_names[m]);
		modes[m] = m;
		sv[m] = (struct server){
			.mode = m,
			.bu = {.name = names[m], .timeout_s = timeout_s}};
	}
	for (int m = 1; m <= NMODES && !ret; m++) {
		char mode_s[8];
		char *args[] = {"--child", mode_s, "--serve", NULL};

		snprintf(mode_s, sizeof(mode_s), "%d", m);
		ret = bu_server_start(&sv[m].bu, args, serve_env, &modes[m]);
		if (ret) {
			fprintf(stderr, "xfer_bench: starting mode %s: %s\n",
				mode_names[m], strerror(-ret));
			ret = -FI_EOTHER;
		}
	}
	for (int m = 1; m <= NMODES && !ret; m++)
		ret = bu_server_ready(&sv[m].bu);
	if (ret)
		servers_kill(sv);
	return ret;
}

/* One timed slice of n writes of size in a server; *secs its time, *regs
 * the provider registrations it made. */
static int
server_slice(struct server *s, size_t size, long n, double *secs,
	     uint64_t *regs)
{
	char cmd[64], line[128];
	long polls;
	int ret;

	snprintf(cmd, sizeof(cmd), "slice %zu %ld", size, n);
	ret = bu_server_ask(&s->bu, cmd, line, sizeof(line));
	if (ret)
		return ret;
	if (sscanf(line, "slice secs %lf regs %" SCNu64 " polls %ld", secs,
		   regs, &polls) != 3 ||
	    *secs <= 0) {
		fprintf(stderr,
			"xfer_bench: mode %s child: unexpected answer in a "
			"slice; killed\n",
			mode_names[s->mode]);
		bu_server_kill(&s->bu);
		return -FI_EOTHER;
	}
	return 0;
}

static void
total_regs_line(const char *line, void *s)
{
	sscanf(line, "total_regs %" SCNu64, &((struct server *) s)->total_regs);
}

/* Tell a server to quit, read its totals and reap it (on every path). */
static int
server_quit(struct server *s)
{
	return bu_server_quit(&s->bu, total_regs_line, s);
}

/*
 * Rounds [r0, r1) of every size: one N-write slice per mode per round, in a
 * shuffled order. The first generation (r0 == 0) calibrates N per size
 * first: each mode one slice of default_iters / CALIB_DIV writes, N from the
 * modes' median rate.
 */
static int
measure_sizes(struct server sv[NMODES + 1], struct rounds *ro, int r0, int r1)
{
	double secs, calib[NMODES];
	uint64_t regs;
	int order[NMODES], ret;

	for (size_t i = 0; i < NSIZES; i++) {
		size_t size = bench_sizes[i];
		long n0 = default_iters(size) / CALIB_DIV;

		if (!r0) {
			for (int m = 1; m <= NMODES; m++) {
				ret = server_slice(&sv[m], size, n0, &secs,
						   &regs);
				if (ret)
					return ret;
				calib[m - 1] = n0 / secs;
			}
			ro->iters[i] = (long) (SLICE_SECONDS *
					       bu_median(calib, NMODES));
			if (ro->iters[i] < 100)
				ro->iters[i] = 100;
		}
		for (int r = r0; r < r1; r++) {
			/* A fixed pseudo-random order per round: no mode
			 * always runs right after the same other one (a slice
			 * can leave the machine slower or faster for the
			 * next: caches, memory returned). */
			bu_shuffle(order, NMODES, (int) i * ro->n + r);
			for (int k = 0; k < NMODES; k++) {
				int m = order[k] + 1;

				ret = server_slice(&sv[m], size, ro->iters[i],
						   &secs, &regs);
				if (ret)
					return ret;
				ro->rate[i][m][r] = ro->iters[i] / secs;
				ro->regs[i][m] += regs;
			}
		}
	}
	return 0;
}

/*
 * All of the interleaved measurement, in `generations` sets of fresh
 * children, each running its share of the rounds: a process keeps its own
 * bias for its whole life (where its buffers and the loopback's socket
 * buffers landed in physical memory, so which cache sets they share), which
 * pairing cannot cancel; the median over rounds then spans several
 * processes per mode. Every child is gone on return. -FI_ENODATA: the
 * provider is unavailable.
 */
int
measure(struct server sv[NMODES + 1], struct rounds *ro, int generations)
{
	int ret = 0;

	for (int g = 0; g < generations && !ret; g++) {
		ret = servers_start(sv);
		if (ret)
			return ret;
		ret = measure_sizes(sv, ro, g * ro->n / generations,
				    (g + 1) * ro->n / generations);
		if (ret) {
			servers_kill(sv);
			return ret;
		}
		for (int m = 1; m <= NMODES; m++)
			if (server_quit(&sv[m]))
				ret = -FI_EOTHER;
	}
	return ret;
}
