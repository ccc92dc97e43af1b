/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "xfer_util.h"

const char *const xfer_providers[] = {
	"tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets", NULL
};

static int xfer_getinfo(const struct xfer_opts *opts, struct fi_info **info)
{
	struct fi_info *hints;
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = opts->caps ? opts->caps
				 : FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	if (opts->rx_op_flags & FI_MULTI_RECV)
		hints->caps |= FI_MULTI_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = opts->thread_safe ? FI_THREAD_SAFE
							  : FI_THREAD_DOMAIN;
	hints->tx_attr->op_flags = 0;
	hints->rx_attr->op_flags = opts->rx_op_flags;
	hints->fabric_attr->prov_name = strdup(opts->prov);
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return -FI_ENOMEM;
	}
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return ret;
}

static int xfer_bind_ep(const struct xfer_opts *opts, struct xfer_pair *pair,
			struct fid_ep *ep)
{
	int ret;

	ret = fi_ep_bind(ep, &pair->av->fid, 0);
	if (ret)
		return ret;
	if (opts->counters_only) {
		ret = fi_ep_bind(ep, &pair->tx_cntr->fid,
				 FI_SEND | FI_WRITE | FI_READ);
		if (ret)
			return ret;
		return fi_ep_bind(ep, &pair->rx_cntr->fid, FI_RECV);
	}
	return fi_ep_bind(ep, &pair->cq->fid,
			  FI_TRANSMIT | FI_RECV |
				  (opts->selective ? FI_SELECTIVE_COMPLETION : 0));
}

/* mrcheck's process-wide counters straight from the loaded plugin, for
 * stacks where the layer above does not forward MRCHECK_OPS_1. */
static struct mrcheck_ops *xfer_mrcheck_global(void)
{
	const char *env = getenv("FI_PROVIDER_PATH");
	char dirs[4096], path[4200], *dir, *save = NULL;
	struct mrcheck_ops *(*get)(void);
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
	*(void **)&get = dlsym(handle, "mrcheck_global_ops");
	/* libfabric keeps its own reference: the plugin stays loaded. */
	dlclose(handle);
	return get ? get() : NULL;
}

static void xfer_open_ext(struct xfer_pair *pair)
{
	/* Both are optional: absent means the hook is not stacked. */
	if (fi_open_ops(&pair->domain->fid, FI_MRLEASE_OPS_1, 0,
			(void **)&pair->mrl, NULL))
		pair->mrl = NULL;
	if (fi_open_ops(&pair->domain->fid, MRCHECK_OPS_1, 0,
			(void **)&pair->chk, NULL))
		pair->chk = NULL;
	if (fi_open_ops(&pair->fabric->fid, MRCHECK_OPS_1, 0,
			(void **)&pair->chk_all, NULL))
		pair->chk_all = xfer_mrcheck_global();
}

