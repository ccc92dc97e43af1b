/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's completion path: every entry read through a CQ of a strict
 * domain gets the application's context back, and the operation it
 * completes is retired (its MRs are no longer in use). Entries whose
 * context is not one of mrcheck's records (NULL for remote CQ data,
 * untracked operations) pass untouched.
 *
 * FI_MRCHECK_FAULT_CQ_ERR: a completion chosen to fail is taken out of the
 * read and kept in the CQ's queue of injected errors; while that queue is
 * not empty every read returns -FI_EAVAIL and fi_cq_readerr hands its
 * entries out first, as a provider reports an error at the head of its
 * queue. Each read then takes one entry from the provider, so no
 * completion after the failed one is delivered before it.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "mrcheck_int.h"

/* An injected error completion waiting for fi_cq_readerr. */
struct chk_cq_err {
	struct chk_cq_err *next;
	void *op_context; /* mrcheck's op record */
	uint64_t flags, data, tag;
	size_t len;
	void *buf;
};

/* cq->ext of a CQ of a strict domain. lock protects the queue only. */
struct chk_cq {
	struct chk_domain *dom;
	pthread_mutex_t lock;
	struct chk_cq_err *head, **tail;
	_Atomic size_t queued;
};

/* One entry: give the context back; retire the op unless it is a
 * multi-receive buffer the provider has not released yet. */
static void
chk_translate(struct chk_domain *dom, void **op_context, uint64_t flags,
	      bool has_flags, bool error)
{
	struct chk_op *op = chk_op_find(dom, *op_context);

	if (!op)
		op = chk_claim_find(dom, *op_context, flags, has_flags);
	if (!op)
		return;
	*op_context = op->app_ctx;
	if (op->multi_recv && !(has_flags && (flags & FI_MULTI_RECV)) && !error)
		return;
	chk_op_retire(dom, op);
}

static void
chk_translate_entries(struct mrl_cq *cq, void *buf, ssize_t count)
{
	struct chk_domain *dom = chk_domain_of(cq->domain);
	size_t size = mrl_hook_cq_entry_size(cq->format);
	bool has_flags = size > sizeof(struct fi_cq_entry);

	if (count <= 0)
		return;
	pthread_mutex_lock(&dom->lock);
	for (ssize_t i = 0; i < count; i++) {
		char *entry = (char *) buf + (size_t) i * size;
		uint64_t flags = 0;

		if (has_flags)
			memcpy(&flags,
			       entry + offsetof(struct fi_cq_msg_entry, flags),
			       sizeof(flags));
		chk_translate(dom, (void **) entry, flags, has_flags, false);
	}
	pthread_mutex_unlock(&dom->lock);
}

/* ---- injected error completions (FI_MRCHECK_FAULT_CQ_ERR) ------------- */

/* How many entries a read may take from the provider. */
static size_t
chk_read_count(struct mrl_cq *cq, size_t count)
{
	return cq->ext && chk_fault_cq_on() && count > 1 ? 1 : count;
}

static bool
chk_errors_queued(struct mrl_cq *cq)
{
	struct chk_cq *c = cq->ext;

	return c && atomic_load_explicit(&c->queued, memory_order_acquire);
}

/* Whether the first entry of a read becomes an injected error; then it is
 * queued (its op stays in flight until fi_cq_readerr retires it). */
static bool
chk_inject_error(struct mrl_cq *cq, const void *entry)
{
	struct chk_domain *dom = chk_domain_of(cq->domain);
	struct chk_cq *c = cq->ext;
	struct chk_cq_err *e;
	struct chk_op *op;
	bool fail;

	pthread_mutex_lock(&dom->lock);
	op = chk_op_find(dom, *(void *const *) entry);
	/* A multi-receive buffer stays with the provider until its last
	 * completion: failing an earlier one would retire it under it. */
	fail = op && !op->multi_recv && chk_fault_cq_err(dom);
	pthread_mutex_unlock(&dom->lock);
	if (!fail || !(e = calloc(1, sizeof(*e))))
		return false;
	e->op_context = *(void *const *) entry;
	switch (cq->format) {
	case FI_CQ_FORMAT_TAGGED:
		e->tag = ((const struct fi_cq_tagged_entry *) entry)->tag;
		/* fall through */
	case FI_CQ_FORMAT_DATA:
		e->buf = ((const struct fi_cq_data_entry *) entry)->buf;
		e->data = ((const struct fi_cq_data_entry *) entry)->data;
		/* fall through */
	case FI_CQ_FORMAT_MSG:
		e->flags = ((const struct fi_cq_msg_entry *) entry)->flags;
		e->len = ((const struct fi_cq_msg_entry *) entry)->len;
		break;
	default:
		break;
	}
	pthread_mutex_lock(&c->lock);
	*c->tail = e;
	c->tail = &e->next;
	atomic_fetch_add_explicit(&c->queued, 1, memory_order_release);
	pthread_mutex_unlock(&c->lock);
	return true;
}

