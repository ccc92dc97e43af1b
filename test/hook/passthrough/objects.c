/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Object classes: each one the provider offers opens, binds, enables,
 * carries traffic where it can, and closes through the layer.
 */
#include "config.h"

#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "passthrough.h"

/* A wrapper whose close leaks or fails, or a bind that hands the provider
 * a hook fid, shows up as soon as the basic objects are opened and closed. */
void
test_core_objects_open_bind_enable_and_close(void)
{
	struct mrlt_domain d;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {0};
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	char name[256];
	size_t len = sizeof(name);

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
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
	if (d.info->addr_format == FI_ADDR_STR)
		CHECK_FI(mrlt_set_shm_name(ep, "mrltest-core"));
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

/* shm refuses, with -FI_EBUSY, a name whose region is already in /dev/shm
 * unless the pid written in it is dead: one left by a dead process whose
 * pid this one reuses stops an endpoint enabling, unless the suite's name
 * for it (mrlt_set_shm_name) clears it first. */
void
test_an_endpoint_takes_the_name_a_dead_process_left(void)
{
	struct mrlt_domain d;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {0};
	struct fid_ep *ep[2];
	struct fid_cq *cq;
	struct fid_av *av;
	char name[256], stale[128];
	const char *serial;
	size_t len = sizeof(name);
	int fd;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	if (d.info->addr_format != FI_ADDR_STR) {
		mrlt_skip_current("%s names no endpoint in /dev/shm",
				  d.info->fabric_attr->prov_name);
		return;
	}
	CHECK_FI(fi_cq_open(d.domain, &cq_attr, &cq, NULL));
	mrlt_track_fid(&cq->fid);
	av_attr.type = d.info->domain_attr->av_type;
	CHECK_FI(fi_av_open(d.domain, &av_attr, &av, NULL));
	mrlt_track_fid(&av->fid);
	for (int i = 0; i < 2; i++) {
		CHECK_FI(fi_endpoint(d.domain, d.info, &ep[i], NULL));
		mrlt_track_fid(&ep[i]->fid);
		CHECK_FI(fi_ep_bind(ep[i], &cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK_FI(fi_ep_bind(ep[i], &av->fid, 0));
		if (i) {
			/* The region of the next name, as a process of an
			 * older shm (whose version this one refuses) left it. */
			fd = shm_open(stale, O_RDWR | O_CREAT, 0600);
			CHECK(fd >= 0);
			CHECK_EQ(0, ftruncate(fd, 4096));
			close(fd);
		}
		CHECK_FI(mrlt_set_shm_name(ep[i], "mrltest-stale"));
		CHECK_FI(fi_enable(ep[i]));
		if (i)
			break;
		CHECK_FI(fi_getname(&ep[i]->fid, name, &len));
		serial = strrchr(name, '-');
		CHECK(serial && strstr(name, "fi_shm://") == name);
		snprintf(stale, sizeof(stale), "%.*s-%lu",
			 (int) (serial - name - strlen("fi_shm://")),
			 name + strlen("fi_shm://"), strtoul(serial + 1, NULL, 10) + 1);
	}
	CHECK_EQ(0, mrlt_close(&ep[1]->fid, "ep"));
	CHECK_EQ(0, mrlt_close(&ep[0]->fid, "ep"));
	CHECK_EQ(0, mrlt_close(&av->fid, "av"));
	CHECK_EQ(0, mrlt_close(&cq->fid, "cq"));
	CHECK_EQ(0, mrlt_close(&d.domain->fid, "domain"));
	CHECK_EQ(0, mrlt_close(&d.fabric->fid, "fabric"));
}

void
test_counter_opens_reads_and_closes(void)
{
	struct mrlt_domain d;
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fid_cntr *cntr;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!pt_offered("cntr", "fi_cntr_open",
			fi_cntr_open(d.domain, &attr, &cntr, NULL)))
		return;
	mrlt_track_fid(&cntr->fid);
	CHECK_FI(fi_cntr_set(cntr, 5));
	CHECK_FI(fi_cntr_add(cntr, 2));
	CHECK_EQ(7, fi_cntr_read(cntr));
	CHECK_EQ(0, fi_cntr_readerr(cntr));
	if (!pt_offered("cntr_err", "fi_cntr_adderr", fi_cntr_adderr(cntr, 2)))
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
void
test_av_insert_lookup_straddr_and_remove(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	char name[256], str[256];
	size_t len = sizeof(name), slen = sizeof(str);
	char lacking[128];
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	bool same;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(mrlt_peer_open(&d, NULL, &a));
	CHECK_FI(mrlt_peer_open(&d, NULL, &b));
	CHECK_EQ(1, fi_av_insert(a.av, b.name, 1, &addr, 0, NULL));
	CHECK(addr != FI_ADDR_NOTAVAIL);
	CHECK(fi_av_straddr(a.av, b.name, str, &slen) != NULL);
	CHECK(slen > 1);
	if (!pt_offered("av_lookup", "fi_av_lookup(just inserted address)",
			fi_av_lookup(a.av, addr, name, &len)))
		return;
	same = len == b.namelen && !memcmp(name, b.name, len);
	CHECK_FI(fi_av_remove(a.av, &addr, 1, 0));
	/* fi_av(3): the lookup gives back the address inserted, all of it
	 * (addrlen is the size it needs). */
	snprintf(lacking, sizeof(lacking),
		 "fi_av_lookup gives back %zu bytes "
		 "%s the %zu-byte address inserted",
		 len, len == b.namelen ? "differing from" : "for", b.namelen);
	pt_feature("av_lookup_same", same ? 0 : -FI_EOTHER, lacking);
}

/* Applications post their own events with fi_eq_write: they must come
 * back exactly as written (the hook maps only provider fids), through
 * fi_eq_read and fi_eq_sread. */
void
test_eq_write_reads_back_application_events_unchanged(void)
{
	struct mrlt_domain d;
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC,
				  .flags = FI_WRITE};
	struct fid_eq *eq;
	struct fi_eq_entry in, out;
	struct fid not_a_provider_fid = {0};
	uint32_t event;
	int ctx, i;
	fid_t fids[3];

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	CHECK_FI(fi_eq_open(d.fabric, &attr, &eq, NULL));
	mrlt_track_fid(&eq->fid);
	fids[0] = &eq->fid;
	fids[1] = NULL;
	fids[2] = &not_a_provider_fid;
	for (i = 0; i < 3; i++) {
		in = (struct fi_eq_entry){.fid = fids[i],
					  .context = &ctx,
					  .data = 40 + i};
		CHECK_EQ(sizeof(in),
			 fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0));
		memset(&out, 0, sizeof(out));
		if (i == 1)
			CHECK_EQ(sizeof(out),
				 fi_eq_sread(eq, &event, &out, sizeof(out),
					     1000, 0));
		else
			CHECK_EQ(sizeof(out),
				 fi_eq_read(eq, &event, &out, sizeof(out), 0));
		CHECK_EQ(FI_NOTIFY, event);
		CHECK_PTR(fids[i], out.fid);
		CHECK_PTR(&ctx, out.context);
		CHECK_EQ(40 + i, out.data);
	}
}

/* Wait sets are opened on the fabric and referenced by CQ attributes: the
 * hook must hand the provider its own wait set, not the hook's. */
void
test_wait_set_backs_a_cq(void)
{
	struct mrlt_domain d;
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = FI_WAIT_SET};
	struct fid_wait *wait;
	struct fid_cq *cq;
	int ret;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	if (!pt_offered("wait_set", "fi_wait_open",
			fi_wait_open(d.fabric, &wattr, &wait)))
		return;
	mrlt_track_fid(&wait->fid);
	cq_attr.wait_set = wait;
	if (!pt_offered("wait_set_cq", "fi_cq_open(wait_obj FI_WAIT_SET)",
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
void
test_poll_set_reports_the_hooked_cq(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fi_poll_attr attr = {0};
	struct fid_poll *poll;
	struct fi_cq_tagged_entry entry;
	struct fi_context2 ctx;
	char *src = mrlt_alloc(SMALL), *dst = mrlt_alloc(SMALL);
	void *got[2] = {NULL, NULL};
	struct mrlt_wait w;
	int n = 0;

	if (!pt_open_pair(0, NULL, &d, &a, &b))
		return;
	if (!pt_offered("poll_set", "fi_poll_open",
			fi_poll_open(d.domain, &attr, &poll)))
		return;
	mrlt_track_fid(&poll->fid);
	CHECK_FI(fi_poll_add(poll, &b.cq->fid, 0));
	mrlt_fill(src, SMALL, 1);
	CHECK_FI(MRLT_POST(fi_recv(b.ep, dst, SMALL, NULL, b.peer, &ctx), &a,
			   &b));
	CHECK_FI(MRLT_POST(fi_send(a.ep, src, SMALL, NULL, a.peer, NULL), &a,
			   &b));
	mrlt_wait_init(&w);
	do {
		n = fi_poll(poll, got, 2);
		if (n)
			break;
		mrlt_progress(&a);
	} while (!mrlt_wait_over(&w));
	CHECK_MSG(n == 1, "fi_poll = %d (%s)", n, n < 0 ? fi_strerror(-n) : "");
	CHECK_PTR(&b, got[0]);
	if (pt_expect_hook) {
		struct mrl_debug_ops *ops = pt_debug_ops(&poll->fid, &n);
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
static void
one_message(struct fid_ep *tx, struct mrlt_peer *s, fi_addr_t to,
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
	CHECK_MSG(mrlt_cq_wait(s, r, &entry, NULL, what) == 0, "%s: send",
		  what);
	CHECK_PTR(&sctx, entry.op_context);
	CHECK_MSG(mrlt_cq_wait(r, s, &entry, NULL, what) == 0, "%s: recv",
		  what);
	CHECK_PTR(&rctx, entry.op_context);
	CHECK_MSG(!memcmp(src, dst, SMALL), "%s: data differs", what);
}

/* An alias is an endpoint of its own class: the hook must wrap it (FI_ALIAS
 * through fi_control) so posts through it reach the same provider endpoint. */
void
test_ep_alias_sends_through_the_same_endpoint(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a, b;
	struct fid_ep *alias = NULL;

	if (!pt_open_pair(0, NULL, &d, &a, &b))
		return;
	if (!pt_offered("alias", "fi_ep_alias",
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
void
test_shared_tx_and_rx_contexts_carry_traffic(void)
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

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	if (d.info->domain_attr->max_ep_stx_ctx == 0 ||
	    d.info->domain_attr->max_ep_srx_ctx == 0) {
		mrlt_skip_current("fi_getinfo for %s reports max_ep_stx_ctx "
				  "%zu, max_ep_srx_ctx %zu",
				  pt_prov, d.info->domain_attr->max_ep_stx_ctx,
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
void
test_scalable_ep_contexts_carry_traffic(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a;
	struct fid_ep *sep, *tx, *rx;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {0};
	struct fi_info *info;
	char name[256];
	size_t len = sizeof(name);
	fi_addr_t to_sep, to_rx0, to_a;
	int bits;
	struct mrlt_peer sep_side;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
		return;
	if (d.info->domain_attr->max_ep_tx_ctx < 2 ||
	    d.info->domain_attr->max_ep_rx_ctx < 2) {
		mrlt_skip_current("fi_getinfo for %s reports max_ep_tx_ctx "
				  "%zu, max_ep_rx_ctx %zu: no scalable "
				  "endpoints",
				  pt_prov, d.info->domain_attr->max_ep_tx_ctx,
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
void
test_mr_reg_regv_and_regattr_register_and_close(void)
{
	struct mrlt_domain d;
	struct mrlt_peer a;
	struct fid_mr *mr1, *mr2, *mr3;
	char *buf = mrlt_alloc(3 * 4096);
	struct iovec iov = {.iov_base = buf + 4096, .iov_len = 4096};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE,
		.requested_key = 3,
	};
	bool ep_mr;

	if (!pt_open_domain(FI_EP_RDM, 0, &d))
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
	(void) fi_mr_desc(mr1);
	CHECK_EQ(0, mrlt_close(&mr3->fid, "mr regattr"));
	CHECK_EQ(0, mrlt_close(&mr2->fid, "mr regv"));
	CHECK_EQ(0, mrlt_close(&mr1->fid, "mr reg"));
}
