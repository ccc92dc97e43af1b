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
 * A registration granting remote access (FI_REMOTE_READ/WRITE) on host
 * memory, with no flags and no authorization key, goes to the binding's
 * remote registry (exact matches only, FI_MRLEASE_REMOTE=cache; mrl_bind.h)
 * or, by default, to the provider. A local registration never gains remote
 * access: the two never share a registration.
 *
 * Everything else (device memory, dmabuf, FI_RMA_EVENT and any other flag,
 * FI_MR_ENDPOINT domains, remote access on FI_MR_RMA_EVENT domains,
 * iov_count > 1 for local access, auth keys) is forwarded unchanged, wrapped,
 * and counted with its reason (mrl_bind_forwarded). So is a request the caches
 * cannot serve (a registration failed): the provider then answers for itself.
 *
 * fi_mr_attr grows with the API version: only the fields the application's
 * api_version has are read, as libfabric's own providers do (auth key from
 * 1.5, iface/device only with FI_HMEM), and the application's struct is
 * handed down as is, never copied by our compiled size. A remote request
 * through fi_mr_regattr from an application newer than these headers is
 * forwarded: fields it may set that we cannot read could change what the
 * registration grants.
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_bind.h"
#include "mrl_xfer.h"
#include "mrl_xfer_state.h"

#define MRL_XFER_REMOTE_ACCESS (FI_REMOTE_READ | FI_REMOTE_WRITE)

/* A registration request, whichever call made it. */
struct mrl_xfer_mr_req {
	struct mrl_bind_remote_req req;
	uint64_t flags;
	bool device; /* iface other than FI_HMEM_SYSTEM */
	bool auth_key;
	bool newer_attr; /* fi_mr_attr of a newer API than ours */
};

/*
 * Which cache may serve the request: -1 the lease cache (local access),
 * MRL_FWD_COUNT the remote registry, else why it goes to the provider.
 */
static int
mrl_xfer_mr_route(const struct mrl_domain *domain,
		  const struct mrl_xfer_mr_req *r)
{
	const struct mrl_bind_remote_req *req = &r->req;
	bool remote = req->access & MRL_XFER_REMOTE_ACCESS;

	if (r->device)
		return MRL_FWD_DEVICE;
	if (r->flags & MRL_FI_MR_DMABUF)
		return MRL_FWD_DMABUF;
	if (r->auth_key)
		return MRL_FWD_AUTH_KEY;
	if (domain->mr_mode & FI_MR_ENDPOINT)
		return MRL_FWD_ENDPOINT;
	/* Registrations completed by FI_MR_COMPLETE events (the domain bound
	 * to an EQ with FI_REG_MR): one event per call, from the provider. */
	if (domain->mr_events)
		return MRL_FWD_OTHER;
	/* Counters bound to the MR (FI_MR_RMA_EVENT domains need it bound
	 * and enabled): one per application MR, never shared. */
	if ((r->flags & FI_RMA_EVENT) ||
	    (remote && (domain->mr_mode & FI_MR_RMA_EVENT)))
		return MRL_FWD_RMA_EVENT;
	if (r->flags || !req->access)
		return MRL_FWD_OTHER;
	if (remote)
		return r->newer_attr ? MRL_FWD_OTHER : MRL_FWD_COUNT;
	if (req->count == 1 && req->iov && req->iov[0].iov_base &&
	    req->iov[0].iov_len)
		return -1;
	return MRL_FWD_OTHER;
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

/* 0 with *mr served by a cache, or -FI_EAGAIN (counted): forward. */
static int
mrl_xfer_mr_serve(struct mrl_domain *domain, const struct mrl_xfer_mr_req *r,
		  struct fid_mr **mr)
{
	int route = mrl_xfer_mr_route(domain, r), ret;
	enum mrl_bind_fwd why = MRL_FWD_OTHER;

	if (route < 0) {
		ret = mrl_xfer_mr_lease(domain, r->req.iov, r->req.context, mr);
	} else if (route == MRL_FWD_COUNT) {
		ret = mrl_bind_remote_reg(domain, &r->req, mr, &why);
	} else {
		why = (enum mrl_bind_fwd) route;
		ret = -FI_EAGAIN;
	}
	if (ret == -FI_EAGAIN)
		mrl_bind_forwarded(domain, why);
	return ret;
}

static int
mrl_xfer_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		    uint64_t flags, struct fid_mr **mr)
{
	struct mrl_domain *domain =
		container_of(fid, struct mrl_domain, domain.fid);
	struct mrl_xfer_mr_req r = {.flags = flags};
	int ret;

	mrl_bind_domain_settle(domain);
	if (!attr)
		return mrl_hook_domain_mr_ops.regattr(fid, attr, flags, mr);
	r.req = (struct mrl_bind_remote_req){
		.iov = attr->mr_iov,
		.count = attr->iov_count,
		.access = attr->access,
		.offset = attr->offset,
		.key = attr->requested_key,
		.context = attr->context,
	};
	if (FI_VERSION_GE(domain->api_version, FI_VERSION(1, 5)))
		r.auth_key = attr->auth_key_size != 0;
	if (domain->caps & FI_HMEM)
		r.device = attr->iface != FI_HMEM_SYSTEM;
	r.newer_attr = domain->api_version >
		       FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	ret = mrl_xfer_mr_serve(domain, &r, mr);
	if (ret != -FI_EAGAIN)
		return ret;
	return mrl_hook_domain_mr_ops.regattr(fid, attr, flags, mr);
}

static int
mrl_xfer_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr, void *context)
{
	struct mrl_domain *domain =
		container_of(fid, struct mrl_domain, domain.fid);
	struct mrl_xfer_mr_req r = {
		.req = {iov, count, access, offset, requested_key, context},
		.flags = flags,
	};
	int ret;

	mrl_bind_domain_settle(domain);
	ret = mrl_xfer_mr_serve(domain, &r, mr);
	if (ret != -FI_EAGAIN)
		return ret;
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
	struct mrl_xfer_mr_req r = {
		.req = {&iov, 1, access, offset, requested_key, context},
		.flags = flags,
	};
	int ret;

	mrl_bind_domain_settle(domain);
	ret = mrl_xfer_mr_serve(domain, &r, mr);
	if (ret != -FI_EAGAIN)
		return ret;
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
