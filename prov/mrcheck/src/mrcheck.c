/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck: entry point, domains, MRs and violation reporting (see
 * mrcheck.h for what it checks and why).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrcheck_int.h"

struct fi_provider mrcheck_prov = {
	.version = FI_VERSION(0, 1),
	.fi_version = FI_VERSION(1, 17),
	.name = "mrcheck",
	.getinfo = NULL,
	.fabric = mrl_hook_fabric,
	.cleanup = NULL,
};

/* Process-wide state; chk_global_lock protects the domain list and the
 * last message, and is never held while a domain lock is taken. */
static pthread_mutex_t chk_global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chk_domain *chk_domains;
struct chk_counts chk_global;
static uint64_t chk_acknowledged;
static uint64_t chk_strict_domains;
static char chk_last[512];
static bool chk_abort;
static bool chk_all_strict;
static bool chk_off;
/* FI_MRCHECK_MR_LOCAL: a NULL desc is reported on every strict domain, not
 * only on those whose mr_mode has FI_MR_LOCAL. */
static bool chk_mr_local_all;
static int chk_exit_status;
/* FI_MRCHECK_FRAMES: set once in fi_prov_ini; the fd stays open while frames
 * are compared (pread keeps no shared offset, so threads share it). */
static bool chk_frames_enabled;
static int chk_pagemap_fd = -1;
static uintptr_t chk_page_size = 4096;
/* Stale-frame violations come once per post in a broken loop: the first
 * ones are printed, all are counted. */
#define CHK_STALE_PRINTED 16
static uint64_t chk_stale_seen;

void
chk_add(uint64_t *a, uint64_t *b, uint64_t n)
{
	__atomic_fetch_add(a, n, __ATOMIC_RELAXED);
	if (b)
		__atomic_fetch_add(b, n, __ATOMIC_RELAXED);
}

static uint64_t
chk_load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

void
chk_violation(struct chk_domain *dom, enum mrcheck_violation kind,
	      const char *fmt, ...)
{
	static const char *const names[] = {
		[MRCHECK_NO_DESC] = "no desc",
		[MRCHECK_UNKNOWN_DESC] = "unknown desc",
		[MRCHECK_CLOSED_DESC] = "desc of a closed MR",
		[MRCHECK_NOT_COVERED] = "iov outside its MR",
		[MRCHECK_CLOSE_IN_FLIGHT] =
			"MR closed under an operation in flight",
		[MRCHECK_STALE_FRAME] =
			"registration of pages no longer under the operand",
		[MRCHECK_STALE_REMOTE_KEY] =
			"remote key of pages no longer under the target",
	};
	char msg[sizeof(chk_last)];
	uint64_t seen = 0;
	va_list args;
	int n;

	chk_add(&chk_global.by_kind[kind],
		dom ? &dom->counts.by_kind[kind] : NULL, 1);
	n = snprintf(msg, sizeof(msg), "mrcheck violation (%s): ", names[kind]);
	va_start(args, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t) n, fmt, args);
	va_end(args);
	pthread_mutex_lock(&chk_global_lock);
	memcpy(chk_last, msg, sizeof(chk_last));
	pthread_mutex_unlock(&chk_global_lock);
	if (kind == MRCHECK_STALE_FRAME || kind == MRCHECK_STALE_REMOTE_KEY)
		seen = __atomic_fetch_add(&chk_stale_seen, 1, __ATOMIC_RELAXED);
	if (seen < CHK_STALE_PRINTED) {
		fprintf(stderr, "%s\n", msg);
		FI_WARN(&mrcheck_prov, FI_LOG_DOMAIN, "%s\n", msg);
	} else if (seen == CHK_STALE_PRINTED) {
		fprintf(stderr, "mrcheck: further stale-frame violations are "
				"counted, not printed\n");
	}
	if (chk_abort)
		abort();
}

