// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The SHMEM source, in both modes: a region that maps a memfd itself
 * (MAP_SHARED or MAP_PRIVATE), served with minor faults and
 * UFFDIO_CONTINUE.  Every byte reads the file's, the page mapped is the
 * file's own (no copy), writes reach the file where the mapping is shared
 * and only the region where it is private, holes and the end of the file
 * behave as with mmap alone, removed, unmapped and moved pages as
 * documented, faulting threads race, and files the source cannot serve
 * are refused.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"

#define SEED 41

/* A memfd of npages pages, page i holding pattern(i, SEED). */
static int make_memfd(size_t npages)
{
	size_t pg = page_size();
	int fd = ASSERT_SYS(memfd_create("test-engine-shmem", MFD_CLOEXEC));
	uint64_t *page = map_pages(1);

	ASSERT_SYS(ftruncate(fd, (off_t)(npages * pg)));
	for (size_t i = 0; i < npages; i++) {
		for (size_t w = 0; w < pg / 8; w++)
			page[w] = pattern(i, w, SEED);
		ASSERT_EQ(pwrite(fd, page, pg, (off_t)(i * pg)), (ssize_t)pg);
	}
	munmap(page, pg);
	return fd;
}

static const char *shmem_unsupported_reason(enum libuffd_engine_mode mode)
{
	struct libuffd_api api;

	if (libuffd_kernel_api(&api) == 0 && !(api.features & LIBUFFD_FEATURE_MINOR_SHMEM))
		return "the kernel lacks UFFD_FEATURE_MINOR_SHMEM (Linux 5.14)";
	return engine_unsupported_reason(mode);
}

/* npages of fd from page `first` on, mapped with `flags` and served. */
static struct libuffd_engine *serve_file(int fd, size_t first, size_t npages, int flags,
					 enum libuffd_engine_mode mode, unsigned int threads,
					 char **region)
{
	size_t pg = page_size();
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_SHMEM, .fd = fd,
					   .offset = first * pg };
	struct libuffd_engine_opts o = { .mode = mode, .threads = threads };
	struct libuffd_engine *e;

	*region = mmap(NULL, npages * pg, PROT_READ | PROT_WRITE, flags, fd, (off_t)(first * pg));
	ASSERT_TRUE(*region != MAP_FAILED);
	int r = libuffd_engine_create(*region, npages * pg, &s, &o, &e);
	if (r == -EOPNOTSUPP)
		SKIP("%s", shmem_unsupported_reason(mode));
	ASSERT_OK(r);
	return e;
}

static uint64_t word(const char *p)
{
	return *(const volatile uint64_t *)p;
}

/* ---- Every byte, and the file's own pages ------------------------------- */

/* Reads in order (prefetch windows), then backwards from the end (single
 * faults), of a region that starts 16 pages into the file. */
static void reads_every_byte(enum libuffd_engine_mode mode, int flags)
{
	size_t n = 1024, pg = page_size();
	int fd = make_memfd(n + 16);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 16, n, flags, mode, 1, &r);

	for (size_t i = 0; i < n / 2; i++)
		ASSERT_EQ(word(r + i * pg), pattern(16 + i, 0, SEED));
	for (size_t i = n; i-- > n / 2;)
		ASSERT_EQ(word(r + i * pg + 8), pattern(16 + i, 1, SEED));
	ASSERT_EQ(first_bad_page(r, 16, n, SEED), -1);
	struct libuffd_engine_stats st = stats(e);
	ASSERT_GT(st.faults, 0);
	ASSERT_LE(st.pages, n);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(shared_mapping_reads_every_byte_of_the_file)
{
	reads_every_byte(mode, MAP_SHARED);
}

BOTH_MODES(private_mapping_reads_every_byte_of_the_file)
{
	reads_every_byte(mode, MAP_PRIVATE);
}

/* No copy: a page read through the region is the file's page, so a
 * write to the file afterwards shows there. */
BOTH_MODES(pages_are_the_files_own_not_copies)
{
	size_t n = 64, pg = page_size();
	int fd = make_memfd(n);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);

	for (size_t i = 0; i < n; i += 7)
		ASSERT_EQ(word(r + i * pg), pattern(i, 0, SEED));
	for (size_t i = 0; i < n; i += 7) {
		uint64_t v = ~pattern(i, 0, SEED);
		ASSERT_EQ(pwrite(fd, &v, sizeof(v), (off_t)(i * pg)), (ssize_t)sizeof(v));
		ASSERT_EQ(word(r + i * pg), v);
	}
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* A forward sweep that reads one page in ten (never the page after the
 * last window) continues its stream: the windows grow as a sequential
 * read's do, so it takes far fewer faults than one per window of 16. */
