#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# mrcheck as a user meets it, with FI_HOOK=mrcheck alone (no mrlease) and
# FI_PROVIDER_PATH at the build's plugin: `fi_info -l` lists it, `fi_info -e`
# lists every FI_MRCHECK_* parameter, and test/e2e/mrcheck_client, making one
# descriptor mistake per run on each loopback provider, gets exactly that
# violation printed on stderr, the report at exit and exit status 3, while the
# correct client (and a NULL desc on a domain without FI_MR_LOCAL, which is
# legal) gets none and exits 0. Only what mrcheck prints and the exit status
# are read: what an application's user sees.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
client="$builddir/test/e2e/mrcheck_client"
plugin_dir="$builddir/prov/mrcheck/.libs"
providers="tcp;ofi_rxm sockets"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- listed by fi_info -------------------------------------------------------
# The parameters mrcheck defines (prov/mrcheck/src/mrcheck_params.c).
params="MR_LOCAL FRAMES ALL OFF ABORT EXIT_STATUS FAULT_REG FAULT_REG_CODES
FAULT_POST FAULT_CQ_ERR FAULT_CLOSE_ONCE FAULT_SEED REG_COST REG_COST_NS
REG_COST_NS_PER_BYTE"
if command -v fi_info >/dev/null 2>&1; then
	# fi_info is not instrumented: a sanitizer build's plugin needs its
	# runtime preloaded, and fi_info's own exit-time leaks are not ours.
	fi_info_at_build() {
		env FI_PROVIDER_PATH="$plugin_dir" LD_PRELOAD="$(sanitizer_preload)" \
			ASAN_OPTIONS=detect_leaks=0 fi_info "$@" 2>&1 | tr -d '\0'
	}
	listing=$(fi_info_at_build -l)
	grep -q '^mrcheck:' <<<"$listing"
	check fi_info_l_lists_mrcheck_from_the_build $? "$listing"
	listing=$(fi_info_at_build -e)
	missing=""
	# Each with its values and default: "(a rate from 0 to 1; default: 0)".
	for p in $params; do
		grep -A1 "^# FI_MRCHECK_$p: " <<<"$listing" |
			grep -Eq '^# mrcheck: .{20,} \(.+; default: [^;]+\)$' ||
			missing="$missing FI_MRCHECK_$p"
	done
	extra=$(grep -oE '^# FI_MRCHECK_[A-Z_]+' <<<"$listing" | sed 's/^# //' |
		grep -vxF -f <(for p in $params; do echo "FI_MRCHECK_$p"; done))
	[ -z "$missing" ] && [ -z "$extra" ]
	check fi_info_e_lists_every_FI_MRCHECK_parameter_with_its_range_and_default $? \
		"missing or undocumented:${missing:- none}" "not expected: ${extra:-none}"
else
	skip fi_info_l_lists_mrcheck_from_the_build "fi_info (libfabric-bin) is not installed"
	skip fi_info_e_lists_every_FI_MRCHECK_parameter_with_its_range_and_default "fi_info (libfabric-bin) is not installed"
fi

# ---- one mistake per run ---------------------------------------------------
# run PROV MISTAKE VAR=VALUE...: the client under FI_HOOK=mrcheck; stdout and
# stderr in $tmp/out, the exit status in $rc.
run() {
	local prov=$1 mistake=$2
	shift 2
	env -u FI_MRCHECK_MR_LOCAL FI_PROVIDER_PATH="$plugin_dir" FI_HOOK=mrcheck \
		"$@" "$client" "$prov" "$mistake" >"$tmp/out" 2>&1
	rc=$?
}

# kinds: the kind of each violation line, one a line.
kinds() { sed -nE 's/^mrcheck violation \(([^)]*)\): .*/\1/p' "$tmp/out"; }

# expect NAME PROV MISTAKE KIND: exactly one violation, of KIND, the report
# at exit naming it, and exit status 3. KIND empty: none, and exit status 0.
expect() {
	local name=$1 prov=$2 mistake=$3 kind=$4 got report
	run "$prov" "$mistake"
	if [ "$rc" -eq 77 ]; then
		skip "${name}[$prov]" "$prov is not available here"
		return
	fi
	got=$(kinds)
	report=$(grep -c "^mrcheck: 1 unacknowledged violation(s), last: mrcheck violation ($kind): " "$tmp/out")
	if [ -z "$kind" ]; then
		[ "$rc" -eq 0 ] && [ -z "$got" ] &&
			! grep -qE '^mrcheck( violation|:)' "$tmp/out"
	else
		[ "$rc" -eq 3 ] && [ "$got" = "$kind" ] && [ "$report" -eq 1 ]
	fi
	check "${name}[$prov]" $? "exit status $rc; violations: ${got:-none} (want ${kind:-none})" \
		"$(cat "$tmp/out")"
	[ -z "$kind" ] || grep -E '^mrcheck( violation|:)' "$tmp/out" | sed 's/^/# /'
}

for prov in $providers; do
	expect a_correct_client_gets_no_violation_and_exits_0 "$prov" none ""
	expect a_null_desc_without_fi_mr_local_is_legal "$prov" null_desc_legal ""
	expect a_null_desc_on_an_fi_mr_local_domain_is_reported_as_no_desc \
		"$prov" null_desc "no desc"
	expect a_closed_mrs_desc_is_reported_as_desc_of_a_closed_mr \
		"$prov" closed_desc "desc of a closed MR"
	expect an_iov_past_its_mrs_end_is_reported_as_iov_outside_its_mr \
		"$prov" outside_mr "iov outside its MR"
	expect an_mr_closed_under_a_posted_receive_is_reported_as_closed_in_flight \
		"$prov" close_in_flight "MR closed under an operation in flight"
done

# ---- the report's settings ---------------------------------------------------
prov=${providers%% *}
run "$prov" closed_desc FI_MRCHECK_EXIT_STATUS=0
[ "$rc" -eq 0 ] && grep -q '^mrcheck: 1 unacknowledged violation(s), last: ' "$tmp/out"
check FI_MRCHECK_EXIT_STATUS_0_keeps_the_exit_status_and_still_reports $? \
	"exit status $rc" "$(cat "$tmp/out")"
# An exit status that hid every violation would make the run pass.
run "$prov" closed_desc FI_MRCHECK_EXIT_STATUS=abc FI_LOG_LEVEL=warn
[ "$rc" -eq 3 ] && grep -q 'FI_MRCHECK_EXIT_STATUS="abc" is not a whole number from 0 to 255; using the default 3' "$tmp/out"
check an_unparsable_FI_MRCHECK_EXIT_STATUS_keeps_status_3_with_a_warning $? \
	"exit status $rc" "$(cat "$tmp/out")"
# A setting under its former name would be ignored without a word.
run "$prov" none MRCHECK_FRAMES=1 FI_LOG_LEVEL=warn
grep -q 'MRCHECK_FRAMES is ignored: mrcheck.s settings are FI_MRCHECK_\*' "$tmp/out"
check a_former_MRCHECK_name_is_ignored_with_a_warning $? "$(cat "$tmp/out")"
finish
