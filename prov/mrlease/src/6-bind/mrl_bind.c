/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mrlease personality's domain glue: a cache domain per hook domain over
 * a registrar on the inner domain, the process-wide cache, leased MR
 * handles and the FI_MRLEASE_STATS table.
 */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "1-cache/mrl_cache.inl"
#include "mrl_bind.h"
#include "mrl_bind_churn.h"
#include "mrl_bind_remote.h"
#include "mrl_live.h"
#include "mrl_monitor.h"

/*
 * The process-wide cache. Published once under lease_cache_lock with release
 * ordering so invalidate (which may run in an allocator's purge path on any
 * thread, and must neither lock nor allocate) reads it with one acquire load.
 * lease_cache_lock protects its creation and its giving up (lease_cache_kept);
 * nothing else runs under it.
 */
static _Atomic(struct mrl_cache *) lease_cache;
static pthread_mutex_t lease_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Caches given up: at fini, where threads the application did not stop may
 * still be inside them (mrl_bind_fini), and in a forked child the parent's,
 * whose locks may be held by threads that do not exist there. They are never
 * freed nor touched again by the hook; kept here so that leak checkers find
 * them reachable (the plugin stays loaded once it built a cache). Past
 * MRL_BIND_KEPT, one more is simply forgotten.
 */
#define MRL_BIND_KEPT 16
static struct mrl_cache *lease_cache_kept[MRL_BIND_KEPT];
static unsigned lease_cache_nkept;

struct mrl_cache *
mrl_bind_cache(void)
{
	return atomic_load_explicit(&lease_cache, memory_order_acquire);
}

/*
 * The extension's table and the cache's type-stable entry pool must outlive
 * libfabric's fi_fini, which dlcloses providers at exit: an allocator may
 * call ops->invalidate from a purge hook after that (jemalloc's exit-time
 * purges), and a closed plugin would leave it calling unmapped code. So
 * once the plugin hands out its table or builds its cache it stays mapped
 * for the life of the process (RTLD_NODELETE on itself); mrl_bind_fini
 * gives the cache up, after which invalidate finds none and returns 0.
 */
static void
mrl_bind_pin_image(void)
{
	Dl_info self;

	if (!dladdr((void *) &mrl_bind_pin_image, &self) || !self.dli_fname ||
	    !dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"cannot keep the plugin loaded past fi_fini; do not "
			"call "
			"the extension after libfabric is unloaded\n");
}

void
mrl_bind_keep_loaded(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, mrl_bind_pin_image);
}

/* Unpublish the cache (new domains get a new one) and keep it, unfreed. */
static void
mrl_bind_cache_give_up(void)
{
	struct mrl_cache *cache = atomic_exchange_explicit(
		&lease_cache, NULL, memory_order_acq_rel);

	if (cache && lease_cache_nkept < MRL_BIND_KEPT)
		lease_cache_kept[lease_cache_nkept++] = cache;
}

/*
 * A forked child starts clean: the cache it inherited holds the parent's
 * domains, registrations (which the cache never closes in a child), counts
 * and misses half done by threads that do not exist here. So the child
 * forgets it: domains it opens build a cache of their own, and invalidate,
 * statistics and fini never reach the parent's. Runs in the child's only
 * thread, before anything can take the lock it resets.
 */
static void
mrl_bind_fork_child(void)
{
	pthread_mutex_init(&lease_cache_lock, NULL);
	mrl_bind_cache_give_up();
	/* The parent's unmaps say nothing about the child's memory. */
	mrl_bind_churn_reset();
	mrl_bind_remote_fork_child();
}

static void
mrl_bind_fork_install(void)
{
	if (pthread_atfork(NULL, NULL, mrl_bind_fork_child))
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"cannot watch for fork: a child must not use the "
			"hook\n");
}

/* FI_MRLEASE_MAX_* = 0 means no cap, FI_MRLEASE_HUGEPAGE_AFTER = 0 never;
 * the cache reads 0 as its default and SIZE_MAX as "never". */
