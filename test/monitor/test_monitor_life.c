/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory monitor's life end to end, through the real hook over
 * tcp;ofi_rxm on loopback (shm where a seccomp filter leaves tcp no way to
 * progress), with mrcheck below mrlease
 * (FI_HOOK='mrcheck;mrlease': it counts the registrations mrlease opens
 * and closes), a pinning domain (FI_MRLEASE_PINNING=yes: an entry is kept
 * past its last lease only while the monitor watches its mapping) and the
 * userfaultfd monitor (FI_MRLEASE_MONITOR=userfaultfd), every operand
 * resolved (FI_MRLEASE_MIN_SIZE=0):
 *  - stop (the plugin's provider cleanup, what fi_fini runs) invalidates
 *    what only the watch kept, closes every descriptor the monitor opened,
 *    and a later domain starts the monitor again;
 *  - a task that can no longer read its userfaultfd (a seccomp filter, in a
 *    child) neither spins nor leaves an unmapper blocked, and data moved
 *    afterwards uses fresh registrations;
 *  - what the monitor dropped closes at the next CQ read, and on an
 *    FI_THREAD_SAFE domain without any call (the mrl-closer thread);
 *  - an FI_THREAD_SAFE domain closed right after an unmap is never refused
 *    while the closer closes what the monitor dropped;
 *  - a mapping whose last entry went is watched no more;
 *  - a ring overflow is not churn, and a forked child starts with no churn.
 *
 * mrlease reads its parameters once per process, so the cases come in two
 * groups, one process each (test/monitor/monitor_life.sh runs both): "cached"
 * (FI_MRLEASE_MONITOR_CHURN=0: every miss is watched and cached) and
 * "churn" (the default churn allowance, which the churn cases are about).
 * The program sets its own environment and re-executes itself.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <rdma/fi_ext_mrlease.h>
#include <rdma/providers/fi_prov.h>

#include "common/xfer_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PROV	      "tcp;ofi_rxm"
#define LEN	      (64u * 1024)
#define MIB	      ((size_t) 1 << 20)
#define BIG	      (64 * MIB) /* prompt release: pages worth giving back */
#define CHILD_SECONDS 60.0 /* bound of one forked child's life */

/* ---- helpers ------------------------------------------------------------ */

/* Run the plugin's provider cleanup, recording a failure when there is
 * none to run. */
static bool
provider_cleanup(void)
{
	struct fi_provider *plugin = xfer_plugin_provider();

	if (!plugin || !plugin->cleanup) {
		mrlt_fail(__FILE__, __LINE__,
			  "cannot find the plugin's cleanup");
		return false;
	}
	plugin->cleanup();
	return true;
}

/* The kernel id of this process's thread named `name` (its comm), 0: none. */
static int
thread_named(const char *name)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	int tid = 0;
	FILE *f;

	if (!dir)
		return 0;
	while (!tid && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			if (!strcmp(comm, name))
				tid = atoi(e->d_name);
		}
		fclose(f);
	}
	closedir(dir);
	return tid;
}

/* Wait (bounded) until thread tid has left the process: a joined thread's
 * task may linger in /proc for a moment after the join returned. */
static bool
thread_gone(int tid)
{
	char path[64];
	struct mrlt_wait w;

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	mrlt_wait_init_for(&w, 5.0);
	while (!access(path, F_OK)) {
		if (mrlt_wait_over(&w))
			return false;
		sched_yield();
	}
	return true;
}

/* Wait (bounded) until a thread named `name` exists (want) or none does:
 * a thread names itself once it runs, and a joined one may linger in /proc
 * for a moment. Returns whether it came to that. */
static bool
thread_named_becomes(const char *name, bool want)
{
	struct mrlt_wait w;

	mrlt_wait_init_for(&w, 5.0);
	while ((thread_named(name) != 0) != want) {
		if (mrlt_wait_over(&w))
			return false;
		sched_yield();
	}
	return true;
}

/* The descriptors of this process, and those of the kinds the monitor
 * opens (its userfaultfd, eventfds, /proc/self/maps). */
struct fd_census {
	int total, userfaultfd, eventfd, maps;
};

static void
fd_census(struct fd_census *c)
{
	DIR *dir = opendir("/proc/self/fd");
	char path[300], link[PATH_MAX];
	struct dirent *e;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		c->total++;
		c->userfaultfd += !strcmp(link, "anon_inode:[userfaultfd]");
		c->eventfd += !strcmp(link, "anon_inode:[eventfd]");
		c->maps += !strncmp(link, "/proc/", 6) && n > 5 &&
			   !strcmp(link + n - 5, "/maps");
	}
	closedir(dir);
}

static void
fd_census_print(const char *when, const struct fd_census *c)
{
	printf("# descriptors %s: %d (userfaultfd %d, eventfd %d, "
	       "/proc/PID/maps %d)\n",
	       when, c->total, c->userfaultfd, c->eventfd, c->maps);
}

/* Whether the VMA holding addr carries `flag` in its /proc/self/smaps
 * VmFlags (1 or 0; -1: no VMA holds addr). "uw" is userfaultfd
 * write-protect tracking: the monitor's watch. */
