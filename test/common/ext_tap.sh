# SPDX-License-Identifier: BSD-2-Clause
#
# Sourced by the extension's test scripts: TAP helpers and where to find the
# build. `check NAME STATUS DETAIL...` prints ok/not ok for an exit status;
# `finish` prints the plan and exits with the result.
builddir=${MRL_TOP_BUILDDIR:-$(pwd)}
srcdir=${MRL_TOP_SRCDIR:-$builddir}
tap_n=0 tap_failed=0

ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
not_ok() {
	tap_n=$((tap_n + 1)) tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n - $1"
	shift
	printf '%s\n' "$@" | sed 's/^/# /'
}
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
check() {
	local name=$1 status=$2
	shift 2
	if [ "$status" -eq 0 ]; then ok "$name"; else not_ok "$name" "$@"; fi
}
# report_case OUTPUT STATUS FALLBACK_NAME: the TAP line of a program run
# once per case (its first ok/not ok line, its skip reason, its tail when it
# failed), under the program's test name or FALLBACK_NAME.
report_case() {
	local out=$1 rc=$2 line name
	line=$(grep -E '^(not )?ok ' <<<"$out" | head -n 1)
	name=$(sed -E 's/^(not )?ok [0-9]+ - //; s/ # SKIP .*//' <<<"$line")
	name=${name:-$3}
	case "$line" in
	"ok "*"# SKIP "*) skip "$name" "${line##*# SKIP }" ;;
	"ok "*) check "$name" "$rc" "exited with status $rc" "$(tail -n 30 <<<"$out")" ;;
	*) not_ok "$name" "exited with status $rc" "$(tail -n 40 <<<"$out")" ;;
	esac
}
# run_group PROGRAM GROUP [ARGS...]: run a TAP program whose first argument
# names a group of cases (a process per group: mrlease reads its parameters
# once per process) and print its cases as ours, renumbered and prefixed
# "GROUP: ". A group that exits non-zero without a failing case (a crash, a
# hang killed by the harness) is a failure of its own.
run_group() {
	local prog=$1 group=$2 out rc line name failed=0
	shift 2
	out=$("$prog" "$group" "$@" 2>&1)
	rc=$?
	while IFS= read -r line; do
		name=$(sed -E 's/^(not )?ok [0-9]+ - //; s/ # SKIP .*//' <<<"$line")
		case "$line" in
		"ok "*"# SKIP "*) skip "$group: $name" "${line##*# SKIP }" ;;
		"ok "*) ok "$group: $name" ;;
		"not ok "*)
			not_ok "$group: $name" "(the lines above)"
			failed=1
			;;
		"1.."*) ;;
		"#"*) printf '%s\n' "$line" ;;
		*) printf '# %s\n' "$line" ;;
		esac
	done <<<"$out"
	[ "$rc" -eq 0 ] || [ "$failed" -ne 0 ] ||
		not_ok "$group: $(basename "$prog") $group" "exited with status $rc"
}
finish() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
	exit
}


# Programs built without sanitizers (fi_info) can load the plugin of a
# sanitizer build only with the sanitizer runtimes preloaded: prints the
# LD_PRELOAD value for MRL_SANITIZE (empty for a plain build).
sanitizer_preload() {
	local preload="" sanitize=${MRL_SANITIZE:-} s lib
	for s in ${sanitize//,/ }; do
		case "$s" in
		address) lib=libasan.so ;;
		thread) lib=libtsan.so ;;
		undefined) lib=libubsan.so ;;
		*) continue ;;
		esac
		preload="$preload${preload:+:}$(${CC:-cc} -print-file-name=$lib)"
	done
	printf '%s' "$preload"
}
