/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor's descriptors: the userfaultfd, the task's and the
 * closer's eventfds and timer, /proc/self/maps; how they are opened, probed
 * and closed, and what start recorded (mrl_monitor_int.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include <rdma/fi_errno.h>

#include "mrl_monitor_int.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define MRL_MONITOR_EVENTS                                      \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
	 UFFD_FEATURE_EVENT_REMAP)

pthread_mutex_t mrl_monitor_fd_lock = PTHREAD_MUTEX_INITIALIZER;

int mrl_monitor_uffd = -1;
int mrl_monitor_stop_fd = -1;
int mrl_monitor_notify_fd = -1;
int mrl_monitor_timer_fd = -1;
atomic_int mrl_monitor_maps_fd = -1;
bool mrl_monitor_uffd_closed;
atomic_int mrl_monitor_fd = -1;

struct mrl_monitor_client mrl_monitor_served;
const struct fi_provider *mrl_monitor_prov;

/* Close *fd if open (mrl_monitor_fd_lock held). */
static void
mon_close_locked(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void
mrl_monitor_fd_close_all(void)
{
	int maps;

	pthread_mutex_lock(&mrl_monitor_fd_lock);
	if (mrl_monitor_uffd_closed)
		mrl_monitor_uffd = -1;
	mon_close_locked(&mrl_monitor_uffd);
	mon_close_locked(&mrl_monitor_stop_fd);
	mon_close_locked(&mrl_monitor_notify_fd);
	mon_close_locked(&mrl_monitor_timer_fd);
	maps = atomic_exchange_explicit(&mrl_monitor_maps_fd, -1,
					memory_order_relaxed);
	mon_close_locked(&maps);
	mrl_monitor_uffd_closed = false;
	pthread_mutex_unlock(&mrl_monitor_fd_lock);
}

int
mrl_monitor_fd_open(void)
{
	struct uffdio_api api = {.api = UFFD_API,
				 .features = MRL_MONITOR_EVENTS};
	int fd, err;

	pthread_mutex_lock(&mrl_monitor_fd_lock);
	fd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EPERM)
		/* vm.unprivileged_userfaultfd=0: user-mode faults only, which
		 * is all a monitor that never takes faults needs. */
		fd = (int) syscall(SYS_userfaultfd,
				   O_CLOEXEC | O_NONBLOCK |
					   UFFD_USER_MODE_ONLY);
	err = errno;
	mrl_monitor_uffd = fd;
	pthread_mutex_unlock(&mrl_monitor_fd_lock);
	if (fd < 0) {
		MRL_MONITOR_WARN(
			"userfaultfd unavailable (%s%s); no memory monitor\n",
			strerror(err),
			err == ENOSYS ? ": kernel or seccomp" :
			err == EPERM  ? ": privilege" :
					"");
		return -FI_ENOSYS;
	}
	if (ioctl(fd, UFFDIO_API, &api) ||
	    (api.features & MRL_MONITOR_EVENTS) != MRL_MONITOR_EVENTS) {
		MRL_MONITOR_WARN(
			"userfaultfd lacks unmap/remove/remap events (%s); no "
			"memory monitor\n",
			strerror(errno));
		return -FI_ENOSYS;
	}
	return 0;
}

int
mrl_monitor_fd_open_aux(void)
{
	int ret = 0;

	pthread_mutex_lock(&mrl_monitor_fd_lock);
	mrl_monitor_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mrl_monitor_notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mrl_monitor_timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (mrl_monitor_stop_fd < 0 || mrl_monitor_notify_fd < 0 ||
	    mrl_monitor_timer_fd < 0)
		ret = -FI_ENOMEM;
	else
		atomic_store_explicit(
			&mrl_monitor_maps_fd,
			open("/proc/self/maps", O_RDONLY | O_CLOEXEC),
			memory_order_relaxed);
	pthread_mutex_unlock(&mrl_monitor_fd_lock);
	if (ret)
		MRL_MONITOR_WARN(
			"cannot create the memory monitor's eventfds and "
			"timer: %s; "
			"no memory monitor\n",
			strerror(errno));
	return ret;
}

/* Write-protect registration of anonymous memory (Linux 5.7) is what keeps
 * faults away from the monitor: check it once on a page of our own. */
int
mrl_monitor_fd_probe_wp(int fd)
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
		MRL_MONITOR_WARN("userfaultfd cannot watch anonymous memory in "
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
