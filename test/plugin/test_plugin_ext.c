/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The FI_MRLEASE_OPS_1 extension through libfabric, as an application sees
 * it: fi_open_ops on hooked objects of loopback tcp;ofi_rxm, pins,
 * invalidate across domains and at the edges, span resolvers, the
 * statistics record's size rules, every bad input, and all of it racing on
 * several threads. (Pins in real transfers: test_plugin_ext_mrcheck.c.) Runs
 * with FI_HOOK=mrlease (set here before libfabric's first call);
 * `--without-hook` is the child run that checks the extension is absent when
 * the hook is off.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_ext_mrlease.h>

#include "common/fixture_rdm.h"

#define PROV  "tcp;ofi_rxm"
#define ARENA (256 * 1024)

static size_t page;

static struct fi_mrlease_ops *
ops_of(struct fid *fid)
{
	struct fi_mrlease_ops *ops = NULL;

	if (fi_open_ops(fid, FI_MRLEASE_OPS_1, 0, (void **) &ops, NULL))
		return NULL;
	return ops;
}

static int
domain_open_threading(struct mrlt_domain *d, enum fi_threading threading)
{
	struct fi_info *hints, *info;
	int ret;

	hints = mrlt_hints(PROV, FI_EP_RDM, FI_MSG | FI_RMA);
	if (!hints)
		return -FI_ENOMEM;
	hints->domain_attr->threading = threading;
	ret = mrlt_getinfo(hints, "127.0.0.1", NULL, 0, &info);
	if (ret)
		return ret;
	return mrlt_domain_open(info, d);
}

static int
domain_open(struct mrlt_domain *d)
{
	return domain_open_threading(d, FI_THREAD_UNSPEC);
}

static struct fi_mrlease_stats
stats_of(struct fi_mrlease_ops *ops, struct fid_domain *domain)
{
	struct fi_mrlease_stats s;

	memset(&s, 0xff, sizeof(s));
	if (ops->query_stats(domain, &s, sizeof(s)))
		mrlt_fail(__FILE__, __LINE__, "query_stats failed");
	return s;
}

/* A page-aligned arena, so pins cover exactly what the test expects;
 * tracked, so it is freed however the test ends. */
static char *
arena_alloc(void)
{
	uintptr_t p = (uintptr_t) mrlt_alloc(ARENA + page);

	return (char *) ((p + page - 1) & ~(uintptr_t) (page - 1));
}

/* The common start: a tcp;ofi_rxm domain, its extension, an arena. */
static int
open_all(struct mrlt_domain *d, struct fi_mrlease_ops **ops, char **arena)
{
	int ret = domain_open(d);

	if (ret)
		return ret;
	*ops = ops_of(&d->domain->fid);
	if (!*ops) {
		mrlt_fail(__FILE__, __LINE__,
			  "no FI_MRLEASE_OPS_1 on the domain");
		return -FI_ENOSYS;
	}
	*arena = arena_alloc();
	return 0;
}

/* ------------------------------------------------------------------ */

/* The application's only way to the cache: a wrong table, or one missing
 * from a fabric, would leave allocators no way to invalidate. */
static void
test_ops_open_answers_on_fabric_and_domain(void)
{
	struct fi_mrlease_ops *from_fabric, *from_domain;
	struct mrlt_domain d;

	CHECK_FI(domain_open(&d));
	from_fabric = ops_of(&d.fabric->fid);
	from_domain = ops_of(&d.domain->fid);
	CHECK(from_fabric && from_domain);
	CHECK_PTR(from_fabric, from_domain);
	CHECK_EQ(sizeof(struct fi_mrlease_ops), from_domain->size);
	CHECK(from_domain->invalidate && from_domain->pin &&
	      from_domain->set_span && from_domain->query_stats);
}

/* Other names, other classes and unknown flags must not hand out this
 * table (an application probing for another extension would call into
 * the wrong functions). */
static void
test_ops_open_refuses_other_names_classes_and_flags(void)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct mrlt_domain d;
	struct fid_cq *cq;
	void *ops = NULL;

	CHECK_FI(domain_open(&d));
	CHECK_FI(fi_cq_open(d.domain, &attr, &cq, NULL));
	mrlt_track_fid(&cq->fid);

	CHECK_EQ(-FI_ENOSYS,
		 fi_open_ops(&d.domain->fid, "mrlease_ops_v2", 0, &ops, NULL));
	CHECK_EQ(-FI_ENOSYS,
		 fi_open_ops(&cq->fid, FI_MRLEASE_OPS_1, 0, &ops, NULL));
	CHECK_EQ(-FI_EBADFLAGS,
		 fi_open_ops(&d.domain->fid, FI_MRLEASE_OPS_1, 1, &ops, NULL));
	CHECK(ops == NULL);
}