static size_t
mrl_bind_cap(size_t param)
{
	return param ? param : SIZE_MAX;
}

static int
mrl_bind_cache_get(struct mrl_cache **cache)
{
	static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
	struct mrl_cache_config config = {
		.max_count = mrl_bind_cap(mrl_params.max_count),
		.max_size = mrl_bind_cap(mrl_params.max_size),
		.huge_after = mrl_bind_cap(mrl_params.hugepage_after),
		.prov = mrl_hook_prov,
	};
	int ret = 0;

	*cache = mrl_bind_cache();
	if (*cache)
		return 0;

	mrl_bind_keep_loaded();
	pthread_once(&fork_once, mrl_bind_fork_install);
	pthread_mutex_lock(&lease_cache_lock);
	*cache = atomic_load_explicit(&lease_cache, memory_order_relaxed);
	if (!*cache) {
		ret = mrl_cache_create(&config, cache);
		if (ret)
			FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
				"cannot create the lease cache: %s\n",
				fi_strerror(-ret));
		else
			atomic_store_explicit(&lease_cache, *cache,
					      memory_order_release);
	}
	pthread_mutex_unlock(&lease_cache_lock);
	return ret;
}

/*
 * At fi_fini (process exit, or a child's exit): the monitor stops first (its
 * thread invalidates in the cache), then the cache is given up, not
 * destroyed. A domain the application never closed may still be used by one
 * of its threads (a NULL-descriptor post in the cache's hit path), and
 * closing its registrations would call into provider objects the
 * application still holds: its cache domain stays as it is, and works until
 * the application closes it. No lock here can have been inherited held: a
 * child's fork handler reset lease_cache_lock, and the monitor's its own.
 */
void
mrl_bind_fini(void)
{
	mrl_live_fini();
	mrl_monitor_stop();
	pthread_mutex_lock(&lease_cache_lock);
	mrl_bind_cache_give_up();
	pthread_mutex_unlock(&lease_cache_lock);
}

/*
 * The registrar: the cache's only way to libfabric. ctx is the inner domain,
 * which outlives every registration made on it (the provider refuses to
 * close a domain with open MRs). Access is what the cache asks (local only);
 * key is the cache's where the provider does not pick keys.
 */
static int
mrl_bind_reg(void *ctx, const void *addr, size_t len, uint64_t access,
	     uint64_t key, void **mr, void **desc)
{
	struct fid_mr *inner_mr;
	int ret;

	ret = fi_mr_reg((struct fid_domain *) ctx, addr, len, access, 0, key, 0,
			&inner_mr, NULL);
	if (ret) {
		/* The cache retries -FI_ENOKEY and evicts on lack of resources;
		 * it reports what it finally gives up on. */
		FI_DBG(mrl_hook_prov, FI_LOG_MR, "fi_mr_reg(%p, %zu): %s\n",
		       addr, len, fi_strerror(-ret));
		return ret;
	}
	*mr = inner_mr;
	*desc = fi_mr_desc(inner_mr);
	return 0;
}

static int
mrl_bind_dereg(void *ctx, void *mr)
{
	int ret;

	(void) ctx;
	ret = fi_close(&((struct fid_mr *) mr)->fid);
	if (ret)
		FI_WARN(mrl_hook_prov, FI_LOG_MR,
			"closing a cached registration failed: %s\n",
			fi_strerror(-ret));
	return ret;
}

static const struct mrl_registrar mrl_lease_registrar = {
	.reg = mrl_bind_reg,
	.close = mrl_bind_dereg,
};

/* ---- retention and the memory monitor ------------------------------- */

/*
 * A provider that pins registered pages (verbs, efa...) keeps reading the
 * pages it pinned: an entry outliving the mapping would move wrong bytes.
 * Such a domain keeps an entry past its last lease only while the monitor
 * watches its range. Providers that read memory by address at transfer
 * time cannot go stale that way and keep every entry.
 */
