/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues. Every standard event starts with the fid it concerns; the
 * provider below reports its own (inner) fid, which leads back to our
 * wrapper through inner->fid.context. That includes FI_AV_COMPLETE (where
 * libfabric 1.17's own hook framework hands back a NULL fid) and
 * FI_JOIN_COMPLETE (which also publishes the multicast address).
 * Error entries are never copied: the application's buffer goes down
 * untouched (it may be larger than our compiled struct), and only its
 * leading fid field is rewritten.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

static void
mrl_hook_eq_map_fid(struct fid **fidp)
{
	struct fid *hook = mrl_hook_of_inner(*fidp);

	if (hook == *fidp)
		return;
	*fidp = hook;
	mrl_hook_count(MRL_DEBUG_EQ_EVENTS_MAPPED);
	/* The multicast address is known once the join completes. */
	if (mrl_hook_class_of(hook) == MRL_CLASS_MC) {
		struct mrl_mc *mc = container_of(hook, struct mrl_mc, mc.fid);

		mc->mc.fi_addr = mc->inner->fi_addr;
	}
}

static void
mrl_hook_eq_map_event(uint32_t event, void *buf, size_t len)
{
	switch (event) {
	case FI_MR_COMPLETE:
		/* The context is the one given at registration (fi_mr(3)); the
		 * provider was given our wrapper's fid for fi_mr_reg/regv. */
		if (len >= sizeof(struct fi_eq_entry)) {
			struct fi_eq_entry *entry = buf;

			mrl_hook_eq_map_fid(&entry->fid);
			if (mrl_hook_is_hook_fid(entry->fid) &&
			    mrl_hook_class_of(entry->fid) == MRL_CLASS_MR)
				entry->context = entry->fid->context;
		}
		break;
	case FI_NOTIFY:
	case FI_CONNREQ:
	case FI_CONNECTED:
	case FI_SHUTDOWN:
	case FI_AV_COMPLETE:
	case FI_JOIN_COMPLETE:
		/* fi_eq_entry and fi_eq_cm_entry both start with the fid. */
		if (len >= sizeof(struct fid *))
			mrl_hook_eq_map_fid(&((struct fi_eq_entry *) buf)->fid);
		break;
	default:
		break;
	}
}

static ssize_t
mrl_hook_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf, size_t len,
		 uint64_t flags)
{
	struct mrl_eq *eq = container_of(eq_fid, struct mrl_eq, eq);
	ssize_t ret;

	if (!FI_CHECK_OP(eq->inner->ops, struct fi_ops_eq, read))
		return -FI_ENOSYS;
	ret = eq->inner->ops->read(eq->inner, event, buf, len, flags);
	if (ret > 0 && event && buf)
		mrl_hook_eq_map_event(*event, buf, (size_t) ret);
	return ret;
}

static ssize_t
mrl_hook_eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
		    uint64_t flags)
{
	struct mrl_eq *eq = container_of(eq_fid, struct mrl_eq, eq);
	ssize_t ret;

	if (!FI_CHECK_OP(eq->inner->ops, struct fi_ops_eq, readerr))
		return -FI_ENOSYS;
	ret = eq->inner->ops->readerr(eq->inner, buf, flags);
	if (ret > 0 && buf)
		mrl_hook_eq_map_fid(&buf->fid);
	return ret;
}

static ssize_t
mrl_hook_eq_write(struct fid_eq *eq_fid, uint32_t event, const void *buf,
		  size_t len, uint64_t flags)
{
	struct mrl_eq *eq = container_of(eq_fid, struct mrl_eq, eq);

	if (!FI_CHECK_OP(eq->inner->ops, struct fi_ops_eq, write))
		return -FI_ENOSYS;
	return eq->inner->ops->write(eq->inner, event, buf, len, flags);
}

static ssize_t
mrl_hook_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf, size_t len,
		  int timeout, uint64_t flags)
{
	struct mrl_eq *eq = container_of(eq_fid, struct mrl_eq, eq);
	ssize_t ret;

	if (!FI_CHECK_OP(eq->inner->ops, struct fi_ops_eq, sread))
		return -FI_ENOSYS;
	ret = eq->inner->ops->sread(eq->inner, event, buf, len, timeout, flags);
	if (ret > 0 && event && buf)
		mrl_hook_eq_map_event(*event, buf, (size_t) ret);
	return ret;
}

static const char *
mrl_hook_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
		     const void *err_data, char *buf, size_t len)
{
	struct mrl_eq *eq = container_of(eq_fid, struct mrl_eq, eq);

	if (!FI_CHECK_OP(eq->inner->ops, struct fi_ops_eq, strerror))
		return fi_strerror(prov_errno);
	return eq->inner->ops->strerror(eq->inner, prov_errno, err_data, buf,
					len);
}

struct fi_ops_eq mrl_hook_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = mrl_hook_eq_read,
	.readerr = mrl_hook_eq_readerr,
	.write = mrl_hook_eq_write,
	.sread = mrl_hook_eq_sread,
	.strerror = mrl_hook_eq_strerror,
};

int
mrl_hook_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context)
{
	struct mrl_fabric *fab =
		container_of(fabric, struct mrl_fabric, fabric);
	struct fid_wait *app_wait = NULL;
	struct mrl_eq *eq;
	/* A peer EQ context (FI_PEER, fi_peer(3)) names the owner's EQ, which
	 * the provider reads: pass it as is (rxm opens one on its collective
	 * fabric in 2.x, so replacing it fails every EQ on a hooked rxm). */
	bool peer = attr && (attr->flags & FI_PEER);
	int ret;

	if (!FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, eq_open))
		return -FI_ENOSYS;
	if (mrl_hook_fabric_bypassed(fab))
		return fab->inner->ops->eq_open(fab->inner, attr, eq_fid,
						context);

	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;

	eq->fabric = fab;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &mrl_fid_ops[MRL_CLASS_EQ];
	eq->eq.ops = &mrl_hook_eq_ops;

	/* The attr may be larger than ours: swap the wait set in place. */
	if (attr && attr->wait_obj == FI_WAIT_SET && attr->wait_set) {
		app_wait = attr->wait_set;
		attr->wait_set = (struct fid_wait *) container_of(
			mrl_hook_inner_fid(&app_wait->fid), struct fid_wait,
			fid);
	}
	ret = fab->inner->ops->eq_open(fab->inner, attr, &eq->inner,
				       peer ? context : &eq->eq.fid);
	if (app_wait)
		attr->wait_set = app_wait;
	if (ret)
		goto err_free;
	if (!peer)
		mrl_hook_adopt_inner(&eq->inner->fid, &eq->eq.fid);

	if (app_wait)
		mrl_hook_wait_watch(app_wait, &eq->eq.fid,
				    peer ? NULL : &eq->inner->fid);
	mrl_hook_count_open(MRL_CLASS_EQ);
	*eq_fid = &eq->eq;
	return 0;

err_free:
	free(eq);
	return ret;
}
