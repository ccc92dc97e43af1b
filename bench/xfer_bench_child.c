/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * xfer_bench's child: one mode's endpoint pair, its writes (or sends) and
 * timed slices, run once or commanded slice by slice (--serve).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "../test/common/xfer_util.h"
#include "xfer_bench.h"

/* Timed slices per size of a single run (the fastest slice's rate). */
#define BLOCKS 5

/* 30000 writes below 16 KiB (rates within 1% run to run when pinned), 1 GiB
 * of data from 16 KiB up (their runs move by several percent: memory
 * bandwidth is the host's). */
long
default_iters(size_t size)
{
	long n = (long) ((1UL << 30) / size);

	if (size < 16384 && n > 30000)
		n = 30000;
	return n < 4000 ? 4000 : n;
}

struct slot {
	struct fi_context2 ctx;
	struct fi_context2 rctx; /* --op send: the receive's */
	struct fid_mr *mr; /* mode 3: this write's registration */
	int pending; /* completions still to come (2 for a send) */
};

struct run {
	struct mrlt_pair *pair;
	int mode;
	bool send;
	struct fid_mr *rdst_mr; /* --op send, modes 1 and 4: receive buffer */
	char *src, *dst;
	struct fid_mr *src_mr, *dst_mr;
	uint64_t regs; /* registrations made by the application */
	long polls; /* fi_cq_read calls in the timed loops */
	long all_polls, all_ops; /* over the whole child, for callgrind */
	struct slot slots[MAX_WINDOW];
	int free_slots[MAX_WINDOW], nfree;
};

/* Post with expr, retrying on -FI_EAGAIN after a zero-count CQ read that
 * drives progress without consuming completions (reap() reads those). */
#define RETRY_POST(r, expr)                                        \
	({                                                         \
		ssize_t retry_r_;                                  \
		while ((retry_r_ = (expr)) == -FI_EAGAIN)          \
			(void) fi_cq_read((r)->pair->cq, NULL, 0); \
		retry_r_;                                          \
	})

static int
post_write(struct run *r, size_t size)
{
	struct slot *s = &r->slots[r->free_slots[--r->nfree]];
	void *desc = NULL;
	ssize_t ret;

	if (r->mode == MODE_PEROP) {
		ret = fi_mr_reg(r->pair->domain, r->src, size,
				r->send ? FI_SEND : FI_WRITE, 0,
				0x10000 + (uint64_t) (s - r->slots), 0, &s->mr,
				NULL);
		if (ret)
			return (int) ret;
		r->regs++;
		desc = fi_mr_desc(s->mr);
	} else if (!mode_leases(r->mode)) {
		desc = fi_mr_desc(r->src_mr);
	}
	s->pending = 1;
	if (r->send) {
		void *rdesc = r->rdst_mr ? fi_mr_desc(r->rdst_mr) : NULL;

		ret = RETRY_POST(r, fi_recv(r->pair->ep[1], r->dst, size, rdesc,
					    FI_ADDR_UNSPEC, &s->rctx));
		if (ret) {
			r->free_slots[r->nfree++] = (int) (s - r->slots);
			return (int) ret;
		}
		s->pending = 2;
	}
	ret = r->send ?
		      RETRY_POST(r, fi_send(r->pair->ep[0], r->src, size, desc,
					    r->pair->addr[1], &s->ctx)) :
		      RETRY_POST(r, fi_write(r->pair->ep[0], r->src, size, desc,
					     r->pair->addr[1],
					     mrlt_pair_rma_addr(r->pair, r->dst,
								r->dst),
					     fi_mr_key(r->dst_mr), &s->ctx));
	if (ret) {
		r->free_slots[r->nfree++] = (int) (s - r->slots);
		return (int) ret;
	}
	r->all_ops++;
	return 0;
}

