/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CQ reads: every entry whose context is one of our ops is mapped back to
 * the application's context and the op completed (its leases released when
 * the operation is over); entries of ops the application asked no
 * completion for are removed, the rest compacted in place (src_addr kept in
 * step). Entries with any other context, NULL included (remote CQ data, RMA
 * events, the application's own un-leased posts), pass untouched at the cost
 * of one range check and one load each; while claiming receives are in
 * flight, such an entry is looked up among them (mrl_xfer_claim.c).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_bind.h"
#include "mrl_xfer.h"
#include "mrl_xfer_state.h"

/* How a blocking read waits again after a hidden batch (see
 * mrl_xfer_cq_wait_again). */
enum mrl_xcq_wait_kind {
	MRL_XCQ_WAIT_UNKNOWN, /* not looked up yet */
	MRL_XCQ_WAIT_FD, /* poll on the provider's fd and signal_fd */
	MRL_XCQ_WAIT_SREAD, /* the provider's sread again */
};

/* A leasing CQ's state: struct mrl_xcq (what cq->ext points at, so first),
 * and what only this file uses. */
struct mrl_xcq_own {
	struct mrl_xcq xcq;
	/* Looked up once, under xcq.lock, by the first blocking read that
	 * waits again (mrl_xcq_wait_kind); wait_fd and signal_fd are set
	 * before it says MRL_XCQ_WAIT_FD. */
	_Atomic int wait_kind;
	int wait_fd; /* the provider's wait object (FI_GETWAIT) */
	/* An eventfd fi_cq_signal writes once it exists (-1 before). */
	_Atomic int signal_fd;
};

static inline struct mrl_xcq_own *
mrl_xfer_cq_own_of(struct mrl_xcq *xcq)
{
	return container_of(xcq, struct mrl_xcq_own, xcq);
}

/* One table per entry format (they differ in read only). */
static struct fi_ops_cq mrl_xfer_cq_ops[4];
/* Guarded CQs (any format): every read counted (see below). */
static struct fi_ops_cq mrl_xfer_guard_cq_ops;
/* CQs holding read-ahead completions (struct mrl_xcq stash): any format. */
static struct fi_ops_cq mrl_xfer_stash_cq_ops;
/* CQs of domains that never lease: the passthrough's, with the reads an
 * inner instance makes on every progress call forwarded without checks
 * (read and readfrom are in every fi_ops_cq). */
static struct fi_ops_cq mrl_xfer_plain_cq_ops;
static pthread_once_t mrl_xfer_cq_once = PTHREAD_ONCE_INIT;

/* Where an entry's flags are, NULL for formats without them
 * (FI_CQ_FORMAT_CONTEXT). */
static inline const uint64_t *
mrl_xfer_cq_entry_flags(const struct fi_cq_entry *e, size_t size)
{
	return size > sizeof(struct fi_cq_entry) ?
		       &((const struct fi_cq_msg_entry *) e)->flags :
		       NULL;
}

/* The op entry e completes: one of this domain's by its context's address,
 * or, while claims are in flight, a claim's by the application's context
 * (mrl_xfer_claim.c). */
static inline __attribute__((always_inline)) struct mrl_op *
mrl_xfer_cq_entry_op(struct mrl_cq *cq, struct fi_cq_entry *e, size_t size)
{
	struct mrl_op *op = mrl_xfer_op_of_context(e->op_context, cq->domain);
	struct mrl_claims *claims = &((struct mrl_xcq *) cq->ext)->claims;

	if (__builtin_expect(!op && mrl_xfer_claims_any(claims), 0))
		op = mrl_xfer_claims_take(claims, e->op_context,
					  mrl_xfer_cq_entry_flags(e, size));
	return op;
}

/*
 * Entry i named an op whose completion the application must not see: drop
 * it and go on translating from i + 1, compacting the entries (and
 * src_addr) that remain.
 */
static ssize_t __attribute__((noinline))
mrl_xfer_cq_drop(struct mrl_cq *cq, char *entries, ssize_t n, ssize_t i,
		 size_t size, fi_addr_t *src_addr)
{
	ssize_t kept = i;

	for (i++; i < n; i++) {
		struct fi_cq_entry *e = (void *) (entries + (size_t) i * size);
		struct mrl_op *op = mrl_xfer_cq_entry_op(cq, e, size);

		if (op && !mrl_xfer_op_complete_ok(
				  op, mrl_xfer_cq_entry_flags(e, size),
				  &e->op_context))
			continue;
		memmove(entries + (size_t) kept * size, e, size);
		if (src_addr)
			src_addr[kept] = src_addr[i];
		kept++;
	}
	return kept ? kept : -FI_EAGAIN;
}

/*
 * The entries [i, n) of a read (those before i are done), as the
 * application must see them: each whose context is one of this domain's
 * ops gets the application's context back and completes the op. Other
 * entries cost a range check each; the buffer changes only when an entry
 * is dropped (mrl_xfer_cq_drop).
 */
static ssize_t __attribute__((noinline))
mrl_xfer_cq_deliver_from(struct mrl_cq *cq, char *entries, ssize_t n, ssize_t i,
			 fi_addr_t *src_addr, size_t size)
{
	for (; i < n; i++) {
		struct fi_cq_entry *e = (void *) (entries + (size_t) i * size);
		struct mrl_op *op = mrl_xfer_cq_entry_op(cq, e, size);

		if (!op)
			continue;
		if (!mrl_xfer_op_complete_ok(op,
					     mrl_xfer_cq_entry_flags(e, size),
					     &e->op_context))
			return mrl_xfer_cq_drop(cq, entries, n, i, size,
						src_addr);
	}
	return n;
}

/*
 * What the application gets for a read that returned n: errors and empty
 * reads as they are, a single entry (the usual answer to a poll) inline,
 * more out of line (mrl_xfer_cq_deliver_from). A single entry that was hidden
 * makes the read -FI_EAGAIN.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_cq_deliver(struct mrl_cq *cq, void *buf, ssize_t n,
		    fi_addr_t *src_addr, size_t size)
{
	struct fi_cq_entry *e = buf;
	struct mrl_op *op;

	/* A call into the domain: what the monitor dropped there closes, and
	 * remote entries idle too long. */
	mrl_cache_domain_settle(((struct mrl_xcq *) cq->ext)->cache);
	if (((struct mrl_xcq *) cq->ext)->remote)
		mrl_bind_remote_settle(((struct mrl_xcq *) cq->ext)->remote);
	if (n < 1)
		return n;
	if (n > 1)
		return mrl_xfer_cq_deliver_from(cq, buf, n, 0, src_addr, size);
	op = mrl_xfer_cq_entry_op(cq, e, size);
	if (!op)
		return 1;
	return mrl_xfer_op_complete_ok(op, mrl_xfer_cq_entry_flags(e, size),
				       &e->op_context) ?
		       1 :
		       -FI_EAGAIN;
}

