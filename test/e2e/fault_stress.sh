#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/e2e/test_e2e_fault_stress once per case (each needs its own
# FI_MRCHECK_FAULT_* settings, read once per process) and prints one TAP line
# per case.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/e2e/test_e2e_fault_stress"

run() {
	local out rc
	out=$("$prog" "$1" 2>&1)
	rc=$?
	grep -E '^# ' <<<"$out"
	report_case "$out" "$rc" "test_e2e_fault_stress $1"
}

run stress
run close_cache
run close
run refused_domain
finish
