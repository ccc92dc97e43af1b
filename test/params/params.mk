# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the parameters' tests (prov/mrlease/src/4-params/).

# FI_MRLEASE_* parsing and definitions (unit level, a stand-in provider).
check_PROGRAMS += test/params/test_params
test_params_test_params_SOURCES = test/params/test_params.c
test_params_test_params_LDADD = test/common/libmrltest.la prov/mrlease/libmrlease-core.la $(FABRIC_LIBS)
SUITE += test/params/test_params

# FI_MRLEASE_* through fi_info -e, a bad value's warning, FI_MRLEASE_STATS.
SUITE += $(top_srcdir)/test/params/test_params.sh
EXTRA_DIST += test/params/test_params.sh

# A refused FI_MRLEASE_* / FI_MRCHECK_* value is said on stderr at the
# default log level, naming the default used (children through the plugins).
check_PROGRAMS += test/params/test_params_refused
test_params_test_params_refused_SOURCES = test/params/test_params_refused.c
test_params_test_params_refused_LDADD = test/common/libmrltest.la $(FABRIC_LIBS)
SUITE += test/params/test_params_refused
