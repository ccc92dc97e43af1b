# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the passthrough layer's own smoke test.

# --- passthrough smoke test (owner: passthrough layer) ---
check_PROGRAMS += test/test_hook_smoke
test_test_hook_smoke_SOURCES = test/test_hook_smoke.c
test_test_hook_smoke_LDADD = test/libmrltest.la $(FABRIC_LIBS)
SUITE += test/test_hook_smoke
# The layer over a fake provider (translations no local provider exercises).
check_PROGRAMS += test/test_hook_fake
test_test_hook_fake_SOURCES = test/test_hook_fake.c
test_test_hook_fake_LDADD = test/libmrltest.la prov/mrlease/libmrlease-core.la \
	$(FABRIC_LIBS)
SUITE += test/test_hook_fake
# Under tcp;ofi_rxm with FI_MR_LOCAL the layer delivers what the bare
# provider delivers (rxm 1.17's rendezvous reads every iov from its MR's start).
check_PROGRAMS += test/test_hook_rxm_rndv
test_test_hook_rxm_rndv_SOURCES = test/test_hook_rxm_rndv.c test/xfer_util.c \
	test/xfer_util.h
test_test_hook_rxm_rndv_LDADD = test/libmrltest.la -ldl $(FABRIC_LIBS)
SUITE += test/test_hook_rxm_rndv
# --- end passthrough smoke test ---
