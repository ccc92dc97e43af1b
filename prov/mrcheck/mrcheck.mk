# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the mrcheck provider, the strict checker of
# memory-registration descriptors (fi_mrcheck(7); what it checks and why in
# prov/mrcheck/include/mrcheck.h). A DL hooking provider built on mrlease's
# passthrough layer (it links libmrl-hook.la and no other layer;
# test/build/test_layers.sh checks it), installed beside libmrlease-fi.so:
# FI_HOOK=mrcheck checks the application's descriptors,
# FI_HOOK='mrcheck;mrlease' mrlease's.
# The suite loads it from MRL_TEST_HOOK_PATH (= <builddir>/prov/mrcheck/.libs,
# test/run-entry.sh). Besides fi_prov_ini it exports mrcheck_global_ops, the
# test interface's fallback (mrcheck_loaded_ops in mrcheck.h).
AM_CPPFLAGS += -I$(top_srcdir)/prov/mrcheck/include
provider_LTLIBRARIES += prov/mrcheck/libmrcheck-fi.la
prov_mrcheck_libmrcheck_fi_la_SOURCES = prov/mrcheck/include/mrcheck.h \
	prov/mrcheck/src/mrcheck_int.h prov/mrcheck/src/mrcheck.c \
	prov/mrcheck/src/mrcheck_ep.c prov/mrcheck/src/mrcheck_cq.c \
	prov/mrcheck/src/mrcheck_params.c prov/mrcheck/src/mrcheck_keys.c
# The endpoint's data path: one post checked and tracked (mrcheck_post.h),
# and the wrappers of each family on it.
prov_mrcheck_libmrcheck_fi_la_SOURCES += prov/mrcheck/src/mrcheck_post.h \
	prov/mrcheck/src/mrcheck_post.c prov/mrcheck/src/mrcheck_msg.c \
	prov/mrcheck/src/mrcheck_tagged.c prov/mrcheck/src/mrcheck_rma.c \
	prov/mrcheck/src/mrcheck_atomic.c
# The fault injection (FI_MRCHECK_FAULT_*) and the registration cost model
# (FI_MRCHECK_REG_COST*): testing aids for the suite and the benchmarks.
prov_mrcheck_libmrcheck_fi_la_SOURCES += prov/mrcheck/src/mrcheck_fault.c \
	prov/mrcheck/src/mrcheck_cost.c
prov_mrcheck_libmrcheck_fi_la_LIBADD = prov/mrlease/libmrl-hook.la $(FABRIC_LIBS)
prov_mrcheck_libmrcheck_fi_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^(fi_prov_ini|mrcheck_global_ops)$$' $(AM_LDFLAGS)

# mrcheck as a user meets it (FI_HOOK=mrcheck alone): fi_info -l and -e,
# and a client making one descriptor mistake per run gets exactly that
# violation reported; the correct client none.
check_PROGRAMS += test/e2e/mrcheck_client
test_e2e_mrcheck_client_SOURCES = test/e2e/mrcheck_client.c
test_e2e_mrcheck_client_LDADD = test/common/libmrltest.la -ldl $(FABRIC_LIBS)
SUITE += $(top_srcdir)/test/e2e/mrcheck_client.sh
EXTRA_DIST += test/e2e/mrcheck_client.sh
