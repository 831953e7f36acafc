// SPDX-License-Identifier: GPL-2.0-or-later
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <limits.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>

#include "cli-run.h"
#include "harness.h"
#include "identity.h"

void (*cli_pre_exec)(void);

const char *cli_path(void)
{
	const char *bin = getenv("UFFDGUARD");
	if (!bin)
		FAIL("UFFDGUARD is not set (run through meson test)");
	return bin;
}

struct sink {
	int fd;
	char *buf;
	size_t used, size;
};

static bool drain(struct sink *s)
{
	if (s->used + 4096 >= s->size) {
		s->size = s->size * 2 + 8192;
		s->buf = realloc(s->buf, s->size);
		ASSERT_TRUE(s->buf != NULL);
	}
	ssize_t n = read(s->fd, s->buf + s->used, s->size - s->used - 1);
	if (n > 0)
		s->used += (size_t)n;
	s->buf[s->used] = '\0';
	return n > 0 || (n < 0 && errno == EINTR);
}

void cli_require_reachable_by_others(void)
{
	static int reachable = -1;

	if (reachable < 0) {
		pid_t pid = ASSERT_SYS(fork());
		if (pid == 0)
			_exit(identity_drop(identity_unused_id(), false) == 0 &&
			      access(cli_path(), X_OK) == 0 ? 0 : 1);
		int status;
		ASSERT_SYS(waitpid(pid, &status, 0));
		reachable = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	if (!reachable)
		SKIP("a user other than root cannot reach %s: a directory above it is closed to "
		     "others (a clone in root's home, or in a mktemp -d directory); clone into a "
		     "directory every user may enter, such as /var/tmp, or chmod o+x those above it",
		     cli_path());
}

void cli_run(enum who who, const char *const *args, struct cli_result *r)
{
	const char *bin = cli_path();
	int out[2], err[2];
	const char *argv[32] = { bin };

	if (who != WHO_ROOT)
		cli_require_reachable_by_others();

	for (int i = 0; args[i]; i++) {
		ASSERT_TRUE(i < 30);
		argv[i + 1] = args[i];
	}
	ASSERT_SYS(pipe2(out, O_CLOEXEC));
	ASSERT_SYS(pipe2(err, O_CLOEXEC));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		if (who != WHO_ROOT && identity_drop(identity_unused_id(), who == WHO_UNPRIV_PTRACE) < 0)
			_exit(126);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (cli_pre_exec)
			cli_pre_exec();
		execv(bin, (char **)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	struct sink sinks[2] = { { .fd = out[0] }, { .fd = err[0] } };
	int open_n = 2;
	for (int i = 0; i < 2; i++)
		drain(&sinks[i]); /* allocates */
	while (open_n) {
		struct pollfd p[2] = { { .fd = sinks[0].fd, .events = POLLIN },
				       { .fd = sinks[1].fd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			FAIL("poll: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (sinks[i].fd >= 0 && p[i].revents && !drain(&sinks[i])) {
				close(sinks[i].fd);
				sinks[i].fd = -1;
				open_n--;
			}
		}
	}
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	*r = (struct cli_result){
		.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
		.out = sinks[0].buf, .err = sinks[1].buf };
	if (r->status == 126 || r->status == 127)
		FAIL("could not run %s as %d (status %d)", bin, (int)who, r->status);
}

pid_t cli_spawn(const char *const *args, int *out, int *err, void (*hook)(void))
{
	const char *argv[40] = { cli_path() };
	int p[2][2];

	for (int i = 0; args[i]; i++) {
		ASSERT_TRUE(i < 38);
		argv[i + 1] = args[i];
	}
	ASSERT_SYS(pipe2(p[0], O_CLOEXEC));
	ASSERT_SYS(pipe2(p[1], O_CLOEXEC));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		dup2(out ? p[0][1] : null, 1);
		dup2(err ? p[1][1] : null, 2);
		if (hook)
			hook();
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(p[0][1]);
	close(p[1][1]);
	if (out)
		*out = p[0][0];
	else
		close(p[0][0]);
	if (err)
		*err = p[1][0];
	else
		close(p[1][0]);
	return pid;
}

static void reader_fill(struct reader *r, int timeout_ms)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };

	if (r->used + 4096 >= r->size) {
		r->size = r->size * 2 + 8192;
		r->buf = realloc(r->buf, r->size);
		ASSERT_TRUE(r->buf != NULL);
	}
	r->buf[r->used] = '\0';
	if (poll(&p, 1, timeout_ms) <= 0)
		return;
	ssize_t n = read(r->fd, r->buf + r->used, r->size - r->used - 1);
	if (n > 0)
		r->used += (size_t)n;
	else if (n == 0 || errno != EINTR)
		r->eof = true;
	r->buf[r->used] = '\0';
}

bool read_until(struct reader *r, const char *needle, int seconds)
{
	double deadline = now_ms() + seconds * 1000.0;

	for (;;) {
		reader_fill(r, 100);
		if (strstr(r->buf, needle))
			return true;
		if (r->eof)
			return false;
		if (now_ms() > deadline)
			FAIL("no \"%s\" after %d s; so far:\n%s", needle, seconds, r->buf);
	}
}

void read_rest(struct reader *r)
{
	while (!r->eof)
		reader_fill(r, 1000);
}

int wait_exit(pid_t pid, int seconds)
{
	double deadline = now_ms() + seconds * 1000.0;
	int status;

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (got < 0)
			FAIL("waitpid: %s", strerror(errno));
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			FAIL("still running after %d s (killed)", seconds);
		}
		usleep(10000);
	}
}

