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

# The entry's pid (sh execs it), so that what it leaves in /dev/shm under
# its pid can be removed once it is gone: a region or statistics file of a
# process killed by the timeout, or one that crashed, stays until reboot
# otherwise. Its children remove their own (test/common/mrlt_shm.c), and
# the end of make check fails on any left (test/check-leaks.sh).
# shellcheck source=test/common/leaks.sh
. "$(dirname "$0")/common/leaks.sh"
pidfile=$(mktemp "${TMPDIR:-/tmp}/mrlt-entry.XXXXXX") || exit 1
# shellcheck disable=SC2016 # $$ and "$@" are the inner shell's
timeout --kill-after=10 "$timeout_s" sh -c 'echo $$ >"$0" && exec "$@"' \
	"$pidfile" "$@"
rc=$?
[ "$rc" -ne 124 ] || echo "# $1: killed after ${timeout_s} s (MRL_TEST_TIMEOUT)" >&2
pid=$(cat "$pidfile")
rm -f "$pidfile"
if [ -n "$pid" ]; then
	mrl_leaks "$pid" | while read -r path; do
		echo "# $1: removed $path, left behind by its process $pid" >&2
		rm -f "$path"
	done
fi
exit $rc
