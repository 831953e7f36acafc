// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `uffdguard run` on the real kernel: every policy x mode x caller x path x
 * flags against policy_decide(), the bypass attempts, legitimate use, the
 * supervisor (live knobs, 64 threads, death) and bad input.  The calls are
 * made by run-helper inside the tree; the kernel's own sysctl is set to 1
 * so that uffdguard is the only gate.
 */
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/ioctl.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli-run.h"
#include "harness.h"
#include "identity.h"
#include "marker.h"
#include "policy.h"
#include "run-helper.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

static void setup(void)
{
	require_root();
	sysctl_set(1); /* the kernel allows every call: what it refuses, we did */
}

/* The policy as `run` enforces it in `mode`. */
static struct policy policy_for(const char *preset, bool device_covered, enum enforcer mode)
{
	struct policy p;
	char err[256];
	if (policy_preset(preset, &p, err, sizeof(err)) < 0)
		FAIL("%s", err);
	p.cover_device = device_covered;
	p.privilege = mode == ENFORCER_FILTER ? POLICY_PRIV_NOBODY : POLICY_PRIV_CAP_SYS_PTRACE;
	return p;
}

/* What the call returns: an ALLOW leaves it to the kernel, whose own
 * check (sysctl at 1) refuses only unknown flag bits. */
static int want_errno(enum verdict v, uint64_t flags)
{
	if (v == VERDICT_ALLOW)
		return (uint32_t)flags & ~POLICY_KNOWN_FLAGS ? EINVAL : 0;
	return v == VERDICT_EPERM ? EPERM : EINVAL;
}

static const char *const modes[] = { "filter", "supervise" };
static const char *const whos[] = { "unpriv", "ptrace", "root" };

static void matrix(enum enforcer mode)
{
	char dev[PATH_MAX];
	make_private_device(dev, 0, 0, 0666);
	static const struct {
		const char *preset;
		bool covered;
	} policies[] = { { "allow", true }, { "user-mode-only", true }, { "deny", true },
			 { "user-mode-only", false }, { "deny", false } };

	for (size_t pi = 0; pi < sizeof(policies) / sizeof(policies[0]); pi++) {
		struct policy p = policy_for(policies[pi].preset, policies[pi].covered, mode);
		for (size_t w = 0; w < 3; w++) {
			struct cli_result r;
			CLI(WHO_ROOT, &r, "run", "--mode", modes[mode], "--policy", policies[pi].preset,
			    "--set", policies[pi].covered ? "cover_device=1" : "cover_device=0", "--",
			    run_helper_path(), "probe", whos[w], dev);
			if (r.status != 0)
				FAIL("%s %s as %s: exit %d: %s", modes[mode], policies[pi].preset,
				     whos[w], r.status, r.err);
			bool privileged = w != 0; /* CAP_SYS_PTRACE, initial user namespace */
			int lines = 0;
			for (char *save, *l = strtok_r(r.out, "\n", &save); l;
			     l = strtok_r(NULL, "\n", &save), lines++) {
				char path[16];
				unsigned long long flags;
				int got, want;
				if (sscanf(l, "%15s %llx %d", path, &flags, &got) != 3)
					FAIL("bad line '%s'", l);
				if (!strcmp(path, "marker")) {
					want = marker_errno(mode, &p);
				} else {
					struct call c = { !strcmp(path, "sys") ? CALL_SYSCALL
									       : CALL_DEVICE_IOCTL,
							  flags };
					want = want_errno(policy_decide(&p, privileged, &c), flags);
				}
				if (got != want)
					FAIL("%s, %s%s, %s: %s flags 0x%llx: errno %d (%s), want %d",
					     modes[mode], policies[pi].preset,
					     policies[pi].covered ? "" : " cover_device=0", whos[w], path,
					     flags, got, strerror(got), want);
			}
			ASSERT_EQ(lines, 2 * N_RUN_FLAGS + 1);
		}
	}
	remove_private_device(dev);
}

TEST_TIMEOUT(filter_matrix_matches_policy_decide, 60)
{
	setup();
	matrix(ENFORCER_FILTER);
}

TEST_TIMEOUT(supervise_matrix_matches_policy_decide, 60)
{
	setup();
	matrix(ENFORCER_SUPERVISOR);
}

static void run_bypass(enum enforcer mode, const char *preset, const char *dev,
		       struct cli_result *r)
{
	CLI(WHO_ROOT, r, "run", "--mode", modes[mode], "--policy", preset, "--", run_helper_path(), "bypass",
	    dev);
	if (r->status != 0)
		FAIL("%s %s: exit %d: %s", modes[mode], preset, r->status, r->err);
}

TEST_TIMEOUT(bypass_attempts_are_refused, 60)
{
	static const char *const attempts[] = { "x32", "x32-ioctl", "upper-flags", "upper-cmd",
						"upper-cmd-flags", "thread", "grandchild" };
	char dev[PATH_MAX];

	setup();
	make_private_device(dev, 0, 0, 0666);
	for (int mode = 0; mode < 2; mode++) {
		for (int deny = 0; deny <= 1; deny++) {
			struct cli_result r;
			run_bypass((enum enforcer)mode, deny ? "deny" : "user-mode-only", dev, &r);
			for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++)
				if (line_value(r.out, attempts[i]) != EPERM)
					FAIL("%s %s: %s got errno %d, want EPERM:\n%s", modes[mode],
					     deny ? "deny" : "user-mode-only", attempts[i],
					     line_value(r.out, attempts[i]), r.out);
			/* Capabilities in a user namespace of its own do not count
			 * (unless such namespaces are disabled here). */
			if (!strstr(r.out, "userns skip") && line_value(r.out, "userns") != EPERM)
				FAIL("%s %s: root of its own user namespace got errno %d, want EPERM",
				     modes[mode], deny ? "deny" : "user-mode-only",
				     line_value(r.out, "userns"));
			/* The flag itself still works where the policy allows it. */
			ASSERT_EQ(line_value(r.out, "umo"), deny ? EPERM : 0);
		}
	}
	remove_private_device(dev);
}

TEST_TIMEOUT(i386_entry_is_refused, 60)
{
	char dev[PATH_MAX];

	setup();
	make_private_device(dev, 0, 0, 0666);
	for (int mode = 0; mode < 2; mode++) {
		for (int deny = 0; deny <= 1; deny++) {
			struct cli_result r;
			run_bypass((enum enforcer)mode, deny ? "deny" : "user-mode-only", dev, &r);
			if (strstr(r.out, "int80 skip"))
				SKIP("int 0x80 is not available (no CONFIG_IA32_EMULATION or ia32_emulation=0)");
			ASSERT_EQ(line_value(r.out, "int80"), EPERM);
			ASSERT_EQ(line_value(r.out, "int80-ioctl"), EPERM);
		}
	}
	remove_private_device(dev);
}

