// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The program test-run executes inside `uffdguard run`: it makes the calls
 * the tests judge and prints one "NAME ERRNO" line per call (0: a
 * descriptor was created).  It drops its own privileges, so that the
 * supervisor sees the caller's real credentials.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "identity.h"
#include "libuffd.h"
#include "marker.h"
#include "policy.h"
#include "run-helper.h"

#define X32_BIT 0x40000000L
#define X32_NR_IOCTL 514
#define I386_NR_GETPID 20
#define I386_NR_IOCTL 54
#define I386_NR_USERFAULTFD 374

static __attribute__((noreturn, format(printf, 1, 2))) void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("run-helper: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(99);
}

static void become(const char *who)
{
	if (!strcmp(who, "root"))
		return;
	int r = identity_drop(identity_unused_id(), !strcmp(who, "ptrace"));
	if (r < 0)
		fatal("identity_drop: %s", strerror(-r));
}

/* 0 or the errno; closes what it created. */
static int result(long r)
{
	if (r >= 0) {
		close((int)r);
		return 0;
	}
	return errno;
}

static int uffd(uint64_t flags)
{
	return result(syscall(SYS_userfaultfd, flags));
}

static int dev_new(int devfd, uint64_t cmd, uint64_t flags)
{
	return result(syscall(SYS_ioctl, devfd, cmd, flags));
}

static long int80(long nr, long a, long b, long c)
{
	long r;
	/* The i386 entry from 64-bit code (CONFIG_IA32_EMULATION). */
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "0"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	return r;
}

static bool have_int80(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(int80(I386_NR_GETPID, 0, 0, 0) == getpid() ? 0 : 1);
	int status;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

static int int80_result(long r)
{
	if (r >= 0) {
		close((int)r);
		return 0;
	}
	return (int)-r;
}

static int probe(int argc, char **argv)
{
	if (argc < 4)
		fatal("probe WHO DEV");
	become(argv[2]);
	int devfd = strcmp(argv[3], "-") ? open(argv[3], O_RDWR | O_CLOEXEC) : -1;
	if (strcmp(argv[3], "-") && devfd < 0)
		fatal("open %s: %s", argv[3], strerror(errno));
	for (size_t i = 0; i < N_RUN_FLAGS; i++) {
		printf("sys %" PRIx64 " %d\n", run_flags[i], uffd(run_flags[i]));
		if (devfd >= 0)
			printf("dev %" PRIx64 " %d\n", run_flags[i],
			       dev_new(devfd, USERFAULTFD_IOC_NEW, run_flags[i]));
	}
	printf("marker 0 %d\n", uffd(UFFDGUARD_MARKER_FLAGS));
	return 0;
}

static void *thread_call(void *arg)
{
	*(int *)arg = uffd(0);
	return NULL;
}

static int bypass(int argc, char **argv)
{
	if (argc < 3)
		fatal("bypass DEV");
	become("unpriv");
	int devfd = open(argv[2], O_RDWR | O_CLOEXEC);
	if (devfd < 0)
		fatal("open %s: %s", argv[2], strerror(errno));
	printf("x32 %d\n", result(syscall(X32_BIT | SYS_userfaultfd, 0)));
	printf("x32-ioctl %d\n", result(syscall(X32_BIT | X32_NR_IOCTL, devfd, USERFAULTFD_IOC_NEW, 0)));
	if (have_int80()) {
		printf("int80 %d\n", int80_result(int80(I386_NR_USERFAULTFD, 0, 0, 0)));
		printf("int80-ioctl %d\n",
		       int80_result(int80(I386_NR_IOCTL, devfd, USERFAULTFD_IOC_NEW, 0)));
	} else {
		printf("int80 skip\n");
	}
	printf("upper-flags %d\n", uffd(0xffffffff00000000ull));
	printf("upper-cmd %d\n", dev_new(devfd, 0xffffffff00000000ull | USERFAULTFD_IOC_NEW, 0));
	printf("upper-cmd-flags %d\n",
	       dev_new(devfd, 0xdead000000000000ull | USERFAULTFD_IOC_NEW, 0xffffffff00000000ull));

	pthread_t t;
	int thread_err = -1;
	pthread_create(&t, NULL, thread_call, &thread_err);
	pthread_join(t, NULL);
	printf("thread %d\n", thread_err);

	/* A grandchild after fork and exec. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "run-helper", "one", (char *)NULL);
		_exit(98);
	}
	int status;
	waitpid(pid, &status, 0);

	/* Root of a user namespace of its own: every capability, none of
	 * them in the initial namespace. */
	int p[2], e = -1;
	if (pipe(p) < 0)
		fatal("pipe");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER) < 0)
			e = -1; /* no user namespaces here */
		else
			e = identity_has_cap(CAP_SYS_PTRACE) ? uffd(0) : -2;
		_exit(write(p[1], &e, sizeof(e)) == sizeof(e) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &e, sizeof(e)) != sizeof(e))
		e = -3;
	close(p[0]);
	waitpid(pid, NULL, 0);
	if (e == -1)
		printf("userns skip\n");
	else
		printf("userns %d\n", e);
	printf("umo %d\n", uffd(UFFD_USER_MODE_ONLY));
	return 0;
}

