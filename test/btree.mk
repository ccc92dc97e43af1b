# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the lease cache's interval index (a B+tree,
# prov/mrlease/src/cache/mrl_btree.h) alone, against a reference model.
check_PROGRAMS += test/test_btree
test_test_btree_SOURCES = test/test_btree.c
test_test_btree_CPPFLAGS = $(AM_CPPFLAGS)
test_test_btree_LDADD = test/libmrltest.la prov/mrlease/libmrlease-core.la \
	$(FABRIC_LIBS)
SUITE += test/test_btree
