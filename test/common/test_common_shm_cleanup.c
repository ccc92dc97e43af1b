/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm regions a test names (mrlt_set_shm_name) do not outlive the
 * process that named them (mrlt_shm.c): each case forks a child that opens
 * a named shm endpoint and then ends the way a test process can end
 * without closing it, and looks in /dev/shm for the child's regions. Each
 * one left is 16 MiB of memory until reboot; the suite used to leave
 * dozens.
 */
#include "config.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fixture_rdm.h"
#include "common/mrlt.h"

/* How the child ends once its endpoint is open. */
enum child_end {
	END_SIGTERM, /* the suite's timeout */
	END_ABORT, /* a failed assertion in the provider (mrl_assert) */
	END_SIGKILL, /* the timeout's last resort: nothing runs */
};

/* Regions in /dev/shm named for pid by mrlt_set_shm_name. */
static int
regions_of(pid_t pid)
{
	char infix[32];
	struct dirent *d;
	DIR *dir = opendir("/dev/shm");
	int n = 0;

	if (!dir)
		return -1;
	snprintf(infix, sizeof(infix), "-%d-", (int) pid);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, "mrltest", 7) &&
		    strstr(d->d_name, infix))
			n++;
	closedir(dir);
	return n;
}

/* The child: a named shm endpoint, one byte on `ready`, then wait for the
 * parent's verdict on `go` and end as told. */
static void
child_run(int ready, int go, enum child_end end)
{
	struct mrlt_domain d;
	struct mrlt_peer p;
	struct fi_info *info;
	char byte = 0;

	if (mrlt_getinfo(mrlt_hints("shm", FI_EP_RDM, FI_MSG), NULL, NULL, 0,
			 &info) ||
	    mrlt_domain_open(info, &d) || mrlt_peer_open(&d, NULL, &p))
		_exit(77);
	if (write(ready, &byte, 1) != 1 || read(go, &byte, 1) != 1)
		_exit(2);
	if (end == END_ABORT)
		abort();
	raise(end == END_SIGTERM ? SIGTERM : SIGKILL);
	_exit(3);
}

/*
 * Fork the child, wait until its endpoint is open, check its region is
 * there, let it end as `end` says, and reap it without any sweep. Returns
 * the child's pid (its wait status in *status), or -1 after recording a
 * failure or a skip.
 */
static pid_t
child_end(enum child_end end, int *status)
{
	int ready[2], go[2];
	char byte = 0;
	pid_t pid;

	if (pipe(ready) || pipe(go)) {
		mrlt_fail(__FILE__, __LINE__, "pipe failed");
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		mrlt_leak_check_off();
		child_run(ready[1], go[0], end);
	}
	close(ready[1]);
	close(go[0]);
	if (pid < 0 || read(ready[0], &byte, 1) != 1) {
		close(ready[0]);
		close(go[1]);
		if (pid > 0 && waitpid(pid, status, 0) == pid &&
		    WIFEXITED(*status) && WEXITSTATUS(*status) == 77) {
			mrlt_skip_current("no shm endpoint here");
			return -1;
		}
		mrlt_fail(__FILE__, __LINE__, "the child opened no endpoint");
		return -1;
	}
	if (regions_of(pid) < 1) {
		mrlt_fail(__FILE__, __LINE__,
			  "no region of child %d in /dev/shm: nothing to test",
			  (int) pid);
		kill(pid, SIGKILL);
	} else if (write(go[1], &byte, 1) != 1) {
		kill(pid, SIGKILL);
	}
	close(ready[0]);
	close(go[1]);
	if (waitpid(pid, status, 0) != pid) {
		mrlt_fail(__FILE__, __LINE__, "waitpid failed");
		return -1;
	}
	return mrlt_failed() ? -1 : pid;
}

/* The suite's timeout sends SIGTERM: the process unlinks its regions, and
 * the signal then ends it as it would have (by default, or through a
 * handler of a library, such as psm's, which exits with status 1). */
static void
test_process_ended_by_sigterm_leaves_no_region(void)
{
	int status;
	pid_t pid = child_end(END_SIGTERM, &status);

	if (pid < 0)
		return;
	CHECK_MSG(status != 0 &&
			  !(WIFEXITED(status) && WEXITSTATUS(status) == 3),
		  "the signal did not end the child: wait status %#x", status);
	CHECK_EQ(0, regions_of(pid));
}

/* An assertion in the provider aborts: the regions go, and the abort
 * still ends the process. */
static void
test_process_ended_by_abort_leaves_no_region(void)
{
	int status;
	pid_t pid = child_end(END_ABORT, &status);

	if (pid < 0)
		return;
	CHECK_MSG(status != 0, "wait status %#x", status);
	CHECK_EQ(0, regions_of(pid));
}

/* Nothing runs in a process killed with SIGKILL: its region stays until
 * the parent that reaped it sweeps its pid (what mrlt_wait_child, the
 * conformance drivers and test/run-entry.sh do). */
static void
test_region_of_a_killed_child_is_swept_by_its_parent(void)
{
	int status, left;
	pid_t pid = child_end(END_SIGKILL, &status);

	if (pid < 0)
		return;
	left = regions_of(pid);
	CHECK_MSG(left >= 1, "SIGKILL left no region: the sweep is untested");
	CHECK_EQ(left, mrlt_shm_sweep(pid));
	CHECK_EQ(0, regions_of(pid));
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(test_process_ended_by_sigterm_leaves_no_region);
	MRLT_RUN(test_process_ended_by_abort_leaves_no_region);
	MRLT_RUN(test_region_of_a_killed_child_is_swept_by_its_parent);
	return mrlt_done();
}