static inline size_t
mrl_xfer_cq_entry_size(struct mrl_cq *cq)
{
	return ((struct mrl_xcq *) cq->ext)->entry_size;
}

/* fi_cq_read, one per format so the entry size is a constant. */
#define MRL_XCQ_READ(name, entry)                                             \
	static ssize_t name(struct fid_cq *cq_fid, void *buf, size_t count)   \
	{                                                                     \
		struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);                   \
                                                                              \
		return mrl_xfer_cq_deliver(cq, buf,                           \
					   fi_cq_read(cq->inner, buf, count), \
					   NULL, sizeof(entry));              \
	}
MRL_XCQ_READ(mrl_xfer_cq_read_ctx, struct fi_cq_entry)
MRL_XCQ_READ(mrl_xfer_cq_read_msg, struct fi_cq_msg_entry)
MRL_XCQ_READ(mrl_xfer_cq_read_data, struct fi_cq_data_entry)
MRL_XCQ_READ(mrl_xfer_cq_read_tagged, struct fi_cq_tagged_entry)

static ssize_t
mrl_xfer_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		     fi_addr_t *src_addr)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	return mrl_xfer_cq_deliver(
		cq, buf, mrl_hook_cq_ops.readfrom(cq_fid, buf, count, src_addr),
		src_addr, mrl_xfer_cq_entry_size(cq));
}

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
 * its reads switch to this file's guarded table, for good. Not at bind or
 * by caps: tcp;ofi_rxm, shm, sockets and udp;ofi_rxd report FI_MULTI_RECV
 * as a secondary capability whatever the hints ask, so a caps rule would
 * put the count on every FI_THREAD_SAFE CQ (the leased fi_write hit path
 * of bench/xfer_ir.sh included). An endpoint whose rx caps (as opened)
 * lack FI_MULTI_RECV, or whose completions carry no flags, forwards
 * FI_MULTI_RECV buffers unleased. Serial pools (FI_THREAD_DOMAIN,
 * FI_THREAD_COMPLETION: one reader at a time) and counters-only receive
 * directions (their internal CQ is read under the endpoint's drain_lock)
 * need no guard.
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
static inline void
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

/* Push the deferred ops from code on back to their pools. Nothing touches
 * an op or its pool after its push (close may free the pool then). */
static void __attribute__((noinline)) mrl_xfer_cq_guard_free(uint32_t code)
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

static inline void
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

/* TEST-ONLY hook of guarded reads (MRL_XFER_CTL_TEST_READING). */
static inline void
mrl_xfer_cq_guard_test(struct mrl_cq_guard *g, const void *buf, ssize_t n)
{
	void (*fn)(void *, const void *, ssize_t) =
		atomic_load_explicit(&g->test_reading, memory_order_acquire);

	if (fn && n > 0)
		fn(g->test_arg, buf, n);
}

static inline struct mrl_cq_guard *
mrl_xfer_cq_guard_of(struct mrl_cq *cq)
{
	return &((struct mrl_xcq *) cq->ext)->guard;
}

static ssize_t
mrl_xfer_gcq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
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

static ssize_t
mrl_xfer_gcq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return mrl_xfer_gcq_readfrom(cq_fid, buf, count, NULL);
}

