/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's msg wrappers: each post checked and tracked (mrcheck_post.h).
 * Inject calls copy the payload: no desc, no completion; they forward
 * unchanged.
 */
#include "config.h"

#include "mrcheck_post.h"

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
	struct chk_post p;
	int ret = chk_start_iov(&p, ep, "fi_recvv", CHK_RECV, iov, desc, count,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_msg_ops.recvv(ep, iov,
						     chk_descs(&p, 0, desc),
						     count, src_addr, p.ctx));
}

static ssize_t
chk_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg m = *msg;
	int ret = chk_start_msg(&p, ep, "fi_recvmsg", CHK_RECV, msg->msg_iov,
				msg->desc, msg->iov_count, flags, msg->context);

	if (ret)
		return ret;
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, mrl_hook_ep_msg_ops.recvmsg(ep, &m, flags));
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
	struct chk_post p;
	int ret = chk_start_iov(&p, ep, "fi_sendv", CHK_SEND, iov, desc, count,
				context);

	if (ret)
		return ret;
	return chk_end(&p, mrl_hook_ep_msg_ops.sendv(ep, iov,
						     chk_descs(&p, 0, desc),
						     count, dest_addr, p.ctx));
}

static ssize_t
chk_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg m = *msg;
	int ret = chk_start_msg(&p, ep, "fi_sendmsg", CHK_SEND, msg->msg_iov,
				msg->desc, msg->iov_count, flags, msg->context);

	if (ret)
		return ret;
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, mrl_hook_ep_msg_ops.sendmsg(ep, &m, flags));
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
