/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A refused FI_MRLEASE_* or FI_MRCHECK_* value as a user meets it: each case
 * starts a child with one variable set and FI_LOG_LEVEL unset (libfabric's
 * default, where FI_WARN prints nothing), lets fi_getinfo load the plugin,
 * which reads its parameters, and reads the child's stderr. A refused value
 * must give exactly one line naming the variable, the value and the default
 * used instead; a value inside its range none. Needs the suite's
 * environment (test/run-entry.sh: FI_PROVIDER_PATH at mrlease,
 * MRL_TEST_HOOK_PATH at mrcheck).
 *
 * Usage: test_params_refused [PATTERN...]
 *        test_params_refused --getinfo   (the child: fi_getinfo, a fabric
 *                                         and a domain over tcp;ofi_rxm)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include "common/fixture_rdm.h"
#include "common/mrlt.h"

struct refusal {
	const char *var; /* the variable, FI_MRLEASE_X or FI_MRCHECK_X */
	const char *value;
	const char *def; /* the default the message must name */
};

/* Sizes above, and the interval below, their documented ranges; values
 * whose arithmetic would wrap (an interval of 2^58 ms or more in ns). */
static const struct refusal mrlease_out_of_range[] = {
	{"FI_MRLEASE_MAX_COUNT", "1073741825", "16384"},
	{"FI_MRLEASE_MAX_COUNT", "2G", "16384"},
	{"FI_MRLEASE_MAX_SIZE", "65T", "64G"},
	{"FI_MRLEASE_MIN_SIZE", "1025G", "16384"},
	{"FI_MRLEASE_HUGEPAGE_AFTER", "0x400000000001", "8M"},
	{"FI_MRLEASE_MONITOR_CHURN", "65537", "8"},
	{"FI_MRLEASE_STATS_INTERVAL", "0", "1000"},
	{"FI_MRLEASE_STATS_INTERVAL", "3600001", "1000"},
	{"FI_MRLEASE_STATS_INTERVAL", "288230376151711744", "1000"},
	{"FI_MRLEASE_STATS_INTERVAL", "18446744073709551615", "1000"},
};

/* Text that is no value of its parameter's type. */
static const struct refusal mrlease_unparsable[] = {
	{"FI_MRLEASE_MIN_SIZE", "lots", "16384"},
	{"FI_MRLEASE_MAX_COUNT", "-1", "16384"},
	{"FI_MRLEASE_MAX_SIZE", "1.5G", "64G"},
	{"FI_MRLEASE_STATS_INTERVAL", "1s", "1000"},
	{"FI_MRLEASE_STATS", "maybe", "0"},
	{"FI_MRLEASE_HOOK_INNER", "2", "0"},
	{"FI_MRLEASE_STATS_LIVE", "yess", "0"},
	{"FI_MRLEASE_MONITOR", "uffd", "auto"},
	{"FI_MRLEASE_PINNING", "maybe", "auto"},
	{"FI_MRLEASE_STATS_DIR", "", "/dev/shm"},
};

static const struct refusal mrcheck_refused[] = {
	{"FI_MRCHECK_ABORT", "maybe", "0"},
	{"FI_MRCHECK_MR_LOCAL", "", "0"},
	{"FI_MRCHECK_EXIT_STATUS", "256", "3"},
	{"FI_MRCHECK_EXIT_STATUS", "-1", "3"},
	{"FI_MRCHECK_FAULT_SEED", "abc", "1"},
	{"FI_MRCHECK_FAULT_SEED", "-1", "1"},
	{"FI_MRCHECK_FAULT_SEED", "18446744073709551616", "1"},
	{"FI_MRCHECK_FAULT_SEED", "12 ", "1"},
	{"FI_MRCHECK_FAULT_REG", "1.5", "0"},
	{"FI_MRCHECK_FAULT_POST", "-0.1", "0"},
	{"FI_MRCHECK_FAULT_CQ_ERR", "nan", "0"},
	{"FI_MRCHECK_FAULT_REG_CODES", "ENOMEM,EBOGUS", "all four"},
	{"FI_MRCHECK_FAULT_CLOSE_ONCE", "mr,door", "0"},
	{"FI_MRCHECK_REG_COST_NS", "2e9", "16000"},
	{"FI_MRCHECK_REG_COST_NS_PER_BYTE", "1e12", "0.06"},
	{"FI_MRCHECK_REG_COST_NS_PER_BYTE", "inf", "0.06"},
};

