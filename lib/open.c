// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "internal.h"

static int kernel_flags_for(unsigned int open_flags)
{
	int flags = 0;

	if (!(open_flags & LIBUFFD_OPEN_KERNEL_FAULTS))
		flags |= UFFD_USER_MODE_ONLY;
	if (!(open_flags & LIBUFFD_OPEN_BLOCKING))
		flags |= O_NONBLOCK;
	if (!(open_flags & LIBUFFD_OPEN_INHERIT))
		flags |= O_CLOEXEC;
	return flags;
}

/* The syscall was refused by policy (sysctl, capability, seccomp) rather
 * than by bad arguments: the device may still be allowed. */
static int refused(int err)
{
	return err == -EPERM || err == -ENOSYS || err == -EACCES;
}

LIBUFFD_EXPORT int libuffd_open(const struct libuffd_open_opts *opts,
				struct libuffd_open_report *report)
{
	static const unsigned int known = LIBUFFD_OPEN_KERNEL_FAULTS | LIBUFFD_OPEN_BLOCKING |
		LIBUFFD_OPEN_INHERIT | LIBUFFD_OPEN_SYSCALL_ONLY | LIBUFFD_OPEN_DEVICE_ONLY;
	struct libuffd_open_report local;
	struct libuffd_open_report *rep = report ? report : &local;
	unsigned int oflags = opts ? opts->flags : 0;
	const char *device = opts && opts->device_path ? opts->device_path : LIBUFFD_DEVICE_PATH;

	memset(rep, 0, sizeof(*rep));
	rep->open_flags = oflags;
	if ((opts && !LIBUFFD_RESERVED_ZERO(opts->reserved)) || (oflags & ~known) ||
	    (oflags & LIBUFFD_OPEN_SYSCALL_ONLY && oflags & LIBUFFD_OPEN_DEVICE_ONLY) ||
	    strlen(device) >= sizeof(rep->device_path))
		return -EINVAL;
	strcpy(rep->device_path, device);
	rep->kernel_flags = kernel_flags_for(oflags);

	if (!(oflags & LIBUFFD_OPEN_DEVICE_ONLY)) {
		int fd = uffd_sys_userfaultfd(rep->kernel_flags);
		if (fd >= 0) {
			rep->path = LIBUFFD_PATH_SYSCALL;
			return fd;
		}
		rep->syscall_error = fd;
		if ((oflags & LIBUFFD_OPEN_SYSCALL_ONLY) || !refused(fd))
			return fd;
	}

	int fd = uffd_sys_device_new(device, rep->kernel_flags);
	if (fd >= 0) {
		rep->path = LIBUFFD_PATH_DEVICE;
		return fd;
	}
	rep->device_error = fd;
	/* On the automatic path the syscall's refusal is the primary error,
	 * unless the device failed for a reason other than being absent. */
	if (rep->syscall_error && (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO))
		return rep->syscall_error;
	return fd;
}
