/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The remote registry: remote-access registrations kept after the
 * application closes them and served again to exactly the same request
 * (FI_MRLEASE_REMOTE=cache), and the counts of every request forwarded
 * uncached. Rules: mrl_bind.h, "Remote registry".
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_bind.h"
#include "mrl_bind_remote.h"
#include "mrl_monitor.h"

/* Counters, in the order of struct fi_mrlease_stats from fwd_remote on. */
enum {
	MRL_RC_LOOKUPS = MRL_FWD_COUNT,
	MRL_RC_HITS,
	MRL_RC_REGISTRATIONS,
	MRL_RC_DEREGISTRATIONS,
	MRL_RC_ENTRIES,
	MRL_RC_IDLE,
	MRL_RC_IDLE_CLOSES,
	MRL_RC_INVALIDATED,
	MRL_RC_EVICTED,
	MRL_RC_COUNT
};

_Static_assert(offsetof(struct fi_mrlease_stats, remote_evicted) ==
		       offsetof(struct fi_mrlease_stats, fwd_remote) +
			       (MRL_RC_COUNT - 1) * sizeof(uint64_t),
	       "the registry's counters follow struct fi_mrlease_stats");

/* Index buckets per registry: entries are few (FI_MRLEASE_REMOTE_MAX idle
 * plus what the application holds), chains short. */
#define MRL_REMOTE_BUCKETS 256
/* Ranges a cached request may have; more are forwarded. */
#define MRL_REMOTE_MAX_IOV 16

struct mrl_remote_entry {
	struct mrl_remote_entry *hnext; /* index chain, while live */
	struct mrl_remote_entry *iprev, *inext; /* idle list, while idle */
	struct mrl_remote_entry *cnext; /* a closing or deferred list */
	struct mrl_bind_remote *remote;
	struct fid_mr *mr; /* inner, registered exactly as asked */
	uint64_t hash, access, offset, key;
	uint64_t idle_since; /* ms, CLOCK_MONOTONIC_COARSE */
	unsigned leases; /* application MR handles on it */
	bool live; /* in the index: lookups find it */
	size_t count;
	struct iovec iov[];
};

struct mrl_bind_remote {
	/* Protects everything below up to the counters; see mrl_bind.h. */
	pthread_mutex_t lock;
	struct mrl_domain *domain;
	/* The requested key is not part of a request: the provider picks
	 * keys, or the caller is a utility provider (an inner instance), which
	 * reads each MR's key back with fi_mr_key (rxm asks a new key for
	 * every rendezvous registration, so matching it would never hit). */
	bool any_key;
	bool prov_key; /* else an idle entry's key stays taken */
	bool cached; /* FI_MRLEASE_REMOTE=cache with the monitor running */
	bool thread_safe; /* FI_THREAD_SAFE: the closer closes its entries */
	bool closed; /* the inner domain closed */
	struct mrl_remote_entry *index[MRL_REMOTE_BUCKETS];
	struct mrl_remote_entry *idle_head, *idle_tail; /* oldest first */
	size_t nidle;
	struct mrl_remote_entry *deferred; /* retired by the monitor, idle */
	uint64_t gen; /* invalidations that reached this registry */
	/* Bounds of the live entries' ranges (lo > hi: none), so that the
	 * monitor's events elsewhere in the address space skip the index. */
	uintptr_t lo, hi;
	size_t live;
	unsigned misses; /* requests registering now */
	/* Entries taken off the lists for a close not done yet, and the
	 * signal of each done: their keys stay taken until then. */
	size_t in_close;
	pthread_cond_t closed_cond;
	size_t refs; /* the domain's, and one per entry not closed yet */
	struct mrl_bind_remote *next, *prev; /* mrl_remotes */
	/* Something for settle: a deferred entry, or the oldest idle entry's
	 * deadline (UINT64_MAX: none). Written under lock. */
	atomic_bool pending;
	_Atomic uint64_t due;
	_Atomic uint64_t counts[MRL_RC_COUNT];
};

/* Every open registry, for the monitor and explicit invalidate; the lock
 * is taken before a registry's. */
static pthread_mutex_t mrl_remotes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrl_bind_remote *mrl_remotes;
/* When the closer calls in next for FI_THREAD_SAFE domains' idle entries
 * (UINT64_MAX: not planned). An entry going idle wakes it only when its
 * deadline comes before that; deadlines grow with time, so an RPC server's
 * per-request close wakes nobody. */
