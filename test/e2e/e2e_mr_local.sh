#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test_e2e_xfer with FI_MR_LOCAL domains and FI_MRLEASE_MIN_SIZE=1G: mrlease
# must resolve every NULL desc because the domain requires FI_MR_LOCAL. On
# tcp;ofi_rxm (no FI_MR_VIRT_ADDR) this includes sends past rxm's eager
# limit, whose leases must start at each iov (rxm's rendezvous peer reads
# every iov from offset 0 of its MR).
exec "${MRL_TOP_BUILDDIR:-.}/test/e2e/test_e2e_xfer" --mr-local "$@"
