/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The plugin glue, the top layer (prov/mrlease/src/8-plugin/): what the
 * entry point (mrl_prov.c, fi_prov_ini) installs on the passthrough. It
 * only assembles the layers below: the personality names each layer's
 * callback, the extension forwards each call to the binding or the
 * monitor. Nothing below includes this header.
 */
#ifndef MRL_PLUGIN_H
#define MRL_PLUGIN_H

#include <stdint.h>

#include "mrl_hook.h"

/*
 * The FI_MRLEASE_OPS_1 extension (mrl_ext.c): the personality's ops_open.
 * Answers FI_MRLEASE_OPS_1 on fabric and domain fids; -FI_ENOSYS otherwise.
 */
int mrl_ext_ops_open(struct fid *hook_fid, const char *name, uint64_t flags,
		     void **ops, void *context);

/* The personality of the mrlease plugin (mrl_personality.c). */
extern const struct mrl_personality mrl_plugin_personality;

#endif /* MRL_PLUGIN_H */
