# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am.
BENCHES =
# The shared pair of the data-path tests (test/common/fixture_rdm.h), compiled in
# (each bench with flags of its own: its objects apart from the test
# library's libtool objects of the same sources).
BENCH_FIXTURE_SOURCES = test/common/xfer_util.c test/common/xfer_util.h test/common/fixture_rdm.c \
	test/common/fixture_rdm.h test/common/mrl_test.c test/common/mrlt.h

# ---- bench/xfer_bench: data-path message rate, four modes ----
noinst_PROGRAMS += bench/xfer_bench
bench_xfer_bench_SOURCES = bench/xfer_bench.c bench/xfer_bench.h \
	bench/xfer_bench_child.c bench/xfer_bench_rounds.c bench/bench_util.c bench/bench_util.h \
	$(BENCH_FIXTURE_SOURCES)
bench_xfer_bench_CPPFLAGS = $(AM_CPPFLAGS)
bench_xfer_bench_LDADD = -ldl $(FABRIC_LIBS)
BENCHES += bench/xfer_bench

# The lease cache against a global-mutex map, UCX's rcache and libfabric's
# util MR cache. Run: make bench, or bench/cache_bench [--quick].
noinst_PROGRAMS += bench/cache_bench
bench_cache_bench_SOURCES = bench/cache_bench.c test/common/cache_registrar.c test/common/cache_registrar.h \
	test/common/mrl_test.c bench/utilmr/utilmr.h bench/bench_util.c bench/bench_util.h
bench_cache_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test
bench_cache_bench_LDADD = prov/mrlease/libmrlease-core.la -ldl $(FABRIC_LIBS)
if HAVE_UCS
bench_cache_bench_CPPFLAGS += -DHAVE_UCS=1 $(UCS_CFLAGS)
bench_cache_bench_LDADD += $(UCS_LIBS)
endif
BENCHES += bench/cache_bench

# libfabric's util MR cache (libfabric 2.1) for cache_bench: its sources come
# from the tarball config/libfabric2.sh keeps (configure's
# --with-libfabric2-cache says where), which make bench fetches there when
# it is missing; they are extracted into the build tree and compiled here
# with bench/utilmr/config.h, warnings off (they are not ours), into a
# module cache_bench loads at run time, so that building the rest never
# needs the network. Its internal headers are never committed nor
# distributed. bench/utilmr/utilmr.c is the glue, built with our warnings
# against those headers only.
EXTRA_DIST += bench/utilmr/utilmr.c bench/utilmr/config.h
UTILMR_MODULE = bench/utilmr/libutilmr.so
# Why the module is not there, written by bench-utilmr, read by cache_bench.
UTILMR_MISSING = bench/utilmr/missing
bench_cache_bench_CPPFLAGS += -DUTILMR_MODULE='"$(abs_builddir)/$(UTILMR_MODULE)"' \
	-DUTILMR_MODULE_MISSING='"$(abs_builddir)/$(UTILMR_MISSING)"'
UTILMR_TOP = bench/utilmr/libfabric-2.1.0
# util_mr_cache.c and what it calls: the rbmap, the buffer pool, the monitor
# framework (its mm_lock), the monitors it names (each compiled out without
# its kernel or device support), the import monitor and the fi_no_* stubs.
UTILMR_LF_FILES = prov/util/src/util_mr_cache.c prov/util/src/util_mem_monitor.c \
	prov/util/src/util_buf.c src/tree.c src/enosys.c src/mem.c \
	prov/util/src/import_mem_monitor.c prov/util/src/uffd_mem_monitor.c \
	prov/util/src/util_mem_hooks.c prov/util/src/kdreg2_mem_monitor.c \
	prov/util/src/cuda_mem_monitor.c prov/util/src/cuda_ipc_monitor.c \
	prov/util/src/rocr_mem_monitor.c prov/util/src/rocr_ipc_monitor.c \
	prov/util/src/ze_mem_monitor.c prov/util/src/ze_ipc_monitor.c \
	prov/util/src/xpmem_monitor.c
UTILMR_LF_OBJECTS = $(patsubst %.c,$(UTILMR_TOP)/%.o,$(UTILMR_LF_FILES))
# As libfabric's Makefile.am and configure compile them (release: -DNDEBUG).
UTILMR_CPPFLAGS = -DHAVE_CONFIG_H -D_GNU_SOURCE -D__USE_XOPEN2K8 -DNDEBUG \
	-I$(top_srcdir)/bench/utilmr -isystem $(UTILMR_TOP)/include
UTILMR_CFLAGS = -std=gnu11 -pthread -fPIC $(SANITIZE_CFLAGS) $(CFLAGS)
$(UTILMR_TOP)/.extracted: $(UTILMR_TARBALL)
	$(AM_V_GEN)rm -rf $(UTILMR_TOP) && $(MKDIR_P) bench/utilmr && \
	tar -xJf $(UTILMR_TARBALL) -C bench/utilmr libfabric-2.1.0/include \
		$(addprefix libfabric-2.1.0/,$(UTILMR_LF_FILES)) && touch $@
