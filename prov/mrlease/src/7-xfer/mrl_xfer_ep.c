/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoints of the data path: their tables, what fi_enable decides (which
 * directions lease, and how each learns an operation ended), fi_cancel with
 * the application's context, and close (release what the provider let go).
 *
 * The default op flags and rx caps come from what the endpoint was opened
 * with (ep->opening, during ep_open); fi_enable and FI_SETOPSFLAG reach
 * the personality's ep_control, which forwards through mrl_hook_ep_control.
 */
#include "config.h"

#include <sched.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_bind.h"
#include "mrl_params.h"
#include "mrl_xfer.h"
#include "mrl_xfer_ctl.h"
#include "mrl_xfer_msg.h"

static struct fi_ops_ep mrl_xfer_ep_ops;
static pthread_once_t mrl_xfer_once = PTHREAD_ONCE_INIT;
static void mrl_xfer_init_once(void);

/* ---- fi_enable: routes, thresholds, internal CQ ------------------------ */

static bool
mrl_xfer_format_has_flags(enum fi_cq_format format)
{
	return format == FI_CQ_FORMAT_MSG || format == FI_CQ_FORMAT_DATA ||
	       format == FI_CQ_FORMAT_TAGGED;
}

/* Counters bound for a direction (any of them drives the internal CQ). */
static size_t
mrl_xfer_ep_dir_cntrs(struct mrl_ep *ep, enum mrl_dir dir,
		      struct mrl_cntr **out)
{
	size_t n = 0;

	if (dir == MRL_RX) {
		if (ep->bound.recv_cntr)
			out[n++] = ep->bound.recv_cntr;
		return n;
	}
	if (ep->bound.send_cntr)
		out[n++] = ep->bound.send_cntr;
	if (ep->bound.read_cntr)
		out[n++] = ep->bound.read_cntr;
	if (ep->bound.write_cntr)
		out[n++] = ep->bound.write_cntr;
	return n;
}

static void
mrl_xfer_dir_set(struct mrl_xep *x, enum mrl_dir dir, size_t min)
{
	struct mrl_ep *ep = x->ep;
	struct mrl_xdir *d = &x->dir[dir];
	struct mrl_cq *cq = dir == MRL_TX ? ep->bound.tx_cq : ep->bound.rx_cq;
	uint64_t cq_flags =
		dir == MRL_TX ? ep->bound.tx_cq_flags : ep->bound.rx_cq_flags;
	struct mrl_cntr *cntrs[3];

	d->min = d->min_msg = SIZE_MAX;
	if (cq) {
		d->route = cq_flags & FI_SELECTIVE_COMPLETION ?
				   MRL_ROUTE_SELECTIVE :
				   MRL_ROUTE_ALL;
		d->flags_visible = mrl_xfer_format_has_flags(cq->format);
	} else if (mrl_xfer_ep_dir_cntrs(ep, dir, cntrs)) {
		d->route = MRL_ROUTE_INTERNAL;
		d->flags_visible = true;
	} else {
		d->route = MRL_ROUTE_NONE;
		return;
	}

	d->op_flags = x->op_flags[dir] & ~(uint64_t) (FI_TRANSMIT | FI_RECV);
	d->convert = d->route == MRL_ROUTE_INTERNAL ||
		     (d->route == MRL_ROUTE_SELECTIVE &&
		      !(d->op_flags & FI_COMPLETION));
	d->min_msg = min;
	d->min = min;
	d->live_flags = dir == MRL_RX && (d->op_flags & FI_MULTI_RECV) ?
				MRL_OP_MULTI_RECV :
				0;
	if (dir == MRL_TX && (d->op_flags & FI_INJECT))
		d->min = SIZE_MAX;
	if (dir == MRL_RX && (d->op_flags & FI_MULTI_RECV) && !d->flags_visible)
		d->min = SIZE_MAX;
}

/*
 * Whether rx may lease FI_MULTI_RECV buffers (mrl_xdir.multi_recv): its
 * completions carry flags, a pool, and the rx caps the endpoint was opened
 * with have FI_MULTI_RECV (unknown caps: allowed). When the default rx
 * flags make every receive a multi-recv one, the rx CQ is guarded now
 * (mrl_xfer_cq_guard_rx), else receives do not lease.
 */
static void
mrl_xfer_dir_multi_recv(struct mrl_xep *x)
{
	struct mrl_xdir *d = &x->dir[MRL_RX];

	d->multi_recv = x->pool && d->route != MRL_ROUTE_NONE &&
			d->flags_visible &&
			(!x->rx_caps || (x->rx_caps & FI_MULTI_RECV));
	if (!(d->op_flags & FI_MULTI_RECV))
		return;
	if (!d->multi_recv || mrl_xfer_cq_guard_rx(x)) {
		d->multi_recv = false;
		d->min = SIZE_MAX;
	}
}

