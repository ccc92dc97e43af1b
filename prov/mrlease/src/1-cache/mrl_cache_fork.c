/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The process-wide parts of the lease cache that fork needs (mrl_cache.h
 * "Fork"): the list of every cache and the fork handlers. The barrier a
 * monitor raises is mrl_cache_barrier.c's.
 *
 * Rules it keeps. A child never inherits a cache lock another thread held
 * (every cache's flt_lock, lock and deferred_lock, then the slab pool, slot and
 * arena locks, are held across fork, in the order the code takes them, and
 * released in reverse); in a child the barrier is down, the other threads'
 * reader records are free, and mrl_cache_fork_gen has moved on, so the
 * parent's registrations are forgotten, never closed.
 */
#include "config.h"

#include <pthread.h>

#include "mrl_arena.h"
#include "mrl_readers.h"
#include "mrl_slab.h"

/* ---- fork --------------------------------------------------------------- */

atomic_uint mrl_cache_fork_gen;
static pthread_once_t mrl_fork_once = PTHREAD_ONCE_INIT;

/*
 * Every cache of the process, so fork can hold their locks: a child must not
 * inherit a lock another thread held (the monitor's write section, a miss
 * inserting), or its first domain open or invalidate would wait forever.
 */
static pthread_mutex_t mrl_caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrl_cache *mrl_caches;

/* Every cache lock in the order the code takes them (a cache's flt_lock
 * before its lock, its deferred_lock last; the pool, slot and arena locks
 * are leaves), released in reverse. */
static void
cache_fork_locks(bool lock)
{
	struct mrl_cache *cache;

	if (lock) {
		pthread_mutex_lock(&mrl_caches_lock);
		for (cache = mrl_caches; cache; cache = cache->next) {
			pthread_mutex_lock(&cache->flt_lock);
			pthread_mutex_lock(&cache->lock);
			pthread_mutex_lock(&cache->deferred_lock);
		}
		mrl_slab_fork_lock(true);
		mrl_readers_fork_lock(true);
		mrl_arena_fork_lock(true);
		return;
	}
	mrl_arena_fork_lock(false);
	mrl_readers_fork_lock(false);
	mrl_slab_fork_lock(false);
	for (cache = mrl_caches; cache; cache = cache->next) {
		pthread_mutex_unlock(&cache->deferred_lock);
		pthread_mutex_unlock(&cache->lock);
		pthread_mutex_unlock(&cache->flt_lock);
	}
	pthread_mutex_unlock(&mrl_caches_lock);
}

static void
cache_fork_prepare(void)
{
	cache_fork_locks(true);
}

static void
cache_fork_parent(void)
{
	cache_fork_locks(false);
}

static void
cache_fork_child(void)
{
	struct mrl_cache_domain *dom;
	struct mrl_cache *cache;

	/* The threads that were closing deferred registrations, and any
	 * domain close waiting for them, do not exist here: what they held is
	 * forgotten, and a domain close here waits for nothing of theirs. */
	for (cache = mrl_caches; cache; cache = cache->next) {
		pthread_cond_init(&cache->deferred_done, NULL);
		for (dom = cache->domains; dom; dom = dom->next)
			atomic_store_explicit(&dom->closing, 0,
					      memory_order_relaxed);
	}
	cache_fork_locks(false);
	/* Threads other than this one do not exist here. */
	mrl_readers_forget_others();
	atomic_fetch_add_explicit(&mrl_cache_fork_gen, 1, memory_order_relaxed);
	/* The monitor that raised it does not exist here. */
	atomic_store_explicit(&mrl_cache_barrier, 0, memory_order_relaxed);
}

static void
cache_fork_handler_install(void)
{
	pthread_atfork(cache_fork_prepare, cache_fork_parent, cache_fork_child);
}

void
mrl_cache_fork_add(struct mrl_cache *cache)
{
	pthread_once(&mrl_fork_once, cache_fork_handler_install);
	pthread_mutex_lock(&mrl_caches_lock);
	cache->next = mrl_caches;
	mrl_caches = cache;
	pthread_mutex_unlock(&mrl_caches_lock);
}

void
mrl_cache_fork_remove(struct mrl_cache *cache)
{
	struct mrl_cache **p;

	pthread_mutex_lock(&mrl_caches_lock);
	for (p = &mrl_caches; *p != cache; p = &(*p)->next)
		;
	*p = cache->next;
	pthread_mutex_unlock(&mrl_caches_lock);
}

void
mrl_caches_each(void (*fn)(struct mrl_cache *cache, void *arg), void *arg)
{
	struct mrl_cache *cache;

	pthread_mutex_lock(&mrl_caches_lock);
	for (cache = mrl_caches; cache; cache = cache->next)
		fn(cache, arg);
	pthread_mutex_unlock(&mrl_caches_lock);
}
