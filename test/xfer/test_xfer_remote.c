/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Remote-access registrations under FI_HOOK=mrlease on every loopback
 * provider with RMA: served again only to exactly the same request with
 * FI_MRLEASE_REMOTE=cache, forwarded (and counted) by default, closed when
 * idle too long, invalidated, evicted, unmapped or their domain closes.
 * Provider registrations are counted with the extension's statistics and
 * every byte a peer writes is checked at the target.
 *
 * The first argument is the group (xfer_remote.sh runs each in a process of
 * its own, mrlease reading its parameters once per process):
 *   cache:   FI_MRLEASE_REMOTE=cache, a long idle delay, 8 idle entries
 *   forward: FI_MRLEASE_REMOTE=forward (the default)
 *   idle:    FI_MRLEASE_REMOTE=cache with a short idle delay
 *   inner:   cache with FI_MRLEASE_HOOK_INNER=1 and no NULL-descriptor
 *            resolution outside, so rxm registers its rendezvous sends
 * then case-name patterns. "--server FD" is the two-process case's server.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "common/xfer_util.h"
#include "mrl_compat.h"

#define LEN	    (16 * 1024)
#define NBUF	    4
#define NREQ	    256
#define IDLE_MS	    100
#define REMOTE_MAX  8
#define RNDV_LEN    (256 * 1024)
#define RNDV_ROUNDS 8

static const char *prov;
static const char *group;

static bool
cache_group(void)
{
	return strcmp(group, "forward") != 0;
}

static bool
pair_open(struct mrlt_pair *p, bool thread_safe)
{
	struct mrlt_pair_opts opts = {.prov = prov, .thread_safe = thread_safe};

	if (!(thread_safe ? mrlt_pair_open_hooked_safe(&opts, p) :
			    mrlt_pair_open_hooked(&opts, p)))
		return false;
	if (p->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		mrlt_skip_current("%s: FI_MR_ENDPOINT MRs are forwarded", prov);
		mrlt_pair_close(p);
		return false;
	}
	return true;
}

static void *
buffer(size_t len)
{
	void *buf = NULL;

	if (posix_memalign(&buf, 4096, len))
		abort();
	memset(buf, 0, len);
	return buf;
}

/* The application's registration, its key requested (used only where the
 * provider does not pick keys). */
static int
reg(struct mrlt_pair *p, void *buf, size_t len, uint64_t access, uint64_t key,
    struct fid_mr **mr)
{
	return fi_mr_reg(p->domain, buf, len, access, 0, key, 0, mr, NULL);
}

/* ep[0] writes the pattern of seed into tgt through mr (registered at
 * base); the bytes are checked at the target. */
static int
write_through(struct mrlt_pair *p, struct fid_mr *mr, void *base, void *tgt,
	      size_t len, uint64_t seed)
{
	static char src[RNDV_LEN];
	struct fi_context2 ctx;
	struct mrlt_comp c;
	ssize_t ret;

	mrlt_fill(src, len, seed);
	ret = MRLT_PAIR_POST(p, fi_write(p->ep[0], src, len, NULL, p->addr[1],
					 mrlt_pair_rma_addr(p, base, tgt),
					 fi_mr_key(mr), &ctx));
	if (ret)
		return (int) ret;
	if (mrlt_reap(p, &c, 1) != 1 || c.ctx != &ctx)
		return -FI_EOTHER;
	if (c.err)
		return -c.err;
	return mrlt_wait_pattern(p, tgt, len, seed) == -1 ? 0 : -FI_EIO;
}

static uint64_t
provider_regs(const struct fi_mrlease_stats *s)
{
	return s->remote_registrations + s->fwd_remote;
}

/* The pattern of RPC services: each request registers its buffer for remote
 * write, the peer writes, the MR closes. With cache, the provider registers
 * each distinct buffer once; forwarded, once per request (what the hook did
 * for every remote registration). The hit rate counts the forwarded ones,
 * so it cannot claim hits the provider paid for. */
