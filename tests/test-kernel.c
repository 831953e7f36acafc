// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The seed's semantics as this kernel implements them, on the real
 * kernel: user-mode-only descriptors, kernel-mode faults, the sysctl and
 * CAP_SYS_PTRACE for unprivileged callers, /dev/userfaultfd, and the
 * explanation of each refusal.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sched.h>
#include <sys/ioctl.h>

#include "identity.h"

#include "harness.h"
#include "libuffd.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)

#define UMO 1 /* UFFD_USER_MODE_ONLY */

/* The whole 64-bit register is passed; the kernel reads an int. */
static int raw_userfaultfd(long flags)
{
	int fd = (int)syscall(__NR_userfaultfd, flags);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* A descriptor with the API done and one registered missing page. */
struct setup {
	int fd;
	char *page;
};

static struct setup setup_page(unsigned int open_flags)
{
	struct libuffd_open_opts o = { .flags = open_flags | LIBUFFD_OPEN_SYSCALL_ONLY };
	struct libuffd_api api;
	struct setup s;

	s.fd = libuffd_open(&o, NULL);
	ASSERT_OK(s.fd);
	ASSERT_OK(libuffd_api_handshake(s.fd, 0, 0, &api));
	s.page = map_pages(1);
	ASSERT_OK(libuffd_register(s.fd, s.page, page_size(), LIBUFFD_REGISTER_MISSING, NULL));
	return s;
}

static bool fault_pending(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

struct handler {
	int fd;
	int delay_ms;
	unsigned char fill;
	int faults;
	uint32_t fault_flags;
};

/* Serve exactly one fault, after delay_ms, with a page of `fill`. */
static void *handle_one(void *arg)
{
	struct handler *h = arg;
	struct pollfd p = { .fd = h->fd, .events = POLLIN };
	struct libuffd_event ev;

	if (poll(&p, 1, 20000) != 1 || libuffd_read_events(h->fd, &ev, 1) != 1 ||
	    ev.type != LIBUFFD_EVENT_PAGEFAULT)
		return NULL;
	h->faults++;
	h->fault_flags = ev.pagefault.flags;
	usleep((useconds_t)h->delay_ms * 1000);
	char *src = map_pages(1);
	memset(src, h->fill, page_size());
	void *page = (void *)(uintptr_t)(ev.pagefault.address & ~(uint64_t)(page_size() - 1));
	libuffd_copy(h->fd, page, src, page_size(), 0, NULL);
	munmap(src, page_size());
	return NULL;
}

TEST(user_mode_fault_reaches_handler_with_right_data)
{
	struct setup s = setup_page(0);
	struct handler h = { .fd = s.fd, .fill = 0xab };
	pthread_t t;

	ASSERT_EQ(pthread_create(&t, NULL, handle_one, &h), 0);
	s.page[10] = 1; /* a user-mode write fault */
	pthread_join(t, NULL);
	ASSERT_EQ(h.faults, 1);
	ASSERT_TRUE(h.fault_flags & LIBUFFD_FAULT_WRITE);
	ASSERT_EQ((unsigned char)s.page[0], 0xab);
	ASSERT_EQ(s.page[10], 1);
	ASSERT_EQ((unsigned char)s.page[page_size() - 1], 0xab);
}

/* Nobody serves these faults: were the kernel to wait, the case would
 * hang and the harness would fail it on its timeout. */
TEST_TIMEOUT(kernel_mode_faults_fail_with_efault_at_once, 10)
{
	struct setup s = setup_page(0);
	int p[2];
	ASSERT_SYS(pipe(p));

	/* write(): copy_from_user() of the registered page. */
	errno = 0;
	ASSERT_EQ(write(p[1], s.page, 16), -1);
	ASSERT_EQ(errno, EFAULT);

	/* read(): copy_to_user() into the registered page. */
	ASSERT_EQ(write(p[1], "data", 4), 4);
	errno = 0;
	ASSERT_EQ(read(p[0], s.page, 4), -1);
	ASSERT_EQ(errno, EFAULT);

	/* setxattr(): the value is copied in before the file system looks. */
	char path[] = "/tmp/uffdguard-xattr.XXXXXX";
	int f = ASSERT_SYS(mkstemp(path));
	errno = 0;
	ASSERT_EQ(setxattr(path, "user.uffdguard", s.page, 64, 0), -1);
	ASSERT_EQ(errno, EFAULT);
	unlink(path);
	close(f);

	ASSERT_TRUE(!fault_pending(s.fd)); /* none reached the handler */
	/* The page is still missing: a user-mode access still faults to us. */
	struct handler h = { .fd = s.fd, .fill = 3 };
	pthread_t t;
	ASSERT_EQ(pthread_create(&t, NULL, handle_one, &h), 0);
	ASSERT_EQ(s.page[0], 3);
	pthread_join(t, NULL);
	ASSERT_EQ(h.faults, 1);
}

TEST(flagless_kernel_access_sleeps_until_the_handler_answers)
{
	require_root();
	struct setup s = setup_page(LIBUFFD_OPEN_KERNEL_FAULTS);
	struct handler h = { .fd = s.fd, .delay_ms = 300, .fill = 0x42 };
	int p[2];
	pthread_t t;
	char out[16];

	ASSERT_SYS(pipe(p));
	ASSERT_EQ(pthread_create(&t, NULL, handle_one, &h), 0);
	double start = now_ms();
	ASSERT_EQ(write(p[1], s.page, 16), 16); /* the kernel waits in copy_from_user */
	double took = now_ms() - start;
	pthread_join(t, NULL);
	ASSERT_EQ(h.faults, 1);
	ASSERT_TRUE(!(h.fault_flags & LIBUFFD_FAULT_WRITE));
	ASSERT_GE(took, h.delay_ms);
	ASSERT_EQ(read(p[0], out, sizeof(out)), 16);
	ASSERT_EQ((unsigned char)out[0], 0x42);
	ASSERT_EQ((unsigned char)out[15], 0x42);
}

/* ---- unprivileged callers and the sysctl --------------------------------- */

static int try_flags(void *arg)
{
	return raw_userfaultfd(*(long *)arg);
}

static int try_as(enum who who, long flags)
{
	return run_as(who, try_flags, &flags);
}

TEST(unprivileged_with_sysctl_0)
{
	require_root();
	sysctl_set(0);
	ASSERT_ERR(try_as(WHO_UNPRIV, 0), -EPERM);
	ASSERT_ERR(try_as(WHO_UNPRIV, O_CLOEXEC | O_NONBLOCK), -EPERM);
	ASSERT_ERR(try_as(WHO_UNPRIV, UMO), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV, UMO | O_CLOEXEC | O_NONBLOCK), 0);
	/* EPERM is decided before unknown bits are looked at. */
	ASSERT_ERR(try_as(WHO_UNPRIV, 0x100), -EPERM);
	ASSERT_ERR(try_as(WHO_UNPRIV, UMO | 0x100), -EINVAL);
	/* The upper 32 bits are ignored: what an enforcer must compare too. */
	ASSERT_ERR(try_as(WHO_UNPRIV, (long)0xdead000000000000ul | UMO), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV, (long)0x100000000ul), -EPERM);
}