static int
vma_flag(const void *addr, const char *flag)
{
	uintptr_t a = (uintptr_t) addr;
	unsigned long lo, hi;
	char line[4096], *tok, *save;
	bool in = false;
	int found = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = lo <= a && a < hi;
			continue;
		}
		if (!in || strncmp(line, "VmFlags:", 8))
			continue;
		found = 0;
		for (tok = strtok_r(line + 8, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save))
			if (!strcmp(tok, flag))
				found = 1;
	}
	fclose(f);
	return found;
}

/* munmap, then new pages at the same address (never over a mapping that
 * something else put into the hole meanwhile). */
static bool
remap(void *addr, size_t len)
{
	void *p;

	if (munmap(addr, len))
		return false;
	p = mmap(addr, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && p != addr)
		munmap(p, len); /* a kernel without MAP_FIXED_NOREPLACE */
	return p == addr;
}

/* A fabric, a domain and a CQ over PROV, tracked (closed when the case
 * returns), with the domain's mrlease extension: the cases register and
 * read the CQ, no endpoint needed. */
struct dom {
	struct mrlt_domain d;
	struct fid_cq *cq;
	struct fi_mrlease_ops *mrl;
};

static bool
dom_open_on(const char *prov, struct dom *dm, enum fi_threading threading)
{
	struct fi_info *hints = mrlt_hints(prov, FI_EP_RDM, FI_MSG), *info;
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
	int ret;

	memset(dm, 0, sizeof(*dm));
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = threading;
	ret = mrlt_getinfo(hints, NULL, NULL, 0, &info);
	if (ret == -FI_ENODATA)
		mrlt_skip_current("%s not available", prov);
	if (ret)
		return false;
	/* What the application asks for: rxm offers FI_THREAD_SAFE whatever
	 * the hints, and the hook goes by the info the domain opens with. */
	info->domain_attr->threading = threading;
	if (mrlt_domain_open(info, &dm->d))
		return false;
	if (fi_open_ops(&dm->d.domain->fid, FI_MRLEASE_OPS_1, 0,
			(void **) &dm->mrl, NULL)) {
		mrlt_fail(__FILE__, __LINE__, "the mrlease hook is not active");
		return false;
	}
	if (!mrcheck_loaded_ops()) {
		mrlt_fail(__FILE__, __LINE__, "mrcheck is not stacked");
		return false;
	}
	ret = fi_cq_open(dm->d.domain, &attr, &dm->cq, NULL);
	if (ret) {
		mrlt_fail(__FILE__, __LINE__, "fi_cq_open: %s",
			  fi_strerror(-ret));
		return false;
	}
	mrlt_track_fid(&dm->cq->fid);
	return true;
}

static bool
dom_open(struct dom *dm, enum fi_threading threading)
{
	return dom_open_on(PROV, dm, threading);
}

/* The domain's cache statistics (zeros, and a failure, if unreadable). */
static struct fi_mrlease_stats
stats_of(struct fi_mrlease_ops *mrl, struct fid_domain *domain)
{
	struct fi_mrlease_stats s;

	memset(&s, 0, sizeof(s));
	if (mrl->query_stats(domain, &s, sizeof(s)))
		mrlt_fail(__FILE__, __LINE__, "query_stats failed");
	return s;
}

static struct fi_mrlease_stats
dom_stats(struct dom *dm)
{
	return stats_of(dm->mrl, dm->d.domain);
}

/* mrcheck's process-wide counts, from the loaded plugin (mrlease does not
 * forward its ops): queried without a call into mrlease. */
static struct mrcheck_stats
mrcheck_stats(void)
{
	struct mrcheck_ops *chk = mrcheck_loaded_ops();
	struct mrcheck_stats s;

	memset(&s, 0, sizeof(s));
	if (!chk || chk->query(chk, &s, sizeof(s)))
		mrlt_fail(__FILE__, __LINE__, "mrcheck query failed");
	return s;
}

/* A local MR through the hook, closed at once: a lease on a cache entry,
 * which stays cached only if the cache keeps it past its lease (on a
 * pinning domain: while the monitor watches its mapping). */
static int
reg_local(struct fid_domain *domain, void *buf, size_t len)
{
	struct fid_mr *mr;
	int ret = fi_mr_reg(domain, buf, len, FI_SEND | FI_RECV, 0, 0, 0, &mr,
			    NULL);

	return ret ? ret : fi_close(&mr->fid);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A forked child's verdict: exit status 0 (passed), CHILD_FAILED + i (it
 * failed at steps[i]) or CHILD_SKIPPED + i (it could not run: skips[i]);
 * killed by SIGALRM: what `on_alarm` says. */
#define CHILD_FAILED  10
#define CHILD_SKIPPED 77

static void
judge_child(pid_t pid, const char *const steps[], size_t nsteps,
	    const char *const skips[], size_t nskips, const char *on_alarm)
{
	int status = mrlt_wait_child(pid, CHILD_SECONDS), s;

	CHECK_MSG(status != -1, "the child did not exit within %.0f s",
		  CHILD_SECONDS);
	CHECK_MSG(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM ||
			  !on_alarm,
		  "%s", on_alarm);
	CHECK_MSG(!WIFSIGNALED(status),
		  "the child was killed by signal %d (%s)", WTERMSIG(status),
		  strsignal(WTERMSIG(status)));
	s = WEXITSTATUS(status);
	if (s >= CHILD_SKIPPED && (size_t) (s - CHILD_SKIPPED) < nskips) {
		mrlt_skip_current("%s", skips[s - CHILD_SKIPPED]);
		return;
	}
	CHECK_MSG(s == 0, "the child failed at: %s (exit status %d)",
		  s >= CHILD_FAILED && (size_t) (s - CHILD_FAILED) < nsteps ?
			  steps[s - CHILD_FAILED] :
			  "?",
		  s);
}

