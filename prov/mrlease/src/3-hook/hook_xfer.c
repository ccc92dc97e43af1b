/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data-transfer forwarding tables: msg, tagged, rma, atomic, collective.
 * Each op goes to the same op of the inner endpoint with every argument
 * unchanged (descriptors of hook MRs are the inner MRs' descriptors). An op
 * the inner table lacks, or past its size, or of a table the inner endpoint
 * does not have at all (FI_CHECK_OP tests the table pointer too), returns
 * -FI_ENOSYS.
 *
 * FI_TRIGGER: a triggered op's context is a struct fi_triggered_context
 * naming a hook counter; its threshold counter is rewritten in place to
 * the inner counter (mrl_hook_trigger_to_inner; the provider reads it after the
 * call returns, so it cannot be restored). The data path does the same on
 * every post it forwards with the application's context, and gives the
 * provider a translated copy where its op stands for the context
 * (mrl_xfer_post_context). A non-msg call triggered by the endpoint's default
 * flags arrives here as its msg call with FI_TRIGGER (hook_opflags.c).
 */
#include "config.h"

#include <complex.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "mrl_hook.h"

/* The inner endpoint's op with the same arguments, or -FI_ENOSYS when its
 * table lacks it: an expression, which the wrapper returns. */
#define MRL_FWD(tbl, type, op, ...)                             \
	({                                                      \
		struct fid_ep *in_ = mrl_hook_ep_of(ep)->inner; \
		FI_CHECK_OP(in_->tbl, type, op) ?               \
			in_->tbl->op(in_, __VA_ARGS__) :        \
			-FI_ENOSYS;                             \
	})

void
mrl_hook_trigger_to_inner(uint64_t flags, void *context)
{
	struct fi_triggered_context *trig = context;

	if (!(flags & FI_TRIGGER) || !trig ||
	    trig->event_type != FI_TRIGGER_THRESHOLD)
		return;
	if (mrl_hook_is_hook_fid(&trig->trigger.threshold.cntr->fid))
		trig->trigger.threshold.cntr =
			mrl_hook_cntr_of(trig->trigger.threshold.cntr)->inner;
}

size_t
mrl_hook_datatype_size(enum fi_datatype datatype)
{
	switch (datatype) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	case FI_DOUBLE_COMPLEX:
		return 16;
	case FI_LONG_DOUBLE:
		return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX:
		return sizeof(long double complex);
	case FI_INT128:
	case FI_UINT128:
		return 16;
	default:
		return 0;
	}
}

/* ---- msg ------------------------------------------------------------ */

static ssize_t
mrl_hook_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		  fi_addr_t src_addr, void *context)
{
	return MRL_FWD(msg, struct fi_ops_msg, recv, buf, len, desc, src_addr,
		       context);
}

static ssize_t
mrl_hook_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		   size_t count, fi_addr_t src_addr, void *context)
{
	return MRL_FWD(msg, struct fi_ops_msg, recvv, iov, desc, count,
		       src_addr, context);
}

static ssize_t
mrl_hook_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
		     uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(msg, struct fi_ops_msg, recvmsg, msg, flags);
}

static ssize_t
mrl_hook_msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		  fi_addr_t dest_addr, void *context)
{
	return MRL_FWD(msg, struct fi_ops_msg, send, buf, len, desc, dest_addr,
		       context);
}

static ssize_t
mrl_hook_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		   size_t count, fi_addr_t dest_addr, void *context)
{
	return MRL_FWD(msg, struct fi_ops_msg, sendv, iov, desc, count,
		       dest_addr, context);
}

static ssize_t
mrl_hook_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
		     uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(msg, struct fi_ops_msg, sendmsg, msg, flags);
}

static ssize_t
mrl_hook_msg_inject(struct fid_ep *ep, const void *buf, size_t len,
		    fi_addr_t dest_addr)
{
	return MRL_FWD(msg, struct fi_ops_msg, inject, buf, len, dest_addr);
}

static ssize_t
mrl_hook_msg_senddata(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, uint64_t data, fi_addr_t dest_addr,
		      void *context)
{
	return MRL_FWD(msg, struct fi_ops_msg, senddata, buf, len, desc, data,
		       dest_addr, context);
}

static ssize_t
mrl_hook_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			uint64_t data, fi_addr_t dest_addr)
{
	return MRL_FWD(msg, struct fi_ops_msg, injectdata, buf, len, data,
		       dest_addr);
}

