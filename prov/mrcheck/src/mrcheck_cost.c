/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's registration cost model (FI_MRCHECK_REG_COST*, see mrcheck.h): a
 * registration on the domain the application opened spends a + b * bytes
 * of the calling thread's CPU time before it reaches the provider, so that
 * over tcp, where a registration is a table insert, a benchmark sees what
 * registering costs on a provider that pins pages and writes NIC tables.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mrcheck_int.h"

/* UCX's InfiniBand model (UCX_IB_MEM_REG_OVERHEAD, UCX_IB_MEM_REG_GROWTH). */
#define CHK_COST_DEFAULT_NS	     16000.0
#define CHK_COST_DEFAULT_NS_PER_BYTE 0.06

/* Set once in fi_prov_ini, read-only afterwards. */
static struct {
	bool on;
	double ns, ns_per_byte;
} chk_cost;

/* The MR ops of every costed domain mrcheck does not check: one table
 * apart from dom->mr_ops, by which mrcheck tells its strict domains. */
static struct fi_ops_mr chk_cost_ops;

/* Bounds of the model: a registration of a whole address space still costs
 * a number of nanoseconds a uint64_t holds (chk_cost_charge). */
#define CHK_COST_MAX_NS		 1e9
#define CHK_COST_MAX_NS_PER_BYTE 1e3

static int chk_cost_reg(struct fid *fid, const void *buf, size_t len,
			uint64_t access, uint64_t offset,
			uint64_t requested_key, uint64_t flags,
			struct fid_mr **mr, void *context);
static int chk_cost_regv(struct fid *fid, const struct iovec *iov, size_t count,
			 uint64_t access, uint64_t offset,
			 uint64_t requested_key, uint64_t flags,
			 struct fid_mr **mr, void *context);
static int chk_cost_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			    uint64_t flags, struct fid_mr **mr);

void
chk_cost_init(void)
{
	chk_cost.ns = CHK_COST_DEFAULT_NS;
	chk_cost.ns_per_byte = CHK_COST_DEFAULT_NS_PER_BYTE;
	chk_cost.on = chk_param_bool("REG_COST");
	/* Setting either turns the model on; a refused one is as if unset. */
	if (chk_param_double("REG_COST_NS", 0, CHK_COST_MAX_NS, &chk_cost.ns) >
	    0)
		chk_cost.on = true;
	if (chk_param_double("REG_COST_NS_PER_BYTE", 0,
			     CHK_COST_MAX_NS_PER_BYTE,
			     &chk_cost.ns_per_byte) > 0)
		chk_cost.on = true;
	chk_cost_ops = mrl_hook_domain_mr_ops;
	chk_cost_ops.reg = chk_cost_reg;
	chk_cost_ops.regv = chk_cost_regv;
	chk_cost_ops.regattr = chk_cost_regattr;
}

bool
chk_cost_on(void)
{
	return chk_cost.on;
}

static uint64_t
chk_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * Busy, not asleep: a pinning registration keeps its thread on the CPU
 * (page walks, pinning, the device's tables), so the model must take the
 * CPU from whatever else would run there. Measured in the thread's own CPU
 * time, so a preempted registration still spends its full cost.
 */
void
chk_cost_charge(struct chk_domain *dom, size_t bytes)
{
	uint64_t want, start, spent;
	double cost;

	if (!dom->reg_cost)
		return;
	cost = chk_cost.ns + chk_cost.ns_per_byte * (double) bytes;
	/* Capped below 2^64: converting a larger double is undefined. */
	want = cost < 1e19 ? (uint64_t) cost : (uint64_t) 1e19;
	start = chk_thread_cpu_ns();
	do
		spent = chk_thread_cpu_ns() - start;
	while (spent < want);
	chk_count(dom, cost_regs, 1);
	chk_count(dom, cost_ns, spent);
}

size_t
chk_cost_bytes(const struct iovec *iov, size_t count)
{
	size_t bytes = 0;

	for (size_t i = 0; i < count; i++)
		bytes += iov[i].iov_len;
	return bytes;
}

/* The registration calls of a costed domain that mrcheck does not check
 * (FI_MRCHECK_OFF=1): the charge, then the passthrough. */
static int
chk_cost_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	     uint64_t offset, uint64_t requested_key, uint64_t flags,
	     struct fid_mr **mr, void *context)
{
	chk_cost_charge(
		chk_domain_of(container_of(fid, struct mrl_domain, domain.fid)),
		len);
	return mrl_hook_domain_mr_ops.reg(fid, buf, len, access, offset,
				     requested_key, flags, mr, context);
}

static int
chk_cost_regv(struct fid *fid, const struct iovec *iov, size_t count,
	      uint64_t access, uint64_t offset, uint64_t requested_key,
	      uint64_t flags, struct fid_mr **mr, void *context)
{
	chk_cost_charge(
		chk_domain_of(container_of(fid, struct mrl_domain, domain.fid)),
		chk_cost_bytes(iov, count));
	return mrl_hook_domain_mr_ops.regv(fid, iov, count, access, offset,
				      requested_key, flags, mr, context);
}

static int
chk_cost_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		 struct fid_mr **mr)
{
	chk_cost_charge(
		chk_domain_of(container_of(fid, struct mrl_domain, domain.fid)),
		chk_cost_bytes(attr->mr_iov, attr->iov_count));
	return mrl_hook_domain_mr_ops.regattr(fid, attr, flags, mr);
}

struct fi_ops_mr *
chk_cost_mr_ops(void)
{
	return &chk_cost_ops;
}
