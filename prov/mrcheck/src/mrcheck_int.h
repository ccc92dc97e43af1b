/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck internals: what it tracks per strict domain.
 *
 * Every MR opened on a strict domain gets a chk_mr record, which is the desc
 * mrcheck hands out (fi_mr_desc) and translates back to the provider's desc
 * on every post. Records outlive their MR (closed = true) until the domain
 * closes, so a stale desc is recognised as such and its address is never
 * reused for another record.
 *
 * Every post that will report a completion to a CQ gets a chk_op record,
 * posted as the operation's context (it starts with a struct fi_context2 for
 * providers with FI_CONTEXT/FI_CONTEXT2 mode). It holds an in_flight count
 * on each MR its local operands used until the completion is read through
 * mrcheck's CQ or the endpoint closes. Posts with FI_CLAIM keep the
 * application's context (the provider ties the claim to the context of the
 * peek); a claim that moves data is tracked by a record found by that
 * context (claims set), the first entry naming it after the post being the
 * claim's. Triggered posts (FI_TRIGGER) keep the application's context too
 * (the provider reads its struct fi_triggered_context) and are tracked the
 * same way, by any entry naming that context.
 *
 * With FI_MRCHECK_FRAMES=1 a record also holds the frame of every page its
 * iovs span, read before the record is published and never changed after;
 * freed when the MR closes (a closed record's desc is refused anyway).
 *
 * Fault injection (FI_MRCHECK_FAULT_*, mrcheck_fault.c): an injected error
 * completion waits in its CQ's chk_cq until fi_cq_readerr takes it; its
 * op stays in flight until then. A close refused once is done at the
 * provider's object: mrcheck gives the inner fid of each strict endpoint
 * and domain a copy of its fi_ops whose close refuses the first call, so
 * the passthrough layer sees the provider refuse and keeps its wrapper.
 *
 * Lock: chk_domain.lock protects the two pointer sets, every record of the
 * domain and the endpoint op lists. It is never held across a call into
 * the provider (a provider may complete an operation inline and re-enter
 * through a CQ read on another thread).
 */
#ifndef MRCHECK_INT_H
#define MRCHECK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/uio.h>

#include "mrcheck.h"
#include "mrl_hook.h"

struct chk_domain;
struct chk_ep;

struct chk_mr {
	struct chk_domain *dom;
	struct mrl_mr *hook; /* NULL once closed */
	void *inner_desc; /* what the provider expects */
	uint64_t access;
	bool closed;
	bool close_refused; /* FI_MRCHECK_FAULT_CLOSE_ONCE spent on it */
	uint64_t in_flight; /* tracked ops whose operands use it */
	uint64_t *frames; /* FI_MRCHECK_FRAMES: each iov's pages in turn,
			   * 0 where unknown; NULL when not recorded */
	/* FI_MRCHECK_FRAMES with remote access: in the key map while open
	 * (mrcheck_keys.c; key_next under its lock). */
	bool keyed;
	bool virt_addr; /* a target address is virtual, else an offset */
	uint64_t key;
	struct chk_mr *key_next;
	struct chk_mr *next; /* all records of the domain */
	size_t iov_count;
	struct iovec iov[];
};

struct chk_op {
	struct fi_context2 ctx; /* the provider's view: must stay first */
	void *app_ctx;
	struct chk_ep *ep; /* NULL once the endpoint closed (zombie) */
	struct chk_op *prev, *next; /* the endpoint's ops in flight */
	const char *what;
	bool multi_recv;
	bool claim; /* in the claims set, posted with app_ctx */
	bool triggered; /* FI_TRIGGER (also a claim: posted with app_ctx) */
	size_t nmr;
	struct chk_mr *mr[];
};

struct chk_counts {
	uint64_t by_kind[MRCHECK_VIOLATION_KINDS];
	uint64_t mr_opened, mr_closed, posts_checked, ops_tracked,
		ops_completed;
	uint64_t frames_recorded, frames_checked, frames_remote_checked;
	uint64_t faults_reg, faults_reg_by_code[MRCHECK_FAULT_CODES];
	uint64_t faults_post, faults_cq_err, faults_cq_err_read, faults_close;
	uint64_t cost_regs, cost_ns;
};

struct chk_domain {
	struct mrl_domain *hook;
	pthread_mutex_t lock;
	void *mrs; /* tsearch set of struct chk_mr * */
	void *ops; /* tsearch set of struct chk_op * */
	void *claims; /* tsearch set of claim records, by app_ctx */
	struct chk_mr *all_mrs;
	struct chk_counts counts;
	struct fi_ops_mr mr_ops;
	struct mrcheck_ops api; /* fi_open_ops on this domain */
	bool reg_cost; /* registrations here pay the cost model */
	/* A local operand needs a desc: the domain's mr_mode has FI_MR_LOCAL,
	 * or FI_MRCHECK_MR_LOCAL=1 (a NULL desc is legal otherwise). */
	bool mr_local;
	struct chk_domain *next; /* chk_domains */
	/* Endpoints and CQs that use this record (the provider refuses to
	 * close a domain they are open on, and they read it until they close).
	 */
	uint64_t users;
};

struct chk_ep {
	struct mrl_ep *hook;
	struct chk_domain *dom;
	uint64_t tx_op_flags, rx_op_flags;
	struct chk_op *ops; /* in flight, under dom->lock */
	struct fi_ops_ep ep_ops; /* mrl_hook_ep_ops with cancel checked */
};

/* mrcheck.c */
extern struct fi_provider mrcheck_prov;
extern struct chk_counts chk_global;
/* Add n to *a and, when b is not NULL, to *b (relaxed atomics). */
void chk_add(uint64_t *a, uint64_t *b, uint64_t n);
#define chk_count(dom, field, n) \
	chk_add(&chk_global.field, &(dom)->counts.field, (n))
void chk_violation(struct chk_domain *dom, enum mrcheck_violation kind,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline struct chk_domain *
chk_domain_of(struct mrl_domain *d)
{
	return d->ext;
}

/* mrcheck.c, frames (FI_MRCHECK_FRAMES=1; see mrcheck.h) */
/* Whether registrations record frames and posts compare them. */
bool chk_frames_on(void);
/* Pages spanned by [addr, addr + len) (0 when len is 0). */
size_t chk_pages_of(const void *addr, size_t len);
/* The frames now under those pages (0 where not present); no lock held. */
void chk_frames_read(const void *addr, size_t len, uint64_t *frames);
/* Compare the frames read under operand i of a post ([addr, +len), which
 * mr covers) with those mr recorded, count the pages compared and record
 * a MRCHECK_STALE_FRAME violation at the first mismatch (dom->lock held).
 * Returns whether the operand is stale. */
bool chk_frames_compare(struct chk_domain *dom, const struct chk_mr *mr,
			const char *what, size_t i, const void *addr,
			size_t len, const uint64_t *now);

/* The recorded frame of the page holding addr, in the first of mr's iovs
 * covering [addr, +len) (NULL if none does or none were recorded). */
const uint64_t *chk_frames_at(const struct chk_mr *mr, const void *addr,
			      size_t len);

/* mrcheck_keys.c (remote keys of FI_MRCHECK_FRAMES=1; see mrcheck.h) */
/* Put rec, an open registration with remote access and recorded frames,
 * in the key map under key. */
void chk_keys_add(struct chk_mr *rec, uint64_t key, bool virt_addr);
/* Take rec out of the key map (if in it), before its frames are freed. */
void chk_keys_remove(struct chk_mr *rec);
/* Target i ([addr, +len) under key) of a post on dom: when key names a
 * registration of this process, compare the frames now under the target
 * with those recorded and record a MRCHECK_STALE_REMOTE_KEY violation at
 * the first mismatch. No lock held. */
void chk_keys_check(struct chk_domain *dom, const char *what, size_t i,
		    uint64_t addr, size_t len, uint64_t key);

/* mrcheck_params.c (FI_MRCHECK_*, fi_info -e) */
/* Define every parameter (from fi_prov_ini, before any is read). */
int chk_params_define(void);
/*
 * The value of FI_MRCHECK_<name>: false/def when unset or refused. A refused
 * value (unparsable, out of range) costs one line on stderr naming it and
 * the default (chk_param_refuse). Read once per process, from fi_prov_ini.
 */
bool chk_param_bool(const char *name);
/* A whole number from 0 to 255. */
int chk_param_int(const char *name, int def);
/* A whole number, decimal or 0x hexadecimal, no sign. */
uint64_t chk_param_u64(const char *name, uint64_t def);
/* A number from lo to hi into *value: 1; unset: 0; refused: -1. */
int chk_param_double(const char *name, double lo, double hi, double *value);
/* The raw text, NULL when unset; its reader refuses a bad one itself. */
const char *chk_param_str(const char *name);
/* Report FI_MRCHECK_<name>=value as refused: it is not what the parameter's
 * row says it takes, and its default is used. */
void chk_param_refuse(const char *name, const char *value);

/* mrcheck_fault.c (FI_MRCHECK_FAULT_*; see mrcheck.h) */
/* Read the FI_MRCHECK_FAULT_* settings (once, from fi_prov_ini). */
void chk_fault_init(void);
/* 0, or the code a registration on dom fails with (counted). */
int chk_fault_reg(struct chk_domain *dom);
/* Whether a post on dom is refused -FI_EAGAIN (counted). */
bool chk_fault_post(struct chk_domain *dom);
/* Whether completions may become errors (then reads take one entry). */
bool chk_fault_cq_on(void);
/* Whether this completion becomes an error entry (counted). */
bool chk_fault_cq_err(struct chk_domain *dom);
/* Whether this close of rec is refused -FI_EBUSY (counted; once per MR). */
bool chk_fault_close_mr(struct chk_domain *dom, struct chk_mr *rec);
/* Give the inner fid of a strict endpoint or domain its refusing close
 * when FI_MRCHECK_FAULT_CLOSE_ONCE lists its class; 0 or -FI_ENOMEM (then
 * nothing changed). */
int chk_fault_close_wrap(struct chk_domain *dom, struct fid *inner);
/* Whether the next close of inner will be refused. */
bool chk_fault_close_pending(struct fid *inner);

/* mrcheck_cost.c (FI_MRCHECK_REG_COST*; see mrcheck.h) */
/* Read the FI_MRCHECK_REG_COST* settings (once, from fi_prov_ini). */
void chk_cost_init(void);
/* Whether registrations on the domain the application opened are charged. */
bool chk_cost_on(void);
/* Spend the model's CPU time for a registration of bytes on dom (nothing
 * unless dom->reg_cost), counted. */
void chk_cost_charge(struct chk_domain *dom, size_t bytes);
size_t chk_cost_bytes(const struct iovec *iov, size_t count);
/* The passthrough's MR ops with the charge added to every registration,
 * for a costed domain mrcheck does not check. */
struct fi_ops_mr *chk_cost_mr_ops(void);

/* mrcheck_ep.c */
int chk_ep_open(struct mrl_ep *ep);
void chk_ep_close(struct mrl_ep *ep);

/* mrcheck_post.c (the posts' op records) */
/* Retire op (dom->lock held): drop its MR uses, unlink and free it. */
void chk_op_retire(struct chk_domain *dom, struct chk_op *op);
/* Whether ctx is one of dom's op records (dom->lock held). */
struct chk_op *chk_op_find(struct chk_domain *dom, void *ctx);
/* The claim record an entry naming the application's context ctx ends
 * (dom->lock held): entries with flags must be a receive's. */
struct chk_op *chk_claim_find(struct chk_domain *dom, void *ctx, uint64_t flags,
			      bool has_flags);

/* mrcheck_cq.c */
int chk_cq_open(struct mrl_cq *cq);
void chk_cq_close(struct mrl_cq *cq);

#endif /* MRCHECK_INT_H */
