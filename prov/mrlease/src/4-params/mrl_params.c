/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_MRLEASE_* parameters: one table row per knob, so a new knob is one
 * line here plus its field in struct mrl_params.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_assert.h"
#include "mrl_params.h"

/* The defaults, written once: mrl_params starts as them and a reset
 * returns to them. */
#define MRL_PARAMS_DEFAULTS                                               \
	{                                                                 \
		.max_count = MRL_PARAMS_DEFAULT_MAX_COUNT,                \
		.max_size = MRL_PARAMS_DEFAULT_MAX_SIZE,                  \
		.min_size = MRL_PARAMS_DEFAULT_MIN_SIZE,                  \
		.stats = MRL_PARAMS_DEFAULT_STATS,                        \
		.hugepage_after = MRL_PARAMS_DEFAULT_HUGEPAGE_AFTER,      \
		.hook_inner = MRL_PARAMS_DEFAULT_HOOK_INNER,              \
		.monitor = MRL_MONITOR_AUTO, .pinning = MRL_PINNING_AUTO, \
		.monitor_churn = MRL_PARAMS_DEFAULT_MONITOR_CHURN,        \
		.stats_live = MRL_PARAMS_DEFAULT_STATS_LIVE,              \
		.stats_dir = MRL_PARAMS_DEFAULT_STATS_DIR,                \
		.stats_interval = MRL_PARAMS_DEFAULT_STATS_INTERVAL,      \
		.remote = MRL_REMOTE_FORWARD,                             \
		.remote_idle = MRL_PARAMS_DEFAULT_REMOTE_IDLE,            \
		.remote_max = MRL_PARAMS_DEFAULT_REMOTE_MAX,              \
	}

struct mrl_params mrl_params = MRL_PARAMS_DEFAULTS;
static const struct mrl_params mrl_params_defaults = MRL_PARAMS_DEFAULTS;

/* The spellings of the choice parameters, indexed by their enum. */
static const char *const mrl_monitor_names[] = {"auto", "userfaultfd", "none",
						NULL};
static const char *const mrl_pinning_names[] = {"auto", "yes", "no", NULL};
static const char *const mrl_remote_names[] = {"forward", "cache", NULL};

/*
 * One knob: its name after FI_MRLEASE_, its type, where it lives, its
 * meaning and, for a number, its range. A row names the fields it needs:
 * a number sets .min and .max (the help text and the refusal message show
 * them, and a value outside is refused; mrl_params_define asserts they
 * are set), a choice sets .choices.
 */
struct mrl_param_desc {
	const char *name;
	enum fi_param_type type; /* FI_PARAM_SIZE_T, FI_PARAM_BOOL, or
				  * FI_PARAM_STRING for a choice (or, with
				  * no choices, any non-empty text) */
	size_t offset;
	size_t min, max; /* FI_PARAM_SIZE_T: the accepted values, inclusive */
	const char *help;
	const char *const *choices; /* FI_PARAM_STRING: an int, their index;
				     * NULL: a const char * */
};

