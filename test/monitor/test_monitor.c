/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor with the lease cache, over real memory and the real
 * kernel, registering through the counting fake registrar: every way pages
 * leave the process is caught, no lookup sees a range once munmap returned,
 * the VMA count stays bounded, and each rule that keeps a thread blocked in
 * munmap from deadlocking with the monitor holds (mrl_monitor.h).
 */
#define _GNU_SOURCE
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cache_registrar.h"
#include "common/fixture_rdm.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "mrl_bind.h"
#include "mrl_monitor.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static struct mrl_cache *cache;
static struct creg creg;
static struct mrl_cache_domain *dom;
static size_t page;
static bool monitor_ok;
static bool saw_all; /* the client was told to drop everything */

/* ---- the monitor's client, with test gates ------------------------------ */

/* Set on a thread while it applies the monitor's events (the allocation
 * count below). */
static __thread bool on_monitor;
static atomic_int gate_closed; /* invalidate waits while set */
static atomic_int gate_waiting; /* a drain is at the gate */

/* Called by mrl_monitor_drain, on the thread that drains. */
static void
client_invalidate(void *arg, uintptr_t start, uintptr_t end, bool all)
{
	(void) arg;
	if (all)
		saw_all = true;
	if (atomic_load(&gate_closed)) {
		atomic_store(&gate_waiting, 1);
		while (atomic_load(&gate_closed))
			sched_yield();
		atomic_store(&gate_waiting, 0);
	}
	on_monitor = true;
	/* As the provider's client does (the test's cache is the only one). */
	if (mrl_caches_invalidate_deferred(start, end))
		mrl_monitor_closer_due();
	on_monitor = false;
}

static bool
client_in_use(void *arg, uintptr_t lo, uintptr_t hi)
{
	(void) arg;
	return mrl_caches_in_use(lo, hi);
}

/* On the closer: the events applied, what free_threaded domains'
 * registrations they dropped closed. */
static atomic_int client_close_again = -1; /* what client_close returns */
static atomic_long client_close_calls;

static int
client_close(void *arg)
{
	(void) arg;
	mrl_caches_close_deferred_shared();
	atomic_fetch_add(&client_close_calls, 1);
	return atomic_load(&client_close_again);
}

static const struct mrl_monitor_client client = {
	.barrier = &mrl_cache_barrier,
	.invalidate = client_invalidate,
	.in_use = client_in_use,
	.close = client_close,
};

/* ---- a registrar that watches, with hooks into reg and close ------------ */

/* Set by the test's thread, read by any thread's reg() or close(). */
static void (*_Atomic reg_hook)(void); /* run inside the next reg() */
static _Atomic(void *) close_hook_mr; /* its close runs close_hook */
static void (*_Atomic close_hook)(void);
static atomic_int close_hook_tid;

static int
watch_reg(void *ctx, const void *addr, size_t len, uint64_t access,
	  uint64_t key, void **mr, void **desc)
{
	void (*hook)(void) = atomic_exchange(&reg_hook, NULL);

	if (hook)
		hook();
	return creg_registrar.reg(ctx, addr, len, access, key, mr, desc);
}

static int
watch_close(void *ctx, void *mr)
{
	void (*hook)(void) = atomic_load(&close_hook);

	if (mr == atomic_load(&close_hook_mr) && hook) {
		atomic_store(&close_hook_tid, (int) syscall(SYS_gettid));
		hook();
	}
	return creg_registrar.close(ctx, mr);
}

static bool
watch_range(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	return mrl_monitor_watch(lo, hi);
}

static void
watch_released(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	mrl_monitor_release(lo, hi);
}

static const struct mrl_registrar watch_registrar = {
	.reg = watch_reg,
	.close = watch_close,
	.watch = watch_range,
	.released = watch_released,
};

/* ---- helpers ------------------------------------------------------------ */

static void
stats(struct fi_mrlease_stats *st)
{
	mrl_cache_domain_stats(dom, st);
}

/* Lease [p, p + len) (registering on a miss) and give it back: the entry
 * stays cached when its range is watched. */
static struct mrl_registration *
touch(const void *p, size_t len)
{
	struct mrl_registration *reg;

	if (mrl_cache_acquire(dom, (uintptr_t) p, (uintptr_t) p + len, &reg))
		return NULL;
	mrl_cache_lease_release(reg);
	return reg;
}

/* Whether a live entry covers [p, p + len), without registering. */
static bool
cached(const void *p, size_t len)
{
	struct mrl_registration *reg;

	reg = mrl_cache_lookup(dom, (uintptr_t) p, (uintptr_t) p + len);
	if (reg)
		mrl_cache_lease_release(reg);
	return reg != NULL;
}

static void *
map(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, len);
	return p;
}

/* munmap returns once the monitor has read its event; the invalidation
 * (and its counters) follows at the next lookup, which applies it: use one
 * before reading the statistics. */
static void
settle(const void *p)
{
	(void) cached(p, 1);
}

static bool
wait_for(atomic_int *v, int want)
{
	for (long i = 0; i < 20000000; i++) {
		if (atomic_load(v) == want)
			return true;
		sched_yield();
	}
	return false;
}

#define NEED_MONITOR()                                                     \
	do {                                                               \
		if (!monitor_ok) {                                         \
			mrlt_skip_current("userfaultfd unavailable here"); \
			return;                                            \
		}                                                          \
	} while (0)

/* ---- every way pages leave ---------------------------------------------- */

enum leave {
	LEAVE_MUNMAP,
	LEAVE_RAW_SYSCALL,
	LEAVE_DONTNEED,
	LEAVE_FREE,
	LEAVE_REMOVE,
	LEAVE_MREMAP_SHRINK,
	LEAVE_MREMAP_MOVE,
	LEAVE_MAP_FIXED,
	LEAVE_GLIBC_FREE,
	LEAVE_BRK,
	LEAVE_KINDS
};

static const char *const leave_names[] = {
	"munmap",
	"syscall(SYS_munmap)",
	"madvise(MADV_DONTNEED)",
	"madvise(MADV_FREE)",
	"madvise(MADV_REMOVE)",
	"mremap shrinking",
	"mremap moving",
	"mmap(MAP_FIXED) over it",
	"free() of an mmapped chunk",
	"sbrk shrinking the heap",
};

/* Set up memory for `how`, cache an entry over [*p, *p + *len) inside it,
 * make its pages leave, and say whether the entry is gone. */