static pid_t
fork_child(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		mrlt_leak_check_off();
	return pid;
}

/* ---- stop and restart (group "cached") ----------------------------------- */

/* Provider cleanup with a domain still open (another thread still runs),
 * then munmap + mmap(MAP_FIXED) of a cached buffer's address and a local
 * fi_mr_reg of it: a stop that drops the events not read yet and keeps what
 * only the watch justified serves the old registration, on verbs or efa the
 * old pages' bytes. Pins: stop invalidates as an overflow does (and pinning
 * domains fall back to lease-only retention). */
static void
test_after_stop_a_remapped_buffer_gets_a_new_registration(void)
{
	struct fi_mrlease_stats s0, s1;
	struct dom dm;
	char *buf;

	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return;
	buf = xfer_map_anon(LEN);
	CHECK(buf);
	CHECK_FI(reg_local(dm.d.domain, buf, LEN));
	/* Kept past its lease: the monitor watches it. */
	CHECK_FI(reg_local(dm.d.domain, buf, LEN));
	s0 = dom_stats(&dm);
	CHECK_MSG(s0.hits == 1,
		  "the entry was not kept past its lease (hits %llu): no "
		  "monitor?",
		  (unsigned long long) s0.hits);

	CHECK(provider_cleanup());
	CHECK_MSG(remap(buf, LEN), "mmap at %p again: %s", (void *) buf,
		  strerror(errno));
	CHECK_FI(reg_local(dm.d.domain, buf, LEN));
	s1 = dom_stats(&dm);
	CHECK_MSG(s1.hits == s0.hits,
		  "the remapped buffer was served from the entry cached "
		  "before the stop (hits %llu -> %llu)",
		  (unsigned long long) s0.hits, (unsigned long long) s1.hits);
	CHECK_EQ(s0.registrations + 1, s1.registrations);
	munmap(buf, LEN);
}

/* A second libfabric initialisation in the same process (cleanup, then a
 * new fabric and domain) that finds the monitor marked as tried gets none:
 * pinning domains register per operation for the rest of the process. Pins:
 * stop resets the monitor, so that a later start works as the first. */
static void
test_a_domain_opened_after_stop_runs_the_monitor_and_caches_again(void)
{
	struct fi_mrlease_stats s0, s1;
	struct dom d1, d2;
	int tid;
	char *buf;

	if (!dom_open(&d1, FI_THREAD_DOMAIN))
		return;
	tid = thread_named("mrl-monitor");
	CHECK(provider_cleanup());

	if (!dom_open(&d2, FI_THREAD_DOMAIN))
		return;
	buf = xfer_map_anon(LEN);
	CHECK(buf);
	s0 = dom_stats(&d2);
	CHECK_FI(reg_local(d2.d.domain, buf, LEN));
	CHECK_FI(reg_local(d2.d.domain, buf, LEN));
	s1 = dom_stats(&d2);
	CHECK_EQ(s0.not_retained, s1.not_retained);
	CHECK_EQ(s0.registrations + 1, s1.registrations);
	CHECK_MSG(s1.hits == s0.hits + 1,
		  "the second fi_mr_reg was not a hit (hits %llu -> %llu)",
		  (unsigned long long) s0.hits, (unsigned long long) s1.hits);
	munmap(buf, LEN);
	/* A task of its own: the first one left at the stop. */
	CHECK_MSG(tid, "no thread named mrl-monitor with the first domain");
	CHECK_MSG(thread_gone(tid), "the monitor task %d outlived the stop",
		  tid);
	CHECK_MSG(thread_named("mrl-monitor"),
		  "no monitor task after a new domain opened");
}

/* A monitor that leaves a descriptor open at each stop (its /proc/self/maps,
 * an eventfd, the userfaultfd itself) leaks one per libfabric
 * initialisation, and a userfaultfd left open keeps its watches. Pins: stop
 * closes every descriptor the monitor opened. The census around the second
 * start has the provider's own set-up done (the first domain stays open),
 * so only the monitor's and the second domain's descriptors come and go. */
static void
test_stop_closes_every_descriptor_the_monitor_opened(void)
{
	struct fd_census before, running, after;
	struct fid_domain *second;
	struct dom dm;

	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return;
	CHECK(provider_cleanup());
	fd_census(&before);
	fd_census_print("after a stop", &before);
	CHECK_EQ(0, before.userfaultfd);
	CHECK_EQ(0, before.maps);

	/* A new domain starts the monitor again. */
	CHECK_FI(fi_domain(dm.d.fabric, dm.d.info, &second, NULL));
	fd_census(&running);
	fd_census_print("with the monitor running", &running);
	if (running.userfaultfd != 1) {
		fi_close(&second->fid);
		CHECK_MSG(false, "%d userfaultfds while the monitor runs",
			  running.userfaultfd);
	}
	CHECK_FI(fi_close(&second->fid));
	CHECK(provider_cleanup());
	fd_census(&after);
	fd_census_print("after the second stop", &after);
	CHECK_EQ(0, after.userfaultfd);
	CHECK_EQ(before.eventfd, after.eventfd);
	CHECK_EQ(before.maps, after.maps);
	CHECK_EQ(before.total, after.total);
}

