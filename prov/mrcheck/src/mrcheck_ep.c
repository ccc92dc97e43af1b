/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's data path: every post on an endpoint of a strict domain checks
 * its local operands, translates their descs to the provider's, and (when
 * the operation reports a completion to a CQ) posts an op record as the
 * context so its completion can be seen. Each call goes down through the
 * same variant it came in as.
 */
#include "config.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>

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

static struct chk_ep *
chk_ep_of(struct fid_ep *ep)
{
	return mrl_hook_ep_of(ep)->ext;
}

static int
chk_ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) a, y = (uintptr_t) b;

	return x < y ? -1 : x > y;
}

/* Claim and triggered records are ordered by the application's context. */
static int
chk_claim_cmp(const void *a, const void *b)
{
	return chk_ptr_cmp(((const struct chk_op *) a)->app_ctx,
			   ((const struct chk_op *) b)->app_ctx);
}

/* Put a claim record in the set (dom->lock held). A record of a closed
 * endpoint with the same context is retired first; false when a live claim
 * holds it (the application reused the context: not tracked). */
static bool
chk_claim_insert(struct chk_domain *dom, struct chk_op *op)
{
	void **node = tsearch(op, &dom->claims, chk_claim_cmp);
	struct chk_op *old = node ? *node : NULL;

	if (!old || old == op)
		return old != NULL;
	if (old->ep)
		return false;
	chk_op_retire(dom, old);
	return tsearch(op, &dom->claims, chk_claim_cmp) != NULL;
}

/* ---- operands ------------------------------------------------------ */

static size_t
chk_add_buf(struct chk_post *p, const void *addr, size_t len, void *desc)
{
	size_t at = p->n;

	if (p->n == CHK_MAX_OPERANDS) {
		p->overflow = true;
		return at;
	}
	p->addr[p->n] = addr;
	p->len[p->n] = len;
	p->desc[p->n] = desc;
	p->n++;
	return at;
}

static size_t
chk_add_iov(struct chk_post *p, const struct iovec *iov, void **desc,
	    size_t count)
{
	size_t at = p->n;

	for (size_t i = 0; i < count; i++)
		chk_add_buf(p, iov[i].iov_base, iov[i].iov_len,
			    desc ? desc[i] : NULL);
	return at;
}

static size_t
chk_add_ioc(struct chk_post *p, const struct fi_ioc *ioc, void **desc,
	    size_t count, enum fi_datatype dt)
{
	size_t at = p->n;

	for (size_t i = 0; i < count; i++)
		chk_add_buf(p, ioc[i].addr,
			    ioc[i].count * mrl_hook_datatype_size(dt),
			    desc ? desc[i] : NULL);
	return at;
}

/* The translated descs of a group, or NULL where the caller gave none. */
static void **
chk_descs(struct chk_post *p, size_t at, void **given)
{
	return given ? &p->inner[at] : NULL;
}

static bool
chk_mr_covers(const struct chk_mr *mr, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t) addr;

	for (size_t i = 0; i < mr->iov_count; i++) {
		uintptr_t b = (uintptr_t) mr->iov[i].iov_base;

		if (a >= b && a - b <= mr->iov[i].iov_len &&
		    len <= mr->iov[i].iov_len - (a - b))
			return true;
	}
	return false;
}

/* dom->lock held. Returns the record behind desc or NULL after recording
 * why it is not acceptable. */
static struct chk_mr *
chk_resolve(struct chk_post *p, size_t i, bool need_desc, bool *bad)
{
	struct chk_domain *dom = p->ep->dom;
	struct chk_mr *mr;
	void **node;

	if (!p->desc[i]) {
		if (need_desc && dom->mr_local && p->len[i]) {
			chk_violation(
				dom, MRCHECK_NO_DESC,
				"%s: operand %zu [%p, +%zu) posted with a "
				"NULL desc",
				p->what, i, p->addr[i], p->len[i]);
			*bad = true;
		}
		return NULL;
	}
	node = tfind(p->desc[i], &dom->mrs, chk_ptr_cmp);
	if (!node) {
		chk_violation(
			dom, MRCHECK_UNKNOWN_DESC,
			"%s: operand %zu [%p, +%zu) desc %p was not handed "
			"out by this domain",
			p->what, i, p->addr[i], p->len[i], p->desc[i]);
		*bad = true;
		return NULL;
	}
	mr = *node;
	if (mr->closed) {
		chk_violation(dom, MRCHECK_CLOSED_DESC,
			      "%s: operand %zu [%p, +%zu) desc %p belongs to a "
			      "closed MR",
			      p->what, i, p->addr[i], p->len[i], p->desc[i]);
		*bad = true;
		return NULL;
	}
	if (p->len[i] && !chk_mr_covers(mr, p->addr[i], p->len[i])) {
		chk_violation(
			dom, MRCHECK_NOT_COVERED,
			"%s: operand %zu [%p, +%zu) outside its MR [%p, +%zu)",
			p->what, i, p->addr[i], p->len[i],
			mr->iov_count ? mr->iov[0].iov_base : NULL,
			mr->iov_count ? mr->iov[0].iov_len : 0);
		*bad = true;
		return NULL;
	}
	p->inner[i] = mr->inner_desc;
	return mr;
}

