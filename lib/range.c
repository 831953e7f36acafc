// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <string.h>

#include "internal.h"

#define PTR(p) ((__u64)(uintptr_t)(p))

LIBUFFD_EXPORT int libuffd_register(int fd, void *addr, size_t len, unsigned int modes,
				    uint64_t *ioctls)
{
	static const unsigned int known = LIBUFFD_REGISTER_MISSING | LIBUFFD_REGISTER_WP |
					  LIBUFFD_REGISTER_MINOR;
	struct uffdio_register reg;

	if (!modes || (modes & ~known))
		return -EINVAL;
	memset(&reg, 0, sizeof(reg));
	reg.range.start = PTR(addr);
	reg.range.len = len;
	if (modes & LIBUFFD_REGISTER_MISSING)
		reg.mode |= UFFDIO_REGISTER_MODE_MISSING;
	if (modes & LIBUFFD_REGISTER_WP)
		reg.mode |= UFFDIO_REGISTER_MODE_WP;
	if (modes & LIBUFFD_REGISTER_MINOR)
		reg.mode |= UFFDIO_REGISTER_MODE_MINOR;
	int ret = uffd_sys_ioctl(fd, UFFDIO_REGISTER, &reg);
	if (ret < 0)
		return ret;
	if (ioctls)
		*ioctls = reg.ioctls;
	return 0;
}

LIBUFFD_EXPORT int libuffd_unregister(int fd, void *addr, size_t len)
{
	struct uffdio_range range = { .start = PTR(addr), .len = len };

	return uffd_sys_ioctl(fd, UFFDIO_UNREGISTER, &range);
}

LIBUFFD_EXPORT int libuffd_wake(int fd, void *addr, size_t len)
{
	struct uffdio_range range = { .start = PTR(addr), .len = len };

	return uffd_sys_ioctl(fd, UFFDIO_WAKE, &range);
}

/*
 * The resolving ioctls report progress in a signed field written by the
 * kernel: the bytes done, or a negated errno when nothing was done.  The
 * ioctl fails with EAGAIN when only part of the range was done (the
 * address space is changing, or a later page hit an error that a retry of
 * the rest will report).  The field is zeroed by the callers because the
 * kernel leaves it untouched when it rejects the arguments.
 */
static int finish(int ret, __s64 progress, size_t *done)
{
	if (done)
		*done = progress > 0 ? (size_t)progress : 0;
	return ret;
}

static int check_mode(unsigned int mode, unsigned int allowed)
{
	return (mode & ~allowed) ? -EINVAL : 0;
}

LIBUFFD_EXPORT int libuffd_copy(int fd, void *dst, const void *src, size_t len,
				unsigned int mode, size_t *done)
{
	struct uffdio_copy c = { .dst = PTR(dst), .src = PTR(src), .len = len };

	if (done)
		*done = 0;
	if (check_mode(mode, LIBUFFD_DONTWAKE | LIBUFFD_WP))
		return -EINVAL;
	if (mode & LIBUFFD_DONTWAKE)
		c.mode |= UFFDIO_COPY_MODE_DONTWAKE;
	if (mode & LIBUFFD_WP)
		c.mode |= UFFDIO_COPY_MODE_WP;
	int ret = uffd_sys_ioctl(fd, UFFDIO_COPY, &c);
	return finish(ret, c.copy, done);
}

LIBUFFD_EXPORT int libuffd_zeropage(int fd, void *dst, size_t len, unsigned int mode,
				    size_t *done)
{
	struct uffdio_zeropage z = { .range = { .start = PTR(dst), .len = len } };

	if (done)
		*done = 0;
	if (check_mode(mode, LIBUFFD_DONTWAKE))
		return -EINVAL;
	if (mode & LIBUFFD_DONTWAKE)
		z.mode |= UFFDIO_ZEROPAGE_MODE_DONTWAKE;
	int ret = uffd_sys_ioctl(fd, UFFDIO_ZEROPAGE, &z);
	return finish(ret, z.zeropage, done);
}

LIBUFFD_EXPORT int libuffd_continue(int fd, void *dst, size_t len, unsigned int mode,
				    size_t *done)
{
	struct uffdio_continue c = { .range = { .start = PTR(dst), .len = len } };

	if (done)
		*done = 0;
	if (check_mode(mode, LIBUFFD_DONTWAKE | LIBUFFD_WP))
		return -EINVAL;
	if (mode & LIBUFFD_DONTWAKE)
		c.mode |= UFFDIO_CONTINUE_MODE_DONTWAKE;
	if (mode & LIBUFFD_WP)
		c.mode |= UFFDIO_CONTINUE_MODE_WP;
	int ret = uffd_sys_ioctl(fd, UFFDIO_CONTINUE, &c);
	return finish(ret, c.mapped, done);
}

LIBUFFD_EXPORT int libuffd_poison(int fd, void *dst, size_t len, unsigned int mode,
				  size_t *done)
{
	struct uffdio_poison p = { .range = { .start = PTR(dst), .len = len } };

	if (done)
		*done = 0;
	if (check_mode(mode, LIBUFFD_DONTWAKE))
		return -EINVAL;
	if (mode & LIBUFFD_DONTWAKE)
		p.mode |= UFFDIO_POISON_MODE_DONTWAKE;
	int ret = uffd_sys_ioctl(fd, UFFDIO_POISON, &p);
	return finish(ret, p.updated, done);
}

LIBUFFD_EXPORT int libuffd_move(int fd, void *dst, void *src, size_t len, unsigned int mode,
				size_t *done)
{
	struct uffdio_move m = { .dst = PTR(dst), .src = PTR(src), .len = len };

	if (done)
		*done = 0;
	if (check_mode(mode, LIBUFFD_DONTWAKE | LIBUFFD_MOVE_SRC_HOLES))
		return -EINVAL;
	if (mode & LIBUFFD_DONTWAKE)
		m.mode |= UFFDIO_MOVE_MODE_DONTWAKE;
	if (mode & LIBUFFD_MOVE_SRC_HOLES)
		m.mode |= UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES;
	int ret = uffd_sys_ioctl(fd, UFFDIO_MOVE, &m);
	return finish(ret, m.move, done);
}

LIBUFFD_EXPORT int libuffd_writeprotect(int fd, void *addr, size_t len, int protect,
					unsigned int mode)
{
	struct uffdio_writeprotect wp = { .range = { .start = PTR(addr), .len = len } };

	if (check_mode(mode, LIBUFFD_DONTWAKE))
		return -EINVAL;
	if (protect)
		wp.mode |= UFFDIO_WRITEPROTECT_MODE_WP;
	if (mode & LIBUFFD_DONTWAKE)
		wp.mode |= UFFDIO_WRITEPROTECT_MODE_DONTWAKE;
	return uffd_sys_ioctl(fd, UFFDIO_WRITEPROTECT, &wp);
}
