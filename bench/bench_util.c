/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Servers, paired-round statistics and data files for the bench programs
 * (bench_util.h says why they are built this way).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "bench_util.h"

/* ---- servers --------------------------------------------------------- */

/* Milliseconds server s may take to answer (its timeout_s, else
 * BENCH_TIMEOUT seconds, default 120): a hung child is killed rather than
 * blocking the run. */
static int
bu_timeout_ms(const struct bu_server *s)
{
	long t = s->timeout_s > 0 ? s->timeout_s :
				    bu_env_long("BENCH_TIMEOUT", 120);

	return (int) (t > 0 && t < 86400 ? t : 120) * 1000;
}

int
bu_server_start(struct bu_server *s, char *const *args, void (*env)(void *arg),
		void *arg)
{
	char self[PATH_MAX], *argv[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int cmd[2], out[2], argc = 0, err;

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	argv[argc++] = self;
	while (*args && argc < 31)
		argv[argc++] = *args++;
	argv[argc] = NULL;
	/* Close-on-exec: no child holds another's pipe open, which would
	 * keep that one from ever seeing the end of its commands. */
	if (pipe2(cmd, O_CLOEXEC))
		return -errno;
	if (pipe2(out, O_CLOEXEC)) {
		err = -errno;
		goto err_cmd;
	}
	fflush(NULL);
	s->pid = fork();
	if (s->pid < 0) {
		err = -errno;
		s->pid = 0;
		goto err_out;
	}
	if (s->pid == 0) {
		dup2(cmd[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		if (env)
			env(arg);
		execv(self, argv);
		_exit(127);
	}
	close(cmd[0]);
	close(out[1]);
	s->cmd = fdopen(cmd[1], "w");
	s->out = fdopen(out[0], "r");
	if (!s->cmd || !s->out) {
		if (!s->cmd)
			close(cmd[1]);
		if (!s->out)
			close(out[0]);
		bu_server_kill(s);
		return -ENOMEM;
	}
	/* Unbuffered: poll() then sees every byte not yet read. */
	setvbuf(s->out, NULL, _IONBF, 0);
	return 0;

err_out:
	close(out[0]);
	close(out[1]);
err_cmd:
	close(cmd[0]);
	close(cmd[1]);
	return err;
}

static int
bu_server_reap(struct bu_server *s, bool kill_it)
{
	int status = -1;

	if (!s->pid)
		return -1;
	if (kill_it)
		kill(s->pid, SIGKILL);
	if (s->cmd)
		fclose(s->cmd);
	if (s->out)
		fclose(s->out);
	s->cmd = s->out = NULL;
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	s->pid = 0;
	return status;
}

void
bu_server_kill(struct bu_server *s)
{
	bu_server_reap(s, true);
}

static bool
bu_server_gets(struct bu_server *s, char *line, int len)
{
	struct pollfd p = {.fd = fileno(s->out), .events = POLLIN};

	return poll(&p, 1, bu_timeout_ms(s)) > 0 && fgets(line, len, s->out);
}

/* A server that did not answer as it should: reap it (killed unless it
 * has exited) and say why. */
static int
bu_server_failed(struct bu_server *s, const char *doing)
{
	bool exited = feof(s->out) || ferror(s->cmd);
	int status = bu_server_reap(s, !exited);

	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return -FI_ENODATA;
	if (!exited)
		fprintf(stderr,
			"bench: %s: no answer within the timeout, or an "
			"unexpected one, %s; killed\n",
			s->name, doing);
	else if (WIFEXITED(status))
		fprintf(stderr, "bench: %s exited with status %d %s\n", s->name,
			WEXITSTATUS(status), doing);
	else if (WIFSIGNALED(status))
		fprintf(stderr, "bench: %s killed by signal %d %s\n", s->name,
			WTERMSIG(status), doing);
	return -FI_EOTHER;
}

int
bu_server_ready(struct bu_server *s)
{
	char line[64];

	if (!bu_server_gets(s, line, sizeof(line)) || strcmp(line, "ready\n"))
		return bu_server_failed(s, "while warming up");
	return 0;
}

int
bu_server_ask(struct bu_server *s, const char *cmd, char *ans, int len)
{
	if (fprintf(s->cmd, "%s\n", cmd) < 0 || fflush(s->cmd) ||
	    !bu_server_gets(s, ans, len))
		return bu_server_failed(s, cmd);
	return 0;
}

int
bu_server_quit(struct bu_server *s,
	       void (*each_line)(const char *line, void *arg), void *arg)
{
	char line[4096];
	int status;

	if (fprintf(s->cmd, "quit\n") < 0 || fflush(s->cmd))
		return bu_server_failed(s, "at quit");
	while (bu_server_gets(s, line, sizeof(line)))
		if (each_line)
			each_line(line, arg);
	status = bu_server_reap(s, false);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench: %s failed at quit (status %d)\n",
			s->name, status);
		return -FI_EOTHER;
	}
	return 0;
}

int
bu_servers_start(struct bu_server *sv, int n, const char *const *names,
		 void (*env)(void *arg), int *ids)
{
	int ret = 0;

	for (int m = 0; m < n && !ret; m++) {
		char *args[] = {"--serve", (char *) names[m], NULL};

		sv[m] = (struct bu_server){.name = names[m]};
		ret = bu_server_start(&sv[m], args, env, &ids[m]);
	}
	for (int m = 0; m < n && !ret; m++)
		ret = bu_server_ready(&sv[m]);
	if (ret)
		for (int m = 0; m < n; m++)
			bu_server_kill(&sv[m]);
	return ret;
}

int
bu_servers_end(struct bu_server *sv, int n, int ret)
{
	for (int m = 0; m < n; m++)
		if (ret)
			bu_server_kill(&sv[m]);
		else if (bu_server_quit(&sv[m], NULL, NULL))
			ret = -FI_EOTHER;
	return ret;
}

bool
bu_serve_gets(char *line, int len)
{
	return fgets(line, len, stdin) != NULL;
}

void
bu_serve_answer(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	fflush(stdout);
}

/* ---- statistics ------------------------------------------------------ */

double
bu_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

double
bu_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

long
bu_env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : def;
}

