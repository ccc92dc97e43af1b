/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor over Linux userfaultfd (see mrl_monitor.h for what it
 * reports and the rules its task keeps).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_assert.h"
#include "mrl_monitor.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/*
 * PROCMAP_QUERY (Linux 6.11) on /proc/self/maps: the VMA covering an
 * address, in one ioctl. Declared here for older headers (the layout is the
 * kernel's ABI, sized by its first field).
 */
struct mrl_procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset,
		inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define MRL_PROCMAP_QUERY _IOWR('f', 17, struct mrl_procmap_query)

/* Watch granularity without PROCMAP_QUERY: blocks this large and aligned
 * (see "Watching"). */
#define MRL_MONITOR_BLOCK ((uintptr_t) 2 << 20)
/* Events read at once, on the task's stack. */
#define MRL_MONITOR_BATCH 32
/* How long after a batch the task wakes the closer, if it still has work
 * then (see mon_closer_expire): long enough for the unmapping thread to be
 * back from munmap and, mostly, for an application thread to have applied
 * the batch; short against how long a pinned page may outlive its mapping.
 * A timer of its own (mon_timer_fd), armed once for the batches read within
 * the delay: a poll timeout would arm and cancel a timer around every
 * event, which a watched munmap waits for. */
#define MRL_MONITOR_CLOSER_DELAY_NS 2000000L

#define MRL_MONITOR_EVENTS                                      \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
	 UFFD_FEATURE_EVENT_REMAP)

/* Ranges the task has read and no drain has applied yet. */
#define MRL_MONITOR_RING 1024
/* The stacks of the task and the closer. */
#define MRL_MONITOR_STACK ((size_t) 256 * 1024)

/*
 * Locks. mon_lock serialises start, stop and the closer's start; nothing is
 * called under it that could wait for the task. mon_fd_lock is held while a
 * descriptor is created and recorded (and while one is closed) and across
 * fork, so a child knows every descriptor it inherited; nothing else is
 * done under it. mon_drain_lock serialises drains (application threads
 * only). mon_watch_lock protects the watch table and orders the
 * registrations with it; the client's in_use is called under it, and
 * nothing allocates under it (mon_watch_grow). The task takes none of
 * them.
 */
static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mon_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mon_drain_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mon_watch_lock = PTHREAD_MUTEX_INITIALIZER;

/* The descriptors, recorded under mon_fd_lock. */
static int mon_uffd = -1; /* the userfaultfd (after the task left: a
			   * duplicate of mon_stop_fd holding its number) */
static int mon_stop_fd = -1; /* eventfd: the stop request */
static int mon_notify_fd = -1; /* eventfd: the closer has work */
static int mon_timer_fd = -1; /* timerfd: the closer's wake-up is due */
static atomic_int mon_maps_fd = -1; /* /proc/self/maps for PROCMAP_QUERY */
static bool mon_uffd_closed; /* the task had to close it outright */

static atomic_int mon_fd = -1; /* mon_uffd while it watches; -1: not */
static bool mon_tried; /* a start was attempted since the last stop */
static bool mon_started; /* a task was started and not yet joined */
static bool mon_closer_started;
static atomic_bool mon_notify; /* the closer runs: the task wakes it */
/* A drain on another thread than the closer left it work
 * (mrl_monitor_closer_due); the closer clears it before it calls in. */
static atomic_bool mon_closer_owed;
static __thread bool mon_on_closer; /* this thread is the closer */
/* The task's alone: mon_timer_fd is armed for the batches read since the
 * closer's last wake-up. */
static bool mon_closer_pending;
static struct mrl_monitor_client mon_client;
static const struct fi_provider *mon_prov;
static atomic_uint_least64_t mon_events;
static pthread_once_t mon_fork_once = PTHREAD_ONCE_INIT;

static pthread_t mon_thread, mon_closer_thread;
static atomic_int mon_tid, mon_closer_tid;
static atomic_bool mon_ready;
static atomic_int mon_failed; /* the errno the task failed on; 0: none */
static atomic_bool mon_failed_told;

/*
 * The ring. The task writes entries at mon_tail and publishes them
 * (release); a drain copies them out, then frees their slots by moving
 * mon_head (release). `last` closes a batch: its raise of the barrier is
 * lowered once the entry is applied. A batch read without room for a whole
 * batch is counted in mon_overflow instead, its raise kept until a drain
 * has invalidated everything; the task's leaving counts as one too.
 */
struct mon_range {
	uintptr_t start, end;
	bool gone; /* the mapping went (its registration with it) */
	bool last;
};
static struct mon_range mon_ring[MRL_MONITOR_RING];
static atomic_uint_least64_t mon_head, mon_tail;
static atomic_uint mon_overflow;

/* The watch table: the ranges registered with the userfaultfd, sorted and
 * disjoint (mon_watch_lock). */