static int
leave_once(enum leave how, char *why, size_t whylen)
{
	size_t len = 16 * page;
	char *p, *q;
	int ret = -1;

	switch (how) {
	case LEAVE_REMOVE:
		p = map(len, MAP_SHARED | MAP_ANONYMOUS);
		break;
	case LEAVE_GLIBC_FREE:
		p = malloc(4 << 20); /* above the mmap threshold */
		if (p)
			memset(p, 1, 4 << 20);
		break;
	case LEAVE_BRK:
		p = sbrk(0);
		p = (char *) (((uintptr_t) p + page - 1) &
			      ~(uintptr_t) (page - 1));
		if (brk(p + len))
			p = NULL;
		else
			memset(p, 1, len);
		break;
	default:
		p = map(len, MAP_PRIVATE | MAP_ANONYMOUS);
	}
	if (!p) {
		snprintf(why, whylen, "%s: no memory", leave_names[how]);
		return -1;
	}
	/* The last 4 pages: what shrinking takes away. */
	q = p + 12 * page;
	if (!touch(q, 4 * page) || !cached(q, 4 * page)) {
		snprintf(why, whylen, "%s: entry not retained before",
			 leave_names[how]);
		goto out;
	}
	switch (how) {
	case LEAVE_MUNMAP:
		munmap(p, len);
		break;
	case LEAVE_RAW_SYSCALL:
		syscall(SYS_munmap, p, len);
		break;
	case LEAVE_DONTNEED:
		madvise(q, 4 * page, MADV_DONTNEED);
		break;
	case LEAVE_FREE:
		madvise(q, 4 * page, MADV_FREE);
		break;
	case LEAVE_REMOVE:
		madvise(q, 4 * page, MADV_REMOVE);
		break;
	case LEAVE_MREMAP_SHRINK:
		mremap(p, len, 12 * page, 0);
		break;
	case LEAVE_MREMAP_MOVE:
		p = mremap(p, len, 64 * len, MREMAP_MAYMOVE);
		if (p == MAP_FAILED) {
			/* Watching must not have split the mapping. */
			snprintf(why, whylen, "%s: %s", leave_names[how],
				 strerror(errno));
			p = q - 12 * page;
			goto out;
		}
		if (p == q - 12 * page) {
			snprintf(why, whylen, "%s: did not move",
				 leave_names[how]);
			goto out;
		}
		len *= 64;
		break;
	case LEAVE_MAP_FIXED:
		mmap(q, 4 * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		break;
	case LEAVE_GLIBC_FREE:
		free(p);
		p = NULL;
		break;
	case LEAVE_BRK:
		brk(p);
		p = NULL;
		break;
	default:
		break;
	}
	if (cached(q, 4 * page))
		snprintf(why, whylen, "%s: entry still cached after",
			 leave_names[how]);
	else
		ret = 0;
out:
	if (how != LEAVE_GLIBC_FREE && how != LEAVE_BRK && p &&
	    how != LEAVE_MUNMAP && how != LEAVE_RAW_SYSCALL)
		munmap(p, len);
	return ret;
}

/* Allocators purge with madvise, glibc frees big chunks with munmap and
 * trims with brk, realloc moves with mremap: each one, unseen, would leave a
 * registration of pages the process no longer has. */
static void
test_every_way_pages_leave_is_caught(void)
{
	struct fi_mrlease_stats before, after;
	char why[160];

	NEED_MONITOR();
	for (int how = 0; how < LEAVE_KINDS; how++) {
#ifdef __SANITIZE_ADDRESS__
		/* ASan's allocator keeps freed chunks mapped (quarantine):
		 * nothing leaves, nothing to catch. */
		if (how == LEAVE_GLIBC_FREE)
			continue;
#endif
		stats(&before);
		if (leave_once(how, why, sizeof(why))) {
			mrlt_fail(__FILE__, __LINE__, "%s", why);
			return;
		}
		stats(&after);
		CHECK(after.monitor_invalidations >
		      before.monitor_invalidations);
	}
	mrl_cache_close_deferred(cache);
}

/* shmdt sends no event and userfaultfd refuses SysV segments: a cached
 * entry there would go stale unseen, so it lives only while leased. */
static void
test_sysv_shm_is_not_retained(void)
{
	struct fi_mrlease_stats before, after;
	int id;
	char *p;

	NEED_MONITOR();
	id = shmget(IPC_PRIVATE, 16 * page, IPC_CREAT | 0600);
	CHECK(id >= 0);
	p = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	CHECK(p != (void *) -1);
	stats(&before);
	CHECK(touch(p, 4 * page) != NULL);
	stats(&after);
	CHECK(!cached(p, 4 * page));
	CHECK_EQ(before.not_retained + 1, after.not_retained);
	shmdt(p);
}

/* A private file mapping cannot be watched (userfaultfd refuses it): keeping
 * its registration past the transfer would risk a stale one. */
static void
test_file_backed_memory_is_not_retained(void)
{
	struct fi_mrlease_stats before, after;
	char path[] = "/tmp/mrl_monitor_XXXXXX";
	long closed;
	int fd;
	void *p;

	NEED_MONITOR();
	fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(0, ftruncate(fd, (off_t) (16 * page)));
	p = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(p != MAP_FAILED);
	stats(&before);
	closed = atomic_load(&creg.closed);
	CHECK(touch(p, page) != NULL);
	stats(&after);
	CHECK(!cached(p, page));
	CHECK_EQ(before.not_retained + 1, after.not_retained);
	/* Closed at its last release, not kept. */
	CHECK_EQ(closed + 1, atomic_load(&creg.closed));
	munmap(p, 16 * page);
}

/* ---- VMA count ----------------------------------------------------------- */

static long
vma_count(void)
{
	char buf[4096];
	long lines = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return lines;
}

/* Watching each entry's own pages splits a VMA per entry: 100 000 entries
 * would pass vm.max_map_count (65530) and make mmap fail process-wide. */
static void
test_vma_count_stays_bounded_with_100000_entries(void)
{
	const size_t n = 100000;
	struct fi_mrlease_stats st;
	long before, after;
	char *p;

	NEED_MONITOR();
	p = mmap(NULL, 2 * n * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(p != MAP_FAILED);
	before = vma_count();
	for (size_t i = 0; i < n; i++)
		CHECK(touch(p + 2 * i * page, page) != NULL);
	after = vma_count();
	stats(&st);
	CHECK(st.entries >= n);
	printf("# %zu entries every other page: %ld VMAs before, %ld after\n",
	       n, before, after);
	CHECK(after - before < 64);
	munmap(p, 2 * n * page);
	settle(p);
	stats(&st);
	CHECK(st.entries < n);
	mrl_cache_close_deferred(cache);
}

/* Watching part of a mapping must not split it: the application's mremap of
 * the whole mapping would then fail with EFAULT (a range spanning VMAs). */
static void
test_watching_an_entry_leaves_its_mapping_whole(void)
{
	size_t len = 64ul << 20;
	long before, after;
	char *p, *q;

	NEED_MONITOR();
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(p != MAP_FAILED);
	before = vma_count();
	CHECK(touch(p + len / 2, page) != NULL);
	CHECK(cached(p + len / 2, page));
	after = vma_count();
	q = mremap(p, len, 2 * len, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		munmap(p, len);
		mrlt_fail(__FILE__, __LINE__, "mremap of the whole mapping: %s",
			  strerror(errno));
		return;
	}
	CHECK(!cached(p + len / 2, page));
	munmap(q, 2 * len);
	CHECK(after <= before);
	mrl_cache_close_deferred(cache);
}

/* ---- no window ----------------------------------------------------------- */

/* The monitor task only reads and records: the range a munmap that has
 * returned took away is still to apply, the barrier holds every lookup back
 * until it is, and the next lookup applies it (fabtests' fi_unmap_mem loop:
 * a lookup of the new mapping must not find the old registration). */
static void
test_the_next_lookup_applies_an_unmapped_range(void)
{
	struct mrl_registration *reg;
	uint64_t waits;
	void *old;
	char *p;

	NEED_MONITOR();
	p = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL);
	reg = touch(p, 4 * page);
	CHECK(reg != NULL);
	old = reg ? mrl_registration_mr(reg) : NULL;
	waits = mrl_cache_barrier_waits();
	munmap(p, 4 * page);
	/* Read by the task, applied by nobody yet. */
	CHECK(atomic_load(&mrl_cache_barrier) != 0);
	CHECK(!mrl_cache_acquire(dom, (uintptr_t) p, (uintptr_t) p + 4 * page,
				 &reg));
	CHECK(mrl_registration_mr(reg) != old);
	mrl_cache_lease_release(reg);
	CHECK_EQ(0u, atomic_load(&mrl_cache_barrier));
	CHECK(mrl_cache_barrier_waits() > waits);
	mrl_cache_close_deferred(cache);
}

struct window {
	char *p, *other;
	size_t len;
	void *old, *got; /* registrar handles (never reused) */
	atomic_int primed, go, done;
};

/* The hot slot of this thread names the entry: the inline hit path would
 * lease it without a lookup if it ignored the barrier. */
static void *
window_reader(void *arg)
{
	struct window *w = arg;

	struct mrl_registration *reg;

	reg = touch(w->p, w->len);
	w->old = reg ? mrl_registration_mr(reg) : NULL;
	atomic_store(&w->primed, 1);
	wait_for(&w->go, 1);
	if (!mrl_cache_acquire(dom, (uintptr_t) w->p, (uintptr_t) w->p + w->len,
			       &reg)) {
		w->got = mrl_registration_mr(reg);
		mrl_cache_lease_release(reg);
	}
	atomic_store(&w->done, 1);
	return NULL;
}

/* A lookup elsewhere, which drains the monitor's events and stops at the
 * gate inside their invalidation. */
static void *
window_drainer(void *arg)
{
	struct window *w = arg;

	(void) cached(w->other, page);
	return NULL;
}

/* While one thread is applying a range another thread's munmap took away,
 * every other lookup waits for it: a lookup between the task's read and the
 * invalidation would hand out a registration of pages that are gone. */
static void
test_no_lookup_sees_a_range_once_munmap_returned(void)
{
	struct window w = {.len = 4 * page};
	pthread_t reader, drainer;
	uint64_t waits;
	int done_early;
	bool held;

	NEED_MONITOR();
	w.p = map(w.len, MAP_PRIVATE | MAP_ANONYMOUS);
	w.other = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(w.p != NULL && w.other != NULL);
	CHECK_EQ(0, pthread_create(&reader, NULL, window_reader, &w));
	CHECK(wait_for(&w.primed, 1));
	CHECK(w.old != NULL);
	/* The drain will stop between taking the range and invalidating. */
	atomic_store(&gate_closed, 1);
	munmap(w.p, w.len);
	if (pthread_create(&drainer, NULL, window_drainer, &w)) {
		atomic_store(&gate_closed, 0);
		CHECK(!"pthread_create");
	}
	/* munmap returned: the event was read, its range not invalidated. */
	held = wait_for(&gate_waiting, 1);
	waits = mrl_cache_barrier_waits();
	atomic_store(&w.go, 1);
	/* The reader is held by the barrier, not by luck. */
	while (held && mrl_cache_barrier_waits() == waits &&
	       !atomic_load(&w.done))
		sched_yield();
	done_early = atomic_load(&w.done);
	atomic_store(&gate_closed, 0);
	pthread_join(drainer, NULL);
	pthread_join(reader, NULL);
	CHECK(held);
	CHECK_EQ(0, done_early);
	CHECK(w.got != w.old);
	munmap(w.other, page);
	mrl_cache_close_deferred(cache);
}

/* Map and cache `count` pages (p may be NULL: none), each an entry of its
 * own: unmapped with no lookup in between, they are more events than the
 * monitor's ring holds. How many were mapped. */
static int
map_cached_pages(char **p, int count)
{
	int n = 0;

	for (; p && n < count; n++) {
		p[n] = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
		if (!p[n] || !touch(p[n], page))
			break;
	}
	return n;
}

/* The task records ranges in a fixed ring and waits for nobody: when no
 * lookup drains it for long, a batch without room is recorded as an
 * overflow, and the next lookup drops every cached entry (more than the
 * ranges unmapped, never less): nothing unmapped is ever found again. */
static void
test_a_full_ring_drops_everything_at_the_next_lookup(void)
{
	enum { PAGES = 2048 };
	char **p = calloc(PAGES, sizeof(*p));
	uint64_t events;
	char *kept;
	int n;

	NEED_MONITOR();
	CHECK(p != NULL);
	kept = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(kept != NULL && touch(kept, page) && cached(kept, page));
	n = map_cached_pages(p, PAGES);
	CHECK_EQ(PAGES, n);
	events = mrl_monitor_events();
	saw_all = false;
	/* No lookup in between: every event waits in the ring. */
	for (int i = 0; i < n; i++)
		munmap(p[i], page);
	CHECK(atomic_load(&mrl_cache_barrier) > 1);
	/* The lookup applies them all, the overflow dropping the rest. */
	CHECK(!cached(kept, page));
	CHECK(saw_all); /* said as "everything", not as a range unmapped */
	CHECK_EQ(0u, atomic_load(&mrl_cache_barrier));
	CHECK(mrl_monitor_events() >= events + PAGES);
	for (int i = 0; i < n; i++)
		CHECK(!cached(p[i], page));
	munmap(kept, page);
	free(p);
	mrl_cache_close_deferred(cache);
}

/* ---- deadlock rules ------------------------------------------------------ */

static char *scratch; /* a watched page the hooks unmap */

static void
unmap_scratch(void)
{
	munmap(scratch, page);
}

static bool
watched_scratch(void)
{
	scratch = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
	return scratch && touch(scratch, page) && cached(scratch, page);
}

/* A provider's fi_close may free memory inside a watched range, and the
 * monitor's invalidation runs inside a lookup on the data path: it retires,
 * and the close waits for the next drain of the deferred list. */
static void
test_the_monitor_never_closes_a_registration(void)
{
	struct fi_mrlease_stats before, after;
	struct mrl_registration *reg;
	char *p;

	NEED_MONITOR();
	CHECK(watched_scratch());
	p = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL);
	reg = touch(p, 4 * page);
	CHECK(reg != NULL);
	close_hook_mr = mrl_registration_mr(reg);
	close_hook = unmap_scratch;
	atomic_store(&close_hook_tid, 0);
	stats(&before);
	munmap(p, 4 * page);
	settle(p);
	stats(&after);
	/* Retired by the monitor, closed by nobody yet. */
	CHECK_EQ(before.deferred_closes + 1, after.deferred_closes);
	CHECK_EQ(0, atomic_load(&close_hook_tid));
	mrl_cache_close_deferred(cache);
	CHECK_EQ((int) syscall(SYS_gettid), atomic_load(&close_hook_tid));
	CHECK(atomic_load(&close_hook_tid) != mrl_monitor_tid());
	CHECK(!cached(scratch, page));
	close_hook = NULL;
	close_hook_mr = NULL;
}

