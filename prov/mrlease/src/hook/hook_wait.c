/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wait sets and poll sets. fi_poll returns the contexts of the CQs and
 * counters that have events: below us those are our wrappers (their inner
 * objects were opened with context = wrapper), so each is mapped back to the
 * application's context.
 *
 * A CQ is reported (by fi_poll, or by fi_trywait's -FI_EAGAIN) only with a
 * completion the application can read: where the personality hides
 * entries, it is asked first (cq_readable), which consumes hidden ones.
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

/* The hook CQ fid is, when the personality hides entries of it, or NULL. */
static struct mrl_cq *mrl_hiding_cq(struct fid *fid)
{
	if (!mrl_personality || !mrl_personality->cq_readable ||
	    !mrl_is_hook_fid(fid) || mrl_class_of(fid) != MRL_CLASS_CQ)
		return NULL;
	return container_of(fid, struct mrl_cq, cq.fid);
}

/* Times in a row fi_trywait asks again after the provider's -FI_EAGAIN
 * found nothing, not even hidden completions; past that it answers
 * -FI_EAGAIN (a spurious wake-up rather than a missed one). */
#define MRL_TRYWAIT_IDLE_RETRIES 16

/*
 * -FI_EAGAIN from the provider's trywait means some object has events.
 * When every object is a CQ whose entries the personality may hide and
 * none holds one for the application, the hidden ones are now consumed:
 * ask again (*retry; *consumed says whether anything was). Any other
 * object may be the one with events: answer as is.
 */
static int mrl_trywait_readable(struct fid **fids, int count, bool *retry,
				bool *consumed)
{
	bool only_cqs = true;

	*retry = false;
	*consumed = false;
	for (int i = 0; i < count; i++) {
		struct mrl_cq *cq = mrl_hiding_cq(fids[i]);
		int ret;

		if (!cq) {
			only_cqs = false;
			continue;
		}
		ret = mrl_personality->cq_readable(cq);
		if (ret > 0)
			return -FI_EAGAIN;
		*consumed |= ret == -FI_EAGAIN;
	}
	*retry = only_cqs;
	return -FI_EAGAIN;
}

/* fi_trywait: the array of hook fids becomes an array of inner fids. */
int mrl_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct mrl_fabric *fab = container_of(fabric, struct mrl_fabric, fabric);
	struct fid *stack[16];
	struct fid **inner = stack;
	bool retry = true;
	int ret = -FI_EAGAIN;

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

	/* Each round that consumed hidden completions is progress; only
	 * rounds that found nothing at all are counted. */
	for (int idle = 0; retry && idle <= MRL_TRYWAIT_IDLE_RETRIES;) {
		bool consumed;

		ret = fab->inner->ops->trywait(fab->inner, inner, count);
		if (ret != -FI_EAGAIN)
			break;
		ret = mrl_trywait_readable(fids, count, &retry, &consumed);
		idle = consumed ? 0 : idle + 1;
	}

	if (inner != stack)
		free(inner);
	return ret;
}

/* ---- poll set ---------------------------------------------------- */

static int mrl_poll_poll(struct fid_poll *pollset, void **context, int count)
{
	struct mrl_poll *poll = container_of(pollset, struct mrl_poll, poll);
	int ret, kept = 0;

	if (!FI_CHECK_OP(poll->inner->ops, struct fi_ops_poll, poll))
		return -FI_ENOSYS;

	ret = poll->inner->ops->poll(poll->inner, context, count);
	if (ret <= 0)
		return ret;
	for (int i = 0; i < ret; i++) {
		struct fid *hook = context[i];
		struct mrl_cq *cq;

		/* The inner CQ/counter's context is our wrapper. */
		if (hook && mrl_is_hook_fid(hook)) {
			cq = mrl_hiding_cq(hook);
			if (cq && mrl_personality->cq_readable(cq) <= 0)
				continue;
			hook = hook->context;
			mrl_count(MRL_DEBUG_POLL_MAPPED);
		}
		context[kept++] = hook;
	}
	return kept;
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

