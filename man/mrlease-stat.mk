# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: mrlease-stat(1), generated from its markdown
# with pandoc and committed as fi_mrlease(7) is (man/man.mk).
dist_man1_MANS = man/mrlease-stat.1
EXTRA_DIST += man/mrlease-stat.1.md
if HAVE_PANDOC
man/mrlease-stat.1: man/mrlease-stat.1.md
	$(AM_V_GEN)sed -e '1,/^---$$/d' -e '/^{%.*%}$$/d' \
		$(srcdir)/man/mrlease-stat.1.md | \
	$(PANDOC) --standalone --from=markdown --to=man \
		-M title=mrlease-stat -M section=1 \
		-M header="mrlease User Commands" \
		-M footer="mrlease $(PACKAGE_VERSION)" -o $(srcdir)/man/mrlease-stat.1
endif
