# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the passthrough layer against real providers.
# test/passthrough.sh runs test/test_passthrough once per provider and per
# FI_HOOK / FI_PROVIDER set-up (libfabric reads them once per process); the
# suite runs it in two entries, each well inside the per-entry timeout.
check_PROGRAMS += test/test_passthrough
test_test_passthrough_SOURCES = test/test_passthrough.c
test_test_passthrough_LDADD = test/libmrltest.la $(FABRIC_LIBS)
SUITE += $(top_srcdir)/test/passthrough-rdm.sh \
	$(top_srcdir)/test/passthrough-setups.sh
EXTRA_DIST += test/passthrough.sh test/passthrough-rdm.sh \
	test/passthrough-setups.sh test/passthrough-lsan.supp
