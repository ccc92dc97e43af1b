/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wait sets and poll sets. fi_poll returns the contexts of the CQs and
 * counters that have events: below us those are our wrappers (their inner
 * objects were opened with context = wrapper), so each is mapped back to the
 * application's context.
 *
 * A CQ is reported (by fi_poll, by fi_trywait's -FI_EAGAIN, or by fi_wait
 * returning 0) only with a completion the application can read: where the
 * personality hides entries, it is asked first (cq_readable), which
 * consumes hidden ones.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

/* ---- wait set ---------------------------------------------------- */

/* Objects a wait set can hold that fi_wait checks, kept inline in the
 * wrapper (freed with it); a set that was given more is not checked. */
#define MRL_WAIT_WATCHED 16

/*
 * A wait set and what the hook saw opened on it (CQs, counters, EQs), so
 * that a wake-up can be checked against what the application will read
 * (mrl_hook_wait_wait). Members are kept by inner and hook fid and looked up by
 * value at each wait (mrl_hook_of_inner): one closed since is not found
 * and is dropped, with no hook on its close.
 */
struct mrl_wait_set {
	struct mrl_wait wait; /* first: mrl_hook_fid_close frees it */
	pthread_mutex_t lock; /* guards what follows; nothing is
			       * called in the provider under it */
	bool unchecked; /* a member the hook cannot check */
	size_t count;
	struct {
		struct fid *inner, *hook;
	} members[MRL_WAIT_WATCHED];
};

static struct mrl_wait_set *
mrl_hook_wait_set_of(struct fid_wait *waitset)
{
	return container_of(waitset, struct mrl_wait_set, wait.wait);
}

/* Drop the members closed since they were added (under set->lock). */
static void
mrl_hook_wait_prune(struct mrl_wait_set *set)
{
	size_t kept = 0;

	for (size_t i = 0; i < set->count; i++)
		if (mrl_hook_of_inner(set->members[i].inner) ==
		    set->members[i].hook)
			set->members[kept++] = set->members[i];
	set->count = kept;
}

void
mrl_hook_wait_watch(struct fid_wait *app_wait, struct fid *hook,
		    struct fid *inner)
{
	struct mrl_wait_set *set;

	if (!mrl_hook_is_hook_fid(&app_wait->fid) ||
	    mrl_hook_class_of(&app_wait->fid) != MRL_CLASS_WAIT)
		return;
	set = mrl_hook_wait_set_of(app_wait);
	pthread_mutex_lock(&set->lock);
	mrl_hook_wait_prune(set);
	if (!inner || set->count == MRL_WAIT_WATCHED)
		set->unchecked = true;
	else
		set->members[set->count++] =
			(typeof(set->members[0])){.inner = inner, .hook = hook};
	pthread_mutex_unlock(&set->lock);
}

/* What fi_wait found in its members: the application's to read (or an
 * object it cannot check), only hidden completions, or nothing. */
enum mrl_wait_found { MRL_WAIT_NOTHING, MRL_WAIT_HIDDEN, MRL_WAIT_READABLE };

/* One member's counter value and error count at fi_wait's entry. */
struct mrl_wait_cntr_seen {
	uint64_t value, err;
};

static void
mrl_hook_wait_cntr_look(struct fid *hook, struct mrl_wait_cntr_seen *c)
{
	struct fid_cntr *cntr = container_of(hook, struct fid_cntr, fid);

	c->value = fi_cntr_read(cntr);
	c->err = fi_cntr_readerr(cntr);
}

static enum mrl_wait_found
mrl_hook_wait_found(struct fid **hooks, size_t n,
		    const struct mrl_wait_cntr_seen *seen)
{
	enum mrl_wait_found found = MRL_WAIT_NOTHING;

	for (size_t i = 0; i < n; i++) {
		struct mrl_wait_cntr_seen now;
		/* Room for a CM event and its data; a larger event answers
		 * -FI_ETOOSMALL, which says as much. */
		char buf[sizeof(struct fi_eq_cm_entry) + 256];
		struct fid_eq *eq;
		uint32_t event;
		int ret;

		switch (mrl_hook_class_of(hooks[i])) {
		case MRL_CLASS_CQ:
			ret = mrl_hook_personality->cq_readable(
				container_of(hooks[i], struct mrl_cq, cq.fid));
			if (ret > 0)
				return MRL_WAIT_READABLE;
			if (ret == -FI_EAGAIN)
				found = MRL_WAIT_HIDDEN;
			break;
		case MRL_CLASS_CNTR:
			mrl_hook_wait_cntr_look(hooks[i], &now);
			if (now.value != seen[i].value ||
			    now.err != seen[i].err)
				return MRL_WAIT_READABLE;
			break;
		case MRL_CLASS_EQ:
			eq = container_of(hooks[i], struct fid_eq, fid);
			if (fi_eq_read(eq, &event, buf, sizeof(buf), FI_PEEK) !=
			    -FI_EAGAIN)
				return MRL_WAIT_READABLE;
			break;
		default:
			return MRL_WAIT_READABLE;
		}
	}
	return found;
}

