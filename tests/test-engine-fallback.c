// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine on kernels that lack a feature or an ioctl it uses.  This
 * program links libuffd's objects, not the shared library, to hide parts
 * of the kernel's answer (uffd_sys_hidden, lib/sys.h): UFFDIO_API and
 * UFFDIO_REGISTER then answer as such a kernel would, and a hidden ioctl
 * fails with EINVAL as it does there (UFFDIO_POISON on Linux 6.1, say).
 * For each part hidden, in each mode, the engine either refuses at
 * creation with -EOPNOTSUPP and leaves nothing behind, or serves a
 * region through prefetch, events and a move correctly, and a failing
 * source still ends in SIGBUS: caught by a handler, or killing the
 * process when SIGBUS has its default action, is ignored or is blocked.
 * Another process's region needs UFFDIO_POISON: refused on both sides
 * without it.
 * A loop anywhere ends in the harness's timeout, naming the case.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "engine-util.h"
#include "harness.h"
#include "sys.h"
#include "util.h"

/* SERVES_WITH_POISON: a case that hides something else, and so means what
 * it says only where the kernel has UFFDIO_POISON (Linux 6.6). */
enum outcome { SERVES, REFUSES, SERVES_WITH_POISON };

struct hidden {
	uint64_t features, ioctls;
	unsigned int open_flags; /* LIBUFFD_OPEN_* for the engine's descriptor */
};

static void hide(const struct hidden *h)
{
	uffd_sys_hidden.features = h->features;
	uffd_sys_hidden.ioctls = h->ioctls;
}

static struct libuffd_engine *create(void *r, size_t len, const struct libuffd_engine_source *s,
				     enum libuffd_engine_mode mode, const struct hidden *h, int *err)
{
	struct libuffd_open_opts oo = { .flags = h->open_flags };
	struct libuffd_engine_opts o = { .mode = mode, .threads = 2, .open_opts = &oo };
	struct libuffd_engine *e = NULL;

	*err = libuffd_engine_create(r, len, s, &o, &e);
	return e;
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	ASSERT_TRUE(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Refused at creation: -EOPNOTSUPP, no descriptor kept, and the region
 * is plain memory again (a page still registered would wait for ever). */
static void refuses(enum libuffd_engine_mode mode, const struct hidden *h)
{
	size_t pg = page_size();
	char *r = map_pages(8);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	int fds = open_fds(), err;

	hide(h);
	ASSERT_TRUE(create(r, 8 * pg, &s, mode, h, &err) == NULL);
	ASSERT_ERR(err, -EOPNOTSUPP);
	ASSERT_EQ(open_fds(), fds);
	r[3 * pg] = 1;
	ASSERT_EQ(r[3 * pg], 1);
	ASSERT_TRUE(page_is_zero(r + 4 * pg));
}

/* Served correctly: sequential reads (prefetch, read-ahead), removed pages
 * read zero (remove events), the region followed when moved (remap), a
 * part unmapped (unmap), populate. */
static void serves(enum libuffd_engine_mode mode, const struct hidden *h)
{
	size_t n = 256, pg = page_size();
	void *src = make_source(n, 21);
	char *r = map_pages(n), *hole = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = n * pg };
	int err;

	hide(h);
	struct libuffd_engine *e = create(r, n * pg, &s, mode, h, &err);
	ASSERT_OK(err);
	ASSERT_EQ(first_bad_page(r, 0, 128, 21), -1);
	ASSERT_SYS(madvise(r + 16 * pg, 16 * pg, MADV_DONTNEED));
	ASSERT_TRUE(page_is_zero(r + 20 * pg));
	char *m = mremap(r, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_TRUE(m == hole);
	ASSERT_TRUE(libuffd_engine_region(e, NULL) == m);
	ASSERT_EQ(first_bad_page(m + 140 * pg, 140, 20, 21), -1);
	ASSERT_SYS(munmap(m + 192 * pg, 64 * pg));
	ASSERT_OK(libuffd_engine_populate(e, m + 160 * pg, 16 * pg));
	ASSERT_EQ(first_bad_page(m + 160 * pg, 160, 32, 21), -1);
	ASSERT_TRUE(page_is_zero(m + 17 * pg));
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Where si_addr points and what si_code says for a failed fault, from
 * the answer the engine saw: this kernel's, less what is hidden (on Linux
 * 6.1 nothing needs hiding to take the path without poison). */
static void expect_sigbus(enum libuffd_engine_mode mode, char *at, int err)
{
	struct libuffd_api api;
	ASSERT_OK(libuffd_kernel_api(&api));
	int signalled = mode == LIBUFFD_ENGINE_HANDLER_THREADS &&
			!(api.features & LIBUFFD_FEATURE_POISON);
	int exact = !signalled || (api.features & LIBUFFD_FEATURE_EXACT_ADDRESS);

	ASSERT_TRUE(bus_addr == (exact ? at : (char *)((uintptr_t)at & ~(page_size() - 1))));
	if (signalled) {
		/* Sent to the faulting thread, with the source's error
		 * (ENOENT means to the engine that the page is gone: EIO). */
		ASSERT_EQ(bus_code, SI_QUEUE);
		ASSERT_EQ(bus_errno, err == -ENOENT ? EIO : -err);
	} else {
		/* From the kernel: a poisoned page (BUS_MCEERR_AR, or
		 * BUS_ADRERR without CONFIG_MEMORY_FAILURE), or the fault
		 * itself with UFFD_FEATURE_SIGBUS (BUS_ADRERR). */
		ASSERT_TRUE(bus_code == BUS_ADRERR || bus_code == BUS_MCEERR_AR);
	}
}

/* A failing source, caught by a handler: each error, the kernel's own
 * meanings (EAGAIN, EEXIST, ENOENT) too. */
static void source_error_caught(enum libuffd_engine_mode mode, const struct hidden *h)
{
	static const int errors[] = { -EIO, -EAGAIN, -EEXIST, -ENOENT };
	size_t pg = page_size();

	hide(h);
	install_test_sigbus();
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		char *r = map_pages(64);
		struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
						   .fill = fill_error, .ctx = (void *)&errors[i] };
		int err;
		struct libuffd_engine *e = create(r, 64 * pg, &s, mode, h, &err);
		ASSERT_OK(err);
		/* Twice: a handler that returned would see it again. */
		for (int k = 0; k < 2; k++) {
			ASSERT_TRUE(read_raises_sigbus(r + 9 * pg + 77));
			expect_sigbus(mode, r + 9 * pg + 77, errors[i]);
		}
		ASSERT_OK(libuffd_engine_destroy(e));
	}
}

