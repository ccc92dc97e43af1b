/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Conformance through FI_HOOK=mrlease: libfabric semantics an application
 * relies on (fi_eq(3), fi_cq(3), fi_poll(3), fi_trigger(3)) observed
 * through the hook on real providers over loopback, as they are without it.
 *
 * Each case runs in a child process of its own (libfabric reads FI_HOOK
 * once per process, and a crash then fails one case, not the program):
 * first with FI_HOOK=mrlease; when that fails, again without the hook (the
 * no-hook control). A case that fails on the bare provider too is skipped
 * with the control's reason, never counted as passed.
 *
 * Usage: test_conformance_hook (the whole suite), or
 * test_conformance_hook --case NAME PROVIDER (one case, in this process,
 * with whatever FI_HOOK is set).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "mrl_test.h"
#include "xfer_util.h"

/* Seconds a child may take before it is killed (SIGALRM): a hang fails
 * its case. */
#define CHILD_ALARM 30

/* The provider of the case running in this (child) process. */
static const char *prov;
/* Whether this process runs with FI_HOOK set (the hooked run of a case). */
static bool hooked;

/* ------------------------------------------------------------------------
 * Set-up shared by the cases.
 */

/* Endpoint type a provider offers on its own: tcp (1.17) has MSG only. */
static enum fi_ep_type prov_ep_type(void)
{
	return strcmp(prov, "tcp") ? FI_EP_RDM : FI_EP_MSG;
}

/* The hook is in the path exactly when this run is the hooked one. */
static bool hook_matches(struct fid_domain *domain)
{
	void *ops = NULL;
	int ret = fi_open_ops(&domain->fid, FI_MRLEASE_OPS_1, 0, &ops, NULL);

	if ((ret == 0) != hooked) {
		mrl_test_fail(__FILE__, __LINE__, "FI_MRLEASE_OPS_1 on the "
			      "domain: %d, but FI_HOOK is %s", ret,
			      hooked ? "mrlease" : "unset");
		return false;
	}
	return true;
}

/* Fabric and domain for prov; false with the case skipped or failed. */
static bool open_domain(struct mrl_domain *d)
{
	struct fi_info *hints = mrl_hints(prov, prov_ep_type(), FI_MSG);
	struct fi_info *info;
	int ret;

	ret = mrl_getinfo(hints, NULL, NULL, 0, &info);
	if (ret == -FI_ENODATA) {
		mrl_test_skip_current("%s offers no such info", prov);
		return false;
	}
	if (ret || mrl_domain_open(info, d))
		return false;
	return hook_matches(d->domain);
}

/* ------------------------------------------------------------------------
 * Event queues (item 1 of issue 13).
 */

/*
 * fi_eq(3): fi_eq_write inserts the application's own event, and a read
 * returns it as written. The hook took every fid it read for a provider's
 * and followed it, so an event naming non-fid memory crashed fi_eq_read.
 */