/* FI_MRCHECK_FRAMES: the frames now under each operand that has a desc, read
 * before dom->lock is taken; operand i's start at now + at[i]. NULL when
 * frames are off or no operand needs them. */
static uint64_t *
chk_frames_now(const struct chk_post *p, size_t *at)
{
	uint64_t *now;
	size_t total = 0;

	if (!chk_frames_on())
		return NULL;
	for (size_t i = 0; i < p->n; i++) {
		at[i] = total;
		if (p->desc[i])
			total += chk_pages_of(p->addr[i], p->len[i]);
	}
	if (!total || !(now = malloc(total * sizeof(*now))))
		return NULL;
	for (size_t i = 0; i < p->n; i++)
		if (p->desc[i] && p->len[i])
			chk_frames_read(p->addr[i], p->len[i], now + at[i]);
	return now;
}

/*
 * Check and translate p's operands; when tracked, create the op record that
 * is posted as context. need_desc is false for FI_INJECT (the provider
 * copies the payload) and hold false where the buffers are not used after
 * the call returns.
 */
static int
chk_begin(struct chk_post *p, bool need_desc, enum chk_track track,
	  bool multi_recv, void *app_ctx)
{
	bool tracked = track != CHK_UNTRACKED;
	bool triggered = track == CHK_TRACKED_BY_APP_CTX;
	struct chk_domain *dom = p->ep->dom;
	struct chk_mr *used[CHK_MAX_OPERANDS];
	size_t nused = 0, now_at[CHK_MAX_OPERANDS];
	uint64_t *now = NULL;
	bool bad = false;
	struct chk_op *op = NULL;

	p->ctx = app_ctx;
	p->op = NULL;
	p->claim |= triggered;
	if (p->overflow) {
		FI_WARN(&mrcheck_prov, FI_LOG_EP_DATA,
			"%s: more than %d local operands\n", p->what,
			CHK_MAX_OPERANDS);
		return -FI_EINVAL;
	}
	if (tracked) {
		op = calloc(1, sizeof(*op) + p->n * sizeof(op->mr[0]));
		if (!op)
			return -FI_ENOMEM;
	}
	if (need_desc)
		now = chk_frames_now(p, now_at);

	pthread_mutex_lock(&dom->lock);
	for (size_t i = 0; i < p->n; i++) {
		struct chk_mr *mr;

		p->inner[i] = NULL;
		mr = chk_resolve(p, i, need_desc, &bad);
		if (mr && need_desc)
			used[nused++] = mr;
		/* Stale pages are reported; the post goes ahead. */
		if (mr && now && p->len[i])
			chk_frames_compare(dom, mr, p->what, i, p->addr[i],
					   p->len[i], now + now_at[i]);
	}
	free(now);
	/* A provider out of queue space: the post never happened. */
	if (!bad && chk_fault_post(dom)) {
		pthread_mutex_unlock(&dom->lock);
		chk_count(dom, posts_checked, 1);
		free(op);
		return -FI_EAGAIN;
	}
	if (!bad && op) {
		op->app_ctx = app_ctx;
		op->claim = p->claim;
		op->triggered = triggered;
		if (p->claim ? !chk_claim_insert(dom, op) :
			       !tsearch(op, &dom->ops, chk_ptr_cmp)) {
			pthread_mutex_unlock(&dom->lock);
			free(op);
			return p->claim ? 0 : -FI_ENOMEM;
		}
		op->ep = p->ep;
		op->what = p->what;
		op->multi_recv = multi_recv;
		op->nmr = nused;
		for (size_t i = 0; i < nused; i++) {
			op->mr[i] = used[i];
			used[i]->in_flight++;
		}
		op->next = p->ep->ops;
		if (op->next)
			op->next->prev = op;
		p->ep->ops = op;
		p->op = op;
		if (!p->claim)
			p->ctx = op;
	}
	pthread_mutex_unlock(&dom->lock);
	chk_count(dom, posts_checked, 1);
	if (bad) {
		free(op);
		return -FI_EINVAL;
	}
	if (op)
		chk_count(dom, ops_tracked, 1);
	return 0;
}