struct fi_ops_msg mrl_hook_ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = mrl_hook_msg_recv,
	.recvv = mrl_hook_msg_recvv,
	.recvmsg = mrl_hook_msg_recvmsg,
	.send = mrl_hook_msg_send,
	.sendv = mrl_hook_msg_sendv,
	.sendmsg = mrl_hook_msg_sendmsg,
	.inject = mrl_hook_msg_inject,
	.senddata = mrl_hook_msg_senddata,
	.injectdata = mrl_hook_msg_injectdata,
};

/* ---- tagged --------------------------------------------------------- */

static ssize_t
mrl_hook_tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		     fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
		     void *context)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, recv, buf, len, desc,
		       src_addr, tag, ignore, context);
}

static ssize_t
mrl_hook_tagged_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t src_addr, uint64_t tag,
		      uint64_t ignore, void *context)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, recvv, iov, desc, count,
		       src_addr, tag, ignore, context);
}

static ssize_t
mrl_hook_tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(tagged, struct fi_ops_tagged, recvmsg, msg, flags);
}

static ssize_t
mrl_hook_tagged_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		     fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, send, buf, len, desc,
		       dest_addr, tag, context);
}

static ssize_t
mrl_hook_tagged_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t dest_addr, uint64_t tag,
		      void *context)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, sendv, iov, desc, count,
		       dest_addr, tag, context);
}

static ssize_t
mrl_hook_tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(tagged, struct fi_ops_tagged, sendmsg, msg, flags);
}

static ssize_t
mrl_hook_tagged_inject(struct fid_ep *ep, const void *buf, size_t len,
		       fi_addr_t dest_addr, uint64_t tag)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, inject, buf, len,
		       dest_addr, tag);
}

static ssize_t
mrl_hook_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, uint64_t data, fi_addr_t dest_addr,
			 uint64_t tag, void *context)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, senddata, buf, len, desc,
		       data, dest_addr, tag, context);
}

static ssize_t
mrl_hook_tagged_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			   uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	return MRL_FWD(tagged, struct fi_ops_tagged, injectdata, buf, len, data,
		       dest_addr, tag);
}

struct fi_ops_tagged mrl_hook_ep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = mrl_hook_tagged_recv,
	.recvv = mrl_hook_tagged_recvv,
	.recvmsg = mrl_hook_tagged_recvmsg,
	.send = mrl_hook_tagged_send,
	.sendv = mrl_hook_tagged_sendv,
	.sendmsg = mrl_hook_tagged_sendmsg,
	.inject = mrl_hook_tagged_inject,
	.senddata = mrl_hook_tagged_senddata,
	.injectdata = mrl_hook_tagged_injectdata,
};

/* ---- rma ------------------------------------------------------------ */

static ssize_t
mrl_hook_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		  fi_addr_t src_addr, uint64_t addr, uint64_t key,
		  void *context)
{
	return MRL_FWD(rma, struct fi_ops_rma, read, buf, len, desc, src_addr,
		       addr, key, context);
}

static ssize_t
mrl_hook_rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
		   size_t count, fi_addr_t src_addr, uint64_t addr,
		   uint64_t key, void *context)
{
	return MRL_FWD(rma, struct fi_ops_rma, readv, iov, desc, count,
		       src_addr, addr, key, context);
}

static ssize_t
mrl_hook_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
		     uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(rma, struct fi_ops_rma, readmsg, msg, flags);
}

static ssize_t
mrl_hook_rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		   void *context)
{
	return MRL_FWD(rma, struct fi_ops_rma, write, buf, len, desc, dest_addr,
		       addr, key, context);
}

static ssize_t
mrl_hook_rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t dest_addr, uint64_t addr,
		    uint64_t key, void *context)
{
	return MRL_FWD(rma, struct fi_ops_rma, writev, iov, desc, count,
		       dest_addr, addr, key, context);
}

static ssize_t
mrl_hook_rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
		      uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(rma, struct fi_ops_rma, writemsg, msg, flags);
}

static ssize_t
mrl_hook_rma_inject(struct fid_ep *ep, const void *buf, size_t len,
		    fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	return MRL_FWD(rma, struct fi_ops_rma, inject, buf, len, dest_addr,
		       addr, key);
}

static ssize_t
mrl_hook_rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, uint64_t data, fi_addr_t dest_addr,
		       uint64_t addr, uint64_t key, void *context)
{
	return MRL_FWD(rma, struct fi_ops_rma, writedata, buf, len, desc, data,
		       dest_addr, addr, key, context);
}

static ssize_t
mrl_hook_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			uint64_t data, fi_addr_t dest_addr, uint64_t addr,
			uint64_t key)
{
	return MRL_FWD(rma, struct fi_ops_rma, injectdata, buf, len, data,
		       dest_addr, addr, key);
}

