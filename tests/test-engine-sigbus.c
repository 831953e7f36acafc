// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine and SIGBUS: a failing source raises it in both modes, and
 * the in-thread mode chains to the handler installed before it, keeping
 * its mask, SA_NODEFER and SA_RESETHAND, the default and ignored
 * dispositions, and forgets its engines in a forked child; its handler
 * holds other signals back, and of two engines whose ranges hold an
 * address it asks the one that did not lose the page.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"

BOTH_MODES(source_error_raises_sigbus)
{
	size_t pg = page_size();
	char *r = map_pages(4);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_fails };
	install_test_sigbus();
	struct libuffd_engine *e = serve(r, 4 * pg, &s, mode, 1);
	ASSERT_TRUE(read_raises_sigbus(r + pg + 3));
	ASSERT_TRUE(bus_addr == r + pg + 3);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* A source's errors that the kernel also gives the engine (EAGAIN: an
 * event is pending, EEXIST: a racer resolved the page, ENOENT, ESRCH: the
 * page is gone) are failures all the same, not a reason to retry. */
BOTH_MODES(source_errors_like_the_kernels_raise_sigbus)
{
	static const int errors[] = { -EAGAIN, -EEXIST, -ENOENT, -ESRCH };
	size_t pg = page_size();

	install_test_sigbus();
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		char *r = map_pages(4);
		struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
						   .fill = fill_error, .ctx = (void *)&errors[i] };
		struct libuffd_engine *e = serve(r, 4 * pg, &s, mode, 1);
		ASSERT_TRUE(read_raises_sigbus(r + 2 * pg + 5));
		ASSERT_TRUE(bus_addr == r + 2 * pg + 5);
		ASSERT_OK(libuffd_engine_destroy(e));
	}
}

/* Readable up to *(uint64_t *)ctx bytes, failing past it. */
static int fill_up_to(void *ctx, uint64_t offset, void *dst, size_t len)
{
	if (offset + len > *(const uint64_t *)ctx)
		return -EIO;
	memset(dst, 0x3c, len);
	return 0;
}

/* A window that reaches the pages where the source fails does not fail
 * the faulting page: that one is served alone. */
BOTH_MODES(source_failing_past_the_faulting_page_fails_only_there)
{
	size_t pg = page_size();
	uint64_t limit = 4 * pg;
	char *r = map_pages(64);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_up_to, .ctx = &limit };
	install_test_sigbus();
	struct libuffd_engine *e = serve(r, 64 * pg, &s, mode, 1);
	for (size_t i = 0; i < 4; i++)
		ASSERT_EQ(r[i * pg + 1], 0x3c);
	ASSERT_TRUE(read_raises_sigbus(r + 4 * pg));
	ASSERT_TRUE(bus_addr == r + 4 * pg);
	ASSERT_OK(libuffd_engine_destroy(e));
}

