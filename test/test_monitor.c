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
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache_registrar.h"
#include "fixture_rdm.h"
#include "mrl_cache.h"
#include "mrl_lease.h"
#include "mrl_monitor.h"

static struct mrl_cache *cache;
static struct creg creg;
static struct mrl_cache_domain *dom;
static size_t page;
static bool monitor_ok;
static bool single_after_start; /* glibc's view right after the start */

/* ---- the monitor's client, with test gates ------------------------------ */

/* Set on a thread while it applies the monitor's events (the allocation
 * count below). */
static __thread bool on_monitor;
static atomic_int gate_closed; /* invalidate waits while set */
static atomic_int gate_waiting; /* a drain is at the gate */

/* Called by mrl_monitor_drain, on the thread that drains. */
static void
client_invalidate(void *arg, uintptr_t start, uintptr_t end)
{
	(void) arg;
	if (atomic_load(&gate_closed)) {
		atomic_store(&gate_waiting, 1);
		while (atomic_load(&gate_closed))
			sched_yield();
		atomic_store(&gate_waiting, 0);
	}
	on_monitor = true;
	mrl_cache_invalidate_deferred(cache, start, end);
	on_monitor = false;
}

/* A raw clone even though the tests run as root (see
 * test_auto_makes_a_pthread_where_ids_may_change). */
static const struct mrl_monitor_client client = {
	.barrier = &mrl_cache_barrier,
	.invalidate = client_invalidate,
	.task = MRL_MONITOR_TASK_CLONE,
};

/* ---- a registrar that watches, with hooks into reg and close ------------ */

static void (*reg_hook)(void); /* run inside the next reg() */
static void *close_hook_mr; /* close of this handle runs close_hook */
static void (*close_hook)(void);
static atomic_int close_hook_tid;

static int
watch_reg(void *ctx, const void *addr, size_t len, uint64_t access,
	  uint64_t key, void **mr, void **desc)
{
	void (*hook)(void) = reg_hook;

	reg_hook = NULL;
	if (hook)
		hook();
	return creg_registrar.reg(ctx, addr, len, access, key, mr, desc);
}

static int
watch_close(void *ctx, void *mr)
{
	if (mr == close_hook_mr && close_hook) {
		atomic_store(&close_hook_tid, (int) syscall(SYS_gettid));
		close_hook();
	}
	return creg_registrar.close(ctx, mr);
}

static bool
watch_range(void *ctx, uintptr_t lo, uintptr_t hi)
{
	(void) ctx;
	return mrl_monitor_watch(lo, hi);
}

static const struct mrl_registrar watch_registrar = {
	.reg = watch_reg,
	.close = watch_close,
	.watch = watch_range,
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
	mrl_lease_release(reg);
	return reg;
}

/* Whether a live entry covers [p, p + len), without registering. */
static bool
cached(const void *p, size_t len)
{
	struct mrl_registration *reg;

	reg = mrl_cache_lookup(dom, (uintptr_t) p, (uintptr_t) p + len);
	if (reg)
		mrl_lease_release(reg);
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
	mrl_cache_drain(cache);
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
	mrl_cache_drain(cache);
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
	mrl_cache_drain(cache);
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
	mrl_lease_release(reg);
	CHECK_EQ(0u, atomic_load(&mrl_cache_barrier));
	CHECK(mrl_cache_barrier_waits() > waits);
	mrl_cache_drain(cache);
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
		mrl_lease_release(reg);
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
	mrl_cache_drain(cache);
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
	int n = 0;

	NEED_MONITOR();
	CHECK(p != NULL);
	kept = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(kept != NULL && touch(kept, page) && cached(kept, page));
	for (; p && n < PAGES; n++) {
		p[n] = map(page, MAP_PRIVATE | MAP_ANONYMOUS);
		if (!p[n] || !touch(p[n], page))
			break;
	}
	CHECK_EQ(PAGES, n);
	events = mrl_monitor_events();
	/* No lookup in between: every event waits in the ring. */
	for (int i = 0; i < n; i++)
		munmap(p[i], page);
	CHECK(atomic_load(&mrl_cache_barrier) > 1);
	/* The lookup applies them all, the overflow dropping the rest. */
	CHECK(!cached(kept, page));
	CHECK_EQ(0u, atomic_load(&mrl_cache_barrier));
	CHECK(mrl_monitor_events() >= events + PAGES);
	for (int i = 0; i < n; i++)
		CHECK(!cached(p[i], page));
	munmap(kept, page);
	free(p);
	mrl_cache_drain(cache);
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
	mrl_cache_drain(cache);
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
	mrl_cache_drain(cache);
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
	mrl_cache_drain(cache);
#else
	mrlt_skip_current("malloc cannot be counted under a sanitizer");
#endif
}

