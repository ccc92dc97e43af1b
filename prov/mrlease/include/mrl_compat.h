/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What libfabric's public headers dropped or deprecated after 1.17, so that
 * one source builds warning-free against 1.17 and 2.x headers alike. The
 * values stay those of the ABI: a plugin built against either header reads
 * the same bits from any runtime.
 */
#ifndef MRL_COMPAT_H
#define MRL_COMPAT_H

#include <stddef.h>

#include <rdma/fabric.h>

/* rdma/fabric.h defines container_of up to 1.x; 2.x no longer does. */
#ifndef container_of
#define container_of(ptr, type, field) \
	((type *) ((char *) (ptr) -offsetof(type, field)))
#endif

/* FI_LOCAL_MR (fi_info mode bit) and FI_MR_BASIC (the 1.0 mr_mode value,
 * provider-selected keys) warn when named under 2.x headers, yet providers
 * and applications built against older ones still set them. */
#define MRL_FI_LOCAL_MR (1ULL << 55)
#define MRL_FI_MR_BASIC 1

/* FI_REG_MR (fi_domain_bind flag: registrations complete by EQ events)
 * warns when named under 2.x headers, which deprecate it. */
#define MRL_FI_REG_MR (1ULL << 59)

/* FI_BUFFERED_RECV (fi_info mode bit) is gone from 2.x headers; a 1.x
 * application may still run with it. */
#define MRL_FI_BUFFERED_RECV (1ULL << 51)

/* FI_MR_DMABUF (fi_mr_regattr flag: the attr holds a dmabuf, 1.20 on)
 * is not in 1.17's headers, yet a newer application may pass it. */
#define MRL_FI_MR_DMABUF (1ULL << 40)

#ifdef FI_MR_DMABUF
_Static_assert(MRL_FI_MR_DMABUF == FI_MR_DMABUF, "FI_MR_DMABUF's value");
#endif

#if FI_MAJOR_VERSION < 2
_Static_assert(MRL_FI_LOCAL_MR == FI_LOCAL_MR, "FI_LOCAL_MR's value");
_Static_assert(MRL_FI_MR_BASIC == FI_MR_BASIC, "FI_MR_BASIC's value");
_Static_assert(MRL_FI_REG_MR == FI_REG_MR, "FI_REG_MR's value");
_Static_assert(MRL_FI_BUFFERED_RECV == FI_BUFFERED_RECV,
	       "FI_BUFFERED_RECV's value");
#endif

#endif /* MRL_COMPAT_H */