static void
chk_fill_stats(const struct chk_counts *c, struct mrcheck_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int k = 0; k < MRCHECK_VIOLATION_KINDS; k++) {
		st->by_kind[k] = chk_load(&c->by_kind[k]);
		st->violations += st->by_kind[k];
	}
	st->mr_opened = chk_load(&c->mr_opened);
	st->mr_closed = chk_load(&c->mr_closed);
	st->posts_checked = chk_load(&c->posts_checked);
	st->ops_tracked = chk_load(&c->ops_tracked);
	st->ops_completed = chk_load(&c->ops_completed);
	st->ops_in_flight = st->ops_tracked - st->ops_completed;
	st->acknowledged = chk_load(&chk_acknowledged);
	st->strict_domains = chk_load(&chk_strict_domains);
	st->frames_enabled = chk_frames_enabled;
	st->frames_supported = chk_frames_on();
	st->frames_recorded = chk_load(&c->frames_recorded);
	st->frames_checked = chk_load(&c->frames_checked);
	st->frames_remote_checked = chk_load(&c->frames_remote_checked);
	st->faults_reg = chk_load(&c->faults_reg);
	for (int k = 0; k < MRCHECK_FAULT_CODES; k++)
		st->faults_reg_by_code[k] = chk_load(&c->faults_reg_by_code[k]);
	st->faults_post = chk_load(&c->faults_post);
	st->faults_cq_err = chk_load(&c->faults_cq_err);
	st->faults_cq_err_read = chk_load(&c->faults_cq_err_read);
	st->faults_close = chk_load(&c->faults_close);
	st->reg_cost_charged = chk_load(&c->cost_regs);
	st->reg_cost_ns = chk_load(&c->cost_ns);
}

static uint64_t
chk_unacknowledged(void)
{
	struct mrcheck_stats st;

	chk_fill_stats(&chk_global, &st);
	return st.violations - st.acknowledged;
}

static int
chk_query_domain(struct mrcheck_ops *self, struct mrcheck_stats *st,
		 size_t size)
{
	struct chk_domain *dom = container_of(self, struct chk_domain, api);

	if (size < sizeof(*st))
		return -FI_ETOOSMALL;
	chk_fill_stats(&dom->counts, st);
	return 0;
}

static int
chk_query_global(struct mrcheck_ops *self, struct mrcheck_stats *st,
		 size_t size)
{
	(void) self;
	if (size < sizeof(*st))
		return -FI_ETOOSMALL;
	chk_fill_stats(&chk_global, st);
	return 0;
}

static uint64_t
chk_acknowledge(struct mrcheck_ops *self)
{
	struct mrcheck_stats st;
	uint64_t newly;

	(void) self;
	chk_fill_stats(&chk_global, &st);
	newly = st.violations - st.acknowledged;
	__atomic_store_n(&chk_acknowledged, st.violations, __ATOMIC_RELAXED);
	return newly;
}

static void
chk_last_violation(struct mrcheck_ops *self, char *buf, size_t len)
{
	(void) self;
	if (!len)
		return;
	pthread_mutex_lock(&chk_global_lock);
	snprintf(buf, len, "%s", chk_last);
	pthread_mutex_unlock(&chk_global_lock);
}

static struct mrcheck_ops chk_global_api = {
	.size = sizeof(struct mrcheck_ops),
	.query = chk_query_global,
	.acknowledge = chk_acknowledge,
	.last_violation = chk_last_violation,
};

/* ---- frames (FI_MRCHECK_FRAMES=1) ------------------------------------- */

#define CHK_PM_PRESENT (1ULL << 63)
#define CHK_PM_PFN     ((1ULL << 55) - 1)

bool
chk_frames_on(void)
{
	return chk_pagemap_fd >= 0;
}

static uintptr_t
chk_page_down(const void *addr)
{
	return (uintptr_t) addr & ~(chk_page_size - 1);
}

size_t
chk_pages_of(const void *addr, size_t len)
{
	if (!len)
		return 0;
	return ((uintptr_t) addr + len - 1 - chk_page_down(addr)) /
		       chk_page_size +
	       1;
}

/* Frame numbers of n pages from page address first (0: not present). */
static void
chk_pagemap_read(int fd, uintptr_t first, size_t n, uint64_t *frames)
{
	off_t at = (off_t) (first / chk_page_size * sizeof(uint64_t));
	size_t want = n * sizeof(uint64_t), got = 0;

	while (got < want) {
		ssize_t r = pread(fd, (char *) frames + got, want - got,
				  at + (off_t) got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t) r;
	}
	memset((char *) frames + got, 0, want - got);
	for (size_t i = 0; i < n; i++)
		frames[i] = (frames[i] & CHK_PM_PRESENT) ?
				    frames[i] & CHK_PM_PFN :
				    0;
}

void
chk_frames_read(const void *addr, size_t len, uint64_t *frames)
{
	chk_pagemap_read(chk_pagemap_fd, chk_page_down(addr),
			 chk_pages_of(addr, len), frames);
}