enum disposition { DEFAULT, IGNORED, BLOCKED };

/* In a child, with SIGBUS as given: the failing access kills it. */
static void source_error_kills(enum libuffd_engine_mode mode, const struct hidden *h,
			       enum disposition d)
{
	int status;
	pid_t pid = ASSERT_SYS(fork());

	if (pid == 0) {
		size_t pg = page_size();
		char *r = map_pages(4);
		struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
						   .fill = fill_fails };
		struct sigaction sa = { .sa_handler = d == IGNORED ? SIG_IGN : SIG_DFL };
		sigset_t bus;
		int err;
		sigemptyset(&bus);
		sigaddset(&bus, SIGBUS);
		hide(h);
		if (sigaction(SIGBUS, &sa, NULL) < 0 || !create(r, 4 * pg, &s, mode, h, &err))
			_exit(2);
		if (d == BLOCKED && sigprocmask(SIG_BLOCK, &bus, NULL) < 0)
			_exit(2);
		alarm(20); /* a loop ends here, and fails the case */
		_exit(*(volatile char *)(r + pg));
	}
	ASSERT_SYS(waitpid(pid, &status, 0));
	assert_killed_by_sigbus(status);
}

static void hiding(enum libuffd_engine_mode mode, const struct hidden *h, enum outcome want)
{
	if ((h->open_flags & LIBUFFD_OPEN_KERNEL_FAULTS))
		require_root(); /* kernel-fault descriptors: CAP_SYS_PTRACE */
	if (want == SERVES_WITH_POISON) {
		/* Asked with h hidden: libuffd keeps the first answer. */
		struct libuffd_api api;
		hide(h);
		ASSERT_OK(libuffd_kernel_api(&api));
		if (!(api.features & LIBUFFD_FEATURE_POISON))
			SKIP("needs UFFDIO_POISON (Linux 6.6); without it this is the "
			     "without_poison_or_thread_id case");
		want = SERVES;
	}
	if (want == REFUSES) {
		refuses(mode, h);
		return;
	}
	serves(mode, h);
	source_error_caught(mode, h);
	source_error_kills(mode, h, DEFAULT);
	source_error_kills(mode, h, IGNORED);
	source_error_kills(mode, h, BLOCKED);
}

