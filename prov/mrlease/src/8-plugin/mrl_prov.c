/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Entry point of the mrlease DL provider: the only exported symbol.
 * mrlease is a hooking provider (getinfo NULL): libfabric calls its
 * fabric() with every fabric it opens while FI_HOOK names it.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "mrl_hook.h"
#include "mrl_bind.h"
#include "mrl_plugin.h"
#include "mrl_params.h"

static struct fi_provider mrl_mrlease_prov = {
	.version = FI_VERSION(0, 1),
	.fi_version = FI_VERSION(1, 17),
	.name = "mrlease",
	.getinfo = NULL,
	.fabric = mrl_hook_fabric,
	.cleanup = mrl_hook_cleanup,
};

/* PACKAGE_VERSION "major.minor[.patch]" -> FI_VERSION(major, minor). */
static uint32_t
mrl_package_version(void)
{
	unsigned int major = 0, minor = 0;

	if (sscanf(PACKAGE_VERSION, "%u.%u", &major, &minor) < 1)
		return FI_VERSION(0, 0);
	return FI_VERSION(major, minor);
}

/* Whether FI_PROVIDER's list names mrlease (names separated by ',' and
 * layers by ';', the list optionally negated by a leading '^'). */
static bool
mrl_provider_filter_names_us(const char *filter)
{
	char name[64];

	while (*filter) {
		size_t n = strcspn(filter, ",;");

		if (*filter == '^') {
			filter++;
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", (int) n, filter);
		if (!strcasecmp(name, "mrlease") ||
		    !strcasecmp(name, "ofi_hook_mrlease"))
			return true;
		filter += n;
		if (*filter)
			filter++;
	}
	return false;
}

/*
 * FI_PROVIDER filters providers and never selects or excludes a hook;
 * 'ofi_rxm;mrlease' even filters out every core provider, so fi_getinfo
 * fails -FI_ENODATA with no word of why. Say what works instead, once,
 * when the plugin loads.
 */
static void
mrl_check_provider_filter(void)
{
	const char *filter = getenv("FI_PROVIDER");

	if (!filter || !mrl_provider_filter_names_us(filter))
		return;
	if (*filter == '^')
		FI_WARN(&mrl_mrlease_prov, FI_LOG_CORE,
			"FI_PROVIDER=%s does not turn the mrlease hook off: "
			"FI_PROVIDER never selects or excludes a hook; mrlease "
			"is on exactly when FI_HOOK names it "
			"(FI_HOOK=mrlease)\n",
			filter);
	else
		FI_WARN(&mrl_mrlease_prov, FI_LOG_CORE,
			"FI_PROVIDER=%s names mrlease, which is a hook, not a "
			"provider: FI_PROVIDER never selects a hook, and this "
			"filter may leave no core provider (fi_getinfo "
			"-FI_ENODATA). Use FI_HOOK=mrlease with FI_PROVIDER "
			"naming providers only, e.g. FI_HOOK=mrlease "
			"FI_PROVIDER='tcp;ofi_rxm' (or 'verbs;ofi_rxm')\n",
			filter);
}

/* The entry point libfabric looks up in a DL provider (FI_EXT_INI in
 * rdma/providers/fi_prov.h declares it only as part of its definition). */
struct fi_provider *fi_prov_ini(void);

__attribute__((visibility("default"))) struct fi_provider *
fi_prov_ini(void)
{
	mrl_mrlease_prov.version = mrl_package_version();
	mrl_hook_prov = &mrl_mrlease_prov;
	/* The mrlease policy on top of the passthrough layer: lease cache,
	 * data path, FI_MRLEASE_OPS_1 (mrl_personality.c). */
	mrl_hook_personality = &mrl_plugin_personality;
	/* fi_info -e lists only parameters defined here. */
	if (mrl_params_define(&mrl_mrlease_prov))
		FI_WARN(&mrl_mrlease_prov, FI_LOG_CORE,
			"defining FI_MRLEASE_* parameters failed; defaults "
			"apply\n");
	mrl_params_load(&mrl_mrlease_prov);
	mrl_check_provider_filter();
	return &mrl_mrlease_prov;
}
