/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live statistics publisher (mrl_live.h; the file: mrl_live_file.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_cache.h"
#include "mrl_hook.h"
#include "mrl_live.h"
#include "mrl_live_file.h"
#include "mrl_monitor.h"
#include "mrl_params.h"

/*
 * lock: protects everything below and every write to the file. Held by the
 * publisher across statistics queries (mrl_live.h says what that allows),
 * never while joining the publisher.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the publisher's sleep; signalled to stop */
	bool started; /* file and thread made (or tried: failed) */
	bool failed; /* off for the process: warned once */
	bool stop;
	bool thread_running;
	pthread_t thread;
	pid_t pid; /* whose file it is: a forked child's is not */
	struct mrl_live_file *file;
	/* The user's directory, opened once: the file is made and removed
	 * through it, whatever the working directory is by then. */
	int dir_fd;
	char name[32]; /* the file's, in dir_fd */
	dev_t file_dev; /* the file made: what exit may remove */
	ino_t file_ino;
	char path[PATH_MAX]; /* for messages */
	uint64_t next_id;
	struct mrl_cache_domain *dom[MRL_LIVE_SLOTS];
	mrl_live_more_fn more[MRL_LIVE_SLOTS]; /* the binding's counters */
	void *more_arg[MRL_LIVE_SLOTS];
	struct mrl_live_domain slot[MRL_LIVE_SLOTS]; /* what is published */
	bool full_warned;
} live = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.dir_fd = -1,
};

static uint64_t
live_now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Field 22 of /proc/self/stat: what tells this process from a later one
 * with its pid. */
static uint64_t
live_start_time(void)
{
	char state;

	return mrl_live_proc_start("/proc/self/stat", &state);
}

/* The command: the base name of argv[0] (/proc/self/comm is cut at 15
 * characters, and says "exe" for a program run through /proc/self/exe). */
static void
live_comm(char *comm, size_t len)
{
	char buf[4096], *base;
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	memset(comm, 0, len);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	memcpy(comm, base, strnlen(base, len - 1));
}

/* Why live statistics are off, said once: FI_WARN, or stderr when the log
 * level hides warnings (they were asked for: silence would hide a directory
 * another user took). */
static void __attribute__((format(printf, 1, 2)))
live_refuse(const char *fmt, ...)
{
	char msg[2 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (fi_log_enabled(mrl_hook_prov, FI_LOG_WARN, FI_LOG_CORE))
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"%s; live statistics are off\n", msg);
	else
		fprintf(stderr, "mrlease: %s; live statistics are off\n", msg);
}

/* What is there, for a message. */
static const char *
live_kind(mode_t mode)
{
	return S_ISREG(mode)  ? "a file" :
	       S_ISLNK(mode)  ? "a symlink" :
	       S_ISDIR(mode)  ? "a directory" :
	       S_ISFIFO(mode) ? "a FIFO" :
				"a special file";
}

/*
 * The user's directory DIR/mrlease-<uid>, made 0700 when absent and opened
 * without following a symlink: its descriptor, or -1 (said why). As for
 * XDG_RUNTIME_DIR, it is refused unless it is a directory of this user that
 * no one else may write: another user who made it or may write it could
 * place, replace or remove the files.
 */