/*
 * Give the pages frames of their own without changing a byte, as a
 * pinning registration does: a page never written would otherwise show the
 * shared zero page and move at its first write. Read-only memory can only
 * be populated for reading; a page that cannot be populated at all (not
 * mapped) stays unknown.
 */
static void
chk_populate(uintptr_t first, size_t n)
{
	if (!madvise((void *) first, n * chk_page_size, MADV_POPULATE_WRITE) ||
	    !madvise((void *) first, n * chk_page_size, MADV_POPULATE_READ))
		return;
	for (size_t i = 0; i < n; i++) {
		void *page = (void *) (first + i * chk_page_size);

		if (madvise(page, chk_page_size, MADV_POPULATE_WRITE))
			(void) madvise(page, chk_page_size, MADV_POPULATE_READ);
	}
}

/* The frames of every page the iovs span, in turn (NULL when frames are
 * off, nothing is spanned or memory is short: then nothing is compared). */
static uint64_t *
chk_frames_record(struct chk_domain *dom, const struct iovec *iov, size_t count)
{
	uint64_t *frames, *at;
	size_t total = 0;

	if (!chk_frames_on())
		return NULL;
	for (size_t i = 0; i < count; i++)
		total += chk_pages_of(iov[i].iov_base, iov[i].iov_len);
	if (!total || !(frames = malloc(total * sizeof(*frames))))
		return NULL;
	at = frames;
	for (size_t i = 0; i < count; i++) {
		size_t n = chk_pages_of(iov[i].iov_base, iov[i].iov_len);

		if (!n)
			continue;
		chk_populate(chk_page_down(iov[i].iov_base), n);
		chk_frames_read(iov[i].iov_base, iov[i].iov_len, at);
		at += n;
	}
	chk_count(dom, frames_recorded, total);
	return frames;
}

const uint64_t *
chk_frames_at(const struct chk_mr *mr, const void *addr, size_t len)
{
	const uint64_t *frames = mr->frames;
	uintptr_t a = (uintptr_t) addr;

	if (!frames)
		return NULL;
	for (size_t i = 0; i < mr->iov_count; i++) {
		uintptr_t b = (uintptr_t) mr->iov[i].iov_base;
		size_t l = mr->iov[i].iov_len;

		if (a >= b && a - b <= l && len <= l - (a - b))
			return frames + (chk_page_down(addr) -
					 chk_page_down(mr->iov[i].iov_base)) /
						chk_page_size;
		frames += chk_pages_of(mr->iov[i].iov_base, l);
	}
	return NULL;
}

bool
chk_frames_compare(struct chk_domain *dom, const struct chk_mr *mr,
		   const char *what, size_t i, const void *addr, size_t len,
		   const uint64_t *now)
{
	size_t n = chk_pages_of(addr, len), compared = 0;
	const uint64_t *then;

	if (!mr->frames || !(then = chk_frames_at(mr, addr, len)))
		return false;
	for (size_t p = 0; p < n; p++) {
		if (!then[p])
			continue;
		compared++;
		if (now[p] == then[p])
			continue;
		chk_count(dom, frames_checked, compared);
		chk_violation(
			dom, MRCHECK_STALE_FRAME,
			"%s: operand %zu [%p, +%zu) page %zu is on frame "
			"%#llx (0: not present), its registration [%p, +%zu) "
			"on frame %#llx",
			what, i, addr, len, p, (unsigned long long) now[p],
			mr->iov[0].iov_base, mr->iov[0].iov_len,
			(unsigned long long) then[p]);
		return true;
	}
	chk_count(dom, frames_checked, compared);
	return false;
}

/* FI_MRCHECK_FRAMES=1: frames are compared only if pagemap gives frame
 * numbers (0 without CAP_SYS_ADMIN); say why not otherwise. */
static void
chk_frames_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	volatile char probe = 1; /* on a page in use: present */
	uint64_t frame = 0;
	int fd;

	if (ps > 0)
		chk_page_size = (uintptr_t) ps;
	chk_frames_enabled = true;
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr,
			"mrcheck: FI_MRCHECK_FRAMES=1 but /proc/self/pagemap: "
			"%s; frames not compared\n",
			strerror(errno));
		return;
	}
	chk_pagemap_read(fd, chk_page_down((const void *) &probe), 1, &frame);
	(void) probe;
	if (!frame) {
		fprintf(stderr,
			"mrcheck: FI_MRCHECK_FRAMES=1 but /proc/self/pagemap "
			"gives no frame numbers (needs CAP_SYS_ADMIN); frames "
			"not compared\n");
		close(fd);
		return;
	}
	chk_pagemap_fd = fd;
}

