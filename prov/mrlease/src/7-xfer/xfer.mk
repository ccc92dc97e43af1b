# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the data path -- operand resolution on posts,
# operation contexts and pools, completion paths, MR interception.
# prov/mrlease/include/mrl_xfer.h states the layer's rules and holds what
# other layers call; the private headers are beside the sources
# (mrl_xfer_op.h, _state.h, _inline.h; mrl_xfer_cq_int.h what the CQ's
# files share; mrl_xfer_ctl.h is the tests' control codes).
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_xfer.h \
	prov/mrlease/src/7-xfer/mrl_xfer_op.h \
	prov/mrlease/src/7-xfer/mrl_xfer_state.h \
	prov/mrlease/src/7-xfer/mrl_xfer_inline.h \
	prov/mrlease/src/7-xfer/mrl_xfer_ctl.h \
	prov/mrlease/src/7-xfer/mrl_xfer_pool.c \
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
