/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrlease-stat(1): what the lease caches of the running processes do, from
 * the live statistics files they publish (FI_MRLEASE_STATS_LIVE=1).
 *
 *   mrlease-stat              every publishing process, one line each
 *   mrlease-stat PID          one process's domains and histograms
 *   -w SECONDS                redraw in place every SECONDS, like top
 *   --json                    the same as JSON
 *
 * It reads the files and /proc/<pid>/stat only (mrl_live_read.h), takes
 * every file as hostile (the reader checks its sizes and figures) and
 * prints the names a file holds (command, provider) escaped: a file must
 * not send a terminal an escape sequence nor make the JSON invalid.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrl_live_read.h"

struct opts {
	const char *dir;
	bool json;
	double watch; /* seconds, 0: once */
	long count; /* redraws with -w, 0: until interrupted */
	int pid; /* 0: every process */
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* 1536 as "1.5K", bytes as "520.0KiB" (binary units). */
static const char *
human(char *buf, size_t len, uint64_t v, bool bytes)
{
	static const char units[] = "KMGTPE";
	double d = (double) v;
	int u = -1;

	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64 "%s", v, bytes ? "B" : "");
	else
		snprintf(buf, len, "%.1f%c%s", d, units[u], bytes ? "iB" : "");
	return buf;
}

/* The bucket's lower bound 2^log2 as "4K" or "256ns". */
static const char *
pow2(char *buf, size_t len, unsigned log2, bool ns)
{
	static const char *const tunits[] = {"ns", "us", "ms", "s"};
	static const char kilo[] = " KMGTPE";
	uint64_t v = (uint64_t) 1 << log2;
	unsigned step = 0;

	if (ns) {
		while (v >= 1000 && step < 3) {
			v /= 1000;
			step++;
		}
		snprintf(buf, len, "%" PRIu64 "%s", v, tunits[step]);
	} else {
		step = log2 / 10;
		snprintf(buf, len, "%" PRIu64 "%.1s", v >> (10 * step),
			 step ? &kilo[step] : "");
	}
	return buf;
}

/* ---- names from a file ------------------------------------------- */

/*
 * The length (1 to 4) of the well-formed UTF-8 sequence at s, of at most n
 * bytes, its code point in *cp; 0 when there is none (a stray or cut
 * byte, an overlong form, a surrogate, a code point past U+10FFFF).
 */
static size_t
utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c, min;
	size_t len;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* A character a terminal shows as itself: no C0 or C1 control, no DEL. */
static bool
printable(uint32_t cp)
{
	return cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0);
}

/*
 * A name from a file for the terminal, in buf: printable UTF-8 as is, a
 * backslash as \\, any other byte as \xHH; cut at `cols` characters
 * (an escape counts its four), padded with spaces to `width`.
 */
static const char *
term_name(char *buf, size_t len, const char *name, size_t cols, size_t width)
{
	const unsigned char *s = (const unsigned char *) name;
	size_t n = strlen(name), o = 0, used = 0;

	while (n) {
		uint32_t cp = 0;
		size_t l = utf8_seq(s, n, &cp);
		bool plain = l && printable(cp) && cp != '\\';
		bool backslash = l && cp == '\\';
		/* Columns, bytes: a byte that is not plain is escaped alone (a
		 * control's continuation bytes are escaped next). */
		size_t w = plain ? 1 : backslash ? 2 : 4, out = plain ? l : w;

		if (!plain)
			l = 1;
		if (used + w > cols || o + out + 1 > len)
			break;
		if (plain)
			memcpy(buf + o, s, l);
		else if (backslash)
			memcpy(buf + o, "\\\\", 2);
		else
			snprintf(buf + o, len - o, "\\x%02x", s[0]);
		o += out;
		used += w;
		s += l;
		n -= l;
	}
	while (used < width && o + 1 < len) {
		buf[o++] = ' ';
		used++;
	}
	buf[o] = '\0';
	return buf;
}