struct fi_ops_rma mrl_hook_ep_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = mrl_hook_rma_read,
	.readv = mrl_hook_rma_readv,
	.readmsg = mrl_hook_rma_readmsg,
	.write = mrl_hook_rma_write,
	.writev = mrl_hook_rma_writev,
	.writemsg = mrl_hook_rma_writemsg,
	.inject = mrl_hook_rma_inject,
	.writedata = mrl_hook_rma_writedata,
	.injectdata = mrl_hook_rma_injectdata,
};

/* ---- atomic --------------------------------------------------------- */

static ssize_t
mrl_hook_atomic_write(struct fid_ep *ep, const void *buf, size_t count,
		      void *desc, fi_addr_t dest_addr, uint64_t addr,
		      uint64_t key, enum fi_datatype datatype, enum fi_op op,
		      void *context)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, write, buf, count, desc,
		       dest_addr, addr, key, datatype, op, context);
}

static ssize_t
mrl_hook_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
		       size_t count, fi_addr_t dest_addr, uint64_t addr,
		       uint64_t key, enum fi_datatype datatype, enum fi_op op,
		       void *context)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, writev, iov, desc, count,
		       dest_addr, addr, key, datatype, op, context);
}

static ssize_t
mrl_hook_atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			 uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(atomic, struct fi_ops_atomic, writemsg, msg, flags);
}

static ssize_t
mrl_hook_atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
		       fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		       enum fi_datatype datatype, enum fi_op op)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, inject, buf, count,
		       dest_addr, addr, key, datatype, op);
}

static ssize_t
mrl_hook_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count,
			  void *desc, void *result, void *result_desc,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, readwrite, buf, count,
		       desc, result, result_desc, dest_addr, addr, key,
		       datatype, op, context);
}

static ssize_t
mrl_hook_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			   void **desc, size_t count, struct fi_ioc *resultv,
			   void **result_desc, size_t result_count,
			   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, readwritev, iov, desc,
		       count, resultv, result_desc, result_count, dest_addr,
		       addr, key, datatype, op, context);
}

static ssize_t
mrl_hook_atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			     struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(atomic, struct fi_ops_atomic, readwritemsg, msg, resultv,
		       result_desc, result_count, flags);
}

static ssize_t
mrl_hook_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count,
			  void *desc, const void *compare, void *compare_desc,
			  void *result, void *result_desc, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, compwrite, buf, count,
		       desc, compare, compare_desc, result, result_desc,
		       dest_addr, addr, key, datatype, op, context);
}

static ssize_t
mrl_hook_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			   void **desc, size_t count,
			   const struct fi_ioc *comparev, void **compare_desc,
			   size_t compare_count, struct fi_ioc *resultv,
			   void **result_desc, size_t result_count,
			   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, compwritev, iov, desc,
		       count, comparev, compare_desc, compare_count, resultv,
		       result_desc, result_count, dest_addr, addr, key,
		       datatype, op, context);
}

static ssize_t
mrl_hook_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			     const struct fi_ioc *comparev, void **compare_desc,
			     size_t compare_count, struct fi_ioc *resultv,
			     void **result_desc, size_t result_count,
			     uint64_t flags)
{
	mrl_hook_trigger_to_inner(flags, msg->context);
	return MRL_FWD(atomic, struct fi_ops_atomic, compwritemsg, msg,
		       comparev, compare_desc, compare_count, resultv,
		       result_desc, result_count, flags);
}

static int
mrl_hook_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
			   enum fi_op op, size_t *count)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, writevalid, datatype, op,
		       count);
}

static int
mrl_hook_atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
			       enum fi_op op, size_t *count)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, readwritevalid, datatype,
		       op, count);
}

static int
mrl_hook_atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
			       enum fi_op op, size_t *count)
{
	return MRL_FWD(atomic, struct fi_ops_atomic, compwritevalid, datatype,
		       op, count);
}

struct fi_ops_atomic mrl_hook_ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = mrl_hook_atomic_write,
	.writev = mrl_hook_atomic_writev,
	.writemsg = mrl_hook_atomic_writemsg,
	.inject = mrl_hook_atomic_inject,
	.readwrite = mrl_hook_atomic_readwrite,
	.readwritev = mrl_hook_atomic_readwritev,
	.readwritemsg = mrl_hook_atomic_readwritemsg,
	.compwrite = mrl_hook_atomic_compwrite,
	.compwritev = mrl_hook_atomic_compwritev,
	.compwritemsg = mrl_hook_atomic_compwritemsg,
	.writevalid = mrl_hook_atomic_writevalid,
	.readwritevalid = mrl_hook_atomic_readwritevalid,
	.compwritevalid = mrl_hook_atomic_compwritevalid,
};

