/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor over Linux userfaultfd (see mrl_monitor.h for what it
 * reports and the rules its task keeps).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_assert.h"
#include "mrl_monitor_int.h"

/* Events read at once, on the task's stack. */
#define MRL_MONITOR_BATCH 32
/* How long after a batch the task wakes the closer, if it still has work
 * then (see mon_closer_expire): long enough for the unmapping thread to be
 * back from munmap and, mostly, for an application thread to have applied
 * the batch; short against how long a pinned page may outlive its mapping.
 * A timer of its own (mrl_monitor_timer_fd), armed once for the batches read
 * within the delay: a poll timeout would arm and cancel a timer around every
 * event, which a watched munmap waits for. */
#define MRL_MONITOR_CLOSER_DELAY_NS 2000000L

/* Ranges the task has read and no drain has applied yet. */
#define MRL_MONITOR_RING 1024
/* The stacks of the task and the closer. */
#define MRL_MONITOR_STACK ((size_t) 256 * 1024)

/*
 * Locks. mon_lock serialises start, stop and the closer's start; nothing is
 * called under it that could wait for the task. mon_drain_lock serialises
 * drains (application threads only). mrl_monitor_fd_lock (the descriptors)
 * and the watch table's lock are described with them (mrl_monitor_int.h,
 * mrl_monitor_watch.c). The task takes none of them.
 */
static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mon_drain_lock = PTHREAD_MUTEX_INITIALIZER;

static bool mon_tried; /* a start was attempted since the last stop */
static bool mon_started; /* a task was started and not yet joined */
static bool mon_closer_started;
static atomic_bool mon_notify; /* the closer runs: the task wakes it */
/* A drain on another thread than the closer left it work
 * (mrl_monitor_closer_due); the closer clears it before it calls in. */
static atomic_bool mon_closer_owed;
static __thread bool mon_on_closer; /* this thread is the closer */
/* The task's alone: mrl_monitor_timer_fd is armed for the batches read since
 * the closer's last wake-up. */
