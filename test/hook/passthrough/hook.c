/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hook is in the call path: it wraps every object class, answers
 * its own extension ops and ENOSYS for what the provider lacks, and knows
 * whether it is the outermost instance.
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

#include "passthrough.h"

/* The extension API (fi_ext_mrlease.h) is how applications reach the lease
 * cache: it must answer on the hooked fabric and domain, and the bare
 * providers must answer -FI_ENOSYS (what the header promises without it). */
static void
check_mrlease_ops(enum fi_ep_type type)
{
	struct mrlt_domain d;
	struct fi_mrlease_ops *ops = NULL;
	struct fid *fids[2];
	const char *names[2] = {"fabric", "domain"};
	int ret, i;

	if (!pt_open_domain(type, 0, &d))
		return;
	fids[0] = &d.fabric->fid;
	fids[1] = &d.domain->fid;
	for (i = 0; i < 2; i++) {
		ops = NULL;
		ret = fi_open_ops(fids[i], FI_MRLEASE_OPS_1, 0, (void **) &ops,
				  NULL);
		if (pt_expect_hook) {
			CHECK_MSG(ret == 0,
				  "fi_open_ops(%s, %s) = %d (%s): the "
				  "mrlease extension is not reachable under "
				  "FI_HOOK",
				  names[i], FI_MRLEASE_OPS_1, ret,
				  fi_strerror(-ret));
			CHECK(ops && ops->size >= sizeof(*ops));
		} else {
			CHECK_MSG(ret == -FI_ENOSYS,
				  "fi_open_ops(%s, %s) = %d "
				  "without the hook, want -FI_ENOSYS",
				  names[i], FI_MRLEASE_OPS_1, ret);
		}
	}
}

void
test_mrlease_ops_answer_only_under_the_hook(void)
{
	check_mrlease_ops(FI_EP_RDM);
}

void
test_msg_mrlease_ops_answer_only_under_the_hook(void)
{
	check_mrlease_ops(FI_EP_MSG);
}

static const char *const class_names[MRL_NCLASS] = {
	[MRL_CLASS_FABRIC] = "fabric",
	[MRL_CLASS_DOMAIN] = "domain",
	[MRL_CLASS_EQ] = "eq",
	[MRL_CLASS_WAIT] = "wait set",
	[MRL_CLASS_POLL] = "poll set",
	[MRL_CLASS_AV] = "av",
	[MRL_CLASS_AV_SET] = "av set",
	[MRL_CLASS_CQ] = "cq",
	[MRL_CLASS_CNTR] = "cntr",
	[MRL_CLASS_EP] = "ep",
	[MRL_CLASS_SEP] = "scalable ep",
	[MRL_CLASS_TX_CTX] = "tx context",
	[MRL_CLASS_RX_CTX] = "rx context",
	[MRL_CLASS_SRX_CTX] = "srx",
	[MRL_CLASS_STX_CTX] = "stx",
	[MRL_CLASS_PEP] = "passive ep",
	[MRL_CLASS_MR] = "mr",
	[MRL_CLASS_MC] = "mc",
};

/*
 * With the hook installed every object the application opens must be a
 * hook wrapper (its class count rises) and every wrapper must be closed
 * again when the application has closed everything (opened - closed back
 * where it was). Without the hook the debug ops must not exist: this is
 * the test that fails when FI_HOOK=mrlease silently does not install.
 */
