/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every wrapper shares: the per-class fid ops tables (whose address
 * tells a wrapper's class), the way down (hook fid -> inner fid) and up
 * (inner fid -> hook fid), the generic bind/control/ops_open, and the
 * debug counters.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/providers/fi_log.h>

#include "mrl_hook.h"
#include "mrl_hook_debug.h"

struct fi_provider *mrl_hook_prov;
const struct mrl_personality *mrl_hook_personality;

#define MRL_FID_OPS                                                           \
	{                                                                     \
		.size = sizeof(struct fi_ops), .close = mrl_hook_fid_close,   \
		.bind = mrl_hook_fid_bind, .control = mrl_hook_fid_control,   \
		.ops_open = mrl_hook_fid_ops_open,                            \
		.tostr = mrl_hook_fid_tostr, .ops_set = mrl_hook_fid_ops_set, \
	}

/* One table per class, all alike: the table's address is the class.
 * Read-only (personalities plug in through their callbacks). */
const struct fi_ops mrl_hook_fid_ops_table[MRL_NCLASS] = {
	[MRL_CLASS_FABRIC] = MRL_FID_OPS,  [MRL_CLASS_DOMAIN] = MRL_FID_OPS,
	[MRL_CLASS_EQ] = MRL_FID_OPS,	   [MRL_CLASS_WAIT] = MRL_FID_OPS,
	[MRL_CLASS_POLL] = MRL_FID_OPS,	   [MRL_CLASS_AV] = MRL_FID_OPS,
	[MRL_CLASS_AV_SET] = MRL_FID_OPS,  [MRL_CLASS_CQ] = MRL_FID_OPS,
	[MRL_CLASS_CNTR] = MRL_FID_OPS,	   [MRL_CLASS_EP] = MRL_FID_OPS,
	[MRL_CLASS_SEP] = MRL_FID_OPS,	   [MRL_CLASS_TX_CTX] = MRL_FID_OPS,
	[MRL_CLASS_RX_CTX] = MRL_FID_OPS,  [MRL_CLASS_SRX_CTX] = MRL_FID_OPS,
	[MRL_CLASS_STX_CTX] = MRL_FID_OPS, [MRL_CLASS_PEP] = MRL_FID_OPS,
	[MRL_CLASS_MR] = MRL_FID_OPS,	   [MRL_CLASS_MC] = MRL_FID_OPS,
};

/* ---- counters ---------------------------------------------------- */

static _Atomic uint64_t mrl_hook_opened[MRL_NCLASS];
static _Atomic uint64_t mrl_hook_closed[MRL_NCLASS];
static _Atomic uint64_t mrl_hook_counters[MRL_DEBUG_NCOUNTERS];

void
mrl_hook_count_open(enum mrl_class cls)
{
	atomic_fetch_add_explicit(&mrl_hook_opened[cls], 1,
				  memory_order_relaxed);
}

void
mrl_hook_count_close(enum mrl_class cls)
{
	atomic_fetch_add_explicit(&mrl_hook_closed[cls], 1,
				  memory_order_relaxed);
}

void
mrl_hook_count(enum mrl_debug_counter which)
{
	atomic_fetch_add_explicit(&mrl_hook_counters[which], 1,
				  memory_order_relaxed);
}

void
mrl_hook_debug_snapshot(struct mrl_debug_counts *counts)
{
	for (int i = 0; i < MRL_NCLASS; i++) {
		counts->opened[i] = atomic_load_explicit(&mrl_hook_opened[i],
							 memory_order_relaxed);
		counts->closed[i] = atomic_load_explicit(&mrl_hook_closed[i],
							 memory_order_relaxed);
	}
	for (int i = 0; i < MRL_DEBUG_NCOUNTERS; i++)
		counts->counter[i] = atomic_load_explicit(&mrl_hook_counters[i],
							  memory_order_relaxed);
}

static struct mrl_debug_ops mrl_hook_debug_ops = {
	.size = sizeof(struct mrl_debug_ops),
	.read = mrl_hook_debug_snapshot,
};

/* ---- navigation -------------------------------------------------- */

struct fid *
mrl_hook_inner_fid(struct fid *fid)
{
	if (!mrl_hook_is_hook_fid(fid))
		return fid;

	switch (mrl_hook_class_of(fid)) {
	case MRL_CLASS_FABRIC:
		return &container_of(fid, struct mrl_fabric, fabric.fid)
				->inner->fid;
	case MRL_CLASS_DOMAIN:
		return &container_of(fid, struct mrl_domain, domain.fid)
				->inner->fid;
	case MRL_CLASS_EQ:
		return &container_of(fid, struct mrl_eq, eq.fid)->inner->fid;
	case MRL_CLASS_WAIT:
		return &container_of(fid, struct mrl_wait, wait.fid)
				->inner->fid;
	case MRL_CLASS_POLL:
		return &container_of(fid, struct mrl_poll, poll.fid)
				->inner->fid;
	case MRL_CLASS_AV:
		return &container_of(fid, struct mrl_av, av.fid)->inner->fid;
	case MRL_CLASS_AV_SET:
		return &container_of(fid, struct mrl_av_set, av_set.fid)
				->inner->fid;
	case MRL_CLASS_CQ:
		return &container_of(fid, struct mrl_cq, cq.fid)->inner->fid;
	case MRL_CLASS_CNTR:
		return &container_of(fid, struct mrl_cntr, cntr.fid)
				->inner->fid;
	case MRL_CLASS_EP:
	case MRL_CLASS_SEP:
	case MRL_CLASS_TX_CTX:
	case MRL_CLASS_RX_CTX:
	case MRL_CLASS_SRX_CTX:
		return &container_of(fid, struct mrl_ep, ep.fid)->inner->fid;
	case MRL_CLASS_STX_CTX:
		return &container_of(fid, struct mrl_stx, stx.fid)->inner->fid;
	case MRL_CLASS_PEP:
		return &container_of(fid, struct mrl_pep, pep.fid)->inner->fid;
	case MRL_CLASS_MR:
		return &container_of(fid, struct mrl_mr, mr.fid)->inner->fid;
	case MRL_CLASS_MC:
		return &container_of(fid, struct mrl_mc, mc.fid)->inner->fid;
	case MRL_NCLASS:
		break;
	}
	return fid;
}

/*
 * The way up: every inner object a wrapper adopted (mrl_hook_adopt_inner),
 * keyed by its address. A fid found in an event is looked up by value and
 * never dereferenced: an event the application wrote itself (fi_eq_write)
 * may carry anything, its own hook fids, NULL or a pointer to memory that
 * is no fid, and must come back untouched.
 *
 * Open addressing, linear probing, deletion by backward shift; the table
 * doubles at half load and is freed when the last entry goes (so nothing
 * outlives the objects, not even past dlclose). mrl_hook_adopted_lock guards
 * the table; nothing but malloc/free of the table is called under it.
 */
struct mrl_adopted {
	const struct fid *inner;
	struct fid *hook;
};

static pthread_mutex_t mrl_hook_adopted_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrl_adopted *mrl_hook_adopted;
static size_t mrl_hook_adopted_cap, mrl_hook_adopted_count;

/*
 * Fork: the forking thread holds mrl_hook_adopted_lock across fork(), so a
 * child finds the table consistent and the lock free (a thread translating
 * an event at that moment would otherwise leave it held, and the child's
 * first open would wait forever). The parent's entries stay in the child's
 * table: its inner objects are never freed there, so no new object of the
 * child takes their addresses.
 */
static void
mrl_hook_adopted_fork_lock(void)
{
	pthread_mutex_lock(&mrl_hook_adopted_lock);
}

static void
mrl_hook_adopted_fork_unlock(void)
{
	pthread_mutex_unlock(&mrl_hook_adopted_lock);
}

static void
mrl_hook_adopted_fork_install(void)
{
	if (pthread_atfork(mrl_hook_adopted_fork_lock,
			   mrl_hook_adopted_fork_unlock,
			   mrl_hook_adopted_fork_unlock))
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"cannot watch for fork: a child must not use the "
			"hook\n");
}

