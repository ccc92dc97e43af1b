/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the subjects share: optional features (skip only what the provider
 * lacks without the hook), opening domains and pairs, waiting for data.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "passthrough.h"

/* ------------------------------------------------------------------------
 * Optional features: skip only what the provider lacks without the hook.
 */

bool
pt_baseline_rc(const char *name, int *rc)
{
	size_t n = strlen(name);
	const char *p = pt_baseline;

	while (p && *p) {
		if (!strncmp(p, name, n) && p[n] == '=') {
			*rc = atoi(p + n + 1);
			return true;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/*
 * Whether the test can use an optional feature. `rc` is what probing it
 * returned (0: offered); `lacking` says in words what the provider does
 * instead. Each result is printed as "# probe FEATURE RC" for
 * test/hook/passthrough.sh. Returns true to go on; otherwise marks the running
 * test skipped (the provider lacks the feature without the hook too) or
 * failed (only the hooked call fails).
 */
bool
pt_feature(const char *name, int rc, const char *lacking)
{
	int base;

	printf("# probe %s %d\n", name, rc);
	if (rc == 0)
		return true;
	if (pt_baseline_rc(name, &base)) {
		if (base == 0) {
			mrlt_fail(__FILE__, __LINE__,
				  "%s: %s under FI_HOOK, "
				  "but not without the hook",
				  pt_prov, lacking);
			return false;
		}
		mrlt_skip_current("%s: %s, without the hook too", pt_prov,
				  lacking);
		return false;
	}
	if (rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP || !pt_expect_hook) {
		mrlt_skip_current("%s: %s", pt_prov, lacking);
		return false;
	}
	mrlt_fail(__FILE__, __LINE__, "%s: %s", pt_prov, lacking);
	return false;
}

/* pt_feature() for a call: `lacking` is "CALL returns ERROR". */
bool
pt_offered(const char *name, const char *call, int rc)
{
	char lacking[256];

	snprintf(lacking, sizeof(lacking), "%s returns %s", call,
		 fi_strerror(-rc));
	return pt_feature(name, rc, lacking);
}

/* ------------------------------------------------------------------------
 * Set-up.
 */

/*
 * Open fabric+domain for pt_prov with the test's base caps plus `extra`.
 * Returns false with the test skipped when getinfo offers no such info.
 */
bool
pt_open_domain(enum fi_ep_type type, uint64_t extra, struct mrlt_domain *d)
{
	uint64_t base = type == FI_EP_MSG ? FI_MSG | FI_RMA :
					    FI_MSG | FI_TAGGED | FI_RMA;
	struct fi_info *hints = mrlt_hints(pt_prov, type, base | extra);
	struct fi_info *info;
	int ret;

	hints->domain_attr->cq_data_size = 4;
	ret = mrlt_getinfo(hints, NULL, NULL, 0, &info);
	if (ret == -FI_ENODATA && !extra) {
		mrlt_fail(__FILE__, __LINE__,
			  "fi_getinfo offers no %s %s "
			  "info",
			  pt_prov, fi_tostr(&type, FI_TYPE_EP_TYPE));
		return false;
	}
	if (ret == -FI_ENODATA) {
		mrlt_skip_current("fi_getinfo offers no %s info with caps %s",
				  pt_prov, fi_tostr(&extra, FI_TYPE_CAPS));
		return false;
	}
	if (ret)
		return false;
	return mrlt_domain_open(info, d) == 0;
}

bool
pt_open_pair(uint64_t extra, const struct mrlt_peer_opts *opts,
	     struct mrlt_domain *d, struct mrlt_peer *a, struct mrlt_peer *b)
{
	return pt_open_domain(FI_EP_RDM, extra, d) &&
	       mrlt_rdm_pair_open(d, opts, a, b) == 0;
}

/* Wait (bounded) until dst holds len bytes of src: the way to see that a
 * remote write has landed whatever completion semantic the provider uses. */
int
pt_wait_bytes(const void *dst, const void *src, size_t len, struct mrlt_peer *a,
	      struct mrlt_peer *b, const char *what)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	do {
		if (!memcmp(dst, src, len))
			return 0;
		mrlt_progress(a);
		mrlt_progress(b);
	} while (!mrlt_wait_over(&w));
	mrlt_fail(__FILE__, __LINE__,
		  "%s: target data differs after %lu "
		  "polls",
		  what, w.spins);
	return -FI_ETIMEDOUT;
}

struct mrl_debug_ops *
pt_debug_ops(struct fid *fid, int *ret)
{
	struct mrl_debug_ops *ops = NULL;

	*ret = fi_open_ops(fid, MRL_DEBUG_OPS_1, 0, (void **) &ops, NULL);
	return *ret ? NULL : ops;
}

/* ------------------------------------------------------------------------
 * Controls with the other hooks of FI_HOOK alone.
 */

/* FI_HOOK without mrlease ("noop;mrlease" -> "noop") into buf; false when
 * nothing else is left. */
static bool
other_hooks(char *buf, size_t len)
{
	const char *hooks = getenv("FI_HOOK");
	char *copy, *tok, *save = NULL;
	size_t n = 0;

	buf[0] = '\0';
	if (!hooks)
		return false;
	copy = strdup(hooks);
	for (tok = strtok_r(copy, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		if (strcmp(tok, "mrlease") && n < len)
			n += (size_t) snprintf(buf + n, len - n, "%s%s",
					       n ? ";" : "", tok);
	free(copy);
	return n > 0 && n < len;
}

int
pt_control(const char *what, char *hooks, size_t len)
{
	char group[64];
	char *args[] = {"test_hook_passthrough", (char *) pt_prov, group, NULL};
	int status;
	pid_t pid;

	if (!other_hooks(hooks, len))
		return PT_CONTROL_NONE;
	snprintf(group, sizeof(group), "control-%s", what);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setenv("FI_HOOK", hooks, 1);
		setenv("MRL_PT_EXPECT_HOOK", "0", 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("# control %s: %s\n", what, strerror(errno));
		return PT_CONTROL_NONE;
	}
	/* A control that crashed left its shm regions behind. */
	mrlt_shm_sweep(pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 127) {
		printf("# control %s with FI_HOOK=%s: wait status %d\n", what,
		       hooks, status);
		return PT_CONTROL_NONE;
	}
	return -WEXITSTATUS(status);
}

int
pt_control_run(const char *what)
{
	struct mrlt_domain d;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	struct fid_eq *eq;
	int ret;

	if (strcmp(what, "eq_open"))
		return 127;
	ret = pt_open_domain(FI_EP_RDM, 0, &d) ? 0 : -FI_ENODATA;
	if (!ret)
		ret = fi_eq_open(d.fabric, &eq_attr, &eq, NULL);
	if (!ret)
		mrlt_track_fid(&eq->fid);
	mrlt_close_all();
	return ret < 0 && ret > -127 ? -ret : ret ? 126 : 0;
}
