/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"

#include <sched.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "mrl_test.h"

static int test_number;
static int test_failures;
static bool current_failed;
static char *current_skip;
static char name_prefix[256];

void mrl_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list args;

	if (current_failed)
		return;
	current_failed = true;
	printf("# %s:%d: ", file, line);
	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	printf("\n");
	fflush(stdout);
}

bool mrl_test_failed(void)
{
	return current_failed;
}

void mrl_test_set_prefix(const char *prefix)
{
	snprintf(name_prefix, sizeof(name_prefix), "%s", prefix ? prefix : "");
}

void mrl_test_skip_current(const char *fmt, ...)
{
	va_list args;

	free(current_skip);
	va_start(args, fmt);
	if (vasprintf(&current_skip, fmt, args) < 0)
		current_skip = NULL;
	va_end(args);
}

void mrl_test_run(const char *name, void (*fn)(void))
{
	current_failed = false;
	free(current_skip);
	current_skip = NULL;
	fn();
	mrl_close_all();
	test_number++;
	if (current_failed) {
		test_failures++;
		printf("not ok %d - %s%s\n", test_number, name_prefix, name);
	} else if (current_skip) {
		printf("ok %d - %s%s # SKIP %s\n", test_number, name_prefix,
		       name, current_skip);
	} else {
		printf("ok %d - %s%s\n", test_number, name_prefix, name);
	}
	free(current_skip);
	current_skip = NULL;
	fflush(stdout);
}

void mrl_test_skip(const char *name, const char *why)
{
	printf("ok %d - %s%s # SKIP %s\n", ++test_number, name_prefix, name,
	       why);
	fflush(stdout);
}

int mrl_test_done(void)
{
	printf("1..%d\n", test_number);
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Resource tracking.
 */

struct tracked {
	struct tracked *next;
	enum { TRACK_FID, TRACK_MEM, TRACK_INFO } kind;
	void *ptr;
};

/* Newest first. */
static struct tracked *tracked_head;

static void track(int kind, void *ptr)
{
	struct tracked *t;

	if (!ptr)
		return;
	t = calloc(1, sizeof(*t));
	if (!t) {
		fprintf(stderr, "mrl_test: out of memory\n");
		abort();
	}
	t->kind = kind;
	t->ptr = ptr;
	t->next = tracked_head;
	tracked_head = t;
}

void mrl_track_fid(struct fid *fid)
{
	track(TRACK_FID, fid);
}

void *mrl_alloc(size_t size)
{
	void *p = calloc(1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "mrl_test: out of memory\n");
		abort();
	}
	track(TRACK_MEM, p);
	return p;
}

struct fi_info *mrl_track_info(struct fi_info *info)
{
	track(TRACK_INFO, info);
	return info;
}

static const char *fid_class_name(const struct fid *fid)
{
	static const char *const names[] = {
		[FI_CLASS_FABRIC] = "fabric", [FI_CLASS_DOMAIN] = "domain",
		[FI_CLASS_EP] = "ep", [FI_CLASS_SEP] = "scalable ep",
		[FI_CLASS_RX_CTX] = "rx context", [FI_CLASS_SRX_CTX] = "srx",
		[FI_CLASS_TX_CTX] = "tx context", [FI_CLASS_STX_CTX] = "stx",
		[FI_CLASS_PEP] = "passive ep", [FI_CLASS_INTERFACE] = "interface",
		[FI_CLASS_AV] = "av", [FI_CLASS_MR] = "mr", [FI_CLASS_EQ] = "eq",
		[FI_CLASS_CQ] = "cq", [FI_CLASS_CNTR] = "cntr",
		[FI_CLASS_WAIT] = "wait set", [FI_CLASS_POLL] = "poll set",
		[FI_CLASS_CONNREQ] = "connreq", [FI_CLASS_MC] = "mc",
		[FI_CLASS_NIC] = "nic", [FI_CLASS_AV_SET] = "av set",
	};

	if (fid->fclass < sizeof(names) / sizeof(names[0]) &&
	    names[fid->fclass])
		return names[fid->fclass];
	return "fid";
}