/* Read completions until at most `keep` writes are outstanding. */
static int
reap(struct run *r, int window, int keep)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n;

	while (window - r->nfree > keep) {
		n = fi_cq_read(r->pair->cq, e, 16);
		r->polls++;
		r->all_polls++;
		if (n == -FI_EAGAIN)
			continue;
		if (n < 0) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(r->pair->cq, &err, 0);
			fprintf(stderr, "write failed: %s\n",
				fi_strerror(err.err));
			return -FI_EIO;
		}
		for (ssize_t i = 0; i < n; i++) {
			/* A slot's send or receive context: the slot. */
			struct slot *s = &r->slots[((char *) e[i].op_context -
						    (char *) r->slots) /
						   sizeof(struct slot)];

			if (--s->pending)
				continue;
			if (s->mr) {
				fi_close(&s->mr->fid);
				s->mr = NULL;
			}
			r->free_slots[r->nfree++] = (int) (s - r->slots);
		}
	}
	return 0;
}

static int
run_size(struct run *r, size_t size, long iters, int window)
{
	int ret;

	for (long i = 0; i < iters; i++) {
		if (!r->nfree) {
			ret = reap(r, window, window - 1);
			if (ret)
				return ret;
		}
		ret = post_write(r, size);
		if (ret)
			return ret;
	}
	return reap(r, window, 0);
}

static uint64_t
lease_registrations(struct mrlt_pair *pair)
{
	struct fi_mrlease_stats st;

	if (!pair->mrl || pair->mrl->query_stats(NULL, &st, sizeof(st)))
		return 0;
	return st.registrations;
}

/* Close what child_open built (any part of it). Returns 0, or 1 if a close
 * failed. */
static int
child_close(struct run *r)
{
	int ret = 0;

	if (r->src_mr)
		fi_close(&r->src_mr->fid);
	if (r->rdst_mr)
		fi_close(&r->rdst_mr->fid);
	if (r->dst_mr)
		fi_close(&r->dst_mr->fid);
	if (mrlt_pair_close(r->pair))
		ret = 1;
	free(r->src);
	free(r->dst);
	return ret;
}

/*
 * Open a child's endpoint pair and buffers, and register what its mode
 * registers up front (the target buffer always; the source in modes 1 and
 * 4). Returns 0, 77 when the provider is unavailable (the parent reports a
 * skip) or 1.
 */
static int
child_open(const struct child_opts *o, struct mrlt_pair *pair, struct run *r)
{
	struct mrlt_pair_opts xo = {.prov = bench_prov(),
				    .caps = FI_MSG | FI_RMA};
	int ret;

	memset(r, 0, sizeof(*r));
	r->pair = pair;
	r->mode = o->mode;
	r->send = o->send;
	ret = mrlt_pair_open(&xo, pair);
	if (ret) {
		fprintf(stderr, "xfer_bench child: %s\n", fi_strerror(-ret));
		return ret == -FI_ENODATA ? 77 : 1;
	}
	if (mode_leases(o->mode) && !pair->mrl)
		fprintf(stderr,
			"xfer_bench: FI_HOOK=mrlease but no %s on the domain\n",
			FI_MRLEASE_OPS_1);
	r->src = aligned_alloc(4096, MAX_BUF);
	r->dst = aligned_alloc(4096, MAX_BUF);
	if (!r->src || !r->dst)
		goto err_close;
	memset(r->src, 0x5a, MAX_BUF);
	memset(r->dst, 0, MAX_BUF);
	ret = mrlt_pair_mr_reg(pair, r->dst, MAX_BUF, FI_REMOTE_WRITE,
			       &r->dst_mr);
	if (!ret && (o->mode == MODE_APP || o->mode == MODE_NOOP)) {
		ret = mrlt_pair_mr_reg(pair, r->src, MAX_BUF,
				       o->send ? FI_SEND : FI_WRITE,
				       &r->src_mr);
		r->regs++;
		if (!ret && o->send) {
			ret = mrlt_pair_mr_reg(pair, r->dst, MAX_BUF, FI_RECV,
					       &r->rdst_mr);
			r->regs++;
		}
	}
	if (ret) {
		fprintf(stderr, "xfer_bench: fi_mr_reg: %s\n",
			fi_strerror(-ret));
		goto err_close;
	}
	for (int i = 0; i < o->window; i++)
		r->free_slots[r->nfree++] = i;
	return 0;

err_close:
	child_close(r);
	return 1;
}

/* Connection set-up and first registrations of a size, untimed. */
static int
warm_up(struct run *r, size_t size, long iters, int window)
{
	return run_size(r, size, iters / 10 + 1, window);
}

