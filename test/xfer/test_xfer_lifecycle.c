/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The edges of an object's life under FI_HOOK=mrlease, on every loopback
 * provider: a close the provider refuses (domain with endpoints or MRs open,
 * CQ, counter and AV bound to an open endpoint, fabric with a domain) leaves
 * the object exactly as usable as before, and it closes properly later;
 * libfabric's cleanup (the provider's cleanup callback, run here from the
 * main thread while another thread keeps posting) frees nothing that thread
 * uses and calls nothing in the provider; a fork while a thread is inside
 * leased transfers leaves children that exit, or open libfabric afresh with
 * a cache of their own, without hanging, and a parent that carries on.
 *
 * Runs itself again with FI_HOOK=mrlease, and with FI_HOOK unset as the
 * no-hook control of each refused close.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_ext_mrlease.h>
#include <rdma/providers/fi_prov.h>

#include "common/fixture_rdm.h"
#include "common/mrlt.h"
#include "common/xfer_util.h"

#define LEN	      (64 * 1024) /* above FI_MRLEASE_MIN_SIZE: every operand leased */
#define CHILD_SECONDS 60 /* bound of one child's life */

static const char *prov;

/* ---- helpers ------------------------------------------------------------ */

static bool
pair_open(struct mrlt_pair *p, struct mrlt_pair_opts opts)
{
	opts.prov = prov;
	return mrlt_pair_open_hooked(&opts, p);
}

static char *
buffer(size_t len)
{
	void *buf = NULL;

	if (posix_memalign(&buf, 4096, len))
		abort();
	memset(buf, 0, len);
	return buf;
}

static int
stats_of(struct mrlt_pair *p, struct fi_mrlease_stats *s)
{
	memset(s, 0, sizeof(*s));
	return p->mrl->query_stats(p->domain, s, sizeof(*s));
}

/* ---- refused closes ------------------------------------------------------ */

/*
 * The no-hook control of a refused close (--bare-refusal WHAT PROVIDER, run
 * with FI_HOOK unset): the objects of case WHAT on the bare provider, the
 * refused close, then every close; its exit status says how that went. A
 * provider that tears down part of the object before refusing
 * crashes here (a double free, SIGSEGV): the hook has nothing to keep
 * usable there.
 */
enum bare_status {
	BARE_REFUSED = 0,
	BARE_CLOSED = 1,
	BARE_UNAVAILABLE = 2,
	BARE_LATER_CLOSE = 3,
};

static enum bare_status
bare_refusal_run(const char *what, char *buf)
{
	struct mrlt_pair_opts opts = {.prov = prov,
				      .counters_only =
					      !strcmp(what, "counter")};
	struct fi_info *info;
	struct mrlt_domain d;
	struct fid_mr *mr;
	struct mrlt_pair p;
	struct fid *fid;

	if (!strcmp(what, "domain with MRs")) {
		/* As its case: a domain holding an MR, no endpoint. */
		if (mrlt_getinfo(mrlt_hints(prov, FI_EP_RDM, FI_MSG), NULL,
				 NULL, 0, &info) ||
		    mrlt_domain_open(info, &d) ||
		    mrlt_mr_reg(&d, NULL, buf, LEN, FI_REMOTE_READ, &mr))
			return BARE_UNAVAILABLE;
		if (!fi_close(&d.domain->fid))
			return BARE_CLOSED;
		return fi_close(&mr->fid) || fi_close(&d.domain->fid) ||
				       fi_close(&d.fabric->fid) ?
			       BARE_LATER_CLOSE :
			       BARE_REFUSED;
	}
	if (mrlt_pair_open(&opts, &p))
		return BARE_UNAVAILABLE;
	if (!strcmp(what, "fabric"))
		fid = &p.fabric->fid;
	else if (!strcmp(what, "av"))
		fid = &p.av->fid;
	else if (!strcmp(what, "cq"))
		fid = &p.cq->fid;
	else if (!strcmp(what, "counter"))
		fid = &p.tx_cntr->fid;
	else
		fid = &p.domain->fid;
	if (!fi_close(fid))
		return BARE_CLOSED;
	return mrlt_pair_close(&p) ? BARE_LATER_CLOSE : BARE_REFUSED;
}