TEST(unprivileged_with_sysctl_1)
{
	require_root();
	sysctl_set(1);
	ASSERT_ERR(try_as(WHO_UNPRIV, 0), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV, UMO), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV, 0x100), -EINVAL);
	ASSERT_ERR(try_as(WHO_UNPRIV, UMO | 0x100), -EINVAL);
}

TEST(cap_sys_ptrace_alone_is_privileged)
{
	require_root();
	sysctl_set(0);
	ASSERT_ERR(try_as(WHO_UNPRIV_PTRACE, 0), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV_PTRACE, UMO), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV_PTRACE, 0x100), -EINVAL);
	sysctl_set(1);
	ASSERT_ERR(try_as(WHO_UNPRIV_PTRACE, 0), 0);
	ASSERT_ERR(try_as(WHO_UNPRIV_PTRACE, UMO), 0);
}

/* The harness restores the sysctl after every case, also after a crash:
 * the first case flips it and dies, the second finds the old value. */
static void restore_check_path(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/uffdguard-sysctl-check.%d", (int)getppid());
}

TEST_SIGNAL(sysctl_restore_1_flip_and_crash, SIGKILL)
{
	require_root();
	char path[64];
	restore_check_path(path, sizeof(path));
	int before = sysctl_get();
	FILE *f = fopen(path, "we");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "%d\n", before);
	fclose(f);
	sysctl_set(!before);
	kill(getpid(), SIGKILL);
}