$(addprefix $(UTILMR_TOP)/,$(UTILMR_LF_FILES)): $(UTILMR_TOP)/.extracted
$(UTILMR_TOP)/%.o: $(UTILMR_TOP)/%.c
	$(AM_V_CC)$(CC) $(UTILMR_CPPFLAGS) $(UTILMR_CFLAGS) -w -c $< -o $@
bench/utilmr/utilmr.o: bench/utilmr/utilmr.c bench/utilmr/utilmr.h \
		bench/utilmr/config.h $(UTILMR_TOP)/.extracted
	$(AM_V_CC)$(MKDIR_P) bench/utilmr && $(CC) $(UTILMR_CPPFLAGS) $(UTILMR_CFLAGS) \
		-Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow \
		$(WERROR_CFLAGS) -c $(srcdir)/bench/utilmr/utilmr.c -o $@
# -Bsymbolic: the module's own fi_no_* stubs, not the system libfabric's.
$(UTILMR_MODULE): bench/utilmr/utilmr.o $(UTILMR_LF_OBJECTS)
	$(AM_V_CCLD)$(CC) $(UTILMR_CFLAGS) -shared -Wl,-Bsymbolic -o $@ $^
# Before the benchmarks run: the tarball fetched if it is missing, then the
# module built. What fails is written to $(UTILMR_MISSING) and printed, and
# cache_bench runs without the peer and says so on its RESULT line
# (ofi_peer=MISSING); the other benchmarks run either way.
bench-utilmr:
	@$(MKDIR_P) bench/utilmr; rm -f $(UTILMR_MISSING); \
	tarball='$(UTILMR_TARBALL)'; dir=$$(dirname "$$tarball"); \
	if test -z "$$tarball"; then \
		echo '$(UTILMR_SKIPPED)' >$(UTILMR_MISSING); \
	elif test ! -r "$$tarball"; then \
		echo "== fetching libfabric 2.1's source into $$dir (cache_bench's ofi peer)"; \
		$(SHELL) $(top_srcdir)/config/libfabric2.sh --fetch-only "$$dir" \
			>bench/utilmr/fetch.log 2>&1 || tail -n 3 bench/utilmr/fetch.log; \
	fi; \
	if test -f $(UTILMR_MISSING); then :; \
	elif test ! -r "$$tarball"; then \
		echo "no libfabric 2.1 source: config/libfabric2.sh --fetch-only $$dir failed (bench/utilmr/fetch.log)" \
			>$(UTILMR_MISSING); \
	elif ! $(MAKE) $(AM_MAKEFLAGS) $(UTILMR_MODULE); then \
		echo "libfabric 2.1's util MR cache did not build from $$tarball" \
			>$(UTILMR_MISSING); \
	fi; \
	if test -f $(UTILMR_MISSING); then \
		echo "WARNING: cache_bench runs WITHOUT the ofi peer: $$(cat $(UTILMR_MISSING))"; fi
bench: bench-utilmr
.PHONY: bench-utilmr
# Makefile.am's clean-local removes the extracted tree.
CLEANFILES += bench/utilmr/utilmr.o $(UTILMR_MODULE) $(UTILMR_MISSING) \
	bench/utilmr/fetch.log

# Hook instructions per leased fi_write, per function, with the callgrind
# recipe in bench/README.md: the one way to get
# instruction counts (xfer_bench measures rates only). Run: make bench, or
# bench/xfer_ir.sh [BUILDDIR] from the source tree.
EXTRA_DIST += bench/xfer_ir.sh
CLEANFILES += bench/xfer_ir
bench/xfer_ir: $(top_srcdir)/bench/xfer_ir.sh
	@$(MKDIR_P) bench
	cp $(top_srcdir)/bench/xfer_ir.sh $@ && chmod +x $@
bench: bench/xfer_ir
BENCHES += bench/xfer_ir

# What the memory monitor costs: munmap with and without it, the unmap loop
# against registering per operation, the reuse loop, and the hit path's
# instructions under callgrind. Run: make bench, or
# bench/monitor_bench. The preload library lets valgrind, which lacks the
# userfaultfd system call, run the monitor (its callgrind part only).
noinst_PROGRAMS += bench/monitor_bench
bench_monitor_bench_SOURCES = bench/monitor_bench.c bench/monitor_bench.h \
	bench/monitor_bench_child.c bench/monitor_bench_cg.c bench/bench_util.c bench/bench_util.h \
	$(BENCH_FIXTURE_SOURCES)
bench_monitor_bench_CPPFLAGS = $(AM_CPPFLAGS) -DMONITOR_BENCH_SRCDIR='"$(abs_top_srcdir)"'
bench_monitor_bench_LDADD = prov/mrlease/libmrlease-core.la -ldl -lpthread \
	$(FABRIC_LIBS)