static void
test_per_request_remote_registrations_cost_one_provider_registration_per_buffer(
	void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *buf[NBUF] = {0};

	if (!pair_open(&p, false))
		return;
	for (int b = 0; b < NBUF; b++)
		buf[b] = buffer(LEN);
	s0 = mrlt_pair_stats(&p);
	for (int i = 0; i < NREQ && !mrlt_failed(); i++) {
		struct fid_mr *mr = NULL;
		int b = i % NBUF;

		CHECK_FI(reg(&p, buf[b], LEN, FI_REMOTE_WRITE, 1 + b, &mr));
		if (!mr)
			break;
		CHECK_FI(write_through(&p, mr, buf[b], buf[b], LEN, 1 + i));
		CHECK_FI(fi_close(&mr->fid));
	}
	s1 = mrlt_pair_stats(&p);
	if (cache_group()) {
		CHECK_EQ(NBUF,
			 s1.remote_registrations - s0.remote_registrations);
		CHECK_EQ(NREQ - NBUF, s1.remote_hits - s0.remote_hits);
		CHECK_EQ(NREQ, s1.remote_lookups - s0.remote_lookups);
		CHECK_EQ(0, s1.fwd_remote - s0.fwd_remote);
		CHECK_EQ(NBUF, s1.remote_idle);
	} else {
		CHECK_EQ(NREQ, s1.fwd_remote - s0.fwd_remote);
		CHECK_EQ(0, s1.remote_lookups - s0.remote_lookups);
		/* Every forwarded registration is a request the caches did
		 * not serve. */
		CHECK_EQ(s1.lookups + NREQ, fi_mrlease_requests(&s1));
		CHECK_MSG(fi_mrlease_hit_rate(&s1) <=
				  (double) s1.hits /
					  (double) (s1.lookups + NREQ),
			  "hit rate %.3f", fi_mrlease_hit_rate(&s1));
	}
	CHECK_EQ(cache_group() ? NBUF : NREQ,
		 provider_regs(&s1) - provider_regs(&s0));
	CHECK_EQ(0, mrlt_pair_close(&p));
	for (int b = 0; b < NBUF; b++)
		free(buf[b]);
}

/* Never widened: a request for less (a sub-range, or less access) than a
 * cached entry gets its own registration, and a local-only registration
 * never comes from (nor makes) a remote entry. A covering or more
 * permissive entry would let the peer reach what the application did not
 * offer. */
static void
test_a_sub_range_and_a_narrower_access_get_registrations_of_their_own(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *buf = buffer(4 * LEN);
	struct fid_mr *mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	CHECK_FI(reg(&p, buf, 4 * LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 11,
		     &mr));
	CHECK_FI(write_through(&p, mr, buf, buf, LEN, 5));
	CHECK_FI(fi_close(&mr->fid));
	s0 = mrlt_pair_stats(&p);

	CHECK_FI(reg(&p, buf + LEN, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 12,
		     &mr));
	CHECK_FI(write_through(&p, mr, buf + LEN, buf + LEN, LEN, 6));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.remote_registrations - s0.remote_registrations);
	CHECK_EQ(0, s1.remote_hits - s0.remote_hits);

	CHECK_FI(reg(&p, buf, 4 * LEN, FI_REMOTE_WRITE, 13, &mr));
	CHECK_FI(write_through(&p, mr, buf, buf + 2 * LEN, LEN, 7));
	CHECK_FI(fi_close(&mr->fid));
	s0 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s0.remote_registrations - s1.remote_registrations);
	CHECK_EQ(0, s0.remote_hits - s1.remote_hits);

	/* Local access: the lease cache's, never a remote entry. */
	CHECK_FI(reg(&p, buf, 4 * LEN, FI_READ | FI_WRITE, 14, &mr));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(0, s1.remote_lookups - s0.remote_lookups);
	CHECK_EQ(s0.remote_registrations, s1.remote_registrations);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* A key must die with its memory: once the pages are unmapped, the same
 * request at the same address (new pages mapped there) is registered anew
 * and the peer's write with the new key lands in the new pages. A stale
 * entry would hand out a key to pages no longer in the process. */
static void
test_munmap_and_mmap_at_the_same_address_register_anew(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	struct fid_mr *mr = NULL;
	char *buf, *again;

	if (!pair_open(&p, false))
		return;
	buf = xfer_map_anon(LEN);
	CHECK(buf != NULL);
	if (!buf)
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 21, &mr));
	CHECK_FI(write_through(&p, mr, buf, buf, LEN, 8));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	if (s1.fwd_no_monitor != s0.fwd_no_monitor) {
		mrlt_skip_current("no memory monitor here");
		munmap(buf, LEN);
		goto out;
	}
	CHECK_EQ(1, s1.remote_idle - s0.remote_idle);

	CHECK_EQ(0, munmap(buf, LEN));
	/* Never over what another thread may have mapped there meanwhile. */
	again = mmap(buf, LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK_PTR(buf, again);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 21, &mr));
	s0 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s0.remote_registrations - s1.remote_registrations);
	CHECK_EQ(0, s0.remote_hits - s1.remote_hits);
	CHECK(s0.remote_invalidated > s1.remote_invalidated);
	CHECK_FI(write_through(&p, mr, buf, buf, LEN, 9));
	CHECK_FI(fi_close(&mr->fid));
	CHECK_EQ(0, munmap(buf, LEN));
out:
	CHECK_EQ(0, mrlt_pair_close(&p));
}

/* The extension's invalidate closes idle remote entries at once (an
 * allocator about to reuse the pages), and FI_MRLEASE_REMOTE_MAX closes the
 * oldest idle one beyond it: neither kind of key outlives what the
 * application was told. */
