/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Conformance by transcript: each semantic (fi_eq(3), fi_cq(3), fi_poll(3),
 * fi_cntr(3), fi_av(3), fi_mr(3), fi_trigger(3), fi_endpoint(3),
 * fi_tagged(3)) runs in a child process on one provider and prints what the
 * application observes, one line per step: return codes, and entry contents
 * normalised to what an application may rely on. The driver (test_conform.c)
 * runs each semantic without FI_HOOK and under every hook setting and
 * requires the same transcript.
 *
 * Normalisation: a pointer is printed as the name of the application's
 * object it points into ("ctx_r0", "rbuf+16", "ep1"), "NULL", or "foreign"
 * (no object of this application), never as an address. So a fid or
 * context the application handed in must come back as the same name,
 * while a buffer address or an inner fid that legitimately differs
 * between runs never shows. Lines starting with '#' are diagnostics and
 * lines starting with '@' are facts for the driver (whether the hook is in
 * the path); neither is compared.
 */
#ifndef CONFORM_H
#define CONFORM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "common/fixture_rdm.h"

/* Exit status of a semantic's child: the transcript is complete (whatever
 * the provider supports), or a step the semantic needs failed in a way
 * that leaves nothing to compare (the no-hook run's failure is a skip). */
#define CF_DONE	  0
#define CF_BROKEN 3
/* A blocking call outlived its own timeout by seconds (see CF_BLOCKING). */
#define CF_HANG 4
/* The provider does not offer what the semantic is about (a '#' line says
 * what it answered): the case is a skip with that reason. */
#define CF_UNOFFERED 5
/* Seconds a whole semantic may take. */
#define CF_SEMANTIC_S 30

/* Bound of every wait inside a semantic, in seconds (blocking calls get
 * their own shorter timeouts). */
#define CF_WAIT_S 5.0

/* The provider this child runs on. */
extern const char *cf_prov;

/* ------------------------------------------------------------------------
 * Transcript.
 */

/* One transcript line. */
void cf_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A return code: "0", "24", "-FI_EAGAIN". Rotating static buffers: valid
 * for a few calls. */
const char *cf_rc(ssize_t rc);
/* Flags as libfabric names them (fi_tostr). Rotating static buffers. */
const char *cf_flags(uint64_t flags, enum fi_type type);
/* Whether rc says the provider does not do this at all. */
bool cf_unsupported(ssize_t rc);

/* Name [p, p + len) (len 0: the pointer alone) for cf_ptr. */
void cf_name(const void *p, size_t len, const char *name);
/* The name of what p points into, "NULL" or "foreign". Rotating buffers. */
const char *cf_ptr(const void *p);
/* Name an fi_addr_t for cf_addr. */
void cf_name_addr(fi_addr_t addr, const char *name);
/* "FI_ADDR_UNSPEC", "FI_ADDR_NOTAVAIL", a name, or "unnamed". */
const char *cf_addr(fi_addr_t addr);
/* Milliseconds on the monotonic clock. */
double cf_now_ms(void);
/* How a blocking call with timeout_ms that took elapsed_ms ended: "early"
 * (well before its timeout) or "timeout". */
const char *cf_timing(double elapsed_ms, int timeout_ms);

/* Bound this process to CF_SEMANTIC_S seconds (SIGALRM ends it with
 * CF_HANG and a "# hang in ..." line). */
void cf_deadline_start(void);
void cf_block_begin(const char *what, int timeout_ms);
void cf_block_end(void);
/* expr, a call that blocks up to timeout_ms: a hang in it ends the process
 * a few seconds after its timeout, naming it, rather than at the
 * semantic's bound. */
#define CF_BLOCKING(what, timeout_ms, expr)       \
	({                                        \
		cf_block_begin(what, timeout_ms); \
		__typeof__(expr) cf_v_ = (expr);  \
		cf_block_end();                   \
		cf_v_;                            \
	})

/* ------------------------------------------------------------------------
 * The rig: fabric, domain and two connected endpoints on loopback (RDM
 * through an AV each, or a connected FI_EP_MSG pair for tcp), each with
 * its own CQ and optional counters. Every fid is tracked (mrlt.h) and
 * named (ep0, cq0, ...), every context too.
 */

struct cf_opts {
	uint64_t caps; /* 0: FI_MSG | FI_TAGGED */
	enum fi_ep_type ep_type; /* 0: cf_ep_type() */
	struct fi_cq_attr cq; /* format 0: FI_CQ_FORMAT_TAGGED */
	bool cntrs; /* tx (FI_SEND|FI_WRITE|FI_READ) and rx
		     * (FI_RECV) counters per side */
	struct fi_cntr_attr cntr;
	bool no_connect; /* RDM: leave the AVs empty */
	bool cm_log; /* MSG: print the connection events */
	bool thread_safe; /* ask for FI_THREAD_SAFE */
	bool wait_set; /* CQs and counters on one wait set (ws) */
	uint64_t cq_bind; /* more CQ bind flags (FI_SELECTIVE_COMPLETION) */
};