/* Run by the parent in a child process without FI_HOOK: the documented
 * way an application learns the hook is off is -FI_ENOSYS here. */
static void
test_ops_open_fails_without_the_hook(void)
{
	char self[4096];
	ssize_t len;
	int status;
	pid_t pid;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(len > 0);
	self[len] = '\0';
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		unsetenv("FI_HOOK");
		execl(self, self, "--without-hook", (char *) NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child without FI_HOOK saw the extension (status %d)",
		  status);
}

static int
child_without_hook(void)
{
	struct mrlt_domain d;

	if (domain_open(&d))
		return 2;
	return ops_of(&d.fabric->fid) || ops_of(&d.domain->fid) ?
		       1 :
		       (mrlt_close_all() ? 3 : 0);
}

/* A pin is one registration up front, and closing its handle must close
 * it, or pinned arenas leak MRs. (Its descriptor in real transfers, under a
 * strict checker: test_plugin_ext_mrcheck.) */
static void
test_pin_registers_once_and_close_releases_it(void)
{
	struct fi_mrlease_stats before, pinned, after;
	struct fi_mrlease_ops *ops;
	struct mrlt_domain d;
	struct fid_mr *pin;
	char *arena;

	CHECK_FI(open_all(&d, &ops, &arena));

	before = stats_of(ops, d.domain);
	CHECK_FI(ops->pin(d.domain, arena, ARENA, &pin));
	mrlt_track_fid(&pin->fid);
	pinned = stats_of(ops, d.domain);
	CHECK_EQ(before.registrations + 1, pinned.registrations);
	CHECK_EQ(before.entries + 1, pinned.entries);
	CHECK(pinned.registered_bytes >= before.registered_bytes + ARENA);

	CHECK_EQ(0, mrlt_close(&pin->fid, "pin"));
	after = stats_of(ops, d.domain);
	CHECK_EQ(pinned.deregistrations + 1, after.deregistrations);
	CHECK_EQ(before.entries, after.entries);
	CHECK_EQ(before.registered_bytes, after.registered_bytes);
}

/* The crash leases prevent, through the API: invalidate retires a pinned entry
 * at once, but the registration its holder still uses stays open until the
 * handle closes, so its descriptor never dangles. */
static void
test_invalidate_retires_a_pin_that_stays_open_until_closed(void)
{
	struct fi_mrlease_stats pinned, retired;
	struct fi_mrlease_ops *ops;
	struct mrlt_domain d;
	struct fid_mr *pin;
	char *arena;

	CHECK_FI(open_all(&d, &ops, &arena));
	CHECK_FI(ops->pin(d.domain, arena, ARENA, &pin));
	mrlt_track_fid(&pin->fid);
	pinned = stats_of(ops, d.domain);

	/* Another value in the arena is freed: its pages are reported. */
	CHECK_EQ(0, ops->invalidate(arena + 8 * page, page));
	retired = stats_of(ops, d.domain);
	CHECK_EQ(pinned.entries - 1, retired.entries);
	CHECK_EQ(pinned.retired_leased + 1, retired.retired_leased);
	CHECK_EQ(pinned.deregistrations, retired.deregistrations);
	CHECK_EQ(pinned.registered_bytes, retired.registered_bytes);

	CHECK_EQ(0, mrlt_close(&pin->fid, "pin"));
	CHECK_EQ(retired.deregistrations + 1,
		 stats_of(ops, d.domain).deregistrations);
}

