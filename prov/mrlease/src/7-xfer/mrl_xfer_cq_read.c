/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CQ reads: every entry whose context is one of our ops is mapped back to
 * the application's context and the op completed (its leases released when
 * the operation is over); entries of ops the application asked no
 * completion for are removed, the rest compacted in place (src_addr kept in
 * step). Entries with any other context, NULL included (remote CQ data, RMA
 * events, the application's own un-leased posts), pass untouched at the cost
 * of one range check and one load each; while claiming receives are in
 * flight, such an entry is looked up among them (mrl_xfer_claim.c). The
 * guarded, blocking and read-ahead reads translate through this file too
 * (mrl_xfer_cq_int.h).
 */
#include "config.h"

#include <string.h>

#include <rdma/fi_errno.h>

#include "mrl_bind.h"
#include "mrl_xfer.h"
#include "mrl_xfer_cq_int.h"

/* Where an entry's flags are, NULL for formats without them
 * (FI_CQ_FORMAT_CONTEXT). */
static inline const uint64_t *
mrl_xfer_cq_entry_flags(const struct fi_cq_entry *e, size_t size)
{
	return size > sizeof(struct fi_cq_entry) ?
		       &((const struct fi_cq_msg_entry *) e)->flags :
		       NULL;
}

/* The op entry e completes: one of this domain's by its context's address,
 * or, while claims are in flight, a claim's by the application's context
 * (mrl_xfer_claim.c). */
static inline __attribute__((always_inline)) struct mrl_op *
mrl_xfer_cq_entry_op(struct mrl_cq *cq, struct fi_cq_entry *e, size_t size)
{
	struct mrl_op *op = mrl_xfer_op_of_context(e->op_context, cq->domain);
	struct mrl_claims *claims = &((struct mrl_xcq *) cq->ext)->claims;

	if (__builtin_expect(!op && mrl_xfer_claims_any(claims), 0))
		op = mrl_xfer_claims_take(claims, e->op_context,
					  mrl_xfer_cq_entry_flags(e, size));
	return op;
}

/*
 * Entry i named an op whose completion the application must not see: drop
 * it and go on translating from i + 1, compacting the entries (and
 * src_addr) that remain.
 */
static ssize_t __attribute__((noinline))
mrl_xfer_cq_drop(struct mrl_cq *cq, char *entries, ssize_t n, ssize_t i,
		 size_t size, fi_addr_t *src_addr)
{
	ssize_t kept = i;

	for (i++; i < n; i++) {
		struct fi_cq_entry *e = (void *) (entries + (size_t) i * size);
		struct mrl_op *op = mrl_xfer_cq_entry_op(cq, e, size);

		if (op && !mrl_xfer_op_complete_ok(
				  op, mrl_xfer_cq_entry_flags(e, size),
				  &e->op_context))
			continue;
		memmove(entries + (size_t) kept * size, e, size);
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
 * is dropped (mrl_xfer_cq_drop).
 */
static ssize_t __attribute__((noinline))
mrl_xfer_cq_deliver_from(struct mrl_cq *cq, char *entries, ssize_t n, ssize_t i,
			 fi_addr_t *src_addr, size_t size)
{
	for (; i < n; i++) {
		struct fi_cq_entry *e = (void *) (entries + (size_t) i * size);
		struct mrl_op *op = mrl_xfer_cq_entry_op(cq, e, size);

		if (!op)
			continue;
		if (!mrl_xfer_op_complete_ok(op,
					     mrl_xfer_cq_entry_flags(e, size),
					     &e->op_context))
			return mrl_xfer_cq_drop(cq, entries, n, i, size,
						src_addr);
	}
	return n;
}

/*
 * What the application gets for a read that returned n: errors and empty
 * reads as they are, a single entry (the usual answer to a poll) inline,
 * more out of line (mrl_xfer_cq_deliver_from). A single entry that was hidden
 * makes the read -FI_EAGAIN.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_cq_deliver_in(struct mrl_cq *cq, void *buf, ssize_t n,
		       fi_addr_t *src_addr, size_t size)
{
	struct fi_cq_entry *e = buf;
	struct mrl_op *op;

	/* A call into the domain: what the monitor dropped there closes, and
	 * remote entries idle too long. */
	mrl_cache_domain_settle(((struct mrl_xcq *) cq->ext)->cache);
	if (((struct mrl_xcq *) cq->ext)->remote)
		mrl_bind_remote_settle(((struct mrl_xcq *) cq->ext)->remote);
	if (n < 1)
		return n;
	if (n > 1)
		return mrl_xfer_cq_deliver_from(cq, buf, n, 0, src_addr, size);
	op = mrl_xfer_cq_entry_op(cq, e, size);
	if (!op)
		return 1;
	return mrl_xfer_op_complete_ok(op, mrl_xfer_cq_entry_flags(e, size),
				       &e->op_context) ?
		       1 :
		       -FI_EAGAIN;
}

ssize_t
mrl_xfer_cq_deliver(struct mrl_cq *cq, void *buf, ssize_t n,
		    fi_addr_t *src_addr, size_t size)
{
	return mrl_xfer_cq_deliver_in(cq, buf, n, src_addr, size);
}

/* fi_cq_read, one per format so the entry size is a constant. */
#define MRL_XCQ_READ(name, entry)                                         \
	ssize_t name(struct fid_cq *cq_fid, void *buf, size_t count)      \
	{                                                                 \
		struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);               \
                                                                          \
		return mrl_xfer_cq_deliver_in(                            \
			cq, buf, fi_cq_read(cq->inner, buf, count), NULL, \
			sizeof(entry));                                   \
	}
MRL_XCQ_READ(mrl_xfer_cq_read_ctx, struct fi_cq_entry)
MRL_XCQ_READ(mrl_xfer_cq_read_msg, struct fi_cq_msg_entry)
MRL_XCQ_READ(mrl_xfer_cq_read_data, struct fi_cq_data_entry)
MRL_XCQ_READ(mrl_xfer_cq_read_tagged, struct fi_cq_tagged_entry)

ssize_t
mrl_xfer_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		     fi_addr_t *src_addr)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	return mrl_xfer_cq_deliver_in(
		cq, buf, mrl_hook_cq_ops.readfrom(cq_fid, buf, count, src_addr),
		src_addr, mrl_xfer_cq_entry_size(cq));
}

/* Errors always reach the application, also for ops it asked no
 * completion for (the provider reports those too). Only the fields every
 * api_version has (op_context, flags) are touched. */
ssize_t
mrl_xfer_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		    uint64_t flags)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	struct mrl_claims *claims = &((struct mrl_xcq *) cq->ext)->claims;
	struct mrl_op *op;
	ssize_t n;

	n = mrl_hook_cq_ops.readerr(cq_fid, buf, flags);
	mrl_cache_domain_settle(((struct mrl_xcq *) cq->ext)->cache);
	mrl_bind_remote_settle(((struct mrl_xcq *) cq->ext)->remote);
	if (n > 0) {
		op = mrl_xfer_op_of_context(buf->op_context, cq->domain);
		if (!op && mrl_xfer_claims_any(claims))
			op = mrl_xfer_claims_take(claims, buf->op_context,
						  &buf->flags);
		if (op)
			mrl_xfer_op_complete(op, buf->flags, true,
					     &buf->op_context);
	}
	return n;
}
