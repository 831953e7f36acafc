// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "sysctl.h"

static bool release_at_least(const char *release, int major, int minor)
{
	int ma, mi;

	if (sscanf(release, "%d.%d", &ma, &mi) != 2)
		return true;
	return ma > major || (ma == major && mi >= minor);
}

bool sysctl_new_semantics(const char *release)
{
	return release_at_least(release, 5, 11);
}

int sysctl_read(void)
{
	char buf[32];
	cleanup_close int fd = open(SYSCTL_PATH, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	return atoi(buf);
}

int sysctl_write(int value)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d\n", value);
	cleanup_close int fd = open(SYSCTL_PATH, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, buf, (size_t)len);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EIO;
}

/* 1 has always allowed everyone; 0 denied unprivileged callers until
 * 5.11, which made it user-mode-only. */
bool sysctl_policy(int value, bool new_semantics, struct policy *p)
{
	char err[256];

	if (value != 0 && value != 1)
		return false;
	return policy_preset(value ? "allow" : new_semantics ? "user-mode-only" : "deny", p, err,
			     sizeof(err)) == 0;
}

const char *sysctl_policy_name(int value, bool new_semantics)
{
	struct policy p;

	return sysctl_policy(value, new_semantics, &p) ? policy_name(&p) : "unknown";
}

const char *sysctl_meaning(int value, bool new_semantics)
{
	if (value == 1)
		return new_semantics
			       ? "every process may create descriptors that handle kernel-mode faults"
			       : "every process may use userfaultfd (the default before Linux 5.11)";
	if (value == 0)
		return new_semantics
			       ? "a process without CAP_SYS_PTRACE may create only user-mode-only "
				 "descriptors (the default since Linux 5.11)"
			       : "a process without CAP_SYS_PTRACE may not use userfaultfd(2) at all "
				 "(before Linux 5.11)";
	return "a value this tool does not know";
}

int sysctl_value(const struct policy *p, bool new_semantics)
{
	for (int value = 0; value <= 1; value++)
		if (!strcmp(sysctl_policy_name(value, new_semantics), policy_name(p)))
			return value;
	return -1;
}
