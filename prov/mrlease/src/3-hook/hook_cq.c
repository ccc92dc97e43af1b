/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues. Entries carry the application's own op contexts, so
 * reads pass straight through. readerr hands the application's buffer down
 * untouched: from api_version 1.20 it is a larger fi_cq_err_entry than the
 * one compiled here, and err_data/err_data_size are the provider's to fill.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

#define MRL_CQ_OK(cq, op) FI_CHECK_OP((cq)->inner->ops, struct fi_ops_cq, op)

static ssize_t
mrl_hook_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, read))
		return -FI_ENOSYS;
	return cq->inner->ops->read(cq->inner, buf, count);
}

static ssize_t
mrl_hook_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		     fi_addr_t *src_addr)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, readfrom))
		return -FI_ENOSYS;
	return cq->inner->ops->readfrom(cq->inner, buf, count, src_addr);
}

static ssize_t
mrl_hook_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		    uint64_t flags)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, readerr))
		return -FI_ENOSYS;
	return cq->inner->ops->readerr(cq->inner, buf, flags);
}

static ssize_t
mrl_hook_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		  const void *cond, int timeout)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, sread))
		return -FI_ENOSYS;
	return cq->inner->ops->sread(cq->inner, buf, count, cond, timeout);
}

static ssize_t
mrl_hook_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		      fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, sreadfrom))
		return -FI_ENOSYS;
	return cq->inner->ops->sreadfrom(cq->inner, buf, count, src_addr, cond,
					 timeout);
}

static int
mrl_hook_cq_signal(struct fid_cq *cq_fid)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, signal))
		return -FI_ENOSYS;
	return cq->inner->ops->signal(cq->inner);
}

static const char *
mrl_hook_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
		     const void *err_data, char *buf, size_t len)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	if (!MRL_CQ_OK(cq, strerror))
		return fi_strerror(prov_errno);
	return cq->inner->ops->strerror(cq->inner, prov_errno, err_data, buf,
					len);
}

struct fi_ops_cq mrl_hook_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = mrl_hook_cq_read,
	.readfrom = mrl_hook_cq_readfrom,
	.readerr = mrl_hook_cq_readerr,
	.sread = mrl_hook_cq_sread,
	.sreadfrom = mrl_hook_cq_sreadfrom,
	.signal = mrl_hook_cq_signal,
	.strerror = mrl_hook_cq_strerror,
};

int
mrl_hook_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq_fid, void *context)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
	struct fid_wait *app_wait = NULL;
	struct mrl_cq *cq;
	/* A peer CQ context (FI_PEER) names the owner's CQ: pass it as is. */
	bool peer = attr && (attr->flags & FI_PEER);
	int ret;

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, cq_open))
		return -FI_ENOSYS;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;

	cq->domain = dom;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &mrl_fid_ops[MRL_CLASS_CQ];
	cq->cq.ops = &mrl_hook_cq_ops;
	if (attr) {
		cq->format = attr->format;
		cq->flags = attr->flags;
	}

	/* The attr may be larger than ours: swap the wait set in place. */
	if (attr && attr->wait_obj == FI_WAIT_SET && attr->wait_set) {
		app_wait = attr->wait_set;
		attr->wait_set = (struct fid_wait *) container_of(
			mrl_hook_inner_fid(&app_wait->fid), struct fid_wait,
			fid);
	}
	ret = dom->inner->ops->cq_open(dom->inner, attr, &cq->inner,
				       peer ? context : &cq->cq.fid);
	if (app_wait)
		attr->wait_set = app_wait;
	if (ret)
		goto err_free;
	if (!peer)
		mrl_hook_adopt_inner(&cq->inner->fid, &cq->cq.fid);

	if (mrl_hook_personality && mrl_hook_personality->cq_open) {
		ret = mrl_hook_personality->cq_open(cq);
		if (ret)
			goto err_close;
	}

	if (app_wait)
		mrl_hook_wait_watch(app_wait, &cq->cq.fid,
				    peer ? NULL : &cq->inner->fid);
	mrl_hook_count_open(MRL_CLASS_CQ);
	*cq_fid = &cq->cq;
	return 0;

err_close:
	fi_close(&cq->inner->fid);
err_free:
	free(cq);
	return ret;
}

size_t
mrl_hook_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return sizeof(struct fi_cq_entry);
	}
}