/* ---- watches released (group "cached") ----------------------------------- */

/* A mapping stays watched after its last entry went: every munmap and
 * madvise in it waits for the monitor task for the life of the mapping, and
 * allocator purges there keep raising the barrier lookups wait on. Pins:
 * the watch is unregistered once no entry of any cache overlaps it. */
static void
test_a_mapping_whose_entries_are_gone_is_no_longer_watched(void)
{
	struct fi_mrlease_stats s0, s1;
	struct fi_cq_tagged_entry entry;
	struct fid_mr *mr[2];
	struct dom dm;
	char *r, *a, *b;
	ssize_t n;

	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return;
	/* Two mappings that are VMAs of their own (a watch covers a whole
	 * VMA): a and b, PROT_NONE around them. */
	r = mmap(NULL, 5 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r != MAP_FAILED);
	a = r + MIB;
	b = r + 3 * MIB;
	CHECK(!mprotect(a, MIB, PROT_READ | PROT_WRITE));
	CHECK(!mprotect(b, MIB, PROT_READ | PROT_WRITE));
	CHECK_FI(fi_mr_reg(dm.d.domain, a, LEN, FI_SEND | FI_RECV, 0, 0, 0,
			   &mr[0], NULL));
	CHECK_FI(fi_mr_reg(dm.d.domain, a + MIB / 2, LEN, FI_SEND | FI_RECV, 0,
			   0, 0, &mr[1], NULL));
	CHECK_FI(reg_local(dm.d.domain, b, LEN));
	CHECK_EQ(1, vma_flag(a, "uw"));
	CHECK_EQ(1, vma_flag(b, "uw"));

	/* a's entries go: their handles closed, then invalidated; one CQ
	 * read for any close left deferred. */
	CHECK_FI(fi_close(&mr[0]->fid));
	CHECK_FI(fi_close(&mr[1]->fid));
	CHECK_FI(dm.mrl->invalidate(a, MIB));
	n = fi_cq_read(dm.cq, &entry, 1);
	CHECK_MSG(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
	CHECK_MSG(vma_flag(a, "uw") == 0,
		  "the mapping is still watched with no entry left");
	CHECK_MSG(vma_flag(b, "uw") == 1,
		  "a mapping still holding an entry is no longer watched");

	/* a's munmap costs the monitor nothing; b's is its one event (read
	 * before b's munmap returned; query_stats applies it first). */
	s0 = dom_stats(&dm);
	CHECK(!munmap(a, MIB));
	CHECK(!munmap(b, MIB));
	s1 = dom_stats(&dm);
	CHECK_MSG(s1.monitor_events == s0.monitor_events + 1,
		  "monitor events %llu -> %llu: want b's munmap alone",
		  (unsigned long long) s0.monitor_events,
		  (unsigned long long) s1.monitor_events);
	munmap(r, MIB);
	munmap(r + 2 * MIB, MIB);
	munmap(r + 4 * MIB, MIB);
}

/* ---- prompt release (group "cached") ------------------------------------- */

/* Cache a new mapping of len bytes (registered in the provider through
 * mrcheck) and unmap it; *before: mrcheck's counts in between. */
static bool
cache_and_unmap(struct dom *dm, size_t len, struct mrcheck_stats *before)
{
	char *buf = xfer_map_anon(len);
	int ret;

	if (!buf) {
		mrlt_fail(__FILE__, __LINE__, "mmap: %s", strerror(errno));
		return false;
	}
	ret = reg_local(dm->d.domain, buf, len);
	*before = mrcheck_stats();
	if (ret)
		mrlt_fail(__FILE__, __LINE__, "fi_mr_reg: %s",
			  fi_strerror(-ret));
	if (munmap(buf, len)) {
		mrlt_fail(__FILE__, __LINE__, "munmap: %s", strerror(errno));
		return false;
	}
	return !ret;
}

/* A program that frees a large buffer and then only progresses its CQ keeps
 * the registration (pinned pages on verbs or efa) until its next miss or
 * domain close. Pins: what the monitor dropped closes at the next call into
 * its domain, a CQ read; and a domain whose threading model forbids a
 * second caller gets no mrl-closer thread. */
static void
test_an_unmapped_registration_is_closed_by_the_next_cq_read(void)
{
	struct fi_cq_tagged_entry entry;
	struct mrcheck_stats c0, c1;
	struct dom dm;
	ssize_t n;

	/* The closer lives from the first FI_THREAD_SAFE domain to the next
	 * stop: start afresh (a plugin not loaded yet has started nothing). */
	if (xfer_plugin_provider())
		CHECK(provider_cleanup());
	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return;
	CHECK(cache_and_unmap(&dm, BIG, &c0));
	n = fi_cq_read(dm.cq, &entry, 1);
	c1 = mrcheck_stats();
	CHECK_MSG(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
	CHECK_MSG(c1.mr_closed > c0.mr_closed,
		  "the registration of the unmapped buffer was still open "
		  "after the CQ read (mrcheck: %llu closed before, %llu "
		  "after)",
		  (unsigned long long) c0.mr_closed,
		  (unsigned long long) c1.mr_closed);
	CHECK_MSG(thread_named_becomes("mrl-closer", false),
		  "an mrl-closer thread for an FI_THREAD_DOMAIN domain");
}

/* On an FI_THREAD_SAFE domain the application may make no call at all after
 * freeing a buffer (it computes): without a closer its registration, and
 * the pages it pins, stay until the next call. Pins: the mrl-closer thread
 * closes it within 1 s (the target is 100 ms) with no call into the hook;
 * the count is polled through mrcheck's own ops, which mrlease does not
 * see. */
static void
test_an_unmapped_registration_on_a_thread_safe_domain_closes_without_a_call(
	void)
{
	struct mrcheck_stats c0, c;
	double t0, waited;
	struct dom dm;

	if (!dom_open(&dm, FI_THREAD_SAFE))
		return;
	CHECK(cache_and_unmap(&dm, BIG, &c0));
	t0 = mrlt_now();
	do {
		c = mrcheck_stats();
		waited = mrlt_now() - t0;
		if (c.mr_closed > c0.mr_closed)
			break;
		sched_yield();
	} while (waited < 1.0);
	printf("# waited %.1f ms for the close\n", waited * 1e3);
	CHECK_MSG(c.mr_closed > c0.mr_closed,
		  "the registration of the unmapped buffer was still open "
		  "after 1 s without a call");
	CHECK_MSG(thread_named_becomes("mrl-closer", true),
		  "no mrl-closer thread with an FI_THREAD_SAFE domain open");
}

/* ---- domain close right after an unmap (group "cached") ----------------- */

#define CLOSE_ROUNDS  2000
#define CLOSE_ENTRIES 64

/*
 * An application that frees a buffer holding many cached registrations and
 * closes its FI_THREAD_SAFE domain: at once (its own close applies the
 * unmap), or, in every other round, once the closer has begun closing what
 * the unmap dropped, outside any lock, which it then does while
 * fi_close(domain) runs. A domain close that returned before the closer was
 * done handed the provider a domain with MRs open: -FI_EBUSY, and rxm's
 * domain close cannot be retried (a double free), so the application had to
 * leak it. Pins: no refusal in CLOSE_ROUNDS rounds.
 */
static void
domain_close_after_unmap(const char *prov)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE);
	struct mrcheck_stats c0, c1, c;
	int refused = 0, ret = 0, amid = 0;
	struct fid_domain *domain;
	struct mrlt_wait w;
	struct dom dm;
	char *buf;

	/* The fabric and its info; each round opens a domain of its own. */
	if (!dom_open_on(prov, &dm, FI_THREAD_SAFE))
		return;
	c0 = mrcheck_stats();
	for (int round = 0; round < CLOSE_ROUNDS && !ret; round++) {
		ret = fi_domain(dm.d.fabric, dm.d.info, &domain, NULL);
		if (ret)
			break;
		buf = xfer_map_anon(CLOSE_ENTRIES * page);
		CHECK_MSG(buf, "mmap: %s", strerror(errno));
		for (int i = 0; i < CLOSE_ENTRIES && !ret; i++)
			ret = reg_local(domain, buf + i * page, page);
		c = mrcheck_stats();
		CHECK_MSG(!munmap(buf, CLOSE_ENTRIES * page), "munmap: %s",
			  strerror(errno));
		mrlt_wait_init_for(&w, 5.0);
		/* A spin, not a yield: the closer goes on on the other CPU. */
		while (round % 2 && mrcheck_stats().mr_closed == c.mr_closed &&
		       !mrlt_wait_over(&w))
			;
		amid += round % 2 &&
			mrcheck_stats().mr_closed - c.mr_closed < CLOSE_ENTRIES;
		/* Refused: left open, as an application must. */
		refused += fi_close(&domain->fid) == -FI_EBUSY;
	}
	CHECK_MSG(!ret, "round: %s", fi_strerror(-ret));
	c1 = mrcheck_stats();
	printf("# %s: %d rounds of %d cached registrations unmapped, then "
	       "the domain closed (in %d while the closer was closing them): "
	       "%d refused; %llu registrations opened, %llu closed\n",
	       prov, CLOSE_ROUNDS, CLOSE_ENTRIES, amid, refused,
	       (unsigned long long) (c1.mr_opened - c0.mr_opened),
	       (unsigned long long) (c1.mr_closed - c0.mr_closed));
	CHECK_MSG(!refused,
		  "%d of %d domain closes refused after the application "
		  "closed every MR",
		  refused, CLOSE_ROUNDS);
	CHECK_MSG(c1.mr_opened - c0.mr_opened == c1.mr_closed - c0.mr_closed,
		  "registrations left open");
}

