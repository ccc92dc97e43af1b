/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrlease-stat and its reader (tools/mrl_live_read.h) take every file as
 * hostile: random and mutated files, a file truncated while `-w` reads it,
 * a FIFO, a symlink or a directory named like a statistics file, names
 * with escape sequences and bytes that are no UTF-8. Each is refused or
 * read within bounds (the suite runs this under ASan and UBSan too), the
 * tool neither hangs nor dies, its text holds no control byte and its JSON
 * is valid and valid UTF-8. Also: root's mrlease-stat reads every user's
 * directory, a user's only their own. No libfabric: files only.
 *
 * MRLT_FUZZ_SEED=N replays a run (its seed is printed).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/mrlt.h"
#include "live_output.h"
#include "mrl_live_read.h"

/* Another user: nobody. */
#define OTHER_UID 65534
/* Files in the directory each time the tool runs on mutated ones. */
#define BATCH 24

static char base[] = "/tmp/mrlt-fuzz.XXXXXX";
static char user_dir[PATH_MAX / 2], out_path[PATH_MAX];
static uint64_t rng_state;
static uint64_t self_start;

/* The image of a file, with room to grow past the layout. */
static union {
	struct mrl_live_file f;
	unsigned char b[sizeof(struct mrl_live_file) + 8192];
} img;

static char out[1 << 22]; /* the tool's last stdout */
static size_t out_len;

static uint64_t
rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* ---- files ---------------------------------------------------------- */

/* A file a publisher could have written: three open domains. */
static size_t
valid_image(int pid, uint64_t start_time)
{
	struct mrl_live_header *h = &img.f.h;

	memset(&img, 0, sizeof(img));
	memcpy(h->magic, MRL_LIVE_MAGIC, sizeof(h->magic));
	h->version = MRL_LIVE_VERSION;
	h->header_size = sizeof(*h);
	h->slot_size = sizeof(struct mrl_live_slot);
	h->nslots = MRL_LIVE_SLOTS;
	h->stat_words = sizeof(struct fi_mrlease_stats) / sizeof(uint64_t);
	h->pid = pid;
	h->start_time = start_time;
	h->interval_ms = 1000;
	atomic_store(&h->publishes, 7);
	snprintf(h->comm, sizeof(h->comm), "fuzzed");
	for (unsigned i = 0; i < 3; i++) {
		struct mrl_live_domain *d = &img.f.slot[i].d;
		struct fi_mrlease_stats s = {.lookups = 100 + i,
					     .hits = 90 + i,
					     .misses = 10};

		atomic_store(&img.f.slot[i].seq, 2 * i);
		d->state = MRL_LIVE_OPEN;
		d->id = i + 1;
		snprintf(d->provider, sizeof(d->provider), "tcp;ofi_rxm");
		s.reg_size_hist[3] = 5;
		s.reg_ns_hist[i] = UINT64_MAX / (i + 1);
		memcpy(d->stats, &s, sizeof(s));
	}
	return sizeof(img.f);
}

/* A size or count a header could hold: the edges around the real ones. */
static uint32_t
edge_u32(void)
{
	static const uint32_t edges[] = {
		0,     1,	   4,	       7,	   8,
		9,     63,	   64,	       65,	   255,
		256,   257,	   260,	       1127,	   1128,
		1129,  1132,	   1136,       65535,	   65536,
		65537, 0x7fffffff, 0x80000000, 0xfffffff8, 0xffffffff};

	return rnd() % 4 ? edges[rnd() % (sizeof(edges) / sizeof(edges[0]))] :
			   (uint32_t) rnd();
}

