/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor's watch table: the ranges registered with the
 * userfaultfd, how a watch registers a mapping and a release unregisters
 * it, and how the table follows the events the drains apply (see
 * "Watching" and "Releasing watches" in mrl_monitor.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include "mrl_monitor_int.h"

/* Watch granularity without PROCMAP_QUERY: blocks this large and aligned
 * (see "Watching" in mrl_monitor.h). */
#define MRL_MONITOR_BLOCK ((uintptr_t) 2 << 20)

/* Protects the watch table and orders the registrations with it; the
 * client's in_use is called under it, and nothing allocates under it
 * (mon_watch_grow). */
static pthread_mutex_t mon_watch_lock = PTHREAD_MUTEX_INITIALIZER;

/* The watch table: the ranges registered with the userfaultfd, sorted and
 * disjoint (mon_watch_lock). */
struct mon_watch {
	uintptr_t lo, hi;
};
static struct mon_watch *mon_watches;
static size_t mon_nwatch, mon_watch_cap;
static atomic_size_t mon_nwatch_seen; /* mon_nwatch, for lock-free looks */

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
 * mrl_monitor_watch_gone may take to split one. */
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

	if (mrl_monitor_served.in_use(mrl_monitor_served.arg, mon_watches[i].lo,
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
void
mrl_monitor_watch_gone(uintptr_t start, uintptr_t end)
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
	fd = atomic_load_explicit(&mrl_monitor_fd, memory_order_acquire);
	if (mrl_monitor_served.in_use) {
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
void
mrl_monitor_watch_recheck(void)
{
	struct mon_watch *w;
	size_t i = 0;
	int fd;

	if (!atomic_load_explicit(&mon_nwatch_seen, memory_order_acquire))
		return;
	pthread_mutex_lock(&mon_watch_lock);
	fd = atomic_load_explicit(&mrl_monitor_fd, memory_order_acquire);
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
mon_watch_vma(int fd, size_t i, uintptr_t at, uintptr_t gap_lo,
	      uintptr_t gap_hi, uintptr_t *next)
{
	uintptr_t lo, hi;
	int ret = mrl_monitor_maps_vma(at, &lo, &hi);

	if (ret <= 0)
		return ret;
	lo = lo > gap_lo ? lo : gap_lo;
	hi = hi < gap_hi ? hi : gap_hi;
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
	int fd, ret;
	size_t i;

	/* Registrations and msync take whole pages (a based entry need not
	 * start on one). */
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	if (hi <= lo)
		return false;
	pthread_mutex_lock(&mon_watch_lock);
	fd = atomic_load_explicit(&mrl_monitor_fd, memory_order_acquire);
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
			fd = atomic_load_explicit(&mrl_monitor_fd,
						  memory_order_acquire);
			continue;
		}
		gap_lo = i ? mon_watches[i - 1].hi : 0;
		gap_hi = i < mon_nwatch ? mon_watches[i].lo : UINTPTR_MAX;
		ret = mon_watch_vma(fd, i, at, gap_lo, gap_hi, &at);
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
	    !mrl_monitor_served.in_use)
		return;
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	if (hi <= lo)
		return;
	pthread_mutex_lock(&mon_watch_lock);
	fd = atomic_load_explicit(&mrl_monitor_fd, memory_order_acquire);
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

static void
mon_watch_forget_locked(void)
{
	mon_nwatch = 0;
	atomic_store_explicit(&mon_nwatch_seen, 0, memory_order_relaxed);
}

void
mrl_monitor_watch_forget(void)
{
	pthread_mutex_lock(&mon_watch_lock);
	mon_watch_forget_locked();
	pthread_mutex_unlock(&mon_watch_lock);
}

void
mrl_monitor_watch_fork_child(void)
{
	pthread_mutex_init(&mon_watch_lock, NULL);
	mon_watch_forget_locked();
}
