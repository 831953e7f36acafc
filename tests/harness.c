// SPDX-License-Identifier: GPL-2.0-or-later
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

#define MAX_CASES 256
#define MAX_GUARDS 4
#define SKIP_EXIT 77

struct test_case {
	const char *name;
	harness_fn fn;
	int timeout_s;
	int signal; /* expected fatal signal, 0 for a normal exit */
};

static struct test_case cases[MAX_CASES];
static int n_cases;

static struct {
	const char *path;
	char saved[256];
	int present;
} guards[MAX_GUARDS];
static int n_guards;

static int report_fd = -1; /* child -> parent: skip reasons and failures */

void harness_register(const char *name, harness_fn fn, int timeout_s, int signal)
{
	if (n_cases == MAX_CASES)
		abort();
	cases[n_cases++] = (struct test_case){ name, fn, timeout_s, signal };
}

void harness_guard_file(const char *path)
{
	if (n_guards == MAX_GUARDS)
		abort();
	guards[n_guards++].path = path;
}

__attribute__((format(printf, 2, 0))) static void report(const char *prefix, const char *fmt,
								va_list ap)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s", prefix);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	if (report_fd >= 0) {
		size_t len = strlen(msg);
		if (write(report_fd, msg, len) != (ssize_t)len)
			_exit(1);
	}
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char where[300];

	snprintf(where, sizeof(where), "%s:%d: ", file, line);
	va_start(ap, fmt);
	report(where, fmt, ap);
	va_end(ap);
	_exit(1);
}

void harness_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("", fmt, ap);
	va_end(ap);
	_exit(SKIP_EXIT);
}

static void guards_save(void)
{
	for (int i = 0; i < n_guards; i++) {
		int fd = open(guards[i].path, O_RDONLY | O_CLOEXEC);
		guards[i].present = fd >= 0;
		if (fd < 0)
			continue;
		ssize_t n = read(fd, guards[i].saved, sizeof(guards[i].saved) - 1);
		guards[i].saved[n > 0 ? n : 0] = '\0';
		close(fd);
	}
}

/* Async-signal-safe: also called from the signal handler. */
static void guards_restore(void)
{
	for (int i = 0; i < n_guards; i++) {
		if (!guards[i].present)
			continue;
		int fd = open(guards[i].path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		size_t len = strlen(guards[i].saved);
		if (write(fd, guards[i].saved, len) != (ssize_t)len)
			(void)!write(2, "harness: could not restore a guarded file\n", 42);
		close(fd);
	}
}

static volatile pid_t running_pgid;

static void on_signal(int sig)
{
	if (running_pgid > 0)
		kill(-running_pgid, SIGKILL);
	guards_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The guarded files are global: suites of other checkouts on this machine
 * change them too, and restore them after each of their cases.  One
 * program with guards at a time, machine-wide: the lock is held from the
 * first save to the exit. */
#define GUARD_LOCK "/run/lock/uffdguard-tests.lock"

static const char *guards_lock(void)
{
	int fd = open(GUARD_LOCK, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		return strerror(errno);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return strerror(errno);
	return NULL; /* fd stays open: the lock goes with the process */
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Returns 0 pass, 1 fail, 2 skip. */
static int run_case(const struct test_case *tc, char *msg, size_t msg_size)
{
	int pipefd[2];

	msg[0] = '\0';
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		snprintf(msg, msg_size, "pipe: %s", strerror(errno));
		return 1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(msg, msg_size, "fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		close(pipefd[0]);
		report_fd = pipefd[1];
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		tc->fn();
		_exit(0);
	}
	setpgid(pid, pid);
	running_pgid = pid;
	close(pipefd[1]);

	size_t used = 0;
	int status = 0, timed_out = 0, exited = 0;
	double deadline = now_s() + tc->timeout_s;
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	while (!exited) {
		/* The case's own children may keep the pipe open after it
		 * ended, so wait for the process, reading as we go. */
		struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
		int left_ms = (int)((deadline - now_s()) * 1000);
		if (left_ms <= 0) {
			timed_out = 1;
			break;
		}
		poll(&p, 1, left_ms < 50 ? left_ms : 50);
		exited = waitpid(pid, &status, WNOHANG) == pid;
		ssize_t n;
		while (used < msg_size - 1 && (n = read(pipefd[0], msg + used, msg_size - 1 - used)) > 0)
			used += (size_t)n;
		msg[used] = '\0';
	}
	close(pipefd[0]);
	if (timed_out) {
		kill(-pid, SIGKILL);
		waitpid(pid, &status, 0);
		snprintf(msg + used, msg_size - used, "%stimed out after %d s", used ? "; " : "",
			 tc->timeout_s);
		status = -1;
	}
	kill(-pid, SIGKILL); /* whatever the case left behind */
	running_pgid = 0;
	guards_restore();

	if (status == -1)
		return 1;
	if (tc->signal && WIFSIGNALED(status) && WTERMSIG(status) == tc->signal)
		return 0;
	if (!tc->signal && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_EXIT)
		return 2;
	if (!used) {
		if (WIFSIGNALED(status))
			snprintf(msg, msg_size, "killed by signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
		else
			snprintf(msg, msg_size, "exited with status %d", WEXITSTATUS(status));
	}
	return 1;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	int failed = 0, planned = 0;
	char msg[2048];

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	const char *unlocked = n_guards ? guards_lock() : NULL;
	guards_save();

	for (int i = 0; i < n_cases; i++)
		if (!only || !strcmp(only, cases[i].name))
			planned++;
	printf("TAP version 13\n1..%d\n", planned);
	if (unlocked)
		printf("# no lock on %s (%s): another suite may change the guarded files "
		       "meanwhile\n", GUARD_LOCK, unlocked);
	int num = 0;
	for (int i = 0; i < n_cases; i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		int r = run_case(&cases[i], msg, sizeof(msg));
		num++;
		if (r == 0) {
			printf("ok %d %s\n", num, cases[i].name);
		} else if (r == 2) {
			printf("ok %d %s # SKIP %s\n", num, cases[i].name, msg);
		} else {
			failed++;
			for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n"))
				printf("# %s\n", line);
			printf("not ok %d %s\n", num, cases[i].name);
		}
	}
	return failed ? 1 : 0;
}