/* ---- the task is no thread of glibc's ------------------------------------ */

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

/* A single-threaded process (an MPI rank without a progress thread) stays
 * single-threaded as glibc sees it with the monitor on: otherwise glibc
 * drops its single-thread shortcuts (cancellation bookkeeping around every
 * system call, locking in malloc and stdio) for the rest of the run. The
 * task still exists: a kernel task of the process, with its own id. */
static void
test_the_monitor_leaves_a_single_threaded_process_single_threaded(void)
{
	char path[64];

	NEED_MONITOR();
#ifdef __SANITIZE_THREAD__
	mrlt_skip_current("under ThreadSanitizer the monitor is a pthread");
	return;
#endif
	CHECK(single_after_start);
	CHECK(mrl_monitor_tid() > 0);
	CHECK(mrl_monitor_tid() != (int) syscall(SYS_gettid));
	snprintf(path, sizeof(path), "/proc/self/task/%d", mrl_monitor_tid());
	CHECK_EQ(0, access(path, F_OK));
}

/* The task has a descriptor table of its own, holding only the userfaultfd
 * and its stop request: with a shared table the kernel counts references on
 * every file of every system call the process makes, and a copy that kept
 * the application's descriptors would keep files the application closed
 * open (a socket's peer would never see the close). */
static void
test_the_monitor_task_holds_only_its_own_descriptors(void)
{
	char path[64];
	int fds[2];

	NEED_MONITOR();
#ifdef __SANITIZE_THREAD__
	mrlt_skip_current("under ThreadSanitizer the monitor is a pthread");
	return;
#endif
	CHECK_EQ(0, pipe(fds));
	snprintf(path, sizeof(path), "/proc/self/task/%d/fd",
		 mrl_monitor_tid());
	CHECK_EQ(2, count_entries(path));
	CHECK(count_entries("/proc/self/fd") > 2);
	close(fds[0]);
	close(fds[1]);
}

/* In a child: start a monitor with the task left to `auto`, after dropping
 * to an unprivileged user when asked. 0: glibc still sees one thread (a raw
 * clone), 1: it sees two (a pthread), 3: no drop, 4: no monitor. */
static int
auto_task_child(int drop)
{
	struct mrl_monitor_client c = {
		.barrier = &mrl_cache_barrier,
		.invalidate = client_invalidate,
		.task = MRL_MONITOR_TASK_AUTO,
	};

	if (drop && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		     setresuid(65534, 65534, 65534)))
		return 3;
	if (mrl_monitor_start(NULL, &c))
		return 4;
	return __libc_single_threaded ? 0 : 1;
}

/* fn(arg) in a forked child: its exit status; -1 when it could not be
 * forked, did not exit, or hung (mrlt_wait_child kills it and says where it
 * was). */
static int
child_exit_status(int (*fn)(int), int arg)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	if (pid < 0)
		return -1;
	status = mrlt_wait_child(pid, 60);
	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A signal handled on the task would run glibc code on a thread glibc does
 * not know: every signal is blocked there, glibc's own (SIGCANCEL,
 * SIGSETXID: 32, 33) too, which a pthread cannot block. */
static void
test_the_monitor_task_blocks_every_signal(void)
{
	unsigned long long blk = 0;
	char path[64], line[128];
	FILE *f;

	NEED_MONITOR();
#ifdef __SANITIZE_THREAD__
	mrlt_skip_current("under ThreadSanitizer the monitor is a pthread");
	return;
#endif
	snprintf(path, sizeof(path), "/proc/self/task/%d/status",
		 mrl_monitor_tid());
	f = fopen(path, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7))
			blk = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	/* SIGKILL and SIGSTOP cannot be blocked. */
	CHECK_EQ(~0ULL,
		 blk | (1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)));
}

