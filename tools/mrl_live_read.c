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

/* len bytes at off, all of them: 0, or -EINVAL when the file is shorter
 * (truncated meanwhile) or cannot be read. */
static int
read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *) buf + done, len - done,
			  (off_t) (off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EINVAL;
		done += (size_t) n;
	}
	return 0;
}

/* What a copy read before must be read before what is read after it: the
 * sequence lock's order. ThreadSanitizer models no fence (and sees no copy
 * the kernel makes), so it gets none. */
static inline void
read_order(void)
{
#ifndef __SANITIZE_THREAD__
	atomic_thread_fence(memory_order_acquire);
#endif
}

/*
 * A consistent copy of the slot at off (its first `words` words after seq;
 * the rest of *d zeroed): 1, 0 when `tries` copies all saw the writer at
 * work, -EINVAL when the file ends before it.
 */
static int
read_slot(int fd, uint64_t off, size_t words, struct mrl_live_domain *d,
	  unsigned tries)
{
	uint64_t s1, s2;

	memset(d, 0, sizeof(*d));
	while (tries--) {
		if (read_at(fd, &s1, sizeof(s1), off))
			return -EINVAL;
		read_order();
		if (s1 & 1)
			continue;
		if (read_at(fd, d, words * sizeof(uint64_t), off + sizeof(s1)))
			return -EINVAL;
		read_order();
		if (read_at(fd, &s2, sizeof(s2), off))
			return -EINVAL;
		if (s1 == s2)
			return 1;
	}
	return 0;
}

/* The header, checked: whatever a reader later computes from its sizes
 * stays within the file and within struct mrl_live_domain. */
static int
read_header(int fd, uint64_t size, struct mrl_live_header *h)
{
	const size_t slot_min =
		sizeof(uint64_t) + offsetof(struct mrl_live_domain, stats);
	uint64_t magic;

	/* The magic first: it is stored last, with release. */
	if (read_at(fd, &magic, sizeof(magic), 0) ||
	    magic != mrl_live_magic_word())
		return -EINVAL;
	read_order();
	if (read_at(fd, h, sizeof(*h), 0))
		return -EINVAL;
	if (h->version != MRL_LIVE_VERSION || h->header_size < sizeof(*h) ||
	    h->header_size > MRL_LIVE_READ_MAX_PART ||
	    h->header_size % sizeof(uint64_t) || h->slot_size < slot_min ||
	    h->slot_size > MRL_LIVE_READ_MAX_PART ||
	    h->slot_size % sizeof(uint64_t) || h->nslots > MRL_LIVE_SLOTS ||
	    h->stat_words > (h->slot_size - slot_min) / sizeof(uint64_t) ||
	    (uint64_t) h->header_size + (uint64_t) h->slot_size * h->nslots >
		    size ||
	    h->pid <= 0)
		return -EINVAL;
	return 0;
}

/* A slot a publisher could have written: a known state, no more hits than
 * lookups (a hit rate over 100% is a forged or corrupt file). */
static bool
slot_valid(const struct mrl_live_domain *d)
{
	const struct fi_mrlease_stats *s = mrl_live_stats(d);

	return (d->state == MRL_LIVE_FREE || d->state == MRL_LIVE_OPEN) &&
	       s->hits <= s->lookups && s->remote_hits <= s->remote_lookups;
}