static int one(void)
{
	printf("grandchild %d\n", uffd(0));
	return 0;
}

/* Legitimate use: a user-mode-only descriptor serving its own faults. */
struct server {
	int fd;
	char *area;
	size_t pages, served;
};

static void *serve_faults(void *arg)
{
	struct server *s = arg;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *page = malloc(ps);

	while (s->served < s->pages) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		if (poll(&p, 1, 5000) <= 0)
			break;
		struct libuffd_event ev[8];
		int n = libuffd_read_events(s->fd, ev, 8);
		for (int i = 0; i < n; i++) {
			if (ev[i].type != LIBUFFD_EVENT_PAGEFAULT)
				continue;
			size_t idx = (ev[i].pagefault.address - (uintptr_t)s->area) / ps;
			memset(page, (int)('a' + idx % 26), ps);
			int r = libuffd_copy(s->fd, s->area + idx * ps, page, ps, 0, NULL);
			if (r == 0 || r == -EEXIST)
				s->served++;
		}
	}
	free(page);
	return NULL;
}

static int serve(void)
{
	become("unpriv");
	struct server s = { .pages = 64 };
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct libuffd_api api;

	s.fd = libuffd_open(NULL, NULL);
	if (s.fd < 0)
		fatal("libuffd_open: %s", strerror(-s.fd));
	int r = libuffd_api_handshake(s.fd, 0, 0, &api);
	if (r < 0)
		fatal("handshake: %s", strerror(-r));
	s.area = mmap(NULL, s.pages * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s.area == MAP_FAILED || (r = libuffd_register(s.fd, s.area, s.pages * ps,
							   LIBUFFD_REGISTER_MISSING, NULL)) < 0)
		fatal("register: %s", strerror(-r));
	pthread_t t;
	pthread_create(&t, NULL, serve_faults, &s);
	size_t good = 0;
	for (size_t i = 0; i < s.pages; i++)
		good += s.area[i * ps] == 'a' + (char)(i % 26) &&
			s.area[i * ps + ps - 1] == 'a' + (char)(i % 26);
	pthread_join(t, NULL);
	printf("served %zu good %zu\n", s.served, good);
	return good == s.pages ? 0 : 1;
}

struct worker {
	pthread_barrier_t *start;
	const struct policy *policy;
	int calls, mismatches;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->start);
	for (int i = 0; i < w->calls; i++) {
		uint64_t f = run_thread_flags[i % 4];
		enum verdict v = policy_decide(w->policy, false, &(struct call){ CALL_SYSCALL, f });
		int want = v == VERDICT_EPERM ? EPERM : v == VERDICT_EINVAL ? EINVAL : 0;
		w->mismatches += uffd(f) != want;
	}
	return NULL;
}

