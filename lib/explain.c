// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Explain a failed libuffd_open() in one sentence, from the state of the
 * system now: the sysctl and what it means on this kernel, the caller's
 * capability, the device's permissions, a seccomp filter.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CAP_SYS_PTRACE_BIT 19
/* PROC_USER_INIT_INO: the initial user namespace's inode number. */
#define INIT_USER_NS_INO 0xEFFFFFFDul

struct text {
	char *buf;
	size_t size, used;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int w = vsnprintf(t->used < t->size ? t->buf + t->used : NULL,
			  t->used < t->size ? t->size - t->used : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		t->used += (size_t)w;
}

/* strerror() is not thread-safe and may touch errno; this is neither. */
static const char *err_text(int err)
{
	const char *d = strerrordesc_np(-err);
	return d ? d : "unknown error";
}

/* vm.unprivileged_userfaultfd; -2 when the kernel has none (built without
 * CONFIG_USERFAULTFD), -1 when it cannot be read here (/proc/sys hidden,
 * not mounted or not readable). */
static int sysctl_value(void)
{
	char buf[32];
	struct stat st;

	int r = uffd_sys_read_file("/proc/sys/vm/unprivileged_userfaultfd", buf, sizeof(buf));
	if (r == -ENOENT && uffd_sys_stat("/proc/sys/vm/overcommit_memory", &st) == 0)
		return -2;
	if (r < 0)
		return -1;
	return atoi(buf);
}

/* Fields of /proc/self/status. */
static unsigned long long status_field(const char *name, int base, int *found)
{
	char buf[4096];
	size_t len = strlen(name);

	*found = 0;
	if (uffd_sys_read_file("/proc/thread-self/status", buf, sizeof(buf)) < 0)
		return 0;
	for (char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!strncmp(line, name, len) && line[len] == ':') {
			*found = 1;
			return strtoull(line + len + 1, NULL, base);
		}
	}
	return 0;
}

static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uffd_sys_uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 1;
	return ma > major || (ma == major && mi >= minor);
}

static int in_init_user_ns(void)
{
	struct stat st;

	return uffd_sys_stat("/proc/self/ns/user", &st) == 0 ? st.st_ino == INIT_USER_NS_INO : 1;
}

static void explain_syscall(struct text *t, int err, const struct libuffd_open_report *r)
{
	int found = 0, seccomp_known = 0;
	int user_mode_only = r->kernel_flags & UFFD_USER_MODE_ONLY;
	int sysctl = sysctl_value();
	unsigned long long seccomp = status_field("Seccomp", 10, &seccomp_known);
	unsigned long long capeff = status_field("CapEff", 16, &found);
	int has_cap = found && (capeff >> CAP_SYS_PTRACE_BIT & 1) && in_init_user_ns();
	int has_cap_in_userns = found && (capeff >> CAP_SYS_PTRACE_BIT & 1) && !in_init_user_ns();
	int new_semantics = kernel_at_least(5, 11);
	/* What the kernel itself would decide (fs/userfaultfd.c): since 5.11
	 * it allows UFFD_USER_MODE_ONLY to everyone whatever the sysctl says
	 * (also when /proc/sys cannot be read here, sysctl < 0), except 2 on
	 * a kernel with the patch series in uffdguard's kernel/. */
	int kernel_allows = new_semantics
				    ? (has_cap || sysctl == 1 || (user_mode_only && sysctl != 2))
				    : (has_cap || sysctl == 1);
	char knob[64];
	if (sysctl < 0)
		snprintf(knob, sizeof(knob), "vm.unprivileged_userfaultfd (unreadable here)");
	else
		snprintf(knob, sizeof(knob), "vm.unprivileged_userfaultfd=%d", sysctl);

	switch (err) {
	case -ENOSYS:
		if (seccomp == 2)
			put(t, "userfaultfd(2) is blocked by a seccomp filter on this process (ENOSYS)");
		else if (sysctl == -2)
			put(t, "this kernel has no userfaultfd(2): it was built without CONFIG_USERFAULTFD (ENOSYS)");
		else if (sysctl == -1)
			put(t, "userfaultfd(2) is not implemented here (ENOSYS): the kernel was built "
			       "without CONFIG_USERFAULTFD or this process's system call ABI lacks it");
		else
			put(t, "userfaultfd(2) is not implemented for this process's system call ABI (ENOSYS)");
		return;
	case -EINVAL:
		if (user_mode_only && !new_semantics)
			put(t, "this kernel does not know UFFD_USER_MODE_ONLY (it needs Linux 5.11 or "
			       "later), and libuffd will not drop the flag silently");
		else if (seccomp == 2)
			put(t, "userfaultfd(2) with flags 0x%x was refused with EINVAL, by a seccomp filter "
			       "on this process or by the kernel", r->kernel_flags);
		else
			put(t, "the kernel rejected the flags 0x%x of userfaultfd(2) (EINVAL)", r->kernel_flags);
		return;
	case -EACCES:
		put(t, "userfaultfd(2) was denied by a security module such as SELinux (EACCES)");
		return;
	case -EPERM:
		break;
	default:
		put(t, "userfaultfd(2) failed: %s", err_text(err));
		return;
	}

	if (kernel_allows) {
		const char *why = has_cap ? "CAP_SYS_PTRACE"
				  : sysctl == 1 ? knob
				  : "UFFD_USER_MODE_ONLY, which Linux 5.11 and later allow to every process";
		if (seccomp == 2)
			put(t, "userfaultfd(2) is refused by a seccomp filter on this process (EPERM); the "
			       "kernel's own rules (%s) would allow it", why);
		else
			put(t, "userfaultfd(2) was refused with EPERM although the kernel's own rules (%s) "
			       "should allow it (%s)", why,
			    seccomp_known ? "a security module?" : "a seccomp filter or a security module?");
		return;
	}
	if (sysctl < 0 && new_semantics)
		put(t, "%s: unless it is 1, the kernel (5.11 or later) lets a process without "
		       "CAP_SYS_PTRACE create only user-mode-only descriptors; this request asked to "
		       "handle kernel faults and the process lacks CAP_SYS_PTRACE", knob);
	else if (sysctl < 0)
		put(t, "%s: unless it is 1, the kernel (before 5.11) denies userfaultfd(2) to every "
		       "process without CAP_SYS_PTRACE, and this one lacks it", knob);
	else if (sysctl == 2)
		put(t, "vm.unprivileged_userfaultfd is 2, which denies userfaultfd(2), even with "
		       "UFFD_USER_MODE_ONLY, to a process that lacks CAP_SYS_PTRACE, as this one does");
	else if (new_semantics)
		put(t, "vm.unprivileged_userfaultfd is 0, which on this kernel (5.11 or later) lets a "
		       "process without CAP_SYS_PTRACE create only user-mode-only descriptors; this "
		       "request asked to handle kernel faults and the process lacks CAP_SYS_PTRACE");
	else
		put(t, "vm.unprivileged_userfaultfd is 0, which on this kernel (before 5.11) denies "
		       "userfaultfd(2) to every process without CAP_SYS_PTRACE, and this one lacks it");
	if (has_cap_in_userns)
		put(t, " (it holds CAP_SYS_PTRACE only inside a user namespace, which does not count)");
	if (user_mode_only && !new_semantics)
		put(t, "; UFFD_USER_MODE_ONLY needs Linux 5.11 or later");
}