BOTH_MODES(a_sweep_that_skips_pages_grows_its_windows)
{
	size_t n = 4096, pg = page_size(), reads = 0;
	int fd = make_memfd(n);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);

	for (size_t i = 0; i < n; i += 10, reads++)
		ASSERT_EQ(word(r + i * pg), pattern(i, 0, SEED));
	struct libuffd_engine_stats st = stats(e);
	ASSERT_LE(st.faults, reads / 8);
	ASSERT_EQ(first_bad_page(r, 0, n, SEED), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Writes ---------------------------------------------------------------- */

/* A first touch that is a write: the file's page, written in place. */
BOTH_MODES(writes_through_a_shared_mapping_reach_the_file)
{
	size_t n = 128, pg = page_size();
	int fd = make_memfd(n);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);

	for (size_t i = 0; i < n; i += 3)
		*(volatile uint64_t *)(r + i * pg + 16) = ~pattern(i, 2, SEED);
	for (size_t i = 0; i < n; i++) {
		uint64_t w[3];
		ASSERT_EQ(pread(fd, w, sizeof(w), (off_t)(i * pg)), (ssize_t)sizeof(w));
		ASSERT_EQ(w[0], pattern(i, 0, SEED));
		ASSERT_EQ(w[2], i % 3 ? pattern(i, 2, SEED) : ~pattern(i, 2, SEED));
	}
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* MAP_PRIVATE: the region's copy of a written page, the file untouched;
 * a write as the first touch still sees the file's other bytes. */
BOTH_MODES(writes_through_a_private_mapping_stay_in_the_region)
{
	size_t n = 128, pg = page_size();
	int fd = make_memfd(n);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_PRIVATE, mode, 1, &r);

	for (size_t i = 0; i < n; i += 3)
		*(volatile uint64_t *)(r + i * pg + 16) = ~pattern(i, 2, SEED);
	for (size_t i = 0; i < n; i++) {
		uint64_t w[3];
		ASSERT_EQ(pread(fd, w, sizeof(w), (off_t)(i * pg)), (ssize_t)sizeof(w));
		ASSERT_EQ(w[2], pattern(i, 2, SEED));
		ASSERT_EQ(word(r + i * pg), pattern(i, 0, SEED));
		ASSERT_EQ(word(r + i * pg + 16), i % 3 ? pattern(i, 2, SEED) : ~pattern(i, 2, SEED));
	}
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Threads ---------------------------------------------------------------- */

struct reader {
	char *r;
	size_t n, start;
	long bad;
};

/* Every page, from its own starting point, striding through the region. */
static void *read_all(void *arg)
{
	struct reader *rd = arg;
	size_t pg = page_size();

	rd->bad = -1;
	for (size_t k = 0; k < rd->n && rd->bad < 0; k++) {
		size_t i = (rd->start + k * 37) % rd->n;
		if (word(rd->r + i * pg + 24) != pattern(i, 3, SEED))
			rd->bad = (long)i;
	}
	return NULL;
}

BOTH_MODES(concurrent_faulting_threads_read_every_byte)
{
	size_t n = 2048;
	int fd = make_memfd(n);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 2, &r);
	pthread_t t[4];
	struct reader rd[4];

	for (int i = 0; i < 4; i++) {
		rd[i] = (struct reader){ .r = r, .n = n, .start = (size_t)i * n / 4 };
		ASSERT_EQ(pthread_create(&t[i], NULL, read_all, &rd[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(pthread_join(t[i], NULL), 0);
		ASSERT_EQ(rd[i].bad, -1);
	}
	ASSERT_EQ(first_bad_page(r, 0, n, SEED), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Holes and the end of the file ------------------------------------------ */

/* A hole reads zero and is filled by the kernel, as with mmap; a window
 * that meets one stops there, and the pages after it are served. */
BOTH_MODES(holes_read_zero_as_with_mmap)
{
	size_t n = 256, pg = page_size();
	int fd = make_memfd(n);
	char *r;

	for (size_t i = 8; i < n; i += 32)
		ASSERT_SYS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     (off_t)(i * pg), (off_t)(4 * pg)));
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);
	for (size_t i = 0; i < n; i++) {
		if (i % 32 >= 8 && i % 32 < 12)
			ASSERT_TRUE(page_is_zero(r + i * pg));
		else
			ASSERT_EQ(first_bad_page(r + i * pg, i, 1, SEED), -1);
	}
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Past the end of the file: SIGBUS, as with mmap; the last partial page
 * reads the file and zeros after it. */
BOTH_MODES(past_the_end_of_the_file_raises_sigbus)
{
	size_t pg = page_size();
	int fd = make_memfd(5);
	char *r;

	ASSERT_SYS(ftruncate(fd, (off_t)(4 * pg + 100)));
	install_test_sigbus();
	struct libuffd_engine *e = serve_file(fd, 0, 8, MAP_SHARED, mode, 1, &r);
	ASSERT_EQ(first_bad_page(r, 0, 4, SEED), -1);
	ASSERT_EQ(word(r + 4 * pg + 88), pattern(4, 11, SEED));
	ASSERT_EQ(word(r + 4 * pg + 104), 0);
	for (int k = 0; k < 2; k++) {
		ASSERT_TRUE(read_raises_sigbus(r + 6 * pg + 5));
		ASSERT_TRUE(bus_addr == r + 6 * pg + 5);
	}
	/* The file grows: the page is served. */
	ASSERT_SYS(ftruncate(fd, (off_t)(8 * pg)));
	ASSERT_TRUE(page_is_zero(r + 6 * pg));
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Events ------------------------------------------------------------------- */

/* MADV_DONTNEED drops the region's page, not the file's: it reads the file
 * again (what was written, shared; the file's, private).  MADV_REMOVE
 * frees the file's page: zero, as with mmap. */
static void removed_pages(enum libuffd_engine_mode mode, int flags)
{
	size_t n = 64, pg = page_size();
	int fd = make_memfd(n);
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, flags, mode, 1, &r);

	ASSERT_EQ(first_bad_page(r, 0, n, SEED), -1);
	*(volatile uint64_t *)(r + 10 * pg) = 7;
	ASSERT_SYS(madvise(r + 8 * pg, 8 * pg, MADV_DONTNEED));
	ASSERT_EQ(word(r + 10 * pg), flags == MAP_SHARED ? 7 : pattern(10, 0, SEED));
	ASSERT_EQ(first_bad_page(r + 11 * pg, 11, 5, SEED), -1);
	if (flags == MAP_SHARED) {
		ASSERT_SYS(madvise(r + 20 * pg, 4 * pg, MADV_REMOVE));
		ASSERT_TRUE(page_is_zero(r + 21 * pg));
		ASSERT_EQ(first_bad_page(r + 24 * pg, 24, 8, SEED), -1);
	}
	ASSERT_GE(stats(e).events, 1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

BOTH_MODES(removed_pages_of_a_shared_mapping_read_the_file)
{
	removed_pages(mode, MAP_SHARED);
}

BOTH_MODES(removed_pages_of_a_private_mapping_read_the_file)
{
	removed_pages(mode, MAP_PRIVATE);
}

/* The region moved whole is followed, and reads the file there too; a
 * part unmapped leaves the rest served. */
BOTH_MODES(moved_and_unmapped_regions_are_served)
{
	size_t n = 256, pg = page_size();
	int fd = make_memfd(n);
	char *r, *hole = map_pages(n);
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);

	ASSERT_EQ(first_bad_page(r + 100 * pg, 100, 20, SEED), -1);
	char *m = mremap(r, n * pg, n * pg, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_TRUE(m == hole);
	ASSERT_TRUE(libuffd_engine_region(e, NULL) == m);
	ASSERT_SYS(munmap(m + 192 * pg, 64 * pg));
	ASSERT_EQ(first_bad_page(m, 0, 192, SEED), -1);
	ASSERT_GE(stats(e).events, 2);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Pages moved out of the region by a partial mremap stay registered, with
 * no place in the region: they read the file there too. */
BOTH_MODES(pages_moved_out_of_the_region_read_the_file)
{
	size_t n = 128, pg = page_size();
	int fd = make_memfd(n);
	char *r, *hole = map_pages(32);
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);

	char *m = mremap(r + 64 * pg, 32 * pg, 32 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_TRUE(m == hole);
	ASSERT_TRUE(libuffd_engine_region(e, NULL) == r);
	for (size_t i = 0; i < 32; i += 5)
		ASSERT_EQ(first_bad_page(m + i * pg, 64 + i, 1, SEED), -1);
	ASSERT_EQ(first_bad_page(r + 100 * pg, 100, 28, SEED), -1);
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* Destroyed, or in a forked child, the region is the plain mapping of
 * the file: pages never served read the file too. */
BOTH_MODES(after_destroy_and_in_a_child_pages_read_the_file)
{
	size_t n = 64, pg = page_size();
	int fd = make_memfd(n), status;
	char *r;
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);

	ASSERT_EQ(first_bad_page(r, 0, 2, SEED), -1);
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0)
		_exit(first_bad_page(r + 40 * pg, 40, 8, SEED) == -1 ? 0 : 1);
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_OK(libuffd_engine_destroy(e));
	ASSERT_EQ(first_bad_page(r, 0, n, SEED), -1);
}

/* ---- Kernel-mode access --------------------------------------------------------- */

/* Under user-mode-only a syscall cannot fault the region in; populate
 * maps the range (holes included, which the kernel fills). */
BOTH_MODES(populate_serves_syscalls)
{
	size_t n = 64, pg = page_size();
	int fd = make_memfd(n), p[2];
	char *r, *buf = map_pages(8);

	ASSERT_SYS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(20 * pg),
			     (off_t)pg));
	struct libuffd_engine *e = serve_file(fd, 0, n, MAP_SHARED, mode, 1, &r);
	ASSERT_SYS(pipe(p));
	ASSERT_EQ(write(p[1], r + 17 * pg, 4 * pg), -1);
	ASSERT_EQ(errno, EFAULT);
	ASSERT_OK(libuffd_engine_populate(e, r + 17 * pg, 4 * pg));
	ASSERT_EQ(write(p[1], r + 17 * pg, 4 * pg), (ssize_t)(4 * pg));
	ASSERT_EQ(read(p[0], buf, 4 * pg), (ssize_t)(4 * pg));
	ASSERT_EQ(first_bad_page(buf, 17, 3, SEED), -1);
	ASSERT_TRUE(page_is_zero(buf + 3 * pg));
	ASSERT_OK(libuffd_engine_destroy(e));
}

/* ---- Refusals ----------------------------------------------------------------------- */

static int create_err(void *r, size_t len, const struct libuffd_engine_source *s)
{
	struct libuffd_engine *e = NULL;
	int err = libuffd_engine_create(r, len, s, NULL, &e);

	ASSERT_TRUE(e == NULL);
	return err;
}

/* A file on another file system (the test program itself), or on
 * hugetlbfs: -EOPNOTSUPP. */
TEST(files_not_on_tmpfs_are_refused)
{
	size_t pg = page_size();
	struct statfs sfs;
	int fd = ASSERT_SYS(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));

	ASSERT_SYS(fstatfs(fd, &sfs));
	if (sfs.f_type == TMPFS_MAGIC)
		SKIP("the test program is on tmpfs");
	char *r = mmap(NULL, pg, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_TRUE(r != MAP_FAILED);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_SHMEM, .fd = fd };
	ASSERT_ERR(create_err(r, pg, &s), -EOPNOTSUPP);
	int hfd = memfd_create("test-engine-shmem-huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (hfd >= 0) {
		s.fd = hfd;
		ASSERT_ERR(create_err(map_pages(1), pg, &s), -EOPNOTSUPP);
	}
}

TEST(bad_shmem_sources_are_einval)
{
	size_t pg = page_size();
	int fd = make_memfd(4), dir = ASSERT_SYS(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	char *r = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_TRUE(r != MAP_FAILED);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_SHMEM, .fd = -1 };
	ASSERT_ERR(create_err(r, 4 * pg, &s), -EINVAL);
	s.fd = fd;
	s.offset = 100;
	ASSERT_ERR(create_err(r, 4 * pg, &s), -EINVAL);
	s.offset = 0;
	s.size = pg;
	ASSERT_ERR(create_err(r, 4 * pg, &s), -EINVAL);
	s.size = 0;
	s.fd = dir;
	ASSERT_ERR(create_err(r, 4 * pg, &s), -EINVAL);
	/* A region that is not a mapping of a tmpfs file: the kernel refuses
	 * minor faults there. */
	s.fd = fd;
	struct libuffd_api api;
	ASSERT_OK(libuffd_kernel_api(&api));
	if (api.features & LIBUFFD_FEATURE_MINOR_SHMEM)
		ASSERT_ERR(create_err(map_pages(4), 4 * pg, &s), -EINVAL);
	/* The file's mapping is still plain memory. */
	ASSERT_EQ(first_bad_page(r, 0, 4, SEED), -1);
}
