# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the data path -- operand resolution on posts,
# operation contexts and pools, completion paths, MR interception.
# prov/mrlease/include/mrl_xfer.h states the layer's rules and holds what
# other layers call; the private headers are beside the sources
# (mrl_xfer_op.h, _state.h, _post.h, _single.h, _msg.h; mrl_xfer_cq_int.h
# what the CQ's files share; mrl_xfer_ctl.h is the tests' control codes).
noinst_LTLIBRARIES += prov/mrlease/libmrl-xfer.la
prov_mrlease_libmrl_xfer_la_SOURCES = \
	prov/mrlease/include/mrl_xfer.h \
	prov/mrlease/src/7-xfer/mrl_xfer_op.h \
	prov/mrlease/src/7-xfer/mrl_xfer_state.h \
	prov/mrlease/src/7-xfer/mrl_xfer_post.h \
	prov/mrlease/src/7-xfer/mrl_xfer_single.h \
	prov/mrlease/src/7-xfer/mrl_xfer_msg.h \
	prov/mrlease/src/7-xfer/mrl_xfer_ctl.h \
	prov/mrlease/src/7-xfer/mrl_xfer_op.c \
	prov/mrlease/src/7-xfer/mrl_xfer_post.c \
	prov/mrlease/src/7-xfer/mrl_xfer_ep.c \
	prov/mrlease/src/7-xfer/mrl_xfer_msg.c \
	prov/mrlease/src/7-xfer/mrl_xfer_tagged.c \
	prov/mrlease/src/7-xfer/mrl_xfer_claim.c \
	prov/mrlease/src/7-xfer/mrl_xfer_rma.c \
	prov/mrlease/src/7-xfer/mrl_xfer_atomic.c \
	prov/mrlease/src/7-xfer/mrl_xfer_cq_int.h \
	prov/mrlease/src/7-xfer/mrl_xfer_cq.c \
	prov/mrlease/src/7-xfer/mrl_xfer_cq_wait.c \
	prov/mrlease/src/7-xfer/mrl_xfer_cq_guard.c \
	prov/mrlease/src/7-xfer/mrl_xfer_cq_read.c \
	prov/mrlease/src/7-xfer/mrl_xfer_cntr.c \
	prov/mrlease/src/7-xfer/mrl_xfer_domain.c