/* The ends of each range, and the other spellings a range allows. */
static const struct refusal accepted[] = {
	{"FI_MRLEASE_MAX_COUNT", "1G", NULL},
	{"FI_MRLEASE_MAX_SIZE", "64T", NULL},
	{"FI_MRLEASE_MIN_SIZE", "1T", NULL},
	{"FI_MRLEASE_HUGEPAGE_AFTER", "0", NULL},
	{"FI_MRLEASE_MONITOR_CHURN", "65536", NULL},
	{"FI_MRLEASE_STATS_INTERVAL", "1", NULL},
	{"FI_MRLEASE_STATS_INTERVAL", "3600000", NULL},
	{"FI_MRLEASE_PINNING", "YES", NULL},
	{"FI_MRCHECK_EXIT_STATUS", "255", NULL},
	{"FI_MRCHECK_FAULT_SEED", "0xffffffffffffffff", NULL},
	{"FI_MRCHECK_FAULT_SEED", "0", NULL},
	{"FI_MRCHECK_FAULT_CLOSE_ONCE", "mr_remote", NULL},
	{"FI_MRCHECK_REG_COST_NS", "1e9", NULL},
	{"FI_MRCHECK_REG_COST_NS_PER_BYTE", "1000", NULL},
};

static char *self;

/* The child: load the providers (fi_prov_ini reads the parameters), then
 * open what installs the hook over tcp;ofi_rxm, where mrlease is installed
 * twice: its parameters must still be reported once. */
static int
child_getinfo(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;

	if (!hints)
		return EXIT_FAILURE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	if (!fi_getinfo(MRLT_FI_VERSION, NULL, NULL, 0, hints, &info) &&
	    !fi_fabric(info->fabric_attr, &fabric, NULL) &&
	    !fi_domain(fabric, info, &domain, NULL))
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return EXIT_SUCCESS;
}

/*
 * Run the child with var=value under the provider var names, its stderr
 * into err (at most len bytes, NUL-terminated). Returns the child's wait
 * status, or -1 when it could not run or hung.
 */
static int
run_child(const char *var, const char *value, char *err, size_t len)
{
	bool mrcheck = !strncmp(var, "FI_MRCHECK_", 11);
	const char *path =
		getenv(mrcheck ? "MRL_TEST_HOOK_PATH" : "FI_PROVIDER_PATH");
	FILE *capture = tmpfile();
	size_t n;
	pid_t pid;
	int status;

	err[0] = '\0';
	if (!capture || !path) {
		mrlt_fail(__FILE__, __LINE__, "%s",
			  capture ? "run me through test/run-entry.sh" :
				    "tmpfile failed");
		if (capture)
			fclose(capture);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[] = {self, "--getinfo", NULL};

		dup2(fileno(capture), STDERR_FILENO);
		unsetenv("FI_LOG_LEVEL");
		setenv("FI_PROVIDER_PATH", path, 1);
		setenv("FI_HOOK", mrcheck ? "mrcheck" : "mrlease", 1);
		setenv(var, value, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	status = pid < 0 ? -1 : mrlt_wait_child(pid, 60);
	rewind(capture);
	n = fread(err, 1, len - 1, capture);
	err[n] = '\0';
	fclose(capture);
	return status;
}

/* How many lines of err mention var, and whether one of them is exactly
 * the refusal of value with def. */
static int
count_mentions(const char *err, const char *var, const char *value,
	       const char *def, bool *exact)
{
	char head[256], tail[128];
	const char *line = err;
	int count = 0;

	snprintf(head, sizeof(head), "%s: %s=\"%s\" is not ",
		 strncmp(var, "FI_MRCHECK_", 11) ? "mrlease" : "mrcheck", var,
		 value);
	snprintf(tail, sizeof(tail), "; using the default %s", def ? def : "");
	*exact = false;
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t) (end - line) : strlen(line);
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int) n, line);
		/* "FI_X=" and "FI_X is" mention FI_X, not FI_X_Y. */
		for (const char *at = strstr(buf, var); at;
		     at = strstr(at + 1, var)) {
			char after = at[strlen(var)];

			if (after == '=' || after == ' ' || after == '\0') {
				count++;
				break;
			}
		}
		if (!strncmp(buf, head, strlen(head)) && n >= strlen(tail) &&
		    !strcmp(buf + n - strlen(tail), tail))
			*exact = true;
		line += n + (end ? 1 : 0);
	}
	return count;
}

static void
check_refused(const struct refusal *cases, size_t ncases)
{
	static char err[65536];

	for (size_t i = 0; i < ncases; i++) {
		const struct refusal *r = &cases[i];
		int status = run_child(r->var, r->value, err, sizeof(err));
		bool exact;
		int count;

		CHECK_MSG(status >= 0 && WIFEXITED(status) &&
				  WEXITSTATUS(status) == 0,
			  "%s=\"%s\": the child failed (status %d): %s", r->var,
			  r->value, status, err);
		count = count_mentions(err, r->var, r->value, r->def, &exact);
		CHECK_MSG(count == 1 && exact,
			  "%s=\"%s\": want one line \"...; using the default "
			  "%s\", got %d line(s) naming it: %s",
			  r->var, r->value, r->def, count, err);
	}
}

