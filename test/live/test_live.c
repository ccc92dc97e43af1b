/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live statistics (FI_MRLEASE_STATS_LIVE=1) end to end over loopback
 * tcp;ofi_rxm: what mrlease-stat reads from a running process is what the
 * process's own query_stats says, a killed process's file is reported
 * stale (and so is a file whose pid now names another process), a process
 * that exits removes its file, and a directory that cannot hold the file
 * gets a warning naming it. `--client` is the child these tests start and
 * test/live/test_live_tool.sh watches (live_client).
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live_util.h"
#include "common/xfer_util.h"

#define PROV LIVE_PROV
#define LEN  LIVE_LEN

static char json[1 << 20];

/* Scripts and people read the tool: it must say what the process's own
 * query says, field by field, histograms included. */
static void
test_tool_json_of_a_running_process_agrees_with_its_query_stats(void)
{
	struct mrlt_pair_opts opts = {.prov = PROV};
	struct fi_mrlease_stats s;
	struct mrl_live_proc proc;
	struct mrlt_pair pair;
	const char *p, *h;
	char *src = mrlt_alloc(LEN), *dst = mrlt_alloc(LEN), args[64];
	uint64_t v;

	if (!mrlt_pair_open_hooked(&opts, &pair))
		return;
	CHECK_FI(live_move_data(&pair, src, dst));
	/* Quiet now: the next full round publishes these figures. */
	s = mrlt_pair_stats(&pair);
	CHECK(live_wait_rounds(getpid(), 2, &proc));
	snprintf(args, sizeof(args), "--json %d", (int) getpid());
	CHECK_EQ(0, live_tool(args, json, sizeof(json)));
	printf("# %.300s...\n", json);
	p = live_json_proc(json, getpid());
	CHECK_MSG(p, "pid %d not in the JSON", (int) getpid());
	CHECK(strstr(p, "\"state\":\"live\""));
	p = strstr(p, "\"domains\":[{");
	CHECK_MSG(p, "no domain in the JSON");
	CHECK(strstr(p, "\"provider\":\"" PROV "\""));
	CHECK(s.lookups > 0 && s.hits > 0 && s.miss_invalidated > 0);
	for (size_t i = 0; i < MRL_LIVE_FIELDS; i++) {
		uint64_t want = mrl_live_field_of(&s, i);

		CHECK_MSG(live_json_u64(p, mrl_live_fields[i].name, &v),
			  "no %s", mrl_live_fields[i].name);
		CHECK_MSG(v == want, "%s: tool %llu, query_stats %llu",
			  mrl_live_fields[i].name, (unsigned long long) v,
			  (unsigned long long) want);
	}
	h = strstr(p, "\"reg_size_hist\":[");
	CHECK(h);
	h += strlen("\"reg_size_hist\":[");
	for (unsigned i = 0; i < FI_MRLEASE_HIST_BUCKETS; i++) {
		char *end;

		v = strtoull(h, &end, 10);
		CHECK_MSG(v == s.reg_size_hist[i],
			  "reg_size_hist[%u]: %llu, %llu", i,
			  (unsigned long long) v,
			  (unsigned long long) s.reg_size_hist[i]);
		h = end + 1;
	}
	CHECK_FI(mrlt_pair_close(&pair));
}

/* A job killed by its scheduler leaves its file: the tool must not show
 * its last figures as a running process's. */
static void
test_a_killed_process_file_is_reported_stale(void)
{
	struct mrl_live_proc proc;
	struct live_child c;
	char path[4096], row[256];
	const char *p, *end;
	int status;

	CHECK(live_child_start(&c, NULL));
	CHECK(live_child_ready(&c));
	CHECK(live_wait_rounds(c.pid, 1, &proc));
	CHECK_EQ(0, live_tool("--json", json, sizeof(json)));
	p = live_json_proc(json, c.pid);
	CHECK_MSG(p && !strncmp(strstr(p, "\"state\":"), "\"state\":\"live\"",
				14),
		  "child %d not live: %.400s", (int) c.pid, json);

	CHECK_EQ(0, kill(c.pid, SIGKILL));
	CHECK_EQ(c.pid, waitpid(c.pid, &status, 0));
	close(c.to);
	close(c.from);
	mrl_live_file_path(path, sizeof(path), live_dir(), geteuid(),
			   (int) c.pid);
	CHECK_MSG(!access(path, F_OK), "a killed process removed %s", path);
	CHECK_EQ(0, live_tool("--json", json, sizeof(json)));
	p = live_json_proc(json, c.pid);
	CHECK_MSG(p && !strncmp(strstr(p, "\"state\":"), "\"state\":\"stale\"",
				15),
		  "killed child %d not stale: %.400s", (int) c.pid, json);
	CHECK_EQ(0, live_tool("", json, sizeof(json)));
	printf("# %s", json);
	snprintf(row, sizeof(row), "\n%d ", (int) c.pid);
	p = strstr(json, row);
	CHECK_MSG(p, "no row of %d", (int) c.pid);
	end = strchr(p + 1, '\n');
	snprintf(row, sizeof(row), "%.*s", end ? (int) (end - p - 1) : 200,
		 p + 1);
	CHECK_MSG(strstr(row, "stale"), "row not stale: %s", row);
	unlink(path);
}