static void
test_invalidate_and_eviction_close_idle_remote_entries(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *buf = buffer((REMOTE_MAX + 1) * LEN);
	struct fid_mr *mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 31, &mr));
	CHECK_FI(fi_close(&mr->fid));
	CHECK_FI(p.mrl->invalidate(buf, LEN));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.remote_invalidated - s0.remote_invalidated);
	CHECK_EQ(1, s1.remote_deregistrations - s0.remote_deregistrations);
	CHECK_EQ(s0.remote_idle, s1.remote_idle);

	for (int i = 0; i <= REMOTE_MAX; i++) {
		CHECK_FI(reg(&p, buf + i * LEN, LEN, FI_REMOTE_WRITE, 32 + i,
			     &mr));
		CHECK_FI(fi_close(&mr->fid));
	}
	s0 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s0.remote_evicted - s1.remote_evicted);
	CHECK_EQ(REMOTE_MAX, s0.remote_idle);
	/* The oldest went, the newest stayed. */
	CHECK_FI(reg(&p, buf + REMOTE_MAX * LEN, LEN, FI_REMOTE_WRITE,
		     32 + REMOTE_MAX, &mr));
	CHECK_FI(fi_close(&mr->fid));
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 32, &mr));
	CHECK_FI(write_through(&p, mr, buf, buf, LEN, 10));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.remote_hits - s0.remote_hits);
	CHECK_EQ(1, s1.remote_registrations - s0.remote_registrations);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* Domain close with idle remote entries (and one retired by invalidate
 * while its MR was open) succeeds and closes every one of them: a kept
 * registration would make the provider refuse the close. */
static void
test_domain_close_with_remote_entries_cached_returns_0(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	struct fi_mrlease_ops *ops;
	char *buf = buffer(3 * LEN);
	struct fid_mr *mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	ops = p.mrl;
	memset(&s0, 0, sizeof(s0));
	CHECK_FI(ops->query_stats(NULL, &s0, sizeof(s0)));
	for (int i = 0; i < 3; i++) {
		CHECK_FI(reg(&p, buf + i * LEN, LEN, FI_REMOTE_WRITE, 41 + i,
			     &mr));
		if (i == 2)
			CHECK_FI(ops->invalidate(buf + i * LEN, LEN));
		CHECK_FI(fi_close(&mr->fid));
	}
	CHECK_EQ(2, mrlt_pair_stats(&p).remote_idle);
	CHECK_EQ(0, mrlt_pair_close(&p));
	CHECK_FI(ops->query_stats(NULL, &s1, sizeof(s1)));
	CHECK_EQ(3, s1.remote_deregistrations - s0.remote_deregistrations);
	CHECK_EQ(s0.remote_entries, s1.remote_entries);
out:
	free(buf);
}

/* A domain whose MRs the hook handed out are still open is busy, as the
 * provider would say had it registered them itself: closing it anyway
 * would leave those MRs pointing at a freed domain. */
static void
test_a_domain_with_cached_mrs_open_is_busy_until_they_close(void)
{
	struct mrlt_pair p;
	char *buf = buffer(2 * LEN);
	struct fid_mr *remote_mr = NULL, *local_mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 71, &remote_mr));
	CHECK_FI(fi_mr_reg(p.domain, buf + LEN, LEN, FI_SEND | FI_RECV, 0, 72,
			   0, &local_mr, NULL));
	for (int i = 0; i < 2; i++) {
		CHECK_FI(fi_close(&p.ep[i]->fid));
		p.ep[i] = NULL;
	}
	CHECK_FI(fi_close(&p.cq->fid));
	p.cq = NULL;
	CHECK_FI(fi_close(&p.av->fid));
	p.av = NULL;
	CHECK_EQ(-FI_EBUSY, fi_close(&p.domain->fid));
	CHECK_FI(fi_close(&remote_mr->fid));
	CHECK_EQ(-FI_EBUSY, fi_close(&p.domain->fid));
	CHECK_FI(fi_close(&local_mr->fid));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* A domain bound to an EQ with FI_REG_MR completes each registration with
 * an FI_MR_COMPLETE event of its own: none is served from a cache, where it
 * would never complete, and each event names the application's MR. */