void
chk_op_retire(struct chk_domain *dom, struct chk_op *op)
{
	for (size_t i = 0; i < op->nmr; i++)
		op->mr[i]->in_flight--;
	op->nmr = 0;
	if (op->ep) {
		if (op->prev)
			op->prev->next = op->next;
		else
			op->ep->ops = op->next;
		if (op->next)
			op->next->prev = op->prev;
		op->ep = NULL;
		chk_count(dom, ops_completed, 1);
	}
	if (op->claim)
		tdelete(op, &dom->claims, chk_claim_cmp);
	else
		tdelete(op, &dom->ops, chk_ptr_cmp);
	free(op);
}

struct chk_op *
chk_op_find(struct chk_domain *dom, void *ctx)
{
	void **node;

	if (!ctx)
		return NULL;
	node = tfind(ctx, &dom->ops, chk_ptr_cmp);
	return node ? *node : NULL;
}

struct chk_op *
chk_claim_find(struct chk_domain *dom, void *ctx, uint64_t flags,
	       bool has_flags)
{
	struct chk_op key = {.app_ctx = ctx}, *op;
	void **node;

	if (!ctx || !dom->claims)
		return NULL;
	node = tfind(&key, &dom->claims, chk_claim_cmp);
	op = node ? *node : NULL;
	/* A claim's entry is a receive's. */
	if (op && !op->triggered && has_flags && flags && !(flags & FI_RECV))
		return NULL;
	return op;
}

/* ---- remote targets (FI_MRCHECK_FRAMES=1, mrcheck_keys.c) ------------ */

/* An RMA's target [addr, +len) under key. */
static void
chk_target(struct chk_post *p, uint64_t addr, size_t len, uint64_t key)
{
	p->taddr = addr;
	p->tlen = len;
	p->tkey = key;
}

static void
chk_targets_rma(struct chk_post *p, const struct fi_rma_iov *rma, size_t count)
{
	p->rma = rma;
	p->rcount = count;
}

static void
chk_targets_ioc(struct chk_post *p, const struct fi_rma_ioc *rma, size_t count,
		enum fi_datatype dt)
{
	p->rioc = rma;
	p->rcount = count;
	p->dt = dt;
}

/* Compare p's targets with their keys' registrations, if of this process. */
static void
chk_targets_check(struct chk_post *p)
{
	struct chk_domain *dom = p->ep->dom;

	if (p->tlen)
		chk_keys_check(dom, p->what, 0, p->taddr, p->tlen, p->tkey);
	for (size_t i = 0; p->rma && i < p->rcount; i++)
		chk_keys_check(dom, p->what, i, p->rma[i].addr, p->rma[i].len,
			       p->rma[i].key);
	for (size_t i = 0; p->rioc && i < p->rcount; i++)
		chk_keys_check(dom, p->what, i, p->rioc[i].addr,
			       p->rioc[i].count * mrl_hook_datatype_size(p->dt),
			       p->rioc[i].key);
}

static size_t
chk_ioc_bytes(const struct fi_ioc *ioc, size_t count, enum fi_datatype dt)
{
	size_t n = 0;

	for (size_t i = 0; i < count; i++)
		n += ioc[i].count;
	return n * mrl_hook_datatype_size(dt);
}

/* After the provider call: a refused post never happened. */
static ssize_t
chk_end(struct chk_post *p, ssize_t ret)
{
	struct chk_domain *dom = p->ep->dom;

	if (!ret)
		chk_targets_check(p);
	if (!ret || !p->op)
		return ret;
	pthread_mutex_lock(&dom->lock);
	chk_op_retire(dom, p->op);
	pthread_mutex_unlock(&dom->lock);
	/* Not an operation: take it back out of both counts. */
	chk_add(&chk_global.ops_tracked, &dom->counts.ops_tracked,
		(uint64_t) -1);
	chk_add(&chk_global.ops_completed, &dom->counts.ops_completed,
		(uint64_t) -1);
	return ret;
}

/* Whether a completion will reach the CQ bound with cq_flags (so the op
 * can be tracked), and how. */
static enum chk_track
chk_track_of(const struct mrl_cq *cq, uint64_t cq_flags, uint64_t flags)
{
	if (!cq ||
	    ((cq_flags & FI_SELECTIVE_COMPLETION) && !(flags & FI_COMPLETION)))
		return CHK_UNTRACKED;
	return (flags & FI_TRIGGER) ? CHK_TRACKED_BY_APP_CTX : CHK_TRACKED;
}

static enum chk_track
chk_tx_tracked(struct chk_ep *ep, uint64_t flags)
{
	const struct mrl_ep_bindings *b = &ep->hook->bound;

	return chk_track_of(b->tx_cq, b->tx_cq_flags, flags);
}

static enum chk_track
chk_rx_tracked(struct chk_ep *ep, uint64_t flags)
{
	const struct mrl_ep_bindings *b = &ep->hook->bound;

	return chk_track_of(b->rx_cq, b->rx_cq_flags, flags);
}