/* A pid is reused once its process is gone: a file naming a running
 * process that started at another time is stale too. */
static void
test_a_file_whose_pid_names_another_process_is_stale(void)
{
	struct mrlt_pair_opts opts = {.prov = PROV};
	struct mrl_live_header h;
	struct mrl_live_proc proc;
	struct mrlt_pair pair;
	char from[4096], to[4096], buf[1 << 16];
	ssize_t n;
	int in, out;
	pid_t other = getppid();

	if (!mrlt_pair_open_hooked(&opts, &pair))
		return;
	CHECK(live_wait_rounds(getpid(), 1, &proc));
	CHECK(!proc.stale);
	mrl_live_file_path(from, sizeof(from), live_dir(), geteuid(),
			   (int) getpid());
	mrl_live_file_path(to, sizeof(to), live_dir(), geteuid(), (int) other);
	in = open(from, O_RDONLY);
	CHECK(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK_EQ(n, write(out, buf, (size_t) n));
	close(in);
	close(out);
	/* The parent's pid, a start time no running process has (boot's
	 * first tick): the file of a process that once had that pid. */
	out = open(to, O_RDWR);
	CHECK(out >= 0);
	CHECK_EQ(sizeof(h), pread(out, &h, sizeof(h), 0));
	h.pid = (int32_t) other;
	h.start_time = 1;
	CHECK_EQ(sizeof(h), pwrite(out, &h, sizeof(h), 0));
	close(out);

	CHECK_FI(mrl_live_read_file(to, &proc));
	CHECK_EQ(other, proc.pid);
	CHECK(proc.stale);
	CHECK_EQ(0, live_tool("--json", json, sizeof(json)));
	CHECK(live_json_proc(json, other));
	CHECK(strstr(live_json_proc(json, other), "\"state\":\"stale\""));
	CHECK(strstr(live_json_proc(json, getpid()), "\"state\":\"live\""));
	unlink(to);
	CHECK_FI(mrlt_pair_close(&pair));
}

/* /dev/shm must not fill with the files of finished jobs. */
static void
test_a_process_that_exits_removes_its_file(void)
{
	struct mrl_live_proc proc;
	struct live_child c;
	char path[4096];

	CHECK(live_child_start(&c, NULL));
	CHECK(live_child_ready(&c));
	CHECK(live_wait_rounds(c.pid, 1, &proc));
	mrl_live_file_path(path, sizeof(path), live_dir(), geteuid(),
			   (int) c.pid);
	CHECK(!access(path, F_OK));
	CHECK_EQ(0, live_child_end(&c));
	CHECK_MSG(access(path, F_OK), "%s left behind", path);
}

/* A mistyped directory must say so, not publish nowhere in silence. */
static void
test_a_directory_that_cannot_hold_the_file_is_named_in_a_warning(void)
{
	static const char *const env[] = {
		"FI_MRLEASE_STATS_DIR=/nonexistent/mrlt-live",
		"FI_LOG_LEVEL=warn", NULL};
	char errpath[4096], log[1 << 14];
	struct live_child c;
	int fd, err = dup(2), n;
	const char *at;

	snprintf(errpath, sizeof(errpath), "%s/child.err", live_dir());
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && err >= 0);
	dup2(fd, 2); /* the child's stderr */
	close(fd);
	if (!live_child_start(&c, env)) {
		dup2(err, 2);
		CHECK(!"live_child_start");
	}
	dup2(err, 2);
	close(err);
	CHECK(live_child_ready(&c));
	CHECK_EQ(0, live_child_end(&c));
	fd = open(errpath, O_RDONLY);
	CHECK(fd >= 0);
	n = (int) read(fd, log, sizeof(log) - 1);
	close(fd);
	unlink(errpath);
	CHECK(n > 0);
	log[n] = '\0';
	at = strstr(log, "FI_MRLEASE_STATS_DIR=/nonexistent/mrlt-live: cannot "
			 "create");
	CHECK_MSG(at, "no warning naming the directory: %s", log);
	CHECK_MSG(!strstr(at + 1, "FI_MRLEASE_STATS_DIR="), "warned twice: %s",
		  log);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--client"))
		return live_client();
	mrlt_select(argc - 1, argv + 1);
	live_setup(argv, "5");
	MRLT_RUN(
		test_tool_json_of_a_running_process_agrees_with_its_query_stats);
	MRLT_RUN(test_a_killed_process_file_is_reported_stale);
	MRLT_RUN(test_a_file_whose_pid_names_another_process_is_stale);
	MRLT_RUN(test_a_process_that_exits_removes_its_file);
	MRLT_RUN(
		test_a_directory_that_cannot_hold_the_file_is_named_in_a_warning);
	return mrlt_done();
}
