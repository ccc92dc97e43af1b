# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the plugin glue's tests (prov/mrlease/src/8-plugin/):
# the FI_MRLEASE_OPS_1 extension, and the jemalloc example that uses it.

# The jemalloc example as a test (examples/examples.mk builds it).
SUITE += $(top_srcdir)/test/plugin/test_jemalloc_kv.sh
EXTRA_DIST += test/plugin/test_jemalloc_kv.sh test/common/ext_tap.sh

# FI_MRLEASE_OPS_1 through libfabric with FI_HOOK=mrlease on tcp;ofi_rxm.
check_PROGRAMS += test/plugin/test_plugin_ext
test_plugin_test_plugin_ext_SOURCES = test/plugin/test_plugin_ext.c
test_plugin_test_plugin_ext_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += test/plugin/test_plugin_ext
SUITE_CONCURRENCY += test/plugin/test_plugin_ext

# Pins in real transfers under the strict checker (FI_HOOK='mrcheck;mrlease').
check_PROGRAMS += test/plugin/test_plugin_ext_mrcheck
test_plugin_test_plugin_ext_mrcheck_SOURCES = test/plugin/test_plugin_ext_mrcheck.c $(XFER_TEST_SOURCES)
test_plugin_test_plugin_ext_mrcheck_LDADD = $(XFER_TEST_LDADD)
SUITE += test/plugin/test_plugin_ext_mrcheck