/* Errors always reach the application, also for ops it asked no
 * completion for (the provider reports those too). Only the fields every
 * api_version has (op_context, flags) are touched. */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_cq_readerr_in(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		       uint64_t flags, bool guarded)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	struct mrl_claims *claims = &((struct mrl_xcq *) cq->ext)->claims;
	struct mrl_op *op;
	ssize_t n;

	if (guarded)
		mrl_xfer_cq_guard_enter(mrl_xfer_cq_guard_of(cq));
	n = mrl_hook_cq_ops.readerr(cq_fid, buf, flags);
	mrl_cache_domain_settle(((struct mrl_xcq *) cq->ext)->cache);
	mrl_bind_remote_settle(((struct mrl_xcq *) cq->ext)->remote);
	if (n > 0) {
		op = mrl_xfer_op_of_context(buf->op_context, cq->domain);
		if (!op && mrl_xfer_claims_any(claims))
			op = mrl_xfer_claims_take(claims, buf->op_context,
						  &buf->flags);
		if (op)
			mrl_xfer_op_complete(op, buf->flags, true,
					     &buf->op_context);
	}
	if (guarded)
		mrl_xfer_cq_guard_exit(mrl_xfer_cq_guard_of(cq));
	return n;
}

static ssize_t
mrl_xfer_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		    uint64_t flags)
{
	return mrl_xfer_cq_readerr_in(cq_fid, buf, flags, false);
}

static ssize_t
mrl_xfer_gcq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		     uint64_t flags)
{
	return mrl_xfer_cq_readerr_in(cq_fid, buf, flags, true);
}

static int64_t
mrl_xfer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waiting again after a hidden batch. The provider's own sread cannot be
 * entered again for that: util CQs (tcp;ofi_rxm, shm...) look at their
 * signal flag, then drain their wait fd and block; a fi_cq_signal landing
 * between the two is lost and the read runs out its timeout. An
 * application's sread meets that window once, at its call; a read the hook
 * retries would meet it at every hidden batch, just when a signal given
 * on seeing those completions' effects arrives. So where the CQ's wait
 * object is an fd, the hook waits itself, as fi_trywait(3) describes:
 * fi_trywait, then poll on that fd and on an eventfd every fi_cq_signal
 * writes (after counting itself), reading whenever the provider says
 * something is there. The count is checked before each poll: a signal
 * counted after that check has written the eventfd the poll watches.
 * Other wait objects (mutex and condition: a signal is never lost there)
 * enter the provider's sread again.
 */
static enum mrl_xcq_wait_kind
mrl_xfer_cq_wait_kind_of(struct mrl_cq *cq)
{
	struct mrl_xcq_own *own = mrl_xfer_cq_own_of(cq->ext);
	struct fid_fabric *fabric = cq->domain->fabric->inner;
	enum fi_wait_obj obj = FI_WAIT_NONE;
	int kind = atomic_load_explicit(&own->wait_kind, memory_order_acquire);
	int fd = -1, efd;

	if (kind != MRL_XCQ_WAIT_UNKNOWN)
		return kind;
	pthread_mutex_lock(&own->xcq.lock);
	kind = atomic_load_explicit(&own->wait_kind, memory_order_relaxed);
	if (kind != MRL_XCQ_WAIT_UNKNOWN)
		goto out;
	kind = MRL_XCQ_WAIT_SREAD;
	if (!FI_CHECK_OP(fabric->ops, struct fi_ops_fabric, trywait) ||
	    fi_control(&cq->inner->fid, FI_GETWAITOBJ, &obj) ||
	    obj != FI_WAIT_FD || fi_control(&cq->inner->fid, FI_GETWAIT, &fd) ||
	    fd < 0)
		goto out;
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0) {
		FI_WARN(mrl_hook_prov, FI_LOG_CQ,
			"eventfd: %s; a blocking read "
			"waits again in the provider's sread\n",
			strerror(errno));
		goto out;
	}
	own->wait_fd = fd;
	atomic_store_explicit(&own->signal_fd, efd, memory_order_seq_cst);
	kind = MRL_XCQ_WAIT_FD;