void
test_hook_wraps_every_object_class_and_closes_every_wrapper(void)
{
	struct mrlt_domain d;
	struct mrl_debug_ops *ops;
	struct mrl_debug_counts c0, c1, c2;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_wait_attr wait_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_poll_attr poll_attr = {0};
	struct fid_eq *eq;
	struct fid_cntr *cntr;
	struct fid_wait *wait;
	struct fid_poll *poll;
	struct fid_mr *mr;
	struct mrlt_peer a;
	char *buf = mrlt_alloc(4096);
	bool opened[MRL_NCLASS] = {false};
	char hooks[128] = "";
	int ret, i, eq_ret, control;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	ops = pt_debug_ops(&d.domain->fid, &ret);
	if (!pt_expect_hook) {
		CHECK_MSG(!ops,
			  "fi_open_ops(domain, %s) = 0 although FI_HOOK "
			  "does not name mrlease",
			  MRL_DEBUG_OPS_1);
		return;
	}
	CHECK_MSG(ops,
		  "fi_open_ops(domain, %s) = %d (%s): the mrlease hook "
		  "is not in the call path",
		  MRL_DEBUG_OPS_1, ret, fi_strerror(-ret));
	CHECK(ops->size >= sizeof(*ops) && ops->read);
	CHECK_EQ(0, mrlt_close_all());
	ops->read(&c0);

	CHECK(pt_open_domain(FI_EP_RDM, 0, &d));
	opened[MRL_CLASS_FABRIC] = opened[MRL_CLASS_DOMAIN] = true;
	eq_ret = fi_eq_open(d.fabric, &eq_attr, &eq, NULL);
	if (eq_ret) {
		/* The other hooks stacked with mrlease may refuse it alone:
		 * theirs, reported as a skip once the rest is checked. */
		control = pt_control("eq_open", hooks, sizeof(hooks));
		CHECK_MSG(control == eq_ret,
			  "fi_eq_open = %d (%s); with the "
			  "other hooks of FI_HOOK alone (%s): %d",
			  eq_ret, fi_strerror(-eq_ret),
			  hooks[0] ? hooks : "none", control);
	} else {
		mrlt_track_fid(&eq->fid);
		opened[MRL_CLASS_EQ] = true;
	}
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
			  "(opened count stays %llu)",
			  class_names[i], (unsigned long long) c1.opened[i]);
	CHECK_EQ(0, mrlt_close_all());
	ops->read(&c2);
	for (i = 0; i < MRL_NCLASS; i++)
		CHECK_MSG(c2.opened[i] - c2.closed[i] ==
				  c0.opened[i] - c0.closed[i],
			  "%s wrappers left open: %llu before, %llu after "
			  "closing everything",
			  class_names[i],
			  (unsigned long long) (c0.opened[i] - c0.closed[i]),
			  (unsigned long long) (c2.opened[i] - c2.closed[i]));
	if (eq_ret)
		mrlt_skip_current("fi_eq_open = %d (%s) with FI_HOOK=%s alone "
				  "too: that hook's, no EQ wrapper to count",
				  eq_ret, fi_strerror(-eq_ret), hooks);
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
void
test_domain_knows_whether_it_is_the_outermost_instance(void)
{
	struct mrlt_domain d;
	struct mrl_debug_ops *ops;
	struct mrl_debug_counts c0, c1;
	bool utility = strchr(pt_prov, ';') != NULL;
	const char *hook_inner_env = getenv("FI_MRLEASE_HOOK_INNER");
	bool hook_inner = hook_inner_env && !strcmp(hook_inner_env, "1");
	uint64_t outer, inner, bypassed;
	int ret;

	if (!pt_expect_hook) {
		mrlt_skip_current("no hook: nothing to count");
		return;
	}
	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	ops = pt_debug_ops(&d.fabric->fid, &ret);
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
	CHECK_MSG(outer == 1,
		  "opening one %s domain counted %llu outermost "
		  "domains",
		  pt_prov, (unsigned long long) outer);
	if (utility && hook_inner)
		CHECK_MSG(
			inner >= 1 && bypassed == 0,
			"%s, FI_MRLEASE_HOOK_INNER=1: the core domain the "
			"utility provider opens inside was hooked %llu times, "
			"left unhooked %llu times",
			pt_prov, (unsigned long long) inner,
			(unsigned long long) bypassed);
	else if (utility)
		CHECK_MSG(inner == 0 && bypassed >= 1,
			  "%s: the core domain the utility provider opens "
			  "inside (no FI_MR_LOCAL) was hooked %llu times, left "
			  "unhooked %llu times",
			  pt_prov, (unsigned long long) inner,
			  (unsigned long long) bypassed);
	else
		CHECK_MSG(inner == 0 && bypassed == 0,
			  "%s is a core provider, yet %llu inner domains were "
			  "counted (%llu unhooked)",
			  pt_prov, (unsigned long long) inner,
			  (unsigned long long) bypassed);
}

/*
 * Some inline calls (fi_barrier, fi_broadcast, fi_allreduce...) jump
 * through an ops table without checking it; providers without collectives
 * leave that table NULL. Under the hook an application must get -FI_ENOSYS
 * there, never a jump through NULL, and ops the provider lacks behind
 * FI_CHECK_OP must say -FI_ENOSYS too.
 */
void
test_hook_answers_ops_the_provider_lacks_with_enosys(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fi_collective_attr cattr = {.op = FI_NOOP, .datatype = FI_VOID};
	struct fi_context2 ctx;
	uint64_t buf = 1, res = 0;
	ssize_t ret;

	if (!pt_expect_hook) {
		mrlt_skip_current("without the hook the bare provider's "
				  "NULL collective table would be called");
		return;
	}
	if (!pt_open_pair(0, NULL, &d, &a, &b))
		return;
	ret = fi_query_collective(d.domain, FI_BARRIER, &cattr, 0);
	if ((d.info->caps & FI_COLLECTIVE) || ret == 0) {
		mrlt_skip_current("%s offers collectives "
				  "(fi_query_collective(FI_BARRIER) = %zd)",
				  pt_prov, ret);
		return;
	}
	ret = fi_barrier(a.ep, a.peer, &ctx);
	CHECK_MSG(ret == -FI_ENOSYS, "fi_barrier = %zd (%s), want -FI_ENOSYS",
		  ret, fi_strerror((int) -ret));
	ret = fi_broadcast(a.ep, &buf, 1, NULL, a.peer, a.peer, FI_UINT64, 0,
			   &ctx);
	CHECK_MSG(ret == -FI_ENOSYS, "fi_broadcast = %zd (%s), want -FI_ENOSYS",
		  ret, fi_strerror((int) -ret));
	ret = fi_allreduce(a.ep, &buf, 1, NULL, &res, NULL, a.peer, FI_UINT64,
			   FI_SUM, 0, &ctx);
	CHECK_MSG(ret == -FI_ENOSYS, "fi_allreduce = %zd (%s), want -FI_ENOSYS",
		  ret, fi_strerror((int) -ret));
}
