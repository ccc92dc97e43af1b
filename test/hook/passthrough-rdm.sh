#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Suite entry: the "rdm" half of test/hook/passthrough.sh (see there).
exec "$(dirname "$0")/passthrough.sh" rdm
