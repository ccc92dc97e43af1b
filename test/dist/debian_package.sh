#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The Debian packages end to end, as a user meets them: the release tree
# (make distdir: what make dist packs) in a temporary directory is built with
# `dpkg-buildpackage -us -uc -b`; lintian finds no error or warning that
# debian/*.lintian-overrides does not justify; `dpkg -i` installs the
# packages (mrcheck's plugin beside mrlease's, both man pages, mrlease-stat),
# and then, with no FI_PROVIDER_PATH, FI_HOOK=mrlease puts the installed
# plugin in examples/mrl_demo's path, FI_HOOK='mrcheck;mrlease' the checker
# below it with no violation, and a client compiled against the installed
# header alone opens the extension; `dpkg -r` removes them and
# leaves the machine as it was (no package, no file, the hook gone). apt-get
# runs dpkg -i and dpkg -r, because it waits for dpkg's lock when another
# apt or dpkg on the machine holds it.
#
# Skips, naming the reason: not root, a tool or build dependency missing, a
# sanitizer build (the packages are built without sanitizers; the plain
# build's suite checks them), packages or a plugin already in place (the
# user's, not ours to replace or remove: they are still built and checked).
# A lock keeps two suites on one machine from installing at the same time.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
packages="libfabric-mrlease libfabric-mrlease-dev mrlease-tools"
lock=/run/lock/mrlease-debian-package.lock
[ -d /run/lock ] || lock=/tmp/mrlease-debian-package.lock

tests="dpkg_buildpackage_builds_every_package_from_the_release_tree
lintian_reports_nothing_unjustified
dpkg_i_installs_the_plugin_into_libfabrics_provider_directory
installed_plugin_serves_FI_HOOK_without_FI_PROVIDER_PATH
installed_mrcheck_checks_the_demo_with_no_violation
client_of_the_installed_header_opens_the_extension
dpkg_r_leaves_the_machine_as_it_was"
skip_from() {
	local from=$1 why=$2 t on=0
	for t in $tests; do
		[ "$t" = "$from" ] && on=1
		[ "$on" -eq 1 ] && skip "$t" "$why"
	done
	finish
}
first=${tests%%$'\n'*}
case "${MRL_SANITIZE:-no}" in
no | "") ;;
*) skip_from "$first" "sanitizer build (-fsanitize=$MRL_SANITIZE): checked in the plain build" ;;
esac
[ "$(id -u)" -eq 0 ] || skip_from "$first" "needs root for dpkg -i"
# The packages depend on Debian's libfabric and install into its provider
# directory: under another libfabric (./quickstart check-fi2) there is
# nothing of theirs to check.
IFS=: read -r -a libdirs <<<"${LD_LIBRARY_PATH:-}"
for d in "${libdirs[@]}"; do
	[ -n "$d" ] && [ -e "$d/libfabric.so.1" ] &&
		skip_from "$first" "LD_LIBRARY_PATH selects $d/libfabric.so.1: the packages are built for Debian's libfabric (checked in the plain suite)"
done
for tool in dpkg-buildpackage dpkg-checkbuilddeps dh lintian; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip_from "$first" "$tool not found (Debian: dpkg-dev debhelper lintian)"
done

tmp=$(mktemp -d)
installed_by_us=0
# shellcheck disable=SC2317 # (called by the trap)
cleanup() {
	# An aborted run must not leave our packages behind.
	if [ "$installed_by_us" -eq 1 ]; then
		# shellcheck disable=SC2086
		pkg remove $packages >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
now() { date +%s; }

# ---- build from the release tarball --------------------------------------
t0=$(now)
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile")
tree="$tmp/mrlease-$version"
# make distdir: the tree make dist packs, here outside the build directory.
if ! make -s -C "$builddir" distdir distdir="$tree" >"$tmp/dist.log" 2>&1; then
	not_ok dpkg_buildpackage_builds_every_package_from_the_release_tree \
		"make distdir failed:" "$(tail -n 20 "$tmp/dist.log")"
	skip_from lintian_reports_nothing_unjustified "no packages"
fi
if ! deps=$(cd "$tree" && dpkg-checkbuilddeps 2>&1); then
	case "$deps" in
	*"Unmet build dependencies: "*)
		skip_from "$first" "build dependencies missing: ${deps##*: }" ;;
	*)
		not_ok dpkg_buildpackage_builds_every_package_from_the_release_tree \
			"dpkg-checkbuilddeps failed in the release tree:" "$deps"
		skip_from lintian_reports_nothing_unjustified "no packages" ;;
	esac
