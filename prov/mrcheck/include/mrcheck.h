/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck: a hooking provider that checks descriptors as a provider
 * requiring FI_MR_LOCAL trusts them (with FI_MRCHECK_MR_LOCAL=1 it behaves
 * like one), so tests can prove that mrlease hands the provider a live
 * registration for every local operand and never closes one under a
 * transfer. Stacked below mrlease: FI_HOOK='mrcheck;mrlease' (the last name
 * listed is outermost); alone, FI_HOOK=mrcheck checks the application's
 * own descriptors. Installed beside libmrlease-fi.so (fi_mrcheck(7)); this
 * header, its test interface, stays the suite's (not installed: the
 * interface acknowledges violations, which only a test provoking them
 * should do, and may change).
 *
 * What it checks, on each *strict* domain (see below):
 *  - every local iov of a post (msg, tagged, rma, atomic incl. result and
 *    compare buffers; not inject calls nor FI_INJECT) with a non-zero length
 *    must come with a desc that mrcheck itself handed out (fi_mr_desc of an
 *    MR opened on this domain), whose MR is still open and whose ranges cover
 *    the iov. Otherwise the post fails with -FI_EINVAL and a violation is
 *    recorded. mrcheck's descs are its own tracking records, translated to
 *    the provider's descs on the way down, so a desc that bypassed mrcheck
 *    (or a stale one) can never pass by accident. A NULL desc is a
 *    violation only where the domain needs one: its fi_info has
 *    FI_MR_LOCAL in mr_mode, or FI_MRCHECK_MR_LOCAL=1 (what the suite
 *    sets, test/common/xfer_util.c, so mrcheck plays a provider requiring
 *    FI_MR_LOCAL under mrlease).
 *  - an MR must not be closed while an operation that used it has not
 *    completed. An operation is in flight from its post until its completion
 *    (or error completion) is read through mrcheck's CQ, or its endpoint is
 *    closed. Operations are tracked through their context: mrcheck posts a
 *    record of its own as the context and gives the application's context
 *    back in every CQ entry. Operations that report no completion to a CQ
 *    (FI_SELECTIVE_COMPLETION without FI_COMPLETION, endpoints bound only to
 *    counters) have their descs checked but are not tracked.
 *
 * Strict domains: the outermost one (the domain the application opened) and
 * any domain whose fi_info has FI_MR_LOCAL in mr_mode. A domain opened by a
 * utility provider inside another domain open (rxm's core tcp domain) while
 * the core does not require FI_MR_LOCAL is passed through unchecked: there a
 * NULL desc from the utility provider is legal and mrlease leaves it alone.
 * FI_MRCHECK_ALL=1 makes every domain strict; FI_MRCHECK_OFF=1 none (the bare
 * passthrough layer, to tell its effects from mrcheck's).
 *
 * mrcheck does not (and cannot) change the mr_mode the layer above sees: a
 * hooked domain is opened with the fi_info the application got from the
 * core provider's getinfo, which hooks do not intercept, and that info is
 * handed down to mrcheck, not up. Tests that want mrlease's "always resolve
 * under FI_MR_LOCAL" policy add FI_MR_LOCAL to the info they open the domain
 * with; tests of the outermost policy set FI_MRLEASE_MIN_SIZE=1.
 *
 * Limits: endpoints only (scalable endpoints, tx/rx and shared contexts
 * pass through unchecked); a CQ opened with FI_CQ_FORMAT_UNSPEC is read as
 * FI_CQ_FORMAT_CONTEXT; the passthrough layer resets an MR's desc to the
 * provider's after fi_mr_bind/fi_mr_enable/fi_control (FI_MR_ENDPOINT), so
 * such an MR's desc is then reported as unknown (loud, never silent); an
 * FI_MULTI_RECV buffer read through a CONTEXT-format CQ stays in flight
 * until its endpoint closes (no flags to see the release).
 *
 * Stale registrations (FI_MRCHECK_FRAMES=1): a provider whose registrations
 * pin pages (verbs, efa...) keeps transferring to and from the physical
 * frames it pinned, whatever the address maps to later. mrcheck emulates
 * that, so a registration that outlived its memory shows even on tcp: at
 * each registration on a strict domain it populates every registered page
 * without changing its content (MADV_POPULATE_WRITE, or MADV_POPULATE_READ
 * for read-only memory) and records the page's frame number from
 * /proc/self/pagemap; at each post, for each local operand with a desc, it
 * reads the frames now under the operand's pages and compares them with
 * those the desc's registration recorded at the same offset. A page now
 * absent or on another frame is MRCHECK_STALE_FRAME (one per operand). The
 * post still goes ahead: a pinning provider would move the old pages'
 * bytes without an error, and providers that read memory by address move
 * the right ones, so only the checker can see it. The frames are read
 * before the domain's lock is taken. Frame numbers read as 0 without
 * CAP_SYS_ADMIN: then frames_supported is 0 and nothing is compared (tests
 * skip, naming the reason). Limits: mrcheck pins nothing, so a page the
 * kernel moves on its own (compaction, NUMA balancing, khugepaged in a
 * MADV_HUGEPAGE range, copy on write in the parent after fork()) is
 * reported where verbs would have kept the old page; a page that could not
 * be populated at registration (not mapped) is not compared; only the
 * first stale-frame violations are printed (all are counted).
 *
 * Stale remote keys (FI_MRCHECK_FRAMES=1): a pinning provider serves a
 * remote key with the frames it pinned, so a peer writing with a key that
 * outlived its memory writes into pages the process no longer has. mrcheck
 * keeps the open registrations of strict domains that grant remote access
 * (FI_REMOTE_READ/WRITE) by key; every RMA and atomic post (inject calls
 * included) whose target key is one of them, in the posting endpoint's
 * domain or else in exactly one other domain of the process (two endpoints
 * in one process), has the frames now under its target pages compared with
 * those recorded: a mismatch is MRCHECK_STALE_REMOTE_KEY (one per target).
 * The target address is a virtual address where the registration's domain
 * has FI_MR_VIRT_ADDR, else an offset from the registration's start; only
 * the part of a target inside the registration's iov holding its start is
 * compared. The post goes ahead. Keys of another process, and keys of an
 * FI_MR_ENDPOINT registration that change at fi_mr_enable, are not seen.
 *
 * Fault injection (FI_MRCHECK_FAULT_*): mrcheck can also play a provider that
 * fails, on strict domains, so tests can prove that every failure reaches
 * the application as the provider's own error and leaks nothing:
 *  - FI_MRCHECK_FAULT_REG=rate: fi_mr_reg/regv/regattr fail before reaching
 *    the provider, with a code drawn from FI_MRCHECK_FAULT_REG_CODES (a comma
 *    list of ENOMEM, EAGAIN, ENOKEY, ENOSPC; default all four). These are
 *    the calls mrlease's cache makes below it.
 *  - FI_MRCHECK_FAULT_POST=rate: a post whose operands passed the checks
 *    returns -FI_EAGAIN without reaching the provider (inject calls are not
 *    refused).
 *  - FI_MRCHECK_FAULT_CQ_ERR=rate: the completion of a tracked operation
 *    (not an FI_MULTI_RECV buffer) read through mrcheck's CQ becomes an
 *    error entry: the read returns -FI_EAVAIL and fi_cq_readerr gives
 *    err FI_EIO, prov_errno MRCHECK_FAULT_PROV_ERRNO and the entry's
 *    context, flags, len, buf, data and tag, as a provider delivers one.
 *    While fault-injecting, each read takes one entry from the provider.
 *  - FI_MRCHECK_FAULT_CLOSE_ONCE: the first fi_close of each object of the
 *    listed classes returns -FI_EBUSY and changes nothing; the next one
 *    closes. A comma list of mr (every MR), mr_remote (MRs granting remote
 *    access: the application's own, which mrlease forwards), ep, domain;
 *    1 means mr,ep,domain.
 *  - FI_MRCHECK_FAULT_SEED (default 1): the n-th decision of each kind in the
 *    process is a hash of the seed, the kind and n, so a single-threaded
 *    run repeats exactly; with threads the sequence of decisions is the
 *    same and only which thread meets which follows the interleaving.
 * A rate is a fraction in [0, 1]; an unparsable value is reported on
 * stderr and leaves that fault off. Every injected fault is counted
 * (faults_* below).
 *
 * Registration cost (FI_MRCHECK_REG_COST*): over tcp a registration is a
 * table insert, so nothing shows what a cache saves where registering
 * pins pages and writes the NIC's tables. With the model on, every
 * registration made on the domain the application opened (the outermost:
 * what the application or mrlease asks for; the utility provider's
 * registrations below it, one per registration above, are not charged
 * again) spends a + b * bytes of its thread's CPU time busy before it
 * reaches the provider, bytes the sum of its iov lengths:
 *  - FI_MRCHECK_REG_COST=1: on, with UCX's InfiniBand model, a = 16000 ns
 *    and b = 0.06 ns per byte;
 *  - FI_MRCHECK_REG_COST_NS=a, FI_MRCHECK_REG_COST_NS_PER_BYTE=b (nanoseconds,
 *    fractions allowed): on, with these.
 * Closing a registration stays free, as in UCX's model. The model also
 * works with FI_MRCHECK_OFF=1 (no checks, only the charge), which is how
 * benchmarks use it. Charged registrations and the CPU time they spent are
 * counted (reg_cost_* below); an unparsable value is reported on stderr
 * and leaves the model off.
 *
 * Reporting: every violation is counted (per domain and process-wide) and
 * printed to stderr with its reason. A process that exits with
 * unacknowledged violations prints their number and the last one and
 * exits with status FI_MRCHECK_EXIT_STATUS (3), so a test that never
 * looked still fails; FI_MRCHECK_ABORT=1 aborts at the first violation
 * instead (for a core dump).
 */
#ifndef MRCHECK_H
#define MRCHECK_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

#define MRCHECK_OPS_1 "mrcheck_v1"

enum mrcheck_violation {
	MRCHECK_NO_DESC, /* a local iov with a NULL desc */
	MRCHECK_UNKNOWN_DESC, /* a desc mrcheck did not hand out on this domain
			       */
	MRCHECK_CLOSED_DESC, /* the desc of an MR already closed */
	MRCHECK_NOT_COVERED, /* the iov is not inside the desc's MR */
	MRCHECK_CLOSE_IN_FLIGHT, /* an MR closed while an op that used it is in
				    flight */
	MRCHECK_STALE_FRAME, /* an operand's page is not the frame its desc's
			      * registration recorded (FI_MRCHECK_FRAMES=1) */
	MRCHECK_STALE_REMOTE_KEY, /* an RMA or atomic target's page is not
				   * the frame its key's registration (of
				   * this process) recorded
				   * (FI_MRCHECK_FRAMES=1) */
	MRCHECK_VIOLATION_KINDS
};

/* The codes FI_MRCHECK_FAULT_REG fails registrations with. */
enum mrcheck_fault_code {
	MRCHECK_FAULT_ENOMEM,
	MRCHECK_FAULT_EAGAIN,
	MRCHECK_FAULT_ENOKEY,
	MRCHECK_FAULT_ENOSPC,
	MRCHECK_FAULT_CODES
};

/* prov_errno of an injected error completion. */
#define MRCHECK_FAULT_PROV_ERRNO 0x6d72636b

struct mrcheck_stats {
	uint64_t violations; /* sum of by_kind */
	uint64_t by_kind[MRCHECK_VIOLATION_KINDS];
	uint64_t acknowledged; /* violations acknowledged so far */
	uint64_t mr_opened, mr_closed; /* MRs opened / closed */
	uint64_t posts_checked; /* posts whose descs were checked */
	uint64_t ops_tracked, ops_completed; /* ops tracked / retired */
	uint64_t ops_in_flight; /* tracked and not yet retired */
	uint64_t strict_domains; /* domains checked (process-wide) */
	/* FI_MRCHECK_FRAMES=1 (process-wide flags; counts as above) */
	uint64_t frames_enabled; /* FI_MRCHECK_FRAMES=1 is set */
	uint64_t frames_supported; /* and frame numbers are readable */
	uint64_t frames_recorded; /* pages recorded at registration */
	uint64_t frames_checked; /* operand pages compared at posts */
	uint64_t frames_remote_checked; /* RMA/atomic target pages compared */
	/* FI_MRCHECK_FAULT_* (counts as above) */
	uint64_t faults_reg; /* registrations refused */
	uint64_t faults_reg_by_code[MRCHECK_FAULT_CODES];
	uint64_t faults_post; /* posts refused -FI_EAGAIN */
	uint64_t faults_cq_err; /* completions turned into errors */
	uint64_t faults_cq_err_read; /* of those, read by fi_cq_readerr */
	uint64_t faults_close; /* closes refused -FI_EBUSY */
	/* FI_MRCHECK_REG_COST* (counts as above) */
	uint64_t reg_cost_charged; /* registrations charged */
	uint64_t reg_cost_ns; /* CPU ns they spent */
};

/*
 * fi_open_ops(fid, MRCHECK_OPS_1, 0, (void **)&ops, NULL) on a domain gives
 * that domain's counters; on a fabric, the process-wide ones. The fid may be
 * a layer above (mrlease) as long as it forwards unknown ops names down.
 */
struct mrcheck_ops {
	size_t size;
	int (*query)(struct mrcheck_ops *self, struct mrcheck_stats *stats,
		     size_t size);
	/* Mark every violation recorded so far (process-wide) as expected, so
	 * fabric close succeeds; for tests that provoke them. Returns how many
	 * were newly acknowledged. */
	uint64_t (*acknowledge)(struct mrcheck_ops *self);
	/* Copy the text of the last violation (process-wide) into buf. */
	void (*last_violation)(struct mrcheck_ops *self, char *buf, size_t len);
};

/*
 * The process-wide counters straight from the loaded plugin (NULL if it is
 * not loaded), for a program that cannot reach them through fi_open_ops: a
 * stack whose layer above does not forward MRCHECK_OPS_1, or MPI, which
 * hides libfabric's objects. The plugin is looked for on FI_PROVIDER_PATH,
 * then by its name, never loaded here.
 */
static inline struct mrcheck_ops *
mrcheck_loaded_ops(void)
{
	const char *env = getenv("FI_PROVIDER_PATH");
	char dirs[4096], path[4200], *dir, *save = NULL;
	struct mrcheck_ops *(*get)(void) = NULL;
	void *handle = NULL;

	snprintf(dirs, sizeof(dirs), "%s", env ? env : "");
	for (dir = strtok_r(dirs, ":", &save); dir && !handle;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/libmrcheck-fi.so", dir);
		handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	}
	if (!handle)
		handle = dlopen("libmrcheck-fi.so", RTLD_NOW | RTLD_NOLOAD);
	if (!handle)
		return NULL;
	*(void **) &get = dlsym(handle, "mrcheck_global_ops");
	/* libfabric holds its own reference: the plugin stays loaded. */
	dlclose(handle);
	return get ? get() : NULL;
}

#endif /* MRCHECK_H */
