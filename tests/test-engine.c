// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fault-serving engine on the real kernel, in both modes: sources,
 * prefetch, events (remove, remap, unmap), shutdown, fork, the populate
 * helper (holes, signals) and the EFAULT retry.  SIGBUS:
 * test-engine-sigbus.c; the scenarios of the kernel's uffd-stress:
 * test-engine-stress.c.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"

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

/* An unlinked file in /tmp holding the first len bytes of data. */
static int file_holding(const void *data, size_t len)
{
	char path[] = "/tmp/uffd-engine-XXXXXX";
	int fd = ASSERT_SYS(mkstemp(path));
	unlink(path);
	ASSERT_EQ(write(fd, data, len), (ssize_t)len);
	return fd;
}

BOTH_MODES(file_source_through_page_cache_tail_is_zero)
{
	size_t n = 64, pg = page_size();
	void *src = make_source(n, 4);
	size_t flen = 10 * pg + 100; /* ends inside page 10 */
	int fd = file_holding(src, flen);
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

/* The file source reads its file into scratch buffers of up to 256 KiB:
 * faults in scattered order over 4 MiB, from an offset into the file, to
 * a tail that ends inside a page, read every byte right. */
BOTH_MODES(file_source_scattered_from_an_offset)
{
	size_t pg = page_size(), n = (4u << 20) / pg;
	size_t skip = 3, flen = (n - 5) * pg + 17;   /* from page 3; ends in page n-5 */
	char *src = make_source(n + skip, 12);
	int fd = file_holding(src, skip * pg + flen);
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd,
					   .offset = skip * pg };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 2);
	/* A stride of 67 pages (prime to n): every page once, never "the next". */
	for (size_t k = 0, i = 0; k < n; k++, i = (i + 67) % n)
		ASSERT_EQ(*(volatile char *)(r + i * pg + pg - 1), i * pg + pg - 1 < flen ?
			  src[skip * pg + i * pg + pg - 1] : 0);
	ASSERT_EQ(memcmp(r, src + skip * pg, flen), 0);
	for (size_t i = flen; i < n * pg; i++)
		ASSERT_EQ(r[i], 0);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

/* A file that shrinks while it is served reads as zero past its new end,
 * as past the end it had. */
