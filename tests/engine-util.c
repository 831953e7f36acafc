// SPDX-License-Identifier: GPL-2.0-or-later
/* Helpers shared by the engine's tests: patterned sources, serving a
 * region, waiting for the counters, and catching SIGBUS. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"

/* The word w of page nr of a source with this seed. */
uint64_t pattern(size_t nr, size_t w, uint64_t seed)
{
	return (nr * 0x9E3779B97F4A7C15ull) ^ (w * 0xBF58476D1CE4E5B9ull) ^ seed;
}

void *make_source(size_t npages, uint64_t seed)
{
	uint64_t *s = map_pages(npages);
	/* Before Linux 6.7, anonymous mappings are not aligned to huge pages
	 * and one mapped next to a region merges with it: a huge page the
	 * writes below fault in could cover the region's first pages, present
	 * (as zeros) before any engine serves them.  EINVAL: a kernel
	 * without transparent huge pages, nothing to keep apart. */
	if (madvise(s, npages * page_size(), MADV_NOHUGEPAGE) < 0 && errno != EINVAL)
		FAIL("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
	size_t words = page_size() / 8;
	for (size_t nr = 0; nr < npages; nr++)
		for (size_t w = 0; w < words; w++)
			s[nr * words + w] = pattern(nr, w, seed);
	return s;
}

/* The first page of [p, p + npages) that does not hold its pattern, or -1. */
long first_bad_page(const void *p, size_t first_nr, size_t npages, uint64_t seed)
{
	const uint64_t *q = p;
	size_t words = page_size() / 8;
	for (size_t i = 0; i < npages; i++)
		for (size_t w = 0; w < words; w++)
			if (q[i * words + w] != pattern(first_nr + i, w, seed))
				return (long)(first_nr + i);
	return -1;
}

int page_is_zero(const void *p)
{
	const uint64_t *q = p;
	for (size_t w = 0; w < page_size() / 8; w++)
		if (q[w])
			return 0;
	return 1;
}

/* The features an engine needs, and the Linux version that brought each. */
static const struct {
	uint64_t bit;
	const char *name, *since;
	int in_thread_only;
} needed[] = {
	{ LIBUFFD_FEATURE_EVENT_REMAP, "UFFD_FEATURE_EVENT_REMAP", "4.11", 0 },
	{ LIBUFFD_FEATURE_EVENT_REMOVE, "UFFD_FEATURE_EVENT_REMOVE", "4.11", 0 },
	{ LIBUFFD_FEATURE_EVENT_UNMAP, "UFFD_FEATURE_EVENT_UNMAP", "4.11", 0 },
	{ LIBUFFD_FEATURE_SIGBUS, "UFFD_FEATURE_SIGBUS", "4.14", 1 },
};

const char *engine_unsupported_reason(enum libuffd_engine_mode mode)
{
	static char why[200];
	struct libuffd_api api;

	if (libuffd_kernel_api(&api) == 0)
		for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
			if (!(api.features & needed[i].bit) &&
			    (!needed[i].in_thread_only || mode == LIBUFFD_ENGINE_IN_THREAD)) {
				snprintf(why, sizeof(why), "the kernel lacks %s (Linux %s)",
					 needed[i].name, needed[i].since);
				return why;
			}
	return "the kernel lacks a userfaultfd feature or ioctl the engine needs";
}

struct libuffd_engine *serve_with(void *region, size_t len,
					 const struct libuffd_engine_source *src,
					 const struct libuffd_engine_opts *o)
{
	struct libuffd_engine *e;
	int r = libuffd_engine_create(region, len, src, o, &e);
	if (r == -EOPNOTSUPP)
		SKIP("%s", engine_unsupported_reason(o->mode));
	ASSERT_OK(r);
	return e;
}

struct libuffd_engine *serve(void *region, size_t len,
				    const struct libuffd_engine_source *src,
				    enum libuffd_engine_mode mode, unsigned int threads)
{
	struct libuffd_engine_opts o = { .mode = mode, .threads = threads };
	return serve_with(region, len, src, &o);
}

/* n fresh pages served from a memory source of pattern `seed`, with
 * windows up to prefetch_max (0: the default). */
struct libuffd_engine *serve_memory(size_t n, uint64_t seed, enum libuffd_engine_mode mode,
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
struct libuffd_engine_stats stats_when(struct libuffd_engine *e, uint64_t min_pages)
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

struct libuffd_engine_stats stats(struct libuffd_engine *e)
{
	return stats_when(e, 0);
}

int fill_fails(void *ctx, uint64_t offset, void *dst, size_t len)
{
	return -EIO;
}

int fill_error(void *ctx, uint64_t offset, void *dst, size_t len)
{
	return *(const int *)ctx;
}

/* A SIGBUS handler installed before the engine: the in-thread mode
 * must chain to it for what it does not resolve. */
sigjmp_buf bus_jump;
void *volatile bus_addr;
volatile int bus_code, bus_errno;

void on_test_sigbus(int sig, siginfo_t *si, void *uc)
{
	bus_addr = si->si_addr;
	bus_code = si->si_code;
	bus_errno = si->si_errno;
	siglongjmp(bus_jump, 1);
}

void install_test_sigbus(void)
{
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_test_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ASSERT_SYS(sigaction(SIGBUS, &sa, NULL));
}

/* Read *p; returns 1 if that raised SIGBUS (caught by on_test_sigbus). */
int read_raises_sigbus(volatile char *p)
{
	bus_addr = NULL;
	if (sigsetjmp(bus_jump, 1))
		return 1;
	(void)*p;
	return 0;
}

/* Faults waiting on the engine's descriptor (read or not), from
 * /proc/self/fdinfo: userfaultfd's "total". */
int faults_waiting(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int total = -1;

	ASSERT_TRUE(d);
	while ((de = readdir(d)) && total < 0) {
		char path[300], link[64], info[512];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		if (!strstr(link, "userfaultfd"))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(info, sizeof(info), f))
			if (sscanf(info, "total: %d", &total) == 1)
				break;
		fclose(f);
	}
	closedir(d);
	return total;
}

void wait_for_faults(int n)
{
	double deadline = now_ms() + 20000;

	while (faults_waiting() < n && now_ms() < deadline)
		usleep(1000);
	ASSERT_GE(faults_waiting(), n);
}

void assert_killed_by_sigbus(int status)
{
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(WTERMSIG(status), SIGBUS);
}

int child_status_within(int (*fn)(void *), void *arg, int secs)
{
	double deadline = now_ms() + secs * 1000.0;
	int status;
	pid_t pid = ASSERT_SYS(fork());

	if (pid == 0)
		_exit(fn(arg));
	while (ASSERT_SYS(waitpid(pid, &status, WNOHANG)) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			FAIL("the child still ran after %d s: deadlocked", secs);
		}
		usleep(1000);
	}
	return status;
}

void assert_exited_zero(int status)
{
	if (WIFSIGNALED(status))
		FAIL("the child was killed by signal %d (%s)", WTERMSIG(status),
		     strsignal(WTERMSIG(status)));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
}
