/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the live statistics tests (live_util.h).
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live_util.h"
#include "common/mrlt.h"
#include "common/xfer_util.h"

/* This program's argv[0], the children's too (the tool shows it). */
static char *live_argv0;

/* The directory made for the tests, once the provider's exit handler
 * (registered later, so run first) removed our file. */
static void
live_remove_dir(void)
{
	live_remove_tree(live_dir());
}

const char *
live_setup(char **argv, const char *interval_ms)
{
	static char dir[] = "/tmp/mrlt-live.XXXXXX";

	live_argv0 = argv[0];
	if (getenv("MRLT_LIVE_OWN_DIR"))
		atexit(live_remove_dir);
	if (!getenv("FI_MRLEASE_STATS_DIR")) {
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			exit(EXIT_FAILURE);
		}
		setenv("FI_MRLEASE_STATS_DIR", dir, 1);
		setenv("MRLT_LIVE_OWN_DIR", "1", 1);
		setenv("FI_MRLEASE_STATS_LIVE", "1", 1);
		setenv("FI_MRLEASE_STATS_INTERVAL", interval_ms, 1);
	}
	xfer_reexec(argv, "mrlease", NULL);
	return live_dir();
}

const char *
live_dir(void)
{
	return getenv("FI_MRLEASE_STATS_DIR");
}

int
live_tool(const char *args, char *out, size_t len)
{
	const char *top = getenv("MRL_TOP_BUILDDIR");
	char cmd[PATH_MAX * 2 + 256];
	size_t used = 0, n;
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "'%s/tools/mrlease-stat' -d '%s' %s",
		 top ? top : ".", live_dir(), args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (used + 1 < len && (n = fread(out + used, 1, len - 1 - used, p)))
		used += n;
	out[used] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool
live_wait_rounds(pid_t pid, unsigned rounds, struct mrl_live_proc *proc)
{
	return live_wait_rounds_in(live_dir(), pid, rounds, proc);
}

bool
live_wait_rounds_in(const char *base, pid_t pid, unsigned rounds,
		    struct mrl_live_proc *proc)
{
	struct mrlt_wait w;
	uint64_t start = 0;
	bool first = true;

	mrlt_wait_init(&w);
	do {
		if (!mrl_live_read_pid(base, (int) pid, proc)) {
			if (first)
				start = proc->publishes;
			first = false;
			if (proc->publishes >= start + rounds)
				return true;
		}
	} while (!mrlt_wait_over(&w));
	return false;
}

int
live_move_data(struct mrlt_pair *pair, char *src, char *dst)
{
	int ret = 0;

	for (int i = 0; i < 8 && !ret; i++) {
		ret = xfer_round_trip(pair, src, dst, LIVE_LEN, (uint64_t) i,
				      0);
		if (!ret && i == 3)
			ret = pair->mrl->invalidate(src, LIVE_LEN);
	}
	return ret;
}

static int
remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void) st;
	(void) f;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

void
live_remove_tree(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int
live_client(void)
{
	struct mrlt_pair_opts opts = {.prov = LIVE_PROV};
	const char *cwd = getenv("MRLT_LIVE_CWD");
	const char *later = getenv("MRLT_LIVE_CHDIR");
	struct mrlt_pair pair;
	char *src = malloc(LIVE_LEN), *dst = malloc(LIVE_LEN), c;
	int ret;

	if (!src || !dst || (cwd && chdir(cwd)))
		return 1;
	if (getenv("MRLT_LIVE_GO") && read(0, &c, 1) != 1)
		return 1;
	ret = mrlt_pair_open(&opts, &pair);
	if (ret) {
		fprintf(stderr, "client: %s\n", fi_strerror(-ret));
		return 1;
	}
	ret = live_move_data(&pair, src, dst);
	if (ret) {
		fprintf(stderr, "client: %s\n", xfer_round_error(ret));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	if (later && chdir(later))
		return 1;
	mrlt_pair_close(&pair);
	free(src);
	free(dst);
	return 0;
}

bool
live_json_u64(const char *from, const char *key, uint64_t *value)
{
	char pat[96];
	const char *at;

	if (!from)
		return false;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	at = strstr(from, pat);
	if (!at)
		return false;
	*value = strtoull(at + strlen(pat), NULL, 10);
	return true;
}

const char *
live_json_proc(const char *json, pid_t pid)
{
	char pat[48];

	snprintf(pat, sizeof(pat), "{\"pid\":%d,", (int) pid);
	return strstr(json, pat);
}

bool
live_child_start(struct live_child *c, const char *const *extra)
{
	int in[2], out[2];

	if (pipe(in))
		return false;
	if (pipe(out)) {
		close(in[0]);
		close(in[1]);
		return false;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0)
		return false;
	if (!c->pid) {
		char self[] = "/proc/self/exe", arg[] = "--client";
		char *argv[] = {live_argv0 ? live_argv0 : self, arg, NULL};

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		for (; extra && *extra; extra++)
			putenv((char *) *extra);
		execv(self, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->to = in[1];
	c->from = out[0];
	return true;
}

bool
live_child_ready(struct live_child *c)
{
	char buf[64];
	size_t used = 0;
	ssize_t n;

	while (used + 1 < sizeof(buf) &&
	       (n = read(c->from, buf + used, sizeof(buf) - 1 - used)) > 0) {
		used += (size_t) n;
		buf[used] = '\0';
		if (strstr(buf, "ready\n"))
			return true;
	}
	return false;
}

int
live_child_end(struct live_child *c)
{
	int status;

	if (c->to >= 0)
		close(c->to);
	if (c->from >= 0)
		close(c->from);
	c->to = c->from = -1;
	if (waitpid(c->pid, &status, 0) != c->pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
