/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The passthrough layer against real providers on loopback.
 *
 * Usage: test_passthrough PROVIDER GROUP
 *   PROVIDER  exact prov_name: "tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets",
 *             "tcp" (GROUP msg)
 *   GROUP     rdm      every object class and op the RDM provider offers
 *             msg      FI_EP_MSG with a passive endpoint (connection manager)
 *             traffic  msg, tagged and RMA traffic only (stacking, filters)
 * Environment:
 *   MRL_PT_EXPECT_HOOK  1: the mrlease hook must be in the call path, 0: it
 *                       must not be (default: 1 when FI_HOOK names mrlease)
 *   MRL_PT_BASELINE     "feature=rc,..." as printed ("# probe feature rc") by a
 *                       run without any FI_HOOK: an optional feature that
 *                       fails here is a skip only if it failed there too.
 *
 * libfabric reads FI_HOOK and FI_PROVIDER once per process, so
 * test/passthrough.sh runs this program once per provider and hook set-up.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "mrl_debug.h" /* test-only counters of the passthrough layer */
#include "fixture_rdm.h"

#define SMALL 64
#define LARGE (256 * 1024) /* above rxm's rendezvous threshold */
#define TAG 0x5a5aULL

static const char *prov;
static bool expect_hook;
static const char *baseline;

/* ------------------------------------------------------------------------
 * Optional features: skip only what the provider lacks without the hook.
 */