#define HT LIBUFFD_ENGINE_HANDLER_THREADS
#define IT LIBUFFD_ENGINE_IN_THREAD

/* One case per mode: what is hidden, and what each mode must do. */
#define HIDING(name, features, ioctls, flags, ht, it)                    \
	static const struct hidden name = { features, ioctls, flags };    \
	TEST_TIMEOUT(name##_handler_threads, 60)                          \
	{                                                                 \
		hiding(HT, &name, ht);                                    \
	}                                                                 \
	TEST_TIMEOUT(name##_in_thread, 60)                                \
	{                                                                 \
		hiding(IT, &name, it);                                    \
	}

/* Hidden with LIBUFFD_IOCTL_POISON: kernels offer both or neither (6.6). */
#define POISON_GONE LIBUFFD_FEATURE_POISON

HIDING(nothing_hidden, 0, 0, 0, SERVES, SERVES)
/* What Linux 6.1 (Debian 12) lacks of the newer answer: its UFFD_API_FEATURES
 * and UFFD_API_RANGE_IOCTLS have no poison, move, WP_UNPOPULATED, WP_ASYNC. */
HIDING(as_on_linux_6_1,
       LIBUFFD_FEATURE_POISON | LIBUFFD_FEATURE_MOVE | LIBUFFD_FEATURE_WP_UNPOPULATED |
	       LIBUFFD_FEATURE_WP_ASYNC,
       LIBUFFD_IOCTL_POISON | LIBUFFD_IOCTL_MOVE, 0, SERVES, SERVES)
/* Linux 6.1 to 6.5: handler threads signal the faulting thread. */
HIDING(without_poison, POISON_GONE, LIBUFFD_IOCTL_POISON, 0, SERVES, SERVES)
HIDING(without_poison_or_exact_address, POISON_GONE | LIBUFFD_FEATURE_EXACT_ADDRESS,
       LIBUFFD_IOCTL_POISON, 0, SERVES, SERVES)
/* Without poison, a fault is failed by naming its thread... */
HIDING(without_poison_or_thread_id, POISON_GONE | LIBUFFD_FEATURE_THREAD_ID,
       LIBUFFD_IOCTL_POISON, 0, REFUSES, SERVES)
/* ... and only in user mode: the kernel would retry a kernel-mode one. */
HIDING(without_poison_for_kernel_faults, POISON_GONE, LIBUFFD_IOCTL_POISON,
       LIBUFFD_OPEN_KERNEL_FAULTS, REFUSES, SERVES)
HIDING(without_thread_id, LIBUFFD_FEATURE_THREAD_ID, 0, 0, SERVES_WITH_POISON, SERVES)
HIDING(without_exact_address, LIBUFFD_FEATURE_EXACT_ADDRESS, 0, 0, SERVES, SERVES)
HIDING(without_sigbus_feature, LIBUFFD_FEATURE_SIGBUS, 0, 0, SERVES, REFUSES)
/* The events keep removed pages zero and follow the region. */
HIDING(without_event_remove, LIBUFFD_FEATURE_EVENT_REMOVE, 0, 0, REFUSES, REFUSES)
HIDING(without_event_unmap, LIBUFFD_FEATURE_EVENT_UNMAP, 0, 0, REFUSES, REFUSES)
HIDING(without_event_remap, LIBUFFD_FEATURE_EVENT_REMAP, 0, 0, REFUSES, REFUSES)
HIDING(without_register, 0, LIBUFFD_IOCTL_REGISTER, 0, REFUSES, REFUSES)
HIDING(without_unregister, 0, LIBUFFD_IOCTL_UNREGISTER, 0, REFUSES, REFUSES)
HIDING(without_copy, 0, LIBUFFD_IOCTL_COPY, 0, REFUSES, REFUSES)
HIDING(without_zeropage, 0, LIBUFFD_IOCTL_ZEROPAGE, 0, REFUSES, REFUSES)
HIDING(without_wake, 0, LIBUFFD_IOCTL_WAKE, 0, REFUSES, REFUSES)
/* Not used by the engine. */
HIDING(without_move_continue_writeprotect,
       LIBUFFD_FEATURE_MOVE | LIBUFFD_FEATURE_MINOR_SHMEM | LIBUFFD_FEATURE_MINOR_HUGETLBFS,
       LIBUFFD_IOCTL_MOVE | LIBUFFD_IOCTL_CONTINUE | LIBUFFD_IOCTL_WRITEPROTECT, 0, SERVES, SERVES)

/* ---- The SHMEM source: minor faults and UFFDIO_CONTINUE ----------------- */

/* A memfd of n pages of pattern 23, mapped shared. */
static char *shmem_region(size_t n, int *fd)
{
	size_t pg = page_size();
	void *src = make_source(n, 23);

	*fd = ASSERT_SYS(memfd_create("test-engine-fallback", MFD_CLOEXEC));
	ASSERT_EQ(write(*fd, src, n * pg), (ssize_t)(n * pg));
	munmap(src, n * pg);
	char *r = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	ASSERT_TRUE(r != MAP_FAILED);
	return r;
}

/* Refused, or served: every byte, a removed page, a move. */
static void shmem_hiding(enum libuffd_engine_mode mode, const struct hidden *h,
			 enum outcome want)
{
	size_t n = 128, pg = page_size();
	int fd, err, fds;
	char *r = shmem_region(n, &fd), *hole = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_SHMEM, .fd = fd };

	fds = open_fds();
	hide(h);
	struct libuffd_engine *e = create(r, n * pg, &s, mode, h, &err);
	if (want == REFUSES) {
		ASSERT_TRUE(e == NULL);
		ASSERT_ERR(err, -EOPNOTSUPP);
		ASSERT_EQ(open_fds(), fds);
		/* Plain memory again: the file's pages. */
		ASSERT_EQ(first_bad_page(r, 0, n, 23), -1);
		return;
	}
	ASSERT_OK(err);
	ASSERT_EQ(first_bad_page(r, 0, 64, 23), -1);
	ASSERT_SYS(madvise(r + 16 * pg, 16 * pg, MADV_DONTNEED));
	ASSERT_EQ(first_bad_page(r + 20 * pg, 20, 1, 23), -1);
	char *m = mremap(r, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_TRUE(m == hole);
	ASSERT_EQ(first_bad_page(m, 0, n, 23), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

#define SHMEM_HIDING(name, features, ioctls, ht, it)                     \
	static const struct hidden name = { features, ioctls, 0 };        \
	TEST_TIMEOUT(name##_handler_threads, 60)                          \
	{                                                                 \
		shmem_hiding(HT, &name, ht);                              \
	}                                                                 \
	TEST_TIMEOUT(name##_in_thread, 60)                                \
	{                                                                 \
		shmem_hiding(IT, &name, it);                              \
	}

SHMEM_HIDING(shmem_nothing_hidden, 0, 0, SERVES, SERVES)
/* Minor faults on shmem and UFFDIO_CONTINUE: Linux 5.14. */
SHMEM_HIDING(shmem_without_minor_shmem, LIBUFFD_FEATURE_MINOR_SHMEM, 0, REFUSES, REFUSES)
SHMEM_HIDING(shmem_without_continue, 0, LIBUFFD_IOCTL_CONTINUE, REFUSES, REFUSES)
SHMEM_HIDING(shmem_without_wake, 0, LIBUFFD_IOCTL_WAKE, REFUSES, REFUSES)
SHMEM_HIDING(shmem_without_event_remap, LIBUFFD_FEATURE_EVENT_REMAP, 0, REFUSES, REFUSES)
SHMEM_HIDING(shmem_without_sigbus_feature, LIBUFFD_FEATURE_SIGBUS, 0, SERVES, REFUSES)
/* Not used by this source. */
SHMEM_HIDING(shmem_without_copy_or_zeropage, 0, LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_ZEROPAGE,
	     SERVES, SERVES)
SHMEM_HIDING(shmem_as_on_linux_6_1,
	     LIBUFFD_FEATURE_POISON | LIBUFFD_FEATURE_MOVE | LIBUFFD_FEATURE_WP_UNPOPULATED |
		     LIBUFFD_FEATURE_WP_ASYNC,
	     LIBUFFD_IOCTL_POISON | LIBUFFD_IOCTL_MOVE, SERVES, SERVES)

/* A SIGBUS that handler threads send for a fault, arriving at the
 * in-thread mode's handler, is a fault too: with SIGBUS ignored before
 * the in-thread engine, it kills (taken for a sent signal, it would be
 * ignored, and the access retried for ever). */
TEST_TIMEOUT(handler_threads_sigbus_through_the_in_thread_handler_kills, 60)
{
	static const struct hidden h = { POISON_GONE, LIBUFFD_IOCTL_POISON, 0 };
	int status;
	pid_t pid = ASSERT_SYS(fork());

	if (pid == 0) {
		size_t pg = page_size();
		char *zr = map_pages(4), *r = map_pages(4);
		struct libuffd_engine_source zero = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
		struct libuffd_engine_source bad = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
						     .fill = fill_fails };
		struct sigaction sa = { .sa_handler = SIG_IGN };
		int err;
		hide(&h);
		if (sigaction(SIGBUS, &sa, NULL) < 0 || !create(zr, 4 * pg, &zero, IT, &h, &err) ||
		    !create(r, 4 * pg, &bad, HT, &h, &err))
			_exit(2);
		alarm(20);
		_exit(*(volatile char *)zr + *(volatile char *)(r + pg));
	}
	ASSERT_SYS(waitpid(pid, &status, 0));
	assert_killed_by_sigbus(status);
}

/* ---- Several threads on one failing page --------------------------------- */

static int held, release_hold; /* __atomic: shared with the handler thread */

/* Fails; the first call waits until released, holding the handler. */
static int fill_fails_slowly(void *ctx, uint64_t offset, void *dst, size_t len)
{
	if (!__atomic_exchange_n(&held, 1, __ATOMIC_ACQ_REL))
		while (!__atomic_load_n(&release_hold, __ATOMIC_ACQUIRE))
			usleep(1000);
	return -EIO;
}

static __thread sigjmp_buf thread_jump;

static void on_thread_sigbus(int sig)
{
	siglongjmp(thread_jump, 1);
}

/* Returns 1 when reading the page raised SIGBUS. */
static void *read_page(void *p)
{
	if (sigsetjmp(thread_jump, 1))
		return (void *)1;
	(void)*(volatile char *)p;
	return NULL;
}

/* Duplicate faults are folded into one resolution: when it fails, each
 * faulting thread must still get SIGBUS (none is left waiting). */
static void every_thread_gets_sigbus(const struct hidden *h)
{
	size_t pg = page_size();
	char *r = map_pages(16);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_fails_slowly };
	struct libuffd_engine_opts o = { .mode = HT, .threads = 1 };
	struct libuffd_engine *e;
	struct sigaction sa = { .sa_handler = on_thread_sigbus };
	pthread_t first, dup[3];
	void *v;

	hide(h);
	ASSERT_SYS(sigaction(SIGBUS, &sa, NULL));
	ASSERT_OK(libuffd_engine_create(r, 16 * pg, &s, &o, &e));
	ASSERT_EQ(pthread_create(&first, NULL, read_page, r), 0);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		usleep(1000);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(pthread_create(&dup[i], NULL, read_page, r + 9 * pg), 0);
	/* The first fault, read, and three waiting for the handler. */
	wait_for_faults(4);
	__atomic_store_n(&release_hold, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(pthread_join(first, &v), 0);
	ASSERT_TRUE(v == (void *)1);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(pthread_join(dup[i], &v), 0);
		ASSERT_TRUE(v == (void *)1);
	}
	ASSERT_OK(libuffd_engine_destroy(e));
}

TEST_TIMEOUT(every_thread_on_a_failed_page_gets_sigbus, 60)
{
	static const struct hidden h = { 0 };
	every_thread_gets_sigbus(&h);
}

TEST_TIMEOUT(every_thread_on_a_failed_page_gets_sigbus_without_poison, 60)
{
	static const struct hidden h = { POISON_GONE, LIBUFFD_IOCTL_POISON, 0 };
	every_thread_gets_sigbus(&h);
}

/* Without UFFDIO_POISON a fault that cannot be served would need a signal
 * to the faulting thread, which the server cannot name in another
 * process: both sides get -EOPNOTSUPP, the server keeps no descriptor,
 * and the owner's region is plain memory again. */
TEST_TIMEOUT(another_process_region_without_poison_is_refused, 60)
{
	static const struct hidden h = { POISON_GONE, LIBUFFD_IOCTL_POISON, 0 };
	size_t pg = page_size();
	int sv[2], status;

	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		char *r = mmap(NULL, 8 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (r == MAP_FAILED)
			_exit(1);
		if (libuffd_engine_share(sv[1], r, 8 * pg, NULL) != -EOPNOTSUPP)
			_exit(2);
		r[3 * pg] = 1; /* a page still registered would wait for ever */
		_exit(r[3 * pg] == 1 && r[4 * pg] == 0 ? 0 : 3);
	}
	close(sv[1]);
	hide(&h);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine *e;
	int fds = open_fds();
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, NULL, &e), -EOPNOTSUPP);
	ASSERT_EQ(open_fds(), fds);
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	close(sv[0]);
}
