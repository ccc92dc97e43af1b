/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An application that makes one descriptor mistake, for
 * test/e2e/mrcheck_client.sh to run under FI_HOOK=mrcheck as a user would: the
 * script reads only what mrcheck prints and the exit status, never
 * mrcheck's test interface.
 *
 *   mrcheck_client PROV MISTAKE
 *
 * MISTAKE is one of
 *   none             registered buffers, every completion read (correct);
 *   null_desc        a send with a NULL desc on a domain opened with
 *                    FI_MR_LOCAL in mr_mode (no loopback provider requires
 *                    it, so the client opens its domain so, as it would on
 *                    verbs: the domain's mr_mode is what mrcheck decides by);
 *   null_desc_legal  the same send on a domain without FI_MR_LOCAL (legal);
 *   closed_desc      a send with the desc of an MR already closed;
 *   outside_mr       a send of bytes past the end of the desc's MR;
 *   close_in_flight  an MR closed while a receive into it is posted (the
 *                    receive is cancelled and reaped afterwards).
 * The client carries on after its mistake and closes everything: its own
 * exit status is 0, 77 when PROV is not available here, 1 when a libfabric
 * call it needs fails.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "common/fixture_rdm.h"

#define LEN 4096

#define TRY(expr)                                                          \
	do {                                                               \
		ssize_t try_r_ = (expr);                                   \
		if (try_r_) {                                              \
			fprintf(stderr, "mrcheck_client: %s: %s\n", #expr, \
				fi_strerror((int) -try_r_));               \
			exit(1);                                           \
		}                                                          \
	} while (0)

static char src[LEN], dst[LEN];

/*
 * A send of [buf, +len) with desc, into a registered receive. mrcheck
 * refuses a mistaken one (-FI_EINVAL): then the receive is cancelled. Either
 * way every completion is read.
 */
static void
send_with(struct mrlt_pair *pair, const char *what, void *buf, size_t len,
	  void *desc)
{
	struct fi_context2 sctx, rctx;
	struct mrlt_comp comp[2];
	struct fid_mr *dmr;
	ssize_t ret;

	TRY(mrlt_pair_mr_reg(pair, dst, LEN, FI_RECV, &dmr));
	TRY(fi_recv(pair->ep[1], dst, LEN, fi_mr_desc(dmr), pair->addr[0],
		    &rctx));
	ret = MRLT_PAIR_POST(pair, fi_send(pair->ep[0], buf, len, desc,
					   pair->addr[1], &sctx));
	printf("mrcheck_client: %s returned %zd (%s)\n", what, ret,
	       ret ? fi_strerror((int) -ret) : "success");
	if (ret)
		TRY(fi_cancel(&pair->ep[1]->fid, &rctx));
	if (mrlt_reap(pair, comp, ret ? 1 : 2) != (ret ? 1 : 2)) {
		fprintf(stderr, "mrcheck_client: %s: completions missing\n",
			what);
		exit(1);
	}
	TRY(fi_close(&dmr->fid));
}

/* A send and its receive, both registered, both completions read. */
static void
exchange(struct mrlt_pair *pair)
{
	struct fid_mr *smr, *dmr;
	struct fi_context2 sctx, rctx;
	struct mrlt_comp comp[2];

	memset(src, 7, LEN);
	memset(dst, 0, LEN);
	TRY(mrlt_pair_mr_reg(pair, src, LEN, FI_SEND, &smr));
	TRY(mrlt_pair_mr_reg(pair, dst, LEN, FI_RECV, &dmr));
	TRY(fi_recv(pair->ep[1], dst, LEN, fi_mr_desc(dmr), pair->addr[0],
		    &rctx));
	TRY(MRLT_PAIR_POST(pair, fi_send(pair->ep[0], src, LEN, fi_mr_desc(smr),
					 pair->addr[1], &sctx)));
	if (mrlt_reap(pair, comp, 2) != 2 || comp[0].err || comp[1].err ||
	    memcmp(src, dst, LEN)) {
		fprintf(stderr, "mrcheck_client: the exchange failed\n");
		exit(1);
	}
	TRY(fi_close(&smr->fid));
	TRY(fi_close(&dmr->fid));
}

static void
close_in_flight(struct mrlt_pair *pair)
{
	struct fid_mr *dmr;
	struct fi_context2 rctx;
	struct mrlt_comp comp;

	TRY(mrlt_pair_mr_reg(pair, dst, LEN, FI_RECV, &dmr));
	TRY(fi_recv(pair->ep[1], dst, LEN, fi_mr_desc(dmr), pair->addr[0],
		    &rctx));
	TRY(fi_close(&dmr->fid));
	printf("mrcheck_client: closed the MR of a posted receive\n");
	TRY(fi_cancel(&pair->ep[1]->fid, &rctx));
	if (mrlt_reap(pair, &comp, 1) != 1 || comp.ctx != &rctx) {
		fprintf(stderr, "mrcheck_client: no cancelled receive\n");
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	struct mrlt_pair_opts opts = {0};
	struct mrlt_pair pair;
	const char *mistake;
	struct fid_mr *mr;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PROV MISTAKE\n", argv[0]);
		return 1;
	}
	opts.prov = argv[1];
	mistake = argv[2];
	opts.mr_local = !strcmp(mistake, "null_desc");
	ret = mrlt_pair_open(&opts, &pair);
	if (ret == -FI_ENODATA)
		return 77;
	TRY(ret);

	exchange(&pair);
	if (!strcmp(mistake, "null_desc") ||
	    !strcmp(mistake, "null_desc_legal")) {
		send_with(&pair, "fi_send with a NULL desc", src, 64, NULL);
	} else if (!strcmp(mistake, "closed_desc")) {
		void *stale;

		TRY(mrlt_pair_mr_reg(&pair, src, LEN, FI_SEND, &mr));
		stale = fi_mr_desc(mr);
		TRY(fi_close(&mr->fid));
		send_with(&pair, "fi_send with a closed MR's desc", src, 64,
			  stale);
	} else if (!strcmp(mistake, "outside_mr")) {
		TRY(mrlt_pair_mr_reg(&pair, src, LEN / 2, FI_SEND, &mr));
		send_with(&pair, "fi_send past its MR's end", src, LEN / 2 + 64,
			  fi_mr_desc(mr));
		TRY(fi_close(&mr->fid));
	} else if (!strcmp(mistake, "close_in_flight")) {
		close_in_flight(&pair);
	} else if (strcmp(mistake, "none")) {
		fprintf(stderr, "mrcheck_client: unknown mistake %s\n",
			mistake);
		return 1;
	}
	TRY(mrlt_pair_close(&pair));
	return 0;
}