static bool baseline_rc(const char *feature, int *rc)
{
	size_t n = strlen(feature);
	const char *p = baseline;

	while (p && *p) {
		if (!strncmp(p, feature, n) && p[n] == '=') {
			*rc = atoi(p + n + 1);
			return true;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/*
 * Whether the test can use an optional feature. `rc` is what probing it
 * returned (0: offered); `lacking` says in words what the provider does
 * instead. Each result is printed as "# probe FEATURE RC" for
 * test/passthrough.sh. Returns true to go on; otherwise marks the running
 * test skipped (the provider lacks the feature without the hook too) or
 * failed (only the hooked call fails).
 */
static bool feature(const char *name, int rc, const char *lacking)
{
	int base;

	printf("# probe %s %d\n", name, rc);
	if (rc == 0)
		return true;
	if (baseline_rc(name, &base)) {
		if (base == 0) {
			mrlt_fail(__FILE__, __LINE__, "%s: %s under FI_HOOK, "
				      "but not without the hook", prov, lacking);
			return false;
		}
		mrlt_skip_current("%s: %s, without the hook too", prov,
				      lacking);
		return false;
	}
	if (rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP || !expect_hook) {
		mrlt_skip_current("%s: %s", prov, lacking);
		return false;
	}
	mrlt_fail(__FILE__, __LINE__, "%s: %s", prov, lacking);
	return false;
}

/* feature() for a call: `lacking` is "CALL returns ERROR". */
static bool offered(const char *name, const char *call, int rc)
{
	char lacking[256];

	snprintf(lacking, sizeof(lacking), "%s returns %s", call,
		 fi_strerror(-rc));
	return feature(name, rc, lacking);
}

/* ------------------------------------------------------------------------
 * Set-up.
 */

/*
 * Open fabric+domain for prov with the test's base caps plus `extra`.
 * Returns false with the test skipped when getinfo offers no such info.
 */
static bool open_domain(enum fi_ep_type type, uint64_t extra,
			struct mrlt_domain *d)
{
	uint64_t base = type == FI_EP_MSG ? FI_MSG | FI_RMA :
					    FI_MSG | FI_TAGGED | FI_RMA;
	struct fi_info *hints = mrlt_hints(prov, type, base | extra);
	struct fi_info *info;
	int ret;

	hints->domain_attr->cq_data_size = 4;
	ret = mrlt_getinfo(hints, NULL, NULL, 0, &info);
	if (ret == -FI_ENODATA && !extra) {
		mrlt_fail(__FILE__, __LINE__, "fi_getinfo offers no %s %s "
			      "info", prov, fi_tostr(&type, FI_TYPE_EP_TYPE));
		return false;
	}
	if (ret == -FI_ENODATA) {
		mrlt_skip_current("fi_getinfo offers no %s info with caps %s",
				      prov, fi_tostr(&extra, FI_TYPE_CAPS));
		return false;
	}
	if (ret)
		return false;
	return mrlt_domain_open(info, d) == 0;
}

static bool open_pair(uint64_t extra, const struct mrlt_peer_opts *opts,
		      struct mrlt_domain *d, struct mrlt_peer *a,
		      struct mrlt_peer *b)
{
	return open_domain(FI_EP_RDM, extra, d) &&
	       mrlt_rdm_pair_open(d, opts, a, b) == 0;
}

/* Wait (bounded) until dst holds len bytes of src: the way to see that a
 * remote write has landed whatever completion semantic the provider uses. */
static int wait_bytes(const void *dst, const void *src, size_t len,
		      struct mrlt_peer *a, struct mrlt_peer *b, const char *what)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	do {
		if (!memcmp(dst, src, len))
			return 0;
		mrlt_progress(a);
		mrlt_progress(b);
	} while (!mrlt_wait_over(&w));
	mrlt_fail(__FILE__, __LINE__, "%s: target data differs after %lu "
		      "polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

/* ------------------------------------------------------------------------
 * The hook is in the call path.
 */

/* The extension API (fi_ext_mrlease.h) is how applications reach the lease
 * cache: it must answer on the hooked fabric and domain, and the bare
 * providers must answer -FI_ENOSYS (what the header promises without it). */
static void check_mrlease_ops(enum fi_ep_type type)
{
	struct mrlt_domain d;
	struct fi_mrlease_ops *ops = NULL;
	struct fid *fids[2];
	const char *names[2] = { "fabric", "domain" };
	int ret, i;

	if (!open_domain(type, 0, &d))
		return;
	fids[0] = &d.fabric->fid;
	fids[1] = &d.domain->fid;
	for (i = 0; i < 2; i++) {
		ops = NULL;
		ret = fi_open_ops(fids[i], FI_MRLEASE_OPS_1, 0, (void **)&ops,
				  NULL);
		if (expect_hook) {
			CHECK_MSG(ret == 0, "fi_open_ops(%s, %s) = %d (%s): the "
				  "mrlease extension is not reachable under "
				  "FI_HOOK", names[i], FI_MRLEASE_OPS_1, ret,
				  fi_strerror(-ret));
			CHECK(ops && ops->size >= sizeof(*ops));
		} else {
			CHECK_MSG(ret == -FI_ENOSYS, "fi_open_ops(%s, %s) = %d "
				  "without the hook, want -FI_ENOSYS", names[i],
				  FI_MRLEASE_OPS_1, ret);
		}
	}
}

static void test_mrlease_ops_answer_only_under_the_hook(void)
{
	check_mrlease_ops(FI_EP_RDM);
}

static void test_msg_mrlease_ops_answer_only_under_the_hook(void)
{
	check_mrlease_ops(FI_EP_MSG);
}

/* The debug counters of the hook that owns `fid`, or NULL when no mrlease
 * (or mrlease-built) hook answers MRL_DEBUG_OPS_1 on it. */
static struct mrl_debug_ops *debug_ops(struct fid *fid, int *ret)
{
	struct mrl_debug_ops *ops = NULL;

	*ret = fi_open_ops(fid, MRL_DEBUG_OPS_1, 0, (void **)&ops, NULL);
	return *ret ? NULL : ops;
}

static const char *const class_names[MRL_NCLASS] = {
	[MRL_CLASS_FABRIC] = "fabric", [MRL_CLASS_DOMAIN] = "domain",
	[MRL_CLASS_EQ] = "eq", [MRL_CLASS_WAIT] = "wait set",
	[MRL_CLASS_POLL] = "poll set", [MRL_CLASS_AV] = "av",
	[MRL_CLASS_AV_SET] = "av set", [MRL_CLASS_CQ] = "cq",
	[MRL_CLASS_CNTR] = "cntr", [MRL_CLASS_EP] = "ep",
	[MRL_CLASS_SEP] = "scalable ep", [MRL_CLASS_TX_CTX] = "tx context",
	[MRL_CLASS_RX_CTX] = "rx context", [MRL_CLASS_SRX_CTX] = "srx",
	[MRL_CLASS_STX_CTX] = "stx", [MRL_CLASS_PEP] = "passive ep",
	[MRL_CLASS_MR] = "mr", [MRL_CLASS_MC] = "mc",
};

/*
 * With the hook installed every object the application opens must be a
 * hook wrapper (its class count rises) and every wrapper must be closed
 * again when the application has closed everything (opened - closed back
 * where it was). Without the hook the debug ops must not exist: this is
 * the test that fails when FI_HOOK=mrlease silently does not install.
 */
static void test_hook_wraps_every_object_class_and_closes_every_wrapper(void)
{
	struct mrlt_domain d;
	struct mrl_debug_ops *ops;
	struct mrl_debug_counts c0, c1, c2;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_wait_attr wait_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_poll_attr poll_attr = { 0 };
	struct fid_eq *eq;
	struct fid_cntr *cntr;
	struct fid_wait *wait;
	struct fid_poll *poll;
	struct fid_mr *mr;
	struct mrlt_peer a;
	char *buf = mrlt_alloc(4096);
	bool opened[MRL_NCLASS] = { false };
	int ret, i;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	ops = debug_ops(&d.domain->fid, &ret);
	if (!expect_hook) {
		CHECK_MSG(!ops, "fi_open_ops(domain, %s) = 0 although FI_HOOK "
			  "does not name mrlease", MRL_DEBUG_OPS_1);
		return;
	}
	CHECK_MSG(ops, "fi_open_ops(domain, %s) = %d (%s): the mrlease hook "
		  "is not in the call path", MRL_DEBUG_OPS_1, ret,
		  fi_strerror(-ret));
	CHECK(ops->size >= sizeof(*ops) && ops->read);
	CHECK_EQ(0, mrlt_close_all());
	ops->read(&c0);

	CHECK(open_domain(FI_EP_RDM, 0, &d));
	opened[MRL_CLASS_FABRIC] = opened[MRL_CLASS_DOMAIN] = true;
	CHECK_FI(fi_eq_open(d.fabric, &eq_attr, &eq, NULL));
	mrlt_track_fid(&eq->fid);
	opened[MRL_CLASS_EQ] = true;
	if (fi_wait_open(d.fabric, &wait_attr, &wait) == 0) {
		mrlt_track_fid(&wait->fid);
		opened[MRL_CLASS_WAIT] = true;
	}
	if (fi_poll_open(d.domain, &poll_attr, &poll) == 0) {
		mrlt_track_fid(&poll->fid);
		opened[MRL_CLASS_POLL] = true;
	}
	if (fi_cntr_open(d.domain, &cntr_attr, &cntr, NULL) == 0) {
		mrlt_track_fid(&cntr->fid);
		opened[MRL_CLASS_CNTR] = true;
	}
	CHECK_FI(mrlt_peer_open(&d, NULL, &a));
	opened[MRL_CLASS_CQ] = opened[MRL_CLASS_AV] = true;
	opened[MRL_CLASS_EP] = true;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, buf, 4096, FI_REMOTE_WRITE, &mr));
	opened[MRL_CLASS_MR] = true;
	ops->read(&c1);
	for (i = 0; i < MRL_NCLASS; i++)
		CHECK_MSG(!opened[i] || c1.opened[i] > c0.opened[i],
			  "opening a %s did not create a hook wrapper "
			  "(opened count stays %llu)", class_names[i],
			  (unsigned long long)c1.opened[i]);
	CHECK_EQ(0, mrlt_close_all());
	ops->read(&c2);
	for (i = 0; i < MRL_NCLASS; i++)
		CHECK_MSG(c2.opened[i] - c2.closed[i] ==
				  c0.opened[i] - c0.closed[i],
			  "%s wrappers left open: %llu before, %llu after "
			  "closing everything", class_names[i],
			  (unsigned long long)(c0.opened[i] - c0.closed[i]),
			  (unsigned long long)(c2.opened[i] - c2.closed[i]));
}

/*
 * Under a utility provider libfabric installs the hook over the utility
 * fabric and again over the core fabric it opens inside; each instance's
 * domain must know which it is, because operands are resolved at the
 * outermost one only. A core provider gets one, outermost, instance. The
 * inner one resolves nothing without FI_MR_LOCAL (no provider here needs
 * it), so it hands the utility provider the core domain unwrapped, unless
 * FI_MRLEASE_HOOK_INNER=1 (passthrough.sh runs both).
 */
static void test_domain_knows_whether_it_is_the_outermost_instance(void)
{
	struct mrlt_domain d;
	struct mrl_debug_ops *ops;
	struct mrl_debug_counts c0, c1;
	bool utility = strchr(prov, ';') != NULL;
	const char *hook_inner_env = getenv("FI_MRLEASE_HOOK_INNER");
	bool hook_inner = hook_inner_env && !strcmp(hook_inner_env, "1");
	uint64_t outer, inner, bypassed;
	int ret;

	if (!expect_hook) {
		mrlt_skip_current("no hook: nothing to count");
		return;
	}
	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	ops = debug_ops(&d.fabric->fid, &ret);
	CHECK_MSG(ops, "fi_open_ops(fabric, %s) = %d (%s)", MRL_DEBUG_OPS_1,
		  ret, fi_strerror(-ret));
	ops->read(&c0);
	CHECK_EQ(0, mrlt_close(&d.domain->fid, "domain"));
	CHECK_FI(fi_domain(d.fabric, d.info, &d.domain, NULL));
	mrlt_track_fid(&d.domain->fid);
	ops->read(&c1);
	outer = c1.counter[MRL_DEBUG_OUTERMOST_DOMAINS] -
		c0.counter[MRL_DEBUG_OUTERMOST_DOMAINS];
	inner = c1.counter[MRL_DEBUG_INNER_DOMAINS] -
		c0.counter[MRL_DEBUG_INNER_DOMAINS];
	bypassed = c1.counter[MRL_DEBUG_INNER_BYPASSED] -
		   c0.counter[MRL_DEBUG_INNER_BYPASSED];
	CHECK_MSG(outer == 1, "opening one %s domain counted %llu outermost "
		  "domains", prov, (unsigned long long)outer);
	if (utility && hook_inner)
		CHECK_MSG(inner >= 1 && bypassed == 0,
			  "%s, FI_MRLEASE_HOOK_INNER=1: the core domain the "
			  "utility provider opens inside was hooked %llu times, "
			  "left unhooked %llu times", prov,
			  (unsigned long long)inner, (unsigned long long)bypassed);
	else if (utility)
		CHECK_MSG(inner == 0 && bypassed >= 1,
			  "%s: the core domain the utility provider opens "
			  "inside (no FI_MR_LOCAL) was hooked %llu times, left "
			  "unhooked %llu times", prov, (unsigned long long)inner,
			  (unsigned long long)bypassed);
	else
		CHECK_MSG(inner == 0 && bypassed == 0,
			  "%s is a core provider, yet %llu inner domains were "
			  "counted (%llu unhooked)", prov,
			  (unsigned long long)inner, (unsigned long long)bypassed);
}

/*
 * Some inline calls (fi_barrier, fi_broadcast, fi_allreduce...) jump
 * through an ops table without checking it; providers without collectives
 * leave that table NULL. Under the hook an application must get -FI_ENOSYS
 * there, never a jump through NULL, and ops the provider lacks behind
 * FI_CHECK_OP must say -FI_ENOSYS too.
 */
static void test_hook_answers_ops_the_provider_lacks_with_enosys(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fi_collective_attr cattr = { .op = FI_NOOP,
					    .datatype = FI_VOID };
	struct fi_context2 ctx;
	uint64_t buf = 1, res = 0;
	ssize_t ret;

	if (!expect_hook) {
		mrlt_skip_current("without the hook the bare provider's "
				      "NULL collective table would be called");
		return;
	}
	if (!open_pair(0, NULL, &d, &a, &b))
		return;
	ret = fi_query_collective(d.domain, FI_BARRIER, &cattr, 0);
	if ((d.info->caps & FI_COLLECTIVE) || ret == 0) {
		mrlt_skip_current("%s offers collectives "
				      "(fi_query_collective(FI_BARRIER) = %zd)",
				      prov, ret);
		return;
	}
	ret = fi_barrier(a.ep, a.peer, &ctx);
	CHECK_MSG(ret == -FI_ENOSYS, "fi_barrier = %zd (%s), want -FI_ENOSYS",
		  ret, fi_strerror((int)-ret));
	ret = fi_broadcast(a.ep, &buf, 1, NULL, a.peer, a.peer, FI_UINT64, 0,
			   &ctx);
	CHECK_MSG(ret == -FI_ENOSYS, "fi_broadcast = %zd (%s), want -FI_ENOSYS",
		  ret, fi_strerror((int)-ret));
	ret = fi_allreduce(a.ep, &buf, 1, NULL, &res, NULL, a.peer, FI_UINT64,
			   FI_SUM, 0, &ctx);
	CHECK_MSG(ret == -FI_ENOSYS, "fi_allreduce = %zd (%s), want -FI_ENOSYS",
		  ret, fi_strerror((int)-ret));
}

/* ------------------------------------------------------------------------
 * Object classes.
 */

/* A wrapper whose close leaks or fails, or a bind that hands the provider
 * a hook fid, shows up as soon as the basic objects are opened and closed. */
static void test_core_objects_open_bind_enable_and_close(void)
{
	struct mrlt_domain d;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { 0 };
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	char name[256];
	size_t len = sizeof(name);

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(fi_eq_open(d.fabric, &eq_attr, &eq, NULL));
	mrlt_track_fid(&eq->fid);
	CHECK_FI(fi_cq_open(d.domain, &cq_attr, &cq, NULL));
	mrlt_track_fid(&cq->fid);
	av_attr.type = d.info->domain_attr->av_type;
	CHECK_FI(fi_av_open(d.domain, &av_attr, &av, NULL));
	mrlt_track_fid(&av->fid);
	CHECK_FI(fi_endpoint(d.domain, d.info, &ep, NULL));
	mrlt_track_fid(&ep->fid);
	CHECK_FI(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_FI(fi_ep_bind(ep, &av->fid, 0));
	if (d.info->addr_format == FI_ADDR_STR) {
		char shm_name[64];

		snprintf(shm_name, sizeof(shm_name), "fi_shm://mrltest-core-%d",
			 (int)getpid());
		CHECK_FI(fi_setname(&ep->fid, shm_name, strlen(shm_name) + 1));
	}
	CHECK_FI(fi_enable(ep));
	CHECK_FI(fi_getname(&ep->fid, name, &len));
	CHECK(len > 0);
	CHECK_EQ(0, mrlt_close(&ep->fid, "ep"));
	CHECK_EQ(0, mrlt_close(&av->fid, "av"));
	CHECK_EQ(0, mrlt_close(&cq->fid, "cq"));
	CHECK_EQ(0, mrlt_close(&eq->fid, "eq"));
	CHECK_EQ(0, mrlt_close(&d.domain->fid, "domain"));
	CHECK_EQ(0, mrlt_close(&d.fabric->fid, "fabric"));
}

static void test_counter_opens_reads_and_closes(void)
{
	struct mrlt_domain d;
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!offered("cntr", "fi_cntr_open",
		     fi_cntr_open(d.domain, &attr, &cntr, NULL)))
		return;
	mrlt_track_fid(&cntr->fid);
	CHECK_FI(fi_cntr_set(cntr, 5));
	CHECK_FI(fi_cntr_add(cntr, 2));
	CHECK_EQ(7, fi_cntr_read(cntr));
	CHECK_EQ(0, fi_cntr_readerr(cntr));
	if (!offered("cntr_err", "fi_cntr_adderr", fi_cntr_adderr(cntr, 2)))
		return;
	CHECK_EQ(2, fi_cntr_readerr(cntr));
	CHECK_FI(fi_cntr_seterr(cntr, 0));
	CHECK_EQ(0, fi_cntr_readerr(cntr));
	CHECK_EQ(7, fi_cntr_read(cntr));
	CHECK_EQ(0, mrlt_close(&cntr->fid, "cntr"));
}

/* Address vectors are the application's table of peers: insert, lookup,
 * straddr and remove must reach the provider's AV and give back what was
 * put in. */
static void test_av_insert_lookup_straddr_and_remove(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	char name[256], str[256];
	size_t len = sizeof(name), slen = sizeof(str);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(mrlt_peer_open(&d, NULL, &a));
	CHECK_FI(mrlt_peer_open(&d, NULL, &b));
	CHECK_EQ(1, fi_av_insert(a.av, b.name, 1, &addr, 0, NULL));
	CHECK(addr != FI_ADDR_NOTAVAIL);
	CHECK(fi_av_straddr(a.av, b.name, str, &slen) != NULL);
	CHECK(slen > 1);
	if (!offered("av_lookup", "fi_av_lookup(just inserted address)",
		     fi_av_lookup(a.av, addr, name, &len)))
		return;
	CHECK_EQ(b.namelen, len);
	CHECK(!memcmp(name, b.name, len));
	CHECK_FI(fi_av_remove(a.av, &addr, 1, 0));
}

/* Applications post their own events with fi_eq_write: they must come
 * back exactly as written (the hook maps only provider fids), through
 * fi_eq_read and fi_eq_sread. */
static void test_eq_write_reads_back_application_events_unchanged(void)
{
	struct mrlt_domain d;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC,
				   .flags = FI_WRITE };
	struct fid_eq *eq;
	struct fi_eq_entry in, out;
	struct fid not_a_provider_fid = { 0 };
	uint32_t event;
	int ctx, i;
	fid_t fids[3];

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(fi_eq_open(d.fabric, &attr, &eq, NULL));
	mrlt_track_fid(&eq->fid);
	fids[0] = &eq->fid;
	fids[1] = NULL;
	fids[2] = &not_a_provider_fid;
	for (i = 0; i < 3; i++) {
		in = (struct fi_eq_entry){ .fid = fids[i], .context = &ctx,
					   .data = 40 + i };
		CHECK_EQ(sizeof(in), fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in),
						 0));
		memset(&out, 0, sizeof(out));
		if (i == 1)
			CHECK_EQ(sizeof(out), fi_eq_sread(eq, &event, &out,
							  sizeof(out), 1000, 0));
		else
			CHECK_EQ(sizeof(out), fi_eq_read(eq, &event, &out,
							 sizeof(out), 0));
		CHECK_EQ(FI_NOTIFY, event);
		CHECK_PTR(fids[i], out.fid);
		CHECK_PTR(&ctx, out.context);
		CHECK_EQ(40 + i, out.data);
	}
}

