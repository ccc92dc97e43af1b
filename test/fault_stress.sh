#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/test_fault_stress once per case (each needs its own
# MRCHECK_FAULT_* settings, read once per process) and prints one TAP line
# per case.
set -u
# shellcheck source=test/ext_tap.sh
. "$(dirname "$0")/ext_tap.sh"
prog="$builddir/test/test_fault_stress"

run() {
	local out rc line name
	out=$("$prog" "$1" 2>&1)
	rc=$?
	line=$(grep -E '^(not )?ok ' <<<"$out" | head -n 1)
	name=$(sed -E 's/^(not )?ok [0-9]+ - //; s/ # SKIP .*//' <<<"$line")
	name=${name:-"test_fault_stress $1"}
	grep -E '^# ' <<<"$out"
	case "$line" in
	"ok "*"# SKIP "*) skip "$name" "${line##*# SKIP }" ;;
	"ok "*) check "$name" "$rc" "exited with status $rc" "$(tail -n 30 <<<"$out")" ;;
	*) not_ok "$name" "exited with status $rc" "$(tail -n 40 <<<"$out")" ;;
	esac
}

run stress
run close_cache
run close
run refused_domain
finish
