/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_MRCHECK_* parameters: one table row per setting, defined with
 * fi_param_define() from fi_prov_ini, so `fi_info -e` lists each with its
 * values, default and meaning whenever libmrcheck-fi.so is on the provider
 * path. Values are read here, strictly (libfabric 1.17's fi_param_get
 * reads "abc" as 0 and reports a bad value only at FI_LOG_LEVEL=warn): a
 * value that does not parse or is out of range is refused with one line on
 * stderr naming it and the default used instead. The checks, the frame
 * check and the report read theirs in mrcheck.c; the testing aids theirs
 * in mrcheck_fault.c and mrcheck_cost.c.
 */
#include "config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrcheck_int.h"

/*
 * One setting: its name after FI_MRCHECK_, its type, the values it takes
 * (the help text and the refusal message both say it, so the two cannot
 * differ), its default as a user would write it, and its meaning.
 */
struct chk_param_desc {
	const char *name;
	enum fi_param_type type;
	const char *range;
	const char *def;
	const char *help;
};

#define CHK_BOOLEAN "a boolean (0/1, no/yes, false/true, off/on)"
#define CHK_RATE    "a rate from 0 to 1"

static const struct chk_param_desc chk_param_descs[] = {
	{"MR_LOCAL", FI_PARAM_BOOL, CHK_BOOLEAN, "0",
	 "Report a NULL descriptor of a local operand (no desc) on every "
	 "checked domain, as a provider requiring FI_MR_LOCAL would fail it; "
	 "by default only on domains opened with FI_MR_LOCAL in mr_mode"},
	{"FRAMES", FI_PARAM_BOOL, CHK_BOOLEAN, "0",
	 "Record the physical frame of every registered page and report a "
	 "post whose operand's pages are no longer those frames (a stale "
	 "registration). Needs CAP_SYS_ADMIN to read /proc/self/pagemap"},
	{"ALL", FI_PARAM_BOOL, CHK_BOOLEAN, "0",
	 "Check every domain, including the core domain a utility provider "
	 "(ofi_rxm) opens inside the application's"},
	{"OFF", FI_PARAM_BOOL, CHK_BOOLEAN, "0",
	 "Check nothing: the bare passthrough layer (the registration cost "
	 "model still applies)"},
	{"ABORT", FI_PARAM_BOOL, CHK_BOOLEAN, "0",
	 "Abort the process at the first violation, for a core dump"},
	{"EXIT_STATUS", FI_PARAM_INT, "a whole number from 0 to 255", "3",
	 "Exit status of a process that ends with violations nothing "
	 "acknowledged (reported on stderr at exit); 0 keeps the process's "
	 "own"},
	{"FAULT_REG", FI_PARAM_STRING, CHK_RATE, "0",
	 "Testing aid: fraction of memory registrations failed before they "
	 "reach the provider"},
	{"FAULT_REG_CODES", FI_PARAM_STRING,
	 "a comma list of ENOMEM, EAGAIN, ENOKEY, ENOSPC", "all four",
	 "Testing aid: the codes FAULT_REG fails registrations with"},
	{"FAULT_POST", FI_PARAM_STRING, CHK_RATE, "0",
	 "Testing aid: fraction of checked posts refused with -FI_EAGAIN"},
	{"FAULT_CQ_ERR", FI_PARAM_STRING, CHK_RATE, "0",
	 "Testing aid: fraction of tracked completions turned into error "
	 "entries (FI_EIO)"},
	{"FAULT_CLOSE_ONCE", FI_PARAM_STRING,
	 "0, 1 or a comma list of mr, mr_remote, ep, domain", "0",
	 "Testing aid: classes whose first fi_close returns -FI_EBUSY; 1 "
	 "means mr,ep,domain, 0 none"},
	{"FAULT_SEED", FI_PARAM_STRING,
	 "a whole number from 0 to 2^64-1 (decimal, or hexadecimal after 0x)",
	 "1",
	 "Testing aid: seed of the fault decisions, so a single-threaded run "
	 "repeats exactly"},
	{"REG_COST", FI_PARAM_BOOL, CHK_BOOLEAN, "0",
	 "Testing aid: every registration on the application's domain spends "
	 "REG_COST_NS + REG_COST_NS_PER_BYTE per byte of CPU time first "
	 "(UCX's InfiniBand model)"},
	{"REG_COST_NS", FI_PARAM_STRING, "a number from 0 to 1e9", "16000",
	 "Testing aid: the cost model's nanoseconds per registration; setting "
	 "it turns the model on"},
	{"REG_COST_NS_PER_BYTE", FI_PARAM_STRING, "a number from 0 to 1000",
	 "0.06",
	 "Testing aid: the cost model's nanoseconds per registered byte; "
	 "setting it turns the model on"},
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
		const struct chk_param_desc *desc = &chk_param_descs[i];

		ret = fi_param_define(&mrcheck_prov, desc->name, desc->type,
				      "%s (%s; default: %s)", desc->help,
				      desc->range, desc->def);
		if (ret) {
			FI_WARN(&mrcheck_prov, FI_LOG_CORE,
				"cannot define parameter %s: %s\n", desc->name,
				fi_strerror(-ret));
			return ret;
		}
	}
	chk_params_warn_old_names();
	return 0;
}