/* Wait sets are opened on the fabric and referenced by CQ attributes: the
 * hook must hand the provider its own wait set, not the hook's. */
static void test_wait_set_backs_a_cq(void)
{
	struct mrlt_domain d;
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_SET };
	struct fid_wait *wait;
	struct fid_cq *cq;
	int ret;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!offered("wait_set", "fi_wait_open",
		     fi_wait_open(d.fabric, &wattr, &wait)))
		return;
	mrlt_track_fid(&wait->fid);
	cq_attr.wait_set = wait;
	if (!offered("wait_set_cq", "fi_cq_open(wait_obj FI_WAIT_SET)",
		     fi_cq_open(d.domain, &cq_attr, &cq, NULL)))
		return;
	mrlt_track_fid(&cq->fid);
	ret = fi_wait(wait, 0);
	CHECK_MSG(ret == -FI_ETIMEDOUT || ret == -FI_EAGAIN || ret == 0,
		  "fi_wait(empty set, 0) = %d (%s)", ret, fi_strerror(-ret));
	CHECK_EQ(0, mrlt_close(&cq->fid, "cq"));
	CHECK_EQ(0, mrlt_close(&wait->fid, "wait set"));
}

/* fi_poll returns the contexts of the CQs with completions; a hook that
 * forwards the poll set but not the mapping hands back the provider's. */
static void test_poll_set_reports_the_hooked_cq(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fi_poll_attr attr = { 0 };
	struct fid_poll *poll;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);
	void *got[2] = { NULL, NULL };
	struct mrlt_wait w;
	int n = 0;

	if (!open_pair(0, NULL, &d, &a, &b))
		return;
	if (!offered("poll_set", "fi_poll_open",
		     fi_poll_open(d.domain, &attr, &poll)))
		return;
	mrlt_track_fid(&poll->fid);
	CHECK_FI(fi_poll_add(poll, &b.cq->fid, 0));
	mrlt_fill(src, SMALL, 1);
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, b.peer, &ctx), &a, &b));
	CHECK_FI(MRLT_POST(fi_send(a.ep, src, SMALL, NULL, a.peer, NULL), &a, &b));
	mrlt_wait_init(&w);
	do {
		n = fi_poll(poll, got, 2);
		if (n)
			break;
		mrlt_progress(&a);
	} while (!mrlt_wait_over(&w));
	CHECK_MSG(n == 1, "fi_poll = %d (%s)", n, n < 0 ? fi_strerror(-n) : "");
	CHECK_PTR(&b, got[0]);
	if (expect_hook) {
		struct mrl_debug_ops *ops = debug_ops(&poll->fid, &n);
		struct mrl_debug_counts c;

		CHECK_MSG(ops, "poll set is not a hook object");
		ops->read(&c);
		CHECK_MSG(c.counter[MRL_DEBUG_POLL_MAPPED] > 0,
			  "fi_poll result not mapped by the hook");
	}
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "recv after poll"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(!memcmp(src, dst, SMALL));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "send"));
	CHECK_FI(fi_poll_del(poll, &b.cq->fid, 0));
	CHECK_EQ(0, mrlt_close(&poll->fid, "poll set"));
}

/*
 * One SMALL message from endpoint tx (its completions on side s's CQ) to
 * address `to`, received by a receive posted on rx (side r's CQ): both
 * completions carry their own contexts and the bytes arrive. Failures are
 * recorded; callers check mrlt_failed().
 */
static void one_message(struct fid_ep *tx, struct mrlt_peer *s, fi_addr_t to,
			struct fid_ep *rx, struct mrlt_peer *r, unsigned seed,
			const char *what)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 sctx, rctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);

	mrlt_fill(src, SMALL, seed);
	CHECK_FI(MRLT_POST(fi_recv(rx, dst, SMALL, NULL, FI_ADDR_UNSPEC, &rctx),
			  s, r));
	CHECK_FI(MRLT_POST(fi_send(tx, src, SMALL, NULL, to, &sctx), s, r));
	CHECK_MSG(mrlt_cq_wait(s, r, &entry, NULL, what) == 0, "%s: send", what);
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_MSG(mrlt_cq_wait(r, s, &entry, NULL, what) == 0, "%s: recv", what);
	CHECK_PTR(&rctx, entry.op_context);
	CHECK_MSG(!memcmp(src, dst, SMALL), "%s: data differs", what);
}

/* An alias is an endpoint of its own class: the hook must wrap it (FI_ALIAS
 * through fi_control) so posts through it reach the same provider endpoint. */
static void test_ep_alias_sends_through_the_same_endpoint(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_ep *alias = NULL;

	if (!open_pair(0, NULL, &d, &a, &b))
		return;
	if (!offered("alias", "fi_ep_alias",
		     fi_ep_alias(a.ep, &alias, FI_TRANSMIT)))
		return;
	mrlt_track_fid(&alias->fid);
	CHECK(alias != a.ep);
	one_message(alias, &a, a.peer, b.ep, &b, 2, "send through alias");
	if (mrlt_failed())
		return;
	CHECK_EQ(0, mrlt_close(&alias->fid, "alias"));
}

/* Shared contexts are bound to endpoints: the bind must reach the
 * provider's stx/srx, and traffic must flow through them. */
static void test_shared_tx_and_rx_contexts_carry_traffic(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_stx *stx;
	struct fid_ep *srx;
	struct fid_ep *ep_s;
	struct fi_info *info;
	char name[256];
	size_t len = sizeof(name);
	fi_addr_t to_s;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (d.info->domain_attr->max_ep_stx_ctx == 0 ||
	    d.info->domain_attr->max_ep_srx_ctx == 0) {
		mrlt_skip_current("fi_getinfo for %s reports max_ep_stx_ctx "
				      "%zu, max_ep_srx_ctx %zu", prov,
				      d.info->domain_attr->max_ep_stx_ctx,
				      d.info->domain_attr->max_ep_srx_ctx);
		return;
	}
	CHECK_FI(mrlt_rdm_pair_open(&d, NULL, &a, &b));
	CHECK_FI(fi_stx_context(d.domain, d.info->tx_attr, &stx, NULL));
	mrlt_track_fid(&stx->fid);
	CHECK_FI(fi_srx_context(d.domain, d.info->rx_attr, &srx, NULL));
	mrlt_track_fid(&srx->fid);

	/* ep_s: shares stx for sends and srx for receives; uses b's CQ/AV. */
	info = mrlt_track_info(fi_dupinfo(d.info));
	CHECK(info);
	info->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	CHECK_FI(fi_endpoint(d.domain, info, &ep_s, NULL));
	mrlt_track_fid(&ep_s->fid);
	CHECK_FI(fi_ep_bind(ep_s, &stx->fid, 0));
	CHECK_FI(fi_ep_bind(ep_s, &srx->fid, 0));
	CHECK_FI(fi_ep_bind(ep_s, &b.cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_FI(fi_ep_bind(ep_s, &b.av->fid, 0));
	CHECK_FI(fi_enable(ep_s));
	CHECK_FI(fi_getname(&ep_s->fid, name, &len));
	CHECK_FI(fi_av_insert(a.av, name, 1, &to_s, 0, NULL));

	/* in through the srx, and back out through the stx */
	one_message(a.ep, &a, to_s, srx, &b, 3, "send to the srx");
	if (mrlt_failed())
		return;
	one_message(ep_s, &b, b.peer, a.ep, &a, 4, "send on the stx");
	if (mrlt_failed())
		return;
	CHECK_EQ(0, mrlt_close(&ep_s->fid, "shared ep"));
	CHECK_EQ(0, mrlt_close(&srx->fid, "srx"));
	CHECK_EQ(0, mrlt_close(&stx->fid, "stx"));
}

/* Scalable endpoints hand out tx/rx contexts, each an endpoint class of its
 * own with its own binds: all must be wrapped and carry traffic. */
static void test_scalable_ep_contexts_carry_traffic(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a;
	struct fid_ep *sep, *tx, *rx;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { 0 };
	struct fi_info *info;
	char name[256];
	size_t len = sizeof(name);
	fi_addr_t to_sep, to_rx0, to_a;
	int bits;
	struct mrlt_peer sep_side;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (d.info->domain_attr->max_ep_tx_ctx < 2 ||
	    d.info->domain_attr->max_ep_rx_ctx < 2) {
		mrlt_skip_current("fi_getinfo for %s reports max_ep_tx_ctx "
				      "%zu, max_ep_rx_ctx %zu: no scalable "
				      "endpoints", prov,
				      d.info->domain_attr->max_ep_tx_ctx,
				      d.info->domain_attr->max_ep_rx_ctx);
		return;
	}
	CHECK_FI(mrlt_peer_open(&d, NULL, &a));
	info = mrlt_track_info(fi_dupinfo(d.info));
	CHECK(info);
	info->ep_attr->tx_ctx_cnt = 2;
	info->ep_attr->rx_ctx_cnt = 2;
	for (bits = 0; (1 << bits) < 2; bits++)
		;
	av_attr.type = d.info->domain_attr->av_type;
	av_attr.rx_ctx_bits = bits;
	CHECK_FI(fi_av_open(d.domain, &av_attr, &av, NULL));
	mrlt_track_fid(&av->fid);
	CHECK_FI(fi_cq_open(d.domain, &cq_attr, &cq, NULL));
	mrlt_track_fid(&cq->fid);
	CHECK_FI(fi_scalable_ep(d.domain, info, &sep, NULL));
	mrlt_track_fid(&sep->fid);
	CHECK_FI(fi_scalable_ep_bind(sep, &av->fid, 0));
	CHECK_FI(fi_tx_context(sep, 0, NULL, &tx, NULL));
	mrlt_track_fid(&tx->fid);
	CHECK_FI(fi_rx_context(sep, 0, NULL, &rx, NULL));
	mrlt_track_fid(&rx->fid);
	CHECK_FI(fi_ep_bind(tx, &cq->fid, FI_TRANSMIT));
	CHECK_FI(fi_ep_bind(rx, &cq->fid, FI_RECV));
	CHECK_FI(fi_enable(tx));
	CHECK_FI(fi_enable(rx));
	CHECK_FI(fi_enable(sep));
	CHECK_FI(fi_getname(&sep->fid, name, &len));
	CHECK_FI(fi_av_insert(a.av, name, 1, &to_sep, 0, NULL));
	CHECK_FI(fi_av_insert(av, a.name, 1, &to_a, 0, NULL));
	to_rx0 = fi_rx_addr(to_sep, 0, bits);

	/* progress helper view of the sep side: its CQ only */
	memset(&sep_side, 0, sizeof(sep_side));
	sep_side.cq = cq;

	one_message(a.ep, &a, to_rx0, rx, &sep_side, 5, "send to rx context 0");
	if (mrlt_failed())
		return;
	one_message(tx, &sep_side, to_a, a.ep, &a, 6, "send on tx context 0");
	if (mrlt_failed())
		return;
	CHECK_EQ(0, mrlt_close(&tx->fid, "tx context"));
	CHECK_EQ(0, mrlt_close(&rx->fid, "rx context"));
	CHECK_EQ(0, mrlt_close(&sep->fid, "scalable ep"));
}

/* All three registration calls must reach the provider and give back a
 * usable MR (desc, key) that closes cleanly. */
static void test_mr_reg_regv_and_regattr_register_and_close(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a;
	struct fid_mr *mr1, *mr2, *mr3;
	char *buf = mrlt_alloc(3 * 4096);
	struct iovec iov = { .iov_base = buf + 4096, .iov_len = 4096 };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE,
		.requested_key = 3,
	};
	bool ep_mr;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(mrlt_peer_open(&d, NULL, &a));
	ep_mr = d.info->domain_attr->mr_mode & FI_MR_ENDPOINT;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, buf, 4096, FI_REMOTE_WRITE, &mr1));
	iov.iov_base = buf + 4096;
	CHECK_FI(fi_mr_regv(d.domain, &iov, 1, FI_REMOTE_READ, 0, 2, 0, &mr2,
			    NULL));
	mrlt_track_fid(&mr2->fid);
	iov.iov_base = buf + 2 * 4096;
	CHECK_FI(fi_mr_regattr(d.domain, &attr, 0, &mr3));
	mrlt_track_fid(&mr3->fid);
	if (ep_mr) {
		CHECK_FI(fi_mr_bind(mr2, &a.ep->fid, 0));
		CHECK_FI(fi_mr_enable(mr2));
		CHECK_FI(fi_mr_bind(mr3, &a.ep->fid, 0));
		CHECK_FI(fi_mr_enable(mr3));
	}
	CHECK(fi_mr_key(mr1) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_key(mr2) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_key(mr3) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_key(mr1) != fi_mr_key(mr2));
	(void)fi_mr_desc(mr1);
	CHECK_EQ(0, mrlt_close(&mr3->fid, "mr regattr"));
	CHECK_EQ(0, mrlt_close(&mr2->fid, "mr regv"));
	CHECK_EQ(0, mrlt_close(&mr1->fid, "mr reg"));
}

