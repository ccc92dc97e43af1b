#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# make check's LOG_COMPILER: runs one test entry (a TAP program or script)
# with the suite's environment, and kills it after MRL_TEST_TIMEOUT seconds
# (default 600). automake's tap-driver.sh reads its TAP: a non-zero exit, a
# missing plan (an entry that reports nothing) or a timeout is an ERROR there,
# so a crash is never a pass.
#
# Environment from make check (AM_TESTS_ENVIRONMENT): MRL_TOP_BUILDDIR,
# MRL_TOP_SRCDIR, MRL_SANITIZE.
builddir=${MRL_TOP_BUILDDIR:-$(pwd)}
export MRL_TOP_BUILDDIR="$builddir"
export MRL_TOP_SRCDIR="${MRL_TOP_SRCDIR:-$builddir}"
export FI_PROVIDER_PATH="$builddir/prov/mrlease/.libs"
export MRL_TEST_HOOK_PATH="$builddir/prov/mrcheck/.libs"
# Loopback only: keep providers off other interfaces.
export FI_TCP_IFACE="${FI_TCP_IFACE:-lo}"
export FI_SOCKETS_IFACE="${FI_SOCKETS_IFACE:-lo}"
export FI_UDP_IFACE="${FI_UDP_IFACE:-lo}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$MRL_TOP_SRCDIR/test/common/lsan.supp:print_suppressions=0}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-suppressions=$MRL_TOP_SRCDIR/test/common/tsan.supp:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
timeout_s=${MRL_TEST_TIMEOUT:-600}

timeout --kill-after=10 "$timeout_s" "$@"
rc=$?
[ "$rc" -ne 124 ] || echo "# $1: killed after ${timeout_s} s (MRL_TEST_TIMEOUT)" >&2
exit $rc
