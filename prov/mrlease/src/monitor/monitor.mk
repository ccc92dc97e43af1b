# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor (kernel unmap events ->
# lease cache invalidation; prov/mrlease/include/mrl_monitor.h).
prov_mrlease_libmrlease_core_la_SOURCES += \
	prov/mrlease/include/mrl_monitor.h \
	prov/mrlease/src/monitor/mrl_monitor.c \
	prov/mrlease/include/mrl_churn.h \
	prov/mrlease/src/monitor/mrl_churn.c
