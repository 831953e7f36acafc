// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fault-serving engine on the real kernel, in both modes: sources,
 * prefetch, events (remove, remap, unmap), shutdown, fork, the populate
 * helper and the EFAULT retry, SIGBUS chaining, and the scenarios of the
 * kernel's uffd-stress selftest with the data verified page by page.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>

#include "harness.h"
#include "libuffd-engine.h"
#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define HT LIBUFFD_ENGINE_HANDLER_THREADS
#define IT LIBUFFD_ENGINE_IN_THREAD

/* One test per mode. */
#define BOTH_MODES(name)                       \
	static void name(enum libuffd_engine_mode); \
	TEST_TIMEOUT(name##_handler_threads, 60)   \
	{                                      \
		name(HT);                          \
	}                                      \
	TEST_TIMEOUT(name##_in_thread, 60)         \
	{                                      \
		name(IT);                          \
	}                                      \
	static void name(enum libuffd_engine_mode mode)

/* The word w of page nr of a source with this seed. */
static uint64_t pattern(size_t nr, size_t w, uint64_t seed)
{
	return (nr * 0x9E3779B97F4A7C15ull) ^ (w * 0xBF58476D1CE4E5B9ull) ^ seed;
}

static void *make_source(size_t npages, uint64_t seed)
{
	uint64_t *s = map_pages(npages);
	size_t words = page_size() / 8;
	for (size_t nr = 0; nr < npages; nr++)
		for (size_t w = 0; w < words; w++)
			s[nr * words + w] = pattern(nr, w, seed);
	return s;
}

/* The first page of [p, p + npages) that does not hold its pattern, or -1. */
static long first_bad_page(const void *p, size_t first_nr, size_t npages, uint64_t seed)
{
	const uint64_t *q = p;
	size_t words = page_size() / 8;
	for (size_t i = 0; i < npages; i++)
		for (size_t w = 0; w < words; w++)
			if (q[i * words + w] != pattern(first_nr + i, w, seed))
				return (long)(first_nr + i);
	return -1;
}

static int page_is_zero(const void *p)
{
	const uint64_t *q = p;
	for (size_t w = 0; w < page_size() / 8; w++)
		if (q[w])
			return 0;
	return 1;
}

static struct libuffd_engine *serve_with(void *region, size_t len,
					 const struct libuffd_engine_source *src,
					 const struct libuffd_engine_opts *o)
{
	struct libuffd_engine *e;
	int r = libuffd_engine_create(region, len, src, o, &e);
	if (r == -EOPNOTSUPP)
		SKIP("the kernel lacks a userfaultfd feature the mode needs");
	ASSERT_OK(r);
	return e;
}

static struct libuffd_engine *serve(void *region, size_t len,
				    const struct libuffd_engine_source *src,
				    enum libuffd_engine_mode mode, unsigned int threads)
{
	struct libuffd_engine_opts o = { .mode = mode, .threads = threads };
	return serve_with(region, len, src, &o);
}

/* n fresh pages served from a memory source of pattern `seed`, with
 * windows up to prefetch_max (0: the default). */
static struct libuffd_engine *serve_memory(size_t n, uint64_t seed, enum libuffd_engine_mode mode,
					   size_t prefetch_max, char **region, void **src)
{
	*src = make_source(n, seed);
	*region = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = *src,
					   .size = n * page_size() };
	struct libuffd_engine_opts o = { .mode = mode, .prefetch_max = prefetch_max };
	return serve_with(*region, n * page_size(), &s, &o);
}

/* The counters once the engine's threads are done: at least min_pages
 * resolved, and unchanged for 20 ms.  A handler thread counts after the
 * copy that woke the faulting thread, and a loaded machine can keep it
 * from running for milliseconds. */
static struct libuffd_engine_stats stats_when(struct libuffd_engine *e, uint64_t min_pages)
{
	struct libuffd_engine_stats a, b;
	ASSERT_OK(libuffd_engine_get_stats(e, &a));
	for (int waited_ms = 0; waited_ms < 10000; waited_ms += 20) {
		usleep(20000);
		ASSERT_OK(libuffd_engine_get_stats(e, &b));
		if (b.pages >= min_pages && !memcmp(&a, &b, sizeof(a)))
			return b;
		a = b;
	}
	return b;
}

static struct libuffd_engine_stats stats(struct libuffd_engine *e)
{
	return stats_when(e, 0);
}

/* ---- Sources and prefetch ---------------------------------------------- */

BOTH_MODES(memory_source_sequential_prefetch)
{
	size_t n = 2048, pg = page_size(); /* 8 MiB: up to 2 MiB windows */
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 1, mode, 0, &r, &src);
	for (size_t i = 0; i < n; i++) /* read one byte a page, in order */
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg), pattern(i, 0, 1));
	ASSERT_EQ(first_bad_page(r, 0, n, 1), -1);
	struct libuffd_engine_stats st = stats_when(e, n);
	ASSERT_EQ(st.pages, n);           /* never beyond the region, nothing twice */
	/* Windows of 1, 16, 32 ... 512 pages, from 32 on each followed by
	 * as much read-ahead; a fault that meets the read-ahead adds one. */
	ASSERT_LE(st.faults, 32);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(short_run_is_not_read_ahead)
{
	/* A run of 17 pages: one page, then a 16-page window that ends it.
	 * Nothing past it is copied (read-ahead waits for a second window). */
	size_t n = 256, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 1, mode, 0, &r, &src);
	for (size_t i = 100; i < 117; i++)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg), pattern(i, 0, 1));
	struct libuffd_engine_stats st = stats_when(e, 17);
	ASSERT_EQ(st.faults, 2);
	ASSERT_EQ(st.pages, 17);
	unsigned char vec[256];
	ASSERT_SYS(mincore(r, n * pg, vec));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(vec[i] & 1, i >= 100 && i < 117);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(random_access_resolves_single_pages)
{
	size_t n = 1024, pg = page_size(), touched = 0;
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 2, mode, 0, &r, &src);
	/* A stride of 37 pages is never "the next page". */
	for (size_t i = 0; i < n; i += 37, touched++)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg + 8), pattern(i, 1, 2));
	struct libuffd_engine_stats st = stats_when(e, touched);
	ASSERT_EQ(st.faults, touched);
	ASSERT_EQ(st.pages, touched);
	ASSERT_OK(libuffd_engine_destroy(e));
	/* After destroy the pages never touched read as zero. */
	ASSERT_TRUE(page_is_zero(r + pg));
	ASSERT_EQ(first_bad_page(r + 37 * pg, 37, 1, 2), -1);
}