struct mon_watch {
	uintptr_t lo, hi;
};
static struct mon_watch *mon_watches;
static size_t mon_nwatch, mon_watch_cap;
static atomic_size_t mon_nwatch_seen; /* mon_nwatch, for lock-free looks */

#define MON_WARN(...)                                              \
	do {                                                       \
		if (mon_prov)                                      \
			FI_WARN(mon_prov, FI_LOG_MR, __VA_ARGS__); \
	} while (0)

/* ---- the task ------------------------------------------------------------ */

/* The range an event says went away, and whether its mapping went too (an
 * madvise leaves the mapping, and its watch, in place); false for events
 * that free nothing. */
static bool
mon_event_range(const struct uffd_msg *msg, struct mon_range *r)
{
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
	case UFFD_EVENT_REMOVE:
		r->start = (uintptr_t) msg->arg.remove.start;
		r->end = (uintptr_t) msg->arg.remove.end;
		r->gone = msg->event == UFFD_EVENT_UNMAP;
		return true;
	case UFFD_EVENT_REMAP:
		/* The pages now live at msg->arg.remap.to; the old addresses
		 * no longer name them. */
		r->start = (uintptr_t) msg->arg.remap.from;
		r->end = r->start + (uintptr_t) msg->arg.remap.len;
		r->gone = true;
		return true;
	default:
		return false;
	}
}

/* Wake the closer, if one runs (an eventfd write: no lock, no wait). */
static void
mon_wake_closer(void)
{
	uint64_t one = 1;

	if (atomic_load_explicit(&mon_notify, memory_order_acquire) &&
	    write(mon_notify_fd, &one, sizeof(one)) < 0)
		return; /* the counter is full: it is awake anyway */
}

/* A batch was recorded: the closer's wake-up is due after the delay, unless
 * one is due already (the batches read meanwhile share it). Nothing while
 * no closer runs; at once if the timer cannot be armed. */
static void
mon_closer_later(void)
{
	struct itimerspec due = {
		.it_value = {.tv_nsec = MRL_MONITOR_CLOSER_DELAY_NS},
	};

	if (mon_closer_pending ||
	    !atomic_load_explicit(&mon_notify, memory_order_acquire))
		return;
	if (timerfd_settime(mon_timer_fd, 0, &due, NULL)) {
		mon_wake_closer();
		return;
	}
	mon_closer_pending = true;
}

/*
 * The delay after a batch is over: the closer is woken only if it has work
 * no application call is sure to do. Either a batch is not applied yet (the
 * barrier is up: no application thread called in since), and the closer
 * applies it; or a drain on an application thread left it something
 * (mrl_monitor_closer_due), which that drain said before lowering the
 * barrier. Otherwise it sleeps on: the unmapping thread never pays for it.
 */
static void
mon_closer_expire(void)
{
	uint64_t count;

	if (read(mon_timer_fd, &count, sizeof(count)) < 0)
		return; /* not expired (EAGAIN): nothing is due */
	mon_closer_pending = false;
	if (atomic_load_explicit(mon_client.barrier, memory_order_acquire) ||
	    atomic_load_explicit(&mon_closer_owed, memory_order_acquire))
		mon_wake_closer();
}

/* One batch: raise the barrier, read (which lets the unmapping threads go),
 * record every range read; the barrier stays up until a drain applied them.
 * 0, or the errno the descriptor failed with. */
static int
mon_serve(int fd)
{
	struct uffd_msg msg[MRL_MONITOR_BATCH];
	uint64_t tail = atomic_load_explicit(&mon_tail, memory_order_relaxed);
	uint64_t first = tail;
	bool room =
		tail - atomic_load_explicit(&mon_head, memory_order_acquire) <=
		MRL_MONITOR_RING - MRL_MONITOR_BATCH;
	struct mon_range *r;
	ssize_t n;

	atomic_fetch_add_explicit(mon_client.barrier, 1, memory_order_seq_cst);
	n = read(fd, msg, sizeof(msg));
	if (n <= 0) {
		int err = n < 0 ? errno : 0;

		atomic_fetch_sub_explicit(mon_client.barrier, 1,
					  memory_order_release);
		return err == EAGAIN || err == EINTR ? 0 : err;
	}
	n /= (ssize_t) sizeof(msg[0]);
	atomic_fetch_add_explicit(&mon_events, (uint64_t) n,
				  memory_order_relaxed);
	if (!room) {
		atomic_fetch_add_explicit(&mon_overflow, 1,
					  memory_order_release);
		mon_closer_later();
		return 0;
	}
	for (ssize_t i = 0; i < n; i++) {
		r = &mon_ring[tail % MRL_MONITOR_RING];
		if (!mon_event_range(&msg[i], r))
			continue;
		r->last = false;
		tail++;
	}
	if (tail == first) {
		atomic_fetch_sub_explicit(mon_client.barrier, 1,
					  memory_order_release);
		return 0;
	}
	mon_ring[(tail - 1) % MRL_MONITOR_RING].last = true;
	atomic_store_explicit(&mon_tail, tail, memory_order_release);
	mon_closer_later();
	return 0;
}