static int threads(int argc, char **argv)
{
	if (argc < 5)
		fatal("threads N CALLS POLICY");
	int n = atoi(argv[2]), calls = atoi(argv[3]), mismatches = 0;
	struct policy p;
	char err[256];
	if (n <= 0 || n > 1024 || policy_preset(argv[4], &p, err, sizeof(err)) < 0)
		fatal("bad arguments");
	become("unpriv");
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	struct worker *w = calloc((size_t)n, sizeof(*w));
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ &start, &p, calls, 0 };
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		mismatches += w[i].mismatches;
	}
	printf("calls %d mismatches %d\n", n * calls, mismatches);
	free(t);
	free(w);
	return 0;
}

/* One call in a child of the given identity; its errno over a pipe, as
 * the marker's errno does not fit an exit status. */
static int call_as(const char *who, uint64_t flags)
{
	int p[2], e = -1;
	if (pipe(p) < 0)
		fatal("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		become(who);
		e = uffd(flags);
		_exit(write(p[1], &e, sizeof(e)) == sizeof(e) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &e, sizeof(e)) != sizeof(e))
		e = -1;
	close(p[0]);
	waitpid(pid, NULL, 0);
	return e;
}

static void write_file(const char *dir, const char *name, const char *value)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	if (!f || fputs(value, f) < 0 || fclose(f) != 0)
		fatal("write %s: %s", path, strerror(errno));
}

static void read_file(const char *dir, const char *name, char *buf, size_t size)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	buf[0] = '\0';
	if (!f || !fgets(buf, (int)size, f))
		fatal("read %s", path);
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static int live(int argc, char **argv)
{
	if (argc < 3)
		fatal("live DIR");
	const char *dir = argv[2];
	char v[32];

	printf("start-unpriv-0 %d\n", call_as("unpriv", 0));
	write_file(dir, "unprivileged_userfaultfd_user_mode_only", "1\n");
	printf("umo-unpriv-0 %d\n", call_as("unpriv", 0));
	printf("umo-unpriv-umo %d\n", call_as("unpriv", UFFD_USER_MODE_ONLY));
	printf("umo-ptrace-0 %d\n", call_as("ptrace", 0));
	write_file(dir, "unprivileged_userfaultfd_user_mode_only", "2\n"); /* refused */
	printf("bad-unpriv-0 %d\n", call_as("unpriv", 0));
	read_file(dir, "unprivileged_userfaultfd_user_mode_only", v, sizeof(v));
	printf("bad-file %s\n", v);
	write_file(dir, "unprivileged_userfaultfd", "0");
	printf("deny-unpriv-umo %d\n", call_as("unpriv", UFFD_USER_MODE_ONLY));
	printf("deny-marker %d\n", call_as("unpriv", UFFDGUARD_MARKER_FLAGS));
	write_file(dir, "unprivileged_userfaultfd", "1\n");
	write_file(dir, "unprivileged_userfaultfd_user_mode_only", "0\n");
	printf("allow-unpriv-0 %d\n", call_as("unpriv", 0));
	return 0;
}

/* A filter sending userfaultfd() to a new listener: its fd or -errno. */
static int own_listener(void)
{
	struct sock_filter insn[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insn) / sizeof(insn[0]), .filter = insn };
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	return fd < 0 ? -errno : (int)fd;
}

/* Answer one notification on *arg with "continue". */
static void *continue_one(void *arg)
{
	struct seccomp_notif req = { 0 };
	int fd = *(int *)arg;

	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
		struct seccomp_notif_resp resp = { .id = req.id,
						   .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

/* Wait until process pid is stopped (state T); the case's timeout is
 * the deadline. */
static void wait_stopped(pid_t pid)
{
	char path[64], stat[256] = "";

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	while (!strstr(stat, ") T ") && !strstr(stat, ") t ")) {
		FILE *f = fopen(path, "re");
		if (!f || !fgets(stat, sizeof(stat), f))
			fatal("read %s", path);
		fclose(f);
		usleep(1000);
	}
}

/* Wait until path exists: the test's go-ahead, or what uffdguard makes.
 * Returns whether it appeared before the deadline (generous: the case's
 * timeout comes first on any machine). */
static bool wait_path(const char *path, int seconds)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (access(path, F_OK) < 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > seconds)
			return false;
		usleep(1000);
	}
	return true;
}