BOTH_MODES(prefetch_stops_at_region_end)
{
	/* 40 pages: windows of 1, 16, 32 would pass the end. A served
	 * neighbour mapping right after the region must stay untouched. */
	size_t n = 40, pg = page_size();
	void *src = make_source(n + 8, 3);
	char *r = map_pages(n + 8);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = (n + 8) * pg };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg), pattern(i, 0, 3));
	unsigned char vec[8];
	ASSERT_SYS(mincore(r + n * pg, 8 * pg, vec));
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(vec[i] & 1, 0);
	ASSERT_EQ(stats_when(e, n).pages, n);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* mprotect() of part of the region splits its VMA; a prefetch window
 * that crosses the split fails whole with ENOENT (the kernel wants the
 * range inside one VMA), which must not fail the faulting page. */
BOTH_MODES(prefetch_across_split_vma)
{
	size_t n = 64, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 11, mode, 0, &r, &src);
	ASSERT_SYS(mprotect(r + 20 * pg, (n - 20) * pg, PROT_READ));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg), pattern(i, 0, 11));
	ASSERT_EQ(first_bad_page(r, 0, n, 11), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(zero_source_reads_and_writes)
{
	size_t n = 256, pg = page_size();
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	for (size_t i = 0; i < n / 2; i++)
		ASSERT_TRUE(page_is_zero(r + i * pg));
	for (size_t i = n / 2; i < n; i++)
		r[i * pg + 5] = 7;
	for (size_t i = 0; i < n / 2; i++) /* writes after zero-page reads */
		r[i * pg] = 9;
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(r[i * pg], i < n / 2 ? 9 : 0);
		ASSERT_EQ(r[i * pg + 5], i < n / 2 ? 0 : 7);
	}
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(file_source_through_page_cache_tail_is_zero)
{
	size_t n = 64, pg = page_size();
	void *src = make_source(n, 4);
	char path[] = "/tmp/uffd-engine-XXXXXX";
	int fd = ASSERT_SYS(mkstemp(path));
	unlink(path);
	size_t flen = 10 * pg + 100; /* ends inside page 10 */
	ASSERT_EQ(write(fd, src, flen), (ssize_t)flen);
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	ASSERT_EQ(first_bad_page(r, 0, 10, 4), -1);
	ASSERT_EQ(memcmp(r + 10 * pg, (char *)src + 10 * pg, 100), 0);
	for (size_t i = 10 * pg + 100; i < 11 * pg; i++)
		ASSERT_EQ(r[i], 0);
	for (size_t i = 11; i < n; i++)
		ASSERT_TRUE(page_is_zero(r + i * pg));
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

BOTH_MODES(memory_source_partial_last_page)
{
	size_t n = 8, pg = page_size();
	char *src = make_source(n, 5);
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = 3 * pg + 10 };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	ASSERT_EQ(memcmp(r, src, 3 * pg + 10), 0);
	for (size_t i = 3 * pg + 10; i < n * pg; i++)
		ASSERT_EQ(r[i], 0);
	ASSERT_OK(libuffd_engine_destroy(e));
}

struct fill_ctx {
	uint64_t seed;
	size_t page; /* sysconf() is not async-signal-safe: learnt before */
};

/* Async-signal-safe: the in-thread mode calls it from SIGBUS. */
static int fill_pattern(void *ctx, uint64_t offset, void *dst, size_t len)
{
	const struct fill_ctx *c = ctx;
	uint64_t *d = dst;
	size_t words = c->page / 8;
	for (size_t i = 0; i < len / 8; i++)
		d[i] = pattern(offset / c->page + i / words, i % words, c->seed);
	return 0;
}

BOTH_MODES(callback_source)
{
	size_t n = 1024, pg = page_size();
	struct fill_ctx c = { 6, pg };
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_pattern, .ctx = &c };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 2);
	ASSERT_EQ(first_bad_page(r, 0, n, 6), -1);
	ASSERT_EQ(stats_when(e, n).pages, n);
	ASSERT_OK(libuffd_engine_destroy(e));
}

