/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Smoke test of the passthrough layer under FI_HOOK=mrlease: real traffic
 * over the utility providers that install the hook twice, checked against
 * the layer's own counters (mrl_hook_debug.h, test-only), so the test fails when
 * the hook is not in the call path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/fixture_rdm.h"
#include "3-hook/mrl_hook_debug.h"

#define SMALL 64
#define LARGE (256 * 1024) /* above rxm's 128 KiB rendezvous threshold */

static struct mrl_debug_ops *
debug_ops(struct fid *fid)
{
	struct mrl_debug_ops *ops = NULL;

	if (fi_open_ops(fid, MRL_DEBUG_OPS_1, 0, (void **) &ops, NULL))
		return NULL;
	return ops;
}

/* One message of len bytes a -> b, received into a separate buffer. */
static int
exchange_msg(struct mrlt_peer *a, struct mrlt_peer *b, size_t len, bool tagged,
	     unsigned seed)
{
	char *src = mrlt_alloc(len), *dst = mrlt_alloc(len);
	struct fi_context2 sctx, rctx;
	struct fi_cq_tagged_entry comp;
	ssize_t rc;

	mrlt_fill(src, len, seed);
	rc = tagged ? MRLT_POST(fi_trecv(b->ep, dst, len, NULL, b->peer, 7, 0,
					 &rctx),
				a, b) :
		      MRLT_POST(fi_recv(b->ep, dst, len, NULL, b->peer, &rctx),
				a, b);
	if (rc)
		return (int) rc;
	rc = tagged ? MRLT_POST(fi_tsend(a->ep, src, len, NULL, a->peer, 7,
					 &sctx),
				a, b) :
		      MRLT_POST(fi_send(a->ep, src, len, NULL, a->peer, &sctx),
				a, b);
	if (rc)
		return (int) rc;
	if (mrlt_cq_wait(a, b, &comp, NULL, "send completion"))
		return -FI_EIO;
	if (comp.op_context != &sctx)
		return -FI_EINVAL;
	if (mrlt_cq_wait(b, a, &comp, NULL, "recv completion"))
		return -FI_EIO;
	if (comp.op_context != &rctx || comp.len != len)
		return -FI_EINVAL;
	return memcmp(src, dst, len) ? -FI_EIO : 0;
}

/* RMA write a -> b's registered buffer, then read it back. */
static int
exchange_rma(struct mrlt_domain *d, struct mrlt_peer *a, struct mrlt_peer *b,
	     size_t len)
{
	char *target = mrlt_alloc(len), *src = mrlt_alloc(len),
	     *back = mrlt_alloc(len);
	struct fi_cq_tagged_entry comp;
	struct fi_context2 ctx;
	struct fid_mr *mr;
	uint64_t addr, key;
	int ret;

	ret = mrlt_mr_reg(d, b->ep, target, len,
			  FI_REMOTE_WRITE | FI_REMOTE_READ, &mr);
	if (ret)
		return ret;
	key = fi_mr_key(mr);
	addr = mrlt_rma_addr(d, target);
	mrlt_fill(src, len, 5);
	ret = (int) MRLT_POST(
		fi_write(a->ep, src, len, NULL, a->peer, addr, key, &ctx), a,
		b);
	if (ret)
		return ret;
	if (mrlt_cq_wait(a, b, &comp, NULL, "write completion"))
		return -FI_EIO;
	ret = (int) MRLT_POST(
		fi_read(a->ep, back, len, NULL, a->peer, addr, key, &ctx), a,
		b);
	if (ret)
		return ret;
	if (mrlt_cq_wait(a, b, &comp, NULL, "read completion"))
		return -FI_EIO;
	/* The read is ordered after the write on this connection: it returns
	 * what the write stored, which must also be in the target buffer. */
	if (memcmp(src, back, len) || memcmp(src, target, len))
		return -FI_EOTHER;
	return mrlt_close(&mr->fid, "target MR");
}

static void
close_peer(struct mrlt_peer *p)
{
	mrlt_close(&p->ep->fid, "endpoint");
	mrlt_close(&p->av->fid, "AV");
	mrlt_close(&p->cq->fid, "CQ");
}