const char *run_helper_path(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 20);
	ASSERT_TRUE(n > 0);
	path[n] = '\0';
	strcpy(strrchr(path, '/') + 1, "run-helper");
	return path;
}

int line_value(const char *out, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "\n%s ", name);
	char *buf = NULL;
	if (asprintf(&buf, "\n%s", out) < 0)
		FAIL("oom");
	const char *at = strstr(buf, key);
	if (!at)
		FAIL("no line '%s' in the helper's output:\n%s", name, out);
	int v = atoi(at + strlen(key));
	free(buf);
	return v;
}

void cli_refused(int want_status, const char *want_msg, const char *const *args)
{
	char tmp[] = "/tmp/uffdguard-bad.XXXXXX", flag[PATH_MAX];
	const char *argv[32];
	int n = 0;

	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(flag, sizeof(flag), "%s/started", tmp);
	for (; args[n]; n++) {
		ASSERT_TRUE(n < 31);
		argv[n] = strcmp(args[n], "TOUCH") ? args[n] : flag;
	}
	argv[n] = NULL;
	struct cli_result r;
	cli_run(WHO_ROOT, argv, &r);
	if (r.status != want_status)
		FAIL("exit %d, want %d; stderr:\n%s", r.status, want_status, r.err);
	ASSERT_CONTAINS(r.err, want_msg);
	if (access(flag, F_OK) == 0)
		FAIL("the command was started");
	unlink(flag);
	rmdir(tmp);
}

json_object *cli_json(struct cli_result *r)
{
	r->json = json_tokener_parse(r->out);
	if (!r->json)
		FAIL("stdout is not JSON (exit %d):\n%.1500s\nstderr: %.500s", r->status, r->out, r->err);
	return r->json;
}

json_object *jat(json_object *root, const char *path)
{
	char buf[256];
	json_object *o = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save, *key = strtok_r(buf, ".", &save); key; key = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array)) {
			char *end;
			long i = strtol(key, &end, 10);
			if (*end || i < 0 || (size_t)i >= json_object_array_length(o))
				FAIL("JSON path %s: no element %s", path, key);
			o = json_object_array_get_idx(o, (size_t)i);
		} else if (!json_object_object_get_ex(o, key, &o)) {
			FAIL("JSON path %s: no member %s in %.800s", path, key,
			     json_object_to_json_string(root));
		}
	}
	return o;
}

const char *jstr(json_object *root, const char *path)
{
	json_object *o = jat(root, path);
	return o ? json_object_get_string(o) : "null";
}

long long jint(json_object *root, const char *path)
{
	json_object *o = jat(root, path);
	if (!json_object_is_type(o, json_type_int))
		FAIL("JSON path %s is not an integer: %s", path, o ? json_object_to_json_string(o) : "null");
	return (long long)json_object_get_int64(o);
}

int jbool(json_object *root, const char *path)
{
	json_object *o = jat(root, path);
	if (!json_object_is_type(o, json_type_boolean))
		FAIL("JSON path %s is not a boolean: %s", path, o ? json_object_to_json_string(o) : "null");
	return json_object_get_boolean(o);
}

void read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	if (!f)
		FAIL("%s: %s", path, strerror(errno));
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	if (!f)
		FAIL("%s: %s", path, strerror(errno));
	fputs(text, f);
	ASSERT_EQ(fclose(f), 0);
}

size_t dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

void assert_link(const char *path, const char *target)
{
	char buf[PATH_MAX];
	struct stat st;

	ASSERT_SYS(lstat(path, &st));
	ASSERT_TRUE(S_ISLNK(st.st_mode));
	ssize_t n = ASSERT_SYS(readlink(path, buf, sizeof(buf) - 1));
	buf[n] = '\0';
	ASSERT_STREQ(buf, target);
}

void remove_tree(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}
