# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# FI_MRLEASE_* parsing and definitions (unit level, a stand-in provider).
check_PROGRAMS += test/test_params
test_test_params_SOURCES = test/test_params.c
test_test_params_LDADD = test/libmrltest.la prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/test_params

# The jemalloc example as a test (examples/examples.mk builds it).
SUITE += $(top_srcdir)/test/test_jemalloc_kv.sh
EXTRA_DIST += test/test_jemalloc_kv.sh test/ext_tap.sh

# FI_MRLEASE_OPS_1 through libfabric with FI_HOOK=mrlease on tcp;ofi_rxm.
check_PROGRAMS += test/test_ext
test_test_ext_SOURCES = test/test_ext.c
test_test_ext_LDADD = test/libmrltest.la $(FABRIC_LIBS)
SUITE += test/test_ext
SUITE_CONCURRENCY += test/test_ext

# FI_MRLEASE_* through fi_info -e, a bad value's warning, FI_MRLEASE_STATS.
SUITE += $(top_srcdir)/test/test_params.sh
EXTRA_DIST += test/test_params.sh

# make install into a temporary DESTDIR and a client built against the
# installed header only.
SUITE += $(top_srcdir)/test/test_install.sh
EXTRA_DIST += test/test_install.sh test/install_client.c

# Pins in real transfers under the strict checker (FI_HOOK='mrcheck;mrlease').
check_PROGRAMS += test/test_ext_mrcheck
test_test_ext_mrcheck_SOURCES = test/test_ext_mrcheck.c $(XFER_TEST_SOURCES)
test_test_ext_mrcheck_LDADD = $(XFER_TEST_LDADD)
SUITE += test/test_ext_mrcheck
