/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters-only endpoints. A direction bound to counters and no CQ reports
 * nothing per operation, so leased operations there request a completion
 * (FI_COMPLETION, FI_SELECTIVE_COMPLETION binding) on an internal CQ bound
 * to the inner endpoint. That CQ is drained, and the leases released, when
 * the application reads or waits on one of the endpoint's counters (which is
 * how such an application learns its operations ended), and at close.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_bind.h"
#include "mrl_xfer.h"
#include "mrl_xfer_state.h"

static struct fi_ops_cntr mrl_xfer_cntr_ops;
static pthread_once_t mrl_xfer_cntr_once = PTHREAD_ONCE_INIT;

#define MRL_DRAIN_BATCH 16

/* Complete every op the internal CQ reports; nothing reaches the app (the
 * counters, including the error counter, are the provider's to update). */
void
mrl_xfer_cntr_drain(struct mrl_xep *x)
{
	struct fi_cq_msg_entry entries[MRL_DRAIN_BATCH];
	/* Room for a newer libfabric's larger error entry. */
	union {
		struct fi_cq_err_entry err;
		char room[256];
	} e;
	struct mrl_op *op;
	void *app_ctx;
	ssize_t n;

	pthread_mutex_lock(&x->drain_lock);
	for (;;) {
		n = fi_cq_read(x->internal_cq, entries, MRL_DRAIN_BATCH);
		if (n == -FI_EAVAIL) {
			memset(&e, 0, sizeof(e));
			n = fi_cq_readerr(x->internal_cq, &e.err, 0);
			if (n <= 0)
				break;
			op = mrl_xfer_op_of_context(e.err.op_context,
						    x->ep->domain);
			if (op)
				mrl_xfer_op_complete(op, e.err.flags, true,
						     &app_ctx);
			continue;
		}
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			op = mrl_xfer_op_of_context(entries[i].op_context,
						    x->ep->domain);
			if (op)
				mrl_xfer_op_complete(op, entries[i].flags,
						     false, &app_ctx);
		}
	}
	pthread_mutex_unlock(&x->drain_lock);
}

static struct mrl_xcntr *
mrl_xfer_cntr_of(struct fid_cntr *cntr_fid)
{
	return mrl_hook_cntr_of(cntr_fid)->ext;
}

/* A counter read or wait: a call into the domain, so what the monitor
 * dropped there closes (mrl_cache_domain_settle), then the internal CQs of
 * its counters-only endpoints are drained. */
static void
mrl_xfer_cntr_progress(struct mrl_xcntr *c)
{
	if (!c)
		return;
	mrl_cache_domain_settle(c->cache);
	mrl_bind_remote_settle(c->remote);
	if (!atomic_load_explicit(&c->neps, memory_order_relaxed))
		return;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->neps; i++)
		mrl_xfer_cntr_drain(c->eps[i]);
	pthread_mutex_unlock(&c->lock);
}

static uint64_t
mrl_xfer_cntr_read(struct fid_cntr *cntr_fid)
{
	uint64_t value = mrl_hook_cntr_ops.read(cntr_fid);

	mrl_xfer_cntr_progress(mrl_xfer_cntr_of(cntr_fid));
	return value;
}

static uint64_t
mrl_xfer_cntr_readerr(struct fid_cntr *cntr_fid)
{
	uint64_t value = mrl_hook_cntr_ops.readerr(cntr_fid);

	mrl_xfer_cntr_progress(mrl_xfer_cntr_of(cntr_fid));
	return value;
}

static int
mrl_xfer_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold, int timeout)
{
	int ret = mrl_hook_cntr_ops.wait(cntr_fid, threshold, timeout);

	mrl_xfer_cntr_progress(mrl_xfer_cntr_of(cntr_fid));
	return ret;
}

static void
mrl_xfer_cntr_init(void)
{
	mrl_xfer_cntr_ops = mrl_hook_cntr_ops;
	mrl_xfer_cntr_ops.read = mrl_xfer_cntr_read;
	mrl_xfer_cntr_ops.readerr = mrl_xfer_cntr_readerr;
	mrl_xfer_cntr_ops.wait = mrl_xfer_cntr_wait;
}

int
mrl_xfer_cntr_open(struct mrl_cntr *cntr)
{
	struct mrl_xcntr *c;
	int ret;

	if (!mrl_xfer_domain_leases(cntr->domain))
		return 0; /* no endpoint of its domain leases */
	pthread_once(&mrl_xfer_cntr_once, mrl_xfer_cntr_init);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	ret = pthread_mutex_init(&c->lock, NULL);
	if (ret) {
		free(c);
		return -ret;
	}
	atomic_init(&c->neps, 0);
	c->cache = mrl_bind_domain_of(cntr->domain)->cache_domain;
	c->remote = mrl_bind_remote_of(cntr->domain);
	cntr->ext = c;
	cntr->cntr.ops = &mrl_xfer_cntr_ops;
	return 0;
}

void
mrl_xfer_cntr_close(struct mrl_cntr *cntr)
{
	struct mrl_xcntr *c = cntr->ext;

	if (!c)
		return;
	cntr->ext = NULL;
	free(c->eps);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int
mrl_xfer_cntr_add(struct mrl_xcntr *c, struct mrl_xep *x)
{
	int ret = 0;

	if (!c)
		return -FI_EINVAL;
	pthread_mutex_lock(&c->lock);
	if (c->neps == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 4;
		struct mrl_xep **eps = realloc(c->eps, cap * sizeof(*eps));

		if (!eps) {
			ret = -FI_ENOMEM;
			goto out;
		}
		c->eps = eps;
		c->cap = cap;
	}
	c->eps[c->neps] = x;
	atomic_store_explicit(&c->neps, c->neps + 1, memory_order_relaxed);
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void
mrl_xfer_cntr_remove(struct mrl_xcntr *c, struct mrl_xep *x)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->neps; i++) {
		if (c->eps[i] != x)
			continue;
		c->eps[i] = c->eps[c->neps - 1];
		atomic_store_explicit(&c->neps, c->neps - 1,
				      memory_order_relaxed);
		break;
	}
	pthread_mutex_unlock(&c->lock);
}
