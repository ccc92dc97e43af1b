/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live statistics file (FI_MRLEASE_STATS_LIVE=1): its layout, shared by
 * the publisher in the provider (prov/mrlease/src/5-live/), mrlease-stat(1)
 * and the tests.
 *
 * One file per process, DIR/mrlease-<uid>/mrlease-<pid>.stats, where DIR is
 * FI_MRLEASE_STATS_DIR (default /dev/shm) and <uid> the process's effective
 * user, of a fixed size: a header, then MRL_LIVE_SLOTS domain slots. Every
 * field is a little-endian machine word of the writer.
 *
 * Who may see it. DIR is shared (/dev/shm is writable by everyone), so the
 * publisher keeps its files in a directory of its user's, as the
 * XDG_RUNTIME_DIR rules say: made 0700, and used only when it is a real
 * directory (not a symlink) owned by the user that no one else may write.
 * The file is made there with O_EXCL|O_NOFOLLOW, mode 0600. Other users
 * can neither read the statistics nor place, replace or truncate a file
 * there; root's mrlease-stat reads every user's directory. A reader still
 * takes every file as hostile: it copies what it reads (pread, never a
 * shared mapping a truncation turns into SIGBUS) and checks every size.
 *
 * Who writes. Only the publisher, under its lock: one writer at a time.
 * The header's identity fields are written once before the magic (a release
 * store); `publishes` and `updated_ns` after each round. A slot is written
 * under its own sequence lock: seq odd while it changes, even when
 * consistent. A reader copies seq, then the slot, then seq again (three
 * preads, an acquire fence after each) and retries when seq was odd or
 * changed: a reader never blocks the writer and a writer never waits for a
 * reader.
 *
 * Staleness. A file outlives its process when the process dies without
 * running its cleanup (SIGKILL, a crash). A reader tells it by the pid:
 * no /proc/<pid>, or a process there whose start time (field 22 of
 * /proc/<pid>/stat, in clock ticks since boot) is not the header's: the pid
 * was reused.
 *
 * Compatibility. A reader accepts the magic and version below, then uses the
 * header's sizes: the slot size and the number of statistics words (a newer
 * writer may append fields to struct fi_mrlease_stats; a reader reads the
 * prefix it knows and zeroes the rest).
 */
#ifndef MRL_LIVE_FILE_H
#define MRL_LIVE_FILE_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_ext_mrlease.h>

#define MRL_LIVE_MAGIC	 "MRLSTATS"
#define MRL_LIVE_VERSION 1
#define MRL_LIVE_SLOTS	 64
/* Statistics words a slot has room for: struct fi_mrlease_stats can grow
 * to this many uint64_t fields without changing the layout. */
#define MRL_LIVE_STAT_WORDS 128
#define MRL_LIVE_PREFIX	    "mrlease-" /* of a file and a user's directory */
#define MRL_LIVE_SUFFIX	    ".stats"

_Static_assert(sizeof(struct fi_mrlease_stats) <= MRL_LIVE_STAT_WORDS * 8,
	       "a slot holds the whole statistics record");

struct mrl_live_header {
	char magic[8]; /* MRL_LIVE_MAGIC, stored last (mrl_live_magic_word) */
	uint32_t version; /* MRL_LIVE_VERSION */
	uint32_t header_size; /* sizeof(struct mrl_live_header) */
	uint32_t slot_size; /* sizeof(struct mrl_live_slot) */
	uint32_t nslots; /* MRL_LIVE_SLOTS */
	uint32_t stat_words; /* words of fi_mrlease_stats in a slot */
	int32_t pid;
	uint64_t start_time; /* /proc/<pid>/stat field 22 */
	uint64_t interval_ms; /* FI_MRLEASE_STATS_INTERVAL */
	uint64_t created_ns; /* CLOCK_REALTIME when the file was made */
	atomic_uint_least64_t publishes; /* rounds completed */
	atomic_uint_least64_t updated_ns; /* CLOCK_REALTIME of the last */
	char comm[32]; /* base name of argv[0] */
	uint64_t reserved[19];
};

/* What a slot holds, copied as words under its sequence lock. */
struct mrl_live_domain {
	uint64_t state; /* MRL_LIVE_FREE or MRL_LIVE_OPEN */
	uint64_t id; /* the process's domain number, from 1 */
	uint64_t opened_ns; /* CLOCK_REALTIME when the domain opened */
	uint64_t outermost; /* 1: the domain the application opened */
	char provider[64]; /* e.g. "tcp;ofi_rxm" */
	uint64_t stats[MRL_LIVE_STAT_WORDS]; /* struct fi_mrlease_stats */
};

enum { MRL_LIVE_FREE = 0, MRL_LIVE_OPEN = 1 };

struct mrl_live_slot {
	atomic_uint_least64_t seq; /* odd while written */
	struct mrl_live_domain d;
};

struct mrl_live_file {
	struct mrl_live_header h;
	struct mrl_live_slot slot[MRL_LIVE_SLOTS];
};

#define MRL_LIVE_WORDS (sizeof(struct mrl_live_domain) / sizeof(uint64_t))
_Static_assert(sizeof(struct mrl_live_domain) % sizeof(uint64_t) == 0,
	       "a slot is whole words");
_Static_assert(sizeof(struct mrl_live_header) == 256, "header: 256 bytes");

/* The start time (field 22) of a /proc/<pid>/stat text, 0 if there is
 * none; *state: its field 3 (R, S, Z...). Fields 3 to 21 come after the
 * ")" that ends the command, which may itself hold ")". */
static inline uint64_t
mrl_live_stat_start(const char *stat, char *state)
{
	unsigned long long start;
	const char *p = strrchr(stat, ')');

	if (!p || sscanf(p + 1,
			 " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u"
			 " %*d %*d %*d %*d %*d %*d %llu",
			 state, &start) != 2)
		return 0;
	return start;
}

/* The same read from the file at path (/proc/self/stat, /proc/<pid>/stat):
 * 0 if it cannot be read. */
static inline uint64_t
mrl_live_proc_start(const char *path, char *state)
{
	char buf[1024];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return mrl_live_stat_start(buf, state);
}

/* The magic as the word it is stored as (release) and loaded as
 * (acquire): what a reader that sees it may read of the header. */
static inline uint64_t
mrl_live_magic_word(void)
{
	uint64_t w;

	memcpy(&w, MRL_LIVE_MAGIC, sizeof(w));
	return w;
}

/*
 * The writer: the slot's new contents, under its sequence lock. No fences
 * (ThreadSanitizer does not model them): the odd sequence is stored before
 * every word, each word with release, so whoever sees a new word sees the
 * odd sequence or a newer one; the even sequence is stored with release
 * after them, so whoever sees it sees every word.
 */
static inline void
mrl_live_slot_write(struct mrl_live_slot *slot, const struct mrl_live_domain *d)
{
	atomic_uint_least64_t *w = (atomic_uint_least64_t *) (void *) &slot->d;
	const uint64_t *src = (const uint64_t *) (const void *) d;
	uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_relaxed);

	atomic_store_explicit(&slot->seq, seq + 1, memory_order_relaxed);
	for (size_t i = 0; i < MRL_LIVE_WORDS; i++)
		atomic_store_explicit(&w[i], src[i], memory_order_release);
	atomic_store_explicit(&slot->seq, seq + 2, memory_order_release);
}

#endif /* MRL_LIVE_FILE_H */