static void
test_a_thread_safe_rxm_domain_closed_after_its_cached_buffer_is_unmapped_is_never_refused(
	void)
{
	domain_close_after_unmap("tcp;ofi_rxm");
}

static void
test_a_thread_safe_sockets_domain_closed_after_its_cached_buffer_is_unmapped_is_never_refused(
	void)
{
	domain_close_after_unmap("sockets");
}

/* ---- failure bounded (group "cached", in a child) ------------------------ */

/* A filter that makes poll, ppoll and read fail with EPERM in every thread
 * (TSYNC): the monitor task can no longer wait on nor read its
 * userfaultfd. 0, or -errno. */
static int
deny_poll_and_read(void)
{
	static const int denied[] = {
#ifdef __NR_poll
		__NR_poll,
#endif
		__NR_ppoll,
		__NR_read,
	};
	enum { N = sizeof(denied) / sizeof(denied[0]) };
	struct sock_filter f[N + 6];
	struct sock_fprog prog = {.filter = f};
	unsigned short i, k = 0;

#if defined(__x86_64__)
	const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const unsigned arch = AUDIT_ARCH_AARCH64;
#else
	return -ENOSYS;
#endif
	f[k++] = (struct sock_filter) BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch,
					       1, 0);
	f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
					       SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter) BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	/* Each match jumps over the other tests and the allow, to the deny. */
	for (i = 0; i < N; i++)
		f[k++] = (struct sock_filter) BPF_JUMP(
			BPF_JMP | BPF_JEQ | BPF_K, (unsigned) denied[i],
			(unsigned char) (N - i), 0);
	f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
					       SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
					       SECCOMP_RET_ERRNO | EPERM);
	prog.len = k;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_TSYNC, &prog))
		return errno ? -errno : -EAGAIN;
	return 0;
}

