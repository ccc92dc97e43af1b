/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Churn: the ranges the memory monitor recently saw leave the process, so
 * that memory which is mapped, used once and unmapped again (fabtests'
 * fi_unmap_mem loop, a thread's scratch buffers above the allocator's mmap
 * threshold) is not watched on every miss.
 *
 * Why. On a pinning provider an entry is kept past its last lease only
 * while the monitor watches its mapping, and every unmap of a watched
 * mapping makes the unmapping thread wait for the monitor task to read
 * the event. A mapping that lives for one transfer gains nothing from being
 * cached and pays that wait, plus the watch, on every round. So a miss
 * inside a range the monitor reported is registered for its transfer only
 * (not retained, not watched: its unmap costs nothing) `passes` times; the
 * next miss there is watched and cached again. Memory reused after that is
 * served from the cache as before. Each time the same range is noted
 * again (it churned once more after being watched) its allowance doubles,
 * up to 16 times `passes`: memory that keeps churning pays the monitor
 * once per 16 * passes + 1 rounds, and memory that settles is cached after
 * at most that many per-operation registrations.
 *
 * What is noted: only ranges the kernel reported, never the "everything" of
 * an overflow, a stop or a failure (which would make every miss pass). A
 * forked child forgets every range (the parent's unmaps say nothing of the
 * child's memory).
 *
 * Rules. mrl_bind_churn_note() is called by one thread at a time, the one
 * applying the monitor's events (mrl_monitor_drain, under its drain lock,
 * with the barrier up): it allocates nothing and takes no lock (a fixed
 * ring of slots, each published through a sequence number).
 * mrl_bind_churn_pass() may run in any thread, on misses only; it never
 * blocks. A slot torn by a concurrent note reads as no match, which only
 * means the range is watched: the safe answer. Nothing here decides correctness: a range passed is
 * registered per operation, which is always safe.
 */
#ifndef MRL_BIND_CHURN_H
#define MRL_BIND_CHURN_H

#include <stdbool.h>
#include <stdint.h>

/* Record [start, end) as unmapped (the draining thread only). */
void mrl_bind_churn_note(uintptr_t start, uintptr_t end);

/* Whether a miss on [lo, hi) should register for its transfer only, with
 * at most `passes` such answers per note of a range, doubled for each
 * time the range was noted again up to 16 times (0: never). */
bool mrl_bind_churn_pass(uintptr_t lo, uintptr_t hi, uint64_t passes);

/* Forget every range (fork child, tests). */
void mrl_bind_churn_reset(void);

#endif /* MRL_BIND_CHURN_H */