static bool
mrl_bind_watched(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	if (mrl_bind_churn_pass(lo, hi, mrl_params.monitor_churn))
		return false;
	return mrl_monitor_watch(lo, hi);
}

/* A registration closed: its mapping may hold nothing worth watching any
 * more (mrl_monitor_release asks mrl_caches_in_use). */
static void
mrl_bind_released(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	mrl_monitor_release(lo, hi);
}

static bool
mrl_bind_unwatched(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx, (void) lo, (void) hi;
	return false;
}

/* FI_MRLEASE_MONITOR=userfaultfd on a provider that does not pin: watched
 * for the monitor's sake (tests, benchmarks), retained either way. */
static bool
mrl_bind_observed(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	mrl_monitor_watch(lo, hi);
	return true;
}

static const struct mrl_registrar mrl_lease_registrar_watched = {
	.reg = mrl_bind_reg,
	.close = mrl_bind_dereg,
	.watch = mrl_bind_watched,
	.released = mrl_bind_released,
};

static const struct mrl_registrar mrl_lease_registrar_unwatched = {
	.reg = mrl_bind_reg,
	.close = mrl_bind_dereg,
	.watch = mrl_bind_unwatched,
};

static const struct mrl_registrar mrl_lease_registrar_observed = {
	.reg = mrl_bind_reg,
	.close = mrl_bind_dereg,
	.watch = mrl_bind_observed,
	.released = mrl_bind_released,
};

/* Core providers that read registered memory by address at transfer time. */
static const char *const mrl_lease_unpinned[] = {
	"tcp", "udp", "shm", "sockets", "net",
};

bool
mrl_bind_provider_pins(const char *prov_name)
{
	size_t len = strcspn(prov_name, ";");

	switch (mrl_params.pinning) {
	case MRL_PINNING_YES:
		return true;
	case MRL_PINNING_NO:
		return false;
	}
	/* "verbs;ofi_rxm": the core provider comes first. */
	for (size_t i = 0;
	     i < sizeof(mrl_lease_unpinned) / sizeof(mrl_lease_unpinned[0]);
	     i++)
		if (strlen(mrl_lease_unpinned[i]) == len &&
		    !strncmp(prov_name, mrl_lease_unpinned[i], len))
			return false;
	return true;
}

/* On the thread that drains the monitor's events (mrl_monitor_drain): every
 * cache, those given up at fi_fini included (their domains may still be in
 * use). `all` (an overflow, a stop, a failure) says nothing about churn. */
static void
mrl_bind_monitor_invalidate(void *arg, uintptr_t start, uintptr_t end, bool all)
{
	bool closer_work;

	(void) arg;
	if (!all)
		mrl_bind_churn_note(start, end);
	/* The closer is woken only for what it alone would close. */
	closer_work = mrl_caches_invalidate_deferred(start, end);
	if (mrl_bind_remote_monitor_invalidate(start, end))
		closer_work = true;
	if (closer_work)
		mrl_monitor_closer_due();
}

static bool
mrl_bind_monitor_in_use(void *arg, uintptr_t lo, uintptr_t hi)
{
	(void) arg;
	return mrl_caches_in_use(lo, hi) || mrl_bind_remote_in_use(lo, hi);
}

/* On the monitor's closer: FI_THREAD_SAFE domains' dropped registrations
 * (the only ones on the caches' shared lists), then their remote entries
 * retired by the events just applied or idle long enough; called again
 * when the next idle one is due. */
static int
mrl_bind_monitor_close(void *arg)
{
	(void) arg;
	mrl_caches_close_deferred_shared();
	return mrl_bind_remote_close_shared();
}

/* Lookups that find the barrier up apply the monitor's events: set before
 * the monitor can raise it. */
