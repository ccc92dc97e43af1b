/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "mrlt.h"

static int test_number;
static int test_failures;
static bool current_failed;
static char *current_skip;
static char name_prefix[256];
/* The case-name patterns of the command line (mrlt_select). */
static char *const *select_patterns;
static int select_count;
/* Every pattern selected so far, and whether it matched a case: one that
 * matched none by mrlt_done fails the run, or a mistyped pattern would run
 * nothing and pass. Kept across mrlt_select calls, so a program that runs
 * its cases once per mode or prefix needs a match in one of them only. */
struct select_seen {
	const char *pattern;
	bool matched;
};
static struct select_seen *select_seen;
static int select_seen_count;

void
mrlt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list args;

	if (current_failed)
		return;
	current_failed = true;
	printf("# %s:%d: ", file, line);
	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	printf("\n");
	fflush(stdout);
}

bool
mrlt_failed(void)
{
	return current_failed;
}

void
mrlt_set_prefix(const char *prefix)
{
	snprintf(name_prefix, sizeof(name_prefix), "%s", prefix ? prefix : "");
}

void
mrlt_skip_current(const char *fmt, ...)
{
	va_list args;

	free(current_skip);
	va_start(args, fmt);
	if (vasprintf(&current_skip, fmt, args) < 0)
		current_skip = NULL;
	va_end(args);
}

static struct select_seen *
select_seen_of(const char *pattern)
{
	for (int i = 0; i < select_seen_count; i++)
		if (!strcmp(select_seen[i].pattern, pattern))
			return &select_seen[i];
	return NULL;
}

void
mrlt_select(int count, char *const *patterns)
{
	struct select_seen *seen;

	select_count = count > 0 ? count : 0;
	select_patterns = patterns;
	for (int i = 0; i < select_count; i++) {
		if (select_seen_of(patterns[i]))
			continue;
		seen = realloc(select_seen,
			       (select_seen_count + 1) * sizeof(*seen));
		if (!seen) {
			fprintf(stderr, "mrlt: out of memory\n");
			abort();
		}
		select_seen = seen;
		select_seen[select_seen_count++] = (struct select_seen){
			.pattern = patterns[i],
		};
	}
}

bool
mrlt_selected(const char *name)
{
	bool selected = false;
	char full[512];

	if (!select_count)
		return true;
	snprintf(full, sizeof(full), "%s%s", name_prefix, name);
	/* Every pattern that matches is marked, not just the first. */
	for (int i = 0; i < select_count; i++) {
		const char *p = select_patterns[i];

		if (strstr(full, p) || !fnmatch(p, full, 0) ||
		    !fnmatch(p, name, 0)) {
			select_seen_of(p)->matched = true;
			selected = true;
		}
	}
	return selected;
}

void
mrlt_run(const char *name, void (*fn)(void))
{
	if (!mrlt_selected(name))
		return;
	current_failed = false;
	free(current_skip);
	current_skip = NULL;
	fn();
	mrlt_close_all();
	test_number++;
	if (current_failed) {
		test_failures++;
		printf("not ok %d - %s%s\n", test_number, name_prefix, name);
	} else if (current_skip) {
		printf("ok %d - %s%s # SKIP %s\n", test_number, name_prefix,
		       name, current_skip);
	} else {
		printf("ok %d - %s%s\n", test_number, name_prefix, name);
	}
	free(current_skip);
	current_skip = NULL;
	fflush(stdout);
}

void
mrlt_skip(const char *name, const char *why)
{
	if (!mrlt_selected(name))
		return;
	printf("ok %d - %s%s # SKIP %s\n", ++test_number, name_prefix, name,
	       why);
	fflush(stdout);
}

