/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fixture of every test on a real provider over loopback: endpoint
 * pairs, their completions, and registrations with the right key and
 * remote address for the domain's mr_mode.
 *
 * One set of steps (fi_getinfo keeping the exact provider asked for, fabric
 * and domain, an endpoint bound to its companions and enabled, a
 * registration bound where FI_MR_ENDPOINT wants it) builds two shapes of
 * RDM pair:
 *
 *  - peers (struct mrlt_peer, mrlt_rdm_pair_open): each endpoint with its own
 *    CQ, AV and optional counters, so a test sees every completion and
 *    counter from one side. Every fid is tracked (mrlt.h: closed when the
 *    test returns) and a failure is recorded with the call that failed.
 *    The passthrough layer's tests use them, and FI_EP_MSG pairs below.
 *  - a shared pair (struct mrlt_pair, mrlt_pair_open): two endpoints on one
 *    domain sharing one AV and one CQ (or one pair of counters), so reading
 *    it progresses both sides and tests tell completions apart by context.
 *    Closed by mrlt_pair_close, errors returned rather than recorded, so it
 *    also serves outside a test case: benchmarks, forked children, threads.
 *    The data-path tests use it, with the mrlease and mrcheck extension ops
 *    of its domain.
 */
#ifndef FIXTURE_RDM_H
#define FIXTURE_RDM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "mrcheck.h"
#include "mrlt.h"
#include "rdma/fi_ext_mrlease.h"

/* ------------------------------------------------------------------------
 * Information and domains.
 */

/* The API version the tests ask for. */
#define MRLT_FI_VERSION FI_VERSION(1, 17)

/*
 * Hints for provider `prov` (exact fabric_attr->prov_name such as
 * "tcp;ofi_rxm", or NULL for any) and endpoint type, asking for `caps`.
 * mode is FI_CONTEXT (pass a struct fi_context2 as every op's context),
 * mr_mode is every basic bit except FI_MR_LOCAL (VIRT_ADDR, ALLOCATED,
 * PROV_KEY, ENDPOINT: handle them with mrlt_mr_reg/mrlt_rma_addr), so desc
 * NULL is always legal. The caller may adjust the hints before mrlt_getinfo.
 */
struct fi_info *mrlt_hints(const char *prov, enum fi_ep_type type,
			   uint64_t caps);
/*
 * fi_getinfo(MRLT_FI_VERSION, node, service, flags, hints) keeping the first
 * result whose prov_name is exactly the hinted one, preferring
 * FI_SOCKADDR_IN addresses. Frees hints; *info is one tracked fi_info (its
 * next is NULL). Returns -FI_ENODATA without recording a failure when the
 * provider offers nothing matching (so callers can turn it into a skip).
 */
int mrlt_getinfo(struct fi_info *hints, const char *node, const char *service,
		 uint64_t flags, struct fi_info **info);

/* A fabric and a domain opened from one info; all tracked. */
struct mrlt_domain {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};
int mrlt_domain_open(struct fi_info *info, struct mrlt_domain *d);

/* How mrlt_peer_open builds an endpoint's companions. */
struct mrlt_peer_opts {
	enum fi_cq_format cq_format; /* 0: FI_CQ_FORMAT_TAGGED */
	enum fi_wait_obj cq_wait; /* 0 (FI_WAIT_NONE) or e.g. FI_WAIT_UNSPEC */
	bool cntrs; /* open and bind tx_cntr, rx_cntr and
		     * rma_cntr (see struct mrlt_peer) */
	enum fi_wait_obj cntr_wait;
	bool remote_cntr; /* with cntrs: also remote_cntr
			   * (needs FI_RMA_EVENT in the info) */
};

/* One RDM/DGRAM endpoint with its CQ (bound FI_TRANSMIT|FI_RECV), AV,
 * optional counters, and the address of the peer it talks to. */
