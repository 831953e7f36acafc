// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard status on the real kernel: the verdict, the exit code and the
 * JSON fields under real configurations (sysctl 0 and 1, a private
 * world-accessible device, inside uffdguard run, a non-root caller), and
 * a hung probe that must leave no process behind.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "cleanup.h"
#include "cli-run.h"
#include "harness.h"
#include "identity.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

#define UNPRIV "probe.identities.0"
#define PTRACE "probe.identities.1"
#define CALLER "probe.identities.2"

static const char *const point_names[] = { "setxattr", "msgsnd", "pipe_write", "sendmsg", "read" };
#define N_POINTS 5

static void assert_all_refused(json_object *j, const char *who)
{
	char path[128];

	snprintf(path, sizeof(path), "%s.stall.ran", who);
	ASSERT_TRUE(jbool(j, path));
	for (int p = 0; p < N_POINTS; p++) {
		snprintf(path, sizeof(path), "%s.stall.points.%d.point", who, p);
		ASSERT_STREQ(jstr(j, path), point_names[p]);
		snprintf(path, sizeof(path), "%s.stall.points.%d.outcome", who, p);
		ASSERT_STREQ(jstr(j, path), "refused");
		snprintf(path, sizeof(path), "%s.stall.points.%d.errno", who, p);
		ASSERT_STREQ(jstr(j, path), "EFAULT");
		snprintf(path, sizeof(path), "%s.stall.points.%d.held", who, p);
		ASSERT_TRUE(!jbool(j, path));
	}
}

/* Every point held for at least the hold the probe was given. */
static void assert_all_held(json_object *j, const char *who, int hold_ms)
{
	char path[128];

	ASSERT_EQ(jint(j, "probe.hold_ms"), hold_ms);
	for (int p = 0; p < N_POINTS; p++) {
		snprintf(path, sizeof(path), "%s.stall.points.%d.outcome", who, p);
		ASSERT_STREQ(jstr(j, path), "held");
		snprintf(path, sizeof(path), "%s.stall.points.%d.held", who, p);
		ASSERT_TRUE(jbool(j, path));
		snprintf(path, sizeof(path), "%s.stall.points.%d.held_ms", who, p);
		ASSERT_GE(jint(j, path), hold_ms);
	}
}

static const char *attempt(json_object *j, const char *who, int way)
{
	char path[128];
	snprintf(path, sizeof(path), "%s.attempts.%d.errno", who, way);
	return jstr(j, path);
}

/* vm.unprivileged_userfaultfd at `knob`, a private device node owned by
 * uid:gid with `mode` (prepare(), if any, adds to it), then
 * `status --json --device NODE --hold HOLD`.  The node's path is left in
 * dev, the node itself is removed. */
static json_object *status_with_device(struct cli_result *r, char *dev, int knob, uid_t uid,
				       gid_t gid, mode_t mode, void (*prepare)(const char *dev),
				       const char *hold)
{
	require_root();
	sysctl_set(knob);
	make_private_device(dev, uid, gid, mode);
	if (prepare)
		prepare(dev);
	CLI(WHO_ROOT, r, "status", "--json", "--device", dev, "--hold", hold ? hold : "50",
	    PROBE_DEADLINE);
	remove_private_device(dev);
	return cli_json(r);
}

TEST(usage_errors_exit_2)
{
	static const char *const bad[][4] = {
		{ "status", "--bogus", NULL },     { "status", "--hold", NULL },
		{ "status", "--hold", "abc" },     { "status", "--hold", "0" },
		{ "status", "extra", NULL },       { "status", "--device", "" },
	};
	struct cli_result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cli_run(WHO_ROOT, bad[i], &r);
		ASSERT_EQ(r.status, 2);
		ASSERT_CONTAINS(r.err, "Usage: uffdguard status");
		ASSERT_EQ(r.out[0], '\0');
	}
	CLI(WHO_ROOT, &r, "status", "--json", "--quiet");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "exclude each other");
	CLI(WHO_ROOT, &r, "status", "--help");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "Exit status: 0 protected, 1 exposed");
}

TEST(no_options_as_root_gives_a_verdict)
{
	require_root();
	struct cli_result r;
	CLI(WHO_ROOT, &r, "status");
	ASSERT_TRUE(r.status == 0 || r.status == 1);
	ASSERT_CONTAINS(r.out, "kernel          Linux ");
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = ");
	ASSERT_CONTAINS(r.out, "live probe");
	ASSERT_CONTAINS(r.out, "stall probe");
	ASSERT_CONTAINS(r.out, r.status ? "verdict: exposed (exit 1)" : "verdict: protected (exit 0)");
}