/* After a decision: whether the direction's single-buffer calls may take
 * the hit path (mrl_xfer_single.h). */
static void
mrl_xfer_dir_single(struct mrl_xep *x, enum mrl_dir dir)
{
	struct mrl_xdir *d = &x->dir[dir];

	if (dir == MRL_RX)
		mrl_xfer_dir_multi_recv(x);

	d->single = x->pool && d->route != MRL_ROUTE_NONE && !d->convert ?
			    x->pool :
			    &mrl_xfer_op_pool_none;
	d->owned_shape = mrl_xfer_op_shape(d->live_flags | MRL_OP_OWNED, 1);
	d->owned_state = mrl_xfer_post_op_state(d->live_flags | MRL_OP_OWNED);
}

/* Open the inner CQ that reports leased ops of counters-only directions. */
static int
mrl_xfer_ep_internal_cq(struct mrl_xep *x, uint64_t bind_flags)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_NONE,
	};
	struct mrl_ep *ep = x->ep;
	int ret;

	ret = fi_cq_open(ep->domain->inner, &attr, &x->internal_cq, NULL);
	if (ret) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_CTRL,
			"internal CQ for a counters-only endpoint: %s\n",
			fi_strerror(-ret));
		return ret;
	}
	ret = fi_ep_bind(ep->inner, &x->internal_cq->fid,
			 bind_flags | FI_SELECTIVE_COMPLETION);
	if (ret) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_CTRL,
			"binding the internal CQ: %s\n", fi_strerror(-ret));
		fi_close(&x->internal_cq->fid);
		x->internal_cq = NULL;
	}
	return ret;
}

/* Let the counters of internal-route directions drain x's internal CQ. */
static int
mrl_xfer_ep_link_cntrs(struct mrl_xep *x)
{
	struct mrl_cntr *cntrs[3];
	size_t nlinked = 0;
	int ret;

	for (int dir = 0; dir < MRL_NDIR; dir++) {
		size_t n;

		if (x->dir[dir].route != MRL_ROUTE_INTERNAL)
			continue;
		n = mrl_xfer_ep_dir_cntrs(x->ep, dir, cntrs);
		for (size_t i = 0; i < n; i++) {
			bool seen = false;

			for (size_t j = 0; j < nlinked; j++)
				seen |= x->progress[j] == cntrs[i]->ext;
			if (seen || nlinked == 4)
				continue;
			ret = mrl_xfer_cntr_add(cntrs[i]->ext, x);
			if (ret)
				return ret;
			x->progress[nlinked++] = cntrs[i]->ext;
		}
	}
	return 0;
}

static void
mrl_xfer_ep_disable(struct mrl_xep *x)
{
	for (int dir = 0; dir < MRL_NDIR; dir++) {
		x->dir[dir].min = x->dir[dir].min_msg = SIZE_MAX;
		x->dir[dir].route = MRL_ROUTE_NONE;
		x->dir[dir].single = &mrl_xfer_op_pool_none;
		x->dir[dir].multi_recv = false;
	}
}

/* A direction whose CQ reads do not complete ops (a CQ that was opened on
 * a domain that cannot lease) must not lease. */
static void
mrl_xfer_dir_check_cq(struct mrl_xep *x, enum mrl_dir dir)
{
	struct mrl_cq *cq =
		dir == MRL_TX ? x->ep->bound.tx_cq : x->ep->bound.rx_cq;
	struct mrl_xdir *d = &x->dir[dir];

	if (cq && !cq->ext) {
		d->min = d->min_msg = SIZE_MAX;
		d->route = MRL_ROUTE_NONE;
	}
}