long
bu_env_clamp(const char *name, long def, long lo, long hi)
{
	long v = bu_env_long(name, def);

	return v < lo ? lo : v > hi ? hi : v;
}

const char *
bu_env_str(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

static int
bu_cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

double
bu_quantile(double *v, int n, double p)
{
	double pos = p * (n - 1);
	int lo = (int) pos;

	if (n < 1)
		return 0;
	qsort(v, (size_t) n, sizeof(*v), bu_cmp_double);
	if (lo >= n - 1)
		return v[n - 1];
	return v[lo] + (v[lo + 1] - v[lo]) * (pos - lo);
}

double
bu_median(double *v, int n)
{
	return bu_quantile(v, n, 0.5);
}

double
bu_median_of_generations(const double *v, int rounds, int gens)
{
	double gmed[MAX_GENERATIONS], w[MAX_GENERATION_ROUNDS];

	if (gens > MAX_GENERATIONS)
		gens = MAX_GENERATIONS;
	for (int g = 0; g < gens; g++) {
		int r0 = g * rounds / gens, r1 = (g + 1) * rounds / gens;

		if (r1 - r0 > MAX_GENERATION_ROUNDS)
			r1 = r0 + MAX_GENERATION_ROUNDS;
		memcpy(w, &v[r0], (size_t) (r1 - r0) * sizeof(*w));
		gmed[g] = bu_quantile(w, r1 - r0, 0.5);
	}
	return bu_quantile(gmed, gens, 0.5);
}

void
bu_figure_of_rounds(double *v, int rounds, int gens, double *med, double *q1,
		    double *q3)
{
	*med = bu_median_of_generations(v, rounds, gens);
	*q1 = bu_quantile(v, rounds, 0.25);
	*q3 = bu_quantile(v, rounds, 0.75);
}

void
bu_shuffle(int *order, int n, int r)
{
	uint32_t x = 2654435761u * (uint32_t) (r + 1);

	for (int k = 0; k < n; k++)
		order[k] = k;
	for (int k = n - 1; k > 0; k--) {
		int j, t;

		x = x * 1664525u + 1013904223u;
		j = (int) ((x >> 16) % (uint32_t) (k + 1));
		t = order[k];
		order[k] = order[j];
		order[j] = t;
	}
}

int
bu_pin_one_cpu(const char *env_name)
{
	const char *env = getenv(env_name);
	cpu_set_t set;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	if (env && *env) {
		cpu = atoi(env);
		if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))
			return -1;
	} else {
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpu = c;
	}
	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
}

