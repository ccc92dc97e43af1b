#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs examples/jemalloc_kv (a jemalloc arena whose purge hooks call the
# mrlease invalidate, a key-value workload over loopback tcp;ofi_rxm with
# NULL descriptors) with the hook switched on; the example prints TAP.
set -u
builddir=${MRL_TOP_BUILDDIR:-$(pwd)}
prog="$builddir/examples/jemalloc_kv"
if [ ! -x "$prog" ]; then
	echo "ok 1 - jemalloc_kv # SKIP built without libjemalloc-dev"
	echo "1..1"
	exit 0
fi
FI_HOOK=mrlease FI_MRLEASE_STATS=1 exec "$prog"