int
mrlt_done(void)
{
	/* A failing TAP line per pattern that selected nothing: the TAP
	 * driver counts it, and the plan too. */
	for (int i = 0; i < select_seen_count; i++) {
		if (select_seen[i].matched)
			continue;
		test_failures++;
		printf("not ok %d - no case matches the pattern '%s'\n",
		       ++test_number, select_seen[i].pattern);
	}
	printf("1..%d\n", test_number);
	fflush(stdout);
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Resource tracking.
 */

struct tracked {
	struct tracked *next;
	enum { TRACK_FID, TRACK_MEM, TRACK_INFO } kind;
	void *ptr;
};

/* Newest first. */
static struct tracked *tracked_head;

static void
track(int kind, void *ptr)
{
	struct tracked *t;

	if (!ptr)
		return;
	t = calloc(1, sizeof(*t));
	if (!t) {
		fprintf(stderr, "mrlt: out of memory\n");
		abort();
	}
	t->kind = kind;
	t->ptr = ptr;
	t->next = tracked_head;
	tracked_head = t;
}

void
mrlt_track_fid(struct fid *fid)
{
	track(TRACK_FID, fid);
}

int __attribute__((noinline))
mrlt_ep_alias(struct fid_ep *ep, struct fid_ep **alias, uint64_t flags)
{
	int ret = fi_ep_alias(ep, alias, flags);

	/* Not a tail call: this frame stays in the allocation's stack. */
	__asm__ volatile("" ::: "memory");
	return ret;
}

void *
mrlt_alloc(size_t size)
{
	void *p = calloc(1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "mrlt: out of memory\n");
		abort();
	}
	track(TRACK_MEM, p);
	return p;
}

struct fi_info *
mrlt_track_info(struct fi_info *info)
{
	track(TRACK_INFO, info);
	return info;
}

static const char *
fid_class_name(const struct fid *fid)
{
	static const char *const names[] = {
		[FI_CLASS_FABRIC] = "fabric",
		[FI_CLASS_DOMAIN] = "domain",
		[FI_CLASS_EP] = "ep",
		[FI_CLASS_SEP] = "scalable ep",
		[FI_CLASS_RX_CTX] = "rx context",
		[FI_CLASS_SRX_CTX] = "srx",
		[FI_CLASS_TX_CTX] = "tx context",
		[FI_CLASS_STX_CTX] = "stx",
		[FI_CLASS_PEP] = "passive ep",
		[FI_CLASS_INTERFACE] = "interface",
		[FI_CLASS_AV] = "av",
		[FI_CLASS_MR] = "mr",
		[FI_CLASS_EQ] = "eq",
		[FI_CLASS_CQ] = "cq",
		[FI_CLASS_CNTR] = "cntr",
		[FI_CLASS_WAIT] = "wait set",
		[FI_CLASS_POLL] = "poll set",
		[FI_CLASS_CONNREQ] = "connreq",
		[FI_CLASS_MC] = "mc",
		[FI_CLASS_NIC] = "nic",
		[FI_CLASS_AV_SET] = "av set",
	};

	if (fid->fclass < sizeof(names) / sizeof(names[0]) &&
	    names[fid->fclass])
		return names[fid->fclass];
	return "fid";
}

int
mrlt_close(struct fid *fid, const char *what)
{
	struct tracked **pp, *t;
	int ret;

	if (!fid)
		return 0;
	for (pp = &tracked_head; *pp; pp = &(*pp)->next) {
		if ((*pp)->kind == TRACK_FID && (*pp)->ptr == fid) {
			t = *pp;
			*pp = t->next;
			free(t);
			break;
		}
	}
	ret = fi_close(fid);
	if (ret)
		mrlt_fail(__FILE__, __LINE__, "fi_close(%s) = %d (%s)", what,
			  ret, fi_strerror(-ret));
	return ret;
}

int
mrlt_close_all(void)
{
	struct tracked *t, *next, *rest = NULL;
	int ret, first = 0;

	/* fids first, newest first: endpoints before their CQs, domains
	 * before fabrics; buffers and infos only once nothing uses them. */
	for (t = tracked_head; t; t = next) {
		next = t->next;
		if (t->kind != TRACK_FID) {
			t->next = rest;
			rest = t;
			continue;
		}
		ret = fi_close(t->ptr);
		if (ret) {
			mrlt_fail(__FILE__, __LINE__,
				  "fi_close(%s %p) = %d (%s)",
				  fid_class_name(t->ptr), t->ptr, ret,
				  fi_strerror(-ret));
			if (!first)
				first = ret;
		}
		free(t);
	}
	tracked_head = NULL;
	for (t = rest; t; t = next) {
		next = t->next;
		if (t->kind == TRACK_MEM)
			free(t->ptr);
		else
			fi_freeinfo(t->ptr);
		free(t);
	}
	return first;
}

