#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A real MPI job through the hook: test/e2e/mpi/mpi_check (point to point 1 B to
# 8 MiB, matched probes (MPI_Mprobe/MPI_Mrecv, MPI_Improbe/MPI_Imrecv),
# collectives, MPI_Alloc_mem churn, one-sided put/get/accumulate, every
# byte verified) under Debian's Open MPI over libfabric, two ranks on
# loopback tcp;ofi_rxm, once per setting:
#   default         FI_HOOK=mrlease; each rank's outermost domain prints its
#                   statistics table (FI_MRLEASE_STATS=1) with lookups > 0,
#                   or the hook was not in the path;
#   min_size_0      FI_MRLEASE_MIN_SIZE=0: every operand resolved, so more
#                   lookups than the default run on each rank;
#   mrcheck         FI_HOOK='mrcheck;mrlease' with FI_MRLEASE_MIN_SIZE=0 and
#                   FI_MRCHECK_MR_LOCAL=1: the strict checker (fi_mrcheck(7))
#                   saw every post's descs, mrlease's, and reported no
#                   violation;
#   mrcheck_alone   FI_HOOK=mrcheck, no mrlease, as a user checks an
#                   application: Open MPI's own descs (NULL ones are legal:
#                   tcp;ofi_rxm does not require FI_MR_LOCAL) with no
#                   violation.
# A failing run is repeated without the hook, to tell a bug of ours from one
# of the program or the MPI stack. Each mpirun is bounded by MRL_MPI_TIMEOUT
# seconds (default 140).
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/e2e/mpi/mpi_check"
hook_path="$builddir/prov/mrlease/.libs"
check_path=${MRL_TEST_HOOK_PATH:-$builddir/prov/mrcheck/.libs}
timeout_s=${MRL_MPI_TIMEOUT:-140}

tests="default_run_verifies_every_byte
default_run_stats_show_the_hook_on_both_ranks
min_size_0_run_verifies_every_byte
min_size_0_run_resolves_more_operands_than_the_default
mrcheck_run_verifies_every_byte
mrcheck_run_checks_every_post_with_no_violation
mrcheck_alone_run_verifies_every_byte
mrcheck_alone_run_checks_every_post_with_no_violation"
skip_all() {
	for t in $tests; do skip "$t" "$1"; done
	finish
}
command -v mpirun >/dev/null 2>&1 ||
	skip_all "mpirun not found (Debian: openmpi-bin libopenmpi-dev)"
[ -x "$prog" ] || skip_all "test/e2e/mpi/mpi_check not built (configure found no mpicc)"
# Under AddressSanitizer the ranks run with leak detection off: Open MPI's
# components leak at finalize and are unloaded before LeakSanitizer can name
# them (the rest of the suite checks the plugin's own leaks).
sanitizer_env=()
case "${MRL_SANITIZE:-no}" in
no | "") ;;
address | address,undefined | undefined,address | undefined)
	sanitizer_env=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0") ;;
*) skip_all "not run under -fsanitize=$MRL_SANITIZE" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# mpi NAME VAR=VALUE...: runs mpi_check with those variables exported to
# both ranks; output in $tmp/NAME.out and .err, exit status in $rc.
mpi() {
	local name=$1 kv xs=()
	shift
	for kv in FI_TCP_IFACE=lo "${sanitizer_env[@]}" "$@"; do xs+=(-x "$kv"); done
	timeout --kill-after=10 "$timeout_s" \
		mpirun --allow-run-as-root -np 2 --bind-to none --mca pml cm \
		--mca mtl ofi --mca opal_common_ofi_provider_include 'tcp;ofi_rxm' \
		--mca btl self --mca osc pt2pt "${xs[@]}" "$prog" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
	rc=$?
}