TEST(sysctl_0_and_root_only_device_are_protected)
{
	char dev[PATH_MAX];
	struct cli_result r;
	json_object *j = status_with_device(&r, dev, 0, 0, 0, 0600, NULL, NULL);
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(jint(j, "schema_version"), 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_EQ(jint(j, "verdict.exit_code"), 0);
	ASSERT_TRUE(jbool(j, "verdict.complete"));
	ASSERT_TRUE(jbool(j, "kernel.userfaultfd"));
	ASSERT_TRUE(jbool(j, "kernel.user_mode_only"));
	ASSERT_EQ(jint(j, "sysctl.value"), 0);
	ASSERT_STREQ(jstr(j, "sysctl.policy"), "user-mode-only");
	ASSERT_STREQ(jstr(j, "device.path"), dev);
	ASSERT_STREQ(jstr(j, "device.mode"), "0600");
	ASSERT_TRUE(jbool(j, "device.userfaultfd_device"));
	ASSERT_TRUE(!jbool(j, "device.world_accessible"));
	ASSERT_EQ(json_object_array_length(jat(j, "device.unprivileged_access")), 0);
	ASSERT_STREQ(jstr(j, "process.marker_errno"), "EINVAL");
	ASSERT_TRUE(jat(j, "process.uffdguard") == NULL);

	ASSERT_EQ(jint(j, UNPRIV ".uid"), identity_unused_id());
	ASSERT_TRUE(!jbool(j, UNPRIV ".cap_sys_ptrace"));
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM");
	ASSERT_STREQ(attempt(j, UNPRIV, 1), "null"); /* user-mode-only: ok */
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "EACCES");
	ASSERT_STREQ(attempt(j, UNPRIV, 3), "EACCES");
	/* CAP_SYS_PTRACE alone is privileged for the syscall. */
	ASSERT_TRUE(jbool(j, PTRACE ".cap_sys_ptrace"));
	ASSERT_STREQ(attempt(j, PTRACE, 0), "null");
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.descriptor"), "syscall+user-mode-only");
	assert_all_refused(j, UNPRIV);
}

TEST(sysctl_1_is_exposed_for_the_whole_hold)
{
	char dev[PATH_MAX];
	struct cli_result r;
	json_object *j = status_with_device(&r, dev, 1, 0, 0, 0600, NULL, "80");
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "exposed");
	ASSERT_EQ(jint(j, "verdict.exit_code"), 1);
	ASSERT_EQ(jint(j, "sysctl.value"), 1);
	ASSERT_STREQ(jstr(j, "sysctl.policy"), "allow");
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "null");
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.descriptor"), "syscall");
	assert_all_held(j, UNPRIV, 80);
}

TEST(text_reports_held_and_refused)
{
	require_root();
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	struct cli_result r;

	sysctl_set(0);
	CLI(WHO_ROOT, &r, "status", "--device", dev);
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "refused with EFAULT in ");
	ASSERT_CONTAINS(r.out, "verdict: protected (exit 0)");

	sysctl_set(1);
	CLI(WHO_ROOT, &r, "status", "--device", dev, "--hold", "60", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.out, "hold 60 ms");
	/* Every point held for the hold or a little more (any later load). */
	int rows = 0;
	for (const char *at = r.out; (at = strstr(at, "held ")); at++) {
		int ms = -1;
		if (sscanf(at, "held %d ms (unbounded)", &ms) != 1)
			continue; /* the verdict's "held the kernel" */
		ASSERT_GE(ms, 60);
		rows++;
	}
	ASSERT_EQ(rows, 5);
	ASSERT_CONTAINS(r.out, "verdict: exposed (exit 1)");

	CLI(WHO_ROOT, &r, "status", "--quiet", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 1);
	ASSERT_EQ(r.out[0], '\0');
}

TEST(world_accessible_device_is_exposed_despite_sysctl_0)
{
	char dev[PATH_MAX];
	struct cli_result r;
	json_object *j = status_with_device(&r, dev, 0, 0, 0, 0666, NULL, NULL);
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "exposed");
	ASSERT_STREQ(jstr(j, "device.mode"), "0666");
	ASSERT_TRUE(jbool(j, "device.world_accessible"));
	ASSERT_GT(json_object_array_length(jat(j, "device.unprivileged_access")), 0);
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM"); /* the syscall refuses... */
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "null"); /* ...the device does not */
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.descriptor"), "device");
	assert_all_held(j, UNPRIV, 50);
	/* What to do names the node. */
	char want[2 * PATH_MAX + 64];
	snprintf(want, sizeof(want), "chown root:root %s && chmod 0600 %s", dev, dev);
	ASSERT_CONTAINS(jstr(j, "verdict.fixes.0.fix"), want);
	ASSERT_CONTAINS(jstr(j, "verdict.fixes.0.reason"), "is open to unprivileged processes");
}

