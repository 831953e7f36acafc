// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `uffdguard lsm` on the running kernel: the BPF LSM program applied with
 * the command, then every way to create a userfaultfd tried as each kind
 * of caller, each answer compared with policy_decide() and each audit
 * record with the call.  Where the kernel refuses BPF LSM programs, the
 * cases that need one skip and one case checks the refusal.  Run in the
 * kernel matrix (tests/vm) on the kernels that accept them.
 *
 * Every case starts from nothing pinned and removes what it applied; the
 * kernel's own vm.unprivileged_userfaultfd is set to 1 (allow) so that
 * the answers are the program's (the harness restores it).
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cgroup.h"
#include "cli-run.h"
#include "harness.h"
#include "identity.h"
#include "lsm.h"
#include "policy.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif
#define I386_USERFAULTFD 374
#define I386_IOCTL 54
#define I386_GETPID 20

/* ---- the command -------------------------------------------------------- */

/* Whether this kernel loads BPF LSM programs, asked once per case by
 * applying a policy; a refusal skips the case with the command's words. */
static void apply_or_skip(const char *const *args)
{
	struct cli_result r;
	cli_run(WHO_ROOT, args, &r);
	if (r.status == 3) {
		const char *why = strncmp(r.err, "uffdguard lsm: ", 15) ? r.err : r.err + 15;
		SKIP("%.*s", (int)strcspn(why, "\n"), why);
	}
	if (r.status != 0)
		FAIL("uffdguard lsm apply failed (%d): %s", r.status, r.err);
}
#define APPLY(...) apply_or_skip((const char *const[]){ "lsm", "apply", __VA_ARGS__, NULL })

static void apply(const char *const *args)
{
	struct cli_result r;
	cli_run(WHO_ROOT, args, &r);
	if (r.status != 0)
		FAIL("uffdguard lsm apply failed (%d): %s", r.status, r.err);
}
#define REAPPLY(...) apply((const char *const[]){ "lsm", "apply", __VA_ARGS__, NULL })

static void remove_all(void)
{
	struct cli_result r;
	CLI(WHO_ROOT, &r, "lsm", "remove");
	if (r.status != 0)
		FAIL("uffdguard lsm remove failed (%d): %s", r.status, r.err);
}

/* A case starts from nothing pinned, as root, with the kernel's knob at 1. */
static void setup(void)
{
	require_root();
	/* What a failed case of "a failed apply" below may have left. */
	(void)rmdir(LSM_PIN_DIR "/uffd_create_next");
	remove_all();
	sysctl_set(1);
}

static json_object *show(void)
{
	struct cli_result r;
	CLI(WHO_ROOT, &r, "lsm", "show", "--json");
	ASSERT_EQ(r.status, 0);
	return cli_json(&r);
}

/* The scope entry of `show --json` for cgroup ("" : host). */
static json_object *shown_scope(json_object *doc, const char *cgroup)
{
	json_object *scopes = jat(doc, "scopes");
	for (size_t i = 0; i < json_object_array_length(scopes); i++) {
		json_object *s = json_object_array_get_idx(scopes, i);
		json_object *c = json_object_object_get(s, "cgroup");
		if ((!c && !cgroup[0]) || (c && !strcmp(json_object_get_string(c), cgroup)))
			return s;
	}
	FAIL("no scope %s in show --json", cgroup[0] ? cgroup : "host");
}

/* ---- cgroups ------------------------------------------------------------ */

static char cg_mount[PATH_MAX];

static void cg_path(char *buf, size_t size, const char *rel)
{
	if (!cg_mount[0] && cgroup2_mount_point(cg_mount, sizeof(cg_mount)) < 0)
		SKIP("no cgroup v2 hierarchy is mounted");
	snprintf(buf, size, "%s%s", cg_mount, rel);
}

static void cg_make(const char *rel)
{
	char p[PATH_MAX * 2];
	cg_path(p, sizeof(p), rel);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		FAIL("mkdir %s: %s", p, strerror(errno));
}

static void cg_enter(const char *rel, pid_t pid)
{
	char p[PATH_MAX * 2], text[32];
	cg_path(p, sizeof(p), rel);
	strcat(p, strcmp(rel, "/") ? "/cgroup.procs" : "cgroup.procs");
	snprintf(text, sizeof(text), "%d\n", (int)pid);
	write_text(p, text);
}

/* The calling process's cgroup v2 path. */
static void cg_self(char *buf, size_t size)
{
	char text[4096];
	read_text("/proc/self/cgroup", text, sizeof(text));
	char *line = strstr(text, "0::");
	ASSERT_TRUE(line != NULL);
	line += 3;
	line[strcspn(line, "\n")] = '\0';
	snprintf(buf, size, "%s", line);
}

/* Back to where the case started, and the test's cgroups removed. */
static char cg_home[PATH_MAX];

static void cg_leave_and_remove(const char *const *rels)
{
	cg_enter(cg_home[0] ? cg_home : "/", 0);
	for (int i = 0; rels[i]; i++) {
		char p[PATH_MAX * 2];
		cg_path(p, sizeof(p), rels[i]);
		/* The deepest first: the caller lists them that way. */
		if (rmdir(p) < 0 && errno != ENOENT)
			FAIL("rmdir %s: %s", p, strerror(errno));
	}
}

static void cg_test_name(char *buf, size_t size, const char *suffix)
{
	snprintf(buf, size, "/uffdguard-test-%d%s", (int)getpid(), suffix);
}

/* ---- callers and calls -------------------------------------------------- */

enum caller {
	CALLER_ROOT,          /* CAP_SYS_PTRACE in the initial namespace: privileged */
	CALLER_UNPRIV,        /* an unused uid without capabilities */
	CALLER_UNPRIV_PTRACE, /* the same uid keeping only CAP_SYS_PTRACE: privileged */
	CALLER_ROOT_USERNS,   /* root in a new user namespace: not privileged */
	N_CALLERS
};
static const char *const caller_names[] = { "root", "unprivileged",
					    "unprivileged+CAP_SYS_PTRACE", "root in a user namespace" };

static bool caller_privileged(enum caller c)
{
	return c == CALLER_ROOT || c == CALLER_UNPRIV_PTRACE;
}

enum how {
	HOW_SYSCALL,       /* syscall(), x86-64 */
	HOW_INT80,         /* int $0x80 from this 64-bit process */
	HOW_THREAD,        /* syscall() from a second thread */
	HOW_IOCTL,         /* USERFAULTFD_IOC_NEW, x86-64 */
	HOW_IOCTL_CMD_HIGH,/* the same, garbage in the upper half of the command */
	HOW_INT80_IOCTL,   /* USERFAULTFD_IOC_NEW through int $0x80: compat ioctl */
	HOW_32_SYSCALL,    /* a 32-bit process */
	HOW_32_IOCTL,
	HOW_X32_SYSCALL,   /* an x32 process (where the kernel runs them) */
	HOW_X32_IOCTL,
	N_HOWS
};
static const char *const how_names[] = { "syscall", "int $0x80", "second thread", "ioctl",
					 "ioctl, command with upper bits", "int $0x80 ioctl",
					 "32-bit syscall", "32-bit ioctl", "x32 syscall", "x32 ioctl" };
/* The entry the audit record must name. */
static const char *const how_entries[] = { "syscall",      "i386 syscall", "syscall",
					   "ioctl",        "ioctl",        "compat ioctl",
					   "i386 syscall", "compat ioctl", "x32 syscall",
					   "x32 ioctl" };

static bool how_device(enum how h)
{
	return h == HOW_IOCTL || h == HOW_IOCTL_CMD_HIGH || h == HOW_INT80_IOCTL ||
	       h == HOW_32_IOCTL || h == HOW_X32_IOCTL;
}

struct call_spec {
	enum how how;
	uint64_t flags;
};

/* The calls every caller makes: with and without the flag, the other
 * known flags, garbage in the upper 32 bits, an unknown bit. */
static const struct call_spec calls[] = {
	{ HOW_SYSCALL, 0 },
	{ HOW_SYSCALL, UFFD_USER_MODE_ONLY },
	{ HOW_SYSCALL, O_CLOEXEC | O_NONBLOCK },
	{ HOW_SYSCALL, O_CLOEXEC | UFFD_USER_MODE_ONLY },
	{ HOW_SYSCALL, 0xdeadbeef00000000ull },
	{ HOW_SYSCALL, 0xdeadbeef00000000ull | UFFD_USER_MODE_ONLY },
	{ HOW_SYSCALL, 2 }, /* unknown: the kernel says EINVAL before the hook */
	{ HOW_INT80, 0 },
	{ HOW_INT80, UFFD_USER_MODE_ONLY },
	{ HOW_INT80, 0xdeadbeef00000000ull },
	{ HOW_INT80, 0xdeadbeef00000000ull | UFFD_USER_MODE_ONLY },
	{ HOW_THREAD, 0 },
	{ HOW_THREAD, UFFD_USER_MODE_ONLY },
	{ HOW_IOCTL, 0 },
	{ HOW_IOCTL, UFFD_USER_MODE_ONLY },
	{ HOW_IOCTL, O_CLOEXEC },
	{ HOW_IOCTL, 0xdeadbeef00000000ull | UFFD_USER_MODE_ONLY },
	{ HOW_IOCTL_CMD_HIGH, UFFD_USER_MODE_ONLY },
	{ HOW_IOCTL_CMD_HIGH, 0 },
	{ HOW_INT80_IOCTL, 0 },
	{ HOW_INT80_IOCTL, UFFD_USER_MODE_ONLY },
	{ HOW_32_SYSCALL, 0 },
	{ HOW_32_SYSCALL, UFFD_USER_MODE_ONLY },
	{ HOW_32_SYSCALL, O_CLOEXEC },
	{ HOW_32_IOCTL, 0 },
	{ HOW_32_IOCTL, UFFD_USER_MODE_ONLY },
	{ HOW_X32_SYSCALL, 0 },
	{ HOW_X32_SYSCALL, UFFD_USER_MODE_ONLY },
	{ HOW_X32_IOCTL, 0 },
	{ HOW_X32_IOCTL, UFFD_USER_MODE_ONLY },
};
#define N_CALLS (sizeof(calls) / sizeof(calls[0]))

