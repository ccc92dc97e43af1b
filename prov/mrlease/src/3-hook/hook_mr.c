/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration: fi_mr_reg/regv/regattr on a hook domain, and
 * mrl_hook_mr_wrap() for personalities that register on their own. The hook MR
 * shows the inner MR's key and descriptor, so descriptors reach the
 * provider untranslated.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

static struct mrl_mr *
mrl_hook_mr_alloc(struct mrl_domain *dom, void *context)
{
	struct mrl_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return NULL;
	mr->domain = dom;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = context;
	mr->mr.fid.ops = &mrl_fid_ops[MRL_CLASS_MR];
	return mr;
}

static void
mrl_hook_mr_publish(struct mrl_mr *mr, struct fid_mr **mr_fid)
{
	if (!mr->release)
		mrl_hook_adopt_inner(&mr->inner->fid, &mr->mr.fid);
	mr->mr.key = mr->inner->key;
	mr->mr.mem_desc = mr->inner->mem_desc;
	mrl_hook_count_open(MRL_CLASS_MR);
	*mr_fid = &mr->mr;
}

/* The MR ops are called with the domain's fid (fi_mr_reg(domain, ...)). */
static struct mrl_domain *
mrl_hook_mr_domain(struct fid *fid)
{
	if (!mrl_hook_is_hook_fid(fid) ||
	    mrl_hook_class_of(fid) != MRL_CLASS_DOMAIN)
		return NULL;
	return container_of(fid, struct mrl_domain, domain.fid);
}

#define MRL_MR_OK(dom, op) FI_CHECK_OP((dom)->inner->mr, struct fi_ops_mr, op)

static int
mrl_hook_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags,
		struct fid_mr **mr_fid, void *context)
{
	struct mrl_domain *dom = mrl_hook_mr_domain(fid);
	struct mrl_mr *mr;
	int ret;

	if (!dom)
		return -FI_EINVAL;
	if (!MRL_MR_OK(dom, reg))
		return -FI_ENOSYS;
	mr = mrl_hook_mr_alloc(dom, context);
	if (!mr)
		return -FI_ENOMEM;
	ret = dom->inner->mr->reg(&dom->inner->fid, buf, len, access, offset,
				  requested_key, flags, &mr->inner, context);
	if (ret)
		goto err_free;
	mr->inner->fid.context = &mr->mr.fid;
	mrl_hook_mr_publish(mr, mr_fid);
	return 0;

err_free:
	free(mr);
	return ret;
}

static int
mrl_hook_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr_fid, void *context)
{
	struct mrl_domain *dom = mrl_hook_mr_domain(fid);
	struct mrl_mr *mr;
	int ret;

	if (!dom)
		return -FI_EINVAL;
	if (!MRL_MR_OK(dom, regv))
		return -FI_ENOSYS;
	mr = mrl_hook_mr_alloc(dom, context);
	if (!mr)
		return -FI_ENOMEM;
	ret = dom->inner->mr->regv(&dom->inner->fid, iov, count, access, offset,
				   requested_key, flags, &mr->inner, context);
	if (ret)
		goto err_free;
	mr->inner->fid.context = &mr->mr.fid;
	mrl_hook_mr_publish(mr, mr_fid);
	return 0;

err_free:
	free(mr);
	return ret;
}

/*
 * The attr is the application's and may be larger than our compiled
 * struct (fi_mr_attr grows with the API version): it goes down untouched.
 * Every registration hands the provider the application's context, which
 * an FI_MR_COMPLETE event carries back; the inner MR's context is pointed
 * at our wrapper afterwards, for providers that report that instead.
 */
static int
mrl_hook_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		    uint64_t flags, struct fid_mr **mr_fid)
{
	struct mrl_domain *dom = mrl_hook_mr_domain(fid);
	struct mrl_mr *mr;
	int ret;

	if (!dom)
		return -FI_EINVAL;
	if (!attr)
		return -FI_EINVAL;
	if (!MRL_MR_OK(dom, regattr))
		return -FI_ENOSYS;
	mr = mrl_hook_mr_alloc(dom, attr->context);
	if (!mr)
		return -FI_ENOMEM;
	ret = dom->inner->mr->regattr(&dom->inner->fid, attr, flags,
				      &mr->inner);
	if (ret)
		goto err_free;
	mr->inner->fid.context = &mr->mr.fid;
	mrl_hook_mr_publish(mr, mr_fid);
	return 0;

err_free:
	free(mr);
	return ret;
}

struct fi_ops_mr mrl_hook_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mrl_hook_mr_reg,
	.regv = mrl_hook_mr_regv,
	.regattr = mrl_hook_mr_regattr,
};

int
mrl_hook_mr_wrap(struct mrl_domain *domain, struct fid_mr *inner, void *context,
		 int (*release)(struct mrl_mr *mr), struct mrl_mr **mr_out)
{
	struct mrl_mr *mr;
	struct fid_mr *unused;

	mr = mrl_hook_mr_alloc(domain, context);
	if (!mr)
		return -FI_ENOMEM;
	mr->inner = inner;
	mr->release = release;
	mr->wrapped = true;
	atomic_fetch_add_explicit(&domain->wrapped_mrs, 1,
				  memory_order_relaxed);
	mrl_hook_mr_publish(mr, &unused);
	*mr_out = mr;
	return 0;
}
