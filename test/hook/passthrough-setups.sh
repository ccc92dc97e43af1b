#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Suite entry: the "setups" half of test/hook/passthrough.sh (see there).
exec "$(dirname "$0")/passthrough.sh" setups