static int64_t
mrl_hook_wait_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * fi_wait: the provider's wake-up is the answer, unless all it found were
 * completions the hook hides (now consumed): then wait again for what is
 * left of the timeout. Anything else the members hold (an application
 * completion or error, a counter that moved since the call, an EQ event,
 * a member the hook cannot check), or nothing at all (the provider woke
 * for its own progress), returns as the provider said.
 */
static int
mrl_hook_wait_wait(struct fid_wait *waitset, int timeout)
{
	struct mrl_wait_set *set = mrl_hook_wait_set_of(waitset);
	struct fid_wait *inner = set->wait.inner;
	struct mrl_wait_cntr_seen seen[MRL_WAIT_WATCHED];
	struct fid *hooks[MRL_WAIT_WATCHED];
	int64_t deadline = timeout >= 0 ? mrl_hook_wait_now_ms() + timeout : 0;
	enum mrl_wait_found found;
	bool checked, consumed = false;
	size_t n;
	int ret;

	if (!FI_CHECK_OP(inner->ops, struct fi_ops_wait, wait))
		return -FI_ENOSYS;
	pthread_mutex_lock(&set->lock);
	mrl_hook_wait_prune(set);
	n = set->count;
	for (size_t i = 0; i < n; i++)
		hooks[i] = set->members[i].hook;
	checked = !set->unchecked && n && mrl_hook_personality &&
		  mrl_hook_personality->cq_readable;
	pthread_mutex_unlock(&set->lock);
	if (!checked)
		return inner->ops->wait(inner, timeout);

	for (size_t i = 0; i < n; i++)
		if (mrl_hook_class_of(hooks[i]) == MRL_CLASS_CNTR)
			mrl_hook_wait_cntr_look(hooks[i], &seen[i]);
	/* A completion read ahead (by fi_trywait, fi_poll or an earlier wait)
	 * has left the provider's CQ, whose wait no longer sees it: it is
	 * there to read, so the wait returns at once, as the provider's own
	 * does for a CQ holding entries. Looking may consume completions the
	 * hook hides, whose signal then wakes the provider's wait with
	 * nothing to find: that wake is theirs, so it waits again. */
	for (size_t i = 0; i < n; i++) {
		if (mrl_hook_class_of(hooks[i]) != MRL_CLASS_CQ)
			continue;
		ret = mrl_hook_personality->cq_readable(
			container_of(hooks[i], struct mrl_cq, cq.fid));
		if (ret > 0)
			return 0;
		if (ret == -FI_EAGAIN)
			consumed = true;
	}
	for (;;) {
		ret = inner->ops->wait(inner, timeout);
		if (ret)
			return ret;
		found = mrl_hook_wait_found(hooks, n, seen);
		if (found == MRL_WAIT_READABLE ||
		    (found == MRL_WAIT_NOTHING && !consumed))
			return 0;
		consumed = false;
		if (timeout >= 0) {
			int64_t left = deadline - mrl_hook_wait_now_ms();

			if (left <= 0)
				return -FI_ETIMEDOUT;
			timeout = (int) left;
		}
	}
}

struct fi_ops_wait mrl_hook_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = mrl_hook_wait_wait,
};

int
mrl_hook_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		   struct fid_wait **waitset)
{
	struct mrl_fabric *fab =
		container_of(fabric, struct mrl_fabric, fabric);
	struct mrl_wait_set *set;
	struct mrl_wait *wait;
	int ret;

	if (!FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, wait_open))
		return -FI_ENOSYS;
	if (mrl_hook_fabric_bypassed(fab))
		return fab->inner->ops->wait_open(fab->inner, attr, waitset);

	set = calloc(1, sizeof(*set));
	if (!set)
		return -FI_ENOMEM;
	ret = pthread_mutex_init(&set->lock, NULL);
	if (ret) {
		free(set);
		return -ret;
	}
	wait = &set->wait;

	wait->fabric = fab;
	wait->wait.fid.fclass = FI_CLASS_WAIT;
	wait->wait.fid.ops = &mrl_fid_ops[MRL_CLASS_WAIT];
	wait->wait.ops = &mrl_hook_wait_ops;

	ret = fab->inner->ops->wait_open(fab->inner, attr, &wait->inner);
	if (ret)
		goto err_free;
	/* fi_wait_open takes no context. */
	mrl_hook_adopt_inner(&wait->inner->fid, &wait->wait.fid);

	mrl_hook_count_open(MRL_CLASS_WAIT);
	*waitset = &wait->wait;
	return 0;