/*
 * The task's way out, on a stop request or a failure (err). Nothing is
 * watched from now on, and everything goes (an overflow: the barrier stays
 * up until a drain applied it), before the userfaultfd is released: dup2
 * puts the stop eventfd over its number, so the file's last reference goes
 * (which drops every watch and wakes every thread waiting for its event)
 * while the number stays taken, and a watch that loaded it fails instead of
 * reaching a descriptor opened since.
 */
static void
mon_task_leave(int fd, int err)
{
	atomic_store_explicit(&mon_failed, err, memory_order_relaxed);
	atomic_store_explicit(&mon_fd, -1, memory_order_release);
	atomic_fetch_add_explicit(mon_client.barrier, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&mon_overflow, 1, memory_order_release);
	if (dup2(mon_stop_fd, fd) < 0) {
		close(fd);
		mon_uffd_closed = true; /* read by stop after the join */
	}
	mon_wake_closer();
}

/* Serve until the stop request or a failure, then leave: the task never
 * retries, so it cannot spin on a descriptor that keeps failing. */
static void *
mon_task_main(void *arg)
{
	int fd = (int) (intptr_t) arg;
	struct pollfd pfd[3] = {
		{.fd = fd, .events = POLLIN},
		{.fd = mon_stop_fd, .events = POLLIN},
		{.fd = mon_timer_fd, .events = POLLIN},
	};
	int err = 0;

	pthread_setname_np(pthread_self(), "mrl-monitor");
	mon_closer_pending = false; /* a previous task's */
	atomic_store(&mon_tid, (int) syscall(SYS_gettid));
	atomic_store_explicit(&mon_ready, true, memory_order_release);
	while (!err) {
		pfd[0].revents = pfd[1].revents = pfd[2].revents = 0;
		if (poll(pfd, 3, -1) < 0) {
			if (errno != EINTR)
				err = errno;
			continue;
		}
		if (pfd[1].revents)
			break;
		/* First: a batch read now arms the timer again. */
		if (pfd[2].revents & POLLIN)
			mon_closer_expire();
		if (pfd[0].revents & POLLIN)
			err = mon_serve(fd);
		else if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			err = EIO;
	}
	mon_task_leave(fd, err);
	return NULL;
}

/* ---- the closer ------------------------------------------------------------
 */

/* Woken by the task a while after the batches it recorded when they left it
 * work (mon_closer_expire), and when the task leaves, by
 * mrl_monitor_closer_wake, or when the delay the client's close last asked
 * for has passed: the client's close applies the events and closes what they
 * dropped or what has waited long enough. Ends at the stop request, or when
 * it can no longer wait (the application's calls then do its work). */
static void *
mon_closer_main(void *arg)
{
	struct pollfd pfd[2] = {
		{.fd = mon_notify_fd, .events = POLLIN},
		{.fd = mon_stop_fd, .events = POLLIN},
	};
	int timeout = -1;
	uint64_t count;
	int n;

	(void) arg;
	pthread_setname_np(pthread_self(), "mrl-closer");
	mon_on_closer = true;
	atomic_store(&mon_closer_tid, (int) syscall(SYS_gettid));
	for (;;) {
		pfd[0].revents = pfd[1].revents = 0;
		n = poll(pfd, 2, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents || (n > 0 && !(pfd[0].revents & POLLIN)))
			break;
		if (n > 0 && read(mon_notify_fd, &count, sizeof(count)) < 0 &&
		    errno != EAGAIN)
			break;
		/* Before the call, which takes every list: what a drain
		 * leaves after it is owed again. An exchange, so what a drain
		 * cleared here left on a list is seen by the call. */
		atomic_exchange_explicit(&mon_closer_owed, false,
					 memory_order_acq_rel);
		timeout = mon_client.close(mon_client.arg);
	}
	return NULL;
}

/* A pthread with every signal blocked (glibc keeps its own two deliverable,
 * so set*id() still reaches it). */
