/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Calls posted with default op flags the hook must see. A non-msg call
 * (fi_send, fi_write, fi_atomic, ...) takes its flags from the endpoint:
 * the attrs it was opened with, FI_SETOPSFLAG, or for an alias the flags
 * fi_ep_alias gave it. Two of those change what the hook must do with the
 * call, and the call itself does not show them:
 * - FI_TRIGGER: the context is a struct fi_triggered_context naming a
 *   hook counter, which the provider must get as its own (hook_xfer.c);
 * - an alias: it shares its endpoint's data path state (leases, routes)
 *   while its own flags may differ from the endpoint's.
 * Such an endpoint gets a table per family (struct mrl_ep_shim) in which
 * each non-msg call with a context is posted as its msg call with the
 * default flags, through the table it had below; msg calls carry their
 * flags, so everything below sees them. Injects have no context and no
 * local descriptor and go down unchanged.
 */
#include "config.h"

#include <stdlib.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "mrl_hook.h"

/* The tables a shimmed endpoint presents, and those it had below them. */
struct mrl_ep_shim {
	struct fi_ops_msg msg;
	struct fi_ops_tagged tagged;
	struct fi_ops_rma rma;
	struct fi_ops_atomic atomic;
	struct fi_ops_msg *below_msg;
	struct fi_ops_tagged *below_tagged;
	struct fi_ops_rma *below_rma;
	struct fi_ops_atomic *below_atomic;
};

static struct mrl_ep_shim *
mrl_hook_shim_of(struct fid_ep *fep)
{
	return mrl_hook_ep_of(fep)->shim;
}

static uint64_t
mrl_hook_shim_flags(struct fid_ep *fep, bool tx)
{
	return mrl_hook_ep_of(fep)->op_flags[tx ? 0 : 1] &
	       ~(uint64_t) (FI_TRANSMIT | FI_RECV);
}

/* ---- msg ------------------------------------------------------------ */

static ssize_t
mrl_hook_shim_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t src_addr, void *context)
{
	struct fi_msg m = {.msg_iov = iov,
			   .desc = desc,
			   .iov_count = count,
			   .addr = src_addr,
			   .context = context};

	return mrl_hook_shim_of(fep)->below_msg->recvmsg(
		fep, &m, mrl_hook_shim_flags(fep, false));
}

static ssize_t
mrl_hook_shim_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
		   fi_addr_t src_addr, void *context)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return mrl_hook_shim_recvv(fep, &iov, &desc, 1, src_addr, context);
}

static ssize_t
mrl_hook_shim_send_common(struct fid_ep *fep, const struct iovec *iov,
			  void **desc, size_t count, uint64_t data,
			  uint64_t flags, fi_addr_t dest_addr, void *context)
{
	struct fi_msg m = {.msg_iov = iov,
			   .desc = desc,
			   .iov_count = count,
			   .addr = dest_addr,
			   .context = context,
			   .data = data};

	return mrl_hook_shim_of(fep)->below_msg->sendmsg(
		fep, &m, mrl_hook_shim_flags(fep, true) | flags);
}

static ssize_t
mrl_hook_shim_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t dest_addr, void *context)
{
	return mrl_hook_shim_send_common(fep, iov, desc, count, 0, 0, dest_addr,
					 context);
}

static ssize_t
mrl_hook_shim_send(struct fid_ep *fep, const void *buf, size_t len, void *desc,
		   fi_addr_t dest_addr, void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};

	return mrl_hook_shim_send_common(fep, &iov, &desc, 1, 0, 0, dest_addr,
					 context);
}

static ssize_t
mrl_hook_shim_senddata(struct fid_ep *fep, const void *buf, size_t len,
		       void *desc, uint64_t data, fi_addr_t dest_addr,
		       void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};

	return mrl_hook_shim_send_common(fep, &iov, &desc, 1, data,
					 FI_REMOTE_CQ_DATA, dest_addr, context);
}

/* ---- tagged --------------------------------------------------------- */

static ssize_t
mrl_hook_shim_trecvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		     size_t count, fi_addr_t src_addr, uint64_t tag,
		     uint64_t ignore, void *context)
{
	struct fi_msg_tagged m = {.msg_iov = iov,
				  .desc = desc,
				  .iov_count = count,
				  .addr = src_addr,
				  .tag = tag,
				  .ignore = ignore,
				  .context = context};

	return mrl_hook_shim_of(fep)->below_tagged->recvmsg(
		fep, &m, mrl_hook_shim_flags(fep, false));
}

