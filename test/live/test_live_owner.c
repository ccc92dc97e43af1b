/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live statistics files belong to their process and its user alone
 * (mrl_live_file.h): each case gives a client (live_client) a directory of
 * its own to publish into, with what another user could have placed there
 * first, and checks that the client refuses it with one warning, touches
 * nothing of it and still runs; or that it publishes, privately, and
 * removes exactly its own file at exit. Another user is simulated with
 * chown (the suite runs as root); without root those cases are skipped.
 * Also: an interval too large to add to a clock publishes once, never in a
 * spin.
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mrlt.h"
#include "live_util.h"

/* Another user: nobody. */
#define OTHER_UID 65534

/* What refusing says, once, in every case. */
#define REFUSED "live statistics are off"

/* Paths built on base fit with room to spare. */
static char base[PATH_MAX / 2], user_dir[PATH_MAX], log_path[PATH_MAX];
static char log_text[1 << 14];
static char env_dir[PATH_MAX + 32];

/* A fresh directory for this case under live_dir() (base), and the path of
 * this user's directory in it; false when the case cannot run here (it
 * needs root to give a file to another user, and this is not root). */
static bool
case_dirs(const char *name, bool other_user)
{
	if (other_user && geteuid()) {
		mrlt_skip_current("another user's files need root to make");
		return false;
	}
	snprintf(base, sizeof(base), "%s/%s", live_dir(), name);
	snprintf(log_path, sizeof(log_path), "%s.err", base);
	snprintf(env_dir, sizeof(env_dir), "FI_MRLEASE_STATS_DIR=%s", base);
	live_remove_tree(base);
	if (mkdir(base, 0755)) {
		mrlt_fail(__FILE__, __LINE__, "mkdir %s", base);
		return false;
	}
	mrl_live_user_dir(user_dir, sizeof(user_dir), base, geteuid());
	return true;
}

/* The path of pid's file in this case's directory. */
static const char *
file_of(pid_t pid)
{
	static char path[PATH_MAX];

	mrl_live_file_path(path, sizeof(path), base, geteuid(), (int) pid);
	return path;
}

/*
 * Start a client publishing into the case's directory (up to 4 more
 * settings in extra, NULL-terminated), its stderr into log_path;
 * prepare(pid) runs before the client opens anything. False if it did not
 * get ready.
 */
static bool
client_start(struct live_child *c, const char *const *extra,
	     bool (*prepare)(pid_t pid))
{
	const char *env[8] = {env_dir, "MRLT_LIVE_GO=1"};
	int fd, err = dup(2), n = 2;
	bool ok;

	for (; extra && *extra && n < 6; extra++)
		env[n++] = *extra;
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || err < 0)
		return false;
	dup2(fd, 2); /* the child's stderr */
	close(fd);
	ok = live_child_start(c, env);
	dup2(err, 2);
	close(err);
	if (!ok)
		return false;
	if (prepare && !prepare(c->pid)) {
		live_child_end(c);
		return false;
	}
	return write(c->to, "g", 1) == 1 && live_child_ready(c);
}

/* End the client: its exit status; its stderr in log_text. */
static int
client_end(struct live_child *c)
{
	int status = live_child_end(c), fd = open(log_path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, log_text, sizeof(log_text) - 1);

	if (fd >= 0)
		close(fd);
	log_text[n > 0 ? n : 0] = '\0';
	unlink(log_path);
	return status;
}

/* How many times the log says that live statistics are off. */
static int
refusals(void)
{
	int n = 0;

	for (const char *p = log_text; (p = strstr(p, REFUSED)); p++)
		n++;
	return n;
}