out:
	atomic_store_explicit(&own->wait_kind, kind, memory_order_release);
	pthread_mutex_unlock(&own->xcq.lock);
	return kind;
}

/* One non-blocking read as the application's reads translate it
 * (counted on a guarded CQ). *got: what the provider returned. */
static ssize_t
mrl_xfer_cq_read_once(struct mrl_cq *cq, void *buf, size_t count,
		      fi_addr_t *src_addr, bool guarded, ssize_t *got)
{
	struct fid_cq *cq_fid = &cq->cq;
	ssize_t n;

	if (guarded)
		mrl_xfer_cq_guard_enter(mrl_xfer_cq_guard_of(cq));
	n = src_addr ? mrl_hook_cq_ops.readfrom(cq_fid, buf, count, src_addr) :
		       mrl_hook_cq_ops.read(cq_fid, buf, count);
	if (guarded)
		mrl_xfer_cq_guard_test(mrl_xfer_cq_guard_of(cq), buf, n);
	*got = n;
	n = mrl_xfer_cq_deliver(cq, buf, n, src_addr,
				mrl_xfer_cq_entry_size(cq));
	if (guarded)
		mrl_xfer_cq_guard_exit(mrl_xfer_cq_guard_of(cq));
	return n;
}

/* Milliseconds left before deadline (timeout < 0: none), at least 0. */
static int
mrl_xfer_cq_left(int timeout, int64_t deadline)
{
	int64_t left;

	if (timeout < 0)
		return -1;
	left = deadline - mrl_xfer_now_ms();
	return left > 0 ? (int) left : 0;
}

/*
 * The rest of a blocking read whose batches were all hidden so far, on an
 * fd wait object (mrl_xfer_cq_wait_kind_of): the application's entries, an
 * error, or -FI_EAGAIN at the deadline or on a signal counted since
 * signals was read.
 */
static ssize_t
mrl_xfer_cq_wait_fd(struct mrl_cq *cq, void *buf, size_t count,
		    fi_addr_t *src_addr, unsigned int signals, int timeout,
		    int64_t deadline, bool guarded)
{
	struct mrl_xcq_own *own = mrl_xfer_cq_own_of(cq->ext);
	struct fid_fabric *fabric = cq->domain->fabric->inner;
	struct fid *inner = &cq->inner->fid;
	struct pollfd fds[2] = {
		{.fd = own->wait_fd, .events = POLLIN},
		{.fd = atomic_load_explicit(&own->signal_fd,
					    memory_order_relaxed),
		 .events = POLLIN},
	};
	ssize_t got, n;
	int ret, left;

	for (;;) {
		ret = fi_trywait(fabric, &inner, 1);
		if (ret == -FI_EAGAIN) {
			n = mrl_xfer_cq_read_once(cq, buf, count, src_addr,
						  guarded, &got);
			if (got != -FI_EAGAIN && n != -FI_EAGAIN)
				return n;
		} else if (ret) {
			return ret;
		}
		if (atomic_load_explicit(&own->xcq.signals,
					 memory_order_seq_cst) != signals)
			return -FI_EAGAIN;
		left = mrl_xfer_cq_left(timeout, deadline);
		if (!left)
			return -FI_EAGAIN;
		if (ret == -FI_EAGAIN)
			continue;
		ret = poll(fds, 2, left);
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret > 0 && (fds[1].revents & POLLIN)) {
			uint64_t v;

			/* Drained before the count is looked at again. */
			if (read(fds[1].fd, &v, sizeof(v)) < 0 &&
			    errno != EAGAIN)
				return -errno;
		}
	}
}

/*
 * Blocking reads: a batch that was all hidden is not an answer, so wait
 * again for what is left of the timeout (mrl_xfer_cq_wait_fd where the CQ's
 * wait object allows). Nothing else is retried: the provider's own
 * -FI_EAGAIN (its timeout, or fi_cq_signal) is the answer, and a signal
 * given during the call (counted by mrl_xfer_cq_signal) turns the retry into a
 * last look that does not wait, for providers whose signal only wakes a
 * waiter without marking the CQ. Guarded: each inner read (with its wait)
 * and its translation counted.
 */
