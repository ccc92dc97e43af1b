#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs examples/jemalloc_kv (a jemalloc arena whose purge hooks call the
# mrlease invalidate, a key-value workload over loopback tcp;ofi_rxm with
# NULL descriptors) with the hook switched on; the example prints TAP.
# FI_MRLEASE_MIN_SIZE=0: tcp does not require FI_MR_LOCAL, so resolve every
# operand through the cache, as mrlease does over a provider that does.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/examples/jemalloc_kv"
if [ ! -x "$prog" ]; then
	skip jemalloc_kv "built without libjemalloc-dev"
	finish
fi
FI_HOOK=mrlease FI_MRLEASE_MIN_SIZE=0 FI_MRLEASE_STATS=1 exec "$prog"
