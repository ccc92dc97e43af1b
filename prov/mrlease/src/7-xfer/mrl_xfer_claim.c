/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Claiming receives: fi_trecvmsg with FI_CLAIM after a peek with
 * FI_PEEK | FI_CLAIM found the message (MPI_Mrecv after MPI_Mprobe). Their
 * buffers are leased like any receive's, but the provider must see the
 * application's own context: rxm writes the claimed message into the
 * context at the peek and reads it back from the context given at the
 * claim, sockets and tcp match the claim to the peek by the context's
 * address. So the op that holds the leases never goes to the provider: it
 * goes into the claims table of the endpoint's receive CQ, keyed by the
 * application's context, before the post does, and a read of that CQ takes
 * it out when an entry naming that context comes back (a receive's, or an
 * error entry) and completes it as any op (a completion the route asked
 * for on its own, FI_COMPLETION on a selective endpoint, stays hidden).
 * Endpoint close takes its claims out of the table before it orphans its
 * ops.
 *
 * Why the context names the claim: the application posts the claim after
 * it read the peek's completion (that is how it learns the message was
 * found) and gives the context to no other operation until the claim
 * completes (the provider keeps state in it), so the first entry naming it
 * that a read returns after the post is the claim's. A claim is in the
 * table before the provider can report it, so the read that returns its
 * entry sees the table non-empty (the provider's CQ orders the two).
 *
 * Forwarded as they are: peeks, FI_DISCARD, claims whose operands need no
 * lease, with FI_TRIGGER (the triggered context would be the op's), with a
 * NULL context, on an endpoint whose receives report to no application CQ
 * (a peek is read from one), under FI_BUFFERED_RECV (the claim names the
 * provider's fi_recv_context, its completion the application's context),
 * and a second claim with a context already claimed and in flight.
 *
 * Cost: a claim pays the slow path of a receive plus one locked insert;
 * while claims are in flight, every entry of the CQ that names no op pays
 * a locked lookup, otherwise one load per such entry.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_xfer_post.h"

/* A claim op's link in its bucket: its provider scratch space, ours since
 * the provider never sees the op. */
static inline struct mrl_op **
mrl_xfer_claim_next(struct mrl_op *op)
{
	return (struct mrl_op **) (void *) &op->prov_ctx;
}

static inline size_t
mrl_xfer_claims_bucket(const struct mrl_claims *c, const void *ctx)
{
	uint64_t h = (uint64_t) (uintptr_t) ctx * 0x9e3779b97f4a7c15ull;

	return (size_t) (h >> 32) & (c->nbuckets - 1);
}

int
mrl_xfer_claims_init(struct mrl_claims *c)
{
	atomic_init(&c->n, 0);
	c->buckets = NULL;
	c->nbuckets = 0;
	return -pthread_mutex_init(&c->lock, NULL);
}

void
mrl_xfer_claims_fini(struct mrl_claims *c)
{
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
}

/* Room for one more claim (lock held): at most one per bucket. */
static int
mrl_xfer_claims_grow(struct mrl_claims *c)
{
	size_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
	size_t nbuckets = c->nbuckets ? 2 * c->nbuckets : 16;
	struct mrl_op **old = c->buckets, **buckets;
	size_t oldn = c->nbuckets;

	if (n < c->nbuckets)
		return 0;
	buckets = calloc(nbuckets, sizeof(*buckets));
	if (!buckets)
		return -FI_ENOMEM;
	c->buckets = buckets;
	c->nbuckets = nbuckets;
	for (size_t i = 0; i < oldn; i++) {
		struct mrl_op *op = old[i], *next;

		for (; op; op = next) {
			size_t b = mrl_xfer_claims_bucket(c, op->app_ctx);

			next = *mrl_xfer_claim_next(op);
			*mrl_xfer_claim_next(op) = buckets[b];
			buckets[b] = op;
		}
	}
	free(old);
	return 0;
}

/* Where the claim of ctx is linked (lock held), or where its link would
 * go: *result NULL. */
static struct mrl_op **
mrl_xfer_claims_find(struct mrl_claims *c, const void *ctx)
{
	struct mrl_op **pp = &c->buckets[mrl_xfer_claims_bucket(c, ctx)];

	while (*pp && (*pp)->app_ctx != ctx)
		pp = mrl_xfer_claim_next(*pp);
	return pp;
}

/* Put op (its app_ctx set) in the table: 0, -FI_EALREADY when its context
 * is claimed already, or -FI_ENOMEM. */
static int
mrl_xfer_claims_add(struct mrl_claims *c, struct mrl_op *op)
{
	struct mrl_op **pp;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = mrl_xfer_claims_grow(c);
	if (ret)
		goto out;
	pp = mrl_xfer_claims_find(c, op->app_ctx);
	if (*pp) {
		ret = -FI_EALREADY;
		goto out;
	}
	*mrl_xfer_claim_next(op) = NULL;
	*pp = op;
	atomic_fetch_add_explicit(&c->n, 1, memory_order_release);
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* Unlink the claim *pp (lock held) and return it. */
static struct mrl_op *
mrl_xfer_claims_unlink(struct mrl_claims *c, struct mrl_op **pp)
{
	struct mrl_op *op = *pp;

	*pp = *mrl_xfer_claim_next(op);
	atomic_fetch_sub_explicit(&c->n, 1, memory_order_relaxed);
	return op;
}

/* Take the claim of ctx out of the table (only if it is op, when op is
 * given) and return it; NULL if it is not there. */
static struct mrl_op *
mrl_xfer_claims_pull(struct mrl_claims *c, const void *ctx,
		     const struct mrl_op *op)
{
	struct mrl_op *found = NULL, **pp;

	pthread_mutex_lock(&c->lock);
	if (c->nbuckets) {
		pp = mrl_xfer_claims_find(c, ctx);
		if (*pp && (!op || *pp == op))
			found = mrl_xfer_claims_unlink(c, pp);
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

struct mrl_op *
mrl_xfer_claims_take(struct mrl_claims *c, void *ctx, const uint64_t *flagsp)
{
	/* Flags that name another kind of operation: not a claim's entry. */
	if (!ctx || (flagsp && *flagsp && !(*flagsp & FI_RECV)))
		return NULL;
	return mrl_xfer_claims_pull(c, ctx, NULL);
}

void
mrl_xfer_ep_claims_close(struct mrl_xep *x)
{
	struct mrl_cq *cq = x->ep->bound.rx_cq;
	struct mrl_claims *c;

	if (!x->pool || !cq || !cq->ext)
		return;
	c = &((struct mrl_xcq *) cq->ext)->claims;
	if (!mrl_xfer_claims_any(c))
		return;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct mrl_op **pp = &c->buckets[i];

		while (*pp) {
			if ((*pp)->pool == x->pool)
				mrl_xfer_claims_unlink(c, pp);
			else
				pp = mrl_xfer_claim_next(*pp);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

/* The claims table a claim on ep goes into, or NULL: forward it as it is
 * (see the top of this file). */
static struct mrl_claims *
mrl_xfer_claim_table(struct mrl_ep *ep, const struct fi_msg_tagged *msg,
		     uint64_t flags)
{
	struct mrl_xep *x = ep->ext;
	const struct mrl_xdir *d = &x->dir[MRL_RX];
	struct mrl_cq *cq = ep->bound.rx_cq;

	if ((flags & (FI_TRIGGER | FI_MULTI_RECV)) || !msg->context ||
	    !x->pool || (ep->domain->mode & MRL_FI_BUFFERED_RECV) ||
	    (d->route != MRL_ROUTE_ALL && d->route != MRL_ROUTE_SELECTIVE) ||
	    !cq || !cq->ext ||
	    !mrl_xfer_iov_needs_lease(x, msg->msg_iov, msg->desc, msg->iov_count,
				      d->min_msg))
		return NULL;
	return &((struct mrl_xcq *) cq->ext)->claims;
}

ssize_t
mrl_xfer_tagged_claim(struct mrl_ep *ep, const struct fi_msg_tagged *msg,
		      uint64_t flags)
{
	struct mrl_claims *claims = mrl_xfer_claim_table(ep, msg, flags);
	struct mrl_xep *x = ep->ext;
	void *ldesc[MRL_XFER_IOV_MAX];
	struct fi_msg_tagged m;
	uint64_t leased_flags = flags;
	struct mrl_post p;
	ssize_t ret;

	if (!claims) {
		mrl_xfer_post_trigger_fwd(flags, msg->context);
		return fi_trecvmsg(ep->inner, msg, flags);
	}
	mrl_xfer_post_init(&p, x, MRL_RX);
	ret = mrl_xfer_post_iov(&p, msg->msg_iov, msg->desc, msg->iov_count,
				x->dir[MRL_RX].min_msg, ldesc);
	if (ret)
		return mrl_xfer_post_end(&p, ret);
	if (p.op)
		p.op->flags |= MRL_OP_CLAIM;
	mrl_xfer_post_context(&p, msg->context, &leased_flags);
	if (!p.op) /* every lease fell back to desc NULL */
		return fi_trecvmsg(ep->inner, msg, flags);
	ret = mrl_xfer_claims_add(claims, p.op);
	if (ret) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_DATA,
			"claim of context %p%s: %s\n", msg->context,
			x->mr_local ? " refused" : " goes unleased",
			fi_strerror((int) -ret));
		mrl_xfer_op_free_poster(p.op);
		if (x->mr_local)
			return ret == -FI_ENOMEM ? -FI_EAGAIN : ret;
		return fi_trecvmsg(ep->inner, msg, flags);
	}
	m = *msg;
	m.desc = ldesc;
	ret = fi_trecvmsg(ep->inner, &m, leased_flags);
	/* A refused post never happened, unless a read took the op first
	 * (then it completed it). */
	if (ret && !mrl_xfer_claims_pull(claims, msg->context, p.op))
		return ret;
	return mrl_xfer_post_end(&p, ret);
}