/* Bytes for a name: controls, escape sequences, stray UTF-8. */
static void
hostile_name(char *name, size_t len)
{
	static const char *const parts[] = {"\x1b[2J",
					    "\x1b]0;owned\x07",
					    "\xff",
					    "\xc3\x28",
					    "\xe2\x80\xae",
					    "\xc2\x9b",
					    "\xed\xa0\x80",
					    "\xf4\x90\x80\x80",
					    "\xc0\xaf",
					    "\\",
					    "\"",
					    "\n",
					    "\r",
					    "\x7f",
					    "\xe2\x82",
					    "ok",
					    "\xf0\x9f\x98\x80",
					    "%s%n"};
	size_t used = 0;

	while (used < len) {
		const char *p =
			parts[rnd() % (sizeof(parts) / sizeof(parts[0]))];
		size_t n = strlen(p);

		if (used + n > len)
			n = len - used;
		memcpy(name + used, p, n);
		used += n;
		if (rnd() % 3 == 0)
			break;
	}
	if (rnd() % 2 && used < len) /* else no NUL at all */
		memset(name + used, 0, len - used);
}

/* Some changes to the image of `size` bytes; its new size. */
static size_t
mutate(size_t size)
{
	struct mrl_live_header *h = &img.f.h;
	unsigned n = 1 + (unsigned) (rnd() % 4);

	while (n--) {
		struct mrl_live_slot *slot =
			&img.f.slot[rnd() % MRL_LIVE_SLOTS];
		struct fi_mrlease_stats *s =
			(struct fi_mrlease_stats *) (void *) slot->d.stats;
		uint64_t w;
		size_t at;

		if (!size)
			return 0;
		switch (rnd() % 12) {
		case 0:
			img.b[rnd() % size] ^=
				(unsigned char) (1 + rnd() % 255);
			break;
		case 1:
			switch (rnd() % 5) {
			case 0:
				h->version = edge_u32();
				break;
			case 1:
				h->header_size = edge_u32();
				break;
			case 2:
				h->slot_size = edge_u32();
				break;
			case 3:
				h->nslots = edge_u32();
				break;
			default:
				h->stat_words = edge_u32();
			}
			break;
		case 2:
			h->pid = (int32_t) edge_u32();
			break;
		case 3:
			size = (size_t) (rnd() % size);
			break;
		case 4:
			size += (size_t) (rnd() % (sizeof(img) - size + 1));
			break;
		case 5:
			atomic_store(&slot->seq, 2 * (rnd() % 8) + 1);
			break;
		case 6:
			slot->d.state = MRL_LIVE_OPEN;
			s->hits = s->lookups + 1 + rnd() % 1000;
			break;
		case 7:
			hostile_name(h->comm, sizeof(h->comm));
			break;
		case 8:
			slot->d.state = MRL_LIVE_OPEN;
			hostile_name(slot->d.provider,
				     sizeof(slot->d.provider));
			break;
		case 9:
			slot->d.state = rnd() % 4;
			break;
		case 10:
			s->lookups = rnd() % 2 ? UINT64_MAX : rnd();
			s->hits = s->lookups ? rnd() % s->lookups : 0;
			s->registered_bytes = rnd();
			break;
		default:
			w = rnd();
			at = (size_t) (rnd() % size);
			if (at + sizeof(w) <= size)
				memcpy(img.b + at, &w, sizeof(w));
			break;
		}
	}
	return size;
}

/* Random bytes, now and then after a valid magic and version. */
static size_t
random_image(void)
{
	size_t size = (size_t) (rnd() % sizeof(img));

	for (size_t i = 0; i < size; i++)
		img.b[i] = (unsigned char) rnd();
	if (rnd() % 2 && size >= 12) {
		memcpy(img.b, MRL_LIVE_MAGIC, 8);
		img.f.h.version = MRL_LIVE_VERSION;
	}
	return size;
}

static void
file_path(char *path, size_t len, int pid)
{
	mrl_live_file_path(path, len, base, geteuid(), pid);
}

/* The image's first size bytes as the file at path, owned by uid (-1:
 * this process's). */
static bool
write_image(const char *path, size_t size, int uid)
{
	int fd;
	bool ok;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return false;
	ok = write(fd, img.b, size) == (ssize_t) size &&
	     (uid < 0 || !fchown(fd, (uid_t) uid, (gid_t) uid));
	close(fd);
	return ok;
}