static const struct mrl_param_desc mrl_param_descs[] = {
	{.name = "MAX_COUNT",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, max_count),
	 .min = 0,
	 .max = MRL_PARAMS_MAX_MAX_COUNT,
	 .help = "Most cached registrations per domain; beyond it, entries no "
		 "lease holds are evicted least recently used first. 0 means "
		 "no cap. K/M/G/T suffixes accepted"},
	{.name = "MAX_SIZE",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, max_size),
	 .min = 0,
	 .max = MRL_PARAMS_MAX_BYTES,
	 .help = "Most bytes covered by cached registrations per domain; "
		 "beyond it, entries no lease holds are evicted. 0 means no "
		 "cap. K/M/G/T suffixes accepted"},
	{.name = "MIN_SIZE",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, min_size),
	 .min = 0,
	 .max = MRL_PARAMS_MAX_MIN_SIZE,
	 .help = "Smallest operand with a NULL descriptor that the outermost "
		 "mrlease instance resolves through the cache when the "
		 "provider does not require FI_MR_LOCAL (with FI_MR_LOCAL "
		 "every operand is resolved). K/M/G/T suffixes accepted"},
	{.name = "STATS",
	 .type = FI_PARAM_BOOL,
	 .offset = offsetof(struct mrl_params, stats),
	 .help = "Print a table of the lease cache's statistics to stderr "
		 "when each domain closes"},
	{.name = "HUGEPAGE_AFTER",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, hugepage_after),
	 .min = 0,
	 .max = MRL_PARAMS_MAX_BYTES,
	 .help = "Bytes of cache entries and index (all domains) kept on "
		 "ordinary pages; beyond them the cache takes its memory in 2 "
		 "MiB chunks advised for transparent huge pages, which saves a "
		 "page walk per miss in caches of ~100k entries and more. 0 "
		 "means never. K/M/G/T suffixes accepted"},
	{.name = "HOOK_INNER",
	 .type = FI_PARAM_BOOL,
	 .offset = offsetof(struct mrl_params, hook_inner),
	 .help = "Keep the hook over the core domain a utility provider "
		 "(ofi_rxm, ofi_rxd) opens when mrlease resolves nothing there "
		 "(no FI_MR_LOCAL). Off by default: the utility provider gets "
		 "the core provider's own objects and its operations cross one "
		 "hook layer instead of two"},
	{.name = "MONITOR",
	 .type = FI_PARAM_STRING,
	 .offset = offsetof(struct mrl_params, monitor),
	 .help = "Memory monitor that invalidates cached registrations whose "
		 "pages leave the process (munmap, madvise, mremap, heap "
		 "trim): auto (on for providers whose registrations pin "
		 "pages), userfaultfd (always), none. Without one, a pinning "
		 "provider's registrations are kept only while a transfer or "
		 "MR handle uses them",
	 .choices = mrl_monitor_names},
	{.name = "PINNING",
	 .type = FI_PARAM_STRING,
	 .offset = offsetof(struct mrl_params, pinning),
	 .help = "Whether the provider's registrations pin pages (a stale one "
		 "would move wrong bytes): auto (decided from the core "
		 "provider: tcp, udp, shm, sockets and net do not pin, every "
		 "other does), yes, no",
	 .choices = mrl_pinning_names},
	{.name = "MONITOR_CHURN",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, monitor_churn),
	 .min = 0,
	 .max = MRL_PARAMS_MAX_MONITOR_CHURN,
	 .help = "On a pinning provider with the memory monitor: how many "
		 "misses in a range the monitor just saw unmapped are "
		 "registered for their transfer only (not cached, not "
		 "watched, so unmapping them again costs nothing) before the "
		 "range is cached and watched again; doubled each time the "
		 "same range churns again, up to 16 times. Memory mapped for "
		 "one transfer and unmapped then pays the monitor once per "
		 "this many plus one rounds at first, 16 times fewer once it "
		 "kept churning. 0 caches and watches every miss"},
	{.name = "STATS_LIVE",
	 .type = FI_PARAM_BOOL,
	 .offset = offsetof(struct mrl_params, stats_live),
	 .help = "Publish each domain's lease cache statistics while the "
		 "process runs, in a file of its own in FI_MRLEASE_STATS_DIR "
		 "(mrlease-<uid>/mrlease-<pid>.stats, the user's alone), for "
		 "mrlease-stat(1); removed at exit"},
	{.name = "STATS_DIR",
	 .type = FI_PARAM_STRING,
	 .offset = offsetof(struct mrl_params, stats_dir),
	 .help = "Directory holding each user's directory of live "
		 "statistics files, mrlease-<uid> (FI_MRLEASE_STATS_LIVE; made "
		 "0700, refused unless the user's alone)"},
	{.name = "STATS_INTERVAL",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, stats_interval),
	 .min = MRL_PARAMS_MIN_STATS_INTERVAL,
	 .max = MRL_PARAMS_MAX_STATS_INTERVAL,
	 .help = "Milliseconds between two publishes of the live statistics "
		 "(FI_MRLEASE_STATS_LIVE)"},
	{.name = "REMOTE",
	 .type = FI_PARAM_STRING,
	 .offset = offsetof(struct mrl_params, remote),
	 .help = "Registrations asking for remote access (FI_REMOTE_READ/"
		 "WRITE): forward (registered by the provider at every call, "
		 "the key dies at fi_close) or cache (kept after fi_close and "
		 "served again only to a request with exactly the same "
		 "ranges, access, offset and key, while the memory monitor "
		 "watches the ranges, for FI_MRLEASE_REMOTE_IDLE ms at most; "
		 "a peer may use the key that long after fi_close)",
	 .choices = mrl_remote_names},
	{.name = "REMOTE_IDLE",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, remote_idle),
	 .min = MRL_PARAMS_MIN_REMOTE_IDLE,
	 .max = MRL_PARAMS_MAX_REMOTE_IDLE,
	 .help = "With FI_MRLEASE_REMOTE=cache: milliseconds a remote-access "
		 "registration stays cached (its key valid) after the "
		 "application closed its last MR on it"},
	{.name = "REMOTE_MAX",
	 .type = FI_PARAM_SIZE_T,
	 .offset = offsetof(struct mrl_params, remote_max),
	 .min = MRL_PARAMS_MIN_REMOTE_MAX,
	 .max = MRL_PARAMS_MAX_REMOTE_MAX,
	 .help = "With FI_MRLEASE_REMOTE=cache: most remote-access "
		 "registrations kept per domain with no MR of the application "
		 "on them; beyond it the one idle longest closes"},
};