static void
test_registrations_completed_by_eq_events_are_each_forwarded(void)
{
	struct fi_eq_attr eq_attr = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
	struct fi_eq_entry entry;
	struct fi_mrlease_stats s0, s1;
	struct fid_mr *mr[3] = {NULL};
	struct fid_eq *eq = NULL;
	struct mrlt_pair p;
	char *buf = buffer(LEN);
	int ctx[3], events = 0, ret;
	uint32_t event;

	if (!pair_open(&p, false))
		goto out;
	CHECK_FI(fi_eq_open(p.fabric, &eq_attr, &eq, NULL));
	ret = fi_domain_bind(p.domain, &eq->fid, MRL_FI_REG_MR);
	if (ret) {
		mrlt_skip_current("%s: fi_domain_bind(FI_REG_MR): %s", prov,
				  fi_strerror(-ret));
		goto close;
	}
	s0 = mrlt_pair_stats(&p);
	for (int i = 0; i < 3; i++)
		CHECK_FI(fi_mr_reg(p.domain, buf, LEN,
				   i == 2 ? FI_REMOTE_WRITE : FI_SEND, 0,
				   81 + (uint64_t) i, 0, &mr[i], &ctx[i]));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(3, s1.fwd_other - s0.fwd_other);
	/* A provider that completes registrations at once reports none. */
	while (events < 3 &&
	       fi_eq_sread(eq, &event, &entry, sizeof(entry), 1000, 0) > 0) {
		CHECK_EQ(FI_MR_COMPLETE, event);
		/* The provider names the MR or its domain (sockets). */
		CHECK_MSG((entry.fid == &mr[events]->fid ||
			   entry.fid == &p.domain->fid) &&
				  entry.context == &ctx[events],
			  "event %d names fid %p context %p, not %p %p",
			  events, (void *) entry.fid, entry.context,
			  (void *) &mr[events]->fid, (void *) &ctx[events]);
		events++;
	}
	CHECK_MSG(events == 0 || events == 3, "%d of 3 registrations completed",
		  events);
	for (int i = 0; i < 3; i++)
		if (mr[i])
			CHECK_FI(fi_close(&mr[i]->fid));
close:
	/* The EQ outlives the domain it is bound to, not the fabric. */
	for (int i = 0; i < 2; i++) {
		CHECK_FI(fi_close(&p.ep[i]->fid));
		p.ep[i] = NULL;
	}
	CHECK_FI(fi_close(&p.cq->fid));
	p.cq = NULL;
	CHECK_FI(fi_close(&p.av->fid));
	p.av = NULL;
	CHECK_FI(fi_close(&p.domain->fid));
	p.domain = NULL;
	CHECK_FI(fi_close(&eq->fid));
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* What the registry cannot share goes to the provider unchanged, counted
 * with its reason: counters bound to the MR (FI_RMA_EVENT), an
 * authorization key, several ranges for local access. */
static void
test_forwarded_registrations_are_counted_with_their_reason(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *buf = buffer(2 * LEN);
	struct iovec iov[2] = {{buf, LEN}, {buf + LEN, LEN}};
	uint64_t auth = 7;
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE,
		.requested_key = 51,
		.auth_key_size = sizeof(auth),
		.auth_key = (uint8_t *) &auth,
	};
	struct fid_mr *mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	s0 = mrlt_pair_stats(&p);
	if (!fi_mr_reg(p.domain, buf, LEN, FI_REMOTE_WRITE, 0, 52, FI_RMA_EVENT,
		       &mr, NULL))
		CHECK_FI(fi_close(&mr->fid));
	if (!fi_mr_regattr(p.domain, &attr, 0, &mr))
		CHECK_FI(fi_close(&mr->fid));
	if (!fi_mr_regv(p.domain, iov, 2, FI_READ | FI_WRITE, 0, 53, 0, &mr,
			NULL))
		CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.fwd_rma_event - s0.fwd_rma_event);
	CHECK_EQ(1, s1.fwd_auth_key - s0.fwd_auth_key);
	CHECK_EQ(1, s1.fwd_other - s0.fwd_other);
	CHECK_EQ(0, s1.remote_lookups - s0.remote_lookups);
	CHECK_EQ(0, s1.lookups - s0.lookups);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* Where the provider does not pick keys, an idle entry still holds its
 * requested key: a request with that key for other memory closes it first
 * instead of failing with -FI_ENOKEY, so keeping entries never costs the
 * application a registration it would have had without the cache. */
static void
test_a_key_held_by_an_idle_entry_is_given_up_for_a_new_request(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *buf = buffer(2 * LEN);
	struct fid_mr *mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	if (p.info->domain_attr->mr_mode & FI_MR_PROV_KEY) {
		mrlt_skip_current("%s: FI_MR_PROV_KEY", prov);
		mrlt_pair_close(&p);
		goto out;
	}
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 81, &mr));
	CHECK_FI(fi_close(&mr->fid));
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf + LEN, LEN, FI_REMOTE_WRITE, 81, &mr));
	CHECK_FI(write_through(&p, mr, buf + LEN, buf + LEN, LEN, 12));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.remote_evicted - s0.remote_evicted);
	CHECK_EQ(1, s1.remote_registrations - s0.remote_registrations);
	CHECK_EQ(1, s1.remote_idle);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* Memory the monitor cannot watch (a private file mapping, which
 * userfaultfd refuses) is registered for the application as asked and
 * never kept: nothing would tell the cache when its pages go. */
static void
test_remote_registrations_the_monitor_cannot_watch_are_forwarded(void)
{
	char path[] = "/tmp/mrlt_remote_XXXXXX";
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	struct fid_mr *mr = NULL;
	char *buf = MAP_FAILED;
	int fd;

	if (!pair_open(&p, false))
		return;
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		goto out;
	unlink(path);
	CHECK_EQ(0, ftruncate(fd, LEN));
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(buf != MAP_FAILED);
	if (buf == MAP_FAILED)
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 91, &mr));
	CHECK_FI(write_through(&p, mr, buf, buf, LEN, 13));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.fwd_no_monitor - s0.fwd_no_monitor);
	CHECK_EQ(0, s1.remote_registrations - s0.remote_registrations);
	CHECK_EQ(s0.remote_entries, s1.remote_entries);
	munmap(buf, LEN);