static bool mon_closer_pending;
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
	    write(mrl_monitor_notify_fd, &one, sizeof(one)) < 0)
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
	if (timerfd_settime(mrl_monitor_timer_fd, 0, &due, NULL)) {
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

	if (read(mrl_monitor_timer_fd, &count, sizeof(count)) < 0)
		return; /* not expired (EAGAIN): nothing is due */
	mon_closer_pending = false;
	if (atomic_load_explicit(mrl_monitor_served.barrier,
				 memory_order_acquire) ||
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

	atomic_fetch_add_explicit(mrl_monitor_served.barrier, 1,
				  memory_order_seq_cst);
	n = read(fd, msg, sizeof(msg));
	if (n <= 0) {
		int err = n < 0 ? errno : 0;

		atomic_fetch_sub_explicit(mrl_monitor_served.barrier, 1,
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
		atomic_fetch_sub_explicit(mrl_monitor_served.barrier, 1,
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
	atomic_store_explicit(&mrl_monitor_fd, -1, memory_order_release);
	atomic_fetch_add_explicit(mrl_monitor_served.barrier, 1,
				  memory_order_seq_cst);
	atomic_fetch_add_explicit(&mon_overflow, 1, memory_order_release);
	if (dup2(mrl_monitor_stop_fd, fd) < 0) {
		close(fd);
		mrl_monitor_uffd_closed =
			true; /* read by stop after the join */
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
		{.fd = mrl_monitor_stop_fd, .events = POLLIN},
		{.fd = mrl_monitor_timer_fd, .events = POLLIN},
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
		{.fd = mrl_monitor_notify_fd, .events = POLLIN},
		{.fd = mrl_monitor_stop_fd, .events = POLLIN},
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
		if (n > 0 &&
		    read(mrl_monitor_notify_fd, &count, sizeof(count)) < 0 &&
		    errno != EAGAIN)
			break;
		/* Before the call, which takes every list: what a drain
		 * leaves after it is owed again. An exchange, so what a drain
		 * cleared here left on a list is seen by the call. */
		atomic_exchange_explicit(&mon_closer_owed, false,
					 memory_order_acq_rel);
		timeout = mrl_monitor_served.close(mrl_monitor_served.arg);
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
	if (!mon_started || !mrl_monitor_served.close) {
		ret = -FI_ENOSYS;
	} else if (!mon_closer_started) {
		ret = mon_spawn(&mon_closer_thread, mon_closer_main, NULL);
		if (ret) {
			MRL_MONITOR_WARN(
				"cannot start the monitor's closer: %s; "
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
			mrl_monitor_watch_recheck();
			mrl_monitor_served.invalidate(mrl_monitor_served.arg, 0,
						      UINTPTR_MAX, true);
		}
		lower = overflow;
		for (; head != tail; head++) {
			r = mon_ring[head % MRL_MONITOR_RING];
			atomic_store_explicit(&mon_head, head + 1,
					      memory_order_release);
			if (!overflow)
				mrl_monitor_served.invalidate(
					mrl_monitor_served.arg, r.start, r.end,
					false);
			/* After the invalidation: what is left of the
			 * mapping may hold no entry any more. */
			if (r.gone)
				mrl_monitor_watch_gone(r.start, r.end);
			lower += r.last;
		}
		for (; lower; lower--) {
			unsigned was = atomic_fetch_sub_explicit(
				mrl_monitor_served.barrier, 1,
				memory_order_release);

			mrl_assert(was > 0); /* lowered more than raised */
		}
	}
	pthread_mutex_unlock(&mon_drain_lock);
	failed = atomic_load_explicit(&mon_failed, memory_order_relaxed);
	if (failed && !atomic_exchange(&mon_failed_told, true))
		MRL_MONITOR_WARN(
			"the memory monitor failed reading userfaultfd "
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

/* ---- fork ---------------------------------------------------------------
 */

static void
mon_fork_prepare(void)
{
	pthread_mutex_lock(&mrl_monitor_fd_lock);
}

static void
mon_fork_parent(void)
{
	pthread_mutex_unlock(&mrl_monitor_fd_lock);
}

/* A child has the descriptors but no task: it closes them all (its VMAs
 * carry no watch, UFFD_FEATURE_EVENT_FORK being off) and forgets the ranges
 * the parent had still to apply (the child's cache forgot the parent's
 * registrations, and its barrier is down). Its only thread runs this. */
static void
mon_fork_child(void)
{
	pthread_mutex_init(&mrl_monitor_fd_lock, NULL);
	pthread_mutex_init(&mon_lock, NULL);
	pthread_mutex_init(&mon_drain_lock, NULL);
	mrl_monitor_fd_close_all();
	mrl_monitor_watch_fork_child();
	atomic_store_explicit(&mrl_monitor_fd, -1, memory_order_relaxed);
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
		MRL_MONITOR_WARN("cannot watch for fork: a child may keep the "
				 "monitor's descriptors\n");
}

int
mrl_monitor_start(const struct fi_provider *prov,
		  const struct mrl_monitor_client *client)
{
	int ret;

	if (atomic_load_explicit(&mrl_monitor_fd, memory_order_acquire) >= 0)
		return 0;
	pthread_once(&mon_fork_once, mon_fork_install);
	pthread_mutex_lock(&mon_lock);
	if (atomic_load_explicit(&mrl_monitor_fd, memory_order_relaxed) >= 0) {
		pthread_mutex_unlock(&mon_lock);
		return 0;
	}
	if (mon_tried) {
		pthread_mutex_unlock(&mon_lock);
		return -FI_ENOSYS;
	}
	mon_tried = true;
	mrl_monitor_prov = prov;
	mrl_monitor_served = *client;

	ret = mrl_monitor_fd_open();
	if (!ret)
		ret = mrl_monitor_fd_probe_wp(mrl_monitor_uffd);
	if (!ret)
		ret = mrl_monitor_fd_open_aux();
	if (ret)
		goto err_close;
	atomic_store(&mon_failed, 0);
	atomic_store(&mon_failed_told, false);
	atomic_store(&mon_ready, false);
	/* Published first: the task clears it if it fails at once. */
	atomic_store_explicit(&mrl_monitor_fd, mrl_monitor_uffd,
			      memory_order_release);
	ret = mon_spawn(&mon_thread, mon_task_main,
			(void *) (intptr_t) mrl_monitor_uffd);
	if (ret) {
		MRL_MONITOR_WARN("cannot start the memory monitor task: %s\n",
				 strerror(ret));
		atomic_store_explicit(&mrl_monitor_fd, -1,
				      memory_order_relaxed);
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
	mrl_monitor_fd_close_all();
	pthread_mutex_unlock(&mon_lock);
	return ret;
}

bool
mrl_monitor_running(void)
{
	return atomic_load_explicit(&mrl_monitor_fd, memory_order_acquire) >= 0;
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
		if (write(mrl_monitor_stop_fd, &one, sizeof(one)) !=
		    sizeof(one))
			MRL_MONITOR_WARN(
				"cannot signal the memory monitor to stop\n");
		pthread_join(mon_thread, NULL);
		atomic_store(&mon_tid, 0);
		if (mon_closer_started) {
			pthread_join(mon_closer_thread, NULL);
			atomic_store(&mon_closer_tid, 0);
			atomic_store(&mon_notify, false);
			mon_closer_started = false;
		}
		mrl_monitor_watch_forget();
		mrl_monitor_fd_close_all();
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
