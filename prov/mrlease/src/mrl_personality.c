/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mrlease personality: what the mrlease plugin puts on top of the
 * passthrough layer. Each callback lives with the module that owns its
 * behaviour; this table is the one place that shows them all.
 */
#include "config.h"

#include "mrl_lease.h"

const struct mrl_personality mrl_lease_personality = {
	.name = "mrlease",
	/* Lease cache domain per hook domain (mrl_lease_domain.c). */
	.domain_open = mrl_lease_domain_open,
	.domain_close = mrl_lease_domain_close,
	/* FI_MRLEASE_OPS_1 on fabrics and domains (mrl_ext.c). */
	.ops_open = mrl_ext_ops_open,
	/* The process-wide cache goes at fi_fini (mrl_lease_domain.c). */
	.cleanup = mrl_lease_fini,
	/* The data path (issue 4) adds ep_open/ep_close, cq_open/cq_close and
	 * cntr_open/cntr_close here. */
};
