#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/hook/test_hook_passthrough once per provider and per FI_HOOK/FI_PROVIDER
# set-up (libfabric reads those once per process) and prints its TAP lines,
# renumbered into one stream.
#
# Per RDM provider it first runs the program without any FI_HOOK: that run
# is a control (the tests must pass against the bare provider, the hook
# must be absent) and its "# probe FEATURE RC" lines record which optional
# features the provider itself lacks. The hooked runs get those results in
# MRL_PT_BASELINE, so a feature is skipped only if the bare provider lacks
# it too, and fails if only the hooked call fails.
#
# Arguments: what to run, "rdm" (every RDM provider, control and hooked),
# "setups" (FI_EP_MSG over tcp, stacking, FI_PROVIDER filters, a misspelt
# FI_HOOK), or nothing for both. The suite runs the two halves as separate
# entries (passthrough-rdm.sh, passthrough-setups.sh) so that each stays
# well inside test/run-entry.sh's per-entry timeout under sanitizers.
#
# Environment (from test/run-entry.sh): MRL_TOP_BUILDDIR, FI_PROVIDER_PATH,
# FI_*_IFACE. MRL_PT_PROVIDERS limits the RDM providers run.
set -u
builddir=${MRL_TOP_BUILDDIR:-$(pwd)}
prog="$builddir/test/hook/test_hook_passthrough"
export FI_TCP_IFACE="${FI_TCP_IFACE:-lo}"
export FI_SOCKETS_IFACE="${FI_SOCKETS_IFACE:-lo}"
export FI_UDP_IFACE="${FI_UDP_IFACE:-lo}"
unset FI_HOOK FI_PROVIDER MRL_PT_BASELINE MRL_PT_EXPECT_HOOK
srcdir=${MRL_TOP_SRCDIR:-$(dirname "$0")/../..}

# Leaks libfabric itself makes in calls only this program exercises are
# listed in passthrough-lsan.supp, on top of the suite's own list.
supp=$(mktemp)
trap 'rm -f "$supp"' EXIT
cat "$srcdir/test/common/lsan.supp" "$srcdir/test/common/passthrough-lsan.supp" >"$supp"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
# libfabric has no frame pointers: without the slow unwinder a leak's stack
# stops inside it and never names the test that made it.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"

n=0 failed=0

# run LABEL EXPECT_HOOK PROVIDER GROUP [VAR=VALUE...]: one program run with
# the given environment; its TAP lines renumbered, its output kept in $out.
run() {
	local expect=$1 provider=$2 group=$3 rc line
	shift 3
	out=$(env MRL_PT_EXPECT_HOOK="$expect" "$@" "$prog" "$provider" "$group" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*|"not ok "*)
			n=$((n + 1))
			case "$line" in "not ok "*) failed=$((failed + 1)) ;; esac
			echo "$line" | sed -E "s/^(not )?ok [0-9]+/\1ok $n/"
			;;
		1..*) ;;
		*) echo "$line" ;;
		esac
	done <<<"$out"
	# A crash or an exit without a failure line is a failure of its own.
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok ' <<<"$out"; then
		n=$((n + 1)) failed=$((failed + 1))
		echo "not ok $n - $provider $group ($*) exited with status $rc"
	fi
}

# The "feature=rc" list of a control run's probe lines.
probes() {
	grep -E '^# probe ' <<<"$out" | awk '{print $3 "=" $4}' | sort -u -t= -k1,1 |
		paste -sd, -
}

parts=${*:-rdm setups}

if [[ " $parts " == *" rdm "* ]]; then
	providers=${MRL_PT_PROVIDERS:-"tcp;ofi_rxm udp;ofi_rxd shm sockets"}
	IFS=' ' read -r -a provs <<<"$providers"
	for p in "${provs[@]}"; do
		run 0 "$p" rdm
		base=$(probes)
		echo "# $p control run (no FI_HOOK) probes: $base"
		run 1 "$p" rdm FI_HOOK=mrlease MRL_PT_BASELINE="$base"
		# The inner instance steps aside by default; keep its
		# wrappers covered too.
		case "$p" in
		*";"*) run 1 "$p" rdm FI_HOOK=mrlease FI_MRLEASE_HOOK_INNER=1 \
			MRL_PT_BASELINE="$base" ;;
		esac
	done
fi

if [[ " $parts " == *" setups "* ]]; then
	# FI_EP_MSG with a passive endpoint over tcp.
	run 0 tcp msg
	run 1 tcp msg FI_HOOK=mrlease

	# Stacking with libfabric's noop hook, both orders.
	run 1 "tcp;ofi_rxm" traffic FI_HOOK="noop;mrlease"
	run 1 "tcp;ofi_rxm" traffic FI_HOOK="mrlease;noop"
	run 1 tcp msg FI_HOOK="noop;mrlease"
	run 1 tcp msg FI_HOOK="mrlease;noop"

	# FI_PROVIDER filters never hide a hook.
	run 1 "tcp;ofi_rxm" traffic FI_HOOK=mrlease FI_PROVIDER="tcp;ofi_rxm"
	run 1 "tcp;ofi_rxm" traffic FI_HOOK=mrlease FI_PROVIDER="^udp"
	run 1 sockets traffic FI_HOOK=mrlease FI_PROVIDER="^udp"

	# A misspelt hook name is skipped: traffic works, the hook is absent.
	run 0 "tcp;ofi_rxm" traffic FI_HOOK=mrleas
	run 0 shm traffic FI_HOOK="mrleas;noop"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