TEST_TIMEOUT(user_mode_only_program_serves_its_faults, 60)
{
	setup();
	for (int mode = 0; mode < 2; mode++) {
		struct cli_result r;
		CLI(WHO_ROOT, &r, "run", "--mode", modes[mode], "--policy", "user-mode-only", "--",
		    run_helper_path(), "serve");
		if (r.status != 0)
			FAIL("%s: exit %d: %s%s", modes[mode], r.status, r.out, r.err);
		ASSERT_CONTAINS(r.out, "served 64 good 64");
	}
}

TEST(unprivileged_invoker_gets_no_new_privs)
{
	setup();
	for (int mode = 0; mode < 2; mode++) {
		struct cli_result r;
		CLI(WHO_UNPRIV, &r, "run", "--mode", modes[mode], "--policy", "user-mode-only", "--",
		    run_helper_path(), "probe", "root", "-");
		if (r.status != 0)
			FAIL("%s: exit %d: %s", modes[mode], r.status, r.err);
		ASSERT_CONTAINS(r.out, "sys 0 1\n");
		ASSERT_CONTAINS(r.out, "sys 1 0\n");
		for (int w = WHO_ROOT; w <= WHO_UNPRIV; w++) {
			CLI((enum who)w, &r, "run", "--mode", modes[mode], "--", run_helper_path(), "nnp");
			ASSERT_EQ(r.status, 0);
			ASSERT_CONTAINS(r.out, "nnp 1\n");
		}
	}
}

/* Run the helper's `scenario` supervised under `allow`, with the knobs in
 * DIR = TMP/knobs (tmp: a mkdtemp() template, filled in). */
static void run_with_control(const char *scenario, char *tmp, char *dir, struct cli_result *r)
{
	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(dir, PATH_MAX, "%s/knobs", tmp);
	CLI(WHO_ROOT, r, "run", "--mode", "supervise", "--policy", "allow", "--control", dir, "--",
	    run_helper_path(), scenario, dir);
	if (r->status != 0)
		FAIL("exit %d: %s%s", r->status, r->out, r->err);
}

TEST(live_knob_change_holds_from_the_next_call)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];
	struct cli_result r;

	run_with_control("live", tmp, dir, &r);
	ASSERT_EQ(line_value(r.out, "start-unpriv-0"), 0);
	ASSERT_EQ(line_value(r.out, "umo-unpriv-0"), EPERM);
	ASSERT_EQ(line_value(r.out, "umo-unpriv-umo"), 0);
	ASSERT_EQ(line_value(r.out, "umo-ptrace-0"), 0);
	ASSERT_EQ(line_value(r.out, "bad-unpriv-0"), EPERM);
	/* Refused, said, and the administrator's file left as written. */
	ASSERT_EQ(line_value(r.out, "bad-file"), 2);
	ASSERT_CONTAINS(r.err, "valid values are 0 and 1");
	ASSERT_CONTAINS(r.err, "unprivileged_userfaultfd_user_mode_only stays 1");
	ASSERT_CONTAINS(r.err, "1 change could not be applied");
	ASSERT_EQ(line_value(r.out, "deny-unpriv-umo"), EPERM);
	struct policy p = { .unprivileged_userfaultfd = 0,
			    .unprivileged_userfaultfd_user_mode_only = 1,
			    .cover_device = true };
	ASSERT_EQ(line_value(r.out, "deny-marker"), marker_errno(ENFORCER_SUPERVISOR, &p));
	ASSERT_EQ(line_value(r.out, "allow-unpriv-0"), 0);
	/* The directory was ours: gone with the supervisor. */
	ASSERT_TRUE(access(dir, F_OK) < 0 && errno == ENOENT);
	rmdir(tmp);
}

/* An overflowed inotify queue loses events, not knob changes.  Some
 * 17000 events, each an open() and a close(): well within a second even
 * under a sanitizer; the deadline is for a machine under load. */
TEST_TIMEOUT(knob_change_survives_an_event_overflow, 120)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];
	struct cli_result r;

	run_with_control("flood", tmp, dir, &r);
	ASSERT_EQ(line_value(r.out, "flood-unpriv-umo"), EPERM);
	rmdir(tmp);
}

static long lost_records(const char *err);

/* Every decision has its record, or is counted as lost: with --audit-rate
 * 0 and a queue that a loaded machine may overrun, the trail and the
 * count of lost records add up to the calls made. */
TEST_TIMEOUT(sixty_four_threads_one_audit_line_per_decision, 120)
{
	char tmp[] = "/tmp/uffdguard-audit.XXXXXX", audit[PATH_MAX];
	struct cli_result r;
	enum { THREADS = 64, CALLS = 100 };

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", tmp);
	CLI(WHO_ROOT, &r, "run", "--mode", "supervise", "--policy", "user-mode-only", "--audit",
	    audit, "--audit-rate", "0", "--", run_helper_path(), "threads", "64", "100",
	    "user-mode-only");
	if (r.status != 0)
		FAIL("exit %d: %s%s", r.status, r.out, r.err);
	ASSERT_CONTAINS(r.out, "calls 6400 mismatches 0");

	FILE *f = fopen(audit, "re");
	ASSERT_TRUE(f != NULL);
	struct policy p = policy_for("user-mode-only", true, ENFORCER_SUPERVISOR);
	int by_verdict[3] = { 0 }, lines = 0, n_tids = 0;
	long long tids[THREADS], pid = -1;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		json_object *o = json_tokener_parse(line);
		if (!o)
			FAIL("audit line %d is not JSON: %s", lines + 1, line);
		if (!strcmp(jstr(o, "type"), "lost")) {
			json_object_put(o);
			continue;
		}
		lines++;
		uint64_t flags = strtoull(jstr(o, "flags"), NULL, 16);
		enum verdict v = policy_decide(&p, false, &(struct call){ CALL_SYSCALL, flags });
		ASSERT_STREQ(jstr(o, "type"), "decision");
		ASSERT_STREQ(jstr(o, "verdict"), verdict_name(v));
		ASSERT_STREQ(jstr(o, "call"), "userfaultfd");
		ASSERT_STREQ(jstr(o, "abi"), "x86_64");
		ASSERT_EQ(jbool(o, "privileged"), 0);
		ASSERT_NE(jint(o, "uid"), 0);
		ASSERT_STREQ(jstr(o, "comm"), "run-helper");
		ASSERT_CONTAINS(jstr(o, "exe"), "run-helper");
		ASSERT_TRUE(strlen(jstr(o, "time")) > 0 && strlen(jstr(o, "reason")) > 0);
		if (pid < 0)
			pid = jint(o, "pid");
		ASSERT_EQ(jint(o, "pid"), pid);
		long long tid = jint(o, "tid");
		int k = 0;
		while (k < n_tids && tids[k] != tid)
			k++;
		if (k == n_tids) {
			ASSERT_LT(n_tids, THREADS);
			tids[n_tids++] = tid;
		}
		by_verdict[v]++;
		json_object_put(o);
	}
	free(line);
	fclose(f);
	long lost = lost_records(r.err);
	ASSERT_EQ(lines + lost, THREADS * CALLS);
	/* run_thread_flags: 0 (EPERM), the flag twice (allowed), flag|2 (EINVAL) */
	ASSERT_LE(by_verdict[VERDICT_EPERM], THREADS * CALLS / 4);
	ASSERT_LE(by_verdict[VERDICT_ALLOW], THREADS * CALLS / 2);
	ASSERT_LE(by_verdict[VERDICT_EINVAL], THREADS * CALLS / 4);
	if (!lost) {
		ASSERT_EQ(n_tids, THREADS);
		ASSERT_EQ(by_verdict[VERDICT_EPERM], THREADS * CALLS / 4);
		ASSERT_EQ(by_verdict[VERDICT_ALLOW], THREADS * CALLS / 2);
	}
	unlink(audit);
	rmdir(tmp);
}