static _Atomic uint64_t mrl_remote_closer_next = UINT64_MAX;
/* The process's counts, closed domains included. */
static _Atomic uint64_t mrl_remote_totals[MRL_RC_COUNT];

static void
mrl_remote_count(struct mrl_bind_remote *remote, unsigned counter,
		 int64_t delta)
{
	atomic_fetch_add_explicit(&remote->counts[counter], (uint64_t) delta,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&mrl_remote_totals[counter], (uint64_t) delta,
				  memory_order_relaxed);
}

static uint64_t
mrl_remote_now_ms(void)
{
	struct timespec ts;

	/* Coarse: read on CQ reads while entries are idle; a tick's
	 * precision is plenty for a delay in milliseconds. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* ---- requests --------------------------------------------------------- */

static uint64_t
mrl_remote_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t
mrl_remote_hash(const struct mrl_bind_remote *remote,
		const struct mrl_bind_remote_req *req)
{
	uint64_t h = mrl_remote_mix(req->access, req->offset);

	if (!remote->any_key)
		h = mrl_remote_mix(h, req->key);
	for (size_t i = 0; i < req->count; i++) {
		h = mrl_remote_mix(h, (uintptr_t) req->iov[i].iov_base);
		h = mrl_remote_mix(h, req->iov[i].iov_len);
	}
	return h;
}

/* Exactly the same request: never a wider range nor more access. */
static bool
mrl_remote_matches(const struct mrl_remote_entry *entry,
		   const struct mrl_bind_remote_req *req, uint64_t hash)
{
	if (entry->hash != hash || entry->count != req->count ||
	    entry->access != req->access || entry->offset != req->offset ||
	    (!entry->remote->any_key && entry->key != req->key))
		return false;
	for (size_t i = 0; i < req->count; i++)
		if (entry->iov[i].iov_base != req->iov[i].iov_base ||
		    entry->iov[i].iov_len != req->iov[i].iov_len)
			return false;
	return true;
}

static bool
mrl_remote_overlaps(const struct mrl_remote_entry *entry, uintptr_t start,
		    uintptr_t end)
{
	for (size_t i = 0; i < entry->count; i++) {
		uintptr_t lo = (uintptr_t) entry->iov[i].iov_base;

		if (lo < end && start < lo + entry->iov[i].iov_len)
			return true;
	}
	return false;
}

/* ---- index and idle list (under remote->lock) ------------------------- */

/* The idle delay is in range (mrl_params.c): added to a clock, it cannot
 * wrap. */
static void
mrl_remote_due_update(struct mrl_bind_remote *remote)
{
	atomic_store_explicit(&remote->due,
			      remote->idle_head ?
				      remote->idle_head->idle_since +
					      mrl_params.remote_idle :
				      UINT64_MAX,
			      memory_order_relaxed);
	atomic_store_explicit(&remote->pending, remote->deferred != NULL,
			      memory_order_relaxed);
}

static void
mrl_remote_idle_add(struct mrl_bind_remote *remote,
		    struct mrl_remote_entry *entry)
{
	entry->idle_since = mrl_remote_now_ms();
	entry->inext = NULL;
	entry->iprev = remote->idle_tail;
	if (remote->idle_tail)
		remote->idle_tail->inext = entry;
	else
		remote->idle_head = entry;
	remote->idle_tail = entry;
	remote->nidle++;
	mrl_remote_count(remote, MRL_RC_IDLE, 1);
}

static void
mrl_remote_idle_del(struct mrl_bind_remote *remote,
		    struct mrl_remote_entry *entry)
{
	if (entry->iprev)
		entry->iprev->inext = entry->inext;
	else
		remote->idle_head = entry->inext;
	if (entry->inext)
		entry->inext->iprev = entry->iprev;
	else
		remote->idle_tail = entry->iprev;
	entry->iprev = entry->inext = NULL;
	remote->nidle--;
	mrl_remote_count(remote, MRL_RC_IDLE, -1);
}

/* Out of the index: no lookup finds it again. An idle one is handed back
 * for the caller to close (or defer); a leased one closes at its last
 * lease. */
static bool
mrl_remote_retire(struct mrl_bind_remote *remote,
		  struct mrl_remote_entry *entry)
{
	struct mrl_remote_entry **link =
		&remote->index[entry->hash % MRL_REMOTE_BUCKETS];

	while (*link != entry)
		link = &(*link)->hnext;
	*link = entry->hnext;
	entry->hnext = NULL;
	entry->live = false;
	if (!--remote->live) {
		remote->lo = UINTPTR_MAX;
		remote->hi = 0;
	}
	mrl_remote_count(remote, MRL_RC_ENTRIES, -1);
	if (entry->leases)
		return false;
	mrl_remote_idle_del(remote, entry);
	return true;
}

/* Onto a list of entries to close (chained by cnext). */
static void
mrl_remote_list_push(struct mrl_remote_entry *entry,
		     struct mrl_remote_entry **list)
{
	entry->cnext = *list;
	*list = entry;
}

/* Onto a list of entries this thread closes once the lock is dropped
 * (mrl_remote_close_list): counted in in_close until the close is done. */
static void
mrl_remote_closing_push(struct mrl_bind_remote *remote,
			struct mrl_remote_entry *entry,
			struct mrl_remote_entry **closing)
{
	mrl_remote_list_push(entry, closing);
	remote->in_close++;
}

/* Retire every live entry `pick` chooses; idle ones go on *closing, each
 * counted under `counter`. */
static void
mrl_remote_retire_if(struct mrl_bind_remote *remote,
		     bool (*pick)(const struct mrl_remote_entry *entry,
				  const void *arg),
		     const void *arg, unsigned counter,
		     struct mrl_remote_entry **closing)
{
	for (size_t b = 0; b < MRL_REMOTE_BUCKETS; b++) {
		struct mrl_remote_entry *entry = remote->index[b], *next;

		for (; entry; entry = next) {
			next = entry->hnext;
			if (!pick(entry, arg))
				continue;
			/* A leased one closes at its last lease. The deferred
			 * list waits for a thread that may close: counted in
			 * in_close once one takes it (take_deferred). */
			if (mrl_remote_retire(remote, entry)) {
				if (closing == &remote->deferred)
					mrl_remote_list_push(entry, closing);
				else
					mrl_remote_closing_push(remote, entry,
								closing);
			}
			mrl_remote_count(remote, counter, 1);
		}
	}
}

struct mrl_remote_range {
	uintptr_t start, end;
};

static bool
mrl_remote_pick_range(const struct mrl_remote_entry *entry, const void *arg)
{
	const struct mrl_remote_range *range = arg;

	return mrl_remote_overlaps(entry, range->start, range->end);
}

static bool
mrl_remote_pick_idle(const struct mrl_remote_entry *entry, const void *arg)
{
	(void) arg;
	return !entry->leases;
}

static bool
mrl_remote_pick_all(const struct mrl_remote_entry *entry, const void *arg)
{
	(void) entry, (void) arg;
	return true;
}

static bool
mrl_remote_pick_key(const struct mrl_remote_entry *entry, const void *arg)
{
	return !entry->leases && entry->key == *(const uint64_t *) arg;
}

/* Idle entries whose delay has passed, or (max) beyond the cap. */
static void
mrl_remote_retire_expired(struct mrl_bind_remote *remote, uint64_t now,
			  size_t max, struct mrl_remote_entry **closing)
{
	uint64_t idle_ms = mrl_params.remote_idle;

	while (remote->idle_head &&
	       (remote->nidle > max ||
		remote->idle_head->idle_since + idle_ms <= now)) {
		struct mrl_remote_entry *entry = remote->idle_head;
		unsigned why = remote->nidle > max ? MRL_RC_EVICTED :
						     MRL_RC_IDLE_CLOSES;

		/* Counted once no longer idle: who sees the close counted
		 * sees the idle count without it. */
		mrl_remote_retire(remote, entry);
		mrl_remote_count(remote, why, 1);
		mrl_remote_closing_push(remote, entry, closing);
	}
}

static void
mrl_remote_take_deferred(struct mrl_bind_remote *remote,
			 struct mrl_remote_entry **closing)
{
	while (remote->deferred) {
		struct mrl_remote_entry *entry = remote->deferred;

		remote->deferred = entry->cnext;
		mrl_remote_closing_push(remote, entry, closing);
	}
}

/* Whatever may hold key at the provider: the idle entry registered with it,
 * and those the monitor retired, whose keys stay taken until they close
 * (the caller is in a call into the domain, which may close them). */
static void
mrl_remote_free_key(struct mrl_bind_remote *remote, uint64_t key,
		    struct mrl_remote_entry **closing)
{
	mrl_remote_retire_if(remote, mrl_remote_pick_key, &key, MRL_RC_EVICTED,
			     closing);
	mrl_remote_take_deferred(remote, closing);
}

/* ---- closing (no lock held) ------------------------------------------- */

/* Drop a reference; closed: the one of an entry whose close is done. */
static void
mrl_remote_put(struct mrl_bind_remote *remote, bool closed)
{
	bool last;

	pthread_mutex_lock(&remote->lock);
	if (closed && !--remote->in_close)
		pthread_cond_broadcast(&remote->closed_cond);
	last = !--remote->refs && remote->closed;
	pthread_mutex_unlock(&remote->lock);
	if (last) {
		pthread_cond_destroy(&remote->closed_cond);
		pthread_mutex_destroy(&remote->lock);
		free(remote);
	}
}

/* Close entries taken off every list: the provider's close, then the
 * monitor may stop watching ranges that hold nothing cached any more. */
static void
mrl_remote_close_list(struct mrl_remote_entry *closing)
{
	while (closing) {
		struct mrl_remote_entry *entry = closing;
		struct mrl_bind_remote *remote = entry->remote;
		int ret;

		closing = entry->cnext;
		ret = fi_close(&entry->mr->fid);
		if (ret)
			FI_WARN(mrl_hook_prov, FI_LOG_MR,
				"closing a cached remote registration "
				"failed: %s\n",
				fi_strerror(-ret));
		mrl_remote_count(remote, MRL_RC_DEREGISTRATIONS, 1);
		for (size_t i = 0; i < entry->count; i++)
			mrl_monitor_release((uintptr_t) entry->iov[i].iov_base,
					    (uintptr_t) entry->iov[i].iov_base +
						    entry->iov[i].iov_len);
		free(entry);
		mrl_remote_put(remote, true);
	}
}

struct mrl_bind_remote *
mrl_bind_remote_of(struct mrl_domain *domain)
{
	struct mrl_bind_domain *ld = mrl_bind_domain_of(domain);

	return ld && ld->remote && ld->remote->cached ? ld->remote : NULL;
}

void
mrl_bind_remote_settle(struct mrl_bind_remote *remote)
{
	struct mrl_remote_entry *closing = NULL;
	uint64_t now;

	if (!remote || !remote->cached)
		return;
	if (!atomic_load_explicit(&remote->pending, memory_order_relaxed) &&
	    atomic_load_explicit(&remote->due, memory_order_relaxed) ==
		    UINT64_MAX)
		return;
	now = mrl_remote_now_ms();
	if (!atomic_load_explicit(&remote->pending, memory_order_relaxed) &&
	    atomic_load_explicit(&remote->due, memory_order_relaxed) > now)
		return;
	pthread_mutex_lock(&remote->lock);
	mrl_remote_take_deferred(remote, &closing);
	mrl_remote_retire_expired(remote, now, SIZE_MAX, &closing);
	mrl_remote_due_update(remote);
	pthread_mutex_unlock(&remote->lock);
	mrl_remote_close_list(closing);
}

/* ---- the closer's plan --------------------------------------------------- */

/* Lower the closer's next call to deadline; whether it was later (the closer
 * must be woken to plan again). */
static bool
mrl_remote_closer_plan(uint64_t deadline)
{
	uint64_t next = atomic_load(&mrl_remote_closer_next);

	while (deadline < next)
		if (atomic_compare_exchange_weak(&mrl_remote_closer_next, &next,
						 deadline))
			return true;
	return false;
}

/* ---- leased MR handles ------------------------------------------------- */

/* Drop one lease: the last makes a live entry idle (closing the oldest idle
 * beyond FI_MRLEASE_REMOTE_MAX) and closes a retired one. */
static void
mrl_remote_lease_release(struct mrl_remote_entry *entry)
{
	struct mrl_bind_remote *remote = entry->remote;
	struct mrl_remote_entry *closing = NULL;
	uint64_t deadline = UINT64_MAX;

	pthread_mutex_lock(&remote->lock);
	if (!--entry->leases) {
		if (entry->live) {
			mrl_remote_idle_add(remote, entry);
			if (remote->thread_safe)
				deadline = entry->idle_since +
					   mrl_params.remote_idle;
			mrl_remote_retire_expired(
				remote, 0, mrl_params.remote_max, &closing);
			mrl_remote_due_update(remote);
		} else {
			mrl_remote_closing_push(remote, entry, &closing);
		}
	}
	pthread_mutex_unlock(&remote->lock);
	mrl_remote_close_list(closing);
	if (mrl_remote_closer_plan(deadline))
		mrl_monitor_closer_wake();
}

static int
mrl_remote_mr_release(struct mrl_mr *mr)
{
	mrl_remote_lease_release(mr->ext);
	mrl_bind_domain_settle(mr->domain);
	return 0;
}

static int
mrl_remote_mr_open(struct mrl_domain *domain, struct mrl_remote_entry *entry,
		   void *context, struct fid_mr **mr)
{
	struct mrl_mr *lease_mr;
	int ret;

	ret = mrl_hook_mr_wrap(domain, entry->mr, context,
			       mrl_remote_mr_release, &lease_mr);
	if (ret)
		return ret;
	lease_mr->ext = entry;
	*mr = &lease_mr->mr;
	return 0;
}

/* ---- lookups and misses ------------------------------------------------ */

static struct mrl_remote_entry *
mrl_remote_find(struct mrl_bind_remote *remote,
		const struct mrl_bind_remote_req *req, uint64_t hash)
{
	struct mrl_remote_entry *entry =
		remote->index[hash % MRL_REMOTE_BUCKETS];

	while (entry && !mrl_remote_matches(entry, req, hash))
		entry = entry->hnext;
	return entry;
}

/* Watch every range of the request; false (and nothing kept watched for
 * it) when the monitor refuses one. */
static bool
mrl_remote_watch(const struct mrl_bind_remote_req *req)
{
	for (size_t i = 0; i < req->count; i++) {
		uintptr_t lo = (uintptr_t) req->iov[i].iov_base;

		if (mrl_monitor_watch(lo, lo + req->iov[i].iov_len))
			continue;
		for (size_t j = 0; j < i; j++)
			mrl_monitor_release((uintptr_t) req->iov[j].iov_base,
					    (uintptr_t) req->iov[j].iov_base +
						    req->iov[j].iov_len);
		return false;
	}
	return true;
}

/*
 * Register the request on the inner domain. A refusal the registry itself
 * may cause is retried once after closing what caused it: the idle entry
 * that still holds the requested key, or one the monitor retired that
 * waits for its close (-FI_ENOKEY: this is a call into the domain, which
 * may close them), after which it also waits for the closes other threads
 * (the closer) took on; or every idle entry (lack of resources).
 */
static int
mrl_remote_register(struct mrl_bind_remote *remote,
		    const struct mrl_bind_remote_req *req, struct fid_mr **mr)
{
	struct mrl_domain *domain = remote->domain;
	struct mrl_remote_entry *closing = NULL;
	bool key = false, retry;
	int ret;

	ret = fi_mr_regv(domain->inner, req->iov, req->count, req->access,
			 req->offset, req->key, 0, mr, NULL);
	if (!ret)
		return 0;
	pthread_mutex_lock(&remote->lock);
	if (ret == -FI_ENOKEY && !remote->prov_key) {
		key = true;
		mrl_remote_free_key(remote, req->key, &closing);
	} else if (ret == -FI_ENOMEM || ret == -FI_ENOSPC ||
		   ret == -FI_EAGAIN) {
		mrl_remote_retire_if(remote, mrl_remote_pick_idle, NULL,
				     MRL_RC_EVICTED, &closing);
	}
	mrl_remote_due_update(remote);
	pthread_mutex_unlock(&remote->lock);
	retry = closing != NULL;
	mrl_remote_close_list(closing);
	if (key) {
		pthread_mutex_lock(&remote->lock);
		while (remote->in_close) {
			retry = true;
			pthread_cond_wait(&remote->closed_cond, &remote->lock);
		}
		pthread_mutex_unlock(&remote->lock);
	}
	if (!retry)
		return ret;
	return fi_mr_regv(domain->inner, req->iov, req->count, req->access,
			  req->offset, req->key, 0, mr, NULL);
}

static bool
mrl_remote_req_valid(const struct mrl_bind_remote_req *req)
{
	if (!req->iov || !req->count || req->count > MRL_REMOTE_MAX_IOV)
		return false;
	for (size_t i = 0; i < req->count; i++) {
		uintptr_t lo = (uintptr_t) req->iov[i].iov_base;

		if (!lo || !req->iov[i].iov_len ||
		    lo + req->iov[i].iov_len < lo)
			return false;
	}
	return true;
}

static int
mrl_remote_miss(struct mrl_bind_remote *remote,
		const struct mrl_bind_remote_req *req, uint64_t hash,
		struct fid_mr **mr, enum mrl_bind_fwd *why)
{
	struct mrl_remote_entry *entry, *closing = NULL;
	uint64_t gen;
	int ret;

	entry = calloc(1, sizeof(*entry) + req->count * sizeof(req->iov[0]));
	if (!entry)
		return -FI_ENOMEM;
	entry->remote = remote;
	entry->hash = hash;
	entry->access = req->access;
	entry->offset = req->offset;
	entry->key = req->key;
	entry->count = req->count;
	memcpy(entry->iov, req->iov, req->count * sizeof(req->iov[0]));

	/* In flight before watching: a release of these ranges meanwhile
	 * finds them in use. An idle entry holding the requested key for
	 * other memory would make the provider refuse it: it goes first. */
	pthread_mutex_lock(&remote->lock);
	remote->misses++;
	gen = remote->gen;
	if (!remote->prov_key)
		mrl_remote_free_key(remote, req->key, &closing);
	mrl_remote_due_update(remote);
	pthread_mutex_unlock(&remote->lock);
	mrl_remote_close_list(closing);

	if (!mrl_remote_watch(req)) {
		*why = MRL_FWD_NO_MONITOR;
		ret = -FI_EAGAIN;
		goto err_miss;
	}
	ret = mrl_remote_register(remote, req, &entry->mr);
	if (ret) {
		FI_DBG(mrl_hook_prov, FI_LOG_MR,
		       "remote registration refused (%s): forwarded\n",
		       fi_strerror(-ret));
		*why = ret == -FI_ENOKEY ? MRL_FWD_KEY : MRL_FWD_OTHER;
		ret = -FI_EAGAIN;
		goto err_watch;
	}
	mrl_remote_count(remote, MRL_RC_REGISTRATIONS, 1);

	pthread_mutex_lock(&remote->lock);
	remote->misses--;
	remote->refs++;
	entry->leases = 1;
	/* An invalidation passed while it registered: served once, never
	 * cached (its memory may be gone). */
	if (remote->gen == gen && !remote->closed) {
		size_t b = hash % MRL_REMOTE_BUCKETS;

		entry->live = true;
		entry->hnext = remote->index[b];
		remote->index[b] = entry;
		remote->live++;
		for (size_t i = 0; i < entry->count; i++) {
			uintptr_t lo = (uintptr_t) entry->iov[i].iov_base;

			if (lo < remote->lo)
				remote->lo = lo;
			if (lo + entry->iov[i].iov_len > remote->hi)
				remote->hi = lo + entry->iov[i].iov_len;
		}
		mrl_remote_count(remote, MRL_RC_ENTRIES, 1);
	}
	pthread_mutex_unlock(&remote->lock);

	ret = mrl_remote_mr_open(remote->domain, entry, req->context, mr);
	if (ret) /* the entry stays cached, idle */
		mrl_remote_lease_release(entry);
	return ret;

err_watch:
	for (size_t i = 0; i < req->count; i++)
		mrl_monitor_release((uintptr_t) req->iov[i].iov_base,
				    (uintptr_t) req->iov[i].iov_base +
					    req->iov[i].iov_len);
err_miss:
	pthread_mutex_lock(&remote->lock);
	remote->misses--;
	pthread_mutex_unlock(&remote->lock);
	free(entry);
	return ret;
}

int
mrl_bind_remote_reg(struct mrl_domain *domain,
		    const struct mrl_bind_remote_req *req, struct fid_mr **mr,
		    enum mrl_bind_fwd *why)
{
	struct mrl_bind_domain *ld = mrl_bind_domain_of(domain);
	struct mrl_bind_remote *remote = ld ? ld->remote : NULL;
	struct mrl_remote_entry *entry;
	uint64_t hash;
	int ret;

	*why = MRL_FWD_REMOTE;
	if (!remote || mrl_params.remote != MRL_REMOTE_CACHE)
		return -FI_EAGAIN;
	*why = MRL_FWD_NO_MONITOR;
	if (!remote->cached || !mrl_monitor_running())
		return -FI_EAGAIN;
	*why = MRL_FWD_OTHER;
	if (!mrl_remote_req_valid(req))
		return -FI_EAGAIN;

	mrl_remote_count(remote, MRL_RC_LOOKUPS, 1);
	hash = mrl_remote_hash(remote, req);
	pthread_mutex_lock(&remote->lock);
	entry = mrl_remote_find(remote, req, hash);
	if (entry) {
		if (!entry->leases++)
			mrl_remote_idle_del(remote, entry);
		mrl_remote_due_update(remote);
	}
	pthread_mutex_unlock(&remote->lock);
	if (!entry)
		return mrl_remote_miss(remote, req, hash, mr, why);

	mrl_remote_count(remote, MRL_RC_HITS, 1);
	ret = mrl_remote_mr_open(domain, entry, req->context, mr);
	if (ret)
		mrl_remote_lease_release(entry);
	return ret;
}

void
mrl_bind_forwarded(struct mrl_domain *domain, enum mrl_bind_fwd why)
{
	struct mrl_bind_domain *ld = mrl_bind_domain_of(domain);

	if (ld && ld->remote)
		mrl_remote_count(ld->remote, why, 1);
	else
		atomic_fetch_add_explicit(&mrl_remote_totals[why], 1,
					  memory_order_relaxed);
}

/* ---- invalidation ------------------------------------------------------ */

/* Every registry: retire live entries overlapping the range (any entry at
 * all with `all`); idle ones onto *closing, or with defer onto their
 * registry's deferred list. Whether a deferred list of an FI_THREAD_SAFE
 * domain holds something (the closer's work). */
static bool
mrl_remote_invalidate_all(uintptr_t start, uintptr_t end, bool defer,
			  struct mrl_remote_entry **closing)
{
	struct mrl_remote_range range = {start, end};
	bool closer_work = false;

	pthread_mutex_lock(&mrl_remotes_lock);
	for (struct mrl_bind_remote *remote = mrl_remotes; remote;
	     remote = remote->next) {
		pthread_mutex_lock(&remote->lock);
		remote->gen++;
		if (start < remote->hi && remote->lo < end)
			mrl_remote_retire_if(remote, mrl_remote_pick_range,
					     &range, MRL_RC_INVALIDATED,
					     defer ? &remote->deferred :
						     closing);
		mrl_remote_due_update(remote);
		if (remote->thread_safe && remote->deferred)
			closer_work = true;
		pthread_mutex_unlock(&remote->lock);
	}
	pthread_mutex_unlock(&mrl_remotes_lock);
	return closer_work;
}

void
mrl_bind_remote_invalidate(uintptr_t start, uintptr_t end)
{
	struct mrl_remote_entry *closing = NULL;

	if (end <= start)
		return;
	mrl_remote_invalidate_all(start, end, false, &closing);
	mrl_remote_close_list(closing);
}

bool
mrl_bind_remote_monitor_invalidate(uintptr_t start, uintptr_t end)
{
	return mrl_remote_invalidate_all(start, end, true, NULL);
}

bool
mrl_bind_remote_in_use(uintptr_t lo, uintptr_t hi)
{
	bool used = false;

	pthread_mutex_lock(&mrl_remotes_lock);
	for (struct mrl_bind_remote *remote = mrl_remotes; remote && !used;
	     remote = remote->next) {
		pthread_mutex_lock(&remote->lock);
		used = remote->misses > 0;
		if (!(lo < remote->hi && remote->lo < hi)) {
			pthread_mutex_unlock(&remote->lock);
			continue;
		}
		for (size_t b = 0; b < MRL_REMOTE_BUCKETS && !used; b++)
			for (struct mrl_remote_entry *entry = remote->index[b];
			     entry && !used; entry = entry->hnext)
				used = mrl_remote_overlaps(entry, lo, hi);
		pthread_mutex_unlock(&remote->lock);
	}
	pthread_mutex_unlock(&mrl_remotes_lock);
	return used;
}

int
mrl_bind_remote_close_shared(void)
{
	struct mrl_remote_entry *closing = NULL;
	uint64_t now = mrl_remote_now_ms(), due = UINT64_MAX;

	/* Unplanned while it looks: an entry going idle behind the look
	 * plans (and wakes) again, so none is left without a call. */
	atomic_store(&mrl_remote_closer_next, UINT64_MAX);
	pthread_mutex_lock(&mrl_remotes_lock);
	for (struct mrl_bind_remote *remote = mrl_remotes; remote;
	     remote = remote->next) {
		if (!remote->thread_safe || !remote->cached)
			continue;
		pthread_mutex_lock(&remote->lock);
		mrl_remote_take_deferred(remote, &closing);
		mrl_remote_retire_expired(remote, now, SIZE_MAX, &closing);
		mrl_remote_due_update(remote);
		if (atomic_load_explicit(&remote->due, memory_order_relaxed) <
		    due)
			due = atomic_load_explicit(&remote->due,
						   memory_order_relaxed);
		pthread_mutex_unlock(&remote->lock);
	}
	pthread_mutex_unlock(&mrl_remotes_lock);
	mrl_remote_close_list(closing);
	mrl_remote_closer_plan(due);
	due = atomic_load(&mrl_remote_closer_next);
	if (due == UINT64_MAX)
		return -1;
	return due > now ? (int) (due - now) : 0;
}

/* ---- life --------------------------------------------------------------- */

int
mrl_bind_remote_open(struct mrl_domain *domain, bool prov_key, bool cached,
		     struct mrl_bind_remote **out)
{
	struct mrl_bind_remote *remote = calloc(1, sizeof(*remote));

	if (!remote)
		return -FI_ENOMEM;
	pthread_mutex_init(&remote->lock, NULL);
	pthread_cond_init(&remote->closed_cond, NULL);
	remote->domain = domain;
	remote->prov_key = prov_key;
	remote->any_key = prov_key || !domain->outermost;
	remote->cached = cached;
	remote->thread_safe = domain->threading == FI_THREAD_SAFE;
	remote->lo = UINTPTR_MAX;
	atomic_init(&remote->due, UINT64_MAX);
	/* The domain's own reference. */
	remote->refs = 1;

	pthread_mutex_lock(&mrl_remotes_lock);
	remote->next = mrl_remotes;
	if (mrl_remotes)
		mrl_remotes->prev = remote;
	mrl_remotes = remote;
	pthread_mutex_unlock(&mrl_remotes_lock);
	*out = remote;
	return 0;
}

void
mrl_bind_remote_close_unleased(struct mrl_bind_remote *remote)
{
	struct mrl_remote_entry *closing = NULL;

	pthread_mutex_lock(&remote->lock);
	mrl_remote_take_deferred(remote, &closing);
	mrl_remote_retire_if(remote, mrl_remote_pick_idle, NULL, MRL_RC_EVICTED,
			     &closing);
	mrl_remote_due_update(remote);
	pthread_mutex_unlock(&remote->lock);
	mrl_remote_close_list(closing);
}

void
mrl_bind_remote_closed(struct mrl_bind_remote *remote)
{
	struct mrl_remote_entry *closing = NULL;

	pthread_mutex_lock(&mrl_remotes_lock);
	if (remote->prev)
		remote->prev->next = remote->next;
	else
		mrl_remotes = remote->next;
	if (remote->next)
		remote->next->prev = remote->prev;
	pthread_mutex_unlock(&mrl_remotes_lock);

	pthread_mutex_lock(&remote->lock);
	remote->closed = true;
	mrl_remote_take_deferred(remote, &closing);
	mrl_remote_retire_if(remote, mrl_remote_pick_all, NULL, MRL_RC_EVICTED,
			     &closing);
	mrl_remote_due_update(remote);
	pthread_mutex_unlock(&remote->lock);
	mrl_remote_close_list(closing);
	mrl_remote_put(remote, false);
}

void
mrl_bind_remote_more(void *arg, struct fi_mrlease_stats *stats)
{
	struct mrl_bind_remote *remote = arg;
	uint64_t *out = &stats->fwd_remote;

	for (unsigned i = 0; i < MRL_RC_COUNT; i++)
		out[i] += atomic_load_explicit(&remote->counts[i],
					       memory_order_relaxed);
}

void
mrl_bind_remote_stats(struct mrl_bind_domain *domain,
		      struct fi_mrlease_stats *stats)
{
	uint64_t *out = &stats->fwd_remote;

	if (domain) {
		if (domain->remote)
			mrl_bind_remote_more(domain->remote, stats);
		return;
	}
	for (unsigned i = 0; i < MRL_RC_COUNT; i++)
		out[i] += atomic_load_explicit(&mrl_remote_totals[i],
					       memory_order_relaxed);
}

void
mrl_bind_remote_fork_child(void)
{
	pthread_mutex_init(&mrl_remotes_lock, NULL);
	mrl_remotes = NULL;
}