/* Reclaim is process-wide: an allocator does not know which domains
 * registered its pages, so one call must reach them all. */
static void
test_invalidate_reaches_every_domain(void)
{
	struct fid_mr *pin1, *pin2;
	struct fi_mrlease_ops *ops;
	struct mrlt_domain d1, d2;
	char *arena;

	CHECK_FI(open_all(&d1, &ops, &arena));
	CHECK_FI(domain_open(&d2));
	CHECK_FI(ops->pin(d1.domain, arena, ARENA / 2, &pin1));
	mrlt_track_fid(&pin1->fid);
	CHECK_FI(ops->pin(d2.domain, arena + ARENA / 2, ARENA / 2, &pin2));
	mrlt_track_fid(&pin2->fid);
	CHECK_EQ(1, stats_of(ops, d1.domain).entries);
	CHECK_EQ(1, stats_of(ops, d2.domain).entries);

	CHECK_EQ(0, ops->invalidate(arena, ARENA));
	CHECK_EQ(0, stats_of(ops, d1.domain).entries);
	CHECK_EQ(0, stats_of(ops, d2.domain).entries);
	CHECK_EQ(0, mrlt_close(&pin1->fid, "pin1"));
	CHECK_EQ(0, mrlt_close(&pin2->fid, "pin2"));
}

/* End is exclusive: a range that only touches an entry must leave it, or
 * freeing one allocation retires its neighbour's registration for nothing;
 * and invalidate(NULL, 0) is the documented no-op. */
static void
test_invalidate_leaves_touching_ranges_and_empty_ranges_alone(void)
{
	struct fi_mrlease_ops *ops;
	struct mrlt_domain d;
	struct fid_mr *pin;
	char *arena;

	CHECK_FI(open_all(&d, &ops, &arena));
	CHECK_FI(ops->pin(d.domain, arena + page, ARENA - 2 * page, &pin));
	mrlt_track_fid(&pin->fid);

	CHECK_EQ(0, ops->invalidate(NULL, 0));
	CHECK_EQ(0, ops->invalidate(arena + 2 * page, 0));
	CHECK_EQ(0, ops->invalidate(arena, page));
	CHECK_EQ(0, ops->invalidate(arena + ARENA - page, page));
	CHECK_EQ(1, stats_of(ops, d.domain).entries);

	CHECK_EQ(0, ops->invalidate(arena + ARENA - page - 1, 1));
	CHECK_EQ(0, stats_of(ops, d.domain).entries);
	CHECK_EQ(0, mrlt_close(&pin->fid, "pin"));
}

static int
never_called_span(void *arg, const void *addr, size_t len, void **span_base,
		  size_t *span_len)
{
	(void) arg, (void) addr, (void) len, (void) span_base, (void) span_len;
	return -FI_ENOENT;
}

/* Each bad input gets -FI_EINVAL and leaves the cache exactly as it was: a
 * half-applied call (a pin registered before the error, a counter bumped)
 * would leak or mislead. */
