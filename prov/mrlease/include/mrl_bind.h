/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The binding (prov/mrlease/src/6-bind/): the mrlease personality's glue
 * between hook domains and the lease cache, the one layer that uses the
 * passthrough, the cache, the memory monitor and the parameters together.
 * The data path and the plugin glue build on it; nothing below includes it.
 *
 * What it holds. One process-wide lease cache (mrl_bind_cache(), created by
 * the first domain open and sized by FI_MRLEASE_MAX_COUNT/MAX_SIZE), and per
 * hook domain a struct mrl_bind_domain in mrl_domain->ext: the domain's
 * cache domain, whose registrar registers on the *inner* domain with local
 * access only (MRL_CACHE_ACCESS) and the cache's keys where the provider
 * does not pick them. Both instances of a hook installed twice (over a
 * utility provider and over its core provider) get their own cache domain.
 *
 * Lifetimes. The cache domain is opened in the personality's domain_open.
 * Before the inner domain closes (domain_close), the registrations no lease
 * holds close, and nothing else changes: the provider may refuse the close
 * (-FI_EBUSY with endpoints or MRs open, a registration still leased by an
 * MR handle the application did not close among them), and the domain then
 * works as before. Only once the inner close succeeded (domain_closed) is
 * the cache domain closed (clear_domain) and freed.
 *
 * Exit and fork. At fi_fini the process-wide cache is given up, never freed
 * nor closed (mrl_bind_fini); a forked child forgets the parent's cache and
 * builds its own (mrl_bind.c, mrl_bind_fork_child).
 *
 * Leased MR handles. A hook `struct fid_mr` (an mrl_mr from the passthrough
 * layer) that owns one reference on a cached registration: fi_mr_desc and
 * fi_mr_key give the registration's, fi_close drops the reference (a lease,
 * or a pin, which also retires the pinned entry). Used by the extension's
 * pin and by the data path's fi_mr_reg interception.
 *
 * Remote registry (mrl_bind_remote.c). Registrations that grant remote
 * access never enter the lease cache (a covering index would hand a peer
 * more than the application offered). With FI_MRLEASE_REMOTE=cache each
 * hook domain keeps them in a registry of its own, keyed by the whole
 * request (every iov, access, offset, and the requested key where the
 * provider does not pick keys): an *entry* holds one inner fid_mr
 * registered exactly as asked, and is served again only to the same
 * request, never to a NULL-descriptor operand (a key's lifetime stays the
 * application's close plus the idle delay, and the hit path is unchanged).
 *  - References: each application MR handle on an entry holds one lease;
 *    the registry holds the entry while it is *live* (found by lookups).
 *    The last lease of a live entry makes it *idle* (stamped); an idle
 *    entry closes after FI_MRLEASE_REMOTE_IDLE ms, when FI_MRLEASE_REMOTE_MAX
 *    idle ones are exceeded (the oldest), when the provider refuses a
 *    registration for lack of resources or for the key it holds, at
 *    invalidate, memory monitor events and domain close. A retired entry
 *    (no longer live) closes at its last lease.
 *  - Watching: an entry is cached only while the memory monitor watches
 *    every one of its ranges; an invalidation that passes while a miss
 *    registers keeps that registration out of the registry (served once,
 *    closed at its fi_close). The monitor's in_use says true for ranges of
 *    live entries and while any miss is in flight.
 *  - Locks: one mutex per registry protects its index, idle list, deferred
 *    list and every entry's leases and state; a process-wide mutex protects
 *    the list of registries and is taken before a registry's. Neither is
 *    held across fi_mr_reg/fi_close, malloc/free, the monitor's watch or
 *    release, or a call into the cache; counters are atomics read without
 *    them.
 *  - Closing: never under a lock. A monitor invalidation (on the draining
 *    thread) only retires: idle entries it retires close at the domain's
 *    next call (an MR call, a CQ or counter read, its close), or on the
 *    monitor's closer for FI_THREAD_SAFE domains, which also closes their
 *    expired idle entries with no application call; other domains' idle
 *    entries expire at their next call. Explicit invalidate closes on its
 *    own thread, as the cache does.
 *
 * Threading: mrl_bind_cache() may be read from any thread without a lock
 * (it is published once, with release ordering); everything else follows
 * the object it is called on.
 */
#ifndef MRL_BIND_H
#define MRL_BIND_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/fi_domain.h>

#include "mrl_cache.h"
#include "mrl_hook.h"
#include "mrl_params.h"

struct mrl_bind_remote;

/* What a hook domain of the mrlease personality keeps in mrl_domain->ext. */
struct mrl_bind_domain {
	struct mrl_cache_domain *cache_domain;
	struct mrl_domain *domain; /* the hook domain that owns it */
	struct mrl_bind_remote *remote; /* its remote registry and the
					 * counts of forwarded requests */
};

/* Why a registration request went to the provider unchanged and uncached:
 * the order of the fwd_* counters of struct fi_mrlease_stats. */
enum mrl_bind_fwd {
	MRL_FWD_REMOTE, /* remote access, FI_MRLEASE_REMOTE=forward */
	MRL_FWD_DEVICE,
	MRL_FWD_DMABUF,
	MRL_FWD_ENDPOINT,
	MRL_FWD_RMA_EVENT,
	MRL_FWD_NO_MONITOR,
	MRL_FWD_KEY,
	MRL_FWD_AUTH_KEY,
	MRL_FWD_OTHER,
	MRL_FWD_COUNT
};

/* A remote-access registration request, as fi_mr_regv takes it. */
struct mrl_bind_remote_req {
	const struct iovec *iov;
	size_t count;
	uint64_t access, offset, key;
	void *context;
};

/* How a leased MR handle gives its reference back on fi_close. */
enum mrl_bind_kind {
	MRL_BIND_LEASE, /* a lease (mrl_cache_acquire/mrl_cache_lease_get): released
			  */
	MRL_BIND_PIN, /* a pin (mrl_cache_pin): unpinned, entry retired */
};

/* The process-wide cache, NULL until the first mrlease domain opened. */
struct mrl_cache *mrl_bind_cache(void);

/* Keep the plugin mapped for the life of the process (once handed out, the
 * extension's functions may be called from allocator hooks at exit, after
 * libfabric dlcloses its providers). Idempotent, thread-safe. */
void mrl_bind_keep_loaded(void);

/* The lease domain of a hook domain, NULL if it has none (not opened by the
 * mrlease personality, or already closed). */
static inline struct mrl_bind_domain *
mrl_bind_domain_of(struct mrl_domain *domain)
{
	return (struct mrl_bind_domain *) domain->ext;
}

/* A call into the hook domain's objects (an MR call, an MR's close): the
 * monitor's events are applied and what they dropped there closes
 * (mrl_cache_domain_settle), if the domain has a cache domain. */
void mrl_bind_domain_settle(struct mrl_domain *domain);

/*
 * The lease domain behind an application's domain fid, or NULL when the fid
 * is not a domain of this plugin's mrlease personality (another hook's or a
 * provider's domain, a closed one, NULL).
 */
struct mrl_bind_domain *mrl_bind_domain_from_fid(struct fid_domain *domain);

/* Whether registrations of this provider ("verbs;ofi_rxm": the core
 * provider, first) pin pages, per FI_MRLEASE_PINNING. */
bool mrl_bind_provider_pins(const char *prov_name);

/* The lease domain's part of a hook domain's open and close (called by
 * the data path's, mrl_xfer_domain_open/close/closed in mrl_xfer_domain.c). */
int mrl_bind_domain_open(struct mrl_domain *domain);
void mrl_bind_domain_close(struct mrl_domain *domain);
void mrl_bind_domain_closed(struct mrl_domain *domain);

/*
 * Open a leased MR handle on `domain` over `reg`, taking over one reference
 * the caller holds on it (of the given kind); *mr's fid.context is context.
 * fi_close(&(*mr)->fid) releases that reference and returns 0. On error
 * (-FI_ENOMEM) nothing is taken: the caller still owns its reference.
 */
int mrl_bind_mr_open(struct mrl_domain *domain, struct mrl_registration *reg,
		     enum mrl_bind_kind kind, void *context,
		     struct fid_mr **mr);

/* Count a request forwarded for `why` (the domain's and the process's). */
void mrl_bind_forwarded(struct mrl_domain *domain, enum mrl_bind_fwd why);

/*
 * Serve a remote-access request from the domain's remote registry (see
 * "Remote registry"): 0 and a leased MR handle in *mr; -FI_EAGAIN with *why
 * when it must be forwarded instead (FI_MRLEASE_REMOTE=forward, no monitor
 * watching, a key or a registration the provider refused: it then answers
 * for itself); -FI_ENOMEM. The caller has checked that nothing but the
 * request's fields matters (host memory, no flags, no auth key).
 */
int mrl_bind_remote_reg(struct mrl_domain *domain,
			const struct mrl_bind_remote_req *req,
			struct fid_mr **mr, enum mrl_bind_fwd *why);

/* The domain's remote registry when it keeps entries (FI_MRLEASE_REMOTE=cache
 * with the monitor running), NULL otherwise: what a CQ or counter of the
 * domain settles on each read. */
struct mrl_bind_remote *mrl_bind_remote_of(struct mrl_domain *domain);

/* A call into the registry's domain: close what the monitor retired and the
 * entries idle for longer than FI_MRLEASE_REMOTE_IDLE, on this thread, no
 * lock held. Two loads when nothing is due; NULL does nothing. */
void mrl_bind_remote_settle(struct mrl_bind_remote *remote);

/* Retire every live remote entry overlapping [start, end) in every domain
 * and close the idle ones on this thread (the extension's invalidate).
 * No lock held. */
void mrl_bind_remote_invalidate(uintptr_t start, uintptr_t end);

/* Add the remote registry's and forwarded counts to stats: the domain's,
 * or with domain NULL the process's (closed domains included). */
void mrl_bind_remote_stats(struct mrl_bind_domain *domain,
			   struct fi_mrlease_stats *stats);

/* Provider cleanup (fi_fini): stop the monitor and give the process-wide
 * cache up without freeing or closing anything (threads may still post on
 * domains the application never closed); later invalidate calls find no
 * cache and return 0, a domain opened later builds a new one. */
void mrl_bind_fini(void);

#endif /* MRL_BIND_H */
