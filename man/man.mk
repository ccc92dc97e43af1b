# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# fi_mrlease(7): the markdown is the source; the generated page is committed
# so building needs no pandoc. With pandoc, an edited .md regenerates it
# (libfabric's front matter and Jekyll include line are dropped first).
dist_man7_MANS += man/fi_mrlease.7
EXTRA_DIST += man/fi_mrlease.7.md
if HAVE_PANDOC
man/fi_mrlease.7: man/fi_mrlease.7.md
	$(AM_V_GEN)sed -e '1,/^---$$/d' -e '/^{%.*%}$$/d' \
		$(srcdir)/man/fi_mrlease.7.md | \
	$(PANDOC) --standalone --from=markdown --to=man \
		-M title=fi_mrlease -M section=7 \
		-M header="mrlease Programmer's Manual" \
		-M footer="mrlease $(PACKAGE_VERSION)" -o $(srcdir)/man/fi_mrlease.7
endif