/* glibc changes the user and group ids of the threads it knows only: a
 * process that may change its ids (root, a setuid program) gets a pthread,
 * or a raw task would keep root's credentials after the process dropped
 * them; one that cannot gets the raw clone. */
static void
test_auto_makes_a_pthread_where_ids_may_change(void)
{
	int unprivileged;

	NEED_MONITOR();
#ifdef __SANITIZE_THREAD__
	mrlt_skip_current("under ThreadSanitizer the monitor is a pthread");
	return;
#endif
	if (geteuid() != 0) {
		mrlt_skip_current("needs root to compare with an unprivileged "
				  "child");
		return;
	}
	CHECK_EQ(1, child_exit_status(auto_task_child, false));
	unprivileged = child_exit_status(auto_task_child, true);
	if (unprivileged == 4) {
		mrlt_skip_current("no userfaultfd for an unprivileged process");
		return;
	}
	CHECK_EQ(0, unprivileged);
}

/* ---- stopping ------------------------------------------------------------ */

static void
ignore_range(void *arg, uintptr_t start, uintptr_t end)
{
	(void) arg, (void) start, (void) end;
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

/* In a child: start a monitor of `kind` (enum mrl_monitor_task), watch
 * everything, stop it. */
static int
stop_child(int kind)
{
	struct mrl_monitor_client c = {
		.barrier = &mrl_cache_barrier,
		.invalidate = ignore_range,
		.task = (enum mrl_monitor_task) kind,
	};

	if (mrl_monitor_start(NULL, &c))
		return 4;
	watch_everything();
	mrl_monitor_stop();
	return 0;
}

/* A thread's teardown may unmap memory (glibc advises its stack away, a
 * sanitizer frees its thread state) and a raw task's stack is unmapped
 * after it: inside a watched mapping, either would wait for a monitor that
 * no longer reads. Every watch is released first, whatever the task. */
static void
test_stopping_the_monitor_never_waits_for_it(void)
{
	NEED_MONITOR();
#ifdef __SANITIZE_THREAD__
	mrlt_skip_current("ThreadSanitizer starts no thread in the child of a "
			  "multi-threaded process");
	return;
#endif
	CHECK_EQ(0, child_exit_status(stop_child, MRL_MONITOR_TASK_PTHREAD));
	CHECK_EQ(0, child_exit_status(stop_child, MRL_MONITOR_TASK_CLONE));
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
	CHECK(mrl_lease_provider_pins("verbs;ofi_rxm"));
	CHECK(mrl_lease_provider_pins("efa"));
	CHECK(mrl_lease_provider_pins("some_new_nic"));
	CHECK(!mrl_lease_provider_pins("tcp;ofi_rxm"));
	CHECK(!mrl_lease_provider_pins("tcp"));
	CHECK(!mrl_lease_provider_pins("udp;ofi_rxd"));
	CHECK(!mrl_lease_provider_pins("shm"));
	CHECK(!mrl_lease_provider_pins("sockets"));
	CHECK(!mrl_lease_provider_pins("net"));
	CHECK(mrl_lease_provider_pins("tcpx"));
}

int
main(void)
{
	struct mrl_cache_config config = {.max_count = 400000};
	struct mrl_domain_config dc;

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
	single_after_start = __libc_single_threaded;

	MRLT_RUN(
		test_the_monitor_leaves_a_single_threaded_process_single_threaded);
	MRLT_RUN(test_the_monitor_task_holds_only_its_own_descriptors);
	MRLT_RUN(test_the_monitor_task_blocks_every_signal);
	MRLT_RUN(test_auto_makes_a_pthread_where_ids_may_change);
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
	MRLT_RUN(test_explicit_invalidate_composes_with_the_monitor);
	MRLT_RUN(test_pinning_is_decided_by_the_core_provider);

	mrl_cache_domain_close(dom);
	mrl_monitor_stop();
	mrl_cache_destroy(cache);
	MRLT_RUN(test_every_registration_closed_exactly_once);
	return mrlt_done();
}
