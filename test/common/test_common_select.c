/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Case-name patterns (mrlt_select): a pattern that selects no case fails
 * the run with a "not ok" line naming it, so a mistyped pattern in a
 * script or on a command line never runs nothing and passes. Each case
 * runs this program again as a small test program (--cases, or --modes for
 * one that selects once per mode) with the patterns under test, and reads
 * its TAP and exit status.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/mrlt.h"

#define CHILD_SECONDS 60

/* What the child ran: its TAP output and exit status. */
struct child_out {
	char text[8192];
	int status;
};

static void
case_in_both_prefixes(void)
{
}

static void
case_in_first_prefix_only(void)
{
}

static void
case_of_the_second_mode(void)
{
}

/* A program with two provider prefixes and a skipped case. */
static int
child_cases(int count, char **patterns)
{
	mrlt_select(count, patterns);
	mrlt_set_prefix("first: ");
	MRLT_RUN(case_in_both_prefixes);
	MRLT_RUN(case_in_first_prefix_only);
	mrlt_set_prefix("second: ");
	MRLT_RUN(case_in_both_prefixes);
	mrlt_skip("case_skipped_here", "not on this provider");
	mrlt_set_prefix(NULL);
	return mrlt_done();
}

/* A program that selects its cases once per mode. */
static int
child_modes(int count, char **patterns)
{
	mrlt_select(count, patterns);
	MRLT_RUN(case_in_both_prefixes);
	mrlt_select(count, patterns);
	MRLT_RUN(case_of_the_second_mode);
	return mrlt_done();
}

/* Run this program with MODE and the patterns; its stdout into out. */
static int
run_child(struct child_out *out, const char *mode, const char *const *patterns)
{
	char *argv[16] = {"test_common_select", (char *) mode};
	size_t len = 0;
	int fds[2], argc = 2;
	ssize_t n;
	pid_t pid;

	for (; *patterns && argc < 15; patterns++)
		argv[argc++] = (char *) *patterns;
	argv[argc] = NULL;
	if (pipe(fds))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(fds[1]);
	while (len < sizeof(out->text) - 1 &&
	       (n = read(fds[0], out->text + len,
			 sizeof(out->text) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t) n;
	}
	out->text[len] = '\0';
	close(fds[0]);
	out->status = mrlt_wait_child(pid, CHILD_SECONDS);
	/* Its TAP as comments of ours, for the log. */
	for (char *line = out->text; *line;) {
		char *end = strchr(line, '\n');
		int l = end ? (int) (end - line) : (int) strlen(line);

		printf("#   %.*s\n", l, line);
		line += l + (end != NULL);
	}
	return 0;
}

static bool
exited_with(const struct child_out *out, int code)
{
	return out->status != -1 && WIFEXITED(out->status) &&
	       WEXITSTATUS(out->status) == code;
}

static void
test_a_pattern_matching_no_case_fails_naming_it(void)
{
	static const char *const patterns[] = {"no_such_case", NULL};
	struct child_out out;

	CHECK_EQ(0, run_child(&out, "--cases", patterns));
	CHECK_MSG(exited_with(&out, EXIT_FAILURE), "status %d", out.status);
	CHECK(strstr(out.text, "not ok 1 - no case matches the pattern "
			       "'no_such_case'\n"));
	CHECK(strstr(out.text, "1..1\n"));
	CHECK(!strstr(out.text, "\nok "));
}

static void
test_only_the_pattern_matching_nothing_fails(void)
{
	static const char *const patterns[] = {"first_prefix_only",
					       "nothing_like_it", NULL};
	struct child_out out;

	CHECK_EQ(0, run_child(&out, "--cases", patterns));
	CHECK_MSG(exited_with(&out, EXIT_FAILURE), "status %d", out.status);
	CHECK(strstr(out.text, "ok 1 - first: case_in_first_prefix_only\n"));
	CHECK(strstr(out.text, "not ok 2 - no case matches the pattern "
			       "'nothing_like_it'\n"));
	CHECK(!strstr(out.text, "'first_prefix_only'"));
	CHECK(strstr(out.text, "1..2\n"));
}

static void
test_a_match_under_one_prefix_is_a_match(void)
{
	static const char *const patterns[] = {"first: *", NULL};
	struct child_out out;

	CHECK_EQ(0, run_child(&out, "--cases", patterns));
	CHECK_MSG(exited_with(&out, EXIT_SUCCESS), "status %d", out.status);
	CHECK(strstr(out.text, "1..2\n"));
	CHECK(!strstr(out.text, "not ok"));
}

static void
test_a_skipped_case_is_a_match(void)
{
	static const char *const patterns[] = {"skipped_here", NULL};
	struct child_out out;

	CHECK_EQ(0, run_child(&out, "--cases", patterns));
	CHECK_MSG(exited_with(&out, EXIT_SUCCESS), "status %d", out.status);
	CHECK(strstr(out.text, "# SKIP not on this provider\n"));
	CHECK(strstr(out.text, "1..1\n"));
}

static void
test_no_pattern_runs_every_case_and_passes(void)
{
	static const char *const patterns[] = {NULL};
	struct child_out out;

	CHECK_EQ(0, run_child(&out, "--cases", patterns));
	CHECK_MSG(exited_with(&out, EXIT_SUCCESS), "status %d", out.status);
	CHECK(strstr(out.text, "1..4\n"));
}

static void
test_a_match_in_one_mode_is_a_match(void)
{
	static const char *const patterns[] = {"second_mode",
					       "in_both_prefixes", NULL};
	struct child_out out;

	CHECK_EQ(0, run_child(&out, "--modes", patterns));
	CHECK_MSG(exited_with(&out, EXIT_SUCCESS), "status %d", out.status);
	CHECK(strstr(out.text, "1..2\n"));
	CHECK(!strstr(out.text, "not ok"));
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--cases"))
		return child_cases(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "--modes"))
		return child_modes(argc - 2, argv + 2);
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(test_a_pattern_matching_no_case_fails_naming_it);
	MRLT_RUN(test_only_the_pattern_matching_nothing_fails);
	MRLT_RUN(test_a_match_under_one_prefix_is_a_match);
	MRLT_RUN(test_a_skipped_case_is_a_match);
	MRLT_RUN(test_no_pattern_runs_every_case_and_passes);
	MRLT_RUN(test_a_match_in_one_mode_is_a_match);
	return mrlt_done();
}
