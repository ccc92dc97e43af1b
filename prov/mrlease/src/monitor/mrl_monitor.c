/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor over Linux userfaultfd (see mrl_monitor.h for what it
 * reports and the rules its task keeps).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>
#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

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
/* Events read at once, on the monitor's stack. */
#define MRL_MONITOR_BATCH 32

#define MRL_MONITOR_EVENTS                                      \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
	 UFFD_FEATURE_EVENT_REMAP)

/* Ranges the task has read and no drain has applied yet. */
#define MRL_MONITOR_RING 1024
/* How often a task that failed tries again. */
#define MRL_MONITOR_RETRY_MS 10
/* The task's stack; below it its TCB page, below that a guard page. */
#define MRL_MONITOR_STACK ((size_t) 64 * 1024)

/* A raw clone can be made on x86_64 (the TCB layout is the ABI's), not under
 * ThreadSanitizer, which must know every thread. */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define MRL_MONITOR_RAW_TASK 1
#endif

/* Code that runs on the task: no sanitizer runtime (it keeps per-thread
 * state in TLS, which the raw task does not have), no stack protector. */
#ifdef MRL_MONITOR_RAW_TASK
#define MON_TASK                                                      \
	__attribute__((no_sanitize("address", "undefined"), noinline, \
		       no_stack_protector))
#else
#define MON_TASK __attribute__((noinline))
#endif

/*
 * mon_lock serialises start, stop and the fork reset; nothing else takes it
 * and nothing is called under it that could wait for the monitor task.
 * mon_drain_lock serialises drains (application threads only: the task
 * takes no lock). The rest is read without a lock: mon_fd is published
 * (release) only once the task runs.
 */
static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mon_drain_lock = PTHREAD_MUTEX_INITIALIZER;
static int mon_uffd = -1; /* the process's userfaultfd descriptor */
static atomic_int mon_fd = -1; /* mon_uffd while it watches; -1: not */
static int mon_stop_fd = -1; /* eventfd: the task's stop request */
static atomic_int mon_maps_fd = -1; /* /proc/self/maps for PROCMAP_QUERY */
static bool mon_tried; /* a start was attempted */
static bool mon_started; /* a task was started and not yet waited for */
static struct mrl_monitor_client mon_client;
static const struct fi_provider *mon_prov;
static atomic_uint_least64_t mon_events;
static pthread_once_t mon_fork_once = PTHREAD_ONCE_INIT;

/* The task: its kernel thread id (set by the kernel at clone, cleared and
 * woken at its exit), and what it failed on (an errno, 0: nothing). */
static atomic_int mon_tid;
static atomic_bool mon_ready; /* the task has set itself up */
static atomic_int mon_failed;
static atomic_bool mon_failed_told;
#ifdef MRL_MONITOR_RAW_TASK
static void *mon_stack;
static size_t mon_stack_len;
static unsigned mon_nofile = 1024; /* RLIMIT_NOFILE, for mon_task_close_from */
/* The task has a descriptor table of its own (see mon_task_keep_only);
 * under valgrind, which supports only a pthread's clone flags, it shares
 * the process's. */
static bool mon_own_files;
#endif
static bool mon_clone; /* the task is a raw clone, not a pthread */
static pthread_t mon_thread;

/*
 * The ring. The task writes entries at mon_tail and publishes them
 * (release); a drain copies them out, then frees their slots by moving
 * mon_head (release). `last` closes a batch: its raise of the barrier is
 * lowered once the entry is applied. A batch read without room for a whole
 * batch is counted in mon_overflow instead, its raise kept until a drain
 * has invalidated everything.
 */
struct mon_range {
	uintptr_t start, end;
	bool last;
};
static struct mon_range mon_ring[MRL_MONITOR_RING];
static atomic_uint_least64_t mon_head, mon_tail;
static atomic_uint mon_overflow;

#define MON_WARN(...)                                              \
	do {                                                       \
		if (mon_prov)                                      \
			FI_WARN(mon_prov, FI_LOG_MR, __VA_ARGS__); \
	} while (0)

/* ---- the task ------------------------------------------------------------ */

/* A system call as the task makes it: -errno on failure, no errno written
 * (errno is in TLS). */
