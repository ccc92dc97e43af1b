/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor's mapping queries: the VMA covering an address, so a
 * watch can register a mapping whole (see "Watching" in mrl_monitor.h).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "mrl_monitor_int.h"

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

int
mrl_monitor_maps_vma(uintptr_t at, uintptr_t *lo, uintptr_t *hi)
{
	int maps = atomic_load_explicit(&mrl_monitor_maps_fd,
					memory_order_relaxed);
	struct mrl_procmap_query q;

	if (maps < 0)
		return -1;
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = at;
	if (ioctl(maps, MRL_PROCMAP_QUERY, &q)) {
		if (errno == ENOENT)
			return 0;
		/* An older kernel: blocks from now on. */
		pthread_mutex_lock(&mrl_monitor_fd_lock);
		if (atomic_compare_exchange_strong(&mrl_monitor_maps_fd, &maps,
						   -1))
			close(maps);
		pthread_mutex_unlock(&mrl_monitor_fd_lock);
		return -1;
	}
	if (q.vma_start > at || q.vma_end <= at)
		return 0;
	*lo = (uintptr_t) q.vma_start;
	*hi = (uintptr_t) q.vma_end;
	return 1;
}
