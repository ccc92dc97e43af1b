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
# --- end passthrough smoke test ---