fi
(cd "$tree" && dpkg-buildpackage -us -uc -b -j"$(nproc 2>/dev/null || echo 2)") \
	>"$tmp/build.log" 2>&1
status=$?
debs=()
for p in $packages; do
	deb=$(find "$tmp" -maxdepth 1 -name "${p}_${version}-*.deb" | head -n 1)
	[ -n "$deb" ] && debs+=("$deb")
done
changes=$(find "$tmp" -maxdepth 1 -name "mrlease_${version}-*.changes" | head -n 1)
if [ "$status" -eq 0 ] && [ "${#debs[@]}" -eq "$(wc -w <<<"$packages")" ] && [ -n "$changes" ]; then
	ok dpkg_buildpackage_builds_every_package_from_the_release_tree
	echo "# built $(basename -a "${debs[@]}" | tr '\n' ' ')in $(($(now) - t0)) s"
else
	not_ok dpkg_buildpackage_builds_every_package_from_the_release_tree \
		"dpkg-buildpackage exited with status $status; packages: ${debs[*]}" \
		"$(tail -n 30 "$tmp/build.log")"
	skip_from lintian_reports_nothing_unjustified "no packages"
fi

# ---- lintian ---------------------------------------------------------------
t0=$(now)
lintian --fail-on error,warning --display-info "$changes" \
	>"$tmp/lintian.log" 2>&1
status=$?
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/# lintian: /'
grep -qv 'running with root privileges' "$tmp/lintian.log" ||
	echo "# lintian: no tag beyond the overrides in debian/*.lintian-overrides"
check lintian_reports_nothing_unjustified "$status" \
	"lintian exited with status $status" "$(cat "$tmp/lintian.log")"
echo "# lintian took $(($(now) - t0)) s"

# ---- install, use, remove --------------------------------------------------
# dpkg -i / dpkg -r through apt-get, which waits (bounded) for dpkg's lock
# rather than failing. Their dependencies are the build's: installed.
pkg() {
	DEBIAN_FRONTEND=noninteractive apt-get -q -y \
		-o DPkg::Lock::Timeout=120 "$@"
}
# One suite at a time installs, and only where nothing of ours is in place.
exec 9>"$lock"
flock -w 120 9 ||
	skip_from dpkg_i_installs_the_plugin_into_libfabrics_provider_directory \
		"another suite holds $lock"
# shellcheck disable=SC2086
if dpkg-query -W -f='${db:Status-Abbrev}\n' $packages 2>/dev/null | grep -q '^[ih]'; then
	skip_from dpkg_i_installs_the_plugin_into_libfabrics_provider_directory \
		"already installed here: the user's packages are not ours to replace or remove"
fi
provdir="$(pkg-config --variable=libdir libfabric)/libfabric"
[ -e "$provdir/libmrlease-fi.so" ] &&
	skip_from dpkg_i_installs_the_plugin_into_libfabrics_provider_directory \
		"$provdir/libmrlease-fi.so is there already, not from a package (make install?)"
provdir_before=absent
[ -e "$provdir" ] && provdir_before=present
demo() {
	env -u FI_PROVIDER_PATH FI_TCP_IFACE=lo FI_HOOK=mrlease \
		"$builddir/examples/mrl_demo" 2>&1
}

installed_by_us=1
pkg install "${debs[@]}" >"$tmp/dpkg-i.log" 2>&1
status=$?
manpage=$(dpkg -L libfabric-mrlease 2>/dev/null | grep '/man7/fi_mrlease\.7')
checker_man=$(dpkg -L libfabric-mrlease 2>/dev/null | grep '/man7/fi_mrcheck\.7')
statpage=$(dpkg -L mrlease-tools 2>/dev/null | grep '/man1/mrlease-stat\.1')
[ "$status" -eq 0 ] && [ -f "$provdir/libmrlease-fi.so" ] &&
	[ -f "$provdir/libmrcheck-fi.so" ] &&
	[ -f /usr/include/rdma/fi_ext_mrlease.h ] && [ -n "$manpage" ] &&
	[ -f "$manpage" ] && [ -n "$checker_man" ] && [ -f "$checker_man" ] &&
	[ -n "$statpage" ] && [ -f "$statpage" ] &&
	/usr/bin/mrlease-stat --help >/dev/null