out:
	CHECK_EQ(0, mrlt_pair_close(&p));
}

/* ---- idle group --------------------------------------------------------- */

/* Wait (bounded, polling the statistics, which close nothing) until the
 * domain's idle closes reach want. */
static bool
wait_idle_closes(struct mrlt_pair *p, uint64_t want)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	while (mrlt_pair_stats(p).remote_idle_closes < want) {
		if (mrlt_wait_over(&w))
			return false;
		sched_yield();
	}
	return true;
}

/* On an FI_THREAD_SAFE domain an idle remote entry closes after
 * FI_MRLEASE_REMOTE_IDLE with no call from the application (the monitor's
 * closer): an application that stops calling must not leave a key open. */
static void
test_idle_remote_entry_closes_with_no_application_call(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0;
	char *buf = buffer(LEN);
	struct fid_mr *mr = NULL;
	double t0;

	if (!pair_open(&p, true))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 61, &mr));
	CHECK_FI(write_through(&p, mr, buf, buf, LEN, 11));
	t0 = mrlt_now();
	CHECK_FI(fi_close(&mr->fid));
	CHECK_MSG(wait_idle_closes(&p, s0.remote_idle_closes + 1),
		  "the idle entry never closed");
	CHECK_MSG(mrlt_now() - t0 >= IDLE_MS / 1000.0 * 0.9,
		  "closed after %.3f s", mrlt_now() - t0);
	CHECK_EQ(0, mrlt_pair_stats(&p).remote_idle);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* Idle entries whose deadlines come one after another all close with no
 * application call: one going idle while the closer already waits for an
 * earlier deadline does not wake it, and must still get its own call. */
static void
test_idle_remote_entries_close_one_after_another_with_no_call(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0;
	char *buf = buffer(2 * LEN);
	struct fid_mr *mr = NULL;
	double t0, t1;

	if (!pair_open(&p, true))
		goto out;
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 62, &mr));
	CHECK_FI(fi_close(&mr->fid));
	t0 = mrlt_now();
	while (mrlt_now() - t0 < IDLE_MS / 2000.0)
		sched_yield();
	CHECK_FI(reg(&p, buf + LEN, LEN, FI_REMOTE_WRITE, 63, &mr));
	CHECK_FI(fi_close(&mr->fid));
	t1 = mrlt_now();
	CHECK_MSG(wait_idle_closes(&p, s0.remote_idle_closes + 2),
		  "%" PRIu64 " of 2 idle entries closed",
		  mrlt_pair_stats(&p).remote_idle_closes -
			  s0.remote_idle_closes);
	CHECK_MSG(mrlt_now() - t1 >= IDLE_MS / 1000.0 * 0.9,
		  "the later one closed after %.3f s", mrlt_now() - t1);
	CHECK_EQ(0, mrlt_pair_stats(&p).remote_idle);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* Let the idle delay pass with no call into the domain. */
static void
idle_delay_passes(void)
{
	double t0 = mrlt_now();

	while (mrlt_now() - t0 < 2.0 * IDLE_MS / 1000.0)
		sched_yield();
}

/* Elsewhere the idle entry closes at the domain's next call once the delay
 * has passed (and not before it): a CQ read, an MR call. An application
 * that keeps polling its CQ must not keep a closed MR's key alive. */
static void
test_idle_remote_entry_closes_at_the_next_call_after_the_delay(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *buf = buffer(2 * LEN);
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL;

	if (!pair_open(&p, false))
		goto out;
	if (p.info->domain_attr->threading == FI_THREAD_SAFE) {
		mrlt_skip_current("%s: FI_THREAD_SAFE (the closer's case)",
				  prov);
		mrlt_pair_close(&p);
		goto out;
	}
	s0 = mrlt_pair_stats(&p);
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 71, &mr));
	CHECK_FI(fi_close(&mr->fid));
	/* Before the delay, the next call finds it cached. */
	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 71, &mr));
	CHECK_FI(fi_close(&mr->fid));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.remote_hits - s0.remote_hits);
	idle_delay_passes();
	CHECK_EQ(s0.remote_idle_closes, mrlt_pair_stats(&p).remote_idle_closes);
	CHECK_EQ(-FI_EAGAIN, fi_cq_read(p.cq, &e, 1));
	s1 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s1.remote_idle_closes - s0.remote_idle_closes);
	CHECK_EQ(0, s1.remote_idle);

	CHECK_FI(reg(&p, buf, LEN, FI_REMOTE_WRITE, 72, &mr));
	CHECK_FI(fi_close(&mr->fid));
	idle_delay_passes();
	CHECK_EQ(s1.remote_idle_closes, mrlt_pair_stats(&p).remote_idle_closes);
	CHECK_FI(reg(&p, buf + LEN, LEN, FI_READ | FI_WRITE, 73, &mr));
	CHECK_FI(fi_close(&mr->fid));
	s0 = mrlt_pair_stats(&p);
	CHECK_EQ(1, s0.remote_idle_closes - s1.remote_idle_closes);
	CHECK_EQ(0, s0.remote_idle);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(buf);
}

