#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# FI_MRLEASE_* as users meet them: `fi_info -e` lists every parameter with
# its type, meaning and default when libmrlease-fi.so is on
# FI_PROVIDER_PATH; a bad value costs exactly one warning; FI_MRLEASE_STATS
# prints a table for each domain when it closes: the outermost one, and the
# inner one (tcp under ofi_rxm) only where FI_MRLEASE_HOOK_INNER keeps the
# hook there.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$builddir/prov/mrlease/.libs}
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo}

tests="fi_info_e_lists_every_parameter_with_type_meaning_range_and_default
a_bad_value_warns_once_and_leaves_the_default
stats_prints_a_table_for_each_domain_at_close
stats_table_of_the_inner_domain_only_with_hook_inner
no_table_without_stats"
if ! command -v fi_info >/dev/null 2>&1; then
	for t in $tests; do skip "$t" "fi_info (libfabric-bin) is not installed"; done
	finish
fi
# Every knob with its type line and a help line naming its default, and a
# number its range; a knob missing here is one users cannot discover.
# (fi_info is not instrumented: a sanitizer build's plugin needs its
# runtime preloaded, and fi_info's own exit-time leaks are not ours.)
listing=$(LD_PRELOAD=$(sanitizer_preload) ASAN_OPTIONS=detect_leaks=0 \
	fi_info -e 2>&1 | tr -d '\0')
status=0 detail=""
size='[0-9]+[KMGT]?'
for spec in MAX_COUNT:size_t MAX_SIZE:size_t MIN_SIZE:size_t STATS:Boolean \
	HUGEPAGE_AFTER:size_t HOOK_INNER:Boolean MONITOR_CHURN:size_t \
	STATS_INTERVAL:size_t; do
	var=FI_MRLEASE_${spec%%:*} type=${spec#*:}
	case $type in
	size_t) tail="\\(range: $size to $size; default: $size\\)" ;;
	*) tail="\\(default: $size\\)" ;;
	esac
	block=$(printf '%s\n' "$listing" | grep -A1 "^# $var: ")
	if ! printf '%s\n' "$block" | head -n1 | grep -q "^# $var: $type" ||
		! printf '%s\n' "$block" | tail -n1 | grep -Eq "^# mrlease: .{40,}$tail\$"; then
		status=1 detail="$detail $var"
	fi
done
check fi_info_e_lists_every_parameter_with_type_meaning_range_and_default $status \
	"missing or undocumented:$detail"

# One warning per bad value, and the default in force: FI_MRLEASE_STATS
# falls back to off, so no table either.
log=$(FI_LOG_LEVEL=warn FI_HOOK=mrlease FI_MRLEASE_STATS=maybe \
	FI_MRLEASE_MIN_SIZE=lots "$builddir/examples/mrl_demo" 2>&1 >/dev/null)
warn_stats=$(printf '%s\n' "$log" | grep -c '<warn>.*FI_MRLEASE_STATS="maybe"')
warn_min=$(printf '%s\n' "$log" | grep -c '<warn>.*FI_MRLEASE_MIN_SIZE="lots"')
tables=$(printf '%s\n' "$log" | grep -c 'lease cache statistics')
[ "$warn_stats" -eq 1 ] && [ "$warn_min" -eq 1 ] && [ "$tables" -eq 0 ]
check a_bad_value_warns_once_and_leaves_the_default $? \
	"warnings: STATS $warn_stats, MIN_SIZE $warn_min (want 1 each); tables: $tables (want 0)"

# The tables of one run: outermost (tcp;ofi_rxm), inner (tcp), rows.
stats_tables() {
	log=$(env "$@" FI_HOOK=mrlease FI_MRLEASE_STATS=1 "$builddir/examples/mrl_demo" 2>&1 >/dev/null)
	outer=$(printf '%s\n' "$log" | grep -c 'lease cache statistics, domain .* over tcp;ofi_rxm (outermost)')
	inner=$(printf '%s\n' "$log" | grep -c 'lease cache statistics, domain .* over tcp (inner)')
	rows=$(printf '%s\n' "$log" | grep -cE '^  (lookups|registrations|invalidate calls|live leases) +[0-9]+$')
}

# By default the inner instance steps aside (tcp needs no FI_MR_LOCAL):
# one table, the outermost domain's.
stats_tables FI_MRLEASE_HOOK_INNER=0
[ "$outer" -ge 1 ] && [ "$inner" -eq 0 ] && [ "$rows" -eq $((4 * outer)) ]
check stats_prints_a_table_for_each_domain_at_close $? \
	"outermost tables $outer, inner tables $inner (want 0), rows $rows" "$log"

stats_tables FI_MRLEASE_HOOK_INNER=1
[ "$outer" -ge 1 ] && [ "$inner" -ge 1 ] && [ "$rows" -eq $((4 * (outer + inner))) ]
check stats_table_of_the_inner_domain_only_with_hook_inner $? \
	"outermost tables $outer, inner tables $inner, rows $rows" "$log"

log=$(FI_HOOK=mrlease "$builddir/examples/mrl_demo" 2>&1 >/dev/null)
tables=$(printf '%s\n' "$log" | grep -c 'lease cache statistics')
[ "$tables" -eq 0 ]
check no_table_without_stats $? "$tables tables printed"

finish