static void explain_device(struct text *t, int err, const char *path)
{
	struct stat st;
	int have = uffd_sys_stat(path, &st) == 0;

	switch (err) {
	case -ENOENT:
		put(t, "%s does not exist (it needs Linux 6.1 or later and a device node)", path);
		return;
	case -EACCES:
	case -EPERM:
		if (have)
			put(t, "%s (owner %u, group %u, mode %04o) is not readable and writable by uid %u "
			       "gid %u", path, (unsigned)st.st_uid, (unsigned)st.st_gid,
			    (unsigned)(st.st_mode & 07777), (unsigned)uffd_sys_geteuid(),
			    (unsigned)uffd_sys_getegid());
		else
			put(t, "%s cannot be opened: %s", path, err_text(err));
		return;
	case -ENODEV:
	case -ENXIO:
		put(t, "%s is not a working userfaultfd device (%s)", path, err_text(err));
		return;
	case -ENOTTY:
		put(t, "%s does not understand USERFAULTFD_IOC_NEW: it is not the userfaultfd device", path);
		return;
	case -EINVAL:
		put(t, "%s rejected the flags (EINVAL)", path);
		return;
	default:
		put(t, "%s failed: %s", path, err_text(err));
		return;
	}
}

static void explain(struct text *t, int err, const struct libuffd_open_report *r)
{
	if (r->syscall_error == 0 && r->device_error == 0) {
		put(t, "libuffd_open() failed before trying the kernel: %s", err_text(err));
		return;
	}
	if (r->syscall_error)
		explain_syscall(t, r->syscall_error, r);
	if (r->syscall_error && r->device_error)
		put(t, "; and ");
	if (r->device_error) {
		/* The report is the caller's: its path may lack a NUL. */
		char path[sizeof(r->device_path) + 1];
		size_t n = strnlen(r->device_path, sizeof(r->device_path));
		memcpy(path, r->device_path, n);
		path[n] = '\0';
		explain_device(t, r->device_error, path);
	}
	put(t, ".");
}

LIBUFFD_EXPORT int libuffd_explain_open(int err, const struct libuffd_open_report *r,
					char *buf, size_t size)
{
	struct text t = { .buf = buf, .size = size };
	int saved = errno; /* strtoull() and vsnprintf() may set it */

	if (!r || err >= 0)
		return -EINVAL;
	if (size)
		buf[0] = '\0';
	explain(&t, err, r);
	errno = saved;
	return (int)t.used;
}
