# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the Debian packaging travels in the release
# tarball, and test/debian_package.sh builds its packages from that tarball,
# installs them, uses them and removes them again.
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/not-installed \
	debian/libfabric-mrlease.install debian/libfabric-mrlease-dev.install \
	debian/mrlease-tools.install \
	debian/libfabric-mrlease.lintian-overrides \
	debian/libfabric-mrlease-dev.lintian-overrides \
	debian/mrlease-tools.lintian-overrides
SUITE += $(top_srcdir)/test/debian_package.sh
EXTRA_DIST += test/debian_package.sh
