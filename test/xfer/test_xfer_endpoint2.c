/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoints opened through the domain's endpoint2 entry lease exactly like
 * those of fi_endpoint, under FI_HOOK=mrlease on every loopback provider:
 * with a CQ, with a selective-completion CQ and with counters only. The
 * last two need the endpoint's default op flags to convert a leased
 * fi_send/fi_recv into a call whose completion the hook reads; an endpoint
 * whose flags the hook never saw would post those calls unleased.
 *
 * fi_endpoint2 itself hands flags 0 to the domain's endpoint entry, and no
 * loopback provider of libfabric 1.17 opens an endpoint with flags, so the
 * test calls the hook domain's endpoint2 entry with flags 0, as a caller
 * holding the ops table does; the hook then opens the provider's endpoint
 * as fi_endpoint2 would.
 *
 * Runs itself again with FI_HOOK=mrlease and FI_MRLEASE_MIN_SIZE=64.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/xfer_util.h"

#define LEN (64 * 1024)

static const char *prov;

enum open_kind { OPEN_ENDPOINT, OPEN_ENDPOINT2 };

/* What one send/recv exchange did to the domain's leases. */
struct lease_trace {
	long long recv_posted; /* live leases with only the receive posted */
	bool send_looked_up; /* the send's operand went through the cache */
	long long after; /* live leases once both operations ended */
};

/* The bindings mrlt_pair_open gives its endpoints. */
static int
bind_like_pair(const struct mrlt_pair_opts *o, struct mrlt_pair *p,
	       struct fid_ep *ep)
{
	int ret = fi_ep_bind(ep, &p->av->fid, 0);

	if (ret)
		return ret;
	if (o->counters_only) {
		ret = fi_ep_bind(ep, &p->tx_cntr->fid,
				 FI_SEND | FI_WRITE | FI_READ);
		return ret ? ret : fi_ep_bind(ep, &p->rx_cntr->fid, FI_RECV);
	}
	return fi_ep_bind(ep, &p->cq->fid,
			  FI_TRANSMIT | FI_RECV |
				  (o->selective ? FI_SELECTIVE_COMPLETION : 0));
}

/*
 * Replace the pair's endpoints by endpoints opened through the domain's
 * endpoint2 entry from the same fi_info, bound and enabled alike.
 *
 * The old addresses leave the AV before their endpoints close: shm's AV
 * keeps a pointer to the region of an endpoint of the same process, and
 * the next fi_enable on that AV reads every peer's region, so a closed
 * endpoint still in the AV is read after its region is unmapped (it
 * crashes whenever the new region is not mapped at the old one's
 * address, as under ASan).
 */
static int
reopen_with_endpoint2(const struct mrlt_pair_opts *o, struct mrlt_pair *p)
{
	char name[256];
	size_t len;
	int ret;

	if (!FI_CHECK_OP(p->domain->ops, struct fi_ops_domain, endpoint2))
		return -FI_ENOSYS;
	ret = fi_av_remove(p->av, p->addr, 2, 0);
	if (ret)
		return ret;
	for (int i = 0; i < 2; i++) {
		ret = fi_close(&p->ep[i]->fid);
		p->ep[i] = NULL;
		if (ret)
			return ret;
		ret = p->domain->ops->endpoint2(p->domain, p->info, &p->ep[i],
						0, NULL);
		if (ret)
			return ret;
		ret = bind_like_pair(o, p, p->ep[i]);
		if (!ret && p->info->addr_format == FI_ADDR_STR)
			ret = mrlt_set_shm_name(p->ep[i], "mrltest-ep2");
		if (ret)
			return ret;
		ret = fi_enable(p->ep[i]);
		if (ret)
			return ret;
		len = sizeof(name);
		ret = fi_getname(&p->ep[i]->fid, name, &len);
		if (ret)
			return ret;
		ret = fi_av_insert(p->av, name, 1, &p->addr[i], 0, NULL);
		if (ret != 1)
			return ret < 0 ? ret : -FI_EOTHER;
	}
	return 0;
}

/* Wait until the operations of one exchange ended as o's endpoints report
 * them, reading what drives their completions until no lease is left. */
static int
wait_exchange(const struct mrlt_pair_opts *o, struct mrlt_pair *p, void *sctx,
	      void *rctx, const void *dst)
{
	struct fi_cq_tagged_entry e[4];
	struct mrlt_comp c[2];
	long spins = 0;
	ssize_t n;
	int ret;

	if (o->counters_only) {
		ret = mrlt_wait_cntr(p->rx_cntr, 1);
		if (!ret)
			ret = mrlt_wait_cntr(p->tx_cntr, 1);
		if (ret)
			return ret;
	} else if (!o->selective) {
		ret = mrlt_reap(p, c, 2);
		if (ret != 2)
			return ret < 0 ? ret : -FI_EOTHER;
		if (c[0].err || c[1].err ||
		    !((c[0].ctx == sctx && c[1].ctx == rctx) ||
		      (c[0].ctx == rctx && c[1].ctx == sctx)))
			return -FI_EOTHER;
	} else if (mrlt_wait_pattern(p, dst, LEN, 21) >= 0) {
		return -FI_ETIMEDOUT;
	} else if (p->nstash) {
		return -FI_EOTHER; /* a completion nobody asked for */
	}
	/* Hidden completions (selective, counters only) release the leases
	 * as the application reads; nothing of them may show. */
	while (mrlt_live_leases(p) > 0 && ++spins < MRLT_MAX_POLLS) {
		if (o->counters_only) {
			fi_cntr_read(p->tx_cntr);
			fi_cntr_read(p->rx_cntr);
			continue;
		}
		n = fi_cq_read(p->cq, e, 4);
		if (n != -FI_EAGAIN)
			return n < 0 ? (int) n : -FI_EOTHER;
	}
	return 0;
}

