/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by every test program: TAP output and assertions.
 *
 * A test is a void function; MRL_RUN(fn) runs it and prints "ok N - fn" or
 * "not ok N - fn". CHECK* macros record the first failure with its location
 * and return from the test. mrl_test_done() returns the exit status.
 */
#ifndef MRL_TEST_H
#define MRL_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

void mrl_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool mrl_test_failed(void);
void mrl_test_run(const char *name, void (*fn)(void));
void mrl_test_skip(const char *name, const char *why);
int mrl_test_done(void);

#define MRL_RUN(fn) mrl_test_run(#fn, fn)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			mrl_test_fail(__FILE__, __LINE__, "%s", #cond);        \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_MSG(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			mrl_test_fail(__FILE__, __LINE__, __VA_ARGS__);        \
			return;                                                \
		}                                                              \
	} while (0)

/* A libfabric call expected to return 0 (or a count >= 0). */
#define CHECK_FI(expr)                                                         \
	do {                                                                   \
		long long check_rc_ = (long long)(expr);                       \
		if (check_rc_ < 0) {                                           \
			mrl_test_fail(__FILE__, __LINE__, "%s = %lld (%s)",    \
				      #expr, check_rc_,                        \
				      fi_strerror((int)-check_rc_));           \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_EQ(expected, actual)                                             \
	do {                                                                   \
		long long check_e_ = (long long)(expected);                    \
		long long check_a_ = (long long)(actual);                      \
		if (check_e_ != check_a_) {                                    \
			mrl_test_fail(__FILE__, __LINE__,                      \
				      "%s == %s: expected %lld, got %lld",     \
				      #expected, #actual, check_e_, check_a_); \
			return;                                                \
		}                                                              \
	} while (0)

#endif /* MRL_TEST_H */
