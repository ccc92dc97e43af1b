#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/monitor/test_monitor_life once per group of cases (mrlease reads
# FI_MRLEASE_MONITOR_CHURN once per process; the program sets its own
# environment) and prints their TAP as one stream, renumbered:
#   cached: FI_MRLEASE_MONITOR_CHURN=0, every miss watched and cached;
#   churn:  the default churn allowance.
# A group that exits non-zero without a failing case (a crash, a hang killed
# by the harness) is a failure of its own.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/monitor/test_monitor_life"

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
		not_ok "$1: test_monitor_life $1" "exited with status $rc"
}

run_group cached
run_group churn
finish
