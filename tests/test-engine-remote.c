// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Serving another process's memory: the owner of a region (a forked
 * child) shares it over a Unix socket with libuffd_engine_share(), and
 * this process serves it with libuffd_engine_create_remote().  Every
 * source kind byte by byte, user-mode-only by default, kernel faults by
 * choice (root), a source that fails, the owner exiting mid-serve,
 * populate and mremap across processes, and messages that are not the
 * protocol's, without leaking a descriptor on either side.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"

/* The protocol's messages as libuffd-engine(3) describes them. */
struct hello {
	uint32_t magic;
	uint16_t version, size;
	uint32_t flags, page_size;
	uint64_t addr, len;
	uint64_t reserved[4];
};
struct answer {
	uint32_t magic;
	uint16_t version, size;
	int32_t status;
	uint32_t reserved;
};
#define MAGIC 0x64666675u

/* Exit statuses of an owner. */
#define OWNER_OK 0
#define OWNER_SHARE_FAILED 100 /* + errno of libuffd_engine_share() */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		FAIL("opendir /proc/self/fd: %s", strerror(errno));
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *de;
	if (!d)
		FAIL("opendir /proc/self/task: %s", strerror(errno));
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ---- The owner ------------------------------------------------------------ */

struct owner {
	pid_t pid;
	int sock;        /* the server's end */
	size_t n;        /* pages */
};

/* What the owner's region must read: pages [0, npat) pattern `seed`,
 * the rest zero. */
struct expect {
	size_t npat;
	uint64_t seed;
};

static uint64_t want(const struct expect *x, size_t nr, size_t w)
{
	return nr < x->npat ? pattern(nr, w, x->seed) : 0;
}

/* In the owner: 0, or the number of the step that failed. */
typedef int (*owner_fn)(char *r, size_t n, int sock, const struct expect *x);

/* Fork an owner of n fresh pages that shares them (open_flags for its
 * descriptor), then runs fn and exits with its result. */
static int sock_type = SOCK_STREAM; /* of the sockets start_owner() makes */

static struct owner start_owner(size_t n, unsigned int open_flags, owner_fn fn,
				const struct expect *x)
{
	int sv[2];
	ASSERT_SYS(socketpair(AF_UNIX, sock_type | SOCK_CLOEXEC, 0, sv));
	struct owner o = { .sock = sv[0], .n = n };
	o.pid = ASSERT_SYS(fork());
	if (o.pid == 0) {
		close(sv[0]);
		char *r = mmap(NULL, n * page_size(), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r == MAP_FAILED)
			_exit(99);
		struct libuffd_open_opts oo = { .flags = open_flags };
		int before = count_fds();
		int rc = libuffd_engine_share(sv[1], r, n * page_size(), &oo);
		if (rc < 0)
			_exit(OWNER_SHARE_FAILED + (-rc < 100 ? -rc : 99));
		if (count_fds() != before)
			_exit(98); /* share left a descriptor behind */
		_exit(fn(r, n, sv[1], x));
	}
	close(sv[1]);
	return o;
}

static int owner_status(struct owner *o)
{
	int status;
	ASSERT_SYS(waitpid(o->pid, &status, 0));
	o->pid = 0;
	return status;
}