/* Start `uffdguard args...` with stdout on a pipe; hook runs in the child
 * before exec. */
static pid_t spawn(const char *const *args, int *out, void (*hook)(void))
{
	const char *argv[32] = { cli_path() };
	int p[2];

	for (int i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	ASSERT_SYS(pipe2(p, O_CLOEXEC));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		dup2(p[1], 1);
		if (hook)
			hook();
		execv(argv[0], (char **)argv);
		_exit(99);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

static char *read_all(int fd)
{
	size_t used = 0, size = 4096;
	char *buf = malloc(size);
	ssize_t n;
	while ((n = read(fd, buf + used, size - used - 1)) > 0)
		if ((used += (size_t)n) + 1 == size)
			buf = realloc(buf, size *= 2);
	buf[used] = '\0';
	close(fd);
	return buf;
}

TEST(supervisor_death_fails_calls_closed_and_the_tree_runs_on)
{
	int out, status;

	setup();
	pid_t pid = spawn((const char *const[]){ "run", "--mode", "supervise", "--policy",
						 "user-mode-only", "--", run_helper_path(), "orphan", NULL },
			  &out, NULL);
	char *text = read_all(out); /* EOF: the orphaned helper finished */
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ASSERT_EQ(line_value(text, "before"), 0);
	ASSERT_EQ(line_value(text, "reparented"), 1);
	ASSERT_EQ(line_value(text, "after"), ENOSYS);
	ASSERT_EQ(line_value(text, "after-0"), ENOSYS);
	ASSERT_CONTAINS(text, "alive 1 7 1");
	/* No listener of the tree's own takes the dead supervisor's place. */
	ASSERT_EQ(line_value(text, "own-listener"), EBUSY);
	ASSERT_EQ(line_value(text, "stacked-0"), ENOSYS);
	free(text);
}

/* An unprivileged `run`: the tree is the supervisor's user, yet cannot
 * take its listener or trace it. */
TEST(the_tree_cannot_take_over_the_supervisor)
{
	struct cli_result r;

	setup();
	CLI(WHO_UNPRIV, &r, "run", "--mode", "supervise", "--", run_helper_path(), "steal");
	if (r.status != 0)
		FAIL("exit %d: %s%s", r.status, r.out, r.err);
	ASSERT_EQ(line_value(r.out, "listeners-stolen"), 0);
	ASSERT_EQ(line_value(r.out, "getfd-refused"), 64);
	ASSERT_EQ(line_value(r.out, "ptrace"), EPERM);
}

/* The listener, socket, signalfd, inotify, audit and control descriptors
 * stay with uffdguard (what the test itself lets through is not judged). */
TEST(the_command_inherits_no_descriptor_of_uffdguard)
{
	char tmp[] = "/tmp/uffdguard-fds.XXXXXX", audit[PATH_MAX], dir[PATH_MAX];
	const char *const ours[] = { "seccomp", "signalfd", "inotify", "socket:", tmp };
	struct cli_result r;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(audit, sizeof(audit), "%s/audit", tmp);
	snprintf(dir, sizeof(dir), "%s/knobs", tmp);
	for (int mode = 0; mode < 2; mode++) {
		if (mode == ENFORCER_FILTER)
			CLI(WHO_ROOT, &r, "run", "--", run_helper_path(), "fds");
		else
			CLI(WHO_ROOT, &r, "run", "--mode", "supervise", "--audit", audit, "--control",
			    dir, "--", run_helper_path(), "fds");
		ASSERT_EQ(r.status, 0);
		ASSERT_CONTAINS(r.out, "fds ");
		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			if (strstr(r.out, ours[i]))
				FAIL("%s mode: the command inherited %s:\n%s", modes[mode], ours[i],
				     r.out);
	}
	unlink(audit);
	rmdir(tmp);
}

TEST(exit_status_and_signals_are_the_commands)
{
	setup();
	for (int mode = 0; mode < 2; mode++) {
		struct cli_result r;
		CLI(WHO_ROOT, &r, "run", "--mode", modes[mode], "--", run_helper_path(), "exit", "7");
		ASSERT_EQ(r.status, 7);
		CLI(WHO_ROOT, &r, "run", "--mode", modes[mode], "--", run_helper_path(), "raise", "9");
		ASSERT_EQ(r.status, 128 + SIGKILL);
		CLI(WHO_ROOT, &r, "run", "--mode", modes[mode], "--", run_helper_path(), "raise", "15");
		ASSERT_EQ(r.status, 128 + SIGTERM);
	}
}

static void ignore_sigchld(void)
{
	signal(SIGCHLD, SIG_IGN);
}

/* An invoker that ignores SIGCHLD (inherited across exec) would have the
 * kernel reap the command behind uffdguard's back. */
TEST_TIMEOUT(ignored_sigchld_still_gives_the_exit_status, 30)
{
	setup();
	for (int mode = 0; mode < 2; mode++) {
		int out, status;
		pid_t pid = spawn((const char *const[]){ "run", "--mode", modes[mode], "--", run_helper_path(),
							 "sigchld", NULL },
				  &out, ignore_sigchld);
		char *text = read_all(out);
		ASSERT_SYS(waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(WEXITSTATUS(status), 7);
		/* The command still gets the disposition it was given. */
		ASSERT_EQ(line_value(text, "sigchld-ignored"), 1);
		free(text);
	}
}

TEST(sigterm_is_forwarded)
{
	setup();
	for (int mode = 0; mode < 2; mode++) {
		int out, status;
		char buf[16] = "";
		pid_t pid = spawn((const char *const[]){ "run", "--mode", modes[mode], "--", run_helper_path(),
							 "wait-term", NULL },
				  &out, NULL);
		ASSERT_EQ(read(out, buf, 6), 6); /* "ready\n": the handler is in place */
		ASSERT_SYS(kill(pid, SIGTERM));
		ASSERT_SYS(waitpid(pid, &status, 0));
		close(out);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(WEXITSTATUS(status), 42); /* the helper's answer to SIGTERM */
	}
}

TEST(exec_failure_is_126_or_127)
{
	int out, status;

	setup();
	pid_t pid = spawn((const char *const[]){ "run", "--", "/nonexistent/cmd", NULL }, &out, NULL);
	ASSERT_SYS(waitpid(pid, &status, 0));
	close(out);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 127);
	pid = spawn((const char *const[]){ "run", "--", "/proc/self/status", NULL }, &out, NULL);
	ASSERT_SYS(waitpid(pid, &status, 0));
	close(out);
	ASSERT_EQ(WEXITSTATUS(status), 126);
}

TEST(bad_input_is_refused_before_starting)
{
	const char *h = run_helper_path();

	setup();
	cli_refused(125, "valid policies are allow, user-mode-only, deny",
		(const char *const[]){ "run", "--policy", "permissive", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "valid values are 0 and 1",
		(const char *const[]){ "run", "--set", "unprivileged_userfaultfd=2", "--", h, "touch",
				       "TOUCH", NULL });
	cli_refused(125, "unknown knob",
		(const char *const[]){ "run", "--set", "sysctl=1", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "missing '--'",
		(const char *const[]){ "run", "--policy", "deny", h, "touch", "TOUCH", NULL });
	cli_refused(125, "missing the command", (const char *const[]){ "run", "--policy", "deny", "--", NULL });
	cli_refused(125, "--set ignore_cap_sys_ptrace=0: the filter cannot see capabilities",
		(const char *const[]){ "run", "--set", "ignore_cap_sys_ptrace=0", "--", h, "touch",
				       "TOUCH", NULL });
	cli_refused(125, "valid modes are filter and supervise",
		(const char *const[]){ "run", "--mode", "trace", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "need --mode supervise",
		(const char *const[]){ "run", "--audit", "/tmp/x", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "cannot open the audit file",
		(const char *const[]){ "run", "--mode", "supervise", "--audit",
				       "/nonexistent/dir/audit", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "control directory",
		(const char *const[]){ "run", "--mode", "supervise", "--control",
				       "/nonexistent/dir/ctl", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "from 0 (no limit) to 1000000",
		(const char *const[]){ "run", "--mode", "supervise", "--audit", "/tmp/x",
				       "--audit-rate", "10/s", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "give --audit too",
		(const char *const[]){ "run", "--mode", "supervise", "--audit-rate", "5", "--", h,
				       "touch", "TOUCH", NULL });
	cli_refused(125, "give --control too",
		(const char *const[]){ "run", "--mode", "supervise", "--state", "/tmp/x", "--", h,
				       "touch", "TOUCH", NULL });
	cli_refused(125, "valid values are started",
		(const char *const[]){ "run", "--ready", "now", "--", h, "touch", "TOUCH", NULL });
	cli_refused(125, "--audit needs a value",
		(const char *const[]){ "run", "--mode", "supervise", "--audit", "", "--", h, "touch",
				       "TOUCH", NULL });
	cli_refused(125, "writable by group or others",
		(const char *const[]){ "run", "--mode", "supervise", "--control", "/tmp", "--", h,
				       "touch", "TOUCH", NULL });
	/* A symlink (planted where DIR was to be created) to a directory that
	 * would pass the checks. */
	char tmp[] = "/tmp/uffdguard-link.XXXXXX", link[PATH_MAX];
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(link, sizeof(link), "%s/ctl", tmp);
	ASSERT_SYS(symlink(tmp, link));
	cli_refused(125, "control directory",
		(const char *const[]){ "run", "--mode", "supervise", "--control", link, "--", h,
				       "touch", "TOUCH", NULL });
	unlink(link);
	rmdir(tmp);
}

/* A parent filter that makes seccomp unavailable, as on a kernel without
 * it (or inside a sandbox that forbids nesting). */
static void no_seccomp(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(seccomp), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1,
			     SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP)) < 0 ||
	    seccomp_load(ctx) < 0)
		_exit(98);
	seccomp_release(ctx);
}

/* uffdguard as pid 1 of a new pid namespace that still sees the old
 * /proc, as after `unshare -p -f` without --mount-proc. */
static void foreign_proc(void)
{
	if (unshare(CLONE_NEWPID) < 0)
		_exit(98);
	pid_t pid = fork();
	if (pid < 0)
		_exit(98);
	if (pid == 0)
		return; /* exec uffdguard */
	int status;
	waitpid(pid, &status, 0);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* Else the supervisor would judge a caller by the credentials of the
 * process with the same number in the other namespace (pid 2: kthreadd). */
TEST(supervise_refuses_a_proc_of_another_pid_namespace)
{
	int out, status;

	setup();
	pid_t pid = spawn((const char *const[]){ "run", "--mode", "supervise", "--policy",
						 "user-mode-only", "--", run_helper_path(), "probe", "unpriv", "-",
						 NULL },
			  &out, foreign_proc);
	char *text = read_all(out);
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) != 125)
		FAIL("exit %d, want 125; the command ran:\n%s", WEXITSTATUS(status), text);
	ASSERT_TRUE(strstr(text, "sys ") == NULL);
	free(text);
}

TEST(no_seccomp_means_no_command)
{
	char tmp[] = "/tmp/uffdguard-noseccomp.XXXXXX", flag[PATH_MAX];

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(flag, sizeof(flag), "%s/started", tmp);
	for (int mode = 0; mode < 2; mode++) {
		int out, status;
		pid_t pid = spawn((const char *const[]){ "run", "--mode", modes[mode], "--", run_helper_path(),
							 "touch", flag, NULL },
				  &out, no_seccomp);
		ASSERT_SYS(waitpid(pid, &status, 0));
		close(out);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(WEXITSTATUS(status), 125);
		ASSERT_TRUE(access(flag, F_OK) < 0);
	}
	rmdir(tmp);
}

/* The text of a file (NULL if it cannot be read). */
static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? read_all(fd) : NULL;
}

/* The audit records of a file, each line parsed (fails on a line that is
 * not whole JSON): how many there are of `type`, and the sum of their
 * "count" fields. */
static int audit_records(const char *path, const char *type, long *count_sum)
{
	char *text = slurp(path);
	int n = 0;

	if (count_sum)
		*count_sum = 0;
	ASSERT_TRUE(text != NULL);
	if (*text && text[strlen(text) - 1] != '\n')
		FAIL("%s ends in a cut record:\n%s", path, text);
	for (char *save, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_object *o = json_tokener_parse(line), *v;
		if (!o)
			FAIL("%s: not a whole JSON record: %s", path, line);
		if (json_object_object_get_ex(o, "type", &v) &&
		    !strcmp(json_object_get_string(v), type)) {
			n++;
			if (count_sum && json_object_object_get_ex(o, "count", &v))
				*count_sum += json_object_get_int64(v);
		}
		json_object_put(o);
	}
	free(text);
	return n;
}

/* The count of lost audit records in uffdguard's last word ("audit: N
 * records lost..."), 0 if it says none. */
static long lost_records(const char *err)
{
	const char *last = NULL;

	for (const char *p = err; (p = strstr(p, "audit: ")); p++)
		if (strspn(p + 7, "0123456789") && !strncmp(p + 7 + strspn(p + 7, "0123456789"),
							    " records lost", 13))
			last = p;
	return last ? atol(last + 7) : 0;
}

/* --audit is opened as root on the word of whoever runs uffdguard: in a
 * sticky world-writable directory, another user must not choose the
 * file by planting a link, a file of theirs, a writable file or a second
 * name of a file of root's. */
TEST(audit_file_is_one_no_other_user_chooses)
{
	char tmp[] = "/tmp/uffdguard-aud.XXXXXX", target[PATH_MAX], audit[PATH_MAX];
	const char *h = run_helper_path();
	uid_t other = identity_unused_id();
	const char *const args[] = { "run", "--mode", "supervise", "--audit", audit, "--", h,
				     "touch", "TOUCH", NULL };

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	ASSERT_SYS(chmod(tmp, 01777));
	snprintf(target, sizeof(target), "%s/root-script", tmp);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", tmp);
	int fd = ASSERT_SYS(open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700));
	ASSERT_EQ(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);

	ASSERT_SYS(symlink(target, audit));
	ASSERT_SYS(lchown(audit, other, other));
	cli_refused(125, "is a symbolic link owned by uid", args);
	ASSERT_SYS(unlink(audit));

	/* A link of another user on the way, not only at the end. */
	char sub[PATH_MAX + 8], via[PATH_MAX + 32];
	snprintf(sub, sizeof(sub), "%s/sub", tmp);
	snprintf(via, sizeof(via), "%s/sub/audit.jsonl", tmp);
	ASSERT_SYS(symlink(tmp, sub));
	ASSERT_SYS(lchown(sub, other, other));
	cli_refused(125, "is a symbolic link owned by uid",
		(const char *const[]){ "run", "--mode", "supervise", "--audit", via, "--", h,
				       "touch", "TOUCH", NULL });
	ASSERT_TRUE(access(audit, F_OK) < 0 && errno == ENOENT);
	ASSERT_SYS(unlink(sub));

	ASSERT_SYS(link(target, audit));
	cli_refused(125, "has 2 names", args);
	ASSERT_SYS(unlink(audit));

	fd = ASSERT_SYS(open(audit, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	close(fd);
	ASSERT_SYS(chown(audit, other, other));
	cli_refused(125, "neither root nor the invoking user", args);
	ASSERT_SYS(chown(audit, 0, 0));
	ASSERT_SYS(chmod(audit, 0622));
	cli_refused(125, "writable by group or others", args);
	ASSERT_SYS(unlink(audit));

	/* A directory of another user on the way, who could rename what it
	 * holds; one everyone may write that is not sticky. */
	char odir[PATH_MAX + 8], inside[PATH_MAX + 32];
	snprintf(odir, sizeof(odir), "%s/dir", tmp);
	snprintf(inside, sizeof(inside), "%s/dir/audit.jsonl", tmp);
	const char *const via_dir[] = { "run", "--mode", "supervise", "--audit", inside, "--", h,
					"touch", "TOUCH", NULL };
	ASSERT_SYS(mkdir(odir, 0755));
	ASSERT_SYS(chown(odir, other, other));
	cli_refused(125, "the directory /tmp/", via_dir);
	cli_refused(125, "/dir belongs to uid", via_dir);
	ASSERT_SYS(chown(odir, 0, 0));
	ASSERT_SYS(chmod(odir, 0777));
	cli_refused(125, "/dir is writable by everyone and not sticky", via_dir);
	ASSERT_TRUE(access(inside, F_OK) < 0 && errno == ENOENT);
	ASSERT_SYS(rmdir(odir));

	char *text = slurp(target);
	ASSERT_STREQ(text, "#!/bin/sh\n");
	free(text);

	/* A new path: made 0600, root's, and written. */
	struct cli_result r;
	CLI(WHO_ROOT, &r, "run", "--mode", "supervise", "--audit", audit, "--", h, "calls", "2");
	if (r.status != 0)
		FAIL("exit %d: %s", r.status, r.err);
	struct stat st;
	ASSERT_SYS(lstat(audit, &st));
	ASSERT_TRUE(S_ISREG(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_EQ(st.st_uid, 0);
	ASSERT_EQ(audit_records(audit, "decision", NULL), 2);
	unlink(audit);
	unlink(target);
	rmdir(tmp);
}

/* A fifo (or a device) as --audit: opening it could wait for a reader
 * for ever, and a reader that stops would stop every decision. */
TEST_TIMEOUT(audit_to_a_fifo_or_a_device_is_refused_at_once, 90)
{
	char tmp[] = "/tmp/uffdguard-aud.XXXXXX", fifo[PATH_MAX];
	const char *h = run_helper_path();

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmp);
	ASSERT_SYS(mkfifo(fifo, 0600));
	const char *dests[] = { fifo, "/dev/null" };
	const char *why[] = { "is a fifo, not a regular file", "is a character device, not a regular file" };
	for (int i = 0; i < 2; i++) {
		int err;
		pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--audit",
							     dests[i], "--", h, "exit", "0", NULL },
				      NULL, &err, NULL);
		/* Exits at once, with its message (well within a pipe's size). */
		ASSERT_EQ(wait_exit(pid, 60), 125);
		struct reader rd = { .fd = err };
		read_rest(&rd);
		ASSERT_CONTAINS(rd.buf, why[i]);
		close(err);
		free(rd.buf);
	}
	unlink(fifo);
	rmdir(tmp);
}

/* Nobody reads uffdguard's standard error any more: its warnings are
 * lost, but it neither dies of SIGPIPE nor changes the exit status. */
TEST_TIMEOUT(a_closed_standard_error_does_not_kill_the_supervisor, 60)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];
	int out, err;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(dir, sizeof(dir), "%s/knobs", tmp);
	pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--policy",
						     "allow", "--control", dir, "--",
						     run_helper_path(), "live", dir, NULL },
			      &out, &err, NULL);
	close(err); /* before the first warning (a bad knob value) */
	struct reader rd = { .fd = out };
	read_rest(&rd);
	ASSERT_EQ(wait_exit(pid, 50), 0);
	/* The whole scenario ran under a live supervisor. */
	ASSERT_EQ(line_value(rd.buf, "bad-unpriv-0"), EPERM);
	ASSERT_EQ(line_value(rd.buf, "allow-unpriv-0"), 0);
	close(out);
	free(rd.buf);
	rmdir(tmp);
}

