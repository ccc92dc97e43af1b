/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guarded CQ reads (see below); the switch to them is mrl_xfer_cq_guard
 * (mrl_xfer_cq.c), their translation mrl_xfer_cq_read.c's.
 */
#include "config.h"

#include "mrl_xfer.h"
#include "mrl_xfer_cq_int.h"

/*
 * Guarded CQs: FI_MULTI_RECV with two readers.
 *
 * A leased FI_MULTI_RECV buffer is one op with many completions; the one
 * carrying FI_MULTI_RECV (or an error) releases its leases and frees it. On
 * a shared pool, reader A's inner read may return a non-final entry naming
 * op X; before A translates it, reader B's read returns X's final entry,
 * completes X and pushes it back; a poster reuses X for another operation;
 * A then reads that operation's context, and may even complete it (its
 * state CAS succeeds): a wrong context, and a lease released under a
 * transfer in flight. Every other op has one completion, so an entry
 * naming it is the only one and is read once: only multi-recv ops can be
 * named by an entry some other reader has not translated yet.
 *
 * So the reads of a CQ that may complete leased multi-recv ops of a shared
 * pool are counted ("guarded"): a reader enters (readers + 1) before its
 * inner read and exits after translating. A multi-recv op's final
 * completion releases its leases at once (as every completion does), but
 * its return to the pool is deferred onto the CQ's list while readers are
 * in flight (mrl_xfer_op_guard_defer). The count and the list's head share one
 * 64-bit word (struct mrl_cq_guard): the exit that takes the count from 1
 * to 0 also takes the whole list in the same CAS and pushes its ops back
 * to their pools (mrl_xfer_cq_guard_free); other exits only decrement. Why that
 * is safe: reader A dequeued X's non-final entry before B dequeued X's
 * final one (the provider writes a buffer's completions in order, the
 * final one last, and a CQ is FIFO), and A entered before its dequeue, so
 * A was counted when B deferred X. X leaves the list only at an exit that
 * took the count to 0 after X went on it, i.e. after every reader counted
 * at that time (A included) exited, so after A translated. A reader that
 * enters later cannot be handed an entry naming X (its final entry was
 * already read; the provider writes none after it). Ops go on the list
 * only while a reader is counted (the finaliser itself is one), and the
 * list is emptied whenever the count reaches 0, so nothing stays on it
 * when reads stop (mrl_xfer_cq_close checks anyway). No lock, one word;
 * several CQs' lists never mix (each op goes on its pool's guard).
 *
 * What gets guarded, and when. The translation costs every read one
 * atomic add and one CAS, so only CQs that need it pay: a CQ is guarded
 * when an endpoint bound to it for receives, with a shared pool and an
 * app CQ route, is about to lease its first FI_MULTI_RECV buffer
 * (mrl_xfer_cq_guard_rx: at fi_enable or FI_SETOPSFLAG when the default rx
 * flags make every receive one, else at the first fi_recvmsg or
 * fi_trecvmsg with FI_MULTI_RECV), before that post goes to the provider;
 * its reads switch to the guarded table (mrl_xfer_cq.c), for good. Not at bind
 * or by caps: tcp;ofi_rxm, shm, sockets and udp;ofi_rxd report FI_MULTI_RECV as
 * a secondary capability whatever the hints ask, so a caps rule would put the
 * count on every FI_THREAD_SAFE CQ (the leased fi_write hit path of
 * bench/xfer_ir.sh included). An endpoint whose rx caps (as opened) lack
 * FI_MULTI_RECV, or whose completions carry no flags, forwards FI_MULTI_RECV
 * buffers unleased. Serial pools (FI_THREAD_DOMAIN, FI_THREAD_COMPLETION: one
 * reader at a time) and counters-only receive directions (their internal CQ is
 * read under the endpoint's drain_lock) need no guard.
 *
 * Residual window: a read call that loaded the CQ's table before the
 * switch (a reader inside fi_cq_read, or blocked in fi_cq_sread, while
 * the first leased multi-recv buffer is posted) is not counted; if it
 * returns a non-final entry of that buffer and then stays descheduled until
 * the buffer's final completion was read by another thread and its op
 * reused, it sees the race above. Every read that starts after the switch
 * is counted. A blocking sread counts for as long as it waits, so multi-
 * recv ops finalised meanwhile stay off their pool until it returns (the
 * pool grows instead of reusing them: memory, not correctness). Likewise
 * the list waits for a moment when no reader of the CQ is inside: threads
 * polling it back to back with no gap keep finished multi-recv ops (one of
 * about 120 bytes per buffer) off their pools until they leave a gap. A
 * per-epoch count (freeing what the readers of an epoch held once they
 * exited, whatever later readers do) would bound that; not needed yet.
 *
 * Endpoint close: a deferred op is FREE but on no free list, so the pool
 * is not settled; mrl_xfer_ep_pool_needed sees pool->deferred and lets the CQs
 * keep the pool (as for a completer inside its window); the op goes back
 * to it when the last reader exits, and the pool goes when the CQs close.
 */