static void assert_owner_ok(struct owner *o)
{
	int status = owner_status(o);
	if (!WIFEXITED(status))
		FAIL("the owner was killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) >= OWNER_SHARE_FAILED)
		FAIL("the owner's libuffd_engine_share(): %s",
		     strerror(WEXITSTATUS(status) - OWNER_SHARE_FAILED));
	ASSERT_EQ(WEXITSTATUS(status), OWNER_OK);
}

/* Serve the owner's region from src with `threads` handler threads
 * (skips, saying why, where the kernel lacks what the mode needs). */
static struct libuffd_engine *serve_owner(struct owner *o, const struct libuffd_engine_source *src,
					  unsigned int threads)
{
	struct libuffd_engine_opts opts = { .mode = HT, .threads = threads };
	struct libuffd_engine *e;
	int r = libuffd_engine_create_remote(o->sock, src, &opts, &e);
	if (r == -EOPNOTSUPP) {
		struct libuffd_api api;
		kill(o->pid, SIGKILL);
		owner_status(o);
		if (libuffd_kernel_api(&api) == 0 && !(api.features & LIBUFFD_FEATURE_POISON))
			SKIP("the kernel lacks UFFDIO_POISON (Linux 6.6), which another "
			     "process's region needs");
		SKIP("%s", engine_unsupported_reason(HT));
	}
	ASSERT_OK(r);
	size_t len;
	ASSERT_TRUE(libuffd_engine_region(e, &len) != NULL);
	ASSERT_EQ(len, o->n * page_size());
	return e;
}

/* Single pages here and there, writes, then every byte in order. */
static int touch_and_check(char *r, size_t n, int sock, const struct expect *x)
{
	size_t pg = page_size(), words = pg / 8;
	(void)sock;
	for (size_t i = 3; i < n; i += 37)
		if (*(volatile uint64_t *)(r + i * pg + 16) != want(x, i, 2))
			return 1;
	for (size_t i = 5; i < n; i += 53)
		((volatile uint64_t *)(r + i * pg))[1] = want(x, i, 1);
	for (size_t i = 0; i < n; i++)
		for (size_t w = 0; w < words; w++)
			if (((uint64_t *)(r + i * pg))[w] != want(x, i, w))
				return 2;
	return 0;
}

/* ---- Every source kind -------------------------------------------------------- */

static void serve_and_check(const struct libuffd_engine_source *src, size_t n,
			    const struct expect *x, unsigned int threads)
{
	int before = count_fds();
	struct owner o = start_owner(n, 0, touch_and_check, x);
	struct libuffd_engine *e = serve_owner(&o, src, threads);
	assert_owner_ok(&o);
	struct libuffd_engine_stats st = stats(e);
	ASSERT_GT(st.faults, 0);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
	ASSERT_EQ(count_fds(), before);
}

TEST_TIMEOUT(zero_source_serves_another_process, 60)
{
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct expect x = { 0, 0 };
	serve_and_check(&s, 512, &x, 1);
}

TEST_TIMEOUT(memory_source_serves_another_process, 60)
{
	size_t n = 512;
	struct expect x = { n, 21 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 21), .size = n * page_size() };
	serve_and_check(&s, n, &x, 1);
}

TEST_TIMEOUT(memory_source_serves_another_process_two_threads, 60)
{
	size_t n = 1024;
	struct expect x = { n, 22 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 22), .size = n * page_size() };
	serve_and_check(&s, n, &x, 2);
}

TEST_TIMEOUT(file_source_serves_another_process, 60)
{
	/* A file of half the region: the rest reads as zero. */
	size_t n = 512, pg = page_size();
	struct expect x = { n / 2, 23 };
	char path[] = "/tmp/uffd-remote-XXXXXX";
	int fd = ASSERT_SYS(mkstemp(path));
	unlink(path);
	void *data = make_source(n / 2, 23);
	ASSERT_EQ(pwrite(fd, data, n / 2 * pg, 0), (ssize_t)(n / 2 * pg));
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd };
	serve_and_check(&s, n, &x, 1);
	close(fd);
}

static int fill_pattern(void *ctx, uint64_t offset, void *dst, size_t len)
{
	uint64_t seed = *(uint64_t *)ctx, *q = dst;
	size_t pg = page_size(), words = pg / 8;
	for (size_t i = 0; i < len / pg; i++)
		for (size_t w = 0; w < words; w++)
			q[i * words + w] = pattern(offset / pg + i, w, seed);
	return 0;
}

TEST_TIMEOUT(callback_source_serves_another_process, 60)
{
	size_t n = 512;
	uint64_t seed = 24;
	struct expect x = { n, seed };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_pattern, .ctx = &seed };
	serve_and_check(&s, n, &x, 1);
}

