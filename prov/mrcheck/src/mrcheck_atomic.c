/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's atomic wrappers: each post's local operands (source, compare
 * and result buffers) checked and tracked, its targets compared with their
 * keys (mrcheck_post.h).
 */
#include "config.h"

#include "mrcheck_post.h"

/* The source operands an atomic reads: FI_ATOMIC_READ ignores its source
 * buffer. */
static size_t
chk_count_of(enum fi_op op, size_t count)
{
	return op == FI_ATOMIC_READ ? 0 : count;
}

static ssize_t
chk_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	   enum fi_datatype dt, enum fi_op op, void *context)
{
	size_t bytes = count * mrl_hook_datatype_size(dt);
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_atomic", CHK_SEND, buf, bytes, desc,
				context);

	if (ret)
		return ret;
	chk_target(&p, addr, bytes, key);
	return chk_end(&p, mrl_hook_ep_atomic_ops.write(
				   ep, buf, count, p.inner[0], dest_addr, addr,
				   key, dt, op, p.ctx));
}

static ssize_t
chk_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	    size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	    enum fi_datatype dt, enum fi_op op, void *context)
{
	struct chk_post p;
	int ret;

	chk_post_init(&p, ep, "fi_atomicv");
	chk_add_ioc(&p, iov, desc, count, dt);
	ret = chk_start(&p, CHK_SEND, chk_ep_flags(p.ep, CHK_SEND), context);
	if (ret)
		return ret;
	chk_target(&p, addr, chk_ioc_bytes(iov, count, dt), key);
	return chk_end(&p, mrl_hook_ep_atomic_ops.writev(
				   ep, iov, chk_descs(&p, 0, desc), count,
				   dest_addr, addr, key, dt, op, p.ctx));
}

static ssize_t
chk_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	      uint64_t flags)
{
	struct chk_post p;
	struct fi_msg_atomic m = *msg;
	int ret;

	chk_post_init(&p, ep, "fi_atomicmsg");
	chk_add_ioc(&p, msg->msg_iov, msg->desc, msg->iov_count, msg->datatype);
	ret = chk_start(&p, CHK_SEND, flags, msg->context);
	if (ret)
		return ret;
	chk_targets_ioc(&p, msg->rma_iov, msg->rma_iov_count, msg->datatype);
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, mrl_hook_ep_atomic_ops.writemsg(ep, &m, flags));
}

static ssize_t
chk_fetch(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	  void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr,
	  uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	size_t sz = mrl_hook_datatype_size(dt);
	struct chk_post p;
	int ret;

	chk_post_init(&p, ep, "fi_fetch_atomic");
	chk_add_buf(&p, buf, chk_count_of(op, count) * sz, desc);
	chk_add_buf(&p, result, count * sz, result_desc);
	ret = chk_start(&p, CHK_FETCH, chk_ep_flags(p.ep, CHK_FETCH), context);
	if (ret)
		return ret;
	chk_target(&p, addr, count * sz, key);
	return chk_end(&p,
		       mrl_hook_ep_atomic_ops.readwrite(
			       ep, buf, count, p.inner[0], result, p.inner[1],
			       dest_addr, addr, key, dt, op, p.ctx));
}

static ssize_t
chk_fetchv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	   size_t count, struct fi_ioc *resultv, void **result_desc,
	   size_t result_count, fi_addr_t dest_addr, uint64_t addr,
	   uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	struct chk_post p;
	size_t r;
	int ret;

	chk_post_init(&p, ep, "fi_fetch_atomicv");
	chk_add_ioc(&p, iov, desc, chk_count_of(op, count), dt);
	r = chk_add_ioc(&p, resultv, result_desc, result_count, dt);
	ret = chk_start(&p, CHK_FETCH, chk_ep_flags(p.ep, CHK_FETCH), context);
	if (ret)
		return ret;
	chk_target(&p, addr, chk_ioc_bytes(iov, count, dt), key);
	return chk_end(
		&p,
		mrl_hook_ep_atomic_ops.readwritev(
			ep, iov,
			op == FI_ATOMIC_READ ? desc : chk_descs(&p, 0, desc),
			count, resultv, chk_descs(&p, r, result_desc),
			result_count, dest_addr, addr, key, dt, op, p.ctx));
}

