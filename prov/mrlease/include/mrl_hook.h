/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The map of the passthrough layer: one wrapper struct per libfabric fid
 * class, each laid out as
 *
 *	{ public struct (what the application holds); inner (the object one
 *	  level down); parent (the hook object it was opened from); ext; ... }
 *
 * Way down: container_of(public, wrapper, field)->inner, O(1).
 * Way up:   every inner object is opened with context = &wrapper->public.fid,
 *           so a poll result (an inner object's context) is the wrapper.
 *           An inner fid found in an event is looked up by value among the
 *           objects wrappers adopted (mrl_hook_adopt_inner,
 *           mrl_hook_of_inner()), never dereferenced: the application
 *           writes events too.
 *           The wrapper's own fid.context is the application's context
 *           (utility providers such as rxm read cm_entry.fid->context).
 *
 * The layer is linked into two DL plugins (mrlease and mrcheck), so it
 * never names its provider: each plugin's fi_prov_ini sets mrl_hook_prov
 * (logging, parameters) and mrl_hook_personality (the policy plugged on
 * top). With no personality callbacks every call is forwarded unchanged.
 *
 * Threading: the layer keeps no locks. Wrapper fields are written while the
 * object is opened or bound (control path, which libfabric requires the
 * application to serialise per object) and only read afterwards. The debug
 * counters are atomics.
 *
 * Files: hook_fid.c (class tables, navigation, close/bind/control/ops_open,
 * counters), hook_fabric.c, hook_domain.c (+ provider-private ops names),
 * hook_eq.c, hook_wait.c (wait and poll sets), hook_av.c (AV, AV set),
 * hook_cq.c, hook_cntr.c, hook_ep.c (ep, sep, tx/rx ctx, srx, stx),
 * hook_cm.c (cm ops, pep, multicast), hook_mr.c, hook_xfer.c (msg, tagged,
 * rma, atomic, collective forwarders), hook_opflags.c (non-msg calls of
 * endpoints whose default op flags matter to the hook).
 *
 * Not supported: the same plugin listed twice in FI_HOOK ('mrlease;mrlease'):
 * the outer copy would take the inner copy's wrappers for its own.
 *
 * Installed twice: with a utility provider (tcp;ofi_rxm, udp;ofi_rxd)
 * libfabric installs the hook over the utility fabric and again over the
 * core fabric the utility provider opens inside. The outer instance opens
 * its inner domain with a thread-local nesting depth raised, so a domain
 * opened by the utility provider inside that call sees depth > 0 and is
 * marked !outermost. The personality may have such a domain handed over
 * unwrapped (bypass_inner; mrlease does when it would resolve nothing
 * there): see "Stepping aside" below.
 */
#ifndef MRL_HOOK_H
#define MRL_HOOK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/providers/fi_prov.h>

#include "mrl_class.h"
#include "mrl_compat.h"

/* ------------------------------------------------------------------ */
/* Wrappers                                                            */
/* ------------------------------------------------------------------ */

/* Whether a fabric's objects are wrapped
 * (see mrl_hook_fabric_bypass_domain). */
enum mrl_fabric_state {
	MRL_FABRIC_UNDECIDED, /* nothing opened on it yet */
	MRL_FABRIC_HOOKED, /* its objects are wrapped */
	MRL_FABRIC_BYPASSED, /* its objects are the provider's own */
};

struct mrl_fabric {
	struct fid_fabric fabric;
	struct fid_fabric *inner;
	struct fi_provider
		*inner_prov; /* the provider hooked (context of fabric()) */
	bool over_utility; /* inner_prov is a utility provider (ofi_*) */
	_Atomic int state; /* enum mrl_fabric_state */
	void *ext;
};

/*
 * Stepping aside. An inner domain (opened by a utility provider inside the
 * outer instance's fi_domain) for which the personality's bypass_inner
 * says so is handed to the utility provider unwrapped, as the provider
 * opened it: the hook then costs its operations nothing. Every object the
 * domain's fabric opens afterwards (domains, EQs, wait sets, passive
 * endpoints) is unwrapped too, since the provider's objects bind only to
 * its own; the first object opened on a fabric decides, once, and a
 * fabric that wrapped something keeps wrapping.
 */
/* For a domain about to open on fab: whether to open it unwrapped (the
 * fabric is bypassed, or undecided and this domain may bypass it: then it
 * is bypassed from now on). */
bool mrl_hook_fabric_bypass_domain(struct mrl_fabric *fab,
				   const struct fi_info *info);
/* For any other object about to open on fab: whether the fabric is
 * bypassed (an undecided one is hooked from now on). */
bool mrl_hook_fabric_bypassed(struct mrl_fabric *fab);

/* Provider-private ops translated for utility providers (hook_domain.c). */
struct mrl_util_ops;

struct mrl_domain {
	struct fid_domain domain;
	struct fid_domain *inner;
	struct mrl_fabric *fabric;
	void *ext;

	/* Application-facing instance (false: opened by a utility provider
	 * inside the outer instance's fi_domain call). */
	bool outermost;
	/* What the data path needs, copied from the fi_info at open. */
	char prov_name[64]; /* inner provider, e.g. "tcp", "tcp;ofi_rxm" */
	uint64_t caps; /* info->caps */
	uint64_t mode; /* info->mode */
	int mr_mode; /* domain_attr->mr_mode */
	size_t mr_key_size; /* domain_attr->mr_key_size */
	enum fi_threading threading; /* domain_attr->threading */
	uint32_t api_version; /* fabric api_version */

	struct mrl_util_ops *util_ops; /* lazily, on the first such name */
	/* MRs of mrl_hook_mr_wrap still open: the provider cannot see them,
	 * so the domain answers -FI_EBUSY for them until they close. */
	atomic_size_t wrapped_mrs;
	/* Bound to an EQ with FI_REG_MR: each registration completes with an
	 * FI_MR_COMPLETE event of its own, which no cache can give. */
	bool mr_events;
};

struct mrl_eq {
	struct fid_eq eq;
	struct fid_eq *inner;
	struct mrl_fabric *fabric;
	void *ext;
};

struct mrl_wait {
	struct fid_wait wait;
	struct fid_wait *inner;
	struct mrl_fabric *fabric;
	void *ext;
};

struct mrl_poll {
	struct fid_poll poll;
	struct fid_poll *inner;
	struct mrl_domain *domain;
	void *ext;
};

struct mrl_av {
	struct fid_av av;
	struct fid_av *inner;
	struct mrl_domain *domain;
	void *ext;
};

struct mrl_av_set {
	struct fid_av_set av_set;
	struct fid_av_set *inner;
	struct mrl_av *av;
	void *ext;
};

struct mrl_cq {
	struct fid_cq cq;
	struct fid_cq *inner;
	struct mrl_domain *domain;
	void *ext;
	enum fi_cq_format format; /* attr->format as opened (UNSPEC kept) */
	uint64_t flags; /* attr->flags */
};

struct mrl_cntr {
	struct fid_cntr cntr;
	struct fid_cntr *inner;
	struct mrl_domain *domain;
	void *ext;
};

struct mrl_stx {
	struct fid_stx stx;
	struct fid_stx *inner;
	struct mrl_domain *domain;
	void *ext;
};

/* Completion queue and counters an endpoint is bound to (FI_SELECTIVE_
 * COMPLETION kept in *_cq_flags). Filled by bind before forwarding. */
struct mrl_ep_bindings {
	struct mrl_cq *tx_cq, *rx_cq;
	uint64_t tx_cq_flags, rx_cq_flags;
	struct mrl_cntr *send_cntr, *recv_cntr, *read_cntr, *write_cntr;
	struct mrl_cntr *remote_read_cntr, *remote_write_cntr;
	struct mrl_av *av;
	struct mrl_eq *eq;
	struct mrl_ep *srx;
	struct mrl_stx *stx;
};

/*
 * What an endpoint-family object was opened with: the caller's fi_info or
 * attrs (NULL where the call had none), handed to the personality's
 * ep_open. An alias has none of its own (its alias_of has them).
 */
struct mrl_ep_open {
	const struct fi_info *info; /* fi_endpoint, fi_endpoint2,
				     * fi_scalable_ep */
	uint64_t flags; /* fi_endpoint2's flags */
	const struct fi_tx_attr
		*tx_attr; /* info->tx_attr, or fi_tx_context's */
	const struct fi_rx_attr *rx_attr; /* info->rx_attr, or fi_rx_context's
					   * or fi_srx_context's */
};

/* Endpoint, scalable endpoint, tx/rx context, shared rx context and
 * aliases: the public fclass says which. */
struct mrl_ep {
	struct fid_ep ep;
	struct fid_ep *inner;
	struct mrl_domain *domain;
	struct mrl_ep *sep; /* tx/rx context: its scalable ep */
	struct mrl_ep *alias_of; /* FI_ALIAS: the endpoint aliased */
	void *ext;
	uint64_t caps; /* info/attr caps at open, 0 if unknown */
	/* Default op flags, tx and rx: the attrs' at open, an alias's,
	 * FI_SETOPSFLAG's. */
	uint64_t op_flags[2];
	/* Non-msg calls posted as msg calls with op_flags (hook_opflags.c):
	 * an alias, or FI_TRIGGER among the defaults. NULL: never needed. */
	struct mrl_ep_shim *shim;
	/* Set only while the personality's ep_open runs (the caller's
	 * objects are gone after the open), NULL otherwise. */
	const struct mrl_ep_open *opening;
	struct mrl_ep_bindings bound;
};

struct mrl_pep {
	struct fid_pep pep;
	struct fid_pep *inner;
	struct mrl_fabric *fabric;
	void *ext;
};

/*
 * A hook MR. mem_desc and key are the inner MR's (refreshed after bind and
 * control, so FI_MR_ENDPOINT keys appear after fi_mr_enable), hence
 * descriptors reach the provider untranslated.
 * release: when set, fi_close calls release(mr) instead of closing the inner
 * MR (a registration shared through the lease cache drops its lease
 * instead); the wrapper is freed when release returns 0.
 * wrapped: made by mrl_hook_mr_wrap over an MR the provider does not count
 * as the application's (the domain's wrapped_mrs counts it).
 */
struct mrl_mr {
	struct fid_mr mr;
	struct fid_mr *inner;
	struct mrl_domain *domain;
	void *ext;
	int (*release)(struct mrl_mr *mr);
	bool wrapped;
};

struct mrl_mc {
	struct fid_mc mc;
	struct fid_mc *inner;
	struct mrl_ep *ep;
	void *ext;
};

/* ------------------------------------------------------------------ */
/* Personality: the policy a plugin puts on top of the passthrough.     */
/* ------------------------------------------------------------------ */

/*
 * Every callback is optional (NULL = plain passthrough). Callbacks that
 * return int fail the operation with their -FI_E* code.
 *
 * domain_open  after the inner domain opened and the wrapper is filled;
 *              may set ->ext and replace domain.mr / domain.ops (forward
 *              to mrl_hook_domain_mr_ops / mrl_hook_domain_ops). On error
 *              the inner domain is closed and fi_domain fails.
 * domain_close before the inner domain closes, which the provider may
 *              refuse (-FI_EBUSY: endpoints, MRs... still open): close
 *              what you opened on it that nothing uses (idle
 *              registrations) and nothing else, so that a refused close
 *              leaves the domain exactly as usable as before.
 * domain_closed after the inner close returned 0, before the wrapper is
 *              freed: free what domain_open set up.
 * ep_open      after the inner open of an endpoint, scalable ep, tx/rx
 *              context, shared rx context or alias; ep->opening holds what
 *              it was opened with (an alias has alias_of, sep and bound
 *              set already); may replace ep.ops, msg, tagged, rma, atomic,
 *              collective and set ->ext. On error the inner object is
 *              closed.
 * ep_control   fi_control on any of those objects (FI_ENABLE,
 *              FI_SETOPSFLAG, FI_ALIAS...), instead of the passthrough's;
 *              forward with mrl_hook_ep_control where the command must reach
 *              the provider (FI_ALIAS through it opens the alias).
 * ep_bind      before a bind on an endpoint is forwarded; hook_bfid is the
 *              application's (hook) fid. ep->bound is updated after the
 *              forward succeeds.
 * ep_close     after the inner close returned 0, before the wrapper is freed.
 * cq_open/cntr_open  after the inner open; may replace cq.ops/cntr.ops.
 * cq_close/cntr_close after the inner close returned 0.
 * cq_readable  before a poll set or fi_trywait reports cq: 1 when it has
 *              a completion the application can read (or an error entry),
 *              else 0, or -FI_EAGAIN when entries the personality hides
 *              were consumed to find out; the application's entries must
 *              stay for its next reads. NULL: every entry is the
 *              application's.
 * ops_open     fi_open_ops names the layer does not handle itself
 *              (FI_MRLEASE_OPS_1 and any other); return -FI_ENOSYS for
 *              names you do not know. Without it such names get -FI_ENOSYS.
 * cleanup      from the provider's cleanup (fi_fini at process exit, before
 *              libfabric dlclose()s the plugin). Objects the application
 *              never closed may still be in use by its other threads:
 *              free nothing they can reach and call nothing in the
 *              provider (leak instead). Memory reachable only from the
 *              plugin's globals is reported as leaked by LeakSanitizer
 *              once dlclose unmapped them (not if the plugin keeps itself
 *              loaded).
 */
struct mrl_personality {
	const char *name;
	/* An inner domain of this info needs no wrapper (NULL: always wrap):
	 * see mrl_hook_fabric_bypass_domain. */
	bool (*bypass_inner)(const struct fi_info *info);
	int (*domain_open)(struct mrl_domain *domain);
	void (*domain_close)(struct mrl_domain *domain);
	void (*domain_closed)(struct mrl_domain *domain);
	int (*ep_open)(struct mrl_ep *ep);
	int (*ep_control)(struct mrl_ep *ep, int command, void *arg);
	int (*ep_bind)(struct mrl_ep *ep, struct fid *hook_bfid,
		       uint64_t flags);
	void (*ep_close)(struct mrl_ep *ep);
	int (*cq_open)(struct mrl_cq *cq);
	void (*cq_close)(struct mrl_cq *cq);
	int (*cq_readable)(struct mrl_cq *cq);
	int (*cntr_open)(struct mrl_cntr *cntr);
	void (*cntr_close)(struct mrl_cntr *cntr);
	int (*ops_open)(struct fid *hook_fid, const char *name, uint64_t flags,
			void **ops, void *context);
	void (*cleanup)(void);
};

/* The fi_provider cleanup of a plugin built on this layer. */
void mrl_hook_cleanup(void);

/* Set by the plugin's fi_prov_ini before anything else runs. */
extern struct fi_provider *mrl_hook_prov;
extern const struct mrl_personality *mrl_hook_personality;

/* ------------------------------------------------------------------ */
/* Default tables (the plain forwarders), for personalities to call.    */
/* ------------------------------------------------------------------ */

extern struct fi_ops_fabric mrl_hook_fabric_ops;
extern struct fi_ops_domain mrl_hook_domain_ops;
extern struct fi_ops_mr mrl_hook_domain_mr_ops;
extern struct fi_ops_eq mrl_hook_eq_ops;
extern struct fi_ops_wait mrl_hook_wait_ops;
extern struct fi_ops_poll mrl_hook_poll_ops;
extern struct fi_ops_av mrl_hook_av_ops;
extern struct fi_ops_av_set mrl_hook_av_set_ops;
extern struct fi_ops_cq mrl_hook_cq_ops;
extern struct fi_ops_cntr mrl_hook_cntr_ops;
extern struct fi_ops_ep mrl_hook_ep_ops;
extern struct fi_ops_cm mrl_hook_ep_cm_ops;
extern struct fi_ops_msg mrl_hook_ep_msg_ops;
extern struct fi_ops_tagged mrl_hook_ep_tagged_ops;
extern struct fi_ops_rma mrl_hook_ep_rma_ops;
extern struct fi_ops_atomic mrl_hook_ep_atomic_ops;
extern struct fi_ops_collective mrl_hook_ep_collective_ops;

/* Size in bytes of one element of an atomic datatype (0: unknown), for
 * the operands of atomic calls (hook_xfer.c). */
size_t mrl_hook_datatype_size(enum fi_datatype datatype);

/* Size in bytes of one completion entry of a CQ format, for whoever reads
 * entries it did not lay out (hook_cq.c); UNSPEC is taken as CONTEXT, what
 * the providers choose for it. */
size_t mrl_hook_cq_entry_size(enum fi_cq_format format);

/* fi_control on an endpoint-family object as the passthrough does it
 * (FI_ALIAS wrapped, the rest forwarded), for ep_control. */
int mrl_hook_ep_control(struct mrl_ep *ep, int command, void *arg);

/*
 * Generic fid ops, one table per class (the table identifies the class),
 * read-only: nothing changes a class's behaviour after start-up. Wrappers
 * point at them through a non-const view, since libfabric's struct fid
 * holds a non-const ops pointer.
 */
extern const struct fi_ops mrl_hook_fid_ops_table[MRL_NCLASS];
#define mrl_fid_ops ((struct fi_ops *) mrl_hook_fid_ops_table)

/* ------------------------------------------------------------------ */
/* Navigation                                                          */
/* ------------------------------------------------------------------ */

/* Whether fid is a wrapper of this layer (in this plugin). */
static inline bool
mrl_hook_is_hook_fid(const struct fid *fid)
{
	uintptr_t p = (uintptr_t) (fid ? fid->ops : NULL);

	return p >= (uintptr_t) &mrl_fid_ops[0] &&
	       p < (uintptr_t) &mrl_fid_ops[MRL_NCLASS];
}

/* The class of a wrapper (mrl_hook_is_hook_fid(fid) must hold). */
static inline enum mrl_class
mrl_hook_class_of(const struct fid *fid)
{
	return (enum mrl_class)(fid->ops - mrl_fid_ops);
}

/* Hook fid -> inner fid; a fid that is not ours is returned unchanged. */
struct fid *mrl_hook_inner_fid(struct fid *fid);
/*
 * After an inner object opened with context = hook: make sure the inner
 * fid's context leads back to hook. Some providers keep the context
 * elsewhere and leave fid.context NULL (libfabric's util AV does, which is
 * why 1.17's own hooks report AV events with a NULL fid); a NULL one is
 * set, any other value is left to its provider. Also records inner -> hook
 * for mrl_hook_of_inner (mrl_hook_fid_close forgets it).
 */
void mrl_hook_adopt_inner(struct fid *inner, struct fid *hook);
/* Inner fid (from an event) -> hook fid, looked up by value among the
 * adopted inner objects; any other pointer is returned unchanged. */
struct fid *mrl_hook_of_inner(struct fid *inner);

static inline struct mrl_domain *
mrl_hook_domain_of(struct fid_domain *d)
{
	return container_of(d, struct mrl_domain, domain);
}

static inline struct mrl_ep *
mrl_hook_ep_of(struct fid_ep *ep)
{
	return container_of(ep, struct mrl_ep, ep);
}

static inline struct mrl_cq *
mrl_hook_cq_of(struct fid_cq *cq)
{
	return container_of(cq, struct mrl_cq, cq);
}

static inline struct mrl_cntr *
mrl_hook_cntr_of(struct fid_cntr *cntr)
{
	return container_of(cntr, struct mrl_cntr, cntr);
}

static inline struct mrl_mr *
mrl_hook_mr_of(struct fid_mr *mr)
{
	return container_of(mr, struct mrl_mr, mr);
}

/*
 * Wrap an inner MR (registered on domain->inner) into a hook MR whose
 * fid.context is context; release as described at struct mrl_mr (NULL:
 * close the inner MR). Counts as a wrapped MR. 0 or -FI_ENOMEM (the inner
 * MR is left to the caller on error).
 */
int mrl_hook_mr_wrap(struct mrl_domain *domain, struct fid_mr *inner,
		     void *context, int (*release)(struct mrl_mr *mr),
		     struct mrl_mr **mr);

/*
 * FI_TRIGGER in flags: the threshold counter of the struct
 * fi_triggered_context at context, when it is a hook counter, becomes the
 * inner one, in place (the provider reads the context after the call
 * returns, so it cannot be restored). hook_xfer.c.
 */
void mrl_hook_trigger_to_inner(uint64_t flags, void *context);

/* ------------------------------------------------------------------ */
/* Internal to the layer                                               */
/* ------------------------------------------------------------------ */

/* The fabric() entry of a hooking provider built on this layer. */
int mrl_hook_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);