static size_t
mrl_hook_adopted_slot(const struct fid *inner, size_t cap)
{
	uint64_t h = (uint64_t) (uintptr_t) inner * 0x9e3779b97f4a7c15ULL;

	return (size_t) (h >> 32) & (cap - 1);
}

/* Insert or replace (the address of a closed inner object may come back
 * for a new one before its wrapper's close removed it). */
static void
mrl_hook_adopted_put(struct mrl_adopted *table, size_t cap,
		     const struct fid *inner, struct fid *hook)
{
	size_t i = mrl_hook_adopted_slot(inner, cap);

	while (table[i].inner && table[i].inner != inner)
		i = (i + 1) & (cap - 1);
	if (!table[i].inner)
		mrl_hook_adopted_count++;
	table[i] = (struct mrl_adopted){.inner = inner, .hook = hook};
}

static int
mrl_hook_adopted_add(const struct fid *inner, struct fid *hook)
{
	static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
	int ret = 0;

	pthread_once(&fork_once, mrl_hook_adopted_fork_install);
	pthread_mutex_lock(&mrl_hook_adopted_lock);
	if (2 * (mrl_hook_adopted_count + 1) > mrl_hook_adopted_cap) {
		size_t cap =
			mrl_hook_adopted_cap ? 2 * mrl_hook_adopted_cap : 64;
		struct mrl_adopted *table = calloc(cap, sizeof(*table));

		if (!table) {
			ret = -FI_ENOMEM;
			goto out;
		}
		mrl_hook_adopted_count = 0;
		for (size_t i = 0; i < mrl_hook_adopted_cap; i++)
			if (mrl_hook_adopted[i].inner)
				mrl_hook_adopted_put(table, cap,
						     mrl_hook_adopted[i].inner,
						     mrl_hook_adopted[i].hook);
		free(mrl_hook_adopted);
		mrl_hook_adopted = table;
		mrl_hook_adopted_cap = cap;
	}
	mrl_hook_adopted_put(mrl_hook_adopted, mrl_hook_adopted_cap, inner,
			     hook);
out:
	pthread_mutex_unlock(&mrl_hook_adopted_lock);
	return ret;
}

