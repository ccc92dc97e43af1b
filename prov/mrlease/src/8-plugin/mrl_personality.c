/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mrlease personality: what the mrlease plugin puts on top of the
 * passthrough layer. Each callback lives with the module that owns its
 * behaviour; this table is the one place that shows them all.
 */
#include "config.h"

#include "mrl_bind.h"
#include "mrl_plugin.h"
#include "mrl_xfer.h"

/* An inner domain without FI_MR_LOCAL never resolves an operand
 * (mrl_xfer_domain_leases): the utility provider gets its core domain
 * unwrapped, unless FI_MRLEASE_HOOK_INNER keeps the hook there. */
static bool
mrl_plugin_bypass_inner(const struct fi_info *info)
{
	return !mrl_params.hook_inner && !(info->mode & MRL_FI_LOCAL_MR) &&
	       !(info->domain_attr &&
		 (info->domain_attr->mr_mode & FI_MR_LOCAL));
}

const struct mrl_personality mrl_plugin_personality = {
	.name = "mrlease",
	.bypass_inner = mrl_plugin_bypass_inner,
	/* Lease cache domain per hook domain (mrl_bind.c), then the
	 * MR interception on it; closed in reverse (all in mrl_xfer_domain.c). */
	.domain_open = mrl_xfer_domain_open,
	.domain_close = mrl_xfer_domain_close,
	.domain_closed = mrl_xfer_domain_closed,
	/* FI_MRLEASE_OPS_1 on fabrics and domains (mrl_ext.c). */
	.ops_open = mrl_ext_ops_open,
	/* The process-wide cache is given up at fi_fini (mrl_bind.c).
	 */
	.cleanup = mrl_bind_fini,
	/* The data path: operand leases on posts, completions that release
	 * them (mrl_xfer_*.c, mrl_xfer_cq.c, mrl_xfer_cntr.c). */
	.ep_open = mrl_xfer_ep_open,
	.ep_control = mrl_xfer_ep_control,
	.ep_close = mrl_xfer_ep_close,
	.cq_open = mrl_xfer_cq_open,
	.cq_close = mrl_xfer_cq_close,
	.cq_readable = mrl_xfer_cq_readable,
	.cntr_open = mrl_xfer_cntr_open,
	.cntr_close = mrl_xfer_cntr_close,
};
