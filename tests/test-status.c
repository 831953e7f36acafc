// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard status on the real kernel: the verdict, the exit code and the
 * JSON fields under real configurations (sysctl 0 and 1, a private
 * world-accessible device, inside uffdguard run, a non-root caller), and
 * a hung probe that must leave no process behind.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/xattr.h>

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
	require_root();
	char dev[PATH_MAX];
	sysctl_set(0);
	make_private_device(dev, 0, 0, 0600);

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev);
	remove_private_device(dev);
	json_object *j = cli_json(&r);
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
	require_root();
	char dev[PATH_MAX];
	sysctl_set(1);
	make_private_device(dev, 0, 0, 0600);

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--hold", "80", "--device", dev);
	remove_private_device(dev);
	json_object *j = cli_json(&r);
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
	CLI(WHO_ROOT, &r, "status", "--device", dev, "--hold", "60");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.out, "hold 60 ms");
	ASSERT_CONTAINS(r.out, "held 6"); /* 60 ms or a little more */
	ASSERT_CONTAINS(r.out, "verdict: exposed (exit 1)");

	CLI(WHO_ROOT, &r, "status", "--quiet", "--device", dev, "--hold", "5");
	ASSERT_EQ(r.status, 1);
	ASSERT_EQ(r.out[0], '\0');
}

TEST(world_accessible_device_is_exposed_despite_sysctl_0)
{
	require_root();
	char dev[PATH_MAX];
	sysctl_set(0);
	make_private_device(dev, 0, 0, 0666);

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev);
	remove_private_device(dev);
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "verdict.status"), "exposed");
	ASSERT_STREQ(jstr(j, "device.mode"), "0666");
	ASSERT_TRUE(jbool(j, "device.world_accessible"));
	ASSERT_GT(json_object_array_length(jat(j, "device.unprivileged_access")), 0);
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM"); /* the syscall refuses... */
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "null"); /* ...the device does not */
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.descriptor"), "device");
	assert_all_held(j, UNPRIV, 50);
}

TEST(device_owned_by_a_group_is_listed)
{
	require_root();
	char dev[PATH_MAX];
	uid_t id = identity_unused_id();
	sysctl_set(0);
	make_private_device(dev, 0, id - 1, 0660);

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev);
	remove_private_device(dev);
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 0); /* the unused uid is not in that group */
	char want[64];
	snprintf(want, sizeof(want), "(gid %u, the group)", (unsigned)(id - 1));
	ASSERT_CONTAINS(jstr(j, "device.unprivileged_access.0"), want);
	ASSERT_CONTAINS(jstr(j, "verdict.warnings.0"), want);
}

/* system.posix_acl_access in the kernel's format: a version word, then
 * {tag, perm, id} entries sorted by tag. */
static void set_acl_user_rw(const char *path, uid_t uid)
{
	struct {
		uint32_t version;
		struct { uint16_t tag, perm; uint32_t id; } e[5];
	} __attribute__((packed)) acl = { 2, {
		{ 0x01, 6, UINT32_MAX }, /* user_obj rw- */
		{ 0x02, 6, uid },        /* user:uid rw- */
		{ 0x04, 0, UINT32_MAX }, /* group_obj --- */
		{ 0x10, 6, UINT32_MAX }, /* mask rw- */
		{ 0x20, 0, UINT32_MAX }, /* other --- */
	} };
	if (setxattr(path, "system.posix_acl_access", &acl, sizeof(acl), 0) < 0) {
		int err = errno;
		remove_private_device(path);
		errno = err;
		if (errno == EOPNOTSUPP)
			SKIP("no POSIX ACLs on the file system of /tmp");
		FAIL("setxattr(system.posix_acl_access): %s", strerror(errno));
	}
}

TEST(device_open_by_acl_is_exposed)
{
	require_root();
	char dev[PATH_MAX], want[64];
	uid_t id = identity_unused_id();
	sysctl_set(0);
	make_private_device(dev, 0, 0, 0600);
	set_acl_user_rw(dev, id);

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev);
	remove_private_device(dev);
	json_object *j = cli_json(&r);
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(jstr(j, "device.acl.1.tag"), "user");
	ASSERT_EQ(jint(j, "device.acl.1.id"), id);
	ASSERT_STREQ(jstr(j, "device.acl.1.perm"), "rw-");
	snprintf(want, sizeof(want), "(uid %u, by ACL)", (unsigned)id);
	ASSERT_CONTAINS(jstr(j, "device.unprivileged_access.0"), want);
	ASSERT_STREQ(attempt(j, UNPRIV, 2), "null");
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.descriptor"), "device");
}

TEST(non_root_caller_probes_as_itself)
{
	require_root();
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	struct cli_result r;

	sysctl_set(0);
	CLI(WHO_UNPRIV, &r, "status", "--json", "--device", dev);
	json_object *j = cli_json(&r);
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
 * process, is removed too. */
TEST(probe_killed_in_msgsnd_leaves_no_queue)
{
	require_root();
	const char *dev = "/nonexistent/userfaultfd"; /* no device */
	sysctl_set(1);
	int before = message_queues();

	struct cli_result r;
	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "1000",
	    "--probe-timeout", "1500");
	json_object *j = cli_json(&r);
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.points.0.outcome"), "held");
	ASSERT_STREQ(jstr(j, UNPRIV ".stall.points.1.outcome"), "timeout");
	ASSERT_EQ(message_queues(), before);
}

/* `uffdguard run` reports its policy to status from inside (marker.h). */
static json_object *status_inside_run(struct cli_result *r, const char *mode, const char *policy,
				      const char *dev)
{
	CLI(WHO_ROOT, r, "run", "--mode", mode, "--policy", policy, "--", cli_path(), "status",
	    "--json", "--device", dev);
	remove_private_device(dev);
	if (r->status == 2 && strstr(r->err, "unknown command 'run'"))
		SKIP("uffdguard run not built yet");
	return cli_json(r);
}

TEST(inside_run_policy_deny)
{
	require_root();
	char dev[PATH_MAX];
	sysctl_set(1); /* the kernel alone would allow everything */
	make_private_device(dev, 0, 0, 0666);

	struct cli_result r;
	json_object *j = status_inside_run(&r, "filter", "deny", dev);
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
	require_root();
	char dev[PATH_MAX];
	sysctl_set(1);
	make_private_device(dev, 0, 0, 0666);

	struct cli_result r;
	json_object *j = status_inside_run(&r, "filter", "user-mode-only", dev);
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

/* The supervisor decides with the caller's capabilities at call time. */
TEST(inside_run_supervised_user_mode_only)
{
	require_root();
	char dev[PATH_MAX];
	sysctl_set(1);
	make_private_device(dev, 0, 0, 0600);

	struct cli_result r;
	json_object *j = status_inside_run(&r, "supervise", "user-mode-only", dev);
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(jstr(j, "verdict.status"), "protected");
	ASSERT_STREQ(jstr(j, "process.uffdguard.mode"), "supervise");
	ASSERT_STREQ(jstr(j, "process.uffdguard.policy"), "user-mode-only");
	ASSERT_STREQ(attempt(j, UNPRIV, 0), "EPERM");
	ASSERT_STREQ(attempt(j, UNPRIV, 1), "null");
	ASSERT_STREQ(attempt(j, PTRACE, 0), "null"); /* CAP_SYS_PTRACE is privileged */
	assert_all_refused(j, UNPRIV);
}
