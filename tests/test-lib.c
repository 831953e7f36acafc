// SPDX-License-Identifier: GPL-2.0-or-later
/* libuffd's API on the real kernel: open defaults, the handshake, names,
 * ranges and resolvers with their partial-progress errors, events. */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "harness.h"
#include "libuffd.h"
#include "util.h"

/* The flags the kernel gave the descriptor, read back from /proc. */
static int fd_flags(int fd)
{
	return ASSERT_SYS(fcntl(fd, F_GETFL)) & (O_NONBLOCK);
}

static int fd_cloexec(int fd)
{
	return ASSERT_SYS(fcntl(fd, F_GETFD)) & FD_CLOEXEC;
}

/* Whether the descriptor is user-mode-only: /proc/self/fdinfo does not
 * say, so ask the kernel: a kernel-mode access must fail at once. */
static bool refuses_kernel_faults(int fd)
{
	struct libuffd_api api;
	ASSERT_OK(libuffd_api_handshake(fd, 0, 0, &api));
	char *p = map_pages(1);
	ASSERT_OK(libuffd_register(fd, p, page_size(), LIBUFFD_REGISTER_MISSING, NULL));
	int pfd[2];
	ASSERT_SYS(pipe(pfd));
	/* write() reads the page with copy_from_user: a kernel-mode fault.
	 * Nobody serves it: a kernel-fault-capable fd would hang here and
	 * the harness would time out. */
	ssize_t n = write(pfd[1], p, 1);
	int err = errno;
	close(pfd[0]);
	close(pfd[1]);
	munmap(p, page_size());
	return n < 0 && err == EFAULT;
}

TEST(open_defaults_are_user_mode_only_cloexec_nonblock)
{
	struct libuffd_open_report rep;
	int fd = libuffd_open(NULL, &rep);
	ASSERT_OK(fd);
	ASSERT_EQ(rep.path, LIBUFFD_PATH_SYSCALL);
	ASSERT_EQ(rep.kernel_flags, O_CLOEXEC | O_NONBLOCK | 1);
	ASSERT_EQ(fd_flags(fd), O_NONBLOCK);
	ASSERT_TRUE(fd_cloexec(fd));
	ASSERT_TRUE(refuses_kernel_faults(fd));
	close(fd);
}

TEST(open_flags_opt_out)
{
	struct libuffd_open_opts o = { .flags = LIBUFFD_OPEN_BLOCKING | LIBUFFD_OPEN_INHERIT };
	struct libuffd_open_report rep;
	int fd = libuffd_open(&o, &rep);
	ASSERT_OK(fd);
	ASSERT_EQ(rep.kernel_flags, 1);
	ASSERT_EQ(fd_flags(fd), 0);
	ASSERT_TRUE(!fd_cloexec(fd));
	close(fd);
}

TEST(open_rejects_bad_options)
{
	struct libuffd_open_opts o = { .flags = 1u << 20 };
	ASSERT_ERR(libuffd_open(&o, NULL), -EINVAL);
	o.flags = LIBUFFD_OPEN_SYSCALL_ONLY | LIBUFFD_OPEN_DEVICE_ONLY;
	ASSERT_ERR(libuffd_open(&o, NULL), -EINVAL);
	/* Reserved fields must be zero, so that they can mean something later. */
	o = (struct libuffd_open_opts){ .reserved = { 0, 0, 0, 7 } };
	ASSERT_ERR(libuffd_open(&o, NULL), -EINVAL);
}

TEST(open_never_touches_errno)
{
	struct libuffd_open_opts o = { .flags = LIBUFFD_OPEN_DEVICE_ONLY,
				       .device_path = "/nonexistent/userfaultfd" };
	errno = 4242;
	ASSERT_ERR(libuffd_open(&o, NULL), -ENOENT);
	ASSERT_EQ(errno, 4242);
	int fd = libuffd_open(NULL, NULL);
	ASSERT_OK(fd);
	ASSERT_EQ(libuffd_read_events(fd, &(struct libuffd_event){ 0 }, 1), -EINVAL); /* no API yet */
	ASSERT_EQ(errno, 4242);
	close(fd);
}

