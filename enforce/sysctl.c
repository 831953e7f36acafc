// SPDX-License-Identifier: GPL-2.0-or-later
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "sysctl.h"

/* A decimal number of at most 6 digits at *s, advancing *s; -1 if none
 * (no sign, no blanks: sscanf's %d would take " -5"). */
static long number(const char **s)
{
	long n = 0;
	int digits = 0;

	for (; isdigit((unsigned char)**s) && digits < 7; (*s)++, digits++)
		n = n * 10 + (**s - '0');
	return digits == 0 || digits > 6 ? -1 : n;
}

bool sysctl_parse_release(const char *release, int *major, int *minor)
{
	const char *s = release;
	long ma = number(&s);

	if (ma < 0 || *s++ != '.')
		return false;
	long mi = number(&s);
	/* What follows MAJOR.MINOR in uname -r: ".PATCH", "-28-amd64", "+". */
	if (mi < 0 || (*s && !strchr(".-+_~", *s)))
		return false;
	*major = (int)ma;
	*minor = (int)mi;
	return true;
}

bool sysctl_new_semantics(const char *release)
{
	int ma, mi;

	/* The running kernel's own release, whatever its local suffix:
	 * MAJOR.MINOR at its start, and a kernel too odd to say counts as new. */
	if (sscanf(release, "%d.%d", &ma, &mi) != 2)
		return true;
	return ma > 5 || (ma == 5 && mi >= 11);
}

static int read_value(const char *path)
{
	char buf[32];
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	return atoi(buf);
}

static int write_value(const char *path, int value)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d\n", value);
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, buf, (size_t)len);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EIO;
}

int sysctl_read(void)
{
	return read_value(SYSCTL_PATH);
}

int sysctl_write(int value)
{
	return write_value(SYSCTL_PATH, value);
}

int sysctl_covers_dev_read(void)
{
	return read_value(SYSCTL_COVERS_DEV_PATH);
}

int sysctl_covers_dev_write(int value)
{
	return write_value(SYSCTL_COVERS_DEV_PATH, value);
}

/* 1 has always allowed everyone; 0 denied unprivileged callers until
 * 5.11, which made it user-mode-only; 2 exists only on a kernel with the
 * series in kernel/, where it denies them. */
bool sysctl_policy(int value, bool new_semantics, struct policy *p)
{
	static const char *const since_5_11[] = { "user-mode-only", "allow", "deny" };
	static const char *const before[] = { "deny", "allow" };
	const char *name;
	char err[256];

	if (new_semantics && value >= 0 && value <= SYSCTL_DENY)
		name = since_5_11[value];
	else if (!new_semantics && (value == 0 || value == 1))
		name = before[value];
	else
		return false;
	return policy_preset(name, p, err, sizeof(err)) == 0;
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
	if (value == SYSCTL_DENY && new_semantics)
		return "a process without CAP_SYS_PTRACE may not create userfaultfd descriptors at "
		       "all (a kernel built with the patch series that uffdguard's source carries in "
		       "its directory kernel/, which adds 2)";
	return "a value this tool does not know";
}

const char *sysctl_covers_dev_meaning(int value)
{
	if (value == 0)
		return "/dev/userfaultfd ignores " SYSCTL_NAME
		       ": whoever can open it may handle kernel-mode faults (the default)";
	if (value == 1)
		return "/dev/userfaultfd follows " SYSCTL_NAME
		       ", on top of its file permissions";
	return "a value this tool does not know";
}

const char *sysctl_unexpressed_knob(const struct policy *p)
{
	/* The kernel's capable(CAP_SYS_PTRACE) exempts its holders at every
	 * value; only allow, which checks nobody, is the same without it. */
	if (p->privilege == POLICY_PRIV_NOBODY && strcmp(policy_name(p), "allow"))
		return "ignore_cap_sys_ptrace";
	return NULL;
}

int sysctl_value(const struct policy *p, bool new_semantics, bool has_deny)
{
	if (sysctl_unexpressed_knob(p))
		return -1;
	for (int value = 0; value <= (new_semantics && has_deny ? SYSCTL_DENY : 1); value++)
		if (!strcmp(sysctl_policy_name(value, new_semantics), policy_name(p)))
			return value;
	return -1;
}