/* ---- collective ----------------------------------------------------- */

static ssize_t
mrl_hook_coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, barrier, coll_addr,
		       context);
}

static ssize_t
mrl_hook_coll_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
			fi_addr_t coll_addr, fi_addr_t root_addr,
			enum fi_datatype datatype, uint64_t flags,
			void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, broadcast, buf,
		       count, desc, coll_addr, root_addr, datatype, flags,
		       context);
}

static ssize_t
mrl_hook_coll_alltoall(struct fid_ep *ep, const void *buf, size_t count,
		       void *desc, void *result, void *result_desc,
		       fi_addr_t coll_addr, enum fi_datatype datatype,
		       uint64_t flags, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, alltoall, buf,
		       count, desc, result, result_desc, coll_addr, datatype,
		       flags, context);
}

static ssize_t
mrl_hook_coll_allreduce(struct fid_ep *ep, const void *buf, size_t count,
			void *desc, void *result, void *result_desc,
			fi_addr_t coll_addr, enum fi_datatype datatype,
			enum fi_op op, uint64_t flags, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, allreduce, buf,
		       count, desc, result, result_desc, coll_addr, datatype,
		       op, flags, context);
}

static ssize_t
mrl_hook_coll_allgather(struct fid_ep *ep, const void *buf, size_t count,
			void *desc, void *result, void *result_desc,
			fi_addr_t coll_addr, enum fi_datatype datatype,
			uint64_t flags, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, allgather, buf,
		       count, desc, result, result_desc, coll_addr, datatype,
		       flags, context);
}

static ssize_t
mrl_hook_coll_reduce_scatter(struct fid_ep *ep, const void *buf, size_t count,
			     void *desc, void *result, void *result_desc,
			     fi_addr_t coll_addr, enum fi_datatype datatype,
			     enum fi_op op, uint64_t flags, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, reduce_scatter,
		       buf, count, desc, result, result_desc, coll_addr,
		       datatype, op, flags, context);
}

static ssize_t
mrl_hook_coll_reduce(struct fid_ep *ep, const void *buf, size_t count,
		     void *desc, void *result, void *result_desc,
		     fi_addr_t coll_addr, fi_addr_t root_addr,
		     enum fi_datatype datatype, enum fi_op op, uint64_t flags,
		     void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, reduce, buf, count,
		       desc, result, result_desc, coll_addr, root_addr,
		       datatype, op, flags, context);
}

static ssize_t
mrl_hook_coll_scatter(struct fid_ep *ep, const void *buf, size_t count,
		      void *desc, void *result, void *result_desc,
		      fi_addr_t coll_addr, fi_addr_t root_addr,
		      enum fi_datatype datatype, uint64_t flags, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, scatter, buf,
		       count, desc, result, result_desc, coll_addr, root_addr,
		       datatype, flags, context);
}

static ssize_t
mrl_hook_coll_gather(struct fid_ep *ep, const void *buf, size_t count,
		     void *desc, void *result, void *result_desc,
		     fi_addr_t coll_addr, fi_addr_t root_addr,
		     enum fi_datatype datatype, uint64_t flags, void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, gather, buf, count,
		       desc, result, result_desc, coll_addr, root_addr,
		       datatype, flags, context);
}

static ssize_t
mrl_hook_coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
		  struct fi_ioc *resultv, void **result_desc,
		  size_t result_count, uint64_t flags)
{
	return MRL_FWD(collective, struct fi_ops_collective, msg, msg, resultv,
		       result_desc, result_count, flags);
}

static ssize_t
mrl_hook_coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags,
		       void *context)
{
	return MRL_FWD(collective, struct fi_ops_collective, barrier2,
		       coll_addr, flags, context);
}

struct fi_ops_collective mrl_hook_ep_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = mrl_hook_coll_barrier,
	.broadcast = mrl_hook_coll_broadcast,
	.alltoall = mrl_hook_coll_alltoall,
	.allreduce = mrl_hook_coll_allreduce,
	.allgather = mrl_hook_coll_allgather,
	.reduce_scatter = mrl_hook_coll_reduce_scatter,
	.reduce = mrl_hook_coll_reduce,
	.scatter = mrl_hook_coll_scatter,
	.gather = mrl_hook_coll_gather,
	.msg = mrl_hook_coll_msg,
	.barrier2 = mrl_hook_coll_barrier2,
};
