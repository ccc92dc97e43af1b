/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-thread reader records (read-section announcements, hot slots, hit
 * counters), the statistic slots that index their counters, and the write
 * sections that wait for readers. Rules in mrl_readers.h: a thread writes
 * only its own record, claiming one never allocates, a writer waits for
 * every reader of its cache.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>

#include "mrl_readers.h"

struct mrl_reader mrl_readers[MRL_CACHE_MAX_THREADS + 1];
atomic_uint mrl_readers_hwm;
static pthread_key_t mrl_reader_key;
static pthread_once_t mrl_reader_once = PTHREAD_ONCE_INIT;
__thread struct mrl_reader *mrl_readers_self
	__attribute__((tls_model("initial-exec")));
/* &mrl_readers_self->t for a thread with its own record (the inline hit
 * path); mrl_fast_hot points to an empty record until then. */
static struct mrl_thread mrl_thread_empty;
__thread struct mrl_thread *mrl_fast __attribute__((tls_model("initial-exec")));
__thread struct mrl_thread *mrl_fast_hot
	__attribute__((tls_model("initial-exec"))) = &mrl_thread_empty;
struct mrl_thread *const mrl_thread_shared =
	&mrl_readers[MRL_CACHE_MAX_THREADS].t;

/* Thread exit: give the record back (counters stay, they are history). */
static void
readers_detach(void *arg)
{
	struct mrl_reader *rec = arg;

	for (size_t i = 0; i < MRL_CACHE_STAT_SLOTS; i++)
		for (size_t w = 0; w < MRL_HOT_WAYS; w++)
			rec->t.hot[i][w] = (struct mrl_hot){NULL, 0, 0, 0};
	mrl_readers_self = NULL;
	mrl_fast = NULL;
	mrl_fast_hot = &mrl_thread_empty;
	atomic_store_explicit(&rec->in_use, false, memory_order_release);
}

static void
readers_key_init(void)
{
	mrl_readers[MRL_CACHE_MAX_THREADS].shared = true;
	if (pthread_key_create(&mrl_reader_key, readers_detach))
		mrl_readers[0].shared = true; /* unreachable in practice */
}

/* Claim a record without malloc (invalidate may run inside an allocator
 * hook). */
struct mrl_reader *
mrl_readers_attach(void)
{
	struct mrl_reader *rec = &mrl_readers[MRL_CACHE_MAX_THREADS];
	unsigned hwm;

	pthread_once(&mrl_reader_once, readers_key_init);
	for (unsigned i = 0; i < MRL_CACHE_MAX_THREADS; i++) {
		bool expected = false;

		if (atomic_load_explicit(&mrl_readers[i].in_use,
					 memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&mrl_readers[i].in_use,
						    &expected, true))
			continue;
		rec = &mrl_readers[i];
		/* seq_cst: a writer that missed this record in its scan is
		 * ordered before our first read section, which then sees its
		 * writer flag (see mrl_readers_write_enter). */
		hwm = atomic_load(&mrl_readers_hwm);
		while (hwm < i + 1 && !atomic_compare_exchange_weak(
					      &mrl_readers_hwm, &hwm, i + 1))
			;
		if (pthread_setspecific(mrl_reader_key, rec)) {
			atomic_store(&rec->in_use, false);
			rec = &mrl_readers[MRL_CACHE_MAX_THREADS];
		}
		break;
	}
	mrl_readers_self = rec;
	mrl_fast = rec->shared ? NULL : &rec->t;
	mrl_fast_hot = rec->shared ? &mrl_thread_empty : &rec->t;
	return rec;
}

void
mrl_readers_forget_others(void)
{
	for (unsigned i = 0; i < MRL_CACHE_MAX_THREADS; i++) {
		if (&mrl_readers[i] == mrl_readers_self)
			continue;
		atomic_store_explicit(&mrl_readers[i].active, NULL,
				      memory_order_relaxed);
		atomic_store_explicit(&mrl_readers[i].in_use, false,
				      memory_order_relaxed);
	}
}

uint64_t
mrl_readers_sum(unsigned slot, enum mrl_tcnt which)
{
	unsigned hwm = atomic_load(&mrl_readers_hwm);
	uint64_t sum;

	sum = atomic_load_explicit(
		&mrl_readers[MRL_CACHE_MAX_THREADS].t.cnt[which][slot],
		memory_order_acquire);
	for (unsigned i = 0; i < hwm; i++)
		sum += atomic_load_explicit(&mrl_readers[i].t.cnt[which][slot],
					    memory_order_acquire);
	return sum;
}

/* ---- statistic slots ---------------------------------------------------- */

/* Each cache and domain owns a slot of the per-thread counters, so the hit
 * path indexes an array instead of allocating per-thread state per domain.
 * Past MRL_CACHE_STAT_SLOTS - 1 users, the last slot is shared. */
static pthread_mutex_t mrl_slot_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned mrl_slot_users[MRL_CACHE_STAT_SLOTS];

unsigned
mrl_readers_slot_alloc(uint64_t base[MRL_TCNT_COUNT])
{
	unsigned slot = MRL_CACHE_STAT_SLOTS - 1;

	pthread_mutex_lock(&mrl_slot_lock);
	for (unsigned i = 0; i < MRL_CACHE_STAT_SLOTS - 1; i++) {
		if (!mrl_slot_users[i]) {
			slot = i;
			break;
		}
	}
	mrl_slot_users[slot]++;
	pthread_mutex_unlock(&mrl_slot_lock);
	for (int i = 0; i < MRL_TCNT_COUNT; i++)
		base[i] = mrl_readers_sum(slot, i);
	return slot;
}

void
mrl_readers_slot_free(unsigned slot)
{
	pthread_mutex_lock(&mrl_slot_lock);
	mrl_assert(mrl_slot_users[slot] > 0);
	mrl_slot_users[slot]--;
	pthread_mutex_unlock(&mrl_slot_lock);
}

void
mrl_readers_fork_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&mrl_slot_lock);
	else
		pthread_mutex_unlock(&mrl_slot_lock);
}

/* ---- write sections ----------------------------------------------------- */

/* The mutex excludes other writers and locked readers, the writer flag plus
 * the scan excludes lock-free readers (seq_cst pairs with mrl_readers_enter:
 * either the reader sees the flag or the writer sees the reader). */
void
mrl_readers_write_enter(struct mrl_cache *cache)
{
	unsigned hwm;

	pthread_mutex_lock(&cache->lock);
	atomic_store_explicit(&cache->writer, 1, memory_order_seq_cst);
	hwm = atomic_load(&mrl_readers_hwm);
	for (unsigned i = 0; i < hwm; i++) {
		/* A read section is a few loads; one that lasts is a preempted
		 * reader, so stop burning the CPU it needs. */
		for (unsigned spins = 0;
		     atomic_load_explicit(&mrl_readers[i].active,
					  memory_order_acquire) == cache;
		     spins++) {
			if (spins < 128)
				MRL_CPU_RELAX();
			else
				sched_yield();
		}
	}
}

void
mrl_readers_write_exit(struct mrl_cache *cache)
{
	atomic_store_explicit(&cache->writer, 0, memory_order_release);
	pthread_mutex_unlock(&cache->lock);
}
