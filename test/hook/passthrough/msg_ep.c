/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_MSG with a passive endpoint: connection events carry the hooked
 * fids, data moves, a reject and a shared receive context work.
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

/* The connection manager reports through the EQ: CONNREQ must carry the
 * pep the application opened, CONNECTED the endpoint, and info->handle
 * must be usable by fi_endpoint, or servers cannot accept through a hook. */
void
test_msg_connect_accept_events_carry_the_hooked_fids(void)
{
	struct mrlt_domain d;
	struct mrlt_msg_pair p;

	struct mrl_debug_ops *ops;
	struct mrl_debug_counts c0, c1;
	char peer[128], name[128];
	size_t peerlen = sizeof(peer), namelen = sizeof(name);
	int ret;

	if (!pt_open_domain(FI_EP_MSG, 0, &d))
		return;
	ops = pt_debug_ops(&d.fabric->fid, &ret);
	CHECK_MSG(!ops == !pt_expect_hook,
		  "fi_open_ops(fabric, %s) = %d: hook "
		  "%s, expected %s",
		  MRL_DEBUG_OPS_1, ret, ops ? "present" : "absent",
		  pt_expect_hook ? "present" : "absent");
	if (ops)
		ops->read(&c0);
	CHECK_FI(mrlt_msg_pair_open(&d, NULL, &p));
	if (ops) {
		ops->read(&c1);
		/* CONNREQ and two CONNECTED went through the hook's EQs */
		CHECK_MSG(
			c1.counter[MRL_DEBUG_EQ_EVENTS_MAPPED] >=
				c0.counter[MRL_DEBUG_EQ_EVENTS_MAPPED] + 3,
			"EQ events mapped by the hook: %llu, want +3",
			(unsigned long long) (c1.counter
						      [MRL_DEBUG_EQ_EVENTS_MAPPED] -
					      c0.counter
						      [MRL_DEBUG_EQ_EVENTS_MAPPED]));
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

static int
msg_wait(struct fid_cq *cq, struct fid_cq *other, void *ctx,
	 struct fi_cq_data_entry *entry, const char *what)
{
	struct mrlt_peer self = {.cq = cq}, peer = {.cq = other};
	int ret = mrlt_cq_wait(&self, &peer, entry, NULL, what);

	if (!ret && entry->op_context != ctx) {
		mrlt_fail(__FILE__, __LINE__, "%s: op_context %p, want %p",
			  what, entry->op_context, ctx);
		return -FI_EOTHER;
	}
	return ret;
}

void
test_msg_endpoints_move_msg_and_rma_data_then_shut_down(void)
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
	size_t sizes[] = {SMALL, LARGE};
	unsigned i;

	if (!pt_open_domain(FI_EP_MSG, 0, &d))
		return;
	CHECK_FI(mrlt_msg_pair_open(&d, NULL, &p));
	CHECK_FI(mrlt_mr_reg(&d, p.srv, target, LARGE,
			     FI_REMOTE_READ | FI_REMOTE_WRITE, &tmr));
	CHECK_FI(mrlt_mr_reg(&d, p.cli, src, LARGE,
			     FI_SEND | FI_WRITE | FI_READ, &lmr));
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
		CHECK_FI(MRLT_POST(
			fi_recv(p.cli, src, len, fi_mr_desc(lmr), 0, &rctx),
			&p.cli_side, &p.srv_side));
		CHECK_FI(MRLT_POST(fi_send(p.srv, dst, len, NULL, 0, &sctx),
				   &p.cli_side, &p.srv_side));
		CHECK_FI(msg_wait(p.srv_cq, p.cli_cq, &sctx, &entry,
				  "send back"));
		CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &rctx, &entry,
				  "recv back"));
		CHECK(!memcmp(src, dst, len));
		/* RMA write and read, registered desc */
		mrlt_fill(src, len, 97 + i);
		CHECK_FI(MRLT_POST(fi_write(p.cli, src, len, fi_mr_desc(lmr), 0,
					    mrlt_rma_addr(&d, target), key,
					    &sctx),
				   &p.cli_side, &p.srv_side));
		CHECK_FI(msg_wait(p.cli_cq, p.srv_cq, &sctx, &entry,
				  "fi_write"));
		CHECK_FI(pt_wait_bytes(target, src, len, &p.cli_side,
				       &p.srv_side, "fi_write"));
		mrlt_fill(target, len, 99 + i);
		memset(src, 0, len);
		CHECK_FI(MRLT_POST(fi_read(p.cli, src, len, NULL, 0,
					   mrlt_rma_addr(&d, target), key,
					   &sctx),
				   &p.cli_side, &p.srv_side));
		CHECK_FI(
			msg_wait(p.cli_cq, p.srv_cq, &sctx, &entry, "fi_read"));
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
void
test_msg_reject_reports_econnrefused_on_the_client_fid(void)
{
	struct mrlt_domain d;
	struct fid_eq *pep_eq, *cli_eq;
	struct fid_pep *pep;
	struct fid_ep *cli;
	struct fid_cq *cli_cq;
	struct fi_eq_cm_entry cm;
	struct fi_eq_err_entry err;
	struct mrlt_peer cli_side = {0};
	char addr[128];
	size_t addrlen = sizeof(addr);

	if (!pt_open_domain(FI_EP_MSG, 0, &d))
		return;
	CHECK_FI(mrlt_pep_listen(&d, &pep_eq, &pep, addr, &addrlen));
	CHECK_FI(mrlt_msg_ep_open(&d, d.info, addr, addrlen, NULL, &cli_eq,
				  &cli, &cli_cq));
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
void
test_msg_srx_receives_for_an_accepted_endpoint(void)
{
	struct mrlt_domain d;
	struct fid_ep *srx;
	struct mrlt_msg_pair p;
	struct fi_cq_data_entry entry;
	struct fi_context2 sctx, rctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);

	if (!pt_open_domain(FI_EP_MSG, 0, &d))
		return;
	if (d.info->domain_attr->max_ep_srx_ctx == 0) {
		mrlt_skip_current("fi_getinfo for %s reports max_ep_srx_ctx 0",
				  pt_prov);
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
