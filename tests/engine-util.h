/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the engine's tests (engine-util.c). */
#ifndef UFFDGUARD_TEST_ENGINE_UTIL_H
#define UFFDGUARD_TEST_ENGINE_UTIL_H

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>

#include "libuffd-engine.h"

#define HT LIBUFFD_ENGINE_HANDLER_THREADS
#define IT LIBUFFD_ENGINE_IN_THREAD

/* ThreadSanitizer defers a signal sent with kill(2) or raise(3) and runs
 * its handler with every signal blocked: a fault of that handler in an
 * in-thread region finds SIGBUS blocked, and the kernel kills. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif
#define TSAN_DEFERS_SIGNALS \
	"ThreadSanitizer runs the handler of a sent signal with SIGBUS blocked"

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
uint64_t pattern(size_t nr, size_t w, uint64_t seed);
/* npages of pattern `seed`. */
void *make_source(size_t npages, uint64_t seed);
/* The first page of [p, p + npages) that does not hold its pattern, or -1. */
long first_bad_page(const void *p, size_t first_nr, size_t npages, uint64_t seed);
int page_is_zero(const void *p);

/* Why creating an engine in this mode failed with -EOPNOTSUPP: the
 * feature the kernel lacks, and the Linux version that brought it. */
const char *engine_unsupported_reason(enum libuffd_engine_mode mode);

/* An engine on region (skips the case, saying why, when the kernel lacks
 * a feature the mode needs). */
struct libuffd_engine *serve_with(void *region, size_t len,
				  const struct libuffd_engine_source *src,
				  const struct libuffd_engine_opts *o);
struct libuffd_engine *serve(void *region, size_t len, const struct libuffd_engine_source *src,
			     enum libuffd_engine_mode mode, unsigned int threads);
/* n fresh pages served from a memory source of pattern `seed`, with
 * windows up to prefetch_max (0: the default). */
struct libuffd_engine *serve_memory(size_t n, uint64_t seed, enum libuffd_engine_mode mode,
				    size_t prefetch_max, char **region, void **src);

/* The counters once the engine's threads are done: at least min_pages
 * resolved, and unchanged for 20 ms. */
struct libuffd_engine_stats stats_when(struct libuffd_engine *e, uint64_t min_pages);
struct libuffd_engine_stats stats(struct libuffd_engine *e);

/* A CALLBACK source that always fails with -EIO. */
int fill_fails(void *ctx, uint64_t offset, void *dst, size_t len);
/* One that always fails with the error *(int *)ctx. */
int fill_error(void *ctx, uint64_t offset, void *dst, size_t len);

/* A SIGBUS handler that records si_addr, si_code and si_errno and jumps
 * to bus_jump; read_raises_sigbus() sets the jump. */
extern sigjmp_buf bus_jump;
extern void *volatile bus_addr;
extern volatile int bus_code, bus_errno;
void on_test_sigbus(int sig, siginfo_t *si, void *uc);
void install_test_sigbus(void);
/* Read *p; returns 1 if that raised SIGBUS (caught by on_test_sigbus). */
int read_raises_sigbus(volatile char *p);

void assert_killed_by_sigbus(int status);

/* Run fn(arg) in a forked child and return its wait status; a child
 * still running after secs seconds (a deadlock) is killed and fails the
 * case, saying so, instead of leaving it to the harness's timeout. */
int child_status_within(int (*fn)(void *), void *arg, int secs);
/* The child exited with 0 (else say how it ended). */
void assert_exited_zero(int status);

/* Faults waiting on this process's userfaultfd, read by a handler or not
 * (the "total" of /proc/self/fdinfo; the first descriptor found), or -1. */
int faults_waiting(void);
/* Wait, up to 20 s, until at least n faults wait. */
void wait_for_faults(int n);

#endif
