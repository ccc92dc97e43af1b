# SPDX-License-Identifier: BSD-2-Clause
# Included from Makefile.am: a real MPI job (Open MPI over libfabric) through
# FI_HOOK=mrlease, run by test/mpi.sh; the program is built only when
# configure found Open MPI's mpicc.
if HAVE_MPI
check_PROGRAMS += test/mpi/mpi_check
test_mpi_mpi_check_SOURCES = test/mpi/mpi_check.c
test_mpi_mpi_check_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
test_mpi_mpi_check_LDADD = $(MPI_LIBS) -ldl
endif
SUITE += $(top_srcdir)/test/mpi.sh
EXTRA_DIST += test/mpi.sh test/mpi/mpi_check.c