int mrl_hook_domain_open(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_domain **domain, void *context);
int mrl_hook_domain2_open(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **domain, uint64_t flags,
			  void *context);
int mrl_hook_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_pep **pep, void *context);
int mrl_hook_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		     struct fid_eq **eq, void *context);
int mrl_hook_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset);
/* Record that hook (inner below it; NULL: one the hook cannot check) was
 * opened on app_wait, for fi_wait (hook_wait.c). */
void mrl_hook_wait_watch(struct fid_wait *app_wait, struct fid *hook,
			 struct fid *inner);
int mrl_hook_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
int mrl_hook_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		       struct fid_poll **pollset);
int mrl_hook_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		     struct fid_av **av, void *context);
int mrl_hook_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		     struct fid_cq **cq, void *context);
int mrl_hook_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		       struct fid_cntr **cntr, void *context);
int mrl_hook_endpoint(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **ep, void *context);
int mrl_hook_endpoint2(struct fid_domain *domain, struct fi_info *info,
		       struct fid_ep **ep, uint64_t flags, void *context);
int mrl_hook_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **sep, void *context);
int mrl_hook_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		     struct fid_stx **stx, void *context);
int mrl_hook_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context);
/* Wrap the inner alias (FI_ALIAS with flags) of the endpoint aliased. */
int mrl_hook_ep_wrap_alias(struct mrl_ep *aliased, struct fid_ep *inner,
			   uint64_t flags, struct mrl_ep **ep);
