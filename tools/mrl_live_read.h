/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading live statistics files (mrl_live_file.h) from outside the
 * publishing process: what mrlease-stat(1) shows and the tests check. Only
 * the files and /proc/<pid>/stat are read: no ptrace, no signal.
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

/* Read one file: 0, -ENOENT/-EACCES... from opening it, or -EINVAL when it
 * is not a live statistics file of a version this reader knows. */
int mrl_live_read_file(const char *path, struct mrl_live_proc *proc);

/* Every mrlease-<pid>.stats of dir, sorted by pid, into a malloc'ed array
 * (free it); files that are not ours are skipped. 0 or -errno of opendir. */
int mrl_live_read_dir(const char *dir, struct mrl_live_proc **procs, size_t *n);

/* The file of one pid in dir: 0 or as mrl_live_read_file. */
int mrl_live_read_pid(const char *dir, int pid, struct mrl_live_proc *proc);

#endif /* MRL_LIVE_READ_H */
