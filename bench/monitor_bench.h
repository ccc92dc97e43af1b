/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the parts of bench/monitor_bench share (monitor_bench.c opens with
 * what it measures and how): monitor_bench.c the parent (servers, rounds,
 * figures), monitor_bench_child.c what runs inside a measured process,
 * monitor_bench_cg.c the callgrind part.
 */
#ifndef MONITOR_BENCH_H
#define MONITOR_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "bench_util.h"

/* The configurations: FI_MRLEASE_PINNING and FI_MRLEASE_MONITOR of each.
 * MODE_OFFMT and MODE_PEROPMT are MODE_OFF and MODE_PEROP with an idle
 * second pthread: multi-threaded, as MODE_MON is with its monitor task.
 * MODE_WATCHNC is MODE_WATCH on a domain opened FI_THREAD_DOMAIN: no
 * closer thread. */
enum {
	MODE_MON,
	MODE_PEROP,
	MODE_OFF,
	MODE_WATCH,
	MODE_OFFMT,
	MODE_PEROPMT,
	MODE_WATCHNC,
	NMODES
};
extern const char *const mb_mode_names[NMODES];
extern const char *const mb_mode_pinning[NMODES];
extern const char *const mb_mode_monitor[NMODES];
/* FI_MRLEASE_MONITOR_CHURN of each; NULL: the default. */
extern const char *const mb_mode_churn[NMODES];
/* Whether the configuration runs the memory monitor. */
bool mb_mode_monitored(int mode);

/* The largest loop operand, and the target buffer's size. */
#define MAX_LOOP ((size_t) 1 << 20)

extern size_t mb_page;

const char *mb_prov(void);

/* --serve MODE and --hit on|off N (monitor_bench_child.c); 2: bad usage. */
int mb_serve_main(const char *mode_name);
int mb_hit_main(const char *mode, long n);

/* Instructions per hit of the cache alone, and per leased write over the
 * provider, monitor on ([0]) and off ([1]) (monitor_bench_cg.c). */
bool mb_callgrind_hit(double ir[2]);
bool mb_callgrind_xfer(double ir[2], double cache[2], double *spread);

#endif /* MONITOR_BENCH_H */