/*
 * Opens an RDM pair over prov, moves small and large messages (and RMA
 * when offered), closes everything, and checks the counters: every class
 * the application used was wrapped, both instances of the hook opened a
 * domain, and everything either instance wrapped was closed again.
 */
static void
run_rdm(const char *prov, bool want_dyn_rbuf)
{
	struct mrl_debug_counts before, during, after;
	struct mrlt_peer a, b;
	struct mrlt_domain d;
	struct mrl_debug_ops *dbg;
	struct fi_info *info;
	bool rma = true;
	int ret;

	ret = mrlt_getinfo(
		mrlt_hints(prov, FI_EP_RDM, FI_MSG | FI_TAGGED | FI_RMA), NULL,
		NULL, 0, &info);
	if (ret == -FI_ENODATA) {
		rma = false;
		ret = mrlt_getinfo(
			mrlt_hints(prov, FI_EP_RDM, FI_MSG | FI_TAGGED), NULL,
			NULL, 0, &info);
	}
	if (ret == -FI_ENODATA) {
		mrlt_skip_current("%s offers no RDM endpoint here", prov);
		return;
	}
	CHECK_FI(ret);
	CHECK_FI(mrlt_domain_open(info, &d));
	dbg = debug_ops(&d.domain->fid);
	CHECK_MSG(dbg,
		  "the domain does not answer %s: hook not in the call path",
		  MRL_DEBUG_OPS_1);
	/* Counts from before the fabric opened are not observable; the
	 * fabric and domain themselves are checked through `during`. */
	dbg->read(&before);

	CHECK_FI(mrlt_rdm_pair_open(&d, NULL, &a, &b));
	CHECK_FI(exchange_msg(&a, &b, SMALL, false, 1));
	CHECK_FI(exchange_msg(&b, &a, LARGE, false, 2));
	CHECK_FI(exchange_msg(&a, &b, SMALL, true, 3));
	CHECK_FI(exchange_msg(&a, &b, LARGE, true, 4));
	if (rma)
		CHECK_FI(exchange_rma(&d, &a, &b, LARGE));
	dbg->read(&during);

	printf("# %s: wrapped fabric %llu domain %llu ep %llu cq %llu av %llu "
	       "mr %llu eq %llu (outermost domains %llu, inner %llu, "
	       "dyn-rbuf set %llu calls %llu, flow-ctrl %llu)\n",
	       prov, (unsigned long long) during.opened[MRL_CLASS_FABRIC],
	       (unsigned long long) during.opened[MRL_CLASS_DOMAIN],
	       (unsigned long long) during.opened[MRL_CLASS_EP],
	       (unsigned long long) during.opened[MRL_CLASS_CQ],
	       (unsigned long long) during.opened[MRL_CLASS_AV],
	       (unsigned long long) during.opened[MRL_CLASS_MR],
	       (unsigned long long) during.opened[MRL_CLASS_EQ],
	       (unsigned long long) during.counter[MRL_DEBUG_OUTERMOST_DOMAINS],
	       (unsigned long long) during.counter[MRL_DEBUG_INNER_DOMAINS],
	       (unsigned long long) during.counter[MRL_DEBUG_DYN_RBUF_SET],
	       (unsigned long long) during.counter[MRL_DEBUG_DYN_RBUF_CALLS],
	       (unsigned long long) during.counter[MRL_DEBUG_FLOW_CTRL_OPENED]);
	CHECK(during.opened[MRL_CLASS_FABRIC] >=
	      2); /* outer + inner instance */
	CHECK(during.counter[MRL_DEBUG_OUTERMOST_DOMAINS] >= 1);
	CHECK(during.counter[MRL_DEBUG_INNER_DOMAINS] >= 1);
	CHECK(during.opened[MRL_CLASS_EP] >= before.opened[MRL_CLASS_EP] + 2);
	CHECK(during.opened[MRL_CLASS_CQ] >= before.opened[MRL_CLASS_CQ] + 2);
	CHECK(during.opened[MRL_CLASS_AV] >= before.opened[MRL_CLASS_AV] + 2);
	if (rma)
		CHECK(during.opened[MRL_CLASS_MR] >
		      before.opened[MRL_CLASS_MR]);
	if (want_dyn_rbuf && during.counter[MRL_DEBUG_DYN_RBUF_SET] > 0)
		CHECK_MSG(during.counter[MRL_DEBUG_DYN_RBUF_CALLS] >
				  before.counter[MRL_DEBUG_DYN_RBUF_CALLS],
			  "rxm set dynamic rbuf ops but tcp never called them");

	close_peer(&a);
	close_peer(&b);
	CHECK_EQ(0, mrlt_close(&d.domain->fid, "domain"));
	CHECK_EQ(0, mrlt_close(&d.fabric->fid, "fabric"));
	/* The ops table lives in the plugin, not in the closed objects. */
	dbg->read(&after);
	for (int c = 0; c < MRL_NCLASS; c++)
		CHECK_MSG(after.opened[c] - after.closed[c] == 0,
			  "class %d: %llu wrapped, %llu closed", c,
			  (unsigned long long) after.opened[c],
			  (unsigned long long) after.closed[c]);
}

