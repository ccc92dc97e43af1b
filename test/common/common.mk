# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: what the tests share -- the TAP helpers and the
# loopback fixture (libmrltest.la: mrlt.h, fixture_rdm.h), the data-path tests'
# re-exec helper (xfer_util.h), the counting registrar the cache tests use
# (libcachereg.la), the scripts' TAP helper (ext_tap.sh) and the sanitizers'
# suppressions.

check_LTLIBRARIES += test/common/libmrltest.la
test_common_libmrltest_la_SOURCES = test/common/mrl_test.c test/common/mrlt.h \
	test/common/fixture_rdm.c test/common/fixture_rdm.h \
	test/common/mrlt_shm.c
test_common_libmrltest_la_LIBADD = $(FABRIC_LIBS) -ldl

# The counting registrar (fake or over a real domain) the cache tests share.
check_LTLIBRARIES += test/common/libcachereg.la
test_common_libcachereg_la_SOURCES = test/common/cache_registrar.c test/common/cache_registrar.h
test_common_libcachereg_la_LIBADD = $(FABRIC_LIBS)

XFER_TEST_SOURCES = test/common/xfer_util.c test/common/xfer_util.h
XFER_TEST_LDADD = test/common/libmrltest.la -ldl $(FABRIC_LIBS)

# Read by test/run-entry.sh (LSAN_OPTIONS, TSAN_OPTIONS) and the scripts.
EXTRA_DIST += test/common/lsan.supp test/common/tsan.supp \
	test/common/passthrough-lsan.supp test/common/ext_tap.sh

# The shm regions the tests name do not outlive their process (mrlt_shm.c).
check_PROGRAMS += test/common/test_common_shm_cleanup
test_common_test_common_shm_cleanup_SOURCES = test/common/test_common_shm_cleanup.c
test_common_test_common_shm_cleanup_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += test/common/test_common_shm_cleanup

# A case-name pattern that selects no case fails the run (mrlt_select).
check_PROGRAMS += test/common/test_common_select
test_common_test_common_select_SOURCES = test/common/test_common_select.c
test_common_test_common_select_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += test/common/test_common_select
