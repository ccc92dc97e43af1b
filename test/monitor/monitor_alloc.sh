#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs test/monitor/test_monitor_alloc once per allocator, each purging freed memory
# at once so the memory monitor sees every purge while transfers run (its
# task a raw clone, as an unprivileged process has it; glibc's case also
# with a pthread, as root has it):
#  - glibc: no trim threshold and no top pad (heap trims on every free that
#    can; chunks above 128 KiB are mmapped and unmapped on free);
#  - jemalloc: dirty and muzzy decay 0 (purged on free);
#  - mimalloc: purge delay 0 (MIMALLOC_PURGE_DELAY, 2.1 and later; 2.0's
#    names are decommit_delay and segment_decommit_delay, plus page_reset).
# jemalloc and mimalloc are preloaded, which a sanitizer build cannot take
# (its runtime replaces malloc): skipped there, and when not installed.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
prog="$builddir/test/monitor/test_monitor_alloc"
libdir=$(${CC:-cc} -print-multiarch 2>/dev/null)
libdir=/usr/lib${libdir:+/$libdir}
case "${MRL_SANITIZE:-no}" in no | "") sanitized="" ;; *) sanitized=$MRL_SANITIZE ;; esac

# run NAME [VAR=value...]: the program's TAP lines renumbered into this
# script's sequence as they come (a hang still shows how far it got), its
# diagnostics kept; an exit status without a failure reported is one.
run() {
	local name=$1 line rc="" failed=0
	shift
	while IFS= read -r line; do
		case "$line" in
		"ok "*)
			tap_n=$((tap_n + 1))
			line=${line#ok }
			echo "ok $tap_n ${line#* }" ;;
		"not ok "*)
			tap_n=$((tap_n + 1)) tap_failed=$((tap_failed + 1)) failed=1
			line=${line#not ok }
			echo "not ok $tap_n ${line#* }" ;;
		"monitor_alloc.sh rc "*) rc=${line##* } ;;
		1..*) ;;
		*) echo "$line" ;;
		esac
	done < <(env "$@" "$prog" "$name" 2>&1
		echo "monitor_alloc.sh rc $?")
	if [ "$rc" != 0 ] && [ "$failed" -eq 0 ]; then
		not_ok "$name: test_monitor_alloc exited with status $rc"
	fi
}

run glibc MALLOC_TRIM_THRESHOLD_=0 MALLOC_TOP_PAD_=0

preloaded() {
	local name=$1 lib=$2
	shift 2
	if [ -n "$sanitized" ]; then
		skip "$name" "LD_PRELOAD of $name conflicts with the -fsanitize=$sanitized allocator"
	elif [ ! -e "$lib" ]; then
		skip "$name" "$lib not installed"
	else
		run "$name" LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
	fi
}
preloaded jemalloc "$libdir/libjemalloc.so.2" \
	MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0
preloaded mimalloc "$libdir/libmimalloc.so.2" \
	MIMALLOC_PURGE_DELAY=0 MIMALLOC_DECOMMIT_DELAY=0 \
	MIMALLOC_SEGMENT_DECOMMIT_DELAY=0 MIMALLOC_PAGE_RESET=1
finish
