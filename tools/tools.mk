# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: mrlease-stat(1), installed in $(bindir), and
# the reader of live statistics files it shares with the tests.
bin_PROGRAMS = tools/mrlease-stat
MRL_LIVE_READ_SOURCES = tools/mrl_live_read.c tools/mrl_live_read.h \
	prov/mrlease/include/mrl_live_file.h
tools_mrlease_stat_SOURCES = tools/mrlease-stat.c $(MRL_LIVE_READ_SOURCES)
# Not the provider: nothing of libfabric's is linked.
tools_mrlease_stat_CFLAGS = $(AM_CFLAGS) -fvisibility=default