/* ---- MRs ----------------------------------------------------------- */

static int
chk_ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) a, y = (uintptr_t) b;

	return x < y ? -1 : x > y;
}

/* Closing an MR an operation still uses is the crash mrlease prevents. */
static int
chk_mr_release(struct mrl_mr *hook)
{
	struct chk_mr *rec = hook->ext;
	struct chk_domain *dom = rec->dom;
	uint64_t in_flight, *frames = NULL;
	int ret;

	/* A provider refusing the close changes nothing. */
	if (chk_fault_close_mr(dom, rec))
		return -FI_EBUSY;
	pthread_mutex_lock(&dom->lock);
	in_flight = rec->in_flight;
	rec->closed = true;
	pthread_mutex_unlock(&dom->lock);
	if (in_flight)
		chk_violation(dom, MRCHECK_CLOSE_IN_FLIGHT,
			      "MR [%p, +%zu) closed while %llu operation(s) "
			      "using it have not completed",
			      rec->iov_count ? rec->iov[0].iov_base : NULL,
			      rec->iov_count ? rec->iov[0].iov_len : 0,
			      (unsigned long long) in_flight);

	ret = fi_close(&hook->inner->fid);
	/* Out of the key map before its frames go (mrcheck_keys.c). */
	if (!ret)
		chk_keys_remove(rec);
	pthread_mutex_lock(&dom->lock);
	if (ret) {
		rec->closed = false;
	} else {
		rec->hook = NULL;
		frames = rec->frames;
		rec->frames = NULL;
	}
	pthread_mutex_unlock(&dom->lock);
	free(frames);
	if (!ret)
		chk_add(&chk_global.mr_closed, &dom->counts.mr_closed, 1);
	return ret;
}

/* Make the new hook MR hand out its record as desc. host: the iovs are
 * host memory (their frames can be recorded). */
static int
chk_mr_track(struct chk_domain *dom, struct fid_mr *mr, const struct iovec *iov,
	     size_t count, uint64_t access, bool host)
{
	struct mrl_mr *hook = mrl_hook_mr_of(mr);
	struct chk_mr *rec;

	rec = calloc(1, sizeof(*rec) + count * sizeof(rec->iov[0]));
	if (!rec)
		return -FI_ENOMEM;
	rec->dom = dom;
	rec->hook = hook;
	rec->inner_desc = hook->mr.mem_desc;
	rec->access = access;
	rec->iov_count = count;
	if (count)
		memcpy(rec->iov, iov, count * sizeof(*iov));
	/* Read before the record is published: no lock across pagemap. */
	if (host)
		rec->frames = chk_frames_record(dom, iov, count);
	/* Remote keys are compared at RMA targets (no key: FI_MR_RAW). */
	if (rec->frames && (access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    hook->mr.key != FI_KEY_NOTAVAIL)
		chk_keys_add(rec, hook->mr.key,
			     (dom->hook->mr_mode & FI_MR_VIRT_ADDR) ||
				     dom->hook->mr_mode == MRL_FI_MR_BASIC);

	pthread_mutex_lock(&dom->lock);
	if (!tsearch(rec, &dom->mrs, chk_ptr_cmp)) {
		pthread_mutex_unlock(&dom->lock);
		chk_keys_remove(rec);
		free(rec->frames);
		free(rec);
		return -FI_ENOMEM;
	}
	rec->next = dom->all_mrs;
	dom->all_mrs = rec;
	pthread_mutex_unlock(&dom->lock);

	hook->ext = rec;
	hook->release = chk_mr_release;
	hook->mr.mem_desc = rec;
	chk_add(&chk_global.mr_opened, &dom->counts.mr_opened, 1);
	return 0;
}

static int
chk_mr_done(struct chk_domain *dom, int ret, struct fid_mr **mr,
	    const struct iovec *iov, size_t count, uint64_t access, bool host)
{
	if (ret)
		return ret;
	ret = chk_mr_track(dom, *mr, iov, count, access, host);
	if (ret) {
		fi_close(&(*mr)->fid);
		*mr = NULL;
	}
	return ret;
}

static struct chk_domain *
chk_dom_of_fid(struct fid *fid)
{
	return chk_domain_of(container_of(fid, struct mrl_domain, domain.fid));
}

static int
chk_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	   uint64_t offset, uint64_t requested_key, uint64_t flags,
	   struct fid_mr **mr, void *context)
{
	struct iovec iov = {.iov_base = (void *) buf, .iov_len = len};
	int ret;