/* Forget inner if it still leads to hook (a newer object at the same
 * address keeps its entry). */
static void
mrl_hook_adopted_del(const struct fid *inner, const struct fid *hook)
{
	size_t i, j, cap;

	pthread_mutex_lock(&mrl_hook_adopted_lock);
	cap = mrl_hook_adopted_cap;
	if (!cap)
		goto out;
	for (i = mrl_hook_adopted_slot(inner, cap); mrl_hook_adopted[i].inner;
	     i = (i + 1) & (cap - 1))
		if (mrl_hook_adopted[i].inner == inner)
			break;
	if (mrl_hook_adopted[i].inner != inner ||
	    mrl_hook_adopted[i].hook != hook)
		goto out;
	/* Backward shift: move up every later entry of the run that may
	 * sit at i, so no probe stops early at the hole. */
	for (j = (i + 1) & (cap - 1); mrl_hook_adopted[j].inner;
	     j = (j + 1) & (cap - 1)) {
		size_t home =
			mrl_hook_adopted_slot(mrl_hook_adopted[j].inner, cap);

		if (((j - home) & (cap - 1)) >= ((j - i) & (cap - 1))) {
			mrl_hook_adopted[i] = mrl_hook_adopted[j];
			i = j;
		}
	}
	mrl_hook_adopted[i] = (struct mrl_adopted){0};
	if (!--mrl_hook_adopted_count) {
		free(mrl_hook_adopted);
		mrl_hook_adopted = NULL;
		mrl_hook_adopted_cap = 0;
	}
out:
	pthread_mutex_unlock(&mrl_hook_adopted_lock);
}