/* Nobody reads uffdguard's standard error, and its pipe is full: the
 * warnings wait (or are lost), the decisions do not. */
TEST_TIMEOUT(decisions_do_not_wait_for_a_blocked_standard_error, 120)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];
	int out, err;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(dir, sizeof(dir), "%s/knobs", tmp);
	/* 2000 warnings of some 150 bytes: several times a pipe's 64 KiB. */
	pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--control",
						     dir, "--", run_helper_path(), "badvalues", dir,
						     "2000", NULL },
			      &out, &err, NULL);
	struct reader ro = { .fd = out }, re = { .fd = err };
	/* Standard error is not read until the command is done. */
	ASSERT_TRUE(read_until(&ro, "badvalues 2000 calls-refused 0", 100));
	read_rest(&re);
	read_rest(&ro);
	ASSERT_EQ(wait_exit(pid, 60), 0);
	ASSERT_CONTAINS(re.buf, "is not a valid value");
	close(out);
	close(err);
	free(ro.buf);
	free(re.buf);
	rmdir(tmp);
}

/* logrotate without copytruncate: the file is moved away, SIGHUP makes
 * uffdguard open the path again; no record is lost, and the signal is
 * not passed on to the command. */
TEST_TIMEOUT(sighup_reopens_the_audit_file_and_is_not_passed_on, 90)
{
	char tmp[] = "/tmp/uffdguard-aud.XXXXXX", audit[PATH_MAX], rotated[PATH_MAX],
	     go[PATH_MAX];
	int out;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", tmp);
	snprintf(rotated, sizeof(rotated), "%s/audit.jsonl.1", tmp);
	snprintf(go, sizeof(go), "%s/go", tmp);
	pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--audit", audit,
						     "--", run_helper_path(), "calls", "10", "then",
						     "pause", go, "calls", "10", NULL },
			      &out, NULL, NULL);
	struct reader rd = { .fd = out };
	ASSERT_TRUE(read_until(&rd, "waiting", 60));
	ASSERT_SYS(rename(audit, rotated));
	ASSERT_SYS(kill(pid, SIGHUP));
	/* Reopened: the path is made again (the case's timeout is the
	 * deadline). */
	while (access(audit, F_OK) < 0) {
		struct pollfd p = { .fd = -1 };
		poll(&p, 0, 10);
	}
	int fd = ASSERT_SYS(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	close(fd);
	read_rest(&rd);
	ASSERT_EQ(wait_exit(pid, 60), 0);
	ASSERT_EQ(line_value(rd.buf, "hup"), 0);
	ASSERT_EQ(audit_records(rotated, "decision", NULL), 10);
	ASSERT_EQ(audit_records(audit, "decision", NULL), 10);
	close(out);
	free(rd.buf);
	unlink(audit);
	unlink(rotated);
	unlink(go);
	rmdir(tmp);
}

