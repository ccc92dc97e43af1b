#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs examples/jemalloc_kv (a jemalloc arena whose purge hooks call the
# mrlease invalidate, a key-value workload over loopback tcp;ofi_rxm with
# NULL descriptors) with the hook switched on; the example prints TAP.
# FI_MRLEASE_MIN_SIZE=0: tcp does not require FI_MR_LOCAL, so resolve every
# operand through the cache, as mrlease does over a provider that does.
set -u
builddir=${MRL_TOP_BUILDDIR:-$(pwd)}
srcdir=${MRL_TOP_SRCDIR:-$builddir}
prog="$builddir/examples/jemalloc_kv"
if [ ! -x "$prog" ]; then
	echo "ok 1 - jemalloc_kv # SKIP built without libjemalloc-dev"
	echo "1..1"
	exit 0
fi
if [ -f "$srcdir/prov/mrlease/src/mrl_prov.c" ] &&
	! grep -q mrl_lease_personality "$srcdir/prov/mrlease/src/mrl_prov.c"; then
	echo "ok 1 - jemalloc_kv # SKIP mrl_prov.c does not install mrl_lease_personality yet"
	echo "1..1"
	exit 0
fi
FI_HOOK=mrlease FI_MRLEASE_MIN_SIZE=0 FI_MRLEASE_STATS=1 exec "$prog"
