/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_mr_reg / fi_mr_regv / fi_mr_regattr on a hook domain, and the
 * domain's open and close, which install and remove that interception.
 *
 * Served from the lease cache (a leased MR handle: fi_mr_desc is the cached
 * registration's descriptor, fi_close drops the lease) when the registration
 * asks for local access only (a non-empty subset of FI_SEND, FI_RECV,
 * FI_READ, FI_WRITE), on host memory, one contiguous non-empty range, no
 * flags, no authorization key, on a domain without FI_MR_ENDPOINT (whose
 * MRs are bound to one endpoint each, which a shared registration cannot
 * be). The offset and requested key are ignored there: both only mean
 * something to a peer addressing the region remotely, which a local-only MR
 * does not allow; fi_mr_key on such a handle returns the cached
 * registration's key, which the application has no use for.
 *
 * Everything else (FI_REMOTE_READ/WRITE, device memory, dmabuf and any other
 * flag, iov_count > 1, auth keys) is forwarded unchanged, wrapped, so
 * remote-access registrations are never widened, shared or cached. So is a
 * cacheable request the cache cannot serve (its registration failed): the
 * provider then answers for itself.
 *
 * fi_mr_attr grows with the API version: only the fields the application's
 * api_version has are read, as libfabric's own providers do (auth key from
 * 1.5, iface/device only with FI_HMEM), and the application's struct is
 * handed down as is, never copied by our compiled size.
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_bind.h"
#include "mrl_xfer.h"
#include "mrl_xfer_state.h"

static bool
mrl_xfer_mr_cacheable(const struct mrl_domain *domain, const struct iovec *iov,
		      size_t count, uint64_t access, uint64_t flags)
{
	return count == 1 && iov && iov[0].iov_base && iov[0].iov_len &&
	       access && !(access & ~(uint64_t) MRL_CACHE_ACCESS) && !flags &&
	       !(domain->mr_mode & FI_MR_ENDPOINT);
}

/* A leased MR handle over [buf, buf + len); -FI_EAGAIN: forward instead. */
static int
mrl_xfer_mr_lease(struct mrl_domain *domain, const struct iovec *iov,
		  void *context, struct fid_mr **mr)
{
	struct mrl_bind_domain *ld = mrl_bind_domain_of(domain);
	uintptr_t start = (uintptr_t) iov->iov_base;
	struct mrl_registration *reg;
	int ret;

	if (!ld || !ld->cache_domain || start + iov->iov_len < start)
		return -FI_EAGAIN;
	if (mrl_xfer_domain_mr_at_operand(domain))
		ret = mrl_cache_acquire_based(ld->cache_domain, start,
					      start + iov->iov_len, &reg);
	else
		ret = mrl_cache_acquire(ld->cache_domain, start,
					start + iov->iov_len, &reg);
	if (ret)
		return -FI_EAGAIN;
	ret = mrl_bind_mr_open(domain, reg, MRL_BIND_LEASE, context, mr);
	if (ret)
		mrl_cache_lease_release(reg);
	return ret;
}

static int
mrl_xfer_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		    uint64_t flags, struct fid_mr **mr)
{
	struct mrl_domain *domain =
		container_of(fid, struct mrl_domain, domain.fid);
	bool host = true, no_auth = true;
	int ret;

	mrl_bind_domain_settle(domain);
	if (!attr)
		return mrl_hook_domain_mr_ops.regattr(fid, attr, flags, mr);
	if (FI_VERSION_GE(domain->api_version, FI_VERSION(1, 5)))
		no_auth = !attr->auth_key_size;
	if (domain->caps & FI_HMEM)
		host = attr->iface == FI_HMEM_SYSTEM;
	if (host && no_auth &&
	    mrl_xfer_mr_cacheable(domain, attr->mr_iov, attr->iov_count,
				  attr->access, flags)) {
		ret = mrl_xfer_mr_lease(domain, attr->mr_iov, attr->context,
					mr);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	return mrl_hook_domain_mr_ops.regattr(fid, attr, flags, mr);
}

static int
mrl_xfer_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr, void *context)
{
	struct mrl_domain *domain =
		container_of(fid, struct mrl_domain, domain.fid);
	int ret;

	mrl_bind_domain_settle(domain);
	if (mrl_xfer_mr_cacheable(domain, iov, count, access, flags)) {
		ret = mrl_xfer_mr_lease(domain, iov, context, mr);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	return mrl_hook_domain_mr_ops.regv(fid, iov, count, access, offset,
					   requested_key, flags, mr, context);
}

static int
mrl_xfer_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags,
		struct fid_mr **mr, void *context)
{
	struct mrl_domain *domain =
		container_of(fid, struct mrl_domain, domain.fid);
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
	int ret;

	mrl_bind_domain_settle(domain);
	if (mrl_xfer_mr_cacheable(domain, &iov, 1, access, flags)) {
		ret = mrl_xfer_mr_lease(domain, &iov, context, mr);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	return mrl_hook_domain_mr_ops.reg(fid, buf, len, access, offset,
					  requested_key, flags, mr, context);
}

static struct fi_ops_mr mrl_xfer_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mrl_xfer_mr_reg,
	.regv = mrl_xfer_mr_regv,
	.regattr = mrl_xfer_mr_regattr,
};

/* ---- the domain's open and close ------------------------------------ */

/*
 * Open: the lease domain (the cache domain over the inner domain), then
 * the MR interception that leases from it. Close undoes them in reverse
 * order, in the passthrough's two steps: before the inner close, which the
 * provider may refuse, only what nothing uses goes (the domain must stay
 * as usable as before); once the provider agreed, the rest.
 */
int
mrl_xfer_domain_open(struct mrl_domain *domain)
{
	int ret = mrl_bind_domain_open(domain);

	if (ret)
		return ret;
	domain->domain.mr = &mrl_xfer_mr_ops;
	return 0;
}

void
mrl_xfer_domain_close(struct mrl_domain *domain)
{
	mrl_bind_domain_close(domain);
}

void
mrl_xfer_domain_closed(struct mrl_domain *domain)
{
	domain->domain.mr = &mrl_hook_domain_mr_ops;
	mrl_bind_domain_closed(domain);
}

bool
mrl_xfer_domain_leases(struct mrl_domain *dom)
{
	struct mrl_bind_domain *ld = mrl_bind_domain_of(dom);

	return ld && ld->cache_domain &&
	       ((dom->mr_mode & FI_MR_LOCAL) || (dom->mode & MRL_FI_LOCAL_MR) ||
		dom->outermost);
}
