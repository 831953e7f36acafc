// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The thin layer that issues system calls.  libc reports failures in
 * errno; the library promises never to change errno, so every call here
 * saves and restores it and returns -errno instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define SYS_RESULT(expr)                                  \
	({                                                \
		int saved_errno_ = errno;                 \
		long r_ = (long)(expr);                   \
		if (r_ < 0)                               \
			r_ = -errno;                      \
		errno = saved_errno_;                     \
		r_;                                       \
	})

int uffd_sys_userfaultfd(int flags)
{
	return (int)SYS_RESULT(syscall(__NR_userfaultfd, flags));
}

int uffd_sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	return (int)SYS_RESULT(ioctl(fd, cmd, arg));
}

int uffd_sys_read(int fd, void *buf, size_t len)
{
	return (int)SYS_RESULT(read(fd, buf, len));
}

int uffd_sys_device_new(const char *path, int flags)
{
	int dev = (int)SYS_RESULT(open(path, O_RDWR | O_CLOEXEC));
	if (dev < 0)
		return dev;
	/* The flags travel by value in the ioctl argument. */
	int fd = (int)SYS_RESULT(ioctl(dev, USERFAULTFD_IOC_NEW, (unsigned long)flags));
	int saved = errno;
	close(dev);
	errno = saved;
	return fd;
}

int uffd_sys_madvise(void *addr, size_t len, int advice)
{
	return (int)SYS_RESULT(madvise(addr, len, advice));
}

int uffd_sys_mincore(void *addr, size_t len, unsigned char *vec)
{
	return (int)SYS_RESULT(mincore(addr, len, vec));
}
