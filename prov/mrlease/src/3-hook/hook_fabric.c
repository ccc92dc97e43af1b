/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hook's fabric(): libfabric hands over the fabric it just opened in
 * attr->fabric and the provider underneath as context (fabric.c,
 * ofi_hook_install). Everything the application opens later descends from
 * the wrapper returned here.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

struct fi_ops_fabric mrl_hook_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = mrl_hook_domain_open,
	.passive_ep = mrl_hook_passive_ep,
	.eq_open = mrl_hook_eq_open,
	.wait_open = mrl_hook_wait_open,
	.trywait = mrl_hook_trywait,
	.domain2 = mrl_hook_domain2_open,
};

static bool
mrl_hook_prov_is_utility(const struct fi_provider *prov)
{
	return prov && prov->name && !strncmp(prov->name, "ofi_", 4);
}

int
mrl_hook_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		void *context)
{
	struct fi_provider *inner_prov = context;
	struct mrl_fabric *fab;

	if (!attr || !attr->fabric || !fabric)
		return -FI_EINVAL;

	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;

	fab->inner = attr->fabric;
	fab->inner_prov = inner_prov;
	fab->over_utility = mrl_hook_prov_is_utility(inner_prov);
	fab->fabric.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric.fid.context = fab->inner->fid.context;
	fab->fabric.fid.ops = &mrl_fid_ops[MRL_CLASS_FABRIC];
	fab->fabric.ops = &mrl_hook_fabric_ops;
	fab->fabric.api_version = fab->inner->api_version;

	mrl_hook_count_open(MRL_CLASS_FABRIC);
	/* A fabric over a core provider may still belong to a utility
	 * provider (rxm opens it inside its own fabric()); which one it is
	 * is only known when a domain opens (mrl_hook_nesting). */
	FI_INFO(mrl_hook_prov, FI_LOG_FABRIC, "%s hooked fabric over %s (%s)\n",
		mrl_hook_personality && mrl_hook_personality->name ?
			mrl_hook_personality->name :
			mrl_hook_prov->name,
		inner_prov && inner_prov->name ? inner_prov->name : "?",
		fab->over_utility ?
			"outermost: over a utility provider" :
			"outermost unless opened by a utility provider; "
			"decided per domain");
	*fabric = &fab->fabric;
	return 0;
}

bool
mrl_hook_fabric_bypass_domain(struct mrl_fabric *fab,
			      const struct fi_info *info)
{
	int state = atomic_load_explicit(&fab->state, memory_order_acquire);
	int want;

	if (state == MRL_FABRIC_UNDECIDED) {
		want = mrl_hook_nesting > 0 && mrl_hook_personality &&
				       mrl_hook_personality->bypass_inner &&
				       mrl_hook_personality->bypass_inner(
					       info) ?
			       MRL_FABRIC_BYPASSED :
			       MRL_FABRIC_HOOKED;
		/* On failure state holds what another opener decided. */
		if (atomic_compare_exchange_strong_explicit(
			    &fab->state, &state, want, memory_order_acq_rel,
			    memory_order_acquire))
			state = want;
	}
	return state == MRL_FABRIC_BYPASSED;
}

bool
mrl_hook_fabric_bypassed(struct mrl_fabric *fab)
{
	int state = MRL_FABRIC_UNDECIDED;

	atomic_compare_exchange_strong_explicit(
		&fab->state, &state, MRL_FABRIC_HOOKED, memory_order_acq_rel,
		memory_order_acquire);
	return state == MRL_FABRIC_BYPASSED;
}

void
mrl_hook_cleanup(void)
{
	if (mrl_hook_personality && mrl_hook_personality->cleanup)
		mrl_hook_personality->cleanup();
}