#define CHK_POST(fep, name)     \
	struct chk_post p_;     \
	p_.ep = chk_ep_of(fep); \
	p_.what = name;         \
	p_.n = 0;               \
	p_.overflow = false;    \
	p_.claim = false;       \
	p_.tlen = 0;            \
	p_.rma = NULL;          \
	p_.rioc = NULL;         \
	p_.op = NULL

/* ---- msg ----------------------------------------------------------- */

static ssize_t
chk_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
	 fi_addr_t src_addr, void *context)
{
	CHK_POST(ep, "fi_recv");
	uint64_t f = p_.ep->rx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, true, chk_rx_tracked(p_.ep, f), f & FI_MULTI_RECV,
			context);
	if (ret)
		return ret;
	return chk_end(&p_, mrl_hook_ep_msg_ops.recv(ep, buf, len, p_.inner[0],
						src_addr, p_.ctx));
}

static ssize_t
chk_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
	  fi_addr_t src_addr, void *context)
{
	CHK_POST(ep, "fi_recvv");
	uint64_t f = p_.ep->rx_op_flags;
	int ret;

	chk_add_iov(&p_, iov, desc, count);
	ret = chk_begin(&p_, true, chk_rx_tracked(p_.ep, f), f & FI_MULTI_RECV,
			context);
	if (ret)
		return ret;
	return chk_end(&p_,
		       mrl_hook_ep_msg_ops.recvv(ep, iov, chk_descs(&p_, 0, desc),
					    count, src_addr, p_.ctx));
}

static ssize_t
chk_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	CHK_POST(ep, "fi_recvmsg");
	struct fi_msg m = *msg;
	int ret;

	chk_add_iov(&p_, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p_, true, chk_rx_tracked(p_.ep, flags),
			flags & FI_MULTI_RECV, msg->context);
	if (ret)
		return ret;
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_msg_ops.recvmsg(ep, &m, flags));
}

static ssize_t
chk_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	 fi_addr_t dest_addr, void *context)
{
	CHK_POST(ep, "fi_send");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	return chk_end(&p_, mrl_hook_ep_msg_ops.send(ep, buf, len, p_.inner[0],
						dest_addr, p_.ctx));
}

static ssize_t
chk_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
	  fi_addr_t dest_addr, void *context)
{
	CHK_POST(ep, "fi_sendv");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_iov(&p_, iov, desc, count);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	return chk_end(&p_,
		       mrl_hook_ep_msg_ops.sendv(ep, iov, chk_descs(&p_, 0, desc),
					    count, dest_addr, p_.ctx));
}

static ssize_t
chk_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	CHK_POST(ep, "fi_sendmsg");
	struct fi_msg m = *msg;
	int ret;

	chk_add_iov(&p_, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p_, !(flags & FI_INJECT), chk_tx_tracked(p_.ep, flags),
			false, msg->context);
	if (ret)
		return ret;
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_msg_ops.sendmsg(ep, &m, flags));
}

static ssize_t
chk_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	     uint64_t data, fi_addr_t dest_addr, void *context)
{
	CHK_POST(ep, "fi_senddata");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	return chk_end(&p_, mrl_hook_ep_msg_ops.senddata(ep, buf, len, p_.inner[0],
						    data, dest_addr, p_.ctx));
}

/* ---- tagged -------------------------------------------------------- */

static ssize_t
chk_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
	  fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	CHK_POST(ep, "fi_trecv");
	uint64_t f = p_.ep->rx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, true, chk_rx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	return chk_end(&p_,
		       mrl_hook_ep_tagged_ops.recv(ep, buf, len, p_.inner[0],
					      src_addr, tag, ignore, p_.ctx));
}

static ssize_t
chk_trecvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
	   void *context)
{
	CHK_POST(ep, "fi_trecvv");
	uint64_t f = p_.ep->rx_op_flags;
	int ret;

	chk_add_iov(&p_, iov, desc, count);
	ret = chk_begin(&p_, true, chk_rx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	return chk_end(&p_, mrl_hook_ep_tagged_ops.recvv(
				    ep, iov, chk_descs(&p_, 0, desc), count,
				    src_addr, tag, ignore, p_.ctx));
}

static ssize_t
chk_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	CHK_POST(ep, "fi_trecvmsg");
	struct fi_msg_tagged m = *msg;
	/* Peeks and FI_DISCARD move no data (a peek's buffers are not even
	 * looked at); a claim keeps the context of its peek, and is tracked
	 * by it when it moves data. */
	bool data = !(flags & FI_PEEK) || (flags & FI_CLAIM);
	bool moves = !(flags & (FI_PEEK | FI_DISCARD));
	int ret;

	p_.claim = !!(flags & FI_CLAIM);
	if (data)
		chk_add_iov(&p_, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p_, moves,
			moves || !p_.claim ? chk_rx_tracked(p_.ep, flags) :
					     CHK_UNTRACKED,
			false, msg->context);
	if (ret)
		return ret;
	if (data)
		m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_tagged_ops.recvmsg(ep, &m, flags));
}

