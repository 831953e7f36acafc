/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The system call layer (sys.c): the only code in libuffd that calls the
 * kernel.  Each function returns 0 (or a value) or -errno and leaves errno
 * as it found it.  All are async-signal-safe.
 */
#ifndef LIBUFFD_SYS_H
#define LIBUFFD_SYS_H

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/utsname.h>

/* userfaultfd */
int uffd_sys_userfaultfd(int flags);
int uffd_sys_device_new(const char *path, int flags);
int uffd_sys_ioctl(int fd, unsigned long cmd, void *arg);

/*
 * Parts of the kernel's answer to hide, as if the kernel lacked them: the
 * features and ioctls that UFFDIO_API offers and the ioctls that
 * UFFDIO_REGISTER allows come back without them, and asking for a hidden
 * feature or issuing a hidden ioctl fails with -EINVAL, as on such a
 * kernel.  All zero unless a test linked with the library's objects sets
 * them before its first call; not exported from the shared library.
 */
struct uffd_sys_hidden {
	uint64_t features; /* LIBUFFD_FEATURE_* */
	uint64_t ioctls;   /* LIBUFFD_IOCTL_* */
};
extern struct uffd_sys_hidden uffd_sys_hidden;

/* Files and descriptors */
int uffd_sys_read(int fd, void *buf, size_t len);
int uffd_sys_pread(int fd, void *buf, size_t len, off_t offset);
int uffd_sys_write(int fd, const void *buf, size_t len);
int uffd_sys_close(int fd);
int uffd_sys_eventfd(unsigned int flags);
int uffd_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
int uffd_sys_fstat(int fd, struct stat *st);
int uffd_sys_stat(const char *path, struct stat *st);
int uffd_sys_fstatfs(int fd, struct statfs *st);
/* Read a small file (/proc, /sys) into buf, NUL-terminated: bytes read. */
int uffd_sys_read_file(const char *path, char *buf, size_t size);
/* readlink(2) into buf, NUL-terminated: the length, or -ENAMETOOLONG
 * when it does not fit. */
int uffd_sys_readlink(const char *path, char *buf, size_t size);
/* fcntl(2) with an int argument (F_GETFL, F_SETFL). */
int uffd_sys_fcntl(int fd, int cmd, int arg);
/* sendmsg(2), recvmsg(2): bytes sent or received. */
int uffd_sys_sendmsg(int fd, const struct msghdr *m, int flags);
int uffd_sys_recvmsg(int fd, struct msghdr *m, int flags);

/* Memory */
int uffd_sys_mmap(size_t len, int prot, int flags, int fd, off_t offset, void **out);
int uffd_sys_munmap(void *addr, size_t len);
int uffd_sys_madvise(void *addr, size_t len, int advice);
int uffd_sys_mincore(void *addr, size_t len, unsigned char *vec);
/* posix_fadvise(2) */
int uffd_sys_fadvise(int fd, off_t offset, off_t len, int advice);

/* Signals */
int uffd_sys_sigaction(int sig, const struct sigaction *sa, struct sigaction *old);
int uffd_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int uffd_sys_raise(int sig);
/* rt_tgsigqueueinfo(2): sig with info to thread tid of group tgid. */
int uffd_sys_sigqueue_thread(pid_t tgid, pid_t tid, int sig, siginfo_t *info);

/* Process, scheduling, time */
int uffd_sys_uname(struct utsname *u);
pid_t uffd_sys_getpid(void);
uid_t uffd_sys_geteuid(void);
gid_t uffd_sys_getegid(void);
int uffd_sys_getaffinity(cpu_set_t *set);
void uffd_sys_yield(void);
uint64_t uffd_sys_monotonic_ns(void);
/* CPU time of the calling thread (user and system), ns; 0 if unknown. */
uint64_t uffd_sys_thread_cpu_ns(void);

#endif