/* The image's first size bytes as the file of pid. */
static bool
write_file(int pid, size_t size)
{
	char path[PATH_MAX];

	file_path(path, sizeof(path), pid);
	return write_image(path, size, -1);
}

/* A pid of no running process, mostly (the files are then stale). */
static int
some_pid(void)
{
	return (int) (4000000 + rnd() % 100000);
}

/* ---- what comes out ------------------------------------------------- */

/* ---- the tool ------------------------------------------------------- */

/*
 * Run the built mrlease-stat on base with args (NULL-terminated), as uid
 * when uid >= 0; its stdout in out. Its wait status, -1 when it did not
 * end within `seconds` (it is killed: a hang).
 */
static int
run_tool_as(int uid, double seconds, const char *const *args)
{
	const char *top = getenv("MRL_TOP_BUILDDIR");
	char tool[PATH_MAX];
	const char *argv[16] = {tool, "-d", base};
	int n = 3, fd, status;
	ssize_t got;
	pid_t pid;

	snprintf(tool, sizeof(tool), "%s/tools/mrlease-stat", top ? top : ".");
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -2;
	if (!pid) {
		fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		if (uid >= 0 && setuid((uid_t) uid))
			_exit(126);
		execv(tool, (char *const *) argv);
		_exit(127);
	}
	status = mrlt_wait_child(pid, seconds);
	fd = open(out_path, O_RDONLY);
	got = fd < 0 ? 0 : read(fd, out, sizeof(out) - 1);
	if (fd >= 0)
		close(fd);
	out_len = got > 0 ? (size_t) got : 0;
	out[out_len] = '\0';
	return status;
}

static int
run_tool(const char *const *args)
{
	return run_tool_as(-1, 60, args);
}

/* Whether the tool ended by itself with status 0 (or `other`). */
static bool
exited(int status, int other)
{
	return status >= 0 && WIFEXITED(status) &&
	       (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == other);
}

/* Every view of the directory, and of pid: no crash, no hang, text free of
 * controls, JSON valid UTF-8; hit rates of at most 100%. */
static const char *
check_views(int pid, char *why, size_t len)
{
	char pidarg[16];
	const char *list[] = {NULL}, *json[] = {"--json", NULL};
	const char *one[] = {pidarg, NULL},
		   *one_json[] = {"--json", pidarg, NULL};
	const char *const *views[] = {list, json, one, one_json};
	const char *bad;
	int status;

	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	for (unsigned v = 0; v < 4; v++) {
		status = run_tool(views[v]);
		/* 1: no valid file of that pid (the PID views). */
		if (!exited(status, v >= 2 ? 1 : 0)) {
			snprintf(why, len, "view %u: status %#x", v, status);
			return why;
		}
		if (WEXITSTATUS(status) && out_len) {
			snprintf(why, len,
				 "view %u: failed, yet printed %.300s", v, out);
			return why;
		}
		if (WEXITSTATUS(status))
			continue;
		bad = live_output_bad(out, out_len, v % 2 == 0);
		if (bad) {
			snprintf(why, len, "view %u: byte %#x at %zu", v,
				 (unsigned char) *bad, (size_t) (bad - out));
			return why;
		}
		if (v % 2 && !live_json_valid(out, out_len)) {
			snprintf(why, len, "view %u: invalid JSON: %.300s", v,
				 out);
			return why;
		}
		for (const char *p = out;
		     v == 2 && (p = strstr(p, "  lookups ")); p++) {
			unsigned long long l, h;
			double rate;

			if (sscanf(p, "  lookups %llu  hits %llu (%lf%%)", &l,
				   &h, &rate) == 3 &&
			    (rate > 100.0 || h > l)) {
				snprintf(why, len, "hit rate %.1f%%", rate);
				return why;
			}
		}
	}
	return NULL;
}

/* rm -rf what (the shell's glob too). */
static void
rm_rf(const char *what)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", what);
	if (system(cmd))
		printf("# %s failed\n", cmd);
}

/* Remove every file of the user's directory. */
static void
clear_dir(void)
{
	char what[PATH_MAX];

	snprintf(what, sizeof(what), "'%s'/*", user_dir);
	rm_rf(what);
}

