/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_MRLEASE_* parsing: valid spellings land in mrl_params, anything else
 * warns exactly once and keeps the default. Driven through a stand-in
 * provider named "mrlptest" (variables FI_MRLPTEST_*) so the real plugin,
 * which libfabric may also load from FI_PROVIDER_PATH, cannot interfere.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include "mrl_params.h"
#include "common/mrlt.h"

static struct fi_provider test_prov = {
	.version = FI_VERSION(0, 1),
	.fi_version = FI_VERSION(1, 17),
	.name = "mrlptest",
};

static const char *const variables[] = {
	"FI_MRLPTEST_MAX_COUNT",      "FI_MRLPTEST_MAX_SIZE",
	"FI_MRLPTEST_MIN_SIZE",	      "FI_MRLPTEST_STATS",
	"FI_MRLPTEST_HUGEPAGE_AFTER", "FI_MRLPTEST_MONITOR",
	"FI_MRLPTEST_MONITOR_CHURN",  "FI_MRLPTEST_STATS_INTERVAL",
};

static void
clear_environment(void)
{
	for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
		unsetenv(variables[i]);
}

/* The last warning load_counting_warnings() counted. */
static char last_warning[1024];

/*
 * Runs mrl_params_load() with stderr captured and returns how many lines of
 * what libfabric logged mention `name` (-1 if the capture failed).
 */
static int
load_counting_warnings(const char *name)
{
	char line[1024];
	int saved, count = 0;
	FILE *capture;

	last_warning[0] = '\0';
	capture = tmpfile();
	if (!capture)
		return -1;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	if (saved < 0 || dup2(fileno(capture), STDERR_FILENO) < 0) {
		fclose(capture);
		return -1;
	}
	mrl_params_load(&test_prov);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);

	rewind(capture);
	while (fgets(line, sizeof(line), capture))
		if (strstr(line, name) && strstr(line, "<warn>")) {
			snprintf(last_warning, sizeof(last_warning), "%s",
				 line);
			count++;
		}
	fclose(capture);
	return count;
}

/* Without any variable set the documented defaults are in force; a default
 * drifting from the man page would mislead every user tuning the cache. */
static void
test_defaults_hold_without_environment(void)
{
	clear_environment();
	CHECK_EQ(0, load_counting_warnings("FI_MRLPTEST"));
	CHECK_EQ(MRL_PARAMS_DEFAULT_MAX_COUNT, mrl_params.max_count);
	CHECK_EQ(MRL_PARAMS_DEFAULT_MAX_SIZE, mrl_params.max_size);
	CHECK_EQ(MRL_PARAMS_DEFAULT_MIN_SIZE, mrl_params.min_size);
	CHECK_EQ(MRL_PARAMS_DEFAULT_STATS, mrl_params.stats);
	CHECK_EQ(MRL_PARAMS_DEFAULT_HUGEPAGE_AFTER, mrl_params.hugepage_after);
}

/* Every documented spelling is accepted: decimal, hex, binary suffixes and
 * libfabric's boolean words. A rejected valid value would silently drop a
 * user's setting back to the default. */