/* A cache cap or threshold past its range would be taken as written (a
 * cap that never evicts, a threshold that resolves nothing) with no word;
 * an interval of 2^58 ms or more wrapped the publisher's deadline into a
 * spin. Each is refused on stderr at the default log level. */
static void
test_mrlease_value_out_of_its_range_is_refused_on_stderr_with_the_default(void)
{
	check_refused(mrlease_out_of_range,
		      sizeof(mrlease_out_of_range) /
			      sizeof(mrlease_out_of_range[0]));
}

/* A typo in any FI_MRLEASE_* value (a size, a boolean, a choice, an empty
 * path) used to fall back to the default silently unless FI_LOG_LEVEL was
 * warn: the user believed the setting applied. */
static void
test_mrlease_unparsable_value_is_refused_on_stderr_with_the_default(void)
{
	check_refused(mrlease_unparsable,
		      sizeof(mrlease_unparsable) /
			      sizeof(mrlease_unparsable[0]));
}

/* mrcheck's testing aids decide what a test exercises: a mistyped seed or
 * rate, an unknown fault class, a cost that overflows are refused aloud,
 * or a test would run without the faults it asked for. */
static void
test_mrcheck_bad_value_is_refused_on_stderr_with_the_default(void)
{
	check_refused(mrcheck_refused,
		      sizeof(mrcheck_refused) / sizeof(mrcheck_refused[0]));
}

/* The refused fault settings are replaced by their defaults, not by what
 * part of them parsed: mrcheck's start line shows the settings in force
 * (the seed 1, no registration fault, all four codes, no close fault). */
static void
test_mrcheck_refused_fault_settings_leave_their_defaults_in_force(void)
{
	static const char *const vars[][2] = {
		{"FI_MRCHECK_FAULT_SEED", "0x"},
		{"FI_MRCHECK_FAULT_REG", "2"},
		{"FI_MRCHECK_FAULT_REG_CODES", "ENOSPC,nope"},
		{"FI_MRCHECK_FAULT_CLOSE_ONCE", "ep,door"},
	};
	static char err[65536];
	int status;

	/* One fault that parses, so the start line is printed. */
	setenv("FI_MRCHECK_FAULT_POST", "0.5", 1);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		setenv(vars[i][0], vars[i][1], 1);
	status = run_child("FI_MRCHECK_FAULT_CQ_ERR", "0", err, sizeof(err));
	unsetenv("FI_MRCHECK_FAULT_POST");
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i][0]);
	CHECK_MSG(status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status),
		  "the child failed (status %d): %s", status, err);
	CHECK_MSG(strstr(err, "mrcheck: fault injection: reg 0 "
			      "(ENOMEM,EAGAIN,ENOKEY,ENOSPC), post 0.5, "
			      "cq_err 0, close_once none, seed 1\n"),
		  "settings in force are not the defaults: %s", err);
}

/* The documented ends of each range, and the spellings it allows, are
 * taken without a word: a range narrower than documented would refuse a
 * setting the man page promises. */
static void
test_value_at_the_end_of_its_range_is_accepted_without_a_message(void)
{
	static char err[65536];

	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		const struct refusal *r = &accepted[i];
		int status = run_child(r->var, r->value, err, sizeof(err));
		bool exact;

		CHECK_MSG(status >= 0 && WIFEXITED(status) &&
				  WEXITSTATUS(status) == 0,
			  "%s=\"%s\": the child failed (status %d): %s", r->var,
			  r->value, status, err);
		CHECK_MSG(!count_mentions(err, r->var, r->value, NULL, &exact),
			  "%s=\"%s\" was refused: %s", r->var, r->value, err);
	}
}

int
main(int argc, char **argv)
{
	self = argv[0];
	if (argc > 1 && !strcmp(argv[1], "--getinfo"))
		return child_getinfo();
	mrlt_select(argc - 1, argv + 1);
	MRLT_RUN(
		test_mrlease_value_out_of_its_range_is_refused_on_stderr_with_the_default);
	MRLT_RUN(
		test_mrlease_unparsable_value_is_refused_on_stderr_with_the_default);
	MRLT_RUN(test_mrcheck_bad_value_is_refused_on_stderr_with_the_default);
	MRLT_RUN(
		test_mrcheck_refused_fault_settings_leave_their_defaults_in_force);
	MRLT_RUN(
		test_value_at_the_end_of_its_range_is_accepted_without_a_message);
	return mrlt_done();
}
