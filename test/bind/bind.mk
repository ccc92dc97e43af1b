# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the binding's tests (prov/mrlease/src/6-bind/).

# The churn ring (prov/mrlease/src/6-bind/mrl_bind_churn.h) as a data
# structure.
check_PROGRAMS += test/bind/test_bind_churn
test_bind_test_bind_churn_SOURCES = test/bind/test_bind_churn.c
test_bind_test_bind_churn_LDADD = prov/mrlease/libmrlease-core.la test/common/libmrltest.la \
	$(FABRIC_LIBS)
SUITE += test/bind/test_bind_churn
SUITE_CONCURRENCY += test/bind/test_bind_churn
