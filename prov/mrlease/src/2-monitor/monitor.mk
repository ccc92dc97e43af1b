# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor (kernel unmap events ->
# its client's invalidations; prov/mrlease/include/mrl_monitor.h). It
# includes no header of another layer.
noinst_LTLIBRARIES += prov/mrlease/libmrl-monitor.la
prov_mrlease_libmrl_monitor_la_SOURCES = \
	prov/mrlease/include/mrl_monitor.h \
	prov/mrlease/src/2-monitor/mrl_monitor.c
