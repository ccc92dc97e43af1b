/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path's state of the hook objects it extends: an endpoint's
 * (struct mrl_xep, mrl_ep.ext: per direction what its posts need, fixed at
 * fi_enable), a CQ's (struct mrl_xcq, mrl_cq.ext) and a counter's (struct
 * mrl_xcntr, mrl_cntr.ext), and the op tables an endpoint that leases
 * installs. mrl_xfer.h states the rules they keep.
 */
#ifndef MRL_XFER_STATE_H
#define MRL_XFER_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "mrl_xfer_op.h"

/* ---- endpoints ----------------------------------------------------------- */

enum mrl_dir { MRL_TX, MRL_RX, MRL_NDIR };

/* How one direction of an endpoint learns that a leased operation ended. */
enum mrl_route {
	MRL_ROUTE_NONE, /* it cannot: never lease */
	MRL_ROUTE_ALL, /* the app's CQ reports every operation */
	MRL_ROUTE_SELECTIVE, /* the app's CQ, FI_SELECTIVE_COMPLETION */
	MRL_ROUTE_INTERNAL, /* no app CQ: our own CQ on the inner ep */
};

/* What the post path of one direction needs, fixed at fi_enable. */
struct mrl_xdir {
	size_t min; /* non-msg calls: smallest leased operand
		     * (SIZE_MAX: never lease) */
	size_t min_msg; /* msg calls (explicit flags) */
	bool convert; /* leased non-msg calls go out as msg calls
		       * with FI_COMPLETION (route needs it) */
	bool flags_visible; /* completions carry flags (multi-recv) */
	/* rx: FI_MULTI_RECV buffers may lease (flags visible, the endpoint's
	 * rx caps have FI_MULTI_RECV, a pool); on a shared pool reading an
	 * app CQ that CQ is guarded first (mrl_xfer_msg_multi_recv_ok). */
	bool multi_recv;
	uint8_t route; /* enum mrl_route */
	uint16_t live_flags; /* op flags of a leased non-converted non-msg
			      * post (MRL_OP_MULTI_RECV from op_flags) */
	uint64_t op_flags; /* default op flags, for converted calls */
	/* The endpoint's pool when single-buffer non-msg calls may take the
	 * hit path (leasing, not converted), else &mrl_xfer_op_pool_none. */
	struct mrl_op_pool *single;
	/* The owner's op shape and state for single-buffer calls (live_flags
	 * | MRL_OP_OWNED, one lease: mrl_xfer_post_op_live), so a receive's first
	 * half stores them without computing them. */
	uint32_t owned_shape, owned_state;
};

struct mrl_xcntr;

/* The domain requires local descriptors (FI_MR_LOCAL, or the older
 * FI_LOCAL_MR mode bit): leasing is mandatory. */
static inline bool
mrl_xfer_domain_mr_local(const struct mrl_domain *dom)
{
	return (dom->mr_mode & FI_MR_LOCAL) || (dom->mode & MRL_FI_LOCAL_MR);
}

/* Local descriptors handed to the provider must name registrations that
 * start at the operand (FI_MR_LOCAL without FI_MR_VIRT_ADDR: rxm 1.17's
 * rendezvous reads from the MR's start; see mrl_xfer_msg.c). */
static inline bool
mrl_xfer_domain_mr_at_operand(const struct mrl_domain *dom)
{
	return mrl_xfer_domain_mr_local(dom) &&
	       !(dom->mr_mode & (FI_MR_VIRT_ADDR | MRL_FI_MR_BASIC));
}

/* The data path's state of one hook endpoint (mrl_ep.ext). */
struct mrl_xep {
	struct mrl_xdir dir[MRL_NDIR];
	struct mrl_ep *ep;
	struct mrl_cache_domain *cache; /* leases come from here */
	bool mr_local; /* FI_MR_LOCAL: leasing is mandatory */
	/* Sends longer than this lease registrations starting at each iov
	 * (mrl_xfer_msg.c); SIZE_MAX: never. */
	size_t based_after;
	uint64_t op_flags[MRL_NDIR]; /* default op flags (+ FI_SETOPSFLAG) */
	struct mrl_op_pool *pool; /* created at fi_enable if leasing */
	struct fid_cq *internal_cq; /* inner CQ for MRL_ROUTE_INTERNAL */
	struct mrl_xcntr *progress[4]; /* counters that drain internal_cq */
	pthread_mutex_t drain_lock; /* serialises internal_cq reads */
	uint64_t rx_caps; /* rx caps from the open (0: unknown) */
	/* Leased FI_MULTI_RECV buffers may be posted: the rx CQ is guarded
	 * and pool->defer set, or nothing needs it (mrl_xfer_cq_guard_rx). */
	atomic_bool rx_guarded;
};

/* Make leased FI_MULTI_RECV posts safe on x (guard its rx CQ when its pool
 * is shared: mrl_xfer_cq.c); 0, or the post goes out unleased. */
int mrl_xfer_cq_guard_rx(struct mrl_xep *x);

/* Op tables (mrl_xfer_*.c): the passthrough's, with every post that can
 * carry a local operand replaced; filled once by mrl_xfer_tables_init. */
extern struct fi_ops_msg mrl_xfer_msg_ops;
extern struct fi_ops_tagged mrl_xfer_tagged_ops;
extern struct fi_ops_rma mrl_xfer_rma_ops;
extern struct fi_ops_atomic mrl_xfer_atomic_ops;
void mrl_xfer_msg_init(void);
void mrl_xfer_tagged_init(void);
void mrl_xfer_rma_init(void);
void mrl_xfer_atomic_init(void);
/* An endpoint of a domain that never leases: its RMA calls forwarded
 * without the passthrough's per-call checks when the inner table has them. */