/* Each reason for "exposed" comes with the command that removes it, in
 * both outputs; "protected" has none. */
TEST(exposed_reasons_carry_the_command_that_fixes_them)
{
	require_root();
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	struct cli_result r;

	sysctl_set(1);
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 1);
	ASSERT_EQ(json_object_array_length(jat(j, "verdict.fixes")), 1);
	ASSERT_CONTAINS(jstr(j, "verdict.fixes.0.reason"),
			"without UFFD_USER_MODE_ONLY is allowed");
	ASSERT_CONTAINS(jstr(j, "verdict.fixes.0.fix"), "uffdguard sysctl apply user-mode-only");
	CLI(WHO_ROOT, &r, "status", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.out, "is allowed to unprivileged processes (vm.unprivileged_userfaultfd = "
			       "1: every process may create descriptors that handle kernel-mode "
			       "faults)\n    fix: uffdguard sysctl apply user-mode-only --persist");

	sysctl_set(0);
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	j = cli_json(&r);
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(json_object_array_length(jat(j, "verdict.fixes")), 0);
}

/* The probe's unused uid is not in that group, but its members can open
 * the device, which ignores the sysctl: exposed, not protected. */
TEST(device_owned_by_a_group_is_exposed)
{
	char dev[PATH_MAX];
	uid_t id = identity_unused_id();
	struct cli_result r;
	json_object *j = status_with_device(&r, dev, 0, 0, id - 1, 0660, NULL, NULL);
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "exposed");
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "EACCES");
	char want[64];
	snprintf(want, sizeof(want), "(gid %u, the group)", (unsigned)(id - 1));
	ASSERT_CONTAINS(jstr(j, "device.unprivileged_access.0"), want);
	ASSERT_CONTAINS(jstr(j, "verdict.reasons.0"), want);
	ASSERT_CONTAINS(jstr(j, "verdict.warnings.0"), want);
}

/* system.posix_acl_access in the kernel's format: a version word, then
 * {tag, perm, id} entries sorted by tag and id.  `before` named users
 * with no permission (uids 1000...) precede user:uid rw-. */
static void set_acl_user_rw(const char *path, uid_t uid, unsigned before)
{
	struct acl_e {
		uint16_t tag, perm;
		uint32_t id;
	} __attribute__((packed));
	struct {
		uint32_t version;
		struct acl_e e[32];
	} __attribute__((packed)) acl = { 2, { { 0x01, 6, UINT32_MAX } } }; /* user_obj rw- */
	size_t n = 1;

	ASSERT_LT(before, 27); /* 1 + before + 4 entries fit in e[] */
	ASSERT_TRUE(uid >= 1000 + before);
	for (unsigned k = 0; k < before; k++)
		acl.e[n++] = (struct acl_e){ 0x02, 0, 1000 + k }; /* user:1000+k --- */
	acl.e[n++] = (struct acl_e){ 0x02, 6, uid };              /* user:uid rw- */
	acl.e[n++] = (struct acl_e){ 0x04, 0, UINT32_MAX };       /* group_obj --- */
	acl.e[n++] = (struct acl_e){ 0x10, 6, UINT32_MAX };       /* mask rw- */
	acl.e[n++] = (struct acl_e){ 0x20, 0, UINT32_MAX };       /* other --- */
	if (setxattr(path, "system.posix_acl_access", &acl, 4 + n * 8, 0) < 0) {
		int err = errno;
		remove_private_device(path);
		if (err == EOPNOTSUPP)
			SKIP("no POSIX ACLs on the file system of /tmp");
		FAIL("setxattr(system.posix_acl_access): %s", strerror(err));
	}
}

static void acl_for_the_probe(const char *dev)
{
	set_acl_user_rw(dev, identity_unused_id(), 0);
}

TEST(device_open_by_acl_is_exposed)
{
	char dev[PATH_MAX], want[64];
	uid_t id = identity_unused_id();
	struct cli_result r;
	json_object *j = status_with_device(&r, dev, 0, 0, 0, 0600, acl_for_the_probe, NULL);
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "device.acl.1.tag"), "user");
	ASSERT_EQ(jint(j, "device.acl.1.id"), id);
	ASSERT_STREQ(jstr(j, "device.acl.1.perm"), "rw-");
	snprintf(want, sizeof(want), "(uid %u, by ACL)", (unsigned)id);
	ASSERT_CONTAINS(jstr(j, "device.unprivileged_access.0"), want);
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "null");
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.descriptor"), "device");
}

#define LONG_ACL_BEFORE 20
#define LONG_ACL_UID (1000 + LONG_ACL_BEFORE)

