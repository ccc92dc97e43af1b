/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor: tells the lease cache, without the application's help,
 * about every range whose pages leave the process or are replaced, before
 * any later lookup can see it.
 *
 * What it reports. munmap (also glibc's free() of an mmapped chunk, heap
 * trim, brk/sbrk shrinking the heap, a raw syscall), mremap moving or
 * shrinking a mapping, madvise MADV_DONTNEED / MADV_FREE / MADV_REMOVE
 * (allocator purges), mmap(MAP_FIXED) over a mapping: each as the range that
 * went away, handed to the client's invalidate. Not reported: shmdt (the
 * kernel sends no event), ranges it could not watch (below).
 *
 * Backend. One Linux userfaultfd with the non-cooperative events UNMAP,
 * REMOVE and REMAP (not FORK: a child inherits no watch). Ranges are
 * registered in write-protect mode with nothing write-protected, so no page
 * fault is ever delivered to the monitor. Created with UFFD_USER_MODE_ONLY
 * when the process lacks the privilege (vm.unprivileged_userfaultfd=0).
 *
 * Watching. mrl_monitor_watch(lo, hi) registers every VMA of [lo, hi)
 * whole, found with PROCMAP_QUERY on /proc/self/maps (Linux 6.11): a mapping
 * is never split, so the VMA count does not grow with the entries and an
 * application's mremap of its whole mapping keeps working. On older kernels
 * it registers the largest aligned block (2 MiB, halving near memory
 * userfaultfd refuses) around the range, which can split a larger mapping.
 * A range that cannot be watched (file-backed, another userfaultfd owns it:
 * -EBUSY, not fully mapped) answers false: the caller must not keep it past
 * its leases. The monitor keeps the ranges it registered in a table; a
 * range already there is not registered again.
 *
 * Releasing watches. Every thread blocked in munmap or madvise of a watched
 * range waits for the task to read its event, so a mapping stays watched
 * only while it holds something worth watching: mrl_monitor_release(lo, hi),
 * called once a cached registration of [lo, hi) has closed, unregisters
 * every watched range overlapping it that the client's in_use says holds no
 * live entry and no miss in flight. Watch and release serialise on the
 * table's lock, and a miss is visible to in_use before it calls watch, so a
 * release never unregisters a range a new entry relies on. A mapping moved
 * by mremap stays watched at its new address until it is unmapped (the
 * kernel moves the registration with it).
 *
 * The task. One pthread, named "mrl-monitor", every signal blocked. Its
 * rules are what keep a thread blocked in munmap (which waits for the task
 * to *read* its event) from deadlocking with it:
 *  - it only polls and reads the userfaultfd and its timer, records the
 *    ranges and wakes the closer: it never unmaps memory, never closes a
 *    registration, never allocates, takes no lock and calls no client code;
 *  - it never wakes the closer right after a read, nor sleeps with a
 *    timeout: the closer would run, or a timer be armed and cancelled,
 *    while the unmapping thread is on its way back from munmap (on the
 *    same core, in front of it);
 *  - before each read it raises the client's barrier, and the barrier stays
 *    up until every range read has been invalidated: once munmap has
 *    returned in any thread, no lookup in any thread returns an entry of
 *    the range (before that, nothing is promised: the kernel frees the
 *    range before it queues the event, so another thread's mmap may get
 *    those addresses while the unmapper still waits; LIMITATIONS in
 *    fi_mrlease(7));
 *  - the ranges go into a fixed ring; when the ring has no room for a whole
 *    batch, the batch is recorded as an overflow, which invalidates
 *    everything (and, its ranges being lost, has the drain register every
 *    watched range again, forgetting those partly unmapped, before it
 *    invalidates).
 *
 * Applying the events. mrl_monitor_drain, called by an application thread
 * that finds the barrier up (a lookup, which every NULL-descriptor post
 * makes, a CQ or counter read, an MR call: no lock held, outside any read
 * section), hands every recorded range to the client's
 * invalidate in that thread, then lowers the barrier for each batch
 * applied. Drains are serialised; one that finds another draining returns
 * at once (the caller waits for the barrier).
 *
 * The closer. Started on request (mrl_monitor_closer_start), a second
 * pthread, "mrl-closer", which is an application thread as far as the rules
 * go: woken by the task, by the client (mrl_monitor_closer_wake), or when the
 * delay the client's close returned last has passed, it calls the client's
 * close, which applies the events and closes what they dropped (or what has
 * waited long enough), without waiting for the application's next call.
 * The task wakes it only when it has work no application call is sure to
 * do, and a short delay after a batch (the batches read meanwhile share
 * the wake-up): if by then a batch is still not applied (no application
 * thread called in), or if a drain on another thread left it something
 * (mrl_monitor_closer_due, called by the client's invalidate before the
 * drain lowers the barrier). So an unmap whose batch an application call
 * applies, leaving nothing for the closer, never wakes it.
 *
 * Life cycle. Started once per process on demand (mrl_monitor_start, thread
 * safe). Stopped at provider cleanup (mrl_monitor_stop): the task records an
 * overflow, so that everything kept because it was watched is invalidated,
 * then releases the userfaultfd (every watch goes, every waiting unmapper
 * wakes) and exits; every descriptor the monitor opened is closed, and the
 * overflow is applied before stop returns. A later start works as the first.
 * A task that can no longer poll or read its descriptor does what stop does
 * and exits (it never spins, and no unmapper stays blocked); the next drain
 * reports it once with FI_WARN; nothing is watched from then on and no
 * start is tried again in the process. After fork the child has no monitor: it
 * closes every descriptor inherited from the parent's (each is recorded
 * under a lock that fork takes, so none can escape) and starts its own when
 * asked.
 */