/* ---- the reader on its own ------------------------------------------ */

/* What a successful read may hold: the name's pid, bounded counts, names
 * ended, consistent figures. */
static const char *
impossible(const struct mrl_live_proc *p, int pid)
{
	if (p->pid != pid)
		return "pid not the name's";
	if (p->ndomains + p->busy > MRL_LIVE_SLOTS)
		return "more domains than slots";
	if (!memchr(p->comm, '\0', sizeof(p->comm)))
		return "command not ended";
	for (unsigned i = 0; i < p->ndomains; i++) {
		const struct mrl_live_domain *d = &p->dom[i];

		if (d->state != MRL_LIVE_OPEN)
			return "a domain not open";
		if (!memchr(d->provider, '\0', sizeof(d->provider)))
			return "provider not ended";
		if (mrl_live_stats(d)->hits > mrl_live_stats(d)->lookups)
			return "more hits than lookups";
	}
	return NULL;
}

/* A fuzzer finds what a person would not think of: every mutation of a
 * valid file and every random file is refused or read within bounds. */
static void
test_random_and_mutated_files_are_refused_or_read_within_bounds(void)
{
	struct mrl_live_proc *proc = malloc(sizeof(*proc));
	char path[PATH_MAX];
	unsigned read_ok = 0, refused = 0;
	const char *bad;

	CHECK(proc);
	for (unsigned i = 0; i < 4000; i++) {
		/* Now and then this process's own pid and start time: a live
		 * file, whose odd slots are tried again and again. */
		int pid = i % 64 ? some_pid() : (int) getpid();
		size_t size =
			i % 5 ? mutate(valid_image(pid, pid == getpid() ?
								self_start :
								rnd())) :
				random_image();
		int ret;

		CHECK(write_file(pid, size));
		file_path(path, sizeof(path), pid);
		ret = mrl_live_read_file(path, proc);
		CHECK_MSG(ret == 0 || ret == -EINVAL, "read: %d", ret);
		if (ret) {
			refused++;
		} else {
			read_ok++;
			bad = impossible(proc, pid);
			CHECK_MSG(!bad, "case %u: %s", i, bad);
		}
		unlink(path);
	}
	printf("# %u read, %u refused\n", read_ok, refused);
	CHECK(read_ok > 100 && refused > 100);
	free(proc);
}

/* The same files through every view of the tool. */
static void
test_the_tool_on_mutated_files_neither_dies_nor_hangs_nor_emits_controls(void)
{
	char why[512];
	const char *bad;

	for (unsigned round = 0; round < 12; round++) {
		int pid = 0;

		clear_dir();
		for (unsigned k = 0; k < BATCH; k++) {
			pid = some_pid();
			CHECK(write_file(
				pid, k % 6 ? mutate(valid_image(pid, rnd())) :
					     random_image()));
		}
		bad = check_views(pid, why, sizeof(why));
		CHECK_MSG(!bad, "round %u: %s", round, bad);
	}
	clear_dir();
}

/* ---- cases a fuzzer may miss ---------------------------------------- */

/* A terminal obeys escape sequences: a process named so could clear the
 * screen, retitle the window, or hide text behind a bidi override. */
static void
test_names_are_escaped_for_the_terminal_and_valid_utf8_in_json(void)
{
	struct mrl_live_header *h = &img.f.h;
	int pid = some_pid();
	char why[512], pidarg[16];
	const char *one[] = {pidarg, NULL}, *json[] = {"--json", NULL};

	clear_dir();
	valid_image(pid, 1);
	snprintf(h->comm, sizeof(h->comm), "%s", "a\x1b]0;x\x07\xff\xc3\xa9");
	snprintf(img.f.slot[0].d.provider, sizeof(img.f.slot[0].d.provider),
		 "%s", "tcp\x1b[2J\xc2\x9b\"\\");
	CHECK(write_file(pid, sizeof(img.f)));
	CHECK(!check_views(pid, why, sizeof(why)));
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	CHECK(exited(run_tool(one), 0));
	printf("# %.200s\n", out);
	CHECK_MSG(strstr(out, "(a\\x1b]0;x\\x07\\xff\xc3\xa9)"),
		  "command not escaped: %.300s", out);
	CHECK_MSG(strstr(out, "over tcp\\x1b[2J\\xc2\\x9b\"\\\\ "),
		  "provider not escaped: %.300s", out);
	CHECK(exited(run_tool(json), 0));
	printf("# %.300s\n", out);
	CHECK(strstr(out,
		     "\"command\":\"a\\u001b]0;x\\u0007\\ufffd\xc3\xa9\""));
	CHECK(strstr(out, "\"provider\":\"tcp\\u001b[2J\\u009b\\\"\\\\\""));
	clear_dir();
}