static void
test_bad_input_returns_einval_and_changes_nothing(void)
{
	struct fi_mrlease_stats before_domain, before_process, s;
	struct fid_mr *pin, *sentinel = (struct fid_mr *) &sentinel;
	struct fid_mr *mr = sentinel;
	struct fid_domain fake;
	struct fi_mrlease_ops *ops;
	struct mrlt_domain d;
	char *arena;
	const void *top = (const void *) (UINTPTR_MAX - page + 1);

	CHECK_FI(open_all(&d, &ops, &arena));
	CHECK_FI(ops->pin(d.domain, arena, ARENA, &pin));
	mrlt_track_fid(&pin->fid);
	memset(&fake, 0, sizeof(fake));
	fake.fid.fclass = FI_CLASS_DOMAIN;
	before_domain = stats_of(ops, d.domain);
	before_process = stats_of(ops, NULL);

	/* Wrapping ranges. */
	CHECK_EQ(-FI_EINVAL, ops->invalidate(top, 2 * page));
	CHECK_EQ(-FI_EINVAL, ops->pin(d.domain, top, 2 * page, &mr));
	/* pin: length 0, NULL address, NULL result. */
	CHECK_EQ(-FI_EINVAL, ops->pin(d.domain, arena, 0, &mr));
	CHECK_EQ(-FI_EINVAL, ops->pin(d.domain, NULL, page, &mr));
	CHECK_EQ(-FI_EINVAL, ops->pin(d.domain, arena, page, NULL));
	/* Domains that are not mrlease domains. */
	CHECK_EQ(-FI_EINVAL, ops->pin(NULL, arena, page, &mr));
	CHECK_EQ(-FI_EINVAL, ops->pin(&fake, arena, page, &mr));
	CHECK_EQ(-FI_EINVAL,
		 ops->pin((struct fid_domain *) d.fabric, arena, page, &mr));
	CHECK_EQ(-FI_EINVAL, ops->set_span(NULL, never_called_span, NULL));
	CHECK_EQ(-FI_EINVAL, ops->set_span(&fake, never_called_span, NULL));
	CHECK_EQ(-FI_EINVAL, ops->query_stats(&fake, &s, sizeof(s)));
	/* query_stats: no record, or no room. */
	CHECK_EQ(-FI_EINVAL, ops->query_stats(d.domain, NULL, sizeof(s)));
	CHECK_EQ(-FI_EINVAL, ops->query_stats(NULL, NULL, sizeof(s)));
	CHECK_EQ(-FI_EINVAL, ops->query_stats(d.domain, &s, 0));
	CHECK_PTR(sentinel, mr);

	s = stats_of(ops, d.domain);
	CHECK(!memcmp(&before_domain, &s, sizeof(s)));
	s = stats_of(ops, NULL);
	CHECK(!memcmp(&before_process, &s, sizeof(s)));
	CHECK_EQ(0, mrlt_close(&pin->fid, "pin"));
}

/* The record grows with later versions: an older caller's smaller size
 * gets the prefix it knows and nothing past it is written (that memory is
 * not the caller's); a newer caller's larger size finds zeros past ours. */
static void
test_query_stats_fills_a_prefix_or_zero_fills_the_tail(void)
{
	const size_t prefix = offsetof(struct fi_mrlease_stats, registrations);
	const size_t larger = sizeof(struct fi_mrlease_stats) + 64;
	struct fi_mrlease_stats full;
	struct fi_mrlease_ops *ops;
	unsigned char buf[sizeof(struct fi_mrlease_stats) + 64];
	struct mrlt_domain d;
	struct fid_mr *pin;
	char *arena;

	CHECK_FI(open_all(&d, &ops, &arena));
	CHECK_FI(ops->pin(d.domain, arena, ARENA, &pin));
	mrlt_track_fid(&pin->fid);
	full = stats_of(ops, d.domain);
	CHECK(full.registrations > 0 && full.entries > 0);

	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(0, ops->query_stats(d.domain, (void *) buf, prefix));
	CHECK(!memcmp(buf, &full, prefix));
	for (size_t i = prefix; i < sizeof(buf); i++)
		CHECK_MSG(buf[i] == 0xaa, "byte %zu past the prefix written",
			  i);

	memset(buf, 0xaa, sizeof(buf));
	CHECK_EQ(0, ops->query_stats(d.domain, (void *) buf, larger));
	CHECK(!memcmp(buf, &full, sizeof(full)));
	for (size_t i = sizeof(full); i < larger; i++)
		CHECK_MSG(buf[i] == 0, "tail byte %zu not zeroed", i);

	CHECK_EQ(0, mrlt_close(&pin->fid, "pin"));
}

/* query_stats(NULL) answers for the whole process, so a tool can watch a
 * job without knowing its domains. */