TEST_TIMEOUT(sequenced_packet_socket_serves_another_process, 60)
{
	size_t n = 256;
	struct expect x = { n, 30 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 30), .size = n * page_size() };
	sock_type = SOCK_SEQPACKET;
	serve_and_check(&s, n, &x, 1);
}

/* An owner written from the protocol as the man page gives it, with a
 * blocking descriptor (the server makes it non-blocking). */
static void hand_written_owner(int sock, size_t n, const struct expect *x)
{
	size_t pg = page_size();
	char *r = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct libuffd_open_opts oo = { .flags = LIBUFFD_OPEN_BLOCKING };
	int fd = libuffd_open(&oo, NULL);
	if (r == MAP_FAILED || fd < 0)
		_exit(1);
	struct hello h = { .magic = 0x64666675u, .version = 1, .size = 64,
			   .page_size = (uint32_t)pg, .addr = (uintptr_t)r, .len = n * pg };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sizeof(h) != 64 || sendmsg(sock, &m, 0) != 64)
		_exit(2);
	close(fd);
	struct answer a;
	if (read(sock, &a, sizeof(a)) != 16 || a.magic != 0x64666675u || a.version != 1 ||
	    a.size != 16 || a.status != 0)
		_exit(3);
	_exit(touch_and_check(r, n, sock, x) ? 4 : 0);
}

TEST_TIMEOUT(protocol_as_documented_from_a_hand_written_owner, 60)
{
	size_t n = 128;
	int sv[2];
	struct expect x = { n, 31 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 31), .size = n * page_size() };
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	struct owner o = { .sock = sv[0], .n = n };
	o.pid = ASSERT_SYS(fork());
	if (o.pid == 0) {
		close(sv[0]);
		hand_written_owner(sv[1], n, &x);
	}
	close(sv[1]);
	struct libuffd_engine *e = serve_owner(&o, &s, 1);
	assert_owner_ok(&o);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
}

/* A page the source cannot give ends in SIGBUS in the owner (poisoned). */
static int touch_failing_page(char *r, size_t n, int sock, const struct expect *x)
{
	(void)n, (void)sock, (void)x;
	signal(SIGBUS, SIG_DFL); /* not a sanitizer's handler */
	return *(volatile char *)(r + 3 * page_size()) ? 1 : 2;
}

TEST_TIMEOUT(source_error_raises_sigbus_in_the_owner, 60)
{
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_fails };
	struct owner o = start_owner(16, 0, touch_failing_page, NULL);
	struct libuffd_engine *e = serve_owner(&o, &s, 1);
	assert_killed_by_sigbus(owner_status(&o));
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
}

/* ---- User-mode-only by default; kernel faults by choice --------------------- */

/* A system call that reads or writes an unresolved page fails at once
 * with EFAULT; the same pages touched in user mode are served. */
static int syscalls_fail_with_efault(char *r, size_t n, int sock, const struct expect *x)
{
	size_t pg = page_size();
	int p[2];
	(void)n;
	(void)sock;
	if (pipe(p) < 0 || write(p[1], "0123456789abcdef", 16) != 16)
		return 1;
	if (read(p[0], r + 5 * pg, 16) != -1 || errno != EFAULT)
		return 2; /* kernel-mode write into the region */
	if (write(p[1], r + 7 * pg, 64) != -1 || errno != EFAULT)
		return 3; /* kernel-mode read of the region */
	if (*(volatile uint64_t *)(r + 5 * pg) != want(x, 5, 0) ||
	    *(volatile uint64_t *)(r + 7 * pg) != want(x, 7, 0))
		return 4;
	if (read(p[0], r + 5 * pg, 16) != 16 || memcmp(r + 5 * pg, "0123456789abcdef", 16))
		return 5; /* present now */
	return 0;
}

TEST_TIMEOUT(user_mode_only_by_default, 60)
{
	size_t n = 64;
	struct expect x = { n, 25 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 25), .size = n * page_size() };
	struct owner o = start_owner(n, 0, syscalls_fail_with_efault, &x);
	struct libuffd_engine *e = serve_owner(&o, &s, 1);
	assert_owner_ok(&o);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
}