TEST(sysctl_restore_2_finds_the_old_value)
{
	require_root();
	char path[64];
	int before = -1;
	restore_check_path(path, sizeof(path));
	FILE *f = fopen(path, "re");
	ASSERT_TRUE(f != NULL);
	ASSERT_EQ(fscanf(f, "%d", &before), 1);
	fclose(f);
	unlink(path);
	ASSERT_EQ(sysctl_get(), before);
}

/* ---- /dev/userfaultfd through a private node ------------------------------ */

struct dev_try {
	const char *path;
	unsigned int flags; /* LIBUFFD_OPEN_* */
	unsigned long raw;  /* when nonzero: raw ioctl argument instead */
};

static int try_device(void *arg)
{
	struct dev_try *d = arg;
	struct libuffd_open_opts o = { .flags = d->flags | LIBUFFD_OPEN_DEVICE_ONLY,
				       .device_path = d->path };
	int fd = libuffd_open(&o, NULL);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static int try_device_raw(void *arg)
{
	struct dev_try *d = arg;
	int dev = open(d->path, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	int fd = ioctl(dev, 0xAA00, d->raw);
	int ret = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	close(dev);
	return ret;
}

TEST(device_ignores_the_sysctl_for_whoever_can_open_it)
{
	require_root();
	char path[PATH_MAX];
	/* Owned by the unprivileged uid run_as() will pick. */
	uid_t id = identity_unused_id();
	make_private_device(path, id, id, 0600);
	sysctl_set(0);
	struct dev_try d = { .path = path };

	ASSERT_ERR(try_as(WHO_UNPRIV, 0), -EPERM); /* the syscall refuses... */
	d.flags = LIBUFFD_OPEN_KERNEL_FAULTS;
	ASSERT_ERR(run_as(WHO_UNPRIV, try_device, &d), 0); /* ...the device does not */
	d.flags = 0;
	ASSERT_ERR(run_as(WHO_UNPRIV, try_device, &d), 0);
	/* The device truncates the argument to int, like the syscall. */
	d.raw = 0xdead000000000000ul | UMO;
	ASSERT_ERR(run_as(WHO_UNPRIV, try_device_raw, &d), 0);
	d.raw = 0x100;
	ASSERT_ERR(run_as(WHO_UNPRIV, try_device_raw, &d), -EINVAL);
	remove_private_device(path);
}

TEST(device_without_access_is_refused)
{
	require_root();
	char path[PATH_MAX];
	make_private_device(path, 0, 0, 0600);
	struct dev_try d = { .path = path, .flags = LIBUFFD_OPEN_KERNEL_FAULTS };

	ASSERT_ERR(run_as(WHO_UNPRIV, try_device, &d), -EACCES);
	d.flags = 0;
	ASSERT_ERR(run_as(WHO_UNPRIV, try_device, &d), -EACCES);
	ASSERT_ERR(run_as(WHO_ROOT, try_device, &d), 0);
	remove_private_device(path);
}

/* ---- the automatic path and the explanation -------------------------------- */

struct explained {
	const char *device;
	unsigned int flags;
	bool seccomp_enosys; /* install a filter returning ENOSYS first */
	bool seccomp_eperm;
	int err;
	enum libuffd_path path;
	char why[1024];
};

static int open_and_explain(void *arg)
{
	struct explained *e = arg;
	struct libuffd_open_opts o = { .flags = e->flags, .device_path = e->device };
	struct libuffd_open_report rep;

	if ((e->seccomp_enosys || e->seccomp_eperm) &&
	    refuse_userfaultfd_by_seccomp(e->seccomp_enosys ? ENOSYS : EPERM) < 0)
		FAIL("cannot install the test's seccomp filter");
	e->err = libuffd_open(&o, &rep);
	e->path = rep.path;
	if (e->err >= 0) {
		close(e->err);
		e->err = 0;
	} else {
		libuffd_explain_open(e->err, &rep, e->why, sizeof(e->why));
	}
	return 0;
}

/* in, in a shared mapping: children fork to explain, and the result
 * comes back there. */
static struct explained *shared_explained(struct explained in)
{
	struct explained *e = mmap(NULL, sizeof(*e), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(e != MAP_FAILED);
	*e = in;
	return e;
}

static struct explained *explain_as(enum who who, struct explained in)
{
	struct explained *e = shared_explained(in);
	ASSERT_EQ(run_as(who, open_and_explain, e), 0);
	return e;
}

#define ASSERT_SAYS(e, text)                                                     \
	do {                                                                     \
		if (!strstr((e)->why, text))                                     \
			FAIL("explanation lacks \"%s\": %s", text, (e)->why);    \
	} while (0)

TEST(automatic_path_falls_back_to_an_accessible_device)
{
	require_root();
	char path[PATH_MAX];
	uid_t id = identity_unused_id();
	make_private_device(path, id, id, 0600);
	sysctl_set(0);

	struct explained *e = explain_as(WHO_UNPRIV, (struct explained){
		.device = path, .flags = LIBUFFD_OPEN_KERNEL_FAULTS });
	ASSERT_EQ(e->err, 0);
	ASSERT_EQ(e->path, LIBUFFD_PATH_DEVICE);
	/* User-mode-only is allowed by the syscall: no fallback needed. */
	e = explain_as(WHO_UNPRIV, (struct explained){ .device = path });
	ASSERT_EQ(e->err, 0);
	ASSERT_EQ(e->path, LIBUFFD_PATH_SYSCALL);
	remove_private_device(path);
}

TEST(explain_sysctl_and_missing_cap_sys_ptrace)
{
	require_root();
	sysctl_set(0);
	struct explained *e = explain_as(WHO_UNPRIV, (struct explained){
		.flags = LIBUFFD_OPEN_KERNEL_FAULTS | LIBUFFD_OPEN_SYSCALL_ONLY });
	ASSERT_ERR(e->err, -EPERM);
	ASSERT_SAYS(e, "vm.unprivileged_userfaultfd is 0");
	ASSERT_SAYS(e, "user-mode-only");
	ASSERT_SAYS(e, "lacks CAP_SYS_PTRACE");
}

/* Linux with the patch series in kernel/: 2 denies the flag too. */
TEST(explain_sysctl_2_denies_user_mode_only_too)
{
	require_root();
	if (access(SYSCTL_COVERS_DEV_PATH, F_OK) != 0)
		SKIP("needs vm.unprivileged_userfaultfd=2, which the patch series in kernel/ "
		     "adds (no %s here)", SYSCTL_COVERS_DEV_PATH);
	sysctl_set(2);
	struct explained *e = explain_as(WHO_UNPRIV, (struct explained){
		.flags = LIBUFFD_OPEN_SYSCALL_ONLY });
	ASSERT_ERR(e->err, -EPERM);
	ASSERT_SAYS(e, "vm.unprivileged_userfaultfd is 2");
	ASSERT_SAYS(e, "lacks CAP_SYS_PTRACE");
}

TEST(explain_device_permissions)
{
	require_root();
	char path[PATH_MAX];
	make_private_device(path, 0, 0, 0600);
	struct explained *e = explain_as(WHO_UNPRIV, (struct explained){
		.device = path, .flags = LIBUFFD_OPEN_DEVICE_ONLY });
	ASSERT_ERR(e->err, -EACCES);
	ASSERT_SAYS(e, path);
	ASSERT_SAYS(e, "mode 0600");
	ASSERT_SAYS(e, "owner 0");
	remove_private_device(path);

	e = explain_as(WHO_UNPRIV, (struct explained){
		.device = "/nonexistent/userfaultfd", .flags = LIBUFFD_OPEN_DEVICE_ONLY });
	ASSERT_ERR(e->err, -ENOENT);
	ASSERT_SAYS(e, "does not exist");
}

TEST(explain_both_paths_refused)
{
	require_root();
	char path[PATH_MAX];
	make_private_device(path, 0, 0, 0600);
	sysctl_set(0);
	struct explained *e = explain_as(WHO_UNPRIV, (struct explained){
		.device = path, .flags = LIBUFFD_OPEN_KERNEL_FAULTS });
	ASSERT_ERR(e->err, -EACCES); /* the device exists: its refusal is the last word */
	ASSERT_SAYS(e, "vm.unprivileged_userfaultfd is 0");
	ASSERT_SAYS(e, "; and ");
	ASSERT_SAYS(e, "mode 0600");
	remove_private_device(path);
}

TEST(explain_seccomp_filter)
{
	require_root();
	sysctl_set(1); /* the kernel alone would allow everything */
	struct explained *e = explain_as(WHO_ROOT, (struct explained){
		.flags = LIBUFFD_OPEN_SYSCALL_ONLY, .seccomp_eperm = true });
	ASSERT_ERR(e->err, -EPERM);
	ASSERT_SAYS(e, "seccomp filter");
	ASSERT_SAYS(e, "would allow it");

	e = explain_as(WHO_ROOT, (struct explained){
		.flags = LIBUFFD_OPEN_SYSCALL_ONLY, .seccomp_enosys = true });
	ASSERT_ERR(e->err, -ENOSYS);
	ASSERT_SAYS(e, "blocked by a seccomp filter");
}

TEST(explain_cap_in_user_namespace_only)
{
	require_root();
	sysctl_set(0);
	/* A user namespace's root holds every capability there, none here. */
	struct explained *e = shared_explained(
		(struct explained){ .flags = LIBUFFD_OPEN_KERNEL_FAULTS | LIBUFFD_OPEN_SYSCALL_ONLY });
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		if (identity_drop(identity_unused_id(), false) < 0)
			_exit(2);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(errno == EPERM || errno == EINVAL ? 77 : 3);
		open_and_explain(e);
		_exit(0);
	}
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		SKIP("unprivileged user namespaces are disabled on this machine");
	ASSERT_EQ(status, 0);
	ASSERT_ERR(e->err, -EPERM);
	ASSERT_SAYS(e, "only inside a user namespace");
}

/* Explain as `who` chrooted into an empty directory, where neither the
 * sysctl nor this process's status (/proc) can be read. */
static void explain_without_proc(enum who who, struct explained *e)
{
	char dir[] = "/tmp/uffdguard-noproc.XXXXXX";
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		if (chroot(dir) < 0 || chdir("/") < 0)
			_exit(2);
		ASSERT_EQ(run_as(who, open_and_explain, e), 0);
		_exit(0);
	}
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_SYS(rmdir(dir));
	ASSERT_EQ(status, 0);
}

/* Since 5.11 the kernel allows UFFD_USER_MODE_ONLY to every process,
 * whatever the sysctl: an unreadable sysctl does not make it the cause. */
TEST(explain_without_proc_sys_reasons_from_the_kernels_rules)
{
	require_root();
	sysctl_set(0);
	struct explained *e = shared_explained(
		(struct explained){ .flags = LIBUFFD_OPEN_SYSCALL_ONLY, .seccomp_eperm = true });
	explain_without_proc(WHO_UNPRIV, e);
	ASSERT_ERR(e->err, -EPERM);
	ASSERT_SAYS(e, "UFFD_USER_MODE_ONLY, which Linux 5.11 and later allow to every process");
	ASSERT_SAYS(e, "a seccomp filter or a security module");
	if (strstr(e->why, "vm.unprivileged_userfaultfd is"))
		FAIL("blames the sysctl it could not read: %s", e->why);

	/* A descriptor for kernel faults is the sysctl's to allow. */
	*e = (struct explained){ .flags = LIBUFFD_OPEN_KERNEL_FAULTS | LIBUFFD_OPEN_SYSCALL_ONLY };
	explain_without_proc(WHO_UNPRIV, e);
	ASSERT_ERR(e->err, -EPERM);
	ASSERT_SAYS(e, "vm.unprivileged_userfaultfd (unreadable here): unless it is 1");
	ASSERT_SAYS(e, "lacks CAP_SYS_PTRACE");
}
