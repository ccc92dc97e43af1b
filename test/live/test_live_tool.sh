#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# mrlease-stat as a person sees it: in a tmux terminal, `mrlease-stat -w`
# and `mrlease-stat -w PID` redraw in place over a running client
# (test/live/test_live --client, live statistics every 50 ms), and show it
# stale once it is killed. Each check reads the captured screen. Skipped
# without tmux.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
tool=$builddir/tools/mrlease-stat
client=$builddir/test/live/test_live
cases="list_view_redraws_one_screen_with_the_clients_row
pid_view_shows_the_domain_and_its_histograms
killed_client_shows_stale_in_both_views"

if ! command -v tmux >/dev/null 2>&1; then
	for c in $cases; do skip "$c" "tmux not installed"; done
	finish
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mrlt-tool.XXXXXX") || exit 1
dir=$tmp/stats
mkdir "$dir"
sock=mrlt-live-$$
cpid=
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	[ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# The client's stdin is a fifo held open by fd 3: it runs until fd 3 closes.
mkfifo "$tmp/in"
FI_HOOK=mrlease FI_MRLEASE_STATS_LIVE=1 FI_MRLEASE_STATS_DIR=$dir \
	FI_MRLEASE_STATS_INTERVAL=50 "$client" --client <"$tmp/in" \
	>"$tmp/out" 2>"$tmp/err" &
cpid=$!
exec 3>"$tmp/in"

# until_true CMD...: poll CMD (a look at a file or a screen) until it holds;
# false after many looks, when what it waits for never came.
until_true() {
	local i
	for i in $(seq 3000); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}
screen() { tmux -L "$sock" capture-pane -p -t "$1"; }
shows() { screen "$1" | grep -Eq "$2"; }

if ! until_true grep -q '^ready$' "$tmp/out"; then
	for c in $cases; do
		not_ok "$c" "the client never got ready" "$(cat "$tmp/err")"
	done
	finish
fi

# A terminal of 132 x 40, as a person's.
tmux -L "$sock" new-session -d -s live -x 132 -y 40 \
	"'$tool' -d '$dir' -w 0.1; sleep 600"
tmux -L "$sock" new-window -d -t live:1 \
	"'$tool' -d '$dir' -w 0.1 $cpid; sleep 600"
row="^$cpid +test_live +1 +[0-9.]+K? +[0-9.]+% +[0-9.]+[KMG]?i?B +[0-9]+ +[0-9]+ +live$"

# ---- list view ---------------------------------------------------------
until_true shows live:0 "$row"
first=$(screen live:0)
# A redraw later (the clock in its title moves), still one screen: the
# title on the first line, one header, the client's row.
until_true eval '[ "$(screen live:0 | head -n 1)" != "$(head -n 1 <<<"$first")" ]'
second=$(screen live:0)
headers=$(grep -Ec '^PID +COMMAND +DOMAINS +LOOKUPS +HIT% +PINNED +LEASES +MISSES +STATE$' <<<"$second")
head -n 1 <<<"$second" | grep -Eq "^mrlease-stat - every 0.1s - [0-9]{2}:[0-9]{2}:[0-9]{2} - $dir$" &&
	[ "$headers" -eq 1 ] && grep -Eq "$row" <<<"$second"
check list_view_redraws_one_screen_with_the_clients_row $? \
	"headers: $headers (want 1); screen:" "$second"
printf '%s\n' "$second" | sed -e '/^$/d' -e 's/^/# | /'

# ---- pid view ----------------------------------------------------------
until_true shows live:1 '^domain 1 over tcp;ofi_rxm \(outermost\)'
pidview=$(screen live:1)
grep -Eq "^pid $cpid \(test_live\): live, 1 domain," <<<"$pidview" &&
	grep -Eq '^  lookups [0-9]+  hits [0-9]+ \([0-9.]+%\)  misses [1-9]' <<<"$pidview" &&
	grep -Eq '^  misses by reason: cold [1-9][0-9]* .* invalidated [1-9]' <<<"$pidview" &&
	grep -Eq '^  registration sizes' <<<"$pidview" &&
	grep -Eq '^ +64K - 128K +[0-9]+ #+$' <<<"$pidview" &&
	grep -Eq '^  fi_mr_reg time' <<<"$pidview"
check pid_view_shows_the_domain_and_its_histograms $? "screen:" "$pidview"
printf '%s\n' "$pidview" | sed -e '/^$/d' -e 's/^/# | /'

# ---- the client killed -------------------------------------------------
kill -9 "$cpid"
wait "$cpid" 2>/dev/null
cpid_dead=$cpid
cpid=
until_true shows live:0 "^$cpid_dead .* stale$"
until_true shows live:1 "^pid $cpid_dead \(test_live\): stale \(process gone\)"
list=$(screen live:0)
pidview=$(screen live:1)
grep -Eq "^$cpid_dead +test_live .* stale$" <<<"$list" &&
	grep -Eq "^pid $cpid_dead \(test_live\): stale \(process gone\)" <<<"$pidview"
check killed_client_shows_stale_in_both_views $? "list:" "$list" "pid view:" "$pidview"
exec 3>&-
finish
