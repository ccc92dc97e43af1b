/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Blocking CQ reads, fi_cq_signal, and the read-ahead behind poll sets and
 * fi_trywait: what waits for the application's entries when the hook hides
 * others (see below). Entries are translated by mrl_xfer_cq_read.c,
 * counted on guarded CQs by mrl_xfer_cq_guard.c.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include "mrl_xfer.h"
#include "mrl_xfer_cq_int.h"

/* CQs holding read-ahead completions (struct mrl_xcq stash): any format. */
static struct fi_ops_cq mrl_xfer_stash_cq_ops;

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
 * given during the call (counted by mrl_xfer_cq_wait_signal) turns the retry
 * into a last look that does not wait, for providers whose signal only wakes a
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
int
mrl_xfer_cq_wait_signal(struct fid_cq *cq_fid)
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

ssize_t
mrl_xfer_cq_wait_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr, const void *cond, int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, src_addr, cond,
					timeout, false);
}

ssize_t
mrl_xfer_cq_wait_sread(struct fid_cq *cq_fid, void *buf, size_t count,
		       const void *cond, int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, NULL, cond, timeout,
					false);
}

ssize_t
mrl_xfer_cq_wait_guard_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond,
				 int timeout)
{
	return mrl_xfer_cq_sreadfrom_in(cq_fid, buf, count, src_addr, cond,
					timeout, true);
}

ssize_t
mrl_xfer_cq_wait_guard_sread(struct fid_cq *cq_fid, void *buf, size_t count,
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
	bool guarded =
		atomic_load_explicit(&xcq->guarded, memory_order_relaxed);
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

void
mrl_xfer_cq_wait_init(void)
{
	mrl_xfer_stash_cq_ops = mrl_hook_cq_ops;
	mrl_xfer_stash_cq_ops.read = mrl_xfer_scq_read;
	mrl_xfer_stash_cq_ops.readfrom = mrl_xfer_scq_readfrom;
	mrl_xfer_stash_cq_ops.readerr = mrl_xfer_scq_readerr;
	mrl_xfer_stash_cq_ops.sread = mrl_xfer_scq_sread;
	mrl_xfer_stash_cq_ops.sreadfrom = mrl_xfer_scq_sreadfrom;
	mrl_xfer_stash_cq_ops.signal = mrl_xfer_cq_wait_signal;
}
