/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading live statistics files (mrl_live_read.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrl_live_read.h"

#define FIELD(f) {#f, offsetof(struct fi_mrlease_stats, f)}
const struct mrl_live_field mrl_live_fields[MRL_LIVE_FIELDS] = {
	FIELD(lookups),
	FIELD(hits),
	FIELD(misses),
	FIELD(registrations),
	FIELD(deregistrations),
	FIELD(invalidations),
	FIELD(retired_leased),
	FIELD(evictions),
	FIELD(entries),
	FIELD(leases),
	FIELD(registered_bytes),
	FIELD(monitor_events),
	FIELD(monitor_invalidations),
	FIELD(not_retained),
	FIELD(deferred_closes),
	FIELD(miss_cold),
	FIELD(miss_evicted),
	FIELD(miss_invalidated),
	FIELD(miss_monitor),
	FIELD(miss_churn),
	FIELD(miss_not_retained),
	FIELD(miss_below_min),
	FIELD(fwd_remote),
	FIELD(fwd_device),
	FIELD(fwd_dmabuf),
	FIELD(fwd_endpoint),
	FIELD(fwd_rma_event),
	FIELD(fwd_no_monitor),
	FIELD(fwd_key),
	FIELD(fwd_auth_key),
	FIELD(fwd_other),
	FIELD(remote_lookups),
	FIELD(remote_hits),
	FIELD(remote_registrations),
	FIELD(remote_deregistrations),
	FIELD(remote_entries),
	FIELD(remote_idle),
	FIELD(remote_idle_closes),
	FIELD(remote_invalidated),
	FIELD(remote_evicted),
};
#undef FIELD

/* Every scalar field is named: those before the histograms, then the one
 * after them. */
_Static_assert(offsetof(struct fi_mrlease_stats, miss_not_retained) +
			       sizeof(uint64_t) ==
		       offsetof(struct fi_mrlease_stats, reg_size_hist),
	       "mrl_live_fields reaches the histograms");
_Static_assert(offsetof(struct fi_mrlease_stats, miss_not_retained) ==
		       (MRL_LIVE_FIELDS - 20) * sizeof(uint64_t),
	       "mrl_live_fields names every scalar field before them");
_Static_assert(offsetof(struct fi_mrlease_stats, miss_below_min) ==
			       offsetof(struct fi_mrlease_stats, reg_ns_hist) +
				       sizeof(((struct fi_mrlease_stats *) 0)
						      ->reg_ns_hist) &&
		       sizeof(struct fi_mrlease_stats) ==
			       offsetof(struct fi_mrlease_stats,
					miss_below_min) +
				       19 * sizeof(uint64_t),
	       "mrl_live_fields names the fields after them");

bool
mrl_live_pid_alive(int pid, uint64_t start_time)
{
	char path[64], state;
	uint64_t start;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	start = mrl_live_proc_start(path, &state);
	/* A zombie has exited: its file will not change again. */
	return start && start == start_time && state != 'Z' && state != 'X';
}

int
mrl_live_read_file(const char *path, struct mrl_live_proc *proc)
{
	const struct mrl_live_header *h;
	const char *map;
	struct stat st;
	size_t words, stride;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode) ||
	    (size_t) st.st_size < sizeof(struct mrl_live_header)) {
		close(fd);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;

	h = (const struct mrl_live_header *) (const void *) map;
	/* Acquire: the fields stored before the magic. */
	if (atomic_load_explicit((atomic_uint_least64_t *) (uintptr_t) h->magic,
				 memory_order_acquire) !=
		    mrl_live_magic_word() ||
	    h->version != MRL_LIVE_VERSION || h->header_size < sizeof(*h) ||
	    h->slot_size < sizeof(atomic_uint_least64_t) ||
	    h->nslots > MRL_LIVE_SLOTS ||
	    (uint64_t) h->header_size + (uint64_t) h->slot_size * h->nslots >
		    (uint64_t) st.st_size) {
		ret = -EINVAL;
		goto out;
	}
	memset(proc, 0, sizeof(*proc));
	proc->pid = h->pid;
	memcpy(proc->comm, h->comm, sizeof(h->comm));
	proc->start_time = h->start_time;
	proc->created_ns = h->created_ns;
	proc->interval_ms = h->interval_ms;
	proc->publishes = atomic_load_explicit(
		(atomic_uint_least64_t *) (uintptr_t) &h->publishes,
		memory_order_acquire);
	proc->updated_ns = atomic_load_explicit(
		(atomic_uint_least64_t *) (uintptr_t) &h->updated_ns,
		memory_order_relaxed);
	stride = h->slot_size;
	words = (stride - sizeof(atomic_uint_least64_t)) / sizeof(uint64_t);
	for (unsigned i = 0; i < h->nslots; i++) {
		const struct mrl_live_slot *slot =
			(const void *) (map + h->header_size + i * stride);
		struct mrl_live_domain *d = &proc->dom[proc->ndomains];

		if (!mrl_live_slot_read(slot, words, d, MRL_LIVE_READ_TRIES)) {
			proc->busy++;
			continue;
		}
		if (d->state != MRL_LIVE_OPEN)
			continue;
		d->provider[sizeof(d->provider) - 1] = '\0';
		/* A newer writer's extra statistics words are not ours. */
		if (h->stat_words < MRL_LIVE_STAT_WORDS)
			memset(&d->stats[h->stat_words], 0,
			       (MRL_LIVE_STAT_WORDS - h->stat_words) *
				       sizeof(uint64_t));
		proc->ndomains++;
	}
	proc->stale = !mrl_live_pid_alive(proc->pid, proc->start_time);
out:
	munmap((void *) (uintptr_t) map, (size_t) st.st_size);
	return ret;
}

/* The pid of a name mrlease-<pid>.stats, or 0. */
static int
name_pid(const char *name)
{
	size_t pl = strlen(MRL_LIVE_PREFIX), sl = strlen(MRL_LIVE_SUFFIX);
	size_t len = strlen(name);
	long pid = 0;

	if (len <= pl + sl || strncmp(name, MRL_LIVE_PREFIX, pl) ||
	    strcmp(name + len - sl, MRL_LIVE_SUFFIX))
		return 0;
	for (size_t i = pl; i < len - sl; i++) {
		if (name[i] < '0' || name[i] > '9' || pid > INT_MAX / 10)
			return 0;
		pid = pid * 10 + (name[i] - '0');
	}
	return (int) pid;
}

static int
proc_cmp(const void *a, const void *b)
{
	const struct mrl_live_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int
mrl_live_read_dir(const char *dir, struct mrl_live_proc **procs, size_t *n)
{
	struct mrl_live_proc *all = NULL, *grown;
	size_t count = 0, cap = 0;
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int pid = name_pid(e->d_name);

		if (!pid)
			continue;
		if (count == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown) {
				free(all);
				closedir(d);
				return -ENOMEM;
			}
			all = grown;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!mrl_live_read_file(path, &all[count]) &&
		    all[count].pid == pid)
			count++;
	}
	closedir(d);
	if (count)
		qsort(all, count, sizeof(*all), proc_cmp);
	*procs = all;
	*n = count;
	return 0;
}

int
mrl_live_read_pid(const char *dir, int pid, struct mrl_live_proc *proc)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s%d%s", dir, MRL_LIVE_PREFIX, pid,
		 MRL_LIVE_SUFFIX);
	return mrl_live_read_file(path, proc);
}
