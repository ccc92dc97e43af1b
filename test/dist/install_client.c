/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A client of the installed extension header only (test/dist/test_install.sh
 * compiles it with -I<install prefix>/include and nothing from the source
 * tree): opens tcp;ofi_rxm, the FI_MRLEASE_OPS_1 table, pins a buffer and
 * prints what the statistics say.
 *
 * Exit status: 0 and "pinned registrations=N entries=N" with the hook on;
 * 3 when fi_open_ops says the hook is off (-FI_ENOSYS); 1 on any error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_mrlease.h>

int
main(void)
{
	struct fi_mrlease_stats pinned, process;
	struct fi_mrlease_ops *ops;
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr *pin;
	static char buffer[1 << 16];
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret || fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL)) {
		fprintf(stderr, "cannot open tcp;ofi_rxm\n");
		return 1;
	}

	ret = fi_open_ops(&domain->fid, FI_MRLEASE_OPS_1, 0, (void **) &ops,
			  NULL);
	if (ret == -FI_ENOSYS) {
		printf("hook off\n");
		ret = 3;
		goto out;
	}
	if (ret || ops->size < sizeof(*ops) ||
	    ops->pin(domain, buffer, sizeof(buffer), &pin) ||
	    ops->query_stats(domain, &pinned, sizeof(pinned)) ||
	    fi_close(&pin->fid) ||
	    ops->query_stats(NULL, &process, sizeof(process))) {
		fprintf(stderr, "extension call failed\n");
		ret = 1;
		goto out;
	}
	printf("pinned registrations=%llu entries=%llu "
	       "process_registrations=%llu\n",
	       (unsigned long long) pinned.registrations,
	       (unsigned long long) pinned.entries,
	       (unsigned long long) process.registrations);
out:
	if (fi_close(&domain->fid) || fi_close(&fabric->fid))
		ret = 1;
	fi_freeinfo(info);
	return ret;
}