/* CPU seconds (utime + stime) of the task whose /proc stat is open on fd
 * (pread: read is denied), or -1 once the task has gone. */
static double
task_cpu(int fd)
{
	char buf[1024], *p;
	unsigned long long utime, stime;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* Fields 14 and 15, counted after the parenthesised name. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			 "%llu",
			 &utime, &stime) != 2)
		return -1;
	return (double) (utime + stime) / (double) sysconf(_SC_CLK_TCK);
}

#define WATCHED	     4 /* buffers unmapped under the filter */
#define MUNMAP_BOUND 5 /* seconds one munmap may take */
#define SPIN_WINDOW  1.0 /* seconds a spinning task gets to show */
#define SPIN_BOUND   0.5 /* CPU seconds the task may spend meanwhile */

enum failure_child {
	FC_OK = 0,
	FC_OPEN = CHILD_FAILED,
	FC_XFER_BEFORE,
	FC_NO_TASK,
	FC_SPIN,
	FC_REMAP,
	FC_XFER_AFTER,
	FC_STALE,
	FC_NO_FILTER = CHILD_SKIPPED,
	FC_NO_SHM,
};

static const char *const failure_child_step[] = {
	"open",
	"caching before the filter",
	"finding the monitor task",
	"the monitor task spun (over 0.5 s of CPU in 1 s)",
	"mmap at the unmapped address again",
	"transfer from the remapped buffer",
	"a lookup after the failure hit an entry cached before it",
};

static const char *const failure_child_skip[] = {
	"cannot install a seccomp filter",
	"shm is not available",
};

/* The child: cached, watched buffers; the filter; munmap them all; the
 * task's CPU time; a transfer from one of them mapped again. After the
 * filter nothing may read(): the verdict is the exit status. Over shm:
 * libfabric's tcp progresses its sockets with poll(2), which the filter
 * denies, so no byte would move over tcp;ofi_rxm, hook or not. */
