# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the passthrough layer against real providers.
# test/passthrough/ holds test/test_passthrough's sources, one subject each,
# linked into one program (the layer's counters are per process).
# test/passthrough.sh runs test/test_passthrough once per provider and per
# FI_HOOK / FI_PROVIDER set-up (libfabric reads them once per process); the
# suite runs it in two entries, each well inside the per-entry timeout.
check_PROGRAMS += test/test_passthrough
test_test_passthrough_SOURCES = test/passthrough/passthrough.h \
	test/passthrough/main.c test/passthrough/setup.c test/passthrough/hook.c \
	test/passthrough/objects.c test/passthrough/data.c \
	test/passthrough/completion.c test/passthrough/msg_ep.c
test_test_passthrough_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test
test_test_passthrough_LDADD = test/libmrltest.la $(FABRIC_LIBS)
SUITE += $(top_srcdir)/test/passthrough-rdm.sh \
	$(top_srcdir)/test/passthrough-setups.sh
EXTRA_DIST += test/passthrough.sh test/passthrough-rdm.sh \
	test/passthrough-setups.sh test/passthrough-lsan.supp