BOTH_MODES(file_source_reads_zeros_where_the_file_shrank)
{
	size_t n = 16, pg = page_size();
	char *src = make_source(n, 6);
	int fd = file_holding(src, n * pg);
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	ASSERT_EQ(r[0], src[0]); /* served before the file shrank */
	ASSERT_SYS(ftruncate(fd, 2 * pg + 10));
	for (size_t i = n - 1; i > 0; i--) /* backwards: no stream runs ahead */
		(void)*(volatile char *)(r + i * pg);
	ASSERT_EQ(memcmp(r, src, 2 * pg + 10), 0);
	for (size_t i = 2 * pg + 10; i < n * pg; i++)
		ASSERT_EQ(r[i], 0);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

/* Once a file's reads have been fast for a while, the engine copies short
 * windows, and single pages where that has cost less, through its mapping
 * without asking mincore(2) (see via_mapping()).  Faults every 7th page
 * of the first 1 MiB make it so; then the second half of the file leaves
 * the page cache (4 MiB from its start: no folio of it is mapped, fadvise
 * drops them all), and its pages, read inside the copies now, still
 * arrive right. */
BOTH_MODES(file_source_reads_pages_evicted_after_fast_reads)
{
	size_t pg = page_size(), n = (8u << 20) / pg, warm = (1u << 20) / pg;
	char *src = make_source(n, 13);
	int fd = file_holding(src, n * pg);
	ASSERT_SYS(fsync(fd)); /* clean pages: fadvise drops them at once */
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	for (size_t i = 0; i < warm; i += 7)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg), pattern(i, 0, 13));
	ASSERT_OK(posix_fadvise(fd, (off_t)(n / 2 * pg), (off_t)(n / 2 * pg),
				POSIX_FADV_DONTNEED));
	unsigned char *vec = malloc(n);
	char *m = mmap(NULL, n * pg, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_TRUE(vec && m != MAP_FAILED);
	ASSERT_SYS(mincore(m, n * pg, vec));
	size_t left = 0;
	for (size_t i = n / 2; i < n; i++)
		left += vec[i] & 1;
	munmap(m, n * pg);
	free(vec);
	if (left) { /* tmpfs, or an overlay on it, as in the VM guests */
		ASSERT_OK(libuffd_engine_destroy(e));
		SKIP("%zu of the file's pages stayed in the page cache: /tmp keeps its files "
		     "in memory here", left);
	}
	for (size_t i = n / 2; i < n; i += 7)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg + 8), pattern(i, 1, 13));
	ASSERT_EQ(first_bad_page(r, 0, n, 13), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

/* The same, where the file shrinks instead: a page past its new end,
 * copied through the mapping, fails the copy (EFAULT), and reads as zero.
 * The first faults stay in the first quarter: reads slowed by a busy
 * machine widen a fault to 128 KiB, and pages served before the file
 * shrank keep what they read. */
BOTH_MODES(file_source_reads_zeros_where_the_file_shrank_after_fast_reads)
{
	size_t n = 512, pg = page_size(), end = n / 2 * pg + 10;
	char *src = make_source(n, 14);
	int fd = file_holding(src, n * pg);
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	for (size_t i = 0; i < n / 4; i += 3)
		ASSERT_EQ(*(volatile uint64_t *)(r + i * pg), pattern(i, 0, 14));
	ASSERT_SYS(ftruncate(fd, (off_t)end));
	for (size_t i = n - 1; i > n / 2 - 4; i -= 7) /* backwards: no stream */
		(void)*(volatile char *)(r + i * pg);
	for (size_t i = 0; i < n; i++)
		(void)*(volatile char *)(r + i * pg);
	ASSERT_EQ(memcmp(r, src, end), 0);
	for (size_t i = end; i < n * pg; i++)
		ASSERT_EQ(r[i], 0);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

/* A file the kernel will not map (a sysfs attribute: ENODEV) is read with
 * pread(2): its bytes, then zeros where the read ends before its size. */
BOTH_MODES(file_source_reads_a_file_it_cannot_map)
{
	static const char *const paths[] = { "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
					     "/sys/kernel/profiling" };
	size_t pg = page_size();
	int fd = -1;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && fd < 0; i++)
		fd = open(paths[i], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP("no sysfs attribute to read here (%s)", strerror(errno));
	void *m = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		munmap(m, pg);
		SKIP("this kernel maps the sysfs attribute");
	}
	char want[64];
	ssize_t len = ASSERT_SYS(pread(fd, want, sizeof(want), 0));
	ASSERT_TRUE(len > 0);
	char *r = map_pages(2);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = fd };
	struct libuffd_engine *e = serve(r, 2 * pg, &s, mode, 1);
	ASSERT_EQ(memcmp(r, want, (size_t)len), 0);
	for (size_t i = (size_t)len; i < 2 * pg; i++)
		ASSERT_EQ(r[i], 0);
	ASSERT_OK(libuffd_engine_destroy(e));
	close(fd);
}

/* What the engine cannot read a file from is refused at creation, not at
 * the first fault: a pipe (no size), a descriptor opened for writing only. */
TEST(file_source_refuses_what_it_cannot_read)
{
	size_t pg = page_size();
	char *r = map_pages(4);
	struct libuffd_engine *e;
	int p[2];
	ASSERT_SYS(pipe(p));
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_FILE, .fd = p[0] };
	ASSERT_ERR(libuffd_engine_create(r, 4 * pg, &s, NULL, &e), -EINVAL);
	close(p[0]);
	close(p[1]);
	char path[] = "/tmp/uffd-engine-XXXXXX";
	int fd = ASSERT_SYS(mkstemp(path));
	ASSERT_EQ(write(fd, "x", 1), 1);
	s.fd = ASSERT_SYS(open(path, O_WRONLY | O_CLOEXEC));
	unlink(path);
	ASSERT_ERR(libuffd_engine_create(r, 4 * pg, &s, NULL, &e), -EBADF);
	close(s.fd);
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

/* A callback source that waits 1 ms per read, as a cold disk would. */
static int fill_slow(void *ctx, uint64_t offset, void *dst, size_t len)
{
	struct timespec ms = { 0, 1000000 };
	while (nanosleep(&ms, &ms) < 0) /* async-signal-safe */
		;
	memcpy(dst, (const char *)ctx + offset, len);
	return 0;
}

/* Pages of [p, p + n) present now. */
static size_t present(char *p, size_t n)
{
	unsigned char vec[64];
	size_t k = 0;
	ASSERT_LE(n, sizeof(vec));
	ASSERT_SYS(mincore(p, n * page_size(), vec));
	for (size_t i = 0; i < n; i++)
		k += vec[i] & 1;
	return k;
}

