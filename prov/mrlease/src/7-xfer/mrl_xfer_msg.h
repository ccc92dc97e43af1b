/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the msg calls (mrl_xfer_msg.c) share with the tagged ones
 * (mrl_xfer_tagged.c): one description of a msg or tagged post of any
 * shape, its slow path, and the single-buffer rows' check and slow path
 * (mrl_xfer_single.h). Included only by the data path's .c files.
 */
#ifndef MRL_XFER_MSG_H
#define MRL_XFER_MSG_H

#include "mrl_xfer_single.h"

enum mrl_msg_kind {
	MRL_SEND,
	MRL_SENDDATA,
	MRL_RECV, /* msg */
	MRL_TSEND,
	MRL_TSENDDATA,
	MRL_TRECV, /* tagged */
};

static inline enum mrl_dir
mrl_xfer_msg_dir(enum mrl_msg_kind kind)
{
	return kind == MRL_RECV || kind == MRL_TRECV ? MRL_RX : MRL_TX;
}

static inline bool
mrl_xfer_msg_tagged(enum mrl_msg_kind kind)
{
	return kind >= MRL_TSEND;
}

/* One msg or tagged post of any shape, as the msg calls describe it. */
struct mrl_msg_call {
	enum mrl_msg_kind kind;
	const struct iovec *iov;
	void **desc; /* may be NULL: all NULL */
	size_t count;
	fi_addr_t addr;
	uint64_t tag, ignore, data;
	void *context;
};

/* rxm's eager limit (FI_OFI_RXM_BUFFER_SIZE, 16384 by default). */
extern size_t mrl_xfer_rndv_after;

/* Post c with its local operands resolved: as the msg call with flags when
 * as_msg (the application's msg calls, converted calls), else in c's own
 * shape. */
ssize_t mrl_xfer_msg_post(struct mrl_ep *ep, const struct mrl_msg_call *c,
			  uint64_t flags, bool as_msg);
/* The slow path of a non-msg call: the endpoint's default flags, as the
 * msg call when the route needs FI_COMPLETION. */
ssize_t mrl_xfer_msg_slow(struct mrl_ep *ep, const struct mrl_msg_call *c);

/* Whether an FI_MULTI_RECV post on x may lease (guarding its rx CQ on the
 * first one); false: forward it unleased. */
static inline bool
mrl_xfer_msg_multi_recv_ok(struct mrl_xep *x)
{
	return x->dir[MRL_RX].multi_recv &&
	       (atomic_load_explicit(&x->rx_guarded, memory_order_acquire) ||
		!mrl_xfer_cq_guard_rx(x));
}

/* The single-buffer rows of the msg and tagged calls (mrl_xfer_single.h;
 * the operands' a = tag, b = ignore, c = data). Sends whose operand needs
 * a registration starting at it (mrl_xfer_msg.c) take the slow path. */
static inline bool
mrl_xfer_msg_single_ok(enum mrl_msg_kind kind, const struct mrl_xep *x,
		       size_t len)
{
	return mrl_xfer_msg_dir(kind) == MRL_RX || len <= x->based_after;
}

ssize_t __attribute__((cold))
mrl_xfer_msg_single_slow(enum mrl_msg_kind kind, const struct mrl_op_args *s,
			 void *context, int err);
ssize_t __attribute__((cold))
mrl_xfer_msg_single_failed(enum mrl_msg_kind kind, struct mrl_op *op, int err);

#endif /* MRL_XFER_MSG_H */