#ifndef MRL_MONITOR_H
#define MRL_MONITOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/providers/fi_prov.h>

/* What the monitor works on. */
struct mrl_monitor_client {
	atomic_uint *barrier; /* raised by the task before each read, lowered
			       * by mrl_monitor_drain once applied */
	/* Called by mrl_monitor_drain, on the draining thread, once per range
	 * read, or once with all = true (start 0, end UINTPTR_MAX) after an
	 * overflow, a stop or a failure: must not close registrations
	 * (mrl_cache_invalidate_deferred); calls mrl_monitor_closer_due when
	 * it left something only the closer closes without a call. */
	void (*invalidate)(void *arg, uintptr_t start, uintptr_t end,
			   bool all);
	/* Whether [lo, hi) still holds a live entry or a miss in flight
	 * (mrl_monitor_release). Called under the watch table's lock. */
	bool (*in_use)(void *arg, uintptr_t lo, uintptr_t hi);
	/* On the closer, woken by the task (see "The closer") and by
	 * mrl_monitor_closer_wake: apply the events (wait out the barrier,
	 * whose helper is mrl_monitor_drain) and close what the invalidations
	 * dropped that any thread may close. Returns the milliseconds after
	 * which it wants to be called again with nothing woken it (-1: only
	 * when woken). NULL: no closer. */
	int (*close)(void *arg);
	void *arg;
};

/* Start the monitor (idempotent). 0 when it runs; a -FI_E* code, with one
 * FI_WARN saying why, when userfaultfd is unavailable (kernel, privilege,
 * seccomp). A failed start is not retried before a stop, a failed task
 * never. */
int mrl_monitor_start(const struct fi_provider *prov,
		      const struct mrl_monitor_client *client);

/* Start the closer (idempotent; the monitor must run). 0 or -FI_E*. */
int mrl_monitor_closer_start(void);

/* Whether the monitor runs in this process. */
bool mrl_monitor_running(void);

/* Watch [lo, hi) for unmapping; see "Watching". */
bool mrl_monitor_watch(uintptr_t lo, uintptr_t hi);

/* A registration of [lo, hi) closed: see "Releasing watches". No lock may
 * be held by the caller that the client's in_use takes. */
void mrl_monitor_release(uintptr_t lo, uintptr_t hi);

/* Apply every range the task has read: see "Applying the events". No lock
 * may be held by the caller that the client's invalidate takes. */
void mrl_monitor_drain(void);

/* Have the closer call the client's close soon (no lock, no wait; nothing
 * when no closer runs): something only it would close without an
 * application call may be due earlier than it last asked. */
void mrl_monitor_closer_wake(void);

/* From the client's invalidate: the drain left something only the closer
 * closes without an application call, so the task wakes it at the end of
 * the batch's delay (a store: no system call; nothing on the closer itself,
 * or when no closer runs). */
void mrl_monitor_closer_due(void);

/* Kernel thread ids of the task and the closer (0: none), for tests. */
int mrl_monitor_tid(void);
int mrl_monitor_closer_tid(void);

/* Ranges registered with the userfaultfd now, for tests and statistics. */
size_t mrl_monitor_watched(void);

/* Events read since start (process-wide). */
uint64_t mrl_monitor_events(void);

/* Stop the task and the closer, release every watch, close every
 * descriptor, then apply what was read and the stop's overflow; for
 * provider cleanup. */
void mrl_monitor_stop(void);

#endif /* MRL_MONITOR_H */