/* What the kernel with the program answers: its own flag check comes
 * first (new_userfaultfd() refuses unknown bits before it creates the
 * inode the hook sees), then policy_decide().  So unknown bits are
 * EINVAL where the 2020 series says EPERM first: stricter, not weaker. */
static int expected_errno(const struct policy *p, bool privileged, const struct call_spec *c)
{
	if ((uint32_t)c->flags & ~POLICY_KNOWN_FLAGS)
		return EINVAL;
	struct call call = { .path = how_device(c->how) ? CALL_DEVICE_IOCTL : CALL_SYSCALL,
			     .flags = c->flags };
	switch (policy_decide(p, privileged, &call)) {
	case VERDICT_EPERM:
		return EPERM;
	case VERDICT_EINVAL:
		return EINVAL;
	default:
		return 0;
	}
}

static bool reaches_hook(const struct call_spec *c)
{
	return ((uint32_t)c->flags & ~POLICY_KNOWN_FLAGS) == 0;
}

/* What each call did, written by the caller's process. */
struct outcome {
	int err;      /* 0: a descriptor was created */
	int pid, tid; /* who made it */
	bool skipped; /* the ABI is not offered here */
};

static long int80(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static int result_of(long r)
{
	if (r >= 0) {
		close((int)r);
		return 0;
	}
	return (int)-r;
}

static long raw_syscall(long nr, long a, long b, long c)
{
	long r = syscall(nr, a, b, c);
	return r < 0 ? -errno : r;
}

/* Whether int $0x80 works here: some kernels are built or booted without
 * the i386 ABI, and some hypervisors kill a process that uses it.  Asked
 * in a child. */
static const char *int80_missing(void)
{
	static int known = -1;
	if (known < 0) {
		pid_t pid = ASSERT_SYS(fork());
		if (pid == 0)
			_exit(int80(I386_GETPID, 0, 0, 0) == getpid() ? 0 : 1);
		int status;
		ASSERT_SYS(waitpid(pid, &status, 0));
		known = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	return known ? NULL : "int $0x80 is not available here (no IA32 emulation, or the "
			      "hypervisor stops it)";
}

/* The programs of the other ABIs, built from lsm-helper32.c next to this
 * one where the build had their C library. */
enum abi { ABI_I386, ABI_X32 };
static char helpers[2][PATH_MAX + 16];

static int run_helper(enum abi abi, const char *mode, const char *device, uint64_t flags,
		      int *pid_out);

static const char *helper_missing(enum abi abi)
{
	static int x32_runs = -1;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ASSERT_TRUE(n > 0);
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(helpers[abi], sizeof(helpers[abi]), "%s/%s", self,
		 abi == ABI_I386 ? "lsm-helper32" : "lsm-helperx32");
	if (access(helpers[abi], X_OK) < 0)
		return abi == ABI_I386
			       ? "no 32-bit test program: the build had no i386 C library (gcc-multilib)"
			       : "no x32 test program: the build had no x32 C library (gcc-multilib)";
	if (abi == ABI_I386)
		return int80_missing();
	/* Debian's kernels have the x32 ABI but boot with it off
	 * (syscall.x32=y turns it on): exec then fails, and so would its
	 * system calls.  Asked once: created or refused by the policy is
	 * an answer, anything else is not. */
	if (x32_runs < 0) {
		int pid, r = run_helper(ABI_X32, "syscall", NULL, UFFD_USER_MODE_ONLY, &pid);
		x32_runs = r == 0 || r == EPERM;
	}
	return x32_runs ? NULL : "the kernel runs no x32 system calls (boot it with syscall.x32=y)";
}

struct thread_arg {
	uint64_t flags;
	int err, tid;
};

static void *thread_call(void *p)
{
	struct thread_arg *a = p;
	a->tid = (int)gettid();
	a->err = result_of(raw_syscall(SYS_userfaultfd, (long)a->flags, 0, 0));
	return NULL;
}

static int run_helper(enum abi abi, const char *mode, const char *device, uint64_t flags,
		      int *pid_out)
{
	char hex[24];
	snprintf(hex, sizeof(hex), "%x", (unsigned)flags);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* A capability of a caller without uid 0 survives exec only as
		 * an ambient one (CAP_SYS_PTRACE for CALLER_UNPRIV_PTRACE). */
		cap_t caps = cap_get_proc();
		cap_value_t ptrace = CAP_SYS_PTRACE;
		cap_flag_value_t eff = CAP_CLEAR;
		if (caps && cap_get_flag(caps, ptrace, CAP_EFFECTIVE, &eff) == 0 && eff == CAP_SET &&
		    (cap_set_flag(caps, CAP_INHERITABLE, 1, &ptrace, CAP_SET) < 0 ||
		     cap_set_proc(caps) < 0 ||
		     prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_PTRACE, 0, 0) < 0))
			_exit(124);
		if (device)
			execl(helpers[abi], helpers[abi], mode, device, hex, (char *)NULL);
		else
			execl(helpers[abi], helpers[abi], mode, hex, (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	*pid_out = pid;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void make_call(const struct call_spec *c, const char *device, struct outcome *o)
{
	o->pid = getpid();
	o->tid = (int)gettid();
	switch (c->how) {
	case HOW_SYSCALL:
		o->err = result_of(raw_syscall(SYS_userfaultfd, (long)c->flags, 0, 0));
		break;
	case HOW_INT80:
		if (int80_missing()) {
			o->skipped = true;
			break;
		}
		o->err = result_of(int80(I386_USERFAULTFD, (long)c->flags, 0, 0));
		break;
	case HOW_THREAD: {
		struct thread_arg a = { .flags = c->flags };
		pthread_t t;
		if (pthread_create(&t, NULL, thread_call, &a) != 0 || pthread_join(t, NULL) != 0) {
			o->err = -1;
			break;
		}
		o->err = a.err;
		o->tid = a.tid;
		break;
	}
	case HOW_IOCTL:
	case HOW_IOCTL_CMD_HIGH:
	case HOW_INT80_IOCTL: {
		if (c->how == HOW_INT80_IOCTL && int80_missing()) {
			o->skipped = true;
			break;
		}
		int fd = open(device, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			o->err = -errno; /* negative: not an answer of the hook */
			break;
		}
		uint64_t cmd = USERFAULTFD_IOC_NEW;
		if (c->how == HOW_IOCTL_CMD_HIGH)
			cmd |= 0xfeedface00000000ull;
		o->err = result_of(c->how == HOW_INT80_IOCTL
					   ? int80(I386_IOCTL, fd, USERFAULTFD_IOC_NEW, (long)c->flags)
					   : raw_syscall(SYS_ioctl, fd, (long)cmd, (long)c->flags));
		close(fd);
		break;
	}
	case HOW_32_SYSCALL:
	case HOW_32_IOCTL:
	case HOW_X32_SYSCALL:
	case HOW_X32_IOCTL: {
		enum abi abi = c->how == HOW_32_SYSCALL || c->how == HOW_32_IOCTL ? ABI_I386 : ABI_X32;
		bool ioctl_call = c->how == HOW_32_IOCTL || c->how == HOW_X32_IOCTL;
		if (helper_missing(abi)) {
			o->skipped = true;
			break;
		}
		o->err = run_helper(abi, ioctl_call ? "ioctl" : "syscall", ioctl_call ? device : NULL,
				    c->flags, &o->pid);
		if (o->err == 125) /* it could not open the device: no answer */
			o->err = -ENOENT;
		o->tid = o->pid;
		break;
	}
	default:
		o->err = -1;
	}
}

/* Run fn(arg) in a child process as caller and wait for it.  The child
 * writes its results to shared memory; it exits 0 if it could become
 * that caller. */
static void as_caller(enum caller who, void (*fn)(void *), void *arg)
{
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		int r = 0;
		if (who == CALLER_UNPRIV || who == CALLER_UNPRIV_PTRACE)
			r = identity_drop(identity_unused_id(), who == CALLER_UNPRIV_PTRACE);
		else if (who == CALLER_ROOT_USERNS)
			r = unshare(CLONE_NEWUSER) < 0 ? -errno : 0;
		if (r < 0)
			_exit(100);
		fn(arg);
		_exit(0);
	}
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		FAIL("the child running as %s failed (status 0x%x)", caller_names[who], status);
}

struct batch {
	const char *device;
	struct outcome out[N_CALLS];
};

static void run_batch(void *p)
{
	struct batch *b = p;
	for (size_t i = 0; i < N_CALLS; i++)
		make_call(&calls[i], b->device, &b->out[i]);
}

static void *shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(p != MAP_FAILED);
	return p;
}

/* ---- audit records ------------------------------------------------------ */

struct audit_reader {
	pid_t pid;
	int fd;
	char buf[65536];
	size_t used;
};

static void audit_start(struct audit_reader *a)
{
	int p[2];
	ASSERT_SYS(pipe2(p, O_CLOEXEC));
	a->pid = ASSERT_SYS(fork());
	if (a->pid == 0) {
		dup2(p[1], 1);
		execl(cli_path(), cli_path(), "lsm", "audit", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	a->fd = p[0];
	a->used = 0;
}

/* The next record, or NULL after deadline_ms (the reader stays).  Lines
 * are taken from our own buffer first: poll() knows only the pipe. */
static json_object *audit_next(struct audit_reader *a, double deadline_ms)
{
	for (;;) {
		char *nl = memchr(a->buf, '\n', a->used);
		if (nl) {
			*nl = '\0';
			json_object *o = json_tokener_parse(a->buf);
			if (!o)
				FAIL("not a JSON line from uffdguard lsm audit: %s", a->buf);
			size_t len = (size_t)(nl - a->buf) + 1;
			memmove(a->buf, nl + 1, a->used - len);
			a->used -= len;
			return o;
		}
		ASSERT_TRUE(a->used < sizeof(a->buf));
		double left = deadline_ms - now_ms();
		if (left <= 0)
			return NULL;
		struct pollfd pfd = { .fd = a->fd, .events = POLLIN };
		if (poll(&pfd, 1, (int)left + 1) <= 0)
			continue;
		ssize_t n = read(a->fd, a->buf + a->used, sizeof(a->buf) - a->used);
		if (n <= 0)
			FAIL("uffdguard lsm audit ended early");
		a->used += (size_t)n;
	}
}

static void audit_stop(struct audit_reader *a)
{
	kill(a->pid, SIGTERM);
	int status;
	ASSERT_SYS(waitpid(a->pid, &status, 0));
	close(a->fd);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static const char *jget(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);
	return v ? json_object_get_string(v) : "null";
}

/* A record expected for a call that reached the hook. */
struct expect {
	int pid, tid;
	uint32_t flags;
	const char *entry, *verdict, *cgroup, *scope;
	bool privileged, seen;
};

/* Read records until every expected one has been seen, in the order each
 * thread made its calls; a record of ours that no call explains fails. */
static void audit_check(struct expect *ex, size_t n)
{
	static struct audit_reader a;
	size_t seen = 0;
	double deadline = now_ms() + 60000;

	audit_start(&a);
	while (seen < n) {
		json_object *o = audit_next(&a, deadline);
		if (!o) {
			for (size_t i = 0; i < n; i++)
				if (!ex[i].seen)
					FAIL("no audit record for the %s call by tid %d with flags 0x%x "
					     "(%zu of %zu seen)", ex[i].entry, ex[i].tid, ex[i].flags,
					     seen, n);
		}
		if (json_object_object_get(o, "dropped"))
			FAIL("audit records were dropped: %s", json_object_to_json_string(o));
		int tid = (int)json_object_get_int(json_object_object_get(o, "tid"));
		size_t i;
		for (i = 0; i < n && (ex[i].seen || ex[i].tid != tid); i++)
			;
		if (i == n) {
			bool ours = false;
			for (size_t k = 0; k < n; k++)
				ours |= ex[k].pid == (int)json_object_get_int(json_object_object_get(o, "pid"));
			if (ours)
				FAIL("an audit record no call explains: %s", json_object_to_json_string(o));
			json_object_put(o);
			continue;
		}
		struct expect *e = &ex[i];
		uint64_t flags = strtoull(jget(o, "flags"), NULL, 16);
		if ((uint32_t)flags != e->flags || strcmp(jget(o, "entry"), e->entry) ||
		    strcmp(jget(o, "verdict"), e->verdict) || strcmp(jget(o, "cgroup"), e->cgroup) ||
		    strcmp(jget(o, "scope"), e->scope) ||
		    json_object_get_boolean(json_object_object_get(o, "privileged")) != e->privileged ||
		    (int)json_object_get_int(json_object_object_get(o, "pid")) != e->pid)
			FAIL("audit record %s, want pid %d entry \"%s\" flags 0x%x verdict \"%s\" "
			     "privileged %d cgroup \"%s\" scope \"%s\"",
			     json_object_to_json_string(o), e->pid, e->entry, e->flags, e->verdict,
			     e->privileged, e->cgroup, e->scope);
		e->seen = true;
		seen++;
		json_object_put(o);
	}
	audit_stop(&a);
}

/* ---- the matrix of callers x calls -------------------------------------- */

/* Every caller makes every call under policy p in force for the scope
 * (host default, or the cgroup the case runs in); every answer must be
 * policy_decide()'s and every audit record must name the call. */
static void check_matrix(const char *preset, const char *const *sets, const char *scope)
{
	struct policy p;
	char err[256], dev[PATH_MAX], cgroup[PATH_MAX];
	size_t nsets = 0;

	while (sets[nsets])
		nsets++;
	ASSERT_OK(policy_build(preset, sets, nsets, &p, err, sizeof(err)));
	make_private_device(dev, 0, 0, 0666);
	cg_self(cgroup, sizeof(cgroup));
	struct batch *b = shared(sizeof(*b) * N_CALLERS);
	struct expect *ex = calloc(N_CALLERS * N_CALLS, sizeof(*ex));
	size_t n = 0, skipped = 0;

	for (int who = 0; who < N_CALLERS; who++) {
		b[who].device = dev;
		as_caller((enum caller)who, run_batch, &b[who]);
		bool priv = caller_privileged((enum caller)who);
		for (size_t i = 0; i < N_CALLS; i++) {
			const struct outcome *o = &b[who].out[i];
			if (o->skipped) {
				skipped++;
				continue;
			}
			int want = expected_errno(&p, priv, &calls[i]);
			if (o->err != want)
				FAIL("%s, %s with flags 0x%" PRIx64 " under %s (%s): %s, want %s",
				     caller_names[who], how_names[calls[i].how], calls[i].flags,
				     preset, scope[0] ? scope : "host default",
				     o->err ? strerror(o->err < 0 ? -o->err : o->err) : "created",
				     want ? strerror(want) : "created");
			if (!reaches_hook(&calls[i]))
				continue;
			ex[n++] = (struct expect){
				.pid = o->pid, .tid = o->tid, .flags = (uint32_t)calls[i].flags,
				.entry = how_entries[calls[i].how],
				.verdict = want == EPERM ? "eperm" : want == EINVAL ? "einval" : "allow",
				.cgroup = cgroup, .scope = scope[0] ? scope : "host",
				.privileged = priv,
			};
		}
	}
	audit_check(ex, n);
	if (skipped)
		printf("# %zu calls not made: %s; %s; %s\n", skipped,
		       int80_missing() ? int80_missing() : "int $0x80 works",
		       helper_missing(ABI_I386) ? helper_missing(ABI_I386) : "i386 programs run",
		       helper_missing(ABI_X32) ? helper_missing(ABI_X32) : "x32 programs run");
	remove_private_device(dev);
	free(ex);
}

static const char *const no_sets[] = { NULL };

TEST_TIMEOUT(host_default_user_mode_only_decides_every_call_as_policy_decide, 300)
{
	setup();
	APPLY("--host", "--policy", "user-mode-only");
	check_matrix("user-mode-only", no_sets, "");
	remove_all();
}

TEST_TIMEOUT(host_default_deny_decides_every_call_as_policy_decide, 300)
{
	setup();
	APPLY("--host", "--policy", "deny");
	check_matrix("deny", no_sets, "");
	remove_all();
}

TEST_TIMEOUT(host_default_deny_leaves_the_device_alone_without_cover_device, 300)
{
	static const char *const sets[] = { "cover_device=0", NULL };
	setup();
	APPLY("--host", "--policy", "deny", "--set", "cover_device=0");
	check_matrix("deny", sets, "");
	remove_all();
}

static void cgroup_matrix(const char *preset, const char *host_preset)
{
	char cg[128];

	setup();
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(cg, sizeof(cg), "");
	cg_make(cg);
	/* The host default says otherwise: the entry must win. */
	APPLY("--host", "--policy", host_preset);
	REAPPLY("--cgroup", cg, "--policy", preset);
	cg_enter(cg, 0);
	check_matrix(preset, no_sets, cg);
	cg_leave_and_remove((const char *const[]){ cg, NULL });
	remove_all();
}

TEST_TIMEOUT(cgroup_entry_user_mode_only_decides_every_call_as_policy_decide, 300)
{
	cgroup_matrix("user-mode-only", "allow");
}

TEST_TIMEOUT(cgroup_entry_deny_decides_every_call_as_policy_decide, 300)
{
	cgroup_matrix("deny", "user-mode-only");
}

/* ---- scopes ------------------------------------------------------------- */

/* A process that stays in its cgroup and makes one call per request. */
struct caller_proc {
	pid_t pid;
	int req, resp;
};

static void caller_start(struct caller_proc *c, enum caller who, const char *cgroup)
{
	int a[2], b[2];
	ASSERT_SYS(pipe2(a, O_CLOEXEC));
	ASSERT_SYS(pipe2(b, O_CLOEXEC));
	c->pid = ASSERT_SYS(fork());
	if (c->pid == 0) {
		/* Only its own ends: another caller's request pipe held open
		 * here would never give that caller its end of file. */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != a[0] && fd != b[1])
				close(fd);
		if (cgroup)
			cg_enter(cgroup, 0);
		if (who != CALLER_ROOT && identity_drop(identity_unused_id(), false) < 0)
			_exit(100);
		uint64_t flags;
		while (read(a[0], &flags, sizeof(flags)) == sizeof(flags)) {
			int err = result_of(raw_syscall(SYS_userfaultfd, (long)flags, 0, 0));
			if (write(b[1], &err, sizeof(err)) != sizeof(err))
				_exit(101);
		}
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	c->req = a[1];
	c->resp = b[0];
}

static int caller_call(struct caller_proc *c, uint64_t flags)
{
	int err;
	ASSERT_EQ(write(c->req, &flags, sizeof(flags)), sizeof(flags));
	ASSERT_EQ(read(c->resp, &err, sizeof(err)), sizeof(err));
	return err;
}

static void caller_stop(struct caller_proc *c)
{
	close(c->req);
	close(c->resp);
	int status;
	ASSERT_SYS(waitpid(c->pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_TIMEOUT(a_cgroup_entry_changes_at_the_next_call, 300)
{
	char cg[128];
	struct caller_proc c;

	setup();
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(cg, sizeof(cg), "");
	cg_make(cg);
	APPLY("--cgroup", cg, "--policy", "deny");
	caller_start(&c, CALLER_UNPRIV, cg);
	for (int round = 0; round < 3; round++) {
		ASSERT_EQ(caller_call(&c, UFFD_USER_MODE_ONLY), EPERM);
		REAPPLY("--cgroup", cg, "--policy", "user-mode-only");
		ASSERT_EQ(caller_call(&c, UFFD_USER_MODE_ONLY), 0);
		ASSERT_EQ(caller_call(&c, 0), EPERM);
		REAPPLY("--cgroup", cg, "--policy", "allow");
		ASSERT_EQ(caller_call(&c, 0), 0);
		REAPPLY("--cgroup", cg, "--policy", "deny");
	}
	/* Removing the entry leaves the caller to the host default (none). */
	struct cli_result r;
	CLI(WHO_ROOT, &r, "lsm", "remove", "--cgroup", cg);
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(caller_call(&c, 0), 0);
	caller_stop(&c);
	cg_leave_and_remove((const char *const[]){ cg, NULL });
	remove_all();
}

TEST_TIMEOUT(a_child_cgroup_inherits_and_the_deepest_entry_wins, 300)
{
	char cg[128], child[160], grandchild[200];
	struct caller_proc in_child, in_grandchild, in_parent;

	setup();
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(cg, sizeof(cg), "");
	cg_test_name(child, sizeof(child), "/child");
	cg_test_name(grandchild, sizeof(grandchild), "/child/grandchild");
	cg_make(cg);
	cg_make(child);
	cg_make(grandchild);
	APPLY("--host", "--policy", "allow");
	REAPPLY("--cgroup", cg, "--policy", "deny");
	caller_start(&in_parent, CALLER_UNPRIV, cg);
	caller_start(&in_child, CALLER_UNPRIV, child);
	caller_start(&in_grandchild, CALLER_UNPRIV, grandchild);
	ASSERT_EQ(caller_call(&in_parent, UFFD_USER_MODE_ONLY), EPERM);
	ASSERT_EQ(caller_call(&in_child, UFFD_USER_MODE_ONLY), EPERM);
	ASSERT_EQ(caller_call(&in_grandchild, UFFD_USER_MODE_ONLY), EPERM);
	REAPPLY("--cgroup", child, "--policy", "user-mode-only");
	ASSERT_EQ(caller_call(&in_parent, UFFD_USER_MODE_ONLY), EPERM);
	ASSERT_EQ(caller_call(&in_child, UFFD_USER_MODE_ONLY), 0);
	ASSERT_EQ(caller_call(&in_child, 0), EPERM);
	ASSERT_EQ(caller_call(&in_grandchild, UFFD_USER_MODE_ONLY), 0);
	ASSERT_EQ(caller_call(&in_grandchild, 0), EPERM);
	/* The process outside every entry: the host default. */
	struct caller_proc outside;
	caller_start(&outside, CALLER_UNPRIV, NULL);
	ASSERT_EQ(caller_call(&outside, 0), 0);
	caller_stop(&outside);
	caller_stop(&in_parent);
	caller_stop(&in_child);
	caller_stop(&in_grandchild);
	cg_leave_and_remove((const char *const[]){ grandchild, child, cg, NULL });
	remove_all();
}

TEST_TIMEOUT(an_entry_holds_for_a_cgroup_created_later_and_created_again, 300)
{
	char cg[128];
	struct caller_proc c;

	setup();
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(cg, sizeof(cg), "");
	/* Like user-1000.slice at boot: the entry comes before the cgroup. */
	APPLY("--cgroup", cg, "--policy", "deny");
	json_object *doc = show();
	ASSERT_TRUE(json_object_object_get(shown_scope(doc, cg), "cgroup_id") == NULL);
	for (int round = 0; round < 2; round++) {
		cg_make(cg);
		caller_start(&c, CALLER_UNPRIV, cg);
		ASSERT_EQ(caller_call(&c, UFFD_USER_MODE_ONLY), EPERM);
		caller_stop(&c);
		doc = show();
		ASSERT_GT(jint(shown_scope(doc, cg), "cgroup_id"), 0);
		cg_leave_and_remove((const char *const[]){ cg, NULL });
	}
	/* The same path's cgroup gone, the entry stays and holds no id. */
	doc = show();
	ASSERT_TRUE(json_object_object_get(shown_scope(doc, cg), "cgroup_id") == NULL);

	/* The longest path an entry may have: the program reads the new
	 * cgroup's path whole. */
	char longest[LSM_PATH_MAX];
	cg_test_name(longest, sizeof(longest), "-");
	size_t len = strlen(longest);
	memset(longest + len, 'x', LSM_PATH_MAX - 2 - len);
	longest[LSM_PATH_MAX - 2] = '\0';
	REAPPLY("--cgroup", longest, "--policy", "deny");
	cg_make(longest);
	caller_start(&c, CALLER_UNPRIV, longest);
	ASSERT_EQ(caller_call(&c, UFFD_USER_MODE_ONLY), EPERM);
	caller_stop(&c);
	cg_leave_and_remove((const char *const[]){ longest, NULL });
	remove_all();
}

/* ---- the configuration file ------------------------------------------ */

static void write_config(const char *dir, const char *text, char *path, size_t size)
{
	snprintf(path, size, "%s/lsm.conf", dir);
	write_text(path, text);
}

TEST_TIMEOUT(a_configuration_file_makes_the_scopes_exactly_its_own, 300)
{
	char dir[] = "/tmp/uffdguard-lsm.XXXXXX", path[PATH_MAX], text[1024];
	char a[128], b[128];
	struct caller_proc in_a, in_b;
	struct cli_result r;

	setup();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(a, sizeof(a), "-a");
	cg_test_name(b, sizeof(b), "-b");
	cg_make(a);
	cg_make(b);
	snprintf(text, sizeof(text), "host user-mode-only\n%s deny\n%s allow cover_device=0\n", a, b);
	write_config(dir, text, path, sizeof(path));
	APPLY("--config", path);
	json_object *doc = show();
	ASSERT_EQ(json_object_array_length(jat(doc, "scopes")), 3);
	ASSERT_STREQ(jstr(shown_scope(doc, ""), "policy.name"), "user-mode-only");
	ASSERT_STREQ(jstr(shown_scope(doc, a), "policy.name"), "deny");
	ASSERT_EQ(jint(shown_scope(doc, b), "policy.cover_device"), 0);
	caller_start(&in_a, CALLER_UNPRIV, a);
	caller_start(&in_b, CALLER_UNPRIV, b);
	ASSERT_EQ(caller_call(&in_a, UFFD_USER_MODE_ONLY), EPERM);
	ASSERT_EQ(caller_call(&in_b, 0), 0);

	/* Another file: the entry for b goes, a changes, the host stays. */
	snprintf(text, sizeof(text), "# fewer\nhost user-mode-only\n%s user-mode-only\n", a);
	write_config(dir, text, path, sizeof(path));
	REAPPLY("--config", path);
	doc = show();
	ASSERT_EQ(json_object_array_length(jat(doc, "scopes")), 2);
	ASSERT_EQ(caller_call(&in_a, UFFD_USER_MODE_ONLY), 0);
	ASSERT_EQ(caller_call(&in_a, 0), EPERM);
	ASSERT_EQ(caller_call(&in_b, 0), EPERM); /* now the host default's */

	/* A mistake anywhere in the file changes nothing. */
	doc = show();
	snprintf(text, sizeof(text), "host deny\n%s allow\n%s/x frobnicate\n", a, b);
	write_config(dir, text, path, sizeof(path));
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", path);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "lsm.conf:3: unknown policy 'frobnicate'");
	snprintf(text, sizeof(text), "host deny\n%s allow\n/cgroup.procs/x allow\n", a);
	write_config(dir, text, path, sizeof(path));
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", path);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "cgroup /cgroup.procs/x: Not a directory");
	json_object *after = show();
	ASSERT_STREQ(json_object_to_json_string(jat(after, "scopes")),
		     json_object_to_json_string(jat(doc, "scopes")));
	ASSERT_EQ(caller_call(&in_a, 0), EPERM);

	/* An empty file: no scope, the program stays loaded. */
	write_config(dir, "# nothing\n", path, sizeof(path));
	REAPPLY("--config", path);
	doc = show();
	ASSERT_EQ(json_object_array_length(jat(doc, "scopes")), 0);
	ASSERT_TRUE(jbool(doc, "enforcing"));
	ASSERT_EQ(caller_call(&in_a, 0), 0);

	caller_stop(&in_a);
	caller_stop(&in_b);
	cg_leave_and_remove((const char *const[]){ a, b, NULL });
	remove_tree(dir);
	remove_all();
}

/* ---- many threads ------------------------------------------------------- */

#define N_THREADS 16
#define N_PER_THREAD 2000

struct stress {
	atomic_int mismatches;
	atomic_int allowed, refused;
};

static void *stress_thread(void *p)
{
	struct stress *s = p;
	for (int i = 0; i < N_PER_THREAD; i++) {
		uint64_t flags = (i & 1) ? UFFD_USER_MODE_ONLY : 0;
		int err = result_of(raw_syscall(SYS_userfaultfd, (long)flags, 0, 0));
		int want = flags ? 0 : EPERM;
		if (err != want)
			atomic_fetch_add(&s->mismatches, 1);
		atomic_fetch_add(err ? &s->refused : &s->allowed, 1);
	}
	return NULL;
}

static void stress_run(void *p)
{
	pthread_t t[N_THREADS];
	for (int i = 0; i < N_THREADS; i++)
		if (pthread_create(&t[i], NULL, stress_thread, p) != 0)
			_exit(102);
	for (int i = 0; i < N_THREADS; i++)
		pthread_join(t[i], NULL);
}

TEST_TIMEOUT(sixteen_threads_alternating_flags_see_no_mismatch_and_every_decision_is_counted,
	     600)
{
	setup();
	APPLY("--host", "--policy", "user-mode-only");
	struct stress *s = shared(sizeof(*s));
	as_caller(CALLER_UNPRIV, stress_run, s);
	ASSERT_EQ(atomic_load(&s->mismatches), 0);
	ASSERT_EQ(atomic_load(&s->allowed), N_THREADS * N_PER_THREAD / 2);
	ASSERT_EQ(atomic_load(&s->refused), N_THREADS * N_PER_THREAD / 2);

	/* The per-CPU counts add up to every call. */
	json_object *doc = show();
	json_object *host = shown_scope(doc, "");
	ASSERT_EQ(jint(host, "decisions.allow"), N_THREADS * N_PER_THREAD / 2);
	ASSERT_EQ(jint(host, "decisions.eperm"), N_THREADS * N_PER_THREAD / 2);
	ASSERT_EQ(jint(host, "decisions.by_reason.flag_set"), N_THREADS * N_PER_THREAD / 2);
	ASSERT_EQ(jint(host, "decisions.by_reason.flag_required"), N_THREADS * N_PER_THREAD / 2);

	/* More records than the ring buffer holds: what it could not keep is
	 * counted, and the reader reports it; kept + dropped = every call. */
	long long dropped = jint(doc, "audit_records_dropped");
	ASSERT_GT(dropped, 0);
	static struct audit_reader a;
	long long records = 0, reported = 0;
	audit_start(&a);
	for (json_object *o; records + reported < N_THREADS * N_PER_THREAD &&
			     (o = audit_next(&a, now_ms() + 20000)) != NULL;) {
		if (json_object_object_get(o, "dropped"))
			reported += json_object_get_int64(json_object_object_get(o, "dropped"));
		else
			records++;
		json_object_put(o);
	}
	audit_stop(&a);
	ASSERT_EQ(reported, dropped);
	ASSERT_EQ(records + reported, N_THREADS * N_PER_THREAD);
	remove_all();
}

/* ---- the fork event ----------------------------------------------------- */

/* UFFD_EVENT_FORK creates a context through the same hook, with the
 * parent's inode as the context inode: told apart and allowed.  And the
 * opposite, which once failed open on 6.12 when the verifier pruned the
 * NULL test: a new descriptor must never be taken for a fork event. */
struct forker {
	int status;
};

/* The fork that sends the event waits until the monitor has read it, so
 * it runs in another thread. */
static void *fork_thread(void *p)
{
	struct forker *f = p;
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	if (child < 0 || waitpid(child, &f->status, 0) < 0)
		f->status = -1;
	return NULL;
}

TEST_TIMEOUT(a_fork_event_is_told_apart_from_a_new_descriptor, 300)
{
	char cgroup[PATH_MAX];

	setup();
	APPLY("--host", "--policy", "deny");
	cg_self(cgroup, sizeof(cgroup));

	/* The regression first: under deny, every new descriptor of an
	 * unprivileged caller is refused and recorded with its entry point,
	 * never as a fork event. */
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent"; /* the ioctls fail to open it: not made */
	as_caller(CALLER_UNPRIV, run_batch, b);
	struct expect ex[N_CALLS + 2];
	size_t n = 0;
	for (size_t i = 0; i < N_CALLS; i++) {
		const struct outcome *o = &b->out[i];
		if (o->skipped || o->err < 0 || !reaches_hook(&calls[i]))
			continue;
		ASSERT_EQ(o->err, EPERM);
		ex[n++] = (struct expect){ .pid = o->pid, .tid = o->tid,
					   .flags = (uint32_t)calls[i].flags,
					   .entry = how_entries[calls[i].how], .verdict = "eperm",
					   .cgroup = cgroup, .scope = "host" };
	}
	ASSERT_GE(n, 8);

	/* A fork event, as root: UFFD_FEATURE_EVENT_FORK needs CAP_SYS_PTRACE. */
	long uffd = raw_syscall(SYS_userfaultfd, O_CLOEXEC, 0, 0);
	ASSERT_OK(uffd);
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_FORK };
	ASSERT_SYS(ioctl((int)uffd, UFFDIO_API, &api));
	char *page = map_pages(1);
	struct uffdio_register reg = { .range = { (unsigned long)page, page_size() },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	ASSERT_SYS(ioctl((int)uffd, UFFDIO_REGISTER, &reg));
	struct forker f = { 0 };
	pthread_t t;
	ASSERT_EQ(pthread_create(&t, NULL, fork_thread, &f), 0);
	/* Reading the event creates the child's descriptor: the hook runs
	 * in this thread, with the parent's inode as context. */
	struct uffd_msg msg;
	ASSERT_EQ(read((int)uffd, &msg, sizeof(msg)), sizeof(msg));
	ASSERT_EQ(msg.event, UFFD_EVENT_FORK);
	ASSERT_EQ(pthread_join(t, NULL), 0);
	ASSERT_TRUE(WIFEXITED(f.status) && WEXITSTATUS(f.status) == 0);
	close((int)msg.arg.fork.ufd);
	close((int)uffd);

	ex[n++] = (struct expect){ .pid = getpid(), .tid = (int)gettid(), .flags = O_CLOEXEC,
				   .entry = "syscall", .verdict = "allow", .cgroup = cgroup,
				   .scope = "host", .privileged = true };
	ex[n++] = (struct expect){ .pid = getpid(), .tid = (int)gettid(), .flags = 0,
				   .entry = "fork event", .verdict = "allow", .cgroup = cgroup,
				   .scope = "host", .privileged = true };
	audit_check(ex, n);
	remove_all();
}

/* ---- the journal -------------------------------------------------------- */

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define JOURNALD "/lib/systemd/systemd-journald"

/* journalctl's JSON for the records of tid, once it has them all. */
static int journal_records(const char *dir, int tid, json_object **out, int want)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "journalctl --no-pager -o json %s%s UFFDGUARD_TID=%d 2>/dev/null",
		 dir ? "-D " : "", dir ? dir : "", tid);
	int n = 0;
	for (double deadline = now_ms() + 30000; n < want && now_ms() < deadline; usleep(100000)) {
		while (n > 0)
			json_object_put(out[--n]);
		FILE *p = popen(cmd, "r");
		ASSERT_TRUE(p != NULL);
		char line[16384];
		while (n < want && fgets(line, sizeof(line), p))
			if ((out[n] = json_tokener_parse(line)) != NULL)
				n++;
		pclose(p);
	}
	return n;
}

TEST_TIMEOUT(the_audit_records_go_to_the_journal_with_their_fields, 300)
{
	pid_t journald = -1;
	const char *dir = NULL;

	setup();
	if (access(JOURNAL_SOCKET, F_OK) < 0) {
		/* No journal here (a test guest): a private one, in /run. */
		if (access(JOURNALD, X_OK) < 0)
			SKIP("no systemd-journald to write to (%s)", JOURNALD);
		journald = ASSERT_SYS(fork());
		if (journald == 0) {
			execl(JOURNALD, JOURNALD, (char *)NULL);
			_exit(127);
		}
		for (double deadline = now_ms() + 30000; access(JOURNAL_SOCKET, F_OK) < 0;
		     usleep(10000))
			if (now_ms() > deadline)
				FAIL("systemd-journald did not open %s", JOURNAL_SOCKET);
		dir = "/run/log/journal";
	}
	APPLY("--host", "--policy", "user-mode-only");
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[0].err, EPERM);
	ASSERT_EQ(b->out[1].err, 0);

	pid_t reader = ASSERT_SYS(fork());
	if (reader == 0) {
		execl(cli_path(), cli_path(), "lsm", "audit", "--journal", (char *)NULL);
		_exit(127);
	}
	json_object *rec[2];
	int n = journal_records(dir, b->out[0].tid, rec, 2);
	kill(reader, SIGTERM);
	int status;
	ASSERT_SYS(waitpid(reader, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(n, 2);
	/* The first two calls of the batch: without the flag, then with it. */
	ASSERT_STREQ(jstr(rec[0], "UFFDGUARD_VERDICT"), "eperm");
	ASSERT_STREQ(jstr(rec[0], "UFFDGUARD_FLAGS"), "0x0");
	ASSERT_STREQ(jstr(rec[0], "PRIORITY"), "4");
	ASSERT_STREQ(jstr(rec[1], "UFFDGUARD_VERDICT"), "allow");
	ASSERT_STREQ(jstr(rec[1], "UFFDGUARD_FLAGS"), "0x1");
	ASSERT_STREQ(jstr(rec[1], "PRIORITY"), "6");
	for (int i = 0; i < 2; i++) {
		ASSERT_STREQ(jstr(rec[i], "UFFDGUARD_ENTRY"), "syscall");
		ASSERT_STREQ(jstr(rec[i], "UFFDGUARD_CALL"), "userfaultfd");
		ASSERT_STREQ(jstr(rec[i], "UFFDGUARD_SCOPE"), "host");
		ASSERT_STREQ(jstr(rec[i], "UFFDGUARD_PRIVILEGED"), "0");
		ASSERT_CONTAINS(jstr(rec[i], "MESSAGE"), "userfaultfd ");
		json_object_put(rec[i]);
	}
	if (journald > 0) {
		kill(journald, SIGTERM);
		ASSERT_SYS(waitpid(journald, &status, 0));
	}
	remove_all();
}

/* ---- the pins ----------------------------------------------------------- */

struct ids {
	uint32_t prog[3], link[3], map[6];
};

static uint32_t pinned_id(const char *name, bool is_link, uint32_t *prog)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", LSM_PIN_DIR, name);
	int fd = bpf_obj_get(path);
	if (fd < 0)
		FAIL("%s is not pinned: %s", path, strerror(errno));
	uint32_t id;
	if (is_link) {
		struct bpf_link_info info = { 0 };
		__u32 len = sizeof(info);
		ASSERT_OK(bpf_obj_get_info_by_fd(fd, &info, &len));
		id = info.id;
		*prog = info.prog_id;
	} else {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);
		ASSERT_OK(bpf_obj_get_info_by_fd(fd, &info, &len));
		id = info.id;
	}
	close(fd);
	return id;
}

static void pinned_ids(struct ids *ids)
{
	static const char *const links[] = { "uffd_create", "scope_on_mkdir", "scope_on_rmdir" };
	static const char *const maps[] = { "scopes",          "scope_paths",     "decision_counts",
					    "audit_records",   "dropped_records", "format" };
	for (int i = 0; i < 3; i++)
		ids->link[i] = pinned_id(links[i], true, &ids->prog[i]);
	for (int i = 0; i < 6; i++)
		ids->map[i] = pinned_id(maps[i], false, NULL);
}

TEST_TIMEOUT(enforcement_outlives_the_command_and_applying_twice_changes_nothing, 300)
{
	setup();
	APPLY("--host", "--policy", "deny");
	/* The command has exited: the kernel still decides. */
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[1].err, EPERM);
	json_object *doc = show();
	ASSERT_TRUE(jbool(doc, "enforcing"));
	ASSERT_TRUE(jbool(doc, "same_program"));

	struct ids before, after;
	pinned_ids(&before);
	REAPPLY("--host", "--policy", "deny");
	pinned_ids(&after);
	ASSERT_TRUE(!memcmp(&before, &after, sizeof(before)));
	json_object *again = show();
	ASSERT_EQ(jint(again, "program_id"), jint(doc, "program_id"));
	ASSERT_STREQ(jstr(shown_scope(again, ""), "policy.name"), "deny");
	remove_all();
}

TEST_TIMEOUT(pinned_maps_of_another_format_are_refused_with_what_to_do, 300)
{
	setup();
	APPLY("--host", "--policy", "deny");
	int fd = bpf_obj_get(LSM_PIN_DIR "/format");
	ASSERT_OK(fd);
	struct lsm_format f = { 0 };
	__u32 zero = 0;
	ASSERT_OK(bpf_map_lookup_elem(fd, &zero, &f));
	f.version = LSM_FORMAT_VERSION + 1;
	ASSERT_OK(bpf_map_update_elem(fd, &zero, &f, BPF_ANY));
	close(fd);

	struct cli_result r;
	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--policy", "allow");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "have format");
	ASSERT_CONTAINS(r.err, "uffdguard lsm remove");
	CLI(WHO_ROOT, &r, "lsm", "show");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "does not read");
	/* The policy in force did not change. */
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[1].err, EPERM);
	remove_all();

	/* A map of another layout where ours goes: libbpf cannot reuse it. */
	ASSERT_TRUE(mkdir(LSM_PIN_DIR, 0700) == 0);
	int bogus = bpf_map_create(BPF_MAP_TYPE_HASH, "scopes", 8, 8, 16, NULL);
	ASSERT_OK(bogus);
	ASSERT_OK(bpf_obj_pin(bogus, LSM_PIN_DIR "/scopes"));
	close(bogus);
	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--policy", "allow");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "do not have the layout this uffdguard expects");
	ASSERT_CONTAINS(r.err, "uffdguard lsm remove");
	remove_all();
	ASSERT_TRUE(access(LSM_PIN_DIR, F_OK) < 0);
	REAPPLY("--host", "--policy", "allow");
	remove_all();
}

static bool gone(int (*get)(__u32), uint32_t id);

/* The pinned program looks like another build's: its object id differs. */
static void pretend_another_build(void)
{
	int fd = bpf_obj_get(LSM_PIN_DIR "/format");
	ASSERT_OK(fd);
	struct lsm_format f = { 0 };
	__u32 zero = 0;
	ASSERT_OK(bpf_map_lookup_elem(fd, &zero, &f));
	f.object_id ^= 1;
	ASSERT_OK(bpf_map_update_elem(fd, &zero, &f, BPF_ANY));
	close(fd);
	ASSERT_TRUE(!jbool(show(), "same_program"));
}

/* Another build's program (its object id differs): the next apply loads
 * this one, attaches it before the old one goes, keeps the maps and so
 * the scopes and their counts. */
TEST_TIMEOUT(a_program_of_another_build_is_replaced_keeping_maps_and_scopes, 300)
{
	struct ids before, after;

	setup();
	APPLY("--host", "--policy", "deny");
	pinned_ids(&before);
	pretend_another_build();

	REAPPLY("--host", "--policy", "deny");
	pinned_ids(&after);
	ASSERT_TRUE(jbool(show(), "same_program"));
	for (int i = 0; i < 3; i++) {
		ASSERT_NE(after.prog[i], before.prog[i]);
		ASSERT_NE(after.link[i], before.link[i]);
	}
	ASSERT_TRUE(!memcmp(after.map, before.map, sizeof(after.map)));
	/* The old programs are gone, the policy holds. */
	double deadline = now_ms() + 60000;
	for (int i = 0; i < 3; i++)
		while (!gone(bpf_prog_get_fd_by_id, before.prog[i]))
			if (now_ms() > deadline)
				FAIL("the replaced program %u is still in the kernel", before.prog[i]);
			else
				usleep(10000);
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[1].err, EPERM);
	ASSERT_STREQ(jstr(shown_scope(show(), ""), "policy.name"), "deny");
	ASSERT_GT(jint(shown_scope(show(), ""), "decisions.eperm"), 0);
	remove_all();
}

