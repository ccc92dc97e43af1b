/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Entry point of the mrlease DL provider: the only exported symbol.
 */
#include "config.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

static int mrl_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	(void)attr;
	(void)fabric;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_provider mrl_prov = {
	.version = FI_VERSION(0, 1),
	.fi_version = FI_VERSION(1, 17),
	.name = "mrlease",
	.getinfo = NULL,
	.fabric = mrl_fabric,
	.cleanup = NULL,
};

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	return &mrl_prov;
}