/* More knob events than the supervisor's inotify queue holds, while it
 * is stopped, then one change that can only be seen by re-reading.  An
 * open and close for writing raise IN_CLOSE_WRITE without changing the
 * file: cheap, so that the case takes no time even under a sanitizer. */
static int flood(int argc, char **argv)
{
	if (argc < 3)
		fatal("flood DIR");
	const char *dir = argv[2];
	pid_t parent = getppid();
	char max[32], knob[2][4096];

	kill(parent, SIGSTOP);
	wait_stopped(parent);
	read_file("/proc/sys/fs/inotify", "max_queued_events", max, sizeof(max));
	snprintf(knob[0], sizeof(knob[0]), "%s/unprivileged_userfaultfd_user_mode_only", dir);
	snprintf(knob[1], sizeof(knob[1]), "%s/cover_device", dir);
	/* Alternating, so that inotify cannot merge them. */
	for (long i = 0; i < atol(max) + 1000; i++) {
		int fd = open(knob[i % 2], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			fatal("open %s: %s", knob[i % 2], strerror(errno));
		close(fd);
	}
	write_file(dir, "unprivileged_userfaultfd", "0\n");
	kill(parent, SIGCONT);
	printf("flood-unpriv-umo %d\n", call_as("unpriv", UFFD_USER_MODE_ONLY));
	return 0;
}

/* A knob written while the supervisor reads it: the write in progress
 * (truncated, not yet written) is neither taken for a value nor
 * overwritten; its close brings the value. */
static int inprogress(int argc, char **argv)
{
	if (argc < 3)
		fatal("inprogress DIR");
	const char *dir = argv[2];
	pid_t parent = getppid();
	char path[4096], v[32];

	snprintf(path, sizeof(path), "%s/unprivileged_userfaultfd_user_mode_only", dir);
	kill(parent, SIGSTOP);
	wait_stopped(parent);
	write_file(dir, "unprivileged_userfaultfd_user_mode_only", "0\n"); /* an event */
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);                 /* the next writer */
	if (fd < 0)
		fatal("open %s: %s", path, strerror(errno));
	kill(parent, SIGCONT);
	/* The supervisor takes the event before deciding this call. */
	printf("during-unpriv-0 %d\n", call_as("unpriv", 0));
	struct stat st;
	printf("during-size %lld\n", fstat(fd, &st) == 0 ? (long long)st.st_size : -1LL);
	if (write(fd, "1\n", 2) != 2 || close(fd) < 0)
		fatal("write %s: %s", path, strerror(errno));
	printf("after-unpriv-0 %d\n", call_as("unpriv", 0));
	read_file(dir, "unprivileged_userfaultfd_user_mode_only", v, sizeof(v));
	printf("after-file %s\n", v);
	return 0;
}

/* The control directory removed under the supervisor: it makes it again
 * and takes changes there. */
static int recreate(int argc, char **argv)
{
	if (argc < 3)
		fatal("recreate DIR");
	const char *dir = argv[2];
	char path[4096];

	for (size_t i = 0; i < POLICY_N_KNOBS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, policy_knobs[i].name);
		if (unlink(path) < 0)
			fatal("unlink %s: %s", path, strerror(errno));
	}
	if (rmdir(dir) < 0)
		fatal("rmdir %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/unprivileged_userfaultfd", dir);
	bool back = wait_path(path, 60);
	printf("recreated %d\n", back);
	if (!back)
		return 0;
	write_file(dir, "unprivileged_userfaultfd", "0\n");
	printf("deny-unpriv-umo %d\n", call_as("unpriv", UFFD_USER_MODE_ONLY));
	return 0;
}