static void small_file_limit(void)
{
	struct rlimit rl = { 2000, 2000 };
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		_exit(98);
}

/* A full disk (here: the file size limit): every record written is
 * whole, uffdguard lives on with the command's exit status, and says how
 * many records were lost and why. */
TEST_TIMEOUT(audit_on_a_full_disk_writes_whole_records_and_counts_the_loss, 60)
{
	char tmp[] = "/tmp/uffdguard-aud.XXXXXX", audit[PATH_MAX];
	int out, err;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", tmp);
	/* 100 calls: within the default rate limit, whatever the speed. */
	pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--audit", audit,
						     "--", run_helper_path(), "calls", "100", NULL },
			      &out, &err, small_file_limit);
	struct reader ro = { .fd = out }, re = { .fd = err };
	read_rest(&ro);
	read_rest(&re);
	ASSERT_EQ(wait_exit(pid, 50), 0);
	ASSERT_CONTAINS(ro.buf, "calls 100 refused");
	ASSERT_CONTAINS(re.buf, "File too large");
	long n_lost = lost_records(re.buf);
	ASSERT_TRUE(n_lost > 0);
	struct stat st;
	ASSERT_SYS(stat(audit, &st));
	ASSERT_TRUE(st.st_size <= 2000);
	int written = audit_records(audit, "decision", NULL);
	ASSERT_TRUE(written > 0);
	ASSERT_EQ(written + n_lost, 100);
	close(out);
	close(err);
	free(ro.buf);
	free(re.buf);
	unlink(audit);
	rmdir(tmp);
}

