/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors and AV sets. Addresses (fi_addr_t) are the provider's and
 * pass untranslated; only the set arguments of set_union/intersect/diff are
 * fids.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

#define MRL_AV_OK(av, op) FI_CHECK_OP((av)->inner->ops, struct fi_ops_av, op)

static int
mrl_hook_av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);

	if (!MRL_AV_OK(av, insert))
		return -FI_ENOSYS;
	return av->inner->ops->insert(av->inner, addr, count, fi_addr, flags,
				      context);
}

static int
mrl_hook_av_insertsvc(struct fid_av *av_fid, const char *node,
		      const char *service, fi_addr_t *fi_addr, uint64_t flags,
		      void *context)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);

	if (!MRL_AV_OK(av, insertsvc))
		return -FI_ENOSYS;
	return av->inner->ops->insertsvc(av->inner, node, service, fi_addr,
					 flags, context);
}

static int
mrl_hook_av_insertsym(struct fid_av *av_fid, const char *node, size_t nodecnt,
		      const char *service, size_t svccnt, fi_addr_t *fi_addr,
		      uint64_t flags, void *context)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);

	if (!MRL_AV_OK(av, insertsym))
		return -FI_ENOSYS;
	return av->inner->ops->insertsym(av->inner, node, nodecnt, service,
					 svccnt, fi_addr, flags, context);
}

static int
mrl_hook_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		   uint64_t flags)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);

	if (!MRL_AV_OK(av, remove))
		return -FI_ENOSYS;
	return av->inner->ops->remove(av->inner, fi_addr, count, flags);
}

static int
mrl_hook_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
		   size_t *addrlen)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);

	if (!MRL_AV_OK(av, lookup))
		return -FI_ENOSYS;
	return av->inner->ops->lookup(av->inner, fi_addr, addr, addrlen);
}

static const char *
mrl_hook_av_straddr(struct fid_av *av_fid, const void *addr, char *buf,
		    size_t *len)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);

	if (!MRL_AV_OK(av, straddr))
		return NULL;
	return av->inner->ops->straddr(av->inner, addr, buf, len);
}

static int mrl_hook_av_set_open(struct fid_av *av_fid,
				struct fi_av_set_attr *attr,
				struct fid_av_set **set_fid, void *context);

struct fi_ops_av mrl_hook_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = mrl_hook_av_insert,
	.insertsvc = mrl_hook_av_insertsvc,
	.insertsym = mrl_hook_av_insertsym,
	.remove = mrl_hook_av_remove,
	.lookup = mrl_hook_av_lookup,
	.straddr = mrl_hook_av_straddr,
	.av_set = mrl_hook_av_set_open,
};

int
mrl_hook_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
	struct mrl_av *av;
	/* A peer AV context (FI_PEER) names the owner's AV: pass it as is. */
	bool peer = attr && (attr->flags & FI_PEER);
	int ret;

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, av_open))
		return -FI_ENOSYS;

	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;

	av->domain = dom;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &mrl_fid_ops[MRL_CLASS_AV];
	av->av.ops = &mrl_hook_av_ops;

	ret = dom->inner->ops->av_open(dom->inner, attr, &av->inner,
				       peer ? context : &av->av.fid);
	if (ret)
		goto err_free;
	if (!peer)
		mrl_hook_adopt_inner(&av->inner->fid, &av->av.fid);

	mrl_hook_count_open(MRL_CLASS_AV);
	*av_fid = &av->av;
	return 0;

err_free:
	free(av);
	return ret;
}

/* ---- AV sets ------------------------------------------------------ */

#define MRL_SET_OK(set, op) \
	FI_CHECK_OP((set)->inner->ops, struct fi_ops_av_set, op)

static struct fid_av_set *
mrl_hook_set_inner(const struct fid_av_set *set)
{
	struct fid *fid = mrl_hook_inner_fid((struct fid *) &set->fid);

	return container_of(fid, struct fid_av_set, fid);
}

static int
mrl_hook_av_set_union(struct fid_av_set *dst, const struct fid_av_set *src)
{
	struct mrl_av_set *set = container_of(dst, struct mrl_av_set, av_set);

	if (!MRL_SET_OK(set, set_union))
		return -FI_ENOSYS;
	return set->inner->ops->set_union(set->inner, mrl_hook_set_inner(src));
}

static int
mrl_hook_av_set_intersect(struct fid_av_set *dst, const struct fid_av_set *src)
{
	struct mrl_av_set *set = container_of(dst, struct mrl_av_set, av_set);

	if (!MRL_SET_OK(set, intersect))
		return -FI_ENOSYS;
	return set->inner->ops->intersect(set->inner, mrl_hook_set_inner(src));
}

static int
mrl_hook_av_set_diff(struct fid_av_set *dst, const struct fid_av_set *src)
{
	struct mrl_av_set *set = container_of(dst, struct mrl_av_set, av_set);

	if (!MRL_SET_OK(set, diff))
		return -FI_ENOSYS;
	return set->inner->ops->diff(set->inner, mrl_hook_set_inner(src));
}

static int
mrl_hook_av_set_insert(struct fid_av_set *set_fid, fi_addr_t addr)
{
	struct mrl_av_set *set =
		container_of(set_fid, struct mrl_av_set, av_set);

	if (!MRL_SET_OK(set, insert))
		return -FI_ENOSYS;
	return set->inner->ops->insert(set->inner, addr);
}

static int
mrl_hook_av_set_remove(struct fid_av_set *set_fid, fi_addr_t addr)
{
	struct mrl_av_set *set =
		container_of(set_fid, struct mrl_av_set, av_set);

	if (!MRL_SET_OK(set, remove))
		return -FI_ENOSYS;
	return set->inner->ops->remove(set->inner, addr);
}

static int
mrl_hook_av_set_addr(struct fid_av_set *set_fid, fi_addr_t *coll_addr)
{
	struct mrl_av_set *set =
		container_of(set_fid, struct mrl_av_set, av_set);

	if (!MRL_SET_OK(set, addr))
		return -FI_ENOSYS;
	return set->inner->ops->addr(set->inner, coll_addr);
}

struct fi_ops_av_set mrl_hook_av_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = mrl_hook_av_set_union,
	.intersect = mrl_hook_av_set_intersect,
	.diff = mrl_hook_av_set_diff,
	.insert = mrl_hook_av_set_insert,
	.remove = mrl_hook_av_set_remove,
	.addr = mrl_hook_av_set_addr,
};

static int
mrl_hook_av_set_open(struct fid_av *av_fid, struct fi_av_set_attr *attr,
		     struct fid_av_set **set_fid, void *context)
{
	struct mrl_av *av = container_of(av_fid, struct mrl_av, av);
	struct mrl_av_set *set;
	int ret;

	if (!MRL_AV_OK(av, av_set))
		return -FI_ENOSYS;

	set = calloc(1, sizeof(*set));
	if (!set)
		return -FI_ENOMEM;

	set->av = av;
	set->av_set.fid.fclass = FI_CLASS_AV_SET;
	set->av_set.fid.context = context;
	set->av_set.fid.ops = &mrl_fid_ops[MRL_CLASS_AV_SET];
	set->av_set.ops = &mrl_hook_av_set_ops;

	ret = av->inner->ops->av_set(av->inner, attr, &set->inner,
				     &set->av_set.fid);
	if (ret)
		goto err_free;
	mrl_hook_adopt_inner(&set->inner->fid, &set->av_set.fid);

	mrl_hook_count_open(MRL_CLASS_AV_SET);
	*set_fid = &set->av_set;
	return 0;

err_free:
	free(set);
	return ret;
}