static struct chk_cq_err *
chk_error_pop(struct mrl_cq *cq)
{
	struct chk_cq *c = cq->ext;
	struct chk_cq_err *e;

	if (!chk_errors_queued(cq))
		return NULL;
	pthread_mutex_lock(&c->lock);
	e = c->head;
	if (e) {
		c->head = e->next;
		if (!c->head)
			c->tail = &c->head;
		atomic_fetch_sub_explicit(&c->queued, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* Fill the fields every api_version's fi_cq_err_entry has, as a provider
 * does; err_data is the caller's when it gave a size. */
static void
chk_error_fill(const struct chk_cq_err *e, struct fi_cq_err_entry *buf)
{
	buf->op_context = e->op_context;
	buf->flags = e->flags;
	buf->len = e->len;
	buf->buf = e->buf;
	buf->data = e->data;
	buf->tag = e->tag;
	buf->olen = 0;
	buf->err = FI_EIO;
	buf->prov_errno = MRCHECK_FAULT_PROV_ERRNO;
	if (buf->err_data_size)
		buf->err_data_size = 0;
	else
		buf->err_data = NULL;
}

/* After the provider's read: the first entry may become an error. */
static ssize_t
chk_after_read(struct mrl_cq *cq, void *buf, ssize_t ret)
{
	if (ret > 0 && cq->ext && chk_fault_cq_on() &&
	    chk_inject_error(cq, buf))
		return -FI_EAVAIL;
	chk_translate_entries(cq, buf, ret);
	return ret;
}

/* ---- the CQ's read calls ------------------------------------------- */

static ssize_t
chk_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	struct mrl_cq *c = mrl_hook_cq_of(cq);

	if (chk_errors_queued(c))
		return -FI_EAVAIL;
	return chk_after_read(
		c, buf, mrl_hook_cq_ops.read(cq, buf, chk_read_count(c, count)));
}

static ssize_t
chk_cq_readfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr)
{
	struct mrl_cq *c = mrl_hook_cq_of(cq);

	if (chk_errors_queued(c))
		return -FI_EAVAIL;
	return chk_after_read(c, buf,
			      mrl_hook_cq_ops.readfrom(cq, buf,
						  chk_read_count(c, count),
						  src_addr));
}

static ssize_t
chk_cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond,
	     int timeout)
{
	struct mrl_cq *c = mrl_hook_cq_of(cq);

	if (chk_errors_queued(c))
		return -FI_EAVAIL;
	return chk_after_read(c, buf,
			      mrl_hook_cq_ops.sread(cq, buf,
					       chk_read_count(c, count), cond,
					       timeout));
}

static ssize_t
chk_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
		 fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct mrl_cq *c = mrl_hook_cq_of(cq);

	if (chk_errors_queued(c))
		return -FI_EAVAIL;
	return chk_after_read(c, buf,
			      mrl_hook_cq_ops.sreadfrom(cq, buf,
						   chk_read_count(c, count),
						   src_addr, cond, timeout));
}

static ssize_t
chk_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct mrl_cq *c = mrl_hook_cq_of(cq);
	struct chk_domain *dom = chk_domain_of(c->domain);
	struct chk_cq_err *e = chk_error_pop(c);
	ssize_t ret;

	if (e) {
		chk_error_fill(e, buf);
		free(e);
		chk_count(dom, faults_cq_err_read, 1);
		ret = 1;
	} else {
		ret = mrl_hook_cq_ops.readerr(cq, buf, flags);
		if (ret <= 0)
			return ret;
	}
	pthread_mutex_lock(&dom->lock);
	chk_translate(dom, &buf->op_context, buf->flags, true, true);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

static struct fi_ops_cq chk_cq_ops;

static void
chk_cq_fill(void)
{
	chk_cq_ops = mrl_hook_cq_ops;
	chk_cq_ops.read = chk_cq_read;
	chk_cq_ops.readfrom = chk_cq_readfrom;
	chk_cq_ops.readerr = chk_cq_readerr;
	chk_cq_ops.sread = chk_cq_sread;
	chk_cq_ops.sreadfrom = chk_cq_sreadfrom;
}

int
chk_cq_open(struct mrl_cq *cq)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct chk_domain *dom = chk_domain_of(cq->domain);
	struct chk_cq *c;

	if (!dom || cq->domain->domain.mr != &dom->mr_ops)
		return 0;
	pthread_once(&once, chk_cq_fill);
	if (cq->cq.ops != &mrl_hook_cq_ops)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->dom = dom;
	c->tail = &c->head;
	cq->ext = c;
	cq->cq.ops = &chk_cq_ops;
	chk_add(&dom->users, NULL, 1);
	return 0;
}

/* Errors never read go with the CQ; their ops are retired when their
 * endpoint closes, as for any completion never read. */
void
chk_cq_close(struct mrl_cq *cq)
{
	struct chk_cq *c = cq->ext;
	struct chk_cq_err *e;

	if (!c)
		return;
	while ((e = c->head)) {
		c->head = e->next;
		free(e);
	}
	pthread_mutex_destroy(&c->lock);
	chk_add(&c->dom->users, NULL, (uint64_t) -1);
	cq->ext = NULL;
	free(c);
}