static void
test_valid_values_are_accepted(void)
{
	static const struct {
		const char *value;
		size_t expected;
	} sizes[] = {
		{"0", 0},
		{"4096", 4096},
		{"0x1000", 4096},
		{"64K", 65536},
		{"64k", 65536},
		{"3M", 3u << 20},
		{"2G", (size_t) 2 << 30},
		{"1T", (size_t) 1 << 40},
	};
	static const struct {
		const char *value;
		bool expected;
	} bools[] = {
		{"1", true},  {"yes", true}, {"TRUE", true},   {"on", true},
		{"0", false}, {"no", false}, {"False", false}, {"OFF", false},
	};

	clear_environment();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* A count stops at 1G (its range), the byte sizes do not. */
		bool count_ok = sizes[i].expected <= (size_t) 1 << 30;

		setenv("FI_MRLPTEST_MAX_COUNT",
		       count_ok ? sizes[i].value : "1G", 1);
		setenv("FI_MRLPTEST_MAX_SIZE", sizes[i].value, 1);
		setenv("FI_MRLPTEST_MIN_SIZE", sizes[i].value, 1);
		setenv("FI_MRLPTEST_HUGEPAGE_AFTER", sizes[i].value, 1);
		CHECK_MSG(load_counting_warnings("FI_MRLPTEST") == 0,
			  "%s warned", sizes[i].value);
		CHECK_MSG(
			mrl_params.max_count == (count_ok ? sizes[i].expected :
							    (size_t) 1 << 30) &&
				mrl_params.max_size == sizes[i].expected &&
				mrl_params.min_size == sizes[i].expected &&
				mrl_params.hugepage_after == sizes[i].expected,
			"%s parsed as %zu/%zu/%zu/%zu", sizes[i].value,
			mrl_params.max_count, mrl_params.max_size,
			mrl_params.min_size, mrl_params.hugepage_after);
	}
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		setenv("FI_MRLPTEST_STATS", bools[i].value, 1);
		CHECK_EQ(0, load_counting_warnings("FI_MRLPTEST"));
		CHECK_MSG(mrl_params.stats == bools[i].expected,
			  "%s parsed as %d", bools[i].value, mrl_params.stats);
	}
	clear_environment();
}

/* libfabric 1.17's own parser turns "abc" into 0 and "-1" into SIZE_MAX;
 * a cache with max_count 0 or min_size SIZE_MAX would quietly do nothing.
 * Each bad value must warn exactly once and keep the default. */
static void
test_unparsable_value_warns_once_and_keeps_default(void)
{
	static const char *const bad_sizes[] = {
		"abc",	     "12x", "-1",   "+5",     " 7",
		"7 ",	     "",    "0x",   "0x0x10", "99999999999999999999999",
		"20000000T", "4KB", "1.5G",
	};
	static const char *const bad_bools[] = {"maybe", "2", "", "yess"};

	clear_environment();
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		setenv("FI_MRLPTEST_MIN_SIZE", bad_sizes[i], 1);
		CHECK_MSG(load_counting_warnings("FI_MRLPTEST_MIN_SIZE") == 1,
			  "\"%s\" did not warn exactly once", bad_sizes[i]);
		CHECK_MSG(mrl_params.min_size == MRL_PARAMS_DEFAULT_MIN_SIZE,
			  "\"%s\" gave %zu", bad_sizes[i], mrl_params.min_size);
	}
	unsetenv("FI_MRLPTEST_MIN_SIZE");
	for (size_t i = 0; i < sizeof(bad_bools) / sizeof(bad_bools[0]); i++) {
		setenv("FI_MRLPTEST_STATS", bad_bools[i], 1);
		CHECK_MSG(load_counting_warnings("FI_MRLPTEST_STATS") == 1,
			  "\"%s\" did not warn exactly once", bad_bools[i]);
		CHECK_EQ(MRL_PARAMS_DEFAULT_STATS, mrl_params.stats);
	}
	clear_environment();
}

/* One bad variable does not cost the others their values. */
static void
test_bad_value_leaves_other_parameters_set(void)
{
	clear_environment();
	setenv("FI_MRLPTEST_MAX_COUNT", "lots", 1);
	setenv("FI_MRLPTEST_MAX_SIZE", "1G", 1);
	setenv("FI_MRLPTEST_STATS", "yes", 1);
	CHECK_EQ(1, load_counting_warnings("FI_MRLPTEST"));
	CHECK_EQ(MRL_PARAMS_DEFAULT_MAX_COUNT, mrl_params.max_count);
	CHECK_EQ((size_t) 1 << 30, mrl_params.max_size);
	CHECK(mrl_params.stats);
	clear_environment();
}