int mrl_close(struct fid *fid, const char *what)
{
	struct tracked **pp, *t;
	int ret;

	if (!fid)
		return 0;
	for (pp = &tracked_head; *pp; pp = &(*pp)->next) {
		if ((*pp)->kind == TRACK_FID && (*pp)->ptr == fid) {
			t = *pp;
			*pp = t->next;
			free(t);
			break;
		}
	}
	ret = fi_close(fid);
	if (ret)
		mrl_test_fail(__FILE__, __LINE__,
			      "fi_close(%s) = %d (%s)", what,
			      ret, fi_strerror(-ret));
	return ret;
}

int mrl_close_all(void)
{
	struct tracked *t, *next, *rest = NULL;
	int ret, first = 0;

	/* fids first, newest first: endpoints before their CQs, domains
	 * before fabrics; buffers and infos only once nothing uses them. */
	for (t = tracked_head; t; t = next) {
		next = t->next;
		if (t->kind != TRACK_FID) {
			t->next = rest;
			rest = t;
			continue;
		}
		ret = fi_close(t->ptr);
		if (ret) {
			mrl_test_fail(__FILE__, __LINE__,
				      "fi_close(%s %p) = %d (%s)",
				      fid_class_name(t->ptr), t->ptr, ret,
				      fi_strerror(-ret));
			if (!first)
				first = ret;
		}
		free(t);
	}
	tracked_head = NULL;
	for (t = rest; t; t = next) {
		next = t->next;
		if (t->kind == TRACK_MEM)
			free(t->ptr);
		else
			fi_freeinfo(t->ptr);
		free(t);
	}
	return first;
}

/* ------------------------------------------------------------------------
 * Bounded waits.
 */

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return dflt;
	x = strtoul(v, &end, 10);
	return *end ? dflt : x;
}

void mrl_wait_init(struct mrl_wait *w)
{
	w->spins = 0;
	w->max_spins = env_ulong("MRL_TEST_SPIN", MRL_SPIN_MAX);
	w->deadline = now_seconds() +
		      (double)env_ulong("MRL_TEST_WAIT_SECONDS", MRL_WAIT_SECONDS);
}

void mrl_wait_init_for(struct mrl_wait *w, double seconds)
{
	double deadline;

	mrl_wait_init(w);
	deadline = now_seconds() + seconds;
	if (deadline < w->deadline)
		w->deadline = deadline;
}

bool mrl_wait_over(struct mrl_wait *w)
{
	if (++w->spins >= w->max_spins)
		return true;
	/* Reading the clock every poll would dominate a fast spin. */
	return (w->spins & 1023) == 0 && now_seconds() > w->deadline;
}

bool mrl_wait_until_int(atomic_int *v, int want)
{
	struct mrl_wait w;

	mrl_wait_init(&w);
	while (atomic_load(v) != want && !mrl_wait_over(&w))
		sched_yield();
	return atomic_load(v) == want;
}

/* ------------------------------------------------------------------------
 * Provider set-up.
 */

#define FAIL(...) mrl_test_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Run a libfabric call inside a helper: on error record it and return. */
#define TRY(expr)                                                              \
	do {                                                                   \
		long long try_rc_ = (long long)(expr);                         \
		if (try_rc_ < 0) {                                             \
			FAIL("%s = %lld (%s)", #expr, try_rc_,                 \
			     fi_strerror((int)-try_rc_));                      \
			return (int)try_rc_;                                   \
		}                                                              \
	} while (0)

struct fi_info *mrl_hints(const char *prov, enum fi_ep_type type, uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints) {
		fprintf(stderr, "mrl_test: fi_allocinfo failed\n");
		abort();
	}
	hints->ep_attr->type = type;
	hints->caps = caps;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	if (prov) {
		hints->fabric_attr->prov_name = strdup(prov);
		if (!hints->fabric_attr->prov_name)
			abort();
	}
	return hints;
}

