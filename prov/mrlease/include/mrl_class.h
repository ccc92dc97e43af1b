/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fid classes the passthrough layer wraps. A wrapper's class is the
 * index of its fid ops table in mrl_fid_ops (mrl_hook_class_of, mrl_hook.h), so
 * fid close and control dispatch on it without a field of their own. The
 * endpoint family is split (endpoint, scalable endpoint, tx/rx/shared
 * contexts, passive endpoint) because each closes differently. The
 * test-only counters of mrl_hook_debug.h are indexed by it.
 */
#ifndef MRL_CLASS_H
#define MRL_CLASS_H

enum mrl_class {
	MRL_CLASS_FABRIC,
	MRL_CLASS_DOMAIN,
	MRL_CLASS_EQ,
	MRL_CLASS_WAIT,
	MRL_CLASS_POLL,
	MRL_CLASS_AV,
	MRL_CLASS_AV_SET,
	MRL_CLASS_CQ,
	MRL_CLASS_CNTR,
	MRL_CLASS_EP,
	MRL_CLASS_SEP,
	MRL_CLASS_TX_CTX,
	MRL_CLASS_RX_CTX,
	MRL_CLASS_SRX_CTX,
	MRL_CLASS_STX_CTX,
	MRL_CLASS_PEP,
	MRL_CLASS_MR,
	MRL_CLASS_MC,
	MRL_NCLASS
};

#endif /* MRL_CLASS_H */