struct miss_arg {
	char *p;
	bool span; /* resolve the miss's span through unmapping_span */
	atomic_int done;
};

static int
unmapping_span(void *arg, const void *addr, size_t len, void **base,
	       size_t *slen)
{
	(void) arg;
	unmap_scratch();
	*base = (void *) addr;
	*slen = len;
	return 0;
}

static void *
miss_thread(void *arg)
{
	struct miss_arg *m = arg;

	if (m->span)
		mrl_cache_set_span(dom, unmapping_span, NULL);
	touch(m->p, page);
	if (m->span)
		mrl_cache_set_span(dom, NULL, NULL);
	atomic_store(&m->done, 1);
	return NULL;
}

/* A miss on another thread that unmaps the watched scratch page from inside
 * the cache (the registrar's reg, or the span resolver): it must return, and
 * the monitor must have retired the scratch entry. */
static void
miss_unmapping_scratch(bool span)
{
	struct miss_arg m = {.span = span};
	pthread_t t;

	NEED_MONITOR();
	CHECK(watched_scratch());
	m.p = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(m.p != NULL);
	if (!span)
		reg_hook = unmap_scratch;
	CHECK_EQ(0, pthread_create(&t, NULL, miss_thread, &m));
	if (!wait_for(&m.done, 1)) {
		mrlt_fail(__FILE__, __LINE__, "the miss never returned");
		return; /* leave the thread: it is stuck */
	}
	pthread_join(t, NULL);
	CHECK(!cached(scratch, page));
	CHECK(cached(m.p, page));
	munmap(m.p, page);
	mrl_cache_close_deferred(cache);
}