static void
test_query_stats_without_domain_counts_every_domain(void)
{
	struct fi_mrlease_stats s1, s2, all;
	struct fid_mr *pin1, *pin2;
	struct fi_mrlease_ops *ops;
	struct mrlt_domain d1, d2;
	char *arena;

	CHECK_FI(open_all(&d1, &ops, &arena));
	CHECK_FI(domain_open(&d2));
	CHECK_FI(ops->pin(d1.domain, arena, page, &pin1));
	mrlt_track_fid(&pin1->fid);
	CHECK_FI(ops->pin(d2.domain, arena + page, page, &pin2));
	mrlt_track_fid(&pin2->fid);

	s1 = stats_of(ops, d1.domain);
	s2 = stats_of(ops, d2.domain);
	all = stats_of(ops, NULL);
	CHECK(all.registrations >= s1.registrations + s2.registrations);
	CHECK(all.entries >= s1.entries + s2.entries);
	CHECK(all.registered_bytes >=
	      s1.registered_bytes + s2.registered_bytes);
	CHECK_EQ(0, mrlt_close(&pin1->fid, "pin1"));
	CHECK_EQ(0, mrlt_close(&pin2->fid, "pin2"));
}

/* ------------------------------------------------------------------ */
/* Span resolvers: observable only once a NULL-descriptor operand or a  */
/* local fi_mr_reg is served from the cache (the data path).           */
/* ------------------------------------------------------------------ */

struct span_probe {
	struct fi_mrlease_ops *ops;
	char *span; /* the extent answered */
	size_t span_len;
	int calls;
	const char *reclaim; /* invalidated from inside the resolver */
	size_t reclaim_len;
	int reclaim_ret;
};

static int
probe_span(void *arg, const void *addr, size_t len, void **span_base,
	   size_t *span_len)
{
	struct span_probe *probe = arg;

	(void) addr, (void) len;
	probe->calls++;
	if (probe->reclaim)
		probe->reclaim_ret = probe->ops->invalidate(probe->reclaim,
							    probe->reclaim_len);
	*span_base = probe->span;
	*span_len = probe->span_len;
	return 0;
}

/* A local-only fi_mr_reg of [addr, addr + len), which the hook serves from
 * the cache (a lookup, and on a miss the span resolver). */
static int
local_reg(struct mrlt_domain *d, struct fi_mrlease_ops *ops, void *addr,
	  size_t len, struct fid_mr **mr)
{
	uint64_t lookups = stats_of(ops, d->domain).lookups;
	int ret;

	ret = fi_mr_reg(d->domain, addr, len, FI_READ | FI_WRITE, 0,
			mrlt_next_key(), 0, mr, NULL);
	if (ret)
		return ret;
	mrlt_track_fid(&(*mr)->fid);
	if (stats_of(ops, d->domain).lookups == lookups) {
		mrlt_fail(__FILE__, __LINE__,
			  "a local fi_mr_reg did not go through the cache");
		return -FI_EOTHER;
	}
	return 0;
}

/* The resolver widens a miss to the allocator's extent, so neighbours share
 * one registration; removing it goes back to the operand's own pages. */
static void
test_set_span_widens_misses_until_removed(void)
{
	struct span_probe probe = {0};
	struct fi_mrlease_stats s;
	struct fid_mr *mr1, *mr2, *mr3;
	struct mrlt_domain d;
	char *arena;

	CHECK_FI(open_all(&d, &probe.ops, &arena));
	probe.span = arena;
	probe.span_len = ARENA / 2;
	CHECK_EQ(0, probe.ops->set_span(d.domain, probe_span, &probe));

	CHECK_FI(local_reg(&d, probe.ops, arena + 100, 64, &mr1));
	CHECK_EQ(1, probe.calls);
	s = stats_of(probe.ops, d.domain);
	CHECK(s.registered_bytes >= ARENA / 2);
	/* A neighbour inside the span is a hit: no resolver call, no
	 * registration. */
	CHECK_FI(local_reg(&d, probe.ops, arena + ARENA / 2 - 200, 64, &mr2));
	CHECK_EQ(1, probe.calls);
	CHECK_EQ(s.registrations, stats_of(probe.ops, d.domain).registrations);

	CHECK_EQ(0, probe.ops->set_span(d.domain, NULL, NULL));
	CHECK_FI(local_reg(&d, probe.ops, arena + ARENA - 200, 64, &mr3));
	CHECK_EQ(1, probe.calls);
}