static ssize_t
mrl_hook_shim_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc,
		    fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
		    void *context)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return mrl_hook_shim_trecvv(fep, &iov, &desc, 1, src_addr, tag, ignore,
				    context);
}

static ssize_t
mrl_hook_shim_tsend_common(struct fid_ep *fep, const struct iovec *iov,
			   void **desc, size_t count, uint64_t data,
			   uint64_t flags, fi_addr_t dest_addr, uint64_t tag,
			   void *context)
{
	struct fi_msg_tagged m = {.msg_iov = iov,
				  .desc = desc,
				  .iov_count = count,
				  .addr = dest_addr,
				  .tag = tag,
				  .context = context,
				  .data = data};

	return mrl_hook_shim_of(fep)->below_tagged->sendmsg(
		fep, &m, mrl_hook_shim_flags(fep, true) | flags);
}

static ssize_t
mrl_hook_shim_tsendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		     size_t count, fi_addr_t dest_addr, uint64_t tag,
		     void *context)
{
	return mrl_hook_shim_tsend_common(fep, iov, desc, count, 0, 0,
					  dest_addr, tag, context);
}

static ssize_t
mrl_hook_shim_tsend(struct fid_ep *fep, const void *buf, size_t len, void *desc,
		    fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};

	return mrl_hook_shim_tsend_common(fep, &iov, &desc, 1, 0, 0, dest_addr,
					  tag, context);
}

static ssize_t
mrl_hook_shim_tsenddata(struct fid_ep *fep, const void *buf, size_t len,
			void *desc, uint64_t data, fi_addr_t dest_addr,
			uint64_t tag, void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};

	return mrl_hook_shim_tsend_common(fep, &iov, &desc, 1, data,
					  FI_REMOTE_CQ_DATA, dest_addr, tag,
					  context);
}

/* ---- rma ------------------------------------------------------------ */

static ssize_t
mrl_hook_shim_rma(struct fid_ep *fep, bool read, const struct iovec *iov,
		  void **desc, size_t count, uint64_t data, uint64_t flags,
		  fi_addr_t peer, uint64_t addr, uint64_t key, void *context)
{
	struct fi_ops_rma *below = mrl_hook_shim_of(fep)->below_rma;
	struct fi_rma_iov r = {.addr = addr, .key = key};
	struct fi_msg_rma m = {.msg_iov = iov,
			       .desc = desc,
			       .iov_count = count,
			       .addr = peer,
			       .rma_iov = &r,
			       .rma_iov_count = 1,
			       .context = context,
			       .data = data};

	for (size_t i = 0; i < count; i++)
		r.len += iov[i].iov_len;
	flags |= mrl_hook_shim_flags(fep, true);
	return read ? below->readmsg(fep, &m, flags) :
		      below->writemsg(fep, &m, flags);
}

static ssize_t
mrl_hook_shim_readv(struct fid_ep *fep, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t src_addr, uint64_t addr,
		    uint64_t key, void *context)
{
	return mrl_hook_shim_rma(fep, true, iov, desc, count, 0, 0, src_addr,
				 addr, key, context);
}

static ssize_t
mrl_hook_shim_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
		   fi_addr_t src_addr, uint64_t addr, uint64_t key,
		   void *context)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return mrl_hook_shim_rma(fep, true, &iov, &desc, 1, 0, 0, src_addr,
				 addr, key, context);
}

static ssize_t
mrl_hook_shim_writev(struct fid_ep *fep, const struct iovec *iov, void **desc,
		     size_t count, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key, void *context)
{
	return mrl_hook_shim_rma(fep, false, iov, desc, count, 0, 0, dest_addr,
				 addr, key, context);
}

static ssize_t
mrl_hook_shim_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
		    fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		    void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};

	return mrl_hook_shim_rma(fep, false, &iov, &desc, 1, 0, 0, dest_addr,
				 addr, key, context);
}

static ssize_t
mrl_hook_shim_writedata(struct fid_ep *fep, const void *buf, size_t len,
			void *desc, uint64_t data, fi_addr_t dest_addr,
			uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};

	return mrl_hook_shim_rma(fep, false, &iov, &desc, 1, data,
				 FI_REMOTE_CQ_DATA, dest_addr, addr, key,
				 context);
}

/* ---- atomic --------------------------------------------------------- */

