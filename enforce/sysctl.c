// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sysctl.h"

static bool release_at_least(const char *release, int major, int minor)
{
	int ma, mi;

	if (sscanf(release, "%d.%d", &ma, &mi) != 2)
		return true;
	return ma > major || (ma == major && mi >= minor);
}

bool knob_new_semantics(const char *release)
{
	return release_at_least(release, 5, 11);
}

int knob_read(void)
{
	char buf[32];
	int fd = open(KNOB_PATH, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -err : -EIO;
	buf[n] = '\0';
	return atoi(buf);
}

int knob_write(int value)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d\n", value);
	int fd = open(KNOB_PATH, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, buf, (size_t)len);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	return n == len ? 0 : -EIO;
}

const char *knob_policy(int value, bool new_semantics)
{
	if (value == 1)
		return "allow";
	if (value == 0)
		return new_semantics ? "user-mode-only" : "deny";
	return "unknown";
}

const char *knob_meaning(int value, bool new_semantics)
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