static int fill_fails(void *ctx, uint64_t offset, void *dst, size_t len)
{
	return -EIO;
}

/* Holds the handler thread inside the first resolution until released. */
static int held, release_hold; /* __atomic: shared with the handler thread */

static int fill_slow_once(void *ctx, uint64_t offset, void *dst, size_t len)
{
	if (!__atomic_load_n(&held, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&release_hold, __ATOMIC_ACQUIRE))
			usleep(1000);
	}
	memset(dst, 0x5a, len);
	return 0;
}

static void *touch_page(void *p)
{
	return (void *)(uintptr_t)*(volatile unsigned char *)p;
}

TEST(handler_threads_fold_duplicate_faults)
{
	size_t pg = page_size();
	char *r = map_pages(64);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_slow_once };
	struct libuffd_engine *e = serve(r, 64 * pg, &s, HT, 1);
	pthread_t first, dup[4];
	ASSERT_EQ(pthread_create(&first, NULL, touch_page, r), 0);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* The handler is busy: four faults on one page queue up and are
	 * read in one batch. */
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(pthread_create(&dup[i], NULL, touch_page, r + 40 * pg), 0);
	usleep(300 * 1000);
	__atomic_store_n(&release_hold, 1, __ATOMIC_RELEASE);
	void *v;
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(pthread_join(dup[i], &v), 0);
		ASSERT_EQ((uintptr_t)v, 0x5a);
	}
	ASSERT_EQ(pthread_join(first, &v), 0);
	struct libuffd_engine_stats st = stats(e);
	ASSERT_EQ(st.faults, 2);
	ASSERT_EQ(st.folded, 3);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* A SIGBUS handler installed before the engine: the in-thread mode
 * must chain to it for what it does not resolve. */