check dpkg_i_installs_the_plugin_into_libfabrics_provider_directory $? \
	"apt-get install (dpkg -i) exited with status $status; want $provdir/libmrlease-fi.so," \
	"$provdir/libmrcheck-fi.so, /usr/include/rdma/fi_ext_mrlease.h," \
	"fi_mrlease.7 (got '$manpage'), fi_mrcheck.7 (got '$checker_man')," \
	"/usr/bin/mrlease-stat and mrlease-stat.1 (got '$statpage')" \
	"$(cat "$tmp/dpkg-i.log")"

# The demo moves data with NULL descriptors and prints the hook's counters:
# "active" and lookups > 0 only if libfabric loaded the installed plugin.
out=$(demo)
status=$?
lookups=$(printf '%s\n' "$out" | awk '$1 == "lookups" { print $2 }')
printf '%s\n' "$out" | grep -q '^mrlease hook: active' && [ "$status" -eq 0 ] &&
	[ "${lookups:-0}" -gt 0 ]
check installed_plugin_serves_FI_HOOK_without_FI_PROVIDER_PATH $? \
	"mrl_demo exited with status $status, lookups '${lookups}'" "$out"
echo "# mrl_demo with the installed plugin: lookups ${lookups:-none}"

# The demo's NULL descriptors resolved by mrlease, every one checked by the
# installed mrcheck below it as a provider requiring FI_MR_LOCAL would.
out=$(env -u FI_PROVIDER_PATH FI_TCP_IFACE=lo FI_HOOK='mrcheck;mrlease' \
	FI_MRCHECK_MR_LOCAL=1 FI_MRLEASE_MIN_SIZE=0 "$builddir/examples/mrl_demo" 2>&1)
status=$?
[ "$status" -eq 0 ] && printf '%s\n' "$out" | grep -q '^mrlease hook: active' &&
	! printf '%s\n' "$out" | grep -qE '^mrcheck( violation|:)'
check installed_mrcheck_checks_the_demo_with_no_violation $? \
	"mrl_demo exited with status $status" "$out"

# shellcheck disable=SC2046
if ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror "$srcdir/test/dist/install_client.c" \
	-o "$tmp/client" $(pkg-config --cflags --libs libfabric) >"$tmp/cc.log" 2>&1; then
	out=$(env -u FI_PROVIDER_PATH FI_TCP_IFACE=lo FI_HOOK=mrlease "$tmp/client" 2>&1)
	status=$?
	[ "$status" -eq 0 ] &&
		printf '%s\n' "$out" | grep -Eq '^pinned registrations=[1-9][0-9]* entries=1'
	check client_of_the_installed_header_opens_the_extension $? \
		"client exited with status $status" "$out"
else
	not_ok client_of_the_installed_header_opens_the_extension \
		"install_client.c does not compile against the installed header" \
		"$(cat "$tmp/cc.log")"
fi

# shellcheck disable=SC2086
pkg remove $packages >"$tmp/dpkg-r.log" 2>&1
status=$?
[ "$status" -eq 0 ] && installed_by_us=0
# shellcheck disable=SC2086
left=$(dpkg-query -W -f='${binary:Package} ${db:Status-Abbrev}\n' $packages 2>/dev/null |
	awk '$2 !~ /^[up]n/')
provdir_after=absent
[ -e "$provdir" ] && provdir_after=present
out=$(demo)
[ "$status" -eq 0 ] && [ -z "$left" ] && [ "$provdir_after" = "$provdir_before" ] &&
	[ ! -e /usr/include/rdma/fi_ext_mrlease.h ] && [ ! -e "$manpage" ] &&
	[ ! -e "$checker_man" ] && [ ! -e "$provdir/libmrcheck-fi.so" ] &&
	printf '%s\n' "$out" | grep -q '^mrlease hook: not active'
check dpkg_r_leaves_the_machine_as_it_was $? \
	"apt-get remove (dpkg -r) exited with status $status; left: '$left'" \
	"$provdir: $provdir_before before, $provdir_after after" \
	"mrl_demo: $(printf '%s\n' "$out" | grep '^mrlease')" "$(cat "$tmp/dpkg-r.log")"
finish