/* A name from a file as a JSON string: well-formed UTF-8, controls as
 * \uXXXX, a byte that is no UTF-8 as U+FFFD. */
static void
json_string(const char *name)
{
	const unsigned char *s = (const unsigned char *) name;
	size_t n = strlen(name);

	putchar('"');
	while (n) {
		uint32_t cp = 0;
		size_t l = utf8_seq(s, n, &cp);

		if (!l)
			fputs("\\ufffd", stdout);
		else if (cp == '"' || cp == '\\')
			printf("\\%c", (int) cp);
		else if (!printable(cp))
			printf("\\u%04x", (unsigned) cp);
		else
			fwrite(s, 1, l, stdout);
		l = l ? l : 1;
		s += l;
		n -= l;
	}
	putchar('"');
}

/* Totals of a process's domains. */
static void
proc_totals(const struct mrl_live_proc *p, struct fi_mrlease_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < p->ndomains; i++) {
		const struct fi_mrlease_stats *s = mrl_live_stats(&p->dom[i]);

		t->lookups += s->lookups;
		t->hits += s->hits;
		/* What the hit rate counts (fi_mrlease_requests). */
		t->remote_lookups += s->remote_lookups;
		t->remote_hits += s->remote_hits;
		t->fwd_other +=
			fi_mrlease_requests(s) - s->lookups - s->remote_lookups;
		t->misses += s->misses;
		t->registered_bytes += s->registered_bytes;
		t->leases += s->leases;
		t->entries += s->entries;
	}
}

static void
hit_rate(char *buf, size_t len, const struct fi_mrlease_stats *s)
{
	uint64_t requests = fi_mrlease_requests(s);

	/* Totals of forged figures may wrap: never a rate above 100%. */
	if (requests && s->hits <= s->lookups &&
	    s->hits + s->remote_hits <= requests)
		snprintf(buf, len, "%.1f%%", 100.0 * fi_mrlease_hit_rate(s));
	else
		snprintf(buf, len, "-");
}

/* ---- text ---------------------------------------------------------- */

static void
print_list(const struct mrl_live_proc *procs, size_t n)
{
	char rate[16], pinned[24], lookups[24], comm[4 * 16 + 1];
	struct fi_mrlease_stats t;

	printf("%-8s %-16s %7s %10s %7s %10s %7s %7s  %s\n", "PID", "COMMAND",
	       "DOMAINS", "LOOKUPS", "HIT%", "PINNED", "LEASES", "MISSES",
	       "STATE");
	for (size_t i = 0; i < n; i++) {
		const struct mrl_live_proc *p = &procs[i];

		proc_totals(p, &t);
		hit_rate(rate, sizeof(rate), &t);
		printf("%-8d %s %7u %10s %7s %10s %7" PRIu64 " %7" PRIu64
		       "  %s\n",
		       p->pid, term_name(comm, sizeof(comm), p->comm, 16, 16),
		       p->ndomains,
		       human(lookups, sizeof(lookups), t.lookups, false), rate,
		       human(pinned, sizeof(pinned), t.registered_bytes, true),
		       t.leases, t.misses, p->stale ? "stale" : "live");
	}
	if (!n)
		printf("(no process publishes live statistics here: run it "
		       "with FI_MRLEASE_STATS_LIVE=1)\n");
}