static MON_TASK long
mon_sys(long nr, long a, long b, long c)
{
#ifdef MRL_MONITOR_RAW_TASK
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(nr), "D"(a), "S"(b), "d"(c)
			     : "rcx", "r11", "memory");
	return ret;
#else
	long ret = syscall(nr, a, b, c);

	return ret < 0 ? -errno : ret;
#endif
}

/* The range an event says went away; false for events that free nothing. */
static MON_TASK bool
mon_event_range(const struct uffd_msg *msg, uintptr_t *start, uintptr_t *end)
{
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
	case UFFD_EVENT_REMOVE:
		*start = (uintptr_t) msg->arg.remove.start;
		*end = (uintptr_t) msg->arg.remove.end;
		return true;
	case UFFD_EVENT_REMAP:
		/* The pages now live at msg->arg.remap.to; the old addresses
		 * no longer name them. */
		*start = (uintptr_t) msg->arg.remap.from;
		*end = *start + (uintptr_t) msg->arg.remap.len;
		return true;
	default:
		return false;
	}
}

/* One batch: raise the barrier, read (which lets the unmapping threads go),
 * record every range read; the barrier stays up until a drain applied them.
 * 0, or the errno the descriptor failed with. */
static MON_TASK int
mon_serve(int fd)
{
	struct uffd_msg msg[MRL_MONITOR_BATCH];
	uint64_t tail = atomic_load_explicit(&mon_tail, memory_order_relaxed);
	uint64_t first = tail;
	bool room =
		tail - atomic_load_explicit(&mon_head, memory_order_acquire) <=
		MRL_MONITOR_RING - MRL_MONITOR_BATCH;
	struct mon_range *r;
	uintptr_t start, end;
	long n;

	atomic_fetch_add_explicit(mon_client.barrier, 1, memory_order_seq_cst);
	n = mon_sys(SYS_read, fd, (long) msg, (long) sizeof(msg));
	if (n <= 0) {
		atomic_fetch_sub_explicit(mon_client.barrier, 1,
					  memory_order_release);
		return n == -EAGAIN || n == -EINTR || n == 0 ? 0 : (int) -n;
	}
	n /= (long) sizeof(msg[0]);
	atomic_fetch_add_explicit(&mon_events, (uint64_t) n,
				  memory_order_relaxed);
	if (!room) {
		atomic_fetch_add_explicit(&mon_overflow, 1,
					  memory_order_release);
		return 0;
	}
	for (long i = 0; i < n; i++) {
		if (!mon_event_range(&msg[i], &start, &end))
			continue;
		r = &mon_ring[tail++ % MRL_MONITOR_RING];
		r->start = start;
		r->end = end;
		r->last = false;
	}
	if (tail == first) {
		atomic_fetch_sub_explicit(mon_client.barrier, 1,
					  memory_order_release);
		return 0;
	}
	mon_ring[(tail - 1) % MRL_MONITOR_RING].last = true;
	atomic_store_explicit(&mon_tail, tail, memory_order_release);
	return 0;
}

/* The first failure of the task: nothing is watched from now on, and what
 * was kept because it was watched must go (a drain reports why). */
static MON_TASK void
mon_task_fail(int err)
{
	if (atomic_load_explicit(&mon_failed, memory_order_relaxed))
		return;
	atomic_store_explicit(&mon_failed, err, memory_order_relaxed);
	atomic_store_explicit(&mon_fd, -1, memory_order_release);
	atomic_fetch_add_explicit(mon_client.barrier, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&mon_overflow, 1, memory_order_release);
}

#ifdef MRL_MONITOR_RAW_TASK
/* A raw task has a descriptor table of its own (no CLONE_FILES: with a shared
 * table the kernel takes and drops a reference on the file of every system
 * call the process makes on a descriptor). It closes its copy of every
 * descriptor but its two at once, so it keeps no file of the application's
 * open. close_range is Linux 5.9; before it, one by one up to the limit. */
static MON_TASK void
mon_task_close_from(unsigned lo, unsigned hi)
{
	if (lo > hi)
		return;
	if (mon_sys(SYS_close_range, lo, hi, 0) != -ENOSYS)
		return;
	for (unsigned fd = lo; fd <= hi && fd < mon_nofile; fd++)
		mon_sys(SYS_close, fd, 0, 0);
}