/* With kernel faults, the same system calls wait for the server. */
static int syscalls_are_served(char *r, size_t n, int sock, const struct expect *x)
{
	size_t pg = page_size(), words = pg / 8;
	int p[2];
	uint64_t got[512];
	(void)n;
	(void)sock;
	if (pg > sizeof(got) || pipe(p) < 0)
		return 1;
	/* write(2) reads page 7 in kernel mode: the pipe gets its source. */
	if (write(p[1], r + 7 * pg, pg) != (ssize_t)pg || read(p[0], got, pg) != (ssize_t)pg)
		return 2;
	for (size_t w = 0; w < words; w++)
		if (got[w] != want(x, 7, w))
			return 3;
	/* read(2) writes into page 9 in kernel mode: served first. */
	if (write(p[1], "0123456789abcdef", 16) != 16 || read(p[0], r + 9 * pg + 8, 16) != 16)
		return 4;
	if (memcmp(r + 9 * pg + 8, "0123456789abcdef", 16) ||
	    *(uint64_t *)(r + 9 * pg) != want(x, 9, 0) ||
	    *(uint64_t *)(r + 9 * pg + 24) != want(x, 9, 3))
		return 5;
	return 0;
}

TEST_TIMEOUT(kernel_faults_by_choice_serve_system_calls, 60)
{
	/* Kernel-fault descriptors need CAP_SYS_PTRACE (or a sysctl, or the
	 * device): see libuffd-engine(3). */
	require_root();
	size_t n = 64;
	struct expect x = { n, 26 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 26), .size = n * page_size() };
	struct owner o = start_owner(n, LIBUFFD_OPEN_KERNEL_FAULTS, syscalls_are_served, &x);
	struct libuffd_engine *e = serve_owner(&o, &s, 1);
	assert_owner_ok(&o);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
}

/* ---- Populate and mremap across processes -------------------------------- */

/* Waits for the server's populate, then hands the whole region to a
 * system call (user-mode-only: it would fail on a missing page). */
static int syscall_after_populate(char *r, size_t n, int sock, const struct expect *x)
{
	size_t pg = page_size();
	char c;
	int p[2];
	if (read(sock, &c, 1) != 1 || pipe(p) < 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t w[4];
		if (write(p[1], r + i * pg + 64, sizeof(w)) != sizeof(w) ||
		    read(p[0], w, sizeof(w)) != sizeof(w))
			return 2;
		for (size_t k = 0; k < 4; k++)
			if (w[k] != want(x, i, 8 + k))
				return 3;
	}
	return 0;
}

TEST_TIMEOUT(populate_from_the_server, 60)
{
	size_t n = 256;
	struct expect x = { n, 27 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 27), .size = n * page_size() };
	struct owner o = start_owner(n, 0, syscall_after_populate, &x);
	struct libuffd_engine *e = serve_owner(&o, &s, 1);
	size_t len;
	char *r = libuffd_engine_region(e, &len);
	/* Twice: the second finds every page present. */
	ASSERT_OK(libuffd_engine_populate(e, r, len));
	ASSERT_EQ(stats(e).pages, n);
	ASSERT_OK(libuffd_engine_populate(e, r, len));
	ASSERT_EQ(stats(e).pages, n);
	/* Nothing of ours to retry a system call on. */
	ASSERT_ERR(libuffd_engine_retry_efault(e, r, len, NULL, NULL), -EINVAL);
	ASSERT_EQ(write(o.sock, "p", 1), 1);
	assert_owner_ok(&o);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
}