int mrl_getinfo(struct fi_info *hints, const char *node, const char *service,
		uint64_t flags, struct fi_info **info)
{
	struct fi_info *list = NULL, *cur, *pick = NULL;
	const char *want = hints->fabric_attr->prov_name;
	int ret;

	*info = NULL;
	ret = fi_getinfo(MRL_FI_VERSION, node, service, flags, hints, &list);
	if (ret) {
		fi_freeinfo(hints);
		if (ret != -FI_ENODATA)
			FAIL("fi_getinfo(%s) = %d (%s)", want ? want : "any",
			     ret, fi_strerror(-ret));
		return ret;
	}
	for (cur = list; cur; cur = cur->next) {
		if (want && strcmp(cur->fabric_attr->prov_name, want))
			continue;
		if (!pick || (pick->addr_format != FI_SOCKADDR_IN &&
			      cur->addr_format == FI_SOCKADDR_IN))
			pick = cur;
	}
	fi_freeinfo(hints);
	if (!pick) {
		fi_freeinfo(list);
		return -FI_ENODATA;
	}
	*info = fi_dupinfo(pick);
	fi_freeinfo(list);
	if (!*info) {
		FAIL("fi_dupinfo failed");
		return -FI_ENOMEM;
	}
	mrl_track_info(*info);
	return 0;
}

int mrl_domain_open(struct fi_info *info, struct mrl_domain *d)
{
	memset(d, 0, sizeof(*d));
	d->info = info;
	TRY(fi_fabric(info->fabric_attr, &d->fabric, NULL));
	mrl_track_fid(&d->fabric->fid);
	TRY(fi_domain(d->fabric, info, &d->domain, NULL));
	mrl_track_fid(&d->domain->fid);
	return 0;
}

static int open_cntr(struct mrl_domain *d, enum fi_wait_obj wait,
		     struct fid_cntr **cntr)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = wait,
	};

	TRY(fi_cntr_open(d->domain, &attr, cntr, NULL));
	mrl_track_fid(&(*cntr)->fid);
	return 0;
}

/* shm derives its shared-memory region from the endpoint name, and every
 * endpoint opened from one info would ask for the same one. */
static int set_unique_name(struct fid_ep *ep)
{
	static unsigned serial;
	char name[64];

	snprintf(name, sizeof(name), "fi_shm://mrltest-%d-%u", (int)getpid(),
		 serial++);
	TRY(fi_setname(&ep->fid, name, strlen(name) + 1));
	return 0;
}

int mrl_peer_open(struct mrl_domain *d, const struct mrl_peer_opts *opts,
		  struct mrl_peer *p)
{
	static const struct mrl_peer_opts none;
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_av_attr av_attr = { 0 };

	if (!opts)
		opts = &none;
	memset(p, 0, sizeof(*p));
	p->dom = d;
	p->peer = FI_ADDR_UNSPEC;
	cq_attr.format = opts->cq_format ? opts->cq_format : FI_CQ_FORMAT_TAGGED;
	cq_attr.wait_obj = opts->cq_wait;
	cq_attr.size = 0;
	av_attr.type = d->info->domain_attr->av_type;

