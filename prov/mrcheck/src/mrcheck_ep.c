/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's endpoints: an endpoint of a strict domain gets the families'
 * tables (mrcheck_msg.c, _tagged.c, _rma.c, _atomic.c; what a post checks
 * is mrcheck_post.h's) and a cancel that knows the contexts they posted
 * with; its operations are over when it closes.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "mrcheck_post.h"

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

static void
chk_fill_table(void *dst, const void *defaults, size_t size)
{
	/* Entries the families leave NULL (inject, *valid) forward
	 * unchanged. */
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
