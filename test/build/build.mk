# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the build itself. The layers stay apart in the
# built libraries: no layer's object calls one it may not use
# (CONTRIBUTING.md's table), and the mrcheck provider links the passthrough
# layer alone.
SUITE += $(top_srcdir)/test/build/test_layers.sh
EXTRA_DIST += test/build/test_layers.sh
