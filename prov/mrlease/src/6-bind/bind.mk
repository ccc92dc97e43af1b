# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: the binding of the lease cache to libfabric
# domains (prov/mrlease/include/mrl_bind.h): the process's cache, each hook
# domain's registrar and cache domain, the monitor's client, leased MR
# handles, the churn policy (mrl_bind_churn.h) and the remote registry
# (mrl_bind_remote.h: remote-access registrations, FI_MRLEASE_REMOTE). The
# only layer that reaches the passthrough, the cache, the monitor and the
# parameters at once.
noinst_LTLIBRARIES += prov/mrlease/libmrl-bind.la
prov_mrlease_libmrl_bind_la_SOURCES = \
	prov/mrlease/include/mrl_bind.h \
	prov/mrlease/src/6-bind/mrl_bind.c \
	prov/mrlease/src/6-bind/mrl_bind_churn.c \
	prov/mrlease/src/6-bind/mrl_bind_churn.h \
	prov/mrlease/src/6-bind/mrl_bind_remote.c \
	prov/mrlease/src/6-bind/mrl_bind_remote.h
