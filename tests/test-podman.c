// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard profile in a real runtime: Podman with runc, no daemon, no
 * image.  Each case builds a root file system of busybox-static and our
 * static probe (tests/uffd-probe.c), runs it under a generated profile and
 * reads what the probe could do.  vm.unprivileged_userfaultfd is set to 1
 * for every container, so the kernel itself would allow everything:
 * whatever is refused, the profile refused.
 */
#include <fcntl.h>
#include <unistd.h>

#include "container.h"
#include "harness.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

#define BASE "/usr/share/containers/seccomp.json"

static void podman_setup(struct box *b)
{
	require_root();
	if (!on_path("podman") || !on_path("runc"))
		FAIL("podman or runc is not installed (Debian packages podman, runc, in scripts/packages-test.txt)");
	if (access(BASE, R_OK) < 0)
		FAIL(BASE " is missing (Debian package golang-github-containers-common, in scripts/packages-test.txt)");
	box_setup(b, "podman");
}

static void run_probe(struct box *b, const char *profile, const char *extra)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "podman --runtime runc run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "
		 "--network none %s %s --security-opt seccomp=%s "
		 "--rootfs %s /bin/sh -c '" BOX_COMMAND "' 2>&1",
		 access("/dev/userfaultfd", F_OK) == 0 ? "--device /dev/userfaultfd" : "", extra,
		 profile, b->rootfs);
	box_run(b, cmd);
}

TEST_TIMEOUT(podman_base_user_mode_only, 180)
{
	struct box b;
	podman_setup(&b);
	box_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "user-mode-only", NULL });
	run_probe(&b, b.profile, "");
	if (!has_device(&b) && access("/dev/userfaultfd", F_OK) == 0)
		FAIL("/dev/userfaultfd did not reach the container:\n%s", b.out);
	expect_user_mode_only(&b, has_device(&b));
	expect_base_kept(&b, "ENOSYS");

	/* uid 65534: the device node is root's 0600, the syscall is the path. */
	run_probe(&b, b.profile, "--user 65534:65534");
	expect(&b, "dev_open", "EACCES");
	expect_user_mode_only(&b, false);
	expect_base_kept(&b, "ENOSYS");
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_docker_format_ptrace_is_exempt, 180)
{
	struct box b;
	podman_setup(&b);
	box_profile(&b, (const char *const[]){ "--base", BASE, "--format", "docker", NULL });
	run_probe(&b, b.profile, "--cap-add SYS_PTRACE");
	expect(&b, "uffd_plain", "ok");
	expect(&b, "uffd_garbage", "ok");
	expect(&b, "i386_plain", "ok");
	if (has_device(&b))
		expect(&b, "dev_plain", "ok");
	expect_base_kept(&b, "ENOSYS");

	/* ... unless the exemption is switched off. */
	box_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "deny", "--set",
					       "ignore_cap_sys_ptrace=1", NULL });
	run_probe(&b, b.profile, "--cap-add SYS_PTRACE");
	expect_deny(&b);
	expect_base_kept(&b, "ENOSYS");
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_oci_fragment_has_no_exemption, 180)
{
	struct box b;
	podman_setup(&b);
	box_profile(&b, (const char *const[]){ "--format", "oci", "--allow-by-default", NULL });
	run_probe(&b, b.profile, "--cap-add SYS_PTRACE");
	expect_user_mode_only(&b, has_device(&b));
	/* A fragment allows everything else (the base refused this one). */
	expect(&b, "personality_odd", "ok");
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_deny_and_allow, 180)
{
	struct box b;
	podman_setup(&b);
	box_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "deny", NULL });
	run_probe(&b, b.profile, "");
	expect_deny(&b);
	expect_base_kept(&b, "ENOSYS");

	/* allow: as the kernel permits (the sysctl is 1: everything). */
	box_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "allow", NULL });
	run_probe(&b, b.profile, "");
	expect_allow(&b);
	expect_base_kept(&b, "ENOSYS");
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_unmodified_base_refuses_by_name_only, 180)
{
	struct box b;
	podman_setup(&b);
	run_probe(&b, BASE, "");
	expect_refused_by_name_only(&b);
	expect_base_kept(&b, "ENOSYS");
	box_cleanup(&b);
}