static void long_acl_for_another_user(const char *dev)
{
	set_acl_user_rw(dev, LONG_ACL_UID, LONG_ACL_BEFORE);
}

/* An ACL longer than any fixed buffer, whose last named user (not the
 * probe's uid) may open the device. */
TEST(device_open_by_a_long_acl_is_exposed)
{
	char dev[PATH_MAX], want[64];
	ASSERT_TRUE(identity_unused_id() != LONG_ACL_UID);
	struct cli_result r;
	json_object *j =
		status_with_device(&r, dev, 0, 0, 0, 0600, long_acl_for_another_user, NULL);
	ASSERT_EQ(r.status, 1);
	ASSERT_EQ(json_object_array_length(jat(j, "device.acl")), LONG_ACL_BEFORE + 5);
	snprintf(want, sizeof(want), "(uid %u, by ACL)", (unsigned)LONG_ACL_UID);
	ASSERT_CONTAINS(jstr(j, "device.unprivileged_access.0"), want);
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "EACCES");
}

static void drop_setuid(void)
{
	if (prctl(PR_CAPBSET_DROP, 7 /* CAP_SETUID */, 0, 0, 0) < 0)
		_exit(126);
}

/* Root without CAP_SETUID cannot switch to an unprivileged uid, and as
 * itself it has CAP_SYS_PTRACE: nothing unprivileged was tried, so the
 * verdict is unknown (exit 4), never "protected". */
TEST(no_unprivileged_probe_is_not_protected)
{
	require_root();
	sysctl_set(0);
	struct cli_result r;
	cli_pre_exec = drop_setuid;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", "/nonexistent/userfaultfd");
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 4);
	ASSERT_STREQ(jstr(j, "verdict.status"), "undetermined");
	ASSERT_EQ(jint(j, "verdict.exit_code"), 4);
	ASSERT_TRUE(!jbool(j, "verdict.complete"));
	ASSERT_CONTAINS(jstr(j, "verdict.not_checked.0"), "CAP_SYS_PTRACE");
	ASSERT_CONTAINS(jstr(j, UNPRIV ".why_not"), "no CAP_SETUID");
	ASSERT_TRUE(jbool(j, CALLER ".ran"));
	ASSERT_TRUE(jbool(j, CALLER ".cap_sys_ptrace"));
	CLI(WHO_ROOT, &r, "status");
	cli_pre_exec = NULL;
	ASSERT_EQ(r.status, 4);
	ASSERT_CONTAINS(r.out, "verdict: undetermined (exit 4)");
}

/* Six descriptors: status holds 0-2 and its probe pipes, so the probe
 * child runs out of descriptors on the device's USERFAULTFD_IOC_NEW. */
static void six_fds(void)
{
	struct rlimit rl = { 6, 6 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		_exit(126);
}

/* The probe's device attempt fails with EMFILE, which is no refusal: the
 * world-accessible device still makes the verdict "exposed". */
TEST(device_attempt_failing_for_another_reason_is_not_a_refusal)
{
	char dev[PATH_MAX];
	struct cli_result r;
	cli_pre_exec = six_fds;
	json_object *j = status_with_device(&r, dev, 0, 0, 0, 0666, NULL, NULL);
	cli_pre_exec = NULL;
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM");
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "EMFILE");
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "exposed");
	ASSERT_TRUE(!jbool(j, "verdict.complete"));
	ASSERT_CONTAINS(jstr(j, "verdict.not_checked.0"), "device attempt failed with EMFILE");
}

TEST(non_root_caller_probes_as_itself)
{
	require_root();
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	struct cli_result r;

	sysctl_set(0);
	/* Not everything could be checked: never "protected"... */
	CLI(WHO_UNPRIV, &r, "status", "--json", "--device", dev);
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 4);
	ASSERT_STREQ(jstr(j, "verdict.status"), "undetermined");
	ASSERT_TRUE(!jbool(j, "verdict.complete"));
	ASSERT_CONTAINS(json_object_to_json_string(jat(j, "verdict.reasons")), "--accept-partial");
	CLI(WHO_UNPRIV, &r, "status", "--device", dev);
	ASSERT_EQ(r.status, 4);
	ASSERT_CONTAINS(r.out, "verdict: undetermined (exit 4)");
	ASSERT_CONTAINS(r.out, "not checked: not root");
	/* ...unless the caller takes the part that could. */
	CLI(WHO_UNPRIV, &r, "status", "--json", "--device", dev, "--accept-partial");
	j = cli_json(&r);
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_TRUE(!jbool(j, "verdict.complete"));
	ASSERT_GT(json_object_array_length(jat(j, "verdict.not_checked")), 0);
	ASSERT_CONTAINS(jstr(j, "verdict.not_checked.0"), "not root");
	ASSERT_TRUE(!jbool(j, UNPRIV ".ran"));
	ASSERT_CONTAINS(jstr(j, UNPRIV ".why_not"), "cannot switch");
	ASSERT_TRUE(!jbool(j, PTRACE ".ran"));
	ASSERT_TRUE(jbool(j, CALLER ".ran"));
	ASSERT_EQ(jint(j, CALLER ".uid"), identity_unused_id());
	ASSERT_STREQ(attempt(j, CALLER, 0), "EPERM");
	assert_all_refused(j, CALLER);

	sysctl_set(1);
	CLI(WHO_UNPRIV, &r, "status", "--json", "--device", dev);
	j = cli_json(&r);
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "exposed");
	assert_all_held(j, CALLER, 50);

	CLI(WHO_UNPRIV, &r, "status", "--device", dev);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.out, "not checked: not root");
}

