/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the monitor's units share (private to 2-monitor/). Each unit calls
 * only the units after it in this list, never one before it:
 *  - mrl_monitor.c: the task, its ring, the closer, drains, start, stop,
 *    fork;
 *  - mrl_monitor_watch.c: the watch table (the ranges registered with the
 *    userfaultfd), watch and release;
 *  - mrl_monitor_maps.c: the mapping queries (PROCMAP_QUERY);
 *  - mrl_monitor_fd.c: the descriptors, and what start recorded.
 */
#ifndef MRL_MONITOR_INT_H
#define MRL_MONITOR_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/providers/fi_log.h>

#include "mrl_monitor.h"

/*
 * Locks. mrl_monitor_fd_lock is held while a descriptor is created and
 * recorded (and while one is closed) and across fork, so a child knows
 * every descriptor it inherited; nothing else is done under it. The other
 * locks are their units' own (mrl_monitor.c, mrl_monitor_watch.c). The task
 * takes none of them.
 */
extern pthread_mutex_t mrl_monitor_fd_lock;

/* The descriptors, recorded under mrl_monitor_fd_lock (mrl_monitor_fd.c). */
extern int mrl_monitor_uffd; /* the userfaultfd (after the task left: a
			      * duplicate of mrl_monitor_stop_fd holding its
			      * number) */
extern int mrl_monitor_stop_fd; /* eventfd: the stop request */
extern int mrl_monitor_notify_fd; /* eventfd: the closer has work */
extern int mrl_monitor_timer_fd; /* timerfd: the closer's wake-up is due */
extern atomic_int mrl_monitor_maps_fd; /* /proc/self/maps for PROCMAP_QUERY */
extern bool mrl_monitor_uffd_closed; /* the task had to close it outright */
extern atomic_int mrl_monitor_fd; /* the userfaultfd while it watches; -1:
				   * not */

/* What start recorded: the client served and the provider that logs. */
extern struct mrl_monitor_client mrl_monitor_served;
extern const struct fi_provider *mrl_monitor_prov;

#define MRL_MONITOR_WARN(...)                                              \
	do {                                                               \
		if (mrl_monitor_prov)                                      \
			FI_WARN(mrl_monitor_prov, FI_LOG_MR, __VA_ARGS__); \
	} while (0)

/* ---- mrl_monitor_fd.c ---------------------------------------------------- */

/* The userfaultfd, recorded in mrl_monitor_uffd; 0 or -FI_ENOSYS. */
int mrl_monitor_fd_open(void);
/* The two eventfds, the closer's timer and /proc/self/maps, recorded. */
int mrl_monitor_fd_open_aux(void);
/* Whether fd can watch anonymous memory in write-protect mode. */
int mrl_monitor_fd_probe_wp(int fd);
/* Every descriptor the monitor opened, closed. */
void mrl_monitor_fd_close_all(void);

/* ---- mrl_monitor_maps.c -------------------------------------------------- */

/* The VMA around at: 1 and [*lo, *hi); 0: a hole; -1: PROCMAP_QUERY is
 * unavailable (for good once the kernel said so). */
int mrl_monitor_maps_vma(uintptr_t at, uintptr_t *lo, uintptr_t *hi);

/* ---- mrl_monitor_watch.c ------------------------------------------------- */

/* A mapping went: the table forgets [start, end) (the kernel dropped its
 * registration). */
void mrl_monitor_watch_gone(uintptr_t start, uintptr_t end);
/* After an overflow: every range registered again, or forgotten. */
void mrl_monitor_watch_recheck(void);
/* Forget every watched range (the registrations went with the
 * descriptor). */
void mrl_monitor_watch_forget(void);
/* In a fork child (its only thread): the table's lock made anew, the
 * ranges forgotten. */
void mrl_monitor_watch_fork_child(void);

#endif /* MRL_MONITOR_INT_H */