/*
 * Open a pair with o's bindings through `kind`, then fi_recv and fi_send
 * with desc NULL and the endpoints' default op flags; *t gets what the
 * leases did. False when the case is a skip or failed (already recorded).
 */
static bool
exchange(struct mrlt_pair_opts o, enum open_kind kind, struct lease_trace *t)
{
	struct mrlt_pair p;
	struct fi_context2 sctx, rctx;
	struct fi_mrlease_stats s;
	char *src = NULL, *dst = NULL;
	bool ok = false;
	int ret;

	o.prov = prov;
	if (!mrlt_pair_open_hooked(&o, &p))
		return false;
	if (posix_memalign((void **) &src, 4096, LEN) ||
	    posix_memalign((void **) &dst, 4096, LEN))
		abort();
	mrlt_fill(src, LEN, 21);
	memset(dst, 0, LEN);
	if (kind == OPEN_ENDPOINT2 && (ret = reopen_with_endpoint2(&o, &p))) {
		mrlt_fail(__FILE__, __LINE__, "endpoint2: %s",
			  fi_strerror(-ret));
		goto out;
	}
	ret = (int) MRLT_PAIR_POST(
		&p, fi_recv(p.ep[1], dst, LEN, NULL, FI_ADDR_UNSPEC, &rctx));
	if (ret)
		goto err;
	t->recv_posted = mrlt_live_leases(&p);
	s = mrlt_pair_stats(&p);
	ret = (int) MRLT_PAIR_POST(
		&p, fi_send(p.ep[0], src, LEN, NULL, p.addr[1], &sctx));
	if (ret)
		goto err;
	t->send_looked_up = mrlt_pair_stats(&p).lookups > s.lookups;
	ret = wait_exchange(&o, &p, &sctx, &rctx, dst);
	if (ret)
		goto err;
	t->after = mrlt_live_leases(&p);
	if (mrlt_verify(dst, LEN, 21) >= 0) {
		mrlt_fail(__FILE__, __LINE__, "received data differs");
		goto out;
	}
	ok = true;
	goto out;
err:
	mrlt_fail(__FILE__, __LINE__, "%s exchange: %s",
		  kind == OPEN_ENDPOINT ? "fi_endpoint" : "endpoint2",
		  fi_strerror(-ret));
out:
	if (mrlt_pair_close(&p) && ok) {
		mrlt_fail(__FILE__, __LINE__, "closing the pair failed");
		ok = false;
	}
	free(src);
	free(dst);
	return ok;
}

/* The same exchange through fi_endpoint and through endpoint2: both lease
 * the receive while it is posted and the send, and give every lease back. */
static void
check_leases_like_endpoint(struct mrlt_pair_opts o)
{
	struct lease_trace ep1 = {0}, ep2 = {0};

	if (!exchange(o, OPEN_ENDPOINT, &ep1))
		return;
	/* The reference leases: otherwise the comparison proves nothing. */
	CHECK_EQ(1, ep1.recv_posted);
	CHECK(ep1.send_looked_up);
	CHECK_EQ(0, ep1.after);
	if (!exchange(o, OPEN_ENDPOINT2, &ep2))
		return;
	CHECK_EQ(ep1.recv_posted, ep2.recv_posted);
	CHECK_EQ(ep1.send_looked_up, ep2.send_looked_up);
	CHECK_EQ(ep1.after, ep2.after);
}

/* Completions on a CQ: no conversion, so leasing never depended on the
 * op flags; the reference the other two cases are read against. */
static void
test_endpoint2_with_cq_leases_like_endpoint(void)
{
	check_leases_like_endpoint((struct mrlt_pair_opts){0});
}

/* A selective-completion endpoint whose default flags lack FI_COMPLETION:
 * its fi_send/fi_recv complete silently, so a leased one must be converted
 * with the flags it would have had; without them it goes unleased (and a
 * provider requiring local descriptors would fail it). */
static void
test_endpoint2_selective_completion_leases_like_endpoint(void)
{
	check_leases_like_endpoint((struct mrlt_pair_opts){.selective = true});
}

/* A counters-only endpoint reports no operation to the application: its
 * leased operations complete on the hook's internal CQ, converted with the
 * endpoint's default flags. */
static void
test_endpoint2_counters_only_leases_like_endpoint(void)
{
	check_leases_like_endpoint(
		(struct mrlt_pair_opts){.counters_only = true});
}

int
main(int argc, char **argv)
{
	static const char *const env[] = {"FI_MRLEASE_MIN_SIZE=64", NULL};
	char prefix[128];

	mrlt_select(argc - 1, argv + 1);
	xfer_reexec(argv, "mrlease", env);
	for (const char *const *pv = xfer_providers; *pv; pv++) {
		prov = *pv;
		snprintf(prefix, sizeof(prefix), "%s: ", prov);
		mrlt_set_prefix(prefix);
		MRLT_RUN(test_endpoint2_with_cq_leases_like_endpoint);
		MRLT_RUN(
			test_endpoint2_selective_completion_leases_like_endpoint);
		MRLT_RUN(test_endpoint2_counters_only_leases_like_endpoint);
	}
	return mrlt_done();
}
