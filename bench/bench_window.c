/* SPDX-License-Identifier: BSD-2-Clause */
/* Operations in flight on one CQ (bench_window.h). */
#include "config.h"

#include <stdio.h>

#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "bench_window.h"

void
bu_window_init(struct bu_window *w, struct fid_cq *cq, int size,
	       const char *who)
{
	w->cq = cq;
	w->who = who;
	w->size = size < BU_WINDOW_MAX ? size : BU_WINDOW_MAX;
	w->nfree = 0;
	for (int i = 0; i < w->size; i++) {
		w->slot[i].mr = NULL;
		w->free[w->nfree++] = i;
	}
}

struct bu_slot *
bu_window_take(struct bu_window *w)
{
	struct bu_slot *slot = &w->slot[w->free[--w->nfree]];

	slot->mr = NULL;
	return slot;
}

void
bu_window_put(struct bu_window *w, struct bu_slot *slot)
{
	if (slot->mr) {
		fi_close(&slot->mr->fid);
		slot->mr = NULL;
	}
	w->free[w->nfree++] = bu_window_index(w, slot);
}

int
bu_window_index(const struct bu_window *w, const struct bu_slot *slot)
{
	return (int) (slot - w->slot);
}

int
bu_window_reap(struct bu_window *w, int keep)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t n;

	while (w->size - w->nfree > keep) {
		n = fi_cq_read(w->cq, e, 16);
		if (n == -FI_EAGAIN)
			continue;
		if (n < 0) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(w->cq, &err, 0);
			fprintf(stderr, "%s: an operation failed: %s\n", w->who,
				fi_strerror(err.err));
			return -FI_EIO;
		}
		for (ssize_t i = 0; i < n; i++)
			bu_window_put(w, (struct bu_slot *) e[i].op_context);
	}
	return 0;
}

int
bu_window_run(struct bu_window *w, long n,
	      int (*post)(void *arg, struct bu_slot *slot), void *arg)
{
	int ret;

	for (long i = 0; i < n; i++) {
		if (!w->nfree && (ret = bu_window_reap(w, w->size - 1)))
			return ret;
		if ((ret = post(arg, bu_window_take(w))))
			return ret;
	}
	return bu_window_reap(w, 0);
}