/* A miss in progress (a provider's reg freeing memory) may block in munmap
 * until the monitor reads; the monitor's invalidation must not wait for a
 * lock that miss holds. */
static void
test_a_miss_unmapping_memory_does_not_deadlock(void)
{
	miss_unmapping_scratch(false);
}

/* An application's span resolver (its allocator's extent lookup) may purge
 * memory: called under the cache's lock, its munmap would wait for a
 * monitor waiting for that lock. */
static void
test_a_span_resolver_unmapping_memory_does_not_deadlock(void)
{
	miss_unmapping_scratch(true);
}

/* ---- the monitor allocates nothing --------------------------------------- */

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define MRL_COUNT_MALLOC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static atomic_long monitor_allocs;

void *
malloc(size_t n)
{
	if (on_monitor)
		atomic_fetch_add(&monitor_allocs, 1);
	return __libc_malloc(n);
}

void *
calloc(size_t n, size_t m)
{
	if (on_monitor)
		atomic_fetch_add(&monitor_allocs, 1);
	return __libc_calloc(n, m);
}

void *
realloc(void *p, size_t n)
{
	if (on_monitor)
		atomic_fetch_add(&monitor_allocs, 1);
	return __libc_realloc(p, n);
}

void *
aligned_alloc(size_t a, size_t n)
{
	if (on_monitor)
		atomic_fetch_add(&monitor_allocs, 1);
	return __libc_memalign(a, n);
}
#endif

/* The monitor's invalidation runs inside a lookup, which may be inside an
 * allocator's hook or a miss: it allocates nothing. */
static void
test_monitor_invalidation_allocates_nothing(void)
{
#ifdef MRL_COUNT_MALLOC
	struct fi_mrlease_stats before, after;
	long allocs = atomic_load(&monitor_allocs);
	char *p;

	NEED_MONITOR();
	stats(&before);
	for (int i = 0; i < 200; i++) {
		p = map(8 * page, MAP_PRIVATE | MAP_ANONYMOUS);
		CHECK(p != NULL);
		CHECK(touch(p + (size_t) (i % 8) * page, page) != NULL);
		munmap(p, 8 * page);
	}
	settle(p);
	stats(&after);
	CHECK(after.monitor_invalidations >=
	      before.monitor_invalidations + 200);
	CHECK_EQ(allocs, atomic_load(&monitor_allocs));
	mrl_cache_close_deferred(cache);
#else
	mrlt_skip_current("malloc cannot be counted under a sanitizer");
#endif
}

/* ---- the task ------------------------------------------------------------ */

/* Entries of a /proc directory, or -1. */
static int
count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A line of /proc/self/task/TID/FILE starting with `key`, into buf. */
static bool
task_line(int tid, const char *file, const char *key, char *buf, size_t len)
{
	char path[64];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, file);
	f = fopen(path, "r");
	while (f && !found && fgets(buf, (int) len, f))
		found = !strncmp(buf, key, strlen(key));
	if (f)
		fclose(f);
	return found;
}

/* Whether thread tid has every signal blocked that a pthread can block:
 * all but SIGKILL, SIGSTOP and glibc's own two (SIGCANCEL, SIGSETXID),
 * which glibc keeps deliverable so that set*id() reaches every thread. */
static bool
task_blocks_every_signal(int tid)
{
	unsigned long long blk, free_ = (1ULL << (SIGKILL - 1)) |
					(1ULL << (SIGSTOP - 1)) |
					(1ULL << 31) | (1ULL << 32);
	char line[128];

	if (!task_line(tid, "status", "SigBlk:", line, sizeof(line)))
		return false;
	blk = strtoull(line + 7, NULL, 16);
	return (blk | free_) == ~0ULL;
}

/* An operator looking at a rank (top -H, gdb, /proc) must see what the
 * extra thread is, and a signal handled on it would run the application's
 * handler on a thread that must never block: one named pthread, every
 * signal blocked. */
static void
test_the_monitor_task_is_a_named_pthread_blocking_every_signal(void)
{
	char comm[32];

	NEED_MONITOR();
	CHECK(mrl_monitor_tid() > 0);
	CHECK(mrl_monitor_tid() != (int) syscall(SYS_gettid));
	CHECK(task_line(mrl_monitor_tid(), "comm", "", comm, sizeof(comm)));
	CHECK_MSG(!strcmp("mrl-monitor\n", comm), "task named %s", comm);
	CHECK(task_blocks_every_signal(mrl_monitor_tid()));
}

/* fn(arg) in a forked child: its exit status; -1 when it could not be
 * forked, did not exit, or hung past `seconds` (mrlt_wait_child kills it
 * and says where it was). */
static int
child_exit_status_within(int (*fn)(int), int arg, double seconds)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	if (pid < 0)
		return -1;
	status = mrlt_wait_child(pid, seconds);
	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int
child_exit_status(int (*fn)(int), int arg)
{
	return child_exit_status_within(fn, arg, 60);
}

#define SKIP_IN_TSAN_CHILD()                                                 \
	do {                                                                 \
		if (MRLT_TSAN) {                                             \
			mrlt_skip_current("ThreadSanitizer starts no thread " \
					  "in the child of a multi-threaded "  \
					  "process");                          \
			return;                                              \
		}                                                            \
	} while (0)

#if defined(__SANITIZE_THREAD__)
#define MRLT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MRLT_TSAN 1
#endif
#endif
#ifndef MRLT_TSAN
#define MRLT_TSAN 0
#endif

/* In a child (which has no monitor, and must not use the parent's cache):
 * a cache and domain of its own over the watching registrar. */
static struct creg child_creg;

static int
child_fresh_cache(void)
{
	struct mrl_domain_config dc;

	creg_init(&child_creg, NULL, 0);
	if (mrl_cache_create(NULL, &cache))
		return -1;
	dc = creg_domain_config(&child_creg);
	dc.registrar = &watch_registrar;
	return mrl_cache_domain_open(cache, &dc, &dom);
}

/* Descriptors of the process whose link names `what` (anon_inode:[...]). */
static int
count_fds_of(const char *what)
{
	DIR *d = opendir("/proc/self/fd");
	char path[300], link[128];
	struct dirent *e;
	ssize_t n;
	int count = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		count += strstr(link, what) != NULL;
	}
	closedir(d);
	return count;
}

