/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The barrier (mrl_cache.h "Barrier"): a process-wide count a memory
 * monitor raises before it reads unmap events and lowers once their ranges
 * are invalidated. While it is up, lookups go out of line and wait here,
 * with no lock held, calling the monitor client's helper (which applies the
 * events) until it is down; so once munmap has returned in any thread, no
 * lookup returns an entry of the range. A forked child starts with it down
 * (mrl_cache_fork.c).
 */
#include "config.h"

#include <sched.h>

#include "mrl_cache_int.h"

atomic_uint mrl_cache_barrier;
static void (*_Atomic mrl_barrier_helper)(void);

void
mrl_cache_barrier_set_helper(void (*help)(void))
{
	atomic_store_explicit(&mrl_barrier_helper, help, memory_order_release);
}

static atomic_uint_least64_t mrl_barrier_waits;

uint64_t
mrl_cache_barrier_waits(void)
{
	return atomic_load_explicit(&mrl_barrier_waits, memory_order_relaxed);
}

/* With no lock held and outside any read section, so the helper may take
 * the cache's writer side. */
void
mrl_cache_barrier_wait_slow(void)
{
	void (*help)(void);

	atomic_fetch_add_explicit(&mrl_barrier_waits, 1, memory_order_relaxed);
	for (unsigned spins = 0;
	     atomic_load_explicit(&mrl_cache_barrier, memory_order_acquire);
	     spins++) {
		help = atomic_load_explicit(&mrl_barrier_helper,
					    memory_order_acquire);
		if (help)
			help();
		if (!atomic_load_explicit(&mrl_cache_barrier,
					  memory_order_acquire))
			break;
		if (spins < 128)
			MRL_CPU_RELAX();
		else
			sched_yield();
	}
}