static MON_TASK void
mon_task_keep_only(int a, int b)
{
	unsigned lo = (unsigned) (a < b ? a : b),
		 hi = (unsigned) (a < b ? b : a);

	if (lo > 0)
		mon_task_close_from(0, lo - 1);
	mon_task_close_from(lo + 1, hi - 1);
	mon_task_close_from(hi + 1, ~0U);
}
#endif

/* Whether the task shares the process's descriptor table (a pthread, or a
 * clone under valgrind). */
static MON_TASK bool
mon_task_shares_files(void)
{
#ifdef MRL_MONITOR_RAW_TASK
	return !mon_clone || !mon_own_files;
#else
	return true;
#endif
}

/* Serve until the stop request. A failure is told once and served on (the
 * kernel holds unmapping threads until their event is read, so the task
 * never leaves on its own), retried every MRL_MONITOR_RETRY_MS. */
static MON_TASK int
mon_task_main(void *arg)
{
	int fd = (int) (intptr_t) arg, stop_fd = mon_stop_fd;
	struct pollfd pfd[2] = {
		{.fd = fd, .events = POLLIN},
		{.fd = stop_fd, .events = POLLIN},
	};
	long ret;
	int err;

#ifdef MRL_MONITOR_RAW_TASK
	if (mon_clone && mon_own_files)
		mon_task_keep_only(fd, stop_fd);
#endif
	atomic_store_explicit(&mon_ready, true, memory_order_release);
	for (;;) {
		pfd[0].revents = pfd[1].revents = 0;
		ret = mon_sys(SYS_poll, (long) pfd, 2, -1);
		if (ret == -EINTR)
			continue;
		err = ret < 0 ? (int) -ret : 0;
		if (!err && pfd[1].revents)
			break;
		if (!err && (pfd[0].revents & POLLIN))
			err = mon_serve(fd);
		else if (!err &&
			 (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL)))
			err = EIO;
		if (!err)
			continue;
		mon_task_fail(err);
		/* A pause before the retry, cut short by a stop request. */
		pfd[1].revents = 0;
		if (mon_sys(SYS_poll, (long) &pfd[1], 1, MRL_MONITOR_RETRY_MS) >
		    0)
			break;
	}
	if (mon_task_shares_files()) {
		/* The process's descriptor, closed before this thread's
		 * teardown, which may unmap memory (glibc's, a sanitizer's)
		 * in a watched mapping: nobody would read that event. */
		atomic_store_explicit(&mon_fd, -1, memory_order_release);
		mon_sys(SYS_close, fd, 0, 0);
	} else {
		/* Its own copies: mrl_monitor_stop closes the process's. */
		mon_sys(SYS_close, fd, 0, 0);
		mon_sys(SYS_close, stop_fd, 0, 0);
	}
	return 0;
}

#ifdef MRL_MONITOR_RAW_TASK
/* The task's own thread pointer block: glibc's TCB header as x86_64 lays it
 * out (self pointers, then the stack and pointer guards at 0x28 and 0x30),
 * so that nothing on the task ever reads the creating thread's, which may
 * exit. TLS variables below it land in the guard page. */
struct mon_tcb {
	void *tcb, *dtv, *self;
	int multiple_threads, gscope_flag;
	uintptr_t sysinfo, stack_guard, pointer_guard;
};

static int
mon_clone_spawn(int fd)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE);
	size_t len = 2 * page + MRL_MONITOR_STACK;
	int flags = CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD |
		    CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
		    CLONE_CHILD_CLEARTID;
	uint64_t all = ~(uint64_t) 0, old; /* the kernel's sigset_t */
	struct rlimit nofile;
	struct mon_tcb *tcb;
	char *base;
	int tid, err;

	base = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (base == MAP_FAILED)
		return ENOMEM;
	if (mprotect(base, page, PROT_NONE)) {
		munmap(base, len);
		return errno;
	}
	if (!getrlimit(RLIMIT_NOFILE, &nofile))
		mon_nofile = nofile.rlim_cur > UINT_MAX ?
				     UINT_MAX :
				     (unsigned) nofile.rlim_cur;
	mon_own_files = true;
