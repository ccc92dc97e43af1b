/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The quick-start demo: two RDM endpoints in one process over loopback
 * tcp;ofi_rxm exchange messages and RMA writes with desc NULL, then print
 * what the mrlease hook reports about its cache. Run with FI_HOOK=mrlease;
 * an argument sets the rounds (default 16).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>

#define MSG_SIZE (256 * 1024)
#define ROUNDS	 16

#define TRY(expr)                                                              \
	do {                                                                   \
		long rc_ = (long) (expr);                                      \
		if (rc_ < 0) {                                                 \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#expr, fi_strerror((int) -rc_));               \
			exit(EXIT_FAILURE);                                    \
		}                                                              \
	} while (0)

struct peer {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t other;
};

static void
open_peer(struct fid_domain *domain, struct fi_info *info, struct peer *peer)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

	TRY(fi_endpoint(domain, info, &peer->ep, NULL));
	TRY(fi_cq_open(domain, &cq_attr, &peer->cq, NULL));
	TRY(fi_av_open(domain, &av_attr, &peer->av, NULL));
	TRY(fi_ep_bind(peer->ep, &peer->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(peer->ep, &peer->av->fid, 0));
	TRY(fi_enable(peer->ep));
}

static void
connect_peers(struct peer *a, struct peer *b)
{
	char name[256];
	size_t len = sizeof(name);

	TRY(fi_getname(&b->ep->fid, name, &len));
	TRY(fi_av_insert(a->av, name, 1, &a->other, 0, NULL));
	len = sizeof(name);
	TRY(fi_getname(&a->ep->fid, name, &len));
	TRY(fi_av_insert(b->av, name, 1, &b->other, 0, NULL));
}

/* Post, progressing both peers while the provider asks to retry. */
#define POST(expr, a, b)                                     \
	do {                                                 \
		ssize_t post_rc_;                            \
		while ((post_rc_ = (expr)) == -FI_EAGAIN) {  \
			(void) fi_cq_read((a)->cq, NULL, 0); \
			(void) fi_cq_read((b)->cq, NULL, 0); \
		}                                            \
		TRY(post_rc_);                               \
	} while (0)

/* Progress both peers until one completion arrives on cq. */
static void
wait_completion(struct peer *waiter, struct peer *other)
{
	struct fi_cq_data_entry entry;
	struct fi_cq_err_entry err;
	ssize_t ret;

	for (;;) {
		ret = fi_cq_read(waiter->cq, &entry, 1);
		if (ret == 1)
			return;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(waiter->cq, &err, 0);
			fprintf(stderr, "completion error: %s\n",
				fi_strerror(err.err));
			exit(EXIT_FAILURE);
		}
		TRY(ret == -FI_EAGAIN ? 0 : ret);
		(void) fi_cq_read(other->cq, NULL, 0);
	}
}

static void
print_stats(struct fid_domain *domain)
{
	struct fi_mrlease_ops *ops;
	struct fi_mrlease_stats stats;
	int ret;

	ret = fi_open_ops(&domain->fid, FI_MRLEASE_OPS_1, 0, (void **) &ops,
			  NULL);
	if (ret) {
		printf("mrlease hook: not active (%s); set FI_HOOK=mrlease\n",
		       fi_strerror(-ret));
		return;
	}
	ret = ops->query_stats(NULL, &stats, sizeof(stats));
	if (ret) {
		printf("mrlease: query_stats: %s\n", fi_strerror(-ret));
		return;
	}
	printf("mrlease hook: active; process-wide lease cache statistics:\n");
	printf("  %-18s %12llu\n", "lookups",
	       (unsigned long long) stats.lookups);
	printf("  %-18s %12llu\n", "hits", (unsigned long long) stats.hits);
	printf("  %-18s %12llu\n", "misses", (unsigned long long) stats.misses);
	printf("  %-18s %12llu\n", "registrations",
	       (unsigned long long) stats.registrations);
	printf("  %-18s %12llu\n", "deregistrations",
	       (unsigned long long) stats.deregistrations);
	printf("  %-18s %12llu\n", "invalidations",
	       (unsigned long long) stats.invalidations);
	printf("  %-18s %12llu\n", "entries",
	       (unsigned long long) stats.entries);
	printf("  %-18s %12llu\n", "leases", (unsigned long long) stats.leases);
	printf("  %-18s %12llu\n", "registered_bytes",
	       (unsigned long long) stats.registered_bytes);
}

int
main(int argc, char **argv)
{
	/* More rounds keep it running, e.g. to watch it with mrlease-stat. */
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : ROUNDS;
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr *target_mr;
	struct peer a = {0}, b = {0};
	char *src, *dst, *target;
	uint64_t key, remote;
	long i;

	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->cq_data_size = 4;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_LOCAL;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	TRY(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info));
	fi_freeinfo(hints);
	printf("provider: %s, domain: %s\n", info->fabric_attr->prov_name,
	       info->domain_attr->name);

	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	open_peer(domain, info, &a);
	open_peer(domain, info, &b);
	connect_peers(&a, &b);

	src = calloc(1, MSG_SIZE);
	dst = calloc(1, MSG_SIZE);
	target = calloc(1, MSG_SIZE);
	if (!src || !dst || !target)
		return EXIT_FAILURE;
	TRY(fi_mr_reg(domain, target, MSG_SIZE, FI_REMOTE_WRITE, 0, 0, 0,
		      &target_mr, NULL));
	if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		TRY(fi_mr_bind(target_mr, &b.ep->fid, 0));
		TRY(fi_mr_enable(target_mr));
	}
	key = fi_mr_key(target_mr);
	remote = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			 (uint64_t) (uintptr_t) target :
			 0;

	for (i = 0; i < rounds; i++) {
		memset(src, 'a' + i, MSG_SIZE);
		POST(fi_recv(b.ep, dst, MSG_SIZE, NULL, b.other, NULL), &a, &b);
		POST(fi_send(a.ep, src, MSG_SIZE, NULL, a.other, NULL), &a, &b);
		wait_completion(&a, &b);
		wait_completion(&b, &a);
		if (memcmp(src, dst, MSG_SIZE)) {
			fprintf(stderr, "round %ld: received data differs\n",
				i);
			return EXIT_FAILURE;
		}
		/* The remote CQ data tells b that the write has landed. */
		POST(fi_writedata(a.ep, src, MSG_SIZE, NULL, i, a.other, remote,
				  key, NULL),
		     &a, &b);
		wait_completion(&a, &b);
		wait_completion(&b, &a);
		if (memcmp(src, target, MSG_SIZE)) {
			fprintf(stderr, "round %ld: written data differs\n", i);
			return EXIT_FAILURE;
		}
	}
	printf("moved %ld x %d KiB by fi_send and %ld x %d KiB by "
	       "fi_writedata, "
	       "data verified\n",
	       rounds, MSG_SIZE / 1024, rounds, MSG_SIZE / 1024);
	print_stats(domain);

	TRY(fi_close(&target_mr->fid));
	TRY(fi_close(&a.ep->fid));
	TRY(fi_close(&b.ep->fid));
	TRY(fi_close(&a.av->fid));
	TRY(fi_close(&b.av->fid));
	TRY(fi_close(&a.cq->fid));
	TRY(fi_close(&b.cq->fid));
	TRY(fi_close(&domain->fid));
	TRY(fi_close(&fabric->fid));
	fi_freeinfo(info);
	free(src);
	free(dst);
	free(target);
	return EXIT_SUCCESS;
}
