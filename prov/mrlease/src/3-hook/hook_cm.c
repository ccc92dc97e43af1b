/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection management: the fi_ops_cm table shared by endpoints and
 * passive endpoints, passive endpoints themselves, and multicast/collective
 * joins (struct mrl_mc). Connection requests stay the provider's: the
 * FI_CONNREQ info->handle goes back down untouched through fi_endpoint or
 * fi_reject, while a hook passive endpoint given as handle is translated.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

/* The inner fi_ops_cm of an endpoint or passive endpoint. */
static struct fi_ops_cm *
mrl_hook_cm_of(struct fid *fid, struct fid **inner)
{
	if (!mrl_hook_is_hook_fid(fid))
		return NULL;
	*inner = mrl_hook_inner_fid(fid);
	switch (mrl_hook_class_of(fid)) {
	case MRL_CLASS_EP:
	case MRL_CLASS_SEP:
	case MRL_CLASS_TX_CTX:
	case MRL_CLASS_RX_CTX:
	case MRL_CLASS_SRX_CTX:
		return container_of(*inner, struct fid_ep, fid)->cm;
	case MRL_CLASS_PEP:
		return container_of(*inner, struct fid_pep, fid)->cm;
	default:
		return NULL;
	}
}

#define MRL_CM_OK(cm, op) FI_CHECK_OP(cm, struct fi_ops_cm, op)

static int
mrl_hook_cm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct fid *inner;
	struct fi_ops_cm *cm = mrl_hook_cm_of(fid, &inner);

	if (!MRL_CM_OK(cm, setname))
		return -FI_ENOSYS;
	return cm->setname(inner, addr, addrlen);
}

static int
mrl_hook_cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fid *inner;
	struct fi_ops_cm *cm = mrl_hook_cm_of(fid, &inner);

	if (!MRL_CM_OK(cm, getname))
		return -FI_ENOSYS;
	return cm->getname(inner, addr, addrlen);
}

static int
mrl_hook_cm_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);

	if (!MRL_CM_OK(ep->inner->cm, getpeer))
		return -FI_ENOSYS;
	return ep->inner->cm->getpeer(ep->inner, addr, addrlen);
}

static int
mrl_hook_cm_connect(struct fid_ep *ep_fid, const void *addr, const void *param,
		    size_t paramlen)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);

	if (!MRL_CM_OK(ep->inner->cm, connect))
		return -FI_ENOSYS;
	return ep->inner->cm->connect(ep->inner, addr, param, paramlen);
}

static int
mrl_hook_cm_listen(struct fid_pep *pep_fid)
{
	struct mrl_pep *pep = container_of(pep_fid, struct mrl_pep, pep);

	if (!MRL_CM_OK(pep->inner->cm, listen))
		return -FI_ENOSYS;
	return pep->inner->cm->listen(pep->inner);
}

static int
mrl_hook_cm_accept(struct fid_ep *ep_fid, const void *param, size_t paramlen)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);

	if (!MRL_CM_OK(ep->inner->cm, accept))
		return -FI_ENOSYS;
	return ep->inner->cm->accept(ep->inner, param, paramlen);
}

static int
mrl_hook_cm_reject(struct fid_pep *pep_fid, fid_t handle, const void *param,
		   size_t paramlen)
{
	struct mrl_pep *pep = container_of(pep_fid, struct mrl_pep, pep);

	if (!MRL_CM_OK(pep->inner->cm, reject))
		return -FI_ENOSYS;
	return pep->inner->cm->reject(pep->inner, mrl_hook_inner_fid(handle),
				      param, paramlen);
}

static int
mrl_hook_cm_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);

	if (!MRL_CM_OK(ep->inner->cm, shutdown))
		return -FI_ENOSYS;
	return ep->inner->cm->shutdown(ep->inner, flags);
}

/*
 * fi_join / fi_join_collective. A collective join passes a
 * struct fi_collective_addr whose AV set is ours: the provider gets a copy
 * naming the inner set. The multicast fid is ours; its fi_addr is copied
 * now and again when FI_JOIN_COMPLETE is read (hook_eq.c).
 */
static int
mrl_hook_cm_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
		 struct fid_mc **mc_fid, void *context)
{
	struct mrl_ep *ep = mrl_hook_ep_of(ep_fid);
	struct fi_collective_addr coll;
	struct mrl_mc *mc;
	int ret;

	if (!MRL_CM_OK(ep->inner->cm, join))
		return -FI_ENOSYS;

	if ((flags & FI_COLLECTIVE) && addr) {
		const struct fi_collective_addr *app = addr;

		coll.coll_addr = app->coll_addr;
		coll.set =
			app->set ?
				container_of(
					mrl_hook_inner_fid(
						(struct fid *) &app->set->fid),
					struct fid_av_set, fid) :
				NULL;
		addr = &coll;
	}

	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -FI_ENOMEM;
	mc->ep = ep;
	mc->mc.fid.fclass = FI_CLASS_MC;
	mc->mc.fid.context = context;
	mc->mc.fid.ops = &mrl_fid_ops[MRL_CLASS_MC];
	mc->mc.fi_addr = FI_ADDR_NOTAVAIL;

	ret = ep->inner->cm->join(ep->inner, addr, flags, &mc->inner,
				  &mc->mc.fid);
	if (ret)
		goto err_free;
	mrl_hook_adopt_inner(&mc->inner->fid, &mc->mc.fid);
	mc->mc.fi_addr = mc->inner->fi_addr;

	mrl_hook_count_open(MRL_CLASS_MC);
	*mc_fid = &mc->mc;
	return 0;

err_free:
	free(mc);
	return ret;
}

struct fi_ops_cm mrl_hook_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = mrl_hook_cm_setname,
	.getname = mrl_hook_cm_getname,
	.getpeer = mrl_hook_cm_getpeer,
	.connect = mrl_hook_cm_connect,
	.listen = mrl_hook_cm_listen,
	.accept = mrl_hook_cm_accept,
	.reject = mrl_hook_cm_reject,
	.shutdown = mrl_hook_cm_shutdown,
	.join = mrl_hook_cm_join,
};

/* ---- passive endpoints ------------------------------------------- */

int
mrl_hook_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_pep **pep_fid, void *context)
{
	struct mrl_fabric *fab =
		container_of(fabric, struct mrl_fabric, fabric);
	struct mrl_pep *pep;
	int ret;

	if (!FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, passive_ep))
		return -FI_ENOSYS;
	if (mrl_hook_fabric_bypassed(fab))
		return fab->inner->ops->passive_ep(fab->inner, info, pep_fid,
						   context);

	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->fabric = fab;
	pep->pep.fid.fclass = FI_CLASS_PEP;
	pep->pep.fid.context = context;
	pep->pep.fid.ops = &mrl_fid_ops[MRL_CLASS_PEP];
	pep->pep.ops = &mrl_hook_ep_ops;
	pep->pep.cm = &mrl_hook_ep_cm_ops;

	ret = fab->inner->ops->passive_ep(fab->inner, info, &pep->inner,
					  &pep->pep.fid);
	if (ret)
		goto err_free;
	mrl_hook_adopt_inner(&pep->inner->fid, &pep->pep.fid);

	mrl_hook_count_open(MRL_CLASS_PEP);
	*pep_fid = &pep->pep;
	return 0;

err_free:
	free(pep);
	return ret;
}