BOTH_MODES(slow_source_faults_around_random_faults)
{
	size_t n = 8192, pg = page_size(), around = 32; /* ENGINE_AROUND_ORDER */
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_slow, .ctx = make_source(n, 13) };
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	/* The first two random faults read one page each, and find the
	 * source slow twice in a row. */
	ASSERT_EQ(*(volatile uint64_t *)(r + 100 * pg), pattern(100, 0, 13));
	ASSERT_EQ(present(r + 100 * pg, 64), 1);
	ASSERT_EQ(*(volatile uint64_t *)(r + 3000 * pg), pattern(3000, 0, 13));
	ASSERT_EQ(present(r + 3000 * pg, 64), 1);
	/* The next one, far away, reads around: the window from the fault. */
	ASSERT_EQ(*(volatile uint64_t *)(r + 1000 * pg), pattern(1000, 0, 13));
	ASSERT_EQ(present(r + 1000 * pg, 64), around);
	ASSERT_EQ(first_bad_page(r + 1000 * pg, 1000, around, 13), -1);
	ASSERT_EQ(present(r + (1000 - 32) * pg, 32), 0); /* nothing before it */
	/* How fast a read must be for the window to shrink again depends on
	 * the machine (and on a sanitizer): bench-engine's hot rows show it. */
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* A callback source that computes for 200 us of CPU time per read (five
 * times the engine's 40 us), as a decompressor does: slow, but waiting
 * for nothing.  Short, so that a loaded machine seldom preempts it. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* async-signal-safe */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fill_busy(void *ctx, uint64_t offset, void *dst, size_t len)
{
	uint64_t until = thread_cpu_ns() + 200000;
	while (thread_cpu_ns() < until)
		;
	memcpy(dst, (const char *)ctx + offset, len);
	return 0;
}

/* Reading around would only make such a source compute pages nobody
 * touches: after two slow reads, the third fault still resolves one page.
 * A read preempted for long enough waits as I/O does and may open the
 * window (on a machine kept busy, often): so it is tried afresh up to 50
 * times, and must stay shut once. */
BOTH_MODES(busy_source_keeps_single_pages)
{
	size_t n = 8192, pg = page_size();
	void *src = make_source(n, 19);
	size_t window = 0;

	for (int attempt = 0; attempt < 50 && window != 1; attempt++) {
		char *r = map_pages(n);
		struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
						   .fill = fill_busy, .ctx = src };
		struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
		ASSERT_EQ(*(volatile uint64_t *)(r + 100 * pg), pattern(100, 0, 19));
		ASSERT_EQ(*(volatile uint64_t *)(r + 3000 * pg), pattern(3000, 0, 19));
		ASSERT_EQ(*(volatile uint64_t *)(r + 1000 * pg), pattern(1000, 0, 19));
		window = present(r + 1000 * pg, 64);
		ASSERT_OK(libuffd_engine_destroy(e));
		ASSERT_SYS(munmap(r, n * pg));
	}
	ASSERT_EQ(window, 1);
}

/* A source that is slow on its first read only, as when the thread that
 * reads it is preempted once. */
static int slow_reads_left; /* __atomic: read from the engine's threads */

static int fill_slow_first(void *ctx, uint64_t offset, void *dst, size_t len)
{
	if (__atomic_fetch_sub(&slow_reads_left, 1, __ATOMIC_RELAXED) > 0)
		return fill_slow(ctx, offset, dst, len);
	memcpy(dst, (const char *)ctx + offset, len);
	return 0;
}

BOTH_MODES(one_slow_read_alone_keeps_single_pages)
{
	size_t n = 8192, pg = page_size();
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_slow_first, .ctx = make_source(n, 17) };
	__atomic_store_n(&slow_reads_left, 1, __ATOMIC_RELAXED);
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 1);
	ASSERT_EQ(*(volatile uint64_t *)(r + 100 * pg), pattern(100, 0, 17));
	/* The window of the next fault is chosen before its read: whatever
	 * that read costs here, one slow read before it is not enough. */
	ASSERT_EQ(*(volatile uint64_t *)(r + 1000 * pg), pattern(1000, 0, 17));
	ASSERT_EQ(present(r + 1000 * pg, 64), 1);
	ASSERT_EQ(stats(e).pages, 2);
	ASSERT_OK(libuffd_engine_destroy(e));
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
	wait_for_faults(5);
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
	/* Ranges no mapping can have: one that wraps around the address
	 * space, one longer than it. */
	ASSERT_ERR(libuffd_engine_create(r, (size_t)0 - (uintptr_t)r + 4 * pg, &z, NULL, &e), -EINVAL);
	ASSERT_ERR(libuffd_engine_create(r, (size_t)1 << 62, &z, NULL, &e), -EINVAL);
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

