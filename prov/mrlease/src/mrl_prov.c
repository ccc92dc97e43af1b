/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Entry point of the mrlease DL provider: the only exported symbol.
 * mrlease is a hooking provider (getinfo NULL): libfabric calls its
 * fabric() with every fabric it opens while FI_HOOK names it.
 */
#include "config.h"

#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "mrl_hook.h"
#include "mrl_lease.h"
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
static uint32_t mrl_package_version(void)
{
	unsigned int major = 0, minor = 0;

	if (sscanf(PACKAGE_VERSION, "%u.%u", &major, &minor) < 1)
		return FI_VERSION(0, 0);
	return FI_VERSION(major, minor);
}

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	mrl_mrlease_prov.version = mrl_package_version();
	mrl_prov = &mrl_mrlease_prov;
	/* The mrlease policy on top of the passthrough layer: lease cache,
	 * data path, FI_MRLEASE_OPS_1 (mrl_personality.c). */
	mrl_personality = &mrl_lease_personality;
	/* fi_info -e lists only parameters defined here. */
	if (mrl_params_define(&mrl_mrlease_prov))
		FI_WARN(&mrl_mrlease_prov, FI_LOG_CORE,
			"defining FI_MRLEASE_* parameters failed; defaults apply\n");
	mrl_params_load(&mrl_mrlease_prov);
	return &mrl_mrlease_prov;
}
