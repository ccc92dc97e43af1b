# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the data path (issue 4) -- operand resolution on
# posts, operation contexts and pools, completion paths, MR interception.
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_xfer.h \
	prov/mrlease/src/xfer/mrl_xfer_pool.c \
	prov/mrlease/src/xfer/mrl_xfer_post.c \
	prov/mrlease/src/xfer/mrl_xfer_ep.c \
	prov/mrlease/src/xfer/mrl_xfer_msg.c \
	prov/mrlease/src/xfer/mrl_xfer_tagged.c \
	prov/mrlease/src/xfer/mrl_xfer_rma.c \
	prov/mrlease/src/xfer/mrl_xfer_atomic.c \
	prov/mrlease/src/xfer/mrl_completion_cq.c \
	prov/mrlease/src/xfer/mrl_completion_cntr.c \
	prov/mrlease/src/xfer/mrl_mr.c
