/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * xfer_util for TAP test programs (the benchmark links xfer_util.c without
 * the TAP library): opening a pair as one test case.
 */
#include "config.h"

#include <rdma/fi_errno.h>

#include "mrl_test.h"
#include "xfer_util.h"

bool xfer_pair_open_hooked(const struct xfer_opts *opts, struct xfer_pair *pair)
{
	int ret = xfer_pair_open(opts, pair);

	if (ret == -FI_ENODATA || ret == -FI_ENOCQ || ret == -FI_ENOSYS ||
	    ret == -FI_EOPNOTSUPP) {
		mrl_test_skip_current("%s cannot: %s", opts->prov, fi_strerror(-ret));
		return false;
	}
	if (ret) {
		mrl_test_fail(__FILE__, __LINE__, "xfer_pair_open: %s",
			      fi_strerror(-ret));
		return false;
	}
	if (!pair->mrl) {
		mrl_test_fail(__FILE__, __LINE__, "mrlease hook not active");
		xfer_pair_close(pair);
		return false;
	}
	return true;
}

bool xfer_pair_open_hooked_safe(const struct xfer_opts *opts, struct xfer_pair *pair)
{
	if (!xfer_pair_open_hooked(opts, pair))
		return false;
	if (pair->info->domain_attr->threading != FI_THREAD_SAFE) {
		mrl_test_skip_current("%s: threading %d, not FI_THREAD_SAFE", opts->prov,
				      (int)pair->info->domain_attr->threading);
		xfer_pair_close(pair);
		return false;
	}
	return true;
}