/* Before the inner fi_enable: decide, and bind the internal CQ if needed. */
static int
mrl_xfer_ep_enable(struct mrl_xep *x)
{
	struct mrl_ep *ep = x->ep;
	struct mrl_domain *dom = ep->domain;
	struct mrl_bind_domain *ld = mrl_bind_domain_of(dom);
	enum fi_threading threading = dom->threading;
	uint64_t internal = 0;
	size_t min;
	int ret;

	if (x->pool || !ld || !ld->cache_domain || ep->alias_of)
		return 0;
	x->cache = ld->cache_domain;
	x->mr_local = mrl_xfer_domain_mr_local(dom);
	x->based_after = mrl_xfer_domain_mr_at_operand(dom) ?
				 mrl_xfer_rndv_after :
				 SIZE_MAX;
	min = x->mr_local ? 1 : dom->outermost ? mrl_params.min_size : SIZE_MAX;
	if (min == SIZE_MAX)
		return 0;
	if (!min)
		min = 1;

	mrl_xfer_dir_set(x, MRL_TX, min);
	mrl_xfer_dir_set(x, MRL_RX, min);
	mrl_xfer_dir_check_cq(x, MRL_TX);
	mrl_xfer_dir_check_cq(x, MRL_RX);
	FI_INFO(mrl_hook_prov, FI_LOG_EP_CTRL,
		"endpoint on %s (threading %d): tx route %d min %zu/%zu, "
		"rx route %d min %zu/%zu\n",
		dom->prov_name, (int) threading, x->dir[MRL_TX].route,
		x->dir[MRL_TX].min, x->dir[MRL_TX].min_msg,
		x->dir[MRL_RX].route, x->dir[MRL_RX].min,
		x->dir[MRL_RX].min_msg);
	if (x->dir[MRL_TX].route == MRL_ROUTE_NONE &&
	    x->dir[MRL_RX].route == MRL_ROUTE_NONE)
		return 0;

	ret = mrl_xfer_op_pool_create(dom, threading, &x->pool);
	if (ret)
		goto err_disable;
	x->pool->cache = x->cache;

	if (x->dir[MRL_TX].route == MRL_ROUTE_INTERNAL)
		internal |= FI_TRANSMIT;
	if (x->dir[MRL_RX].route == MRL_ROUTE_INTERNAL)
		internal |= FI_RECV;
	if (internal) {
		ret = mrl_xfer_ep_internal_cq(x, internal);
		if (!ret)
			ret = mrl_xfer_ep_link_cntrs(x);
		if (ret) {
			/* Those directions go without leases. */
			for (int dir = 0; dir < MRL_NDIR; dir++)
				if (x->dir[dir].route == MRL_ROUTE_INTERNAL) {
					x->dir[dir].min = SIZE_MAX;
					x->dir[dir].min_msg = SIZE_MAX;
					x->dir[dir].route = MRL_ROUTE_NONE;
				}
		}
	}
	mrl_xfer_dir_single(x, MRL_TX);
	mrl_xfer_dir_single(x, MRL_RX);
	return 0;

err_disable:
	FI_WARN(mrl_hook_prov, FI_LOG_EP_CTRL,
		"endpoint posts will take no leases: %s\n", fi_strerror(-ret));
	mrl_xfer_ep_disable(x);
	return x->mr_local ? ret : 0;
}

/*
 * fi_control on the endpoint family. Endpoints and tx/rx contexts decide
 * at FI_ENABLE, before the provider enables them (the internal CQ must be
 * bound first), and again for FI_SETOPSFLAG once the provider took the
 * flags; the test-only commands stop here. Other classes never lease.
 */
int
mrl_xfer_ep_control(struct mrl_ep *ep, int command, void *arg)
{
	enum mrl_class cls = mrl_hook_class_of(&ep->ep.fid);
	struct mrl_xep *x = ep->ext;
	int ret;

	if ((cls != MRL_CLASS_EP && cls != MRL_CLASS_TX_CTX &&
	     cls != MRL_CLASS_RX_CTX) ||
	    ep->alias_of)
		return mrl_hook_ep_control(ep, command, arg);
	if (command == MRL_XFER_CTL_TEST_COMPLETING) {
		const struct mrl_xfer_test_completing *hook = arg;

		if (!x || !x->pool || !hook)
			return -FI_EINVAL;
		x->pool->test_arg = hook->arg;
		atomic_store_explicit(&x->pool->test_completing, hook->fn,
				      memory_order_release);
		return 0;
	}
	if (command == MRL_XFER_CTL_TEST_READING) {
		const struct mrl_xfer_test_reading *hook = arg;
		struct mrl_cq_guard *g =
			x && x->pool ? atomic_load(&x->pool->defer) : NULL;

		if (!g || !hook)
			return -FI_EINVAL;
		g->test_arg = hook->arg;
		atomic_store_explicit(&g->test_reading, hook->fn,
				      memory_order_release);
		return 0;
	}
	if (command == FI_ENABLE && x) {
		ret = mrl_xfer_ep_enable(x);
		if (ret)
			return ret;
	}
	ret = mrl_hook_ep_control(ep, command, arg);
	if (!ret && command == FI_SETOPSFLAG && x && arg) {
		if (!x->pool) {
			x->op_flags[*(uint64_t *) arg & FI_TRANSMIT ? MRL_TX :
								      MRL_RX] =
				*(uint64_t *) arg;
			return 0;
		}
		/* New defaults for non-msg calls: decide those again. */
		enum mrl_dir dir =
			*(uint64_t *) arg & FI_TRANSMIT ? MRL_TX : MRL_RX;
		size_t min = x->dir[dir].min_msg;

		x->op_flags[dir] = *(uint64_t *) arg;
		if (x->dir[dir].route != MRL_ROUTE_NONE) {
			mrl_xfer_dir_set(x, dir, min);
			mrl_xfer_dir_single(x, dir);
		}
	}
	return ret;
}