static int
live_dir_open(const char *base)
{
	char name[32];
	struct stat st;
	uid_t uid = geteuid();
	int base_fd, fd;
	bool made;

	snprintf(name, sizeof(name), "%s%u", MRL_LIVE_PREFIX, (unsigned) uid);
	snprintf(live.path, sizeof(live.path), "%s/%s", base, name);
	base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0) {
		live_refuse("FI_MRLEASE_STATS_DIR=%s: cannot create %s: %s",
			    base, live.path, strerror(errno));
		return -1;
	}
	made = !mkdirat(base_fd, name, 0700);
	if (!made && errno != EEXIST) {
		live_refuse("FI_MRLEASE_STATS_DIR=%s: cannot create %s: %s",
			    base, live.path, strerror(errno));
		close(base_fd);
		return -1;
	}
	fd = openat(base_fd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && !fstatat(base_fd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    !S_ISDIR(st.st_mode))
		live_refuse("FI_MRLEASE_STATS_DIR=%s: %s is %s, not a "
			    "directory: refused",
			    base, live.path, live_kind(st.st_mode));
	else if (fd < 0)
		live_refuse("FI_MRLEASE_STATS_DIR=%s: cannot open %s: %s", base,
			    live.path, strerror(errno));
	close(base_fd);
	if (fd < 0)
		return -1;
	if (made) /* 0700 whatever the umask */
		fchmod(fd, S_IRWXU);
	if (fstat(fd, &st)) {
		live_refuse("FI_MRLEASE_STATS_DIR=%s: cannot open %s: %s", base,
			    live.path, strerror(errno));
		close(fd);
		return -1;
	}
	if (st.st_uid != uid || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		live_refuse("FI_MRLEASE_STATS_DIR=%s: %s has owner uid %u and "
			    "mode %04o: refused, it must be uid %u's and "
			    "writable by no one else (0700)",
			    base, live.path, (unsigned) st.st_uid,
			    (unsigned) (st.st_mode & 07777), (unsigned) uid);
		close(fd);
		return -1;
	}
	return fd;
}

/* A new file: O_EXCL so that no one else holds it open, O_NOFOLLOW so that
 * no symlink leads elsewhere. */
static int
live_file_excl(void)
{
	return openat(live.dir_fd, live.name,
		      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      S_IRUSR | S_IWUSR);
}

/* Whether what has our name is a file an earlier process of this user with
 * our pid left (killed, or replaced by exec): a regular file of ours. A
 * symlink, a FIFO or another user's file is not ours to remove. */