static enum failure_child
failure_child(void)
{
	struct mrlt_pair_opts opts = {.prov = "shm", .caps = FI_MSG};
	struct fi_mrlease_stats s0, s1;
	struct mrlt_pair p;
	char *dst, *w[WATCHED], path[64];
	double cpu0, cpu, c = 0, end;
	int tid, statfd, ret;

	ret = mrlt_pair_open(&opts, &p);
	if (ret == -FI_ENODATA)
		return FC_NO_SHM;
	if (ret || !p.mrl)
		return FC_OPEN;
	dst = xfer_map_anon(LEN);
	for (int i = 0; i < WATCHED; i++)
		if (!(w[i] = xfer_map_anon(LEN)))
			return FC_OPEN;
	/* The connection set up and dst, w[0] cached by the transfer. */
	if (!dst || xfer_round_trip(&p, w[0], dst, LEN, 1, 0))
		return FC_XFER_BEFORE;
	for (int i = 1; i < WATCHED; i++)
		if (reg_local(p.domain, w[i], LEN))
			return FC_XFER_BEFORE;
	s0 = stats_of(p.mrl, p.domain);
	if (s0.entries != WATCHED + 1 || s0.not_retained)
		return FC_XFER_BEFORE;
	tid = thread_named("mrl-monitor");
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	statfd = tid ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (statfd < 0 || (cpu0 = task_cpu(statfd)) < 0)
		return FC_NO_TASK;

	ret = deny_poll_and_read();
	if (ret) {
		printf("# seccomp filter: %s\n", strerror(-ret));
		return FC_NO_FILTER;
	}
	/* An munmap blocked for the task's read is killable: SIGALRM ends
	 * the child before the parent's bound (whose description of a hung
	 * child cannot attach to a thread blocked there). */
	for (int i = 0; i < WATCHED; i++) {
		alarm(MUNMAP_BOUND);
		munmap(w[i], LEN);
		alarm(0);
	}
	/* A window for a task that retries its failing poll to spin, not a
	 * synchronisation: nothing waits for the task. */
	cpu = cpu0;
	for (end = mrlt_now() + SPIN_WINDOW; mrlt_now() < end;) {
		nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
		c = task_cpu(statfd);
		if (c < 0)
			break; /* the task left */
		cpu = c;
	}
	printf("# monitor task: %.2f s of CPU in the window%s\n", cpu - cpu0,
	       c < 0 ? ", then it left" : "");
	if (cpu - cpu0 > SPIN_BOUND)
		return FC_SPIN;

	if (mmap(w[0], LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		 0) != w[0])
		return FC_REMAP;
	ret = xfer_round_trip(&p, w[0], dst, LEN, 2, 0);
	if (ret) {
		printf("# transfer after the failure: %s\n",
		       xfer_round_error(ret));
		return FC_XFER_AFTER;
	}
	s1 = stats_of(p.mrl, p.domain);
	printf("# after the failure: lookups %llu -> %llu, hits %llu -> "
	       "%llu, registrations %llu -> %llu\n",
	       (unsigned long long) s0.lookups, (unsigned long long) s1.lookups,
	       (unsigned long long) s0.hits, (unsigned long long) s1.hits,
	       (unsigned long long) s0.registrations,
	       (unsigned long long) s1.registrations);
	/* Both operands: the failure invalidated everything as a stop. */
	if (s1.hits != s0.hits || s1.registrations < s0.registrations + 2)
		return FC_STALE;
	return FC_OK;
}

/* A monitor task whose poll or read fails and retries at once spins at 100%
 * of a CPU, and the munmap waiting for it to read the event never returns.
 * Pins: on failure the task releases the userfaultfd (waking every
 * unmapper), invalidates everything as at stop, and exits. In a child,
 * whose seccomp filter the parent must not share. */
static void
test_a_monitor_that_cannot_read_neither_spins_nor_blocks_munmap(void)
{
	pid_t pid = fork_child();

	CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		enum failure_child st = failure_child();

		fflush(stdout);
		_exit(st);
	}
	judge_child(pid, failure_child_step, NELEM(failure_child_step),
		    failure_child_skip, NELEM(failure_child_skip),
		    "an munmap did not return within 5 s (the child's alarm)");
}

/* ---- churn (group "churn") ----------------------------------------------- */

#define ARENA_PAGES 1200
#define PURGES	    1100 /* unmap events: more than the monitor's ring */
#define FRESH	    4

/* A ring overflow is applied as invalidate(0, UINTPTR_MAX): noted as churn,
 * every later miss anywhere counts as churning memory and is registered per
 * operation, so one burst of purges in an arena stops all caching. Pins: an
 * overflow invalidates everything but notes no churn. */
static void
test_a_ring_overflow_leaves_fresh_buffers_retained(void)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE);
	struct fi_mrlease_stats s0, s1, s2;
	char *arena, *kept, *fresh[FRESH];
	struct dom dm;

	/* FI_THREAD_DOMAIN: no closer drains while the events pile up. */
	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return;
	arena = xfer_map_anon(ARENA_PAGES * page);
	CHECK(arena);
	kept = arena + (ARENA_PAGES - 1) * page;
	CHECK_FI(reg_local(dm.d.domain, kept, page));
	s0 = dom_stats(&dm);
	CHECK_EQ(1, s0.entries);
	/* No call into the hook in between: nothing drains, the ring
	 * overflows. */
	for (size_t i = 0; i < PURGES; i++)
		CHECK(!madvise(arena + i * page, page, MADV_DONTNEED));
	for (int i = 0; i < FRESH; i++) {
		fresh[i] = xfer_map_anon(LEN);
		CHECK(fresh[i]);
	}
	for (int i = 0; i < FRESH; i++) {
		CHECK_FI(reg_local(dm.d.domain, fresh[i], LEN));
		CHECK_FI(reg_local(dm.d.domain, fresh[i], LEN));
	}
	s1 = dom_stats(&dm);
	CHECK_MSG(s1.monitor_events >= s0.monitor_events + PURGES,
		  "monitor events %llu -> %llu for %d purges",
		  (unsigned long long) s0.monitor_events,
		  (unsigned long long) s1.monitor_events, PURGES);
	CHECK_MSG(s1.not_retained == s0.not_retained,
		  "%llu registrations of %d fresh buffers not retained after "
		  "the overflow",
		  (unsigned long long) (s1.not_retained - s0.not_retained),
		  FRESH);
	CHECK_EQ(s0.hits + FRESH, s1.hits);
	/* The premise: the ring overflowed. No purge touched the kept
	 * entry's page: only an overflow's invalidate-everything drops it. */
	CHECK_FI(reg_local(dm.d.domain, kept, page));
	s2 = dom_stats(&dm);
	CHECK_MSG(s2.hits == s1.hits,
		  "the untouched entry survived: the ring did not overflow");
	for (int i = 0; i < FRESH; i++)
		munmap(fresh[i], LEN);
	munmap(arena, ARENA_PAGES * page);
}