static ssize_t
chk_tsend(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	  fi_addr_t dest_addr, uint64_t tag, void *context)
{
	CHK_POST(ep, "fi_tsend");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	return chk_end(&p_, mrl_hook_ep_tagged_ops.send(ep, buf, len, p_.inner[0],
						   dest_addr, tag, p_.ctx));
}

static ssize_t
chk_tsendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	CHK_POST(ep, "fi_tsendv");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_iov(&p_, iov, desc, count);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	return chk_end(&p_,
		       mrl_hook_ep_tagged_ops.sendv(ep, iov, chk_descs(&p_, 0, desc),
					       count, dest_addr, tag, p_.ctx));
}

static ssize_t
chk_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	CHK_POST(ep, "fi_tsendmsg");
	struct fi_msg_tagged m = *msg;
	int ret;

	chk_add_iov(&p_, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p_, !(flags & FI_INJECT), chk_tx_tracked(p_.ep, flags),
			false, msg->context);
	if (ret)
		return ret;
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_tagged_ops.sendmsg(ep, &m, flags));
}

static ssize_t
chk_tsenddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	      uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	CHK_POST(ep, "fi_tsenddata");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	return chk_end(&p_, mrl_hook_ep_tagged_ops.senddata(ep, buf, len,
						       p_.inner[0], data,
						       dest_addr, tag, p_.ctx));
}

/* ---- rma ----------------------------------------------------------- */

static ssize_t
chk_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
	 fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	CHK_POST(ep, "fi_read");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	chk_target(&p_, addr, len, key);
	return chk_end(&p_, mrl_hook_ep_rma_ops.read(ep, buf, len, p_.inner[0],
						src_addr, addr, key, p_.ctx));
}

static ssize_t
chk_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
	  fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	CHK_POST(ep, "fi_readv");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_iov(&p_, iov, desc, count);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	chk_target(&p_, addr, chk_cost_bytes(iov, count), key);
	return chk_end(&p_, mrl_hook_ep_rma_ops.readv(ep, iov,
						 chk_descs(&p_, 0, desc), count,
						 src_addr, addr, key, p_.ctx));
}

static ssize_t
chk_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	CHK_POST(ep, "fi_readmsg");
	struct fi_msg_rma m = *msg;
	int ret;

	chk_add_iov(&p_, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, flags), false,
			msg->context);
	if (ret)
		return ret;
	chk_targets_rma(&p_, msg->rma_iov, msg->rma_iov_count);
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_rma_ops.readmsg(ep, &m, flags));
}

static ssize_t
chk_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	  fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	CHK_POST(ep, "fi_write");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	chk_target(&p_, addr, len, key);
	return chk_end(&p_, mrl_hook_ep_rma_ops.write(ep, buf, len, p_.inner[0],
						 dest_addr, addr, key, p_.ctx));
}

static ssize_t
chk_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	   void *context)
{
	CHK_POST(ep, "fi_writev");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_iov(&p_, iov, desc, count);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	chk_target(&p_, addr, chk_cost_bytes(iov, count), key);
	return chk_end(&p_, mrl_hook_ep_rma_ops.writev(
				    ep, iov, chk_descs(&p_, 0, desc), count,
				    dest_addr, addr, key, p_.ctx));
}

static ssize_t
chk_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	CHK_POST(ep, "fi_writemsg");
	struct fi_msg_rma m = *msg;
	int ret;

	chk_add_iov(&p_, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p_, !(flags & FI_INJECT), chk_tx_tracked(p_.ep, flags),
			false, msg->context);
	if (ret)
		return ret;
	chk_targets_rma(&p_, msg->rma_iov, msg->rma_iov_count);
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_rma_ops.writemsg(ep, &m, flags));
}

static ssize_t
chk_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	      uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	      void *context)
{
	CHK_POST(ep, "fi_writedata");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, len, desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	chk_target(&p_, addr, len, key);
	return chk_end(&p_,
		       mrl_hook_ep_rma_ops.writedata(ep, buf, len, p_.inner[0], data,
						dest_addr, addr, key, p_.ctx));
}

/* Inject calls need no local desc (the provider copies the payload), but
 * their target is a remote key like any other. */
static ssize_t
chk_inject_write(struct fid_ep *ep, const void *buf, size_t len,
		 fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	CHK_POST(ep, "fi_inject_write");

	chk_target(&p_, addr, len, key);
	return chk_end(&p_, mrl_hook_ep_rma_ops.inject(ep, buf, len, dest_addr,
						       addr, key));
}

static ssize_t
chk_inject_writedata(struct fid_ep *ep, const void *buf, size_t len,
		     uint64_t data, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key)
{
	CHK_POST(ep, "fi_inject_writedata");

	chk_target(&p_, addr, len, key);
	return chk_end(&p_, mrl_hook_ep_rma_ops.injectdata(
				    ep, buf, len, data, dest_addr, addr, key));
}