static enum bare_status
bare_refusal(const char *what)
{
	char *buf = buffer(LEN);
	enum bare_status st = bare_refusal_run(what, buf);

	free(buf);
	return st;
}

/* Whether prov refuses closing `what` soundly without the hook (the
 * control, in a child of its own: libfabric reads FI_HOOK once per
 * process); else the case is a skip with the control's reason. */
static bool
refusal_sound(const char *what)
{
	char *args[] = {"test_xfer_lifecycle", "--bare-refusal", (char *) what,
			(char *) prov, NULL};
	char sig[64];
	const char *why;
	int status;
	pid_t pid;

	pid = mrlt_spawn_bare(args);
	if (pid < 0) {
		mrlt_fail(__FILE__, __LINE__, "fork: %s", strerror(errno));
		return false;
	}
	status = mrlt_wait_child(pid, CHILD_SECONDS);
	if (status == -1) {
		why = "the control did not exit in time";
	} else if (WIFSIGNALED(status)) {
		snprintf(sig, sizeof(sig), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
		why = sig;
	} else if (WEXITSTATUS(status) == BARE_REFUSED ||
		   WEXITSTATUS(status) == BARE_UNAVAILABLE) {
		return true;
	} else if (WEXITSTATUS(status) == BARE_CLOSED) {
		why = "the provider closes it";
	} else if (WEXITSTATUS(status) == BARE_LATER_CLOSE) {
		why = "a close after the refusal fails";
	} else {
		mrlt_fail(__FILE__, __LINE__,
			  "the no-hook control of the %s "
			  "close exited with %d",
			  what, WEXITSTATUS(status));
		return false;
	}
	mrlt_skip_current("%s's refused %s close is unsound without the hook: "
			  "%s",
			  prov, what, why);
	return false;
}

/* A domain close refused for its open endpoints: a hook that frees its cache
 * domain before the provider agreed has their next NULL-desc post read freed
 * memory, and the extension answer -FI_EINVAL on a domain still open. */
static void
test_refused_domain_close_leaves_endpoints_posting(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *src = buffer(LEN), *dst = buffer(LEN);
	int ret;

	if (!refusal_sound("domain") ||
	    !pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	ret = xfer_round_trip(&p, src, dst, LEN, 1, 1);
	CHECK_MSG(!ret, "before the close: %s", xfer_round_error(ret));
	CHECK_FI(stats_of(&p, &s0));
	CHECK(s0.entries >= 2);

	ret = fi_close(&p.domain->fid);
	CHECK_MSG(ret < 0,
		  "the provider closed a domain with endpoints open "
		  "(%d)",
		  ret);
	for (uint64_t i = 2; i < 6; i++) {
		ret = xfer_round_trip(&p, src, dst, LEN, i, i);
		CHECK_MSG(!ret, "after the refused close, round %llu: %s",
			  (unsigned long long) i, xfer_round_error(ret));
	}
	/* Still the hook's domain: the extension answers on it, and the
	 * rounds leased through its cache. */
	CHECK_FI(stats_of(&p, &s1));
	CHECK(s1.lookups >= s0.lookups + 8);
	CHECK_EQ(0, s1.leases);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

static uintptr_t span_calls;

static int
span_page(void *arg, const void *addr, size_t len, void **base, size_t *span)
{
	(void) arg, (void) len;
	span_calls++;
	*base = (void *) ((uintptr_t) addr & ~(uintptr_t) 4095);
	*span = 4096;
	return 0;
}

/* A domain close refused for its open MRs: a hook that gave its cache domain
 * up first has query_stats, pin and set_span answer -FI_EINVAL on a domain
 * still open, and serves its cached MRs no more. */
static void
test_refused_domain_close_leaves_mrs_and_extension_working(void)
{
	struct fi_info *info;
	struct mrlt_domain d;
	struct fi_mrlease_ops *ops = NULL;
	struct fi_mrlease_stats s0, s1;
	struct fid_mr *remote, *local, *again, *pin;
	char *rbuf = mrlt_alloc(LEN), *lbuf = mrlt_alloc(LEN);
	char *arena = mrlt_alloc(4 * LEN);
	int ret;

	if (!refusal_sound("domain with MRs"))
		return;
	ret = mrlt_getinfo(mrlt_hints(prov, FI_EP_RDM, FI_MSG), NULL, NULL, 0,
			   &info);
	if (ret == -FI_ENODATA) {
		mrlt_skip_current("%s not available", prov);
		return;
	}
	CHECK_FI(ret);
	CHECK_FI(mrlt_domain_open(info, &d));
	CHECK_FI(fi_open_ops(&d.domain->fid, FI_MRLEASE_OPS_1, 0,
			     (void **) &ops, NULL));
	/* An MR the provider holds (remote access is never cached) and one
	 * served from the cache (local access: a lease). */
	CHECK_FI(mrlt_mr_reg(&d, NULL, rbuf, LEN, FI_REMOTE_READ, &remote));
	CHECK_FI(mrlt_mr_reg(&d, NULL, lbuf, LEN, FI_SEND | FI_RECV, &local));
	memset(&s0, 0, sizeof(s0));
	CHECK_FI(ops->query_stats(d.domain, &s0, sizeof(s0)));
	CHECK_EQ(1, s0.leases);

	ret = fi_close(&d.domain->fid);
	if (!ret) {
		/* Gone: nothing tracked may touch it again. */
		d.domain = NULL;
		CHECK_MSG(false, "the provider closed a domain with MRs open");
	}
	memset(&s1, 0, sizeof(s1));
	CHECK_FI(ops->query_stats(d.domain, &s1, sizeof(s1)));
	CHECK_EQ(1, s1.leases);
	/* The leased entry stayed indexed: the same local MR is a hit. */
	CHECK_FI(mrlt_mr_reg(&d, NULL, lbuf, LEN, FI_SEND | FI_RECV, &again));
	CHECK_FI(ops->query_stats(d.domain, &s1, sizeof(s1)));
	CHECK_EQ(s0.hits + 1, s1.hits);
	CHECK_EQ(s0.registrations, s1.registrations);
	CHECK_FI(ops->pin(d.domain, arena, 4 * LEN, &pin));
	mrlt_track_fid(&pin->fid);
	CHECK_FI(ops->set_span(d.domain, span_page, NULL));
	CHECK_FI(ops->set_span(d.domain, NULL, NULL));

	CHECK_EQ(0, mrlt_close(&pin->fid, "pin"));
	CHECK_EQ(0, mrlt_close(&again->fid, "cached MR"));
	CHECK_EQ(0, mrlt_close(&local->fid, "cached MR"));
	CHECK_EQ(0, mrlt_close(&remote->fid, "remote MR"));
	CHECK_EQ(0, mrlt_close(&d.domain->fid, "domain"));
}

/* A CQ close refused for a bound endpoint: a hook that drops its CQ state
 * first loses the completions, and the leases they release, read after it. */
static void
test_refused_cq_close_leaves_cq_completing(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s;
	char *src = buffer(LEN), *dst = buffer(LEN);
	int ret;

	if (!refusal_sound("cq") || !pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	ret = fi_close(&p.cq->fid);
	CHECK_MSG(ret < 0, "the provider closed a CQ bound to endpoints (%d)",
		  ret);
	for (uint64_t i = 1; i < 4; i++) {
		ret = xfer_round_trip(&p, src, dst, LEN, i, i);
		CHECK_MSG(!ret, "round %llu: %s", (unsigned long long) i,
			  xfer_round_error(ret));
	}
	CHECK_FI(stats_of(&p, &s));
	CHECK_EQ(0, s.leases);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* A counter close refused for a bound endpoint: a hook that drops its
 * counter state first never releases the counters-only endpoint's leases. */
static void
test_refused_counter_close_leaves_counter_counting(void)
{
	struct mrlt_pair p;
	long spins = 0;
	char *src = buffer(LEN), *dst = buffer(LEN);
	int ret;

	if (!refusal_sound("counter") ||
	    !pair_open(&p, (struct mrlt_pair_opts){.counters_only = true}))
		goto out;
	ret = fi_close(&p.tx_cntr->fid);
	CHECK_MSG(ret < 0,
		  "the provider closed a counter bound to an endpoint "
		  "(%d)",
		  ret);
	ret = fi_close(&p.rx_cntr->fid);
	CHECK_MSG(ret < 0,
		  "the provider closed a counter bound to an endpoint "
		  "(%d)",
		  ret);
	for (uint64_t i = 1; i < 4; i++) {
		ret = xfer_round_trip(&p, src, dst, LEN, i, i);
		CHECK_MSG(!ret, "round %llu: %s", (unsigned long long) i,
			  xfer_round_error(ret));
	}
	while (mrlt_live_leases(&p) != 0 && ++spins < MRLT_MAX_POLLS) {
		fi_cntr_read(p.tx_cntr);
		fi_cntr_read(p.rx_cntr);
	}
	CHECK_EQ(0, mrlt_live_leases(&p));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* An AV close refused for bound endpoints: a hook that forgets the AV first
 * leaves the endpoints sending to addresses nothing resolves. */
static void
test_refused_av_close_leaves_av_addressing(void)
{
	struct mrlt_pair p;
	char *src = buffer(LEN), *dst = buffer(LEN), name[256];
	size_t len = sizeof(name);
	int ret;

	if (!refusal_sound("av") || !pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	ret = fi_close(&p.av->fid);
	CHECK_MSG(ret < 0, "the provider closed an AV bound to endpoints (%d)",
		  ret);
	CHECK_FI(fi_av_lookup(p.av, p.addr[1], name, &len));
	for (uint64_t i = 1; i < 4; i++) {
		ret = xfer_round_trip(&p, src, dst, LEN, i, i);
		CHECK_MSG(!ret, "round %llu: %s", (unsigned long long) i,
			  xfer_round_error(ret));
	}
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* A fabric close refused for its open domain: a hook that forgets the fabric
 * first can open no second domain on it, nor keep the first one posting. */
static void
test_refused_fabric_close_leaves_fabric_opening(void)
{
	struct mrlt_pair p;
	struct fid_domain *second;
	struct fi_mrlease_stats s;
	char *src = buffer(LEN), *dst = buffer(LEN);
	int ret;

	if (!refusal_sound("fabric") ||
	    !pair_open(&p, (struct mrlt_pair_opts){0}))
		goto out;
	ret = fi_close(&p.fabric->fid);
	CHECK_MSG(ret < 0,
		  "the provider closed a fabric with a domain open (%d)", ret);
	CHECK_FI(fi_domain(p.fabric, p.info, &second, NULL));
	memset(&s, 0, sizeof(s));
	CHECK_FI(p.mrl->query_stats(second, &s, sizeof(s)));
	CHECK_EQ(0, fi_close(&second->fid));
	ret = xfer_round_trip(&p, src, dst, LEN, 1, 1);
	CHECK_MSG(!ret, "%s", xfer_round_error(ret));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* ---- libfabric's cleanup while a thread posts ---------------------------- */

#define BUFS	    8 /* more than a thread's two hot ways: index walks */
#define FRESH	    64 /* buffers used once each before they come round */
#define POST_ROUNDS 200

struct poster {
	struct mrlt_pair *p;
	char *src[BUFS], *dst;
	char *fresh; /* FRESH buffers of LEN */
	atomic_int rounds; /* done, for the main thread */
	atomic_int stop; /* 1: stop after the round in progress */
	atomic_int fresh_after; /* rounds from a fresh buffer after `cleaned` */
	atomic_int cleaned; /* the cleanup returned */
	int err;
	char what[160];
};

static void
poster_init(struct poster *t, struct mrlt_pair *p)
{
	t->p = p;
	t->dst = buffer(LEN);
	for (int i = 0; i < BUFS; i++)
		t->src[i] = buffer(LEN);
	t->fresh = buffer((size_t) FRESH * LEN);
}

static void
poster_fini(struct poster *t)
{
	for (int i = 0; i < BUFS; i++)
		free(t->src[i]);
	free(t->dst);
	free(t->fresh);
}

/* NULL-desc rounds from the cached buffers in turn (hits through the index)
 * and, every fourth, from a buffer not used lately (a miss: a
 * registration). */
static void *
poster_main(void *arg)
{
	struct poster *t = arg;

	for (int i = 0; !atomic_load(&t->stop); i++) {
		char *src = t->src[i % BUFS];
		bool cleaned = atomic_load(&t->cleaned), fresh = i % 4 == 3;
		int ret;

		if (fresh)
			src = t->fresh + (size_t) (i / 4 % FRESH) * LEN;
		ret = xfer_round_trip(t->p, src, t->dst, LEN,
				      (uint64_t) i + 100, 0);
		if (ret) {
			t->err = ret;
			snprintf(t->what, sizeof(t->what), "round %d: %s", i,
				 xfer_round_error(ret));
			break;
		}
		if (cleaned && fresh)
			atomic_fetch_add(&t->fresh_after, 1);
		atomic_fetch_add(&t->rounds, 1);
	}
	return NULL;
}

/* Wait (bounded, yielding) until *v >= want. */
static bool
wait_at_least(atomic_int *v, int want)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	while (atomic_load(v) < want) {
		if (mrlt_wait_over(&w))
			return false;
		sched_yield();
	}
	return true;
}

/* libfabric's cleanup at exit runs while the application's threads may still
 * post: freeing the cache domains under them is a use after free in the hit
 * path (a double free when the application closes its domain), and closing
 * their registrations calls into provider objects still in use. */
static void
test_cleanup_while_posting_leaves_poster_running(void)
{
	struct fi_provider *plugin = xfer_plugin_provider();
	struct fi_mrlease_stats s0, s1;
	struct mrlt_pair p;
	struct poster t = {0};
	pthread_t th;
	int stats_ret = -FI_EOTHER;
	bool started;

	CHECK_MSG(plugin && plugin->cleanup,
		  "cannot find the plugin's cleanup");
	if (!pair_open(&p, (struct mrlt_pair_opts){0}))
		return;
	poster_init(&t, &p);
	CHECK(!pthread_create(&th, NULL, poster_main, &t));
	started = wait_at_least(&t.rounds, 2 * BUFS);
	if (started) {
		stats_ret = stats_of(&p, &s0);
		plugin->cleanup();
		atomic_store(&t.cleaned, 1);
		/* The poster carries on, misses included, on the cache the
		 * cleanup gave up. */
		if (wait_at_least(&t.fresh_after, 8))
			wait_at_least(&t.rounds, POST_ROUNDS);
	}
	atomic_store(&t.stop, 1);
	pthread_join(th, NULL);
	CHECK_MSG(!t.err, "poster: %s", t.what);
	CHECK_MSG(started, "the poster made no progress");
	CHECK_FI(stats_ret);
	CHECK(atomic_load(&t.fresh_after) >= 8);
	CHECK_FI(stats_of(&p, &s1));
	/* Nothing was deregistered behind the application's back. */
	CHECK_EQ(s0.deregistrations, s1.deregistrations);
	CHECK(s1.registrations > s0.registrations);
	CHECK_EQ(0, s1.leases);
	CHECK_EQ(0, mrlt_pair_close(&p));
	poster_fini(&t);
}

/* ---- fork while a thread is inside leased transfers ---------------------- */

#define CHILDREN 50

/*
 * Whether a child may allocate when other threads of its parent were
 * allocating at fork. glibc's malloc holds its arenas across fork;
 * AddressSanitizer's allocator replaces it, and GCC's libasan (as
 * compiler-rt before LLVM 18) holds none of its locks across fork: a child
 * whose parent had a thread refilling a size class at that moment waits
 * forever in its first malloc of that class (SizeClassAllocator64::
 * GetFromAllocator), on every provider and without FI_HOOK alike. The fork
 * case would then test the sanitizer, not the hook.
 */
#if defined(__SANITIZE_ADDRESS__) && \
	!(defined(__clang__) && __clang_major__ >= 18)
#define FORK_CHILD_MAY_MALLOC 0
#else
#define FORK_CHILD_MAY_MALLOC 1
#endif

enum child_status {
	CHILD_OK = 0,
	CHILD_OPEN = 10, /* opening its own pair */
	CHILD_XFER, /* its NULL-desc round trip */
	CHILD_STATS, /* query_stats */
	CHILD_NOT_CLEAN, /* its cache counts the parent's too */
	CHILD_CLOSE, /* closing */
};

static const char *const child_step[] = {
	"open",
	"round trip",
	"query_stats",
	"process-wide counts include the "
	"parent's",
	"close",
};

/* A child that uses libfabric afresh: its own pair, a leased round trip, a
 * cache whose process-wide counts are its domain's alone. */
static enum child_status
child_fresh(void)
{
	struct mrlt_pair_opts opts = {.prov = prov};
	struct fi_mrlease_stats dom, all;
	struct mrlt_pair cp;
	enum child_status st = CHILD_OK;
	char *src = buffer(LEN), *dst = buffer(LEN);

	if (mrlt_pair_open(&opts, &cp) || !cp.mrl)
		return CHILD_OPEN;
	if (xfer_round_trip(&cp, src, dst, LEN, 77, 1))
		st = CHILD_XFER;
	else if (stats_of(&cp, &dom) ||
		 cp.mrl->query_stats(NULL, &all, sizeof(all)))
		st = CHILD_STATS;
	else if (all.registrations != dom.registrations ||
		 all.lookups != dom.lookups)
		st = CHILD_NOT_CLEAN;
	if (st == CHILD_NOT_CLEAN)
		fprintf(stderr,
			"# child: registrations %llu (domain %llu), "
			"lookups %llu (domain %llu)\n",
			(unsigned long long) all.registrations,
			(unsigned long long) dom.registrations,
			(unsigned long long) all.lookups,
			(unsigned long long) dom.lookups);
	if (mrlt_pair_close(&cp) && !st)
		st = CHILD_CLOSE;
	free(src);
	free(dst);
	return st;
}

static bool
child_ok(int n, int status)
{
	int s;

	if (status == -1) {
		printf("# child %d did not exit within %d s: killed\n", n,
		       CHILD_SECONDS);
		return false;
	}
	if (WIFSIGNALED(status)) {
		printf("# child %d killed by signal %d\n", n, WTERMSIG(status));
		return false;
	}
	s = WEXITSTATUS(status);
	if (s != CHILD_OK) {
		printf("# child %d exited with %d (%s)\n", n, s,
		       s >= CHILD_OPEN && s <= CHILD_CLOSE ?
			       child_step[s - CHILD_OPEN] :
			       "?");
		return false;
	}
	return true;
}

struct churner {
	struct mrlt_pair *p;
	char **bufs;
	atomic_int stop;
	int err;
};

/* As an allocator's purge hook on the poster's buffers: the cache's writer
 * side is busy, so forks land while another thread holds it. */
static void *
invalidator_main(void *arg)
{
	struct churner *c = arg;

	for (unsigned i = 0; !atomic_load(&c->stop); i++)
		c->p->mrl->invalidate(c->bufs[i % BUFS], LEN);
	return NULL;
}

/* Local MRs over the poster's buffers, registered and closed in turn: served
 * from the cache, most of the time inside its lock-free index walk (a read
 * section), so forks land while another thread is a reader. */
static void *
mr_churn_main(void *arg)
{
	struct churner *c = arg;
	struct fid_mr *mr;

	for (unsigned i = 0; !atomic_load(&c->stop); i++) {
		c->err = fi_mr_reg(c->p->domain, c->bufs[i % BUFS], LEN,
				   FI_SEND | FI_RECV, 0, 0x7000 + i % BUFS, 0,
				   &mr, NULL);
		if (c->err)
			break;
		c->err = fi_close(&mr->fid);
		if (c->err)
			break;
	}
	return NULL;
}

/* A child inherits the cache as the parent's threads left it mid-transfer:
 * closing it at exit, or opening a domain in it, waits forever on a lock a
 * vanished thread held or for a reader that does not exist, and its counts
 * are the parent's. */
static void
test_fork_children_exit_or_start_clean_while_parent_leases(void)
{
	struct fi_mrlease_stats s0, s1;
	struct churner c = {0};
	struct mrlt_pair p;
	struct poster t = {0};
	pthread_t th, inv, mrs;
	bool churn;
	int failed = 0, rounds_during = 0;
	double t0;

	if (!FORK_CHILD_MAY_MALLOC) {
		mrlt_skip_current("AddressSanitizer's allocator is not held "
				  "across fork: a child can wait forever in "
				  "malloc for a lock a parent thread held, "
				  "with or without the hook");
		return;
	}
	if (!pair_open(&p, (struct mrlt_pair_opts){.thread_safe = true}))
		return;
	/* MRs from another thread than the poster's need a thread-safe
	 * domain; without one the writer side alone is busy. */
	churn = p.info->domain_attr->threading == FI_THREAD_SAFE;
	poster_init(&t, &p);
	c.p = &p;
	c.bufs = t.src;
	CHECK(!pthread_create(&th, NULL, poster_main, &t));
	if (pthread_create(&inv, NULL, invalidator_main, &c)) {
		atomic_store(&t.stop, 1);
		pthread_join(th, NULL);
		CHECK_MSG(false, "pthread_create failed");
	}
	if (churn && pthread_create(&mrs, NULL, mr_churn_main, &c)) {
		atomic_store(&c.stop, 1);
		atomic_store(&t.stop, 1);
		pthread_join(inv, NULL);
		pthread_join(th, NULL);
		CHECK_MSG(false, "pthread_create failed");
	}
	t0 = mrlt_now();
	for (int n = 0; n < CHILDREN && !t.err; n++) {
		int before = atomic_load(&t.rounds);
		pid_t pid;

		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			printf("# fork %d: %s\n", n, strerror(errno));
			failed++;
			break;
		}
		if (pid == 0) {
			mrlt_leak_check_off();
			exit(n % 2 ? child_fresh() : CHILD_OK);
		}
		if (!child_ok(n, mrlt_wait_child(pid, CHILD_SECONDS)))
			failed++;
		rounds_during += atomic_load(&t.rounds) - before;
	}
	printf("# %s: %d children in %.1f s; the parent's poster made %d round "
	       "trips meanwhile%s\n",
	       prov, CHILDREN, mrlt_now() - t0, rounds_during,
	       churn ? "" : " (no MR churn: domain not thread-safe)");
	atomic_store(&c.stop, 1);
	atomic_store(&t.stop, 1);
	pthread_join(inv, NULL);
	if (churn)
		pthread_join(mrs, NULL);
	pthread_join(th, NULL);
	CHECK_MSG(!t.err, "poster: %s", t.what);
	CHECK_MSG(!c.err, "MR churn: %s", fi_strerror(-c.err));
	CHECK_EQ(0, failed);
	CHECK(rounds_during > 0);

	/* The parent carries on with its own cache. */
	CHECK_FI(stats_of(&p, &s0));
	for (int i = 0; i < BUFS; i++) {
		int ret = xfer_round_trip(&p, t.src[i], t.dst, LEN,
					  500u + (uint64_t) i, 0);

		CHECK_MSG(!ret, "parent after the children: %s",
			  xfer_round_error(ret));
	}
	CHECK_FI(stats_of(&p, &s1));
	CHECK(s1.lookups >= s0.lookups + 2 * BUFS);
	CHECK_EQ(0, s1.leases);
	CHECK_EQ(0, mrlt_pair_close(&p));
	poster_fini(&t);
}

int
main(int argc, char **argv)
{
	char prefix[128];

	if (argc == 4 && !strcmp(argv[1], "--bare-refusal")) {
		mrlt_leak_check_off();
		prov = argv[3];
		return bare_refusal(argv[2]);
	}
	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrlease", NULL);
	for (const char *const *pv = xfer_providers; *pv; pv++) {
		prov = *pv;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(test_refused_domain_close_leaves_endpoints_posting);
		MRLT_RUN(
			test_refused_domain_close_leaves_mrs_and_extension_working);
		MRLT_RUN(test_refused_cq_close_leaves_cq_completing);
		MRLT_RUN(test_refused_counter_close_leaves_counter_counting);
		MRLT_RUN(test_refused_av_close_leaves_av_addressing);
		MRLT_RUN(test_refused_fabric_close_leaves_fabric_opening);
		MRLT_RUN(
			test_fork_children_exit_or_start_clean_while_parent_leases);
	}
	/* Last: libfabric's cleanup gives the cache up, and every later domain
	 * builds a new one. */
	for (const char *const *pv = xfer_providers; *pv; pv++) {
		prov = *pv;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(test_cleanup_while_posting_leaves_poster_running);
	}
	return mrlt_done();
}
