# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.

# Parameters (FI_MRLEASE_*), the mrlease personality's domain glue, leased MR
# handles and the FI_MRLEASE_OPS_1 extension.
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_params.h \
	prov/mrlease/src/mrl_params.c
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_lease.h \
	prov/mrlease/src/mrl_lease_domain.c \
	prov/mrlease/src/mrl_ext.c \
	prov/mrlease/src/mrl_personality.c