static bool
mrl_bind_monitor_start(void)
{
	struct mrl_monitor_client client = {
		.barrier = &mrl_cache_barrier,
		.invalidate = mrl_bind_monitor_invalidate,
		.in_use = mrl_bind_monitor_in_use,
		.close = mrl_bind_monitor_close,
	};

	mrl_cache_barrier_set_helper(mrl_monitor_drain);
	return !mrl_monitor_start(mrl_hook_prov, &client);
}

/* The registrar of a domain: whether it pins, and whether the monitor runs
 * (started here on first need). */
static const struct mrl_registrar *
mrl_bind_registrar_for(struct mrl_domain *domain)
{
	bool pins = mrl_bind_provider_pins(domain->prov_name);
	bool want = mrl_params.monitor == MRL_MONITOR_UFFD ||
		    (mrl_params.monitor == MRL_MONITOR_AUTO && pins);
	bool running = want && mrl_bind_monitor_start();

	if (pins && !running)
		FI_WARN_ONCE(mrl_hook_prov, FI_LOG_DOMAIN,
			     "%s pins registered pages and no memory monitor "
			     "runs (FI_MRLEASE_MONITOR=%s): its cached "
			     "registrations are kept only while in use\n",
			     domain->prov_name,
			     mrl_params.monitor == MRL_MONITOR_NONE ?
				     "none" :
				     "unavailable");
	/* What the monitor drops on a domain any thread may call is closed
	 * by its closer, without waiting for a call into the domain. */
	if (running && domain->threading == FI_THREAD_SAFE)
		mrl_monitor_closer_start();
	if (pins)
		return running ? &mrl_lease_registrar_watched :
				 &mrl_lease_registrar_unwatched;
	return running ? &mrl_lease_registrar_observed : &mrl_lease_registrar;
}

/*
 * FI_MR_ENDPOINT domains: an MR is usable only once bound to an endpoint and
 * enabled, so one registration cannot be shared by every endpoint of the
 * domain. The cache is refused there (pin and NULL descriptors fail with
 * -FI_EOPNOTSUPP) rather than handing out MRs that are not enabled.
 */
static int
mrl_bind_reg_refused(void *ctx, const void *addr, size_t len, uint64_t access,
		     uint64_t key, void **mr, void **desc)
{
	(void) ctx, (void) addr, (void) len, (void) access, (void) key;
	(void) mr, (void) desc;
	FI_WARN_ONCE(mrl_hook_prov, FI_LOG_MR,
		     "FI_MR_ENDPOINT domain: the lease cache cannot share "
		     "registrations between endpoints\n");
	return -FI_EOPNOTSUPP;
}

static const struct mrl_registrar mrl_lease_registrar_refused = {
	.reg = mrl_bind_reg_refused,
	.close = mrl_bind_dereg,
};

/* ---- FI_MRLEASE_STATS ----------------------------------------------- */