struct mrlt_peer {
	struct mrlt_domain *dom;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_cntr *tx_cntr; /* FI_SEND */
	struct fid_cntr *rx_cntr; /* FI_RECV */
	struct fid_cntr *rma_cntr; /* FI_READ | FI_WRITE */
	struct fid_cntr *remote_cntr; /* FI_REMOTE_WRITE | FI_REMOTE_READ */
	struct fid_eq *eq; /* optional: peeked by mrlt_progress (the
			    * connection manager progresses there) */
	fi_addr_t peer; /* the other endpoint in av */
	char name[256]; /* fi_getname of ep */
	size_t namelen;
};

/*
 * Open an endpoint on d with its companions (see mrlt_peer_opts; opts may be
 * NULL) and enable it. For providers with FI_ADDR_STR names (shm) the
 * endpoint gets a name unique to this process and call, since two
 * endpoints opened from one info would otherwise collide.
 */
int mrlt_peer_open(struct mrlt_domain *d, const struct mrlt_peer_opts *opts,
		   struct mrlt_peer *p);
/* Insert each peer's name into the other's AV (synchronously). */
int mrlt_peers_connect(struct mrlt_peer *a, struct mrlt_peer *b);
/* Both of the above for two endpoints on one domain. */
int mrlt_rdm_pair_open(struct mrlt_domain *d, const struct mrlt_peer_opts *opts,
		       struct mrlt_peer *a, struct mrlt_peer *b);

/* Drive p's progress without consuming completions or events (CQ read of
 * 0 entries, counter reads, FI_PEEK read of p->eq). NULL is ignored. */
void mrlt_progress(struct mrlt_peer *p);

/*
 * Post expr, retrying while it returns -FI_EAGAIN and progressing peers a
 * and b (either may be NULL), within the wait bound. Evaluates to the
 * post's last return value (-FI_EAGAIN if the bound was hit).
 */
#define MRLT_POST(expr, a, b)                                         \
	({                                                            \
		ssize_t post_rc_;                                     \
		struct mrlt_wait post_w_;                             \
		mrlt_wait_init(&post_w_);                             \
		while ((post_rc_ = (ssize_t) (expr)) == -FI_EAGAIN && \
		       !mrlt_wait_over(&post_w_)) {                   \
			mrlt_progress(a);                             \
			mrlt_progress(b);                             \
		}                                                     \
		post_rc_;                                             \
	})

/*
 * Read one completion from p->cq into entry (sized for p's CQ format),
 * progressing `other` meanwhile; src_addr non-NULL uses fi_cq_readfrom.
 * An error entry, a read error or hitting the wait bound records a failure
 * (naming `what`) and returns a negative fi_errno; returns 0 on success.
 */
int mrlt_cq_wait(struct mrlt_peer *p, struct mrlt_peer *other, void *entry,
		 fi_addr_t *src_addr, const char *what);
/*
 * Wait for an error entry on p->cq and read it with fi_cq_readerr into err
 * (zeroed first). A successful completion instead records a failure.
 * Returns 0 when an error entry was read.
 */
int mrlt_cq_wait_err(struct mrlt_peer *p, struct mrlt_peer *other,
		     struct fi_cq_err_entry *err, const char *what);
/* Wait until fi_cntr_read(cntr) >= value, progressing `self` and `other`
 * meanwhile. A counter error (fi_cntr_readerr grows) records a failure. */
int mrlt_cntr_wait(struct fid_cntr *cntr, uint64_t value,
		   struct mrlt_peer *self, struct mrlt_peer *other,
		   const char *what);

/*
 * Name endpoint ep for shm (called before fi_enable where the info's
 * addr_format is FI_ADDR_STR): "fi_shm://<tag>-<pid>-<serial>", one name per
 * endpoint in the process. A region of that name in /dev/shm can only be a
 * dead process's whose pid this one reuses (one that crashed or was killed
 * leaves it there), and shm refuses a name whose region names a live pid
 * with -FI_EBUSY: it is unlinked first.
 */
int mrlt_set_shm_name(struct fid_ep *ep, const char *tag);
/*
 * The regions of those names are removed when the process that named them
 * ends, however it ends (mrlt_shm.c): mrlt_set_shm_name remembers each name
 * here, and the process unlinks its own at exit and on a terminating
 * signal. A child that crashed or was killed is swept by its parent
 * (mrlt_shm_sweep, mrlt.h).
 */