/* The open file of process pid (its name's), read into *proc. */
static int
read_fd(int fd, int pid, struct mrl_live_proc *proc)
{
	struct mrl_live_header h;
	struct stat st;
	size_t words;
	unsigned tries;
	int ret;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t) sizeof(h) ||
	    st.st_size > MRL_LIVE_READ_MAX_FILE)
		return -EINVAL;
	ret = read_header(fd, (uint64_t) st.st_size, &h);
	if (ret)
		return ret;
	if (h.pid != pid)
		return -EINVAL;
	memset(proc, 0, sizeof(*proc));
	proc->pid = h.pid;
	proc->uid = (unsigned) st.st_uid;
	memcpy(proc->comm, h.comm, sizeof(h.comm));
	proc->start_time = h.start_time;
	proc->created_ns = h.created_ns;
	proc->interval_ms = h.interval_ms;
	proc->publishes = h.publishes;
	proc->updated_ns = h.updated_ns;
	proc->stale = !mrl_live_pid_alive(proc->pid, proc->start_time);
	/* A dead writer's slot left odd stays odd: one look is enough. */
	tries = proc->stale ? 1 : MRL_LIVE_READ_TRIES;
	words = (h.slot_size - sizeof(uint64_t)) / sizeof(uint64_t);
	if (words > MRL_LIVE_WORDS)
		words = MRL_LIVE_WORDS;
	for (unsigned i = 0; i < h.nslots; i++) {
		struct mrl_live_domain *d = &proc->dom[proc->ndomains];

		ret = read_slot(fd,
				(uint64_t) h.header_size +
					(uint64_t) h.slot_size * i,
				words, d, tries);
		if (ret < 0)
			return ret;
		if (!ret) {
			proc->busy++;
			continue;
		}
		if (!slot_valid(d))
			return -EINVAL;
		if (d->state != MRL_LIVE_OPEN)
			continue;
		d->provider[sizeof(d->provider) - 1] = '\0';
		/* A newer writer's extra statistics words are not ours. */
		if (h.stat_words < MRL_LIVE_STAT_WORDS)
			memset(&d->stats[h.stat_words], 0,
			       (MRL_LIVE_STAT_WORDS - h.stat_words) *
				       sizeof(uint64_t));
		proc->ndomains++;
	}
	return 0;
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
	return pid > INT_MAX ? 0 : (int) pid;
}

/* The uid of a user directory's name mrlease-<uid>, or -1. */
static long
name_uid(const char *name)
{
	size_t pl = strlen(MRL_LIVE_PREFIX);
	long uid = 0;

	if (strncmp(name, MRL_LIVE_PREFIX, pl) || !name[pl])
		return -1;
	for (const char *p = name + pl; *p; p++) {
		if (*p < '0' || *p > '9' || uid > (long) UINT32_MAX / 10)
			return -1;
		uid = uid * 10 + (*p - '0');
	}
	return uid > (long) UINT32_MAX ? -1 : uid;
}

/* Open what name is in dir_fd if it is a regular file: never a symlink
 * followed, never an open that blocks (a FIFO) or has side effects (a
 * device); fstat checks it again once open. */
