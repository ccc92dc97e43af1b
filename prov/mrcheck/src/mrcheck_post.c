/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's data path: every post on an endpoint of a strict domain checks
 * its local operands, translates their descs to the provider's, and (when
 * the operation reports a completion to a CQ) posts an op record as the
 * context so its completion can be seen (mrcheck_post.h).
 */
#include "config.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>

#include "mrcheck_post.h"

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

size_t
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

size_t
chk_add_iov(struct chk_post *p, const struct iovec *iov, void **desc,
	    size_t count)
{
	size_t at = p->n;

	for (size_t i = 0; i < count; i++)
		chk_add_buf(p, iov[i].iov_base, iov[i].iov_len,
			    desc ? desc[i] : NULL);
	return at;
}

size_t
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

void **
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
int
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

void
chk_target(struct chk_post *p, uint64_t addr, size_t len, uint64_t key)
{
	p->taddr = addr;
	p->tlen = len;
	p->tkey = key;
}

void
chk_targets_rma(struct chk_post *p, const struct fi_rma_iov *rma, size_t count)
{
	p->rma = rma;
	p->rcount = count;
}

void
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

size_t
chk_ioc_bytes(const struct fi_ioc *ioc, size_t count, enum fi_datatype dt)
{
	size_t n = 0;

	for (size_t i = 0; i < count; i++)
		n += ioc[i].count;
	return n * mrl_hook_datatype_size(dt);
}

ssize_t
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

enum chk_track
chk_rx_tracked(struct chk_ep *ep, uint64_t flags)
{
	const struct mrl_ep_bindings *b = &ep->hook->bound;

	return chk_track_of(b->rx_cq, b->rx_cq_flags, flags);
}

/* ---- starting a post ----------------------------------------------- */

void
chk_post_init(struct chk_post *p, struct fid_ep *fep, const char *what)
{
	p->ep = chk_ep_of(fep);
	p->what = what;
	p->n = 0;
	p->overflow = false;
	p->claim = false;
	p->tlen = 0;
	p->rma = NULL;
	p->rioc = NULL;
	p->op = NULL;
}

uint64_t
chk_ep_flags(const struct chk_ep *ep, enum chk_dir dir)
{
	return dir == CHK_RECV || dir == CHK_TRECV ? ep->rx_op_flags :
						     ep->tx_op_flags;
}

int
chk_start(struct chk_post *p, enum chk_dir dir, uint64_t flags, void *app_ctx)
{
	bool rx = dir == CHK_RECV || dir == CHK_TRECV;

	return chk_begin(p, dir != CHK_SEND || !(flags & FI_INJECT),
			 rx ? chk_rx_tracked(p->ep, flags) :
			      chk_tx_tracked(p->ep, flags),
			 dir == CHK_RECV && (flags & FI_MULTI_RECV), app_ctx);
}

int
chk_start_buf(struct chk_post *p, struct fid_ep *fep, const char *what,
	      enum chk_dir dir, const void *buf, size_t len, void *desc,
	      void *app_ctx)
{
	chk_post_init(p, fep, what);
	chk_add_buf(p, buf, len, desc);
	return chk_start(p, dir, chk_ep_flags(p->ep, dir), app_ctx);
}

int
chk_start_msg(struct chk_post *p, struct fid_ep *fep, const char *what,
	      enum chk_dir dir, const struct iovec *iov, void **desc,
	      size_t count, uint64_t flags, void *app_ctx)
{
	chk_post_init(p, fep, what);
	chk_add_iov(p, iov, desc, count);
	return chk_start(p, dir, flags, app_ctx);
}

int
chk_start_iov(struct chk_post *p, struct fid_ep *fep, const char *what,
	      enum chk_dir dir, const struct iovec *iov, void **desc,
	      size_t count, void *app_ctx)
{
	return chk_start_msg(p, fep, what, dir, iov, desc, count,
			     chk_ep_flags(chk_ep_of(fep), dir), app_ctx);
}