static void
print_totals(struct run *r)
{
	printf("total_regs %" PRIu64 "\n",
	       r->regs + lease_registrations(r->pair));
	printf("totals polls %ld ops %ld\n", r->all_polls, r->all_ops);
	fflush(stdout);
}

/* A single run: every size of o, each warmed up and then timed in BLOCKS
 * slices (the report is the fastest slice's rate), then o->empty_polls
 * empty CQ reads (the callgrind recipe prices one with them). */
int
child_main(const struct child_opts *o)
{
	struct mrlt_pair pair;
	struct run r;
	int ret = child_open(o, &pair, &r);

	if (ret)
		return ret;
	for (size_t i = 0; i < o->nsizes && !ret; i++) {
		size_t size = o->sizes[i];
		long iters = o->iters ? o->iters : default_iters(size);
		uint64_t regs0;
		double t0, t1, best;

		ret = warm_up(&r, size, iters, o->window);
		if (ret)
			break;
		regs0 = r.regs + lease_registrations(&pair);
		r.polls = 0;
		/* The rate of the fastest of BLOCKS equal slices: a neighbour
		 * on a shared core only ever slows a slice down. */
		best = 0;
		for (long b = 0, done = 0; b < BLOCKS && !ret; b++) {
			long n = (iters - done) / (BLOCKS - b);

			t0 = bu_now_s();
			ret = run_size(&r, size, n, o->window);
			t1 = bu_now_s();
			if (n / (t1 - t0) > best)
				best = n / (t1 - t0);
			done += n;
		}
		printf("size %zu rate %.1f regs %" PRIu64
		       " polls %ld ops %ld\n",
		       size, best, r.regs + lease_registrations(&pair) - regs0,
		       r.polls, iters);
	}
	for (long i = 0; i < o->empty_polls && !ret; i++) {
		(void) fi_cq_read(pair.cq, NULL, 0);
		r.all_polls++;
	}
	print_totals(&r);
	if (child_close(&r))
		ret = 1;
	return ret ? 1 : 0;
}

/*
 * --serve: warm up every size, say "ready", then run one timed slice per
 * command on stdin until "quit":
 *     "slice SIZE N"  ->  "slice secs S regs G polls P"
 *     "quit"          ->  the totals lines of a single run, then exit
 * The parent commands one child at a time: the others wait in read() and
 * never compete with a slice for the CPU. End of input without "quit"
 * means the parent is gone: exit 1.
 */
int
serve_main(const struct child_opts *o)
{
	struct mrlt_pair pair;
	struct run r;
	char line[128];
	bool quit = false;
	int ret = child_open(o, &pair, &r);

	if (ret)
		return ret;
	for (size_t i = 0; i < NSIZES && !ret; i++)
		ret = warm_up(&r, bench_sizes[i], default_iters(bench_sizes[i]),
			      o->window);
	if (!ret) {
		printf("ready\n");
		fflush(stdout);
	}
	while (!ret && !quit && fgets(line, sizeof(line), stdin)) {
		size_t size;
		long n;
		uint64_t regs0;
		double t0, secs;

		if (!strcmp(line, "quit\n")) {
			quit = true;
			break;
		}
		if (sscanf(line, "slice %zu %ld", &size, &n) != 2 || size < 1 ||
		    size > MAX_BUF || n < 1) {
			fprintf(stderr, "xfer_bench child: bad command: %s",
				line);
			ret = 1;
			break;
		}
		regs0 = r.regs + lease_registrations(&pair);
		r.polls = 0;
		t0 = bu_now_s();
		ret = run_size(&r, size, n, o->window);
		secs = bu_now_s() - t0;
		if (ret)
			break;
		printf("slice secs %.9f regs %" PRIu64 " polls %ld\n", secs,
		       r.regs + lease_registrations(&pair) - regs0, r.polls);
		fflush(stdout);
	}
	if (!ret && !quit) {
		fprintf(stderr,
			"xfer_bench child %d: commands ended without quit\n",
			o->mode);
		ret = 1;
	}
	if (quit)
		print_totals(&r);
	if (child_close(&r))
		ret = 1;
	return ret ? 1 : 0;
}