/* rxm over tcp installs the hook twice and registers large messages on the
 * inner instance; a hole in either instance breaks RDM traffic. */
static void
test_tcp_rxm_traffic_runs_through_both_hook_instances(void)
{
	run_rdm("tcp;ofi_rxm", true);
}

/* rxd over udp also installs the hook twice; its messages above the MTU
 * are segmented through the inner instance. */
static void
test_udp_rxd_traffic_runs_through_both_hook_instances(void)
{
	run_rdm("udp;ofi_rxd", false);
}

/* An ops table of the object below takes that object's own fids: handing
 * it to a caller holding hook fids would crash inside the provider. */
static void
test_unknown_open_ops_names_are_refused(void)
{
	struct mrl_debug_counts before, after;
	struct mrlt_peer a, b;
	struct mrlt_domain d;
	struct mrl_debug_ops *dbg;
	struct fi_info *info;
	void *ops = NULL;

	CHECK_FI(mrlt_getinfo(mrlt_hints("tcp;ofi_rxm", FI_EP_RDM, FI_MSG),
			      NULL, NULL, 0, &info));
	CHECK_FI(mrlt_domain_open(info, &d));
	CHECK_FI(mrlt_rdm_pair_open(&d, NULL, &a, &b));
	dbg = debug_ops(&a.ep->fid);
	CHECK(dbg);
	dbg->read(&before);
	CHECK_EQ(-FI_ENOSYS, fi_open_ops(&d.domain->fid, "mrl_no_such_ops_v1",
					 0, &ops, NULL));
	CHECK_EQ(-FI_ENOSYS,
		 fi_open_ops(&a.ep->fid, FI_MRLEASE_OPS_1, 0, &ops, NULL));
	CHECK_EQ(-FI_ENOSYS,
		 fi_set_ops(&a.cq->fid, "mrl_no_such_ops_v1", 0, &ops, NULL));
	dbg->read(&after);
	/* A hook stacked outside ours (FI_HOOK='mrlease;noop') may answer
	 * fi_set_ops itself; the two fi_open_ops calls reach us. */
	CHECK(after.counter[MRL_DEBUG_OPS_REFUSED] >=
	      before.counter[MRL_DEBUG_OPS_REFUSED] + 2);
}

int
main(int argc, char **argv)
{
	mrlt_select(argc - 1, argv + 1);
	/* libfabric reads FI_HOOK at its first call. The inner instance,
	 * which resolves nothing over tcp and udp, steps aside unless
	 * FI_MRLEASE_HOOK_INNER keeps it: this test is of both instances
	 * (test_hook_passthrough checks the default). */
	if (!getenv("FI_HOOK"))
		setenv("FI_HOOK", "mrlease", 1);
	setenv("FI_MRLEASE_HOOK_INNER", "1", 0);

	MRLT_RUN(test_tcp_rxm_traffic_runs_through_both_hook_instances);
	MRLT_RUN(test_udp_rxd_traffic_runs_through_both_hook_instances);
	MRLT_RUN(test_unknown_open_ops_names_are_refused);
	return mrlt_done();
}
