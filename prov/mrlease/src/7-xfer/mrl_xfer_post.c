/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The slow half of every post: resolve NULL descriptors through the lease
 * cache, take an operation context for the leases, decide the flags that
 * make the provider report the operation's end, and undo it all when the
 * post fails. The op families (mrl_xfer_msg.c ...) call these after their
 * fast-path check found an operand that needs a lease.
 */
#include "config.h"

#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_xfer_post.h"

/* The application's context is at least a struct fi_triggered_context,
 * a struct fi_triggered_context2 under FI_CONTEXT2 (fi_trigger(3)); the
 * op's first member has room for either. */
_Static_assert(sizeof(struct fi_triggered_context2) <=
		       sizeof(((struct mrl_op *) 0)->prov_ctx),
	       "a triggered context fits in an op");

void
mrl_xfer_post_trigger_op(struct mrl_post *p, const void *app_ctx)
{
	size_t size = p->x->ep->domain->mode & FI_CONTEXT2 ?
			      sizeof(struct fi_triggered_context2) :
			      sizeof(struct fi_triggered_context);

	memcpy(&p->op->prov_ctx, app_ctx, size);
	mrl_hook_trigger_to_inner(FI_TRIGGER, &p->op->prov_ctx);
}

void
mrl_xfer_post_lease_failed(const void *buf, size_t len, int ret)
{
	FI_WARN(mrl_hook_prov, FI_LOG_EP_DATA,
		"no registration for operand %p+%zu: %s\n", buf, len,
		fi_strerror(-ret));
}

int
mrl_xfer_post_single_failed(const struct mrl_xep *x, const void *buf,
			    size_t len, int err)
{
	if (!x->mr_local)
		return 0;
	mrl_xfer_post_lease_failed(buf, len, err);
	return err;
}

int
mrl_xfer_post_iov(struct mrl_post *p, const struct iovec *iov, void **desc,
		  size_t count, size_t min, void **out)
{
	int ret;

	for (size_t i = 0; i < count; i++) {
		ret = mrl_xfer_post_buf(p, iov[i].iov_base, iov[i].iov_len,
					desc ? desc[i] : NULL, min, &out[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int
mrl_xfer_post_ioc(struct mrl_post *p, const struct fi_ioc *ioc, void **desc,
		  size_t count, enum fi_datatype datatype, size_t min,
		  void **out)
{
	size_t size = mrl_hook_datatype_size(datatype);
	int ret;

	for (size_t i = 0; i < count; i++) {
		/* An unknown datatype or an overflowing count: leave it to
		 * the provider to reject. */
		size_t len = size && ioc[i].count <= SIZE_MAX / size ?
				     ioc[i].count * size :
				     0;

		ret = mrl_xfer_post_buf(p, ioc[i].addr, len,
					desc ? desc[i] : NULL,
					len ? min : SIZE_MAX, &out[i]);
		if (ret)
			return ret;
	}
	return 0;
}