/* Flags that name one direction (FI_SETOPSFLAG's, an alias's) become
 * ep's defaults for it; with apply, the shim follows (hook_opflags.c). */
int mrl_hook_ep_opflags_set(struct mrl_ep *ep, uint64_t flags, bool apply);
/* Install or remove ep's shim after its default op flags changed
 * (hook_opflags.c); -FI_ENOMEM. */
int mrl_hook_ep_shim_apply(struct mrl_ep *ep);
void mrl_hook_ep_shim_free(struct mrl_ep *ep);
void mrl_hook_ep_set_tables(struct mrl_ep *ep);
/* After the inner object of ep opened: tables, personality ep_open with
 * what it was opened with, count. */
int mrl_hook_ep_finish(struct mrl_ep *ep, const struct mrl_ep_open *opening);
int mrl_hook_ep_record_bind(struct mrl_ep *ep, struct fid *hook_bfid,
			    uint64_t flags);

/* Generic fid ops shared by every class. */
int mrl_hook_fid_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int mrl_hook_fid_control(struct fid *fid, int command, void *arg);
int mrl_hook_fid_ops_open(struct fid *fid, const char *name, uint64_t flags,
			  void **ops, void *context);
int mrl_hook_fid_tostr(const struct fid *fid, char *buf, size_t len);
int mrl_hook_fid_ops_set(struct fid *fid, const char *name, uint64_t flags,
			 void *ops, void *context);

/* fi_close of every class: the personality's hooks, the inner close (or an
 * MR's release), then the wrapper is freed. */
int mrl_hook_fid_close(struct fid *fid);

/* Provider-private ops names on domains (hook_domain.c): *handled says
 * whether the name is one the layer translates (then the return value is
 * final, -FI_ENOSYS included). */
int mrl_hook_domain_ops_open(struct mrl_domain *domain, const char *name,
			     uint64_t flags, void **ops, void *context,
			     bool *handled);
int mrl_hook_domain_ops_set(struct mrl_domain *domain, const char *name,
			    uint64_t flags, void *ops, void *context,
			    bool *handled);

/* Whether the calling thread is inside the outer instance's domain open. */
extern _Thread_local int mrl_hook_nesting;

#endif /* MRL_HOOK_H */