/* A report is the caller's memory: a device path without a NUL is read
 * no further than its field. */
TEST(explain_reads_an_unterminated_device_path_within_its_field)
{
	struct libuffd_open_report *rep = malloc(sizeof(*rep));
	char buf[512];
	ASSERT_TRUE(rep != NULL);
	memset(rep, 'B', sizeof(*rep)); /* no NUL anywhere after the path */
	rep->open_flags = LIBUFFD_OPEN_DEVICE_ONLY;
	rep->kernel_flags = 0;
	rep->path = LIBUFFD_PATH_NONE;
	rep->syscall_error = 0;
	rep->device_error = -ENOENT;
	memset(rep->device_path, 'A', sizeof(rep->device_path));
	int n = libuffd_explain_open(-ENOENT, rep, buf, sizeof(buf));
	ASSERT_GT(n, (int)sizeof(rep->device_path));
	ASSERT_LT(n, (int)sizeof(buf));
	ASSERT_TRUE(strchr(buf, 'B') == NULL);
	const char *a = strchr(buf, 'A');
	ASSERT_TRUE(a != NULL);
	ASSERT_EQ(strspn(a, "A"), sizeof(rep->device_path));
	free(rep);
}

TEST(kernel_api_reports_features_and_ioctls)
{
	struct libuffd_api api;
	ASSERT_OK(libuffd_kernel_api(&api));
	ASSERT_TRUE(api.features & LIBUFFD_FEATURE_SIGBUS);
	ASSERT_TRUE(api.ioctls & LIBUFFD_IOCTL_REGISTER);
	ASSERT_TRUE(api.ioctls & LIBUFFD_IOCTL_API);
	char buf[512];
	int n = libuffd_format_features(LIBUFFD_FEATURE_SIGBUS | LIBUFFD_FEATURE_THREAD_ID |
						(1ull << 40), ",", buf, sizeof(buf));
	ASSERT_EQ(n, (int)strlen("sigbus,thread_id,0x10000000000"));
	ASSERT_TRUE(!strcmp(buf, "sigbus,thread_id,0x10000000000"));
	/* snprintf semantics: the needed length even when cut. */
	ASSERT_EQ(libuffd_format_features(LIBUFFD_FEATURE_SIGBUS, ",", buf, 3), 6);
	ASSERT_TRUE(!strcmp(buf, "si"));
	libuffd_format_ioctls(LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_WAKE, " ", buf, sizeof(buf));
	ASSERT_TRUE(!strcmp(buf, "wake copy"));
	ASSERT_TRUE(libuffd_feature_name(63) == NULL);
	ASSERT_TRUE(!strcmp(libuffd_feature_name(16), "move"));
}

/* The lowest feature bit this kernel does not offer, asked of the kernel;
 * skips the case when it offers all 64. */
static uint64_t unoffered_feature(void)
{
	struct libuffd_api offer;
	ASSERT_OK(libuffd_kernel_api(&offer));
	for (unsigned int bit = 0; bit < 64; bit++)
		if (!(offer.features >> bit & 1))
			return 1ull << bit;
	SKIP("this kernel offers all 64 feature bits: none is missing to ask for");
}

/* Watches the UFFDIO_API calls of the calling thread: a seccomp filter
 * sends them to a listener, and a thread records the features asked for
 * and lets the kernel run each call (SECCOMP_USER_NOTIF_FLAG_CONTINUE,
 * Linux 5.5).  The kernel's own answer is not touched. */
struct api_watch {
	int listener, stop[2], mem;
	pthread_t thread;
	int calls;
	uint64_t asked; /* every feature any call asked for */
};