/* N bad values written to a knob, each followed by a call (which the
 * supervisor decides after taking the write): N warnings for whoever
 * reads uffdguard's standard error, if anyone does. */
static int badvalues(int argc, char **argv)
{
	if (argc < 4)
		fatal("badvalues DIR N");
	long n = atol(argv[3]), refused = 0;
	for (long i = 0; i < n; i++) {
		write_file(argv[2], "cover_device", i % 2 ? "yes\n" : "no\n");
		refused += uffd(UFFD_USER_MODE_ONLY) != 0;
	}
	printf("badvalues %ld calls-refused %ld\n", n, refused);
	return 0;
}

static int orphan(void)
{
	pid_t parent = getppid();

	printf("before %d\n", uffd(UFFD_USER_MODE_ONLY));
	fflush(stdout);
	kill(parent, SIGKILL);
	while (getppid() == parent) /* the case's timeout is the deadline */
		usleep(1000);
	printf("reparented %d\n", getppid() != parent);
	printf("after %d\n", uffd(UFFD_USER_MODE_ONLY));
	printf("after-0 %d\n", uffd(0));
	/* The rest of the tree runs on. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(7);
	int status = 0;
	waitpid(pid, &status, 0);
	int p[2];
	bool io = pipe(p) == 0 && write(p[1], "x", 1) == 1;
	printf("alive %d %d %d\n", getpid() > 0, WIFEXITED(status) ? WEXITSTATUS(status) : -1, io);
	/* The bypass once the supervisor is gone: a listener of our own,
	 * newer than uffdguard's, answering "continue". */
	int listener = own_listener();
	printf("own-listener %d\n", listener < 0 ? -listener : 0);
	pthread_t t;
	if (listener >= 0)
		pthread_create(&t, NULL, continue_one, &listener);
	printf("stacked-0 %d\n", uffd(0));
	if (listener >= 0)
		pthread_join(t, NULL);
	return 0;
}

/* What the tree can take from a supervisor running as its own user. */
static int steal(void)
{
	pid_t parent = getppid();
	int pidfd = (int)syscall(SYS_pidfd_open, parent, 0), stolen = 0, refused = 0;

	if (pidfd < 0)
		fatal("pidfd_open: %s", strerror(errno));
	for (int fd = 0; fd < 64; fd++) {
		long got = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
		if (got < 0) {
			refused += errno == EPERM;
			continue;
		}
		char path[64], target[128] = "";
		snprintf(path, sizeof(path), "/proc/self/fd/%ld", got);
		if (readlink(path, target, sizeof(target) - 1) > 0 && strstr(target, "seccomp"))
			stolen++;
		close((int)got);
	}
	printf("listeners-stolen %d\n", stolen);
	printf("getfd-refused %d\n", refused);
	long r = ptrace(PTRACE_SEIZE, parent, 0, 0);
	printf("ptrace %d\n", r < 0 ? errno : 0);
	if (r == 0)
		ptrace(PTRACE_DETACH, parent, 0, 0);
	return 0;
}

/* Blocked and waited for, not caught: a handler under ThreadSanitizer
 * runs only when its runtime gets to it, and a deadline counted in sleeps
 * measured the machine's speed.  Exits 42 when signo came. */
static int wait_signal(int signo)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, signo);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	/* Only if the signal never comes; the case's timeout is first. */
	struct timespec deadline = { .tv_sec = 300 };
	int sig;
	while ((sig = sigtimedwait(&set, NULL, &deadline)) < 0 && errno == EINTR)
		;
	return sig == signo ? 42 : 1;
}

static int dispatch(int argc, char **argv);

/* N calls as root, alternating no flags and the flag; then, after
 * "then", another command (its arguments follow). */