int xfer_pair_open(const struct xfer_opts *opts, struct xfer_pair *pair)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .size = 1024, .wait_obj = opts->cq_wait };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	char name[2][256];
	size_t len;
	int ret, i;

	memset(pair, 0, sizeof(*pair));
	pair->next_key = 0x5000;
	pair->stash = calloc(XFER_STASH, sizeof(*pair->stash));
	if (!pair->stash)
		return -FI_ENOMEM;
	ret = xfer_getinfo(opts, &pair->info);
	if (ret)
		return ret == -FI_ENODATA ? -FI_ENODATA : ret;
	if (opts->mr_local)
		pair->info->domain_attr->mr_mode |= FI_MR_LOCAL;
	ret = fi_fabric(pair->info->fabric_attr, &pair->fabric, NULL);
	if (ret)
		goto err;
	ret = fi_domain(pair->fabric, pair->info, &pair->domain, NULL);
	if (ret)
		goto err;
	xfer_open_ext(pair);
	if (pair->chk_all || pair->chk) {
		struct mrcheck_ops *chk = pair->chk_all ? pair->chk_all : pair->chk;
		struct mrcheck_stats st;

		if (!chk->query(chk, &st, sizeof(st))) {
			pair->violations0 = st.violations;
			pair->acknowledged0 = st.acknowledged;
		}
	}
	ret = fi_av_open(pair->domain, &av_attr, &pair->av, NULL);
	if (ret)
		goto err;
	if (opts->counters_only) {
		ret = fi_cntr_open(pair->domain, &cntr_attr, &pair->tx_cntr, NULL);
		if (ret)
			goto err;
		ret = fi_cntr_open(pair->domain, &cntr_attr, &pair->rx_cntr, NULL);
	} else {
		ret = fi_cq_open(pair->domain, &cq_attr, &pair->cq, NULL);
	}
	if (ret)
		goto err;
	for (i = 0; i < 2; i++) {
		ret = fi_endpoint(pair->domain, pair->info, &pair->ep[i], NULL);
		if (ret)
			goto err;
		ret = xfer_bind_ep(opts, pair, pair->ep[i]);
		if (ret)
			goto err;
		ret = fi_enable(pair->ep[i]);
		if (ret)
			goto err;
		if (opts->min_multi_recv) {
			ret = fi_setopt(&pair->ep[i]->fid, FI_OPT_ENDPOINT,
					FI_OPT_MIN_MULTI_RECV,
					&opts->min_multi_recv,
					sizeof(opts->min_multi_recv));
			if (ret)
				goto err;
		}
		len = sizeof(name[i]);
		ret = fi_getname(&pair->ep[i]->fid, name[i], &len);
		if (ret)
			goto err;
	}
	for (i = 0; i < 2; i++) {
		ret = fi_av_insert(pair->av, name[i], 1, &pair->addr[i], 0, NULL);
		if (ret != 1) {
			ret = ret < 0 ? ret : -FI_EOTHER;
			goto err;
		}
	}
	return 0;
err:
	fprintf(stderr, "# xfer_pair_open(%s): %s\n", opts->prov,
		fi_strerror(-ret));
	xfer_pair_close(pair);
	return ret;
}

static int xfer_close_fid(struct fid *fid, int first)
{
	int ret;

	if (!fid)
		return first;
	ret = fi_close(fid);
	if (ret)
		fprintf(stderr, "# fi_close(class %zu) = %d (%s)\n", fid->fclass,
			ret, fi_strerror(-ret));
	return first ? first : ret;
}

int xfer_pair_close(struct xfer_pair *pair)
{
	int ret = 0, i;

	for (i = 0; i < 2; i++)
		ret = xfer_close_fid(pair->ep[i] ? &pair->ep[i]->fid : NULL, ret);
	ret = xfer_close_fid(pair->cq ? &pair->cq->fid : NULL, ret);
	ret = xfer_close_fid(pair->tx_cntr ? &pair->tx_cntr->fid : NULL, ret);
	ret = xfer_close_fid(pair->rx_cntr ? &pair->rx_cntr->fid : NULL, ret);
	ret = xfer_close_fid(pair->av ? &pair->av->fid : NULL, ret);
	ret = xfer_close_fid(pair->domain ? &pair->domain->fid : NULL, ret);
	ret = xfer_close_fid(pair->fabric ? &pair->fabric->fid : NULL, ret);
	if (pair->info)
		fi_freeinfo(pair->info);
	free(pair->stash);
	memset(pair, 0, sizeof(*pair));
	return ret;
}

static int xfer_read_err(struct xfer_pair *pair, struct xfer_comp *comp)
{
	struct fi_cq_err_entry err = { 0 };
	int ret;

	ret = (int)fi_cq_readerr(pair->cq, &err, 0);
	if (ret < 0)
		return ret;
	comp->ctx = err.op_context;
	comp->flags = err.flags;
	comp->len = err.len;
	comp->buf = err.buf;
	comp->data = err.data;
	comp->tag = err.tag;
	comp->err = err.err ? err.err : FI_EOTHER;
	return 1;
}