void
bu_builddir(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[n > 0 ? n : 0] = '\0';
	for (int up = 0; up < 2; up++) {
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		if (up == 0 && (slash = strrchr(exe, '/')) &&
		    !strcmp(slash, "/.libs"))
			*slash = '\0';
	}
	snprintf(buf, len, "%s", exe);
}

void
bu_child_env(void)
{
	char builddir[PATH_MAX], path[PATH_MAX + 32];
	const char *iface = getenv("FI_TCP_IFACE");

	bu_builddir(builddir, sizeof(builddir));
	snprintf(path, sizeof(path), "%s/prov/mrlease/.libs", builddir);
	setenv("FI_PROVIDER_PATH", path, 1);
	setenv("FI_TCP_IFACE", iface ? iface : "lo", 1);
}

void
bu_child_env_mrcheck(void)
{
	char builddir[PATH_MAX], path[2 * PATH_MAX + 64];
	const char *hooks = getenv("MRL_TEST_HOOK_PATH");

	bu_child_env();
	bu_builddir(builddir, sizeof(builddir));
	if (hooks)
		snprintf(path, sizeof(path), "%s/prov/mrlease/.libs:%s",
			 builddir, hooks);
	else
		snprintf(path, sizeof(path),
			 "%s/prov/mrlease/.libs:%s/prov/mrcheck/.libs",
			 builddir, builddir);
	setenv("FI_PROVIDER_PATH", path, 1);
}

void
bu_reg_cost_model(double *a, double *b)
{
	const char *env;

	*a = 16000;
	*b = 0.06;
	if ((env = getenv("FI_MRCHECK_REG_COST_NS")) && *env)
		*a = strtod(env, NULL);
	if ((env = getenv("FI_MRCHECK_REG_COST_NS_PER_BYTE")) && *env)
		*b = strtod(env, NULL);
}

int
bu_main(int argc, char **argv, const char *const *names, int n,
	int (*serve)(int mode), int (*parent)(void))
{
	if (argc == 3 && !strcmp(argv[1], "--serve")) {
		for (int m = 0; m < n; m++)
			if (!strcmp(argv[2], names[m]))
				return serve(m);
	}
	if (argc > 1) {
		fprintf(stderr, "usage: %s [--serve ", argv[0]);
		for (int m = 0; m < n; m++)
			fprintf(stderr, "%s%s", m ? "|" : "", names[m]);
		fprintf(stderr, "]\n");
		return 2;
	}
	return parent();
}

/* ---- what the figures were measured on ------------------------------ */

void
bu_machine(char *buf, size_t len)
{
	char line[256], model[128] = "unknown CPU";
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += strspn(colon + 1, " \t") + 1;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(model, sizeof(model), "%s", colon);
		break;
	}
	if (f)
		fclose(f);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	snprintf(buf, len, "%s, %ld CPUs, Linux %s", model,
		 sysconf(_SC_NPROCESSORS_ONLN), u.release);
}

double
bu_load1(void)
{
	double load[1];

	return getloadavg(load, 1) == 1 ? load[0] : -1;
}

FILE *
bu_data_open(const char *name)
{
	const char *dir = getenv("BENCH_DATA_DIR");
	char path[PATH_MAX], machine[256], date[64];
	time_t now = time(NULL);
	struct tm tm;
	FILE *f;

	if (!dir || !*dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s.dat", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench: %s: %s; no data file\n", path,
			strerror(errno));
		return NULL;
	}
	bu_machine(machine, sizeof(machine));
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &tm);
	fprintf(f, "# machine: %s\n# date: %s\n# load1: %.2f\n", machine, date,
		bu_load1());
	return f;
}