/* ---- atomic -------------------------------------------------------- */

static size_t
chk_count_of(enum fi_op op, size_t count)
{
	/* FI_ATOMIC_READ ignores the source buffer. */
	return op == FI_ATOMIC_READ ? 0 : count;
}

static ssize_t
chk_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	   enum fi_datatype dt, enum fi_op op, void *context)
{
	CHK_POST(ep, "fi_atomic");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_buf(&p_, buf, count * mrl_hook_datatype_size(dt), desc);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	chk_target(&p_, addr, count * mrl_hook_datatype_size(dt), key);
	return chk_end(&p_, mrl_hook_ep_atomic_ops.write(ep, buf, count, p_.inner[0],
						    dest_addr, addr, key, dt,
						    op, p_.ctx));
}

static ssize_t
chk_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	    size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	    enum fi_datatype dt, enum fi_op op, void *context)
{
	CHK_POST(ep, "fi_atomicv");
	uint64_t f = p_.ep->tx_op_flags;
	int ret;

	chk_add_ioc(&p_, iov, desc, count, dt);
	ret = chk_begin(&p_, !(f & FI_INJECT), chk_tx_tracked(p_.ep, f), false,
			context);
	if (ret)
		return ret;
	chk_target(&p_, addr, chk_ioc_bytes(iov, count, dt), key);
	return chk_end(&p_, mrl_hook_ep_atomic_ops.writev(
				    ep, iov, chk_descs(&p_, 0, desc), count,
				    dest_addr, addr, key, dt, op, p_.ctx));
}

static ssize_t
chk_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	      uint64_t flags)
{
	CHK_POST(ep, "fi_atomicmsg");
	struct fi_msg_atomic m = *msg;
	int ret;

	chk_add_ioc(&p_, msg->msg_iov, msg->desc, msg->iov_count,
		    msg->datatype);
	ret = chk_begin(&p_, !(flags & FI_INJECT), chk_tx_tracked(p_.ep, flags),
			false, msg->context);
	if (ret)
		return ret;
	chk_targets_ioc(&p_, msg->rma_iov, msg->rma_iov_count, msg->datatype);
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_, mrl_hook_ep_atomic_ops.writemsg(ep, &m, flags));
}

static ssize_t
chk_fetch(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	  void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr,
	  uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	CHK_POST(ep, "fi_fetch_atomic");
	uint64_t f = p_.ep->tx_op_flags;
	size_t sz = mrl_hook_datatype_size(dt);
	int ret;

	chk_add_buf(&p_, buf, chk_count_of(op, count) * sz, desc);
	chk_add_buf(&p_, result, count * sz, result_desc);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	chk_target(&p_, addr, count * sz, key);
	return chk_end(
		&p_, mrl_hook_ep_atomic_ops.readwrite(ep, buf, count, p_.inner[0],
						 result, p_.inner[1], dest_addr,
						 addr, key, dt, op, p_.ctx));
}

static ssize_t
chk_fetchv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	   size_t count, struct fi_ioc *resultv, void **result_desc,
	   size_t result_count, fi_addr_t dest_addr, uint64_t addr,
	   uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	CHK_POST(ep, "fi_fetch_atomicv");
	uint64_t f = p_.ep->tx_op_flags;
	size_t r;
	int ret;

	chk_add_ioc(&p_, iov, desc, chk_count_of(op, count), dt);
	r = chk_add_ioc(&p_, resultv, result_desc, result_count, dt);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	chk_target(&p_, addr, chk_ioc_bytes(iov, count, dt), key);
	return chk_end(
		&p_,
		mrl_hook_ep_atomic_ops.readwritev(
			ep, iov,
			op == FI_ATOMIC_READ ? desc : chk_descs(&p_, 0, desc),
			count, resultv, chk_descs(&p_, r, result_desc),
			result_count, dest_addr, addr, key, dt, op, p_.ctx));
}

static ssize_t
chk_fetchmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	     struct fi_ioc *resultv, void **result_desc, size_t result_count,
	     uint64_t flags)
{
	CHK_POST(ep, "fi_fetch_atomicmsg");
	struct fi_msg_atomic m = *msg;
	size_t r;
	int ret;

	chk_add_ioc(&p_, msg->msg_iov, msg->desc,
		    chk_count_of(msg->op, msg->iov_count), msg->datatype);
	r = chk_add_ioc(&p_, resultv, result_desc, result_count, msg->datatype);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, flags), false,
			msg->context);
	if (ret)
		return ret;
	chk_targets_ioc(&p_, msg->rma_iov, msg->rma_iov_count, msg->datatype);
	if (msg->op != FI_ATOMIC_READ)
		m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_,
		       mrl_hook_ep_atomic_ops.readwritemsg(
			       ep, &m, resultv, chk_descs(&p_, r, result_desc),
			       result_count, flags));
}