/* ---- inner group -------------------------------------------------------- */

/* rxm registers each rendezvous send (above 128 KiB) with FI_REMOTE_READ on
 * its inner tcp domain: with FI_MRLEASE_HOOK_INNER=1 the inner instance
 * serves those from its registry, and the process's statistics show it. */
static void
test_rxm_rendezvous_registrations_are_served_by_the_inner_registry(void)
{
	struct mrlt_pair p;
	struct fi_mrlease_stats s0, s1;
	char *src = buffer(RNDV_LEN), *dst = buffer(RNDV_LEN);
	struct fi_context2 sctx, rctx;
	struct mrlt_comp c[2];

	if (!pair_open(&p, false))
		goto out;
	CHECK_FI(p.mrl->query_stats(NULL, &s0, sizeof(s0)));
	for (int i = 0; i < RNDV_ROUNDS && !mrlt_failed(); i++) {
		mrlt_fill(src, RNDV_LEN, 100 + i);
		CHECK_FI(MRLT_PAIR_POST(&p, fi_recv(p.ep[1], dst, RNDV_LEN,
						    NULL, p.addr[0], &rctx)));
		CHECK_FI(MRLT_PAIR_POST(&p, fi_send(p.ep[0], src, RNDV_LEN,
						    NULL, p.addr[1], &sctx)));
		CHECK_EQ(2, mrlt_reap(&p, c, 2));
		CHECK_EQ(-1, mrlt_verify(dst, RNDV_LEN, 100 + i));
	}
	CHECK_FI(p.mrl->query_stats(NULL, &s1, sizeof(s1)));
	CHECK_MSG(s1.remote_hits - s0.remote_hits >= RNDV_ROUNDS - 2,
		  "inner remote hits %" PRIu64 ", lookups %" PRIu64
		  ", registrations %" PRIu64 ", invalidated %" PRIu64
		  ", forwarded remote %" PRIu64 ", no monitor %" PRIu64,
		  s1.remote_hits - s0.remote_hits,
		  s1.remote_lookups - s0.remote_lookups,
		  s1.remote_registrations - s0.remote_registrations,
		  s1.remote_invalidated - s0.remote_invalidated,
		  s1.fwd_remote - s0.fwd_remote,
		  s1.fwd_no_monitor - s0.fwd_no_monitor);
	CHECK(s1.remote_registrations - s0.remote_registrations <= 2);
	CHECK_EQ(0, mrlt_pair_close(&p));
out:
	free(src);
	free(dst);
}

/* ---- concurrency -------------------------------------------------------- */

enum { CONC_THREADS = 3, CONC_ROUNDS = 200 };

struct conc {
	struct mrlt_pair *p;
	atomic_int next_thread; /* each thread's keys are its own */
	char *stable; /* never unmapped */
	char *volatile churn; /* unmapped and mapped again meanwhile */
	atomic_int stop;
	atomic_int failed;
};

static void *
conc_register(void *arg)
{
	struct conc *c = arg;
	uint64_t keys =
		1000 * (uint64_t) (atomic_fetch_add(&c->next_thread, 1) + 1);

	for (int i = 0; i < CONC_ROUNDS && !atomic_load(&c->failed); i++) {
		char *buf = (i & 1) ? c->stable + (i % 4) * LEN : c->churn;
		struct fid_mr *mr;
		int ret = reg(c->p, buf, LEN, FI_REMOTE_WRITE,
			      keys + ((i & 1) ? (uint64_t) (i % 4) : 9), &mr);

		if (!ret)
			ret = fi_close(&mr->fid);
		if (ret)
			atomic_store(&c->failed, ret);
	}
	return NULL;
}