struct fid *
mrl_hook_of_inner(struct fid *inner)
{
	struct fid *hook = inner;
	size_t i, cap;

	if (!inner)
		return inner;
	pthread_mutex_lock(&mrl_hook_adopted_lock);
	cap = mrl_hook_adopted_cap;
	for (i = cap ? mrl_hook_adopted_slot(inner, cap) : 0;
	     cap && mrl_hook_adopted[i].inner; i = (i + 1) & (cap - 1)) {
		if (mrl_hook_adopted[i].inner == inner) {
			hook = mrl_hook_adopted[i].hook;
			break;
		}
	}
	pthread_mutex_unlock(&mrl_hook_adopted_lock);
	return hook;
}

void
mrl_hook_adopt_inner(struct fid *inner, struct fid *hook)
{
	if (!inner->context)
		inner->context = hook;
	else if (inner->context != hook)
		FI_DBG(mrl_hook_prov, FI_LOG_CORE,
		       "inner fid %p (fclass %zu) keeps its own context\n",
		       (void *) inner, inner->fclass);
	/* Without the entry, events naming inner reach the application
	 * with the provider's fid: logged, not fatal. */
	if (mrl_hook_adopted_add(inner, hook))
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"no memory to record inner fid %p: its events will "
			"not be translated\n",
			(void *) inner);
}

static bool
mrl_hook_class_is_ep(enum mrl_class cls)
{
	return cls >= MRL_CLASS_EP && cls <= MRL_CLASS_SRX_CTX;
}

/* MR keys and descriptors can change on bind/enable (FI_MR_ENDPOINT). */
static void
mrl_hook_mr_refresh(struct fid *fid)
{
	struct mrl_mr *mr = container_of(fid, struct mrl_mr, mr.fid);

	mr->mr.key = mr->inner->key;
	mr->mr.mem_desc = mr->inner->mem_desc;
}

/* ---- generic fid ops --------------------------------------------- */

/* Every wrapper starts with its public struct, which starts with the fid:
 * the fid's address is the wrapper's (mrl_hook_fid_close frees it). */
_Static_assert(offsetof(struct mrl_fabric, fabric.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_domain, domain.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_eq, eq.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_wait, wait.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_poll, poll.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_av, av.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_av_set, av_set.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_cq, cq.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_cntr, cntr.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_ep, ep.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_stx, stx.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_pep, pep.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_mr, mr.fid) == 0, "fid first");
_Static_assert(offsetof(struct mrl_mc, mc.fid) == 0, "fid first");

int
mrl_hook_fid_close(struct fid *fid)
{
	const struct mrl_personality *p = mrl_hook_personality;
	enum mrl_class cls = mrl_hook_class_of(fid);
	struct fid *inner = mrl_hook_inner_fid(fid);
	struct mrl_mr *mr = NULL;
	int ret;

	if (cls == MRL_CLASS_DOMAIN) {
		struct mrl_domain *dom =
			container_of(fid, struct mrl_domain, domain.fid);

		/* An MR the hook handed out is one the provider would refuse
		 * the close for, had it registered it. */
		if (atomic_load(&dom->wrapped_mrs)) {
			FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
				"domain close refused: %zu memory "
				"registrations still open\n",
				atomic_load(&dom->wrapped_mrs));
			return -FI_EBUSY;
		}
		/* Before the inner close: the personality closes what it
		 * opened on the inner domain and nothing uses, or the inner
		 * close would fail -FI_EBUSY; the rest waits until the
		 * provider agreed. */
		if (p && p->domain_close)
			p->domain_close(dom);
	}

	if (cls == MRL_CLASS_MR)
		mr = container_of(fid, struct mrl_mr, mr.fid);
	if (mr && mr->release) {
		struct mrl_domain *dom = mr->domain;
		bool wrapped = mr->wrapped;

		ret = mr->release(mr);
		if (!ret && wrapped)
			atomic_fetch_sub(&dom->wrapped_mrs, 1);
	} else {
		ret = fi_close(inner);
	}
	if (ret)
		return ret;
	mrl_hook_adopted_del(inner, fid);

	/* The provider agreed: only now does anything of the object go. */
	switch (cls) {
	case MRL_CLASS_DOMAIN:
		if (p && p->domain_closed)
			p->domain_closed(container_of(fid, struct mrl_domain,
						      domain.fid));
		free(container_of(fid, struct mrl_domain, domain.fid)
			     ->util_ops);
		break;
	case MRL_CLASS_CQ:
		if (p && p->cq_close)
			p->cq_close(container_of(fid, struct mrl_cq, cq.fid));
		break;
	case MRL_CLASS_CNTR:
		if (p && p->cntr_close)
			p->cntr_close(
				container_of(fid, struct mrl_cntr, cntr.fid));
		break;
	default:
		if (!mrl_hook_class_is_ep(cls))
			break;
		if (p && p->ep_close)
			p->ep_close(container_of(fid, struct mrl_ep, ep.fid));
		mrl_hook_ep_shim_free(container_of(fid, struct mrl_ep, ep.fid));
		break;
	}
	mrl_hook_count_close(cls);
	free(fid);
	return 0;
}