#define MRL_PARAM_COUNT (sizeof(mrl_param_descs) / sizeof(mrl_param_descs[0]))

static size_t *
mrl_param_size(struct mrl_params *params, const struct mrl_param_desc *desc)
{
	return (size_t *) ((char *) params + desc->offset);
}

static bool *
mrl_param_bool(struct mrl_params *params, const struct mrl_param_desc *desc)
{
	return (bool *) ((char *) params + desc->offset);
}

static int *
mrl_param_choice(struct mrl_params *params, const struct mrl_param_desc *desc)
{
	return (int *) ((char *) params + desc->offset);
}

static const char **
mrl_param_text(struct mrl_params *params, const struct mrl_param_desc *desc)
{
	return (const char **) (void *) ((char *) params + desc->offset);
}

/* Any non-empty text (the environment's string, which outlives us). */
static int
mrl_parse_text(const char *str, const char **value)
{
	if (!*str)
		return -FI_EINVAL;
	*value = str;
	return 0;
}

static int
mrl_parse_choice(const char *str, const char *const *choices, int *value)
{
	for (int i = 0; choices[i]; i++) {
		if (!strcasecmp(str, choices[i])) {
			*value = i;
			return 0;
		}
	}
	return -FI_EINVAL;
}

/* "64G" rather than 68719476736 for large whole binary units; small
 * values (counts, a page) as plain numbers. */
static void
mrl_format_size(char *buf, size_t len, size_t value)
{
	static const char units[] = "KMGT";
	int unit = -1;

	if (value >= ((size_t) 1 << 20)) {
		while (value % 1024 == 0 && unit < 3) {
			value /= 1024;
			unit++;
		}
	}
	if (unit < 0)
		snprintf(buf, len, "%zu", value);
	else
		snprintf(buf, len, "%zu%c", value, units[unit]);
}

/*
 * A whole number: decimal, or hexadecimal after 0x, optionally followed by
 * one of K, M, G, T (powers of 1024). No sign, no trailing text, no overflow.
 */