/* A value past its parameter's documented range is refused like a typo: a
 * cap or threshold far beyond any real one is a mistake (a missing unit),
 * and an interval of 2^58 ms or more wrapped the live publisher's deadline
 * into a spin. The ends of each range are accepted. */
static void
test_value_outside_its_range_warns_once_and_keeps_default(void)
{
	/* want: the value in force afterwards, the default when refused. */
	static const struct {
		const char *var, *value;
		size_t *field, want;
		bool refused;
	} cases[] = {
		{"FI_MRLPTEST_MAX_COUNT", "1G", &mrl_params.max_count,
		 (size_t) 1 << 30, false},
		{"FI_MRLPTEST_MAX_COUNT", "1073741825", &mrl_params.max_count,
		 MRL_PARAMS_DEFAULT_MAX_COUNT, true},
		{"FI_MRLPTEST_MAX_SIZE", "64T", &mrl_params.max_size,
		 (size_t) 64 << 40, false},
		{"FI_MRLPTEST_MAX_SIZE", "65T", &mrl_params.max_size,
		 MRL_PARAMS_DEFAULT_MAX_SIZE, true},
		{"FI_MRLPTEST_MIN_SIZE", "1T", &mrl_params.min_size,
		 (size_t) 1 << 40, false},
		{"FI_MRLPTEST_MIN_SIZE", "1025G", &mrl_params.min_size,
		 MRL_PARAMS_DEFAULT_MIN_SIZE, true},
		{"FI_MRLPTEST_HUGEPAGE_AFTER", "65T",
		 &mrl_params.hugepage_after, MRL_PARAMS_DEFAULT_HUGEPAGE_AFTER,
		 true},
		{"FI_MRLPTEST_MONITOR_CHURN", "65536",
		 &mrl_params.monitor_churn, 65536, false},
		{"FI_MRLPTEST_MONITOR_CHURN", "65537",
		 &mrl_params.monitor_churn, MRL_PARAMS_DEFAULT_MONITOR_CHURN,
		 true},
		{"FI_MRLPTEST_STATS_INTERVAL", "1", &mrl_params.stats_interval,
		 1, false},
		{"FI_MRLPTEST_STATS_INTERVAL", "3600000",
		 &mrl_params.stats_interval, 3600000, false},
		{"FI_MRLPTEST_STATS_INTERVAL", "0", &mrl_params.stats_interval,
		 MRL_PARAMS_DEFAULT_STATS_INTERVAL, true},
		{"FI_MRLPTEST_STATS_INTERVAL", "3600001",
		 &mrl_params.stats_interval, MRL_PARAMS_DEFAULT_STATS_INTERVAL,
		 true},
		{"FI_MRLPTEST_STATS_INTERVAL", "288230376151711744",
		 &mrl_params.stats_interval, MRL_PARAMS_DEFAULT_STATS_INTERVAL,
		 true},
	};

	clear_environment();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv(cases[i].var, cases[i].value, 1);
		CHECK_MSG(load_counting_warnings(cases[i].var) ==
				  (cases[i].refused ? 1 : 0),
			  "%s=%s: %s", cases[i].var, cases[i].value,
			  cases[i].refused ? "not refused once" : "refused");
		CHECK_MSG(*cases[i].field == cases[i].want,
			  "%s=%s gave %zu, want %zu", cases[i].var,
			  cases[i].value, *cases[i].field, cases[i].want);
		unsetenv(cases[i].var);
	}
}

/* The refusal says which variable, which value and what is used instead,
 * with the range the value missed: enough to fix the typo. */
static void
test_refusal_names_variable_value_range_and_default(void)
{
	clear_environment();
	setenv("FI_MRLPTEST_MIN_SIZE", "lots", 1);
	CHECK_EQ(1, load_counting_warnings("FI_MRLPTEST_MIN_SIZE"));
	CHECK_MSG(strstr(last_warning,
			 "FI_MRLPTEST_MIN_SIZE=\"lots\" is not a whole "
			 "number from 0 to 1T; using the default 16384\n"),
		  "%s", last_warning);
	clear_environment();
}