static bool gone(int (*get)(__u32), uint32_t id)
{
	int fd = get(id);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == ENOENT;
}

TEST_TIMEOUT(remove_leaves_no_program_link_map_or_pin, 300)
{
	struct ids ids;

	setup();
	APPLY("--host", "--policy", "deny");
	pinned_ids(&ids);
	remove_all();
	ASSERT_TRUE(access(LSM_PIN_DIR, F_OK) < 0 && errno == ENOENT);
	/* The kernel frees them after an RCU grace period: wait for it. */
	double deadline = now_ms() + 60000;
	for (;;) {
		bool all = true;
		for (int i = 0; i < 3; i++)
			all &= gone(bpf_prog_get_fd_by_id, ids.prog[i]) &&
			       gone(bpf_link_get_fd_by_id, ids.link[i]);
		for (int i = 0; i < 6; i++)
			all &= gone(bpf_map_get_fd_by_id, ids.map[i]);
		if (all)
			break;
		if (now_ms() > deadline)
			FAIL("a program, link or map of the removed BPF LSM is still in the kernel");
		usleep(10000);
	}
	/* And nothing decides any more. */
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[0].err, 0);
}

/* ---- a failed apply changes nothing ------------------------------------ */

/* The highest id of a program or map in the kernel now: what a later
 * command loads gets a higher one. */