/* ------------------------------------------------------------------------
 * Data transfer.
 */

static const struct mrlt_peer_opts cntr_opts = { .cntrs = true };

/* Counters are optional: rxm in 1.17, for one, reports cntr_cnt 0. */
static bool open_pair_cntrs(uint64_t extra, struct mrlt_domain *d,
			    struct mrlt_peer *a, struct mrlt_peer *b,
			    bool *cntrs)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *probe;
	int ret;

	if (!open_domain(FI_EP_RDM, extra, d))
		return false;
	ret = fi_cntr_open(d->domain, &attr, &probe, NULL);
	printf("# probe cntr %d\n", ret);
	*cntrs = ret == 0;
	if (!ret && fi_close(&probe->fid))
		mrlt_fail(__FILE__, __LINE__, "fi_close(cntr) failed");
	if (ret && baseline_rc("cntr", &ret) && ret == 0)
		mrlt_fail(__FILE__, __LINE__, "fi_cntr_open fails under "
			      "FI_HOOK but not without the hook");
	return mrlt_rdm_pair_open(d, *cntrs ? &cntr_opts : NULL, a, b) == 0;
}

/* Round trip of every msg post variant with data verified, once with desc
 * NULL and once with the registered descriptor: a hook that drops an iov,
 * a desc or a context shows up as wrong data or a wrong op_context. */
static void msg_round(struct mrlt_peer *a, struct mrlt_peer *b, size_t len,
		      void *sdesc, void *rdesc, char *src, char *dst,
		      unsigned seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 sctx, rctx;
	struct iovec siov[2], riov[2];
	void *sd[2] = { sdesc, sdesc }, *rd[2] = { rdesc, rdesc };
	struct fi_msg msg;

	/* fi_send / fi_recv */
	mrlt_fill(src, len, seed);
	memset(dst, 0, len);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, rdesc, b->peer, &rctx), a, b));
	CHECK_FI(MRLT_POST(fi_send(a->ep, src, len, sdesc, a->peer, &sctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_send"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK(entry.flags & FI_SEND);
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "fi_recv"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(entry.flags & FI_RECV);
	CHECK_EQ(len, entry.len);
	CHECK(!memcmp(src, dst, len));

	/* fi_sendv / fi_recvv, two halves each */
	mrlt_fill(src, len, seed + 1);
	memset(dst, 0, len);
	siov[0] = (struct iovec){ src, len / 2 };
	siov[1] = (struct iovec){ src + len / 2, len - len / 2 };
	riov[0] = (struct iovec){ dst, len / 2 };
	riov[1] = (struct iovec){ dst + len / 2, len - len / 2 };
	CHECK_FI(MRLT_POST(fi_recvv(b->ep, riov, rd, 2, b->peer, &rctx), a, b));
	CHECK_FI(MRLT_POST(fi_sendv(a->ep, siov, sd, 2, a->peer, &sctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_sendv"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "fi_recvv"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(!memcmp(src, dst, len));

	/* fi_sendmsg with remote CQ data / fi_recvmsg */
	mrlt_fill(src, len, seed + 2);
	memset(dst, 0, len);
	msg = (struct fi_msg){ .msg_iov = riov, .desc = rd, .iov_count = 2,
			       .addr = b->peer, .context = &rctx };
	CHECK_FI(MRLT_POST(fi_recvmsg(b->ep, &msg, 0), a, b));
	msg = (struct fi_msg){ .msg_iov = siov, .desc = sd, .iov_count = 2,
			       .addr = a->peer, .context = &sctx,
			       .data = 0xd00d };
	CHECK_FI(MRLT_POST(fi_sendmsg(a->ep, &msg, FI_REMOTE_CQ_DATA |
						      FI_COMPLETION), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_sendmsg"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "fi_recvmsg"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(entry.flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xd00d, entry.data);
	CHECK(!memcmp(src, dst, len));

	/* fi_senddata */
	mrlt_fill(src, len, seed + 3);
	memset(dst, 0, len);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, rdesc, b->peer, &rctx), a, b));
	CHECK_FI(MRLT_POST(fi_senddata(a->ep, src, len, sdesc, 0xbeef, a->peer,
				      &sctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_senddata"));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "recv of senddata"));
	CHECK(entry.flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xbeef, entry.data);
	CHECK(!memcmp(src, dst, len));
}

static void inject_round(struct mrlt_peer *a, struct mrlt_peer *b, char *src,
			 char *dst, unsigned seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 rctx;
	size_t len = 16;

	mrlt_fill(src, len, seed);
	memset(dst, 0, len);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, NULL, b->peer, &rctx), a, b));
	CHECK_FI(MRLT_POST(fi_inject(a->ep, src, len, a->peer), a, b));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "recv of fi_inject"));
	CHECK(!memcmp(src, dst, len));
	mrlt_fill(src, len, seed + 1);
	CHECK_FI(MRLT_POST(fi_recv(b->ep, dst, len, NULL, b->peer, &rctx), a, b));
	CHECK_FI(MRLT_POST(fi_injectdata(a->ep, src, len, 0x77, a->peer), a, b));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "recv of fi_injectdata"));
	CHECK_EQ(0x77, entry.data);
	CHECK(!memcmp(src, dst, len));
}

static void test_msg_ops_move_data_with_null_and_registered_desc(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *smr, *rmr;
	char *src = mrlt_alloc(LARGE), *dst = mrlt_alloc(LARGE);
	bool cntrs;
	size_t sizes[] = { SMALL, LARGE };
	unsigned i;

	if (!open_pair_cntrs(0, &d, &a, &b, &cntrs))
		return;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, src, LARGE, FI_SEND, &smr));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, dst, LARGE, FI_RECV, &rmr));
	for (i = 0; i < 2; i++) {
		msg_round(&a, &b, sizes[i], NULL, NULL, src, dst, 10 * i);
		if (mrlt_failed())
			return;
		msg_round(&a, &b, sizes[i], fi_mr_desc(smr), fi_mr_desc(rmr),
			  src, dst, 10 * i + 5);
		if (mrlt_failed())
			return;
	}
	if (cntrs) {
		CHECK_FI(mrlt_cntr_wait(a.tx_cntr, 16, &a, &b, "tx counter"));
		CHECK_EQ(16, fi_cntr_read(a.tx_cntr));
		CHECK_FI(mrlt_cntr_wait(b.rx_cntr, 16, &b, &a, "rx counter"));
		CHECK_EQ(16, fi_cntr_read(b.rx_cntr));
	}
	inject_round(&a, &b, src, dst, 50);
}