/* ---- stop, restart --------------------------------------------------------
 */

/* In a child: an entry kept because it was watched, a stop, then the same
 * address mapped again. 0: nothing stale, descriptors back, a restart
 * works; else the step that failed. */
static int
stop_restart_child(int unused)
{
	int fds = count_entries("/proc/self/fd");
	char *p, *q;
	void *old;

	(void) unused;
	if (child_fresh_cache() || mrl_monitor_start(NULL, &client))
		return 10;
	p = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	if (!p || !touch(p, 4 * page) || !cached(p, 4 * page))
		return 11;
	old = mrl_registration_mr(touch(p, 4 * page));
	if (count_entries("/proc/self/fd") <= fds)
		return 12;
	mrl_monitor_stop();
	/* Kept only because it was watched: gone with the watch. */
	if (cached(p, 4 * page))
		return 1;
	/* Every descriptor the monitor opened is closed. */
	if (count_entries("/proc/self/fd") != fds ||
	    count_fds_of("[userfaultfd]") != 0)
		return 2;
	if (mrl_monitor_running() || mrl_monitor_watch((uintptr_t) p,
						       (uintptr_t) p + page))
		return 3;
	/* The same address mapped again gets a new registration. */
	munmap(p, 4 * page);
	q = mmap(p, 4 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (q != p)
		return 13;
	if (mrl_registration_mr(touch(p, 4 * page)) == old)
		return 4;
	/* A later start works as the first. */
	if (mrl_monitor_start(NULL, &client) || !mrl_monitor_running() ||
	    mrl_monitor_tid() <= 0)
		return 5;
	q = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	if (!q || !touch(q, 4 * page) || !cached(q, 4 * page))
		return 6;
	munmap(q, 4 * page);
	if (cached(q, 4 * page))
		return 7;
	mrl_monitor_stop();
	return count_entries("/proc/self/fd") == fds ? 0 : 8;
}

/* After provider cleanup a thread may still post on a domain it never
 * closed: an entry kept only because the monitor watched it would outlive
 * its pages on verbs or efa. A stop drops everything watched and closes
 * its descriptors, and a new initialisation gets a working monitor. */
static void
test_a_stop_drops_what_was_watched_and_a_restart_watches_again(void)
{
	NEED_MONITOR();
	SKIP_IN_TSAN_CHILD();
	CHECK_EQ(0, child_exit_status(stop_restart_child, 0));
}

/* Watch every private writable mapping of the process: the monitor's own
 * stack and its thread's runtime memory among them. */
static void
watch_everything(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512], perms[5];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
		    !strcmp(perms, "rw-p"))
			(void) mrl_monitor_watch(lo, hi);
	if (f)
		fclose(f);
}

/* In a child: start a monitor, watch everything, stop it. */
static int
stop_child(int unused)
{
	(void) unused;
	if (child_fresh_cache() || mrl_monitor_start(NULL, &client))
		return 4;
	watch_everything();
	mrl_monitor_stop();
	return 0;
}

/* A thread's teardown may unmap memory (glibc advises its stack away, a
 * sanitizer frees its thread state): inside a watched mapping it would wait
 * for a monitor that no longer reads. The task releases every watch before
 * it leaves. */
static void
test_stopping_the_monitor_never_waits_for_it(void)
{
	NEED_MONITOR();
	SKIP_IN_TSAN_CHILD();
	CHECK_EQ(0, child_exit_status(stop_child, 0));
}

/* ---- failure ------------------------------------------------------------- */

/* Every thread of the process from now on: poll, ppoll and read fail with
 * EPERM (what a sandbox's seccomp policy does to a library's thread). */