static int
mon_spawn(pthread_t *thread, void *(*main)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, MRL_MONITOR_STACK);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(thread, &attr, main, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

int
mrl_monitor_closer_start(void)
{
	int ret = 0;

	pthread_mutex_lock(&mon_lock);
	if (!mon_started || !mon_client.close) {
		ret = -FI_ENOSYS;
	} else if (!mon_closer_started) {
		ret = mon_spawn(&mon_closer_thread, mon_closer_main, NULL);
		if (ret) {
			MON_WARN("cannot start the monitor's closer: %s; "
				 "dropped registrations close at the next "
				 "call\n",
				 strerror(ret));
			ret = -FI_ENOMEM;
		} else {
			mon_closer_started = true;
			/* It waits for nothing before it says who it is. */
			while (!atomic_load(&mon_closer_tid))
				sched_yield();
			atomic_store_explicit(&mon_notify, true,
					      memory_order_release);
			/* Events read before it could be woken. */
			mon_wake_closer();
		}
	}
	pthread_mutex_unlock(&mon_lock);
	return ret;
}

/* ---- applying the events --------------------------------------------------
 */

static void mon_watch_gone(uintptr_t start, uintptr_t end);
static void mon_watch_recheck(void);

void
mrl_monitor_drain(void)
{
	struct mon_range r;
	uint64_t head, tail;
	unsigned lower, overflow;
	int failed;

	if (pthread_mutex_trylock(&mon_drain_lock))
		return;
	for (;;) {
		head = atomic_load_explicit(&mon_head, memory_order_relaxed);
		tail = atomic_load_explicit(&mon_tail, memory_order_acquire);
		overflow = atomic_exchange_explicit(&mon_overflow, 0,
						    memory_order_acquire);
		if (head == tail && !overflow)
			break;
		if (overflow) {
			/* The table first: a miss that trusted what it said
			 * before is in flight, and the invalidation makes it
			 * a lease that is not kept. */
			mon_watch_recheck();
			mon_client.invalidate(mon_client.arg, 0, UINTPTR_MAX,
					      true);
		}
		lower = overflow;
		for (; head != tail; head++) {
			r = mon_ring[head % MRL_MONITOR_RING];
			atomic_store_explicit(&mon_head, head + 1,
					      memory_order_release);
			if (!overflow)
				mon_client.invalidate(mon_client.arg, r.start,
						      r.end, false);
			/* After the invalidation: what is left of the
			 * mapping may hold no entry any more. */
			if (r.gone)
				mon_watch_gone(r.start, r.end);
			lower += r.last;
		}
		for (; lower; lower--) {
			unsigned was = atomic_fetch_sub_explicit(
				mon_client.barrier, 1, memory_order_release);

			mrl_assert(was > 0); /* lowered more than raised */
		}
	}
	pthread_mutex_unlock(&mon_drain_lock);
	failed = atomic_load_explicit(&mon_failed, memory_order_relaxed);
	if (failed && !atomic_exchange(&mon_failed_told, true))
		MON_WARN("the memory monitor failed reading userfaultfd "
			 "(%s) and stopped; cached registrations are now kept "
			 "only while in use\n",
			 strerror(failed));
}

int
mrl_monitor_tid(void)
{
	return atomic_load(&mon_tid);
}

void
mrl_monitor_closer_wake(void)
{
	mon_wake_closer();
}

void
mrl_monitor_closer_due(void)
{
	if (!mon_on_closer)
		atomic_store_explicit(&mon_closer_owed, true,
				      memory_order_release);
}

int
mrl_monitor_closer_tid(void)
{
	return atomic_load(&mon_closer_tid);
}

/* ---- descriptors, fork ----------------------------------------------------
 */

/* Close *fd if open (mon_fd_lock held). */
static void
mon_close_locked(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Every descriptor the monitor opened, closed. */
static void
mon_close_all(void)
{
	int maps;

	pthread_mutex_lock(&mon_fd_lock);
	if (mon_uffd_closed)
		mon_uffd = -1;
	mon_close_locked(&mon_uffd);
	mon_close_locked(&mon_stop_fd);
	mon_close_locked(&mon_notify_fd);
	mon_close_locked(&mon_timer_fd);
	maps = atomic_exchange_explicit(&mon_maps_fd, -1, memory_order_relaxed);
	mon_close_locked(&maps);
	mon_uffd_closed = false;
	pthread_mutex_unlock(&mon_fd_lock);
}

/* Forget every watched range (the registrations went with the
 * descriptor). */
static void
mon_watch_forget_locked(void)
{
	mon_nwatch = 0;
	atomic_store_explicit(&mon_nwatch_seen, 0, memory_order_relaxed);
}

static void
mon_fork_prepare(void)
{
	pthread_mutex_lock(&mon_fd_lock);
}

static void
mon_fork_parent(void)
{
	pthread_mutex_unlock(&mon_fd_lock);
}

/* A child has the descriptors but no task: it closes them all (its VMAs
 * carry no watch, UFFD_FEATURE_EVENT_FORK being off) and forgets the ranges
 * the parent had still to apply (the child's cache forgot the parent's
 * registrations, and its barrier is down). Its only thread runs this. */
static void
mon_fork_child(void)
{
	pthread_mutex_init(&mon_fd_lock, NULL);
	pthread_mutex_init(&mon_lock, NULL);
	pthread_mutex_init(&mon_drain_lock, NULL);
	pthread_mutex_init(&mon_watch_lock, NULL);
	mon_close_all();
	mon_watch_forget_locked();
	atomic_store_explicit(&mon_fd, -1, memory_order_relaxed);
	mon_tried = false;
	mon_started = false;
	mon_closer_started = false;
	atomic_store(&mon_notify, false);
	atomic_store(&mon_tid, 0);
	atomic_store(&mon_closer_tid, 0);
	atomic_store(&mon_ready, false);
	atomic_store(&mon_failed, 0);
	atomic_store(&mon_failed_told, false);
	atomic_store(&mon_head, 0);
	atomic_store(&mon_tail, 0);
	atomic_store(&mon_overflow, 0);
}

static void
mon_fork_install(void)
{
	if (pthread_atfork(mon_fork_prepare, mon_fork_parent, mon_fork_child))
		MON_WARN("cannot watch for fork: a child may keep the "
			 "monitor's descriptors\n");
}

/* The userfaultfd, recorded in mon_uffd. */
static int
mon_open(void)
{
	struct uffdio_api api = {.api = UFFD_API,
				 .features = MRL_MONITOR_EVENTS};
	int fd, err;

	pthread_mutex_lock(&mon_fd_lock);
	fd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EPERM)
		/* vm.unprivileged_userfaultfd=0: user-mode faults only, which
		 * is all a monitor that never takes faults needs. */
		fd = (int) syscall(SYS_userfaultfd,
				   O_CLOEXEC | O_NONBLOCK |
					   UFFD_USER_MODE_ONLY);
	err = errno;
	mon_uffd = fd;
	pthread_mutex_unlock(&mon_fd_lock);
	if (fd < 0) {
		MON_WARN("userfaultfd unavailable (%s%s); no memory monitor\n",
			 strerror(err),
			 err == ENOSYS ? ": kernel or seccomp" :
			 err == EPERM  ? ": privilege" :
					 "");
		return -FI_ENOSYS;
	}
	if (ioctl(fd, UFFDIO_API, &api) ||
	    (api.features & MRL_MONITOR_EVENTS) != MRL_MONITOR_EVENTS) {
		MON_WARN("userfaultfd lacks unmap/remove/remap events (%s); no "
			 "memory monitor\n",
			 strerror(errno));
		return -FI_ENOSYS;
	}
	return 0;
}

/* The two eventfds, the closer's timer and /proc/self/maps, recorded. */
static int
mon_open_aux(void)
{
	int ret = 0;

	pthread_mutex_lock(&mon_fd_lock);
	mon_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mon_notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mon_timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (mon_stop_fd < 0 || mon_notify_fd < 0 || mon_timer_fd < 0)
		ret = -FI_ENOMEM;
	else
		atomic_store_explicit(
			&mon_maps_fd,
			open("/proc/self/maps", O_RDONLY | O_CLOEXEC),
			memory_order_relaxed);
	pthread_mutex_unlock(&mon_fd_lock);
	if (ret)
		MON_WARN("cannot create the memory monitor's eventfds and "
			 "timer: %s; "
			 "no memory monitor\n",
			 strerror(errno));
	return ret;
}

/* Write-protect registration of anonymous memory (Linux 5.7) is what keeps
 * faults away from the monitor: check it once on a page of our own. */
static int
mon_probe_wp(int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	struct uffdio_register reg = {.mode = UFFDIO_REGISTER_MODE_WP};
	struct uffdio_range range;
	void *p;
	int ret = 0;

	p = mmap(NULL, (size_t) page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -FI_ENOMEM;
	reg.range.start = (uintptr_t) p;
	reg.range.len = (uint64_t) page;
	if (ioctl(fd, UFFDIO_REGISTER, &reg)) {
		MON_WARN("userfaultfd cannot watch anonymous memory in "
			 "write-protect mode (%s); no memory monitor\n",
			 strerror(errno));
		ret = -FI_ENOSYS;
	} else {
		/* Unwatched first: no thread reads the event yet. */
		range = reg.range;
		ioctl(fd, UFFDIO_UNREGISTER, &range);
	}
	munmap(p, (size_t) page);
	return ret;
}

int
mrl_monitor_start(const struct fi_provider *prov,
		  const struct mrl_monitor_client *client)
{
	int ret;

	if (atomic_load_explicit(&mon_fd, memory_order_acquire) >= 0)
		return 0;
	pthread_once(&mon_fork_once, mon_fork_install);
	pthread_mutex_lock(&mon_lock);
	if (atomic_load_explicit(&mon_fd, memory_order_relaxed) >= 0) {
		pthread_mutex_unlock(&mon_lock);
		return 0;
	}
	if (mon_tried) {
		pthread_mutex_unlock(&mon_lock);
		return -FI_ENOSYS;
	}
	mon_tried = true;
	mon_prov = prov;
	mon_client = *client;

	ret = mon_open();
	if (!ret)
		ret = mon_probe_wp(mon_uffd);
	if (!ret)
		ret = mon_open_aux();
	if (ret)
		goto err_close;
	atomic_store(&mon_failed, 0);
	atomic_store(&mon_failed_told, false);
	atomic_store(&mon_ready, false);
	/* Published first: the task clears it if it fails at once. */
	atomic_store_explicit(&mon_fd, mon_uffd, memory_order_release);
	ret = mon_spawn(&mon_thread, mon_task_main,
			(void *) (intptr_t) mon_uffd);
	if (ret) {
		MON_WARN("cannot start the memory monitor task: %s\n",
			 strerror(ret));
		atomic_store_explicit(&mon_fd, -1, memory_order_relaxed);
		ret = -FI_ENOMEM;
		goto err_close;
	}
	/* It waits for nothing before it is ready. */
	while (!atomic_load_explicit(&mon_ready, memory_order_acquire))
		sched_yield();
	mon_started = true;
	pthread_mutex_unlock(&mon_lock);
	return 0;

err_close:
	mon_close_all();
	pthread_mutex_unlock(&mon_lock);
	return ret;
}

bool
mrl_monitor_running(void)
{
	return atomic_load_explicit(&mon_fd, memory_order_acquire) >= 0;
}

/* ---- watching -------------------------------------------------------------
 */

static bool
mon_register(int fd, uintptr_t lo, uintptr_t hi)
{
	struct uffdio_register reg = {
		.range = {.start = lo, .len = hi - lo},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(fd, UFFDIO_REGISTER, &reg) == 0;
}

/* Index of the first watched range ending after `at` (mon_nwatch: none). */
static size_t
mon_watch_after(uintptr_t at)
{
	size_t lo = 0, hi = mon_nwatch;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mon_watches[mid].hi <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the table has room for one more range and the spare slot that
 * mon_watch_gone may take to split one. */
static bool
mon_watch_room(void)
{
	return mon_nwatch + 2 <= mon_watch_cap;
}

/* Make room, with mon_watch_lock NOT held: an allocator may call the
 * extension's invalidate with its own lock held, which closes
 * registrations and so waits for mon_watch_lock (mrl_monitor_release);
 * allocating under that lock could wait for the allocator's. */
static bool
mon_watch_grow(void)
{
	size_t cap, n;
	struct mon_watch *w, *old;

	pthread_mutex_lock(&mon_watch_lock);
	cap = mon_watch_cap ? 2 * mon_watch_cap : 64;
	pthread_mutex_unlock(&mon_watch_lock);
	w = malloc(cap * sizeof(*w));
	if (!w)
		return false;
	pthread_mutex_lock(&mon_watch_lock);
	old = w;
	if (mon_watch_cap < cap) {
		n = mon_nwatch;
		if (n)
			memcpy(w, mon_watches, n * sizeof(*w));
		old = mon_watches;
		mon_watches = w;
		mon_watch_cap = cap;
	}
	pthread_mutex_unlock(&mon_watch_lock);
	free(old);
	return true;
}

/* Record [lo, hi) at index i (it fits between its neighbours; there is
 * room). */
static void
mon_watch_insert(size_t i, uintptr_t lo, uintptr_t hi)
{
	memmove(&mon_watches[i + 1], &mon_watches[i],
		(mon_nwatch - i) * sizeof(*mon_watches));
	mon_watches[i] = (struct mon_watch){.lo = lo, .hi = hi};
	mon_nwatch++;
	atomic_store_explicit(&mon_nwatch_seen, mon_nwatch,
			      memory_order_release);
}

static void
mon_watch_remove(size_t i)
{
	memmove(&mon_watches[i], &mon_watches[i + 1],
		(mon_nwatch - i - 1) * sizeof(*mon_watches));
	mon_nwatch--;
	atomic_store_explicit(&mon_nwatch_seen, mon_nwatch,
			      memory_order_release);
}

/* Unregister and forget the watched range at index i if nothing in it is
 * worth watching any more (mon_watch_lock held). Whether it went. */
static bool
mon_watch_drop_unused(int fd, size_t i)
{
	struct uffdio_range range = {
		.start = mon_watches[i].lo,
		.len = mon_watches[i].hi - mon_watches[i].lo,
	};

	if (mon_client.in_use(mon_client.arg, mon_watches[i].lo,
			      mon_watches[i].hi))
		return false;
	/* Gone already if the mapping went (the kernel dropped it), or if
	 * the task left (it released the descriptor). */
	if (fd >= 0)
		ioctl(fd, UFFDIO_UNREGISTER, &range);
	mon_watch_remove(i);
	return true;
}

/*
 * A mapping went (munmap, mremap, mmap over it): the kernel dropped its
 * registration, so the table forgets [start, end), or a new mapping at the
 * same addresses would be taken as watched. Cutting a range in two takes
 * the spare slot; without one the part above is forgotten too (the table
 * may name less than is registered, never more: a later watch registers
 * it again). What is left of a range cut holds entries the closes of which
 * will not overlap the range any more: it is released here if nothing in
 * it is worth watching (the range's entries were invalidated just before).
 * Allocates nothing.
 */
static void
mon_watch_gone(uintptr_t start, uintptr_t end)
{
	uintptr_t left = 0, right = 0; /* a piece left of start, right of end */
	struct mon_watch *w;
	size_t i;
	int fd;

	if (!atomic_load_explicit(&mon_nwatch_seen, memory_order_acquire))
		return;
	pthread_mutex_lock(&mon_watch_lock);
	for (i = mon_watch_after(start);
	     i < mon_nwatch && mon_watches[i].lo < end;) {
		w = &mon_watches[i];
		if (w->lo < start && end < w->hi &&
		    mon_nwatch < mon_watch_cap) {
			memmove(w + 1, w, (mon_nwatch - i) * sizeof(*w));
			mon_nwatch++;
			w[0].hi = start;
			w[1].lo = end;
			left = w[0].lo;
			right = end;
			break;
		}
		if (w->lo < start) {
			w->hi = start;
			left = w->lo;
			i++;
		} else if (end < w->hi) {
			w->lo = end;
			right = end;
			i++;
		} else {
			mon_watch_remove(i);
		}
	}
	atomic_store_explicit(&mon_nwatch_seen, mon_nwatch,
			      memory_order_release);
	fd = atomic_load_explicit(&mon_fd, memory_order_acquire);
	if (mon_client.in_use) {
		/* Found again by address: dropping one moves the other. */
		i = mon_watch_after(left);
		if (left && i < mon_nwatch && mon_watches[i].lo == left)
			mon_watch_drop_unused(fd, i);
		i = mon_watch_after(right);
		if (right && i < mon_nwatch && mon_watches[i].lo == right)
			mon_watch_drop_unused(fd, i);
	}
	pthread_mutex_unlock(&mon_watch_lock);
}

/*
 * After an overflow: the unmaps it stands for never reached the table, which
 * may still name mappings that went, and their registrations with them; a
 * new mapping there would be taken as watched, and its entry kept with no
 * event to report its own unmap. Each range is registered again (nothing
 * changes where it still is; a mapping that took its place is watched now)
 * and forgotten where part of it is unmapped (msync says so, a registration
 * over a hole need not fail) or the registration fails. Allocates nothing.
 */
static void
mon_watch_recheck(void)
{
	struct mon_watch *w;
	size_t i = 0;
	int fd;

	if (!atomic_load_explicit(&mon_nwatch_seen, memory_order_acquire))
		return;
	pthread_mutex_lock(&mon_watch_lock);
	fd = atomic_load_explicit(&mon_fd, memory_order_acquire);
	while (i < mon_nwatch) {
		w = &mon_watches[i];
		if (fd >= 0 &&
		    !msync((void *) w->lo, w->hi - w->lo, MS_ASYNC) &&
		    mon_register(fd, w->lo, w->hi))
			i++;
		else
			mon_watch_remove(i);
	}
	pthread_mutex_unlock(&mon_watch_lock);
}

/* Register and record [lo, hi), or nothing. */
static bool
mon_watch_add(int fd, size_t i, uintptr_t lo, uintptr_t hi)
{
	if (!mon_register(fd, lo, hi))
		return false;
	mon_watch_insert(i, lo, hi);
	return true;
}

/*
 * Watch the VMA around `at` whole, as far as the gap between the watched
 * ranges around it (gap_lo <= at < gap_hi) goes: registering part of a
 * mapping would split it (one VMA more per entry, and an application's
 * mremap of the whole mapping would then fail with EFAULT). 1: watched up
 * to *next; 0: a hole or a VMA userfaultfd refuses; -1: PROCMAP_QUERY
 * unavailable.
 */
static int
mon_watch_vma(int fd, int maps, size_t i, uintptr_t at, uintptr_t gap_lo,
	      uintptr_t gap_hi, uintptr_t *next)
{
	struct mrl_procmap_query q;
	uintptr_t lo, hi;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = at;
	if (ioctl(maps, MRL_PROCMAP_QUERY, &q))
		return errno == ENOENT ? 0 : -1;
	if (q.vma_start > at || q.vma_end <= at)
		return 0;
	lo = (uintptr_t) q.vma_start > gap_lo ? (uintptr_t) q.vma_start :
						gap_lo;
	hi = (uintptr_t) q.vma_end < gap_hi ? (uintptr_t) q.vma_end : gap_hi;
	if (!mon_watch_add(fd, i, lo, hi))
		return 0;
	*next = hi;
	return 1;
}

/* Without PROCMAP_QUERY: the largest aligned block around [at, hi) in the
 * gap that userfaultfd accepts; halving it near a mapping it refuses keeps
 * the registered pieces of a region few and mergeable instead of one per
 * entry. */
static bool
mon_watch_block(int fd, size_t i, uintptr_t at, uintptr_t hi, uintptr_t gap_lo,
		uintptr_t gap_hi, uintptr_t page, uintptr_t *next)
{
	for (uintptr_t align = MRL_MONITOR_BLOCK; align >= page; align >>= 1) {
		uintptr_t blo = at & ~(align - 1),
			  bhi = (hi + align - 1) & ~(align - 1);

		if (bhi < hi)
			continue; /* wrapped */
		blo = blo > gap_lo ? blo : gap_lo;
		bhi = bhi < gap_hi ? bhi : gap_hi;
		if (mon_watch_add(fd, i, blo, bhi)) {
			*next = bhi;
			return true;
		}
	}
	return false;
}

bool
mrl_monitor_watch(uintptr_t lo, uintptr_t hi)
{
	uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t at, gap_lo, gap_hi;
	bool ok = true, blocks = false;
	int fd, maps, ret;
	size_t i;

	/* Registrations and msync take whole pages (a based entry need not
	 * start on one). */
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	if (hi <= lo)
		return false;
	pthread_mutex_lock(&mon_watch_lock);
	fd = atomic_load_explicit(&mon_fd, memory_order_acquire);
	for (at = lo; ok && fd >= 0 && at < hi;) {
		i = mon_watch_after(at);
		if (i < mon_nwatch && mon_watches[i].lo <= at) {
			at = mon_watches[i].hi;
			continue;
		}
		if (!mon_watch_room()) {
			/* The table may change meanwhile: look again. */
			pthread_mutex_unlock(&mon_watch_lock);
			ok = mon_watch_grow();
			pthread_mutex_lock(&mon_watch_lock);
			fd = atomic_load_explicit(&mon_fd,
						  memory_order_acquire);
			continue;
		}
		gap_lo = i ? mon_watches[i - 1].hi : 0;
		gap_hi = i < mon_nwatch ? mon_watches[i].lo : UINTPTR_MAX;
		maps = atomic_load_explicit(&mon_maps_fd, memory_order_relaxed);
		ret = maps >= 0 ? mon_watch_vma(fd, maps, i, at, gap_lo, gap_hi,
						&at) :
				  -1;
		if (ret < 0 && maps >= 0) {
			/* An older kernel: blocks from now on. */
			pthread_mutex_lock(&mon_fd_lock);
			if (atomic_compare_exchange_strong(&mon_maps_fd, &maps,
							   -1))
				close(maps);
			pthread_mutex_unlock(&mon_fd_lock);
		}
		if (ret < 0) {
			blocks = true;
			ok = mon_watch_block(fd, i, at, hi, gap_lo, gap_hi,
					     page, &at);
		} else {
			ok = ret == 1;
		}
	}
	pthread_mutex_unlock(&mon_watch_lock);
	/* A hole in a block is accepted by the registration and watched by
	 * nothing: msync(MS_ASYNC) fails with ENOMEM unless every page is
	 * mapped. */
	if (ok && blocks)
		ok = msync((void *) lo, hi - lo, MS_ASYNC) == 0;
	return ok && fd >= 0;
}

void
mrl_monitor_release(uintptr_t lo, uintptr_t hi)
{
	uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
	size_t i;
	int fd;

	if (!atomic_load_explicit(&mon_nwatch_seen, memory_order_acquire) ||
	    !mon_client.in_use)
		return;
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	if (hi <= lo)
		return;
	pthread_mutex_lock(&mon_watch_lock);
	fd = atomic_load_explicit(&mon_fd, memory_order_acquire);
	for (i = mon_watch_after(lo); i < mon_nwatch && mon_watches[i].lo < hi;)
		if (!mon_watch_drop_unused(fd, i))
			i++;
	pthread_mutex_unlock(&mon_watch_lock);
}

size_t
mrl_monitor_watched(void)
{
	return atomic_load_explicit(&mon_nwatch_seen, memory_order_acquire);
}

uint64_t
mrl_monitor_events(void)
{
	return atomic_load_explicit(&mon_events, memory_order_relaxed);
}

void
mrl_monitor_stop(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&mon_lock);
	if (mon_started) {
		/* Wakes the task and the closer alike (neither reads it). An
		 * eventfd write fails only on counter overflow. */
		if (write(mon_stop_fd, &one, sizeof(one)) != sizeof(one))
			MON_WARN("cannot signal the memory monitor to stop\n");
		pthread_join(mon_thread, NULL);
		atomic_store(&mon_tid, 0);
		if (mon_closer_started) {
			pthread_join(mon_closer_thread, NULL);
			atomic_store(&mon_closer_tid, 0);
			atomic_store(&mon_notify, false);
			mon_closer_started = false;
		}
		pthread_mutex_lock(&mon_watch_lock);
		mon_watch_forget_locked();
		pthread_mutex_unlock(&mon_watch_lock);
		mon_close_all();
		mon_started = false;
	}
	/* A later start works as the first, unless the task failed: what
	 * made it fail (a seccomp filter, a limit) is still there. */
	mon_tried = atomic_load(&mon_failed) != 0;
	pthread_mutex_unlock(&mon_lock);
	/* What the task read before it left, and its overflow: everything
	 * kept because it was watched goes. */
	mrl_monitor_drain();
}
