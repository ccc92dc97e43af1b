/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The slow half of every post: resolve NULL descriptors through the lease
 * cache, take an operation context for the leases, decide the flags that
 * make the provider report the operation's end, and undo it all when the
 * post fails. The op families (mrl_xfer_msg.c ...) call these after their
 * fast-path check found an operand that needs a lease.
 */
#include "config.h"

#include <complex.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_xfer.h"

size_t mrl_datatype_size(enum fi_datatype datatype)
{
	switch (datatype) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	case FI_DOUBLE_COMPLEX:
		return 16;
	case FI_LONG_DOUBLE:
		return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX:
		return sizeof(long double complex);
	case FI_INT128:
	case FI_UINT128:
		return 16;
	default:
		return 0;
	}
}

/* Lease [buf, buf + len) and return its descriptor in *out. */
static int mrl_post_lease(struct mrl_post *p, const void *buf, size_t len,
			  void **out)
{
	struct mrl_registration *reg;
	uintptr_t start = (uintptr_t)buf;
	int ret;

	if (!p->op) {
		p->op = mrl_op_alloc(p->x->pool);
		if (!p->op)
			return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	ret = mrl_cache_acquire(p->x->cache, start, start + len, &reg);
	if (ret) {
		if (!p->x->mr_local)
			return 0; /* the provider copes with desc NULL */
		FI_WARN(mrl_prov, FI_LOG_EP_DATA,
			"no registration for operand %p+%zu: %s\n", buf, len,
			fi_strerror(-ret));
		return ret;
	}
	ret = mrl_op_add_lease(p->op, reg);
	if (ret) {
		mrl_lease_release(reg);
		return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	*out = mrl_registration_desc(reg);
	return 0;
}

int mrl_post_buf(struct mrl_post *p, const void *buf, size_t len, void *desc,
		 size_t min, void **out)
{
	*out = desc;
	if (desc || !buf || len < min)
		return 0;
	return mrl_post_lease(p, buf, len, out);
}

int mrl_post_iov(struct mrl_post *p, const struct iovec *iov, void **desc,
		 size_t count, size_t min, void **out)
{
	int ret;

	for (size_t i = 0; i < count; i++) {
		ret = mrl_post_buf(p, iov[i].iov_base, iov[i].iov_len,
				   desc ? desc[i] : NULL, min, &out[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int mrl_post_ioc(struct mrl_post *p, const struct fi_ioc *ioc, void **desc,
		 size_t count, enum fi_datatype datatype, size_t min, void **out)
{
	size_t size = mrl_datatype_size(datatype);
	int ret;

	for (size_t i = 0; i < count; i++) {
		/* An unknown datatype or an overflowing count: leave it to
		 * the provider to reject. */
		size_t len = size && ioc[i].count <= SIZE_MAX / size ?
			ioc[i].count * size : 0;

		ret = mrl_post_buf(p, ioc[i].addr, len, desc ? desc[i] : NULL,
				   len ? min : SIZE_MAX, &out[i]);
		if (ret)
			return ret;
	}
	return 0;
}

void *mrl_post_context(struct mrl_post *p, void *app_ctx, uint64_t *flags)
{
	struct mrl_op *op = p->op;
	const struct mrl_xdir *d = &p->x->dir[p->dir];

	if (!op)
		return app_ctx;
	if (!op->nleases) {
		/* Every lease attempt fell back to desc NULL. */
		mrl_op_free_poster(op);
		p->op = NULL;
		return app_ctx;
	}
	op->app_ctx = app_ctx;
	if (flags) {
		if (*flags & FI_MULTI_RECV)
			op->flags |= MRL_OP_MULTI_RECV;
		if (d->route == MRL_ROUTE_INTERNAL ||
		    (d->route == MRL_ROUTE_SELECTIVE &&
		     !(*flags & FI_COMPLETION))) {
			op->flags |= MRL_OP_HIDDEN;
			*flags |= FI_COMPLETION;
		}
	}
	return op;
}

ssize_t mrl_post_end(struct mrl_post *p, ssize_t ret)
{
	if (ret && p->op)
		mrl_op_free_poster(p->op);
	return ret;
}
