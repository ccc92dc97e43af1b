/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CQ reads: every entry whose context is one of our ops is mapped back to
 * the application's context and the op completed (its leases released when
 * the operation is over); entries of ops the application asked no
 * completion for are removed, the rest compacted in place (src_addr kept in
 * step). Entries with any other context, NULL included (remote CQ data, RMA
 * events, the application's own un-leased posts), pass untouched at the cost
 * of one range check each.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>

#include "mrl_xfer.h"

/* One table per entry format (they differ in read only). */
static struct fi_ops_cq mrl_xfer_cq_ops[4];
/* CQs of domains that never lease: the passthrough's, with the reads an
 * inner instance makes on every progress call forwarded without checks
 * (read and readfrom are in every fi_ops_cq). */
static struct fi_ops_cq mrl_plain_cq_ops;
static pthread_once_t mrl_xfer_cq_once = PTHREAD_ONCE_INIT;

/* UNSPEC is taken as CONTEXT, what the providers choose for it. */
static inline size_t mrl_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return sizeof(struct fi_cq_entry);
	}
}

/* Where an entry's flags are, NULL for formats without them
 * (FI_CQ_FORMAT_CONTEXT). */
static inline const uint64_t *mrl_cq_entry_flags(const struct fi_cq_entry *e,
						 size_t size)
{
	return size > sizeof(struct fi_cq_entry) ?
		       &((const struct fi_cq_msg_entry *)e)->flags :
		       NULL;
}

/*
 * Entry i named an op whose completion the application must not see: drop
 * it and go on translating from i + 1, compacting the entries (and
 * src_addr) that remain.
 */
static ssize_t __attribute__((noinline))
mrl_cq_drop(struct mrl_cq *cq, char *entries, ssize_t n, ssize_t i,
	    size_t size, fi_addr_t *src_addr)
{
	const struct mrl_domain *domain = cq->domain;
	ssize_t kept = i;

	for (i++; i < n; i++) {
		struct fi_cq_entry *e = (void *)(entries + (size_t)i * size);
		struct mrl_op *op = mrl_op_of_context(e->op_context, domain);

		if (op && !mrl_op_complete_ok(op, mrl_cq_entry_flags(e, size),
					      &e->op_context))
			continue;
		memmove(entries + (size_t)kept * size, e, size);
		if (src_addr)
			src_addr[kept] = src_addr[i];
		kept++;
	}
	return kept ? kept : -FI_EAGAIN;
}

/*
 * The entries [i, n) of a read (those before i are done), as the
 * application must see them: each whose context is one of this domain's
 * ops gets the application's context back and completes the op. Other
 * entries cost a range check each; the buffer changes only when an entry
 * is dropped (mrl_cq_drop).
 */
static ssize_t __attribute__((noinline))
mrl_cq_deliver_from(struct mrl_cq *cq, char *entries, ssize_t n, ssize_t i,
		    fi_addr_t *src_addr, size_t size)
{
	const struct mrl_domain *domain = cq->domain;

	for (; i < n; i++) {
		struct fi_cq_entry *e = (void *)(entries + (size_t)i * size);
		struct mrl_op *op = mrl_op_of_context(e->op_context, domain);

		if (!op)
			continue;
		if (!mrl_op_complete_ok(op, mrl_cq_entry_flags(e, size),
					&e->op_context))
			return mrl_cq_drop(cq, entries, n, i, size, src_addr);
	}
	return n;
}

/*
 * What the application gets for a read that returned n: errors and empty
 * reads as they are, a single entry (the usual answer to a poll) inline,
 * more out of line (mrl_cq_deliver_from). A single entry that was hidden
 * makes the read -FI_EAGAIN.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_cq_deliver(struct mrl_cq *cq, void *buf, ssize_t n, fi_addr_t *src_addr,
	       size_t size)
{
	struct fi_cq_entry *e = buf;
	struct mrl_op *op;

	if (n < 1)
		return n;
	if (n > 1)
		return mrl_cq_deliver_from(cq, buf, n, 0, src_addr, size);
	op = mrl_op_of_context(e->op_context, cq->domain);
	if (!op)
		return 1;
	return mrl_op_complete_ok(op, mrl_cq_entry_flags(e, size),
				  &e->op_context) ?
		       1 :
		       -FI_EAGAIN;
}

static inline size_t mrl_xcq_entry_size(struct mrl_cq *cq)
{
	return ((struct mrl_xcq *)cq->ext)->entry_size;
}

/* fi_cq_read, one per format so the entry size is a constant. */
#define MRL_XCQ_READ(name, entry)                                             \
	static ssize_t name(struct fid_cq *cq_fid, void *buf, size_t count)  \
	{                                                                     \
		struct mrl_cq *cq = mrl_cq_of(cq_fid);                        \
                                                                              \
		return mrl_cq_deliver(cq, buf,                                \
				      fi_cq_read(cq->inner, buf, count),      \
				      NULL, sizeof(entry));                   \
	}
MRL_XCQ_READ(mrl_xcq_read_ctx, struct fi_cq_entry)
MRL_XCQ_READ(mrl_xcq_read_msg, struct fi_cq_msg_entry)
MRL_XCQ_READ(mrl_xcq_read_data, struct fi_cq_data_entry)
MRL_XCQ_READ(mrl_xcq_read_tagged, struct fi_cq_tagged_entry)

static ssize_t mrl_xcq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	struct mrl_cq *cq = mrl_cq_of(cq_fid);

	return mrl_cq_deliver(cq, buf,
			      mrl_cq_ops.readfrom(cq_fid, buf, count, src_addr),
			      src_addr, mrl_xcq_entry_size(cq));
}

/* Errors always reach the application, also for ops it asked no
 * completion for (the provider reports those too). Only the fields every
 * api_version has (op_context, flags) are touched. */