/* A resolver answer that does not contain the operand is ignored: trusting
 * it would register the wrong memory and leave the operand unregistered.
 * The operand's own pages are registered instead, and nothing fails. */
static void
test_span_not_containing_the_operand_is_ignored(void)
{
	struct span_probe probe = {0};
	struct fi_mrlease_stats before, after;
	struct fid_mr *mr;
	struct mrlt_domain d;
	char *arena;

	CHECK_FI(open_all(&d, &probe.ops, &arena));
	probe.span = arena + ARENA / 2; /* the other half of the arena */
	probe.span_len = ARENA / 2;
	CHECK_EQ(0, probe.ops->set_span(d.domain, probe_span, &probe));

	before = stats_of(probe.ops, d.domain);
	CHECK_FI(local_reg(&d, probe.ops, arena + page + 100, 64, &mr));
	after = stats_of(probe.ops, d.domain);
	CHECK_EQ(1, probe.calls);
	CHECK_EQ(before.registrations + 1, after.registrations);
	CHECK_EQ(before.registered_bytes + page, after.registered_bytes);
	CHECK_EQ(0, probe.ops->set_span(d.domain, NULL, NULL));
}

/* An allocator may purge while mrlease is resolving a miss (its own
 * lookups, or the provider's malloc, can trigger it): invalidate called
 * from inside the miss must neither deadlock nor be lost. */
static void
test_invalidate_inside_a_miss_neither_deadlocks_nor_is_lost(void)
{
	struct span_probe probe = {.reclaim_ret = 1};
	struct fid_mr *pin, *mr;
	struct mrlt_domain d;
	char *arena;

	CHECK_FI(open_all(&d, &probe.ops, &arena));
	CHECK_FI(probe.ops->pin(d.domain, arena + ARENA / 2, ARENA / 2, &pin));
	mrlt_track_fid(&pin->fid);
	probe.span = arena;
	probe.span_len = ARENA / 2;
	probe.reclaim = arena + ARENA / 2;
	probe.reclaim_len = page;
	CHECK_EQ(0, probe.ops->set_span(d.domain, probe_span, &probe));

	CHECK_FI(local_reg(&d, probe.ops, arena + 100, 64, &mr));
	CHECK_EQ(1, probe.calls);
	CHECK_EQ(0, probe.reclaim_ret);
	/* The pin's entry is gone, the miss's registration is the one left. */
	CHECK_EQ(1, stats_of(probe.ops, d.domain).entries);
	CHECK_EQ(0, probe.ops->set_span(d.domain, NULL, NULL));
}

/* ------------------------------------------------------------------ */
/* Concurrency (also run under ThreadSanitizer)                         */
/* ------------------------------------------------------------------ */

#define CHURN_PINS 1500

struct churn {
	struct fi_mrlease_ops *ops;
	struct fid_domain *domain;
	char *arena;
	atomic_bool stop;
	atomic_int errors;
	atomic_ulong invalidations; /* pinners start after the first */
};

struct pinner {
	struct churn *churn;
	char *region; /* this thread's half of the arena */
};

static void *
pin_loop(void *arg)
{
	struct pinner *p = arg;
	struct churn *c = p->churn;
	struct fid_mr *pin;

	/* Race real invalidations, however the threads are scheduled. */
	while (!atomic_load(&c->invalidations))
		sched_yield();
	for (int i = 0; i < CHURN_PINS; i++) {
		char *base = p->region + (size_t) (i % 8) * 4 * page;

		if (c->ops->pin(c->domain, base, 4 * page, &pin) ||
		    fi_close(&pin->fid))
			atomic_fetch_add(&c->errors, 1);
	}
	return NULL;
}