	/* Companions first: tracked fids close newest first, and a provider
	 * refuses to close a CQ or AV an open endpoint is bound to. */
	TRY(fi_cq_open(d->domain, &cq_attr, &p->cq, p));
	mrl_track_fid(&p->cq->fid);
	TRY(fi_av_open(d->domain, &av_attr, &p->av, p));
	mrl_track_fid(&p->av->fid);
	if (opts->cntrs) {
		TRY(open_cntr(d, opts->cntr_wait, &p->tx_cntr));
		TRY(open_cntr(d, opts->cntr_wait, &p->rx_cntr));
		TRY(open_cntr(d, opts->cntr_wait, &p->rma_cntr));
		if (opts->remote_cntr)
			TRY(open_cntr(d, opts->cntr_wait, &p->remote_cntr));
	}
	TRY(fi_endpoint(d->domain, d->info, &p->ep, p));
	mrl_track_fid(&p->ep->fid);
	TRY(fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(p->ep, &p->av->fid, 0));
	if (opts->cntrs) {
		TRY(fi_ep_bind(p->ep, &p->tx_cntr->fid, FI_SEND));
		TRY(fi_ep_bind(p->ep, &p->rx_cntr->fid, FI_RECV));
		TRY(fi_ep_bind(p->ep, &p->rma_cntr->fid, FI_READ | FI_WRITE));
		if (opts->remote_cntr)
			TRY(fi_ep_bind(p->ep, &p->remote_cntr->fid,
				       FI_REMOTE_WRITE | FI_REMOTE_READ));
	}
	if (d->info->addr_format == FI_ADDR_STR)
		TRY(set_unique_name(p->ep));
	TRY(fi_enable(p->ep));
	p->namelen = sizeof(p->name);
	TRY(fi_getname(&p->ep->fid, p->name, &p->namelen));
	return 0;
}

int mrl_peers_connect(struct mrl_peer *a, struct mrl_peer *b)
{
	TRY(fi_av_insert(a->av, b->name, 1, &a->peer, 0, NULL));
	TRY(fi_av_insert(b->av, a->name, 1, &b->peer, 0, NULL));
	if (a->peer == FI_ADDR_NOTAVAIL || b->peer == FI_ADDR_NOTAVAIL) {
		FAIL("fi_av_insert returned FI_ADDR_NOTAVAIL");
		return -FI_EINVAL;
	}
	return 0;
}

int mrl_rdm_pair_open(struct mrl_domain *d, const struct mrl_peer_opts *opts,
		      struct mrl_peer *a, struct mrl_peer *b)
{
	int ret;

	ret = mrl_peer_open(d, opts, a);
	if (!ret)
		ret = mrl_peer_open(d, opts, b);
	if (!ret)
		ret = mrl_peers_connect(a, b);
	return ret;
}

void mrl_progress(struct mrl_peer *p)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;

	if (!p)
		return;
	if (p->eq)
		(void)fi_eq_read(p->eq, &event, &entry, sizeof(entry), FI_PEEK);
	if (p->cq)
		(void)fi_cq_read(p->cq, NULL, 0);
	if (p->tx_cntr)
		(void)fi_cntr_read(p->tx_cntr);
	if (p->rx_cntr)
		(void)fi_cntr_read(p->rx_cntr);
}

static void describe_cq_err(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err;
	ssize_t ret;

	memset(&err, 0, sizeof(err));
	ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0)
		FAIL("%s: error completion, and fi_cq_readerr = %zd (%s)",
		     what, ret, fi_strerror((int)-ret));
	else
		FAIL("%s: error completion err=%d (%s) prov_errno=%d (%s)",
		     what, err.err, fi_strerror(err.err), err.prov_errno,
		     fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
}