static void *api_watch_main(void *arg)
{
	struct api_watch *w = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = w->listener, .events = POLLIN },
				       { .fd = w->stop[0], .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		struct seccomp_notif req;
		memset(&req, 0, sizeof(req));
		if (ioctl(w->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			continue;
		/* Read the caller's argument as a syscall does, so that
		 * ThreadSanitizer sees no unsynchronised access: through
		 * /proc/self/mem, which every kernel has (process_vm_readv(2)
		 * needs CONFIG_CROSS_MEMORY_ATTACH). */
		struct uffdio_api a = { 0 };
		__atomic_add_fetch(&w->calls, 1, __ATOMIC_RELAXED);
		if (pread(w->mem, &a, sizeof(a), (off_t)req.data.args[2]) == sizeof(a))
			w->asked |= a.features;
		else
			w->asked = ~0ull; /* unknown: fails the test that reads it */
		struct seccomp_notif_resp resp = { .id = req.id,
						   .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
		ioctl(w->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

static void api_watch_start(struct api_watch *w)
{
	/* The low 32 bits of ioctl's second argument. */
	const unsigned int cmd_off = offsetof(struct seccomp_data, args[1]) +
				     (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
	struct sock_filter insn[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, cmd_off),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)UFFDIO_API, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insn) / sizeof(insn[0]), .filter = insn };

	memset(w, 0, sizeof(*w));
	w->mem = ASSERT_SYS(open("/proc/self/mem", O_RDONLY | O_CLOEXEC));
	ASSERT_SYS(pipe2(w->stop, O_CLOEXEC));
	ASSERT_SYS(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	/* This thread, and the watcher it starts next, which inherits the
	 * filter: its own calls are never UFFDIO_API, so they pass. */
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	if (fd < 0)
		SKIP("needs seccomp user notification (Linux 5.0): %s", strerror(errno));
	w->listener = (int)fd;
	ASSERT_EQ(pthread_create(&w->thread, NULL, api_watch_main, w), 0);
}

static void api_watch_stop(struct api_watch *w)
{
	ASSERT_SYS(write(w->stop[1], "", 1));
	ASSERT_EQ(pthread_join(w->thread, NULL), 0);
	close(w->listener);
	close(w->mem);
	close(w->stop[0]);
	close(w->stop[1]);
}

TEST(handshake_required_missing_feature_is_named)
{
	uint64_t missing = unoffered_feature();
	int fd = libuffd_open(NULL, NULL);
	ASSERT_OK(fd);
	struct libuffd_api api;
	ASSERT_ERR(libuffd_api_handshake(fd, 0, missing | LIBUFFD_FEATURE_SIGBUS, &api), -EOPNOTSUPP);
	ASSERT_EQ(api.missing, missing);
	ASSERT_EQ(api.features, 0);
	/* Refused before UFFDIO_API: the descriptor is still usable, and
	 * optional features the kernel lacks are dropped, the rest enabled. */
	ASSERT_OK(libuffd_api_handshake(fd, missing | (1ull << 50) | LIBUFFD_FEATURE_THREAD_ID,
					LIBUFFD_FEATURE_SIGBUS, &api));
	ASSERT_EQ(api.features, LIBUFFD_FEATURE_THREAD_ID | LIBUFFD_FEATURE_SIGBUS);
	ASSERT_EQ(api.missing, 0);
	ASSERT_ERR(libuffd_api_handshake(fd, 0, 0, &api), -EINVAL); /* once per descriptor */
	close(fd);
}

/* Kernels before 6.10 enabled unchecked a feature masked from their offer
 * when asked for it, and 6.0 to the 2023 revert dropped unknown ones: the
 * only safe request is one within the offer.  The kernel answering here
 * would refuse; what is checked is what it was asked. */
TEST(handshake_asks_the_kernel_only_for_what_it_offers)
{
	uint64_t missing = unoffered_feature();
	struct libuffd_api offer, api;
	ASSERT_OK(libuffd_kernel_api(&offer)); /* learnt (and cached) before watching */
	int fd = libuffd_open(NULL, NULL);
	ASSERT_OK(fd);
	struct api_watch w;

	api_watch_start(&w);
	int r1 = libuffd_api_handshake(fd, 0, missing, &api);
	uint64_t missing1 = api.missing;
	/* the refused handshake is synchronous */
	int calls1 = __atomic_load_n(&w.calls, __ATOMIC_RELAXED);
	int r2 = libuffd_api_handshake(fd, missing | LIBUFFD_FEATURE_THREAD_ID,
				       LIBUFFD_FEATURE_SIGBUS, &api);
	api_watch_stop(&w);

	ASSERT_ERR(r1, -EOPNOTSUPP);
	ASSERT_EQ(missing1, missing);
	ASSERT_EQ(calls1, 0); /* refused without asking the kernel */
	ASSERT_OK(r2);
	ASSERT_EQ(api.features, LIBUFFD_FEATURE_THREAD_ID | LIBUFFD_FEATURE_SIGBUS);
	ASSERT_EQ(w.calls, 1);
	ASSERT_EQ(w.asked & ~offer.features, 0);
	close(fd);
}

static int handshake_fork_required(void *arg)
{
	struct libuffd_api api;
	int fd = libuffd_open(NULL, NULL);
	if (fd < 0)
		return fd;
	int r = libuffd_api_handshake(fd, 0, LIBUFFD_FEATURE_EVENT_FORK, &api);
	if (r == -EPERM && api.missing != LIBUFFD_FEATURE_EVENT_FORK)
		return -1000;
	close(fd);
	fd = libuffd_open(NULL, NULL);
	int r2 = libuffd_api_handshake(fd, LIBUFFD_FEATURE_EVENT_FORK, 0, &api);
	if (r2 < 0)
		return r2;
	if (api.features & LIBUFFD_FEATURE_EVENT_FORK)
		return -1001; /* optional, and not allowed: must be dropped */
	close(fd);
	return r;
}

TEST(handshake_event_fork_needs_cap_sys_ptrace)
{
	require_root();
	ASSERT_ERR(run_as(WHO_UNPRIV, handshake_fork_required, NULL), -EPERM);
}

/* Before 6.10 the kernel checks unknown features (EINVAL) before
 * EVENT_FORK's privilege (EPERM), since then the other way round: an
 * optional EVENT_FORK is dropped either way. */
static int handshake_fork_and_unoffered(void *arg)
{
	uint64_t missing = *(uint64_t *)arg;
	struct libuffd_api api;
	int fd = libuffd_open(NULL, NULL);
	if (fd < 0)
		return fd;
	int r = libuffd_api_handshake(fd, LIBUFFD_FEATURE_EVENT_FORK | missing,
				      LIBUFFD_FEATURE_SIGBUS, &api);
	close(fd);
	if (r < 0)
		return r;
	if (api.missing)
		return -1000;
	return api.features == LIBUFFD_FEATURE_SIGBUS ? 0 : -1001;
}

TEST(handshake_drops_event_fork_beside_an_unoffered_feature)
{
	require_root();
	uint64_t missing = unoffered_feature();
	ASSERT_ERR(run_as(WHO_UNPRIV, handshake_fork_and_unoffered, &missing), 0);
}

static int unoffered_bit(void *arg)
{
	struct libuffd_api offer;
	int r = libuffd_kernel_api(&offer);
	return r < 0 ? r : ~offer.features ? __builtin_ctzll(~offer.features) : 64;
}

/* Without the kernel's offer (here no descriptor can be opened to learn
 * it), everything asked for goes to the kernel and its answer decides. */
static int handshake_without_offer(void *arg)
{
	uint64_t missing = *(uint64_t *)arg;
	struct libuffd_api api;
	int fd1 = libuffd_open(NULL, NULL), fd2 = libuffd_open(NULL, NULL);
	int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct rlimit rl;
	if (fd1 < 0 || fd2 < 0 || probe < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1000;
	close(probe);
	rl.rlim_cur = (rlim_t)probe; /* every lower descriptor is taken */
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1001;
	if (libuffd_kernel_api(&api) != -EMFILE)
		return -1002;
	int r = libuffd_api_handshake(fd1, LIBUFFD_FEATURE_THREAD_ID, LIBUFFD_FEATURE_SIGBUS, &api);
	if (r < 0)
		return r;
	if (api.features != (LIBUFFD_FEATURE_THREAD_ID | LIBUFFD_FEATURE_SIGBUS))
		return -1003;
	r = libuffd_api_handshake(fd2, 0, missing, &api);
	return r == -EINVAL || (r == -EOPNOTSUPP && api.missing == missing) ? 0 : r < 0 ? r : -1004;
}

TEST(handshake_without_the_offer_judges_by_the_kernels_answer)
{
	/* Learnt in a child: this process must not have the offer cached. */
	int bit = run_as(WHO_ROOT, unoffered_bit, NULL);
	ASSERT_OK(bit);
	if (bit == 64)
		SKIP("this kernel offers all 64 feature bits: none is missing to ask for");
	uint64_t missing = 1ull << bit;
	ASSERT_ERR(run_as(WHO_ROOT, handshake_without_offer, &missing), 0);
}

/* ---- resolving, with a handler thread ---------------------------------- */

struct server {
	int fd;
	const char *fill; /* one page of data, NULL for zeropage */
	int delay_ms;
	int served;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	struct libuffd_event ev;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };

	if (poll(&p, 1, 10000) != 1)
		return NULL;
	if (libuffd_read_events(s->fd, &ev, 1) != 1 || ev.type != LIBUFFD_EVENT_PAGEFAULT)
		return NULL;
	if (s->delay_ms)
		usleep((useconds_t)s->delay_ms * 1000);
	void *page = (void *)(uintptr_t)(ev.pagefault.address & ~(uint64_t)(page_size() - 1));
	size_t done = 0;
	int r = s->fill ? libuffd_copy(s->fd, page, s->fill, page_size(), 0, &done)
			: libuffd_zeropage(s->fd, page, page_size(), 0, &done);
	if (r == 0 && done == page_size())
		s->served++;
	return NULL;
}

TEST(user_fault_resolved_with_copy_and_thread_id)
{
	int fd = libuffd_open(NULL, NULL);
	ASSERT_OK(fd);
	struct libuffd_api api;
	ASSERT_OK(libuffd_api_handshake(fd, 0, LIBUFFD_FEATURE_THREAD_ID, &api));
	char *p = map_pages(1);
	uint64_t ioctls;
	ASSERT_OK(libuffd_register(fd, p, page_size(), LIBUFFD_REGISTER_MISSING, &ioctls));
	ASSERT_TRUE(ioctls & LIBUFFD_IOCTL_COPY);
	ASSERT_TRUE(ioctls & LIBUFFD_IOCTL_ZEROPAGE);

	char *src = map_pages(1);
	memset(src, 0x5a, page_size());
	struct server s = { .fd = fd, .fill = src };
	pthread_t t;
	ASSERT_EQ(pthread_create(&t, NULL, serve_one, &s), 0);
	ASSERT_EQ(p[123], 0x5a); /* user-mode fault, served */
	pthread_join(t, NULL);
	ASSERT_EQ(s.served, 1);
	ASSERT_EQ(p[page_size() - 1], 0x5a);
	close(fd);
}

/* A descriptor with `pages` registered missing pages at *p and a source
 * of as many pages filled with `fill` at *src. */
static int registered_area(size_t pages, int fill, char **p, char **src)
{
	struct libuffd_api api;
	int fd = libuffd_open(NULL, NULL);

	ASSERT_OK(fd);
	ASSERT_OK(libuffd_api_handshake(fd, 0, 0, &api));
	*p = map_pages(pages);
	*src = map_pages(pages);
	memset(*src, fill, pages * page_size());
	ASSERT_OK(libuffd_register(fd, *p, pages * page_size(), LIBUFFD_REGISTER_MISSING, NULL));
	return fd;
}

TEST(resolver_errors_eexist_enoent_einval)
{
	size_t ps = page_size();
	char *p, *src;
	int fd = registered_area(4, 7, &p, &src);

	size_t done = 99;
	ASSERT_ERR(libuffd_copy(fd, p, src, 2 * ps, 0, &done), 0);
	ASSERT_EQ(done, 2 * ps);
	/* Page 1 is present now: copying pages 1..3 stops at once. */
	ASSERT_ERR(libuffd_copy(fd, p + ps, src, 3 * ps, 0, &done), -EEXIST);
	ASSERT_EQ(done, 0);
	/* A single page: done in full. */
	ASSERT_ERR(libuffd_zeropage(fd, p + 2 * ps, ps, 0, &done), 0);
	ASSERT_EQ(done, ps);
	/* Misaligned. */
	ASSERT_ERR(libuffd_copy(fd, p + 1, src, ps, 0, &done), -EINVAL);
	ASSERT_ERR(libuffd_copy(fd, p, src, ps, 1u << 7, &done), -EINVAL);
	/* Not registered. */
	char *q = map_pages(1);
	ASSERT_ERR(libuffd_copy(fd, q, src, ps, 0, &done), -ENOENT);
	ASSERT_OK(libuffd_wake(fd, p, 4 * ps));
	ASSERT_OK(libuffd_unregister(fd, p, 4 * ps));
	ASSERT_ERR(libuffd_zeropage(fd, p + 3 * ps, ps, 0, &done), -ENOENT);
	close(fd);
}

TEST(resolver_partial_progress_eagain)
{
	size_t ps = page_size();
	char *p, *src;
	int fd = registered_area(4, 9, &p, &src);
	size_t done;
	ASSERT_OK(libuffd_copy(fd, p + 2 * ps, src, ps, 0, &done));
	/* Pages 0,1 are done, then page 2 exists: the kernel reports the two
	 * pages and EAGAIN; the retry of the rest names the real error. */
	ASSERT_ERR(libuffd_copy(fd, p, src, 4 * ps, 0, &done), -EAGAIN);
	ASSERT_EQ(done, 2 * ps);
	ASSERT_ERR(libuffd_copy(fd, p + done, src, 4 * ps - done, 0, &done), -EEXIST);
	ASSERT_EQ(p[0], 9);
	ASSERT_EQ(p[2 * ps - 1], 9);
	close(fd);
}

TEST(resolver_enoent_across_split_mapping)
{
	size_t ps = page_size();
	char *p, *src;
	int fd = registered_area(4, 5, &p, &src);
	size_t done = 99;
	/* mprotect() splits the registered VMA: a range over both halves is
	 * refused whole, each half works. */
	ASSERT_SYS(mprotect(p + 2 * ps, 2 * ps, PROT_READ));
	ASSERT_ERR(libuffd_copy(fd, p, src, 4 * ps, 0, &done), -ENOENT);
	ASSERT_EQ(done, 0);
	ASSERT_ERR(libuffd_copy(fd, p, src, 2 * ps, 0, &done), 0);
	ASSERT_ERR(libuffd_copy(fd, p + 2 * ps, src, 2 * ps, 0, &done), 0);
	ASSERT_EQ(done, 2 * ps);
	ASSERT_EQ(p[3 * ps], 5);
	close(fd);
}

TEST(resolver_esrch_when_owner_is_gone)
{
	/* A child creates the descriptor, passes it over a socket and exits:
	 * the descriptor lives on here, its address space is gone. */
	int sv[2];
	ASSERT_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		int fd = libuffd_open(NULL, NULL);
		struct libuffd_api api;
		if (fd < 0 || libuffd_api_handshake(fd, 0, 0, &api) < 0)
			_exit(1);
		char *p = map_pages(1);
		if (libuffd_register(fd, p, page_size(), LIBUFFD_REGISTER_MISSING, NULL) < 0)
			_exit(1);
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
		uint64_t addr = (uintptr_t)p;
		struct iovec iov = { &addr, sizeof(addr) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &m, 0) == sizeof(addr) ? 0 : 1);
	}
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	uint64_t addr = 0;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	ASSERT_EQ(ASSERT_SYS(recvmsg(sv[0], &m, 0)), sizeof(addr));
	int fd;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_EQ(status, 0);
	char *src = map_pages(1);
	size_t done;
	ASSERT_ERR(libuffd_copy(fd, (void *)(uintptr_t)addr, src, page_size(), 0, &done), -ESRCH);
	close(fd);
}