static void
print_hist(const char *title, const uint64_t *hist, unsigned shift, bool ns)
{
	uint64_t max = 0;
	char lo[32], hi[32];

	for (unsigned i = 0; i < FI_MRLEASE_HIST_BUCKETS; i++)
		if (hist[i] > max)
			max = hist[i];
	printf("  %s\n", title);
	if (!max) {
		printf("    (none)\n");
		return;
	}
	for (unsigned i = 0; i < FI_MRLEASE_HIST_BUCKETS; i++) {
		int bar;

		if (!hist[i])
			continue;
		bar = (int) ceil(40.0 * (double) hist[i] / (double) max);
		if (i == 0)
			snprintf(lo, sizeof(lo), "0");
		else
			pow2(lo, sizeof(lo), i + shift, ns);
		if (i == FI_MRLEASE_HIST_BUCKETS - 1)
			snprintf(hi, sizeof(hi), "...");
		else
			pow2(hi, sizeof(hi), i + shift + 1, ns);
		printf("    %6s - %-6s %10" PRIu64 " %.*s\n", lo, hi, hist[i],
		       bar, "########################################");
	}
}

static void
print_proc(const struct mrl_live_proc *p)
{
	char a[24], b[24], rate[16], name[4 * sizeof(p->dom[0].provider) + 1];
	uint64_t now = now_ns();

	printf("pid %d (%s): %s, %u domain%s, published %.1f s ago, every "
	       "%" PRIu64 " ms\n",
	       p->pid, term_name(name, sizeof(name), p->comm, SIZE_MAX, 0),
	       p->stale ? "stale (process gone)" : "live", p->ndomains,
	       p->ndomains == 1 ? "" : "s",
	       p->updated_ns && now > p->updated_ns ?
		       (double) (now - p->updated_ns) / 1e9 :
		       0.0,
	       p->interval_ms);
	for (unsigned i = 0; i < p->ndomains; i++) {
		const struct mrl_live_domain *d = &p->dom[i];
		const struct fi_mrlease_stats *s = mrl_live_stats(d);

		hit_rate(rate, sizeof(rate), s);
		printf("\ndomain %" PRIu64 " over %s (%s), open %.1f s\n",
		       d->id,
		       term_name(name, sizeof(name), d->provider, SIZE_MAX, 0),
		       d->outermost ? "outermost" : "inner",
		       now > d->opened_ns ?
			       (double) (now - d->opened_ns) / 1e9 :
			       0.0);
		printf("  lookups %" PRIu64 "  hits %" PRIu64
		       " (%s)  misses %" PRIu64 "\n",
		       s->lookups, s->hits, rate, s->misses);
		printf("  misses by reason: cold %" PRIu64 "  evicted %" PRIu64
		       "  invalidated %" PRIu64 "  monitor %" PRIu64
		       "  churn %" PRIu64 "  not retained %" PRIu64 "\n",
		       s->miss_cold, s->miss_evicted, s->miss_invalidated,
		       s->miss_monitor, s->miss_churn, s->miss_not_retained);
		printf("  not looked up: below FI_MRLEASE_MIN_SIZE %" PRIu64
		       "\n",
		       s->miss_below_min);
		printf("  forwarded: remote %" PRIu64 "  device %" PRIu64
		       "  dmabuf %" PRIu64 "  endpoint %" PRIu64
		       "  rma event %" PRIu64 "  no monitor %" PRIu64
		       "  key %" PRIu64 "  auth key %" PRIu64 "  other %" PRIu64
		       "\n",
		       s->fwd_remote, s->fwd_device, s->fwd_dmabuf,
		       s->fwd_endpoint, s->fwd_rma_event, s->fwd_no_monitor,
		       s->fwd_key, s->fwd_auth_key, s->fwd_other);
		printf("  remote: lookups %" PRIu64 "  hits %" PRIu64
		       "  registrations %" PRIu64 "  entries %" PRIu64
		       " (%" PRIu64 " idle)  idle closes %" PRIu64
		       "  invalidated %" PRIu64 "  evicted %" PRIu64 "\n",
		       s->remote_lookups, s->remote_hits,
		       s->remote_registrations, s->remote_entries,
		       s->remote_idle, s->remote_idle_closes,
		       s->remote_invalidated, s->remote_evicted);
		printf("  pinned %s in %" PRIu64 " entries  leases %" PRIu64
		       "  registrations %" PRIu64 "  deregistrations %" PRIu64
		       "  evictions %" PRIu64 "\n",
		       human(a, sizeof(a), s->registered_bytes, true),
		       s->entries, s->leases, s->registrations,
		       s->deregistrations, s->evictions);
		printf("  invalidate calls %" PRIu64
		       "  monitor invalidations %" PRIu64 "  monitor events %s"
		       "  deferred closes %" PRIu64 "\n",
		       s->invalidations, s->monitor_invalidations,
		       human(b, sizeof(b), s->monitor_events, false),
		       s->deferred_closes);
		print_hist("registration sizes (bytes)", s->reg_size_hist,
			   FI_MRLEASE_SIZE_HIST_SHIFT, false);
		print_hist("fi_mr_reg time", s->reg_ns_hist,
			   FI_MRLEASE_NS_HIST_SHIFT, true);
	}
	if (p->busy)
		printf("\n(%u slot%s changing too fast to read, left out)\n",
		       p->busy, p->busy == 1 ? "" : "s");
}