int mrl_cq_wait(struct mrl_peer *p, struct mrl_peer *other, void *entry,
		fi_addr_t *src_addr, const char *what)
{
	struct mrl_wait w;
	ssize_t ret;

	mrl_wait_init(&w);
	do {
		ret = src_addr ? fi_cq_readfrom(p->cq, entry, 1, src_addr) :
				 fi_cq_read(p->cq, entry, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			describe_cq_err(p->cq, what);
			return -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN) {
			FAIL("%s: fi_cq_read = %zd (%s)", what, ret,
			     fi_strerror((int)-ret));
			return ret < 0 ? (int)ret : -FI_EOTHER;
		}
		mrl_progress(other);
	} while (!mrl_wait_over(&w));
	FAIL("%s: no completion after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

int mrl_cq_wait_err(struct mrl_peer *p, struct mrl_peer *other,
		    struct fi_cq_err_entry *err, const char *what)
{
	struct fi_cq_tagged_entry entry;
	struct mrl_wait w;
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	mrl_wait_init(&w);
	do {
		ret = fi_cq_read(p->cq, &entry, 1);
		if (ret == -FI_EAVAIL) {
			ret = fi_cq_readerr(p->cq, err, 0);
			if (ret != 1) {
				FAIL("%s: fi_cq_readerr = %zd (%s)", what, ret,
				     fi_strerror((int)-ret));
				return ret < 0 ? (int)ret : -FI_EOTHER;
			}
			return 0;
		}
		if (ret == 1) {
			FAIL("%s: expected an error entry, got a completion "
			     "(flags %s)", what,
			     fi_tostr(&entry.flags, FI_TYPE_CQ_EVENT_FLAGS));
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN) {
			FAIL("%s: fi_cq_read = %zd (%s)", what, ret,
			     fi_strerror((int)-ret));
			return ret < 0 ? (int)ret : -FI_EOTHER;
		}
		mrl_progress(other);
	} while (!mrl_wait_over(&w));
	FAIL("%s: no error entry after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

int mrl_cntr_wait(struct fid_cntr *cntr, uint64_t value, struct mrl_peer *self,
		  struct mrl_peer *other, const char *what)
{
	struct mrl_wait w;
	uint64_t errs = fi_cntr_readerr(cntr), got;

	mrl_wait_init(&w);
	do {
		got = fi_cntr_read(cntr);
		if (got >= value)
			return 0;
		if (fi_cntr_readerr(cntr) != errs) {
			FAIL("%s: counter error count rose to %llu (value %llu)",
			     what, (unsigned long long)fi_cntr_readerr(cntr),
			     (unsigned long long)got);
			return -FI_EIO;
		}
		mrl_progress(self);
		mrl_progress(other);
	} while (!mrl_wait_over(&w));
	FAIL("%s: counter at %llu, waited for %llu, after %lu polls", what,
	     (unsigned long long)got, (unsigned long long)value, w.spins);
	return -FI_ETIMEDOUT;
}

uint64_t mrl_next_key(void)
{
	static uint64_t next = 0x1000;

	return next++;
}

int mrl_mr_reg(struct mrl_domain *d, struct fid_ep *ep, void *buf, size_t len,
	       uint64_t access, struct fid_mr **mr)
{
	TRY(fi_mr_reg(d->domain, buf, len, access, 0, mrl_next_key(), 0, mr,
		      NULL));
	mrl_track_fid(&(*mr)->fid);
	if (d->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		if (!ep) {
			FAIL("FI_MR_ENDPOINT domain needs an endpoint to bind");
			return -FI_EINVAL;
		}
		TRY(fi_mr_bind(*mr, &ep->fid, 0));
		TRY(fi_mr_enable(*mr));
	}
	return 0;
}

uint64_t mrl_rma_addr(const struct mrl_domain *d, const void *buf)
{
	return (d->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		       (uint64_t)(uintptr_t)buf : 0;
}

ssize_t mrl_eq_poll(struct fid_eq *eq, uint32_t *event, void *buf, size_t len)
{
	struct fi_eq_err_entry err;
	ssize_t ret;

	ret = fi_eq_read(eq, event, buf, len, 0);
	if (ret >= 0)
		return *event;
	if (ret == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		ret = fi_eq_readerr(eq, &err, 0);
		if (ret < 0)
			FAIL("EQ error entry, and fi_eq_readerr = %zd (%s)",
			     ret, fi_strerror((int)-ret));
		else
			FAIL("EQ error entry: fid %p err=%d (%s) prov_errno=%d",
			     (void *)err.fid, err.err, fi_strerror(err.err),
			     err.prov_errno);
		return -FI_EAVAIL;
	}
	if (ret != -FI_EAGAIN)
		FAIL("fi_eq_read = %zd (%s)", ret, fi_strerror((int)-ret));
	return ret;
}

int mrl_eq_wait(struct fid_eq *eq, uint32_t expected, void *buf, size_t len,
		struct mrl_peer *a, struct mrl_peer *b, const char *what)
{
	struct mrl_wait w;
	uint32_t event;
	ssize_t ret;

	mrl_wait_init(&w);
	do {
		ret = mrl_eq_poll(eq, &event, buf, len);
		if (ret >= 0) {
			if (event == expected)
				return 0;
			FAIL("%s: EQ event %s, expected %s", what,
			     fi_tostr(&event, FI_TYPE_EQ_EVENT),
			     fi_tostr(&expected, FI_TYPE_EQ_EVENT));
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
		mrl_progress(a);
		mrl_progress(b);
	} while (!mrl_wait_over(&w));
	FAIL("%s: no EQ event after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

int mrl_eq_wait_err(struct fid_eq *eq, struct fi_eq_err_entry *err,
		    struct mrl_peer *a, struct mrl_peer *b, const char *what)
{
	struct fi_eq_cm_entry entry;
	struct mrl_wait w;
	uint32_t event;
	ssize_t ret;

	memset(err, 0, sizeof(*err));
	mrl_wait_init(&w);
	do {
		ret = fi_eq_read(eq, &event, &entry, sizeof(entry), 0);
		if (ret == -FI_EAVAIL) {
			ret = fi_eq_readerr(eq, err, 0);
			if (ret < 0) {
				FAIL("%s: fi_eq_readerr = %zd (%s)", what, ret,
				     fi_strerror((int)-ret));
				return (int)ret;
			}
			return 0;
		}
		if (ret >= 0) {
			FAIL("%s: expected an EQ error entry, got event %s", what,
			     fi_tostr(&event, FI_TYPE_EQ_EVENT));
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN) {
			FAIL("%s: fi_eq_read = %zd (%s)", what, ret,
			     fi_strerror((int)-ret));
			return (int)ret;
		}
		mrl_progress(a);
		mrl_progress(b);
	} while (!mrl_wait_over(&w));
	FAIL("%s: no EQ error entry after %lu polls", what, w.spins);
	return -FI_ETIMEDOUT;
}

static int open_eq(struct mrl_domain *d, struct fid_eq **eq)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };

	TRY(fi_eq_open(d->fabric, &attr, eq, NULL));
	mrl_track_fid(&(*eq)->fid);
	return 0;
}

int mrl_msg_ep_open(struct mrl_domain *d, struct fi_info *info,
		    const void *dest, size_t destlen, struct fid_ep *srx,
		    struct fid_eq **eq, struct fid_ep **ep, struct fid_cq **cq)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };

	info = fi_dupinfo(info);
	if (!info) {
		FAIL("fi_dupinfo failed");
		return -FI_ENOMEM;
	}
	mrl_track_info(info);
	if (dest) {
		free(info->dest_addr);
		info->dest_addr = malloc(destlen);
		if (!info->dest_addr)
			return -FI_ENOMEM;
		memcpy(info->dest_addr, dest, destlen);
		info->dest_addrlen = destlen;
	}
	if (srx)
		info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	TRY(open_eq(d, eq));
	TRY(fi_cq_open(d->domain, &cq_attr, cq, NULL));
	mrl_track_fid(&(*cq)->fid);
	TRY(fi_endpoint(d->domain, info, ep, NULL));
	mrl_track_fid(&(*ep)->fid);
	if (srx)
		TRY(fi_ep_bind(*ep, &srx->fid, 0));
	TRY(fi_ep_bind(*ep, &(*eq)->fid, 0));
	TRY(fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(*ep));
	return 0;
}

int mrl_pep_listen(struct mrl_domain *d, struct fid_eq **eq,
		   struct fid_pep **pep, void *addr, size_t *addrlen)
{
	TRY(open_eq(d, eq));
	TRY(fi_passive_ep(d->fabric, d->info, pep, NULL));
	mrl_track_fid(&(*pep)->fid);
	TRY(fi_pep_bind(*pep, &(*eq)->fid, 0));
	TRY(fi_listen(*pep));
	TRY(fi_getname(&(*pep)->fid, addr, addrlen));
	return 0;
}

/* One step of the connection hand-shake: poll all three EQs once. */
static int msg_pair_step(struct mrl_msg_pair *p, struct fid_ep *srx,
			 bool *srv_up, bool *cli_up)
{
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t data[64];
	} ev;
	uint32_t event;
	ssize_t ret;

	ret = mrl_eq_poll(p->pep_eq, &event, &ev, sizeof(ev));
	if (ret >= 0) {
		if (event != FI_CONNREQ || p->srv) {
			FAIL("passive EQ: unexpected event %s",
			     fi_tostr(&event, FI_TYPE_EQ_EVENT));
			return -FI_EOTHER;
		}
		p->connreq_fid = ev.cm.fid;
		p->connreq_handle = ev.cm.info->handle;
		mrl_track_info(ev.cm.info);
		TRY(mrl_msg_ep_open(p->dom, ev.cm.info, NULL, 0, srx,
				    &p->srv_eq, &p->srv, &p->srv_cq));
		p->srv_side.cq = p->srv_cq;
		p->srv_side.eq = p->srv_eq;
		TRY(fi_accept(p->srv, NULL, 0));
	} else if (ret != -FI_EAGAIN) {
		return (int)ret;
	}
	if (p->srv_eq && !*srv_up) {
		ret = mrl_eq_poll(p->srv_eq, &event, &ev, sizeof(ev));
		if (ret >= 0) {
			if (event != FI_CONNECTED) {
				FAIL("server EQ: unexpected event %s",
				     fi_tostr(&event, FI_TYPE_EQ_EVENT));
				return -FI_EOTHER;
			}
			p->srv_connected_fid = ev.cm.fid;
			*srv_up = true;
		} else if (ret != -FI_EAGAIN) {
			return (int)ret;
		}
	}
	if (!*cli_up) {
		ret = mrl_eq_poll(p->cli_eq, &event, &ev, sizeof(ev));
		if (ret >= 0) {
			if (event != FI_CONNECTED) {
				FAIL("client EQ: unexpected event %s",
				     fi_tostr(&event, FI_TYPE_EQ_EVENT));
				return -FI_EOTHER;
			}
			p->cli_connected_fid = ev.cm.fid;
			*cli_up = true;
		} else if (ret != -FI_EAGAIN) {
			return (int)ret;
		}
	}
	return 0;
}

int mrl_msg_pair_open(struct mrl_domain *d, struct fid_ep *srx,
		      struct mrl_msg_pair *p)
{
	char addr[128];
	size_t addrlen = sizeof(addr);
	bool srv_up = false, cli_up = false;
	struct mrl_wait w;
	int ret;

	memset(p, 0, sizeof(*p));
	p->dom = d;
	TRY(mrl_pep_listen(d, &p->pep_eq, &p->pep, addr, &addrlen));
	TRY(mrl_msg_ep_open(d, d->info, addr, addrlen, NULL, &p->cli_eq,
			    &p->cli, &p->cli_cq));
	p->cli_side.cq = p->cli_cq;
	p->cli_side.eq = p->cli_eq;
	TRY(fi_connect(p->cli, addr, NULL, 0));

	mrl_wait_init(&w);
	do {
		ret = msg_pair_step(p, srx, &srv_up, &cli_up);
		if (ret)
			return ret;
		if (srv_up && cli_up)
			return 0;
	} while (!mrl_wait_over(&w));
	FAIL("connection not established after %lu polls (CONNREQ %s, server "
	     "%s, client %s)", w.spins, p->srv ? "seen" : "missing",
	     srv_up ? "connected" : "waiting", cli_up ? "connected" : "waiting");
	return -FI_ETIMEDOUT;
}