#ifdef RUNNING_ON_VALGRIND
	mon_own_files = !RUNNING_ON_VALGRIND;
#endif
	if (!mon_own_files)
		flags |= CLONE_FILES;
	tcb = (struct mon_tcb *) (void *) (base + page);
	tcb->tcb = tcb->self = tcb;
	__asm__("mov %%fs:0x28, %0" : "=r"(tcb->stack_guard));
	__asm__("mov %%fs:0x30, %0" : "=r"(tcb->pointer_guard));
	/* The task takes no signals, glibc's own (which sigfillset leaves
	 * out) included: a handler running on it would run glibc code
	 * without a thread of glibc's. It inherits this mask. */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(all));
	tid = clone(mon_task_main, base + len, flags, (void *) (intptr_t) fd,
		    &mon_tid, tcb, &mon_tid);
	err = tid < 0 ? errno : 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	if (err) {
		munmap(base, len);
		return err;
	}
	mon_stack = base;
	mon_stack_len = len;
	return 0;
}

/* Wait for the task's exit (the kernel clears mon_tid and wakes it). */
static void
mon_clone_wait(void)
{
	int tid;

	while ((tid = atomic_load(&mon_tid)) != 0)
		syscall(SYS_futex, &mon_tid, FUTEX_WAIT, tid, NULL, NULL, 0);
}
#endif

static void *
mon_task_thread(void *arg)
{
	atomic_store(&mon_tid, (int) syscall(SYS_gettid));
	mon_task_main(arg);
	return NULL;
}

static int
mon_pthread_spawn(int fd)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&mon_thread, &attr, mon_task_thread,
			     (void *) (intptr_t) fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

static void
mon_pthread_wait(void)
{
	pthread_join(mon_thread, NULL);
	atomic_store(&mon_tid, 0);
}

#ifdef MRL_MONITOR_RAW_TASK
/*
 * Whether the process could change its user or group ids later: glibc
 * changes every thread's credentials it knows (the kernel's are per
 * thread), so a raw task would keep the ones it started with. Different
 * real, effective and saved ids, or CAP_SETUID/CAP_SETGID permitted (root).
 */
static bool
mon_may_change_ids(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct cap[_LINUX_CAPABILITY_U32S_3];
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg) || ru != eu ||
	    eu != su || rg != eg || eg != sg)
		return true;
	if (syscall(SYS_capget, &hdr, cap))
		return true;
	return cap[0].permitted & ((1u << CAP_SETUID) | (1u << CAP_SETGID));
}

#endif

/* The task as a raw clone, or a pthread (see mrl_monitor.h). */
static bool
mon_use_clone(enum mrl_monitor_task kind)
{
#ifdef MRL_MONITOR_RAW_TASK
	return kind == MRL_MONITOR_TASK_CLONE ||
	       (kind == MRL_MONITOR_TASK_AUTO && !mon_may_change_ids());
#else
	(void) kind;
	return false;
#endif
}

static int
mon_task_spawn(int fd)
{
	mon_clone = mon_use_clone(mon_client.task);
#ifdef MRL_MONITOR_RAW_TASK
	if (mon_clone)
		return mon_clone_spawn(fd);
#endif
	return mon_pthread_spawn(fd);
}

static void
mon_task_wait(void)
{
#ifdef MRL_MONITOR_RAW_TASK
	if (mon_clone) {
		mon_clone_wait();
		return;
	}
#endif
	mon_pthread_wait();
}

/* Until the task has set itself up (a raw one then holds only its own
 * descriptors); it waits for nothing. */
static void
mon_task_wait_ready(void)
{
	while (!atomic_load_explicit(&mon_ready, memory_order_acquire))
		sched_yield();
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
		if (overflow)
			mon_client.invalidate(mon_client.arg, 0, UINTPTR_MAX);
		lower = overflow;
		for (; head != tail; head++) {
			r = mon_ring[head % MRL_MONITOR_RING];
			atomic_store_explicit(&mon_head, head + 1,
					      memory_order_release);
			if (!overflow)
				mon_client.invalidate(mon_client.arg, r.start,
						      r.end);
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
			 "(%s); cached registrations are no longer watched\n",
			 strerror(failed));
}

