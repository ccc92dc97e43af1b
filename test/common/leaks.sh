# SPDX-License-Identifier: BSD-2-Clause
#
# What a test process leaves behind if it ends without removing it: the
# shm provider's regions under the names the tests give their endpoints
# (mrlt_set_shm_name: <tag>-<pid>-<serial>, tags conform* and mrltest*) and
# live statistics files (mrlease-<pid>.stats, directly or in a per-user
# mrlease-<uid>/, in /dev/shm, the default FI_MRLEASE_STATS_DIR, and in the
# directories the live statistics tests make, test/live/live_util.c).
# Sourced by test/run-entry.sh, which removes an entry's own after it is
# gone, and by test/check-leaks.sh, which fails make check on any left by a
# process that no longer runs.
#
# The one place to edit when a name or a directory changes: one sed -E
# command per kind of file, turning a path into "PID PATH" (nothing for a
# path of another kind). Only files in these places, of these names and of
# the user running the suite are ever considered.
# live_util.c makes its directories in /tmp, whatever TMPDIR says.
mrl_leak_tmp=/tmp
mrl_leak_dirs="/dev/shm $mrl_leak_tmp"
mrl_leak_patterns="
s#^(/dev/shm/(conform|mrltest)[a-z0-9-]*-([0-9]+)-[0-9]+)\$#\\3 \\1#p
s#^(/dev/shm/(mrlease-[0-9]+/)?mrlease-([0-9]+)\\.stats)\$#\\3 \\1#p
s#^($mrl_leak_tmp/mrlt-live\\.[A-Za-z0-9]+/(mrlease-[0-9]+/)?mrlease-([0-9]+)\\.stats)\$#\\3 \\1#p
"

# mrl_leaks [PID]: the paths left by process PID, or without PID by every
# process that no longer runs, one per line.
mrl_leaks() {
	# shellcheck disable=SC2086 # the directories are words
	find $mrl_leak_dirs -maxdepth 3 -user "$(id -u)" \
		\( -type f -o -type l \) 2>/dev/null |
		sed -nE "$mrl_leak_patterns" | sort -u |
		while read -r pid path; do
			if [ -n "${1:-}" ]; then
				[ "$pid" = "$1" ] || continue
			elif [ -d "/proc/$pid" ]; then
				continue
			fi
			printf '%s\n' "$path"
		done
}
