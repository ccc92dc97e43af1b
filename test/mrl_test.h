/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TO BE REMOVED: the test helpers' former mrl_ names (mrl_ is the
 * provider's prefix). No test includes this header any more: every one
 * includes mrlt.h (and fixture_rdm.h) instead. Delete it, with its line in
 * Makefile.am. -DMRLT_NO_COMPAT leaves the old names out.
 */
#ifndef MRL_TEST_H
#define MRL_TEST_H

#include "mrlt.h"
#include "fixture_rdm.h"

#ifndef MRLT_NO_COMPAT
#define mrl_test_fail mrlt_fail
#define mrl_test_failed mrlt_failed
#define mrl_test_run mrlt_run
#define mrl_test_skip mrlt_skip
#define mrl_test_done mrlt_done
#define mrl_test_set_prefix mrlt_set_prefix
#define mrl_test_skip_current mrlt_skip_current
#define MRL_RUN MRLT_RUN
#define mrl_track_fid mrlt_track_fid
#define mrl_close mrlt_close
#define mrl_alloc mrlt_alloc
#define mrl_track_info mrlt_track_info
#define mrl_close_all mrlt_close_all
#define MRL_FI_VERSION MRLT_FI_VERSION
#define MRL_SPIN_MAX MRLT_SPIN_MAX
#define MRL_WAIT_SECONDS MRLT_WAIT_SECONDS
#define mrl_wait mrlt_wait
#define mrl_wait_init mrlt_wait_init
#define mrl_wait_init_for mrlt_wait_init_for
#define mrl_wait_over mrlt_wait_over
#define mrl_wait_until_int mrlt_wait_until_int
#define mrl_hints mrlt_hints
#define mrl_getinfo mrlt_getinfo
#define mrl_domain mrlt_domain
#define mrl_domain_open mrlt_domain_open
#define mrl_peer_opts mrlt_peer_opts
#define mrl_peer mrlt_peer
#define mrl_peer_open mrlt_peer_open
#define mrl_peers_connect mrlt_peers_connect
#define mrl_rdm_pair_open mrlt_rdm_pair_open
#define mrl_progress mrlt_progress
#define MRL_POST MRLT_POST
#define mrl_cq_wait mrlt_cq_wait
#define mrl_cq_wait_err mrlt_cq_wait_err
#define mrl_cntr_wait mrlt_cntr_wait
#define mrl_mr_reg mrlt_mr_reg
#define mrl_next_key mrlt_next_key
#define mrl_rma_addr mrlt_rma_addr
#define mrl_eq_poll mrlt_eq_poll
#define mrl_eq_wait mrlt_eq_wait
#define mrl_eq_wait_err mrlt_eq_wait_err
#define mrl_pep_listen mrlt_pep_listen
#define mrl_msg_ep_open mrlt_msg_ep_open
#define mrl_msg_pair mrlt_msg_pair
#define mrl_msg_pair_open mrlt_msg_pair_open
#endif /* MRLT_NO_COMPAT */

#endif /* MRL_TEST_H */