	ret = chk_fault_reg(chk_dom_of_fid(fid));
	if (ret)
		return ret;
	chk_cost_charge(chk_dom_of_fid(fid), len);
	ret = mrl_hook_domain_mr_ops.reg(fid, buf, len, access, offset,
				    requested_key, flags, mr, context);
	return chk_mr_done(chk_dom_of_fid(fid), ret, mr, &iov, 1, access, true);
}

static int
chk_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
	    uint64_t access, uint64_t offset, uint64_t requested_key,
	    uint64_t flags, struct fid_mr **mr, void *context)
{
	int ret;

	ret = chk_fault_reg(chk_dom_of_fid(fid));
	if (ret)
		return ret;
	chk_cost_charge(chk_dom_of_fid(fid), chk_cost_bytes(iov, count));
	ret = mrl_hook_domain_mr_ops.regv(fid, iov, count, access, offset,
				     requested_key, flags, mr, context);
	return chk_mr_done(chk_dom_of_fid(fid), ret, mr, iov, count, access,
			   true);
}

static int
chk_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
	       struct fid_mr **mr)
{
	int ret;

	ret = chk_fault_reg(chk_dom_of_fid(fid));
	if (ret)
		return ret;
	chk_cost_charge(chk_dom_of_fid(fid),
			chk_cost_bytes(attr->mr_iov, attr->iov_count));
	ret = mrl_hook_domain_mr_ops.regattr(fid, attr, flags, mr);
	return chk_mr_done(chk_dom_of_fid(fid), ret, mr, attr->mr_iov,
			   attr->iov_count, attr->access,
			   attr->iface == FI_HMEM_SYSTEM);
}

/* ---- domains ------------------------------------------------------- */

static int
chk_domain_open(struct mrl_domain *hook)
{
	bool strict = (hook->outermost || chk_all_strict) && !chk_off;
	struct chk_domain *dom;

	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	if (strict && chk_fault_close_wrap(dom, &hook->inner->fid)) {
		free(dom);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&dom->lock, NULL);
	dom->hook = hook;
	dom->api = (struct mrcheck_ops){
		.size = sizeof(struct mrcheck_ops),
		.query = chk_query_domain,
		.acknowledge = chk_acknowledge,
		.last_violation = chk_last_violation,
	};
	hook->ext = dom;
	dom->mr_local = chk_mr_local_all || (hook->mr_mode & FI_MR_LOCAL);
	if (strict) {
		dom->mr_ops = mrl_hook_domain_mr_ops;
		dom->mr_ops.reg = chk_mr_reg;
		dom->mr_ops.regv = chk_mr_regv;
		dom->mr_ops.regattr = chk_mr_regattr;
		hook->domain.mr = &dom->mr_ops;
		chk_add(&chk_strict_domains, NULL, 1);
	}
	/* Charged once, where the application's and mrlease's registrations
	 * enter: each becomes one registration at the core. */
	dom->reg_cost = hook->outermost && chk_cost_on();
	if (dom->reg_cost && !strict)
		hook->domain.mr = chk_cost_mr_ops();
	pthread_mutex_lock(&chk_global_lock);
	dom->next = chk_domains;
	chk_domains = dom;
	pthread_mutex_unlock(&chk_global_lock);
	FI_INFO(&mrcheck_prov, FI_LOG_DOMAIN, "domain over %s: %s\n",
		hook->prov_name,
		strict && dom->mr_local ? "strict, NULL descs reported" :
		strict ? "strict, NULL descs legal (no FI_MR_LOCAL)" :
		dom->reg_cost ?
			 "unchecked, registrations charged" :
			 "passthrough (opened inside a utility provider)");
	return 0;
}

static void
chk_free_op(void *node)
{
	free(node);
}

static void
chk_no_free(void *node)
{
	(void) node;
}

