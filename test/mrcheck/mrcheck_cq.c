/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's completion path: every entry read through a CQ of a strict
 * domain gets the application's context back, and the operation it
 * completes is retired (its MRs are no longer in use). Entries whose
 * context is not one of mrcheck's records (NULL for remote CQ data,
 * untracked operations) pass untouched.
 */
#include "config.h"

#include <string.h>

#include <rdma/fi_errno.h>

#include "mrcheck_int.h"

static size_t chk_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
	default: return sizeof(struct fi_cq_entry); /* CONTEXT, UNSPEC */
	}
}

/* One entry: give the context back; retire the op unless it is a
 * multi-receive buffer the provider has not released yet. */
static void chk_translate(struct chk_domain *dom, void **op_context,
			  uint64_t flags, bool has_flags, bool error)
{
	struct chk_op *op = chk_op_find(dom, *op_context);

	if (!op)
		return;
	*op_context = op->app_ctx;
	if (op->multi_recv && !(has_flags && (flags & FI_MULTI_RECV)) && !error)
		return;
	chk_op_retire(dom, op);
}

static void chk_translate_entries(struct mrl_cq *cq, void *buf, ssize_t count)
{
	struct chk_domain *dom = chk_domain_of(cq->domain);
	size_t size = chk_entry_size(cq->format);
	bool has_flags = size > sizeof(struct fi_cq_entry);

	if (count <= 0)
		return;
	pthread_mutex_lock(&dom->lock);
	for (ssize_t i = 0; i < count; i++) {
		char *entry = (char *)buf + (size_t)i * size;
		uint64_t flags = 0;

		if (has_flags)
			memcpy(&flags, entry + offsetof(struct fi_cq_msg_entry, flags),
			       sizeof(flags));
		chk_translate(dom, (void **)entry, flags, has_flags, false);
	}
	pthread_mutex_unlock(&dom->lock);
}

static ssize_t chk_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	ssize_t ret = mrl_cq_ops.read(cq, buf, count);

	chk_translate_entries(mrl_cq_of(cq), buf, ret);
	return ret;
}

static ssize_t chk_cq_readfrom(struct fid_cq *cq, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	ssize_t ret = mrl_cq_ops.readfrom(cq, buf, count, src_addr);

	chk_translate_entries(mrl_cq_of(cq), buf, ret);
	return ret;
}

static ssize_t chk_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			    const void *cond, int timeout)
{
	ssize_t ret = mrl_cq_ops.sread(cq, buf, count, cond, timeout);

	chk_translate_entries(mrl_cq_of(cq), buf, ret);
	return ret;
}

static ssize_t chk_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond,
				int timeout)
{
	ssize_t ret = mrl_cq_ops.sreadfrom(cq, buf, count, src_addr, cond, timeout);

	chk_translate_entries(mrl_cq_of(cq), buf, ret);
	return ret;
}

static ssize_t chk_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			      uint64_t flags)
{
	struct chk_domain *dom = chk_domain_of(mrl_cq_of(cq)->domain);
	ssize_t ret = mrl_cq_ops.readerr(cq, buf, flags);

	if (ret <= 0)
		return ret;
	pthread_mutex_lock(&dom->lock);
	chk_translate(dom, &buf->op_context, buf->flags, true, true);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

static struct fi_ops_cq chk_cq_ops;

static void chk_cq_fill(void)
{
	chk_cq_ops = mrl_cq_ops;
	chk_cq_ops.read = chk_cq_read;
	chk_cq_ops.readfrom = chk_cq_readfrom;
	chk_cq_ops.readerr = chk_cq_readerr;
	chk_cq_ops.sread = chk_cq_sread;
	chk_cq_ops.sreadfrom = chk_cq_sreadfrom;
}

int chk_cq_open(struct mrl_cq *cq)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct chk_domain *dom = chk_domain_of(cq->domain);

	if (!dom || cq->domain->domain.mr != &dom->mr_ops)
		return 0;
	pthread_once(&once, chk_cq_fill);
	if (cq->cq.ops == &mrl_cq_ops)
		cq->cq.ops = &chk_cq_ops;
	return 0;
}
