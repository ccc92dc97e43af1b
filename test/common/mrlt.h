/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every test program shares: TAP output, assertions, resource
 * tracking, bounded waits and the byte pattern data checks use. Setting up
 * real providers on loopback is fixture_rdm.h's.
 *
 * A test is a void function; MRLT_RUN(fn) runs it and prints "ok N - fn" or
 * "not ok N - fn". CHECK* macros record the first failure with its location
 * and return from the test. mrlt_done() prints the plan (the cases run) and
 * returns the exit status.
 *
 * Selecting cases: every program hands the arguments that follow its own
 * (usually all of them) to mrlt_select(); MRLT_RUN, mrlt_run and mrlt_skip
 * then run (and count) only the cases whose name, with the prefix, contains
 * one of the patterns or matches it as a shell glob. No pattern: every
 * case. So `test/cache/test_cache eviction` runs the eviction cases alone,
 * with a plan counting just those. A pattern that selected no case by
 * mrlt_done (under any prefix, in any call of mrlt_select) is a failure of
 * its own, a "not ok" line naming it: a mistyped pattern never passes. A
 * program that re-executes itself (xfer_reexec, mrlt_spawn_bare) passes
 * its arguments on.
 *
 * Resources: every fid, fi_info and buffer a test obtains through the
 * helpers below (or hands to mrlt_track_fid) is tracked. When the test
 * function returns, however it returns, MRLT_RUN closes the tracked fids
 * newest first, fails the test if any fi_close returns non-zero, then frees
 * the tracked buffers and infos. So a test can CHECK and return early and
 * still leave nothing open; a test that must close something itself calls
 * mrlt_close(), which also untracks it.
 *
 * Provider helpers report what went wrong through mrlt_fail() (with the
 * call and its error) and return a negative fi_errno, so a test only needs
 * CHECK_FI(helper(...)).
 *
 * Test helpers are prefixed mrlt_ (MRLT_ for macros); mrl_ is the
 * provider's, whose headers some tests include alongside.
 */
#ifndef MRLT_H
#define MRLT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* Wait sets, poll sets and fi_av_bind are deprecated in libfabric 2.x, yet
 * applications still call them and the hook must forward them: the tests
 * keep calling them, without the warning under 2.x headers. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

void mrlt_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool mrlt_failed(void);
/* The case-name patterns (see "Selecting cases"); count 0: every case. The
 * strings must outlive the run (argv's do). Called again (once per mode),
 * the patterns of every call must each match a case by mrlt_done. */
void mrlt_select(int count, char *const *patterns);
/* Whether a case of this name (the prefix in front) is selected. */
bool mrlt_selected(const char *name);
void mrlt_run(const char *name, void (*fn)(void));
void mrlt_skip(const char *name, const char *why);
int mrlt_done(void);
/* Text put in front of every test name from now on ("" or NULL for none),
 * so a program run once per provider prints unique names. */
void mrlt_set_prefix(const char *prefix);
/* Mark the running test skipped with a reason (printf format): MRLT_RUN then
 * prints "ok N - name # SKIP why" unless the test also failed. The test
 * should return right after. */
