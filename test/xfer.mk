# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the test-only mrcheck hook the tests load.
#
# test/libmrcheck-fi.la is the test-only hooking provider "mrcheck" (see
# test/mrcheck/mrcheck.h): a DL plugin built on the passthrough layer that
# behaves like a provider requiring FI_MR_LOCAL. Never installed; tests load
# it from MRL_TEST_HOOK_PATH (= <builddir>/test/.libs) with
# FI_HOOK='mrcheck;mrlease' (mrcheck below mrlease).
check_LTLIBRARIES += test/libmrcheck-fi.la
test_libmrcheck_fi_la_SOURCES = test/mrcheck/mrcheck.c test/mrcheck/mrcheck_ep.c \
	test/mrcheck/mrcheck_cq.c test/mrcheck/mrcheck.h test/mrcheck/mrcheck_int.h
test_libmrcheck_fi_la_LIBADD = prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
test_libmrcheck_fi_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	-export-symbols-regex '^(fi_prov_ini|mrcheck_global_ops)$$' $(AM_LDFLAGS)