static int
mrl_parse_size(const char *str, size_t *value)
{
	unsigned long long number, scale = 1;
	const char *digits = str;
	char *end;
	int base = 10;

	if (str[0] == '0' && (str[1] == 'x' || str[1] == 'X')) {
		digits = str + 2;
		base = 16;
	}
	if (!isxdigit((unsigned char) digits[0]) ||
	    (base == 10 && !isdigit((unsigned char) digits[0])) ||
	    (base == 16 && (digits[1] == 'x' || digits[1] == 'X')))
		return -FI_EINVAL;

	errno = 0;
	number = strtoull(digits, &end, base);
	if (errno)
		return -FI_EINVAL;

	if (*end) {
		const char *unit =
			strchr("KMGT", toupper((unsigned char) *end));

		if (!unit || end[1] != '\0')
			return -FI_EINVAL;
		scale = 1ULL << (10 * (unit - "KMGT" + 1));
	}
	if (number > SIZE_MAX / scale)
		return -FI_EINVAL;

	*value = (size_t) (number * scale);
	return 0;
}

/* The spellings libfabric's own boolean parameters accept. */
static int
mrl_parse_bool(const char *str, bool *value)
{
	static const char *const truths[] = {"1", "yes", "true", "on"};
	static const char *const lies[] = {"0", "no", "false", "off"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(str, truths[i])) {
			*value = true;
			return 0;
		}
		if (!strcasecmp(str, lies[i])) {
			*value = false;
			return 0;
		}
	}
	return -FI_EINVAL;
}

/* The value `desc` has in `params`, as a user would write it. */
static void
mrl_param_format(char *buf, size_t len, struct mrl_params *params,
		 const struct mrl_param_desc *desc)
{
	if (desc->type == FI_PARAM_BOOL)
		snprintf(buf, len, "%d", *mrl_param_bool(params, desc));
	else if (desc->type == FI_PARAM_STRING && !desc->choices)
		snprintf(buf, len, "%s", *mrl_param_text(params, desc));
	else if (desc->type == FI_PARAM_STRING)
		snprintf(buf, len, "%s",
			 desc->choices[*mrl_param_choice(params, desc)]);
	else
		mrl_format_size(buf, len, *mrl_param_size(params, desc));
}

/* What a value of `desc` must be: "a whole number from 0 to 1G", "one of
 * auto, yes, no", ... (the refusal message says it). */
static void
mrl_param_expected(char *buf, size_t len, const struct mrl_param_desc *desc)
{
	char lo[32], hi[32];
	size_t used;

	switch (desc->type) {
	case FI_PARAM_BOOL:
		snprintf(buf, len,
			 "a boolean (0/1, no/yes, false/true, "
			 "off/on)");
		break;
	case FI_PARAM_STRING:
		if (!desc->choices) {
			snprintf(buf, len, "a non-empty path");
			break;
		}
		used = (size_t) snprintf(buf, len, "one of");
		for (int i = 0; desc->choices[i] && used < len; i++)
			used += (size_t) snprintf(buf + used, len - used,
						  "%s %s", i ? "," : "",
						  desc->choices[i]);
		break;
	default:
		mrl_format_size(lo, sizeof(lo), desc->min);
		mrl_format_size(hi, sizeof(hi), desc->max);
		snprintf(buf, len, "a whole number from %s to %s", lo, hi);
		break;
	}
}

