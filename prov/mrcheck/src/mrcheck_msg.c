/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's msg wrappers: each post checked and tracked (mrcheck_post.h).
 * Inject calls copy the payload: no desc, no completion; they forward
 * unchanged.
 */
#include "config.h"

#include "mrcheck_post.h"

/* fi_recvv and fi_sendv: the iovec checked, then call with its translated
 * descs. */
static ssize_t
chk_iov(struct fid_ep *ep, const char *what, enum chk_dir dir,
	ssize_t (*call)(struct fid_ep *, const struct iovec *, void **, size_t,
			fi_addr_t, void *),
	const struct iovec *iov, void **desc, size_t count, fi_addr_t addr,
	void *context)
{
	struct chk_post p;
	int ret = chk_start_iov(&p, ep, what, dir, iov, desc, count, context);

	if (ret)
		return ret;
	return chk_end(
		&p, call(ep, iov, chk_descs(&p, 0, desc), count, addr, p.ctx));
}

/* fi_recvmsg and fi_sendmsg: the message's iovec checked, then call with a
 * copy of it naming the translated descs and the context to post with. */
static ssize_t
chk_msg(struct fid_ep *ep, const char *what, enum chk_dir dir,
	ssize_t (*call)(struct fid_ep *, const struct fi_msg *, uint64_t),
	const struct fi_msg *msg, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg m = *msg;
	int ret = chk_start_msg(&p, ep, what, dir, msg->msg_iov, msg->desc,
				msg->iov_count, flags, msg->context);

	if (ret)
		return ret;
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, call(ep, &m, flags));
}

static ssize_t
chk_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
	 fi_addr_t src_addr, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_recv", CHK_RECV, buf, len, desc,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_msg_ops.recv(ep, buf, len, p.inner[0],
						    src_addr, p.ctx));
}

static ssize_t
chk_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
	  fi_addr_t src_addr, void *context)
{
	return chk_iov(ep, "fi_recvv", CHK_RECV, mrl_hook_ep_msg_ops.recvv, iov,
		       desc, count, src_addr, context);
}

static ssize_t
chk_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	return chk_msg(ep, "fi_recvmsg", CHK_RECV, mrl_hook_ep_msg_ops.recvmsg,
		       msg, flags);
}

static ssize_t
chk_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	 fi_addr_t dest_addr, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_send", CHK_SEND, buf, len, desc,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_msg_ops.send(ep, buf, len, p.inner[0],
						    dest_addr, p.ctx));
}

static ssize_t
chk_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
	  fi_addr_t dest_addr, void *context)
{
	return chk_iov(ep, "fi_sendv", CHK_SEND, mrl_hook_ep_msg_ops.sendv, iov,
		       desc, count, dest_addr, context);
}

static ssize_t
chk_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	return chk_msg(ep, "fi_sendmsg", CHK_SEND, mrl_hook_ep_msg_ops.sendmsg,
		       msg, flags);
}

static ssize_t
chk_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	     uint64_t data, fi_addr_t dest_addr, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_senddata", CHK_SEND, buf, len, desc,
				context);

	if (ret)
		return ret;
	return chk_end(&p,
		       mrl_hook_ep_msg_ops.senddata(ep, buf, len, p.inner[0],
						    data, dest_addr, p.ctx));
}

struct fi_ops_msg chk_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = chk_recv,
	.recvv = chk_recvv,
	.recvmsg = chk_recvmsg,
	.send = chk_send,
	.sendv = chk_sendv,
	.sendmsg = chk_sendmsg,
	.senddata = chk_senddata,
};