void mrlt_skip_current(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#define MRLT_RUN(fn) mrlt_run(#fn, fn)

#define CHECK(cond)                                                 \
	do {                                                        \
		if (!(cond)) {                                      \
			mrlt_fail(__FILE__, __LINE__, "%s", #cond); \
			return;                                     \
		}                                                   \
	} while (0)

#define CHECK_MSG(cond, ...)                                        \
	do {                                                        \
		if (!(cond)) {                                      \
			mrlt_fail(__FILE__, __LINE__, __VA_ARGS__); \
			return;                                     \
		}                                                   \
	} while (0)

/* A libfabric call expected to return 0 (or a count >= 0). */
#define CHECK_FI(expr)                                                         \
	do {                                                                   \
		long long check_rc_ = (long long) (expr);                      \
		if (check_rc_ < 0) {                                           \
			mrlt_fail(__FILE__, __LINE__, "%s = %lld (%s)", #expr, \
				  check_rc_, fi_strerror((int) -check_rc_));   \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_EQ(expected, actual)                                         \
	do {                                                               \
		long long check_e_ = (long long) (expected);               \
		long long check_a_ = (long long) (actual);                 \
		if (check_e_ != check_a_) {                                \
			mrlt_fail(__FILE__, __LINE__,                      \
				  "%s == %s: expected %lld, got %lld",     \
				  #expected, #actual, check_e_, check_a_); \
			return;                                            \
		}                                                          \
	} while (0)

/* Two pointers must be equal (fids, contexts). */
#define CHECK_PTR(expected, actual)                                           \
	do {                                                                  \
		const void *check_pe_ = (const void *) (expected);            \
		const void *check_pa_ = (const void *) (actual);              \
		if (check_pe_ != check_pa_) {                                 \
			mrlt_fail(__FILE__, __LINE__,                         \
				  "%s == %s: expected %p, got %p", #expected, \
				  #actual, check_pe_, check_pa_);             \
			return;                                               \
		}                                                             \
	} while (0)

/* ------------------------------------------------------------------------
 * Resource tracking (see the top of this file).
 */

/* Close fid when the running test returns (newest first). NULL is ignored. */
void mrlt_track_fid(struct fid *fid);
/* Close fid now and stop tracking it; records a failure naming `what` if
 * fi_close does not return 0. Returns fi_close's result. */
int mrlt_close(struct fid *fid, const char *what);
/* fi_ep_alias, for the leak check: sockets never frees an alias it made
 * (its close returns early for one), which without a hook stays reachable
 * through the caller's pointer; test/common/lsan.supp names this function. The
 * hook's own alias wrapper is checked by test_hook_fake's fake provider. */
int mrlt_ep_alias(struct fid_ep *ep, struct fid_ep **alias, uint64_t flags);
/* Zeroed memory freed after the test's fids are closed (aborts on ENOMEM). */
void *mrlt_alloc(size_t size);
/* Free info (fi_freeinfo) after the test's fids are closed; returns info. */
struct fi_info *mrlt_track_info(struct fi_info *info);
/* Close every tracked fid newest first, then free buffers and infos.
 * Returns 0 or the first fi_close error (also recorded as a failure).
 * MRLT_RUN calls it after each test; a test may call it too, to have
 * everything closed at a given point (e.g. before reading counts). */
int mrlt_close_all(void);

/* ------------------------------------------------------------------------
 * Bounded waits.
 */

/*
 * Bound of every wait loop (posts retried on -FI_EAGAIN, completion, counter
 * and EQ waits): iterations of one non-blocking poll of each side. Also
 * bounded by MRLT_WAIT_SECONDS of wall time. Overridable with the
 * environment variables MRL_TEST_SPIN and MRL_TEST_WAIT_SECONDS. A wait
 * that hits the bound fails the test naming what it waited for.
 */
#define MRLT_SPIN_MAX	  50000000UL
#define MRLT_WAIT_SECONDS 20

/* State of one bounded wait: mrlt_wait_init(), then mrlt_wait_over() once per
 * poll iteration; it returns true when the bound is hit. */
struct mrlt_wait {
	unsigned long spins;
	unsigned long max_spins;
	double deadline;
};
void mrlt_wait_init(struct mrlt_wait *w);
/* The same with a wall bound of `seconds` (or the usual one if smaller):
 * for a look at something a provider may never do, before skipping it. */
void mrlt_wait_init_for(struct mrlt_wait *w, double seconds);
bool mrlt_wait_over(struct mrlt_wait *w);
/* Wait, yielding the CPU, until another thread stores `want` in *v; bounded
 * like mrlt_wait_over. Returns whether *v reached it. */
bool mrlt_wait_until_int(atomic_int *v, int want);
/* CLOCK_MONOTONIC in seconds. */
double mrlt_now(void);

/* ------------------------------------------------------------------------
 * Forked children.
 */

/* Turn LeakSanitizer's check at exit off in this process, from a forked
 * child: the parent's threads do not exist there and their stacks cannot
 * be scanned ("Running thread ... was not suspended. False leaks are
 * possible"), so what only they referenced would be reported as leaked.
 * The parent is checked as usual. */
void mrlt_leak_check_off(void);
/* Wait for child pid within `seconds` (a pidfd: a poll with a timeout, no
 * sleeping loop). On expiry, describe where its threads are (each one's
 * kernel wait, and its stack when gdb is installed, as TAP comments) and
 * kill it. Returns the wait status, or -1 when it had to be killed. Either
 * way the child's shm regions are swept (mrlt_shm_sweep). */
int mrlt_wait_child(pid_t pid, double seconds);
/* Unlink every shm region in /dev/shm named for pid by mrlt_set_shm_name
 * (fixture_rdm.h); returns how many. For a child the caller has reaped,
 * which may have crashed or been killed before removing its own
 * (mrlt_wait_child calls it). */
int mrlt_shm_sweep(pid_t pid);
/* Fork and re-execute this program with argv, FI_HOOK unset: a no-hook
 * control of the case the caller is running. Its output goes where this
 * process's does (flushed first). The child's pid, or -1 with errno set. */
pid_t mrlt_spawn_bare(char *const argv[]);

/* ------------------------------------------------------------------------
 * Data patterns.
 */

/* A deterministic byte for seed and offset: data a transfer must deliver. */
static inline uint8_t
mrlt_pattern(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + i;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return (uint8_t) (x >> 32);
}
/* Fill buf with the pattern of seed. */
void mrlt_fill(void *buf, size_t len, uint64_t seed);
/* Index of the first byte that differs from the pattern, or -1. */
long mrlt_verify(const void *buf, size_t len, uint64_t seed);

#endif /* MRLT_H */