static bool
live_file_stale(struct stat *st)
{
	return !fstatat(live.dir_fd, live.name, st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* The file, mapped and with its header; under the lock. */
static int
live_file_create(void)
{
	struct mrl_live_header *h;
	struct mrl_live_file *file;
	const char *dir = mrl_params.stats_dir;
	struct stat st;
	int fd, ret;

	live.dir_fd = live_dir_open(dir);
	if (live.dir_fd < 0)
		return -FI_EPERM;
	snprintf(live.name, sizeof(live.name), "%s%d%s", MRL_LIVE_PREFIX,
		 (int) getpid(), MRL_LIVE_SUFFIX);
	if (strlen(live.path) + 1 + strlen(live.name) < sizeof(live.path))
		strcat(strcat(live.path, "/"), live.name);
	fd = live_file_excl();
	if (fd < 0 && errno == EEXIST && live_file_stale(&st)) {
		unlinkat(live.dir_fd, live.name, 0);
		fd = live_file_excl();
	}
	if (fd < 0) {
		if (errno == EEXIST &&
		    !fstatat(live.dir_fd, live.name, &st, AT_SYMLINK_NOFOLLOW))
			live_refuse("FI_MRLEASE_STATS_DIR=%s: %s exists, %s of "
				    "uid %u, not a file this user left: "
				    "refused",
				    dir, live.path, live_kind(st.st_mode),
				    (unsigned) st.st_uid);
		else
			live_refuse("FI_MRLEASE_STATS_DIR=%s: cannot create "
				    "%s: %s",
				    dir, live.path, strerror(errno));
		ret = -FI_EIO;
		goto err_dir;
	}
	if (fstat(fd, &st) || ftruncate(fd, sizeof(*file))) {
		ret = -errno;
		goto err_file;
	}
	live.file_dev = st.st_dev;
	live.file_ino = st.st_ino;
	/*
	 * A shared mapping: a store past the end of a truncated file raises
	 * SIGBUS, so it is safe only while no one else can truncate the file.
	 * No one else can: O_EXCL made a new file no one else has open, of
	 * mode 0600 in a directory that only this user may enter or write, so
	 * no other user can open it by name, link it elsewhere or put another
	 * in its place; our descriptor is closed below and the mapping is not
	 * inherited across exec. This user and root could, but they can kill
	 * the process anyway.
	 */
	file = mmap(NULL, sizeof(*file), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    0);
	if (file == MAP_FAILED) {
		ret = -errno;
		goto err_file;
	}
	close(fd);

	h = &file->h;
	h->version = MRL_LIVE_VERSION;
	h->header_size = sizeof(*h);
	h->slot_size = sizeof(struct mrl_live_slot);
	h->nslots = MRL_LIVE_SLOTS;
	h->stat_words = sizeof(struct fi_mrlease_stats) / sizeof(uint64_t);
	h->pid = (int32_t) getpid();
	h->start_time = live_start_time();
	h->interval_ms = mrl_params.stats_interval;
	h->created_ns = live_now_ns(CLOCK_REALTIME);
	live_comm(h->comm, sizeof(h->comm));
	/* Last: a reader that sees the magic sees the fields above. */
	atomic_store_explicit((atomic_uint_least64_t *) (void *) h->magic,
			      mrl_live_magic_word(), memory_order_release);
	live.file = file;
	live.pid = getpid();
	return 0;

err_file:
	live_refuse("FI_MRLEASE_STATS_DIR=%s: cannot size or map %s: %s", dir,
		    live.path, strerror(-ret));
	close(fd);
	unlinkat(live.dir_fd, live.name, 0);
	ret = -FI_EIO;
err_dir:
	close(live.dir_fd);
	live.dir_fd = -1;
	return ret;
}

/* The file made at start and nothing else: through the directory opened
 * then, and only while the name still leads to that file. */
static void
live_file_remove(void)
{
	struct stat st;

	if (!live.file)
		return;
	munmap(live.file, sizeof(*live.file));
	live.file = NULL;
	if (!fstatat(live.dir_fd, live.name, &st, AT_SYMLINK_NOFOLLOW) &&
	    st.st_dev == live.file_dev && st.st_ino == live.file_ino &&
	    unlinkat(live.dir_fd, live.name, 0))
		FI_WARN(mrl_hook_prov, FI_LOG_CORE, "cannot remove %s: %s\n",
			live.path, strerror(errno));
	close(live.dir_fd);
	live.dir_fd = -1;
}

/* One round: every open domain's statistics into its slot; under the lock. */
static void
live_publish_locked(void)
{
	struct fi_mrlease_stats stats;
	struct mrl_live_header *h = &live.file->h;

	for (unsigned i = 0; i < MRL_LIVE_SLOTS; i++) {
		if (!live.dom[i])
			continue;
		mrl_cache_domain_stats(live.dom[i], &stats);
		if (live.more[i])
			live.more[i](live.more_arg[i], &stats);
		/* As query_stats: the monitor is the process's. */
		stats.monitor_events = mrl_monitor_events();
		memcpy(live.slot[i].stats, &stats, sizeof(stats));
		mrl_live_slot_write(&live.file->slot[i], &live.slot[i]);
	}
	atomic_store_explicit(&h->updated_ns, live_now_ns(CLOCK_REALTIME),
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&h->publishes, 1, memory_order_release);
}

/* The largest time_t: a deadline past it is "never". */
#define LIVE_TIME_MAX \
	((time_t) (((uint64_t) 1 << (sizeof(time_t) * 8 - 1)) - 1))

/* interval_ms after now, saturated at the largest time the clock holds:
 * any FI_MRLEASE_STATS_INTERVAL is a deadline to come, never one that a
 * product wrapped into the past (the publisher would spin). */
static struct timespec
live_deadline(struct timespec now, uint64_t interval_ms)
{
	uint64_t sec = interval_ms / 1000;
	long nsec = now.tv_nsec + (long) (interval_ms % 1000) * 1000000;

	if (nsec >= 1000000000) {
		nsec -= 1000000000;
		sec++;
	}
	if (now.tv_sec < 0 || sec > (uint64_t) (LIVE_TIME_MAX - now.tv_sec)) {
		now.tv_sec = LIVE_TIME_MAX;
		now.tv_nsec = 999999999;
		return now;
	}
	now.tv_sec += (time_t) sec;
	now.tv_nsec = nsec;
	return now;
}

static void *
live_thread(void *arg)
{
	struct timespec now, until;
	uint64_t interval = mrl_params.stats_interval;

	(void) arg;
	if (!interval)
		interval = 1;
	pthread_mutex_lock(&live.lock);
	while (!live.stop) {
		live_publish_locked();
		clock_gettime(CLOCK_MONOTONIC, &now);
		until = live_deadline(now, interval);
		while (!live.stop &&
		       pthread_cond_timedwait(&live.wake, &live.lock, &until) !=
			       ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&live.lock);
	return NULL;
}

static void
live_atexit(void)
{
	mrl_live_fini();
}

/* A forked child: the file and the thread are the parent's. */
static void
live_fork_child(void)
{
	pthread_mutex_init(&live.lock, NULL);
	pthread_cond_init(&live.wake, NULL);
	if (live.file)
		munmap(live.file, sizeof(*live.file));
	live.file = NULL;
	if (live.dir_fd >= 0)
		close(live.dir_fd);
	live.dir_fd = -1;
	live.thread_running = false;
	live.failed = true;
	memset(live.dom, 0, sizeof(live.dom));
}

/* The first domain: the file, then the thread (every signal blocked in it,
 * as the monitor's task); under the lock. */
static void
live_start_locked(void)
{
	pthread_condattr_t cattr;
	sigset_t all, old;
	int ret;

	live.started = true;
	live.failed = true;
	if (live_file_create())
		return;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_destroy(&live.wake);
	pthread_cond_init(&live.wake, &cattr);
	pthread_condattr_destroy(&cattr);

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&live.thread, NULL, live_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"cannot start the live statistics thread: %s; live "
			"statistics are off\n",
			strerror(ret));
		live_file_remove();
		return;
	}
	pthread_setname_np(live.thread, "mrl-stats");
	live.thread_running = true;
	live.failed = false;
	atexit(live_atexit);
	pthread_atfork(NULL, NULL, live_fork_child);
}

void
mrl_live_domain_add(struct mrl_cache_domain *dom, const char *provider,
		    bool outermost, mrl_live_more_fn more, void *more_arg)
{
	struct mrl_live_domain *d;
	unsigned i;

	if (!mrl_params.stats_live)
		return;
	pthread_mutex_lock(&live.lock);
	if (!live.started)
		live_start_locked();
	if (live.failed)
		goto out;
	for (i = 0; i < MRL_LIVE_SLOTS && live.dom[i]; i++)
		;
	if (i == MRL_LIVE_SLOTS) {
		if (!live.full_warned)
			FI_WARN(mrl_hook_prov, FI_LOG_DOMAIN,
				"more than %d domains open: the others are "
				"left out of the live statistics\n",
				MRL_LIVE_SLOTS);
		live.full_warned = true;
		goto out;
	}
	d = &live.slot[i];
	memset(d, 0, sizeof(*d));
	d->state = MRL_LIVE_OPEN;
	d->id = ++live.next_id;
	d->opened_ns = live_now_ns(CLOCK_REALTIME);
	d->outermost = outermost;
	snprintf(d->provider, sizeof(d->provider), "%s", provider);
	live.dom[i] = dom;
	live.more[i] = more;
	live.more_arg[i] = more_arg;
	mrl_live_slot_write(&live.file->slot[i], d);
out:
	pthread_mutex_unlock(&live.lock);
}

void
mrl_live_domain_remove(struct mrl_cache_domain *dom)
{
	if (!mrl_params.stats_live)
		return;
	pthread_mutex_lock(&live.lock);
	for (unsigned i = 0; i < MRL_LIVE_SLOTS; i++) {
		if (live.dom[i] != dom)
			continue;
		live.dom[i] = NULL;
		live.more[i] = NULL;
		memset(&live.slot[i], 0, sizeof(live.slot[i]));
		if (live.file)
			mrl_live_slot_write(&live.file->slot[i], &live.slot[i]);
	}
	pthread_mutex_unlock(&live.lock);
}

void
mrl_live_fini(void)
{
	bool join;

	pthread_mutex_lock(&live.lock);
	if (live.pid != getpid()) { /* nothing of ours (or a child) */
		pthread_mutex_unlock(&live.lock);
		return;
	}
	live.stop = true;
	join = live.thread_running;
	live.thread_running = false;
	pthread_cond_signal(&live.wake);
	pthread_mutex_unlock(&live.lock);
	if (join)
		pthread_join(live.thread, NULL);

	pthread_mutex_lock(&live.lock);
	live_file_remove();
	memset(live.dom, 0, sizeof(live.dom));
	live.failed = true; /* a domain opened after fini publishes nothing */
	pthread_mutex_unlock(&live.lock);
}
