/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_hook_passthrough: the passthrough layer against real providers on
 * loopback, one source per subject (hook.c: the hook in the call path,
 * objects.c: object classes, data.c: data transfer, completion.c:
 * completion paths, msg_ep.c: FI_EP_MSG with a passive endpoint), one
 * program: the layer's counters a test compares are per process.
 *
 * Usage: test_hook_passthrough PROVIDER GROUP
 *   PROVIDER  exact prov_name: "tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets",
 *             "tcp" (GROUP msg)
 *   GROUP     rdm      every object class and op the RDM provider offers
 *             msg      FI_EP_MSG with a passive endpoint (connection manager)
 *             traffic  msg, tagged and RMA traffic only (stacking, filters)
 * Environment:
 *   MRL_PT_EXPECT_HOOK  1: the mrlease hook must be in the call path, 0: it
 *                       must not be (default: 1 when FI_HOOK names mrlease)
 *   MRL_PT_BASELINE     "feature=rc,..." as printed ("# probe feature rc") by a
 *                       run without any FI_HOOK: an optional feature that
 *                       fails here is a skip only if it failed there too.
 *
 * libfabric reads FI_HOOK and FI_PROVIDER once per process, so
 * test/hook/passthrough.sh runs this program once per provider and hook set-up.
 */
#ifndef PASSTHROUGH_H
#define PASSTHROUGH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/fixture_rdm.h"
#include "3-hook/mrl_hook_debug.h" /* test-only counters of the passthrough layer */

#define SMALL 64
#define LARGE (256 * 1024) /* above rxm's rendezvous threshold */
#define TAG   0x5a5aULL

/* The run's set-up (main.c, from the command line and environment). */
extern const char *pt_prov; /* exact prov_name */
extern bool pt_expect_hook; /* the mrlease hook must be in the path */
extern const char *pt_baseline; /* MRL_PT_BASELINE */

/* Set-up shared by the subjects (setup.c). */

/* What probing feature `name` returned without the hook (MRL_PT_BASELINE),
 * in *rc; false when the baseline does not name it. */
bool pt_baseline_rc(const char *name, int *rc);
/*
 * Whether the test can use an optional feature. `rc` is what probing it
 * returned (0: offered); `lacking` says in words what the provider does
 * instead. Each result is printed as "# probe FEATURE RC" for
 * test/hook/passthrough.sh. Returns true to go on; otherwise marks the running
 * test skipped (the provider lacks the feature without the hook too) or
 * failed (only the hooked call fails).
 */
bool pt_feature(const char *name, int rc, const char *lacking);

/* pt_feature() for a call: `lacking` is "CALL returns ERROR". */
bool pt_offered(const char *name, const char *call, int rc);

/*
 * Open fabric+domain for pt_prov with the test's base caps plus `extra`.
 * Returns false with the test skipped when getinfo offers no such info.
 */
bool pt_open_domain(enum fi_ep_type type, uint64_t extra,
		    struct mrlt_domain *d);

/* pt_open_domain, then an RDM pair of peers on it. */
bool pt_open_pair(uint64_t extra, const struct mrlt_peer_opts *opts,
		  struct mrlt_domain *d, struct mrlt_peer *a,
		  struct mrlt_peer *b);

/* Wait (bounded) until dst holds len bytes of src: the way to see that a
 * remote write has landed whatever completion semantic the provider uses. */
int pt_wait_bytes(const void *dst, const void *src, size_t len,
		  struct mrlt_peer *a, struct mrlt_peer *b, const char *what);

/* The debug counters of the hook that owns `fid`, or NULL when no mrlease
 * (or mrlease-built) hook answers MRL_DEBUG_OPS_1 on it. */
struct mrl_debug_ops *pt_debug_ops(struct fid *fid, int *ret);

/*
 * A control for the running test: this program again for pt_prov with the
 * hooks of FI_HOOK other than mrlease alone (their names into hooks), doing
 * `what` (pt_control_run). Returns 0 or the negative fi_errno it ended with;
 * PT_CONTROL_NONE when FI_HOOK names no other hook or the control did not
 * run to the end.
 */
#define PT_CONTROL_NONE 1
int pt_control(const char *what, char *hooks, size_t len);
/* The control's side (group "control-WHAT"): its exit status. "eq_open":
 * fi_eq_open on pt_prov's fabric. */
int pt_control_run(const char *what);

/* hook.c */
void test_mrlease_ops_answer_only_under_the_hook(void);
void test_msg_mrlease_ops_answer_only_under_the_hook(void);
void test_hook_wraps_every_object_class_and_closes_every_wrapper(void);
void test_domain_knows_whether_it_is_the_outermost_instance(void);
void test_hook_answers_ops_the_provider_lacks_with_enosys(void);

/* objects.c */
void test_core_objects_open_bind_enable_and_close(void);
void test_an_endpoint_takes_the_name_a_dead_process_left(void);
void test_counter_opens_reads_and_closes(void);
void test_av_insert_lookup_straddr_and_remove(void);
void test_eq_write_reads_back_application_events_unchanged(void);
void test_wait_set_backs_a_cq(void);
void test_poll_set_reports_the_hooked_cq(void);
void test_ep_alias_sends_through_the_same_endpoint(void);
void test_shared_tx_and_rx_contexts_carry_traffic(void);
void test_scalable_ep_contexts_carry_traffic(void);
void test_mr_reg_regv_and_regattr_register_and_close(void);

/* data.c */
void test_msg_ops_move_data_with_null_and_registered_desc(void);
void test_tagged_ops_match_tags_and_move_data(void);
void test_rma_ops_move_data_with_null_and_registered_desc(void);
void test_remote_counter_counts_rma_at_the_target(void);
void test_atomic_ops_update_and_fetch(void);
void test_cq_format_context_batches_keep_every_context(void);
void test_cq_format_msg_batches_keep_len_and_flags(void);
void test_cq_format_data_batches_keep_remote_data(void);
void test_cq_format_tagged_batches_keep_remote_data(void);

/* completion.c */
void test_cq_readfrom_reports_the_sender(void);
void test_cancelled_recv_reads_ecanceled_from_cq_readerr(void);
void test_rma_to_a_bad_key_reports_an_error(void);
void test_cq_sread_returns_the_completion(void);
void test_trywait_and_getwait_see_the_hooked_cq(void);
void test_cntr_wait_returns_at_threshold(void);
void test_av_event_carries_the_hooked_av_fid(void);

/* msg_ep.c */
void test_msg_connect_accept_events_carry_the_hooked_fids(void);
void test_msg_endpoints_move_msg_and_rma_data_then_shut_down(void);
void test_msg_reject_reports_econnrefused_on_the_client_fid(void);
void test_msg_srx_receives_for_an_accepted_endpoint(void);

#endif /* PASSTHROUGH_H */