static inline __attribute__((always_inline)) ssize_t
mrl_xfer_cq_sreadfrom_in(struct fid_cq *cq_fid, void *buf, size_t count,
			 fi_addr_t *src_addr, const void *cond, int timeout,
			 bool guarded)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	struct mrl_xcq *xcq = cq->ext;
	unsigned int signals =
		atomic_load_explicit(&xcq->signals, memory_order_seq_cst);
	int64_t deadline = timeout >= 0 ? mrl_xfer_now_ms() + timeout : 0;
	ssize_t got, n;

	for (;;) {
		if (guarded)
			mrl_xfer_cq_guard_enter(mrl_xfer_cq_guard_of(cq));
		got = src_addr ? mrl_hook_cq_ops.sreadfrom(cq_fid, buf, count,
							   src_addr, cond,
							   timeout) :
				 mrl_hook_cq_ops.sread(cq_fid, buf, count, cond,
						       timeout);
		if (guarded)
			mrl_xfer_cq_guard_test(mrl_xfer_cq_guard_of(cq), buf,
					       got);
		n = mrl_xfer_cq_deliver(cq, buf, got, src_addr,
					mrl_xfer_cq_entry_size(cq));
		if (guarded)
			mrl_xfer_cq_guard_exit(mrl_xfer_cq_guard_of(cq));
		if (got <= 0 || n != -FI_EAGAIN || !timeout)
			return n;
		if (atomic_load_explicit(&xcq->signals, memory_order_seq_cst) !=
		    signals) {
			timeout = 0;
			continue;
		}
		if (timeout > 0) {
			timeout = mrl_xfer_cq_left(timeout, deadline);
			if (!timeout)
				return -FI_EAGAIN;
		}
		if (mrl_xfer_cq_wait_kind_of(cq) == MRL_XCQ_WAIT_FD)
			return mrl_xfer_cq_wait_fd(cq, buf, count, src_addr,
						   signals, timeout, deadline,
						   guarded);
	}
}

/* fi_cq_signal: counted, and the eventfd of mrl_xfer_cq_wait_fd written,
 * before the provider wakes its waiters, so a read the hook waits in
 * again after a hidden batch sees it (mrl_xfer_cq_sreadfrom_in). */
static int
mrl_xfer_cq_signal(struct fid_cq *cq_fid)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	struct mrl_xcq_own *own = mrl_xfer_cq_own_of(cq->ext);
	int efd;

	atomic_fetch_add_explicit(&own->xcq.signals, 1, memory_order_seq_cst);
	efd = atomic_load_explicit(&own->signal_fd, memory_order_seq_cst);
	if (efd >= 0) {
		uint64_t one = 1;

		/* Full (EAGAIN) is readable already: nothing lost. */
		if (write(efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			FI_WARN(mrl_hook_prov, FI_LOG_CQ, "eventfd write: %s\n",
				strerror(errno));
	}
	return mrl_hook_cq_ops.signal(cq_fid);
}

static ssize_t
mrl_xfer_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		      fi_addr_t *src_addr, const void *cond, int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, src_addr, cond,
					timeout, false);
}

static ssize_t
mrl_xfer_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		  const void *cond, int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, NULL, cond, timeout,
					false);
}

static ssize_t
mrl_xfer_gcq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		       fi_addr_t *src_addr, const void *cond, int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, src_addr, cond,
					timeout, true);
}

static ssize_t
mrl_xfer_gcq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		   const void *cond, int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, NULL, cond, timeout,
					true);
}

/*
 * Read-ahead. A poll set or fi_trywait may say a CQ has something to read
 * only when the application will read it, so before they do the CQ is
 * read ahead (mrl_xfer_cq_readable): entries the hook hides are consumed,
 * and the first batch with one of the application's is kept, translated,
 * in the CQ's stash. While anything is there the CQ reads through the
 * stash table, which hands out stashed entries first (a read returns
 * stashed ones only) and puts the base table back once they are gone. The
 * stash and both switches are under xcq->lock; a reader that loaded the
 * base table before the switch reads the provider's newer entries ahead
 * of the stashed ones, as two concurrent readers may anyway.
 */
static void
mrl_xfer_cq_set_ops(struct mrl_cq *cq, const struct fi_ops_cq *ops)
{
	__atomic_store_n(&cq->cq.ops, (struct fi_ops_cq *) ops,
			 __ATOMIC_RELEASE);
}

/* Up to count stashed entries into buf (and src_addr); 0 when none is
 * left (another reader took them). */
