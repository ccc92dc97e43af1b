/* SPDX-License-Identifier: BSD-2-Clause */
/* Counters: values pass through; every op is checked against the inner
 * table (read/readerr of a table without them read 0). */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

#define MRL_CNTR_OK(c, op) FI_CHECK_OP((c)->inner->ops, struct fi_ops_cntr, op)

static uint64_t
mrl_hook_cntr_read(struct fid_cntr *cntr_fid)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, read))
		return 0;
	return cntr->inner->ops->read(cntr->inner);
}

static uint64_t
mrl_hook_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, readerr))
		return 0;
	return cntr->inner->ops->readerr(cntr->inner);
}

static int
mrl_hook_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, add))
		return -FI_ENOSYS;
	return cntr->inner->ops->add(cntr->inner, value);
}

static int
mrl_hook_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, set))
		return -FI_ENOSYS;
	return cntr->inner->ops->set(cntr->inner, value);
}

static int
mrl_hook_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold, int timeout)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, wait))
		return -FI_ENOSYS;
	return cntr->inner->ops->wait(cntr->inner, threshold, timeout);
}

static int
mrl_hook_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, adderr))
		return -FI_ENOSYS;
	return cntr->inner->ops->adderr(cntr->inner, value);
}

static int
mrl_hook_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct mrl_cntr *cntr = mrl_hook_cntr_of(cntr_fid);

	if (!MRL_CNTR_OK(cntr, seterr))
		return -FI_ENOSYS;
	return cntr->inner->ops->seterr(cntr->inner, value);
}

struct fi_ops_cntr mrl_hook_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = mrl_hook_cntr_read,
	.readerr = mrl_hook_cntr_readerr,
	.add = mrl_hook_cntr_add,
	.set = mrl_hook_cntr_set,
	.wait = mrl_hook_cntr_wait,
	.adderr = mrl_hook_cntr_adderr,
	.seterr = mrl_hook_cntr_seterr,
};

int
mrl_hook_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
	struct fid_wait *app_wait = NULL;
	struct mrl_cntr *cntr;
	/* A peer counter context (FI_PEER) names the owner's counter: pass
	 * it as is. */
	bool peer = attr && (attr->flags & FI_PEER);
	int ret;

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, cntr_open))
		return -FI_ENOSYS;

	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;

	cntr->domain = dom;
	cntr->cntr.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr.fid.context = context;
	cntr->cntr.fid.ops = &mrl_fid_ops[MRL_CLASS_CNTR];
	cntr->cntr.ops = &mrl_hook_cntr_ops;

	if (attr && attr->wait_obj == FI_WAIT_SET && attr->wait_set) {
		app_wait = attr->wait_set;
		attr->wait_set = (struct fid_wait *) container_of(
			mrl_hook_inner_fid(&app_wait->fid), struct fid_wait,
			fid);
	}
	ret = dom->inner->ops->cntr_open(dom->inner, attr, &cntr->inner,
					 peer ? context : &cntr->cntr.fid);
	if (app_wait)
		attr->wait_set = app_wait;
	if (ret)
		goto err_free;
	if (!peer)
		mrl_hook_adopt_inner(&cntr->inner->fid, &cntr->cntr.fid);

	if (mrl_hook_personality && mrl_hook_personality->cntr_open) {
		ret = mrl_hook_personality->cntr_open(cntr);
		if (ret)
			goto err_close;
	}

	if (app_wait)
		mrl_hook_wait_watch(app_wait, &cntr->cntr.fid,
				    peer ? NULL : &cntr->inner->fid);
	mrl_hook_count_open(MRL_CLASS_CNTR);
	*cntr_fid = &cntr->cntr;
	return 0;

err_close:
	fi_close(&cntr->inner->fid);
err_free:
	free(cntr);
	return ret;
}
