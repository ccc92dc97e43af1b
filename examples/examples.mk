# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# The quick-start demo (./quickstart demo).
noinst_PROGRAMS += examples/mrl_demo
examples_mrl_demo_SOURCES = examples/mrl_demo.c
examples_mrl_demo_LDADD = $(FABRIC_LIBS)
