/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TEST-ONLY: fi_control commands a test gives a hook endpoint to stall the
 * data path's completion side at a chosen point. Not installed, not a
 * public API: tests include it by path. Neither costs the hit path
 * anything.
 */
#ifndef MRL_XFER_CTL_H
#define MRL_XFER_CTL_H

#include <sys/types.h>

/*
 * TEST-ONLY: fi_control(&ep->fid, MRL_XFER_CTL_TEST_COMPLETING, &hook) on an
 * enabled endpoint that leases (-FI_EINVAL otherwise) makes every
 * completion of its ops that takes the out-of-line path (hidden,
 * multi-recv, chained, error) call hook.fn(hook.arg) on the completing
 * thread after the op's state changed and before it returns to the free
 * list (hook.fn NULL: off). test_xfer_close_race stalls a completer there
 * while another thread closes the endpoint.
 */
#define MRL_XFER_CTL_TEST_COMPLETING 0x6d726c01
struct mrl_xfer_test_completing {
	void (*fn)(void *arg);
	void *arg;
};

/*
 * TEST-ONLY: fi_control(&ep->fid, MRL_XFER_CTL_TEST_READING, &hook) on an
 * enabled endpoint whose receive CQ is guarded (it leased an FI_MULTI_RECV
 * buffer on a shared pool; -FI_EINVAL otherwise) makes every guarded read of
 * that CQ (read, readfrom, sread, sreadfrom) call hook.fn(hook.arg, entries,
 * n) on the reading thread after the inner read returned n > 0 entries (in
 * the CQ's format, contexts not yet translated) and before they are
 * translated (hook.fn NULL: off). test_xfer_multi_recv_race stalls a
 * reader there. Only guarded reads test it: other CQs pay nothing.
 */
#define MRL_XFER_CTL_TEST_READING 0x6d726c02
struct mrl_xfer_test_reading {
	void (*fn)(void *arg, const void *entries, ssize_t n);
	void *arg;
};

#endif /* MRL_XFER_CTL_H */
