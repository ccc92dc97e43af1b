/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor over Linux userfaultfd (see mrl_monitor.h for what it
 * reports and the rules its thread keeps).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

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

/*
 * mon_lock serialises start, stop and the fork reset; nothing else takes it
 * and nothing is called under it that could wait for the monitor thread.
 * The rest is read without it: mon_fd is published (release) only once the
 * thread runs.
 */
static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int mon_fd = -1; /* the userfaultfd, -1: not running */
static int mon_stop_fd = -1; /* eventfd: the thread's stop request */
static atomic_int mon_maps_fd = -1; /* /proc/self/maps for PROCMAP_QUERY */
static bool mon_tried; /* a start was attempted */
static pthread_t mon_thread;
static struct mrl_monitor_client mon_client;
static const struct fi_provider *mon_prov;
static atomic_uint_least64_t mon_events;
static pthread_once_t mon_fork_once = PTHREAD_ONCE_INIT;

#define MON_WARN(...)                                              \
	do {                                                       \
		if (mon_prov)                                      \
			FI_WARN(mon_prov, FI_LOG_MR, __VA_ARGS__); \
	} while (0)

/* The range an event says went away; false for events that free nothing. */
static bool
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
 * invalidate every range read, lower the barrier. False when the descriptor
 * failed for good. */
static bool
mon_serve(int fd)
{
	struct uffd_msg msg[MRL_MONITOR_BATCH];
	uintptr_t start, end;
	ssize_t n;

	mon_client.hold(mon_client.arg);
	n = read(fd, msg, sizeof(msg));
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t) sizeof(msg[0]); i++) {
		if (mon_event_range(&msg[i], &start, &end))
			mon_client.invalidate(mon_client.arg, start, end);
		atomic_fetch_add_explicit(&mon_events, 1, memory_order_relaxed);
	}
	mon_client.release(mon_client.arg);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		MON_WARN("reading userfaultfd events failed (%s); cached "
			 "registrations are no longer watched\n",
			 strerror(errno));
		return false;
	}
	return true;
}

static void *
mon_main(void *arg)
{
	int fd = (int) (intptr_t) arg;
	struct pollfd pfd[2] = {
		{.fd = fd, .events = POLLIN},
		{.fd = mon_stop_fd, .events = POLLIN},
	};

	mon_client.thread_init(mon_client.arg);
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			MON_WARN("poll on userfaultfd failed: %s\n",
				 strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		if ((pfd[0].revents & POLLIN) && !mon_serve(fd))
			break;
		if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
	}
	/* Closing releases every watch and wakes any thread waiting on it. */
	atomic_store_explicit(&mon_fd, -1, memory_order_release);
	close(fd);
	return NULL;
}

/* A child has the descriptor but not the thread: it forgets both (its VMAs
 * carry no watch, UFFD_FEATURE_EVENT_FORK being off). */
static void
mon_fork_child(void)
{
	int fd = atomic_load_explicit(&mon_fd, memory_order_relaxed);

	if (fd >= 0)
		close(fd);
	if (mon_stop_fd >= 0)
		close(mon_stop_fd);
	/* It names the parent's maps. */
	fd = atomic_exchange_explicit(&mon_maps_fd, -1, memory_order_relaxed);
	if (fd >= 0)
		close(fd);
	atomic_store_explicit(&mon_fd, -1, memory_order_relaxed);
	mon_stop_fd = -1;
	mon_tried = false;
	pthread_mutex_init(&mon_lock, NULL);
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
	pthread_attr_t attr;
	sigset_t all, old;
	int fd, ret;

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

	/* The thread takes no signals: a handler running on it could
	 * allocate or unmap. */
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&mon_thread, &attr, mon_main,
			     (void *) (intptr_t) fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret) {
		MON_WARN("cannot start the memory monitor thread: %s\n",
			 strerror(ret));
		ret = -FI_ENOMEM;
		goto err_event;
	}
	atomic_store_explicit(&mon_maps_fd,
			      open("/proc/self/maps", O_RDONLY | O_CLOEXEC),
			      memory_order_relaxed);
	atomic_store_explicit(&mon_fd, fd, memory_order_release);
	pthread_mutex_unlock(&mon_lock);
	return 0;

err_event:
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
	if (atomic_load_explicit(&mon_fd, memory_order_relaxed) >= 0 &&
	    mon_stop_fd >= 0) {
		if (write(mon_stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(mon_thread, NULL);
		close(mon_stop_fd);
		mon_stop_fd = -1;
	}
	pthread_mutex_unlock(&mon_lock);
}