/* The msg form of an atomic call on count local iocs. */
static void
mrl_hook_shim_atomic_msg(struct fi_msg_atomic *m, struct fi_rma_ioc *r,
			 const struct fi_ioc *iov, void **desc, size_t count,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			 enum fi_datatype datatype, enum fi_op op,
			 void *context)
{
	*r = (struct fi_rma_ioc){.addr = addr, .key = key};
	for (size_t i = 0; i < count; i++)
		r->count += iov[i].count;
	*m = (struct fi_msg_atomic){.msg_iov = iov,
				    .desc = desc,
				    .iov_count = count,
				    .addr = dest_addr,
				    .rma_iov = r,
				    .rma_iov_count = 1,
				    .datatype = datatype,
				    .op = op,
				    .context = context};
}

static ssize_t
mrl_hook_shim_atomicv(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
		      size_t count, fi_addr_t dest_addr, uint64_t addr,
		      uint64_t key, enum fi_datatype datatype, enum fi_op op,
		      void *context)
{
	struct fi_msg_atomic m;
	struct fi_rma_ioc r;

	mrl_hook_shim_atomic_msg(&m, &r, iov, desc, count, dest_addr, addr, key,
				 datatype, op, context);
	return mrl_hook_shim_of(fep)->below_atomic->writemsg(
		fep, &m, mrl_hook_shim_flags(fep, true));
}

static ssize_t
mrl_hook_shim_atomic(struct fid_ep *fep, const void *buf, size_t count,
		     void *desc, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key, enum fi_datatype datatype, enum fi_op op,
		     void *context)
{
	struct fi_ioc ioc = {.addr = (void *) buf, .count = count};

	return mrl_hook_shim_atomicv(fep, &ioc, &desc, 1, dest_addr, addr, key,
				     datatype, op, context);
}

static ssize_t
mrl_hook_shim_fetchv(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
		     size_t count, struct fi_ioc *resultv, void **result_desc,
		     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key, enum fi_datatype datatype, enum fi_op op,
		     void *context)
{
	struct fi_msg_atomic m;
	struct fi_rma_ioc r;

	mrl_hook_shim_atomic_msg(&m, &r, iov, desc, count, dest_addr, addr, key,
				 datatype, op, context);
	return mrl_hook_shim_of(fep)->below_atomic->readwritemsg(
		fep, &m, resultv, result_desc, result_count,
		mrl_hook_shim_flags(fep, true));
}

static ssize_t
mrl_hook_shim_fetch(struct fid_ep *fep, const void *buf, size_t count,
		    void *desc, void *result, void *result_desc,
		    fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		    enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct fi_ioc ioc = {.addr = (void *) buf, .count = count};
	struct fi_ioc res = {.addr = result, .count = count};

	return mrl_hook_shim_fetchv(fep, &ioc, &desc, 1, &res, &result_desc, 1,
				    dest_addr, addr, key, datatype, op,
				    context);
}

static ssize_t
mrl_hook_shim_compv(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
		    size_t count, const struct fi_ioc *comparev,
		    void **compare_desc, size_t compare_count,
		    struct fi_ioc *resultv, void **result_desc,
		    size_t result_count, fi_addr_t dest_addr, uint64_t addr,
		    uint64_t key, enum fi_datatype datatype, enum fi_op op,
		    void *context)
{
	struct fi_msg_atomic m;
	struct fi_rma_ioc r;

	mrl_hook_shim_atomic_msg(&m, &r, iov, desc, count, dest_addr, addr, key,
				 datatype, op, context);
	return mrl_hook_shim_of(fep)->below_atomic->compwritemsg(
		fep, &m, comparev, compare_desc, compare_count, resultv,
		result_desc, result_count, mrl_hook_shim_flags(fep, true));
}

static ssize_t
mrl_hook_shim_comp(struct fid_ep *fep, const void *buf, size_t count,
		   void *desc, const void *compare, void *compare_desc,
		   void *result, void *result_desc, fi_addr_t dest_addr,
		   uint64_t addr, uint64_t key, enum fi_datatype datatype,
		   enum fi_op op, void *context)
{
	struct fi_ioc ioc = {.addr = (void *) buf, .count = count};
	struct fi_ioc cmp = {.addr = (void *) compare, .count = count};
	struct fi_ioc res = {.addr = result, .count = count};

	return mrl_hook_shim_compv(fep, &ioc, &desc, 1, &cmp, &compare_desc, 1,
				   &res, &result_desc, 1, dest_addr, addr, key,
				   datatype, op, context);
}

/* ---- install -------------------------------------------------------- */

/* Whether ep's non-msg calls must go down as msg calls. */
static bool
mrl_hook_shim_needed(const struct mrl_ep *ep)
{
	return ep->alias_of || ((ep->op_flags[0] | ep->op_flags[1]) &
				FI_TRIGGER);
}