/* The contents of path (a regular file, not followed), or "" */
static const char *
contents(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Whether dir holds nothing but "." and "..". */
static bool
empty_dir(const char *dir)
{
	char cmd[PATH_MAX + 64];
	int n = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n == 0;
}

/* Run a client over what prepare placed (its pid in *pid): it must run to
 * the end and refuse with one warning that says `says`. */
static void
check_refused(bool (*prepare)(pid_t pid), const char *says, pid_t *pid)
{
	struct live_child c;

	CHECK(client_start(&c, NULL, prepare));
	*pid = c.pid;
	CHECK_EQ(0, client_end(&c));
	printf("# %s", log_text);
	CHECK_MSG(refusals() == 1, "warned %d times: %s", refusals(), log_text);
	CHECK_MSG(strstr(log_text, says), "the warning does not say \"%s\"",
		  says);
}

/* ---- the user's directory ---------------------------------------- */

static bool
dir_of_another_user(pid_t pid)
{
	(void) pid;
	return !mkdir(user_dir, 0700) && !chown(user_dir, OTHER_UID, OTHER_UID);
}

/* Another user who makes DIR/mrlease-<uid> first (names are predictable)
 * would own every file made in it: read them, forge them, truncate them. */
static void
test_a_user_directory_another_user_made_is_refused_with_one_warning(void)
{
	struct stat st;
	pid_t pid;

	if (!case_dirs("other-dir", true))
		return;
	check_refused(dir_of_another_user, "owner uid 65534", &pid);
	if (mrlt_failed())
		return;
	CHECK(!lstat(user_dir, &st) && st.st_uid == OTHER_UID);
	CHECK_MSG(empty_dir(user_dir), "a file was made in another's %s",
		  user_dir);
}

static bool
dir_writable_by_others(pid_t pid)
{
	(void) pid;
	return !mkdir(user_dir, 0700) && !chmod(user_dir, 0777);
}

/* A directory others may write lets them replace or remove the files, or
 * put a symlink where one will be made. */
static void
test_a_user_directory_others_may_write_is_refused_with_one_warning(void)
{
	struct stat st;
	pid_t pid;

	if (!case_dirs("open-dir", false))
		return;
	check_refused(dir_writable_by_others, "mode 0777: refused", &pid);
	if (mrlt_failed())
		return;
	CHECK(!lstat(user_dir, &st) && (st.st_mode & 07777) == 0777);
	CHECK(empty_dir(user_dir));
}

static char elsewhere[PATH_MAX];

static bool
dir_is_a_symlink(pid_t pid)
{
	(void) pid;
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", base);
	return !mkdir(elsewhere, 0700) && !symlink(elsewhere, user_dir);
}

/* A symlink in a shared directory leads where its maker chose. */
static void
test_a_user_directory_that_is_a_symlink_is_refused_with_one_warning(void)
{
	pid_t pid;

	if (!case_dirs("link-dir", false))
		return;
	check_refused(dir_is_a_symlink, "is a symlink, not a directory", &pid);
	if (mrlt_failed())
		return;
	CHECK_MSG(empty_dir(elsewhere), "a file was made through the symlink");
}

/* What pre-creates things in a good directory: this user's, 0700. */
static bool
good_dir(void)
{
	return !mkdir(user_dir, 0700);
}

/* ---- the file ------------------------------------------------------- */

static bool
file_of_another_user(pid_t pid)
{
	int fd;

	if (!good_dir())
		return false;
	fd = open(file_of(pid), O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0)
		return false;
	if (write(fd, "forged", 6) != 6 || fchown(fd, OTHER_UID, OTHER_UID)) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* The attack of the issue: a file made first by another user, mode 0666,
 * would have received the statistics and let its maker forge them or kill
 * the publisher by truncating it. */
static void
test_a_file_another_user_made_first_is_refused_and_left_alone(void)
{
	const char *path;
	struct stat st;
	pid_t pid;

	if (!case_dirs("other-file", true))
		return;
	check_refused(file_of_another_user, "a file of uid 65534", &pid);
	if (mrlt_failed())
		return;
	path = file_of(pid);
	CHECK_MSG(!lstat(path, &st), "another user's file was removed");
	CHECK(st.st_uid == OTHER_UID && st.st_size == 6);
	CHECK_MSG(!strcmp(contents(path), "forged"), "rewritten: %s",
		  contents(path));
}

static char target[PATH_MAX];

static bool
file_is_a_symlink(pid_t pid)
{
	int fd;

	snprintf(target, sizeof(target), "%s/target", base);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, "target", 6) != 6) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	return good_dir() && !symlink(target, file_of(pid));
}