int
mrl_hook_fid_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct fid *inner = mrl_hook_inner_fid(fid);
	enum mrl_class cls = mrl_hook_class_of(fid);
	struct mrl_ep *ep = NULL;
	int ret;

	if (!FI_CHECK_OP(inner->ops, struct fi_ops, bind))
		return -FI_ENOSYS;

	if (mrl_hook_class_is_ep(cls)) {
		ep = container_of(fid, struct mrl_ep, ep.fid);
		if (mrl_hook_personality && mrl_hook_personality->ep_bind) {
			ret = mrl_hook_personality->ep_bind(ep, bfid, flags);
			if (ret)
				return ret;
		}
	}

	ret = inner->ops->bind(inner, mrl_hook_inner_fid(bfid), flags);
	if (ret)
		return ret;

	if (ep)
		ret = mrl_hook_ep_record_bind(ep, bfid, flags);
	else if (cls == MRL_CLASS_MR)
		mrl_hook_mr_refresh(fid);
	else if (cls == MRL_CLASS_DOMAIN && (flags & MRL_FI_REG_MR))
		container_of(fid, struct mrl_domain, domain.fid)->mr_events =
			true;
	return ret;
}

static int
mrl_hook_fid_alias(struct mrl_ep *ep, struct fi_alias *alias)
{
	struct fid *inner_alias = NULL;
	struct fi_alias inner_arg = {.fid = &inner_alias,
				     .flags = alias->flags};
	struct mrl_ep *wrap;
	int ret;

	ret = ep->inner->fid.ops->control(&ep->inner->fid, FI_ALIAS,
					  &inner_arg);
	if (ret)
		return ret;

	ret = mrl_hook_ep_wrap_alias(
		ep, container_of(inner_alias, struct fid_ep, fid), alias->flags,
		&wrap);
	if (ret)
		goto err_close;
	*alias->fid = &wrap->ep.fid;
	return 0;

err_close:
	fi_close(inner_alias);
	return ret;
}

/* The forward shared by every class; FI_ALIAS only reaches it from an
 * endpoint-family object. */
static int
mrl_hook_control_forward(struct fid *fid, int command, void *arg)
{
	struct fid *inner = mrl_hook_inner_fid(fid);
	enum mrl_class cls = mrl_hook_class_of(fid);
	int ret;

	if (!FI_CHECK_OP(inner->ops, struct fi_ops, control))
		return -FI_ENOSYS;

	switch (command) {
	case FI_ALIAS:
		if (!mrl_hook_class_is_ep(cls))
			return -FI_EINVAL;
		return mrl_hook_fid_alias(
			container_of(fid, struct mrl_ep, ep.fid), arg);
	case FI_QUEUE_WORK:
	case FI_CANCEL_WORK:
		/* struct fi_deferred_work embeds endpoint, counter and
		 * descriptor pointers inside op structs whose size grows
		 * with the API version: not translated. */
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"deferred work (fi_control %d) is not forwarded\n",
			command);
		return -FI_ENOSYS;
	default:
		break;
	}

	ret = inner->ops->control(inner, command, arg);
	if (!ret && cls == MRL_CLASS_MR)
		mrl_hook_mr_refresh(fid);
	if (!ret && command == FI_SETOPSFLAG && mrl_hook_class_is_ep(cls) &&
	    arg)
		ret = mrl_hook_ep_opflags_set(
			container_of(fid, struct mrl_ep, ep.fid),
			*(uint64_t *) arg, true);
	return ret;
}

