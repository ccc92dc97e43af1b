/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A counting registrar for the lease cache's tests and benchmark.
 *
 * Backed either by nothing (a fake handle per registration, for pure
 * data-structure tests) or by a real fid_domain (fi_mr_reg / fi_close through
 * the public API). Every registration gets a record, so a second close of the
 * same handle is detected (and not passed to libfabric), and a program can
 * check at exit that every registration it ever made was closed exactly once.
 * The benchmark turns records off (CREG_NO_RECORDS) to measure the cache's
 * own memory.
 */
#ifndef CACHE_REGISTRAR_H
#define CACHE_REGISTRAR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "mrl_cache.h"

enum creg_flags {
	CREG_NO_RECORDS = 1 << 0, /* fake handles, counters only */
};

struct creg {
	struct fid_domain *domain; /* NULL: fake registrations */
	unsigned flags;
	atomic_long registered, closed, double_closed, live;
	atomic_ulong last_key;
	atomic_ulong last_access;
	atomic_uintptr_t last_addr; /* range of the last reg() call */
	atomic_size_t last_len;
	/* Failure injection, read at each reg(). */
	atomic_int fail_code; /* fail every call with this (0: off) */
	atomic_int enokey_left; /* answer -FI_ENOKEY this many times */
	atomic_long max_live; /* -FI_ENOSPC at this many live (0: off) */
	atomic_long refusals; /* failed reg() calls, injected or real */
	/* When set, reg() waits on it before registering (to line up misses).
	 */
	pthread_barrier_t *gate;
	atomic_int gate_uses; /* how many reg() calls still wait */
	/* When set, called inside reg() before registering (once, then
	 * cleared): lets a test run an invalidate while a miss registers. */
	void (*on_reg)(void *arg);
	void *on_reg_arg;
};

extern const struct mrl_registrar creg_registrar;

void creg_init(struct creg *creg, struct fid_domain *domain, unsigned flags);

/* Domain config for a cache domain over this registrar (provider picks no
 * keys, 8-byte keys: the tcp provider's facts). */
struct mrl_domain_config creg_domain_config(struct creg *creg);

/* The libfabric MR behind a handle reg() returned (records mode). */
struct fid_mr *creg_fid(void *mr);

/* Whether a handle reg() returned was closed already (records mode). */
bool creg_is_closed(void *mr);

/* Process-wide totals over every creg (records mode only for the last two). */
long creg_total_registered(void);
long creg_total_closed(void);
long creg_total_double_closed(void);
long creg_total_open_records(void);

/* A span resolver answering a fixed span, counting its calls. */
struct creg_span {
	uintptr_t base;
	size_t len;
	int calls;
};

int creg_span_fn(void *arg, const void *addr, size_t len, void **base,
		 size_t *slen);

/* The suite-wide check every cache test program ends with (TAP test). */
void test_every_registration_closed_exactly_once(void);

/* A real FI_EP_MSG tcp domain (FI_THREAD_SAFE) for tests whose
 * registrations must go through libfabric. open returns -FI_ENODATA when tcp
 * is not available (the test then skips); close returns the first failure. */
struct creg_tcp {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

int creg_tcp_open(struct creg_tcp *tcp);
int creg_tcp_close(struct creg_tcp *tcp);

#endif /* CACHE_REGISTRAR_H */