static void test_eq_read_returns_application_written_events_untouched(void)
{
	struct mrl_domain d;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC,
				   .flags = FI_WRITE };
	/* Memory that is no fid: every word 0x4141... (read as a fid, its
	 * ops and context point nowhere). */
	uint64_t junk[16];
	struct fi_eq_entry in, out;
	struct fid_eq *eq;
	fid_t fids[5];
	uint32_t event;
	int ctx[5];

	if (!open_domain(&d))
		return;
	CHECK_FI(fi_eq_open(d.fabric, &attr, &eq, NULL));
	mrl_track_fid(&eq->fid);
	memset(junk, 0x41, sizeof(junk));
	fids[0] = &d.fabric->fid;
	fids[1] = &eq->fid;
	fids[2] = NULL;
	fids[3] = (struct fid *)junk;
	fids[4] = &d.domain->fid;
	for (int i = 0; i < 5; i++) {
		in = (struct fi_eq_entry){ .fid = fids[i], .context = &ctx[i],
					   .data = 40 + i };
		CHECK_EQ(sizeof(in), fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in),
						 0));
	}
	for (int i = 0; i < 5; i++) {
		/* Peeked, then read (fi_eq_sread for one of them). */
		for (int peek = 1; peek >= 0; peek--) {
			memset(&out, 0, sizeof(out));
			event = ~0u;
			if (!peek && i == 2)
				CHECK_EQ(sizeof(out),
					 fi_eq_sread(eq, &event, &out,
						     sizeof(out), 1000, 0));
			else
				CHECK_EQ(sizeof(out),
					 fi_eq_read(eq, &event, &out,
						    sizeof(out),
						    peek ? FI_PEEK : 0));
			CHECK_EQ(FI_NOTIFY, event);
			CHECK_PTR(fids[i], out.fid);
			CHECK_PTR(&ctx[i], out.context);
			CHECK_EQ(40 + i, out.data);
		}
	}
	CHECK_EQ(-FI_EAGAIN, fi_eq_read(eq, &event, &out, sizeof(out), 0));
	/* What was written is not the hook's: never rewritten. */
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		CHECK_EQ(0x4141414141414141ULL, junk[i]);
}

/* ------------------------------------------------------------------------
 * The cases, and how each runs.
 */

static const char *const fabric_providers[] = {
	"tcp", "tcp;ofi_rxm", "shm", "sockets", NULL
};

struct conf_case {
	const char *name;
	void (*fn)(void);
	const char *const *provs;
	const char *const *env;         /* extra NAME=value, NULL-terminated */
	bool parent_only;               /* run by the parent's own test */
};

#define CASE(fn, provs, env) { #fn, fn, provs, env, false }

