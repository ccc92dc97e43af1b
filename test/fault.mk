# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: mrcheck's fault injection.

# mrcheck's fault injection (MRCHECK_FAULT_*, test/mrcheck/mrcheck.h), in
# the plugin test/xfer.mk builds.
test_libmrcheck_fi_la_SOURCES += test/mrcheck/mrcheck_fault.c
