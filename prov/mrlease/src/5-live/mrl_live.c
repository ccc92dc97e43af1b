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
	char path[PATH_MAX];
	uint64_t next_id;
	struct mrl_cache_domain *dom[MRL_LIVE_SLOTS];
	mrl_live_more_fn more[MRL_LIVE_SLOTS]; /* the binding's counters */
	void *more_arg[MRL_LIVE_SLOTS];
	struct mrl_live_domain slot[MRL_LIVE_SLOTS]; /* what is published */
	bool full_warned;
} live = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
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

/* The file, mapped and with its header; under the lock. */
static int
live_file_create(void)
{
	struct mrl_live_header *h;
	struct mrl_live_file *file;
	const char *dir = mrl_params.stats_dir;
	int fd, ret;

	if ((size_t) snprintf(live.path, sizeof(live.path), "%s/%s%d%s", dir,
			      MRL_LIVE_PREFIX, (int) getpid(),
			      MRL_LIVE_SUFFIX) >= sizeof(live.path)) {
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"FI_MRLEASE_STATS_DIR=%s: name too long; live "
			"statistics are off\n",
			dir);
		return -FI_EINVAL;
	}
	/* A file left by a dead process with our pid is replaced. */
	fd = open(live.path,
		  O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		ret = -errno;
		FI_WARN(mrl_hook_prov, FI_LOG_CORE,
			"FI_MRLEASE_STATS_DIR=%s: cannot create %s: %s; live "
			"statistics are off\n",
			dir, live.path, strerror(-ret));
		return -FI_EIO;
	}
	if (ftruncate(fd, sizeof(*file))) {
		ret = -errno;
		goto err_file;
	}
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
	FI_WARN(mrl_hook_prov, FI_LOG_CORE,
		"FI_MRLEASE_STATS_DIR=%s: cannot size or map %s: %s; live "
		"statistics are off\n",
		dir, live.path, strerror(-ret));
	close(fd);
	unlink(live.path);
	return -FI_EIO;
}

static void
live_file_remove(void)
{
	if (!live.file)
		return;
	munmap(live.file, sizeof(*live.file));
	live.file = NULL;
	if (unlink(live.path) && errno != ENOENT)
		FI_WARN(mrl_hook_prov, FI_LOG_CORE, "cannot remove %s: %s\n",
			live.path, strerror(errno));
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

static void *
live_thread(void *arg)
{
	struct timespec until;
	uint64_t ns, interval = mrl_params.stats_interval;

	(void) arg;
	if (!interval)
		interval = 1;
	pthread_mutex_lock(&live.lock);
	while (!live.stop) {
		live_publish_locked();
		clock_gettime(CLOCK_MONOTONIC, &until);
		ns = (uint64_t) until.tv_nsec + interval * 1000000u;
		until.tv_sec += (time_t) (ns / 1000000000u);
		until.tv_nsec = (long) (ns % 1000000000u);
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