static void test_tagged_ops_match_tags_and_move_data(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *smr, *rmr;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 sctx, rctx, rctx2;
	char *src = mrlt_alloc(LARGE), *dst = mrlt_alloc(LARGE);
	char *dst2 = mrlt_alloc(SMALL);
	struct iovec siov = { src, LARGE }, riov = { dst, LARGE };
	struct fi_msg_tagged tmsg;
	void *sdesc, *rdesc;
	bool cntrs;

	if (!open_pair_cntrs(0, &d, &a, &b, &cntrs))
		return;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, src, LARGE, FI_SEND, &smr));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, dst, LARGE, FI_RECV, &rmr));
	sdesc = fi_mr_desc(smr);
	rdesc = fi_mr_desc(rmr);

	/* Two receives with different tags: the message must land in the one
	 * whose tag matches, whichever was posted first. */
	mrlt_fill(src, SMALL, 60);
	CHECK_FI(MRLT_POST(fi_trecv(b.ep, dst2, SMALL, NULL, b.peer, TAG + 1, 0,
				   &rctx2), &a, &b));
	CHECK_FI(MRLT_POST(fi_trecv(b.ep, dst, SMALL, NULL, b.peer, TAG, 0,
				   &rctx), &a, &b));
	CHECK_FI(MRLT_POST(fi_tsend(a.ep, src, SMALL, NULL, a.peer, TAG, &sctx),
			  &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_tsend"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "fi_trecv"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK(entry.flags & FI_TAGGED);
	CHECK_EQ(TAG, entry.tag);
	CHECK(!memcmp(src, dst, SMALL));

	/* The other receive takes a large registered tsenddata. */
	mrlt_fill(src, LARGE, 61);
	memset(dst2, 0, SMALL);
	CHECK_FI(MRLT_POST(fi_tsenddata(a.ep, src, SMALL, sdesc, 0x42, a.peer,
				       TAG + 1, &sctx), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_tsenddata"));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "second fi_trecv"));
	CHECK_PTR(&rctx2, entry.op_context);
	CHECK_EQ(TAG + 1, entry.tag);
	CHECK_EQ(0x42, entry.data);
	CHECK(!memcmp(src, dst2, SMALL));

	/* fi_tsendmsg / fi_trecvmsg with registered descs and ignore bits */
	mrlt_fill(src, LARGE, 62);
	memset(dst, 0, LARGE);
	tmsg = (struct fi_msg_tagged){ .msg_iov = &riov, .desc = &rdesc,
				       .iov_count = 1, .addr = b.peer,
				       .tag = TAG & ~0xfULL, .ignore = 0xf,
				       .context = &rctx };
	CHECK_FI(MRLT_POST(fi_trecvmsg(b.ep, &tmsg, 0), &a, &b));
	tmsg = (struct fi_msg_tagged){ .msg_iov = &siov, .desc = &sdesc,
				       .iov_count = 1, .addr = a.peer,
				       .tag = TAG, .context = &sctx };
	CHECK_FI(MRLT_POST(fi_tsendmsg(a.ep, &tmsg, FI_COMPLETION), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_tsendmsg"));
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "fi_trecvmsg"));
	CHECK_PTR(&rctx, entry.op_context);
	CHECK_EQ(TAG, entry.tag);
	CHECK_EQ(LARGE, entry.len);
	CHECK(!memcmp(src, dst, LARGE));

	if (cntrs) {
		CHECK_FI(mrlt_cntr_wait(a.tx_cntr, 3, &a, &b, "tx counter"));
		CHECK_EQ(3, fi_cntr_read(a.tx_cntr));
		CHECK_FI(mrlt_cntr_wait(b.rx_cntr, 3, &b, &a, "rx counter"));
		CHECK_EQ(3, fi_cntr_read(b.rx_cntr));
	}

	/* fi_tinject */
	mrlt_fill(src, 16, 63);
	CHECK_FI(MRLT_POST(fi_trecv(b.ep, dst, 16, NULL, b.peer, TAG, 0, &rctx),
			  &a, &b));
	CHECK_FI(MRLT_POST(fi_tinject(a.ep, src, 16, a.peer, TAG), &a, &b));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "recv of fi_tinject"));
	CHECK_EQ(TAG, entry.tag);
	CHECK(!memcmp(src, dst, 16));
}

/* RMA write and read in every variant, with data verified at the target
 * and counters checked: a hook that mixes up a key, an address or a desc
 * moves the wrong bytes. */
static void rma_round(struct mrlt_domain *d, struct mrlt_peer *a,
		      struct mrlt_peer *b, size_t len, void *ldesc,
		      char *local, char *target, uint64_t key, unsigned seed)
{
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	uint64_t raddr = mrlt_rma_addr(d, target);
	struct iovec iov[2];
	void *descs[2] = { ldesc, ldesc };
	struct fi_rma_iov rma = { .addr = raddr, .len = len, .key = key };
	struct fi_msg_rma msg;

	/* fi_write */
	mrlt_fill(local, len, seed);
	CHECK_FI(MRLT_POST(fi_write(a->ep, local, len, ldesc, a->peer, raddr,
				   key, &ctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_write"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(entry.flags & FI_WRITE);
	CHECK_FI(wait_bytes(target, local, len, a, b, "fi_write"));

	/* fi_writemsg, two iovs */
	mrlt_fill(local, len, seed + 1);
	iov[0] = (struct iovec){ local, len / 2 };
	iov[1] = (struct iovec){ local + len / 2, len - len / 2 };
	msg = (struct fi_msg_rma){ .msg_iov = iov, .desc = descs,
				   .iov_count = 2, .addr = a->peer,
				   .rma_iov = &rma, .rma_iov_count = 1,
				   .context = &ctx };
	CHECK_FI(MRLT_POST(fi_writemsg(a->ep, &msg, FI_COMPLETION), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_writemsg"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK_FI(wait_bytes(target, local, len, a, b, "fi_writemsg"));

	/* fi_writedata: the target sees the CQ data */
	mrlt_fill(local, len, seed + 2);
	CHECK_FI(MRLT_POST(fi_writedata(a->ep, local, len, ldesc, 0xabc,
				       a->peer, raddr, key, &ctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_writedata"));
	CHECK_FI(mrlt_cq_wait(b, a, &entry, NULL, "remote data of fi_writedata"));
	CHECK(entry.flags & FI_REMOTE_CQ_DATA);
	CHECK_EQ(0xabc, entry.data);
	CHECK_FI(wait_bytes(target, local, len, a, b, "fi_writedata"));

	/* fi_read and fi_readv back into a cleared local buffer */
	mrlt_fill(target, len, seed + 3);
	memset(local, 0, len);
	CHECK_FI(MRLT_POST(fi_read(a->ep, local, len, ldesc, a->peer, raddr,
				  key, &ctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_read"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(entry.flags & FI_READ);
	CHECK(!memcmp(local, target, len));
	memset(local, 0, len);
	CHECK_FI(MRLT_POST(fi_readv(a->ep, iov, descs, 2, a->peer, raddr, key,
				   &ctx), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_readv"));
	CHECK(!memcmp(local, target, len));
	memset(local, 0, len);
	msg.context = &ctx;
	CHECK_FI(MRLT_POST(fi_readmsg(a->ep, &msg, FI_COMPLETION), a, b));
	CHECK_FI(mrlt_cq_wait(a, b, &entry, NULL, "fi_readmsg"));
	CHECK(!memcmp(local, target, len));
}

static void test_rma_ops_move_data_with_null_and_registered_desc(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *lmr, *tmr;
	char *local = mrlt_alloc(LARGE), *target = mrlt_alloc(LARGE);
	bool cntrs;
	uint64_t key;
	unsigned i;
	size_t sizes[] = { SMALL, LARGE };

	if (!open_pair_cntrs(0, &d, &a, &b, &cntrs))
		return;
	CHECK_FI(mrlt_mr_reg(&d, a.ep, local, LARGE, FI_READ | FI_WRITE, &lmr));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, LARGE,
			    FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	key = fi_mr_key(tmr);
	for (i = 0; i < 2; i++) {
		rma_round(&d, &a, &b, sizes[i], NULL, local, target, key,
			  20 * i);
		if (mrlt_failed())
			return;
		rma_round(&d, &a, &b, sizes[i], fi_mr_desc(lmr), local, target,
			  key, 20 * i + 10);
		if (mrlt_failed())
			return;
	}
	if (cntrs) {
		/* 4 rounds of 3 writes and 3 reads */
		CHECK_FI(mrlt_cntr_wait(a.rma_cntr, 24, &a, &b, "rma counter"));
		CHECK_EQ(24, fi_cntr_read(a.rma_cntr));
	}

	/* fi_inject_write and fi_inject_writedata */
	mrlt_fill(local, 16, 99);
	CHECK_FI(MRLT_POST(fi_inject_write(a.ep, local, 16, a.peer,
					  mrlt_rma_addr(&d, target), key), &a, &b));
	CHECK_FI(wait_bytes(target, local, 16, &a, &b, "fi_inject_write"));
}

/* FI_RMA_EVENT counters at the target count the writes and reads peers
 * make into its memory: the FI_REMOTE_WRITE|FI_REMOTE_READ bind must reach
 * the provider's endpoint with the provider's counter. */
static void test_remote_counter_counts_rma_at_the_target(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = { .cntrs = true, .remote_cntr = true };
	struct fid_mr *tmr;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	char *local = mrlt_alloc(SMALL), *target = mrlt_alloc(SMALL);
	uint64_t key, raddr;

	if (!open_pair(FI_RMA_EVENT, &opts, &d, &a, &b))
		return;
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, SMALL,
			    FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	key = fi_mr_key(tmr);
	raddr = mrlt_rma_addr(&d, target);
	mrlt_fill(local, SMALL, 120);
	CHECK_FI(MRLT_POST(fi_write(a.ep, local, SMALL, NULL, a.peer, raddr, key,
				   &ctx), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_write"));
	CHECK_FI(mrlt_cntr_wait(b.remote_cntr, 1, &b, &a, "remote counter"));
	CHECK_FI(wait_bytes(target, local, SMALL, &a, &b, "fi_write"));
	CHECK_FI(MRLT_POST(fi_read(a.ep, local, SMALL, NULL, a.peer, raddr, key,
				  &ctx), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_read"));
	CHECK_FI(mrlt_cntr_wait(b.remote_cntr, 2, &b, &a, "remote counter"));
	CHECK_EQ(2, fi_cntr_read(b.remote_cntr));
	/* sockets' progress thread may bump the initiator's counter just after
	 * it writes the CQ entry: wait for it, then require the exact count. */
	CHECK_FI(mrlt_cntr_wait(a.rma_cntr, 2, &a, &b, "initiator rma counter"));
	CHECK_EQ(2, fi_cntr_read(a.rma_cntr));
}

/* Atomics go through their own ops table and fi_query_atomic: both must be
 * forwarded, and the results fetched must be the target's old values. */
static void test_atomic_ops_update_and_fetch(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *tmr, *omr, *rmr;
	struct fi_atomic_attr attr;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	uint64_t *target = mrlt_alloc(sizeof(uint64_t));
	uint64_t *operand = mrlt_alloc(sizeof(uint64_t));
	uint64_t *result = mrlt_alloc(sizeof(uint64_t));
	uint64_t *compare = mrlt_alloc(sizeof(uint64_t));
	uint64_t key, raddr;
	size_t count;

	if (!open_pair(FI_ATOMIC, NULL, &d, &a, &b))
		return;
	if (!offered("atomic", "fi_query_atomic(UINT64, SUM)",
		     fi_query_atomic(d.domain, FI_UINT64, FI_SUM, &attr, 0)))
		return;
	CHECK_EQ(sizeof(uint64_t), attr.size);
	CHECK_FI(fi_atomicvalid(a.ep, FI_UINT64, FI_SUM, &count));
	CHECK(count >= 1);
	CHECK_FI(fi_fetch_atomicvalid(a.ep, FI_UINT64, FI_SUM, &count));
	CHECK_FI(fi_compare_atomicvalid(a.ep, FI_UINT64, FI_CSWAP, &count));
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, sizeof(*target),
			    FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	key = fi_mr_key(tmr);
	raddr = mrlt_rma_addr(&d, target);

	*target = 100;
	*operand = 5;
	CHECK_FI(MRLT_POST(fi_atomic(a.ep, operand, 1, NULL, a.peer, raddr, key,
				    FI_UINT64, FI_SUM, &ctx), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_atomic SUM"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(entry.flags & FI_ATOMIC);

	*operand = 10;
	CHECK_FI(MRLT_POST(fi_fetch_atomic(a.ep, operand, 1, NULL, result, NULL,
					  a.peer, raddr, key, FI_UINT64,
					  FI_SUM, &ctx), &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_fetch_atomic SUM"));
	CHECK_EQ(105, *result);

	*operand = 7;
	*compare = 115;
	CHECK_FI(MRLT_POST(fi_compare_atomic(a.ep, operand, 1, NULL, compare,
					    NULL, result, NULL, a.peer, raddr,
					    key, FI_UINT64, FI_CSWAP, &ctx),
			  &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_compare_atomic CSWAP"));
	CHECK_EQ(115, *result);
	CHECK_EQ(7, *target);

	/* again with registered descriptors for operand and result */
	CHECK_FI(mrlt_mr_reg(&d, a.ep, operand, sizeof(*operand), FI_WRITE,
			    &omr));
	CHECK_FI(mrlt_mr_reg(&d, a.ep, result, sizeof(*result), FI_READ, &rmr));
	*operand = 3;
	CHECK_FI(MRLT_POST(fi_fetch_atomic(a.ep, operand, 1, fi_mr_desc(omr),
					  result, fi_mr_desc(rmr), a.peer,
					  raddr, key, FI_UINT64, FI_SUM, &ctx),
			  &a, &b));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "fi_fetch_atomic with desc"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK_EQ(7, *result);
	CHECK_EQ(10, *target);
}

/*
 * Completions come back in the format the CQ was opened with and several
 * at a time: a hook that rewrites entries (contexts, leases) must step
 * through the application's array by that format's size and keep every
 * field. Checked for each format with a batch read of several entries.
 */
#define BATCH 4

static void batch_round(enum fi_cq_format format)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = { .cq_format = format };
	struct fi_context2 sctx[BATCH], rctx[BATCH];
	char *src = mrlt_alloc(BATCH * SMALL), *dst = mrlt_alloc(BATCH * SMALL);
	size_t size = format == FI_CQ_FORMAT_CONTEXT ? sizeof(struct fi_cq_entry) :
		      format == FI_CQ_FORMAT_MSG ? sizeof(struct fi_cq_msg_entry) :
		      format == FI_CQ_FORMAT_DATA ? sizeof(struct fi_cq_data_entry) :
						    sizeof(struct fi_cq_tagged_entry);
	char *entries = mrlt_alloc(BATCH * sizeof(struct fi_cq_tagged_entry));
	bool seen[BATCH] = { false };
	struct mrlt_wait w;
	int i, j, got = 0;
	ssize_t n;

	if (!open_pair(0, &opts, &d, &a, &b))
		return;
	mrlt_fill(src, BATCH * SMALL, 140);
	for (i = 0; i < BATCH; i++)
		CHECK_FI(MRLT_POST(fi_recv(b.ep, dst + i * SMALL, SMALL, NULL,
					  b.peer, &rctx[i]), &a, &b));
	for (i = 0; i < BATCH; i++)
		CHECK_FI(MRLT_POST(fi_senddata(a.ep, src + i * SMALL, SMALL, NULL,
					      100 + i, a.peer, &sctx[i]), &a, &b));
	mrlt_wait_init(&w);
	while (got < BATCH && !mrlt_wait_over(&w)) {
		n = fi_cq_read(b.cq, entries, BATCH);
		if (n == -FI_EAGAIN) {
			mrlt_progress(&a);
			continue;
		}
		CHECK_MSG(n > 0 && n <= BATCH - got, "fi_cq_read(%d entries) = "
			  "%zd (%s)", BATCH - got, n, n < 0 ?
			  fi_strerror((int)-n) : "too many");
		for (j = 0; j < n; j++) {
			struct fi_cq_tagged_entry *e =
				(void *)(entries + (size_t)j * size);
			int k = (int)((struct fi_context2 *)e->op_context - rctx);

			CHECK_MSG(k >= 0 && k < BATCH && !seen[k], "entry %d of "
				  "%zd: op_context %p is no outstanding receive",
				  j, n, e->op_context);
			seen[k] = true;
			if (format == FI_CQ_FORMAT_CONTEXT)
				continue;
			CHECK(e->flags & FI_RECV);
			CHECK_EQ(SMALL, e->len);
			if (format == FI_CQ_FORMAT_MSG)
				continue;
			CHECK(e->flags & FI_REMOTE_CQ_DATA);
			CHECK_EQ(100 + k, e->data);
		}
		got += (int)n;
	}
	CHECK_MSG(got == BATCH, "%d of %d receives completed", got, BATCH);
	CHECK(!memcmp(src, dst, BATCH * SMALL));
	for (i = 0; i < BATCH; i++) {
		CHECK_FI(mrlt_cq_wait(&a, &b, entries, NULL, "send"));
		CHECK_MSG(((struct fi_cq_entry *)entries)->op_context >=
				  (void *)sctx &&
			  ((struct fi_cq_entry *)entries)->op_context <
				  (void *)(sctx + BATCH),
			  "send completion with a foreign op_context");
	}
}

static void test_cq_format_context_batches_keep_every_context(void)
{
	batch_round(FI_CQ_FORMAT_CONTEXT);
}

static void test_cq_format_msg_batches_keep_len_and_flags(void)
{
	batch_round(FI_CQ_FORMAT_MSG);
}

static void test_cq_format_data_batches_keep_remote_data(void)
{
	batch_round(FI_CQ_FORMAT_DATA);
}

static void test_cq_format_tagged_batches_keep_remote_data(void)
{
	batch_round(FI_CQ_FORMAT_TAGGED);
}

/* ------------------------------------------------------------------------
 * Completion paths.
 */

/* FI_SOURCE reports who sent a message: the hook must pass src_addr
 * through fi_cq_readfrom, not drop it. */
static void test_cq_readfrom_reports_the_sender(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);
	fi_addr_t from = FI_ADDR_NOTAVAIL;

	if (!open_pair(FI_SOURCE, NULL, &d, &a, &b))
		return;
	mrlt_fill(src, SMALL, 70);
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, FI_ADDR_UNSPEC, &ctx),
			  &a, &b));
	CHECK_FI(MRLT_POST(fi_send(a.ep, src, SMALL, NULL, a.peer, NULL), &a, &b));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, &from, "fi_cq_readfrom"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK_EQ(b.peer, from);
	CHECK(!memcmp(src, dst, SMALL));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "send"));
}

/* A cancelled receive completes in error: the hook must map the error
 * entry's context back and pass err/flags through fi_cq_readerr. */
static void test_cancelled_recv_reads_ecanceled_from_cq_readerr(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fi_cq_err_entry err;
	struct fi_context2 ctx;
	char *dst = mrlt_alloc(SMALL);
	int ret;

	if (!open_pair(0, NULL, &d, &a, &b))
		return;
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, b.peer, &ctx), &a, &b));
	ret = (int)fi_cancel(&b.ep->fid, &ctx);
	if (!offered("cancel", "fi_cancel", ret))
		return;
	CHECK_FI(mrlt_cq_wait_err(&b, &a, &err, "cancelled fi_recv"));
	CHECK_EQ(FI_ECANCELED, err.err);
	CHECK_PTR(&ctx, err.op_context);
	CHECK(err.flags & FI_RECV);
}

/* An RMA write naming a key nobody registered must complete in error (or be
 * refused at post time): the hook must pass the error entry through. */
static void test_rma_to_a_bad_key_reports_an_error(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_mr *tmr;
	struct fi_cq_err_entry err;
	struct fi_context2 ctx;
	char *local = mrlt_alloc(SMALL), *target = mrlt_alloc(SMALL);
	uint64_t bad;
	ssize_t ret;
	struct fi_cq_tagged_entry entry;
	struct mrlt_wait w;

	if (!open_pair(0, NULL, &d, &a, &b))
		return;
	CHECK_FI(mrlt_mr_reg(&d, b.ep, target, SMALL, FI_REMOTE_WRITE, &tmr));
	bad = fi_mr_key(tmr) ^ 0x5a5a0000ULL;
	ret = MRLT_POST(fi_write(a.ep, local, SMALL, NULL, a.peer,
				mrlt_rma_addr(&d, target), bad, &ctx), &a, &b);
	if (ret < 0) {
		/* Refused at post time is a report too; nothing to read. */
		printf("# %s refuses the bad-key write at post: %s\n", prov,
		       fi_strerror((int)-ret));
		return;
	}
	/* Some providers never report it: find out within a short bound. */
	mrlt_wait_init_for(&w, 3);
	do {
		ret = fi_cq_read(a.cq, &entry, 1);
		if (ret != -FI_EAGAIN)
			break;
		mrlt_progress(&b);
	} while (!mrlt_wait_over(&w));
	if (ret == 1 && !feature("bad_key_error", -FI_EOPNOTSUPP,
				 "fi_write to an unregistered key completes "
				 "successfully"))
		return;
	if (ret == -FI_EAGAIN && !feature("bad_key_error", -FI_ETIMEDOUT,
					  "fi_write to an unregistered key "
					  "never completes"))
		return;
	CHECK_EQ(-FI_EAVAIL, ret);
	printf("# probe bad_key_error 0\n");
	memset(&err, 0, sizeof(err));
	CHECK_EQ(1, fi_cq_readerr(a.cq, &err, 0));
	CHECK_PTR(&ctx, err.op_context);
	CHECK(err.err != 0);
	/* the provider's err_data goes back to the provider's strerror */
	CHECK(fi_cq_strerror(a.cq, err.prov_errno, err.err_data, NULL, 0) !=
	      NULL);
}

/* fi_cq_sread blocks on the CQ's wait object: the hook must forward it to
 * the provider's CQ (and let the provider progress meanwhile). */
static void test_cq_sread_returns_the_completion(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = { .cq_wait = FI_WAIT_UNSPEC };
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);
	struct fid_cq *probe;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED,
				   .wait_obj = FI_WAIT_UNSPEC };
	struct mrlt_wait w;
	ssize_t ret;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!offered("cq_wait", "fi_cq_open(wait_obj FI_WAIT_UNSPEC)",
		     fi_cq_open(d.domain, &attr, &probe, NULL)))
		return;
	CHECK_EQ(0, fi_close(&probe->fid));
	CHECK_FI(mrlt_rdm_pair_open(&d, &opts, &a, &b));
	mrlt_fill(src, SMALL, 80);
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, b.peer, &ctx), &a, &b));
	CHECK_FI(MRLT_POST(fi_send(a.ep, src, SMALL, NULL, a.peer, NULL), &a, &b));
	mrlt_wait_init(&w);
	do {
		ret = fi_cq_sread(b.cq, &entry, 1, NULL, 1);
		if (ret != -FI_EAGAIN && ret != -FI_ETIMEDOUT)
			break;
		mrlt_progress(&a);
	} while (!mrlt_wait_over(&w));
	CHECK_MSG(ret == 1, "fi_cq_sread = %zd (%s)", ret,
		  fi_strerror((int)-ret));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(!memcmp(src, dst, SMALL));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "send"));
}

/* Event loops that block on CQ file descriptors ask for them with
 * FI_GETWAIT and call fi_trywait on the fabric with their CQ fids: the hook
 * must hand the provider its own CQs, or trywait fails or says the wrong
 * thing about an empty or a non-empty CQ. */
static void test_trywait_and_getwait_see_the_hooked_cq(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = { .cq_wait = FI_WAIT_FD };
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED,
				   .wait_obj = FI_WAIT_FD };
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	struct fid_cq *probe;
	struct fid *fids[1];
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);
	struct mrlt_wait w;
	int fd = -1, ret;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!offered("cq_wait_fd", "fi_cq_open(wait_obj FI_WAIT_FD)",
		     fi_cq_open(d.domain, &attr, &probe, NULL)))
		return;
	CHECK_EQ(0, fi_close(&probe->fid));
	CHECK_FI(mrlt_rdm_pair_open(&d, &opts, &a, &b));
	if (!offered("getwait", "fi_control(cq, FI_GETWAIT)",
		     fi_control(&b.cq->fid, FI_GETWAIT, &fd)))
		return;
	CHECK(fd >= 0);
	fids[0] = &b.cq->fid;
	if (!offered("trywait", "fi_trywait(fabric, empty cq)",
		     fi_trywait(d.fabric, fids, 1)))
		return;
	mrlt_fill(src, SMALL, 130);
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, b.peer, &ctx), &a, &b));
	CHECK_FI(MRLT_POST(fi_send(a.ep, src, SMALL, NULL, a.peer, NULL), &a, &b));
	/* Progress without consuming until trywait reports the completion
	 * (within a short bound: some providers never do). */
	mrlt_wait_init_for(&w, 3);
	do {
		mrlt_progress(&a);
		mrlt_progress(&b);
		ret = fi_trywait(d.fabric, fids, 1);
		if (ret != 0)
			break;
	} while (!mrlt_wait_over(&w));
	if (ret == 0 && !feature("trywait_sees_completion", -FI_EOPNOTSUPP,
				 "fi_trywait keeps returning 0 for a CQ that "
				 "holds a completion"))
		return;
	CHECK_MSG(ret == -FI_EAGAIN, "fi_trywait(cq with a completion) = %d "
		  "(%s), want -FI_EAGAIN", ret, fi_strerror(-ret));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "recv"));
	CHECK_PTR(&ctx, entry.op_context);
	CHECK(!memcmp(src, dst, SMALL));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "send"));
}

