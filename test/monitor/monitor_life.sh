#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/monitor/test_monitor_life once per group of cases (mrlease reads
# FI_MRLEASE_MONITOR_CHURN once per process; the program sets its own
# environment) and prints their TAP as one stream, renumbered:
#   cached: FI_MRLEASE_MONITOR_CHURN=0, every miss watched and cached;
#   churn:  the default churn allowance.
# A group that exits non-zero without a failing case is a failure of its
# own (run_group, ext_tap.sh).
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/monitor/test_monitor_life"

run_group "$prog" cached
run_group "$prog" churn
finish