TEST(in_thread_chains_foreign_sigbus)
{
	size_t pg = page_size();
	char path[] = "/tmp/uffd-engine-XXXXXX";
	int fd = ASSERT_SYS(mkstemp(path));
	unlink(path);
	/* A file mapping past EOF raises a SIGBUS that is not ours. */
	char *beyond = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_TRUE(beyond != MAP_FAILED);
	install_test_sigbus();
	char *r = map_pages(4);
	void *src = make_source(4, 7);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = 4 * pg };
	struct libuffd_engine *e = serve(r, 4 * pg, &s, IT, 1);
	ASSERT_TRUE(read_raises_sigbus(beyond + 17));
	ASSERT_TRUE(bus_addr == beyond + 17);
	ASSERT_TRUE(!read_raises_sigbus(r + 2 * pg)); /* ours: resolved */
	ASSERT_EQ(first_bad_page(r + 2 * pg, 2, 1, 7), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

/* The in-thread mode must keep what SIGBUS did before it for what is not
 * ours.  Each scenario runs in a child with the previous disposition set
 * (over the sanitizer's own handler); a loop instead of a kill ends with
 * SIGALRM. */
enum bus_scenario { BUS_UNRESOLVABLE, BUS_AFTER_DESTROY, BUS_KILL, BUS_KILL_IGNORED, BUS_FORKED };

static int bus_child(enum bus_scenario sc, void (*previous)(int))
{
	size_t pg = page_size();
	char *r = map_pages(4);
	void *src = make_source(4, 13);
	struct libuffd_engine_source mem = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					     .size = 4 * pg };
	struct libuffd_engine_source bad = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					     .fill = fill_fails };
	struct libuffd_engine_opts o = { .mode = IT };
	struct libuffd_engine *e;
	struct sigaction sa = { 0 };
	sa.sa_handler = previous;
	if (sigaction(SIGBUS, &sa, NULL) < 0 ||
	    libuffd_engine_create(r, 4 * pg, sc == BUS_UNRESOLVABLE ? &bad : &mem, &o, &e) < 0)
		return 2;
	alarm(10);
	switch (sc) {
	case BUS_UNRESOLVABLE:
		return *(volatile char *)r; /* the source fails: killed */
	case BUS_AFTER_DESTROY: {
		/* The range is left behind for racing handlers; a file
		 * mapped there later raises its own SIGBUS past EOF. */
		if (*(volatile uint64_t *)r != pattern(0, 0, 13) || libuffd_engine_destroy(e) < 0)
			return 2;
		char path[] = "/tmp/uffd-engine-XXXXXX";
		int fd = mkstemp(path);
		if (fd < 0 || unlink(path) < 0 ||
		    mmap(r, pg, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != r)
			return 2;
		return *(volatile char *)r;
	}
	case BUS_KILL:
		raise(SIGBUS); /* default action: killed */
		return 0;
	case BUS_FORKED: {
		/* The child's copy of the region is plain memory, and the
		 * parent's engine is not the child's: a file's SIGBUS there
		 * kills the child, and the parent's page stays as it was. */
		if (*(volatile uint64_t *)r != pattern(0, 0, 13))
			return 2;
		pid_t pid = fork();
		if (pid == 0) {
			alarm(5); /* a loop ends here, before the parent's alarm */
			char path[] = "/tmp/uffd-engine-XXXXXX";
			int fd = mkstemp(path);
			if (fd < 0 || unlink(path) < 0 ||
			    mmap(r + pg, pg, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != r + pg)
				_exit(2);
			_exit(*(volatile char *)(r + pg));
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 2;
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
			return 3;
		return *(volatile uint64_t *)(r + pg) == pattern(1, 0, 13) ? 0 : 4;
	}
	case BUS_KILL_IGNORED:
		raise(SIGBUS); /* ignored, and the engine keeps serving */
		return *(volatile uint64_t *)(r + pg) == pattern(1, 0, 13) ? 0 : 3;
	}
	return 2;
}

static int bus_status(enum bus_scenario sc, void (*previous)(int))
{
	struct libuffd_api api;
	int status;
	ASSERT_OK(libuffd_kernel_api(&api));
	if (!(api.features & LIBUFFD_FEATURE_SIGBUS))
		SKIP("no UFFD_FEATURE_SIGBUS");
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0)
		_exit(bus_child(sc, previous));
	ASSERT_SYS(waitpid(pid, &status, 0));
	return status;
}


TEST(in_thread_unresolvable_fault_kills_by_default)
{
	assert_killed_by_sigbus(bus_status(BUS_UNRESOLVABLE, SIG_DFL));
}

TEST(in_thread_foreign_sigbus_after_destroy_kills)
{
	assert_killed_by_sigbus(bus_status(BUS_AFTER_DESTROY, SIG_DFL));
}

TEST(in_thread_sent_sigbus_kills_by_default)
{
	assert_killed_by_sigbus(bus_status(BUS_KILL, SIG_DFL));
}

TEST(in_thread_fork_child_has_no_engine)
{
	int status = bus_status(BUS_FORKED, SIG_DFL);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
}

TEST(in_thread_sent_sigbus_stays_ignored)
{
	int status = bus_status(BUS_KILL_IGNORED, SIG_IGN);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
}

/* The previous handler runs with the signals its sa_mask blocks, and
 * SIGBUS itself unless it asked for SA_NODEFER, and no others. */
static volatile int usr1_blocked, usr2_blocked, bus_blocked;

static void on_masked_sigbus(int sig)
{
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	usr1_blocked = sigismember(&now, SIGUSR1);
	usr2_blocked = sigismember(&now, SIGUSR2);
	bus_blocked = sigismember(&now, SIGBUS);
	siglongjmp(bus_jump, 1);
}

static void chains_with_mask(int flags, int want_bus_blocked)
{
	char *r = map_pages(4);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_fails };
	struct sigaction sa = { 0 };
	sa.sa_handler = on_masked_sigbus;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	ASSERT_SYS(sigaction(SIGBUS, &sa, NULL));
	struct libuffd_engine *e = serve(r, 4 * page_size(), &s, IT, 1);
	usr1_blocked = usr2_blocked = bus_blocked = -1;
	ASSERT_TRUE(read_raises_sigbus(r));
	ASSERT_EQ(usr1_blocked, 1);
	/* Not the engine's own mask, which blocks everything. */
	ASSERT_EQ(usr2_blocked, 0);
	ASSERT_EQ(bus_blocked, want_bus_blocked);
	ASSERT_OK(libuffd_engine_destroy(e));
}