/* A tree that calls as fast as it can gets --audit-rate records a
 * second, and a count of the others: nothing is lost unsaid. */
TEST_TIMEOUT(audit_rate_limit_says_how_many_records_it_suppressed, 60)
{
	char tmp[] = "/tmp/uffdguard-aud.XXXXXX", audit[PATH_MAX];
	struct cli_result r;
	long suppressed;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", tmp);
	CLI(WHO_ROOT, &r, "run", "--mode", "supervise", "--audit", audit, "--audit-rate", "5", "--",
	    run_helper_path(), "calls", "400");
	if (r.status != 0)
		FAIL("exit %d: %s", r.status, r.err);
	int decisions = audit_records(audit, "decision", NULL);
	int summaries = audit_records(audit, "suppressed", &suppressed);
	ASSERT_TRUE(summaries > 0);
	ASSERT_TRUE(decisions >= 5 && decisions < 400);
	ASSERT_EQ(decisions + suppressed, 400);
	ASSERT_CONTAINS(r.err, "records suppressed by the rate limit of 5 a second");
	unlink(audit);
	rmdir(tmp);
}

/* Where the supervisor's sd_journal_send() goes: a socket of the test's,
 * mounted over journald's directory in a mount namespace of its own. */
static char fake_journal[40];

static void use_fake_journal(void)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(fake_journal, "/run/systemd/journal", NULL, MS_BIND, NULL) < 0)
		_exit(98);
}

