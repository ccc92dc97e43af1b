/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/monitor_bench: what the userfaultfd memory monitor costs, each
 * figure against a baseline measured in the same run.
 *
 * Everything goes through libfabric: FI_HOOK=mrlease over loopback
 * tcp;ofi_rxm (MONITOR_BENCH_PROV), FI_MRLEASE_MIN_SIZE=0 so every operand
 * is leased, fi_write with desc NULL into a target buffer the application
 * registered, each write waited for. The monitor is the provider's own
 * (started by the domain, its task a pthread, mrl-monitor, invalidating
 * through the cache's deferred path), so what is measured is what an
 * application pays. Seven configurations, each in processes of its own (the
 * parameters are read once per process):
 *
 *   mon    FI_MRLEASE_PINNING=yes FI_MRLEASE_MONITOR=userfaultfd: the
 *          provider treated as pinning, entries kept while watched
 *   perop  FI_MRLEASE_PINNING=yes FI_MRLEASE_MONITOR=none: nothing kept,
 *          every operand registered and closed at its completion
 *          ("registering per operation", the only safe alternative)
 *   off    FI_MRLEASE_PINNING=no FI_MRLEASE_MONITOR=none: entries kept,
 *          nothing watched (the cache without a monitor), one thread
 *   watch  mon with FI_MRLEASE_MONITOR_CHURN=0: every miss watched and
 *          kept, even at an address the monitor just saw unmapped
 *   offmt  off with an idle second pthread (blocked in pause()): the same
 *          process as off with one more thread
 *   peropmt perop with the same idle second pthread
 *   watchnc watch on a domain opened FI_THREAD_DOMAIN (rxm grants
 *          FI_THREAD_SAFE to the hint; the child asks for less): no
 *          closer, two threads
 *
 * mon and watch have three threads: the application's, the monitor's task
 * and, the domain being FI_THREAD_SAFE, the closer (mrl-closer), which
 * closes what the monitor dropped without waiting for the application.
 * Each slice reports its child's thread count and whether one of them is
 * the closer (the parent's first counts lines); the munmap test fails
 * unless watch has its closer and watchnc none.
 *
 * Tests, each comparing two configurations:
 *
 *   munmap   watch vs off. Per iteration a 2 MiB block is mapped at a fixed
 *            2 MiB-aligned address, its first page written (in watch its
 *            entry is cached and the block watched), then munmap of one
 *            touched page, timed, of the kinds
 *              out     a page of another 2 MiB block, never watched: no
 *                      event (every iteration, first)
 *              in      a page in the middle of that block, overlapping no
 *                      entry: the kernel queues an event and the caller
 *                      waits until the monitor task has read it
 *              cached  the first page, overlapping the cached entry: the
 *                      same; the entry is retired, outside the timed call,
 *                      by the closer thread or the next call into the
 *                      domain
 *            in and cached in alternate iterations, each the first watched
 *            munmap since the write (see munmap_once); the rest of the
 *            block is unmapped untimed. Figure: a slice's median ns per
 *            kind; watch/off ratio and watch - off ns (munmap_*). The
 *            same test runs watchnc vs off (munmap_nc_*: the monitor
 *            without its closer) and watch vs watchnc (munmap_closer_*:
 *            what the closer adds to a watched munmap, target
 *            munmap_closer_in_ratio <= 1.05).
 *   released watch vs off. Per iteration the same block mapped and its
 *            first page written (watch: cached, the block watched); that
 *            page dropped, untimed, in alternate iterations by munmap
 *            (unmapped) or by madvise(MADV_DONTNEED) (purged, as an
 *            allocator gives memory back): in watch an event, the entry
 *            retired, its registration's close deferred; one call into the
 *            domain, a CQ read, untimed, which closes it if the closer
 *            thread has not already (tcp;ofi_rxm's domain is
 *            FI_THREAD_SAFE; on another domain the call is where it
 *            closes), and with the mapping's last entry gone the hook
 *            releases its watch; then munmap of a page in the middle of
 *            the block, timed: in watch a mapping that held an entry and
 *            holds none now, in off one never watched. Figures:
 *            munmap_released_ratio (unmapped) and
 *            munmap_released_purged_ratio, watch/off (target <= 1.05
 *            each). The child checks that every registration closed before
 *            its timed munmap and counts each way's monitor events per
 *            iteration: one (the drop) when the watch was released, three
 *            when it stayed.
 *   unmap    mon vs perop, per size: per iteration mmap the region at a
 *            fixed address, fill it, fi_write it, wait, munmap it (the loop
 *            of fabtests' fi_unmap_mem). Figure: the rate (target mon/perop
 *            >= 0.9), and unmap_added_us, what mon adds per iteration. In
 *            mon most rounds register per operation (the address churns:
 *            mrl_bind_churn.h) and one in FI_MRLEASE_MONITOR_CHURN + 1, up to
 *            16 times fewer as the address keeps churning, is watched and
 *            pays the monitor. Over
 *            tcp a registration costs little, so the ratio is a floor: on a
 *            provider whose registration plus close costs more than
 *            unmap_added_us, mon is the faster of the two. The time of each
 *            phase is printed too; the kernel may move cost between them
 *            (pages freed by munmap, faulted in by the next fill), so the
 *            rate is the figure.
 *   reuse    per size: fi_write of the same four buffers in turn, nothing
 *            unmapped, every write a hit. Figure: the rate. reuse_mt is mon
 *            against offmt, the headline: min_reuse_mt, target >= 0.99 at
 *            every size. reuse is mon against off, printed beside it
 *            (min_reuse): off has one thread, and a single-threaded
 *            process keeps glibc's single-thread shortcuts (no
 *            cancellation bookkeeping around system calls, no locking in
 *            malloc and stdio; the kernel's single-owner descriptor
 *            table), which a second thread ends (a third, asleep, changes
 *            nothing more); the hook's hit path is the same code either
 *            way. The baseline that matters is the process with one more
 *            thread: real users of a pinning provider are multi-threaded
 *            already (an Open MPI rank has 3 threads after MPI_Init;
 *            NCCL-style engines, KV servers), and verbs and efa post
 *            without a system call. bench/README.md says more.
 *
 * Method (xfer_bench's). The machine's speed drifts over seconds and other
 * work lands on its two CPUs. One server child per configuration stays up
 * for a generation, pinned with the others to one CPU (MONITOR_BENCH_CPU,
 * default the highest allowed; -1 unpinned), and runs a timed slice per
 * command; the idle ones wait in read(). A round runs, for every test, the
 * two configurations' slices back to back, the order alternating from round
 * to round and test to test. A round's figure is the paired ratio (or
 * difference) of its two slices; the result is the median of the
 * generations' medians of it, the quartiles over every round the
 * resolution. MONITOR_BENCH_GENERATIONS sets of fresh children share the
 * rounds, since a process keeps a bias of its own that pairing cannot
 * cancel: one generation moves the result by one vote at most. Pinned, the
 * monitor task shares the unmapping thread's CPU, as in an MPI rank bound to
 * one core; unpinned, it wakes on the other.
 *
 * Each slice also reports, from the cache's statistics, what its
 * configuration did per iteration (registrations, monitor events,
 * invalidations, registrations not retained, deferred closes,
 * deregistrations) and the child's threads; the parent
 * prints the first of each and fails the run when one is not what the
 * configuration must do (for example mon's unmap loop without one monitor
 * invalidation per iteration).
 *
 * Callgrind part (monitor_bench_cg.c), the hit path's instructions with
 * the monitor on and off; valgrind has no userfaultfd system call, so every
 * run preloads monitor_bench_uffd.c, which opens the descriptor through
 * /dev/userfaultfd, and a run whose monitor did not start voids its figure:
 *   ir_hit_*  the cache's hit path alone: this program's --hit driver (one
 *             entry of a cache of its own, the provider's monitor client,
 *             N lease + release), only its loop counted. Exact: no network,
 *             no other thread at work.
 *   ir_*      per leased fi_write over the provider, the hook's own
 *             instructions: bench/xfer_ir.sh (leased mode only, 16 KiB,
 *             window 1) with XFER_IR_LEASE_ENV = mon's and off's settings,
 *             alternately, MONITOR_BENCH_IR_RUNS times each. A run's count
 *             moves with the posts retried on -FI_EAGAIN, which only add:
 *             each configuration's figure is its smallest, and ir_spread
 *             (how far one configuration's runs fell apart) the resolution.
 * ir_hit_added and ir_added are on - off. MONITOR_BENCH_CALLGRIND=0 skips
 * the part.
 *
 * Environment: MONITOR_BENCH_ROUNDS (default 40), MONITOR_BENCH_GENERATIONS
 * (default 5), MONITOR_BENCH_SECS (seconds per loop slice, default 0.1),
 * MONITOR_BENCH_MUNMAPS (iterations per munmap and released slice, default
 * 300), MONITOR_BENCH_IR_RUNS (default 2), MONITOR_BENCH_CPU,
 * MONITOR_BENCH_PROV, MONITOR_BENCH_TIMEOUT (seconds a child may take to
 * answer, default 120), MONITOR_BENCH_CALLGRIND. About four minutes by default.
 *
 * A server by hand: printf 'unmap 4096 0.3\nquit\n' | monitor_bench --serve
 * mon (commands "munmap N", "released N", "unmap SIZE SECS", "reuse SIZE
 * SECS", "quit"; it sets its own FI_* environment: child_env in
 * monitor_bench_child.c);
 * the hit driver: monitor_bench --hit on|off N.
 * Last line: RESULT key=value ...
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "monitor_bench.h"

const char *const mb_mode_names[NMODES] = {
	"mon", "perop", "off", "watch", "offmt", "peropmt", "watchnc"};
const char *const mb_mode_pinning[NMODES] = {"yes", "yes", "no", "yes",
					     "no",  "yes", "yes"};
const char *const mb_mode_monitor[NMODES] = {"userfaultfd", "none", "none",
					     "userfaultfd", "none", "none",
					     "userfaultfd"};
const char *const mb_mode_churn[NMODES] = {NULL, NULL, NULL, "0",
					   NULL, NULL, "0"};

bool
mb_mode_monitored(int mode)
{
	return !strcmp(mb_mode_monitor[mode], "userfaultfd");
}

#define MAX_ROUNDS 400

static const size_t loop_sizes[] = {4096, 65536, MAX_LOOP};
#define NSIZES (sizeof(loop_sizes) / sizeof(loop_sizes[0]))

size_t mb_page;

const char *
mb_prov(void)
{
	return bu_env_str("MONITOR_BENCH_PROV", "tcp;ofi_rxm");
}

/* ---- parent: servers, rounds, figures ------------------------------------ */

/* What one slice answered. */
struct sample {
	double v[3]; /* munmap: in, cached, out ns; released: unmapped,
		      * purged ns; loops: v[0] the rate */
	double phase[3]; /* unmap: µs per iteration mapping, writing, unmapping
			  */
	double closed; /* released: iterations whose dropped registration had
			* closed before the timed munmap, per iteration */
	double rel_events[2]; /* released: monitor events per iteration,
			       * unmapped and purged */
	double regs, events, invalidations, not_retained, deferred, deregs;
	int threads; /* the child's, at the end of the slice */
	int closers; /* of them, the monitor's closer (mrl-closer) */
};

enum { TEST_MUNMAP, TEST_RELEASED, TEST_UNMAP, TEST_REUSE };
static const char *const test_names[] = {"munmap", "released", "unmap",
					 "reuse"};

/* A test and the configurations it compares: a against b. */
struct pairing {
	int test;
	size_t size;
	int a, b;
};

#define NPAIRINGS (4 + 4 * NSIZES)
static struct pairing pairings[NPAIRINGS];
/* [pairing][round][0: a, 1: b] */
static struct sample samples[NPAIRINGS][MAX_ROUNDS][2];

struct server {
	pid_t pid;
	int cmd_fd, out_fd;
};

/* Start this program as --serve mode, stdin and stdout on pipes (all
 * close-on-exec, so no child holds another's pipe open). */
static int
server_start(struct server *s, int mode)
{
	char self[PATH_MAX],
		*argv[] = {self, "--serve", (char *) mb_mode_names[mode], NULL};
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int cmd[2], out[2];

	if (n <= 0)
		return -1;
	self[n] = '\0';
	if (pipe2(cmd, O_CLOEXEC))
		return -1;
	if (pipe2(out, O_CLOEXEC)) {
		close(cmd[0]);
		close(cmd[1]);
		return -1;
	}
	fflush(NULL);
	s->pid = fork();
	if (s->pid == 0) {
		dup2(cmd[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execv(self, argv);
		_exit(127);
	}
	close(cmd[0]);
	close(out[1]);
	s->cmd_fd = cmd[1];
	s->out_fd = out[0];
	if (s->pid < 0) {
		close(cmd[1]);
		close(out[0]);
		return -1;
	}
	return 0;
}

/* One answer line, read unbuffered so poll() sees what is left; false on
 * end of file or after MONITOR_BENCH_TIMEOUT seconds. */
static bool
server_gets(struct server *s, char *line, size_t len)
{
	int timeout_ms =
		(int) bu_env_long("MONITOR_BENCH_TIMEOUT", 120) * 1000 + 10000;
	size_t n = 0;

	while (n < len - 1) {
		struct pollfd pfd = {.fd = s->out_fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			return false;
		r = read(s->out_fd, &line[n], 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		if (line[n++] == '\n')
			break;
	}
	line[n] = '\0';
	return true;
}

/* Exit status of a server that ended (waited for); 77: provider missing,
 * 78: no memory monitor (mon's server). */
static int
server_wait(struct server *s)
{
	int status = 0;

	close(s->cmd_fd);
	close(s->out_fd);
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	s->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void
servers_stop(struct server sv[NMODES], bool kill_them)
{
	for (int m = 0; m < NMODES; m++) {
		if (sv[m].pid <= 0)
			continue;
		if (kill_them)
			kill(sv[m].pid, SIGKILL);
		else if (write(sv[m].cmd_fd, "quit\n", 5) != 5)
			kill(sv[m].pid, SIGKILL);
		server_wait(&sv[m]);
	}
}

/* Start one server per configuration and wait for each to be ready. 0,
 * -FI_ENODATA (provider missing), -FI_ENOSYS (no memory monitor) or
 * -FI_EOTHER. */
static int
servers_start(struct server sv[NMODES])
{
	char line[256];

	memset(sv, 0, NMODES * sizeof(*sv));
	for (int m = 0; m < NMODES; m++) {
		if (server_start(&sv[m], m))
			goto err;
		if (!server_gets(&sv[m], line, sizeof(line)) ||
		    strcmp(line, "ready\n")) {
			int status = server_wait(&sv[m]);

			servers_stop(sv, true);
			return status == 77 ? -FI_ENODATA :
			       status == 78 ? -FI_ENOSYS :
					      -FI_EOTHER;
		}
	}
	return 0;
err:
	fprintf(stderr, "monitor_bench: cannot start a child: %s\n",
		strerror(errno));
	servers_stop(sv, true);
	return -FI_EOTHER;
}

static bool
parse_sample(const char *line, struct sample *s)
{
	const char *counts = strstr(line, " regs "),
		   *phases = strstr(line, " map_us ");

	memset(s, 0, sizeof(*s));
	if (!(sscanf(line, "munmap in %lf cached %lf out %lf", &s->v[0],
		     &s->v[1], &s->v[2]) == 3 ||
	      sscanf(line,
		     "munmap released %lf purged %lf closed %lf events %lf %lf",
		     &s->v[0], &s->v[1], &s->closed, &s->rel_events[0],
		     &s->rel_events[1]) == 5 ||
	      sscanf(line, "loop rate %lf", &s->v[0]) == 1) ||
	    !counts)
		return false;
	if (phases)
		sscanf(phases, " map_us %lf write_us %lf munmap_us %lf",
		       &s->phase[0], &s->phase[1], &s->phase[2]);
	return sscanf(counts,
		      " regs %lf events %lf invalidations %lf not_retained %lf "
		      "deferred %lf deregs %lf threads %d closer %d",
		      &s->regs, &s->events, &s->invalidations, &s->not_retained,
		      &s->deferred, &s->deregs, &s->threads,
		      &s->closers) == 8 &&
	       s->v[0] > 0;
}

/* One slice of pairing p on mode's server. */
static int
slice(struct server *s, const struct pairing *p, int mode, struct sample *out)
{
	char cmd[128], line[256];
	int len;

	if (p->test == TEST_MUNMAP || p->test == TEST_RELEASED)
		len = snprintf(cmd, sizeof(cmd), "%s %ld\n",
			       test_names[p->test],
			       bu_env_long("MONITOR_BENCH_MUNMAPS", 300));
	else
		len = snprintf(cmd, sizeof(cmd), "%s %zu %s\n",
			       test_names[p->test], p->size,
			       getenv("MONITOR_BENCH_SECS") ?
				       getenv("MONITOR_BENCH_SECS") :
				       "0.1");
	if (write(s->cmd_fd, cmd, (size_t) len) != len ||
	    !server_gets(s, line, sizeof(line)) || !parse_sample(line, out)) {
		fprintf(stderr, "monitor_bench: %s child: no answer to %s",
			mb_mode_names[mode], cmd);
		return -1;
	}
	return 0;
}

/*
 * Whether a slice's counts are its configuration's. A wrong count means the
 * monitor or the retention policy did not do its job, and the figures would
 * measure something else. Bounds leave room for the last iteration's event,
 * which the monitor may apply after the slice read its counters.
 */
static bool
counts_sane(const struct pairing *p, int mode, const struct sample *s,
	    char *why, size_t len)
{
	bool ok = true;
	int len_used;

	if (p->test == TEST_MUNMAP &&
	    (mode == MODE_WATCH || mode == MODE_WATCHNC))
		/* The timed in or cached: an event each, the first watched
		 * munmap since the write. The other page and the rest give
		 * one more each while the block is watched: on an
		 * FI_THREAD_SAFE domain the closer may close the entry, and
		 * with it release the watch, before them (up to three events
		 * per iteration). Either page retires the entry, which the
		 * next iteration registers again. watch has its closer and
		 * watchnc none: what the closer costs is the difference. */
		ok = s->events > 0.99 && s->invalidations > 0.9 &&
		     s->regs > 0.9 &&
		     s->closers == (mode == MODE_WATCH ? 1 : 0);
	else if (p->test == TEST_RELEASED && mode == MODE_WATCH)
		/* Every iteration a miss, watched; one event (the first page
		 * unmapped or purged), which retires the entry; its
		 * registration closed before the timed munmap, and neither
		 * that munmap nor the rest of the block's gives an event, for
		 * either way of dropping the entry: the watch was released
		 * (three events per iteration if it was not). */
		ok = s->regs > 0.9 && s->invalidations > 0.9 &&
		     s->deregs > 0.9 && s->closed > 0.99 &&
		     s->rel_events[0] > 0.99 && s->rel_events[0] < 1.1 &&
		     s->rel_events[1] > 0.99 && s->rel_events[1] < 1.1;
	else if (p->test == TEST_UNMAP && mode == MODE_MON)
		/* Most rounds register per operation (churn), one in
		 * FI_MRLEASE_MONITOR_CHURN + 1 or more is watched and
		 * invalidated: so few that a slice may hold none, and
		 * unmap_watched checks the test as a whole. */
		ok = s->regs > 0.9;
	else if (p->test == TEST_UNMAP &&
		 (mode == MODE_PEROP || mode == MODE_PEROPMT))
		ok = s->not_retained > 0.99;
	else if (p->test == TEST_REUSE)
		ok = s->regs == 0 && s->invalidations == 0;
	if (!mb_mode_monitored(mode) && s->events > 0)
		ok = false;
	len_used =
		snprintf(why, len,
			 "%-5s %s %zu: regs %.3f events %.3f invalidations "
			 "%.3f not_retained %.3f deferred %.3f deregs %.3f "
			 "per iteration, %d threads (%d closer)",
			 mb_mode_names[mode], test_names[p->test], p->size,
			 s->regs, s->events, s->invalidations, s->not_retained,
			 s->deferred, s->deregs, s->threads, s->closers);
	if (p->test == TEST_RELEASED && len_used > 0 && (size_t) len_used < len)
		snprintf(why + len_used, len - (size_t) len_used,
			 "; closed before the munmap %.3f, events per "
			 "iteration unmapped %.3f purged %.3f",
			 s->closed, s->rel_events[0], s->rel_events[1]);
	return ok;
}

/* Whether mon's unmap loop of every size had watched rounds that the
 * monitor invalidated, over all its slices. */
static bool
unmap_watched(int np, int rounds)
{
	bool ok = true;

	for (int p = 0; p < np; p++) {
		double inval = 0, kept = 0;

		if (pairings[p].test != TEST_UNMAP)
			continue;
		for (int r = 0; r < rounds; r++) {
			inval += samples[p][r][0].invalidations;
			kept += 1 - samples[p][r][0].not_retained;
		}
		printf("# %s unmap %zu: %.4f invalidations, %.4f rounds kept "
		       "per iteration\n",
		       mb_mode_names[pairings[p].a], pairings[p].size,
		       inval / rounds, kept / rounds);
		if (!(inval > 0 && kept > 0)) {
			printf("# WRONG COUNTS %s unmap %zu: no round watched "
			       "and invalidated by the monitor\n",
			       mb_mode_names[pairings[p].a], pairings[p].size);
			ok = false;
		}
	}
	return ok;
}

/* Rounds r0..r1-1 on one generation of servers. 0, or a negative code. */
static int
run_rounds(struct server sv[NMODES], int np, int r0, int r1, bool *sane)
{
	char why[320];

	for (int r = r0; r < r1; r++) {
		for (int p = 0; p < np; p++) {
			int first = (r + p) & 1;

			for (int k = 0; k < 2; k++) {
				int side = k ^ first;
				int mode = side ? pairings[p].b : pairings[p].a;
				struct sample *s = &samples[p][r][side];

				if (slice(&sv[mode], &pairings[p], mode, s))
					return -FI_EOTHER;
				if (!counts_sane(&pairings[p], mode, s, why,
						 sizeof(why))) {
					printf("# WRONG COUNTS (round %d) %s\n",
					       r, why);
					*sane = false;
				} else if (r == 0) {
					printf("# counts %s\n", why);
				}
			}
		}
	}
	return 0;
}

/* Median (of the generations' medians, bu_median_of_generations) and
 * quartiles over rounds of f(a's figure k, b's figure k). */
struct figure {
	double med, q1, q3;
};

static int generations = 5;

static struct figure
figure_of(int p, int rounds, int k, double (*f)(double a, double b))
{
	double v[MAX_ROUNDS];
	struct figure fig;

	for (int r = 0; r < rounds; r++)
		v[r] = f(samples[p][r][0].v[k], samples[p][r][1].v[k]);
	bu_figure_of_rounds(v, rounds, generations, &fig.med, &fig.q1, &fig.q3);
	return fig;
}

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static double
diff(double a, double b)
{
	return a - b;
}

/* Rates to the time per iteration a adds over b, in µs. */
static double
added_us(double a, double b)
{
	return a > 0 && b > 0 ? (1 / a - 1 / b) * 1e6 : 0;
}

static double
raw_median(int p, int rounds, int side, int k)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = samples[p][r][side].v[k];
	return bu_median(v, rounds);
}

static double
phase_median(int p, int rounds, int side, int k)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = samples[p][r][side].phase[k];
	return bu_median(v, rounds);
}

/* ---- parent ----------------------------------------------------------------
 */

/* What the callgrind part found (see the header). */
struct ir_figures {
	bool hit_ok, xfer_ok;
	double hit[2]; /* per lease + release: on, off */
	double xfer[2], cache[2]; /* per leased write: on, off */
	double spread;
};

static void
print_figures(int np, int rounds, const struct ir_figures *irf, int cpu,
	      bool sane)
{
	static const char *const kinds[] = {"in", "cached", "out"};
	static const char *const rkinds[] = {"released", "released_purged"};
	/* pairings[0] is munmap, [1] released, [2] and [3] munmap without and
	 * with the closer, the loops after them. */
	static const int munmaps[] = {0, 2, 3};
	static const char *const munmap_keys[] = {"munmap", "munmap_nc",
						  "munmap_closer"};
	struct figure mu[3][3], ma[3][3], ru[2], ra[2], fu[NPAIRINGS],
		fa[NPAIRINGS];
	double min_unmap = 1e9, min_unmap_mt = 1e9, min_reuse = 1e9,
	       min_reuse_mt = 1e9, load[1] = {-1};
	const int released = 1, loops = 4;

	for (int m = 0; m < 3; m++) {
		int p = munmaps[m];

		printf("# munmap of one page, %s against %s, ns per call "
		       "(median over rounds of each slice's median; paired "
		       "ratio and added ns, median of the generations' "
		       "medians [q1 q3 of the rounds]):\n",
		       mb_mode_names[pairings[p].a],
		       mb_mode_names[pairings[p].b]);
		for (int k = 0; k < 3; k++) {
			mu[m][k] = figure_of(p, rounds, k, ratio);
			ma[m][k] = figure_of(p, rounds, k, diff);
			printf("#   %-6s  %-7s %7.0f  %-7s %7.0f  ratio %5.2f "
			       "[%.2f %.2f]  added %6.0f ns [%.0f %.0f]\n",
			       kinds[k], mb_mode_names[pairings[p].a],
			       raw_median(p, rounds, 0, k),
			       mb_mode_names[pairings[p].b],
			       raw_median(p, rounds, 1, k), mu[m][k].med,
			       mu[m][k].q1, mu[m][k].q3, ma[m][k].med,
			       ma[m][k].q1, ma[m][k].q3);
		}
	}
	printf("# munmap of one page in a mapping that held an entry and "
	       "holds none now (%s; the entry's page unmapped, or purged), "
	       "against one never watched (%s), ns per call:\n",
	       mb_mode_names[pairings[released].a],
	       mb_mode_names[pairings[released].b]);
	for (int k = 0; k < 2; k++) {
		ru[k] = figure_of(released, rounds, k, ratio);
		ra[k] = figure_of(released, rounds, k, diff);
		printf("#   %-8s  on %7.0f  off %7.0f  ratio %5.2f [%.2f "
		       "%.2f]  added %6.0f ns [%.0f %.0f]\n",
		       k ? "purged" : "unmapped",
		       raw_median(released, rounds, 0, k),
		       raw_median(released, rounds, 1, k), ru[k].med, ru[k].q1,
		       ru[k].q3, ra[k].med, ra[k].q1, ra[k].q3);
	}
	printf("# loops, iterations per second (median over rounds), paired "
	       "ratio (median of the generations' medians) [q1 q3 of the "
	       "rounds]:\n");
	for (int p = loops; p < np; p++) {
		const struct pairing *pp = &pairings[p];

		fu[p] = figure_of(p, rounds, 0, ratio);
		fa[p] = figure_of(p, rounds, 0, added_us);
		printf("#   %-5s %7zu  %-5s %7.0f  %-5s %7.0f  ratio %.3f "
		       "[%.3f %.3f]",
		       test_names[pp->test], pp->size, mb_mode_names[pp->a],
		       raw_median(p, rounds, 0, 0), mb_mode_names[pp->b],
		       raw_median(p, rounds, 1, 0), fu[p].med, fu[p].q1,
		       fu[p].q3);
		if (pp->test == TEST_UNMAP)
			printf("  added %.1f us [%.1f %.1f]\n#     us per "
			       "iteration "
			       "mapping+filling / writing / unmapping: %s %.1f "
			       "/ %.1f / %.1f, "
			       "%s %.1f / %.1f / %.1f",
			       fa[p].med, fa[p].q1, fa[p].q3,
			       mb_mode_names[pp->a],
			       phase_median(p, rounds, 0, 0),
			       phase_median(p, rounds, 0, 1),
			       phase_median(p, rounds, 0, 2),
			       mb_mode_names[pp->b],
			       phase_median(p, rounds, 1, 0),
			       phase_median(p, rounds, 1, 1),
			       phase_median(p, rounds, 1, 2));
		printf("\n");
		if (pp->test == TEST_UNMAP && pp->b == MODE_PEROP &&
		    fu[p].med < min_unmap)
			min_unmap = fu[p].med;
		if (pp->b == MODE_PEROPMT && fu[p].med < min_unmap_mt)
			min_unmap_mt = fu[p].med;
		if (pp->test == TEST_REUSE && pp->b == MODE_OFF &&
		    fu[p].med < min_reuse)
			min_reuse = fu[p].med;
		if (pp->b == MODE_OFFMT && fu[p].med < min_reuse_mt)
			min_reuse_mt = fu[p].med;
	}
	if (getloadavg(load, 1) != 1)
		load[0] = -1;
	printf("# load average (1 min) at the end %.2f on %ld cpus\n", load[0],
	       sysconf(_SC_NPROCESSORS_ONLN));
	if (!sane)
		printf("# a configuration did not do what it is meant to: "
		       "figures invalid\n");

	printf("RESULT prov=%s rounds=%d cpu=%d load1=%.2f sane=%d", mb_prov(),
	       rounds, cpu, load[0], sane);
	if (irf->hit_ok)
		printf(" ir_hit_added=%.1f ir_hit_on=%.1f ir_hit_off=%.1f",
		       irf->hit[0] - irf->hit[1], irf->hit[0], irf->hit[1]);
	else
		printf(" ir_hit_added=na");
	if (irf->xfer_ok)
		printf(" ir_added=%.1f ir_on=%.1f ir_off=%.1f "
		       "ir_cache_added=%.1f "
		       "ir_spread=%.1f",
		       irf->xfer[0] - irf->xfer[1], irf->xfer[0], irf->xfer[1],
		       irf->cache[0] - irf->cache[1], irf->spread);
	else
		printf(" ir_added=na");
	for (int m = 0; m < 3; m++)
		for (int k = 0; k < 3; k++)
			printf(" %s_%s_ratio=%.2f %s_%s_added_ns=%.0f "
			       "%s_%s_on_ns=%.0f %s_%s_off_ns=%.0f",
			       munmap_keys[m], kinds[k], mu[m][k].med,
			       munmap_keys[m], kinds[k], ma[m][k].med,
			       munmap_keys[m], kinds[k],
			       raw_median(munmaps[m], rounds, 0, k),
			       munmap_keys[m], kinds[k],
			       raw_median(munmaps[m], rounds, 1, k));
	for (int k = 0; k < 2; k++)
		printf(" munmap_%s_ratio=%.2f munmap_%s_added_ns=%.0f "
		       "munmap_%s_on_ns=%.0f munmap_%s_off_ns=%.0f",
		       rkinds[k], ru[k].med, rkinds[k], ra[k].med, rkinds[k],
		       raw_median(released, rounds, 0, k), rkinds[k],
		       raw_median(released, rounds, 1, k));
	for (int p = loops; p < np; p++) {
		const struct pairing *pp = &pairings[p];
		const char *t = pp->b == MODE_OFFMT   ? "reuse_mt" :
				pp->b == MODE_PEROPMT ? "unmap_mt" :
							test_names[pp->test];

		printf(" %s_%zu=%.3f", t, pp->size, fu[p].med);
		if (pp->test == TEST_UNMAP)
			printf(" %s_added_us_%zu=%.1f", t, pp->size, fa[p].med);
		printf(" %s_%s_%zu=%.0f %s_%s_%zu=%.0f", t,
		       mb_mode_names[pp->a], pp->size,
		       raw_median(p, rounds, 0, 0), t, mb_mode_names[pp->b],
		       pp->size, raw_median(p, rounds, 1, 0));
	}
	printf(" min_unmap=%.3f min_unmap_mt=%.3f min_reuse_mt=%.3f "
	       "min_reuse=%.3f\n",
	       min_unmap, min_unmap_mt, min_reuse_mt, min_reuse);
}

static int
parent_main(void)
{
	int rounds = (int) bu_env_long("MONITOR_BENCH_ROUNDS", 40);
	generations = (int) bu_env_long("MONITOR_BENCH_GENERATIONS", 5);
	const char *cg = getenv("MONITOR_BENCH_CALLGRIND");
	struct ir_figures irf = {0};
	double t0 = bu_now_s();
	bool sane = true;
	struct server sv[NMODES];
	time_t now = time(NULL);
	char when[64];
	int cpu, np = 0, ret;

	/* A child that died leaves a broken pipe: a write error, not a signal.
	 */
	signal(SIGPIPE, SIG_IGN);
	rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	generations = generations < 1	   ? 1 :
		      generations > rounds ? rounds :
					     generations;
	/* print_figures takes these four first, in this order. */
	pairings[np++] = (struct pairing){TEST_MUNMAP, 0, MODE_WATCH, MODE_OFF};
	pairings[np++] =
		(struct pairing){TEST_RELEASED, 0, MODE_WATCH, MODE_OFF};
	pairings[np++] =
		(struct pairing){TEST_MUNMAP, 0, MODE_WATCHNC, MODE_OFF};
	pairings[np++] =
		(struct pairing){TEST_MUNMAP, 0, MODE_WATCH, MODE_WATCHNC};
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){TEST_UNMAP, loop_sizes[i],
						  MODE_MON, MODE_PEROP};
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){TEST_UNMAP, loop_sizes[i],
						  MODE_MON, MODE_PEROPMT};
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){TEST_REUSE, loop_sizes[i],
						  MODE_MON, MODE_OFFMT};
	for (size_t i = 0; i < NSIZES; i++)
		pairings[np++] = (struct pairing){TEST_REUSE, loop_sizes[i],
						  MODE_MON, MODE_OFF};

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M %Z", localtime(&now));
	printf("# monitor_bench %s over %s\n", when, mb_prov());
	fflush(stdout);
	/* Before pinning: valgrind's runs use both CPUs. */
	if (!cg || strcmp(cg, "0")) {
		irf.hit_ok = mb_callgrind_hit(irf.hit);
		if (irf.hit_ok)
			printf("# callgrind, the cache's hit path alone (lease "
			       "+ release, "
			       "exact): monitor on %.1f, off %.1f "
			       "instructions\n",
			       irf.hit[0], irf.hit[1]);
		else
			printf("# callgrind: the hit driver failed, or ran "
			       "without its "
			       "monitor\n");
		fflush(stdout);
		irf.xfer_ok =
			mb_callgrind_xfer(irf.xfer, irf.cache, &irf.spread);
		if (irf.xfer_ok)
			printf("# callgrind, hook instructions per leased "
			       "fi_write (16 KiB, "
			       "hit path), smallest of the runs: monitor on "
			       "%.1f (cache "
			       "%.1f), off %.1f (cache %.1f); runs of one "
			       "configuration %.1f "
			       "apart\n",
			       irf.xfer[0], irf.cache[0], irf.xfer[1],
			       irf.cache[1], irf.spread);
	}

	/* Every child on one CPU: MONITOR_BENCH_CPU, else the
	 * highest-numbered one allowed (-1: no pinning). */
	cpu = bu_pin_one_cpu("MONITOR_BENCH_CPU");
	printf("# %d rounds by %d generations of children, slices back to "
	       "back, "
	       "order alternating; children on CPU %d (-1: not pinned)\n",
	       rounds, generations, cpu);
	fflush(stdout);
	for (int g = 0; g < generations; g++) {
		ret = servers_start(sv);
		if (ret == -FI_ENODATA || ret == -FI_ENOSYS) {
			printf("# %s: skipped\nRESULT skipped=1\n",
			       ret == -FI_ENODATA ?
				       "provider unavailable" :
				       "no memory monitor (userfaultfd "
				       "refused; FI_LOG_LEVEL=warn says why)");
			return 0;
		}
		if (!ret)
			ret = run_rounds(sv, np, rounds * g / generations,
					 rounds * (g + 1) / generations, &sane);
		servers_stop(sv, ret != 0);
		if (ret) {
			fprintf(stderr, "monitor_bench: measurement failed\n");
			return 1;
		}
	}
	printf("# %.0f s in all\n", bu_now_s() - t0);
	if (!unmap_watched(np, rounds))
		sane = false;
	print_figures(np, rounds, &irf, cpu, sane);
	return sane ? 0 : 1;
}

int
main(int argc, char **argv)
{
	int ret = 2;

	mb_page = (size_t) sysconf(_SC_PAGESIZE);
	if (argc == 1)
		return parent_main();
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		ret = mb_serve_main(argv[2]);
	else if (argc == 4 && !strcmp(argv[1], "--hit"))
		ret = mb_hit_main(argv[2], strtol(argv[3], NULL, 10));
	if (ret == 2)
		fprintf(stderr,
			"usage: %s [--serve "
			"mon|perop|off|watch|offmt|peropmt|watchnc | --hit "
			"on|off N]\n",
			argv[0]);
	return ret;
}
