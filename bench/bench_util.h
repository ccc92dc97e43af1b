/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the bench programs share: the measured
 * processes ("servers": this program re-executed with an environment of
 * its own, one timed slice per command line on its stdin, the idle ones
 * waiting in read()), the statistics of paired rounds, and the data files
 * bench/plot.sh reads.
 *
 * Why servers: libfabric reads FI_HOOK and the FI_MRLEASE_* parameters once
 * per process, so each configuration lives in a process of its own; and on
 * a shared VM the machine's speed drifts over seconds, so configurations
 * are compared slice by slice within a round, never run after run.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* A measured process. pid 0: not running. */
struct bu_server {
	const char *name;
	pid_t pid;
	FILE *cmd; /* its stdin */
	FILE *out; /* its stdout, unbuffered */
	/* Seconds it may take to answer; 0: BENCH_TIMEOUT, default 120. */
	int timeout_s;
};

/* Start this program with args (after the program name) as server s, its
 * environment first changed by env(arg) in the child. Does not wait for
 * it. Returns 0 or a negative errno. */
int bu_server_start(struct bu_server *s, char *const *args,
		    void (*env)(void *arg), void *arg);
/* Wait until s says "ready" (it has warmed up). 0, -FI_ENODATA when it
 * found its provider unavailable (exit status 77), or -FI_EOTHER; on
 * failure s is reaped. */
int bu_server_ready(struct bu_server *s);
/* Send one command line to s and read its one-line answer into ans.
 * 0, or as bu_server_ready. */
int bu_server_ask(struct bu_server *s, const char *cmd, char *ans, int len);
/* Send "quit", hand every line s prints before it exits to each_line
 * (may be NULL) and reap it. 0 if it exited with status 0. */
int bu_server_quit(struct bu_server *s,
		   void (*each_line)(const char *line, void *arg), void *arg);
/* Kill and reap s (nothing if it is not running). */
void bu_server_kill(struct bu_server *s);
/* Start n servers at once, server m as "--serve names[m]" with env(&ids[m]),
 * and wait until every one is ready. 0, or as bu_server_ready with every
 * server gone. */
int bu_servers_start(struct bu_server *sv, int n, const char *const *names,
		     void (*env)(void *arg), int *ids);
/* End n servers: killed when ret is non-zero (a failed measurement), else
 * told to quit. Returns ret, or -FI_EOTHER when a quit failed. */
int bu_servers_end(struct bu_server *sv, int n, int ret);

/* The server side: a command line from the parent into line (false at the
 * end of input: the parent is gone), and the answer. */
bool bu_serve_gets(char *line, int len);
void bu_serve_answer(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

double bu_now_s(void);
/* This process's CPU time in seconds: what a slice spent, whatever else ran
 * on the CPU meanwhile (the loops poll, so the process never sleeps). */
double bu_cpu_s(void);
long bu_env_long(const char *name, long def);
/* name's value clamped to [lo, hi], def when unset. */
long bu_env_clamp(const char *name, long def, long lo, long hi);
/* name's value, def when unset. */
const char *bu_env_str(const char *name, const char *def);
/* The p-quantile (0..1) of v, linear between order statistics; sorts v. */
double bu_quantile(double *v, int n, double p);
double bu_median(double *v, int n);
/*
 * The median over generations of each generation's median of v[0, rounds),
 * generation g holding rounds [g * rounds / gens, (g + 1) * rounds / gens):
 * each generation is a fresh set of children, and a child keeps a bias of
 * its own (where its buffers and libraries landed) that pairing within a
 * round cannot cancel, so one child's bias moves the figure by no more than
 * one generation's vote. v is left as it was.
 */
#define MAX_GENERATIONS	      64
#define MAX_GENERATION_ROUNDS 400
double bu_median_of_generations(const double *v, int rounds, int gens);
/* A paired figure: bu_median_of_generations of v in *med, then the
 * quartiles over every round (its resolution) in *q1 and *q3; sorts v. */
void bu_figure_of_rounds(double *v, int rounds, int gens, double *med,
			 double *q1, double *q3);
/* Round r's pseudo-random order of n configurations, so that none always
 * runs right after the same other one. */
void bu_shuffle(int *order, int n, int r);
/* Pin this process (and so its children) to one CPU: env_name's value,
 * else the highest-numbered one allowed; -1 in env_name: no pinning.
 * Returns the CPU, or -1. */
int bu_pin_one_cpu(const char *env_name);
/* The build directory: up two levels from this program (bench/.libs aside). */
void bu_builddir(char *buf, size_t len);
/* In a child before libfabric reads its environment: the build tree's
 * providers (FI_PROVIDER_PATH), loopback unless FI_TCP_IFACE says. */
void bu_child_env(void);
/* The same with the mrcheck provider beside mrlease (MRL_TEST_HOOK_PATH,
 * the suite's, when set), for benchmarks that stack it below. */
void bu_child_env_mrcheck(void);
/* The registration cost model the children run with, in ns and ns per
 * byte: mrcheck's defaults (FI_MRCHECK_REG_COST=1) unless
 * FI_MRCHECK_REG_COST_NS / _NS_PER_BYTE say. */
void bu_reg_cost_model(double *a, double *b);

/* main() of a bench program: "--serve NAME" runs serve(m) for names[m],
 * no argument runs parent(), anything else is a usage error (2). */
int bu_main(int argc, char **argv, const char *const *names, int n,
	    int (*serve)(int mode), int (*parent)(void));

/* What the figures were measured on: CPU model, CPUs online, kernel. */
void bu_machine(char *buf, size_t len);
/* The 1-minute load average, or -1. */
double bu_load1(void);
/* $BENCH_DATA_DIR/name.dat opened for writing, starting with the '#'
 * lines bench/plot.sh stamps its charts with (machine, UTC date), or NULL
 * when BENCH_DATA_DIR is not set (or the file cannot be written: said on
 * stderr). */
FILE *bu_data_open(const char *name);

#endif /* BENCH_UTIL_H */