static uint32_t last_id(int (*next)(__u32, __u32 *))
{
	uint32_t id = 0, n;
	while (next(id, &n) == 0)
		id = n;
	return id;
}

/* Whether a program (progs) or map named in names[0, n) with an id above
 * floor is in the kernel. */
static bool named_above(bool progs, uint32_t floor, const char *const *names, size_t n)
{
	uint32_t id = floor;
	while ((progs ? bpf_prog_get_next_id(id, &id) : bpf_map_get_next_id(id, &id)) == 0) {
		int fd = progs ? bpf_prog_get_fd_by_id(id) : bpf_map_get_fd_by_id(id);
		union {
			struct bpf_prog_info prog;
			struct bpf_map_info map;
		} info;
		__u32 len = progs ? sizeof(info.prog) : sizeof(info.map);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		int r = bpf_obj_get_info_by_fd(fd, &info, &len);
		close(fd);
		const char *name = progs ? info.prog.name : info.map.name;
		for (size_t i = 0; r == 0 && i < n; i++)
			if (!strcmp(name, names[i]))
				return true;
	}
	return false;
}

/* Whether a program or map of ours (by name) with an id above these is
 * still in the kernel. */
static bool ours_above(uint32_t prog_floor, uint32_t map_floor)
{
	static const char *const progs[] = { "uffd_create", "scope_on_mkdir", "scope_on_rmdir" };
	static const char *const maps[] = { "scopes",        "scope_paths",     "decision_counts",
					    "audit_records", "dropped_records", "format" };
	return named_above(true, prog_floor, progs, sizeof(progs) / sizeof(progs[0])) ||
	       named_above(false, map_floor, maps, sizeof(maps) / sizeof(maps[0]));
}