static int xfer_read_cq(struct xfer_pair *pair, struct xfer_comp *comps, size_t n)
{
	struct fi_cq_tagged_entry entries[16];
	ssize_t ret;
	size_t i;

	if (n > 16)
		n = 16;
	ret = fi_cq_read(pair->cq, entries, n);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL)
		return xfer_read_err(pair, comps);
	if (ret < 0)
		return (int)ret;
	for (i = 0; i < (size_t)ret; i++) {
		comps[i] = (struct xfer_comp){
			.ctx = entries[i].op_context,
			.flags = entries[i].flags,
			.len = entries[i].len,
			.buf = entries[i].buf,
			.data = entries[i].data,
			.tag = entries[i].tag,
		};
	}
	return (int)ret;
}

int xfer_reap_some(struct xfer_pair *pair, struct xfer_comp *comps, size_t n)
{
	size_t i;

	if (pair->nstash) {
		if (n > pair->nstash)
			n = pair->nstash;
		memcpy(comps, pair->stash, n * sizeof(*comps));
		pair->nstash -= n;
		for (i = 0; i < pair->nstash; i++)
			pair->stash[i] = pair->stash[i + n];
		return (int)n;
	}
	return xfer_read_cq(pair, comps, n);
}

void xfer_progress(struct xfer_pair *pair)
{
	int ret;

	if (!pair->cq) {
		(void)fi_cntr_read(pair->tx_cntr);
		(void)fi_cntr_read(pair->rx_cntr);
		return;
	}
	if (pair->nstash == XFER_STASH) {
		/* Full: progress without taking entries. */
		(void)fi_cq_read(pair->cq, NULL, 0);
		return;
	}
	ret = xfer_read_cq(pair, pair->stash + pair->nstash,
			   XFER_STASH - pair->nstash);
	if (ret > 0)
		pair->nstash += (size_t)ret;
	else if (ret < 0 && ret != -FI_EAGAIN)
		fprintf(stderr, "# xfer_progress: %s\n", fi_strerror(-ret));
}

int xfer_reap(struct xfer_pair *pair, struct xfer_comp *comps, size_t n)
{
	return xfer_reap_within(pair, comps, n, XFER_MAX_POLLS);
}

int xfer_reap_within(struct xfer_pair *pair, struct xfer_comp *comps, size_t n,
		     long max_polls)
{
	size_t got = 0;
	long polls = 0;
	int ret;

	while (got < n) {
		ret = xfer_reap_some(pair, comps + got, n - got);
		if (ret < 0)
			return ret;
		got += (size_t)ret;
		if (ret == 0 && ++polls > max_polls)
			return -FI_ETIMEDOUT;
		if (ret == 0 && (polls & 1023) == 0)
			sched_yield();
	}
	return (int)n;
}

int xfer_wait_cntr(struct fid_cntr *cntr, uint64_t value)
{
	long polls;

	for (polls = 0; polls < XFER_MAX_POLLS; polls++) {
		if (fi_cntr_read(cntr) >= value)
			return 0;
		if (fi_cntr_readerr(cntr) > 0)
			return -FI_EIO;
		if ((polls & 1023) == 1023)
			sched_yield();
	}
	return -FI_ETIMEDOUT;
}

int xfer_mr_reg(struct xfer_pair *pair, void *buf, size_t len, uint64_t access,
		struct fid_mr **mr)
{
	uint64_t mode = pair->info->domain_attr->mr_mode;
	uint64_t key = (mode & FI_MR_PROV_KEY) ? 0 : pair->next_key++;
	int ret;