/* The raw value of FI_MRCHECK_<name>, NULL when unset; the name in
 * env_name. */
static const char *
chk_param_env(const char *name, char *env_name, size_t len)
{
	snprintf(env_name, len, "FI_MRCHECK_%s", name);
	return getenv(env_name);
}

void
chk_param_refuse(const char *name, const char *value)
{
	const struct chk_param_desc *desc = NULL;

	for (size_t i = 0; i < CHK_PARAM_COUNT; i++)
		if (!strcmp(chk_param_descs[i].name, name))
			desc = &chk_param_descs[i];
	assert(desc);
	/* Said at libfabric's default log level too: a mistyped testing aid
	 * would otherwise run a test without the faults it asked for. */
	if (fi_log_enabled(&mrcheck_prov, FI_LOG_WARN, FI_LOG_CORE))
		FI_WARN(&mrcheck_prov, FI_LOG_CORE,
			"FI_MRCHECK_%s=\"%s\" is not %s; using the default "
			"%s\n",
			name, value, desc->range, desc->def);
	else
		fprintf(stderr,
			"mrcheck: FI_MRCHECK_%s=\"%s\" is not %s; using the "
			"default %s\n",
			name, value, desc->range, desc->def);
}

/* libfabric's own boolean parser accepts the same words but reports a bad
 * one only at FI_LOG_LEVEL=warn: parsed here. */
bool
chk_param_bool(const char *name)
{
	static const char *const truths[] = {"1", "yes", "true", "on"};
	static const char *const lies[] = {"0", "no", "false", "off"};
	char env_name[64];
	const char *str = chk_param_env(name, env_name, sizeof(env_name));

	if (!str)
		return false;
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(str, truths[i]))
			return true;
		if (!strcasecmp(str, lies[i]))
			return false;
	}
	chk_param_refuse(name, str);
	return false;
}

/* libfabric 1.17's fi_param_get_int reads "abc" as 0, which as an exit
 * status would hide every violation: parsed here, strictly (0 to 255). */
int
chk_param_int(const char *name, int def)
{
	char env_name[64], *end;
	const char *str = chk_param_env(name, env_name, sizeof(env_name));
	long value;

	if (!str)
		return def;
	errno = 0;
	value = strtol(str, &end, 10);
	if (!isdigit((unsigned char) *str) || errno || *end || value > 255) {
		chk_param_refuse(name, str);
		return def;
	}
	return (int) value;
}

uint64_t
chk_param_u64(const char *name, uint64_t def)
{
	char env_name[64], *end;
	const char *str = chk_param_env(name, env_name, sizeof(env_name));
	const char *digits = str;
	unsigned long long value;
	int base = 10;

	if (!str)
		return def;
	if (str[0] == '0' && (str[1] == 'x' || str[1] == 'X')) {
		digits = str + 2;
		base = 16;
	}
	/* strtoull takes a sign and leading blanks, and wraps "-1" to the
	 * largest value: only digits are a seed. */
	errno = 0;
	value = strtoull(digits, &end, base);
	if (!isxdigit((unsigned char) *digits) || errno || *end) {
		chk_param_refuse(name, str);
		return def;
	}
	return (uint64_t) value;
}

int
chk_param_double(const char *name, double lo, double hi, double *value)
{
	char env_name[64], *end;
	const char *str = chk_param_env(name, env_name, sizeof(env_name));
	double v;

	if (!str)
		return 0;
	errno = 0;
	v = strtod(str, &end);
	/* !(in range) also refuses nan; a leading digit or dot refuses
	 * blanks, signs, "inf" and "nan". */
	if (!(isdigit((unsigned char) *str) || *str == '.') || errno || *end ||
	    !(v >= lo && v <= hi)) {
		chk_param_refuse(name, str);
		return -1;
	}
	*value = v;
	return 1;
}

const char *
chk_param_str(const char *name)
{
	char env_name[64];

	return chk_param_env(name, env_name, sizeof(env_name));
}