static void test_cntr_wait_returns_at_threshold(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct mrlt_peer_opts opts = { .cntrs = true,
				      .cntr_wait = FI_WAIT_UNSPEC };
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_tagged_entry entry;
	struct fid_cntr *probe;
	struct fi_context2 ctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);
	struct mrlt_wait w;
	int ret;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!offered("cntr_wait", "fi_cntr_open(wait_obj FI_WAIT_UNSPEC)",
		     fi_cntr_open(d.domain, &attr, &probe, NULL)))
		return;
	CHECK_EQ(0, fi_close(&probe->fid));
	CHECK_FI(mrlt_rdm_pair_open(&d, &opts, &a, &b));
	mrlt_fill(src, SMALL, 81);
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, b.peer, &ctx), &a, &b));
	CHECK_FI(MRLT_POST(fi_send(a.ep, src, SMALL, NULL, a.peer, NULL), &a, &b));
	mrlt_wait_init(&w);
	do {
		ret = fi_cntr_wait(b.rx_cntr, 1, 1);
		/* sockets 1.17 returns a positive FI_ETIMEDOUT */
		if (ret != -FI_ETIMEDOUT && ret != -FI_EAGAIN &&
		    ret != FI_ETIMEDOUT)
			break;
		mrlt_progress(&a);
	} while (!mrlt_wait_over(&w));
	CHECK_MSG(ret == 0, "fi_cntr_wait = %d (%s)", ret, fi_strerror(-ret));
	CHECK_EQ(1, fi_cntr_read(b.rx_cntr));
	CHECK(!memcmp(src, dst, SMALL));
	CHECK_FI(mrlt_cq_wait(&b, &a, &entry, NULL, "recv"));
	CHECK_FI(mrlt_cq_wait(&a, &b, &entry, NULL, "send"));
}