/* The journal as the destination: one entry per decision, its fields
 * each a field of the journal's native protocol. */
TEST_TIMEOUT(audit_to_the_journal_has_structured_fields, 90)
{
	char sock_path[64];
	struct stat st;
	int out;

	setup();
	if (stat("/run/systemd/journal", &st) < 0 || !S_ISDIR(st.st_mode))
		SKIP("no /run/systemd/journal to mount a socket over");
	snprintf(fake_journal, sizeof(fake_journal), "/tmp/uffdguard-journal.XXXXXX");
	ASSERT_TRUE(mkdtemp(fake_journal) != NULL);
	snprintf(sock_path, sizeof(sock_path), "%.40s/socket", fake_journal);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	int sock = ASSERT_SYS(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	ASSERT_SYS(bind(sock, (struct sockaddr *)&sa, sizeof(sa)));
	pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--audit",
						     "journal", "--audit-rate", "0", "--",
						     run_helper_path(), "calls", "4", NULL },
			      &out, NULL, use_fake_journal);
	struct reader rd = { .fd = out };
	read_rest(&rd);
	ASSERT_EQ(wait_exit(pid, 60), 0);
	int decisions = 0, start = 0;
	char msg[16384];
	ssize_t n;
	while ((n = recv(sock, msg, sizeof(msg) - 1, 0)) > 0) {
		msg[n] = '\0';
		if (strstr(msg, "\nUFFDGUARD_TYPE=start\n"))
			start++;
		if (!strstr(msg, "\nUFFDGUARD_TYPE=decision\n"))
			continue;
		decisions++;
		ASSERT_CONTAINS(msg, "\nUFFDGUARD_CALL=userfaultfd\n");
		ASSERT_CONTAINS(msg, "\nUFFDGUARD_ABI=x86_64\n");
		ASSERT_CONTAINS(msg, "\nUFFDGUARD_VERDICT=");
		ASSERT_CONTAINS(msg, "\nUFFDGUARD_UID=0\n");
		ASSERT_CONTAINS(msg, "\nSYSLOG_IDENTIFIER=uffdguard\n");
		ASSERT_CONTAINS(msg, "\nMESSAGE_ID=");
	}
	ASSERT_EQ(start, 1);
	ASSERT_EQ(decisions, 4);
	close(sock);
	close(out);
	free(rd.buf);
	unlink(sock_path);
	rmdir(fake_journal);
}

/* 2000 supplementary groups: a Groups: line of some 14 KiB in
 * /proc/PID/status, before the CapEff: line. */
static void many_groups(void)
{
	static gid_t groups[2000];

	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		groups[i] = (gid_t)(1000000 + i);
	if (setgroups(sizeof(groups) / sizeof(groups[0]), groups) < 0)
		_exit(126);
}

/* The supervisor reads the caller's status whole: a caller with
 * CAP_SYS_PTRACE and many groups is privileged, not refused. */
TEST_TIMEOUT(a_privileged_caller_with_many_groups_is_privileged, 60)
{
	struct cli_result r;

	setup();
	cli_pre_exec = many_groups;
	CLI(WHO_ROOT, &r, "run", "--mode", "supervise", "--policy", "user-mode-only", "--",
	    run_helper_path(), "probe", "root", "-");
	cli_pre_exec = NULL;
	if (r.status != 0)
		FAIL("exit %d: %s", r.status, r.err);
	/* Without the flag: only a privileged caller may. */
	ASSERT_CONTAINS(r.out, "sys 0 0\n");
	ASSERT_CONTAINS(r.out, "sys 80000 0\n");
}

/* A start that fails after making some knob files in a directory that
 * was there (empty) removes them: else the next start finds it "not
 * empty".  A tmpfs with room for the directory and two files makes the
 * third knob fail. */
TEST(control_files_made_before_a_failure_are_removed)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	ASSERT_SYS(unshare(CLONE_NEWNS)); /* this case's process only */
	ASSERT_SYS(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	if (mount("none", tmp, "tmpfs", 0, "nr_inodes=4,mode=0755") < 0) {
		rmdir(tmp);
		SKIP("cannot mount a tmpfs to try: %s", strerror(errno));
	}
	snprintf(dir, sizeof(dir), "%s/ctl", tmp);
	ASSERT_SYS(mkdir(dir, 0700));
	cli_refused(125, ": No space left on device; not starting",
		(const char *const[]){ "run", "--mode", "supervise", "--control", dir, "--",
				       run_helper_path(), "touch", "TOUCH", NULL });
	size_t left = dir_entries(dir);
	umount2(tmp, MNT_DETACH);
	rmdir(tmp);
	ASSERT_EQ(left, 0);
}

static char cgroup_dir[PATH_MAX];

/* procfs, sysfs, cgroupfs: their files are the kernel's knobs.  The host's
 * vm.unprivileged_userfaultfd is left as it was, and no cgroup is made. */