static ssize_t
chk_compare(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	    const void *compare, void *compare_desc, void *result,
	    void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	    enum fi_datatype dt, enum fi_op op, void *context)
{
	CHK_POST(ep, "fi_compare_atomic");
	uint64_t f = p_.ep->tx_op_flags;
	size_t sz = mrl_hook_datatype_size(dt);
	int ret;

	chk_add_buf(&p_, buf, count * sz, desc);
	chk_add_buf(&p_, compare, count * sz, compare_desc);
	chk_add_buf(&p_, result, count * sz, result_desc);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	chk_target(&p_, addr, count * sz, key);
	return chk_end(&p_, mrl_hook_ep_atomic_ops.compwrite(
				    ep, buf, count, p_.inner[0], compare,
				    p_.inner[1], result, p_.inner[2], dest_addr,
				    addr, key, dt, op, p_.ctx));
}

static ssize_t
chk_comparev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	     size_t count, const struct fi_ioc *comparev, void **compare_desc,
	     size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
	     uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	CHK_POST(ep, "fi_compare_atomicv");
	uint64_t f = p_.ep->tx_op_flags;
	size_t c, r;
	int ret;

	chk_add_ioc(&p_, iov, desc, count, dt);
	c = chk_add_ioc(&p_, comparev, compare_desc, compare_count, dt);
	r = chk_add_ioc(&p_, resultv, result_desc, result_count, dt);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, f), false, context);
	if (ret)
		return ret;
	chk_target(&p_, addr, chk_ioc_bytes(iov, count, dt), key);
	return chk_end(&p_,
		       mrl_hook_ep_atomic_ops.compwritev(
			       ep, iov, chk_descs(&p_, 0, desc), count,
			       comparev, chk_descs(&p_, c, compare_desc),
			       compare_count, resultv,
			       chk_descs(&p_, r, result_desc), result_count,
			       dest_addr, addr, key, dt, op, p_.ctx));
}

static ssize_t
chk_comparemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	       const struct fi_ioc *comparev, void **compare_desc,
	       size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	       size_t result_count, uint64_t flags)
{
	CHK_POST(ep, "fi_compare_atomicmsg");
	struct fi_msg_atomic m = *msg;
	size_t c, r;
	int ret;

	chk_add_ioc(&p_, msg->msg_iov, msg->desc, msg->iov_count,
		    msg->datatype);
	c = chk_add_ioc(&p_, comparev, compare_desc, compare_count,
			msg->datatype);
	r = chk_add_ioc(&p_, resultv, result_desc, result_count, msg->datatype);
	ret = chk_begin(&p_, true, chk_tx_tracked(p_.ep, flags), false,
			msg->context);
	if (ret)
		return ret;
	chk_targets_ioc(&p_, msg->rma_iov, msg->rma_iov_count, msg->datatype);
	m.desc = chk_descs(&p_, 0, msg->desc);
	m.context = p_.ctx;
	return chk_end(&p_,
		       mrl_hook_ep_atomic_ops.compwritemsg(
			       ep, &m, comparev,
			       chk_descs(&p_, c, compare_desc), compare_count,
			       resultv, chk_descs(&p_, r, result_desc),
			       result_count, flags));
}

static ssize_t
chk_inject_atomic(struct fid_ep *ep, const void *buf, size_t count,
		  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		  enum fi_datatype dt, enum fi_op op)
{
	CHK_POST(ep, "fi_inject_atomic");

	chk_target(&p_, addr, count * mrl_hook_datatype_size(dt), key);
	return chk_end(&p_,
		       mrl_hook_ep_atomic_ops.inject(ep, buf, count, dest_addr,
						     addr, key, dt, op));
}

/* ---- cancel and the endpoint's life -------------------------------- */

/* fi_cancel names the application's context; the provider knows ours. */
static ssize_t
chk_cancel(fid_t fid, void *context)
{
	struct chk_ep *ep = chk_ep_of(container_of(fid, struct fid_ep, fid));
	void *ctx = context;

	pthread_mutex_lock(&ep->dom->lock);
	for (struct chk_op *op = ep->ops; op; op = op->next) {
		if (op->app_ctx == context) {
			ctx = op->claim ? context : op;
			break;
		}
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return mrl_hook_ep_ops.cancel(fid, ctx);
}

static struct fi_ops_msg chk_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = chk_recv,
	.recvv = chk_recvv,
	.recvmsg = chk_recvmsg,
	.send = chk_send,
	.sendv = chk_sendv,
	.sendmsg = chk_sendmsg,
	.senddata = chk_senddata,
	/* inject calls copy the payload: no desc, no completion */
};