	ret = fi_mr_reg(pair->domain, buf, len, access, 0, key, 0, mr, NULL);
	if (ret)
		return ret;
	if (!(mode & FI_MR_ENDPOINT) || !(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return 0;
	/* A remote-access MR on an FI_MR_ENDPOINT domain serves the target ep. */
	ret = fi_mr_bind(*mr, &pair->ep[1]->fid, 0);
	if (!ret)
		ret = fi_mr_enable(*mr);
	if (ret) {
		fi_close(&(*mr)->fid);
		*mr = NULL;
	}
	return ret;
}

uint64_t xfer_rma_addr(const struct xfer_pair *pair, const void *mr_base,
		       const void *buf)
{
	if (pair->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uint64_t)(uintptr_t)buf;
	return (uint64_t)((const char *)buf - (const char *)mr_base);
}

long long xfer_live_leases(const struct xfer_pair *pair)
{
	struct fi_mrlease_stats stats;

	if (!pair->mrl ||
	    pair->mrl->query_stats(pair->domain, &stats, sizeof(stats)))
		return -1;
	return (long long)stats.leases;
}

long long xfer_violations(const struct xfer_pair *pair)
{
	struct mrcheck_ops *chk = pair->chk_all ? pair->chk_all : pair->chk;
	struct mrcheck_stats stats;

	if (!chk || chk->query(chk, &stats, sizeof(stats)))
		return -1;
	return (long long)((stats.violations - pair->violations0) -
			   (stats.acknowledged - pair->acknowledged0));
}

static bool xfer_env_is(const char *name, const char *value)
{
	const char *cur = getenv(name);

	if (!value)
		return !cur || !*cur;
	return cur && !strcmp(cur, value);
}

static void xfer_builddir(char *buf, size_t len)
{
	const char *top = getenv("MRL_TOP_BUILDDIR");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (top) {
		snprintf(buf, len, "%s", top);
		return;
	}
	/* Run by hand: <builddir>/test/prog or <builddir>/bench/prog. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(exe, '/');
	if (slash && !strcmp(slash, "/.libs")) {
		*slash = '\0';
		slash = strrchr(exe, '/');
	}
	if (slash)
		*slash = '\0';
	snprintf(buf, len, "%s", exe);
}

void xfer_reexec(char **argv, const char *hook, const char *const *extra_env)
{
	char builddir[PATH_MAX], path[2 * PATH_MAX + 64];
	const char *hook_path = getenv("MRL_TEST_HOOK_PATH");
	bool same = xfer_env_is("FI_HOOK", hook) && getenv("XFER_REEXEC");
	const char *const *kv;

	for (kv = extra_env; same && kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		char name[128];

		snprintf(name, sizeof(name), "%.*s", (int)(eq - *kv), *kv);
		same = xfer_env_is(name, eq + 1);
	}
	if (same)
		return;

	xfer_builddir(builddir, sizeof(builddir));
	snprintf(path, sizeof(path), "%s/prov/mrlease/.libs:%s", builddir,
		 hook_path ? hook_path : "");
	if (!hook_path)
		snprintf(path, sizeof(path), "%s/prov/mrlease/.libs:%s/test/.libs",
			 builddir, builddir);
	setenv("FI_PROVIDER_PATH", path, 1);
	if (hook)
		setenv("FI_HOOK", hook, 1);
	else
		unsetenv("FI_HOOK");
	for (kv = extra_env; kv && *kv; kv++)
		putenv((char *)*kv);
	setenv("XFER_REEXEC", "1", 1);
	fflush(NULL);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "execv(/proc/self/exe): %s\n", strerror(errno));
	exit(EXIT_FAILURE);
}

long xfer_wait_pattern(struct xfer_pair *pair, const void *buf, size_t len,
		       uint64_t seed)
{
	long at = xfer_verify(buf, len, seed);

	for (long i = 0; at >= 0 && i < XFER_MAX_POLLS / 100; i++) {
		xfer_progress(pair);
		at = xfer_verify(buf, len, seed);
	}
	return at;
}

void xfer_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = xfer_pattern(seed, i);
}

long xfer_verify(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != xfer_pattern(seed, i))
			return (long)i;
	return -1;
}