/* ---- fi_cancel ------------------------------------------------------- */

struct mrl_cancel_find {
	void *app_ctx;
	struct mrl_op *op;
};

static bool
mrl_xfer_cancel_match(struct mrl_op *op, void *arg)
{
	struct mrl_cancel_find *f = arg;

	/* A claim is known to the provider by the application's context. */
	if (op->app_ctx != f->app_ctx || (op->flags & MRL_OP_CLAIM))
		return true;
	f->op = op;
	return false;
}

/* The application names the operation by its context; the provider knows
 * leased operations by their op. */
static ssize_t
mrl_xfer_cancel(fid_t fid, void *context)
{
	struct mrl_ep *ep = container_of(fid, struct mrl_ep, ep.fid);
	struct mrl_xep *x = ep->ext;
	struct mrl_cancel_find f = {.app_ctx = context};

	if (x && x->pool && context) {
		if (!x->pool->serial)
			pthread_mutex_lock(&x->pool->lock);
		mrl_xfer_op_pool_foreach_live(x->pool, mrl_xfer_cancel_match,
					      &f);
		if (!x->pool->serial)
			pthread_mutex_unlock(&x->pool->lock);
		if (f.op)
			context = f.op;
	}
	return mrl_hook_ep_ops.cancel(fid, context);
}

/* ---- open, close ----------------------------------------------------- */

static void
mrl_xfer_init_once(void)
{
	mrl_xfer_msg_init();
	mrl_xfer_tagged_init();
	mrl_xfer_rma_init();
	mrl_xfer_atomic_init();
	mrl_xfer_ep_ops = mrl_hook_ep_ops;
	mrl_xfer_ep_ops.cancel = mrl_xfer_cancel;
}

/*
 * The default op flags (non-msg calls use them; a leased one converted to
 * a msg call must pass them on) and rx caps of what ep was opened with: an
 * fi_info's tx/rx attrs (rx caps: info->caps where rx_attr has none), or a
 * tx/rx context's attr.
 */
static void
mrl_xfer_ep_opened_with(struct mrl_xep *x, const struct mrl_ep_open *opening)
{
	const struct fi_info *info = opening->info;
	const struct fi_rx_attr *rx = opening->rx_attr;

	x->op_flags[MRL_TX] = opening->tx_attr ? opening->tx_attr->op_flags : 0;
	x->op_flags[MRL_RX] = rx ? rx->op_flags : 0;
	x->rx_caps = rx && rx->caps ? rx->caps : info ? info->caps : 0;
}

/* The data path's tables, where the inner endpoint has the family (the
 * passthrough's stay where it answers -FI_ENOSYS). */
static void
mrl_xfer_ep_install(struct mrl_ep *ep)
{
	ep->ep.ops = &mrl_xfer_ep_ops;
	if (ep->inner->msg)
		ep->ep.msg = &mrl_xfer_msg_ops;
	if (ep->inner->tagged)
		ep->ep.tagged = &mrl_xfer_tagged_ops;
	if (ep->inner->rma)
		ep->ep.rma = &mrl_xfer_rma_ops;
	if (ep->inner->atomic)
		ep->ep.atomic = &mrl_xfer_atomic_ops;
}