static const struct conf_case cases[] = {
	CASE(test_eq_read_returns_application_written_events_untouched,
	     fabric_providers, NULL),
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* What one child run of a case reported. */
enum child_verdict { CHILD_PASS, CHILD_FAIL, CHILD_SKIP };

struct child_run {
	enum child_verdict verdict;
	char why[512];          /* skip reason, or how it failed */
	char *output;           /* stdout + stderr, NUL-terminated */
};

/* TAP line of the child's one case -> verdict. */
static void child_parse(struct child_run *run, int status)
{
	const char *line = run->output, *skip;

	run->verdict = CHILD_FAIL;
	snprintf(run->why, sizeof(run->why), "reported no result");
	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!strncmp(line, "not ok ", 7)) {
			snprintf(run->why, sizeof(run->why), "failed");
			break;
		}
		if (strncmp(line, "ok ", 3))
			continue;
		skip = strstr(line, " # SKIP ");
		if (skip && (!strchr(line, '\n') || skip < strchr(line, '\n'))) {
			run->verdict = CHILD_SKIP;
			snprintf(run->why, sizeof(run->why), "%.*s",
				 (int)strcspn(skip + 8, "\n"), skip + 8);
		} else {
			run->verdict = CHILD_PASS;
		}
		break;
	}
	if (WIFSIGNALED(status)) {
		run->verdict = CHILD_FAIL;
		snprintf(run->why, sizeof(run->why), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else if (WEXITSTATUS(status) && run->verdict != CHILD_FAIL) {
		run->verdict = CHILD_FAIL;
		snprintf(run->why, sizeof(run->why), "exited with status %d",
			 WEXITSTATUS(status));
	}
}

/*
 * Run case c for provider p in a child: with FI_HOOK=mrlease when hook,
 * else with FI_HOOK unset; c's env and extra_env (NULL-terminated, may be
 * NULL) added. Returns 0 with *run filled (free run->output), or -1.
 */
static int child_run(const struct conf_case *c, const char *p, bool hook,
		     const char *const *extra_env, struct child_run *run)
{
	size_t len = 0, cap = 4096;
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	memset(run, 0, sizeof(*run));
	run->output = malloc(cap);
	if (!run->output || pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *args[] = { "test_conformance_hook", "--case",
				 (char *)c->name, (char *)p, NULL };

		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		if (hook)
			setenv("FI_HOOK", "mrlease", 1);
		else
			unsetenv("FI_HOOK");
		for (const char *const *kv = c->env; kv && *kv; kv++)
			putenv((char *)*kv);
		for (const char *const *kv = extra_env; kv && *kv; kv++)
			putenv((char *)*kv);
		alarm(CHILD_ALARM);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		if (cap - len < 1024) {
			char *more = realloc(run->output, cap * 2);

			if (!more)
				break;
			run->output = more;
			cap *= 2;
		}
		n = read(fds[0], run->output + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	run->output[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	child_parse(run, status);
	return 0;
}

/* The child's output as TAP comments. */
static void child_echo(const char *label, const struct child_run *run)
{
	const char *line = run->output;

	printf("# %s:\n", label);
	while (line && *line) {
		int n = (int)strcspn(line, "\n");

		printf("#   %.*s\n", n, line);
		line += n;
		if (*line)
			line++;
	}
}

/* The case and provider mrl_test_run is running in the parent. */
static const struct conf_case *parent_case;
static const char *parent_prov;

/* One case on one provider: hooked, and the no-hook control if that
 * fails. */
static void run_case_in_children(void)
{
	struct child_run run, control;

	if (child_run(parent_case, parent_prov, true, NULL, &run)) {
		mrl_test_fail(__FILE__, __LINE__, "cannot run a child: %s",
			      strerror(errno));
		free(run.output);
		return;
	}
	if (run.verdict == CHILD_SKIP)
		mrl_test_skip_current("%s", run.why);
	if (run.verdict != CHILD_FAIL)
		goto out;
	if (child_run(parent_case, parent_prov, false, NULL, &control)) {
		mrl_test_fail(__FILE__, __LINE__, "cannot run the control: %s",
			      strerror(errno));
		free(control.output);
		goto out;
	}
	if (control.verdict == CHILD_FAIL) {
		child_echo("without the hook (control)", &control);
		mrl_test_skip_current("%s: fails without the hook too (%s)",
				      parent_prov, control.why);
	} else {
		child_echo("with FI_HOOK=mrlease", &run);
		mrl_test_fail(__FILE__, __LINE__, "%s with FI_HOOK=mrlease; "
			      "without the hook: %s", run.why,
			      control.verdict == CHILD_PASS ? "passes" :
			      control.why);
	}
	free(control.output);
out:
	free(run.output);
}

/* ------------------------------------------------------------------------ */

static int run_one_case(const char *name, const char *p)
{
	char prefix[128];

	prov = p;
	hooked = getenv("FI_HOOK") && *getenv("FI_HOOK");
	snprintf(prefix, sizeof(prefix), "%s FI_HOOK=%s: ", p,
		 hooked ? getenv("FI_HOOK") : "(unset)");
	mrl_test_set_prefix(prefix);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < NCASES; i++)
		if (!strcmp(cases[i].name, name)) {
			mrl_test_run(cases[i].name, cases[i].fn);
			return mrl_test_done();
		}
	fprintf(stderr, "no case %s\n", name);
	return EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	char prefix[128];

	if (argc == 4 && !strcmp(argv[1], "--case"))
		return run_one_case(argv[2], argv[3]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--case NAME PROVIDER]\n", argv[0]);
		return EXIT_FAILURE;
	}
	/* FI_PROVIDER_PATH with the plugin; the children set FI_HOOK. */
	xfer_reexec(argv, NULL, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < NCASES; i++) {
		if (cases[i].parent_only)
			continue;
		parent_case = &cases[i];
		for (const char *const *p = cases[i].provs; *p; p++) {
			parent_prov = *p;
			snprintf(prefix, sizeof(prefix), "%s: ", *p);
			mrl_test_set_prefix(prefix);
			mrl_test_run(cases[i].name, run_case_in_children);
		}
	}
	return mrl_test_done();
}
