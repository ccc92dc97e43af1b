#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Run once every entry of make check has run (Makefile.am,
# mrl-check-leaks): fails, naming them, when /dev/shm (or a directory of the
# live statistics tests) holds a shm region or live statistics file that a
# test process which no longer runs left behind (test/common/leaks.sh says
# which names and directories; only the user's own files are looked at).
# Test processes of this or another suite that still run are left alone.
# The files named are removed, so that a machine running the suite every
# day does not pile them up and the next run is judged on its own.
# shellcheck source=test/common/leaks.sh
. "$(dirname "$0")/common/leaks.sh"
# shellcheck disable=SC2119 # no pid: every dead process's
leaks=$(mrl_leaks)
[ -z "$leaks" ] && exit 0
echo "check-leaks: test processes that no longer run left these behind" \
	"(removed now):" >&2
printf '%s\n' "$leaks" | while read -r path; do
	echo "  $path" >&2
	rm -f "$path"
done
exit 1
