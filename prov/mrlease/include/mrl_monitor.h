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
 * its leases. Registrations are never removed: the kernel drops them with
 * the mapping.
 *
 * The monitor task, its rules (each is what keeps a thread blocked in
 * munmap, which waits for the monitor to *read* its event, from deadlocking
 * with it, and a single-threaded process single-threaded as glibc sees it):
 *  - it only reads events and records their ranges: it never unmaps memory,
 *    never closes a registration, never allocates, takes no lock and calls
 *    no client code. It is a kernel task of the process that glibc does not
 *    know (raw clone, raw system calls, no TLS, every signal blocked), so
 *    glibc keeps its single-thread shortcuts (no cancellation bookkeeping
 *    around system calls, no locking in malloc or stdio). It has a
 *    descriptor table of its own holding only its two descriptors. It is a
 *    pthread running the same loop where glibc must know it: when the
 *    process may change its user or group ids (glibc changes the
 *    credentials of every thread it knows, and the kernel's are per
 *    thread), under ThreadSanitizer, and off x86_64 (enum mrl_monitor_task);
 *  - before each read it raises the client's barrier, and the barrier stays
 *    up until every range read has been invalidated: once munmap has
 *    returned in any thread, no lookup in any thread returns an entry of
 *    the range;
 *  - the ranges go into a fixed ring; when the ring has no room for a whole
 *    batch, the batch is recorded as an overflow, which invalidates
 *    everything the monitor watches.
 *
 * Applying the events. mrl_monitor_drain, called by an application thread
 * that finds the barrier up (a lookup, with no lock held and outside any
 * read section), hands every recorded range to the client's invalidate in
 * that thread, then lowers the barrier for each batch applied. Drains are
 * serialised among application threads; one that finds another draining
 * returns at once (the caller waits for the barrier).
 *
 * Life cycle. Started once per process on demand (mrl_monitor_start, thread
 * safe; it returns once the task holds only its own descriptors); stopped
 * at provider cleanup (mrl_monitor_stop: the task exits, then the last
 * descriptor of the userfaultfd is closed, which releases every watch and
 * wakes any thread waiting on it). A task whose descriptor fails (never
 * seen) tells it once through a drain, drops everything watched (an
 * overflow), watches nothing more, and serves on until stopped, as the
 * kernel holds unmapping threads until their event is read. After fork the
 * child has no monitor task: it closes the inherited descriptor, forgets
 * the parent's state and ranges, and starts its own when asked.
 */
#ifndef MRL_MONITOR_H
#define MRL_MONITOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/providers/fi_prov.h>

/* What the task is (FI_MRLEASE_MONITOR_TASK). */
enum mrl_monitor_task {
	MRL_MONITOR_TASK_AUTO, /* a raw clone, unless the process may change
				* its user or group ids (root, setuid) */
	MRL_MONITOR_TASK_CLONE, /* a raw clone where one can be made */
	MRL_MONITOR_TASK_PTHREAD, /* a thread of glibc's */
};

/* What the monitor works on. */
struct mrl_monitor_client {
	atomic_uint *barrier; /* raised by the task before each read, lowered
			       * by mrl_monitor_drain once applied */
	/* Called by mrl_monitor_drain, on the draining thread, once per range
	 * read (start = 0, end = UINTPTR_MAX after an overflow): must not
	 * close registrations (mrl_cache_invalidate_deferred). */
	void (*invalidate)(void *arg, uintptr_t start, uintptr_t end);
	void *arg;
	enum mrl_monitor_task task;
};

/* Start the monitor (idempotent). 0 when it runs; a -FI_E* code, with one
 * FI_WARN saying why, when userfaultfd is unavailable (kernel, privilege,
 * seccomp). A failed start is not retried. */
int mrl_monitor_start(const struct fi_provider *prov,
		      const struct mrl_monitor_client *client);

/* Whether the monitor runs in this process. */
bool mrl_monitor_running(void);

/* Watch [lo, hi) (page-aligned) for unmapping; see "Watching". */
bool mrl_monitor_watch(uintptr_t lo, uintptr_t hi);

/* Apply every range the task has read: see "Applying the events". No lock
 * may be held by the caller that the client's invalidate takes. */
void mrl_monitor_drain(void);

/* The kernel thread id of the monitor task (0: none), for tests. */
int mrl_monitor_tid(void);

/* Events read since start (process-wide). */
uint64_t mrl_monitor_events(void);

/* Stop the task and release every watch, then apply what it read; for
 * provider cleanup. */
void mrl_monitor_stop(void);

#endif /* MRL_MONITOR_H */
