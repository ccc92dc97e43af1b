/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the live statistics tests share: a run with FI_MRLEASE_STATS_LIVE=1
 * into a directory of its own, the built mrlease-stat run on it, waits for
 * a publisher's next rounds, and reading numbers out of the tool's JSON.
 */
#ifndef LIVE_UTIL_H
#define LIVE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mrl_live_read.h"

struct mrlt_pair;

/* The provider the live tests publish over, and their transfers' size
 * (above FI_MRLEASE_MIN_SIZE: leased). */
#define LIVE_PROV "tcp;ofi_rxm"
#define LIVE_LEN  (64 * 1024)

/*
 * Make sure this process runs with FI_HOOK=mrlease and live statistics on
 * (every interval_ms) into a fresh directory, re-executing itself when not
 * (see xfer_reexec). Returns the directory.
 */
const char *live_setup(char **argv, const char *interval_ms);

/* The directory live_setup chose. */
const char *live_dir(void);

/* Run the built mrlease-stat with args (shell words) on live_dir(); its
 * stdout into out (NUL-terminated). Returns its exit status, or -1. */
int live_tool(const char *args, char *out, size_t len);

/* Wait (bounded, no sleeping) until pid's file completed `rounds` more
 * publishes than when called; fills *proc with the last read. */
bool live_wait_rounds(pid_t pid, unsigned rounds, struct mrl_live_proc *proc);
/* The same with pid's files under base. */
bool live_wait_rounds_in(const char *base, pid_t pid, unsigned rounds,
			 struct mrl_live_proc *proc);

/* Round trips of LIVE_LEN with desc NULL, one buffer invalidated in
 * between: hits, cold and invalidated misses. 0 or as xfer_round_trip. */
int live_move_data(struct mrlt_pair *pair, char *src, char *dst);

/* Remove dir and everything in it, symlinks not followed. */
void live_remove_tree(const char *dir);

/* The number after "key": at or after from; false if there is none. */
bool live_json_u64(const char *from, const char *key, uint64_t *value);

/* The JSON object of process pid in the tool's output, or NULL. */
const char *live_json_proc(const char *json, pid_t pid);

/*
 * A child running this program with --client (live_client): it opens a
 * pair, moves data, says "ready" on its stdout and exits when its stdin
 * closes. Set in its environment, MRLT_LIVE_CWD=DIR makes it start in DIR,
 * MRLT_LIVE_GO=1 wait for a byte on its stdin before it opens anything (its
 * parent knows its pid by then), MRLT_LIVE_CHDIR=DIR go to DIR once its
 * stdin closed, before it closes the pair and exits.
 */
int live_client(void);
struct live_child {
	pid_t pid;
	int to, from; /* its stdin (write end), its stdout (read end) */
};
/* Start one (extra: "NAME=value" settings or NULL); false on failure. */
bool live_child_start(struct live_child *c, const char *const *extra);
/* Wait for its "ready"; false if it ended first. */
bool live_child_ready(struct live_child *c);
/* Close its stdin and reap it; its exit status (or -1). */
int live_child_end(struct live_child *c);

#endif /* LIVE_UTIL_H */
