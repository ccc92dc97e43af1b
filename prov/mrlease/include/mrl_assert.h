/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Assertions on the invariants the layer headers state (mrl_cache.h,
 * mrl_xfer.h): a reference count never below zero, a retired entry never
 * found, an operation released once.
 *
 * mrl_assert(cond) aborts with the file, line and condition when cond is
 * false in a build configured with --enable-debug (MRL_DEBUG defined); in
 * any other build it compiles to nothing and cond is not evaluated, so it
 * must have no side effect. CI runs its AddressSanitizer pass on a debug
 * build.
 */
#ifndef MRL_ASSERT_H
#define MRL_ASSERT_H

#ifdef MRL_DEBUG
#include <stdio.h>
#include <stdlib.h>

#define mrl_assert(cond)                                              \
	do {                                                          \
		if (!(cond)) {                                        \
			fprintf(stderr,                               \
				"mrlease: %s:%d: %s: assertion '%s' " \
				"failed\n",                           \
				__FILE__, __LINE__, __func__, #cond); \
			abort();                                      \
		}                                                     \
	} while (0)
#else
#define mrl_assert(cond) ((void) sizeof(!(cond)))
#endif

#endif /* MRL_ASSERT_H */
