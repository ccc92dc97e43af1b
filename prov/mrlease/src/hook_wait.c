/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wait sets and poll sets. fi_poll returns the contexts of the CQs and
 * counters that have events: below us those are our wrappers (their inner
 * objects were opened with context = wrapper), so each is mapped back to the
 * application's context.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"

/* ---- wait set ---------------------------------------------------- */

static int mrl_wait_wait(struct fid_wait *waitset, int timeout)
{
	struct mrl_wait *wait = container_of(waitset, struct mrl_wait, wait);

	if (!FI_CHECK_OP(wait->inner->ops, struct fi_ops_wait, wait))
		return -FI_ENOSYS;
	return wait->inner->ops->wait(wait->inner, timeout);
}

struct fi_ops_wait mrl_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = mrl_wait_wait,
};

int mrl_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	struct mrl_fabric *fab = container_of(fabric, struct mrl_fabric, fabric);
	struct mrl_wait *wait;
	int ret;

	if (!FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, wait_open))
		return -FI_ENOSYS;
	if (mrl_fabric_bypassed(fab))
		return fab->inner->ops->wait_open(fab->inner, attr, waitset);

	wait = calloc(1, sizeof(*wait));
	if (!wait)
		return -FI_ENOMEM;

	wait->fabric = fab;
	wait->wait.fid.fclass = FI_CLASS_WAIT;
	wait->wait.fid.ops = &mrl_fid_ops[MRL_CLASS_WAIT];
	wait->wait.ops = &mrl_wait_ops;

	ret = fab->inner->ops->wait_open(fab->inner, attr, &wait->inner);
	if (ret)
		goto err_free;
	/* fi_wait_open takes no context. */
	mrl_adopt_inner(&wait->inner->fid, &wait->wait.fid);

	mrl_count_open(MRL_CLASS_WAIT);
	*waitset = &wait->wait;
	return 0;

err_free:
	free(wait);
	return ret;
}

/* fi_trywait: the array of hook fids becomes an array of inner fids. */
int mrl_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct mrl_fabric *fab = container_of(fabric, struct mrl_fabric, fabric);
	struct fid *stack[16];
	struct fid **inner = stack;
	int ret;

	if (!FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, trywait))
		return -FI_ENOSYS;
	if (count < 0)
		return -FI_EINVAL;

	if ((size_t)count > sizeof(stack) / sizeof(stack[0])) {
		inner = calloc((size_t)count, sizeof(*inner));
		if (!inner)
			return -FI_ENOMEM;
	}
	for (int i = 0; i < count; i++)
		inner[i] = mrl_inner_fid(fids[i]);

	ret = fab->inner->ops->trywait(fab->inner, inner, count);

	if (inner != stack)
		free(inner);
	return ret;
}

/* ---- poll set ---------------------------------------------------- */

static int mrl_poll_poll(struct fid_poll *pollset, void **context, int count)
{
	struct mrl_poll *poll = container_of(pollset, struct mrl_poll, poll);
	int ret;

	if (!FI_CHECK_OP(poll->inner->ops, struct fi_ops_poll, poll))
		return -FI_ENOSYS;

	ret = poll->inner->ops->poll(poll->inner, context, count);
	for (int i = 0; i < ret; i++) {
		struct fid *hook = context[i];

		/* The inner CQ/counter's context is our wrapper. */
		if (hook && mrl_is_hook_fid(hook)) {
			context[i] = hook->context;
			mrl_count(MRL_DEBUG_POLL_MAPPED);
		}
	}
	return ret;
}

static int mrl_poll_add(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct mrl_poll *poll = container_of(pollset, struct mrl_poll, poll);

	if (!FI_CHECK_OP(poll->inner->ops, struct fi_ops_poll, poll_add))
		return -FI_ENOSYS;
	return poll->inner->ops->poll_add(poll->inner, mrl_inner_fid(event_fid),
					  flags);
}

static int mrl_poll_del(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct mrl_poll *poll = container_of(pollset, struct mrl_poll, poll);

	if (!FI_CHECK_OP(poll->inner->ops, struct fi_ops_poll, poll_del))
		return -FI_ENOSYS;
	return poll->inner->ops->poll_del(poll->inner, mrl_inner_fid(event_fid),
					  flags);
}

struct fi_ops_poll mrl_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = mrl_poll_poll,
	.poll_add = mrl_poll_add,
	.poll_del = mrl_poll_del,
};

int mrl_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	struct mrl_domain *dom = mrl_domain_of(domain);
	struct mrl_poll *poll;
	int ret;

	if (!FI_CHECK_OP(dom->inner->ops, struct fi_ops_domain, poll_open))
		return -FI_ENOSYS;

	poll = calloc(1, sizeof(*poll));
	if (!poll)
		return -FI_ENOMEM;

	poll->domain = dom;
	poll->poll.fid.fclass = FI_CLASS_POLL;
	poll->poll.fid.ops = &mrl_fid_ops[MRL_CLASS_POLL];
	poll->poll.ops = &mrl_poll_ops;

	ret = dom->inner->ops->poll_open(dom->inner, attr, &poll->inner);
	if (ret)
		goto err_free;
	mrl_adopt_inner(&poll->inner->fid, &poll->poll.fid);

	mrl_count_open(MRL_CLASS_POLL);
	*pollset = &poll->poll;
	return 0;

err_free:
	free(poll);
	return ret;
}