int
mrl_hook_ep_control(struct mrl_ep *ep, int command, void *arg)
{
	return mrl_hook_control_forward(&ep->ep.fid, command, arg);
}

int
mrl_hook_fid_control(struct fid *fid, int command, void *arg)
{
	if (mrl_hook_class_is_ep(mrl_hook_class_of(fid)) &&
	    mrl_hook_personality && mrl_hook_personality->ep_control)
		return mrl_hook_personality->ep_control(
			container_of(fid, struct mrl_ep, ep.fid), command, arg);
	return mrl_hook_control_forward(fid, command, arg);
}

int
mrl_hook_fid_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context)
{
	enum mrl_class cls = mrl_hook_class_of(fid);
	int ret;

	if (!name)
		return -FI_EINVAL;

	if (!strcmp(name, MRL_DEBUG_OPS_1)) {
		*ops = &mrl_hook_debug_ops;
		return 0;
	}

	if (!strcmp(name, FI_MRLEASE_OPS_1) && cls != MRL_CLASS_FABRIC &&
	    cls != MRL_CLASS_DOMAIN)
		goto refuse;

	if (cls == MRL_CLASS_DOMAIN) {
		bool handled;

		ret = mrl_hook_domain_ops_open(
			container_of(fid, struct mrl_domain, domain.fid), name,
			flags, ops, context, &handled);
		if (handled)
			return ret;
	}

	if (mrl_hook_personality && mrl_hook_personality->ops_open) {
		ret = mrl_hook_personality->ops_open(fid, name, flags, ops,
						     context);
		if (ret != -FI_ENOSYS)
			return ret;
	}

refuse:
	/* Ops tables of the object below take its inner fids: handing them
	 * to a caller that holds hook fids would crash inside the provider. */
	mrl_hook_count(MRL_DEBUG_OPS_REFUSED);
	FI_INFO(mrl_hook_prov, FI_LOG_CORE,
		"fi_open_ops(\"%s\") on fclass %zu not forwarded: -FI_ENOSYS\n",
		name, fid->fclass);
	return -FI_ENOSYS;
}

int
mrl_hook_fid_tostr(const struct fid *fid, char *buf, size_t len)
{
	struct fid *inner = mrl_hook_inner_fid((struct fid *) fid);

	if (!FI_CHECK_OP(inner->ops, struct fi_ops, tostr))
		return -FI_ENOSYS;
	return inner->ops->tostr(inner, buf, len);
}

int
mrl_hook_fid_ops_set(struct fid *fid, const char *name, uint64_t flags,
		     void *ops, void *context)
{
	if (!name)
		return -FI_EINVAL;
	if (mrl_hook_class_of(fid) == MRL_CLASS_DOMAIN) {
		bool handled;
		int ret;

		ret = mrl_hook_domain_ops_set(
			container_of(fid, struct mrl_domain, domain.fid), name,
			flags, ops, context, &handled);
		if (handled)
			return ret;
	}
	/* Ops installed below would be called with inner fids. */
	mrl_hook_count(MRL_DEBUG_OPS_REFUSED);
	FI_INFO(mrl_hook_prov, FI_LOG_CORE,
		"fi_set_ops(\"%s\") on fclass %zu not forwarded: -FI_ENOSYS\n",
		name, fid->fclass);
	return -FI_ENOSYS;
}