int
mrl_xfer_ep_open(struct mrl_ep *ep)
{
	enum mrl_class cls = mrl_hook_class_of(&ep->ep.fid);
	struct mrl_xep *x;
	int ret;

	if (cls != MRL_CLASS_EP && cls != MRL_CLASS_TX_CTX &&
	    cls != MRL_CLASS_RX_CTX)
		return 0;
	pthread_once(&mrl_xfer_once, mrl_xfer_init_once);
	if (!mrl_xfer_domain_leases(ep->domain)) {
		/* The passthrough's tables and no ext: an inner instance
		 * pays what the passthrough pays, or less. */
		mrl_xfer_rma_plain_install(ep);
		return 0;
	}

	if (ep->alias_of) {
		/* Its posts lease, complete and cancel as its endpoint's:
		 * same provider endpoint, CQs and counters. Its own default
		 * flags never reach this state: its non-msg calls come down
		 * as msg calls (hook_opflags.c). */
		ep->ext = ep->alias_of->ext;
		if (ep->ext)
			mrl_xfer_ep_install(ep);
		return 0;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -FI_ENOMEM;
	ret = pthread_mutex_init(&x->drain_lock, NULL);
	if (ret) {
		free(x);
		return -ret;
	}
	x->ep = ep;
	x->based_after = SIZE_MAX;
	mrl_xfer_ep_opened_with(x, ep->opening);
	atomic_init(&x->rx_guarded, false);
	mrl_xfer_ep_disable(x);
	ep->ext = x;
	mrl_xfer_ep_install(ep);
	return 0;
}

struct mrl_orphan_count {
	size_t n; /* orphaned ops */
	size_t ops; /* the same with their extras: never freed again */
};

static bool
mrl_xfer_ep_orphan(struct mrl_op *op, void *arg)
{
	struct mrl_orphan_count *c = arg;
	unsigned int state =
		atomic_load_explicit(&op->state, memory_order_acquire);

	/* Any live state (a completer may take it first). */
	while (mrl_xfer_op_live(state) &&
	       !atomic_compare_exchange_weak_explicit(
		       &op->state, &state, MRL_OP_ORPHAN, memory_order_acq_rel,
		       memory_order_acquire))
		;
	if (mrl_xfer_op_live(state)) {
		mrl_xfer_op_release_leases(op);
		c->n++;
		for (; op; op = op->next)
			c->ops++;
	}
	return true;
}

/* Checks of a shared pool for a completer still between an op's state
 * change and its push (a few instructions unless it is descheduled). */
#define MRL_SETTLE_TRIES 64

/*
 * Whether the CQs the endpoint was bound to must keep its pool: they may
 * still hold entries naming orphans, or a thread reading one of them may be
 * inside the completion of one of the pool's ops (state changed, op not yet
 * pushed back), which would otherwise push onto a freed pool.
 */
static bool
mrl_xfer_ep_pool_needed(struct mrl_op_pool *pool,
			const struct mrl_orphan_count *orphans)
{
	if (orphans->n)
		return true;
	for (int i = 0; i < MRL_SETTLE_TRIES; i++) {
		/* A multi-recv op waiting for a guarded CQ's readers to
		 * exit goes back to the pool later (mrl_xfer_cq_guard_free). */
		if (atomic_load_explicit(&pool->deferred, memory_order_seq_cst))
			return true;
		if (mrl_xfer_op_pool_settled(pool, orphans->ops))
			return false;
		sched_yield();
	}
	return true;
}

/* After the inner close returned: the provider has let go of every op. */
void
mrl_xfer_ep_close(struct mrl_ep *ep)
{
	struct mrl_xep *x = ep->ext;
	struct mrl_orphan_count orphans = {0};

	ep->ext = NULL;
	if (!x || ep->alias_of)
		return; /* an alias's state is its endpoint's */
	for (size_t i = 0; i < 4 && x->progress[i]; i++)
		mrl_xfer_cntr_remove(x->progress[i], x);

	if (x->pool) {
		mrl_xfer_ep_claims_close(x);
		mrl_xfer_op_pool_foreach_live(x->pool, mrl_xfer_ep_orphan,
					      &orphans);
		if (x->internal_cq) {
			/* Entries written before the close name orphans. */
			mrl_xfer_cntr_drain(x);
			fi_close(&x->internal_cq->fid);
		}
		if (mrl_xfer_ep_pool_needed(x->pool, &orphans)) {
			/* Keep the pool until the application's CQs
			 * close. */
			struct mrl_cq *cqs[2] = {ep->bound.tx_cq,
						 ep->bound.rx_cq};

			for (int i = 0; i < 2; i++) {
				if (!cqs[i] || (i == 1 && cqs[1] == cqs[0]))
					continue;
				if (!mrl_xfer_cq_hold_pool(cqs[i], x->pool))
					continue;
				FI_WARN(mrl_hook_prov, FI_LOG_EP_CTRL,
					"cannot keep orphaned operations "
					"alive past endpoint close\n");
			}
		}
		mrl_xfer_op_pool_unref(x->pool);
	} else if (x->internal_cq) {
		fi_close(&x->internal_cq->fid);
	}
	pthread_mutex_destroy(&x->drain_lock);
	free(x);
}