void mrlt_shm_remember(const char *name);

/*
 * Register buf for `access` on d (tracked), binding and enabling it on ep
 * when the domain has FI_MR_ENDPOINT (ep may be NULL otherwise). Without
 * FI_MR_PROV_KEY keys are the application's and must be unique per
 * domain: the requested key comes from mrlt_next_key(). Read the real key
 * with fi_mr_key.
 */
int mrlt_mr_reg(struct mrlt_domain *d, struct fid_ep *ep, void *buf, size_t len,
		uint64_t access, struct fid_mr **mr);
/* A requested key no other helper call in this process used (from 0x1000
 * up; keys below are free for tests that pick their own). */
uint64_t mrlt_next_key(void);
/* The address a peer names for offset 0 of buf registered in d: buf itself
 * under FI_MR_VIRT_ADDR, 0 otherwise. */
uint64_t mrlt_rma_addr(const struct mrlt_domain *d, const void *buf);

/* Read one event from eq without blocking; returns the event number (>= 0),
 * -FI_EAGAIN, or records a failure for an error entry (read with
 * fi_eq_readerr and described) and returns -FI_EAVAIL. */
ssize_t mrlt_eq_poll(struct fid_eq *eq, uint32_t *event, void *buf, size_t len);
/* Wait (bounded) for one event on eq, progressing `a` and `b` (either may be
 * NULL: some providers, tcp for one, notice a peer's shutdown only while
 * their CQ is read); the event must be `expected`. */
int mrlt_eq_wait(struct fid_eq *eq, uint32_t expected, void *buf, size_t len,
		 struct mrlt_peer *a, struct mrlt_peer *b, const char *what);

/* Wait (bounded) for an error entry on eq and read it with fi_eq_readerr
 * into err (zeroed first); a regular event instead is a failure. */
int mrlt_eq_wait_err(struct fid_eq *eq, struct fi_eq_err_entry *err,
		     struct mrlt_peer *a, struct mrlt_peer *b,
		     const char *what);

/* A passive endpoint from d->info bound to a new EQ (*eq) and listening;
 * its address in addr (*addrlen bytes, in: the buffer's size). */
int mrlt_pep_listen(struct mrlt_domain *d, struct fid_eq **eq,
		    struct fid_pep **pep, void *addr, size_t *addrlen);
/*
 * An FI_EP_MSG endpoint from (a copy of) info with its own new EQ and CQ
 * (FI_CQ_FORMAT_DATA, bound FI_TRANSMIT|FI_RECV), enabled. dest non-NULL
 * sets the copy's dest_addr (the client side, before fi_connect); for the
 * server side pass the FI_CONNREQ info (its handle) and dest NULL. srx
 * non-NULL: opened with rx_ctx_cnt FI_SHARED_CONTEXT and bound to srx.
 */
int mrlt_msg_ep_open(struct mrlt_domain *d, struct fi_info *info,
		     const void *dest, size_t destlen, struct fid_ep *srx,
		     struct fid_eq **eq, struct fid_ep **ep,
		     struct fid_cq **cq);

/*
 * A connected FI_EP_MSG pair in one domain (e.g. plain "tcp"): a passive
 * endpoint listening on the loopback, a client that fi_connect()s to it and
 * a server endpoint opened from the FI_CONNREQ info (info->handle) and
 * fi_accept()ed. Each side has its own EQ and CQ (bound FI_TRANSMIT|
 * FI_RECV). The fids the EQ events carried are recorded so tests can check
 * them against the objects they opened.
 */
struct mrlt_msg_pair {
	struct mrlt_domain *dom;
	struct fid_eq *pep_eq, *srv_eq, *cli_eq;
	struct fid_pep *pep;
	struct fid_ep *srv, *cli;
	struct fid_cq *srv_cq, *cli_cq;
	fid_t connreq_fid; /* fid of the FI_CONNREQ event (want: pep) */
	fid_t srv_connected_fid; /* FI_CONNECTED on the server side (want: srv)
				  */
	fid_t cli_connected_fid; /* FI_CONNECTED on the client side (want: cli)
				  */
	void *connreq_handle; /* info->handle of the FI_CONNREQ */
	struct mrlt_peer cli_side,
		srv_side; /* views of the CQs and EQs for
			   * mrlt_cq_wait/mrlt_progress/MRLT_POST */
};
/* srx non-NULL: the server endpoint is opened with rx_ctx_cnt
 * FI_SHARED_CONTEXT and bound to it. */