/* A move is told by two events: the region's remap, then (Linux 6.18)
 * the unmap of the place it left.  Read by two handler threads, they must
 * apply in the order read: the unmap applied first would be taken for the
 * region's own, and every page not served yet would read zero.  Moved many
 * times, each time to a place of our own, reading a page not served yet. */
TEST_TIMEOUT(mremap_again_and_again_with_several_handler_threads, 120)
{
	size_t n = 512, pg = page_size();
	void *src = make_source(n, 14);
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src,
					   .size = n * pg };
	struct libuffd_engine *e = serve(r, n * pg, &s, LIBUFFD_ENGINE_HANDLER_THREADS, 4);
	for (size_t k = 0; k < n; k++) {
		char *to = map_pages(n);
		ASSERT_TRUE(mremap(r, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, to) == to);
		r = to;
		size_t p = k * 211 % n; /* 211 is prime to n: each page once */
		ASSERT_EQ(first_bad_page(r + p * pg, p, 1, 14), -1);
	}
	ASSERT_TRUE(libuffd_engine_region(e, NULL) == r);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Pages that leave the region but stay registered (moved out by a
 * partial mremap, or a tail the region grew by) have no source: both
 * modes serve them as zero, and the region itself keeps being served. */
BOTH_MODES(mremap_pages_outside_the_region_read_zero)
{
	size_t n = 64, pg = page_size();
	void *src = make_source(n, 12);
	/* Room to grow, kept reserved until then: the engine's and the
	 * sanitizers' mappings would take a hole left free. */
	char *r = map_pages(n + 16);
	ASSERT_SYS(mprotect(r + n * pg, 16 * pg, PROT_NONE));
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
	ASSERT_SYS(munmap(r + n * pg, 16 * pg));
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
	/* Fresh memory over half the region unmaps it first: the unmap
	 * event must be read, or mmap() would wait for ever.  (In one call:
	 * after a munmap() the engine's own thread may take the hole, while
	 * munmap() waits for it to read the event.) */
	char *again = mmap(r + 32 * pg, 32 * pg, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_TRUE(again == r + 32 * pg);
	ASSERT_GE(stats(e).events, 1);
	ASSERT_EQ(first_bad_page(r + 8 * pg, 8, 1, 10), -1);
	/* Not registered: plain zero pages. */
	ASSERT_TRUE(page_is_zero(again + pg));
	ASSERT_EQ(first_bad_page(r + 20 * pg, 20, 1, 10), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

struct remover {
	char *r;
	size_t from, n;
	int stop;        /* __atomic */
	size_t progress; /* __atomic: pages the faulting side has checked */
	size_t removed;  /* __atomic: the progress of the last removal, plus one */
};

/* Wait (up to 30 s) for *v, written by another thread, to be want. */
static void wait_for_value(const size_t *v, size_t want)
{
	double deadline = now_ms() + 30000;
	while (__atomic_load_n(v, __ATOMIC_ACQUIRE) != want) {
		ASSERT_LT(now_ms(), deadline);
		usleep(1000);
	}
}

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
		__atomic_store_n(&m->removed, now + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Pages [from, to) of r were removed: each reads as zero.  A failure
 * names the word, what it holds and what the source holds there. */
static void expect_removed(const char *r, size_t from, size_t to, uint64_t seed)
{
	size_t words = page_size() / 8;

	for (size_t i = from; i < to; i++) {
		const volatile uint64_t *q = (const volatile uint64_t *)(r + i * page_size());
		for (size_t w = 0; w < words; w++) {
			uint64_t v = q[w];
			if (v)
				FAIL("removed page %zu, word %zu: %#llx (the source's: %#llx)", i, w,
				     (unsigned long long)v, (unsigned long long)pattern(i, w, seed));
		}
	}
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
	struct remover m = { r, upper, n - upper, 0, 0, 0 };
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
	/* A removal after the last fault: its read-ahead may have copied
	 * into the part removed (the remover thread may not even have run
	 * yet on a loaded machine). */
	wait_for_value(&m.removed, __atomic_load_n(&m.progress, __ATOMIC_ACQUIRE) + 1);
	ASSERT_SYS(madvise(r, upper * pg, MADV_DONTNEED));
	expect_removed(r, 0, upper, 16);
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
	void *ret;
	ASSERT_EQ(pthread_join(th, &ret), 0);
	ASSERT_TRUE(ret == NULL);
	expect_removed(r, upper, n, 16);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* A source that holds the read of one page until the test opens it. */
struct gate {
	struct fill_ctx fill;
	size_t page;
	size_t entered; /* __atomic */
	int open;       /* __atomic */
};

/* Async-signal-safe; gives up (EIO) if never opened. */
static int fill_gated(void *ctx, uint64_t offset, void *dst, size_t len)
{
	struct gate *g = ctx;
	if (offset / g->fill.page == g->page) {
		__atomic_store_n(&g->entered, 1, __ATOMIC_RELEASE);
		for (int waited_ms = 0; !__atomic_load_n(&g->open, __ATOMIC_ACQUIRE); waited_ms++) {
			if (waited_ms == 30000)
				return -EIO;
			usleep(1000);
		}
	}
	return fill_pattern(&g->fill, offset, dst, len);
}

struct reader {
	const volatile uint64_t *word;
	uint64_t got;
};

static void *read_word(void *arg)
{
	struct reader *rd = arg;
	rd->got = *rd->word;
	return NULL;
}

/* A page removed while its fault reads the source: the fault may see
 * the source, but once madvise() has returned the page reads as zero. */
BOTH_MODES(removed_while_its_source_is_read)
{
	size_t n = 64, pg = page_size(), p = 5;
	struct gate g = { { 19, pg }, p, 0, 0 };
	char *r = map_pages(n);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_gated, .ctx = &g };
	/* Two handler threads: one reads the source, the other the event. */
	struct libuffd_engine *e = serve(r, n * pg, &s, mode, 2);
	struct reader rd = { (const volatile uint64_t *)(r + p * pg), 0 };
	pthread_t th;
	ASSERT_EQ(pthread_create(&th, NULL, read_word, &rd), 0);
	wait_for_value(&g.entered, 1);
	ASSERT_SYS(madvise(r + p * pg, pg, MADV_DONTNEED));
	__atomic_store_n(&g.open, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(pthread_join(th, NULL), 0);
	ASSERT_TRUE(rd.got == 0 || rd.got == pattern(p, 0, 19));
	expect_removed(r, p, p + 1, 19);
	ASSERT_EQ(first_bad_page(r + (p + 1) * pg, p + 1, 1, 19), -1);
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
	int fd = file_holding(data, n * pg);
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

/* Skips the case where this kernel cannot run an engine in mode: before
 * a case that runs its engine in a child. */
static void skip_without_mode(enum libuffd_engine_mode mode)
{
	struct libuffd_engine_opts o = { .mode = mode };
	struct libuffd_engine_source z = { .kind = LIBUFFD_ENGINE_SOURCE_ZERO };
	char *probe = map_pages(1);
	ASSERT_OK(libuffd_engine_destroy(serve_with(probe, page_size(), &z, &o)));
	munmap(probe, page_size());
}

/* Populate resolves in the caller's thread, holding a scratch buffer and
 * the count of copies under way.  A signal handler that ran meanwhile and
 * touched an unresolved page of the region would wait for a resolver
 * that waits for those: with one handler thread, for its one scratch
 * buffer.  The source raises the signal itself, from inside populate;
 * the signal waits until populate returns, and its handler is served. */
struct raising_fill {
	struct fill_ctx c;
	int raised;               /* __atomic */
	const char *volatile touch; /* what the handler reads */
	volatile uint64_t seen;
};

static struct raising_fill *raising;

static void on_usr1_touch(int sig)
{
	raising->seen = *(const volatile uint64_t *)raising->touch;
}

static int fill_raising(void *ctx, uint64_t offset, void *dst, size_t len)
{
	struct raising_fill *f = ctx;

	fill_pattern(&f->c, offset, dst, len);
	if (!__atomic_exchange_n(&f->raised, 1, __ATOMIC_ACQ_REL))
		raise(SIGUSR1);
	return 0;
}

static int populate_under_signal(void *arg)
{
	enum libuffd_engine_mode mode = *(enum libuffd_engine_mode *)arg;
	size_t pg = page_size();
	struct raising_fill f = { .c = { 23, pg } };
	char *r = map_pages(8);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_raising, .ctx = &f };
	struct libuffd_engine_opts o = { .mode = mode, .threads = 1 };
	struct libuffd_engine *e;
	struct sigaction sa = { 0 };

	raising = &f;
	f.touch = r + 5 * pg;
	sa.sa_handler = on_usr1_touch;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || libuffd_engine_create(r, 8 * pg, &s, &o, &e) < 0)
		return 2;
	if (libuffd_engine_populate(e, r, pg) < 0)
		return 3;
	if (!__atomic_load_n(&f.raised, __ATOMIC_ACQUIRE) || f.seen != pattern(5, 0, 23))
		return 4;
	if (first_bad_page(r, 0, 8, 23) != -1)
		return 5;
	return libuffd_engine_destroy(e) < 0 ? 6 : 0;
}

BOTH_MODES(populate_holds_signals_back_until_done)
{
	if (mode == IT && UNDER_TSAN)
		SKIP(TSAN_DEFERS_SIGNALS);
	skip_without_mode(mode);
	assert_exited_zero(child_status_within(populate_under_signal, &mode, 20));
}

/* The signals a fault raises are not held back: a source may take one and
 * handle it, inside populate (here a guard page its SIGSEGV handler opens);
 * blocked, the kernel would kill instead. */
static char *guarded;
static size_t guarded_len;
static volatile sig_atomic_t segv_seen;

static void on_segv_open(int sig)
{
	segv_seen = 1;
	mprotect(guarded, guarded_len, PROT_READ);
}

static int fill_through_guard(void *ctx, uint64_t offset, void *dst, size_t len)
{
	fill_pattern(ctx, offset, dst, len);
	(void)*(const volatile char *)guarded;
	return 0;
}

static int populate_through_a_guard(void *arg)
{
	enum libuffd_engine_mode mode = *(enum libuffd_engine_mode *)arg;
	size_t pg = page_size();
	struct fill_ctx c = { 29, pg };
	char *r = map_pages(8);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = fill_through_guard, .ctx = &c };
	struct libuffd_engine_opts o = { .mode = mode, .threads = 1 };
	struct libuffd_engine *e;
	struct sigaction sa = { 0 };

	guarded_len = pg;
	guarded = mmap(NULL, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sa.sa_handler = on_segv_open;
	sigemptyset(&sa.sa_mask);
	if (guarded == MAP_FAILED || sigaction(SIGSEGV, &sa, NULL) < 0 ||
	    libuffd_engine_create(r, 8 * pg, &s, &o, &e) < 0)
		return 2;
	if (libuffd_engine_populate(e, r, 8 * pg) < 0)
		return 3;
	if (!segv_seen)
		return 4;
	if (first_bad_page(r, 0, 8, 29) != -1)
		return 5;
	return libuffd_engine_destroy(e) < 0 ? 6 : 0;
}

BOTH_MODES(populate_lets_the_signals_of_a_fault_through)
{
	skip_without_mode(mode);
	assert_exited_zero(child_status_within(populate_through_a_guard, &mode, 20));
}

/* A partial munmap leaves holes in the region, and mapping something else
 * there leaves pages that are not registered: populating the whole region
 * skips both and makes the rest present, past the holes too (beyond the
 * 256 pages that one mincore(2) asks about). */
BOTH_MODES(populate_skips_unmapped_and_unregistered_pages)
{
	size_t n = 300, pg = page_size();
	void *src;
	char *r;
	struct libuffd_engine *e = serve_memory(n, 24, mode, 0, &r, &src);
	ASSERT_SYS(munmap(r + 4 * pg, 2 * pg));
	char *other = mmap(r + 10 * pg, pg, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_TRUE(other == r + 10 * pg);
	ASSERT_OK(libuffd_engine_populate(e, r, n * pg));
	unsigned char vec[300];
	ASSERT_SYS(mincore(r, 4 * pg, vec));
	ASSERT_SYS(mincore(r + 6 * pg, 4 * pg, vec + 6));
	ASSERT_SYS(mincore(r + 11 * pg, (n - 11) * pg, vec + 11));
	for (size_t i = 0; i < n; i++)
		if (i < 4 || (i >= 6 && i != 10))
			ASSERT_EQ(vec[i] & 1, 1);
	ASSERT_EQ(first_bad_page(r, 0, 4, 24), -1);
	ASSERT_EQ(first_bad_page(r + 6 * pg, 6, 4, 24), -1);
	ASSERT_EQ(first_bad_page(r + 11 * pg, 11, n - 11, 24), -1);
	ASSERT_TRUE(page_is_zero(other)); /* plain memory */
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Engine a's region moved (mremap(MREMAP_FIXED)) onto the second half of
 * engine b's: the kernel lets b's descriptor fill a's pages there too.
 * Populating b's whole range makes b's own pages present and leaves a's
 * to a, whose pages read a's source. */
BOTH_MODES(populate_leaves_a_region_moved_onto_its_range_alone)
{
	size_t n = 32, pg = page_size();
	void *src_a = make_source(n / 2, 42), *src_b = make_source(n, 41);
	char *rb = map_pages(n), *ra = map_pages(n / 2);
	struct libuffd_engine_source sa = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src_a,
					    .size = n / 2 * pg };
	struct libuffd_engine_source sb = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src_b,
					    .size = n * pg };
	struct libuffd_engine *b = serve(rb, n * pg, &sb, mode, 1);
	struct libuffd_engine *a = serve(ra, n / 2 * pg, &sa, mode, 1);
	ASSERT_EQ(first_bad_page(ra, 0, 1, 42), -1);
	char *moved = rb + n / 2 * pg;
	ASSERT_TRUE(mremap(ra, n / 2 * pg, n / 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, moved) ==
		    moved);
	ASSERT_TRUE(libuffd_engine_region(a, NULL) == moved);
	ASSERT_OK(libuffd_engine_populate(b, rb, n * pg));
	unsigned char vec[32];
	ASSERT_SYS(mincore(rb, n * pg, vec));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(vec[i] & 1, i < n / 2 || i == n / 2); /* a's first page was read */
	ASSERT_EQ(first_bad_page(moved, 0, n / 2, 42), -1);
	ASSERT_EQ(first_bad_page(rb, 0, n / 2, 41), -1);
	/* a first: b's range holds a's mapping now. */
	ASSERT_OK(libuffd_engine_destroy(a));
	ASSERT_OK(libuffd_engine_destroy(b));
}

/* The same move, and engine b's read-ahead pointed past its own pages
 * into a's: a single handler thread reads ahead after each fault it
 * answers, so once b has answered a later fault, the read-ahead queued
 * before it is done.  a's pages there still read a's source. */
TEST(read_ahead_leaves_a_region_moved_onto_its_range_alone)
{
	size_t n = 48, pg = page_size();
	void *src_a = make_source(16, 44), *src_b = make_source(n, 43);
	char *rb = map_pages(n), *ra = map_pages(16);
	struct libuffd_engine_source sa = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src_a,
					    .size = 16 * pg };
	struct libuffd_engine_source sb = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = src_b,
					    .size = n * pg };
	struct libuffd_engine_opts ob = { .mode = HT, .threads = 1, .prefetch_min = pg };
	struct libuffd_engine *b = serve_with(rb, n * pg, &sb, &ob);
	struct libuffd_engine *a = serve(ra, 16 * pg, &sa, HT, 1);
	char *moved = rb + 16 * pg; /* onto b's pages 16 to 31 */
	ASSERT_TRUE(mremap(ra, 16 * pg, 16 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, moved) == moved);
	ASSERT_TRUE(libuffd_engine_region(a, NULL) == moved);
	/* A stream of windows of 1, 2, 4 and 8 pages, each reading ahead as
	 * far again: the last from page 13 reaches page 20, and its
	 * read-ahead pages 21-28, all a's but 13-15. */
	static const size_t touches[] = { 0, 1, 5, 13 };
	for (size_t k = 0; k < sizeof(touches) / sizeof(touches[0]); k++)
		ASSERT_EQ(first_bad_page(rb + touches[k] * pg, touches[k], 1, 43), -1);
	ASSERT_EQ(first_bad_page(rb + 40 * pg, 40, 1, 43), -1); /* a later fault */
	ASSERT_EQ(first_bad_page(moved, 0, 16, 44), -1);
	ASSERT_EQ(first_bad_page(rb, 0, 16, 43), -1);
	ASSERT_OK(libuffd_engine_destroy(a));
	ASSERT_OK(libuffd_engine_destroy(b));
}