/* ---- JSON ---------------------------------------------------------- */

static void
json_hist(const char *name, const uint64_t *hist)
{
	printf(",\"%s\":[", name);
	for (unsigned i = 0; i < FI_MRLEASE_HIST_BUCKETS; i++)
		printf("%s%" PRIu64, i ? "," : "", hist[i]);
	putchar(']');
}

static void
json_proc(const struct mrl_live_proc *p)
{
	struct fi_mrlease_stats t;

	proc_totals(p, &t);
	printf("{\"pid\":%d,\"command\":", p->pid);
	json_string(p->comm);
	printf(",\"uid\":%u", p->uid);
	printf(",\"state\":\"%s\",\"start_time\":%" PRIu64
	       ",\"updated_ns\":%" PRIu64 ",\"publishes\":%" PRIu64
	       ",\"interval_ms\":%" PRIu64 ",\"lookups\":%" PRIu64
	       ",\"hits\":%" PRIu64 ",\"pinned_bytes\":%" PRIu64
	       ",\"leases\":%" PRIu64 ",\"domains\":[",
	       p->stale ? "stale" : "live", p->start_time, p->updated_ns,
	       p->publishes, p->interval_ms, t.lookups, t.hits,
	       t.registered_bytes, t.leases);
	for (unsigned i = 0; i < p->ndomains; i++) {
		const struct mrl_live_domain *d = &p->dom[i];
		const struct fi_mrlease_stats *s = mrl_live_stats(d);

		printf("%s{\"id\":%" PRIu64 ",\"provider\":", i ? "," : "",
		       d->id);
		json_string(d->provider);
		printf(",\"outermost\":%s,\"opened_ns\":%" PRIu64,
		       d->outermost ? "true" : "false", d->opened_ns);
		for (size_t f = 0; f < MRL_LIVE_FIELDS; f++)
			printf(",\"%s\":%" PRIu64, mrl_live_fields[f].name,
			       mrl_live_field_of(s, f));
		json_hist("reg_size_hist", s->reg_size_hist);
		json_hist("reg_ns_hist", s->reg_ns_hist);
		putchar('}');
	}
	printf("]}");
}

/* ---- main ---------------------------------------------------------- */