/* One row per counter of struct fi_mrlease_stats, in its order. */
static const struct {
	const char *label;
	size_t offset;
} mrl_stats_rows[] = {
#define MRL_STATS_ROW(label, field)                             \
	{                                                       \
		label, offsetof(struct fi_mrlease_stats, field) \
	}
	MRL_STATS_ROW("lookups", lookups),
	MRL_STATS_ROW("hits", hits),
	MRL_STATS_ROW("misses", misses),
	MRL_STATS_ROW("registrations", registrations),
	MRL_STATS_ROW("deregistrations", deregistrations),
	MRL_STATS_ROW("invalidate calls", invalidations),
	MRL_STATS_ROW("retired while leased", retired_leased),
	MRL_STATS_ROW("evictions", evictions),
	MRL_STATS_ROW("live entries", entries),
	MRL_STATS_ROW("live leases", leases),
	MRL_STATS_ROW("registered bytes", registered_bytes),
	MRL_STATS_ROW("monitor events", monitor_events),
	MRL_STATS_ROW("monitor invalidations", monitor_invalidations),
	MRL_STATS_ROW("not retained", not_retained),
	MRL_STATS_ROW("deferred closes", deferred_closes),
	MRL_STATS_ROW("misses: cold", miss_cold),
	MRL_STATS_ROW("misses: evicted", miss_evicted),
	MRL_STATS_ROW("misses: invalidated", miss_invalidated),
	MRL_STATS_ROW("misses: monitor", miss_monitor),
	MRL_STATS_ROW("misses: churn", miss_churn),
	MRL_STATS_ROW("misses: not retained", miss_not_retained),
	MRL_STATS_ROW("below min (no lookup)", miss_below_min),
	MRL_STATS_ROW("forwarded: remote", fwd_remote),
	MRL_STATS_ROW("forwarded: device", fwd_device),
	MRL_STATS_ROW("forwarded: dmabuf", fwd_dmabuf),
	MRL_STATS_ROW("forwarded: endpoint", fwd_endpoint),
	MRL_STATS_ROW("forwarded: rma event", fwd_rma_event),
	MRL_STATS_ROW("forwarded: no monitor", fwd_no_monitor),
	MRL_STATS_ROW("forwarded: key", fwd_key),
	MRL_STATS_ROW("forwarded: auth key", fwd_auth_key),
	MRL_STATS_ROW("forwarded: other", fwd_other),
	MRL_STATS_ROW("remote lookups", remote_lookups),
	MRL_STATS_ROW("remote hits", remote_hits),
	MRL_STATS_ROW("remote registrations", remote_registrations),
	MRL_STATS_ROW("remote deregistrations", remote_deregistrations),
	MRL_STATS_ROW("remote live entries", remote_entries),
	MRL_STATS_ROW("remote idle entries", remote_idle),
	MRL_STATS_ROW("remote idle closes", remote_idle_closes),
	MRL_STATS_ROW("remote invalidated", remote_invalidated),
	MRL_STATS_ROW("remote evicted", remote_evicted),
#undef MRL_STATS_ROW
};

/* A power of two as "4K", "2M", "1G" (with unit "B": bytes) or "128ns",
 * "16us". */
static void
mrl_lease_pow2(char *buf, size_t len, unsigned log2, const char *unit)
{
	static const char kilo[] = " KMGTPE";
	unsigned step = 0;

	if (!strcmp(unit, "ns")) {
		static const char *const tunits[] = {"ns", "us", "ms", "s"};
		uint64_t v = (uint64_t) 1 << log2;

		while (v >= 1000 && step < 3) {
			v /= 1000;
			step++;
		}
		snprintf(buf, len, "%" PRIu64 "%s", v, tunits[step]);
		return;
	}
	step = log2 / 10;
	snprintf(buf, len, "%llu%.1s", 1ull << (log2 % 10),
		 step ? &kilo[step] : "");
}

/* The non-empty buckets of a histogram, one line each. */
static size_t
mrl_lease_print_hist(char *table, size_t size, size_t used, const char *title,
		     const uint64_t *hist, unsigned shift, const char *unit)
{
	char lo[16];

	if (used >= size)
		return used;
	used += (size_t) snprintf(table + used, size - used, "  %s\n", title);
	for (unsigned i = 0; i < FI_MRLEASE_HIST_BUCKETS && used < size; i++) {
		if (!hist[i])
			continue;
		/* Bucket 0 holds everything below bucket 1. */
		mrl_lease_pow2(lo, sizeof(lo), i ? i + shift : shift + 1, unit);
		used += (size_t) snprintf(table + used, size - used,
					  "    %s %-8s %29" PRIu64 "\n",
					  i ? ">=" : "< ", lo, hist[i]);
	}
	return used;
}

