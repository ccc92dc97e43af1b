/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/monitor_bench's callgrind part (see monitor_bench.c): the hit
 * driver's loop counted alone, and bench/xfer_ir.sh per leased write, each
 * with the monitor on and off, under valgrind with the preload of
 * monitor_bench_uffd.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor_bench.h"

/* ---- callgrind part ------------------------------------------------------ */

/*
 * Run argv (a program looked up in PATH) with the extra NAME=value settings
 * of env, its stdout and stderr handed line by line to on_line, in a
 * process group of its own that is killed after timeout seconds (a
 * valgrind run that hangs fails instead of blocking the benchmark). 0 when
 * it exited with status 0.
 */
static int
run_lines(char *const argv[], char *const env[], int timeout,
	  void (*on_line)(const char *line, void *arg), void *arg)
{
	double deadline = bu_now_s() + timeout;
	int fd[2], status = 1;
	char line[1024];
	size_t n = 0;
	pid_t pid;

	if (pipe2(fd, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(fd[1], STDOUT_FILENO);
		dup2(fd[1], STDERR_FILENO);
		for (; env && *env; env++)
			putenv(*env);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	while (pid > 0) {
		struct pollfd pfd = {.fd = fd[0], .events = POLLIN};
		int left = (int) ((deadline - bu_now_s()) * 1e3);
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, left) == 0) {
			fprintf(stderr, "monitor_bench: %s timed out\n",
				argv[0]);
			kill(-pid, SIGKILL);
			break;
		}
		r = read(fd[0], &line[n], 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (line[n] == '\n' || n == sizeof(line) - 2) {
			line[n + 1] = '\0';
			on_line(line, arg);
			n = 0;
		} else {
			n++;
		}
	}
	close(fd[0]);
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* The preload that lets the monitor start under valgrind. */
static void
preload_setting(char *buf, size_t len)
{
	char builddir[PATH_MAX];

	bu_builddir(builddir, sizeof(builddir));
	snprintf(buf, len, "LD_PRELOAD=%s/bench/.libs/libmonitor_bench_uffd.so",
		 builddir);
}

struct hit_run {
	bool monitor, retained;
};

static void
parse_hit(const char *line, void *arg)
{
	struct hit_run *h = arg;
	int m, r;

	if (sscanf(line, "hit monitor %d retained %d", &m, &r) == 2) {
		h->monitor = m;
		h->retained = r;
	}
}

/*
 * Instructions of --hit MODE N's loop under callgrind (only the loop is
 * collected); -1 on failure or when "on" ran without its monitor.
 */
static double
hit_instructions(const char *mode, long n)
{
	char self[PATH_MAX], out[64], out_arg[96], count[32],
		preload[PATH_MAX + 64];
	char *argv[] = {"valgrind", "--tool=callgrind",
			"--quiet",  "--toggle-collect=hit_loop",
			out_arg,    self,
			"--hit",    (char *) mode,
			count,	    NULL};
	char *env[] = {preload, NULL};
	struct hit_run h = {0};
	double total = -1;
	char line[256];
	ssize_t len;
	FILE *f;
	int fd;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return -1;
	self[len] = '\0';
	snprintf(out, sizeof(out), "/tmp/monitor_bench.cg.XXXXXX");
	fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(out_arg, sizeof(out_arg), "--callgrind-out-file=%s", out);
	snprintf(count, sizeof(count), "%ld", n);
	preload_setting(preload, sizeof(preload));
	if (!run_lines(argv, env, 300, parse_hit, &h) && h.retained &&
	    h.monitor == !strcmp(mode, "on") && (f = fopen(out, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "totals:", 7) ||
			    !strncmp(line, "summary:", 8))
				total = strtod(strchr(line, ':') + 1, NULL);
		fclose(f);
	}
	unlink(out);
	return total;
}

/* Instructions per lease + release of a hit, monitor on ([0]) and off
 * ([1]): exact, from two loop lengths (the difference drops the call). */
bool
mb_callgrind_hit(double ir[2])
{
	static const char *const modes[2] = {"on", "off"};
	const long n1 = 1000, n2 = 11000;

	for (int k = 0; k < 2; k++) {
		double t1 = hit_instructions(modes[k], n1);
		double t2 = hit_instructions(modes[k], n2);

		if (t1 < 0 || t2 < 0)
			return false;
		ir[k] = (t2 - t1) / (double) (n2 - n1);
	}
	return true;
}

struct ir_run {
	double hook, cache;
	bool result, no_monitor;
};

static void
parse_ir(const char *line, void *arg)
{
	const char *h = strstr(line, "hook_ir_per_op="),
		   *c = strstr(line, "cache_ir_per_op=");
	struct ir_run *ir = arg;

	/* The provider's warning when a pinning domain gets no monitor. */
	if (strstr(line, "no memory monitor"))
		ir->no_monitor = true;
	if (!strncmp(line, "RESULT ", 7) && h && c) {
		ir->hook = strtod(h + strlen("hook_ir_per_op="), NULL);
		ir->cache = strtod(c + strlen("cache_ir_per_op="), NULL);
		ir->result = true;
	}
}

/* bench/xfer_ir.sh in the leased mode only, with mode's settings. 0 when
 * it gave a figure. */
static int
xfer_ir(int mode, struct ir_run *ir)
{
	char builddir[PATH_MAX], script[PATH_MAX + 32], lease_env[3 * PATH_MAX];
	char preload[PATH_MAX + 64];
	char *argv[] = {"/bin/bash", script, builddir, NULL};
	char *env[] = {lease_env, "XFER_IR_MODES=2", "XFER_IR_REPEAT=1", NULL};

	bu_builddir(builddir, sizeof(builddir));
	snprintf(script, sizeof(script), "%s/bench/xfer_ir.sh",
		 MONITOR_BENCH_SRCDIR);
	if (access(script, R_OK))
		snprintf(script, sizeof(script), "%s/bench/xfer_ir", builddir);
	preload_setting(preload, sizeof(preload));
	snprintf(
		lease_env, sizeof(lease_env),
		"XFER_IR_LEASE_ENV=FI_MRLEASE_MIN_SIZE=0 FI_MRLEASE_PINNING=%s "
		"FI_MRLEASE_MONITOR=%s FI_LOG_LEVEL=warn %s",
		mb_mode_pinning[mode], mb_mode_monitor[mode], preload);
	memset(ir, 0, sizeof(*ir));
	return !run_lines(argv, env, 600, parse_ir, ir) && ir->result ? 0 : -1;
}

/*
 * Hook instructions per leased write over the provider, the smallest of
 * runs alternating mon and off (see the header), and the larger of the two
 * configurations' spreads (largest - smallest run). False when valgrind is
 * missing or failed, or the monitor did not start under it.
 */
bool
mb_callgrind_xfer(double ir[2], double cache[2], double *spread)
{
	int runs = (int) bu_env_long("MONITOR_BENCH_IR_RUNS", 2);
	const int modes[2] = {MODE_MON, MODE_OFF};
	double hi[2] = {0, 0};
	struct ir_run one;

	ir[0] = ir[1] = cache[0] = cache[1] = 1e30;
	for (int i = 0; i < 2 * (runs < 1 ? 1 : runs); i++) {
		/* mon, off, off, mon, ... */
		int k = (i ^ (i >> 1)) & 1;

		if (xfer_ir(modes[k], &one)) {
			printf("# callgrind: valgrind unavailable or "
			       "bench/xfer_ir.sh failed\n");
			return false;
		}
		if (one.no_monitor) {
			printf("# callgrind: the monitor did not start under "
			       "valgrind\n");
			return false;
		}
		printf("# callgrind run %d, %-3s: %.1f hook Ir per write "
		       "(cache %.1f)\n",
		       i, mb_mode_names[modes[k]], one.hook, one.cache);
		fflush(stdout);
		if (one.hook < ir[k])
			ir[k] = one.hook;
		if (one.hook > hi[k])
			hi[k] = one.hook;
		if (one.cache < cache[k])
			cache[k] = one.cache;
	}
	/* How far runs of one configuration fell apart: the resolution. */
	*spread = hi[0] - ir[0] > hi[1] - ir[1] ? hi[0] - ir[0] : hi[1] - ir[1];
	return true;
}