TEST(in_thread_chains_with_the_previous_sa_mask)
{
	chains_with_mask(0, 1);
}

TEST(in_thread_chains_with_sa_nodefer)
{
	chains_with_mask(SA_NODEFER, 0);
}

/* SA_RESETHAND: the previous handler runs for the first SIGBUS only; the
 * second one that is not ours gets the default action. */
TEST(in_thread_chains_sa_resethand_once)
{
	struct libuffd_api api;
	int p[2], status;
	ASSERT_OK(libuffd_kernel_api(&api));
	if (!(api.features & LIBUFFD_FEATURE_SIGBUS))
		SKIP("no UFFD_FEATURE_SIGBUS");
	ASSERT_SYS(pipe(p));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		char *r = map_pages(4);
		struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
						   .fill = fill_fails };
		struct libuffd_engine_opts o = { .mode = IT };
		struct libuffd_engine *e;
		struct sigaction sa = { 0 };
		sa.sa_sigaction = on_test_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, NULL) < 0 ||
		    libuffd_engine_create(r, 4 * page_size(), &s, &o, &e) < 0)
			_exit(2);
		alarm(10);
		if (!read_raises_sigbus(r) || bus_addr != r || write(p[1], "1", 1) != 1)
			_exit(3);
		/* The engine still serves its pages, ... */
		struct libuffd_engine_source zero = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
		char *z = map_pages(1);
		struct libuffd_engine *ez;
		if (libuffd_engine_create(z, page_size(), &zero, &o, &ez) < 0 || *(volatile char *)z)
			_exit(4);
		/* ... and the next fault it cannot resolve kills. */
		read_raises_sigbus(r + page_size());
		_exit(5);
	}
	close(p[1]);
	char c = 0;
	ASSERT_EQ(read(p[0], &c, 1), 1);
	ASSERT_EQ(c, '1');
	ASSERT_SYS(waitpid(pid, &status, 0));
	assert_killed_by_sigbus(status);
	close(p[0]);
}

/* A SIGBUS with a fault's si_code that no engine serves, whose retried
 * access would not fault again (a file extended meanwhile, say): with the
 * default action before the engine, the process dies of it, and does not
 * go on with the default action in place of the engine's handler.  The
 * signal is sent to ourselves with rt_tgsigqueueinfo(2), which lets a
 * process give its own signals any si_code: nothing retries it. */
static int unserved_fault_child(void *arg)
{
	size_t pg = page_size();
	char *r = map_pages(4);
	char *elsewhere = map_pages(1);
	struct libuffd_engine_source z = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine_opts o = { .mode = IT };
	struct libuffd_engine *e;
	struct sigaction dfl = { 0 };
	siginfo_t si;

	dfl.sa_handler = SIG_DFL; /* over the sanitizer's own handler */
	if (sigaction(SIGBUS, &dfl, NULL) < 0 || libuffd_engine_create(r, 4 * pg, &z, &o, &e) < 0)
		return 2;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = BUS_ADRERR;
	si.si_addr = elsewhere;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &si);
	return 3; /* survived: the engine's faults would now kill */
}

