# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the memory monitor (kernel unmap events ->
# its client's invalidations; prov/mrlease/include/mrl_monitor.h). It
# includes no header of another layer. mrl_monitor_int.h is what its units
# share: the task (mrl_monitor.c), the watch table, the mapping queries and
# the descriptors, each calling only those after it.
noinst_LTLIBRARIES += prov/mrlease/libmrl-monitor.la
prov_mrlease_libmrl_monitor_la_SOURCES = \
	prov/mrlease/include/mrl_monitor.h \
	prov/mrlease/src/2-monitor/mrl_monitor_int.h \
	prov/mrlease/src/2-monitor/mrl_monitor.c \
	prov/mrlease/src/2-monitor/mrl_monitor_watch.c \
	prov/mrlease/src/2-monitor/mrl_monitor_maps.c \
	prov/mrlease/src/2-monitor/mrl_monitor_fd.c