/* The kernel frees them after an RCU grace period: wait for it. */
static void wait_nothing_of_ours_above(uint32_t prog_floor, uint32_t map_floor)
{
	double deadline = now_ms() + 60000;
	while (ours_above(prog_floor, map_floor))
		if (now_ms() > deadline)
			FAIL("a program or map the failed command loaded is still in the kernel");
		else
			usleep(10000);
}

/* The names in LSM_PIN_DIR, sorted, separated by spaces. */
static const char *pin_dir_names(void)
{
	static char buf[1024];
	struct dirent **list;
	int n = scandir(LSM_PIN_DIR, &list, NULL, alphasort);
	if (n < 0)
		FAIL("%s: %s", LSM_PIN_DIR, strerror(errno));
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, ".."))
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 buf[0] ? " " : "", list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return buf;
}

/* bpffs takes a name once: a directory where the hook's link is pinned
 * on its way (uffd_create_next) makes that pin fail, the last step of a
 * load, when the maps and the tracepoints' links are pinned already. */
#define IN_THE_WAY LSM_PIN_DIR "/uffd_create_next"

TEST_TIMEOUT(a_first_load_failing_half_way_leaves_nothing_pinned_or_loaded, 300)
{
	struct cli_result r;

	setup();
	APPLY("--host", "--policy", "deny"); /* the kernel loads it at all */
	remove_all();
	uint32_t prog_floor = last_id(bpf_prog_get_next_id);
	uint32_t map_floor = last_id(bpf_map_get_next_id);
	ASSERT_SYS(mkdir(LSM_PIN_DIR, 0700));
	ASSERT_SYS(mkdir(IN_THE_WAY, 0700));

	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--policy", "deny");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "cannot pin the BPF link " LSM_PIN_DIR "/uffd_create: File exists");
	ASSERT_CONTAINS(r.err, "; nothing was changed");
	/* Its maps and links unpinned, and so gone from the kernel. */
	ASSERT_STREQ(pin_dir_names(), "uffd_create_next");
	wait_nothing_of_ours_above(prog_floor, map_floor);
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[1].err, 0);

	ASSERT_SYS(rmdir(IN_THE_WAY));
	ASSERT_SYS(rmdir(LSM_PIN_DIR));
	REAPPLY("--host", "--policy", "deny");
	remove_all();
}