/* A hold far past the deadline: the probe child is stuck inside the
 * kernel when its deadline passes.  As a subreaper we would inherit any
 * process status left behind. */
TEST(hung_probe_is_killed_and_reaped)
{
	require_root();
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	sysctl_set(1);
	ASSERT_SYS(prctl(PR_SET_CHILD_SUBREAPER, 1));

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "10000",
	    "--probe-timeout", "300");
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 1);
	ASSERT_EQ(jint(j, "probe.timeout_ms"), 300);
	ASSERT_TRUE(jbool(j, UNPRIV ".timed_out"));
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.points.0.outcome"), "timeout");
	ASSERT_TRUE(jbool(j, UNPRIV ".stall.points.0.held"));
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.points.1.outcome"), "not_run");
	ASSERT_TRUE(!jbool(j, "verdict.complete"));

	errno = 0;
	ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1); /* no orphan came to us */
	ASSERT_EQ(errno, ECHILD);
}

static int message_queues(void)
{
	FILE *f = fopen("/proc/sysvipc/msg", "re");
	char line[512];
	int n = -1; /* the header */

	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

/* Killed while held inside msgsnd(): the queue, which outlives the
 * process, is removed too.  The deadline falls inside the second hold
 * whenever the probe reaches its first stall point within 2 s (a
 * sanitizer build on a loaded machine took more than the 0.5 s this
 * case allowed before). */
TEST(probe_killed_in_msgsnd_leaves_no_queue)
{
	require_root();
	/* Queues are counted in an IPC namespace of our own: other suites on
	 * this machine create theirs meanwhile. */
	ASSERT_SYS(unshare(CLONE_NEWIPC));
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	sysctl_set(1);
	int before = message_queues();

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "4000",
	    "--probe-timeout", "6000");
	json_object *j = cli_json(&r);
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.points.0.outcome"), "held");
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.points.1.outcome"), "timeout");
	ASSERT_EQ(message_queues(), before);
}

/* A process held in msgsnd() when `status` itself is killed: its System
 * V queue, which outlives processes, must not stay behind (SIGTERM: the
 * probe cleans up first; SIGKILL: the queue lived in the probe child's own
 * IPC namespace and went with it). */
/* A child of `parent` with a thread inside msgsnd(), or 0.  (The probe's
 * children are not dumpable: their /proc files are root's, whatever
 * their uid.) */
static pid_t in_msgsnd(pid_t parent)
{
	char path[96], buf[64];
	pid_t found = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;

	while (!found && d && (e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		cleanup_file FILE *st = pid > 0 ? fopen(path, "re") : NULL;
		int ppid = 0;
		/* pid (comm) state ppid: comm may hold spaces, not ')'. */
		if (!st || !fgets(buf, sizeof(buf), st) || !strrchr(buf, ')') ||
		    sscanf(strrchr(buf, ')') + 1, " %*c %d", &ppid) != 1 || ppid != parent)
			continue;
		/* Every thread: the faulting one is not the leader. */
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		DIR *t = opendir(path);
		struct dirent *te;
		while (!found && t && (te = readdir(t))) {
			snprintf(path, sizeof(path), "/proc/%d/task/%.20s/syscall", pid, te->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
			if (fd >= 0)
				close(fd);
			if (n > 0 && (buf[n] = '\0', atoi(buf) == SYS_msgsnd))
				found = pid;
		}
		if (t)
			closedir(t);
	}
	if (d)
		closedir(d);
	return found;
}

/* Wait (a minute at most) until status's probe is held in msgsnd(). */
static pid_t held_in_msgsnd(pid_t status_pid)
{
	for (int tries = 0; tries < 20000; tries++) {
		pid_t pid = in_msgsnd(status_pid);
		if (pid)
			return pid;
		ASSERT_EQ(waitpid(status_pid, NULL, WNOHANG), 0); /* still running */
		usleep(1000);
	}
	FAIL("no probe process of status (pid %d) was held in msgsnd within a minute",
	     (int)status_pid);
}

static void kill_status_in_msgsnd(int sig, enum who who)
{
	require_root();
	ASSERT_SYS(unshare(CLONE_NEWIPC)); /* status inherits it; count ours only */
	sysctl_set(1);
	int before = message_queues();
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", cli_path());
	if (who != WHO_ROOT)
		cli_require_reachable_by_others();

	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		dup2(null, 1);
		if (who != WHO_ROOT && identity_drop(identity_unused_id(), false) < 0)
			_exit(126);
		execl(path, path, "status", "--device", "/nonexistent/userfaultfd", "--hold", "10000",
		      "--probe-timeout", "600000", (char *)NULL);
		_exit(127);
	}
	pid_t probe = held_in_msgsnd(pid);
	ASSERT_SYS(kill(pid, sig));
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig);
	/* The probe child dies with status (PR_SET_PDEATHSIG) or was killed
	 * by it: wait until it is gone, then count. */
	for (int tries = 0; kill(probe, 0) == 0; tries++) {
		ASSERT_TRUE(tries < 60000);
		usleep(1000);
	}
	ASSERT_EQ(message_queues(), before);
}

