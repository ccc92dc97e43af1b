/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's rma wrappers: each post's local operands checked and tracked,
 * its targets compared with their keys (mrcheck_post.h).
 */
#include "config.h"

#include "mrcheck_post.h"

/* fi_readv and fi_writev: the iovec checked, its target compared, then
 * call with its translated descs. */
static ssize_t
chk_iov(struct fid_ep *ep, const char *what, enum chk_dir dir,
	ssize_t (*call)(struct fid_ep *, const struct iovec *, void **, size_t,
			fi_addr_t, uint64_t, uint64_t, void *),
	const struct iovec *iov, void **desc, size_t count, fi_addr_t peer,
	uint64_t addr, uint64_t key, void *context)
{
	struct chk_post p;
	int ret = chk_start_iov(&p, ep, what, dir, iov, desc, count, context);

	if (ret)
		return ret;
	chk_target(&p, addr, chk_cost_bytes(iov, count), key);
	return chk_end(&p, call(ep, iov, chk_descs(&p, 0, desc), count, peer,
				addr, key, p.ctx));
}

/* fi_readmsg and fi_writemsg: the message's iovec checked, its targets
 * compared, then call with a copy of it naming the translated descs and
 * the context to post with. */
static ssize_t
chk_msg(struct fid_ep *ep, const char *what, enum chk_dir dir,
	ssize_t (*call)(struct fid_ep *, const struct fi_msg_rma *, uint64_t),
	const struct fi_msg_rma *msg, uint64_t flags)
{
	struct chk_post p;
	struct fi_msg_rma m = *msg;
	int ret = chk_start_msg(&p, ep, what, dir, msg->msg_iov, msg->desc,
				msg->iov_count, flags, msg->context);

	if (ret)
		return ret;
	chk_targets_rma(&p, msg->rma_iov, msg->rma_iov_count);
	m.desc = chk_descs(&p, 0, msg->desc);
	m.context = p.ctx;
	return chk_end(&p, call(ep, &m, flags));
}

static ssize_t
chk_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
	 fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_read", CHK_FETCH, buf, len, desc,
				context);

	if (ret)
		return ret;
	chk_target(&p, addr, len, key);
	return chk_end(&p,
		       mrl_hook_ep_rma_ops.read(ep, buf, len, p.inner[0],
						src_addr, addr, key, p.ctx));
}

static ssize_t
chk_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
	  fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	return chk_iov(ep, "fi_readv", CHK_FETCH, mrl_hook_ep_rma_ops.readv,
		       iov, desc, count, src_addr, addr, key, context);
}

static ssize_t
chk_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return chk_msg(ep, "fi_readmsg", CHK_FETCH, mrl_hook_ep_rma_ops.readmsg,
		       msg, flags);
}

static ssize_t
chk_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	  fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_write", CHK_SEND, buf, len, desc,
				context);

	if (ret)
		return ret;
	chk_target(&p, addr, len, key);
	return chk_end(&p,
		       mrl_hook_ep_rma_ops.write(ep, buf, len, p.inner[0],
						 dest_addr, addr, key, p.ctx));
}

static ssize_t
chk_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	   void *context)
{
	return chk_iov(ep, "fi_writev", CHK_SEND, mrl_hook_ep_rma_ops.writev,
		       iov, desc, count, dest_addr, addr, key, context);
}

static ssize_t
chk_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return chk_msg(ep, "fi_writemsg", CHK_SEND,
		       mrl_hook_ep_rma_ops.writemsg, msg, flags);
}

static ssize_t
chk_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	      uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	      void *context)
{
	struct chk_post p;
	int ret = chk_start_buf(&p, ep, "fi_writedata", CHK_SEND, buf, len,
				desc, context);

	if (ret)
		return ret;
	chk_target(&p, addr, len, key);
	return chk_end(&p, mrl_hook_ep_rma_ops.writedata(
				   ep, buf, len, p.inner[0], data, dest_addr,
				   addr, key, p.ctx));
}

/* Inject calls need no local desc (the provider copies the payload), but
 * their target is a remote key like any other. */
static ssize_t
chk_inject_write(struct fid_ep *ep, const void *buf, size_t len,
		 fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	struct chk_post p;

	chk_post_init(&p, ep, "fi_inject_write");
	chk_target(&p, addr, len, key);
	return chk_end(&p, mrl_hook_ep_rma_ops.inject(ep, buf, len, dest_addr,
						      addr, key));
}

static ssize_t
chk_inject_writedata(struct fid_ep *ep, const void *buf, size_t len,
		     uint64_t data, fi_addr_t dest_addr, uint64_t addr,
		     uint64_t key)
{
	struct chk_post p;

	chk_post_init(&p, ep, "fi_inject_writedata");
	chk_target(&p, addr, len, key);
	return chk_end(&p, mrl_hook_ep_rma_ops.injectdata(
				   ep, buf, len, data, dest_addr, addr, key));
}

struct fi_ops_rma chk_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = chk_read,
	.readv = chk_readv,
	.readmsg = chk_readmsg,
	.write = chk_write,
	.writev = chk_writev,
	.writemsg = chk_writemsg,
	.writedata = chk_writedata,
	.inject = chk_inject_write,
	.injectdata = chk_inject_writedata,
};
