// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Runs inside a container (a static binary in a busybox root file system):
 * tries every way to create a userfaultfd, with and without
 * UFFD_USER_MODE_ONLY and with garbage in the upper 32 bits, uses a
 * descriptor, and makes ordinary calls.  Raw system calls only, so that
 * nothing but the seccomp profile stands between it and the kernel.
 * Prints one "name=ok" or "name=ERRNAME" line per check.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define UMO 1ul /* UFFD_USER_MODE_ONLY */
#define HIGH (1ul << 32)
#define X32_BIT 0x40000000l

static long report(const char *name, long r)
{
	printf("%s=%s\n", name, r >= 0 ? "ok" : strerrorname_np((int)-r));
	return r;
}

static long sys(long nr, unsigned long a, unsigned long b, unsigned long c)
{
	long r = syscall(nr, a, b, c);
	return r < 0 ? -errno : r;
}

/* The i386 entry (int 0x80): the same kernel code, another seccomp arch. */
static long sys_i386(long nr, unsigned long a)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a) : "memory", "r8", "r9", "r10", "r11");
	return r;
}

/* Whether this kernel offers the i386 entry at all: a kernel without
 * CONFIG_IA32_EMULATION, booted with ia32_emulation=0, or a hypervisor that
 * does not pass int 0x80 through kills the caller with SIGSEGV.  Any
 * answer, even a refusal by the profile, means the entry exists. */
static int have_i386_entry(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		sys_i386(20 /* getpid */, 0);
		_exit(0);
	}
	int st = 0;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st);
}

static void closer(long fd)
{
	if (fd >= 0)
		close((int)fd);
}

struct server {
	int uffd;
	char *page;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	struct uffd_msg msg;
	static char src[4096] __attribute__((aligned(4096)));

	if (read(s->uffd, &msg, sizeof(msg)) != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	memset(src, 0x5a, sizeof(src));
	struct uffdio_copy copy = { .dst = (uintptr_t)s->page, .src = (uintptr_t)src, .len = 4096 };
	ioctl(s->uffd, UFFDIO_COPY, &copy);
	return NULL;
}

/* A user-mode fault is served; a kernel-mode one fails at once. */
static void use_descriptor(long fd)
{
	if (fd < 0)
		return;
	struct uffdio_api api = { .api = UFFD_API };
	char *area = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg = { .range = { (uintptr_t)area, 2 * 4096 },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (ioctl((int)fd, UFFDIO_API, &api) < 0 || ioctl((int)fd, UFFDIO_REGISTER, &reg) < 0) {
		report("serve", -errno);
		return;
	}
	struct server s = { (int)fd, area };
	pthread_t t;
	pthread_create(&t, NULL, serve, &s);
	int ok = 1;
	for (int i = 0; i < 4096; i++)
		ok &= area[i] == 0x5a;
	pthread_join(t, NULL);
	report("serve", ok ? 0 : -EIO);

	int p[2];
	if (pipe(p) == 0) {
		report("kernel_access", write(p[1], area + 4096, 4096) < 0 ? -errno : 0);
		close(p[0]);
		close(p[1]);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	report("getpid", sys(SYS_getpid, 0, 0, 0));

	long fd;
	closer(report("uffd_plain", sys(SYS_userfaultfd, O_CLOEXEC, 0, 0)));
	fd = report("uffd_umo", sys(SYS_userfaultfd, O_CLOEXEC | UMO, 0, 0));
	use_descriptor(fd);
	closer(fd);
	/* Bit 32 set, bit 0 clear: the kernel sees flags without the flag. */
	closer(report("uffd_garbage", sys(SYS_userfaultfd, HIGH | O_CLOEXEC, 0, 0)));
	closer(report("uffd_garbage_all", sys(SYS_userfaultfd, 0xffffffff00000000ul, 0, 0)));
	closer(report("uffd_garbage_umo", sys(SYS_userfaultfd, HIGH | O_CLOEXEC | UMO, 0, 0)));
	if (have_i386_entry()) {
		closer(report("i386_plain", sys_i386(374, O_CLOEXEC)));
		closer(report("i386_umo", sys_i386(374, O_CLOEXEC | UMO)));
	} else {
		printf("i386=unavailable\n");
	}
	closer(report("x32_plain", sys(323 | X32_BIT, O_CLOEXEC, 0, 0)));

	long dev = sys(SYS_openat, (unsigned long)AT_FDCWD, (unsigned long)"/dev/userfaultfd",
		       O_RDWR | O_CLOEXEC);
	report("dev_open", dev);
	if (dev >= 0) {
		unsigned long new = USERFAULTFD_IOC_NEW;
		closer(report("dev_plain", sys(SYS_ioctl, (unsigned long)dev, new, O_CLOEXEC)));
		closer(report("dev_umo", sys(SYS_ioctl, (unsigned long)dev, new, O_CLOEXEC | UMO)));
		closer(report("dev_garbage_cmd", sys(SYS_ioctl, (unsigned long)dev, new | HIGH, O_CLOEXEC)));
		closer(report("dev_garbage_flags", sys(SYS_ioctl, (unsigned long)dev, new, HIGH | O_CLOEXEC)));
		close((int)dev);
	}

	/* Ordinary ioctls reach the kernel; garbage in cmd's upper bits is
	 * truncated by it. */
	int p[2], n = 0;
	if (pipe(p) == 0) {
		report("ioctl_pipe", sys(SYS_ioctl, (unsigned long)p[0], FIONREAD, (unsigned long)&n));
		report("ioctl_pipe_garbage",
		       sys(SYS_ioctl, (unsigned long)p[0], FIONREAD | HIGH, (unsigned long)&n));
	}
	struct termios tio;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	report("ioctl_tty", sys(SYS_ioctl, (unsigned long)null, TCGETS, (unsigned long)&tio));

	/* The base's other rules: refused by name, by argument, by default. */
	report("acct", sys(SYS_acct, 0, 0, 0));
	report("personality_odd", sys(SYS_personality, 0xdead, 0, 0));
	report("personality_query", sys(SYS_personality, 0xffffffff, 0, 0));
	return 0;
}
