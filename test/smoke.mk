# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the passthrough layer's own smoke test.
