# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the release as users get it: the Debian
# packages and make install.

# The Debian packaging travels in the release
# tarball, and test/dist/debian_package.sh builds its packages from that tarball,
# installs them, uses them and removes them again.
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/not-installed \
	debian/libfabric-mrlease.install debian/libfabric-mrlease-dev.install \
	debian/mrlease-tools.install \
	debian/libfabric-mrlease.lintian-overrides \
	debian/libfabric-mrlease-dev.lintian-overrides \
	debian/mrlease-tools.lintian-overrides
SUITE += $(top_srcdir)/test/dist/debian_package.sh
EXTRA_DIST += test/dist/debian_package.sh

# make install into a temporary DESTDIR and a client built against the
# installed header only.
SUITE += $(top_srcdir)/test/dist/test_install.sh
EXTRA_DIST += test/dist/test_install.sh test/dist/install_client.c
