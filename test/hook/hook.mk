# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the passthrough layer's tests (prov/mrlease/src/3-hook/).

check_PROGRAMS += test/hook/test_hook_smoke
test_hook_test_hook_smoke_SOURCES = test/hook/test_hook_smoke.c
test_hook_test_hook_smoke_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += test/hook/test_hook_smoke
# The layer over a fake provider (translations no local provider exercises).
check_PROGRAMS += test/hook/test_hook_fake
test_hook_test_hook_fake_SOURCES = test/hook/test_hook_fake.c
test_hook_test_hook_fake_LDADD = test/common/libmrltest.la prov/mrlease/libmrlease-core.la \
	$(FABRIC_LIBS)
SUITE += test/hook/test_hook_fake
# Under tcp;ofi_rxm with FI_MR_LOCAL the layer delivers what the bare
# provider delivers (rxm 1.17's rendezvous reads every iov from its MR's start).
check_PROGRAMS += test/hook/test_hook_rxm_rndv
test_hook_test_hook_rxm_rndv_SOURCES = test/hook/test_hook_rxm_rndv.c test/common/xfer_util.c \
	test/common/xfer_util.h
test_hook_test_hook_rxm_rndv_LDADD = test/common/libmrltest.la -ldl $(FABRIC_LIBS)
SUITE += test/hook/test_hook_rxm_rndv

# test/hook/passthrough/ holds test/hook/test_hook_passthrough's sources, one subject each,
# linked into one program (the layer's counters are per process).
# test/hook/passthrough.sh runs test/hook/test_hook_passthrough once per provider and per
# FI_HOOK / FI_PROVIDER set-up (libfabric reads them once per process); the
# suite runs it in two entries, each well inside the per-entry timeout.
check_PROGRAMS += test/hook/test_hook_passthrough
test_hook_test_hook_passthrough_SOURCES = test/hook/passthrough/passthrough.h \
	test/hook/passthrough/main.c test/hook/passthrough/setup.c test/hook/passthrough/hook.c \
	test/hook/passthrough/objects.c test/hook/passthrough/data.c \
	test/hook/passthrough/completion.c test/hook/passthrough/msg_ep.c
test_hook_test_hook_passthrough_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test
test_hook_test_hook_passthrough_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += $(top_srcdir)/test/hook/passthrough-rdm.sh \
	$(top_srcdir)/test/hook/passthrough-setups.sh
EXTRA_DIST += test/hook/passthrough.sh test/hook/passthrough-rdm.sh \
	test/hook/passthrough-setups.sh test/common/passthrough-lsan.supp
