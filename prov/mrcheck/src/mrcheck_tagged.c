/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's tagged wrappers: each post checked and tracked
 * (mrcheck_post.h); peeks and claims as fi_tagged(3) has them.
 */
#include "config.h"

#include "mrcheck_post.h"

static ssize_t
chk_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
	  fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_trecv", CHK_TRECV, buf, len, desc,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_tagged_ops.recv(ep, buf, len, p.inner[0],
						       src_addr, tag, ignore,
						       p.ctx));
}

static ssize_t
chk_trecvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
	   void *context)
{
	struct chk_post p;
	int ret = chk_start_iov(&p, ep, "fi_trecvv", CHK_TRECV, iov, desc,
				count, context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_tagged_ops.recvv(
				   ep, iov, chk_descs(&p, 0, desc), count,
				   src_addr, tag, ignore, p.ctx));
}

static ssize_t
chk_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg_tagged m = *msg;
	/* Peeks and FI_DISCARD move no data (a peek's buffers are not even
	 * looked at); a claim keeps the context of its peek, and is tracked
	 * by it when it moves data. */
	bool data = !(flags & FI_PEEK) || (flags & FI_CLAIM);
	bool moves = !(flags & (FI_PEEK | FI_DISCARD));
	int ret;

	chk_post_init(&p, ep, "fi_trecvmsg");
	p.claim = !!(flags & FI_CLAIM);
	if (data)
		chk_add_iov(&p, msg->msg_iov, msg->desc, msg->iov_count);
	ret = chk_begin(&p, moves,
			moves || !p.claim ? chk_rx_tracked(p.ep, flags) :
					    CHK_UNTRACKED,
			false, msg->context);
	if (ret)
		return ret;
	if (data)
		m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, mrl_hook_ep_tagged_ops.recvmsg(ep, &m, flags));
}

static ssize_t
chk_tsend(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	  fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_tsend", CHK_SEND, buf, len, desc,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_tagged_ops.send(ep, buf, len, p.inner[0],
						       dest_addr, tag, p.ctx));
}

static ssize_t
chk_tsendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct chk_post p;
	int ret = chk_start_iov(&p, ep, "fi_tsendv", CHK_SEND, iov, desc, count,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_tagged_ops.sendv(
				   ep, iov, chk_descs(&p, 0, desc), count,
				   dest_addr, tag, p.ctx));
}

static ssize_t
chk_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg_tagged m = *msg;
	int ret = chk_start_msg(&p, ep, "fi_tsendmsg", CHK_SEND, msg->msg_iov,
				msg->desc, msg->iov_count, flags, msg->context);

	if (ret)
		return ret;
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, mrl_hook_ep_tagged_ops.sendmsg(ep, &m, flags));
}

static ssize_t
chk_tsenddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	      uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_tsenddata", CHK_SEND, buf, len,
				desc, context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_tagged_ops.senddata(
				   ep, buf, len, p.inner[0], data, dest_addr,
				   tag, p.ctx));
}

struct fi_ops_tagged chk_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = chk_trecv,
	.recvv = chk_trecvv,
	.recvmsg = chk_trecvmsg,
	.send = chk_tsend,
	.sendv = chk_tsendv,
	.sendmsg = chk_tsendmsg,
	.senddata = chk_tsenddata,
};
