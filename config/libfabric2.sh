#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
#   config/libfabric2.sh [--fetch-only] [CACHE]
#
# Fetches libfabric 2.1.0's upstream source from Debian's trixie source suite
# and builds it into CACHE/install (default: $top/.cache/libfabric2), for
# building and testing against libfabric 2.x beside Debian's 1.17. Trixie's
# binary packages need a newer glibc, so the library is built from source.
# A finished install is kept: later runs print its prefix and do nothing else.
#
# Only the apt client touches the network, with a private sources list, list
# directory and archive cache under CACHE, so the system's apt state is never
# changed. Prints the install prefix on its last line.
#
# --fetch-only: only the upstream tarball, kept in CACHE, whose path it
# prints (what bench/cache_bench's libfabric peer is compiled from: the
# benchmark build needs the source, not an install).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
fetch_only=no
if [ "${1:-}" = --fetch-only ]; then
	fetch_only=yes
	shift
fi
cache=${1:-$top/.cache/libfabric2}
version=2.1.0
debversion=2.1.0-1.1
prefix=$cache/install
jobs=$(nproc 2>/dev/null || echo 2)

if [ "$fetch_only" = no ] && [ -f "$prefix/.built-$version" ]; then
	echo "$prefix"
	exit 0
fi

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
prefix=$cache/install
tarball=$cache/libfabric_$version.orig.tar.xz

# fetch: a deb-src entry for trixie in a private sources list; apt-get source
# may fail on a missing Debian patch tarball, but only the upstream one matters.
fetch() {
	local apt=$cache/apt
	mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/archives/partial" "$cache/src"
	cat >"$apt/sources.list.d/trixie-src.sources" <<-EOF
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: trixie
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	local opts=(-o "Dir::Etc::SourceList=/dev/null"
		-o "Dir::Etc::SourceParts=$apt/sources.list.d"
		-o "Dir::State::Lists=$apt/lists"
		-o "Dir::Cache=$apt"
		-o "Dir::Cache::archives=$apt/archives"
		-o "APT::Sandbox::User=root"
		-o "Debug::NoLocking=1")
	apt-get -q "${opts[@]}" update
	(cd "$cache/src" && apt-get -q "${opts[@]}" source --download-only \
		"libfabric=$debversion") ||
		echo "libfabric2.sh: apt-get source failed; using the upstream tarball if it arrived" >&2
	[ -f "$cache/src/libfabric_$version.orig.tar.xz" ] || {
		echo "libfabric2.sh: libfabric_$version.orig.tar.xz was not fetched" >&2
		exit 1
	}
	mv "$cache/src/libfabric_$version.orig.tar.xz" "$tarball"
}

[ -f "$tarball" ] || fetch
if [ "$fetch_only" = yes ]; then
	echo "$tarball"
	exit 0
fi

# build: hardware providers have no devices or libraries here; the software
# ones (tcp, rxm, rxd, udp, shm, sockets, net) are built into libfabric.so.
rm -rf "$cache/build" "$prefix"
mkdir -p "$cache/build"
tar -xJf "$tarball" -C "$cache/build" --strip-components=1
(
	cd "$cache/build"
	# Debian's upstream tarball is a git snapshot: no configure script yet.
	[ -x configure ] || ./autogen.sh >/dev/null 2>&1
	./configure -q --prefix="$prefix" --disable-verbs --disable-efa \
		--disable-psm2 --disable-psm3 --disable-opx --disable-usnic \
		--disable-cxi --disable-lpp --disable-ucx \
		CFLAGS="-O2" >/dev/null
	make -s -j"$jobs" >/dev/null
	make -s install >/dev/null
)
rm -rf "$cache/build"
touch "$prefix/.built-$version"
echo "$prefix"