/* One view; 0, or 1 when there is nothing to show for -p. */
static int
show(const struct opts *o)
{
	struct mrl_live_proc *procs = NULL, one;
	size_t n = 0;
	int ret;

	if (o->pid) {
		ret = mrl_live_read_pid(o->dir, o->pid, &one);
		if (ret) {
			fprintf(stderr,
				"mrlease-stat: no live statistics of pid %d in "
				"%s: %s\n",
				o->pid, o->dir,
				ret == -EINVAL ? "not a statistics file" :
						 strerror(-ret));
			return 1;
		}
		if (o->json) {
			printf("{\"processes\":[");
			json_proc(&one);
			printf("]}\n");
		} else {
			print_proc(&one);
		}
		return 0;
	}
	ret = mrl_live_read_dir(o->dir, &procs, &n);
	if (ret == -EPERM) {
		fprintf(stderr,
			"mrlease-stat: %s/%s%u is not a directory of uid %u "
			"that no one else may write: not read\n",
			o->dir, MRL_LIVE_PREFIX, (unsigned) geteuid(),
			(unsigned) geteuid());
		return 1;
	}
	if (ret) {
		fprintf(stderr, "mrlease-stat: cannot read %s: %s\n", o->dir,
			strerror(-ret));
		return 1;
	}
	if (o->json) {
		printf("{\"processes\":[");
		for (size_t i = 0; i < n; i++) {
			if (i)
				putchar(',');
			json_proc(&procs[i]);
		}
		printf("]}\n");
	} else {
		print_list(procs, n);
	}
	free(procs);
	return 0;
}

static void
usage(FILE *out)
{
	fprintf(out,
		"usage: mrlease-stat [-d DIR] [-w SECONDS [-n COUNT]] [--json] "
		"[PID]\n"
		"  Show the lease cache statistics that processes run with "
		"FI_MRLEASE_STATS_LIVE=1 publish.\n"
		"  PID             one process's domains and histograms\n"
		"  -d, --dir DIR   read DIR/mrlease-<uid>, every user's as "
		"root (default DIR:\n"
		"                  $FI_MRLEASE_STATS_DIR or /dev/shm)\n"
		"  -w, --watch S   redraw every S seconds, like top\n"
		"  -n, --count N   with -w: stop after N redraws\n"
		"  -j, --json      print JSON\n"
		"  -h, --help      this text\n");
}

static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{"dir", required_argument, NULL, 'd'},
		{"watch", required_argument, NULL, 'w'},
		{"count", required_argument, NULL, 'n'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char *end;
	long pid;
	int c;

	o->dir = getenv("FI_MRLEASE_STATS_DIR");
	if (!o->dir || !*o->dir)
		o->dir = "/dev/shm";
	while ((c = getopt_long(argc, argv, "d:w:n:jh", longs, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dir = optarg;
			break;
		case 'w':
			errno = 0;
			o->watch = strtod(optarg, &end);
			if (errno || *end || !(o->watch > 0) ||
			    !isfinite(o->watch)) {
				fprintf(stderr,
					"mrlease-stat: -w wants seconds > 0, "
					"not \"%s\"\n",
					optarg);
				return -1;
			}
			break;
		case 'n':
			errno = 0;
			o->count = strtol(optarg, &end, 10);
			if (errno || *end || o->count <= 0) {
				fprintf(stderr,
					"mrlease-stat: -n wants a count > 0, "
					"not \"%s\"\n",
					optarg);
				return -1;
			}
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		errno = 0;
		pid = strtol(argv[optind], &end, 10);
		if (errno || *end || pid <= 0 || pid > INT32_MAX ||
		    optind + 1 < argc) {
			usage(stderr);
			return -1;
		}
		o->pid = (int) pid;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o = {0};
	struct timespec nap;
	int ret;

	if (parse(argc, argv, &o))
		return 2;
	if (!o.watch)
		return show(&o);
	nap.tv_sec = (time_t) o.watch;
	nap.tv_nsec = (long) ((o.watch - (double) nap.tv_sec) * 1e9);
	for (long i = 0; !o.count || i < o.count; i++) {
		time_t t = time(NULL);
		char when[32];

		if (i)
			nanosleep(&nap, NULL);
		t = time(NULL);
		strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
		/* Home and clear, as top: the screen shows one view. */
		if (!o.json)
			printf("\033[H\033[2Jmrlease-stat - every %gs - %s - "
			       "%s\n\n",
			       o.watch, when, o.dir);
		ret = show(&o);
		fflush(stdout);
		if (ret)
			return ret;
	}
	return 0;
}