/* Hits counted past lookups make a rate over 100%: a forged file. */
static void
test_a_file_with_more_hits_than_lookups_is_refused(void)
{
	struct fi_mrlease_stats *s =
		(struct fi_mrlease_stats *) (void *) img.f.slot[1].d.stats;
	struct mrl_live_proc *proc = malloc(sizeof(*proc));
	char path[PATH_MAX];
	int pid = some_pid();
	const char *json[] = {"--json", NULL};

	CHECK(proc);
	clear_dir();
	valid_image(pid, 1);
	s->hits = s->lookups * 377;
	CHECK(write_file(pid, sizeof(img.f)));
	file_path(path, sizeof(path), pid);
	CHECK_EQ(-EINVAL, mrl_live_read_file(path, proc));
	CHECK(exited(run_tool(json), 0));
	CHECK(live_json_valid(out, out_len));
	CHECK_MSG(!strstr(out, "\"pid\""), "listed: %.300s", out);
	free(proc);
	clear_dir();
}

/* Sizes that are no multiple of a word put every later field off its
 * alignment (UBSan: misaligned loads); a writer never makes them. */
static void
test_odd_header_and_slot_sizes_are_refused(void)
{
	static const uint32_t odd[][2] = {{257, 1128},
					  {256, 1129},
					  {260, 1132},
					  {263, 1135}};
	struct mrl_live_proc *proc = malloc(sizeof(*proc));
	char path[PATH_MAX];
	int pid = some_pid();

	CHECK(proc);
	for (unsigned i = 0; i < 4; i++) {
		valid_image(pid, 1);
		img.f.h.header_size = odd[i][0];
		img.f.h.slot_size = odd[i][1];
		/* Long enough for those sizes: only their alignment is bad. */
		CHECK(write_file(pid, odd[i][0] + odd[i][1] * MRL_LIVE_SLOTS));
		file_path(path, sizeof(path), pid);
		CHECK_MSG(mrl_live_read_file(path, proc) == -EINVAL,
			  "header %u, slot %u read", odd[i][0], odd[i][1]);
	}
	unlink(path);
	free(proc);
}

/* Anyone can make a FIFO in /dev/shm: opening it for reading blocks until
 * a writer comes, and the tool with it. */
static void
test_a_fifo_named_like_a_file_does_not_hang_the_tool(void)
{
	char path[PATH_MAX], why[512];
	struct mrl_live_proc proc;
	int pid = some_pid();

	clear_dir();
	file_path(path, sizeof(path), pid);
	CHECK(!mkfifo(path, 0600));
	CHECK_MSG(!check_views(pid, why, sizeof(why)), "%s", why);
	CHECK_EQ(-EINVAL, mrl_live_read_file(path, &proc));
	clear_dir();
}

/* A symlink leads to a file its maker chose: a statistics file of another
 * user's shown as this one's, or a file that must not be opened. */
