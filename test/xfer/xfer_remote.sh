#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/xfer/test_xfer_remote once per group of cases (mrlease reads
# FI_MRLEASE_REMOTE* once per process; the program sets its own
# environment) and prints their TAP as one stream, renumbered:
#   cache:   FI_MRLEASE_REMOTE=cache (long idle delay, 8 idle entries);
#   forward: the default, every remote registration forwarded;
#   idle:    cache with a short idle delay;
#   inner:   cache on rxm's inner tcp domain (FI_MRLEASE_HOOK_INNER=1).
# A group that exits non-zero without a failing case (a crash, a hang killed
# by the harness) is a failure of its own.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/xfer/test_xfer_remote"

run_group() {
	local out rc line name failed=0
	out=$("$prog" "$1" 2>&1)
	rc=$?
	while IFS= read -r line; do
		name=$(sed -E 's/^(not )?ok [0-9]+ - //; s/ # SKIP .*//' <<<"$line")
		case "$line" in
		"ok "*"# SKIP "*) skip "$1: $name" "${line##*# SKIP }" ;;
		"ok "*) ok "$1: $name" ;;
		"not ok "*)
			not_ok "$1: $name" "(the lines above)"
			failed=1
			;;
		"1.."*) ;;
		"#"*) printf '%s\n' "$line" ;;
		*) printf '# %s\n' "$line" ;;
		esac
	done <<<"$out"
	[ "$rc" -eq 0 ] || [ "$failed" -ne 0 ] ||
		not_ok "$1: test_xfer_remote $1" "exited with status $rc"
}

run_group cache
run_group forward
run_group idle
run_group inner
finish