static sigjmp_buf bus_jump;
static void *volatile bus_addr;

static void on_test_sigbus(int sig, siginfo_t *si, void *uc)
{
	bus_addr = si->si_addr;
	siglongjmp(bus_jump, 1);
}

static void install_test_sigbus(void)
{
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_test_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ASSERT_SYS(sigaction(SIGBUS, &sa, NULL));
}

/* Read *p; returns 1 if that raised SIGBUS (caught by on_test_sigbus). */
static int read_raises_sigbus(volatile char *p)
{
	bus_addr = NULL;
	if (sigsetjmp(bus_jump, 1))
		return 1;
	(void)*p;
	return 0;
}

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

static void assert_killed_by_sigbus(int status)
{
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(WTERMSIG(status), SIGBUS);
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
 * SIGBUS itself unless it asked for SA_NODEFER. */
static volatile int usr1_blocked, bus_blocked;

static void on_masked_sigbus(int sig)
{
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	usr1_blocked = sigismember(&now, SIGUSR1);
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
	usr1_blocked = bus_blocked = -1;
	ASSERT_TRUE(read_raises_sigbus(r));
	ASSERT_EQ(usr1_blocked, 1);
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

TEST(bad_arguments)
{
	size_t pg = page_size();
	char *r = map_pages(4);
	struct libuffd_engine *e;
	struct libuffd_engine_source z = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	struct libuffd_engine_source cb = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK };
	struct libuffd_engine_opts o = { .prefetch_max = 3 * pg };
	ASSERT_ERR(libuffd_engine_create(r + 1, pg, &z, NULL, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create(r, pg + 1, &z, NULL, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create(r, pg, &cb, NULL, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create(r, pg, &z, &o, &e), -EINVAL);
	/* Reserved fields must be zero. */
	struct libuffd_engine_opts future = { .reserved = { 0, 1 } };
	ASSERT_ERR(libuffd_engine_create(r, pg, &z, &future, &e), -EINVAL);
	struct libuffd_engine_source zf = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO, .reserved = { 1 } };
	ASSERT_ERR(libuffd_engine_create(r, pg, &zf, NULL, &e), -EINVAL);
	/* Two in-thread engines cannot serve the same pages. */
	struct libuffd_engine *a = serve(r, 2 * pg, &z, IT, 1);
	struct libuffd_engine_opts it = { .mode = IT };
	ASSERT_ERR(libuffd_engine_create(r + pg, pg, &z, &it, &e), -EBUSY);
	ASSERT_OK(libuffd_engine_destroy(a));
}

/* ---- Events ------------------------------------------------------------- */

BOTH_MODES(remove_event_makes_range_zero)
{
	size_t n = 64, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 8, mode, 0, &r, &src);
	ASSERT_EQ(first_bad_page(r, 0, 16, 8), -1); /* resolve part of it */
	r[20 * pg] = 1;
	/* Resolved and unresolved pages alike read zero after removal. */
	ASSERT_SYS(madvise(r + 16 * pg, 16 * pg, MADV_DONTNEED));
	for (size_t i = 0; i < n; i++) {
		if (i >= 16 && i < 32)
			ASSERT_TRUE(page_is_zero(r + i * pg));
		else
			ASSERT_EQ(first_bad_page(r + i * pg, i, 1, 8), -1);
	}
	/* Written again, removed again: zero again. */
	r[18 * pg] = 5;
	ASSERT_EQ(r[18 * pg], 5);
	ASSERT_SYS(madvise(r + 18 * pg, pg, MADV_DONTNEED));
	ASSERT_TRUE(page_is_zero(r + 18 * pg));
	ASSERT_GE(stats(e).events, 2);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(mremap_whole_region_is_followed)
{
	size_t n = 64, pg = page_size();
	void *src = make_source(n, 9);
	char *r = map_pages(n);
	char *hole = map_pages(n); /* a place to move to */
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = n * pg };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	ASSERT_EQ(first_bad_page(r, 0, 4, 9), -1);
	char *m = mremap(r, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_TRUE(m == hole);
	size_t len;
	ASSERT_TRUE(libuffd_engine_region(e, &len) == m);
	ASSERT_EQ(first_bad_page(m, 0, n, 9), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Pages that leave the region but stay registered (moved out by a
 * partial mremap, or a tail the region grew by) have no source: both
 * modes serve them as zero, and the region itself keeps being served. */
BOTH_MODES(mremap_pages_outside_the_region_read_zero)
{
	size_t n = 64, pg = page_size();
	void *src = make_source(n, 12);
	char *r = map_pages(n + 16); /* room to grow */
	ASSERT_SYS(munmap(r + n * pg, 16 * pg));
	char *hole = map_pages(8);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = n * pg };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	ASSERT_EQ(first_bad_page(r, 0, 2, 12), -1);
	/* The last 8 pages, never touched, move out. */
	char *m = mremap(r + (n - 8) * pg, 8 * pg, 8 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_TRUE(m == hole);
	ASSERT_TRUE(page_is_zero(m + 3 * pg));
	m[5 * pg] = 7; /* a write fault too */
	ASSERT_EQ(m[5 * pg], 7);
	ASSERT_EQ(first_bad_page(r + 20 * pg, 20, 1, 12), -1);
	/* Put them back, then grow the mapping in place past the region. */
	ASSERT_TRUE(mremap(m, 8 * pg, 8 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, r + (n - 8) * pg) ==
		    r + (n - 8) * pg);
	ASSERT_TRUE(mremap(r, n * pg, (n + 16) * pg, 0) == r);
	ASSERT_TRUE(page_is_zero(r + (n + 4) * pg));
	r[(n + 9) * pg] = 9;
	ASSERT_EQ(r[(n + 9) * pg], 9);
	ASSERT_EQ(first_bad_page(r + 30 * pg, 30, 1, 12), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(munmap_and_remap_while_served)
{
	size_t n = 64, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 10, mode, 0, &r, &src);
	ASSERT_EQ(first_bad_page(r, 0, 2, 10), -1);
	/* The unmap event must be read, or munmap would wait for ever. */
	ASSERT_SYS(munmap(r + 32 * pg, 32 * pg));
	ASSERT_EQ(first_bad_page(r + 8 * pg, 8, 1, 10), -1);
	/* Fresh memory in the hole is not registered: plain zero pages. */
	char *again = mmap(r + 32 * pg, 32 * pg, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_TRUE(again == r + 32 * pg);
	ASSERT_TRUE(page_is_zero(again + pg));
	ASSERT_EQ(first_bad_page(r + 20 * pg, 20, 1, 10), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

struct remover {
	char *r;
	size_t from, n;
	int stop;        /* __atomic */
	size_t progress; /* __atomic: pages the faulting side has checked */
};

static void *remove_pages(void *arg)
{
	struct remover *m = arg;
	size_t pg = page_size(), seen = (size_t)-1;
	/* One removal per step of the faulting side: back to back, an event
	 * is always pending and the faults progress only by luck of timing
	 * (7 to 31 s; paced by the clock instead, a slow build such as TSan
	 * still lost the race now and then).  Events still arrive all along. */
	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		size_t now = __atomic_load_n(&m->progress, __ATOMIC_ACQUIRE);
		if (now == seen) {
			usleep(20);
			continue;
		}
		seen = now;
		if (madvise(m->r + m->from * pg, m->n * pg, MADV_DONTNEED) < 0)
			return (void *)1;
	}
	return NULL;
}

/* Faults and resolutions while remove events keep arriving: copies fail
 * with EAGAIN until the events are read; one handler thread must read
 * them itself or everybody waits for ever. */
BOTH_MODES(faults_while_events_pending)
{
	size_t n = 4096, pg = page_size(), upper = n * 3 / 4;
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 16, mode, 0, &r, &src);
	struct remover m = { r, upper, n - upper, 0, 0 };
	pthread_t th;
	ASSERT_EQ(pthread_create(&th, NULL, remove_pages, &m), 0);
	/* Random pages (one-page resolutions), then a sequential scan whose
	 * windows run into the part being removed. */
	for (size_t k = 0; k < 1024; k++) {
		size_t i = (k * 2654435761u) % upper;
		ASSERT_EQ(first_bad_page(r + i * pg, i, 1, 16), -1);
		__atomic_add_fetch(&m.progress, 1, __ATOMIC_RELEASE);
	}
	for (size_t i = 0; i < upper; i += 16) {
		ASSERT_EQ(first_bad_page(r + i * pg, i, 16, 16), -1);
		__atomic_add_fetch(&m.progress, 1, __ATOMIC_RELEASE);
	}
	ASSERT_SYS(madvise(r, upper * pg, MADV_DONTNEED));
	for (size_t i = 0; i < upper; i++)
		ASSERT_TRUE(page_is_zero(r + i * pg));
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
	void *ret;
	ASSERT_EQ(pthread_join(th, &ret), 0);
	ASSERT_TRUE(ret == NULL);
	for (size_t i = upper; i < n; i++)
		ASSERT_TRUE(page_is_zero(r + i * pg));
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Shutdown and fork ----------------------------------------------------- */

struct toucher {
	char *r;
	size_t n, first;
	int ok;
};

static void *touch_pages(void *arg)
{
	struct toucher *t = arg;
	size_t pg = page_size();
	t->ok = 1;
	for (size_t i = t->first; i < t->n; i += 3) {
		uint64_t v = *(volatile uint64_t *)(t->r + i * pg);
		/* Served data, or zero after the engine went away. */
		if (v != pattern(i, 0, 11) && v != 0)
			t->ok = 0;
	}
	return NULL;
}

BOTH_MODES(destroy_with_faults_pending)
{
	size_t n = 8192, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 11, mode, pg, &r, &src);
	pthread_t th[3];
	struct toucher t[3];
	for (int i = 0; i < 3; i++) {
		t[i] = (struct toucher){ r, n, (size_t)i, 0 };
		ASSERT_EQ(pthread_create(&th[i], NULL, touch_pages, &t[i]), 0);
	}
	while (stats(e).pages < 64) /* faults are being served */
		sched_yield();
	ASSERT_OK(libuffd_engine_destroy(e)); /* the harness timeout catches a hang */
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(pthread_join(th[i], NULL), 0);
		ASSERT_TRUE(t[i].ok);
	}
}

BOTH_MODES(fork_child_sees_resolved_pages_and_zeros)
{
	size_t n = 64, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 12, mode, pg, &r, &src);
	ASSERT_EQ(first_bad_page(r, 0, 8, 12), -1); /* pages 0..7 resolved */
	pid_t pid = fork();
	ASSERT_SYS(pid);
	if (pid == 0) {
		/* No UFFD_FEATURE_EVENT_FORK: the child's copy is not
		 * registered; what was not resolved is plain zero memory. */
		int ok = first_bad_page(r, 0, 8, 12) == -1 && page_is_zero(r + 30 * pg);
		_exit(ok ? 0 : 1);
	}
	int status;
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* The parent is still served. */
	ASSERT_EQ(first_bad_page(r + 30 * pg, 30, 1, 12), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Kernel-mode access: EFAULT, populate, retry ------------------------------ */

struct read_args {
	int fd;
	void *buf;
	size_t len;
};

static long do_pread(void *arg)
{
	struct read_args *a = arg;
	ssize_t n = pread(a->fd, a->buf, a->len, 0);
	return n < 0 ? -errno : n;
}

BOTH_MODES(read_into_unpopulated_region_efault_and_helpers)
{
	size_t n = 32, pg = page_size();
	void *data = make_source(n, 13);
	char path[] = "/tmp/uffd-engine-XXXXXX";
	int fd = ASSERT_SYS(mkstemp(path));
	unlink(path);
	ASSERT_EQ(write(fd, data, n * pg), (ssize_t)(n * pg));
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };

	/* On its own: the kernel-mode copy_to_user fails at once. */
	char *r = map_pages(n);
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	struct read_args a = { fd, r, n * pg };
	ASSERT_ERR(do_pread(&a), -EFAULT);
	/* With the helper: resident first, then the syscall succeeds. */
	ASSERT_OK(libuffd_engine_populate(e, r, n * pg));
	ASSERT_EQ(do_pread(&a), (long)(n * pg));
	ASSERT_EQ(first_bad_page(r, 0, n, 13), -1);
	ASSERT_OK(libuffd_engine_destroy(e));

	/* The retry wrapper, on a fresh region. */
	char *r2 = map_pages(n);
	e = serve(r2, n * pg, &s, mode, 1);
	struct read_args b = { fd, r2, n * pg };
	ASSERT_EQ(libuffd_engine_retry_efault(e, r2, n * pg, do_pread, &b), (long)(n * pg));
	ASSERT_EQ(first_bad_page(r2, 0, n, 13), -1);
	ASSERT_EQ(stats_when(e, n).pages, n);
	/* Outside the region an EFAULT is returned as it is. */
	struct read_args c = { fd, (void *)8, pg };
	ASSERT_ERR(libuffd_engine_retry_efault(e, (void *)8, pg, do_pread, &c), -EFAULT);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

BOTH_MODES(populate_keeps_present_pages)
{
	size_t n = 64, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 14, mode, pg, &r, &src);
	r[5 * pg] = 'x'; /* resolved and changed: populate must keep it */
	ASSERT_OK(libuffd_engine_populate(e, r + 3 * pg, 10 * pg + 1));
	unsigned char vec[64];
	ASSERT_SYS(mincore(r, n * pg, vec));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(vec[i] & 1, i >= 3 && i <= 13);
	ASSERT_EQ(r[5 * pg], 'x');
	ASSERT_EQ(first_bad_page(r + 13 * pg, 13, 1, 14), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Stress: the scenarios of the kernel's uffd-stress ---------------------------
 * Every page starts with a mutex and a counter (uffd-stress's
 * area_count); locking threads lock a page, check the counter against
 * count_verify and increment it, sequentially or at random, each on its
 * share or all racing on the same pages, while background threads
 * populate their share page by page, racing the faults.  Each bounce
 * serves the other area from the one just filled; at the end of a bounce
 * every page is verified: counter, page number and pattern. */

#define BOUNCE_RANDOM 1
#define BOUNCE_RACING 2

struct stress_page {
	pthread_mutex_t lock;
	uint64_t count;
	uint64_t nr;
};

static struct {
	char *src, *dst;
	size_t npages, per_thread, ops;
	uint64_t *count_verify;
	int bounce, nthreads;
	volatile int failed;
	uint64_t seed;
} st;

static struct stress_page *spage(char *area, size_t nr)
{
	return (struct stress_page *)(area + nr * page_size());
}

static void *locking_thread(void *arg)
{
	size_t cpu = (size_t)arg, nr = 0;

	if (!(st.bounce & BOUNCE_RANDOM) && !(st.bounce & BOUNCE_RACING))
		nr = cpu * st.per_thread;
	for (size_t k = 0; k < st.ops && !st.failed; k++) {
		if (st.bounce & BOUNCE_RANDOM) {
			if (getrandom(&nr, sizeof(nr), 0) != sizeof(nr))
				st.failed = 1;
		} else {
			nr++;
		}
		nr %= st.npages;
		struct stress_page *p = spage(st.dst, nr);
		pthread_mutex_lock(&p->lock);
		if (p->count != st.count_verify[nr] || p->nr != nr)
			st.failed = 1;
		p->count = ++st.count_verify[nr];
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

struct bg {
	struct libuffd_engine *e;
	size_t cpu;
};

static void *background_thread(void *arg)
{
	struct bg *b = arg;
	size_t pg = page_size();
	for (size_t nr = b->cpu * st.per_thread; nr < (b->cpu + 1) * st.per_thread; nr++)
		if (libuffd_engine_populate(b->e, st.dst + nr * pg, pg) < 0)
			st.failed = 1;
	return NULL;
}

static int stress_page_ok(char *area, size_t nr)
{
	const uint64_t *q = (const uint64_t *)(area + nr * page_size());
	for (size_t w = sizeof(struct stress_page) / 8 + 1; w < page_size() / 8; w++)
		if (q[w] != pattern(nr, w, st.seed))
			return 0;
	return spage(area, nr)->nr == nr && spage(area, nr)->count == st.count_verify[nr];
}

static void stress(enum libuffd_engine_mode mode)
{
	size_t pg = page_size();
	const char *env = getenv("UFFD_ENGINE_STRESS_PAGES");
	st.nthreads = 4;
	st.npages = env ? strtoul(env, NULL, 0) : UNDER_ASAN ? 4096 : 16384;
	st.npages -= st.npages % (size_t)st.nthreads;
	ASSERT_GT(st.npages, 0);
	st.per_thread = st.npages / (size_t)st.nthreads;
	st.ops = st.npages * 4;
	st.seed = 15;
	st.src = make_source(st.npages, st.seed);
	st.dst = map_pages(st.npages);
	st.count_verify = calloc(st.npages, sizeof(uint64_t));
	ASSERT_TRUE(st.count_verify);
	for (size_t nr = 0; nr < st.npages; nr++) {
		struct stress_page *p = spage(st.src, nr);
		pthread_mutex_init(&p->lock, NULL);
		p->count = st.count_verify[nr] = nr % 7;
		p->nr = nr;
	}
	/* Counted down as uffd-stress does: every combination of random or
	 * sequential, racing or each on its share, four times. */
	for (int bounces = 16; bounces--;) {
		st.bounce = bounces & (BOUNCE_RANDOM | BOUNCE_RACING);
		struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY,
						   .buf = st.src, .size = st.npages * pg };
		struct libuffd_engine *e = serve(st.dst, st.npages * pg, &s, mode, 2);
		pthread_t lt[4], bt[4];
		struct bg b[4];
		for (int c = 0; c < st.nthreads; c++) {
			b[c] = (struct bg){ e, (size_t)c };
			ASSERT_EQ(pthread_create(&lt[c], NULL, locking_thread, (void *)(size_t)c), 0);
			ASSERT_EQ(pthread_create(&bt[c], NULL, background_thread, &b[c]), 0);
		}
		for (int c = 0; c < st.nthreads; c++) {
			ASSERT_EQ(pthread_join(bt[c], NULL), 0);
			ASSERT_EQ(pthread_join(lt[c], NULL), 0);
		}
		ASSERT_TRUE(!st.failed);
		struct libuffd_engine_stats es = stats_when(e, st.npages);
		ASSERT_EQ(es.pages, st.npages); /* each page resolved exactly once */
		ASSERT_OK(libuffd_engine_destroy(e));
		for (size_t nr = 0; nr < st.npages; nr++)
			if (!stress_page_ok(st.dst, nr))
				FAIL("bounce %d: page %zu corrupt (count %llu want %llu)", bounces, nr,
				     (unsigned long long)spage(st.dst, nr)->count,
				     (unsigned long long)st.count_verify[nr]);
		char *t = st.src;
		st.src = st.dst;
		st.dst = t;
		ASSERT_SYS(madvise(st.dst, st.npages * pg, MADV_DONTNEED));
	}
	free(st.count_verify);
}

TEST_TIMEOUT(stress_handler_threads, 120)
{
	stress(HT);
}

TEST_TIMEOUT(stress_in_thread, 120)
{
	stress(IT);
}