TEST(status_terminated_in_msgsnd_leaves_no_queue)
{
	kill_status_in_msgsnd(SIGTERM, WHO_ROOT);
}

TEST(status_killed_in_msgsnd_leaves_no_queue)
{
	kill_status_in_msgsnd(SIGKILL, WHO_ROOT);
}

/* A caller that is not root gets no IPC namespace: status removes the
 * queue itself before the signal takes it. */
TEST(non_root_status_terminated_in_msgsnd_leaves_no_queue)
{
	kill_status_in_msgsnd(SIGTERM, WHO_UNPRIV);
}

/* Without /proc the sysctl, the seccomp state and the cgroup cannot be
 * read: say so, and never a value nobody read. */
static void without_proc(void)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/proc", "tmpfs", 0, NULL) < 0)
		_exit(126);
}

/* The build of uffdguard under test carries a sanitizer runtime when this
 * program does (they are built together). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

TEST(without_proc_what_could_not_be_read_is_said)
{
	require_root();
#ifdef SANITIZED
	SKIP("the sanitizer runtimes read /proc themselves (maps, tasks) and fail without it; "
	     "the gcc build runs this case");
#endif
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	struct cli_result r;

	sysctl_set(0);
	cli_pre_exec = without_proc;
	CLI(WHO_ROOT, &r, "status", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 4);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd: could not read "
			       "/proc/sys/vm/unprivileged_userfaultfd: /proc is not mounted");
	ASSERT_CONTAINS(r.out, "seccomp state could not be read");
	ASSERT_CONTAINS(r.out, "not checked: /proc is not mounted");
	ASSERT_CONTAINS(r.out, "verdict: undetermined (exit 4)");
	if (strstr(r.out, "= -") || strstr(r.out, "-1 filter") || strstr(r.out, "does not know"))
		FAIL("a value nobody read:\n%s", r.out);

	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	json_object *j = cli_json(&r);
	ASSERT_TRUE(!jbool(j, "sysctl.proc_mounted"));
	ASSERT_TRUE(jat(j, "sysctl.value") == NULL);
	ASSERT_TRUE(jat(j, "process.seccomp") == NULL);
	ASSERT_TRUE(!jbool(j, "verdict.complete"));

	/* The probe still decides what it can prove: exposed. */
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "status", "--device", dev, "--hold", "5", PROBE_DEADLINE);
	cli_pre_exec = NULL;
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd could not be read");
	if (strstr(r.out, "= -"))
		FAIL("a value nobody read:\n%s", r.out);
}

/* Colour only on a terminal, and not with NO_COLOR. */
static const char *status_on_a_terminal(const char *no_color, char *buf, size_t size)
{
	int master;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", cli_path());
	pid_t pid = ASSERT_SYS(forkpty(&master, NULL, NULL, NULL));
	if (pid == 0) {
		if (no_color)
			setenv("NO_COLOR", no_color, 1);
		else
			unsetenv("NO_COLOR");
		setenv("TERM", "xterm", 1);
		execl(path, path, "status", "--device", "/nonexistent/userfaultfd", "--hold", "5",
		      PROBE_DEADLINE, (char *)NULL);
		_exit(127);
	}
	size_t used = 0;
	ssize_t n;
	/* EIO once the child is gone and the slave closed. */
	while (used < size - 1 && ((n = read(master, buf + used, size - 1 - used)) > 0 ||
				   (n < 0 && errno == EINTR)))
		used += n > 0 ? (size_t)n : 0;
	buf[used] = '\0';
	close(master);
	ASSERT_SYS(waitpid(pid, NULL, 0));
	return buf;
}

