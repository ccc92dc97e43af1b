/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operand resolution for a post of any shape (struct mrl_post): NULL
 * descriptors leased through the endpoint's cache into one operation
 * context, the context and flags the provider gets, and the undoing of it
 * all when the post fails (mrl_xfer_post.c). The op families (mrl_xfer_msg.c,
 * _tagged.c, _rma.c, _atomic.c, _claim.c) call it once their check found an
 * operand that needs a lease. Included only by the data path's .c files;
 * mrl_xfer.h states the rules this code keeps.
 */
#ifndef MRL_XFER_POST_H
#define MRL_XFER_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "mrl_cache.h"
#include "mrl_hook.h"
#include "mrl_xfer.h"
#include "mrl_xfer_op.h"
#include "mrl_xfer_state.h"

/* Posts with more local iovs than this are forwarded unchanged. */
#define MRL_XFER_IOV_MAX 16

/* One post being resolved: the op is taken on the first lease. */
struct mrl_post {
	struct mrl_xep *x;
	struct mrl_op *op;
	enum mrl_dir dir;
	bool based; /* leases start at their operand (a rendezvous send on
		     * an FI_MR_LOCAL domain without FI_MR_VIRT_ADDR) */
};

static inline void
mrl_xfer_post_init(struct mrl_post *p, struct mrl_xep *x, enum mrl_dir dir)
{
	p->x = x;
	p->op = NULL;
	p->dir = dir;
	p->based = false;
}

/* Warn that a mandatory lease (FI_MR_LOCAL) failed; out of line. */
void mrl_xfer_post_lease_failed(const void *buf, size_t len, int ret);

/* A single-buffer call whose lease failed (err): with FI_MR_LOCAL the post
 * fails (err, warned), else 0: it goes out as the application made it
 * (desc NULL). */
int mrl_xfer_post_single_failed(const struct mrl_xep *x, const void *buf,
				size_t len, int err);

/* Lease [buf, buf + len) (a registration starting at buf if p->based)
 * and return its descriptor in *out. */