static void *
conc_unmap(void *arg)
{
	struct conc *c = arg;

	/* New pages mapped over the old ones at once (the kernel unmaps them,
	 * the monitor sees it): an munmap first would leave a hole that
	 * another thread's allocation could take and MAP_FIXED clobber. */
	while (!atomic_load(&c->stop)) {
		char *buf = c->churn;

		if (mmap(buf, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != buf)
			atomic_store(&c->failed, -FI_ENOMEM);
	}
	return NULL;
}

/* Threads registering and closing remote MRs while another unmaps and maps
 * again the memory some of them register: no entry is served after its
 * pages went (each munmap retires it), nothing is closed twice or under a
 * lock, and the domain closes with everything accounted for. */
static void
test_threads_register_remote_mrs_while_another_unmaps(void)
{
	struct mrlt_pair p;
	struct conc c = {.p = &p};
	pthread_t reg_t[CONC_THREADS], unmap_t;
	struct fi_cq_data_entry e;
	struct fi_mrlease_stats s;

	if (!pair_open(&p, true))
		return;
	c.stable = buffer(4 * LEN);
	c.churn = xfer_map_anon(LEN);
	CHECK(c.churn != NULL);
	pthread_create(&unmap_t, NULL, conc_unmap, &c);
	for (int i = 0; i < CONC_THREADS; i++)
		pthread_create(&reg_t[i], NULL, conc_register, &c);
	for (int i = 0; i < CONC_THREADS; i++)
		pthread_join(reg_t[i], NULL);
	atomic_store(&c.stop, 1);
	pthread_join(unmap_t, NULL);
	CHECK_EQ(0, atomic_load(&c.failed));
	/* A call into the domain closes what the last unmaps retired (on an
	 * FI_THREAD_SAFE domain the closer may not have yet). */
	CHECK_EQ(-FI_EAGAIN, fi_cq_read(p.cq, &e, 1));
	s = mrlt_pair_stats(&p);
	/* The stable buffers were served again: the registry took part. */
	CHECK(s.remote_hits >= CONC_THREADS * (CONC_ROUNDS / 2 - 4));
	CHECK_EQ(s.remote_entries, s.remote_idle);
	CHECK_EQ(s.remote_registrations,
		 s.remote_deregistrations + s.remote_entries);
	CHECK_EQ(0, mrlt_pair_close(&p));
	munmap(c.churn, LEN);
	free(c.stable);
}

/* ---- two processes ------------------------------------------------------ */

/* What the server tells the client, and the client answers. */
struct wire {
	char name[256];
	size_t namelen;
	uint64_t addr, key;
	uint64_t seed;
};

/* Blocking pipe I/O; with pair, a non-blocking read that progresses the
 * pair meanwhile (its provider may need it for the peer's connection and
 * writes), bounded. */
static int
full_io_progress(int fd, void *buf, size_t len, bool out,
		 struct mrlt_pair *pair)
{
	double deadline = mrlt_now() + 60;
	char *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EAGAIN && pair && mrlt_now() < deadline) {
			mrlt_pair_progress(pair);
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

static int
full_io(int fd, void *buf, size_t len, bool out)
{
	return full_io_progress(fd, buf, len, out, NULL);
}

/* The server: registers each request's buffer for remote write, hands the
 * key over, waits for the client's word, checks the bytes, closes. Exits 0
 * when every byte arrived and the provider registered each buffer once. */
static int
server_main(int to_client, int from_client)
{
	struct mrlt_pair p;
	struct mrlt_pair_opts opts = {.prov = "tcp;ofi_rxm"};
	struct fi_mrlease_stats s0, s1;
	char *buf[2] = {buffer(LEN), buffer(LEN)};
	struct wire w;
	int bad = 0;

	if (mrlt_pair_open(&opts, &p))
		return 2;
	fcntl(from_client, F_SETFL, O_NONBLOCK);
	w.namelen = sizeof(w.name);
	if (fi_getname(&p.ep[1]->fid, w.name, &w.namelen))
		return 3;
	s0 = mrlt_pair_stats(&p);
	for (int i = 0; i < 16 && !bad; i++) {
		struct fid_mr *mr;

		if (reg(&p, buf[i % 2], LEN, FI_REMOTE_WRITE, 1 + i % 2, &mr))
			return 4;
		w.addr = mrlt_pair_rma_addr(&p, buf[i % 2], buf[i % 2]);
		w.key = fi_mr_key(mr);
		w.seed = 200 + (uint64_t) i;
		if (full_io(to_client, &w, sizeof(w), true) ||
		    full_io_progress(from_client, &w.seed, sizeof(w.seed),
				     false, &p))
			return 5;
		bad = mrlt_wait_pattern(&p, buf[i % 2], LEN, 200 + i) != -1;
		fi_close(&mr->fid);
	}
	s1 = mrlt_pair_stats(&p);
	if (s1.remote_registrations - s0.remote_registrations != 2)
		bad = 6;
	mrlt_pair_close(&p);
	free(buf[0]);
	free(buf[1]);
	return bad;
}

/* A server process registers per request (the RPC pattern across
 * processes) and a client process writes with each key: every byte lands,
 * and the server's provider registered each buffer once. */
static void
test_a_client_process_writes_through_keys_a_server_process_caches(void)
{
	int to_client[2], to_server[2], status;
	struct mrlt_pair p;
	char fd_out[16], fd_in[16];
	pid_t pid;

	if (!pair_open(&p, false))
		return;
	CHECK_EQ(0, pipe(to_client));
	CHECK_EQ(0, pipe(to_server));
	snprintf(fd_out, sizeof(fd_out), "%d", to_client[1]);
	snprintf(fd_in, sizeof(fd_in), "%d", to_server[0]);
	fflush(NULL);
	pid = fork();
	if (!pid) {
		char *argv[] = {"/proc/self/exe", "--server", fd_out, fd_in,
				NULL};

		mrlt_leak_check_off();
		execv(argv[0], argv);
		_exit(127);
	}
	close(to_client[1]);
	close(to_server[0]);
	for (int i = 0; i < 16 && !mrlt_failed(); i++) {
		struct wire w;
		fi_addr_t server;

		if (full_io(to_client[0], &w, sizeof(w), false)) {
			CHECK_MSG(false, "the server went at request %d", i);
			break;
		}
		if (!i)
			CHECK_EQ(1, fi_av_insert(p.av, w.name, 1, &server, 0,
						 NULL));
		{
			static char src[LEN];
			struct fi_context2 ctx;
			struct mrlt_comp c;

			mrlt_fill(src, LEN, w.seed);
			CHECK_FI(MRLT_PAIR_POST(
				&p, fi_write(p.ep[0], src, LEN, NULL, server,
					     w.addr, w.key, &ctx)));
			CHECK_EQ(1, mrlt_reap(&p, &c, 1));
			CHECK_EQ(0, c.err);
		}
		CHECK_EQ(0,
			 full_io(to_server[1], &w.seed, sizeof(w.seed), true));
	}
	close(to_client[0]);
	close(to_server[1]);
	status = mrlt_wait_child(pid, 120);
	CHECK_MSG(WIFEXITED(status) && !WEXITSTATUS(status),
		  "server status %#x", status);
	CHECK_EQ(0, mrlt_pair_close(&p));
}

int
main(int argc, char **argv)
{
	static const char *const cache_env[] = {
		"FI_MRLEASE_REMOTE=cache", "FI_MRLEASE_REMOTE_IDLE=600000",
		"FI_MRLEASE_REMOTE_MAX=8", NULL};
	static const char *const forward_env[] = {"FI_MRLEASE_REMOTE=forward",
						  NULL};
	static const char *const idle_env[] = {
		"FI_MRLEASE_REMOTE=cache", "FI_MRLEASE_REMOTE_IDLE=100", NULL};
	static const char *const inner_env[] = {
		"FI_MRLEASE_REMOTE=cache", "FI_MRLEASE_REMOTE_IDLE=600000",
		"FI_MRLEASE_HOOK_INNER=1", "FI_MRLEASE_MIN_SIZE=1G", NULL};
	const char *const *env;
	char prefix[128];

	if (argc == 4 && !strcmp(argv[1], "--server"))
		return server_main(atoi(argv[2]), atoi(argv[3]));
	if (argc < 2) {
		fprintf(stderr, "usage: %s cache|forward|idle|inner [case]\n",
			argv[0]);
		return 2;
	}
	group = argv[1];
	env = !strcmp(group, "forward") ? forward_env :
	      !strcmp(group, "idle")	? idle_env :
	      !strcmp(group, "inner")	? inner_env :
					  cache_env;
	mrlt_select(argc - 2, argv + 2);
	xfer_reexec(argv, "mrlease", env);
	/* rxm's own registrations, and a client over a real network
	 * provider. */
	prov = "tcp;ofi_rxm";
	mrlt_set_prefix("tcp;ofi_rxm: ");
	if (!strcmp(group, "inner")) {
		MRLT_RUN(
			test_rxm_rendezvous_registrations_are_served_by_the_inner_registry);
		return mrlt_done();
	}
	if (!strcmp(group, "cache"))
		MRLT_RUN(
			test_a_client_process_writes_through_keys_a_server_process_caches);
	for (const char *const *pv = xfer_providers; *pv; pv++) {
		prov = *pv;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		if (!strcmp(group, "idle")) {
			MRLT_RUN(
				test_idle_remote_entry_closes_with_no_application_call);
			MRLT_RUN(
				test_idle_remote_entries_close_one_after_another_with_no_call);
			MRLT_RUN(
				test_idle_remote_entry_closes_at_the_next_call_after_the_delay);
			continue;
		}
		MRLT_RUN(
			test_per_request_remote_registrations_cost_one_provider_registration_per_buffer);
		if (!strcmp(group, "forward"))
			continue;
		MRLT_RUN(
			test_a_sub_range_and_a_narrower_access_get_registrations_of_their_own);
		MRLT_RUN(
			test_munmap_and_mmap_at_the_same_address_register_anew);
		MRLT_RUN(
			test_invalidate_and_eviction_close_idle_remote_entries);
		MRLT_RUN(
			test_domain_close_with_remote_entries_cached_returns_0);
		MRLT_RUN(
			test_a_domain_with_cached_mrs_open_is_busy_until_they_close);
		MRLT_RUN(
			test_registrations_completed_by_eq_events_are_each_forwarded);
		MRLT_RUN(
			test_forwarded_registrations_are_counted_with_their_reason);
		MRLT_RUN(
			test_a_key_held_by_an_idle_entry_is_given_up_for_a_new_request);
		MRLT_RUN(
			test_remote_registrations_the_monitor_cannot_watch_are_forwarded);
		MRLT_RUN(test_threads_register_remote_mrs_while_another_unmaps);
	}
	return mrlt_done();
}
