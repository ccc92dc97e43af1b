/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The config.h libfabric's sources include, for the few of them cache_bench
 * compiles (bench/bench.mk, UTILMR_LF_FILES) and for the glue beside them.
 * These are the values libfabric 2.1's own configure chooses on Linux x86-64
 * (config/libfabric2.sh's options) for every macro those sources and their
 * headers test, except the two memory monitors: uffd and memhooks are
 * compiled out, as mrlease's monitor is absent from cache_bench. A source
 * added to the list may test more: compare its preprocessed output against
 * one built with libfabric's generated config.h.
 */
#define ENABLE_DEBUG		 0
#define HAVE_ALIAS_ATTRIBUTE	 1
#define HAVE_ATOMICS		 1
#define HAVE_ATOMICS_LEAST_TYPES 1
#define HAVE_BUILTIN_ATOMICS	 1
#define HAVE_BUILTIN_MM_ATOMICS	 1
#define HAVE_CLOCK_GETTIME	 1
#define HAVE_CPUID		 1
#define HAVE_EPOLL		 1
#define HAVE___INT128		 1
#define PT_LOCK_SPIN		 1
#define HAVE_KDREG2_MONITOR	 0
#define HAVE_MEMHOOKS_MONITOR	 0
#define HAVE_UFFD_MONITOR	 0