/* The shim's tables over ep's current ones. A call whose msg call the
 * provider lacks stays as it is (a provider's table may stop short). */
static void
mrl_hook_shim_fill(struct mrl_ep_shim *s, struct mrl_ep *ep)
{
	const struct fid_ep *in = ep->inner;

	s->below_msg = ep->ep.msg;
	s->below_tagged = ep->ep.tagged;
	s->below_rma = ep->ep.rma;
	s->below_atomic = ep->ep.atomic;
	s->msg = *ep->ep.msg;
	s->tagged = *ep->ep.tagged;
	s->rma = *ep->ep.rma;
	s->atomic = *ep->ep.atomic;

	if (FI_CHECK_OP(in->msg, struct fi_ops_msg, recvmsg)) {
		s->msg.recv = mrl_hook_shim_recv;
		s->msg.recvv = mrl_hook_shim_recvv;
	}
	if (FI_CHECK_OP(in->msg, struct fi_ops_msg, sendmsg)) {
		s->msg.send = mrl_hook_shim_send;
		s->msg.sendv = mrl_hook_shim_sendv;
		s->msg.senddata = mrl_hook_shim_senddata;
	}
	if (FI_CHECK_OP(in->tagged, struct fi_ops_tagged, recvmsg)) {
		s->tagged.recv = mrl_hook_shim_trecv;
		s->tagged.recvv = mrl_hook_shim_trecvv;
	}
	if (FI_CHECK_OP(in->tagged, struct fi_ops_tagged, sendmsg)) {
		s->tagged.send = mrl_hook_shim_tsend;
		s->tagged.sendv = mrl_hook_shim_tsendv;
		s->tagged.senddata = mrl_hook_shim_tsenddata;
	}
	if (FI_CHECK_OP(in->rma, struct fi_ops_rma, readmsg)) {
		s->rma.read = mrl_hook_shim_read;
		s->rma.readv = mrl_hook_shim_readv;
	}
	if (FI_CHECK_OP(in->rma, struct fi_ops_rma, writemsg)) {
		s->rma.write = mrl_hook_shim_write;
		s->rma.writev = mrl_hook_shim_writev;
		s->rma.writedata = mrl_hook_shim_writedata;
	}
	if (FI_CHECK_OP(in->atomic, struct fi_ops_atomic, writemsg)) {
		s->atomic.write = mrl_hook_shim_atomic;
		s->atomic.writev = mrl_hook_shim_atomicv;
	}
	if (FI_CHECK_OP(in->atomic, struct fi_ops_atomic, readwritemsg)) {
		s->atomic.readwrite = mrl_hook_shim_fetch;
		s->atomic.readwritev = mrl_hook_shim_fetchv;
	}
	if (FI_CHECK_OP(in->atomic, struct fi_ops_atomic, compwritemsg)) {
		s->atomic.compwrite = mrl_hook_shim_comp;
		s->atomic.compwritev = mrl_hook_shim_compv;
	}
}

int
mrl_hook_ep_opflags_set(struct mrl_ep *ep, uint64_t flags, bool apply)
{
	if ((flags & FI_TRANSMIT) && !(flags & FI_RECV))
		ep->op_flags[0] = flags;
	else if ((flags & FI_RECV) && !(flags & FI_TRANSMIT))
		ep->op_flags[1] = flags;
	return apply ? mrl_hook_ep_shim_apply(ep) : 0;
}

int
mrl_hook_ep_shim_apply(struct mrl_ep *ep)
{
	struct mrl_ep_shim *s = ep->shim;
	bool on = s && ep->ep.msg == &s->msg;

	if (mrl_hook_shim_needed(ep) == on)
		return 0;
	if (on) {
		/* Kept until the close: a post on another thread may still
		 * be reading it. */
		ep->ep.msg = s->below_msg;
		ep->ep.tagged = s->below_tagged;
		ep->ep.rma = s->below_rma;
		ep->ep.atomic = s->below_atomic;
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -FI_ENOMEM;
		ep->shim = s;
	}
	mrl_hook_shim_fill(s, ep);
	ep->ep.msg = &s->msg;
	ep->ep.tagged = &s->tagged;
	ep->ep.rma = &s->rma;
	ep->ep.atomic = &s->atomic;
	return 0;
}

void
mrl_hook_ep_shim_free(struct mrl_ep *ep)
{
	free(ep->shim);
	ep->shim = NULL;
}