static size_t
mrl_xfer_cq_take(struct mrl_cq *cq, void *buf, size_t count,
		 fi_addr_t *src_addr)
{
	struct mrl_xcq *xcq = cq->ext;
	size_t size = xcq->entry_size, n;

	pthread_mutex_lock(&xcq->lock);
	n = xcq->nstash < count ? xcq->nstash : count;
	memcpy(buf, xcq->stash + xcq->stash_head * size, n * size);
	if (src_addr)
		memcpy(src_addr, xcq->stash_src + xcq->stash_head,
		       n * sizeof(*src_addr));
	xcq->stash_head += n;
	xcq->nstash -= n;
	if (!xcq->nstash) {
		xcq->stash_head = 0;
		mrl_xfer_cq_set_ops(cq, xcq->base);
	}
	pthread_mutex_unlock(&xcq->lock);
	return n;
}

static ssize_t
mrl_xfer_scq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		      fi_addr_t *src_addr)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	const struct fi_ops_cq *base = ((struct mrl_xcq *) cq->ext)->base;
	size_t n = count ? mrl_xfer_cq_take(cq, buf, count, src_addr) : 0;

	if (n)
		return (ssize_t) n;
	return src_addr ? base->readfrom(cq_fid, buf, count, src_addr) :
			  base->read(cq_fid, buf, count);
}

static ssize_t
mrl_xfer_scq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return mrl_xfer_scq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t
mrl_xfer_scq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
		       fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);
	const struct fi_ops_cq *base = ((struct mrl_xcq *) cq->ext)->base;
	size_t n = count ? mrl_xfer_cq_take(cq, buf, count, src_addr) : 0;

	if (n)
		return (ssize_t) n;
	return src_addr ? base->sreadfrom(cq_fid, buf, count, src_addr, cond,
					  timeout) :
			  base->sread(cq_fid, buf, count, cond, timeout);
}

static ssize_t
mrl_xfer_scq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		   const void *cond, int timeout)
{
	return mrl_xfer_scq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static ssize_t
mrl_xfer_scq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
		     uint64_t flags)
{
	struct mrl_cq *cq = mrl_hook_cq_of(cq_fid);

	return ((struct mrl_xcq *) cq->ext)->base->readerr(cq_fid, buf, flags);
}

/* One inner read into the (empty) stash, translated as the CQ's reads
 * translate (counted on a guarded CQ). *got: what the provider returned;
 * the result: what the application gets (-FI_EAGAIN if all was hidden). */
static ssize_t
mrl_xfer_cq_fill(struct mrl_cq *cq, struct mrl_xcq *xcq, ssize_t *got)
{
	struct mrl_cq_guard *g = &xcq->guard;
	bool guarded = xcq->base == &mrl_xfer_guard_cq_ops;
	ssize_t n;

	if (guarded)
		mrl_xfer_cq_guard_enter(g);
	n = mrl_hook_cq_ops.readfrom(&cq->cq, xcq->stash, MRL_XCQ_STASH,
				     xcq->stash_src);
	if (n == -FI_ENOSYS) {
		n = fi_cq_read(cq->inner, xcq->stash, MRL_XCQ_STASH);
		for (ssize_t i = 0; i < n; i++)
			xcq->stash_src[i] = FI_ADDR_NOTAVAIL;
	}
	if (guarded)
		mrl_xfer_cq_guard_test(g, xcq->stash, n);
	*got = n;
	n = mrl_xfer_cq_deliver(cq, xcq->stash, n, xcq->stash_src,
				xcq->entry_size);
	if (guarded)
		mrl_xfer_cq_guard_exit(g);
	return n;
}

int
mrl_xfer_cq_readable(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq = cq->ext;
	ssize_t got = 0, n;
	bool hidden = false;
	int ret;

	/* Without ext nothing is hidden: every entry is the application's. */
	if (!xcq)
		return 1;
	pthread_mutex_lock(&xcq->lock);
	while (!xcq->nstash) {
		n = mrl_xfer_cq_fill(cq, xcq, &got);
		if (n > 0) {
			xcq->nstash = (size_t) n;
			xcq->stash_head = 0;
			mrl_xfer_cq_set_ops(cq, &mrl_xfer_stash_cq_ops);
		}
		if (got <= 0 || n > 0)
			break;
		/* All hidden: look behind them. */
		hidden = true;
	}
	/* An error entry (or a failing read) is for the application too. */
	if (xcq->nstash || (got < 0 && got != -FI_EAGAIN))
		ret = 1;
	else
		ret = hidden ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&xcq->lock);
	return ret;
}

static ssize_t
mrl_xfer_plain_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	struct fid_cq *inner = mrl_hook_cq_of(cq_fid)->inner;

	return inner->ops->read(inner, buf, count);
}

static ssize_t
mrl_xfer_plain_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	struct fid_cq *inner = mrl_hook_cq_of(cq_fid)->inner;

	return inner->ops->readfrom(inner, buf, count, src_addr);
}

