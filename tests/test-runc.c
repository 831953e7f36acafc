// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard profile as containerd and CRI-O use it: runc run directly on
 * an OCI bundle whose config.json carries the generated runtime-spec
 * profile as linux.seccomp, merged into containerd's default
 * (data/containerd-default.json).  The same probe and cases as
 * test-podman (tests/container.h); vm.unprivileged_userfaultfd is 1
 * throughout, so whatever is refused, the profile refused.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <json-c/json.h>

#include "container.h"
#include "harness.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

static const char *containerd_default(char *buf, size_t size)
{
	const char *dir = getenv("UFFDGUARD_DATA");
	if (!dir)
		FAIL("UFFDGUARD_DATA is not set (run through meson test)");
	snprintf(buf, size, "%s/containerd-default.json", dir);
	return buf;
}

static void runc_setup(struct box *b)
{
	require_root();
	if (!on_path("runc"))
		FAIL("runc is not installed (Debian package runc, in scripts/packages-test.txt)");
	box_setup(b, "runc");
}

static json_object *jnew_strings(const char *const *s)
{
	json_object *a = json_object_new_array();
	for (; *s; s++)
		json_object_array_add(a, json_object_new_string(*s));
	return a;
}

/* The bundle `runc spec` makes, with the probe as its process, the given
 * user and capabilities, /dev/userfaultfd where the host has it, and the
 * seccomp profile in `profile` as linux.seccomp. */
static void write_bundle(const struct box *b, const char *profile, unsigned uid, bool ptrace)
{
	char path[PATH_MAX];
	sh("rm -f %s/config.json && runc spec --bundle %s", b->dir, b->dir);
	snprintf(path, sizeof(path), "%s/config.json", b->dir);
	json_object *c = json_object_from_file(path), *seccomp = json_object_from_file(profile);
	ASSERT_TRUE(c != NULL && seccomp != NULL);
	json_object *proc = json_object_object_get(c, "process");
	json_object *linux_ = json_object_object_get(c, "linux");
	json_object_object_add(proc, "terminal", json_object_new_boolean(false));
	json_object_object_add(proc, "args",
			       jnew_strings((const char *const[]){ "/bin/sh", "-c", BOX_COMMAND, NULL }));
	json_object *user = json_object_object_get(proc, "user");
	json_object_object_add(user, "uid", json_object_new_int((int)uid));
	json_object_object_add(user, "gid", json_object_new_int((int)uid));
	if (ptrace) {
		json_object *caps = json_object_object_get(proc, "capabilities");
		json_object_object_foreach(caps, set, list)
		{
			(void)set;
			json_object_array_add(list, json_object_new_string("CAP_SYS_PTRACE"));
		}
	}
	json_object_object_add(linux_, "seccomp", seccomp);

	struct stat st;
	if (stat("/dev/userfaultfd", &st) == 0) {
		json_object *dev = json_object_new_object(), *allow = json_object_new_object();
		json_object_object_add(dev, "path", json_object_new_string("/dev/userfaultfd"));
		json_object_object_add(dev, "type", json_object_new_string("c"));
		json_object_object_add(dev, "major", json_object_new_int64(major(st.st_rdev)));
		json_object_object_add(dev, "minor", json_object_new_int64(minor(st.st_rdev)));
		json_object_object_add(dev, "fileMode", json_object_new_int(0600));
		json_object_object_add(dev, "uid", json_object_new_int(0));
		json_object_object_add(dev, "gid", json_object_new_int(0));
		json_object *devices = json_object_new_array();
		json_object_array_add(devices, dev);
		json_object_object_add(linux_, "devices", devices);
		json_object_object_add(allow, "allow", json_object_new_boolean(true));
		json_object_object_add(allow, "type", json_object_new_string("c"));
		json_object_object_add(allow, "major", json_object_new_int64(major(st.st_rdev)));
		json_object_object_add(allow, "minor", json_object_new_int64(minor(st.st_rdev)));
		json_object_object_add(allow, "access", json_object_new_string("rwm"));
		json_object_array_add(
			json_object_object_get(json_object_object_get(linux_, "resources"), "devices"),
			allow);
	}
	ASSERT_EQ(json_object_to_file_ext(path, c, JSON_C_TO_STRING_PRETTY), 0);
	json_object_put(c);
}

static void run_probe(struct box *b, const char *profile, unsigned uid, bool ptrace)
{
	char cmd[1024];
	write_bundle(b, profile, uid, ptrace);
	/* A state directory of its own; the id is unique on the host. */
	snprintf(cmd, sizeof(cmd), "runc --root %s/state run --bundle %s %s 2>&1", b->dir, b->dir,
		 strrchr(b->dir, '/') + 1);
	box_run(b, cmd);
}

static void make(struct box *b, const char *policy, const char *set)
{
	char base[PATH_MAX];
	containerd_default(base, sizeof(base));
	if (set)
		box_profile(b, (const char *const[]){ "--format", "oci", "--base", base, "--policy",
						      policy, "--set", set, NULL });
	else
		box_profile(b, (const char *const[]){ "--format", "oci", "--base", base, "--policy",
						      policy, NULL });
}

TEST_TIMEOUT(runc_containerd_base_user_mode_only, 180)
{
	struct box b;
	runc_setup(&b);
	make(&b, "user-mode-only", NULL);
	run_probe(&b, b.profile, 0, false);
	if (!has_device(&b) && access("/dev/userfaultfd", F_OK) == 0)
		FAIL("/dev/userfaultfd did not reach the container:\n%s", b.out);
	expect_user_mode_only(&b, has_device(&b));
	expect_base_kept(&b, "EPERM");

	/* uid 65534: the device node is root's 0600, the syscall is the path. */
	run_probe(&b, b.profile, 65534, false);
	expect(&b, "dev_open", "EACCES");
	expect_user_mode_only(&b, false);
	expect_base_kept(&b, "EPERM");
	box_cleanup(&b);
}

/* The runtime-spec format cannot test capabilities: CAP_SYS_PTRACE
 * changes nothing. */
TEST_TIMEOUT(runc_runtime_spec_has_no_exemption, 180)
{
	struct box b;
	runc_setup(&b);
	make(&b, "user-mode-only", NULL);
	run_probe(&b, b.profile, 0, true);
	expect_user_mode_only(&b, has_device(&b));
	expect_base_kept(&b, "EPERM");
	box_cleanup(&b);
}

TEST_TIMEOUT(runc_deny_and_allow, 180)
{
	struct box b;
	runc_setup(&b);
	make(&b, "deny", NULL);
	run_probe(&b, b.profile, 0, true);
	expect_deny(&b);
	expect_base_kept(&b, "EPERM");

	make(&b, "allow", NULL);
	run_probe(&b, b.profile, 0, false);
	expect_allow(&b);
	expect_base_kept(&b, "EPERM");
	box_cleanup(&b);
}

TEST_TIMEOUT(runc_unmodified_base_refuses_by_name_only, 180)
{
	struct box b;
	char base[PATH_MAX];
	runc_setup(&b);
	run_probe(&b, containerd_default(base, sizeof(base)), 0, false);
	expect_refused_by_name_only(&b);
	expect_base_kept(&b, "EPERM");
	box_cleanup(&b);
}