static void
mrl_bind_print_stats(FILE *out, const char *title,
		     const struct fi_mrlease_stats *stats)
{
	char table[4096];
	size_t used;

	/* One write, so tables of domains closing on several threads do not
	 * interleave line by line. */
	used = (size_t) snprintf(table, sizeof(table),
				 "mrlease: lease cache statistics, %s\n",
				 title);
	for (size_t i = 0;
	     i < sizeof(mrl_stats_rows) / sizeof(mrl_stats_rows[0]) &&
	     used < sizeof(table);
	     i++) {
		uint64_t value = *(const uint64_t *) ((const char *) stats +
						      mrl_stats_rows[i].offset);

		used += (size_t) snprintf(table + used, sizeof(table) - used,
					  "  %-22s %20" PRIu64 "\n",
					  mrl_stats_rows[i].label, value);
	}
	/* Over every request, forwarded ones included (fi_mrlease_requests). */
	if (fi_mrlease_requests(stats) && used < sizeof(table))
		used += (size_t) snprintf(table + used, sizeof(table) - used,
					  "  %-22s %19.1f%%\n", "hit rate",
					  100.0 * fi_mrlease_hit_rate(stats));
	used = mrl_lease_print_hist(
		table, sizeof(table), used, "registrations by size",
		stats->reg_size_hist, FI_MRLEASE_SIZE_HIST_SHIFT, "B");
	mrl_lease_print_hist(table, sizeof(table), used, "fi_mr_reg time",
			     stats->reg_ns_hist, FI_MRLEASE_NS_HIST_SHIFT,
			     "ns");
	fputs(table, out);
	fflush(out);
}

/* FI_MR_BASIC (the 1.0 mode value) implies provider-selected keys. */
static bool
mrl_bind_prov_key(int mr_mode)
{
	return mr_mode == MRL_FI_MR_BASIC || (mr_mode & FI_MR_PROV_KEY);
}

/*
 * FI_MRLEASE_REMOTE=cache: remote entries outlive the application's close
 * only while the monitor watches them, pinning provider or not (a key that
 * outlives its memory lets a peer write into whatever reuses it), so the
 * monitor runs for every such domain, and the closer where idle entries
 * must close with no application call. Without it they are forwarded.
 */
static bool
mrl_bind_remote_cached(struct mrl_domain *domain)
{
	bool running;

	if (mrl_params.remote != MRL_REMOTE_CACHE)
		return false;
	running = mrl_params.monitor != MRL_MONITOR_NONE &&
		  mrl_bind_monitor_start();
	if (!running) {
		FI_WARN_ONCE(mrl_hook_prov, FI_LOG_DOMAIN,
			     "FI_MRLEASE_REMOTE=cache needs the memory "
			     "monitor (FI_MRLEASE_MONITOR=%s): remote-access "
			     "registrations are forwarded\n",
			     mrl_params.monitor == MRL_MONITOR_NONE ?
				     "none" :
				     "unavailable");
		return false;
	}
	if (domain->threading == FI_THREAD_SAFE && mrl_monitor_closer_start()) {
		FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
			"no closer thread: idle remote registrations close "
			"at the domain's next call\n");
	}
	return true;
}

int
mrl_bind_domain_open(struct mrl_domain *domain)
{
	struct mrl_domain_config config = {
		.registrar = (domain->mr_mode & FI_MR_ENDPOINT) ?
				     &mrl_lease_registrar_refused :
				     mrl_bind_registrar_for(domain),
		.ctx = domain->inner,
		.prov_key = mrl_bind_prov_key(domain->mr_mode),
		.mr_key_size = domain->mr_key_size,
		.free_threaded = domain->threading == FI_THREAD_SAFE,
	};
	struct mrl_bind_domain *lease_domain;
	struct mrl_cache *cache;
	int ret;

	ret = mrl_bind_cache_get(&cache);
	if (ret)
		return ret;

	lease_domain = calloc(1, sizeof(*lease_domain));
	if (!lease_domain)
		return -FI_ENOMEM;

	ret = mrl_bind_remote_open(domain, config.prov_key,
				   mrl_bind_remote_cached(domain),
				   &lease_domain->remote);
	if (ret)
		goto err_free;
	ret = mrl_cache_domain_open(cache, &config,
				    &lease_domain->cache_domain);
	if (ret) {
		FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
			"cannot open a cache domain: %s\n", fi_strerror(-ret));
		goto err_remote;
	}
	lease_domain->domain = domain;
	domain->ext = lease_domain;
	mrl_live_domain_add(lease_domain->cache_domain, domain->prov_name,
			    domain->outermost, mrl_bind_remote_more,
			    lease_domain->remote);
	return 0;