static int
open_file(int dir_fd, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = openat(dir_fd, name,
		    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

/* The file name in dir_fd, of process pid: 0 or as mrl_live_read_file. */
static int
read_at_dir(int dir_fd, const char *name, int pid, struct mrl_live_proc *proc)
{
	int fd = open_file(dir_fd, name), ret;

	if (fd < 0)
		return fd;
	ret = read_fd(fd, pid, proc);
	close(fd);
	return ret;
}

int
mrl_live_read_file(const char *path, struct mrl_live_proc *proc)
{
	const char *base = strrchr(path, '/');
	int pid = name_pid(base ? base + 1 : path);

	if (!pid)
		return -EINVAL;
	return read_at_dir(AT_FDCWD, path, pid, proc);
}

void
mrl_live_user_dir(char *buf, size_t len, const char *base, unsigned uid)
{
	snprintf(buf, len, "%s/%s%u", base, MRL_LIVE_PREFIX, uid);
}

void
mrl_live_file_path(char *buf, size_t len, const char *base, unsigned uid,
		   int pid)
{
	snprintf(buf, len, "%s/%s%u/%s%d%s", base, MRL_LIVE_PREFIX, uid,
		 MRL_LIVE_PREFIX, pid, MRL_LIVE_SUFFIX);
}

/* The user directory name in base_fd, of uid: its descriptor, or -errno
 * (-EPERM: not a directory of uid's that no one else may write, whose files
 * could be anyone's). */
static int
open_user_dir(int base_fd, const char *name, unsigned uid)
{
	struct stat st;
	int fd = openat(base_fd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	if (fstat(fd, &st) || st.st_uid != uid ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

struct proc_list {
	struct mrl_live_proc *all;
	size_t count, cap;
};

/* Every valid file of uid in its directory name, appended to l. */
static int
read_user_dir(int base_fd, const char *name, unsigned uid, struct proc_list *l)
{
	struct mrl_live_proc *grown;
	struct dirent *e;
	DIR *d;
	int fd = open_user_dir(base_fd, name, uid);

	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		int pid = name_pid(e->d_name);

		if (!pid)
			continue;
		if (l->count == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 8;
			grown = realloc(l->all, l->cap * sizeof(*l->all));
			if (!grown) {
				closedir(d);
				return -ENOMEM;
			}
			l->all = grown;
		}
		if (!read_at_dir(dirfd(d), e->d_name, pid, &l->all[l->count]) &&
		    l->all[l->count].uid == uid)
			l->count++;
	}
	closedir(d);
	return 0;
}

static int
proc_cmp(const void *a, const void *b)
{
	const struct mrl_live_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int
mrl_live_read_dir(const char *base, struct mrl_live_proc **procs, size_t *n)
{
	struct proc_list l = {0};
	unsigned uid = (unsigned) geteuid();
	char name[32];
	struct dirent *e;
	DIR *d;
	int base_fd, ret = 0;

	base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0)
		return -errno;
	if (uid) {
		snprintf(name, sizeof(name), "%s%u", MRL_LIVE_PREFIX, uid);
		ret = read_user_dir(base_fd, name, uid, &l);
		if (ret == -ENOENT) /* no process of ours published yet */
			ret = 0;
		close(base_fd);
	} else if (!(d = fdopendir(base_fd))) {
		ret = -errno;
		close(base_fd);
	} else {
		/* root: every user's directory, and only those. */
		while (!ret && (e = readdir(d))) {
			long owner = name_uid(e->d_name);

			if (owner < 0)
				continue;
			ret = read_user_dir(dirfd(d), e->d_name,
					    (unsigned) owner, &l);
			if (ret != -ENOMEM)
				ret = 0;
		}
		closedir(d);
	}
	if (ret) {
		free(l.all);
		return ret;
	}
	if (l.count)
		qsort(l.all, l.count, sizeof(*l.all), proc_cmp);
	*procs = l.all;
	*n = l.count;
	return 0;
}

/* pid's file in the user directory name of uid: 0 or -errno. */
static int
read_pid_in(int base_fd, const char *name, unsigned uid, int pid,
	    struct mrl_live_proc *proc)
{
	char file[64];
	int fd = open_user_dir(base_fd, name, uid), ret;

	if (fd < 0)
		return fd;
	snprintf(file, sizeof(file), "%s%d%s", MRL_LIVE_PREFIX, pid,
		 MRL_LIVE_SUFFIX);
	ret = read_at_dir(fd, file, pid, proc);
	close(fd);
	if (!ret && proc->uid != uid)
		ret = -EINVAL;
	return ret;
}

int
mrl_live_read_pid(const char *base, int pid, struct mrl_live_proc *proc)
{
	unsigned uid = (unsigned) geteuid();
	char name[32];
	struct dirent *e;
	DIR *d;
	int base_fd, ret;

	base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0)
		return -errno;
	snprintf(name, sizeof(name), "%s%u", MRL_LIVE_PREFIX, uid);
	ret = read_pid_in(base_fd, name, uid, pid, proc);
	if (uid || (ret != -ENOENT && ret != -EPERM) ||
	    !(d = fdopendir(base_fd))) {
		close(base_fd);
		return ret;
	}
	/* root: the first user's directory that has it. */
	ret = -ENOENT;
	while (ret == -ENOENT && (e = readdir(d))) {
		long owner = name_uid(e->d_name);

		if (owner > 0)
			ret = read_pid_in(dirfd(d), e->d_name, (unsigned) owner,
					  pid, proc);
		if (ret == -EPERM)
			ret = -ENOENT;
	}
	closedir(d);
	return ret;
}
