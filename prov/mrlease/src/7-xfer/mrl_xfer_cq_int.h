/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the CQ's units share (private to 7-xfer/). Each unit calls only the
 * units after it in this list, never one before it:
 *  - mrl_xfer_cq.c: a leasing CQ's tables, its open and close, the pools it
 *    holds, the switch to guarded reads;
 *  - mrl_xfer_cq_wait.c: blocking reads (waiting again after a hidden
 *    batch), fi_cq_signal, and the read-ahead behind poll sets and
 *    fi_trywait;
 *  - mrl_xfer_cq_guard.c: guarded reads (FI_MULTI_RECV with two readers);
 *  - mrl_xfer_cq_read.c: the translation of entries back to the
 *    application's contexts, and the unguarded reads.
 */
#ifndef MRL_XFER_CQ_INT_H
#define MRL_XFER_CQ_INT_H

#include <rdma/fi_eq.h>

#include "mrl_xfer_state.h"

/* How a blocking read waits again after a hidden batch (see
 * mrl_xfer_cq_wait_again). */
enum mrl_xcq_wait_kind {
	MRL_XCQ_WAIT_UNKNOWN, /* not looked up yet */
	MRL_XCQ_WAIT_FD, /* poll on the provider's fd and signal_fd */
	MRL_XCQ_WAIT_SREAD, /* the provider's sread again */
};

/* A leasing CQ's state: struct mrl_xcq (what cq->ext points at, so first),
 * and what only the CQ's files use. */
struct mrl_xcq_own {
	struct mrl_xcq xcq;
	/* Looked up once, under xcq.lock, by the first blocking read that
	 * waits again (mrl_xcq_wait_kind); wait_fd and signal_fd are set
	 * before it says MRL_XCQ_WAIT_FD. */
	_Atomic int wait_kind;
	int wait_fd; /* the provider's wait object (FI_GETWAIT) */
	/* An eventfd fi_cq_signal writes once it exists (-1 before). */
	_Atomic int signal_fd;
};

static inline struct mrl_xcq_own *
mrl_xfer_cq_own_of(struct mrl_xcq *xcq)
{
	return container_of(xcq, struct mrl_xcq_own, xcq);
}

static inline size_t
mrl_xfer_cq_entry_size(struct mrl_cq *cq)
{
	return ((struct mrl_xcq *) cq->ext)->entry_size;
}

static inline struct mrl_cq_guard *
mrl_xfer_cq_guard_of(struct mrl_cq *cq)
{
	return &((struct mrl_xcq *) cq->ext)->guard;
}

/* Switch the table cq's reads load (under xcq->lock). */
static inline void
mrl_xfer_cq_set_ops(struct mrl_cq *cq, const struct fi_ops_cq *ops)
{
	__atomic_store_n(&cq->cq.ops, (struct fi_ops_cq *) ops,
			 __ATOMIC_RELEASE);
}

/* ---- mrl_xfer_cq_read.c ------------------------------------------------ */

/* What the application gets for an inner read that returned n (see
 * mrl_xfer_cq_read.c): -FI_EAGAIN when every entry was hidden. */
ssize_t mrl_xfer_cq_deliver(struct mrl_cq *cq, void *buf, ssize_t n,
			    fi_addr_t *src_addr, size_t size);
/* The unguarded table's reads: fi_cq_read per entry format, readfrom and
 * readerr. */
ssize_t mrl_xfer_cq_read_ctx(struct fid_cq *cq_fid, void *buf, size_t count);
ssize_t mrl_xfer_cq_read_msg(struct fid_cq *cq_fid, void *buf, size_t count);
ssize_t mrl_xfer_cq_read_data(struct fid_cq *cq_fid, void *buf, size_t count);
ssize_t mrl_xfer_cq_read_tagged(struct fid_cq *cq_fid, void *buf, size_t count);
ssize_t mrl_xfer_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			     fi_addr_t *src_addr);
ssize_t mrl_xfer_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			    uint64_t flags);

/* ---- mrl_xfer_cq_guard.c ----------------------------------------------- */

/* A reader enters before its inner read and exits after translating. */
void mrl_xfer_cq_guard_enter(struct mrl_cq_guard *g);
void mrl_xfer_cq_guard_exit(struct mrl_cq_guard *g);
/* TEST-ONLY hook of guarded reads (MRL_XFER_CTL_TEST_READING). */
void mrl_xfer_cq_guard_test(struct mrl_cq_guard *g, const void *buf, ssize_t n);
/* Push the deferred ops from code on back to their pools. */
void mrl_xfer_cq_guard_free(uint32_t code);
/* The guarded table's read, readfrom and readerr. */
ssize_t mrl_xfer_cq_guard_read(struct fid_cq *cq_fid, void *buf, size_t count);
ssize_t mrl_xfer_cq_guard_readfrom(struct fid_cq *cq_fid, void *buf,
				   size_t count, fi_addr_t *src_addr);
ssize_t mrl_xfer_cq_guard_readerr(struct fid_cq *cq_fid,
				  struct fi_cq_err_entry *buf, uint64_t flags);

/* ---- mrl_xfer_cq_wait.c ------------------------------------------------ */

/* The stash table (read-ahead), filled once. */
void mrl_xfer_cq_wait_init(void);
/* sread and sreadfrom of the unguarded and the guarded tables, and
 * fi_cq_signal of every table. */
ssize_t mrl_xfer_cq_wait_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			       const void *cond, int timeout);
ssize_t mrl_xfer_cq_wait_sreadfrom(struct fid_cq *cq_fid, void *buf,
				   size_t count, fi_addr_t *src_addr,
				   const void *cond, int timeout);
ssize_t mrl_xfer_cq_wait_guard_sread(struct fid_cq *cq_fid, void *buf,
				     size_t count, const void *cond,
				     int timeout);
ssize_t mrl_xfer_cq_wait_guard_sreadfrom(struct fid_cq *cq_fid, void *buf,
					 size_t count, fi_addr_t *src_addr,
					 const void *cond, int timeout);
int mrl_xfer_cq_wait_signal(struct fid_cq *cq_fid);

#endif /* MRL_XFER_CQ_INT_H */