static void *
invalidate_loop(void *arg)
{
	struct churn *c = arg;

	while (!atomic_load(&c->stop)) {
		if (c->ops->invalidate(c->arena, ARENA))
			atomic_fetch_add(&c->errors, 1);
		atomic_fetch_add(&c->invalidations, 1);
	}
	return NULL;
}

static void *
stats_loop(void *arg)
{
	struct churn *c = arg;
	struct fi_mrlease_stats s;

	while (!atomic_load(&c->stop)) {
		if (c->ops->query_stats(NULL, &s, sizeof(s)) ||
		    c->ops->query_stats(c->domain, &s, sizeof(s)))
			atomic_fetch_add(&c->errors, 1);
	}
	return NULL;
}

/* Pins taken and released on two threads while a third invalidates the
 * same arena and a fourth reads statistics: a registration closed twice, or
 * never, or a lock held across a close, shows up as a failed call, a
 * count that does not balance, a hang or a ThreadSanitizer report. */
static void
test_pins_invalidate_and_stats_race_without_losing_a_registration(void)
{
	struct fi_mrlease_stats before, after;
	pthread_t pinners[2], invalidator, reader;
	struct pinner p[2];
	struct churn c = {0};
	struct mrlt_domain d;

	CHECK_FI(domain_open_threading(&d, FI_THREAD_SAFE));
	CHECK((c.ops = ops_of(&d.domain->fid)));
	c.arena = arena_alloc();
	c.domain = d.domain;
	before = stats_of(c.ops, d.domain);

	CHECK(!pthread_create(&invalidator, NULL, invalidate_loop, &c));
	CHECK(!pthread_create(&reader, NULL, stats_loop, &c));
	for (int t = 0; t < 2; t++) {
		p[t] = (struct pinner){&c, c.arena + (size_t) t * ARENA / 2};
		CHECK(!pthread_create(&pinners[t], NULL, pin_loop, &p[t]));
	}
	for (int t = 0; t < 2; t++)
		pthread_join(pinners[t], NULL);
	atomic_store(&c.stop, true);
	pthread_join(invalidator, NULL);
	pthread_join(reader, NULL);

	after = stats_of(c.ops, d.domain);
	CHECK_EQ(0, atomic_load(&c.errors));
	CHECK(atomic_load(&c.invalidations) > 0);
	CHECK_EQ(before.registrations + 2 * CHURN_PINS, after.registrations);
	CHECK_EQ(after.registrations, after.deregistrations);
	CHECK_EQ(0, after.entries);
	CHECK_EQ(0, after.leases);
	CHECK_EQ(0, after.registered_bytes);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
#define T(fn) {#fn, fn}
		T(test_ops_open_answers_on_fabric_and_domain),
		T(test_ops_open_refuses_other_names_classes_and_flags),
		T(test_ops_open_fails_without_the_hook),
		T(test_pin_registers_once_and_close_releases_it),
		T(test_invalidate_retires_a_pin_that_stays_open_until_closed),
		T(test_invalidate_reaches_every_domain),
		T(test_invalidate_leaves_touching_ranges_and_empty_ranges_alone),
		T(test_bad_input_returns_einval_and_changes_nothing),
		T(test_query_stats_fills_a_prefix_or_zero_fills_the_tail),
		T(test_query_stats_without_domain_counts_every_domain),
		T(test_set_span_widens_misses_until_removed),
		T(test_span_not_containing_the_operand_is_ignored),
		T(test_invalidate_inside_a_miss_neither_deadlocks_nor_is_lost),
		T(test_pins_invalidate_and_stats_race_without_losing_a_registration),
#undef T
	};

	page = (size_t) sysconf(_SC_PAGESIZE);
	if (argc > 1 && !strcmp(argv[1], "--without-hook"))
		return child_without_hook();

	mrlt_select(argc - 1, argv + 1);
	/* libfabric reads FI_HOOK at its first call. */
	setenv("FI_HOOK", "mrlease", 1);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		mrlt_run(tests[i].name, tests[i].fn);
	return mrlt_done();
}