void
mrl_xfer_cq_guard_enter(struct mrl_cq_guard *g)
{
	atomic_fetch_add_explicit(&g->word, MRL_CQ_GUARD_READER,
				  memory_order_seq_cst);
}

static inline struct mrl_op *
mrl_xfer_cq_guard_op(uint32_t code)
{
	return (struct mrl_op *) (mrl_xfer_op_region_base +
				  ((uintptr_t) code << 3));
}

/* Nothing touches an op or its pool after its push (close may free the
 * pool then). */
void __attribute__((noinline)) mrl_xfer_cq_guard_free(uint32_t code)
{
	while (code) {
		struct mrl_op *op = mrl_xfer_cq_guard_op(code), *last = op;
		struct mrl_op_pool *pool = op->pool;

		code = atomic_load_explicit(&op->free_next,
					    memory_order_relaxed);
		while (last->next)
			last = last->next;
		atomic_fetch_sub_explicit(&pool->deferred, 1,
					  memory_order_release);
		mrl_xfer_op_put_chain(pool, op, last);
	}
}

void
mrl_xfer_cq_guard_exit(struct mrl_cq_guard *g)
{
	uint64_t old = atomic_load_explicit(&g->word, memory_order_relaxed);
	uint64_t new;

	do {
		/* The last reader out takes the list with it. */
		new = old >> 32 == 1 ? 0 : old - MRL_CQ_GUARD_READER;
	} while (!atomic_compare_exchange_weak_explicit(&g->word, &old, new,
							memory_order_acq_rel,
							memory_order_relaxed));
	if (__builtin_expect(!new && (uint32_t) old, 0))
		mrl_xfer_cq_guard_free((uint32_t) old);
}

void
mrl_xfer_cq_guard_test(struct mrl_cq_guard *g, const void *buf, ssize_t n)
{
	void (*fn)(void *, const void *, ssize_t) =
		atomic_load_explicit(&g->test_reading, memory_order_acquire);

	if (fn && n > 0)
		fn(g->test_arg, buf, n);
}

ssize_t
mrl_xfer_cq_guard_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	struct mrl_cq_guard *g = mrl_xfer_cq_guard_of(cq);
	ssize_t n;

	mrl_xfer_cq_guard_enter(g);
	n = src_addr ? mrl_hook_cq_ops.readfrom(cq_fid, buf, count, src_addr) :
		       fi_cq_read(cq->inner, buf, count);
	mrl_xfer_cq_guard_test(g, buf, n);
	n = mrl_xfer_cq_deliver(cq, buf, n, src_addr,
				mrl_xfer_cq_entry_size(cq));
	mrl_xfer_cq_guard_exit(g);
	return n;
}

ssize_t
mrl_xfer_cq_guard_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return mrl_xfer_cq_guard_readfrom(cq_fid, buf, count, NULL);
}

ssize_t
mrl_xfer_cq_guard_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct mrl_cq_guard *g = mrl_xfer_cq_guard_of(mrl_hook_cq_of(cq_fid));
	ssize_t n;

	mrl_xfer_cq_guard_enter(g);
	n = mrl_xfer_cq_readerr(cq_fid, buf, flags);
	mrl_xfer_cq_guard_exit(g);
	return n;
}