/* A choice that names none of its words (FI_MRLEASE_MONITOR=uffd) would
 * otherwise leave the user believing the monitor is forced on. */
static void
test_unknown_choice_warns_once_and_keeps_default(void)
{
	clear_environment();
	setenv("FI_MRLPTEST_MONITOR", "uffd", 1);
	CHECK_EQ(1, load_counting_warnings("FI_MRLPTEST_MONITOR"));
	CHECK_EQ(MRL_MONITOR_AUTO, mrl_params.monitor);
	CHECK_MSG(strstr(last_warning, "is not one of auto, userfaultfd, none; "
				       "using the default auto"),
		  "%s", last_warning);
	setenv("FI_MRLPTEST_MONITOR", "USERFAULTFD", 1);
	CHECK_EQ(0, load_counting_warnings("FI_MRLPTEST_MONITOR"));
	CHECK_EQ(MRL_MONITOR_UFFD, mrl_params.monitor);
	clear_environment();
}

/* fi_getparams (what fi_info -e prints) lists each knob with its type, its
 * default and its meaning. */
static void
test_every_parameter_is_defined_with_default_and_meaning(void)
{
	static const struct {
		const char *name;
		enum fi_param_type type;
	} expected[] = {
		{"FI_MRLPTEST_MAX_COUNT", FI_PARAM_SIZE_T},
		{"FI_MRLPTEST_MAX_SIZE", FI_PARAM_SIZE_T},
		{"FI_MRLPTEST_MIN_SIZE", FI_PARAM_SIZE_T},
		{"FI_MRLPTEST_STATS", FI_PARAM_BOOL},
		{"FI_MRLPTEST_HUGEPAGE_AFTER", FI_PARAM_SIZE_T},
		{"FI_MRLPTEST_MONITOR_CHURN", FI_PARAM_SIZE_T},
		{"FI_MRLPTEST_STATS_INTERVAL", FI_PARAM_SIZE_T},
		{"FI_MRLPTEST_MONITOR", FI_PARAM_STRING},
	};
	struct fi_param *params;
	int count;

	CHECK_FI(fi_getparams(&params, &count));
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		int found = -1;

		for (int j = 0; j < count; j++)
			if (!strcmp(params[j].name, expected[i].name))
				found = j;
		if (found < 0 || params[found].type != expected[i].type ||
		    !strstr(params[found].help_string,
			    expected[i].type == FI_PARAM_SIZE_T ?
				    "(range: " :
				    "(default: ") ||
		    !strstr(params[found].help_string, "default: ") ||
		    strlen(params[found].help_string) < 40) {
			fi_freeparams(params);
			CHECK_MSG(0, "%s missing or undocumented",
				  expected[i].name);
		}
	}
	fi_freeparams(params);
}

int
main(int argc, char **argv)
{
	struct fi_param *params;
	int count;

	mrlt_select(argc - 1, argv + 1);
	/* libfabric reads FI_LOG_LEVEL once, at its first call. */
	setenv("FI_LOG_LEVEL", "warn", 1);
	if (fi_getparams(&params, &count) == 0 && params)
		fi_freeparams(params);
	if (mrl_params_define(&test_prov)) {
		printf("Bail out! mrl_params_define failed\n");
		return EXIT_FAILURE;
	}

	MRLT_RUN(test_defaults_hold_without_environment);
	MRLT_RUN(test_valid_values_are_accepted);
	MRLT_RUN(test_unparsable_value_warns_once_and_keeps_default);
	MRLT_RUN(test_bad_value_leaves_other_parameters_set);
	MRLT_RUN(test_value_outside_its_range_warns_once_and_keeps_default);
	MRLT_RUN(test_refusal_names_variable_value_range_and_default);
	MRLT_RUN(test_unknown_choice_warns_once_and_keeps_default);
	MRLT_RUN(test_every_parameter_is_defined_with_default_and_meaning);
	return mrlt_done();
}