static void
mrl_xfer_cq_init(void)
{
	static ssize_t (*const reads[4])(struct fid_cq *, void *, size_t) = {
		mrl_xfer_cq_read_ctx,
		mrl_xfer_cq_read_msg,
		mrl_xfer_cq_read_data,
		mrl_xfer_cq_read_tagged,
	};

	for (int i = 0; i < 4; i++) {
		mrl_xfer_cq_ops[i] = mrl_hook_cq_ops;
		mrl_xfer_cq_ops[i].read = reads[i];
		mrl_xfer_cq_ops[i].readfrom = mrl_xfer_cq_readfrom;
		mrl_xfer_cq_ops[i].readerr = mrl_xfer_cq_readerr;
		mrl_xfer_cq_ops[i].sread = mrl_xfer_cq_sread;
		mrl_xfer_cq_ops[i].sreadfrom = mrl_xfer_cq_sreadfrom;
		mrl_xfer_cq_ops[i].signal = mrl_xfer_cq_signal;
	}
	mrl_xfer_guard_cq_ops = mrl_hook_cq_ops;
	mrl_xfer_guard_cq_ops.read = mrl_xfer_gcq_read;
	mrl_xfer_guard_cq_ops.readfrom = mrl_xfer_gcq_readfrom;
	mrl_xfer_guard_cq_ops.readerr = mrl_xfer_gcq_readerr;
	mrl_xfer_guard_cq_ops.sread = mrl_xfer_gcq_sread;
	mrl_xfer_guard_cq_ops.sreadfrom = mrl_xfer_gcq_sreadfrom;
	mrl_xfer_guard_cq_ops.signal = mrl_xfer_cq_signal;
	mrl_xfer_stash_cq_ops = mrl_hook_cq_ops;
	mrl_xfer_stash_cq_ops.read = mrl_xfer_scq_read;
	mrl_xfer_stash_cq_ops.readfrom = mrl_xfer_scq_readfrom;
	mrl_xfer_stash_cq_ops.readerr = mrl_xfer_scq_readerr;
	mrl_xfer_stash_cq_ops.sread = mrl_xfer_scq_sread;
	mrl_xfer_stash_cq_ops.sreadfrom = mrl_xfer_scq_sreadfrom;
	mrl_xfer_stash_cq_ops.signal = mrl_xfer_cq_signal;
	mrl_xfer_plain_cq_ops = mrl_hook_cq_ops;
	mrl_xfer_plain_cq_ops.read = mrl_xfer_plain_cq_read;
	mrl_xfer_plain_cq_ops.readfrom = mrl_xfer_plain_cq_readfrom;
}

int
mrl_xfer_cq_open(struct mrl_cq *cq)
{
	struct mrl_xcq_own *own;
	struct mrl_xcq *xcq;
	int ret;

	if (cq->flags & FI_PEER)
		return 0;
	pthread_once(&mrl_xfer_cq_once, mrl_xfer_cq_init);
	if (!mrl_xfer_domain_leases(cq->domain)) {
		if (cq->cq.ops == &mrl_hook_cq_ops && cq->inner->ops &&
		    cq->inner->ops->read && cq->inner->ops->readfrom)
			cq->cq.ops = &mrl_xfer_plain_cq_ops;
		return 0;
	}
	/* Before the CQ can be read (mrl_xfer_op_in_region's plain loads). */
	mrl_xfer_op_region_init();
	own = calloc(1, sizeof(*own));
	if (!own)
		return -FI_ENOMEM;
	xcq = &own->xcq;
	ret = pthread_mutex_init(&xcq->lock, NULL);
	if (ret) {
		free(own);
		return -ret;
	}
	atomic_init(&own->wait_kind, MRL_XCQ_WAIT_UNKNOWN);
	own->wait_fd = -1;
	atomic_init(&own->signal_fd, -1);
	xcq->entry_size = mrl_hook_cq_entry_size(cq->format);
	xcq->cache = mrl_bind_domain_of(cq->domain)->cache_domain;
	xcq->remote = mrl_bind_remote_of(cq->domain);
	atomic_init(&xcq->guarded, false);
	atomic_init(&xcq->signals, 0);
	atomic_init(&xcq->guard.word, 0);
	atomic_init(&xcq->guard.test_reading, NULL);
	ret = mrl_xfer_claims_init(&xcq->claims);
	if (ret) {
		pthread_mutex_destroy(&xcq->lock);
		free(own);
		return ret;
	}
	cq->ext = xcq;
	switch (xcq->entry_size) {
	case sizeof(struct fi_cq_msg_entry):
		xcq->base = &mrl_xfer_cq_ops[1];
		break;
	case sizeof(struct fi_cq_data_entry):
		xcq->base = &mrl_xfer_cq_ops[2];
		break;
	case sizeof(struct fi_cq_tagged_entry):
		xcq->base = &mrl_xfer_cq_ops[3];
		break;
	default:
		xcq->base = &mrl_xfer_cq_ops[0];
		break;
	}
	cq->cq.ops = (struct fi_ops_cq *) xcq->base;
	return 0;
}