# passed NAME: mpi_check's five sections passed and it exited 0. Prints the
# section lines as TAP comments; on failure the output and a control run.
passed() {
	local name=$1 sections status=$rc why
	sed 's/^/# /' "$tmp/$name.out"
	sections=$(grep -cE '^mpi_check: (pt2pt|mprobe|collectives|alloc_mem|rma) ok: ' "$tmp/$name.out")
	if [ "$status" -eq 0 ] && [ "$sections" -eq 5 ]; then
		ok "${name}_run_verifies_every_byte"
		return 0
	fi
	why="mpirun exited with status $status"
	[ "$status" -eq 124 ] && why="mpirun timed out after $timeout_s s"
	mpi control FI_HOOK=
	not_ok "${name}_run_verifies_every_byte" \
		"$why, $sections of 5 sections passed; stderr:" \
		"$(tail -n 30 "$tmp/$name.err")" \
		"without the hook the same program exits with status $rc:" \
		"$(grep '^mpi_check' "$tmp/control.out")"
	return 1
}

# lookups NAME: the lookups of each outermost domain's table, one a line.
lookups() {
	awk '/^mrlease: lease cache statistics, .*\(outermost\)$/ { t = 1; next }
	     t && $1 == "lookups" { print $2; t = 0 }' "$tmp/$1.err"
}

# At most one outermost table a rank, and one for each: each with lookups.
stats_ok() {
	local name=$1 n=0 l
	for l in $(lookups "$name"); do
		[ "$l" -gt 0 ] || return 1
		n=$((n + 1))
	done
	[ "$n" -eq 2 ]
}

mpi default FI_HOOK=mrlease FI_PROVIDER_PATH="$hook_path" FI_MRLEASE_STATS=1
passed default
stats_ok default
check default_run_stats_show_the_hook_on_both_ranks $? \
	"lookups per outermost table: $(lookups default | tr '\n' ' ')(want 2 tables, each > 0)" \
	"$(tail -n 40 "$tmp/default.err")"
echo "# default: outermost tables' lookups: $(lookups default | tr '\n' ' ')"

mpi min_size_0 FI_HOOK=mrlease FI_PROVIDER_PATH="$hook_path" FI_MRLEASE_STATS=1 \
	FI_MRLEASE_MIN_SIZE=0
passed min_size_0
echo "# min_size_0: outermost tables' lookups: $(lookups min_size_0 | tr '\n' ' ')"
# Every operand now takes a lookup: more of them on both ranks.
more=0
if stats_ok min_size_0 && stats_ok default; then
	more=$(paste <(lookups min_size_0 | sort -n) <(lookups default | sort -n) |
		awk '$1 > $2 { n++ } END { print n + 0 }')
fi
[ "$more" -eq 2 ]
check min_size_0_run_resolves_more_operands_than_the_default $? \
	"lookups with FI_MRLEASE_MIN_SIZE=0: $(lookups min_size_0 | tr '\n' ' ')" \
	"lookups by default: $(lookups default | tr '\n' ' ')"

mpi mrcheck FI_HOOK='mrcheck;mrlease' FI_PROVIDER_PATH="$hook_path:$check_path" \
	FI_MRCHECK_MR_LOCAL=1 \
	FI_MRLEASE_MIN_SIZE=0 MPI_CHECK_MRCHECK=1
passed mrcheck
# checked NAME: each rank reports the checker's counters: it checked posts,
# saw no violation; and nothing reported one on stderr (at finalize
# included).
checked() {
	local name=$1 checked reported
	checked=$(grep -cE '^mpi_check: rank [0-9]+ mrcheck: strict_domains=[1-9][0-9]* posts_checked=[1-9][0-9]* .* violations=0$' "$tmp/$name.out")
	reported=$(grep -cE '^mrcheck( violation|: [0-9]+ unacknowledged)' "$tmp/$name.err")
	[ "$checked" -eq 2 ] && [ "$reported" -eq 0 ]
	check "${name}_run_checks_every_post_with_no_violation" $? \
		"ranks whose checker checked posts with no violation: $checked (want 2)" \
		"violations reported on stderr: $reported" \
		"$(grep -E '^mpi_check: rank' "$tmp/$name.out")" \
		"$(grep -E '^mrcheck' "$tmp/$name.err" | head -n 20)"
}
checked mrcheck

mpi mrcheck_alone FI_HOOK=mrcheck FI_PROVIDER_PATH="$check_path" \
	MPI_CHECK_MRCHECK=1
passed mrcheck_alone
checked mrcheck_alone
finish