/* A symlink named like the file would have the publisher write, and its
 * exit remove, a file of the symlink maker's choosing. */
static void
test_a_symlink_named_like_the_file_is_refused_and_not_followed(void)
{
	struct stat st;
	pid_t pid;

	if (!case_dirs("link-file", false))
		return;
	check_refused(file_is_a_symlink, "a symlink of uid 0", &pid);
	if (mrlt_failed())
		return;
	CHECK(!lstat(file_of(pid), &st) && S_ISLNK(st.st_mode));
	CHECK_MSG(!strcmp(contents(target), "target"), "target rewritten: %s",
		  contents(target));
}

static bool
stale_file_of_this_user(pid_t pid)
{
	int fd;

	if (!good_dir())
		return false;
	fd = open(file_of(pid), O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* A process killed with SIGKILL leaves its file; a later process of the
 * same user that gets its pid must publish all the same. */
static void
test_a_stale_file_of_this_user_is_replaced(void)
{
	struct mrl_live_proc proc;
	struct live_child c;

	if (!case_dirs("stale", false))
		return;
	CHECK(client_start(&c, NULL, stale_file_of_this_user));
	CHECK_MSG(live_wait_rounds_in(base, c.pid, 1, &proc),
		  "the client does not publish over a stale file");
	CHECK_EQ(c.pid, proc.pid);
	CHECK_EQ(1, proc.ndomains);
	CHECK_EQ(0, client_end(&c));
	CHECK_MSG(!refusals(), "refused: %s", log_text);
}

/* Other users must not read the statistics, nor change what is read. */
static void
test_the_directory_and_the_file_are_their_users_alone(void)
{
	struct mrl_live_proc proc;
	struct live_child c;
	struct stat st;

	if (!case_dirs("private", false))
		return;
	CHECK(client_start(&c, NULL, NULL));
	CHECK(live_wait_rounds_in(base, c.pid, 1, &proc));
	CHECK(!lstat(user_dir, &st) && S_ISDIR(st.st_mode));
	CHECK_MSG(st.st_uid == geteuid() && (st.st_mode & 07777) == 0700,
		  "%s: uid %u, mode %04o", user_dir, (unsigned) st.st_uid,
		  (unsigned) (st.st_mode & 07777));
	CHECK(!lstat(file_of(c.pid), &st) && S_ISREG(st.st_mode));
	CHECK_MSG(st.st_uid == geteuid() && !(st.st_mode & 077),
		  "%s: uid %u, mode %04o", file_of(c.pid), (unsigned) st.st_uid,
		  (unsigned) (st.st_mode & 07777));
	CHECK_EQ(0, client_end(&c));
}

/* ---- exit ----------------------------------------------------------- */

/* A relative FI_MRLEASE_STATS_DIR resolved again at exit removed a file of
 * the same name in the new working directory and left its own. */
static void
test_exit_after_a_chdir_removes_the_file_made_and_only_it(void)
{
	char start[PATH_MAX / 2 + 8], later[PATH_MAX / 2 + 8],
		env_cwd[PATH_MAX + 32], env_later[PATH_MAX + 32],
		mine[PATH_MAX], decoy[PATH_MAX], dir[PATH_MAX];
	const char *env[] = {env_cwd, env_later, NULL};
	struct mrl_live_proc proc;
	struct live_child c;
	int fd;

	if (!case_dirs("chdir", false))
		return;
	/* The client starts in start/ and publishes into "stats" there, then
	 * moves to later/, which has a stats/ with the same names in it. */
	snprintf(start, sizeof(start), "%s/start", base);
	snprintf(later, sizeof(later), "%s/later", base);
	snprintf(env_cwd, sizeof(env_cwd), "MRLT_LIVE_CWD=%s", start);
	snprintf(env_later, sizeof(env_later), "MRLT_LIVE_CHDIR=%s", later);
	snprintf(env_dir, sizeof(env_dir), "FI_MRLEASE_STATS_DIR=stats");
	snprintf(dir, sizeof(dir), "%s/stats", start);
	CHECK(!mkdir(start, 0755) && !mkdir(later, 0755) && !mkdir(dir, 0755));
	CHECK(client_start(&c, env, NULL));
	CHECK(live_wait_rounds_in(dir, c.pid, 1, &proc));
	mrl_live_file_path(mine, sizeof(mine), dir, geteuid(), (int) c.pid);
	CHECK(!access(mine, F_OK));

	snprintf(dir, sizeof(dir), "%s/stats", later);
	CHECK(!mkdir(dir, 0755));
	mrl_live_user_dir(decoy, sizeof(decoy), dir, geteuid());
	CHECK(!mkdir(decoy, 0700));
	mrl_live_file_path(decoy, sizeof(decoy), dir, geteuid(), (int) c.pid);
	fd = open(decoy, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, "keep", 4) == 4);
	close(fd);

	CHECK_EQ(0, client_end(&c));
	CHECK_MSG(access(mine, F_OK), "%s left behind", mine);
	CHECK_MSG(!strcmp(contents(decoy), "keep"), "%s removed", decoy);
}

/* ---- the interval --------------------------------------------------- */

/* Wait until pid's file in base was published once; false if it never was. */
static bool
published(pid_t pid, struct mrl_live_proc *proc)
{
	struct mrlt_wait w;

	mrlt_wait_init(&w);
	do {
		if (!mrl_live_read_pid(base, (int) pid, proc) &&
		    proc->publishes && proc->ndomains)
			return true;
	} while (!mrlt_wait_over(&w));
	return false;
}

/* Publishes of a client with FI_MRLEASE_STATS_INTERVAL=interval in a
 * fifth of a second after its first: an interval whose deadline wrapped
 * published thousands. */
static void
check_interval_never_spins(const char *interval)
{
	char setting[64];
	const char *env[] = {setting, NULL};
	struct mrl_live_proc proc;
	struct live_child c;
	struct mrlt_wait w;
	uint64_t first;

	snprintf(setting, sizeof(setting), "FI_MRLEASE_STATS_INTERVAL=%s",
		 interval);
	CHECK(client_start(&c, env, NULL));
	CHECK(published(c.pid, &proc));
	first = proc.publishes;
	/* Not a synchronisation: the window in which publishes are counted. */
	mrlt_wait_init_for(&w, 0.2);
	while (!mrlt_wait_over(&w))
		;
	CHECK(!mrl_live_read_pid(base, (int) c.pid, &proc));
	printf("# interval %s: %llu ms in the header, %llu publishes in the "
	       "window\n",
	       interval, (unsigned long long) proc.interval_ms,
	       (unsigned long long) (proc.publishes - first));
	CHECK_MSG(proc.publishes - first <= 1, "%llu publishes in 0.2 s",
		  (unsigned long long) (proc.publishes - first));
	CHECK_EQ(0, client_end(&c));
}

/* A person who sets a huge interval means "rarely": the publisher must not
 * take a core instead. */
static void
test_an_interval_too_large_for_the_clock_never_spins(void)
{
	if (!case_dirs("interval", false))
		return;
	check_interval_never_spins("288230376151711744"); /* 2^58 */
	check_interval_never_spins("18446744073709551615"); /* SIZE_MAX */
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--client"))
		return live_client();
	mrlt_select(argc - 1, argv + 1);
	live_setup(argv, "5");
	MRLT_RUN(
		test_a_user_directory_another_user_made_is_refused_with_one_warning);
	MRLT_RUN(
		test_a_user_directory_others_may_write_is_refused_with_one_warning);
	MRLT_RUN(
		test_a_user_directory_that_is_a_symlink_is_refused_with_one_warning);
	MRLT_RUN(test_a_file_another_user_made_first_is_refused_and_left_alone);
	MRLT_RUN(
		test_a_symlink_named_like_the_file_is_refused_and_not_followed);
	MRLT_RUN(test_a_stale_file_of_this_user_is_replaced);
	MRLT_RUN(test_the_directory_and_the_file_are_their_users_alone);
	MRLT_RUN(test_exit_after_a_chdir_removes_the_file_made_and_only_it);
	MRLT_RUN(test_an_interval_too_large_for_the_clock_never_spins);
	return mrlt_done();
}
