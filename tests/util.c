// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "identity.h"
#include "util.h"

int run_as(enum who who, int (*fn)(void *), void *arg)
{
	int p[2];

	ASSERT_SYS(pipe2(p, O_CLOEXEC));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		close(p[0]);
		if (who != WHO_ROOT) {
			int r = identity_drop(identity_unused_id(), who == WHO_UNPRIV_PTRACE);
			if (r < 0)
				FAIL("identity_drop: %s", strerror(-r));
		}
		int result = fn(arg);
		if (write(p[1], &result, sizeof(result)) != sizeof(result))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	int result = 0, status = 0;
	ssize_t n = read(p[0], &result, sizeof(result));
	close(p[0]);
	ASSERT_SYS(waitpid(pid, &status, 0));
	if (n != sizeof(result) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		FAIL("child running as %d failed (status 0x%x)", (int)who, status);
	return result;
}

void require_root(void)
{
	if (geteuid() != 0)
		SKIP("needs root (to change identity, sysctls and device nodes)");
}

int sysctl_get(void)
{
	FILE *f = fopen(SYSCTL_PATH, "re");
	int v = -1;

	if (!f)
		SKIP("%s: %s (kernel without userfaultfd?)", SYSCTL_PATH, strerror(errno));
	if (fscanf(f, "%d", &v) != 1)
		FAIL("cannot parse %s", SYSCTL_PATH);
	fclose(f);
	return v;
}

void sysctl_set(int value)
{
	FILE *f = fopen(SYSCTL_PATH, "we");

	if (!f)
		FAIL("open %s: %s", SYSCTL_PATH, strerror(errno));
	fprintf(f, "%d\n", value);
	if (fclose(f) != 0)
		FAIL("write %s: %s", SYSCTL_PATH, strerror(errno));
	ASSERT_EQ(sysctl_get(), value);
}

size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

void *map_pages(size_t n)
{
	void *p = mmap(NULL, n * page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		FAIL("mmap: %s", strerror(errno));
	return p;
}

double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void make_private_device(char *path, uid_t uid, gid_t gid, mode_t mode)
{
	unsigned maj, min;
	FILE *f = fopen("/sys/devices/virtual/misc/userfaultfd/dev", "re");

	if (!f)
		SKIP("no /dev/userfaultfd in this kernel (Linux 6.1+, CONFIG_USERFAULTFD)");
	if (fscanf(f, "%u:%u", &maj, &min) != 2)
		FAIL("cannot parse the userfaultfd device number");
	fclose(f);

	char dir[] = "/tmp/uffdguard-dev.XXXXXX";
	if (!mkdtemp(dir))
		FAIL("mkdtemp: %s", strerror(errno));
	ASSERT_SYS(chmod(dir, 0755));
	snprintf(path, PATH_MAX, "%s/userfaultfd", dir);
	ASSERT_SYS(mknod(path, S_IFCHR | 0600, makedev(maj, min)));
	ASSERT_SYS(chown(path, uid, gid));
	ASSERT_SYS(chmod(path, mode));
}

void remove_private_device(const char *path)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	unlink(path);
	if (slash) {
		*slash = '\0';
		rmdir(dir);
	}
}

int refuse_userfaultfd_by_seccomp(int err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW); /* sets no_new_privs */
	int r = ctx ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), SCMP_SYS(userfaultfd), 0) : -ENOMEM;

	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}