/* Replacing another build's program, the same failure: the links of the
 * program in force are pinned back, the very same ones. */
TEST_TIMEOUT(a_replacement_failing_half_way_puts_back_the_program_in_force, 300)
{
	struct ids before, after;
	struct cli_result r;

	setup();
	APPLY("--host", "--policy", "deny");
	pretend_another_build();
	pinned_ids(&before);
	uint32_t prog_floor = last_id(bpf_prog_get_next_id);
	uint32_t map_floor = last_id(bpf_map_get_next_id);
	ASSERT_SYS(mkdir(IN_THE_WAY, 0700));

	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--policy", "allow");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "cannot pin the BPF link " LSM_PIN_DIR "/uffd_create: File exists");
	ASSERT_CONTAINS(r.err, "; nothing was changed");
	pinned_ids(&after);
	ASSERT_TRUE(!memcmp(&before, &after, sizeof(before)));
	ASSERT_STREQ(pin_dir_names(), "audit_records decision_counts dropped_records format "
				      "scope_on_mkdir scope_on_rmdir scope_paths scopes "
				      "uffd_create uffd_create_next");
	json_object *doc = show();
	ASSERT_TRUE(!jbool(doc, "same_program")); /* its format written back */
	ASSERT_STREQ(jstr(shown_scope(doc, ""), "policy.name"), "deny");
	wait_nothing_of_ours_above(prog_floor, map_floor);
	struct batch *b = shared(sizeof(*b));
	b->device = "/nonexistent";
	as_caller(CALLER_UNPRIV, run_batch, b);
	ASSERT_EQ(b->out[1].err, EPERM);

	ASSERT_SYS(rmdir(IN_THE_WAY));
	remove_all();
}

