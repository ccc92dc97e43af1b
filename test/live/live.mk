# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: live statistics (FI_MRLEASE_STATS_LIVE) end to
# end on loopback tcp;ofi_rxm, with the built mrlease-stat reading them.
LIVE_TEST_SOURCES = test/live/live_util.c test/live/live_util.h \
	$(MRL_LIVE_READ_SOURCES) $(XFER_TEST_SOURCES)
LIVE_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools -I$(top_srcdir)/test

# The tool against query_stats, stale files (killed, pid reused), removal at
# exit, a bad directory's warning.
check_PROGRAMS += test/live/test_live
test_live_test_live_SOURCES = test/live/test_live.c $(LIVE_TEST_SOURCES)
test_live_test_live_CPPFLAGS = $(LIVE_TEST_CPPFLAGS)
test_live_test_live_LDADD = $(XFER_TEST_LDADD)
SUITE += test/live/test_live

# The files belong to their process and its user alone: another user's
# directory or file, symlinks, a directory others may write are refused;
# exit after a chdir removes the file made; a huge interval never spins.
check_PROGRAMS += test/live/test_live_owner
test_live_test_live_owner_SOURCES = test/live/test_live_owner.c \
	$(LIVE_TEST_SOURCES)
test_live_test_live_owner_CPPFLAGS = $(LIVE_TEST_CPPFLAGS)
test_live_test_live_owner_LDADD = $(XFER_TEST_LDADD)
SUITE += test/live/test_live_owner

# mrlease-stat and its reader on hostile files: random and mutated ones, a
# truncation while -w reads, a FIFO, a symlink, a directory, escape
# sequences in names; whose files root and a user see. Files only.
check_PROGRAMS += test/live/test_live_fuzz
test_live_test_live_fuzz_SOURCES = test/live/test_live_fuzz.c \
	test/live/live_output.c test/live/live_output.h \
	$(MRL_LIVE_READ_SOURCES)
test_live_test_live_fuzz_CPPFLAGS = $(LIVE_TEST_CPPFLAGS)
test_live_test_live_fuzz_LDADD = $(XFER_TEST_LDADD)
SUITE += test/live/test_live_fuzz

# Snapshots read while four threads post are never impossible; threads, so
# also under TSan.
check_PROGRAMS += test/live/test_live_threads
test_live_test_live_threads_SOURCES = test/live/test_live_threads.c \
	$(LIVE_TEST_SOURCES)
test_live_test_live_threads_CPPFLAGS = $(LIVE_TEST_CPPFLAGS)
test_live_test_live_threads_LDADD = $(XFER_TEST_LDADD)
SUITE += test/live/test_live_threads
SUITE_CONCURRENCY += test/live/test_live_threads

# mrlease-stat -w under tmux, as a person sees it (skipped without tmux).
SUITE += $(top_srcdir)/test/live/test_live_tool.sh
EXTRA_DIST += test/live/test_live_tool.sh
