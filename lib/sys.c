// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The thin layer that issues system calls.  libc reports failures in
 * errno; the library promises never to change errno, so every call here
 * saves and restores it and returns -errno instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
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

int uffd_sys_device_new(const char *path, int flags)
{
	int dev = (int)SYS_RESULT(open(path, O_RDWR | O_CLOEXEC));
	if (dev < 0)
		return dev;
	/* The flags travel by value in the ioctl argument. */
	int fd = (int)SYS_RESULT(ioctl(dev, USERFAULTFD_IOC_NEW, (unsigned long)flags));
	uffd_sys_close(dev);
	return fd;
}

struct uffd_sys_hidden uffd_sys_hidden;

/* A userfaultfd ioctl, answered as a kernel without the hidden parts. */
static int hidden_ioctl(int fd, unsigned long cmd, void *arg, const struct uffd_sys_hidden *h)
{
	struct uffdio_api *api = arg;

	if (h->ioctls >> _IOC_NR(cmd) & 1)
		return -EINVAL; /* an ioctl the kernel does not know */
	if (cmd == UFFDIO_API && (api->features & h->features)) {
		memset(api, 0, sizeof(*api)); /* as the kernel does on failure */
		return -EINVAL;
	}
	int r = (int)SYS_RESULT(ioctl(fd, cmd, arg));
	if (r == 0 && cmd == UFFDIO_API) {
		api->features &= ~h->features;
		api->ioctls &= ~h->ioctls;
	}
	if (r == 0 && cmd == UFFDIO_REGISTER)
		((struct uffdio_register *)arg)->ioctls &= ~h->ioctls;
	return r;
}

int uffd_sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	struct uffd_sys_hidden h = uffd_sys_hidden;

	if ((h.features | h.ioctls) && _IOC_TYPE(cmd) == UFFDIO)
		return hidden_ioctl(fd, cmd, arg, &h);
	return (int)SYS_RESULT(ioctl(fd, cmd, arg));
}

int uffd_sys_read(int fd, void *buf, size_t len)
{
	return (int)SYS_RESULT(read(fd, buf, len));
}

int uffd_sys_pread(int fd, void *buf, size_t len, off_t offset)
{
	return (int)SYS_RESULT(pread(fd, buf, len, offset));
}

int uffd_sys_write(int fd, const void *buf, size_t len)
{
	return (int)SYS_RESULT(write(fd, buf, len));
}

int uffd_sys_close(int fd)
{
	return (int)SYS_RESULT(close(fd));
}

int uffd_sys_eventfd(unsigned int flags)
{
	return (int)SYS_RESULT(eventfd(0, (int)flags));
}

int uffd_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	return (int)SYS_RESULT(poll(fds, n, timeout_ms));
}

int uffd_sys_fstat(int fd, struct stat *st)
{
	return (int)SYS_RESULT(fstat(fd, st));
}

int uffd_sys_stat(const char *path, struct stat *st)
{
	return (int)SYS_RESULT(stat(path, st));
}

int uffd_sys_fstatfs(int fd, struct statfs *st)
{
	return (int)SYS_RESULT(fstatfs(fd, st));
}

int uffd_sys_read_file(const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -EINVAL;
	int fd = (int)SYS_RESULT(open(path, O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return fd;
	int n = uffd_sys_read(fd, buf, size - 1);
	buf[n < 0 ? 0 : n] = '\0';
	uffd_sys_close(fd);
	return n;
}

int uffd_sys_readlink(const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -EINVAL;
	int n = (int)SYS_RESULT(readlink(path, buf, size));
	if (n < 0)
		return n;
	if ((size_t)n == size)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return n;
}

int uffd_sys_fcntl(int fd, int cmd, int arg)
{
	return (int)SYS_RESULT(fcntl(fd, cmd, arg));
}

int uffd_sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return (int)SYS_RESULT(sendmsg(fd, m, flags));
}

int uffd_sys_recvmsg(int fd, struct msghdr *m, int flags)
{
	return (int)SYS_RESULT(recvmsg(fd, m, flags));
}

int uffd_sys_mmap(size_t len, int prot, int flags, int fd, off_t offset, void **out)
{
	int saved = errno;
	void *m = mmap(NULL, len, prot, flags, fd, offset);
	int r = m == MAP_FAILED ? -errno : 0;

	errno = saved;
	*out = m == MAP_FAILED ? NULL : m;
	return r;
}

int uffd_sys_munmap(void *addr, size_t len)
{
	return (int)SYS_RESULT(munmap(addr, len));
}

int uffd_sys_madvise(void *addr, size_t len, int advice)
{
	return (int)SYS_RESULT(madvise(addr, len, advice));
}

int uffd_sys_fadvise(int fd, off_t offset, off_t len, int advice)
{
	return -posix_fadvise(fd, offset, len, advice); /* returns the error */
}

int uffd_sys_mincore(void *addr, size_t len, unsigned char *vec)
{
	return (int)SYS_RESULT(mincore(addr, len, vec));
}

int uffd_sys_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	return (int)SYS_RESULT(sigaction(sig, sa, old));
}

int uffd_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return (int)SYS_RESULT(sigprocmask(how, set, old));
}

int uffd_sys_raise(int sig)
{
	return (int)SYS_RESULT(raise(sig));
}

int uffd_sys_sigqueue_thread(pid_t tgid, pid_t tid, int sig, siginfo_t *info)
{
	return (int)SYS_RESULT(syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, info));
}

int uffd_sys_uname(struct utsname *u)
{
	return (int)SYS_RESULT(uname(u));
}

pid_t uffd_sys_getpid(void)
{
	return getpid();
}

uid_t uffd_sys_geteuid(void)
{
	return geteuid();
}

gid_t uffd_sys_getegid(void)
{
	return getegid();
}

int uffd_sys_getaffinity(cpu_set_t *set)
{
	return (int)SYS_RESULT(sched_getaffinity(0, sizeof(*set), set));
}

void uffd_sys_yield(void)
{
	sched_yield();
}

uint64_t uffd_sys_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t uffd_sys_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
