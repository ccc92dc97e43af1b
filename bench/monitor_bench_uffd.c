/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * LD_PRELOAD shim for bench/monitor_bench's callgrind part: valgrind has no
 * wrapper for the userfaultfd system call (it answers ENOSYS), so under
 * callgrind the memory monitor would never start and "monitor on" would
 * measure the same code as "monitor off". syscall(SYS_userfaultfd, flags)
 * is answered instead through /dev/userfaultfd (Linux 6.1), whose
 * USERFAULTFD_IOC_NEW valgrind passes through as an unknown ioctl. Every
 * other call, and this one when the device cannot be opened, goes to libc.
 *
 * Only for valgrind runs of the benchmarks; never loaded by the provider.
 */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

__attribute__((visibility("default"))) long
syscall(long number, ...)
{
	static long (*next)(long, ...);
	va_list ap;
	long a[6];
	int dev, fd;

	/* Six arguments, as libc's own syscall() takes them: the ones the
	 * caller did not pass are unused registers. */
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == SYS_userfaultfd) {
		dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, (int) a[0]);
			close(dev);
			return fd;
		}
	}
	if (!next)
		next = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
	return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