static void
chk_domain_close(struct mrl_domain *hook)
{
	struct chk_domain *dom = chk_domain_of(hook), **pp;
	struct chk_mr *rec, *next;
	bool open_mrs = false;

	/* The provider will refuse this close (FI_MRCHECK_FAULT_CLOSE_ONCE). */
	if (!dom || chk_fault_close_pending(&hook->inner->fid))
		return;
	for (rec = dom->all_mrs; rec; rec = rec->next)
		open_mrs |= !rec->closed;
	/* An open MR, endpoint or CQ makes the provider refuse the close:
	 * keep everything for the next attempt. */
	if (open_mrs || chk_load(&dom->users) ||
	    chk_load(&dom->counts.ops_tracked) !=
		    chk_load(&dom->counts.ops_completed))
		return;

	pthread_mutex_lock(&chk_global_lock);
	for (pp = &chk_domains; *pp; pp = &(*pp)->next) {
		if (*pp == dom) {
			*pp = dom->next;
			break;
		}
	}
	pthread_mutex_unlock(&chk_global_lock);
	tdestroy(dom->ops, chk_free_op);
	tdestroy(dom->claims, chk_free_op);
	tdestroy(dom->mrs, chk_no_free);
	for (rec = dom->all_mrs; rec; rec = next) {
		next = rec->next;
		chk_keys_remove(rec);
		free(rec->frames);
		free(rec);
	}
	pthread_mutex_destroy(&dom->lock);
	hook->ext = NULL;
	free(dom);
}

static int
chk_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
	     void *context)
{
	(void) flags;
	(void) context;
	if (strcmp(name, MRCHECK_OPS_1))
		return -FI_ENOSYS;
	switch (fid->fclass) {
	case FI_CLASS_FABRIC:
		*ops = &chk_global_api;
		return 0;
	case FI_CLASS_DOMAIN:
		*ops = &chk_dom_of_fid(fid)->api;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static const struct mrl_personality chk_personality = {
	.name = "mrcheck",
	.domain_open = chk_domain_open,
	.domain_close = chk_domain_close,
	.ep_open = chk_ep_open,
	.ep_close = chk_ep_close,
	.cq_open = chk_cq_open,
	.cq_close = chk_cq_close,
	.ops_open = chk_ops_open,
};

/* A run that leaves violations unacknowledged fails even if nothing
 * looked: the process exits with FI_MRCHECK_EXIT_STATUS (3; 0 keeps the
 * process's own). */
static void
chk_at_exit(void)
{
	uint64_t n = chk_unacknowledged();
	struct mrcheck_stats st;

	chk_fill_stats(&chk_global, &st);
	FI_INFO(&mrcheck_prov, FI_LOG_CORE,
		"%llu violation(s), %llu posts checked on %llu domain(s), "
		"%llu MRs opened\n",
		(unsigned long long) st.violations,
		(unsigned long long) st.posts_checked,
		(unsigned long long) st.strict_domains,
		(unsigned long long) st.mr_opened);
	if (!n)
		return;
	fprintf(stderr, "mrcheck: %llu unacknowledged violation(s), last: %s\n",
		(unsigned long long) n, chk_last);
	fflush(NULL);
	if (chk_exit_status)
		_exit(chk_exit_status);
}

/* The plugin's two exports: libfabric's DL entry point and the fallback
 * tests look up with dlsym. */
struct mrcheck_ops *mrcheck_global_ops(void);
struct fi_provider *fi_prov_ini(void);

/* Test-only fallback for layers above that do not forward MRCHECK_OPS_1. */
__attribute__((visibility("default"))) struct mrcheck_ops *
mrcheck_global_ops(void)
{
	return &chk_global_api;
}

__attribute__((visibility("default"))) struct fi_provider *
fi_prov_ini(void)
{
	static bool once;

	mrl_hook_prov = &mrcheck_prov;
	mrl_hook_personality = &chk_personality;
	if (!once) {
		once = true;
		/* fi_info -e lists only parameters defined here, and
		 * fi_param_get answers only for those. */
		if (chk_params_define())
			FI_WARN(&mrcheck_prov, FI_LOG_CORE,
				"defining FI_MRCHECK_* parameters failed; "
				"defaults apply\n");
		chk_abort = chk_param_bool("ABORT");
		chk_all_strict = chk_param_bool("ALL");
		chk_mr_local_all = chk_param_bool("MR_LOCAL");
		/* FI_MRCHECK_OFF=1: the bare passthrough layer, to tell its
		 * effects from mrcheck's. */
		chk_off = chk_param_bool("OFF");
		chk_exit_status = chk_param_int("EXIT_STATUS", 3);
		if (chk_param_bool("FRAMES"))
			chk_frames_init();
		chk_fault_init();
		chk_cost_init();
		atexit(chk_at_exit);
	}
	return &mrcheck_prov;
}
