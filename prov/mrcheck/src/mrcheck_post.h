/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One post on a checked endpoint (mrcheck_post.c): its local operands
 * checked and their descs translated, its operation tracked until its
 * completion is read, its remote targets compared with their keys once the
 * provider took it. Every wrapper of a family (mrcheck_msg.c, _tagged.c,
 * _rma.c, _atomic.c) reads the same: start the post with its operands, call
 * the passthrough with the translated descs and p.ctx, end the post with
 * the provider's answer. Each call goes down through the same variant it
 * came in as.
 */
#ifndef MRCHECK_POST_H
#define MRCHECK_POST_H

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "mrcheck_int.h"

#define CHK_MAX_OPERANDS 64

/* The local operands of one post, checked and translated together. */
struct chk_post {
	struct chk_ep *ep;
	const char *what;
	size_t n;
	bool overflow;
	const void *addr[CHK_MAX_OPERANDS];
	size_t len[CHK_MAX_OPERANDS];
	void *desc[CHK_MAX_OPERANDS]; /* as given */
	void *inner[CHK_MAX_OPERANDS]; /* translated */
	struct chk_op *op;
	void *ctx; /* the context to post with */
	bool claim; /* FI_CLAIM: posted with the application's context */
	/* An RMA or atomic's targets, compared once the provider took the
	 * post (a post refused with -FI_EAGAIN and retried is one post):
	 * one [taddr, +tlen) under tkey, or rma[rcount] / rioc[rcount]. */
	uint64_t taddr, tkey;
	size_t tlen, rcount;
	const struct fi_rma_iov *rma;
	const struct fi_rma_ioc *rioc;
	enum fi_datatype dt;
};

/* How a post's operation is tracked until its completion is read. */
enum chk_track {
	CHK_UNTRACKED, /* no completion will reach a CQ */
	CHK_TRACKED, /* posted with an op record as its context */
	/* FI_TRIGGER: the context is the application's struct
	 * fi_triggered_context, which the provider reads, so the op is posted
	 * with it and found by it, as a claim is. */
	CHK_TRACKED_BY_APP_CTX,
};

/* Which side a post is on, which of that side's operands need a desc, and
 * how its completion is tracked. */
enum chk_dir {
	CHK_SEND, /* transmit: a desc unless FI_INJECT (the payload copied) */
	CHK_FETCH, /* transmit into local memory or read later: a desc always
		    * (fi_read, fetching and comparing atomics) */
	CHK_RECV, /* receive; FI_MULTI_RECV buffers tracked as such */
	CHK_TRECV, /* tagged receive */
};

static inline struct chk_ep *
chk_ep_of(struct fid_ep *ep)
{
	return mrl_hook_ep_of(ep)->ext;
}

/* A post named what (the libfabric call) on fep, with no operand yet. */
void chk_post_init(struct chk_post *p, struct fid_ep *fep, const char *what);
/* The endpoint's default op flags for dir's side. */
uint64_t chk_ep_flags(const struct chk_ep *ep, enum chk_dir dir);

/* Operands, in the order the call names them; each returns the index of
 * its first operand (a group's translated descs: chk_descs). */
size_t chk_add_buf(struct chk_post *p, const void *addr, size_t len,
		   void *desc);
size_t chk_add_iov(struct chk_post *p, const struct iovec *iov, void **desc,
		   size_t count);
size_t chk_add_ioc(struct chk_post *p, const struct fi_ioc *ioc, void **desc,
		   size_t count, enum fi_datatype dt);
/* The translated descs of a group, or NULL where the caller gave none. */
void **chk_descs(struct chk_post *p, size_t at, void **given);

/* Check and translate p's operands and track its operation, as dir and
 * flags say; 0, or the post must not go ahead (the error to return). */
int chk_start(struct chk_post *p, enum chk_dir dir, uint64_t flags,
	      void *app_ctx);
/* The same with explicit terms (chk_trecvmsg's peeks and claims). */
int chk_begin(struct chk_post *p, bool need_desc, enum chk_track track,
	      bool multi_recv, void *app_ctx);
enum chk_track chk_rx_tracked(struct chk_ep *ep, uint64_t flags);

/* The usual posts: one buffer or an iovec with the endpoint's default
 * flags, or a message's iovec with its own flags, started at once. */
int chk_start_buf(struct chk_post *p, struct fid_ep *fep, const char *what,
		  enum chk_dir dir, const void *buf, size_t len, void *desc,
		  void *app_ctx);
int chk_start_iov(struct chk_post *p, struct fid_ep *fep, const char *what,
		  enum chk_dir dir, const struct iovec *iov, void **desc,
		  size_t count, void *app_ctx);
int chk_start_msg(struct chk_post *p, struct fid_ep *fep, const char *what,
		  enum chk_dir dir, const struct iovec *iov, void **desc,
		  size_t count, uint64_t flags, void *app_ctx);

/* An RMA's or atomic's targets, compared at chk_end: one [addr, +len)
 * under key, rma[count], or rma[count] of dt. */
void chk_target(struct chk_post *p, uint64_t addr, size_t len, uint64_t key);
void chk_targets_rma(struct chk_post *p, const struct fi_rma_iov *rma,
		     size_t count);
void chk_targets_ioc(struct chk_post *p, const struct fi_rma_ioc *rma,
		     size_t count, enum fi_datatype dt);
size_t chk_ioc_bytes(const struct fi_ioc *ioc, size_t count,
		     enum fi_datatype dt);

/* After the provider call (ret its answer): a refused post never
 * happened. */
ssize_t chk_end(struct chk_post *p, ssize_t ret);

/* The families' tables, installed by chk_ep_open over the passthrough's
 * (entries left NULL forward unchanged). */
extern struct fi_ops_msg chk_msg_ops;
extern struct fi_ops_tagged chk_tagged_ops;
extern struct fi_ops_rma chk_rma_ops;
extern struct fi_ops_atomic chk_atomic_ops;

#endif /* MRCHECK_POST_H */