EXTRA_bench_monitor_bench_DEPENDENCIES = bench/libmonitor_bench_uffd.la
noinst_LTLIBRARIES += bench/libmonitor_bench_uffd.la
bench_libmonitor_bench_uffd_la_SOURCES = bench/monitor_bench_uffd.c
# Loaded into valgrind's client only: no sanitizer runtime.
bench_libmonitor_bench_uffd_la_CFLAGS = -std=gnu11 -Wall -Wextra $(WERROR_CFLAGS)
bench_libmonitor_bench_uffd_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/bench
bench_libmonitor_bench_uffd_la_LIBADD = -ldl
BENCHES += bench/monitor_bench
EXTRA_DIST += bench/README.md

# What mrlease saves where registrations are expensive: message rate under
# mrcheck's registration cost model, application-registered, registered
# per operation, leased, and leased with eviction. Run: make
# bench, or bench/cost_bench.
noinst_PROGRAMS += bench/cost_bench
bench_cost_bench_SOURCES = bench/cost_bench.c bench/bench_util.c bench/bench_util.h \
	bench/bench_window.c bench/bench_window.h $(BENCH_FIXTURE_SOURCES)
bench_cost_bench_CPPFLAGS = $(AM_CPPFLAGS)
bench_cost_bench_LDADD = -ldl $(FABRIC_LIBS)
bench: prov/mrcheck/libmrcheck-fi.la
BENCHES += bench/cost_bench

# The per-request remote pattern (Mercury's: register for remote write,
# the peer writes with the key, close) with FI_MRLEASE_REMOTE=forward,
# =cache and keys the application keeps, with mrcheck's registration cost
# model and without. Run: make bench, or bench/remote_bench.
noinst_PROGRAMS += bench/remote_bench
bench_remote_bench_SOURCES = bench/remote_bench.c bench/bench_util.c bench/bench_util.h \
	bench/bench_window.c bench/bench_window.h $(BENCH_FIXTURE_SOURCES)
bench_remote_bench_CPPFLAGS = $(AM_CPPFLAGS)
bench_remote_bench_LDADD = -ldl $(FABRIC_LIBS)
BENCHES += bench/remote_bench

# Posting threads on one FI_THREAD_SAFE domain: mrlease's scaling from 1
# to 2 threads against the provider's own. Run: make bench, or
# bench/thread_bench.
noinst_PROGRAMS += bench/thread_bench
bench_thread_bench_SOURCES = bench/thread_bench.c bench/bench_util.c bench/bench_util.h \
	$(BENCH_FIXTURE_SOURCES)
bench_thread_bench_CPPFLAGS = $(AM_CPPFLAGS)
bench_thread_bench_LDADD = -ldl -lpthread $(FABRIC_LIBS)
BENCHES += bench/thread_bench

# Charts (gnuplot; bench/plot.sh says what each one draws). make bench-data
# runs the plotted benchmarks, each one's output and data file kept in
# BENCH_DATA_DIR (default bench-data in the build tree); make plots draws
# what is there into bench/plots/ of the source tree, the committed charts.
PLOTTED_BENCHES = bench/cost_bench bench/thread_bench bench/cache_bench bench/xfer_bench
EXTRA_DIST += bench/plot.sh bench/plots/rate_cost.svg bench/plots/cost_savings.svg \
	bench/plots/rate_xfer.svg bench/plots/cache_hit.svg bench/plots/thread_scaling.svg \
	bench/plots/data/cost_bench.dat bench/plots/data/cost_bench.out \
	bench/plots/data/thread_bench.dat bench/plots/data/thread_bench.out \
	bench/plots/data/cache_bench.out bench/plots/data/xfer_bench.out
bench-data: $(PLOTTED_BENCHES) prov/mrcheck/libmrcheck-fi.la
	@dir=$${BENCH_DATA_DIR:-$(abs_builddir)/bench-data}; \
	for b in $(PLOTTED_BENCHES); do echo "== $$b"; \
		BENCH_DATA_DIR=$$dir $(SHELL) $(top_srcdir)/bench/plot.sh --run \
			$(abs_top_builddir)/$$b || exit 1; done
plots:
	BENCH_DATA_DIR=$${BENCH_DATA_DIR:-$(abs_builddir)/bench-data} \
		$(SHELL) $(top_srcdir)/bench/plot.sh $(top_srcdir)/bench/plots
.PHONY: bench-data plots

# What the hook adds to a claiming receive (MPI_Mrecv) beside a plain
# tagged receive, without and with FI_HOOK=mrlease, paired slice by slice.
# Run: make bench, or bench/claim_bench.
noinst_PROGRAMS += bench/claim_bench
bench_claim_bench_SOURCES = bench/claim_bench.c bench/bench_util.c bench/bench_util.h \
	$(BENCH_FIXTURE_SOURCES)
bench_claim_bench_CPPFLAGS = $(AM_CPPFLAGS)
bench_claim_bench_LDADD = -ldl $(FABRIC_LIBS)
BENCHES += bench/claim_bench

# The shm regions' cleanup that the fixture and mrl_test.c call
# (test/common/mrlt_shm.c), wherever those two are compiled in.
BENCH_FIXTURE_SOURCES += test/common/mrlt_shm.c
bench_cache_bench_SOURCES += test/common/mrlt_shm.c