static void
test_a_symlink_named_like_a_file_is_not_followed(void)
{
	char path[PATH_MAX], target[PATH_MAX], why[512];
	struct mrl_live_proc proc;
	int pid = some_pid();
	const char *json[] = {"--json", NULL};
	char pidkey[32];

	clear_dir();
	snprintf(target, sizeof(target), "%s/target", base);
	valid_image(pid, 1);
	CHECK(write_image(target, sizeof(img.f), -1));
	file_path(path, sizeof(path), pid);
	CHECK(!symlink(target, path));
	CHECK(mrl_live_read_file(path, &proc) < 0);
	CHECK(!check_views(pid, why, sizeof(why)));
	CHECK(exited(run_tool(json), 0));
	snprintf(pidkey, sizeof(pidkey), "\"pid\":%d,", pid);
	CHECK_MSG(!strstr(out, pidkey), "followed: %.300s", out);
	unlink(target);
	clear_dir();
}

static void
test_a_directory_named_like_a_file_is_skipped(void)
{
	char path[PATH_MAX], why[512];
	struct mrl_live_proc proc;
	int pid = some_pid();

	clear_dir();
	file_path(path, sizeof(path), pid);
	CHECK(!mkdir(path, 0700));
	CHECK(mrl_live_read_file(path, &proc) < 0);
	CHECK_MSG(!check_views(pid, why, sizeof(why)), "%s", why);
	clear_dir();
}

/* The tool mapped the file: a truncation while it read killed it with
 * SIGBUS. It must copy what it reads. */
static void
test_a_file_truncated_while_the_tool_watches_never_kills_it(void)
{
	const char *top = getenv("MRL_TOP_BUILDDIR");
	char tool[PATH_MAX], path[PATH_MAX], pidarg[16];
	int pid = (int) getpid(), fd, status = 0;
	unsigned long cuts = 0;
	size_t size;
	pid_t child;

	clear_dir();
	size = valid_image(pid, self_start);
	CHECK(write_file(pid, size));
	file_path(path, sizeof(path), pid);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	snprintf(tool, sizeof(tool), "%s/tools/mrlease-stat", top ? top : ".");
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	for (unsigned view = 0; view < 2; view++) {
		const char *argv[] = {tool,   "-d",	base,
				      "-w",   "0.0005", "-n",
				      "3000", "--json", view ? pidarg : NULL,
				      NULL};
		struct mrlt_wait w;

		fflush(NULL);
		child = fork();
		CHECK(child >= 0);
		if (!child) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, 1);
			dup2(null, 2);
			execv(tool, (char *const *) argv);
			_exit(127);
		}
		/* Cut and restore the file until the tool is done (bounded:
		 * a tool that hangs fails below). */
		mrlt_wait_init_for(&w, 60);
		while (waitpid(child, &status, WNOHANG) == 0 &&
		       !mrlt_wait_over(&w)) {
			/* Short about as long as whole: a look may map it
			 * whole and read it short. */
			for (int k = 0; k < 16; k++)
				CHECK(!ftruncate(fd, (off_t) (rnd() % size)));
			CHECK(pwrite(fd, img.b, size, 0) == (ssize_t) size);
			cuts++;
		}
		if (waitpid(child, &status, WNOHANG) == 0) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			CHECK_MSG(0, "the tool hung");
		}
		/* The PID view ends (1) when a look finds no valid file. */
		CHECK_MSG(WIFEXITED(status) &&
				  (WEXITSTATUS(status) == 0 ||
				   (view && WEXITSTATUS(status) == 1)),
			  "view %u: %s %d", view,
			  WIFSIGNALED(status) ? "signal" : "status",
			  WIFSIGNALED(status) ? WTERMSIG(status) :
						WEXITSTATUS(status));
	}
	printf("# %lu truncations\n", cuts);
	close(fd);
	clear_dir();
}

/* ---- whose files ---------------------------------------------------- */

/* root watches every user's jobs; a user sees their own only, and nobody
 * sees files in a directory its user does not own alone. */