static int
deny_poll_and_read(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_poll, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ppoll, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_read, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			     SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

/* In a child: watched entries, then a task that can no longer poll or
 * read. 0: every munmap returned, the task left, nothing stale, nothing
 * watched any more; else the step that failed. */
static int
failure_child(int unused)
{
	char *p[4], path[64];
	void *old[4];
	int tid;

	(void) unused;
	if (child_fresh_cache() || mrl_monitor_start(NULL, &client))
		return 10;
	for (int i = 0; i < 4; i++) {
		p[i] = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
		if (!p[i] || !touch(p[i], 4 * page))
			return 11;
		old[i] = mrl_registration_mr(touch(p[i], 4 * page));
	}
	tid = mrl_monitor_tid();
	if (deny_poll_and_read())
		return 12;
	/* Each waits for the task to read its event; the first makes the
	 * task fail, which must release it and every later one. */
	for (int i = 0; i < 4; i++)
		munmap(p[i], 4 * page);
	/* The task left instead of retrying (the parent bounds the wait). */
	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	while (access(path, F_OK) == 0)
		sched_yield();
	for (int i = 0; i < 4; i++) {
		if (mmap(p[i], 4 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) != p[i])
			return 13;
		if (mrl_registration_mr(touch(p[i], 4 * page)) == old[i])
			return 1; /* a stale entry served */
	}
	if (mrl_monitor_running() || mrl_monitor_watch((uintptr_t) p[0],
						       (uintptr_t) p[0] + page))
		return 2;
	/* Kept only while leased now: a later munmap costs nothing. */
	if (cached(p[0], 4 * page))
		return 3;
	if (mrl_monitor_start(NULL, &client) != -FI_ENOSYS)
		return 4; /* no restart */
	mrl_monitor_stop();
	if (mrl_monitor_start(NULL, &client) != -FI_ENOSYS)
		return 5; /* not after a stop either: the filter stays */
	return 0;
}

/* A sandbox that denies the monitor's poll made its retry loop spin on a
 * CPU, and the next munmap in a watched range never returned. Now the task
 * does what a stop does and leaves: every unmapper goes on, and nothing is
 * retained or watched any more. */
static void
test_a_failed_task_releases_every_unmapper_and_leaves(void)
{
	NEED_MONITOR();
	SKIP_IN_TSAN_CHILD();
	CHECK_EQ(0, child_exit_status_within(failure_child, 0, 5));
}

/* ---- fork ---------------------------------------------------------------- */

static atomic_int cycling;

static void *
start_stop_loop(void *arg)
{
	(void) arg;
	while (atomic_load(&cycling)) {
		(void) mrl_monitor_start(NULL, &client);
		mrl_monitor_stop();
	}
	return NULL;
}

/* In a grandchild: any monitor descriptor left is a leak (the fork handler
 * closed every one it knew). */
static int
no_inherited_descriptor(int unused)
{
	(void) unused;
	return count_fds_of("[userfaultfd]") || count_fds_of("[eventfd]") ||
			       count_fds_of("[timerfd]") ?
		       1 :
		       0;
}

/* In a child: forks while another thread starts and stops the monitor. */
static int
fork_race_child(int unused)
{
	pthread_t t;
	int bad = 0;

	(void) unused;
	if (child_fresh_cache())
		return 10;
	atomic_store(&cycling, 1);
	if (pthread_create(&t, NULL, start_stop_loop, NULL))
		return 11;
	for (int i = 0; i < 300 && !bad; i++)
		bad = child_exit_status(no_inherited_descriptor, 0) != 0;
	atomic_store(&cycling, 0);
	pthread_join(t, NULL);
	return bad;
}

/* A fork between the userfaultfd's creation and its recording left the
 * child holding it unknown (it then kept the parent's unmappers waiting
 * for nothing after the parent's monitor stopped): every descriptor is
 * created and recorded under a lock fork takes. */
static void
test_a_fork_never_inherits_a_monitor_descriptor(void)
{
	NEED_MONITOR();
	SKIP_IN_TSAN_CHILD();
	CHECK_EQ(0, child_exit_status(fork_race_child, 0));
}

/* ---- releasing watches --------------------------------------------------- */

/* Whether the mapping holding p is registered with a userfaultfd in
 * write-protect mode (VmFlags "uw" in /proc/self/smaps); -1: not found. */
static int
vma_watched(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	uintptr_t a = (uintptr_t) p;
	unsigned long lo, hi;
	bool in = false;
	char line[512];
	int ret = -1;

	while (f && ret < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = lo <= a && a < hi;
		else if (in && !strncmp(line, "VmFlags:", 8))
			ret = strstr(line, " uw") != NULL;
	}
	if (f)
		fclose(f);
	return ret;
}

/* Every munmap or madvise in a watched mapping waits for the monitor: a
 * mapping whose cached entries are all gone must stop paying that, while
 * one entry left keeps it watched. */
static void
test_a_watch_is_released_when_its_last_entry_closes(void)
{
	size_t watched;
	uint64_t events;
	char *p, *other;

	NEED_MONITOR();
	/* Two mappings, kept apart by a page of another protection. */
	p = map(17 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL);
	CHECK_EQ(0, mprotect(p + 8 * page, page, PROT_NONE));
	other = p + 9 * page;
	CHECK(touch(p, page) && touch(p + 4 * page, page));
	CHECK(touch(other, page) && cached(other, page));
	CHECK_EQ(1, vma_watched(p));
	watched = mrl_monitor_watched();
	CHECK_EQ(0, mrl_cache_invalidate(cache, (uintptr_t) p,
					 (uintptr_t) p + page));
	CHECK_EQ(1, vma_watched(p)); /* one entry left in it */
	CHECK_EQ(0, mrl_cache_invalidate(cache, (uintptr_t) p + 4 * page,
					 (uintptr_t) p + 5 * page));
	CHECK_EQ(0, vma_watched(p));
	CHECK_EQ(1, vma_watched(other));
	CHECK_EQ(watched - 1, mrl_monitor_watched());
	events = mrl_monitor_events();
	munmap(p, 9 * page);
	CHECK_EQ(events, mrl_monitor_events());
	munmap(other, 8 * page);
	settle(other);
	mrl_cache_close_deferred(cache);
}

/* The kernel drops a mapping's registration with the mapping: a new one
 * at the same addresses is not watched until registered itself, even while
 * an entry of the old one is still leased (its transfer in flight), or its
 * entry would stay cached with nothing watching it. */
static void
test_a_new_mapping_at_an_unmapped_ones_address_is_watched_again(void)
{
	struct mrl_registration *old;
	char *p, *q;

	NEED_MONITOR();
	p = map(8 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL);
	CHECK_EQ(0, mrl_cache_acquire(dom, (uintptr_t) p,
				      (uintptr_t) p + page, &old));
	CHECK_EQ(1, vma_watched(p));
	munmap(p, 8 * page);
	q = mmap(p, 8 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == p);
	CHECK(touch(q + 4 * page, page) && cached(q + 4 * page, page));
	CHECK(!cached(q, page)); /* the old entry left the index */
	CHECK_EQ(1, vma_watched(q));
	mrl_cache_lease_release(old);
	CHECK_EQ(1, vma_watched(q)); /* the new entry keeps it */
	munmap(q, 8 * page);
	settle(q);
	mrl_cache_close_deferred(cache);
}

/* An unmap read in a batch the ring had no room for is applied as
 * "everything", which drops every entry but says nothing about which
 * mappings went: the watch table must not go on naming the one that did,
 * or a new mapping at its address is taken as watched, its entry is kept,
 * and its own munmap, with no registration to report it, leaves that entry
 * for the next mapping there (a stale registration). */
static void
test_a_new_mapping_where_an_overflow_hid_an_unmap_is_watched(void)
{
	enum { PAGES = 2048 };
	char **p = calloc(PAGES, sizeof(*p));
	uint64_t events;
	struct mrl_registration *held = NULL;
	char *guard, *gone, *q;
	int n;

	NEED_MONITOR();
	CHECK(p != NULL);
	n = map_cached_pages(p, PAGES);
	CHECK_EQ(PAGES, n);
	/* A mapping of its own, between guard pages: its watch is one range
	 * of the table, whatever the cuts above do to the others. */
	guard = map(3 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(guard && !mprotect(guard, page, PROT_NONE) &&
	      !mprotect(guard + 2 * page, page, PROT_NONE));
	gone = guard + page;
	/* A lease in flight across the unmap keeps the old entry's close,
	 * and so any release of its watch, until after the remap. */
	CHECK(guard && !mrl_cache_acquire(dom, (uintptr_t) gone,
					  (uintptr_t) gone + page, &held));
	CHECK_EQ(1, vma_watched(gone));
	saw_all = false;
	/* No lookup in between: the last events find the ring full. */
	for (int i = 0; i < n; i++)
		munmap(p[i], page);
	munmap(gone, page);
	CHECK(atomic_load(&mrl_cache_barrier) > 1);
	q = mmap(gone, page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == gone);
	if (q != gone) {
		mrl_cache_lease_release(held);
		goto out;
	}
	memset(q, 0x5a, page);
	CHECK(touch(q, page)); /* applies the overflow, then misses */
	CHECK(saw_all); /* the premise: the unmap was in the overflow */
	mrl_cache_lease_release(held);
	CHECK_EQ(1, vma_watched(q));
	events = mrl_monitor_events();
	munmap(q, page);
	settle(q); /* the task counts an event after munmap returned */
	CHECK(mrl_monitor_events() > events); /* the new mapping's unmap */
	CHECK(!cached(q, page));
out:
	munmap(guard, 3 * page);
	free(p);
	mrl_cache_close_deferred(cache);
}

/* An allocator returns the pages of one buffer and keeps the rest of its
 * mapping: once that buffer's entry is gone, the rest holds nothing, and
 * must not stay watched (its later purges would each wait for the
 * monitor), though the closed registration no longer overlaps it. */
static void
test_what_is_left_of_a_partly_unmapped_mapping_is_released(void)
{
	uint64_t events;
	char *p;

	NEED_MONITOR();
	p = map(8 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL);
	CHECK(touch(p, page) && cached(p, page));
	CHECK_EQ(1, vma_watched(p + 4 * page));
	munmap(p, page);
	settle(p + page); /* applies the event */
	CHECK(!cached(p, page));
	CHECK_EQ(0, vma_watched(p + 4 * page));
	events = mrl_monitor_events();
	CHECK_EQ(0, madvise(p + 4 * page, page, MADV_DONTNEED));
	munmap(p + page, 7 * page);
	CHECK_EQ(events, mrl_monitor_events());
	mrl_cache_close_deferred(cache);
}

struct release_race {
	char *p; /* one mapping, two threads' entries in it */
	atomic_int go, stop;
	int unwatched; /* times an entry was cached in an unwatched VMA */
};

/* Cache an entry at off, check its mapping is watched, drop it. */
static void *
release_racer(void *arg)
{
	struct release_race *r = arg;
	char *at = r->p;

	while (!atomic_load(&r->go))
		sched_yield();
	for (int i = 0; i < 300 && !atomic_load(&r->stop); i++) {
		if (touch(at, page) && cached(at, page) && vma_watched(at) != 1)
			r->unwatched++;
		mrl_cache_invalidate(cache, (uintptr_t) at,
				     (uintptr_t) at + page);
	}
	return NULL;
}

/* One thread's last entry closing while another thread's miss watches the
 * same mapping: the release must see that miss (or its entry) and keep
 * the watch, or an entry stays cached in a mapping nobody watches. */
static void
test_a_release_never_drops_a_watch_a_new_entry_needs(void)
{
	struct release_race r = {0};
	pthread_t t;
	char *q;

	NEED_MONITOR();
	r.p = map(8 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(r.p != NULL);
	q = r.p + 4 * page;
	CHECK_EQ(0, pthread_create(&t, NULL, release_racer, &r));
	atomic_store(&r.go, 1);
	for (int i = 0; i < 300; i++) {
		if (touch(q, page) && cached(q, page) && vma_watched(q) != 1) {
			mrlt_fail(__FILE__, __LINE__,
				  "an entry cached in an unwatched mapping");
			break;
		}
		mrl_cache_invalidate(cache, (uintptr_t) q,
				     (uintptr_t) q + page);
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	CHECK_EQ(0, r.unwatched);
	munmap(r.p, 8 * page);
	settle(r.p);
	mrl_cache_close_deferred(cache);
}

/* ---- closing what the monitor dropped ------------------------------------ */

/* Until f() or the deadline (seconds): for events other threads cause. */
static bool
within(double seconds, bool (*f)(void *), void *arg)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (f(arg))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double) (t.tv_sec - t0.tv_sec) +
			    (double) (t.tv_nsec - t0.tv_nsec) / 1e9 >
		    seconds)
			return false;
		sched_yield();
	}
}