/* Moves the whole region, says where, and checks it there. */
static int move_and_check(char *r, size_t n, int sock, const struct expect *x)
{
	size_t pg = page_size();
	char *to = mmap(NULL, 2 * n * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (to == MAP_FAILED)
		return 1;
	to += n * pg; /* not adjacent to r by luck */
	if (*(volatile uint64_t *)r != want(x, 0, 0))
		return 2;
	if (mremap(r, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to)
		return 3;
	uint64_t a = (uintptr_t)to;
	if (write(sock, &a, sizeof(a)) != sizeof(a))
		return 4;
	return touch_and_check(to, n, sock, x) ? 5 : 0;
}

TEST_TIMEOUT(whole_region_mremap_is_followed, 60)
{
	size_t n = 128;
	struct expect x = { n, 28 };
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
					   .buf = make_source(n, 28), .size = n * page_size() };
	struct owner o = start_owner(n, 0, move_and_check, &x);
	struct libuffd_engine *e = serve_owner(&o, &s, 1);
	uint64_t to;
	ASSERT_EQ(read(o.sock, &to, sizeof(to)), (ssize_t)sizeof(to));
	assert_owner_ok(&o);
	ASSERT_EQ((uintptr_t)libuffd_engine_region(e, NULL), to);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
}

/* ---- The owner exits mid-serve --------------------------------------------- */

static int hold_fd = -1;         /* the fill of page HOLD_PAGE reads a byte here */
static volatile int held;        /* set once it waits */
#define HOLD_PAGE 100

static int fill_holds(void *ctx, uint64_t offset, void *dst, size_t len)
{
	size_t pg = page_size();
	if (offset <= HOLD_PAGE * pg && HOLD_PAGE * pg < offset + len) {
		char c;
		__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
		if (read(hold_fd, &c, 1) != 1)
			return -EIO;
	}
	return fill_pattern(ctx, offset, dst, len);
}

static int touch_then_hold(char *r, size_t n, int sock, const struct expect *x)
{
	size_t pg = page_size();
	(void)n;
	(void)sock;
	for (size_t i = 0; i < 10; i++)
		if (*(volatile uint64_t *)(r + i * pg) != want(x, i, 0))
			return 1;
	/* Waits here until killed. */
	return *(volatile uint64_t *)(r + HOLD_PAGE * pg) == want(x, HOLD_PAGE, 0) ? 2 : 3;
}

TEST_TIMEOUT(owner_exit_mid_serve_stops_the_threads, 60)
{
	size_t n = 256;
	uint64_t seed = 29;
	struct expect x = { n, seed };
	int hold[2], fds = count_fds();
	ASSERT_SYS(pipe2(hold, O_CLOEXEC));
	hold_fd = hold[0];
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_holds, .ctx = &seed };
	struct owner o = start_owner(n, 0, touch_then_hold, &x);
	struct libuffd_engine *e = serve_owner(&o, &s, 2);
	int threads = count_threads() - 2; /* without the engine's */
	for (int ms = 0; !__atomic_load_n(&held, __ATOMIC_ACQUIRE); ms++) {
		ASSERT_LT(ms, 20000);
		usleep(1000);
	}
	/* The owner's address space goes while a fault of it is served. */
	ASSERT_SYS(kill(o.pid, SIGKILL));
	int status = owner_status(&o);
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ASSERT_EQ(write(hold[1], "x", 1), 1);
	/* The resolution meets ESRCH: every thread of the engine stops. */
	for (int ms = 0; count_threads() != threads; ms++) {
		ASSERT_LT(ms, 20000);
		usleep(1000);
	}
	size_t len;
	char *r = libuffd_engine_region(e, &len);
	ASSERT_ERR(libuffd_engine_populate(e, r, len), -ESRCH);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(o.sock);
	close(hold[0]);
	close(hold[1]);
	ASSERT_EQ(count_fds(), fds);
}

/* ---- Messages that are not the protocol's ------------------------------------ */

static struct hello good_hello(void *addr, size_t len)
{
	struct hello h = { .magic = MAGIC, .version = 1, .size = sizeof(h),
			   .page_size = (uint32_t)page_size(), .addr = (uintptr_t)addr, .len = len };
	return h;
}

static void send_with_fds(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)data, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	memset(&ctl, 0, sizeof(ctl));
	if (nfds) {
		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	ASSERT_EQ(sendmsg(sock, &m, 0), (ssize_t)len);
}

static int new_uffd(void)
{
	int fd = libuffd_open(NULL, NULL);
	if (fd < 0)
		SKIP("libuffd_open(): %s", strerror(-fd));
	return fd;
}