err_free:
	pthread_mutex_destroy(&set->lock);
	free(set);
	return ret;
}

/* The hook CQ fid is, when the personality hides entries of it, or NULL. */
static struct mrl_cq *
mrl_hook_hiding_cq(struct fid *fid)
{
	if (!mrl_hook_personality || !mrl_hook_personality->cq_readable ||
	    !mrl_hook_is_hook_fid(fid) ||
	    mrl_hook_class_of(fid) != MRL_CLASS_CQ)
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
static int
mrl_hook_trywait_readable(struct fid **fids, int count, bool *retry,
			  bool *consumed)
{
	bool only_cqs = true;

	*retry = false;
	*consumed = false;
	for (int i = 0; i < count; i++) {
		struct mrl_cq *cq = mrl_hook_hiding_cq(fids[i]);
		int ret;

		if (!cq) {
			only_cqs = false;
			continue;
		}
		ret = mrl_hook_personality->cq_readable(cq);
		if (ret > 0)
			return -FI_EAGAIN;
		*consumed |= ret == -FI_EAGAIN;
	}
	*retry = only_cqs;
	return -FI_EAGAIN;
}

/* fi_trywait: the array of hook fids becomes an array of inner fids. */
int
mrl_hook_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct mrl_fabric *fab =
		container_of(fabric, struct mrl_fabric, fabric);
	struct fid *stack[16];
	struct fid **inner = stack;
	bool retry = true;
	int ret = -FI_EAGAIN;

	if (!FI_CHECK_OP(fab->inner->ops, struct fi_ops_fabric, trywait))
		return -FI_ENOSYS;
	if (count < 0)
		return -FI_EINVAL;

	if ((size_t) count > sizeof(stack) / sizeof(stack[0])) {
		inner = calloc((size_t) count, sizeof(*inner));
		if (!inner)
			return -FI_ENOMEM;
	}
	for (int i = 0; i < count; i++)
		inner[i] = mrl_hook_inner_fid(fids[i]);

	/* Each round that consumed hidden completions is progress; only
	 * rounds that found nothing at all are counted. */
	for (int idle = 0; retry && idle <= MRL_TRYWAIT_IDLE_RETRIES;) {
		bool consumed;

		ret = fab->inner->ops->trywait(fab->inner, inner, count);
		if (ret != -FI_EAGAIN)
			break;
		ret = mrl_hook_trywait_readable(fids, count, &retry, &consumed);
		idle = consumed ? 0 : idle + 1;
	}

	if (inner != stack)
		free(inner);
	return ret;
}

/* ---- poll set ---------------------------------------------------- */

static int
mrl_hook_poll_poll(struct fid_poll *pollset, void **context, int count)
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
		if (hook && mrl_hook_is_hook_fid(hook)) {
			cq = mrl_hook_hiding_cq(hook);
			if (cq && mrl_hook_personality->cq_readable(cq) <= 0)
				continue;
			hook = hook->context;
			mrl_hook_count(MRL_DEBUG_POLL_MAPPED);
		}
		context[kept++] = hook;
	}
	return kept;
}

static int
mrl_hook_poll_add(struct fid_poll *pollset, struct fid *event_fid,
		  uint64_t flags)
{
	struct mrl_poll *poll = container_of(pollset, struct mrl_poll, poll);

	if (!FI_CHECK_OP(poll->inner->ops, struct fi_ops_poll, poll_add))
		return -FI_ENOSYS;
	return poll->inner->ops->poll_add(poll->inner,
					  mrl_hook_inner_fid(event_fid), flags);
}

static int
mrl_hook_poll_del(struct fid_poll *pollset, struct fid *event_fid,
		  uint64_t flags)
{
	struct mrl_poll *poll = container_of(pollset, struct mrl_poll, poll);

	if (!FI_CHECK_OP(poll->inner->ops, struct fi_ops_poll, poll_del))
		return -FI_ENOSYS;
	return poll->inner->ops->poll_del(poll->inner,
					  mrl_hook_inner_fid(event_fid), flags);
}

struct fi_ops_poll mrl_hook_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = mrl_hook_poll_poll,
	.poll_add = mrl_hook_poll_add,
	.poll_del = mrl_hook_poll_del,
};

int
mrl_hook_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	struct mrl_domain *dom = mrl_hook_domain_of(domain);
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
	poll->poll.ops = &mrl_hook_poll_ops;

	ret = dom->inner->ops->poll_open(dom->inner, attr, &poll->inner);
	if (ret)
		goto err_free;
	mrl_hook_adopt_inner(&poll->inner->fid, &poll->poll.fid);

	mrl_hook_count_open(MRL_CLASS_POLL);
	*pollset = &poll->poll;
	return 0;

err_free:
	free(poll);
	return ret;
}