/* The map of cgroup ids filled up to its last entry with ids no cgroup
 * has, in a slot no entry uses: the next new cgroup entry fails on it. */
#define FILLER_KEY (1ull << 62)

static size_t fill_scopes(void)
{
	int fd = bpf_obj_get(LSM_PIN_DIR "/scopes");
	ASSERT_OK(fd);
	struct lsm_scope v = { .slot = LSM_MAX_SCOPES - 1 };
	size_t n = 0;
	for (;; n++) {
		__u64 key = FILLER_KEY + n;
		if (bpf_map_update_elem(fd, &key, &v, BPF_NOEXIST) < 0) {
			ASSERT_EQ(errno, E2BIG);
			break;
		}
		ASSERT_LT(n, 4 * LSM_MAX_SCOPES);
	}
	close(fd);
	return n;
}

static void unfill_scopes(size_t n)
{
	int fd = bpf_obj_get(LSM_PIN_DIR "/scopes");
	ASSERT_OK(fd);
	for (size_t i = 0; i < n; i++) {
		__u64 key = FILLER_KEY + i;
		ASSERT_OK(bpf_map_delete_elem(fd, &key));
	}
	close(fd);
}

/* The entry of a cgroup in the map of cgroup ids, by its id; false if none. */
static bool scope_of_cgroup_id(const char *rel, struct lsm_scope *v)
{
	uint64_t id;
	ASSERT_OK(cgroup_id_of(rel, &id));
	int fd = bpf_obj_get(LSM_PIN_DIR "/scopes");
	ASSERT_OK(fd);
	int r = bpf_map_lookup_elem(fd, &id, v);
	int e = errno;
	close(fd);
	if (r < 0 && e != ENOENT)
		FAIL("lookup of cgroup %s in the scopes: %s", rel, strerror(e));
	return r == 0;
}

struct scope_cgroups {
	char t[128], tc[160], o1[128], o2[128];
	char dir[32], path[PATH_MAX];
};

/* Cgroups T, T/c (in force: deny), O1 and O2 (not yet), and the map of
 * cgroup ids full. */
static size_t scope_failure_setup(struct scope_cgroups *c, const char *host_line)
{
	char text[1024];

	setup();
	snprintf(c->dir, sizeof(c->dir), "/tmp/uffdguard-lsm.XXXXXX");
	ASSERT_TRUE(mkdtemp(c->dir) != NULL);
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(c->t, sizeof(c->t), "-t");
	snprintf(c->tc, sizeof(c->tc), "%s/c", c->t);
	cg_test_name(c->o1, sizeof(c->o1), "-o1");
	cg_test_name(c->o2, sizeof(c->o2), "-o2");
	cg_make(c->t);
	cg_make(c->tc);
	cg_make(c->o1);
	cg_make(c->o2);
	snprintf(text, sizeof(text), "%s%s deny\n", host_line, c->tc);
	write_config(c->dir, text, c->path, sizeof(c->path));
	APPLY("--config", c->path);
	return fill_scopes();
}

static void scope_failure_cleanup(struct scope_cgroups *c)
{
	cg_leave_and_remove((const char *const[]){ c->tc, c->t, c->o1, c->o2, NULL });
	remove_all();
	unlink(c->path);
	rmdir(c->dir);
}

/* Writing the scopes fails half-way (the map of cgroup ids is full when
 * the last new entry comes): those written are taken back. */
TEST_TIMEOUT(scopes_failing_half_way_are_put_back_as_they_were, 300)
{
	struct scope_cgroups c;
	struct caller_proc in_tc;
	struct lsm_scope v;
	struct cli_result r;
	char text[1024];

	size_t filled = scope_failure_setup(&c, "host user-mode-only\n");
	json_object *doc = show();
	ASSERT_TRUE(scope_of_cgroup_id(c.tc, &v));
	uint32_t slot = v.slot;

	/* T/c's entry goes first (its id's place is free again), the host
	 * changes, O1 takes the free place, and O2 finds none. */
	snprintf(text, sizeof(text), "host deny\n%s deny\n%s allow\n", c.o1, c.o2);
	write_config(c.dir, text, c.path, sizeof(c.path));
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", c.path);
	ASSERT_EQ(r.status, 1);
	char want[512];
	snprintf(want, sizeof(want), "cannot write the BPF LSM scope of cgroup %s: a map of the "
		 "BPF LSM program is full; nothing was changed", c.o2);
	ASSERT_CONTAINS(r.err, want);
	json_object *after = show();
	ASSERT_STREQ(json_object_to_json_string(jat(after, "scopes")),
		     json_object_to_json_string(jat(doc, "scopes")));
	ASSERT_TRUE(scope_of_cgroup_id(c.tc, &v));
	ASSERT_EQ(v.slot, slot);
	ASSERT_TRUE(!scope_of_cgroup_id(c.o1, &v));
	caller_start(&in_tc, CALLER_UNPRIV, c.tc);
	ASSERT_EQ(caller_call(&in_tc, UFFD_USER_MODE_ONLY), EPERM);
	caller_stop(&in_tc);

	unfill_scopes(filled);
	scope_failure_cleanup(&c);
}