static int calls(int argc, char **argv)
{
	if (argc < 3)
		fatal("calls N [then COMMAND ...]");
	long n = atol(argv[2]), errors = 0;
	for (long i = 0; i < n; i++)
		errors += uffd(i % 2 ? UFFD_USER_MODE_ONLY : 0) != 0;
	printf("calls %ld refused %ld\n", n, errors);
	if (argc > 4 && !strcmp(argv[3], "then"))
		return dispatch(argc - 3, argv + 3);
	return 0;
}

/* Say "waiting", wait for the file GO (made by the test), then go on
 * with COMMAND; at the end, say whether a SIGHUP reached us. */
static int pause_until(int argc, char **argv)
{
	if (argc < 4)
		fatal("pause GO COMMAND ...");
	sigset_t hup, pending;
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigprocmask(SIG_BLOCK, &hup, NULL);
	printf("waiting\n");
	if (!wait_path(argv[2], 120))
		fatal("%s did not appear", argv[2]);
	int r = dispatch(argc - 2, argv + 2);
	sigpending(&pending);
	printf("hup %d\n", sigismember(&pending, SIGHUP));
	return r;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return dispatch(argc, argv);
}

static int dispatch(int argc, char **argv)
{
	if (argc < 2)
		fatal("usage: run-helper COMMAND ...");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "calls"))
		return calls(argc, argv);
	if (!strcmp(cmd, "pause"))
		return pause_until(argc, argv);
	if (!strcmp(cmd, "inprogress"))
		return inprogress(argc, argv);
	if (!strcmp(cmd, "recreate"))
		return recreate(argc, argv);
	if (!strcmp(cmd, "badvalues"))
		return badvalues(argc, argv);
	if (!strcmp(cmd, "notify")) {
		/* A service that says itself when it is ready. */
		int r = sd_notify(0, "READY=1\nSTATUS=the command is ready");
		printf("notified %d\n", r);
		return r > 0 ? 0 : 1;
	}
	if (!strcmp(cmd, "probe"))
		return probe(argc, argv);
	if (!strcmp(cmd, "bypass"))
		return bypass(argc, argv);
	if (!strcmp(cmd, "one"))
		return one();
	if (!strcmp(cmd, "serve"))
		return serve();
	if (!strcmp(cmd, "threads"))
		return threads(argc, argv);
	if (!strcmp(cmd, "live"))
		return live(argc, argv);
	if (!strcmp(cmd, "flood"))
		return flood(argc, argv);
	if (!strcmp(cmd, "orphan"))
		return orphan();
	if (!strcmp(cmd, "fds")) {
		/* Every descriptor beyond the standard three. */
		int n = 0;
		for (int fd = 3; fd < 1024; fd++) {
			char path[64], target[256] = "";
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			if (readlink(path, target, sizeof(target) - 1) < 0)
				continue;
			printf("fd %d %s\n", fd, target);
			n++;
		}
		printf("fds %d\n", n);
		return 0;
	}
	if (!strcmp(cmd, "sigchld")) {
		struct sigaction sa;
		sigaction(SIGCHLD, NULL, &sa);
		printf("sigchld-ignored %d\n", sa.sa_handler == SIG_IGN);
		return 7;
	}
	if (!strcmp(cmd, "steal"))
		return steal();
	if (!strcmp(cmd, "wait-term"))
		return wait_signal(SIGTERM);
	if (!strcmp(cmd, "wait-signal") && argc > 2)
		return wait_signal(atoi(argv[2]));
	if (!strcmp(cmd, "nnp")) {
		printf("nnp %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
		return 0;
	}
	if (!strcmp(cmd, "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(cmd, "raise") && argc > 2) {
		signal(atoi(argv[2]), SIG_DFL);
		raise(atoi(argv[2]));
		return 1;
	}
	if (!strcmp(cmd, "touch") && argc > 2) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		return fd < 0 ? 1 : 0;
	}
	fatal("unknown command %s", cmd);
}
