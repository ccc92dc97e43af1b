#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/monitor/test_monitor_unmap once per retention setting (mrlease reads
# FI_MRLEASE_PINNING and FI_MRLEASE_MONITOR once per process) with the
# verdict the setting must give, and prints one TAP line per run:
#   stale: entries retained past their last lease with nothing watching
#          memory; mrcheck's frame checker must see the stale registrations
#          (otherwise the other runs' zero proves nothing);
#   clean: no post may use a registration whose pages were unmapped.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/monitor/test_monitor_unmap"

# run EXPECT PINNING MONITOR [MONITOR_CHURN]: churn 0 watches every miss,
# the default (8) registers most rounds of a churning address per operation
run() {
	local out rc churn=${4:-8}
	out=$(FI_MRLEASE_PINNING=$2 FI_MRLEASE_MONITOR=$3 \
		FI_MRLEASE_MONITOR_CHURN=$churn "$prog" "$1" 2>&1)
	rc=$?
	grep -E '^# (FI_MRLEASE_|mrcheck:|mrlease:)' <<<"$out"
	report_case "$out" "$rc" \
		"test_monitor_unmap $1 (PINNING=$2 MONITOR=$3 MONITOR_CHURN=$churn)"
}

run stale no none
run clean yes auto
run clean yes auto 0
run clean yes none
run clean no userfaultfd
finish