err_remote:
	mrl_bind_remote_closed(lease_domain->remote);
err_free:
	free(lease_domain);
	return ret;
}

/*
 * Before the inner close, which the provider refuses while endpoints or MRs
 * are open: only the registrations nothing holds close, so the provider
 * sees none of ours; the cache domain stays open, and a refused close
 * leaves the domain, its endpoints' leases and the extension working.
 */
void
mrl_bind_domain_close(struct mrl_domain *domain)
{
	struct mrl_bind_domain *lease_domain = mrl_bind_domain_of(domain);

	if (!lease_domain)
		return;
	mrl_bind_remote_close_unleased(lease_domain->remote);
	mrl_cache_domain_retire_unleased(lease_domain->cache_domain);
}

/* The inner domain closed: the cache domain goes (clear_domain). */
void
mrl_bind_domain_closed(struct mrl_domain *domain)
{
	struct mrl_bind_domain *lease_domain = mrl_bind_domain_of(domain);
	struct fi_mrlease_stats stats;
	char title[160];

	if (!lease_domain)
		return;

	mrl_live_domain_remove(lease_domain->cache_domain);
	if (mrl_params.stats) {
		mrl_cache_domain_stats(lease_domain->cache_domain, &stats);
		mrl_bind_remote_stats(lease_domain, &stats);
		stats.monitor_events = mrl_monitor_events();
		snprintf(title, sizeof(title), "domain %p over %s (%s)",
			 (void *) &domain->domain, domain->prov_name,
			 domain->outermost ? "outermost" : "inner");
		mrl_bind_print_stats(stderr, title, &stats);
	}
	mrl_bind_remote_closed(lease_domain->remote);
	mrl_cache_domain_close(lease_domain->cache_domain);
	domain->ext = NULL;
	free(lease_domain);
}

void
mrl_bind_domain_settle(struct mrl_domain *domain)
{
	struct mrl_bind_domain *lease_domain = mrl_bind_domain_of(domain);

	if (lease_domain && lease_domain->cache_domain)
		mrl_cache_domain_settle(lease_domain->cache_domain);
	if (lease_domain)
		mrl_bind_remote_settle(lease_domain->remote);
}

struct mrl_bind_domain *
mrl_bind_domain_from_fid(struct fid_domain *domain)
{
	if (!domain || !mrl_hook_is_hook_fid(&domain->fid) ||
	    mrl_hook_class_of(&domain->fid) != MRL_CLASS_DOMAIN)
		return NULL;
	return mrl_bind_domain_of(mrl_hook_domain_of(domain));
}

/* ---- leased MR handles ---------------------------------------------- */

static int
mrl_bind_mr_release(struct mrl_mr *mr)
{
	mrl_cache_lease_release(mr->ext);
	mrl_bind_domain_settle(mr->domain);
	return 0;
}

static int
mrl_bind_mr_unpin(struct mrl_mr *mr)
{
	mrl_cache_unpin(mr->ext);
	mrl_bind_domain_settle(mr->domain);
	return 0;
}

int
mrl_bind_mr_open(struct mrl_domain *domain, struct mrl_registration *reg,
		 enum mrl_bind_kind kind, void *context, struct fid_mr **mr)
{
	struct mrl_mr *lease_mr;
	int ret;

	ret = mrl_hook_mr_wrap(domain, mrl_registration_mr(reg), context,
			       kind == MRL_BIND_PIN ? mrl_bind_mr_unpin :
						      mrl_bind_mr_release,
			       &lease_mr);
	if (ret)
		return ret;
	lease_mr->ext = reg;
	*mr = &lease_mr->mr;
	return 0;
}