/* ------------------------------------------------------------------------
 * Bounded waits.
 */

double
mrlt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static unsigned long
env_ulong(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return dflt;
	x = strtoul(v, &end, 10);
	return *end ? dflt : x;
}

void
mrlt_wait_init(struct mrlt_wait *w)
{
	w->spins = 0;
	w->max_spins = env_ulong("MRL_TEST_SPIN", MRLT_SPIN_MAX);
	w->deadline = mrlt_now() + (double) env_ulong("MRL_TEST_WAIT_SECONDS",
						      MRLT_WAIT_SECONDS);
}

void
mrlt_wait_init_for(struct mrlt_wait *w, double seconds)
{
	double deadline;

	mrlt_wait_init(w);
	deadline = mrlt_now() + seconds;
	if (deadline < w->deadline)
		w->deadline = deadline;
}

bool
mrlt_wait_over(struct mrlt_wait *w)
{
	if (++w->spins >= w->max_spins)
		return true;
	/* Reading the clock every poll would dominate a fast spin. */
	return (w->spins & 1023) == 0 && mrlt_now() > w->deadline;
}

bool
mrlt_wait_until_int(atomic_int *v, int want)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	while (atomic_load(v) != want && !mrlt_wait_over(&w))
		sched_yield();
	return atomic_load(v) == want;
}

/* ------------------------------------------------------------------------
 * Forked children.
 */

static volatile int leak_check_off;

void
mrlt_leak_check_off(void)
{
	leak_check_off = 1;
}

/* LeakSanitizer's switch, which it calls at its check. Weak, so that a
 * program with a switch of its own keeps it. */
__attribute__((weak, visibility("default"))) int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return leak_check_off;
}

/* Where each thread of a hung child waits, and its stacks; gdb is bounded
 * too (its attach can block on a thread the kernel holds, as in a
 * userfaultfd wait). */
static void
describe_hung(pid_t pid)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do echo \"# $t: $(cat $t/wchan) "
		 "$(cut -d' ' -f1 $t/syscall)\"; done; "
		 "command -v gdb >/dev/null && timeout -s KILL 30 gdb -q "
		 "-batch -p %d -ex 'thread apply all bt' 2>&1 | "
		 "sed 's/^/# /'",
		 (int) pid, (int) pid);
	fflush(stdout);
	if (system(cmd) == -1)
		printf("# (cannot describe child %d)\n", (int) pid);
}

int
mrlt_wait_child(pid_t pid, double seconds)
{
	int fd = (int) syscall(SYS_pidfd_open, pid, 0), status = 0, ret = 0;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	double deadline = mrlt_now() + seconds;

	while (fd >= 0 &&
	       (ret = poll(&pfd, 1,
			   (int) ((deadline - mrlt_now()) * 1000) + 1)) < 0 &&
	       errno == EINTR && mrlt_now() < deadline)
		;
	if (fd >= 0)
		close(fd);
	if (fd < 0 || ret <= 0) {
		/* No pidfd (kernel < 5.3) is treated as a hang. */
		describe_hung(pid);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		mrlt_shm_sweep(pid);
		return -1;
	}
	ret = waitpid(pid, &status, 0) == pid ? status : -1;
	mrlt_shm_sweep(pid);
	return ret;
}

pid_t
mrlt_spawn_bare(char *const argv[])
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		unsetenv("FI_HOOK");
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid;
}

/* ------------------------------------------------------------------------
 * Data patterns.
 */

void
mrlt_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = mrlt_pattern(seed, i);
}

long
mrlt_verify(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != mrlt_pattern(seed, i))
			return (long) i;
	return -1;
}
