/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/providers/fi_prov.h>

#include "xfer_util.h"

const char *const xfer_providers[] = {"tcp;ofi_rxm", "udp;ofi_rxd", "shm",
				      "sockets", NULL};

static bool
xfer_env_is(const char *name, const char *value)
{
	const char *cur = getenv(name);

	if (!value)
		return !cur || !*cur;
	return cur && !strcmp(cur, value);
}

static void
xfer_builddir(char *buf, size_t len)
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

void
xfer_reexec(char **argv, const char *hook, const char *const *extra_env)
{
	char builddir[PATH_MAX], path[2 * PATH_MAX + 64];
	const char *hook_path = getenv("MRL_TEST_HOOK_PATH");
	bool same = xfer_env_is("FI_HOOK", hook) && getenv("XFER_REEXEC");
	const char *const *kv;

	for (kv = extra_env; same && kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		char name[128];

		snprintf(name, sizeof(name), "%.*s", (int) (eq - *kv), *kv);
		same = xfer_env_is(name, eq + 1);
	}
	if (same)
		return;

	xfer_builddir(builddir, sizeof(builddir));
	snprintf(path, sizeof(path), "%s/prov/mrlease/.libs:%s", builddir,
		 hook_path ? hook_path : "");
	if (!hook_path)
		snprintf(path, sizeof(path),
			 "%s/prov/mrlease/.libs:%s/prov/mrcheck/.libs", builddir,
			 builddir);
	setenv("FI_PROVIDER_PATH", path, 1);
	if (hook)
		setenv("FI_HOOK", hook, 1);
	else
		unsetenv("FI_HOOK");
	for (kv = extra_env; kv && *kv; kv++)
		putenv((char *) *kv);
	/* The suite's mrcheck plays a provider that requires FI_MR_LOCAL, so
	 * a NULL desc mrlease let through is reported (unless a test says
	 * otherwise). */
	if (hook && strstr(hook, "mrcheck"))
		setenv("FI_MRCHECK_MR_LOCAL", "1", 0);
	setenv("XFER_REEXEC", "1", 1);
	fflush(NULL);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "execv(/proc/self/exe): %s\n", strerror(errno));
	exit(EXIT_FAILURE);
}

static int
find_plugin(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name, *slash;

	(void) size;
	slash = name ? strrchr(name, '/') : NULL;
	if (slash && !strcmp(slash + 1, "libmrlease-fi.so")) {
		snprintf(arg, PATH_MAX, "%s", name);
		return 1;
	}
	return 0;
}

struct fi_provider *
xfer_plugin_provider(void)
{
	struct fi_provider *(*ini)(void);
	char path[PATH_MAX] = "";
	void *h;

	if (!dl_iterate_phdr(find_plugin, path))
		return NULL;
	h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return NULL;
	ini = (struct fi_provider * (*) (void) ) dlsym(h, "fi_prov_ini");
	dlclose(h);
	return ini ? ini() : NULL;
}

void *
xfer_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int
xfer_round_trip(struct mrlt_pair *p, char *src, char *dst, size_t len,
		uint64_t seed, uint64_t n)
{
	struct fi_context2 rctx, sctx;
	struct mrlt_comp comps[2];
	int ret;

	mrlt_fill(src, len, seed);
	memset(dst, 0, len);
	ret = (int) MRLT_PAIR_POST(
		p, fi_recv(p->ep[1], dst, len, NULL, FI_ADDR_UNSPEC, &rctx));
	if (ret)
		return ret;
	ret = (int) MRLT_PAIR_POST(
		p, fi_send(p->ep[0], src, len, NULL, p->addr[1], &sctx));
	if (ret)
		return ret;
	if (p->cq) {
		ret = mrlt_reap(p, comps, 2);
		if (ret < 0)
			return ret;
		for (int i = 0; i < 2; i++)
			if (comps[i].err)
				return -comps[i].err;
	} else {
		ret = mrlt_wait_cntr(p->rx_cntr, n);
		if (!ret)
			ret = mrlt_wait_cntr(p->tx_cntr, n);
		if (ret)
			return ret;
	}
	return mrlt_verify(dst, len, seed) == -1 ? 0 : XFER_WRONG_BYTES;
}

const char *
xfer_round_error(int ret)
{
	return ret == XFER_WRONG_BYTES ? "wrong bytes" : fi_strerror(-ret);
}