int mrlt_msg_pair_open(struct mrlt_domain *d, struct fid_ep *srx,
		       struct mrlt_msg_pair *p);

/* ------------------------------------------------------------------------
 * Shared pair: two endpoints, one AV, one CQ (or counters).
 */

struct mrlt_pair_opts {
	const char *prov; /* fabric_attr->prov_name, e.g. "tcp;ofi_rxm" */
	uint64_t caps; /* 0: FI_MSG|FI_TAGGED|FI_RMA|FI_ATOMIC */
	bool mr_local; /* open the domain with FI_MR_LOCAL in mr_mode */
	bool selective; /* bind the CQ with FI_SELECTIVE_COMPLETION */
	bool counters_only; /* bind counters, no CQ */
	bool thread_safe; /* ask for FI_THREAD_SAFE */
	/* open the domain FI_THREAD_DOMAIN, whatever threading the provider
	 * granted (rxm grants FI_THREAD_SAFE to a FI_THREAD_DOMAIN hint) */
	bool thread_domain;
	uint64_t rx_op_flags; /* e.g. FI_MULTI_RECV */
	size_t min_multi_recv; /* FI_OPT_MIN_MULTI_RECV when non-zero */
	enum fi_wait_obj cq_wait; /* the CQ's wait object (0: FI_WAIT_NONE) */
};

struct mrlt_pair {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq; /* NULL when counters_only */
	struct fid_cntr *tx_cntr, *rx_cntr; /* only when counters_only */
	struct fid_ep *ep[2];
	fi_addr_t addr[2]; /* addr[i]: ep[i]'s address in av */
	struct fi_mrlease_ops *mrl; /* NULL without the mrlease hook */
	struct mrcheck_ops *chk; /* domain counters, NULL without mrcheck */
	struct mrcheck_ops *chk_all; /* process-wide counters */
	/* Completions read while retrying a post (MRLT_PAIR_POST), handed out
	 * first by mrlt_reap. */
	struct mrlt_comp *stash;
	size_t nstash;
	uint64_t violations0, acknowledged0; /* process-wide, at open */
};

/*
 * Open fabric, domain, AV, CQ/counters and two enabled endpoints that know
 * each other. Returns -FI_ENODATA when the provider is not available (skip),
 * another -FI_E* code on failure. On failure nothing stays open.
 * Hints: FI_EP_RDM, FI_CONTEXT | FI_CONTEXT2, mr_mode FI_MR_LOCAL |
 * VIRT_ADDR | ALLOCATED | PROV_KEY (FI_MR_LOCAL is dropped from the domain
 * unless opts->mr_local: desc NULL is then legal).
 */
int mrlt_pair_open(const struct mrlt_pair_opts *opts, struct mrlt_pair *pair);
/*
 * mrlt_pair_open for the current test case: a provider or feature that is
 * missing makes the case a skip, any other failure (or the mrlease hook not
 * active) fails it. True when the pair is open with the hook on.
 */
bool mrlt_pair_open_hooked(const struct mrlt_pair_opts *opts,
			   struct mrlt_pair *pair);
/* The same for a case that needs FI_THREAD_SAFE endpoints (opts->thread_safe):
 * a provider that grants less makes the case a skip. */
bool mrlt_pair_open_hooked_safe(const struct mrlt_pair_opts *opts,
				struct mrlt_pair *pair);
/* Close everything; returns the first non-zero fi_close result. */
int mrlt_pair_close(struct mrlt_pair *pair);

/* One completion, from a CQ entry or an error entry. */
struct mrlt_comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data, tag;
	int err; /* 0, or the positive FI_E* of an error entry */
};