static void
test_root_reads_every_users_directory_and_a_user_only_their_own(void)
{
	char other[PATH_MAX], squat[PATH_MAX], path[PATH_MAX], key[48];
	int mine = some_pid(), theirs = some_pid(), squatted = some_pid();
	const char *json[] = {"--json", NULL};

	if (geteuid()) {
		mrlt_skip_current("another user's files need root to make");
		return;
	}
	clear_dir();
	mrl_live_user_dir(other, sizeof(other), base, OTHER_UID);
	mrl_live_user_dir(squat, sizeof(squat), base, 1000);
	CHECK(!mkdir(other, 0700) && !chown(other, OTHER_UID, OTHER_UID));
	CHECK(!mkdir(squat, 0700) && !chown(squat, OTHER_UID, OTHER_UID));

	valid_image(mine, 1);
	CHECK(write_file(mine, sizeof(img.f)));
	/* Theirs: in their directory, of their own. */
	valid_image(theirs, 1);
	mrl_live_file_path(path, sizeof(path), base, OTHER_UID, theirs);
	CHECK(write_image(path, sizeof(img.f), OTHER_UID));
	/* A directory named for uid 1000 that uid 65534 made. */
	valid_image(squatted, 1);
	mrl_live_file_path(path, sizeof(path), base, 1000, squatted);
	CHECK(write_image(path, sizeof(img.f), OTHER_UID));

	CHECK(exited(run_tool(json), 0));
	printf("# root: %.300s\n", out);
	snprintf(key, sizeof(key), "{\"pid\":%d,", mine);
	CHECK(strstr(out, key));
	snprintf(key, sizeof(key), "{\"pid\":%d,", theirs);
	CHECK_MSG(strstr(out, key), "root does not see uid %d's", OTHER_UID);
	CHECK(strstr(strstr(out, key), "\"uid\":65534"));
	snprintf(key, sizeof(key), "{\"pid\":%d,", squatted);
	CHECK_MSG(!strstr(out, key), "a squatted directory's file is shown");

	/* base must be searchable by the other user for it to see its own. */
	CHECK(!chmod(base, 0755));
	CHECK(exited(run_tool_as(OTHER_UID, 60, json), 0));
	printf("# uid %d: %.300s\n", OTHER_UID, out);
	snprintf(key, sizeof(key), "{\"pid\":%d,", theirs);
	CHECK(strstr(out, key));
	snprintf(key, sizeof(key), "{\"pid\":%d,", mine);
	CHECK_MSG(!strstr(out, key), "uid %d sees root's", OTHER_UID);
	CHECK(!chmod(base, 0700));
	rm_rf(other);
	rm_rf(squat);
}

int
main(int argc, char **argv)
{
	const char *seed = getenv("MRLT_FUZZ_SEED");
	char state;

	mrlt_select(argc - 1, argv + 1);
	rng_state = seed ? strtoull(seed, NULL, 0) : 0x6d726c65617365ULL;
	if (!rng_state)
		rng_state = 1;
	printf("# MRLT_FUZZ_SEED=%llu\n", (unsigned long long) rng_state);
	self_start = mrl_live_proc_start("/proc/self/stat", &state);
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	mrl_live_user_dir(user_dir, sizeof(user_dir), base, geteuid());
	snprintf(out_path, sizeof(out_path), "%s/out", base);
	if (mkdir(user_dir, 0700)) {
		perror(user_dir);
		return 1;
	}
	MRLT_RUN(
		test_random_and_mutated_files_are_refused_or_read_within_bounds);
	MRLT_RUN(
		test_the_tool_on_mutated_files_neither_dies_nor_hangs_nor_emits_controls);
	MRLT_RUN(
		test_names_are_escaped_for_the_terminal_and_valid_utf8_in_json);
	MRLT_RUN(test_a_file_with_more_hits_than_lookups_is_refused);
	MRLT_RUN(test_odd_header_and_slot_sizes_are_refused);
	MRLT_RUN(test_a_fifo_named_like_a_file_does_not_hang_the_tool);
	MRLT_RUN(test_a_symlink_named_like_a_file_is_not_followed);
	MRLT_RUN(test_a_directory_named_like_a_file_is_skipped);
	MRLT_RUN(test_a_file_truncated_while_the_tool_watches_never_kills_it);
	MRLT_RUN(
		test_root_reads_every_users_directory_and_a_user_only_their_own);
	rm_rf(base);
	return mrlt_done();
}