static inline int
mrl_xfer_post_lease(struct mrl_post *p, const void *buf, size_t len, void **out)
{
	struct mrl_registration *reg;
	uintptr_t start = (uintptr_t) buf;
	int ret;

	if (!p->op) {
		p->op = mrl_xfer_op_alloc(p->x->pool);
		if (!p->op)
			return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	ret = p->based ?
		      mrl_cache_acquire_based(p->x->cache, start, start + len,
					      &reg) :
		      mrl_cache_acquire(p->x->cache, start, start + len, &reg);
	if (ret) {
		if (!p->x->mr_local)
			return 0; /* the provider copes with desc NULL */
		mrl_xfer_post_lease_failed(buf, len, ret);
		return ret;
	}
	if (p->op->nleases < MRL_OP_LEASES) /* no extras chained yet */
		p->op->leases[p->op->nleases++] = reg;
	else
		ret = mrl_xfer_op_add_lease(p->op, reg);
	if (ret) {
		mrl_cache_lease_release(reg);
		return p->x->mr_local ? -FI_EAGAIN : 0;
	}
	*out = mrl_registration_desc(reg);
	return 0;
}

/* An operand without a descriptor shorter than min, forwarded as it is:
 * counted in miss_below_min unless it is empty or min is one that never
 * leases (SIZE_MAX). */
static inline void
mrl_xfer_count_below(struct mrl_xep *x, size_t len, size_t min)
{
	if (len && min != SIZE_MAX)
		mrl_cache_count_below_min(x->cache, 1);
}

/*
 * Resolve one operand: *out = desc, or for a NULL descriptor on an operand
 * of at least min bytes, a lease's descriptor. A failed lease on a domain
 * without FI_MR_LOCAL leaves the descriptor NULL (the provider copes); with
 * FI_MR_LOCAL it fails the post.
 */
static inline int
mrl_xfer_post_buf(struct mrl_post *p, const void *buf, size_t len, void *desc,
		  size_t min, void **out)
{
	*out = desc;
	if (desc)
		return 0;
	if (len < min) {
		mrl_xfer_count_below(p->x, len, min);
		return 0;
	}
	if (!buf)
		return 0;
	return mrl_xfer_post_lease(p, buf, len, out);
}

/* The same for count operands (desc may be NULL: all NULL). */
int mrl_xfer_post_iov(struct mrl_post *p, const struct iovec *iov, void **desc,
		      size_t count, size_t min, void **out);
int mrl_xfer_post_ioc(struct mrl_post *p, const struct fi_ioc *ioc, void **desc,
		      size_t count, enum fi_datatype datatype, size_t min,
		      void **out);

/* A call forwarded with the application's context: a triggered one
 * names the inner counter (mrl_hook_trigger_to_inner). */
static inline void
mrl_xfer_post_trigger_fwd(uint64_t flags, void *app_ctx)
{
	if (__builtin_expect(!!(flags & FI_TRIGGER), 0))
		mrl_hook_trigger_to_inner(flags, app_ctx);
}

/* A leased FI_TRIGGER call: op, the context the provider gets, holds a
 * copy of the application's triggered context naming the inner counter. */
void mrl_xfer_post_trigger_op(struct mrl_post *p, const void *app_ctx);

/*
 * After resolving: the context to give the provider, and the flags (the
 * call's, or the endpoint's defaults for non-msg calls), with FI_COMPLETION
 * added when the route needs it to learn the end of a leased op the
 * application asked no completion for.
 */
static inline void *
mrl_xfer_post_context(struct mrl_post *p, void *app_ctx, uint64_t *flags)
{
	struct mrl_op *op = p->op;
	const struct mrl_xdir *d = &p->x->dir[p->dir];

	if (!op)
		goto unleased;
	if (!op->nleases) {
		/* Every lease attempt fell back to desc NULL. */
		mrl_xfer_op_free_poster(op);
		p->op = NULL;
		goto unleased;
	}
	op->app_ctx = app_ctx;
	if (flags) {
		if (*flags & FI_TRIGGER)
			mrl_xfer_post_trigger_op(p, app_ctx);
		if (*flags & FI_MULTI_RECV)
			op->flags |= MRL_OP_MULTI_RECV;
		if (d->route == MRL_ROUTE_INTERNAL ||
		    (d->route == MRL_ROUTE_SELECTIVE &&
		     !(*flags & FI_COMPLETION))) {
			op->flags |= MRL_OP_HIDDEN;
			*flags |= FI_COMPLETION;
		}
	}
	if (op->shape == mrl_xfer_op_shape(0, 1))
		atomic_store_explicit(&op->state, MRL_OP_LIVE_ONE,
				      memory_order_relaxed);
	return op;

unleased:
	if (flags)
		mrl_xfer_post_trigger_fwd(*flags, app_ctx);
	return app_ctx;
}

/* After the inner post: on failure release what the post took. */
static inline ssize_t
mrl_xfer_post_end(struct mrl_post *p, ssize_t ret)
{
	if (ret && p->op)
		mrl_xfer_op_free_poster(p->op);
	return ret;
}

/*
 * Of count operands, how many without a descriptor are below min (empty ones
 * aside), or -1 when one of them needs a lease (at least min bytes). Posts
 * with more iovs than the slow path can rewrite go out unchanged: 0.
 */
static inline int
mrl_xfer_iov_below_min(const struct iovec *iov, void **desc, size_t count,
		       size_t min)
{
	int below = 0;

	if (min == SIZE_MAX || count > MRL_XFER_IOV_MAX)
		return 0;
	for (size_t i = 0; i < count; i++) {
		if (desc && desc[i])
			continue;
		if (iov[i].iov_len >= min)
			return -1;
		below += iov[i].iov_len != 0;
	}
	return below;
}

/* The same for atomic operands of datatype (an unknown one: 0). */
static inline int
mrl_xfer_ioc_below_min(const struct fi_ioc *ioc, void **desc, size_t count,
		       enum fi_datatype datatype, size_t min)
{
	size_t size = mrl_hook_datatype_size(datatype);
	int below = 0;

	if (min == SIZE_MAX || count > MRL_XFER_IOV_MAX || !size)
		return 0;
	for (size_t i = 0; i < count; i++) {
		if ((desc && desc[i]) || !ioc[i].count)
			continue;
		if (ioc[i].count >= (min + size - 1) / size)
			return -1;
		below++;
	}
	return below;
}

/* Whether a post must take the slow path (some operand needs a lease);
 * if not, the operands below min are counted. */
static inline bool
mrl_xfer_iov_needs_lease(struct mrl_xep *x, const struct iovec *iov,
			 void **desc, size_t count, size_t min)
{
	int below = mrl_xfer_iov_below_min(iov, desc, count, min);

	if (below > 0)
		mrl_cache_count_below_min(x->cache, (uint64_t) below);
	return below < 0;
}

#endif /* MRL_XFER_POST_H */