static ssize_t
chk_fetchmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	     struct fi_ioc *resultv, void **result_desc, size_t result_count,
	     uint64_t flags)
{
	struct chk_post p;
	struct fi_msg_atomic m = *msg;
	size_t r;
	int ret;

	chk_post_init(&p, ep, "fi_fetch_atomicmsg");
	chk_add_ioc(&p, msg->msg_iov, msg->desc,
		    chk_count_of(msg->op, msg->iov_count), msg->datatype);
	r = chk_add_ioc(&p, resultv, result_desc, result_count, msg->datatype);
	ret = chk_start(&p, CHK_FETCH, flags, msg->context);
	if (ret)
		return ret;
	chk_targets_ioc(&p, msg->rma_iov, msg->rma_iov_count, msg->datatype);
	if (msg->op != FI_ATOMIC_READ)
		m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p,
		       mrl_hook_ep_atomic_ops.readwritemsg(
			       ep, &m, resultv, chk_descs(&p, r, result_desc),
			       result_count, flags));
}

static ssize_t
chk_compare(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	    const void *compare, void *compare_desc, void *result,
	    void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	    enum fi_datatype dt, enum fi_op op, void *context)
{
	size_t bytes = count * mrl_hook_datatype_size(dt);
	struct chk_post p;
	int ret;

	chk_post_init(&p, ep, "fi_compare_atomic");
	chk_add_buf(&p, buf, bytes, desc);
	chk_add_buf(&p, compare, bytes, compare_desc);
	chk_add_buf(&p, result, bytes, result_desc);
	ret = chk_start(&p, CHK_FETCH, chk_ep_flags(p.ep, CHK_FETCH), context);
	if (ret)
		return ret;
	chk_target(&p, addr, bytes, key);
	return chk_end(&p, mrl_hook_ep_atomic_ops.compwrite(
				   ep, buf, count, p.inner[0], compare,
				   p.inner[1], result, p.inner[2], dest_addr,
				   addr, key, dt, op, p.ctx));
}

static ssize_t
chk_comparev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	     size_t count, const struct fi_ioc *comparev, void **compare_desc,
	     size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
	     uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	struct chk_post p;
	size_t c, r;
	int ret;

	chk_post_init(&p, ep, "fi_compare_atomicv");
	chk_add_ioc(&p, iov, desc, count, dt);
	c = chk_add_ioc(&p, comparev, compare_desc, compare_count, dt);
	r = chk_add_ioc(&p, resultv, result_desc, result_count, dt);
	ret = chk_start(&p, CHK_FETCH, chk_ep_flags(p.ep, CHK_FETCH), context);
	if (ret)
		return ret;
	chk_target(&p, addr, chk_ioc_bytes(iov, count, dt), key);
	return chk_end(&p, mrl_hook_ep_atomic_ops.compwritev(
				   ep, iov, chk_descs(&p, 0, desc), count,
				   comparev, chk_descs(&p, c, compare_desc),
				   compare_count, resultv,
				   chk_descs(&p, r, result_desc), result_count,
				   dest_addr, addr, key, dt, op, p.ctx));
}

static ssize_t
chk_comparemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	       const struct fi_ioc *comparev, void **compare_desc,
	       size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	       size_t result_count, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg_atomic m = *msg;
	size_t c, r;
	int ret;

	chk_post_init(&p, ep, "fi_compare_atomicmsg");
	chk_add_ioc(&p, msg->msg_iov, msg->desc, msg->iov_count, msg->datatype);
	c = chk_add_ioc(&p, comparev, compare_desc, compare_count,
			msg->datatype);
	r = chk_add_ioc(&p, resultv, result_desc, result_count, msg->datatype);
	ret = chk_start(&p, CHK_FETCH, flags, msg->context);
	if (ret)
		return ret;
	chk_targets_ioc(&p, msg->rma_iov, msg->rma_iov_count, msg->datatype);
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p,
		       mrl_hook_ep_atomic_ops.compwritemsg(
			       ep, &m, comparev, chk_descs(&p, c, compare_desc),
			       compare_count, resultv,
			       chk_descs(&p, r, result_desc), result_count,
			       flags));
}

/* No local desc (the provider copies the payload); the target is a remote
 * key like any other. */
static ssize_t
chk_inject_atomic(struct fid_ep *ep, const void *buf, size_t count,
		  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		  enum fi_datatype dt, enum fi_op op)
{
	struct chk_post p;

	chk_post_init(&p, ep, "fi_inject_atomic");
	chk_target(&p, addr, count * mrl_hook_datatype_size(dt), key);
	return chk_end(&p,
		       mrl_hook_ep_atomic_ops.inject(ep, buf, count, dest_addr,
						     addr, key, dt, op));
}

struct fi_ops_atomic chk_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = chk_atomic,
	.writev = chk_atomicv,
	.writemsg = chk_atomicmsg,
	.readwrite = chk_fetch,
	.readwritev = chk_fetchv,
	.readwritemsg = chk_fetchmsg,
	.compwrite = chk_compare,
	.compwritev = chk_comparev,
	.compwritemsg = chk_comparemsg,
	.inject = chk_inject_atomic,
};