int
mrl_params_define(const struct fi_provider *prov)
{
	struct mrl_params defaults = mrl_params_defaults;
	char def[32], lo[32], hi[32];
	int ret;

	for (size_t i = 0; i < MRL_PARAM_COUNT; i++) {
		const struct mrl_param_desc *desc = &mrl_param_descs[i];

		mrl_param_format(def, sizeof(def), &defaults, desc);
		/* A number's row must name its range (a row without one would
		 * refuse every value but 0) and its default must lie in it. */
		mrl_assert(desc->type != FI_PARAM_SIZE_T ||
			   (desc->min < desc->max &&
			    *mrl_param_size(&defaults, desc) >= desc->min &&
			    *mrl_param_size(&defaults, desc) <= desc->max));
		if (desc->type == FI_PARAM_SIZE_T) {
			mrl_format_size(lo, sizeof(lo), desc->min);
			mrl_format_size(hi, sizeof(hi), desc->max);
			ret = fi_param_define(prov, desc->name, desc->type,
					      "%s (range: %s to %s; default: "
					      "%s)",
					      desc->help, lo, hi, def);
		} else {
			ret = fi_param_define(prov, desc->name, desc->type,
					      "%s (default: %s)", desc->help,
					      def);
		}
		if (ret) {
			FI_WARN(prov, FI_LOG_CORE,
				"cannot define parameter %s: %s\n", desc->name,
				fi_strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* A size inside the row's range, or -FI_EINVAL. */
static int
mrl_parse_size_in(const char *str, const struct mrl_param_desc *desc,
		  size_t *value)
{
	size_t v;

	if (mrl_parse_size(str, &v) || v < desc->min || v > desc->max)
		return -FI_EINVAL;
	*value = v;
	return 0;
}

/*
 * One line on stderr for a refused value, whatever the log level: through
 * FI_WARN where libfabric logs warnings for this provider (so it carries
 * libfabric's prefix and appears once), else a plain line prefixed with
 * the provider's name.
 */
static void
mrl_param_refuse(const struct fi_provider *prov,
		 const struct mrl_param_desc *desc, const char *env_name,
		 const char *str)
{
	struct mrl_params defaults = mrl_params_defaults;
	char expected[128], def[32];

	mrl_param_expected(expected, sizeof(expected), desc);
	mrl_param_format(def, sizeof(def), &defaults, desc);
	if (fi_log_enabled(prov, FI_LOG_WARN, FI_LOG_CORE))
		FI_WARN(prov, FI_LOG_CORE,
			"%s=\"%s\" is not %s; using the default %s\n", env_name,
			str, expected, def);
	else
		fprintf(stderr,
			"%s: %s=\"%s\" is not %s; using the default %s\n",
			prov->name, env_name, str, expected, def);
}

/* mrl_params_load runs once per process (from fi_prov_ini), so each
 * refused variable is reported once. */
void
mrl_params_load(const struct fi_provider *prov)
{
	char env_name[64];

	mrl_params = mrl_params_defaults;
	for (size_t i = 0; i < MRL_PARAM_COUNT; i++) {
		const struct mrl_param_desc *desc = &mrl_param_descs[i];
		const char *str;
		int ret;

		/* The name libfabric gives it: FI_<PROVIDER>_<NAME>, upper
		 * case. */
		snprintf(env_name, sizeof(env_name), "FI_%s_%s", prov->name,
			 desc->name);
		for (char *c = env_name; *c; c++)
			*c = (char) toupper((unsigned char) *c);

		str = getenv(env_name);
		if (!str)
			continue;

		if (desc->type == FI_PARAM_BOOL)
			ret = mrl_parse_bool(str,
					     mrl_param_bool(&mrl_params, desc));
		else if (desc->type == FI_PARAM_STRING && !desc->choices)
			ret = mrl_parse_text(str,
					     mrl_param_text(&mrl_params, desc));
		else if (desc->type == FI_PARAM_STRING)
			ret = mrl_parse_choice(
				str, desc->choices,
				mrl_param_choice(&mrl_params, desc));
		else
			ret = mrl_parse_size_in(
				str, desc, mrl_param_size(&mrl_params, desc));

		if (ret)
			mrl_param_refuse(prov, desc, env_name, str);
		else
			FI_INFO(prov, FI_LOG_CORE, "%s=%s\n", env_name, str);
	}
}