int
mrl_monitor_tid(void)
{
	return atomic_load(&mon_tid);
}

/* ---- start, fork --------------------------------------------------------- */

/* A child has the descriptor but not the task: it forgets both (its VMAs
 * carry no watch, UFFD_FEATURE_EVENT_FORK being off), and the ranges the
 * parent had still to apply (the child's cache forgot the parent's
 * registrations, and its barrier is down). */
static void
mon_fork_child(void)
{
	int fd;

	if (mon_uffd >= 0)
		close(mon_uffd);
	mon_uffd = -1;
	if (mon_stop_fd >= 0)
		close(mon_stop_fd);
	/* It names the parent's maps. */
	fd = atomic_exchange_explicit(&mon_maps_fd, -1, memory_order_relaxed);
	if (fd >= 0)
		close(fd);
	atomic_store_explicit(&mon_fd, -1, memory_order_relaxed);
	mon_stop_fd = -1;
	mon_tried = false;
	mon_started = false;
	atomic_store(&mon_tid, 0);
	atomic_store(&mon_ready, false);
	atomic_store(&mon_failed, 0);
	atomic_store(&mon_failed_told, false);
	atomic_store(&mon_head, 0);
	atomic_store(&mon_tail, 0);
	atomic_store(&mon_overflow, 0);
#ifdef MRL_MONITOR_RAW_TASK
	if (mon_stack)
		munmap(mon_stack, mon_stack_len);
	mon_stack = NULL;
#endif
	pthread_mutex_init(&mon_lock, NULL);
	pthread_mutex_init(&mon_drain_lock, NULL);
}

static void
mon_fork_install(void)
{
	pthread_atfork(NULL, NULL, mon_fork_child);
}

static int
mon_open(void)
{
	struct uffdio_api api = {.api = UFFD_API,
				 .features = MRL_MONITOR_EVENTS};
	int fd;

	fd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EPERM)
		/* vm.unprivileged_userfaultfd=0: user-mode faults only, which
		 * is all a monitor that never takes faults needs. */
		fd = (int) syscall(SYS_userfaultfd,
				   O_CLOEXEC | O_NONBLOCK |
					   UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		MON_WARN("userfaultfd unavailable (%s%s); no memory monitor\n",
			 strerror(errno),
			 errno == ENOSYS ? ": kernel or seccomp" :
			 errno == EPERM	 ? ": privilege" :
					   "");
		return -FI_ENOSYS;
	}
	if (ioctl(fd, UFFDIO_API, &api) ||
	    (api.features & MRL_MONITOR_EVENTS) != MRL_MONITOR_EVENTS) {
		MON_WARN("userfaultfd lacks unmap/remove/remap events (%s); no "
			 "memory monitor\n",
			 strerror(errno));
		close(fd);
		return -FI_ENOSYS;
	}
	return fd;
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
	int fd, maps, ret;

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

	fd = mon_open();
	if (fd < 0) {
		ret = fd;
		goto err_unlock;
	}
	ret = mon_probe_wp(fd);
	if (ret)
		goto err_close;
	mon_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mon_stop_fd < 0) {
		ret = -FI_ENOMEM;
		goto err_close;
	}
	atomic_store_explicit(&mon_maps_fd,
			      open("/proc/self/maps", O_RDONLY | O_CLOEXEC),
			      memory_order_relaxed);
	/* Published first: the task clears it if it fails at once. */
	atomic_store_explicit(&mon_fd, fd, memory_order_release);
	ret = mon_task_spawn(fd);
	if (ret) {
		MON_WARN("cannot start the memory monitor task: %s\n",
			 strerror(ret));
		ret = -FI_ENOMEM;
		goto err_maps;
	}
	mon_task_wait_ready();
	mon_uffd = fd;
	mon_started = true;
	pthread_mutex_unlock(&mon_lock);
	return 0;

