// SPDX-License-Identifier: GPL-2.0-or-later
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-run.h"
#include "container.h"
#include "harness.h"
#include "util.h"

bool on_path(const char *prog)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

void sh(const char *fmt, ...)
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

void box_setup(struct box *b, const char *name)
{
	require_root();
	if (access("/bin/busybox", X_OK) < 0)
		FAIL("/bin/busybox is missing (Debian package busybox-static, in scripts/packages-test.txt)");
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ASSERT_GT(n, 0);
	self[n] = '\0';
	*strrchr(self, '/') = '\0';

	snprintf(b->dir, sizeof(b->dir), "/tmp/uffdguard-%s.XXXXXX", name);
	ASSERT_TRUE(mkdtemp(b->dir) != NULL);
	ASSERT_SYS(chmod(b->dir, 0755));
	snprintf(b->rootfs, sizeof(b->rootfs), "%s/rootfs", b->dir);
	snprintf(b->profile, sizeof(b->profile), "%s/profile.json", b->dir);
	sh("mkdir -p %s/bin && cp /bin/busybox %s/bin/ && ln -s busybox %s/bin/sh && "
	   "cp %s/uffd-probe %s/bin/", b->rootfs, b->rootfs, b->rootfs, self, b->rootfs);
}

void box_cleanup(struct box *b)
{
	sh("rm -rf %s", b->dir);
}

void box_profile(struct box *b, const char *const *args)
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

void box_run(struct box *b, const char *cmd)
{
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

void expect(const struct box *b, const char *key, const char *want)
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

bool has_device(const struct box *b)
{
	return strstr(b->out, "dev_open=ok") != NULL;
}

void expect_user_mode_only(const struct box *b, bool device)
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

void expect_deny(const struct box *b)
{
	static const char *const creations[] = { "uffd_plain", "uffd_umo", "uffd_garbage_umo",
						 "i386_plain", "i386_umo", "x32_plain" };
	for (size_t i = 0; i < sizeof(creations) / sizeof(creations[0]); i++)
		expect(b, creations[i], "EPERM");
	if (has_device(b)) {
		expect(b, "dev_plain", "EPERM");
		expect(b, "dev_umo", "EPERM");
	}
}

void expect_allow(const struct box *b)
{
	expect(b, "uffd_plain", "ok");
	expect(b, "uffd_umo", "ok");
	expect(b, "kernel_access", "EFAULT");
	expect(b, "i386_plain", "ok");
	if (has_device(b)) {
		expect(b, "dev_plain", "ok");
		expect(b, "dev_garbage_cmd", "ok");
	}
}

void expect_refused_by_name_only(const struct box *b)
{
	static const char *const creations[] = { "uffd_plain", "uffd_umo", "i386_plain",
						 "i386_umo", "x32_plain" };
	for (size_t i = 0; i < sizeof(creations) / sizeof(creations[0]); i++)
		expect(b, creations[i], "EPERM");
	if (has_device(b))
		expect(b, "dev_plain", "ok");
}

void expect_base_kept(const struct box *b, const char *default_errno)
{
	expect(b, "ioctl_pipe", "ok");
	expect(b, "ioctl_pipe_garbage", "ok");
	expect(b, "ioctl_tty", "ENOTTY");
	expect(b, "acct", "EPERM");
	expect(b, "personality_odd", default_errno);
	expect(b, "personality_query", "ok");
}
