/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the live statistics tests (live_util.h).
 */
#include "config.h"

#include <errno.h>
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

/* The directory and this user's in it, once the provider's exit handler
 * (registered later, so run first) removed our file. */
static void
live_remove_dir(void)
{
	char user[PATH_MAX];

	mrl_live_user_dir(user, sizeof(user), live_dir(), geteuid());
	rmdir(user);
	rmdir(live_dir());
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
	struct mrlt_wait w;
	uint64_t start = 0;
	bool first = true;

	mrlt_wait_init(&w);
	do {
		if (!mrl_live_read_pid(live_dir(), (int) pid, proc)) {
			if (first)
				start = proc->publishes;
			first = false;
			if (proc->publishes >= start + rounds)
				return true;
		}
	} while (!mrlt_wait_over(&w));
	return false;
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
