# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor's churn ring
# (prov/mrlease/include/mrl_churn.h) as a data structure.
check_PROGRAMS += test/test_churn
test_test_churn_SOURCES = test/test_churn.c
test_test_churn_LDADD = prov/mrlease/libmrlease-core.la test/libmrltest.la \
	$(FABRIC_LIBS)
SUITE += test/test_churn
SUITE_CONCURRENCY += test/test_churn
