/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_hook_passthrough's command line: which provider, which group of tests.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_ext_mrlease.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "passthrough.h"

const char *pt_prov;
bool pt_expect_hook;
const char *pt_baseline;

static void
usage(void)
{
	fprintf(stderr, "usage: test_hook_passthrough PROVIDER rdm|msg|traffic "
			"[case-name pattern...]\n");
	exit(2);
}

static bool
hook_named(const char *hooks)
{
	char *copy, *tok, *save = NULL;
	bool found = false;

	if (!hooks)
		return false;
	copy = strdup(hooks);
	for (tok = strtok_r(copy, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		found |= !strcmp(tok, "mrlease");
	free(copy);
	return found;
}

int
main(int argc, char **argv)
{
	const char *group, *env;
	char prefix[256];

	if (argc < 3)
		usage();
	pt_prov = argv[1];
	group = argv[2];
	env = getenv("MRL_PT_EXPECT_HOOK");
	pt_expect_hook = env ? atoi(env) != 0 : hook_named(getenv("FI_HOOK"));
	pt_baseline = getenv("MRL_PT_BASELINE");
	snprintf(prefix, sizeof(prefix), "%s FI_HOOK=%s%s%s%s%s: ", pt_prov,
		 getenv("FI_HOOK") ? getenv("FI_HOOK") : "(unset)",
		 getenv("FI_PROVIDER") ? " FI_PROVIDER=" : "",
		 getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "",
		 getenv("FI_MRLEASE_HOOK_INNER") ? " FI_MRLEASE_HOOK_INNER=" :
						   "",
		 getenv("FI_MRLEASE_HOOK_INNER") ?
			 getenv("FI_MRLEASE_HOOK_INNER") :
			 "");
	mrlt_set_prefix(prefix);
	mrlt_select(argc - 3, argv + 3);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strncmp(group, "control-", 8))
		return pt_control_run(group + 8);
	if (!strcmp(group, "rdm")) {
		MRLT_RUN(
			test_hook_wraps_every_object_class_and_closes_every_wrapper);
		MRLT_RUN(test_mrlease_ops_answer_only_under_the_hook);
		MRLT_RUN(
			test_domain_knows_whether_it_is_the_outermost_instance);
		MRLT_RUN(test_hook_answers_ops_the_provider_lacks_with_enosys);
		MRLT_RUN(test_core_objects_open_bind_enable_and_close);
		MRLT_RUN(test_an_endpoint_takes_the_name_a_dead_process_left);
		MRLT_RUN(test_counter_opens_reads_and_closes);
		MRLT_RUN(test_av_insert_lookup_straddr_and_remove);
		MRLT_RUN(test_eq_write_reads_back_application_events_unchanged);
		MRLT_RUN(test_wait_set_backs_a_cq);
		MRLT_RUN(test_poll_set_reports_the_hooked_cq);
		MRLT_RUN(test_ep_alias_sends_through_the_same_endpoint);
		MRLT_RUN(test_shared_tx_and_rx_contexts_carry_traffic);
		MRLT_RUN(test_scalable_ep_contexts_carry_traffic);
		MRLT_RUN(test_mr_reg_regv_and_regattr_register_and_close);
		MRLT_RUN(test_msg_ops_move_data_with_null_and_registered_desc);
		MRLT_RUN(test_tagged_ops_match_tags_and_move_data);
		MRLT_RUN(test_rma_ops_move_data_with_null_and_registered_desc);
		MRLT_RUN(test_remote_counter_counts_rma_at_the_target);
		MRLT_RUN(test_atomic_ops_update_and_fetch);
		MRLT_RUN(test_cq_format_context_batches_keep_every_context);
		MRLT_RUN(test_cq_format_msg_batches_keep_len_and_flags);
		MRLT_RUN(test_cq_format_data_batches_keep_remote_data);
		MRLT_RUN(test_cq_format_tagged_batches_keep_remote_data);
		MRLT_RUN(test_cq_readfrom_reports_the_sender);
		MRLT_RUN(test_cancelled_recv_reads_ecanceled_from_cq_readerr);
		MRLT_RUN(test_rma_to_a_bad_key_reports_an_error);
		MRLT_RUN(test_cq_sread_returns_the_completion);
		MRLT_RUN(test_trywait_and_getwait_see_the_hooked_cq);
		MRLT_RUN(test_cntr_wait_returns_at_threshold);
		MRLT_RUN(test_av_event_carries_the_hooked_av_fid);
	} else if (!strcmp(group, "traffic")) {
		MRLT_RUN(
			test_hook_wraps_every_object_class_and_closes_every_wrapper);
		MRLT_RUN(test_mrlease_ops_answer_only_under_the_hook);
		MRLT_RUN(test_msg_ops_move_data_with_null_and_registered_desc);
		MRLT_RUN(test_tagged_ops_match_tags_and_move_data);
		MRLT_RUN(test_rma_ops_move_data_with_null_and_registered_desc);
	} else if (!strcmp(group, "msg")) {
		MRLT_RUN(test_msg_mrlease_ops_answer_only_under_the_hook);
		MRLT_RUN(test_msg_connect_accept_events_carry_the_hooked_fids);
		MRLT_RUN(
			test_msg_endpoints_move_msg_and_rma_data_then_shut_down);
		MRLT_RUN(
			test_msg_reject_reports_econnrefused_on_the_client_fid);
		MRLT_RUN(test_msg_srx_receives_for_an_accepted_endpoint);
	} else {
		usage();
	}
	return mrlt_done();
}
