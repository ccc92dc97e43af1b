# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# fi_mrlease(7), fi_mrcheck(7): the markdown is the source; the generated
# pages are committed so building needs no pandoc. With pandoc, an edited
# .md regenerates its page (libfabric's front matter and Jekyll include line
# are dropped first).
dist_man7_MANS += man/fi_mrlease.7 man/fi_mrcheck.7
EXTRA_DIST += man/fi_mrlease.7.md man/fi_mrcheck.7.md
if HAVE_PANDOC
man/fi_mrlease.7: man/fi_mrlease.7.md
man/fi_mrcheck.7: man/fi_mrcheck.7.md
man/fi_mrlease.7 man/fi_mrcheck.7:
	$(AM_V_GEN)name=`basename $@ .7`; \
	sed -e '1,/^---$$/d' -e '/^{%.*%}$$/d' $(srcdir)/man/$$name.7.md | \
	$(PANDOC) --standalone --from=markdown --to=man \
		-M title=$$name -M section=7 \
		-M header="mrlease Programmer's Manual" \
		-M footer="mrlease $(PACKAGE_VERSION)" -o $(srcdir)/man/$$name.7
endif