err_maps:
	atomic_store_explicit(&mon_fd, -1, memory_order_relaxed);
	maps = atomic_exchange(&mon_maps_fd, -1);
	if (maps >= 0)
		close(maps);
	close(mon_stop_fd);
	mon_stop_fd = -1;
err_close:
	close(fd);
err_unlock:
	pthread_mutex_unlock(&mon_lock);
	return ret;
}

bool
mrl_monitor_running(void)
{
	return atomic_load_explicit(&mon_fd, memory_order_acquire) >= 0;
}

static bool
mon_register(int fd, uintptr_t lo, uintptr_t hi)
{
	struct uffdio_register reg = {
		.range = {.start = lo, .len = hi - lo},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(fd, UFFDIO_REGISTER, &reg) == 0;
}

/*
 * Watch every VMA of [lo, hi) whole: registering part of a mapping would
 * split it (one VMA more per entry, and an application's mremap of the
 * whole mapping would then fail with EFAULT). 1: watched; 0: a hole or a
 * VMA userfaultfd refuses; -1: PROCMAP_QUERY unavailable.
 */
static int
mon_watch_vmas(int fd, int maps, uintptr_t lo, uintptr_t hi)
{
	struct mrl_procmap_query q;

	while (lo < hi) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = lo;
		if (ioctl(maps, MRL_PROCMAP_QUERY, &q))
			return errno == ENOENT ? 0 : -1;
		if (q.vma_start > lo || q.vma_end <= lo)
			return 0;
		if (!mon_register(fd, (uintptr_t) q.vma_start,
				  (uintptr_t) q.vma_end))
			return 0;
		lo = (uintptr_t) q.vma_end;
	}
	return 1;
}

bool
mrl_monitor_watch(uintptr_t lo, uintptr_t hi)
{
	int fd = atomic_load_explicit(&mon_fd, memory_order_acquire);
	int maps = atomic_load_explicit(&mon_maps_fd, memory_order_relaxed);
	uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t align, blo, bhi;
	bool ok = false;
	int ret;

	if (fd < 0 || hi <= lo)
		return false;
	/* Registrations and msync take whole pages (a based entry need not
	 * start on one). */
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	if (!hi)
		return false;
	if (maps >= 0) {
		ret = mon_watch_vmas(fd, maps, lo, hi);
		if (ret >= 0)
			return ret == 1;
		/* An older kernel: blocks from now on. */
		if (atomic_compare_exchange_strong(&mon_maps_fd, &maps, -1))
			close(maps);
	}
	/* The largest aligned block that userfaultfd accepts: halving it
	 * near a mapping it refuses keeps the registered pieces of a region
	 * few and mergeable instead of one per entry. */
	for (align = MRL_MONITOR_BLOCK;
	     !ok && align > (hi - lo) / 2 && align >= page; align >>= 1) {
		blo = lo & ~(align - 1);
		bhi = (hi + align - 1) & ~(align - 1);
		ok = bhi >= hi && mon_register(fd, blo, bhi);
	}
	if (!ok && !mon_register(fd, lo, hi))
		return false;
	/* A hole is accepted by the registration and watched by nothing:
	 * msync(MS_ASYNC) fails with ENOMEM unless every page is mapped. */
	return msync((void *) lo, hi - lo, MS_ASYNC) == 0;
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
		/* The task always serves its stop request (an eventfd write
		 * fails only on counter overflow). */
		if (write(mon_stop_fd, &one, sizeof(one)) == sizeof(one))
			mon_task_wait();
		atomic_store_explicit(&mon_fd, -1, memory_order_release);
		/* The last descriptor (a task sharing the table closed it):
		 * closing releases every watch and wakes any thread waiting on
		 * it; only then may the task's stack go, which may lie in a
		 * watched mapping. */
		if (!mon_task_shares_files())
			close(mon_uffd);
		mon_uffd = -1;
#ifdef MRL_MONITOR_RAW_TASK
		if (mon_stack)
			munmap(mon_stack, mon_stack_len);
		mon_stack = NULL;
#endif
		close(mon_stop_fd);
		mon_stop_fd = -1;
		mon_started = false;
	}
	pthread_mutex_unlock(&mon_lock);
	/* What the task read before it stopped: the barrier comes down. */
	mrl_monitor_drain();
}
