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
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli-run.h"
#include "harness.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

#define BASE "/usr/share/containers/seccomp.json"

struct box {
	char dir[64];     /* temporary directory: rootfs/ and profile.json */
	char rootfs[96];
	char profile[96];
	char out[8192];   /* the probe's key=value lines */
};

static bool on_path(const char *prog)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int r = system(cmd);
	if (r != 0)
		FAIL("'%s' failed (status %d)", cmd, r);
}

/* A root file system: busybox-static and the probe, nothing else. */
static void box_setup(struct box *b)
{
	require_root();
	if (!on_path("podman") || !on_path("runc"))
		FAIL("podman or runc is not installed (Debian packages podman, runc, in scripts/packages-test.txt)");
	if (access("/bin/busybox", X_OK) < 0)
		FAIL("/bin/busybox is missing (Debian package busybox-static, in scripts/packages-test.txt)");
	if (access(BASE, R_OK) < 0)
		FAIL(BASE " is missing (Debian package golang-github-containers-common, in scripts/packages-test.txt)");
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ASSERT_GT(n, 0);
	self[n] = '\0';
	*strrchr(self, '/') = '\0';

	snprintf(b->dir, sizeof(b->dir), "/tmp/uffdguard-podman.XXXXXX");
	ASSERT_TRUE(mkdtemp(b->dir) != NULL);
	ASSERT_SYS(chmod(b->dir, 0755));
	snprintf(b->rootfs, sizeof(b->rootfs), "%s/rootfs", b->dir);
	snprintf(b->profile, sizeof(b->profile), "%s/profile.json", b->dir);
	sh("mkdir -p %s/bin && cp /bin/busybox %s/bin/ && ln -s busybox %s/bin/sh && "
	   "cp %s/uffd-probe %s/bin/", b->rootfs, b->rootfs, b->rootfs, self, b->rootfs);
}

static void box_cleanup(struct box *b)
{
	sh("rm -rf %s", b->dir);
}

static void make_profile(struct box *b, const char *const *args)
{
	const char *argv[16] = { "profile", "-o", b->profile };
	int n = 3;
	while (*args)
		argv[n++] = *args++;
	argv[n] = NULL;
	struct cli_result r;
	cli_run(WHO_ROOT, argv, &r);
	if (r.status != 0)
		FAIL("uffdguard profile failed (%d): %s", r.status, r.err);
}

/* Run the probe (through busybox sh, so that the shell's own calls are
 * checked too) and keep its output. */
static void run_probe(struct box *b, const char *profile, const char *extra)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "podman --runtime runc run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "
		 "--network none %s %s --security-opt seccomp=%s "
		 "--rootfs %s /bin/sh -c 'echo shell | /bin/busybox cat && /bin/uffd-probe' 2>&1",
		 access("/dev/userfaultfd", F_OK) == 0 ? "--device /dev/userfaultfd" : "", extra,
		 profile, b->rootfs);
	/* The sysctl is global: if something else on the machine changed it
	 * while the container ran, the answers are not the profile's alone. */
	int st = 0;
	for (int attempt = 0;; attempt++) {
		sysctl_set(1);
		FILE *p = popen(cmd, "r");
		ASSERT_TRUE(p != NULL);
		size_t len = fread(b->out, 1, sizeof(b->out) - 1, p);
		b->out[len] = '\0';
		st = pclose(p);
		if (sysctl_get() == 1)
			break;
		if (attempt == 4)
			FAIL("vm.unprivileged_userfaultfd keeps changing under the test");
		sleep(1);
	}
	if (st != 0 || !strstr(b->out, "shell\n") || !strstr(b->out, "getpid=ok"))
		FAIL("container did not run (status %d): %s\n%s", st, cmd, b->out);
}

/* Assert "key=want" in the probe's output.  The i386 entry is checked
 * where the kernel offers it (the probe says "i386=unavailable" where it
 * does not). */
static void expect(const struct box *b, const char *key, const char *want)
{
	if (!strncmp(key, "i386_", 5) && strstr(b->out, "\ni386=unavailable\n")) {
		printf("# %s not checked: this kernel has no i386 entry (int 0x80)\n", key);
		return;
	}
	char line[128];
	snprintf(line, sizeof(line), "\n%s=", key);
	const char *at = strstr(b->out, line); /* the output starts with "shell" */
	if (!at)
		FAIL("probe did not report %s:\n%s", key, b->out);
	at += strlen(line);
	size_t len = strcspn(at, "\n");
	if (len != strlen(want) || strncmp(at, want, len))
		FAIL("%s=%.*s, want %s\n%s", key, (int)len, at, want, b->out);
}

static bool has_device(const struct box *b)
{
	return strstr(b->out, "dev_open=ok") != NULL;
}