/* fabtests' fi_av_test reads FI_AV_COMPLETE through the EQ and compares the
 * fid with its AV: libfabric 1.17's own hooks return NULL there. */
static void test_av_event_carries_the_hooked_av_fid(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .flags = FI_EVENT };
	struct fid_eq *eq;
	struct fid_av *av;
	struct fi_eq_entry entry;
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	struct mrlt_wait w;
	uint32_t event;
	ssize_t n;
	int ctx, ret;

	if (!open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(mrlt_peer_open(&d, NULL, &a));
	CHECK_FI(fi_eq_open(d.fabric, &eq_attr, &eq, NULL));
	mrlt_track_fid(&eq->fid);
	av_attr.type = d.info->domain_attr->av_type;
	CHECK_FI(fi_av_open(d.domain, &av_attr, &av, NULL));
	mrlt_track_fid(&av->fid);
	if (!offered("av_event", "fi_av_bind(av, eq)",
		     fi_av_bind(av, &eq->fid, 0)))
		return;
	ret = fi_av_insert(av, a.name, 1, &addr, 0, &ctx);
	CHECK_MSG(ret == 0 || ret == 1, "fi_av_insert(FI_EVENT) = %d (%s)", ret,
		  fi_strerror(-ret));
	/* Some providers (shm 1.17) never write the event: bounded look. */
	mrlt_wait_init_for(&w, 3);
	do {
		n = mrlt_eq_poll(eq, &event, &entry, sizeof(entry));
		if (n != -FI_EAGAIN)
			break;
	} while (!mrlt_wait_over(&w));
	if (n == -FI_EAGAIN && !feature("av_event_complete", -FI_ETIMEDOUT,
					"an FI_EVENT AV bound to an EQ writes no "
					"FI_AV_COMPLETE for fi_av_insert"))
		return;
	CHECK_FI(n);
	CHECK_EQ(FI_AV_COMPLETE, event);
	CHECK_PTR(&av->fid, entry.fid);
	CHECK_PTR(&ctx, entry.context);
	CHECK_EQ(1, entry.data);
	CHECK(addr != FI_ADDR_NOTAVAIL);
	CHECK_EQ(0, mrlt_close(&av->fid, "av"));
	CHECK_EQ(0, mrlt_close(&eq->fid, "eq"));
}

/* ------------------------------------------------------------------------
 * FI_EP_MSG with a passive endpoint.
 */

/* The connection manager reports through the EQ: CONNREQ must carry the
 * pep the application opened, CONNECTED the endpoint, and info->handle
 * must be usable by fi_endpoint, or servers cannot accept through a hook. */
static void test_msg_connect_accept_events_carry_the_hooked_fids(void)
{
	struct mrlt_domain d;
	struct mrlt_msg_pair p;

	struct mrl_debug_ops *ops;
	struct mrl_debug_counts c0, c1;
	char peer[128], name[128];
	size_t peerlen = sizeof(peer), namelen = sizeof(name);
	int ret;

	if (!open_domain(FI_EP_MSG, 0, &d))
		return;
	ops = debug_ops(&d.fabric->fid, &ret);
	CHECK_MSG(!ops == !expect_hook, "fi_open_ops(fabric, %s) = %d: hook "
		  "%s, expected %s", MRL_DEBUG_OPS_1, ret,
		  ops ? "present" : "absent",
		  expect_hook ? "present" : "absent");
	if (ops)
		ops->read(&c0);
	CHECK_FI(mrlt_msg_pair_open(&d, NULL, &p));
	if (ops) {
		ops->read(&c1);
		/* CONNREQ and two CONNECTED went through the hook's EQs */
		CHECK_MSG(c1.counter[MRL_DEBUG_EQ_EVENTS_MAPPED] >=
				  c0.counter[MRL_DEBUG_EQ_EVENTS_MAPPED] + 3,
			  "EQ events mapped by the hook: %llu, want +3",
			  (unsigned long long)(c1.counter[MRL_DEBUG_EQ_EVENTS_MAPPED] -
					       c0.counter[MRL_DEBUG_EQ_EVENTS_MAPPED]));
		CHECK(c1.opened[MRL_CLASS_PEP] > c0.opened[MRL_CLASS_PEP]);
	}
	CHECK_PTR(&p.pep->fid, p.connreq_fid);
	CHECK(p.connreq_handle != NULL);
	CHECK_PTR(&p.srv->fid, p.srv_connected_fid);
	CHECK_PTR(&p.cli->fid, p.cli_connected_fid);
	/* the client's peer is the server endpoint's local address */
	CHECK_FI(fi_getpeer(p.cli, peer, &peerlen));
	CHECK_FI(fi_getname(&p.srv->fid, name, &namelen));
	CHECK_EQ(namelen, peerlen);
	CHECK(!memcmp(peer, name, namelen));
}

static int msg_wait(struct fid_cq *cq, struct fid_cq *other, void *ctx,
		    struct fi_cq_data_entry *entry, const char *what)
{
	struct mrlt_peer self = { .cq = cq }, peer = { .cq = other };
	int ret = mrlt_cq_wait(&self, &peer, entry, NULL, what);

	if (!ret && entry->op_context != ctx) {
		mrlt_fail(__FILE__, __LINE__, "%s: op_context %p, want %p",
			      what, entry->op_context, ctx);
		return -FI_EOTHER;
	}
	return ret;
}