static bool
barrier_down(void *arg)
{
	(void) arg;
	return atomic_load(&mrl_cache_barrier) == 0;
}

/* The monitor's invalidation retires entries of every domain on whichever
 * thread applies it; closing another domain's registration there would
 * call its provider from a thread its threading model may forbid. A
 * domain's dropped registrations close at its own next call only. */
static void
test_a_domain_closes_only_its_own_dropped_registrations(void)
{
	struct mrl_registration *reg = NULL;
	struct mrl_cache_domain *dom2;
	struct mrl_domain_config dc;
	struct creg creg2;
	long closed, closed2;
	char *p, *q;

	NEED_MONITOR();
	creg_init(&creg2, NULL, 0);
	dc = creg_domain_config(&creg2);
	dc.registrar = &watch_registrar;
	CHECK_EQ(0, mrl_cache_domain_open(cache, &dc, &dom2));
	p = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	q = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL && q != NULL && touch(p, 4 * page));
	CHECK_EQ(0, mrl_cache_acquire(dom2, (uintptr_t) q,
				      (uintptr_t) q + 4 * page, &reg));
	if (reg)
		mrl_cache_lease_release(reg);
	closed = atomic_load(&creg.closed);
	closed2 = atomic_load(&creg2.closed);
	munmap(p, 4 * page);
	munmap(q, 4 * page);
	/* Applied here, in dom's call: only dom's registration closes. */
	mrl_cache_domain_settle(dom);
	CHECK(barrier_down(NULL));
	CHECK_EQ(closed + 1, atomic_load(&creg.closed));
	CHECK_EQ(closed2, atomic_load(&creg2.closed));
	mrl_cache_domain_settle(dom2);
	CHECK_EQ(closed2 + 1, atomic_load(&creg2.closed));
	mrl_cache_domain_close(dom2);
}

static void
nothing(void)
{
}

static bool
closed_once_more(void *arg)
{
	long *want = arg;

	return atomic_load(&creg.closed) >= *want;
}

/* A program that frees a large buffer and then computes made no call that
 * closed its registration: on verbs the pages stayed pinned. On a domain
 * any thread may call (FI_THREAD_SAFE), the closer closes it with no call
 * from the application, on its own thread; others wait for their call. */
/* A free-threaded domain (*ft) with one cached registration over a fresh
 * mapping of 16 pages, whose close records its thread (close_hook_tid):
 * returns the mapping, or NULL (with ft open or not) on failure; *want is
 * the registrar's closed count once that registration closes. */
