/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdarg.h>
#include <stdlib.h>

#include "mrl_test.h"

static int test_number;
static int test_failures;
static bool current_failed;

void mrl_test_fail(const char *file, int line, const char *fmt, ...)
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

bool mrl_test_failed(void)
{
	return current_failed;
}

void mrl_test_run(const char *name, void (*fn)(void))
{
	current_failed = false;
	fn();
	test_number++;
	if (current_failed)
		test_failures++;
	printf("%sok %d - %s\n", current_failed ? "not " : "", test_number, name);
	fflush(stdout);
}

void mrl_test_skip(const char *name, const char *why)
{
	printf("ok %d - %s # SKIP %s\n", ++test_number, name, why);
	fflush(stdout);
}

int mrl_test_done(void)
{
	printf("1..%d\n", test_number);
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