/* Send data with nfds descriptors (userfaultfds, or an eventfd with
 * other_kind) to a server: it refuses with err, answers the sender with
 * err, and keeps no descriptor. */
static void refused(const void *data, size_t len, int nfds, int other_kind, int err)
{
	int sv[2], fds[4];
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	for (int i = 0; i < nfds; i++)
		fds[i] = other_kind ? ASSERT_SYS(eventfd(0, EFD_CLOEXEC)) : new_uffd();
	send_with_fds(sv[1], data, len, fds, nfds);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	int before = count_fds();
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine *e = (void *)1;
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, NULL, &e), err);
	ASSERT_TRUE(e == NULL);
	ASSERT_EQ(count_fds(), before);
	struct answer a;
	ASSERT_EQ(recv(sv[1], &a, sizeof(a), MSG_DONTWAIT), (ssize_t)sizeof(a));
	ASSERT_EQ(a.magic, MAGIC);
	ASSERT_EQ(a.size, sizeof(a));
	ASSERT_EQ(a.status, err);
	close(sv[0]);
	close(sv[1]);
}

TEST(message_of_the_wrong_size_is_refused)
{
	char *r = map_pages(4);
	struct hello h = good_hello(r, 4 * page_size());
	refused(&h, sizeof(h) - 8, 1, 0, -EPROTO);
	char big[sizeof(h) + 8] = { 0 };
	memcpy(big, &h, sizeof(h));
	refused(big, sizeof(big), 1, 0, -EPROTO);
}

TEST(message_too_long_for_a_sequenced_packet_is_refused)
{
	int sv[2], fd = new_uffd();
	char *r = map_pages(4);
	char big[200] = { 0 };
	struct hello h = good_hello(r, 4 * page_size());
	memcpy(big, &h, sizeof(h));
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
	send_with_fds(sv[1], big, sizeof(big), &fd, 1);
	close(fd);
	int before = count_fds();
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine *e;
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, NULL, &e), -EPROTO);
	ASSERT_EQ(count_fds(), before);
	close(sv[0]);
	close(sv[1]);
}

TEST(message_of_another_version_is_refused)
{
	char *r = map_pages(4);
	struct hello h = good_hello(r, 4 * page_size());
	h.version = 2;
	refused(&h, sizeof(h), 1, 0, -EPROTO);
	h = good_hello(r, 4 * page_size());
	h.magic = 0;
	refused(&h, sizeof(h), 1, 0, -EPROTO);
	h = good_hello(r, 4 * page_size());
	h.reserved[3] = 1;
	refused(&h, sizeof(h), 1, 0, -EPROTO);
	h = good_hello(r, 4 * page_size());
	h.page_size = (uint32_t)page_size() * 2;
	refused(&h, sizeof(h), 1, 0, -EPROTO);
	h = good_hello(r + 1, 4 * page_size());
	refused(&h, sizeof(h), 1, 0, -EPROTO);
}

TEST(message_without_a_descriptor_is_refused)
{
	char *r = map_pages(4);
	struct hello h = good_hello(r, 4 * page_size());
	refused(&h, sizeof(h), 0, 0, -EBADMSG);
}

TEST(message_with_two_descriptors_is_refused)
{
	char *r = map_pages(4);
	struct hello h = good_hello(r, 4 * page_size());
	refused(&h, sizeof(h), 2, 0, -EBADMSG);
}

TEST(descriptor_that_is_not_a_userfaultfd_is_refused)
{
	char *r = map_pages(4);
	struct hello h = good_hello(r, 4 * page_size());
	refused(&h, sizeof(h), 1, 1, -EBADMSG);
}