enum churn_child {
	CC_OK = 0,
	CC_OPEN = CHILD_FAILED,
	CC_REG,
	CC_NOT_RETAINED,
	CC_NO_HIT,
};

static const char *const churn_child_step[] = {
	"open",
	"fi_mr_reg",
	"the miss was not retained: the parent's churn was inherited",
	"the second fi_mr_reg was not a hit",
};

/* The child: its own fabric and domain, two local registrations of the
 * range that churned in the parent. */
static enum churn_child
churn_child(char *buf)
{
	struct fi_mrlease_stats s0, s1;
	struct dom dm;

	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return CC_OPEN;
	s0 = dom_stats(&dm);
	if (reg_local(dm.d.domain, buf, LEN) ||
	    reg_local(dm.d.domain, buf, LEN))
		return CC_REG;
	s1 = dom_stats(&dm);
	printf("# child: not retained %llu -> %llu, hits %llu -> %llu\n",
	       (unsigned long long) s0.not_retained,
	       (unsigned long long) s1.not_retained,
	       (unsigned long long) s0.hits, (unsigned long long) s1.hits);
	if (s1.not_retained != s0.not_retained)
		return CC_NOT_RETAINED;
	if (s1.hits != s0.hits + 1)
		return CC_NO_HIT;
	/* Its objects go with it (_exit): the tracked list it inherited
	 * also names the parent's. */
	return CC_OK;
}

/* A child that inherits the parent's churn state registers per operation
 * the memory its parent unmapped, which says nothing about the child's
 * memory. Pins: the churn state is reset in a fork child. */
static void
test_a_fork_child_starts_with_no_churn(void)
{
	struct fi_mrlease_stats s0, s1;
	struct dom dm;
	char *buf;
	pid_t pid;

	if (!dom_open(&dm, FI_THREAD_DOMAIN))
		return;
	buf = xfer_map_anon(LEN);
	CHECK(buf);
	CHECK_FI(reg_local(dm.d.domain, buf, LEN));
	/* The monitor sees it go, noted as churn at the next drain. */
	CHECK_MSG(remap(buf, LEN), "mmap at %p again: %s", (void *) buf,
		  strerror(errno));
	s0 = dom_stats(&dm);
	CHECK_FI(reg_local(dm.d.domain, buf, LEN));
	s1 = dom_stats(&dm);
	CHECK_MSG(s1.not_retained == s0.not_retained + 1,
		  "the parent's miss in the unmapped range was retained: no "
		  "churn to inherit");

	pid = fork_child();
	CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		enum churn_child st = churn_child(buf);

		fflush(stdout);
		_exit(st);
	}
	judge_child(pid, churn_child_step, NELEM(churn_child_step), NULL, 0,
		    NULL);
	munmap(buf, LEN);
}

int
main(int argc, char **argv)
{
#define MONITOR_ENV                                                 \
	"FI_MRLEASE_PINNING=yes", "FI_MRLEASE_MONITOR=userfaultfd", \
		"FI_MRLEASE_MIN_SIZE=0"
	static const char *const cached_env[] = {
		MONITOR_ENV, "FI_MRLEASE_MONITOR_CHURN=0", NULL};
	static const char *const churn_env[] = {MONITOR_ENV, NULL};
	const char *group = argc > 1 ? argv[1] : "";

	mrlt_select(argc - 2, argv + 2);
	if (!strcmp(group, "cached")) {
		xfer_reexec(argv, "mrcheck;mrlease", cached_env);
		MRLT_RUN(
			test_after_stop_a_remapped_buffer_gets_a_new_registration);
		MRLT_RUN(
			test_a_domain_opened_after_stop_runs_the_monitor_and_caches_again);
		MRLT_RUN(test_stop_closes_every_descriptor_the_monitor_opened);
		MRLT_RUN(
			test_a_mapping_whose_entries_are_gone_is_no_longer_watched);
		MRLT_RUN(
			test_an_unmapped_registration_is_closed_by_the_next_cq_read);
		MRLT_RUN(
			test_a_monitor_that_cannot_read_neither_spins_nor_blocks_munmap);
		MRLT_RUN(
			test_an_unmapped_registration_on_a_thread_safe_domain_closes_without_a_call);
		MRLT_RUN(
			test_a_thread_safe_rxm_domain_closed_after_its_cached_buffer_is_unmapped_is_never_refused);
		MRLT_RUN(
			test_a_thread_safe_sockets_domain_closed_after_its_cached_buffer_is_unmapped_is_never_refused);
	} else if (!strcmp(group, "churn")) {
		/* The default allowance, whatever the caller's environment. */
		unsetenv("FI_MRLEASE_MONITOR_CHURN");
		xfer_reexec(argv, "mrcheck;mrlease", churn_env);
		MRLT_RUN(test_a_ring_overflow_leaves_fresh_buffers_retained);
		MRLT_RUN(test_a_fork_child_starts_with_no_churn);
	} else {
		fprintf(stderr,
			"usage: %s cached|churn [case-name pattern...]\n",
			argv[0]);
		return 2;
	}
	return mrlt_done();
}
