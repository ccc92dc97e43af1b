/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_MRCHECK_* parameters: one table row per setting, defined with
 * fi_param_define() from fi_prov_ini, so `fi_info -e` lists each with its
 * meaning whenever libmrcheck-fi.so is on the provider path, and read with
 * fi_param_get(), which only answers for parameters defined here (integers
 * excepted: see chk_param_int). The
 * checks, the frame check and the report read theirs in mrcheck.c; the
 * testing aids theirs in mrcheck_fault.c and mrcheck_cost.c.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrcheck_int.h"

/* One setting: its name after FI_MRCHECK_, its type, its meaning. */
struct chk_param_desc {
	const char *name;
	enum fi_param_type type;
	const char *help;
};

static const struct chk_param_desc chk_param_descs[] = {
	{"MR_LOCAL", FI_PARAM_BOOL,
	 "Report a NULL descriptor of a local operand (no desc) on every "
	 "checked domain, as a provider requiring FI_MR_LOCAL would fail it; "
	 "by default only on domains opened with FI_MR_LOCAL in mr_mode "
	 "(default: 0)"},
	{"FRAMES", FI_PARAM_BOOL,
	 "Record the physical frame of every registered page and report a "
	 "post whose operand's pages are no longer those frames (a stale "
	 "registration). Needs CAP_SYS_ADMIN to read /proc/self/pagemap "
	 "(default: 0)"},
	{"ALL", FI_PARAM_BOOL,
	 "Check every domain, including the core domain a utility provider "
	 "(ofi_rxm) opens inside the application's (default: 0)"},
	{"OFF", FI_PARAM_BOOL,
	 "Check nothing: the bare passthrough layer (the registration cost "
	 "model still applies) (default: 0)"},
	{"ABORT", FI_PARAM_BOOL,
	 "Abort the process at the first violation, for a core dump "
	 "(default: 0)"},
	{"EXIT_STATUS", FI_PARAM_INT,
	 "Exit status of a process that ends with violations nothing "
	 "acknowledged (reported on stderr at exit); 0 keeps the process's "
	 "own (default: 3)"},
	{"FAULT_REG", FI_PARAM_STRING,
	 "Testing aid: fraction in [0, 1] of memory registrations failed "
	 "before they reach the provider (default: 0)"},
	{"FAULT_REG_CODES", FI_PARAM_STRING,
	 "Testing aid: comma list of the codes FAULT_REG fails registrations "
	 "with, among ENOMEM, EAGAIN, ENOKEY, ENOSPC (default: all four)"},
	{"FAULT_POST", FI_PARAM_STRING,
	 "Testing aid: fraction in [0, 1] of checked posts refused with "
	 "-FI_EAGAIN (default: 0)"},
	{"FAULT_CQ_ERR", FI_PARAM_STRING,
	 "Testing aid: fraction in [0, 1] of tracked completions turned into "
	 "error entries (FI_EIO) (default: 0)"},
	{"FAULT_CLOSE_ONCE", FI_PARAM_STRING,
	 "Testing aid: comma list of classes whose first fi_close returns "
	 "-FI_EBUSY: mr, mr_remote, ep, domain; 1 means mr,ep,domain "
	 "(default: none)"},
	{"FAULT_SEED", FI_PARAM_STRING,
	 "Testing aid: seed of the fault decisions, so a single-threaded run "
	 "repeats exactly (default: 1)"},
	{"REG_COST", FI_PARAM_BOOL,
	 "Testing aid: every registration on the application's domain spends "
	 "16000 ns + 0.06 ns per byte of CPU time first (UCX's InfiniBand "
	 "model) (default: 0)"},
	{"REG_COST_NS", FI_PARAM_STRING,
	 "Testing aid: the cost model's nanoseconds per registration; setting "
	 "it turns the model on (default: 16000)"},
	{"REG_COST_NS_PER_BYTE", FI_PARAM_STRING,
	 "Testing aid: the cost model's nanoseconds per registered byte; "
	 "setting it turns the model on (default: 0.06)"},
};

#define CHK_PARAM_COUNT (sizeof(chk_param_descs) / sizeof(chk_param_descs[0]))

extern char **environ;

/* The settings were MRCHECK_* environment variables while mrcheck was the
 * suite's alone; one still set would now be ignored without a word. */
static void
chk_params_warn_old_names(void)
{
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "MRCHECK_", 8))
			FI_WARN(&mrcheck_prov, FI_LOG_CORE,
				"%.*s is ignored: mrcheck's settings are "
				"FI_MRCHECK_* (fi_info -e)\n",
				(int) strcspn(*e, "="), *e);
}

int
chk_params_define(void)
{
	int ret;

	for (size_t i = 0; i < CHK_PARAM_COUNT; i++) {
		ret = fi_param_define(&mrcheck_prov, chk_param_descs[i].name,
				      chk_param_descs[i].type, "%s",
				      chk_param_descs[i].help);
		if (ret) {
			FI_WARN(&mrcheck_prov, FI_LOG_CORE,
				"cannot define parameter %s: %s\n",
				chk_param_descs[i].name, fi_strerror(-ret));
			return ret;
		}
	}
	chk_params_warn_old_names();
	return 0;
}

bool
chk_param_bool(const char *name)
{
	int value = 0;

	return fi_param_get_bool(&mrcheck_prov, name, &value) == 0 && value;
}

/* libfabric 1.17's fi_param_get_int reads "abc" as 0, which as an exit
 * status would hide every violation: parsed here, strictly (0 to 255). */
int
chk_param_int(const char *name, int def)
{
	char env_name[64], *end;
	const char *str;
	long value;

	snprintf(env_name, sizeof(env_name), "FI_MRCHECK_%s", name);
	str = getenv(env_name);
	if (!str || !*str)
		return def;
	errno = 0;
	value = strtol(str, &end, 0);
	if (errno || *end || value < 0 || value > 255) {
		FI_WARN(&mrcheck_prov, FI_LOG_CORE,
			"%s=\"%s\" is not a number from 0 to 255; using %d\n",
			env_name, str, def);
		return def;
	}
	return (int) value;
}

const char *
chk_param_str(const char *name)
{
	char *value = NULL;

	if (fi_param_get_str(&mrcheck_prov, name, &value) || !value || !*value)
		return NULL;
	return value;
}
