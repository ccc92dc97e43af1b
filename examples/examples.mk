# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# The quick-start demo (./quickstart demo).
noinst_PROGRAMS += examples/mrl_demo
examples_mrl_demo_SOURCES = examples/mrl_demo.c
examples_mrl_demo_LDADD = $(FABRIC_LIBS)

# A real allocator wired to the lease contract (run by the suite through
# test/plugin/test_jemalloc_kv.sh).
if HAVE_JEMALLOC
noinst_PROGRAMS += examples/jemalloc_kv
examples_jemalloc_kv_SOURCES = examples/jemalloc_kv.c
examples_jemalloc_kv_CFLAGS = $(AM_CFLAGS) $(JEMALLOC_CFLAGS)
examples_jemalloc_kv_LDADD = $(JEMALLOC_LIBS) $(FABRIC_LIBS)
endif