TEST(in_thread_unserved_fault_kills_even_if_its_retry_would_pass)
{
	struct libuffd_api api;
	ASSERT_OK(libuffd_kernel_api(&api));
	if (!(api.features & LIBUFFD_FEATURE_SIGBUS))
		SKIP("no UFFD_FEATURE_SIGBUS");
	assert_killed_by_sigbus(child_status_within(unserved_fault_child, NULL, 20));
}

/* In the in-thread mode the engine resolves in a signal handler: another
 * signal's handler run inside it (here raised by the source itself) that
 * touched an in-thread region would find SIGBUS blocked, and the kernel
 * would kill.  It waits until the engine's handler returns, and is
 * served. */
static const char *volatile usr1_touch;
static volatile uint64_t usr1_seen;
static int usr1_raised; /* __atomic */

static void on_usr1_touch(int sig)
{
	usr1_seen = *(const volatile uint64_t *)usr1_touch;
}

static int fill_raising(void *ctx, uint64_t offset, void *dst, size_t len)
{
	memset(dst, 0x5a, len);
	if (!__atomic_exchange_n(&usr1_raised, 1, __ATOMIC_ACQ_REL))
		raise(SIGUSR1);
	return 0;
}

static int signal_inside_handler_child(void *arg)
{
	size_t pg = page_size();
	char *r = map_pages(8);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_raising };
	struct libuffd_engine_opts o = { .mode = IT, .prefetch_max = pg };
	struct libuffd_engine *e;
	struct sigaction sa = { 0 }, dfl = { 0 };

	usr1_touch = r + 6 * pg;
	sa.sa_handler = on_usr1_touch;
	sigemptyset(&sa.sa_mask);
	dfl.sa_handler = SIG_DFL;
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGBUS, &dfl, NULL) < 0 ||
	    libuffd_engine_create(r, 8 * pg, &s, &o, &e) < 0)
		return 2;
	if (*(volatile char *)r != 0x5a)
		return 3;
	if (!__atomic_load_n(&usr1_raised, __ATOMIC_ACQUIRE) || usr1_seen != 0x5a5a5a5a5a5a5a5aull)
		return 4;
	return libuffd_engine_destroy(e) < 0 ? 5 : 0;
}

TEST(in_thread_handler_holds_other_signals_back)
{
	struct libuffd_api api;
	if (UNDER_TSAN)
		SKIP(TSAN_DEFERS_SIGNALS);
	ASSERT_OK(libuffd_kernel_api(&api));
	if (!(api.features & LIBUFFD_FEATURE_SIGBUS))
		SKIP("no UFFD_FEATURE_SIGBUS");
	assert_exited_zero(child_status_within(signal_inside_handler_child, NULL, 20));
}

/* Engine a's region moved with mremap(MREMAP_FIXED) onto the range of
 * engine b, which loses its pages there: b, created first, still holds
 * that range, and its descriptor answers ENOENT for a's pages; a must be
 * asked too. */
TEST(in_thread_region_moved_onto_another_engines_range_is_served)
{
	size_t n = 16, pg = page_size();
	void *src_a = make_source(n, 31), *src_b = make_source(n, 32);
	char *rb = map_pages(n), *ra = map_pages(n);
	struct libuffd_engine_source sa = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src_a,
					    .size = n * pg };
	struct libuffd_engine_source sb = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src_b,
					    .size = n * pg };
	install_test_sigbus();
	struct libuffd_engine *b = serve(rb, n * pg, &sb, IT, 1);
	struct libuffd_engine *a = serve(ra, n * pg, &sa, IT, 1);
	ASSERT_EQ(first_bad_page(rb, 0, 1, 32), -1);
	ASSERT_EQ(first_bad_page(ra, 0, 1, 31), -1);
	ASSERT_TRUE(mremap(ra, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, rb) == rb);
	ASSERT_TRUE(libuffd_engine_region(a, NULL) == rb);
	ASSERT_TRUE(!read_raises_sigbus(rb + 9 * pg));
	ASSERT_EQ(first_bad_page(rb, 0, n, 31), -1);
	/* a first: b's range is a's mapping now. */
	ASSERT_OK(libuffd_engine_destroy(a));
	ASSERT_OK(libuffd_engine_destroy(b));
}
