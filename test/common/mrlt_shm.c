/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm regions of the names the tests give their endpoints
 * (mrlt_set_shm_name, fixture_rdm.h): removed when the process that named
 * them ends, however it ends. shm removes a region when its endpoint closes
 * and at a normal exit, but not when the process is killed (the suite's
 * timeout), crashes, or is a forked child that leaves with _exit; each such
 * region is 16 MiB of memory in /dev/shm until reboot.
 *
 * Three nets, each for what the one before cannot catch:
 * - the process itself, at exit and on a terminating signal (the timeout's
 *   SIGTERM, an abort), unlinks the regions it named; a handler that was
 *   there before is called after (the tests install none for these
 *   signals; shm's and the sanitizers' end the process);
 * - a test that forks or spawns a child sweeps the child's regions once it
 *   has reaped it (mrlt_shm_sweep), for a child that crashed or was killed;
 * - test/run-entry.sh sweeps the entry's own pid after it is gone
 *   (test/common/leaks.sh has the patterns), and the end of make check
 *   fails on any region of a dead pid that is still there.
 */
#include "config.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_rdm.h"

/* Where shm_open puts its objects on Linux. */
#define MRLT_SHM_DIR "/dev/shm/"

/* The names this process (or the one it was forked from) gave, with the
 * pid in each: a forked child inherits the table and must leave its
 * parent's regions alone. Slots are filled once and never reused, so a
 * signal handler can read every slot below the count. */
#define MRLT_SHM_NAMES 4096
static struct {
	pid_t pid;
	char path[80];
} mrlt_shm_names[MRLT_SHM_NAMES];
static atomic_size_t mrlt_shm_count;

static const int mrlt_shm_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT,
				       SIGABRT};
static struct sigaction
	mrlt_shm_old[sizeof(mrlt_shm_signals) / sizeof(mrlt_shm_signals[0])];

/* unlink(2) only: async-signal-safe, so a signal handler may call it. */
static void
mrlt_shm_unlink_own(void)
{
	size_t count = atomic_load(&mrlt_shm_count);
	pid_t self = getpid();

	if (count > MRLT_SHM_NAMES)
		count = MRLT_SHM_NAMES;
	for (size_t i = 0; i < count; i++)
		if (mrlt_shm_names[i].pid == self)
			unlink(mrlt_shm_names[i].path);
}

/* Unlink, then let the signal do what it did before: the handler that was
 * there (shm's own, a sanitizer's), or the default, which ends the process
 * with the signal so its parent sees how it died. */
static void
mrlt_shm_on_signal(int sig, siginfo_t *info, void *uctx)
{
	const struct sigaction *old;
	size_t i;

	for (i = 0; mrlt_shm_signals[i] != sig; i++)
		;
	old = &mrlt_shm_old[i];
	/* An ignored signal ends nothing: the regions are still in use. */
	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN)
		return;
	mrlt_shm_unlink_own();
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, info, uctx);
		return;
	}
	if (old->sa_handler != SIG_DFL) {
		old->sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
mrlt_shm_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mrlt_shm_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(mrlt_shm_signals) / sizeof(int); i++)
		sigaction(mrlt_shm_signals[i], &sa, &mrlt_shm_old[i]);
	atexit(mrlt_shm_unlink_own);
}

void
mrlt_shm_remember(const char *name)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	size_t i = atomic_fetch_add(&mrlt_shm_count, 1);

	pthread_once(&once, mrlt_shm_install);
	if (i >= MRLT_SHM_NAMES) {
		/* Past the table: the runner's sweep and the end-of-suite
		 * check still see the region. */
		return;
	}
	snprintf(mrlt_shm_names[i].path, sizeof(mrlt_shm_names[i].path),
		 MRLT_SHM_DIR "%s", name);
	mrlt_shm_names[i].pid = getpid();
}

/* Whether name is "<tag>-<pid>-<serial>" with a tag of the suite's. */
static bool
mrlt_shm_named_by(const char *name, pid_t pid)
{
	static const char *const tags[] = {"conform", "mrltest"};
	char suffix[32];
	const char *at;
	size_t len = strlen(name), slen;
	bool ours = false;

	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		ours |= !strncmp(name, tags[i], strlen(tags[i]));
	if (!ours)
		return false;
	/* The serial: digits at the end, after the pid. */
	at = name + len;
	while (at > name && at[-1] >= '0' && at[-1] <= '9')
		at--;
	if (at == name + len || at == name || at[-1] != '-')
		return false;
	slen = (size_t) snprintf(suffix, sizeof(suffix), "-%d-", (int) pid);
	return (size_t) (at - name) > slen && !strncmp(at - slen, suffix, slen);
}

int
mrlt_shm_sweep(pid_t pid)
{
	char path[sizeof(MRLT_SHM_DIR) + 256];
	struct dirent *d;
	DIR *dir = opendir(MRLT_SHM_DIR);
	int removed = 0;

	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		if (!mrlt_shm_named_by(d->d_name, pid))
			continue;
		snprintf(path, sizeof(path), MRLT_SHM_DIR "%s", d->d_name);
		if (!unlink(path))
			removed++;
	}
	closedir(dir);
	return removed;
}
