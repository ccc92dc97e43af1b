/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Churn: the ring of ranges the monitor saw unmapped (rules in
 * mrl_bind_churn.h).
 *
 * Each slot is a seqlock with one writer at a time, the thread draining the
 * monitor's events (under the monitor's drain lock): the sequence
 * is odd while the slot is rewritten. A reader copies the range between two
 * reads of an even, unchanged sequence. The range is stored with release
 * and loaded with acquire (no fences: ThreadSanitizer does not model
 * them), so a reader that sees a new bound also sees the odd sequence
 * before it. A slot's pass count is claimed with
 * a compare-and-swap so that at most `passes` misses pass per note; a
 * claim that lands on a slot just rewritten counts against the new range,
 * which at worst watches one miss early. A slot's level, how often its
 * range was noted again, doubles its allowance up to MRL_CHURN_MAX_LEVEL
 * doublings; a slot taken for a new range starts at level 0.
 */
#include "config.h"

#include <stdatomic.h>

#include "mrl_bind_churn.h"

#define MRL_BIND_CHURN_SLOTS 32
/* A range that keeps churning passes at most passes << this per note. */
#define MRL_CHURN_MAX_LEVEL 4

struct mrl_bind_churn_slot {
	atomic_uint_fast64_t seq;
	atomic_uintptr_t start;
	atomic_uintptr_t end;
	atomic_uint_fast64_t used; /* misses passed since the note */
	atomic_uint level; /* times noted again: the allowance's doublings */
};

static struct mrl_bind_churn_slot mrl_bind_churn_ring[MRL_BIND_CHURN_SLOTS];
static unsigned mrl_bind_churn_next; /* the draining thread only */

void
mrl_bind_churn_note(uintptr_t start, uintptr_t end)
{
	struct mrl_bind_churn_slot *slot;

	/* The same range noted again (each round of a loop) keeps its slot,
	 * so one churning buffer does not push others out, and it churned
	 * again after its last allowance: the next one is twice as long. */
	for (unsigned i = 0; i < MRL_BIND_CHURN_SLOTS; i++) {
		unsigned level;

		slot = &mrl_bind_churn_ring[i];
		if (atomic_load_explicit(&slot->start, memory_order_relaxed) !=
			    start ||
		    atomic_load_explicit(&slot->end, memory_order_relaxed) !=
			    end)
			continue;
		level = atomic_load_explicit(&slot->level,
					     memory_order_relaxed);
		if (level < MRL_CHURN_MAX_LEVEL)
			atomic_store_explicit(&slot->level, level + 1,
					      memory_order_relaxed);
		atomic_store_explicit(&slot->used, 0, memory_order_release);
		return;
	}
	slot = &mrl_bind_churn_ring[mrl_bind_churn_next++ % MRL_BIND_CHURN_SLOTS];
	atomic_fetch_add_explicit(&slot->seq, 1, memory_order_acq_rel);
	atomic_store_explicit(&slot->start, start, memory_order_release);
	atomic_store_explicit(&slot->end, end, memory_order_release);
	atomic_store_explicit(&slot->level, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->used, 0, memory_order_release);
	atomic_fetch_add_explicit(&slot->seq, 1, memory_order_release);
}

/* Whether slot holds a range overlapping [lo, hi), read consistently. */
static bool
mrl_bind_churn_slot_overlaps(struct mrl_bind_churn_slot *slot, uintptr_t lo,
			     uintptr_t hi)
{
	uint_fast64_t seq =
		atomic_load_explicit(&slot->seq, memory_order_acquire);
	uintptr_t start, end;

	if (seq & 1)
		return false;
	start = atomic_load_explicit(&slot->start, memory_order_acquire);
	end = atomic_load_explicit(&slot->end, memory_order_acquire);
	if (atomic_load_explicit(&slot->seq, memory_order_acquire) != seq)
		return false;
	return start < hi && lo < end;
}

bool
mrl_bind_churn_pass(uintptr_t lo, uintptr_t hi, uint64_t passes)
{
	if (!passes)
		return false;
	for (unsigned i = 0; i < MRL_BIND_CHURN_SLOTS; i++) {
		struct mrl_bind_churn_slot *slot = &mrl_bind_churn_ring[i];
		uint_fast64_t used, allowed;
		unsigned level;

		if (!mrl_bind_churn_slot_overlaps(slot, lo, hi))
			continue;
		level = atomic_load_explicit(&slot->level,
					     memory_order_relaxed);
		allowed = passes > UINT64_MAX >> level ? UINT64_MAX
						       : passes << level;
		used = atomic_load_explicit(&slot->used, memory_order_acquire);
		while (used < allowed)
			if (atomic_compare_exchange_weak_explicit(
				    &slot->used, &used, used + 1,
				    memory_order_acq_rel, memory_order_acquire))
				return true;
	}
	return false;
}

void
mrl_bind_churn_reset(void)
{
	for (unsigned i = 0; i < MRL_BIND_CHURN_SLOTS; i++) {
		struct mrl_bind_churn_slot *slot = &mrl_bind_churn_ring[i];

		atomic_fetch_add_explicit(&slot->seq, 1, memory_order_acq_rel);
		atomic_store_explicit(&slot->start, 0, memory_order_release);
		atomic_store_explicit(&slot->end, 0, memory_order_release);
		atomic_store_explicit(&slot->level, 0, memory_order_relaxed);
		atomic_store_explicit(&slot->used, 0, memory_order_release);
		atomic_fetch_add_explicit(&slot->seq, 1, memory_order_release);
	}
	mrl_bind_churn_next = 0;
}
