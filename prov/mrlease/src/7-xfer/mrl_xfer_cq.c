/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A leasing CQ: its read tables, its open and close, the pools it holds for
 * closed endpoints, and the switch to guarded reads. What its reads do is
 * in the files mrl_xfer_cq_int.h lists: translation (mrl_xfer_cq_read.c),
 * guarded reads (mrl_xfer_cq_guard.c), blocking reads and read-ahead
 * (mrl_xfer_cq_wait.c).
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_bind.h"
#include "mrl_xfer.h"
#include "mrl_xfer_cq_int.h"

/* One table per entry format (they differ in read only). */
static struct fi_ops_cq mrl_xfer_cq_ops[4];
/* Guarded CQs (any format): every read counted
 * (mrl_xfer_cq_guard.c). */
static struct fi_ops_cq mrl_xfer_guard_cq_ops;
/* CQs of domains that never lease: the passthrough's, with the reads an
 * inner instance makes on every progress call forwarded without checks
 * (read and readfrom are in every fi_ops_cq). */
static struct fi_ops_cq mrl_xfer_plain_cq_ops;
static pthread_once_t mrl_xfer_cq_once = PTHREAD_ONCE_INIT;

static ssize_t
mrl_xfer_plain_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	struct fid_cq *inner = mrl_hook_cq_of(cq_fid)->inner;

	return inner->ops->read(inner, buf, count);
}

static ssize_t
mrl_xfer_plain_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	struct fid_cq *inner = mrl_hook_cq_of(cq_fid)->inner;

	return inner->ops->readfrom(inner, buf, count, src_addr);
}

static void
mrl_xfer_cq_init(void)
{
	static ssize_t (*const reads[4])(struct fid_cq *, void *, size_t) = {
		mrl_xfer_cq_read_ctx,
		mrl_xfer_cq_read_msg,
		mrl_xfer_cq_read_data,
		mrl_xfer_cq_read_tagged,
	};

	for (int i = 0; i < 4; i++) {
		mrl_xfer_cq_ops[i] = mrl_hook_cq_ops;
		mrl_xfer_cq_ops[i].read = reads[i];
		mrl_xfer_cq_ops[i].readfrom = mrl_xfer_cq_readfrom;
		mrl_xfer_cq_ops[i].readerr = mrl_xfer_cq_readerr;
		mrl_xfer_cq_ops[i].sread = mrl_xfer_cq_wait_sread;
		mrl_xfer_cq_ops[i].sreadfrom = mrl_xfer_cq_wait_sreadfrom;
		mrl_xfer_cq_ops[i].signal = mrl_xfer_cq_wait_signal;
	}
	mrl_xfer_guard_cq_ops = mrl_hook_cq_ops;
	mrl_xfer_guard_cq_ops.read = mrl_xfer_cq_guard_read;
	mrl_xfer_guard_cq_ops.readfrom = mrl_xfer_cq_guard_readfrom;
	mrl_xfer_guard_cq_ops.readerr = mrl_xfer_cq_guard_readerr;
	mrl_xfer_guard_cq_ops.sread = mrl_xfer_cq_wait_guard_sread;
	mrl_xfer_guard_cq_ops.sreadfrom = mrl_xfer_cq_wait_guard_sreadfrom;
	mrl_xfer_guard_cq_ops.signal = mrl_xfer_cq_wait_signal;
	mrl_xfer_cq_wait_init();
	mrl_xfer_plain_cq_ops = mrl_hook_cq_ops;
	mrl_xfer_plain_cq_ops.read = mrl_xfer_plain_cq_read;
	mrl_xfer_plain_cq_ops.readfrom = mrl_xfer_plain_cq_readfrom;
}

int
mrl_xfer_cq_open(struct mrl_cq *cq)
{
	struct mrl_xcq_own *own;
	struct mrl_xcq *xcq;
	int ret;

	if (cq->flags & FI_PEER)
		return 0;
	pthread_once(&mrl_xfer_cq_once, mrl_xfer_cq_init);
	if (!mrl_xfer_domain_leases(cq->domain)) {
		if (cq->cq.ops == &mrl_hook_cq_ops && cq->inner->ops &&
		    cq->inner->ops->read && cq->inner->ops->readfrom)
			cq->cq.ops = &mrl_xfer_plain_cq_ops;
		return 0;
	}
	/* Before the CQ can be read (mrl_xfer_op_in_region's plain loads). */
	mrl_xfer_op_region_init();
	own = calloc(1, sizeof(*own));
	if (!own)
		return -FI_ENOMEM;
	xcq = &own->xcq;
	ret = pthread_mutex_init(&xcq->lock, NULL);
	if (ret) {
		free(own);
		return -ret;
	}
	atomic_init(&own->wait_kind, MRL_XCQ_WAIT_UNKNOWN);
	own->wait_fd = -1;
	atomic_init(&own->signal_fd, -1);
	xcq->entry_size = mrl_hook_cq_entry_size(cq->format);
	xcq->cache = mrl_bind_domain_of(cq->domain)->cache_domain;
	xcq->remote = mrl_bind_remote_of(cq->domain);
	atomic_init(&xcq->guarded, false);
	atomic_init(&xcq->signals, 0);
	atomic_init(&xcq->guard.word, 0);
	atomic_init(&xcq->guard.test_reading, NULL);
	ret = mrl_xfer_claims_init(&xcq->claims);
	if (ret) {
		pthread_mutex_destroy(&xcq->lock);
		free(own);
		return ret;
	}
	cq->ext = xcq;
	switch (xcq->entry_size) {
	case sizeof(struct fi_cq_msg_entry):
		xcq->base = &mrl_xfer_cq_ops[1];
		break;
	case sizeof(struct fi_cq_data_entry):
		xcq->base = &mrl_xfer_cq_ops[2];
		break;
	case sizeof(struct fi_cq_tagged_entry):
		xcq->base = &mrl_xfer_cq_ops[3];
		break;
	default:
		xcq->base = &mrl_xfer_cq_ops[0];
		break;
	}
	cq->cq.ops = (struct fi_ops_cq *) xcq->base;
	return 0;
}