static void test_msg_endpoints_move_msg_and_rma_data_then_shut_down(void)
{
	struct mrlt_domain d;
	struct mrlt_msg_pair p;
	struct fi_cq_data_entry entry;
	struct fi_context2 sctx, rctx;
	struct fid_mr *tmr, *lmr;
	char *src = mrlt_alloc(LARGE), *dst = mrlt_alloc(LARGE);
	char *target = mrlt_alloc(LARGE);
	struct fi_eq_cm_entry cm;
	uint64_t key;
	size_t sizes[] = { SMALL, LARGE };
	unsigned i;

	if (!open_domain(FI_EP_MSG, 0, &d))
		return;
	CHECK_FI(mrlt_msg_pair_open(&d, NULL, &p));
	CHECK_FI(mrlt_mr_reg(&d, p.srv, target, LARGE,
			    FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	CHECK_FI(mrlt_mr_reg(&d, p.cli, src, LARGE, FI_SEND | FI_WRITE | FI_READ, &lmr));
	key = fi_mr_key(tmr);
	for (i = 0; i < 2; i++) {
		size_t len = sizes[i];

		/* client -> server, desc NULL */
		mrlt_fill(src, len, 90 + i);
		memset(dst, 0, len);
		CHECK_FI(MRLT_POST(fi_recv(p.srv, dst, len, NULL, 0, &rctx),
				  &p.cli_side, &p.srv_side));
		CHECK_FI(MRLT_POST(fi_send(p.cli, src, len, NULL, 0, &sctx),
				  &p.cli_side, &p.srv_side));
		CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &sctx, &entry, "send"));
		CHECK_FI(msg_wait(p.srv_cq, p.cli_cq, &rctx, &entry, "recv"));
		CHECK(!memcmp(src, dst, len));
		/* server -> client, registered desc on the client's recv */
		mrlt_fill(dst, len, 95 + i);
		memset(src, 0, len);
		CHECK_FI(MRLT_POST(fi_recv(p.cli, src, len, fi_mr_desc(lmr), 0,
					  &rctx), &p.cli_side, &p.srv_side));
		CHECK_FI(MRLT_POST(fi_send(p.srv, dst, len, NULL, 0, &sctx),
				  &p.cli_side, &p.srv_side));
		CHECK_FI(msg_wait(p.srv_cq, p.cli_cq, &sctx, &entry, "send back"));
		CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &rctx, &entry, "recv back"));
		CHECK(!memcmp(src, dst, len));
		/* RMA write and read, registered desc */
		mrlt_fill(src, len, 97 + i);
		CHECK_FI(MRLT_POST(fi_write(p.cli, src, len, fi_mr_desc(lmr), 0,
					   mrlt_rma_addr(&d, target), key, &sctx),
				  &p.cli_side, &p.srv_side));
		CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &sctx, &entry, "fi_write"));
		CHECK_FI(wait_bytes(target, src, len, &p.cli_side, &p.srv_side,
				    "fi_write"));
		mrlt_fill(target, len, 99 + i);
		memset(src, 0, len);
		CHECK_FI(MRLT_POST(fi_read(p.cli, src, len, NULL, 0,
					  mrlt_rma_addr(&d, target), key, &sctx),
				  &p.cli_side, &p.srv_side));
		CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &sctx, &entry, "fi_read"));
		CHECK(!memcmp(src, target, len));
	}

	/* Shutdown reaches the server's EQ naming the server endpoint. */
	CHECK_FI(fi_shutdown(p.cli, 0));
	CHECK_FI(mrlt_eq_wait(p.srv_eq, FI_SHUTDOWN, &cm, sizeof(cm),
			     &p.srv_side, &p.cli_side, "FI_SHUTDOWN"));
	CHECK_PTR(&p.srv->fid, cm.fid);
}

/* A rejected connection is reported to the client as an EQ error entry:
 * its fid must be the client endpoint the application opened (the hook
 * maps fi_eq_readerr as well as fi_eq_read). */
static void test_msg_reject_reports_econnrefused_on_the_client_fid(void)
{
	struct mrlt_domain d;
	struct fid_eq *pep_eq, *cli_eq;
	struct fid_pep *pep;
	struct fid_ep *cli;
	struct fid_cq *cli_cq;
	struct fi_eq_cm_entry cm;
	struct fi_eq_err_entry err;
	struct mrlt_peer cli_side = { 0 };
	char addr[128];
	size_t addrlen = sizeof(addr);

	if (!open_domain(FI_EP_MSG, 0, &d))
		return;
	CHECK_FI(mrlt_pep_listen(&d, &pep_eq, &pep, addr, &addrlen));
	CHECK_FI(mrlt_msg_ep_open(&d, d.info, addr, addrlen, NULL, &cli_eq, &cli,
				 &cli_cq));
	cli_side.cq = cli_cq;
	cli_side.eq = cli_eq;
	CHECK_FI(fi_connect(cli, addr, NULL, 0));
	CHECK_FI(mrlt_eq_wait(pep_eq, FI_CONNREQ, &cm, sizeof(cm), &cli_side,
			     NULL, "FI_CONNREQ"));
	mrlt_track_info(cm.info);
	CHECK_PTR(&pep->fid, cm.fid);
	CHECK_FI(fi_reject(pep, cm.info->handle, NULL, 0));
	CHECK_FI(mrlt_eq_wait_err(cli_eq, &err, &cli_side, NULL,
				 "rejected connect"));
	CHECK_PTR(&cli->fid, err.fid);
	CHECK_EQ(FI_ECONNREFUSED, err.err);
}

/* tcp offers shared receive contexts on MSG endpoints: the srx bind must be
 * translated and receives posted on it must match. */
static void test_msg_srx_receives_for_an_accepted_endpoint(void)
{
	struct mrlt_domain d;
	struct fid_ep *srx;
	struct mrlt_msg_pair p;
	struct fi_cq_data_entry entry;
	struct fi_context2 sctx, rctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);

	if (!open_domain(FI_EP_MSG, 0, &d))
		return;
	if (d.info->domain_attr->max_ep_srx_ctx == 0) {
		mrlt_skip_current("fi_getinfo for %s reports max_ep_srx_ctx 0",
				      prov);
		return;
	}
	CHECK_FI(fi_srx_context(d.domain, d.info->rx_attr, &srx, NULL));
	mrlt_track_fid(&srx->fid);
	CHECK_FI(mrlt_msg_pair_open(&d, srx, &p));
	mrlt_fill(src, SMALL, 110);
	CHECK_FI(MRLT_POST(fi_recv(srx, dst, SMALL, NULL, 0, &rctx),
			  &p.cli_side, &p.srv_side));
	CHECK_FI(MRLT_POST(fi_send(p.cli, src, SMALL, NULL, 0, &sctx),
			  &p.cli_side, &p.srv_side));
	CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &sctx, &entry, "send"));
	CHECK_FI(msg_wait(p.srv_cq, p.cli_cq, &rctx, &entry, "recv on srx"));
	CHECK(!memcmp(src, dst, SMALL));
}

/* ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: test_passthrough PROVIDER rdm|msg|traffic\n");
	exit(2);
}

static bool hook_named(const char *hooks)
{
	char *copy, *tok, *save = NULL;
	bool found = false;

	if (!hooks)
		return false;
	copy = strdup(hooks);
	for (tok = strtok_r(copy, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		found |= !strcmp(tok, "mrlease");
	free(copy);
	return found;
}

int main(int argc, char **argv)
{
	const char *group, *env;
	char prefix[256];

	if (argc != 3)
		usage();
	prov = argv[1];
	group = argv[2];
	env = getenv("MRL_PT_EXPECT_HOOK");
	expect_hook = env ? atoi(env) != 0 : hook_named(getenv("FI_HOOK"));
	baseline = getenv("MRL_PT_BASELINE");
	snprintf(prefix, sizeof(prefix), "%s FI_HOOK=%s%s%s%s%s: ", prov,
		 getenv("FI_HOOK") ? getenv("FI_HOOK") : "(unset)",
		 getenv("FI_PROVIDER") ? " FI_PROVIDER=" : "",
		 getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "",
		 getenv("FI_MRLEASE_HOOK_INNER") ? " FI_MRLEASE_HOOK_INNER=" : "",
		 getenv("FI_MRLEASE_HOOK_INNER") ? getenv("FI_MRLEASE_HOOK_INNER") : "");
	mrlt_set_prefix(prefix);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(group, "rdm")) {
		MRLT_RUN(test_hook_wraps_every_object_class_and_closes_every_wrapper);
		MRLT_RUN(test_mrlease_ops_answer_only_under_the_hook);
		MRLT_RUN(test_domain_knows_whether_it_is_the_outermost_instance);
		MRLT_RUN(test_hook_answers_ops_the_provider_lacks_with_enosys);
		MRLT_RUN(test_core_objects_open_bind_enable_and_close);
		MRLT_RUN(test_counter_opens_reads_and_closes);
		MRLT_RUN(test_av_insert_lookup_straddr_and_remove);
		MRLT_RUN(test_eq_write_reads_back_application_events_unchanged);
		MRLT_RUN(test_wait_set_backs_a_cq);
		MRLT_RUN(test_poll_set_reports_the_hooked_cq);
		MRLT_RUN(test_ep_alias_sends_through_the_same_endpoint);
		MRLT_RUN(test_shared_tx_and_rx_contexts_carry_traffic);
		MRLT_RUN(test_scalable_ep_contexts_carry_traffic);
		MRLT_RUN(test_mr_reg_regv_and_regattr_register_and_close);
		MRLT_RUN(test_msg_ops_move_data_with_null_and_registered_desc);
		MRLT_RUN(test_tagged_ops_match_tags_and_move_data);
		MRLT_RUN(test_rma_ops_move_data_with_null_and_registered_desc);
		MRLT_RUN(test_remote_counter_counts_rma_at_the_target);
		MRLT_RUN(test_atomic_ops_update_and_fetch);
		MRLT_RUN(test_cq_format_context_batches_keep_every_context);
		MRLT_RUN(test_cq_format_msg_batches_keep_len_and_flags);
		MRLT_RUN(test_cq_format_data_batches_keep_remote_data);
		MRLT_RUN(test_cq_format_tagged_batches_keep_remote_data);
		MRLT_RUN(test_cq_readfrom_reports_the_sender);
		MRLT_RUN(test_cancelled_recv_reads_ecanceled_from_cq_readerr);
		MRLT_RUN(test_rma_to_a_bad_key_reports_an_error);
		MRLT_RUN(test_cq_sread_returns_the_completion);
		MRLT_RUN(test_trywait_and_getwait_see_the_hooked_cq);
		MRLT_RUN(test_cntr_wait_returns_at_threshold);
		MRLT_RUN(test_av_event_carries_the_hooked_av_fid);
	} else if (!strcmp(group, "traffic")) {
		MRLT_RUN(test_hook_wraps_every_object_class_and_closes_every_wrapper);
		MRLT_RUN(test_mrlease_ops_answer_only_under_the_hook);
		MRLT_RUN(test_msg_ops_move_data_with_null_and_registered_desc);
		MRLT_RUN(test_tagged_ops_match_tags_and_move_data);
		MRLT_RUN(test_rma_ops_move_data_with_null_and_registered_desc);
	} else if (!strcmp(group, "msg")) {
		MRLT_RUN(test_msg_mrlease_ops_answer_only_under_the_hook);
		MRLT_RUN(test_msg_connect_accept_events_carry_the_hooked_fids);
		MRLT_RUN(test_msg_endpoints_move_msg_and_rma_data_then_shut_down);
		MRLT_RUN(test_msg_reject_reports_econnrefused_on_the_client_fid);
		MRLT_RUN(test_msg_srx_receives_for_an_accepted_endpoint);
	} else {
		usage();
	}
	return mrlt_done();
}