void mrl_xfer_rma_plain_install(struct mrl_ep *ep);
/* ---- completion side (mrl_xfer_cq.c, mrl_xfer_cntr.c) ----------------- */

/*
 * Claiming receives in flight whose completions a CQ reports
 * (mrl_xfer_claim.c): the provider ties a claim to the application's
 * context (rxm keeps its state in it, sockets and tcp match on its
 * address), so it gets that context, and the CQ finds the op holding the
 * leases by it. The chains link ops through their provider scratch space,
 * which a claim never hands down.
 */
struct mrl_claims {
	/* Ops in the table: reads look only while there are some. */
	atomic_size_t n;
	/* Guards the buckets and chains; nothing is called in the provider
	 * under it (a growing table allocates under it: no memory hook
	 * reaches this table). */
	pthread_mutex_t lock;
	struct mrl_op **buckets;
	size_t nbuckets; /* a power of two, 0 until the first claim */
};

/* Whether any claim is in flight (one load; exact under the provider's
 * ordering: a claim is in the table before its post reaches the provider,
 * so a read that returns its completion sees it). */
static inline bool
mrl_xfer_claims_any(struct mrl_claims *c)
{
	return atomic_load_explicit(&c->n, memory_order_acquire) != 0;
}

/* The op of the claim a completion with context ctx (and the entry's flags
 * at flagsp, NULL: none) ends, taken out of the table; NULL if none. */
struct mrl_op *mrl_xfer_claims_take(struct mrl_claims *c, void *ctx,
				    const uint64_t *flagsp);

/* The data path's state of a CQ (mrl_cq.ext). */
/* Completions a CQ reads ahead at most (struct mrl_xcq). */
#define MRL_XCQ_STASH 16

struct mrl_xcq {
	size_t entry_size;
	struct mrl_cache_domain *cache; /* its domain's: reads settle it */
	struct mrl_bind_remote *remote; /* likewise, when it keeps entries */
	/* Reads go through the guarded table (mrl_xfer_cq_guard): set once. */
	atomic_bool guarded;
	struct mrl_cq_guard guard;
	/* fi_cq_signal calls: a blocking read the hook would retry after a
	 * hidden batch returns instead when one came (mrl_xfer_cq_wait.c). */
	atomic_uint signals;
	struct mrl_claims claims;
	/* Pools of endpoints closed with orphans, kept until the CQ closes. */
	pthread_mutex_t lock; /* guards pools, the read table's
			       * switches (base, stash) and the
			       * stash; nothing is called in the
			       * provider under it but the reads
			       * that fill the stash */
	struct mrl_op_pool **pools;
	size_t npools, cap;
	/* The table reads use when the stash is empty: the format's, or the
	 * guarded one once guarded. */
	const struct fi_ops_cq *base;
	/* Completions read ahead for a poll set or fi_trywait that had to
	 * know whether one is the application's (mrl_xfer_cq_readable):
	 * translated, handed out first (the CQ reads through the stash
	 * table while any is here). */
	size_t nstash, stash_head;
	unsigned char stash[MRL_XCQ_STASH * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t stash_src[MRL_XCQ_STASH];
};

/* A claiming receive (FI_CLAIM without FI_PEEK or FI_DISCARD), its buffer
 * leased and its context the application's (mrl_xfer_claim.c). */
ssize_t mrl_xfer_tagged_claim(struct mrl_ep *ep,
			      const struct fi_msg_tagged *msg, uint64_t flags);
/* A CQ's claims table: set up at open, torn down at close
 * (mrl_xfer_claim.c). */
int mrl_xfer_claims_init(struct mrl_claims *c);
void mrl_xfer_claims_fini(struct mrl_claims *c);
/* Endpoint close, before its ops are orphaned: x's claims leave its rx CQ's
 * table (the provider let go of them; entries still queued reach the
 * application as the provider wrote them). */
void mrl_xfer_ep_claims_close(struct mrl_xep *x);

/* Keep pool alive until cq closes (an endpoint closed with orphans). */
int mrl_xfer_cq_hold_pool(struct mrl_cq *cq, struct mrl_op_pool *pool);
/* Switch cq's reads to the guarded ones (idempotent); its guard, or NULL
 * when cq does not translate (no ext). */
struct mrl_cq_guard *mrl_xfer_cq_guard(struct mrl_cq *cq);

/* Counters drive internal CQs of counters-only endpoints (mrl_cntr.ext). */
struct mrl_xcntr {
	struct mrl_cache_domain *cache; /* its domain's: reads settle it */
	struct mrl_bind_remote *remote; /* likewise, when it keeps entries */
	pthread_mutex_t lock; /* guards eps; held while draining them, so an
			       * endpoint cannot close under a drain */
	atomic_size_t neps;
	struct mrl_xep **eps;
	size_t cap;
};

int mrl_xfer_cntr_add(struct mrl_xcntr *c, struct mrl_xep *x);
void mrl_xfer_cntr_remove(struct mrl_xcntr *c, struct mrl_xep *x);
/* Read x's internal CQ until empty, releasing what completed. */
void mrl_xfer_cntr_drain(struct mrl_xep *x);

#endif /* MRL_XFER_STATE_H */