struct cf_rig {
	struct mrlt_domain d;
	bool msg; /* FI_EP_MSG (tcp) */
	struct fid_ep *ep[2]; /* msg: ep[0] connects, ep[1] accepts */
	struct fid_cq *cq[2];
	struct fid_av *av[2]; /* RDM only */
	struct fid_eq *eq[2]; /* MSG only */
	struct fid_cntr *tx[2], *rx[2];
	struct fid_pep *pep;
	struct fid_eq *pep_eq;
	struct fid_wait *ws;
	fi_addr_t peer[2]; /* the other side in ep[i]'s AV */
	char name[2][256];
	size_t namelen[2];
	char ctx_ep[2], ctx_cq[2], ctx_av[2], ctx_tx[2], ctx_rx[2];
};

/* Endpoint type the provider offers on its own (tcp 1.17: MSG only). */
enum fi_ep_type cf_ep_type(void);
/* fi_getinfo for cf_prov with caps; prints the failure as a transcript
 * line ("getinfo: -FI_ENODATA") and returns it. */
int cf_info(enum fi_ep_type type, uint64_t caps, bool thread_safe,
	    struct fi_info **info);
/* Fabric and domain from info; prints "@hook 0|1". */
int cf_domain_open(struct fi_info *info, struct mrlt_domain *d);
/* The whole rig. A failure is printed ("rig: fi_xxx = rc") and returned. */
int cf_rig_open(struct cf_rig *r, const struct cf_opts *o);
/* Exit status for a failed set-up step: CF_DONE when the provider just
 * does not do it (the transcript says so), CF_BROKEN otherwise. */
int cf_setup_failed(int ret);
/* Progress both sides without consuming anything. */
void cf_progress(struct cf_rig *r);
/* Post, retrying -FI_EAGAIN (with progress) within CF_WAIT_S. */
#define CF_POST(r, expr)                                            \
	({                                                          \
		ssize_t cf_rc_;                                     \
		double cf_end_ = cf_now_ms() + CF_WAIT_S * 1e3;     \
		while ((cf_rc_ = (ssize_t) (expr)) == -FI_EAGAIN && \
		       cf_now_ms() < cf_end_)                       \
			cf_progress(r);                             \
		cf_rc_;                                             \
	})
/* Post a receive of len bytes into rbuf on ep[1] (context rctx), then a
 * send of len bytes from sbuf on ep[0] (sctx), desc NULL; prints
 * "recv: rc" and "send: rc". */
void cf_post_recv_send(struct cf_rig *r, void *rbuf, const void *sbuf,
		       size_t len, struct fi_context2 *rctx,
		       struct fi_context2 *sctx);
/* Read one entry from cq[side] (readfrom when src is non-NULL), within
 * CF_WAIT_S, progressing the other side. Returns the last read's result
 * (1, -FI_EAVAIL, ..., -FI_EAGAIN when the bound was hit). */
ssize_t cf_reap(struct cf_rig *r, int side, struct fi_cq_tagged_entry *e,
		fi_addr_t *src);
/* Print a completion (what: a label) with the fields an application may
 * rely on for its kind (fi_cq(3)). */
void cf_print_cqe(const char *what, const struct fi_cq_tagged_entry *e);
/* fi_cq_readerr on cq and print it with fi_cq_strerror. */
void cf_print_cqerr(const char *what, struct fid_cq *cq);
/* Reap one entry from side and print it (or the error entry). */
void cf_reap_print(struct cf_rig *r, int side, const char *what, bool from);
/* Wait until *cntr reaches value (or CF_WAIT_S), progressing r. */
uint64_t cf_cntr_until(struct cf_rig *r, struct fid_cntr *cntr, uint64_t value);
/* Wait (yielding, within CF_WAIT_S) until another thread sets *started,
 * the first thing it does; returns whether it did. The thread may not be
 * inside its blocking call yet: what wakes it must work either way. */
bool cf_wait_started(atomic_int *started);
/* Close every tracked fid now; prints "close: rc". */
void cf_close_all(void);

/* MRs (conform_mr.c). The address an RMA names buf by (0-based unless
 * FI_MR_VIRT_ADDR). */
uint64_t cf_rma_addr(const struct cf_rig *r, const void *buf);
/* Register [buf, buf + len) as what (tracked, named, printed); 0 or the
 * provider's code, printed, with *mr NULL. */
ssize_t cf_mr_reg(struct cf_rig *r, void *buf, size_t len, uint64_t access,
		  uint64_t key, struct fid_mr **mr, void *ctx, const char *what);
/* Bind mr to ep and enable it, for FI_MR_ENDPOINT domains. */
void cf_mr_attach(const struct cf_rig *r, struct fid_mr *mr, struct fid_ep *ep,
		  const char *what);

/* ------------------------------------------------------------------------
 * Semantics: each prints its transcript and returns CF_DONE or CF_BROKEN.
 */
int cf_info_attrs(void);
int cf_eq_rw(void);
int cf_eq_sread(void);
int cf_eq_readerr(void);
int cf_cq_rw(void);
int cf_cq_sread(void);
int cf_poll_set(void);
int cf_wait_set(void);
int cf_cntr(void);
int cf_cntr_wait(void);
int cf_av(void);
int cf_av_event(void);
int cf_mr(void);
int cf_mr_key(void);
int cf_cancel(void);
int cf_claim(void);
int cf_claim_selective(void);
int cf_trigger(void);
int cf_alias(void);
int cf_alias_trigger(void);
int cf_ep_opt_before(void);
int cf_ep_opt(void);
int cf_cm(void);

#endif /* CONFORM_H */