TEST(control_directory_on_a_kernel_file_system_is_refused)
{
	const char *h = run_helper_path();

	setup();
	for (int v = 0; v < 2; v++) {
		sysctl_set(v);
		/* A policy that would write the other value. */
		struct cli_result r;
		CLI(WHO_ROOT, &r, "run", "--mode", "supervise", "--policy", v ? "deny" : "allow",
		    "--control", "/proc/sys/vm", "--", h, "exit", "0");
		ASSERT_EQ(sysctl_get(), v);
		ASSERT_EQ(r.status, 125);
		ASSERT_CONTAINS(r.err, "procfs");
	}
	/* mkdir in cgroupfs makes a cgroup: refused before. */
	snprintf(cgroup_dir, sizeof(cgroup_dir), "/tmp/uffdguard-cg.XXXXXX");
	ASSERT_TRUE(mkdtemp(cgroup_dir) != NULL);
	if (mount("none", cgroup_dir, "cgroup2", 0, NULL) < 0) {
		rmdir(cgroup_dir);
		SKIP("cannot mount cgroup2 to try: %s", strerror(errno));
	}
	char cg[PATH_MAX + 32];
	snprintf(cg, sizeof(cg), "%s/uffdguard-test-control", cgroup_dir);
	cli_refused(125, "(cgroup2)",
		(const char *const[]){ "run", "--mode", "supervise", "--control", cg, "--", h,
				       "touch", "TOUCH", NULL });
	bool made = access(cg, F_OK) == 0;
	if (made)
		rmdir(cg);
	umount2(cgroup_dir, MNT_DETACH);
	rmdir(cgroup_dir);
	ASSERT_TRUE(!made);
}

/* A directory that already holds files: an administrator's, named like a
 * knob, is neither truncated, nor overwritten, nor removed. */
TEST(control_directory_with_files_is_refused_and_left_alone)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", knob[PATH_MAX];

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(knob, sizeof(knob), "%s/cover_device", tmp);
	int fd = ASSERT_SYS(open(knob, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	ASSERT_EQ(write(fd, "the administrator's\n", 20), 20);
	close(fd);
	cli_refused(125, "is not empty",
		(const char *const[]){ "run", "--mode", "supervise", "--control", tmp, "--",
				       run_helper_path(), "touch", "TOUCH", NULL });
	char *text = slurp(knob);
	ASSERT_STREQ(text, "the administrator's\n");
	free(text);
	unlink(knob);
	rmdir(tmp);
}

/* The control directory removed under the supervisor: made again, said,
 * and live changes go on there. */
TEST_TIMEOUT(control_directory_removed_is_made_again, 120)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];
	struct cli_result r;

	run_with_control("recreate", tmp, dir, &r);
	ASSERT_EQ(line_value(r.out, "recreated"), 1);
	ASSERT_EQ(line_value(r.out, "deny-unpriv-umo"), EPERM);
	ASSERT_CONTAINS(r.err, "was removed; uffdguard made it again");
	rmdir(tmp);
}

/* A knob truncated by a writer that has not written yet is a write in
 * progress: not a bad value, not rewritten; the writer's value holds. */
TEST_TIMEOUT(knob_write_in_progress_is_not_taken_for_a_value, 60)
{
	char tmp[] = "/tmp/uffdguard-ctl.XXXXXX", dir[PATH_MAX];
	struct cli_result r;

	run_with_control("inprogress", tmp, dir, &r);
	ASSERT_EQ(line_value(r.out, "during-size"), 0);
	ASSERT_CONTAINS(r.out, "after-file 1");
	ASSERT_EQ(line_value(r.out, "after-unpriv-0"), EPERM);
	if (strstr(r.err, "valid value"))
		FAIL("an empty file was taken for a bad value:\n%s", r.err);
	rmdir(tmp);
}

/* systemd's notification socket, played by the test. */
static char notify_path[64];

static void use_notify_socket(void)
{
	setenv("NOTIFY_SOCKET", notify_path, 1);
}

/* The next notification holding `want`; fails after `seconds`. */
static void notified(int sock, const char *want, char *msg, size_t size, int seconds)
{
	double deadline = now_ms() + seconds * 1000.0;

	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		if (poll(&p, 1, 100) > 0) {
			ssize_t n = recv(sock, msg, size - 1, 0);
			if (n > 0) {
				msg[n] = '\0';
				if (strstr(msg, want))
					return;
			}
		}
		if (now_ms() > deadline)
			FAIL("no notification with \"%s\" after %d s", want, seconds);
	}
}

/* As a service of Type=notify: READY=1 once the command runs under the
 * policy, a reload (SIGHUP) announced, and with --ready command the
 * command's own READY=1 the only one. */
TEST_TIMEOUT(a_service_is_ready_once_the_command_runs, 90)
{
	char tmp[] = "/tmp/uffdguard-svc.XXXXXX", go[PATH_MAX], msg[4096];
	int out;

	setup();
	ASSERT_TRUE(mkdtemp(tmp) != NULL);
	snprintf(go, sizeof(go), "%s/go", tmp);
	snprintf(notify_path, sizeof(notify_path), "%.40s/notify", tmp);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify_path);
	int sock = ASSERT_SYS(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	ASSERT_SYS(bind(sock, (struct sockaddr *)&sa, sizeof(sa)));

	pid_t pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--policy",
						     "user-mode-only", "--", run_helper_path(),
						     "pause", go, "exit", "0", NULL },
			      &out, NULL, use_notify_socket);
	struct reader rd = { .fd = out };
	notified(sock, "READY=1", msg, sizeof(msg), 60);
	ASSERT_CONTAINS(msg, "STATUS=supervising: policy user-mode-only");
	ASSERT_TRUE(read_until(&rd, "waiting", 60));
	ASSERT_SYS(kill(pid, SIGHUP));
	notified(sock, "RELOADING=1", msg, sizeof(msg), 60);
	ASSERT_CONTAINS(msg, "MONOTONIC_USEC=");
	notified(sock, "READY=1", msg, sizeof(msg), 60);
	int fd = ASSERT_SYS(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	close(fd);
	read_rest(&rd);
	ASSERT_EQ(wait_exit(pid, 60), 0);
	ASSERT_EQ(line_value(rd.buf, "hup"), 0);
	close(out);
	free(rd.buf);

	pid = cli_spawn((const char *const[]){ "run", "--mode", "supervise", "--ready", "command",
					       "--", run_helper_path(), "notify", NULL },
			&out, NULL, use_notify_socket);
	rd = (struct reader){ .fd = out };
	read_rest(&rd);
	ASSERT_EQ(wait_exit(pid, 60), 0);
	ASSERT_CONTAINS(rd.buf, "notified 1");
	int ready = 0;
	ssize_t n;
	while ((n = recv(sock, msg, sizeof(msg) - 1, 0)) > 0) {
		msg[n] = '\0';
		if (strstr(msg, "READY=1")) {
			ready++;
			ASSERT_CONTAINS(msg, "STATUS=the command is ready");
		}
	}
	ASSERT_EQ(ready, 1);
	close(out);
	free(rd.buf);
	close(sock);
	unlink(notify_path);
	unlink(go);
	rmdir(tmp);
}