static struct fi_ops_tagged chk_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = chk_trecv,
	.recvv = chk_trecvv,
	.recvmsg = chk_trecvmsg,
	.send = chk_tsend,
	.sendv = chk_tsendv,
	.sendmsg = chk_tsendmsg,
	.senddata = chk_tsenddata,
};

static struct fi_ops_rma chk_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = chk_read,
	.readv = chk_readv,
	.readmsg = chk_readmsg,
	.write = chk_write,
	.writev = chk_writev,
	.writemsg = chk_writemsg,
	.writedata = chk_writedata,
	.inject = chk_inject_write,
	.injectdata = chk_inject_writedata,
};

static struct fi_ops_atomic chk_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = chk_atomic,
	.writev = chk_atomicv,
	.writemsg = chk_atomicmsg,
	.readwrite = chk_fetch,
	.readwritev = chk_fetchv,
	.readwritemsg = chk_fetchmsg,
	.compwrite = chk_compare,
	.compwritev = chk_comparev,
	.compwritemsg = chk_comparemsg,
	.inject = chk_inject_atomic,
};

static void
chk_fill_table(void *dst, const void *defaults, size_t size)
{
	/* Entries left NULL above (inject, *valid) forward unchanged. */
	void (**d)(void) = dst;
	void (*const *s)(void) = defaults;

	for (size_t i = 1; i < size / sizeof(*d); i++)
		if (!d[i])
			d[i] = s[i];
}

static void
chk_fill_tables(void)
{
	chk_fill_table(&chk_msg_ops, &mrl_hook_ep_msg_ops, sizeof(chk_msg_ops));
	chk_fill_table(&chk_tagged_ops, &mrl_hook_ep_tagged_ops,
		       sizeof(chk_tagged_ops));
	chk_fill_table(&chk_rma_ops, &mrl_hook_ep_rma_ops, sizeof(chk_rma_ops));
	chk_fill_table(&chk_atomic_ops, &mrl_hook_ep_atomic_ops,
		       sizeof(chk_atomic_ops));
}

static uint64_t
chk_ops_flag(struct fid_ep *inner, uint64_t dir)
{
	uint64_t flags = dir;

	if (fi_control(&inner->fid, FI_GETOPSFLAG, &flags))
		return 0;
	return flags & ~(FI_TRANSMIT | FI_RECV);
}

int
chk_ep_open(struct mrl_ep *hook)
{
	struct chk_domain *dom = chk_domain_of(hook->domain);
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct chk_ep *ep;

	pthread_once(&once, chk_fill_tables);
	/* Only endpoints of strict domains are checked; contexts of scalable
	 * endpoints and shared contexts pass through. */
	if (!dom || hook->domain->domain.mr != &dom->mr_ops ||
	    hook->ep.fid.fclass != FI_CLASS_EP)
		return 0;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	if (chk_fault_close_wrap(dom, &hook->inner->fid)) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->hook = hook;
	ep->dom = dom;
	ep->tx_op_flags = chk_ops_flag(hook->inner, FI_TRANSMIT);
	ep->rx_op_flags = chk_ops_flag(hook->inner, FI_RECV);
	ep->ep_ops = *hook->ep.ops;
	ep->ep_ops.cancel = chk_cancel;
	hook->ep.ops = &ep->ep_ops;
	if (hook->ep.msg == &mrl_hook_ep_msg_ops)
		hook->ep.msg = &chk_msg_ops;
	if (hook->ep.tagged == &mrl_hook_ep_tagged_ops)
		hook->ep.tagged = &chk_tagged_ops;
	if (hook->ep.rma == &mrl_hook_ep_rma_ops)
		hook->ep.rma = &chk_rma_ops;
	if (hook->ep.atomic == &mrl_hook_ep_atomic_ops)
		hook->ep.atomic = &chk_atomic_ops;
	hook->ext = ep;
	chk_add(&dom->users, NULL, 1);
	return 0;
}

/* The provider has let go of the endpoint: its operations are over. */
void
chk_ep_close(struct mrl_ep *hook)
{
	struct chk_ep *ep = hook->ext;
	struct chk_domain *dom;

	if (!ep)
		return;
	dom = ep->dom;
	pthread_mutex_lock(&dom->lock);
	while (ep->ops) {
		struct chk_op *op = ep->ops;

		/* Entries may still sit in the CQ: keep the record (a zombie
		 * with no MR uses) so a read still finds the context. */
		for (size_t i = 0; i < op->nmr; i++)
			op->mr[i]->in_flight--;
		op->nmr = 0;
		ep->ops = op->next;
		op->ep = NULL;
		op->prev = op->next = NULL;
		chk_count(dom, ops_completed, 1);
	}
	pthread_mutex_unlock(&dom->lock);
	hook->ext = NULL;
	free(ep);
	chk_add(&dom->users, NULL, (uint64_t) -1);
}