/* The place where cgroup T/c's id is read is not a cgroup in the
 * command's mount namespace (a tmpfs over T), so T/c cannot be put
 * back after the failure above. */
static char shadowed[PATH_MAX * 2];

static void shadow_cgroup(void)
{
	char c[sizeof(shadowed) + 8];
	snprintf(c, sizeof(c), "%s/c", shadowed);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", shadowed, "tmpfs", 0, NULL) < 0 || mkdir(c, 0755) < 0)
		_exit(126);
}

TEST_TIMEOUT(scopes_that_cannot_be_put_back_are_named_with_what_to_do, 300)
{
	struct scope_cgroups c;
	struct caller_proc in_tc;
	struct lsm_scope v;
	struct cli_result r;
	char text[1024], want[1024];

	size_t filled = scope_failure_setup(&c, "");
	snprintf(text, sizeof(text), "%s deny\n%s deny\n", c.o1, c.o2);
	write_config(c.dir, text, c.path, sizeof(c.path));
	cg_path(shadowed, sizeof(shadowed), c.t);
	cli_pre_exec = shadow_cgroup;
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", c.path);
	cli_pre_exec = NULL;
	ASSERT_EQ(r.status, 1);
	snprintf(want, sizeof(want), "cannot write the BPF LSM scope of cgroup %s: a map of the "
		 "BPF LSM program is full; putting back the scopes in force before failed too, "
		 "for 1 of them (cgroup %s: ", c.o2, c.tc);
	ASSERT_CONTAINS(r.err, want);
	ASSERT_TRUE(!strstr(r.err, "nothing was changed"));
	snprintf(want, sizeof(want), "run 'uffdguard lsm remove --cgroup %s' (if 'uffdguard lsm "
		 "show' lists it), then 'uffdguard lsm apply --cgroup %s --set ", c.tc, c.tc);
	ASSERT_CONTAINS(r.err, want);

	/* The command it gives, as words. */
	char advice[1024], *words[16];
	size_t n_words = 0;
	const char *from = strstr(r.err, "then 'uffdguard ");
	ASSERT_TRUE(from != NULL);
	snprintf(advice, sizeof(advice), "%s", from + strlen("then 'uffdguard "));
	advice[strcspn(advice, "'")] = '\0';
	for (char *save = NULL, *w = strtok_r(advice, " ", &save); w && n_words < 15;
	     w = strtok_r(NULL, " ", &save))
		words[n_words++] = w;
	words[n_words] = NULL;

	/* As it says: T/c's path entry is back, its id's is not. */
	json_object *doc = show();
	ASSERT_EQ(json_object_array_length(jat(doc, "scopes")), 1);
	ASSERT_STREQ(jstr(shown_scope(doc, c.tc), "policy.name"), "deny");
	ASSERT_TRUE(!scope_of_cgroup_id(c.tc, &v));
	caller_start(&in_tc, CALLER_UNPRIV, c.tc);
	ASSERT_EQ(caller_call(&in_tc, UFFD_USER_MODE_ONLY), 0);

	/* And what it says to do puts it back. */
	unfill_scopes(filled);
	CLI(WHO_ROOT, &r, "lsm", "remove", "--cgroup", c.tc);
	ASSERT_EQ(r.status, 0);
	apply((const char *const *)words);
	ASSERT_TRUE(scope_of_cgroup_id(c.tc, &v));
	ASSERT_STREQ(jstr(shown_scope(show(), c.tc), "policy.name"), "deny");
	ASSERT_EQ(caller_call(&in_tc, UFFD_USER_MODE_ONLY), EPERM);
	caller_stop(&in_tc);
	scope_failure_cleanup(&c);
}

/* ---- uffdguard status ------------------------------------------------- */

static bool has_reason(json_object *doc, const char *needle)
{
	json_object *reasons = jat(doc, "verdict.reasons");
	for (size_t i = 0; i < json_object_array_length(reasons); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(reasons, i)), needle))
			return true;
	return false;
}

static json_object *status_json(int *exit_code)
{
	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", PROBE_DEADLINE);
	*exit_code = r.status;
	return cli_json(&r);
}

TEST_TIMEOUT(status_reports_the_bpf_lsm_and_its_verdict_accounts_for_it, 600)
{
	char open_cg[128];
	int rc;

	setup();
	/* The kernel alone would let unprivileged callers in: only the
	 * program stands in the way. */
	APPLY("--host", "--policy", "deny");
	json_object *doc = status_json(&rc);
	ASSERT_EQ(rc, 0);
	ASSERT_STREQ(jstr(doc, "verdict.status"), "protected");
	ASSERT_TRUE(jbool(doc, "bpf_lsm.enforcing"));
	ASSERT_STREQ(jstr(doc, "bpf_lsm.own_scope"), "host");
	ASSERT_STREQ(jstr(doc, "bpf_lsm.scopes.0.policy.name"), "deny");
	if (!has_reason(doc, "the BPF LSM program (id ") ||
	    !has_reason(doc, "with the host default: deny"))
		FAIL("no reason names the BPF LSM: %s", json_object_to_json_string(jat(doc, "verdict")));

	/* A cgroup entry that lets unprivileged callers in, elsewhere than
	 * where status probes: exposed, and the reason names it. */
	cg_self(cg_home, sizeof(cg_home));
	cg_test_name(open_cg, sizeof(open_cg), "-open");
	cg_make(open_cg);
	REAPPLY("--cgroup", open_cg, "--policy", "allow");
	doc = status_json(&rc);
	ASSERT_EQ(rc, 1);
	ASSERT_STREQ(jstr(doc, "verdict.status"), "exposed");
	char want[256];
	snprintf(want, sizeof(want), "unprivileged processes under cgroup %s can create", open_cg);
	if (!has_reason(doc, want))
		FAIL("no reason names %s: %s", open_cg, json_object_to_json_string(jat(doc, "verdict")));
	cg_leave_and_remove((const char *const[]){ open_cg, NULL });

	/* Without the program, the sysctl decides: exposed. */
	remove_all();
	doc = status_json(&rc);
	ASSERT_EQ(rc, 1);
	ASSERT_TRUE(!jbool(doc, "bpf_lsm.enforcing"));

	/* The text report has its line. */
	APPLY("--host", "--policy", "user-mode-only");
	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "bpf lsm         enforcing (program id ");
	ASSERT_CONTAINS(r.out, "here: the host default");
	remove_all();
}

/* ---- where it cannot work ----------------------------------------------- */

/* A minimal LSM program, loaded by hand: the kernel's answer, to compare
 * with what the command says. */
static int load_minimal_lsm(char *log, size_t log_size)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return -ENOENT;
	int id = btf__find_by_name_kind(vmlinux, "bpf_lsm_inode_init_security_anon", BTF_KIND_FUNC);
	btf__free(vmlinux);
	if (id < 0)
		return -ENOENT;
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_LSM_MAC,
		    .attach_btf_id = (__u32)id, .log_buf = log, .log_size = (__u32)log_size,
		    .log_level = 1);
	log[0] = '\0';
	int fd = bpf_prog_load(BPF_PROG_TYPE_LSM, "probe", "GPL", insns, 2, &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

TEST(where_the_kernel_refuses_the_command_says_why_and_exits_3)
{
	char log[4096], active[256] = "";
	struct cli_result r;

	setup();
	int loaded = load_minimal_lsm(log, sizeof(log));
	/* The command mounts securityfs where it is not: read the list after. */
	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--policy", "deny");
	FILE *f = fopen("/sys/kernel/security/lsm", "re");
	if (f) {
		if (!fgets(active, sizeof(active), f))
			active[0] = '\0';
		fclose(f);
	}
	if (active[0] && !strstr(active, "bpf")) {
		/* Loaded or not, a program would never be called. */
		ASSERT_EQ(r.status, 3);
		ASSERT_CONTAINS(r.err, "the BPF LSM is not active");
		ASSERT_CONTAINS(r.err, ",bpf to the kernel command line");
	} else if (loaded == -EPERM && !log[0]) {
		/* This kernel refuses trampoline programs with an empty log. */
		ASSERT_EQ(r.status, 3);
		ASSERT_CONTAINS(r.err, "the kernel refused to load the BPF LSM program (EPERM)");
		ASSERT_CONTAINS(r.err, "trampoline-based BPF programs");
		ASSERT_CONTAINS(r.err, "use uffdguard run, uffdguard profile or uffdguard sysctl");
		ASSERT_TRUE(access(LSM_PIN_DIR, F_OK) < 0);
	} else if (loaded == 0) {
		ASSERT_EQ(r.status, 0);
		remove_all();
		SKIP("this kernel loads BPF LSM programs: the refusals are checked on kernels "
		     "that refuse");
	} else {
		FAIL("a minimal LSM program fails to load (%s), and the command says (%d): %s",
		     strerror(-loaded), r.status, r.err);
	}
}

TEST(an_unprivileged_user_is_told_to_be_root)
{
	struct cli_result r;

	setup();
	CLI(WHO_UNPRIV, &r, "lsm", "apply", "--host", "--policy", "deny");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.err, "needs root (CAP_BPF and CAP_SYS_ADMIN");
}
