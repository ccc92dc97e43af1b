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
# A group that exits non-zero without a failing case is a failure of its
# own (run_group, ext_tap.sh).
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/xfer/test_xfer_remote"

run_group "$prog" cache
run_group "$prog" forward
run_group "$prog" idle
run_group "$prog" inner
finish