/* What user-mode-only means, for a caller without CAP_SYS_PTRACE. */
static void expect_user_mode_only(const struct box *b, bool device)
{
	expect(b, "uffd_plain", "EPERM");
	expect(b, "uffd_umo", "ok");
	expect(b, "serve", "ok");
	expect(b, "kernel_access", "EFAULT");
	expect(b, "uffd_garbage", "EPERM");
	expect(b, "uffd_garbage_all", "EPERM");
	expect(b, "uffd_garbage_umo", "ok");
	expect(b, "i386_plain", "EPERM");
	expect(b, "i386_umo", "ok");
	expect(b, "x32_plain", "EPERM");
	if (device) {
		expect(b, "dev_plain", "EPERM");
		expect(b, "dev_umo", "ok");
		expect(b, "dev_garbage_cmd", "EPERM");
		expect(b, "dev_garbage_flags", "EPERM");
	}
}

/* The base's other rules keep their meaning. */
static void expect_base_kept(const struct box *b)
{
	expect(b, "ioctl_pipe", "ok");
	expect(b, "ioctl_pipe_garbage", "ok");
	expect(b, "ioctl_tty", "ENOTTY");
	expect(b, "acct", "EPERM");
	expect(b, "personality_odd", "ENOSYS");
	expect(b, "personality_query", "ok");
}

TEST_TIMEOUT(podman_base_user_mode_only, 180)
{
	struct box b;
	box_setup(&b);
	make_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "user-mode-only", NULL });
	run_probe(&b, b.profile, "");
	if (!has_device(&b) && access("/dev/userfaultfd", F_OK) == 0)
		FAIL("/dev/userfaultfd did not reach the container:\n%s", b.out);
	expect_user_mode_only(&b, has_device(&b));
	expect_base_kept(&b);

	/* uid 65534: the device node is root's 0600, the syscall is the path. */
	run_probe(&b, b.profile, "--user 65534:65534");
	expect(&b, "dev_open", "EACCES");
	expect_user_mode_only(&b, false);
	expect_base_kept(&b);
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_docker_format_ptrace_is_exempt, 180)
{
	struct box b;
	box_setup(&b);
	make_profile(&b, (const char *const[]){ "--base", BASE, "--format", "docker", NULL });
	run_probe(&b, b.profile, "--cap-add SYS_PTRACE");
	expect(&b, "uffd_plain", "ok");
	expect(&b, "uffd_garbage", "ok");
	expect(&b, "i386_plain", "ok");
	if (has_device(&b))
		expect(&b, "dev_plain", "ok");
	expect_base_kept(&b);
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_oci_fragment_has_no_exemption, 180)
{
	struct box b;
	box_setup(&b);
	make_profile(&b, (const char *const[]){ "--format", "oci", "--allow-by-default", NULL });
	run_probe(&b, b.profile, "--cap-add SYS_PTRACE");
	expect_user_mode_only(&b, has_device(&b));
	/* A fragment allows everything else (the base refused this one). */
	expect(&b, "personality_odd", "ok");
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_deny_and_allow, 180)
{
	struct box b;
	box_setup(&b);
	make_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "deny", NULL });
	run_probe(&b, b.profile, "");
	static const char *const creations[] = { "uffd_plain", "uffd_umo", "uffd_garbage_umo",
						 "i386_plain", "i386_umo", "x32_plain" };
	for (size_t i = 0; i < sizeof(creations) / sizeof(creations[0]); i++)
		expect(&b, creations[i], "EPERM");
	if (has_device(&b)) {
		expect(&b, "dev_plain", "EPERM");
		expect(&b, "dev_umo", "EPERM");
	}
	expect_base_kept(&b);

	/* allow: as the kernel permits (the sysctl is 1: everything). */
	make_profile(&b, (const char *const[]){ "--base", BASE, "--policy", "allow", NULL });
	run_probe(&b, b.profile, "");
	expect(&b, "uffd_plain", "ok");
	expect(&b, "uffd_umo", "ok");
	expect(&b, "kernel_access", "EFAULT");
	expect(&b, "i386_plain", "ok");
	if (has_device(&b)) {
		expect(&b, "dev_plain", "ok");
		expect(&b, "dev_garbage_cmd", "ok");
	}
	expect_base_kept(&b);
	box_cleanup(&b);
}

TEST_TIMEOUT(podman_unmodified_base_refuses_by_name_only, 180)
{
	struct box b;
	box_setup(&b);
	run_probe(&b, BASE, "");
	static const char *const creations[] = { "uffd_plain", "uffd_umo", "i386_plain",
						 "i386_umo", "x32_plain" };
	for (size_t i = 0; i < sizeof(creations) / sizeof(creations[0]); i++)
		expect(&b, creations[i], "EPERM");
	/* The gap a name-only rule leaves: /dev/userfaultfd's ioctl. */
	if (has_device(&b))
		expect(&b, "dev_plain", "ok");
	expect_base_kept(&b);
	box_cleanup(&b);
}