void
mrl_xfer_cq_close(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq = cq->ext;
	int efd;

	if (!xcq)
		return;
	cq->ext = NULL;
	/* No reader is inside at close, so the list is empty (it is emptied
	 * whenever the count reaches 0); give back anything left before the
	 * pools go. */
	mrl_xfer_cq_guard_free((uint32_t) atomic_exchange_explicit(
		&xcq->guard.word, 0, memory_order_acq_rel));
	for (size_t i = 0; i < xcq->npools; i++)
		mrl_xfer_op_pool_unref(xcq->pools[i]);
	free(xcq->pools);
	efd = atomic_load_explicit(&mrl_xfer_cq_own_of(xcq)->signal_fd,
				   memory_order_relaxed);
	if (efd >= 0)
		close(efd);
	mrl_xfer_claims_fini(&xcq->claims);
	pthread_mutex_destroy(&xcq->lock);
	free(mrl_xfer_cq_own_of(xcq));
}

int
mrl_xfer_cq_hold_pool(struct mrl_cq *cq, struct mrl_op_pool *pool)
{
	struct mrl_xcq *xcq = cq->ext;
	int ret = 0;

	if (!xcq)
		return -FI_EINVAL;
	pthread_mutex_lock(&xcq->lock);
	if (xcq->npools == xcq->cap) {
		size_t cap = xcq->cap ? 2 * xcq->cap : 4;
		struct mrl_op_pool **pools =
			realloc(xcq->pools, cap * sizeof(*pools));

		if (!pools) {
			ret = -FI_ENOMEM;
			goto out;
		}
		xcq->pools = pools;
		xcq->cap = cap;
	}
	atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
	xcq->pools[xcq->npools++] = pool;
out:
	pthread_mutex_unlock(&xcq->lock);
	return ret;
}

struct mrl_cq_guard *
mrl_xfer_cq_guard(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq = cq->ext;

	if (!xcq)
		return NULL;
	pthread_mutex_lock(&xcq->lock);
	if (!atomic_load_explicit(&xcq->guarded, memory_order_relaxed)) {
		/* Reads that load the table from now on are counted; one
		 * inside its call already is not (the residual window).
		 * With entries read ahead, the stash table stays until they
		 * are taken, then puts this one back. */
		xcq->base = &mrl_xfer_guard_cq_ops;
		if (!xcq->nstash)
			mrl_xfer_cq_set_ops(cq, &mrl_xfer_guard_cq_ops);
		atomic_store_explicit(&xcq->guarded, true,
				      memory_order_release);
	}
	pthread_mutex_unlock(&xcq->lock);
	return &xcq->guard;
}

/*
 * Before x's first leased FI_MULTI_RECV buffer goes to the provider: on a
 * shared pool whose receives complete on an application CQ, guard that CQ
 * (its reads counted, multi-recv ops' returns to the pool deferred while
 * other readers may hold their entries: mrl_xfer_cq_guard.c) and point the
 * pool at its guard. Serial pools and the internal CQ (read under
 * drain_lock) have one reader at a time and need nothing.
 */
int
mrl_xfer_cq_guard_rx(struct mrl_xep *x)
{
	struct mrl_op_pool *pool = x->pool;
	struct mrl_cq_guard *guard;

	if (!pool)
		return -FI_EINVAL;
	if (pool->serial || x->dir[MRL_RX].route == MRL_ROUTE_INTERNAL) {
		atomic_store_explicit(&x->rx_guarded, true,
				      memory_order_release);
		return 0;
	}
	guard = x->ep->bound.rx_cq ? mrl_xfer_cq_guard(x->ep->bound.rx_cq) :
				     NULL;
	if (!guard) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_DATA,
			"FI_MULTI_RECV buffers of this endpoint go unleased: "
			"its receive CQ cannot be guarded\n");
		return -FI_EINVAL;
	}
	atomic_store_explicit(&pool->defer, guard, memory_order_release);
	atomic_store_explicit(&x->rx_guarded, true, memory_order_release);
	return 0;
}
