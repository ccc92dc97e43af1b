/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading live statistics files (mrl_live_file.h) from outside the
 * publishing process: what mrlease-stat(1) shows and the tests check. Only
 * the files and /proc/<pid>/stat are read: no ptrace, no signal.
 *
 * Every file is taken as hostile, whoever made it: only regular files are
 * opened, without following a symlink or blocking on a FIFO; they are read
 * by copying (pread), so a file truncated meanwhile is only refused; and
 * every size, count and value that would make a snapshot impossible (a pid
 * that is not the name's, more hits than lookups) refuses the file.
 */
#ifndef MRL_LIVE_READ_H
#define MRL_LIVE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mrl_live_file.h"

/* One process's file, as read once. */
struct mrl_live_proc {
	int pid;
	unsigned uid; /* the file's owner */
	char comm[sizeof(((struct mrl_live_header *) 0)->comm) + 1];
	bool stale; /* its process is gone (or the pid reused) */
	uint64_t start_time, created_ns, updated_ns, publishes, interval_ms;
	unsigned ndomains; /* open domains read, in dom[] */
	unsigned busy; /* slots never read consistently (left out) */
	struct mrl_live_domain dom[MRL_LIVE_SLOTS];
};

/* Copies of a slot tried before it is left out of a snapshot. */
#define MRL_LIVE_READ_TRIES 10000

/* The statistics record of a slot (the prefix the writer wrote). */
static inline const struct fi_mrlease_stats *
mrl_live_stats(const struct mrl_live_domain *d)
{
	return (const struct fi_mrlease_stats *) (const void *) d->stats;
}

/* The scalar fields of struct fi_mrlease_stats by name (the JSON's names),
 * in the structure's order; the histograms are not among them. */
struct mrl_live_field {
	const char *name;
	size_t off;
};
#define MRL_LIVE_FIELDS 40
extern const struct mrl_live_field mrl_live_fields[MRL_LIVE_FIELDS];

/* A field's value in a statistics record. */
static inline uint64_t
mrl_live_field_of(const struct fi_mrlease_stats *s, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *) s + mrl_live_fields[i].off, sizeof(v));
	return v;
}

/* Whether pid runs and is the process that started at start_time. */
bool mrl_live_pid_alive(int pid, uint64_t start_time);

/* Largest sizes a reader accepts: header, slot, file. */
#define MRL_LIVE_READ_MAX_PART (64 * 1024)
#define MRL_LIVE_READ_MAX_FILE (16 * 1024 * 1024)

/* base/mrlease-<uid>: the directory of uid's files (mrl_live_file.h). */
void mrl_live_user_dir(char *buf, size_t len, const char *base, unsigned uid);

/* base/mrlease-<uid>/mrlease-<pid>.stats. */
void mrl_live_file_path(char *buf, size_t len, const char *base, unsigned uid,
			int pid);

/* Read one file, named mrlease-<pid>.stats: 0, -ENOENT/-EACCES... from
 * opening it, or -EINVAL when it is not a live statistics file of a
 * version this reader knows, or not a valid one. */
int mrl_live_read_file(const char *path, struct mrl_live_proc *proc);

/* Every process's file under base, sorted by pid, into a malloc'ed array
 * (free it): those of this user's directory, of every user's for root
 * (mrl_live_user_dir); files that are not valid are skipped, and so is a
 * user directory that is not its user's alone. 0, or -errno of opening
 * base or (-EPERM) this user's directory. */
int mrl_live_read_dir(const char *base, struct mrl_live_proc **procs,
		      size_t *n);

/* The file of one pid under base (this user's, any user's for root): 0 or
 * as mrl_live_read_file. */
int mrl_live_read_pid(const char *base, int pid, struct mrl_live_proc *proc);

#endif /* MRL_LIVE_READ_H */