static char *
cached_on_a_free_threaded_domain(struct mrl_cache_domain **ft, long *want)
{
	struct mrl_domain_config dc = creg_domain_config(&creg);
	struct mrl_registration *reg;
	char *p;

	dc.registrar = &watch_registrar;
	dc.free_threaded = true;
	*ft = NULL;
	if (mrl_cache_domain_open(cache, &dc, ft))
		return NULL;
	p = map(16 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	if (!p || mrl_cache_acquire(*ft, (uintptr_t) p,
				    (uintptr_t) p + 16 * page, &reg))
		return NULL;
	close_hook_mr = mrl_registration_mr(reg);
	close_hook = nothing;
	atomic_store(&close_hook_tid, 0);
	mrl_cache_lease_release(reg);
	*want = atomic_load(&creg.closed) + 1;
	return p;
}

static void
test_the_closer_releases_a_thread_safe_domains_registration_unasked(void)
{
	struct mrl_cache_domain *ft;
	long want;
	char comm[32], *p, *q;

	NEED_MONITOR();
	CHECK_EQ(0, mrl_monitor_closer_start());
	CHECK(mrl_monitor_closer_tid() > 0);
	CHECK(task_line(mrl_monitor_closer_tid(), "comm", "", comm,
			sizeof(comm)));
	CHECK_MSG(!strcmp("mrl-closer\n", comm), "closer named %s", comm);
	CHECK(task_blocks_every_signal(mrl_monitor_closer_tid()));
	p = cached_on_a_free_threaded_domain(&ft, &want);
	CHECK(p != NULL);
	munmap(p, 16 * page);
	/* No cache call from here on until it closed. */
	CHECK(within(1.0, closed_once_more, &want));
	CHECK_EQ(mrl_monitor_closer_tid(), atomic_load(&close_hook_tid));
	close_hook_mr = NULL;
	close_hook = NULL;
	/* A domain that is not free-threaded still waits for its call. */
	q = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(q != NULL && touch(q, 4 * page));
	want = atomic_load(&creg.closed);
	munmap(q, 4 * page);
	CHECK(within(1.0, barrier_down, NULL));
	CHECK_EQ(want, atomic_load(&creg.closed));
	mrl_cache_domain_settle(dom);
	CHECK_EQ(want + 1, atomic_load(&creg.closed));
	mrl_cache_domain_close(ft);
}

/* The closer is woken only when it has work no call is sure to do: an
 * application thread's lookup that applied an unmap and dropped a thread-safe
 * domain's registration onto the shared list, which no settle takes with
 * the barrier down, is such work. Without that wake-up the registration (and
 * the pages it pins) stays until the next unmap of a thread-safe domain. */
static void
test_a_registration_an_application_drain_dropped_closes_without_a_call(void)
{
	struct mrl_cache_domain *ft;
	long want;
	char *p;

	NEED_MONITOR();
	CHECK_EQ(0, mrl_monitor_closer_start());
	p = cached_on_a_free_threaded_domain(&ft, &want);
	CHECK(p != NULL);
	munmap(p, 16 * page);
	/* A lookup in this thread applies the unmap (the closer's wake-up
	 * is not due yet); then no cache call until it closed. */
	CHECK(mrl_cache_lookup(dom, 0x1000, 0x2000) == NULL);
	CHECK(within(1.0, closed_once_more, &want));
	CHECK_EQ(mrl_monitor_closer_tid(), atomic_load(&close_hook_tid));
	close_hook_mr = NULL;
	close_hook = NULL;
	mrl_cache_domain_close(ft);
}

static bool
closer_called(void *arg)
{
	long *want = arg;

	return atomic_load(&client_close_calls) >= *want;
}

/* An idle remote key must close after its delay with no application call:
 * the closer calls again when the delay its client asked for has passed,
 * and at once when the client wakes it. */
static void
test_the_closer_calls_again_after_the_delay_its_client_asks_for(void)
{
	long want;

	NEED_MONITOR();
	CHECK_EQ(0, mrl_monitor_closer_start());
	want = atomic_load(&client_close_calls) + 1;
	mrl_monitor_closer_wake();
	CHECK(within(1.0, closer_called, &want));
	/* No event, no wake: only the delay brings it back, again and
	 * again. */
	atomic_store(&client_close_again, 1);
	mrl_monitor_closer_wake();
	want = atomic_load(&client_close_calls) + 5;
	CHECK(within(2.0, closer_called, &want));
	atomic_store(&client_close_again, -1);
	want = atomic_load(&client_close_calls) + 1;
	mrl_monitor_closer_wake();
	CHECK(within(1.0, closer_called, &want));
}

/* ---- policy -------------------------------------------------------------- */

/* An application calling invalidate before it unmaps (an allocator hook)
 * loses nothing with the monitor on: one close, no double close. */
static void
test_explicit_invalidate_composes_with_the_monitor(void)
{
	struct fi_mrlease_stats before, after;
	long closed, doubles;
	char *p;

	NEED_MONITOR();
	p = map(4 * page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != NULL);
	CHECK(touch(p, 4 * page) != NULL);
	closed = atomic_load(&creg.closed);
	doubles = atomic_load(&creg.double_closed);
	CHECK_EQ(0, mrl_cache_invalidate(cache, (uintptr_t) p,
					 (uintptr_t) p + 4 * page));
	CHECK_EQ(closed + 1, atomic_load(&creg.closed));
	stats(&before);
	munmap(p, 4 * page);
	settle(p);
	stats(&after);
	CHECK_EQ(before.monitor_invalidations, after.monitor_invalidations);
	CHECK_EQ(before.deferred_closes, after.deferred_closes);
	CHECK_EQ(closed + 1, atomic_load(&creg.closed));
	CHECK_EQ(doubles, atomic_load(&creg.double_closed));
}

/* verbs;ofi_rxm pins, tcp;ofi_rxm does not: the core provider decides, and
 * a provider nobody listed is taken to pin (the safe side). */
static void
test_pinning_is_decided_by_the_core_provider(void)
{
	CHECK(mrl_bind_provider_pins("verbs;ofi_rxm"));
	CHECK(mrl_bind_provider_pins("efa"));
	CHECK(mrl_bind_provider_pins("some_new_nic"));
	CHECK(!mrl_bind_provider_pins("tcp;ofi_rxm"));
	CHECK(!mrl_bind_provider_pins("tcp"));
	CHECK(!mrl_bind_provider_pins("udp;ofi_rxd"));
	CHECK(!mrl_bind_provider_pins("shm"));
	CHECK(!mrl_bind_provider_pins("sockets"));
	CHECK(!mrl_bind_provider_pins("net"));
	CHECK(mrl_bind_provider_pins("tcpx"));
}

int
main(int argc, char **argv)
{
	struct mrl_cache_config config = {.max_count = 400000};
	struct mrl_domain_config dc;

	mrlt_select(argc - 1, argv + 1);
	page = (size_t) sysconf(_SC_PAGESIZE);
	creg_init(&creg, NULL, 0);
	if (mrl_cache_create(&config, &cache))
		return 1;
	dc = creg_domain_config(&creg);
	dc.registrar = &watch_registrar;
	if (mrl_cache_domain_open(cache, &dc, &dom))
		return 1;
	mrl_cache_barrier_set_helper(mrl_monitor_drain);
	monitor_ok = mrl_monitor_start(NULL, &client) == 0;

	MRLT_RUN(test_the_monitor_task_is_a_named_pthread_blocking_every_signal);
	MRLT_RUN(test_every_way_pages_leave_is_caught);
	MRLT_RUN(test_sysv_shm_is_not_retained);
	MRLT_RUN(test_file_backed_memory_is_not_retained);
	MRLT_RUN(test_vma_count_stays_bounded_with_100000_entries);
	MRLT_RUN(test_watching_an_entry_leaves_its_mapping_whole);
	MRLT_RUN(test_the_next_lookup_applies_an_unmapped_range);
	MRLT_RUN(test_no_lookup_sees_a_range_once_munmap_returned);
	MRLT_RUN(test_a_full_ring_drops_everything_at_the_next_lookup);
	MRLT_RUN(test_the_monitor_never_closes_a_registration);
	MRLT_RUN(test_a_miss_unmapping_memory_does_not_deadlock);
	MRLT_RUN(test_a_span_resolver_unmapping_memory_does_not_deadlock);
	MRLT_RUN(test_monitor_invalidation_allocates_nothing);
	MRLT_RUN(test_stopping_the_monitor_never_waits_for_it);
	MRLT_RUN(test_a_stop_drops_what_was_watched_and_a_restart_watches_again);
	MRLT_RUN(test_a_failed_task_releases_every_unmapper_and_leaves);
	MRLT_RUN(test_a_fork_never_inherits_a_monitor_descriptor);
	MRLT_RUN(test_a_watch_is_released_when_its_last_entry_closes);
	MRLT_RUN(test_a_new_mapping_at_an_unmapped_ones_address_is_watched_again);
	MRLT_RUN(test_a_new_mapping_where_an_overflow_hid_an_unmap_is_watched);
	MRLT_RUN(test_what_is_left_of_a_partly_unmapped_mapping_is_released);
	MRLT_RUN(test_a_release_never_drops_a_watch_a_new_entry_needs);
	MRLT_RUN(test_a_domain_closes_only_its_own_dropped_registrations);
	MRLT_RUN(
		test_the_closer_calls_again_after_the_delay_its_client_asks_for);
	MRLT_RUN(test_explicit_invalidate_composes_with_the_monitor);
	MRLT_RUN(test_pinning_is_decided_by_the_core_provider);
	/* Last: the closer applies events as they come, which the tests
	 * above look at before anything applies them. */
	MRLT_RUN(
		test_the_closer_releases_a_thread_safe_domains_registration_unasked);
	MRLT_RUN(
		test_a_registration_an_application_drain_dropped_closes_without_a_call);

	mrl_cache_domain_close(dom);
	mrl_monitor_stop();
	mrl_cache_destroy(cache);
	MRLT_RUN(test_every_registration_closed_exactly_once);
	return mrlt_done();
}