static ssize_t mrl_xcq_readerr(struct fid_cq *cq_fid,
			       struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct mrl_cq *cq = mrl_cq_of(cq_fid);
	ssize_t n = mrl_cq_ops.readerr(cq_fid, buf, flags);
	struct mrl_op *op;

	if (n <= 0)
		return n;
	op = mrl_op_of_context(buf->op_context, cq->domain);
	if (op)
		mrl_op_complete(op, buf->flags, true, &buf->op_context);
	return n;
}

static int64_t mrl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Blocking reads: a batch that was all hidden is not an answer, so wait
 * again for what is left of the timeout. */
static ssize_t mrl_xcq_sreadfrom(struct fid_cq *cq_fid, void *buf,
				 size_t count, fi_addr_t *src_addr,
				 const void *cond, int timeout)
{
	struct mrl_cq *cq = mrl_cq_of(cq_fid);
	int64_t deadline = timeout >= 0 ? mrl_now_ms() + timeout : 0;
	ssize_t n;

	for (;;) {
		n = src_addr ? mrl_cq_ops.sreadfrom(cq_fid, buf, count,
						    src_addr, cond, timeout) :
			       mrl_cq_ops.sread(cq_fid, buf, count, cond,
						timeout);
		n = mrl_cq_deliver(cq, buf, n, src_addr,
				   mrl_xcq_entry_size(cq));
		if (n != -FI_EAGAIN)
			return n;
		if (timeout >= 0) {
			int64_t left = deadline - mrl_now_ms();

			if (left <= 0)
				return -FI_EAGAIN;
			timeout = (int)left;
		}
	}
}

static ssize_t mrl_xcq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			     const void *cond, int timeout)
{
	return mrl_xcq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static ssize_t mrl_plain_cq_read(struct fid_cq *cq_fid, void *buf,
				 size_t count)
{
	struct fid_cq *inner = mrl_cq_of(cq_fid)->inner;

	return inner->ops->read(inner, buf, count);
}

static ssize_t mrl_plain_cq_readfrom(struct fid_cq *cq_fid, void *buf,
				     size_t count, fi_addr_t *src_addr)
{
	struct fid_cq *inner = mrl_cq_of(cq_fid)->inner;

	return inner->ops->readfrom(inner, buf, count, src_addr);
}

static void mrl_xfer_cq_init(void)
{
	static ssize_t (*const reads[4])(struct fid_cq *, void *, size_t) = {
		mrl_xcq_read_ctx, mrl_xcq_read_msg, mrl_xcq_read_data,
		mrl_xcq_read_tagged,
	};

	for (int i = 0; i < 4; i++) {
		mrl_xfer_cq_ops[i] = mrl_cq_ops;
		mrl_xfer_cq_ops[i].read = reads[i];
		mrl_xfer_cq_ops[i].readfrom = mrl_xcq_readfrom;
		mrl_xfer_cq_ops[i].readerr = mrl_xcq_readerr;
		mrl_xfer_cq_ops[i].sread = mrl_xcq_sread;
		mrl_xfer_cq_ops[i].sreadfrom = mrl_xcq_sreadfrom;
	}
	mrl_plain_cq_ops = mrl_cq_ops;
	mrl_plain_cq_ops.read = mrl_plain_cq_read;
	mrl_plain_cq_ops.readfrom = mrl_plain_cq_readfrom;
}

int mrl_xfer_cq_open(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq;
	int ret;

	if (cq->flags & FI_PEER)
		return 0;
	pthread_once(&mrl_xfer_cq_once, mrl_xfer_cq_init);
	if (!mrl_xfer_domain_leases(cq->domain)) {
		if (cq->cq.ops == &mrl_cq_ops && cq->inner->ops &&
		    cq->inner->ops->read && cq->inner->ops->readfrom)
			cq->cq.ops = &mrl_plain_cq_ops;
		return 0;
	}
	/* Before the CQ can be read (mrl_op_in_region's plain loads). */
	mrl_op_region_init();
	xcq = calloc(1, sizeof(*xcq));
	if (!xcq)
		return -FI_ENOMEM;
	ret = pthread_mutex_init(&xcq->lock, NULL);
	if (ret) {
		free(xcq);
		return -ret;
	}
	xcq->entry_size = mrl_cq_entry_size(cq->format);
	cq->ext = xcq;
	switch (xcq->entry_size) {
	case sizeof(struct fi_cq_msg_entry):
		cq->cq.ops = &mrl_xfer_cq_ops[1];
		break;
	case sizeof(struct fi_cq_data_entry):
		cq->cq.ops = &mrl_xfer_cq_ops[2];
		break;
	case sizeof(struct fi_cq_tagged_entry):
		cq->cq.ops = &mrl_xfer_cq_ops[3];
		break;
	default:
		cq->cq.ops = &mrl_xfer_cq_ops[0];
		break;
	}
	return 0;
}

void mrl_xfer_cq_close(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq = cq->ext;

	if (!xcq)
		return;
	cq->ext = NULL;
	for (size_t i = 0; i < xcq->npools; i++)
		mrl_op_pool_unref(xcq->pools[i]);
	free(xcq->pools);
	pthread_mutex_destroy(&xcq->lock);
	free(xcq);
}

int mrl_xcq_hold_pool(struct mrl_cq *cq, struct mrl_op_pool *pool)
{
	struct mrl_xcq *xcq = cq->ext;
	int ret = 0;

	if (!xcq)
		return -FI_EINVAL;
	pthread_mutex_lock(&xcq->lock);
	if (xcq->npools == xcq->cap) {
		size_t cap = xcq->cap ? 2 * xcq->cap : 4;
		struct mrl_op_pool **pools = realloc(xcq->pools,
						     cap * sizeof(*pools));

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
