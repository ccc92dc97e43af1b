# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.
BENCHES =

# ---- bench/xfer_bench: data-path message rate, four modes (issue 4) ----
noinst_PROGRAMS += bench/xfer_bench
bench_xfer_bench_SOURCES = bench/xfer_bench.c test/xfer_util.c test/xfer_util.h
bench_xfer_bench_LDADD = -ldl $(FABRIC_LIBS)
BENCHES += bench/xfer_bench