TEST(server_arguments_are_checked_before_reading)
{
	int sv[2];
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv));
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_open_opts oo = { 0 };
	struct libuffd_engine_opts in_thread = { .mode = IT }, opened = { .open_opts = &oo };
	struct libuffd_engine *e;
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, &in_thread, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, &opened, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create_remote(-1, &s, NULL, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], NULL, NULL, &e), -EINVAL);
	struct libuffd_engine_source shmem = { .kind = LIBUFFD_ENGINE_SOURCE_SHMEM, .fd = sv[0] };
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &shmem, NULL, &e), -EINVAL);
	/* Nothing sent yet on a non-blocking socket; then a hang-up. */
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, NULL, &e), -EAGAIN);
	close(sv[1]);
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, NULL, &e), -ECONNRESET);
	close(sv[0]);
	char *r = map_pages(4);
	ASSERT_ERR(libuffd_engine_share(-1, r, page_size(), NULL), -EINVAL);
	ASSERT_ERR(libuffd_engine_share(0, r + 1, page_size(), NULL), -EINVAL);
	ASSERT_ERR(libuffd_engine_share(0, r, 0, NULL), -EINVAL);
}

/* A server that reads the hello and answers with `reply` (len bytes, and
 * an eventfd with it if with_fd); len 0: hangs up. */
static pid_t fake_server(int sock, const void *reply, size_t len, int with_fd)
{
	pid_t pid = ASSERT_SYS(fork());
	if (pid)
		return pid;
	char buf[256], ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) <= 0)
		_exit(1);
	if (len) {
		int fd = eventfd(0, EFD_CLOEXEC);
		struct iovec out = { (void *)reply, len };
		struct msghdr a = { .msg_iov = &out, .msg_iovlen = 1 };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} c;
		memset(&c, 0, sizeof(c));
		if (with_fd) {
			a.msg_control = c.buf;
			a.msg_controllen = sizeof(c.buf);
			struct cmsghdr *h = CMSG_FIRSTHDR(&a);
			h->cmsg_level = SOL_SOCKET;
			h->cmsg_type = SCM_RIGHTS;
			h->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(h), &fd, sizeof(int));
		}
		if (sendmsg(sock, &a, 0) != (ssize_t)len)
			_exit(2);
	}
	_exit(0);
}

/* The owner's share against that server: err, and no descriptor kept. */
static void owner_sees(const void *reply, size_t len, int with_fd, int err)
{
	int sv[2], status;
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid_t pid = fake_server(sv[1], reply, len, with_fd);
	close(sv[1]);
	char *r = map_pages(4);
	int before = count_fds();
	ASSERT_ERR(libuffd_engine_share(sv[0], r, 4 * page_size(), NULL), err);
	ASSERT_EQ(count_fds(), before);
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(sv[0]);
}

TEST(owner_refuses_answers_that_are_not_the_protocols)
{
	struct answer ok = { .magic = MAGIC, .version = 1, .size = sizeof(ok) }, a;
	owner_sees(&ok, sizeof(ok), 0, 0);
	owner_sees(&ok, sizeof(ok), 1, -EPROTO); /* with a descriptor */
	owner_sees(&ok, 3, 0, -EPROTO);
	owner_sees(&ok, 0, 0, -ECONNRESET);
	a = ok;
	a.version = 7;
	owner_sees(&a, sizeof(a), 0, -EPROTO);
	a = ok;
	a.status = 5;
	owner_sees(&a, sizeof(a), 0, -EPROTO);
	a = ok;
	a.status = -ENOMEM;
	owner_sees(&a, sizeof(a), 0, -ENOMEM);
}

/* The server cannot register a region that is not mapped: both sides
 * get the kernel's error. */
TEST(region_the_kernel_refuses_fails_on_both_sides)
{
	int sv[2], status;
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	char *r = map_pages(4);
	ASSERT_SYS(munmap(r, 4 * page_size()));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		close(sv[0]);
		int rc = libuffd_engine_share(sv[1], r, 4 * page_size(), NULL);
		_exit(rc == -EINVAL ? 0 : 1);
	}
	close(sv[1]);
	int before = count_fds();
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine *e;
	ASSERT_ERR(libuffd_engine_create_remote(sv[0], &s, NULL, &e), -EINVAL);
	ASSERT_EQ(count_fds(), before);
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(sv[0]);
}