void
mrl_xfer_cq_close(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq = cq->ext;
	int efd;

	if (!xcq)
		return;
	cq->ext = NULL;
	/* No reader is inside at close, so the list is empty (it is emptied
	 * whenever the count reaches 0); give back anything left before the
	 * pools go. */
	mrl_xfer_cq_guard_free((uint32_t) atomic_exchange_explicit(
		&xcq->guard.word, 0, memory_order_acq_rel));
	for (size_t i = 0; i < xcq->npools; i++)
		mrl_xfer_op_pool_unref(xcq->pools[i]);
	free(xcq->pools);
	efd = atomic_load_explicit(&mrl_xfer_cq_own_of(xcq)->signal_fd,
				   memory_order_relaxed);
	if (efd >= 0)
		close(efd);
	mrl_xfer_claims_fini(&xcq->claims);
	pthread_mutex_destroy(&xcq->lock);
	free(mrl_xfer_cq_own_of(xcq));
}

int
mrl_xfer_cq_hold_pool(struct mrl_cq *cq, struct mrl_op_pool *pool)
{
	struct mrl_xcq *xcq = cq->ext;
	int ret = 0;

	if (!xcq)
		return -FI_EINVAL;
	pthread_mutex_lock(&xcq->lock);
	if (xcq->npools == xcq->cap) {
		size_t cap = xcq->cap ? 2 * xcq->cap : 4;
		struct mrl_op_pool **pools =
			realloc(xcq->pools, cap * sizeof(*pools));

		if (!pools) {
			ret = -FI_ENOMEM;
			goto out;
		}
		xcq->pools = pools;
		xcq->cap = cap;
	}
	atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
	xcq->pools[xcq->npools++] = pool;
out:
	pthread_mutex_unlock(&xcq->lock);
	return ret;
}

struct mrl_cq_guard *
mrl_xfer_cq_guard(struct mrl_cq *cq)
{
	struct mrl_xcq *xcq = cq->ext;

	if (!xcq)
		return NULL;
	pthread_mutex_lock(&xcq->lock);
	if (!atomic_load_explicit(&xcq->guarded, memory_order_relaxed)) {
		/* Reads that load the table from now on are counted; one
		 * inside its call already is not (the residual window).
		 * With entries read ahead, the stash table stays until they
		 * are taken, then puts this one back. */
		xcq->base = &mrl_xfer_guard_cq_ops;
		if (!xcq->nstash)
			mrl_xfer_cq_set_ops(cq, &mrl_xfer_guard_cq_ops);
		atomic_store_explicit(&xcq->guarded, true,
				      memory_order_release);
	}
	pthread_mutex_unlock(&xcq->lock);
	return &xcq->guard;
}

/*
 * Before x's first leased FI_MULTI_RECV buffer goes to the provider: on a
 * shared pool whose receives complete on an application CQ, guard that CQ
 * (its reads counted, multi-recv ops' returns to the pool deferred while
 * other readers may hold their entries: mrl_xfer_cq.c) and point the
 * pool at its guard. Serial pools and the internal CQ (read under
 * drain_lock) have one reader at a time and need nothing.
 */
int
mrl_xfer_cq_guard_rx(struct mrl_xep *x)
{
	struct mrl_op_pool *pool = x->pool;
	struct mrl_cq_guard *guard;

	if (!pool)
		return -FI_EINVAL;
	if (pool->serial || x->dir[MRL_RX].route == MRL_ROUTE_INTERNAL) {
		atomic_store_explicit(&x->rx_guarded, true,
				      memory_order_release);
		return 0;
	}
	guard = x->ep->bound.rx_cq ? mrl_xfer_cq_guard(x->ep->bound.rx_cq) :
				     NULL;
	if (!guard) {
		FI_WARN(mrl_hook_prov, FI_LOG_EP_DATA,
			"FI_MULTI_RECV buffers of this endpoint go unleased: "
			"its receive CQ cannot be guarded\n");
		return -FI_EINVAL;
	}
	atomic_store_explicit(&pool->defer, guard, memory_order_release);
	atomic_store_explicit(&x->rx_guarded, true, memory_order_release);
	return 0;
}