TEST(colour_only_on_a_terminal_and_never_with_NO_COLOR)
{
	require_root();
	static char buf[65536];
	struct cli_result r;

	sysctl_set(1);
	ASSERT_CONTAINS(status_on_a_terminal(NULL, buf, sizeof(buf)), "verdict: \033[1;31mexposed");
	ASSERT_CONTAINS(buf, "\033[1mfix:\033[0m uffdguard sysctl apply");
	ASSERT_TRUE(!strchr(status_on_a_terminal("1", buf, sizeof(buf)), '\033'));
	ASSERT_CONTAINS(buf, "verdict: exposed");
	CLI(WHO_ROOT, &r, "status", "--device", "/nonexistent/userfaultfd", "--hold", "5", PROBE_DEADLINE);
	ASSERT_TRUE(!strchr(r.out, '\033')); /* a pipe */
	CLI(WHO_ROOT, &r, "status", "--color", "always", "--device", "/nonexistent/userfaultfd",
	    "--hold", "5", PROBE_DEADLINE);
	ASSERT_CONTAINS(r.out, "\033[1;31mexposed");
}

/* The textfile for node_exporter: written whole (a temporary file renamed
 * over it), readable by others, in the format promtool accepts. */
static const char *promtool(void)
{
	static const char *const paths[] = { "/usr/bin/promtool", "/usr/local/bin/promtool" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

/* `promtool check metrics < file`: its exit status and what it said. */
static int promtool_check(const char *tool, const char *file, char *said, size_t size)
{
	int p[2];
	ASSERT_SYS(pipe2(p, O_CLOEXEC));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		int in = open(file, O_RDONLY | O_CLOEXEC);
		if (in < 0 || dup2(in, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(126);
		execl(tool, tool, "check", "metrics", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t used = 0;
	ssize_t n;
	while (used < size - 1 && (n = read(p[0], said + used, size - 1 - used)) > 0)
		used += (size_t)n;
	said[used] = '\0';
	close(p[0]);
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(prometheus_textfile_is_written_whole_and_promtool_accepts_it)
{
	require_root();
	char dir[] = "/tmp/uffdguard-prom.XXXXXX", file[64], text[16384], said[4096];
	struct cli_result r;
	struct stat st;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(file, sizeof(file), "%s/uffdguard.prom", dir);
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "status", "--quiet", "--prometheus", file, "--device",
	    "/nonexistent/userfaultfd", "--hold", "5", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 1);
	ASSERT_SYS(stat(file, &st));
	ASSERT_EQ(st.st_mode & 0777, 0644);
	ASSERT_EQ(dir_entries(dir), 1); /* no temporary file left */
	read_text(file, text, sizeof(text));
	ASSERT_CONTAINS(text, "# TYPE uffdguard_status gauge\n");
	ASSERT_CONTAINS(text, "uffdguard_status{status=\"exposed\"} 1\n");
	ASSERT_CONTAINS(text, "uffdguard_status{status=\"protected\"} 0\n");
	ASSERT_CONTAINS(text, "uffdguard_sysctl_unprivileged_userfaultfd 1\n");
	ASSERT_CONTAINS(text, "uffdguard_stall_held{identity=\"unprivileged\",point=\"msgsnd\"} 1\n");
	ASSERT_CONTAINS(text, "uffdguard_probe_created{identity=\"unprivileged\",way=\"syscall\"} 1\n");

	sysctl_set(0);
	CLI(WHO_ROOT, &r, "status", "--quiet", "--prometheus", file, "--device",
	    "/nonexistent/userfaultfd", "--hold", "5", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 0);
	read_text(file, text, sizeof(text));
	ASSERT_CONTAINS(text, "uffdguard_status{status=\"protected\"} 1\n");
	ASSERT_CONTAINS(text, "uffdguard_stall_held{identity=\"unprivileged\",point=\"msgsnd\"} 0\n");

	/* A symbolic link is refused before anything is probed or written. */
	char link[80];
	snprintf(link, sizeof(link), "%s/link.prom", dir);
	ASSERT_SYS(symlink("/etc/passwd", link));
	CLI(WHO_ROOT, &r, "status", "--quiet", "--prometheus", link, "--device",
	    "/nonexistent/userfaultfd", "--hold", "5", PROBE_DEADLINE);
	ASSERT_EQ(r.status, 4);
	ASSERT_CONTAINS(r.err, "symbolic link");

	const char *tool = promtool();
	if (tool) {
		int code = promtool_check(tool, file, said, sizeof(said));
		if (code != 0)
			FAIL("promtool check metrics: exit %d:\n%s", code, said);
	}
	remove_tree(dir);
	if (!tool)
		SKIP("the format was checked by hand only: promtool (Debian package prometheus) "
		     "is not installed");
}

/* `uffdguard run` reports its policy to status from inside (marker.h).
 * The sysctl is 1: the kernel alone would allow everything. */
static json_object *status_inside_run(struct cli_result *r, const char *mode, const char *policy,
				      mode_t dev_mode)
{
	char dev[PATH_MAX];

	require_root();
	sysctl_set(1);
	make_private_device(dev, 0, 0, dev_mode);
	CLI(WHO_ROOT, r, "run", "--mode", mode, "--policy", policy, "--", cli_path(), "status",
	    "--json", "--device", dev);
	remove_private_device(dev);
	return cli_json(r);
}

TEST(inside_run_policy_deny)
{
	struct cli_result r;
	json_object *j = status_inside_run(&r, "filter", "deny", 0666);
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_STREQ(jstr(j, "process.uffdguard.policy"), "deny");
	ASSERT_STREQ(jstr(j, "process.uffdguard.mode"), "filter");
	ASSERT_EQ(jint(j, "process.uffdguard.unprivileged_userfaultfd"), 0);
	ASSERT_GE(jint(j, "process.seccomp_filters"), 1);
	ASSERT_EQ(jint(j, "process.seccomp"), 2);
	for (int way = 0; way < 4; way++)
		ASSERT_STREQ(attempt(j, UNPRIV, way), "EPERM");
}

TEST(inside_run_policy_user_mode_only)
{
	struct cli_result r;
	json_object *j = status_inside_run(&r, "filter", "user-mode-only", 0666);
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_STREQ(jstr(j, "process.uffdguard.policy"), "user-mode-only");
	ASSERT_EQ(jint(j, "process.uffdguard.unprivileged_userfaultfd_user_mode_only"), 1);
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM");
	ASSERT_STREQ(attempt(j, UNPRIV, 1), "null");
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "EPERM"); /* the device is covered too */
	ASSERT_STREQ(attempt(j, UNPRIV, 3), "null");
	assert_all_refused(j, UNPRIV);
}

/* Before status runs: a filter that is not uffdguard's. */
static void foreign_filter(void)
{
	if (refuse_userfaultfd_by_seccomp(EPERM) < 0)
		_exit(120);
}

/* `status --json` under foreign_filter(), the sysctl at knob, with a
 * private device only root can open. */
static json_object *status_under_foreign_filter(struct cli_result *r, int knob)
{
	char dev[PATH_MAX];

	require_root();
	sysctl_set(knob);
	make_private_device(dev, 0, 0, 0600);
	cli_pre_exec = foreign_filter;
	CLI(WHO_ROOT, r, "status", "--json", "--device", dev, PROBE_DEADLINE);
	cli_pre_exec = NULL;
	remove_private_device(dev);
	return cli_json(r);
}

/* Under another filter the verdict is that filter's, and said to be:
 * with the sysctl at 1, processes outside it are exposed. */
TEST(a_filter_not_ours_is_protected_and_the_host_knob_warned_of)
{
	struct cli_result r;

	json_object *j = status_under_foreign_filter(&r, 1);
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM");
	ASSERT_CONTAINS(jstr(j, "verdict.warnings.0"),
			"a seccomp filter that is not uffdguard's answers userfaultfd(2) here with "
			"EPERM: the verdict is that filter's, and processes outside it follow "
			"vm.unprivileged_userfaultfd = 1");

	/* With the knob at 0 the host protects them too: nothing to warn of. */
	j = status_under_foreign_filter(&r, 0);
	ASSERT_EQ(r.status, 0);
	json_object *w = jat(j, "verdict.warnings");
	for (size_t i = 0; i < json_object_array_length(w); i++)
		ASSERT_TRUE(!strstr(json_object_get_string(json_object_array_get_idx(w, i)),
				    "not uffdguard's"));
}

/* The supervisor decides with the caller's capabilities at call time. */
TEST(inside_run_supervised_user_mode_only)
{
	struct cli_result r;
	json_object *j = status_inside_run(&r, "supervise", "user-mode-only", 0600);
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_STREQ(jstr(j, "process.uffdguard.mode"), "supervise");
	ASSERT_STREQ(jstr(j, "process.uffdguard.policy"), "user-mode-only");
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM");
	ASSERT_STREQ(attempt(j, UNPRIV, 1), "null");
	ASSERT_STREQ(attempt(j, PTRACE, 0), "null"); /* CAP_SYS_PTRACE is privileged */
	assert_all_refused(j, UNPRIV);
}