/* Poll budget for one completion: a test that hangs fails instead. */
#define MRLT_MAX_POLLS 50000000L
#define MRLT_STASH     1024

/*
 * Read exactly n completions (error entries included) from pair's CQ into
 * comps; returns n, or -FI_ETIMEDOUT when the poll budget runs out, or the
 * CQ's error code.
 */
int mrlt_reap(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n);
/* The same with a poll budget of its own. */
int mrlt_reap_within(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n,
		     long max_polls);
/* Read whatever is there now (at most n, one read call); returns the count. */
int mrlt_reap_some(struct mrlt_pair *pair, struct mrlt_comp *comps, size_t n);
/* Drive progress once (read the CQ into the stash, or read counters). */
void mrlt_pair_progress(struct mrlt_pair *pair);

/* Post with expr, retrying while it returns -FI_EAGAIN (connection set-up,
 * full queues) and driving progress in between; bounded. */
#define MRLT_PAIR_POST(pair, expr)                              \
	({                                                      \
		uint64_t post_calls_ = 0;                       \
		MRLT_PAIR_POST_CALLS(pair, &post_calls_, expr); \
	})
/* The same, adding to *calls how many times it called expr (a call refused
 * with -FI_EAGAIN included). */
#define MRLT_PAIR_POST_CALLS(pair, calls, expr)            \
	({                                                 \
		ssize_t post_r_;                           \
		long post_n_ = 1;                          \
		while ((post_r_ = (expr)) == -FI_EAGAIN && \
		       post_n_ < MRLT_MAX_POLLS) {         \
			post_n_++;                         \
			mrlt_pair_progress(pair);          \
		}                                          \
		*(calls) += (uint64_t) post_n_;            \
		post_r_;                                   \
	})

/* Wait until counter reaches value (bounded); counters_only pairs. */
int mrlt_wait_cntr(struct fid_cntr *cntr, uint64_t value);

/*
 * Operations waited for by the thread that posted them, while other threads
 * read the same CQ: whoever reads a completion marks its operation done.
 * Every operation posted on such a pair must have a struct mrlt_op as its
 * context.
 */
struct mrlt_op {
	struct fi_context2 ctx; /* FI_CONTEXT: first */
	atomic_int done;
	int err; /* positive FI_E* of an error entry */
};
/* Reset op for a new post; returns op. */
struct mrlt_op *mrlt_op_start(struct mrlt_op *op);
/* Read whatever pair's CQ holds and mark those operations done; returns 0
 * or the CQ's error. */
int mrlt_pair_poll_ops(struct mrlt_pair *pair);
/* Poll (bounded) until op is done; returns 0, -its error, or
 * -FI_ETIMEDOUT. */
int mrlt_op_wait(struct mrlt_pair *pair, struct mrlt_op *op);

/*
 * Register buf with access; picks a requested key where the domain lacks
 * FI_MR_PROV_KEY and binds/enables where it has FI_MR_ENDPOINT.
 */
int mrlt_pair_mr_reg(struct mrlt_pair *pair, void *buf, size_t len,
		     uint64_t access, struct fid_mr **mr);
/* The remote address to give RMA/atomic calls for target buf inside mr. */
uint64_t mrlt_pair_rma_addr(const struct mrlt_pair *pair, const void *mr_base,
			    const void *buf);

/* The domain's lease cache statistics (query_stats; zeroes without the
 * hook). */
struct fi_mrlease_stats mrlt_pair_stats(const struct mrlt_pair *pair);
/* Live leases of the domain (query_stats), or -1 without the hook. */
long long mrlt_live_leases(const struct mrlt_pair *pair);
/* mrcheck violations (process-wide) since the pair opened, or -1 without
 * mrcheck. */
long long mrlt_violations(const struct mrlt_pair *pair);

/* Wait (bounded progress, no sleeping) until buf holds the pattern of seed,
 * for the target of a write whose initiator completion may come first.
 * Returns -1 when it does, else the first differing index. */
long mrlt_wait_pattern(struct mrlt_pair *pair, const void *buf, size_t len,
		       uint64_t seed);

#endif /* FIXTURE_RDM_H */
