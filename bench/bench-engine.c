// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-engine: the libuffd engine against what its users would pick
 * instead: native first touch, mmap(MAP_PRIVATE) of the snapshot file (hot
 * in the page cache and cold), MAP_POPULATE, an eager pread or copy of the
 * whole, and for a snapshot in a memfd (the SHMEM source), mmap(MAP_SHARED)
 * of that memfd; and against a naive one-page-per-fault handler thread.
 * The handler-thread engine also serves another process's memory, as a VM
 * monitor's external fault handler or CRIU's lazy-pages daemon does: a
 * forked owner shares its region over a Unix socket; those rows sit beside
 * the same engine serving this process's own (measured with them under -f).
 * Write and read touches.  With libzstd, the same bytes compressed in
 * independent zstd frames (examples/zstd-snapshot.c) served lazily through
 * the CALLBACK source, against decompressing the whole snapshot eagerly.
 * Prints one table; every figure is the median of several rounds in this
 * run, and every ratio compares rows of the same run.
 *
 *   bench-engine [-s MiB (1024)] [-r rounds (5)] [-t handler-threads (2)]
 *                [-k random-touches (20000)] [-d directory (/var/tmp)]
 *                [-z zstd-frame-KiB (32)] [-f only-rows-whose-section-or-name-contains]
 *                [-p (hot rows: the file cached in single pages)]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libuffd-engine.h"
#include "stats.h"
#ifdef HAVE_ZSTD
#include <zstd.h>

#include "zstd-snapshot.h"
#endif

#define NAIVE_MAX (64ul << 20) /* the naive handler is slow: a slice of the size */

static size_t pg, size, npages;
static unsigned int rounds = 5, threads = 2;
static size_t random_touches = 20000;
static char *source;     /* the snapshot in memory */
static int source_fd;    /* the same bytes in a file */
static int memfd;        /* and in a memfd */
static int touch_reads;  /* touches read instead of write */

static double now_s(void)
{
	return now_ns() / 1e9;
}

/* err 0: what says it all. */
static void die(const char *what, int err)
{
	if (err)
		fprintf(stderr, "bench-engine: %s: %s\n", what, strerror(err));
	else
		fprintf(stderr, "bench-engine: %s\n", what);
	exit(1);
}

static char *map_fresh(size_t len, int flags)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags,
		       -1, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

static uint64_t rng = 0x853c49e6748fea9bull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Distinct random pages: the first k of a shuffle. */
static size_t *random_pages(size_t k)
{
	size_t *perm = malloc(npages * sizeof(*perm));
	if (!perm)
		die("malloc", ENOMEM);
	for (size_t i = 0; i < npages; i++)
		perm[i] = i;
	for (size_t i = 0; i < k; i++) {
		size_t j = i + next_rand() % (npages - i), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	return perm;
}

/* ---- What is measured: one pass over a region ----------------------- */

/* SPARSE_RUNS: 10 % of the pages as runs of RUN_PAGES (64 KiB, the
 * kernel's own fault-around size: working sets are clustered), one run at
 * a random place in each stretch of ten runs.  SPARSE_PAGES: the worst
 * case, 10 % as single pages, one at a random place in each group of ten
 * (never "the next page", so no prefetch can guess it). */
enum pattern { SEQUENTIAL, RANDOM, SPARSE_RUNS, SPARSE_PAGES };

#define RUN_PAGES 16

struct result {
	double seconds;  /* the whole pass */
	double p50, p99; /* RANDOM: per access, seconds */
};

static volatile char sink;

/* One access to page i: a write, or a read (touch_reads). */
static inline void poke(char *r, size_t i)
{
	if (touch_reads)
		sink = ((volatile char *)r)[i * pg];
	else
		((volatile char *)r)[i * pg] = 1;
}

static void touch(char *r, enum pattern pat, struct result *res)
{
	double t0 = now_s();

	if (pat == SEQUENTIAL) {
		for (size_t i = 0; i < npages; i++)
			poke(r, i);
	} else if (pat == SPARSE_RUNS) {
		for (size_t g = 0; g + 10 * RUN_PAGES <= npages; g += 10 * RUN_PAGES) {
			size_t first = g + next_rand() % (9 * RUN_PAGES + 1);
			for (size_t i = first; i < first + RUN_PAGES; i++)
				poke(r, i);
		}
	} else if (pat == SPARSE_PAGES) {
		for (size_t g = 0; g + 10 <= npages; g += 10)
			poke(r, g + next_rand() % 10);
	} else {
		size_t k = random_touches < npages ? random_touches : npages;
		size_t *perm = random_pages(k);
		double *lat = malloc(k * sizeof(*lat));
		if (!lat)
			die("malloc", ENOMEM);
		t0 = now_s();
		for (size_t i = 0; i < k; i++) {
			double a = now_s();
			poke(r, perm[i]);
			lat[i] = now_s() - a;
		}
		res->seconds = now_s() - t0;
		qsort(lat, k, sizeof(*lat), cmp_double);
		res->p50 = lat[k / 2];
		res->p99 = lat[k * 99 / 100];
		free(lat);
		free(perm);
		return;
	}
	res->seconds = now_s() - t0;
}

/* ---- (a) native, (b) eager -------------------------------------------- */

static void run_native(enum pattern pat, struct result *res)
{
	char *r = map_fresh(size, 0);
	touch(r, pat, res);
	munmap(r, size);
}

static void run_eager(enum pattern pat, struct result *res)
{
	double t0 = now_s();
	char *r = map_fresh(size, MAP_POPULATE);
	memcpy(r, source, size);
	res->seconds = now_s() - t0;
	munmap(r, size);
}

/* The whole file into fresh memory with pread(2). */
static void run_eager_pread(enum pattern pat, struct result *res)
{
	(void)pat;
	double t0 = now_s();
	char *r = map_fresh(size, MAP_POPULATE);
	for (size_t off = 0; off < size;) {
		ssize_t n = pread(source_fd, r + off, size - off, (off_t)off);
		if (n <= 0)
			die("pread", n < 0 ? errno : EIO);
		off += (size_t)n;
	}
	res->seconds = now_s() - t0;
	munmap(r, size);
}

/* ---- (m) mmap(MAP_PRIVATE) of the file ---------------------------------- */

/* Map fd with flags, touch the mapping; its setup counts. */
static void run_mmap_fd(enum pattern pat, struct result *res, int fd, int flags)
{
	double t0 = now_s();
	char *r = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (r == MAP_FAILED)
		die("mmap", errno);
	double setup = now_s() - t0;
	touch(r, pat, res);
	res->seconds += setup;
	munmap(r, size);
}

static void run_mmap(enum pattern pat, struct result *res)
{
	run_mmap_fd(pat, res, source_fd, MAP_PRIVATE);
}

/* MAP_POPULATE on a writable private mapping breaks copy-on-write for
 * every page up front: the kernel's own eager copy. */
static void run_mmap_populate(enum pattern pat, struct result *res)
{
	run_mmap_fd(pat, res, source_fd, MAP_PRIVATE | MAP_POPULATE);
}

/* mmap(MAP_SHARED) of the memfd: what the SHMEM source competes with. */
static void run_mmap_memfd(enum pattern pat, struct result *res)
{
	run_mmap_fd(pat, res, memfd, MAP_SHARED);
}

/* ---- (c) the engine ------------------------------------------------------ */

static enum libuffd_engine_mode engine_mode;
static struct libuffd_engine_stats last_stats;

static enum libuffd_engine_source_kind engine_source;

/* The CALLBACK source as a program would write one over a file. */
static int fill_pread(void *ctx, uint64_t offset, void *dst, size_t len)
{
	(void)ctx;
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(source_fd, (char *)dst + done, len - done, (off_t)(offset + done));
		if (n < 0)
			return -errno;
		if (n == 0) { /* past the end: zeros */
			memset((char *)dst + done, 0, len - done);
			break;
		}
		done += (size_t)n;
	}
	return 0;
}

/* What an engine row serves from (engine_source), and how (engine_mode). */
static struct libuffd_engine_source engine_src(void)
{
	return (struct libuffd_engine_source){ .kind = engine_source, .buf = source, .size = size,
					       .fd = source_fd, .fill = fill_pread };
}

static struct libuffd_engine_opts engine_opts(void)
{
	return (struct libuffd_engine_opts){ .mode = engine_mode, .threads = threads };
}

static void engine_finish(struct libuffd_engine *e)
{
	libuffd_engine_get_stats(e, &last_stats);
	libuffd_engine_destroy(e);
}

static void run_engine(enum pattern pat, struct result *res)
{
	int shmem = engine_source == LIBUFFD_ENGINE_SOURCE_SHMEM;
	struct libuffd_engine_source src = engine_src();
	struct libuffd_engine_opts o = engine_opts();
	struct libuffd_engine *e;
	double t0 = now_s();
	char *r;
	if (shmem) {
		/* The SHMEM source serves the caller's own mapping of the memfd. */
		src = (struct libuffd_engine_source){ .kind = engine_source, .fd = memfd };
		t0 = now_s();
		r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		if (r == MAP_FAILED)
			die("mmap of the memfd", errno);
	} else {
		r = map_fresh(size, 0);
		t0 = now_s();
	}
	int err = libuffd_engine_create(r, size, &src, &o, &e);
	if (err < 0)
		die("libuffd_engine_create", -err);
	double setup = now_s() - t0;
	touch(r, pat, res);
	res->seconds += setup; /* lazy costs count from the moment the region exists */
	engine_finish(e);
	munmap(r, size);
}

/* ---- (c) the engine serving another process ------------------------------
 * A forked owner maps a fresh region, shares it (libuffd_engine_share())
 * and touches it; this process serves it (libuffd_engine_create_remote()).
 * The owner times itself from the share on, as the rows above count the
 * engine's creation, and reports with its random state, so that the rows
 * after this one place their touches as after a row run here. */

static char measuring[256];    /* the row measure() runs, for errors */
static int remote_unsupported; /* -EOPNOTSUPP: no UFFDIO_POISON (Linux 6.6) */

struct owner_report {
	int err; /* of libuffd_engine_share() */
	struct result res;
	uint64_t rng;
};

__attribute__((noreturn)) static void run_owner(int sock, int out, enum pattern pat)
{
	struct owner_report rep = { 0 };
	char *r = map_fresh(size, 0);
	double t0 = now_s();
	rep.err = libuffd_engine_share(sock, r, size, NULL);
	double setup = now_s() - t0;
	if (rep.err == 0) {
		touch(r, pat, &rep.res);
		rep.res.seconds += setup;
	}
	rep.rng = rng;
	_exit(write(out, &rep, sizeof(rep)) == (ssize_t)sizeof(rep) ? 0 : 1);
}

static void run_engine_remote(enum pattern pat, struct result *res)
{
	struct libuffd_engine_source src = engine_src();
	struct libuffd_engine_opts o = engine_opts();
	struct libuffd_engine *e;
	struct owner_report rep;
	int sv[2], report[2], status;
	char what[512];

	if (remote_unsupported) {
		res->seconds = res->p50 = res->p99 = NAN;
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair", errno);
	if (pipe2(report, O_CLOEXEC) < 0)
		die("pipe", errno);
	fflush(NULL); /* the owner may exit through die(): nothing printed twice */
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		close(sv[0]);
		close(report[0]);
		run_owner(sv[1], report[1], pat);
	}
	close(sv[1]);
	close(report[1]);
	int err = libuffd_engine_create_remote(sv[0], &src, &o, &e);
	close(sv[0]); /* an owner that failed before sharing hears it hang up */
	ssize_t n = read(report[0], &rep, sizeof(rep)); /* one write, or none: EOF */
	int read_err = errno;
	close(report[0]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid", errno);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		int sig = WIFSIGNALED(status);
		snprintf(what, sizeof(what), "%s: the process that owns the region %s %d%s%s",
			 measuring, sig ? "was killed by signal" : "exited with status",
			 sig ? WTERMSIG(status) : WEXITSTATUS(status), sig ? ", " : "",
			 sig ? strsignal(WTERMSIG(status)) : "");
		die(what, 0);
	}
	if (n != (ssize_t)sizeof(rep)) {
		snprintf(what, sizeof(what), "%s: reading the owner's report", measuring);
		die(what, n < 0 ? read_err : EIO);
	}
	if (err == -EOPNOTSUPP) {
		remote_unsupported = 1;
		res->seconds = res->p50 = res->p99 = NAN;
		return;
	}
	snprintf(what, sizeof(what), "%s: libuffd_engine_%s", measuring,
		 err < 0 ? "create_remote" : "share");
	if (err < 0 || rep.err < 0)
		die(what, err < 0 ? -err : -rep.err);
	*res = rep.res;
	rng = rep.rng;
	engine_finish(e);
}

/* ---- (z) a zstd snapshot: lazily through the engine, or eagerly ----------- */

#ifdef HAVE_ZSTD
static const unsigned char *zstd_file; /* the compressed snapshot, mapped */
static size_t zstd_len, zstd_frame = ZSTD_SNAPSHOT_FRAME_DEFAULT;

/* Decompress the whole snapshot into fresh memory, as a restore without
 * the engine would. */
static void run_eager_zstd(enum pattern pat, struct result *res)
{
	(void)pat;
	ZSTD_DCtx *d = ZSTD_createDCtx();
	if (!d)
		die("ZSTD_createDCtx", ENOMEM);
	double t0 = now_s();
	char *r = map_fresh(size, MAP_POPULATE);
	size_t n = ZSTD_decompressDCtx(d, r, size, zstd_file, zstd_len);
	if (ZSTD_isError(n) || n != size)
		die("ZSTD_decompressDCtx", EIO);
	res->seconds = now_s() - t0;
	munmap(r, size);
	ZSTD_freeDCtx(d);
}

/* The engine serving it: the walk of the frames counts too. */
static void run_engine_zstd(enum pattern pat, struct result *res)
{
	struct zstd_snapshot *z;
	struct libuffd_engine_opts o = engine_opts();
	struct libuffd_engine *e;
	char *r = map_fresh(size, 0);
	double t0 = now_s();
	int err = zstd_snapshot_open(zstd_file, zstd_len, 0, &z);
	if (err < 0)
		die("zstd_snapshot_open", -err);
	struct libuffd_engine_source src = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					     .fill = zstd_snapshot_fill, .ctx = z };
	err = libuffd_engine_create(r, size, &src, &o, &e);
	if (err < 0)
		die("libuffd_engine_create", -err);
	double setup = now_s() - t0;
	touch(r, pat, res);
	res->seconds += setup;
	engine_finish(e);
	zstd_snapshot_close(z);
	munmap(r, size);
}

/* A snapshot worth compressing (the source's bytes do not compress): in
 * each 256 KiB, 64 KiB of zero pages, 128 KiB of text-like words and
 * numbers, and 64 KiB of the source's bytes.  Compressed into a file
 * beside the source's, and mapped. */
static void make_zstd_file(const char *dir)
{
	static const char *const words[] = { "page", "fault", "engine", "snapshot", "frame",
					     "region", "window", "thread", "memory", "kernel",
					     "source", "handler", "copy", "zero", "file", "map" };
	char *data = map_fresh(size, MAP_POPULATE);
	for (size_t at = 0; at < size; at += 256 << 10) {
		memcpy(data + at + (192 << 10), source + at + (192 << 10), 64 << 10);
		for (size_t i = at + (64 << 10), end = at + (192 << 10); i < end;) {
			char word[32];
			uint64_t x = next_rand();
			int n = snprintf(word, sizeof(word), "%s %u ", words[x % 16],
					 (unsigned int)(x >> 40) % 100000);
			for (int k = 0; k < n && i < end; k++)
				data[i++] = word[k];
		}
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/bench-engine-zstd.XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0)
		die(path, errno);
	unlink(path);
	int err = zstd_snapshot_write(fd, data, size, zstd_frame, 3);
	if (err < 0)
		die("zstd_snapshot_write", -err);
	munmap(data, size);
	off_t len = lseek(fd, 0, SEEK_END);
	zstd_file = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
	if (len <= 0 || zstd_file == MAP_FAILED)
		die("mmap of the zstd file", errno);
	zstd_len = (size_t)len;
	close(fd);
}
#endif

/* ---- (d) the naive handler, and the floors ------------------------------
 * A plain handler thread: one message, one page, one copy.  (d) is the
 * one most programs write (one thread, wherever the scheduler puts it).
 * The handler floor is the same loop with a thread bound to each CPU, the
 * wake-up structure the engine uses; the in-thread floor is a SIGBUS
 * handler that only copies.  Neither does anything an engine can skip:
 * they bound from below what either mode can cost on this machine.
 * A file source must also bring each page from the page cache to an
 * address the kernel can copy from: the floors run that step too, either
 * way it can be done, so the cheaper bounds the FILE source's rows. */

/* Where a floor's page comes from: the resident buffer (the MEMORY
 * source); the file, read with pread(2) into a buffer; a MAP_SHARED
 * mapping of the file, made with the region, whose pages the kernel's
 * copy faults in; or the memfd itself, which the region maps (the SHMEM
 * source: a minor fault, resolved with UFFDIO_CONTINUE, no copy). */
enum floor_from { FROM_MEMORY, FROM_PREAD, FROM_MAPPING, FROM_MEMFD };
static enum floor_from floor_from;
static char *floor_file_map; /* FROM_MAPPING */

/* What a floor copies per fault: a page; for SPARSE_RUNS the whole run
 * from its first page on (a prefetcher that knew where runs end: one fault
 * per run, the least any window can do); for SEQUENTIAL the engine's
 * largest window (less if the region is not a multiple of it). */
static size_t floor_len;

static void floor_set_len(enum pattern pat)
{
	floor_len = pg;
	if (pat == SPARSE_RUNS)
		floor_len = RUN_PAGES * pg;
	if (pat == SEQUENTIAL)
		for (floor_len = LIBUFFD_ENGINE_PREFETCH_MAX_DEFAULT; size % floor_len;)
			floor_len >>= 1;
}

/* The floor_len bytes at offset off of the snapshot, as floor_from says;
 * scratch: floor_len bytes of the caller's.  It may run in a SIGBUS
 * handler: only async-signal-safe calls. */
static const char *floor_page(size_t off, char *scratch)
{
	static const char failed[] = "bench-engine: a floor's pread of the file failed\n";
	if (floor_from == FROM_PREAD) {
		if (pread(source_fd, scratch, floor_len, (off_t)off) != (ssize_t)floor_len) {
			ssize_t told = write(STDERR_FILENO, failed, sizeof(failed) - 1);
			(void)told; /* exiting either way */
			_exit(1);
		}
		return scratch;
	}
	return (floor_from == FROM_MAPPING ? floor_file_map : source) + off;
}

static void floor_map_file(void)
{
	if (floor_from != FROM_MAPPING)
		return;
	floor_file_map = mmap(NULL, size, PROT_READ, MAP_SHARED, source_fd, 0);
	if (floor_file_map == MAP_FAILED)
		die("mmap of the file", errno);
}

static void floor_unmap_file(void)
{
	if (floor_from == FROM_MAPPING)
		munmap(floor_file_map, size);
}

/* A floor's region: fresh memory, or for FROM_MEMFD a mapping of the
 * memfd, whose pages are in the page cache and not yet mapped. */
static char *floor_map_region(size_t len)
{
	if (floor_from != FROM_MEMFD)
		return map_fresh(len, 0);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED)
		die("mmap of the memfd", errno);
	return p;
}

/* Make the floor_len bytes at page a of region present; mode: as
 * libuffd_copy().  Async-signal-safe. */
static int floor_resolve(int uffd, char *region, uintptr_t a, char *scratch, unsigned int mode)
{
	if (floor_from == FROM_MEMFD)
		return libuffd_continue(uffd, (void *)a, floor_len, mode, NULL);
	return libuffd_copy(uffd, (void *)a, floor_page(a - (uintptr_t)region, scratch),
			    floor_len, mode, NULL);
}

struct plain {
	int uffd, stop[2];
	char *region;
	int cpu; /* -1: unbound */
};

static void *plain_thread(void *arg)
{
	struct plain *n = arg;
	struct pollfd pfd[2] = { { .fd = n->uffd, .events = POLLIN },
				 { .fd = n->stop[0], .events = POLLIN } };
	struct libuffd_event ev;
	char *scratch = aligned_alloc(pg, floor_len);

	if (!scratch)
		die("aligned_alloc", ENOMEM);
	if (n->cpu >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(n->cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
	for (;;) {
		poll(pfd, 2, -1);
		if (pfd[1].revents) {
			free(scratch);
			return NULL;
		}
		if (libuffd_read_events(n->uffd, &ev, 1) != 1 || ev.type != LIBUFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t a = ev.pagefault.address & ~(uint64_t)(pg - 1);
		int r = floor_resolve(n->uffd, n->region, (uintptr_t)a, scratch, 0);
		if (r == -EEXIST)
			libuffd_wake(n->uffd, (void *)(uintptr_t)a, pg);
	}
}

static int plain_uffd(uint64_t features, char *region, size_t len)
{
	struct libuffd_api api;
	uint64_t ioctls = 0;
	int minor = floor_from == FROM_MEMFD;
	uint64_t need = (minor ? LIBUFFD_IOCTL_CONTINUE : LIBUFFD_IOCTL_COPY) | LIBUFFD_IOCTL_WAKE;
	int fd = libuffd_open(NULL, NULL);

	if (minor)
		features |= LIBUFFD_FEATURE_MINOR_SHMEM;
	int r = fd < 0 ? fd : libuffd_api_handshake(fd, features, features, &api);
	if (r == 0)
		r = libuffd_register(fd, region, len,
				     minor ? LIBUFFD_REGISTER_MINOR : LIBUFFD_REGISTER_MISSING,
				     &ioctls);
	if (r < 0)
		die("plain handler setup", -r);
	/* The plain handlers copy (or continue), and wake after EEXIST. */
	if ((ioctls & need) != need)
		die("plain handler setup: UFFDIO_REGISTER offers no UFFDIO_COPY (UFFDIO_CONTINUE) "
		    "or UFFDIO_WAKE", EOPNOTSUPP);
	return fd;
}

static void run_plain(enum pattern pat, struct result *res, int per_cpu)
{
	struct plain n[CPU_SETSIZE];
	pthread_t th[CPU_SETSIZE];
	int cpus[CPU_SETSIZE], ncpus = 0, stop[2];
	size_t saved = npages;
	size_t len = per_cpu || size < NAIVE_MAX ? size : NAIVE_MAX;
	cpu_set_t allowed;

	if (per_cpu && sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpus++] = c;
	if (!per_cpu) {
		cpus[0] = -1;
		ncpus = 1;
	}
	char *region = floor_map_region(len);
	double t0 = now_s();
	int fd = plain_uffd(0, region, len);
	floor_map_file();
	if (pipe(stop) < 0)
		die("pipe", errno);
	for (int i = 0; i < ncpus; i++) {
		n[i] = (struct plain){ fd, { stop[0], stop[1] }, region, cpus[i] };
		pthread_create(&th[i], NULL, plain_thread, &n[i]);
	}
	double setup = now_s() - t0;
	npages = len / pg;
	touch(region, pat, res);
	npages = saved;
	res->seconds = (res->seconds + setup) * (double)size / (double)len; /* scaled */
	if (write(stop[1], "x", 1) != 1)
		die("write", errno);
	for (int i = 0; i < ncpus; i++)
		pthread_join(th[i], NULL);
	close(fd);
	close(stop[0]);
	close(stop[1]);
	floor_unmap_file();
	munmap(region, len);
}

static void run_naive(enum pattern pat, struct result *res)
{
	floor_len = pg;
	run_plain(pat, res, 0);
}

static void run_handler_floor(enum pattern pat, struct result *res)
{
	floor_set_len(pat);
	run_plain(pat, res, 1);
}

static int floor_uffd;
static char *floor_region, *floor_scratch;

static void floor_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr & ~(uintptr_t)(pg - 1);
	floor_resolve(floor_uffd, floor_region, a, floor_scratch, LIBUFFD_DONTWAKE);
}

static void run_in_thread_floor(enum pattern pat, struct result *res)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = floor_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);

	floor_set_len(pat);
	floor_region = floor_map_region(size);
	floor_scratch = aligned_alloc(pg, floor_len);
	if (!floor_scratch)
		die("aligned_alloc", ENOMEM);
	double t0 = now_s();
	floor_uffd = plain_uffd(LIBUFFD_FEATURE_SIGBUS, floor_region, size);
	floor_map_file();
	sigaction(SIGBUS, &sa, &old); /* the engine's handler is put back below */
	double setup = now_s() - t0;
	touch(floor_region, pat, res);
	res->seconds += setup;
	sigaction(SIGBUS, &old, NULL);
	close(floor_uffd);
	floor_unmap_file();
	free(floor_scratch);
	munmap(floor_region, size);
}

/* ---- Rounds and the table -------------------------------------------------- */

static int cold; /* the file leaves the page cache before every round */

/* -f WORD: only the rows whose section or name contains WORD. */
static const char *only, *section = "";
static int reference; /* the row is a selected row's reference */

static int selected(const char *name)
{
	/* The eager rows are every ratio's reference: always measured. */
	return !only || reference || strstr(name, only) || strstr(section, only) ||
	       !strncmp(name, "eager", 5);
}

/* Cold rows: only this bench's own file leaves the page cache (the
 * machine may be shared, so no drop_caches; clean pages leave at once,
 * the file was synced).  Hot rows: all of it is in the page cache as one
 * sequential read of the whole file leaves it.  After a cold round it is
 * dropped and read again whole, not only its missing pages: pages that a
 * cold round pulled in piecemeal sit in smaller folios (on kernels whose
 * file system caches in large folios), which cost more to map, and the
 * hot rows would depend on the rows run before them. */
static int cache_disturbed; /* a cold round ran since the file was read whole */
/* -p: the file is read back a page at a time with no read-ahead instead,
 * so that it sits in the page cache in single pages, as after scattered
 * reads or on a file system that caches in base pages only. */
static int cache_in_pages;

/* Read the whole file, `chunk` bytes at a time, into the page cache. */
static void read_file_back(size_t chunk)
{
	static char buf[1 << 20];
	for (size_t off = 0; off < size;) {
		size_t want = size - off < chunk ? size - off : chunk;
		ssize_t n = pread(source_fd, buf, want, (off_t)off);
		if (n <= 0)
			die("reading the file into the page cache", n < 0 ? errno : EIO);
		off += (size_t)n;
	}
}

static void set_cache_state(void)
{
	if (cold || cache_disturbed) {
		int err = posix_fadvise(source_fd, 0, 0, POSIX_FADV_DONTNEED);
		if (err)
			die("posix_fadvise(POSIX_FADV_DONTNEED)", err);
		cache_disturbed = cold;
		if (cold)
			return;
		if (cache_in_pages) { /* a page a time, no read-ahead: all of it now */
			err = posix_fadvise(source_fd, 0, 0, POSIX_FADV_RANDOM);
			if (err)
				die("posix_fadvise(POSIX_FADV_RANDOM)", err);
			read_file_back(pg);
			err = posix_fadvise(source_fd, 0, 0, POSIX_FADV_NORMAL);
			if (err)
				die("posix_fadvise(POSIX_FADV_NORMAL)", err);
			return;
		}
	}
	read_file_back(1 << 20);
}

/* The share of the file in the page cache now, by mincore(2). */
static double cached_share(void)
{
	unsigned char *vec = malloc(npages);
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, source_fd, 0);
	size_t in = 0;
	if (!vec || m == MAP_FAILED || mincore(m, size, vec) < 0)
		die("mincore of the file", errno);
	for (size_t i = 0; i < npages; i++)
		in += vec[i] & 1;
	munmap(m, size);
	free(vec);
	return (double)in / (double)npages;
}

/* A target's line: a value left out by -f (NaN) is not a miss. */
static const char *verdict(int ok, double value)
{
	return isnan(value) ? "not measured" : ok ? "met" : "NOT met";
}

struct row {
	char name[160]; /* a copy: callers build names in buffers they reuse */
	double seconds, p50, p99;
	int has_latency;
	/* With pair_with_memory: the median over the rounds of this row's
	 * time over that of a memory-source round run just before it. */
	double vs_memory;
};

/* The engine rows of another source run each round right after a round
 * of the memory source: their ratio then holds against the drift of a
 * shared machine's load, which separate rows a minute apart do not. */
static int pair_with_memory;

/* What a round's ratios compare: p50 for latency rows, else the whole pass. */
static double result_time(const struct result *r, enum pattern pat)
{
	return pat == RANDOM ? r->p50 : r->seconds;
}

/* One round of the memory source, as the engine rows or the floors run it. */
static void memory_round(void (*fn)(enum pattern, struct result *), enum pattern pat,
			 struct result *res)
{
	enum libuffd_engine_source_kind kind = engine_source;
	enum floor_from from = floor_from;
	int was_cold = cold;

	engine_source = LIBUFFD_ENGINE_SOURCE_MEMORY;
	floor_from = FROM_MEMORY;
	cold = 0;
	memset(res, 0, sizeof(*res));
	set_cache_state();
	fn(pat, res);
	engine_source = kind;
	floor_from = from;
	cold = was_cold;
}

static struct row measure(const char *name, void (*fn)(enum pattern, struct result *),
			  enum pattern pat)
{
	double *s = calloc(rounds, sizeof(double)), *p50 = calloc(rounds, sizeof(double)),
	       *p99 = calloc(rounds, sizeof(double)), *vs = calloc(rounds, sizeof(double));
	struct result res, mres;

	if (!s || !p50 || !p99 || !vs)
		die("calloc", ENOMEM);
	struct row row = { "", NAN, NAN, NAN, pat == RANDOM, NAN };
	snprintf(row.name, sizeof(row.name), "%s", name);
	if (!selected(name))
		goto out;
	snprintf(measuring, sizeof(measuring), "%s (%s)", name,
		 strncmp(section, "-- ", 3) ? section : section + 3);
	memset(&res, 0, sizeof(res));
	set_cache_state();
	fn(pat, &res); /* one untimed round: caches, page allocator, code */
	for (unsigned int i = 0; i < rounds; i++) {
		if (pair_with_memory)
			memory_round(fn, pat, &mres);
		memset(&res, 0, sizeof(res));
		set_cache_state();
		fn(pat, &res);
		s[i] = res.seconds;
		p50[i] = res.p50;
		p99[i] = res.p99;
		if (pair_with_memory)
			vs[i] = result_time(&res, pat) / result_time(&mres, pat);
	}
	row.seconds = median(s, rounds);
	row.p50 = median(p50, rounds);
	row.p99 = median(p99, rounds);
	if (pair_with_memory)
		row.vs_memory = median(vs, rounds);
out:
	free(s);
	free(p50);
	free(p99);
	free(vs);
	return row;
}

static void print_row(const struct row *r, double native, double eager, double native_page)
{
	double gbs = (double)size / r->seconds / 1e9;
	if (r->has_latency) {
		printf("%-44s %9.2f %9.2f %8s %8.2fx %8s\n", r->name, r->p50 * 1e6, r->p99 * 1e6,
		       "-", r->p50 * 1e6 / native_page, "-");
		return;
	}
	printf("%-44s %9.3f %9s %8.2f %8.2fx %7.2fx\n", r->name, r->seconds * 1e6 / (double)npages,
	       "", gbs, native / r->seconds, eager / r->seconds);
}

/* What a row's ratios compare: p50 for latency rows, else the whole pass. */
static double row_time(const struct row *r)
{
	return r->has_latency ? r->p50 : r->seconds;
}

static void print_ratio(const struct row *r, const struct row *other)
{
	if (!other || other->has_latency != r->has_latency)
		printf(" %8s", "-");
	else
		printf(" %7.2fx", row_time(other) / row_time(r));
}

static void print_table_row(const struct row *r, const struct row *native,
			    const struct row *eager, const struct row *mmap_row)
{
	if (isnan(r->seconds)) /* left out by -f */
		return;
	if (r->has_latency)
		printf("  %-48s %9.2f %9.2f", r->name, r->p50 * 1e6, r->p99 * 1e6);
	else
		printf("  %-48s %9.3f %9s", r->name, r->seconds * 1e6 / (double)npages, "");
	print_ratio(r, native);
	print_ratio(r, eager);
	print_ratio(r, mmap_row);
	if (!isnan(r->vs_memory)) /* a file row, each round paired with a memory round */
		printf("  %.2fx memory's", r->vs_memory);
	printf("\n");
}

/* The row of the engine serving another process: printed like the others,
 * or, on a kernel that cannot serve one, left out with a line that says why. */
static struct row measure_remote(const char *name, enum pattern pat, const struct row *native,
				 const struct row *eager, const struct row *mmap_row)
{
	static int told;
	struct row r = { "", NAN, NAN, NAN, pat == RANDOM, NAN };
	snprintf(r.name, sizeof(r.name), "%s", name);
	if (!remote_unsupported)
		r = measure(name, run_engine_remote, pat);
	if (!remote_unsupported)
		print_table_row(&r, native, eager, mmap_row);
	else if (!told++)
		printf("  (rows '%s' left out: the kernel is older than 6.6, no UFFDIO_POISON)\n",
		       name);
	return r;
}

/* Resident memory of this process, bytes. */
static size_t rss(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long vm = 0, res = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &vm, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * pg;
}

static void overhead(void)
{
	struct libuffd_engine_source src = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = source,
					     .size = size };
	const char *names[] = { "handler threads", "in-thread" }; /* by mode */

	for (int m = 0; m < 2; m++) {
		struct libuffd_engine_opts o = { .mode = (enum libuffd_engine_mode)m, .threads = threads };
		struct libuffd_engine_stats st;
		struct libuffd_engine *e;
		char *r = map_fresh(size, 0);
		size_t before = rss();
		int err = libuffd_engine_create(r, size, &src, &o, &e);
		if (err < 0)
			die("libuffd_engine_create", -err);
		for (size_t i = 0; i < npages; i++) /* serve everything */
			((volatile char *)r)[i * pg] = 1;
		size_t after = rss();
		libuffd_engine_get_stats(e, &st);
		libuffd_engine_destroy(e);
		munmap(r, size);
		double budget = (double)size / 100 + (4 << 20);
		double resident = (double)after - (double)before - (double)size;
		printf("overhead %-16s allocated %7.2f MiB, resident beyond the region %7.2f MiB; "
		       "budget (1 %% + 4 MiB) %7.2f MiB: %s\n",
		       names[m], (double)st.overhead / (1 << 20), resident / (1 << 20),
		       budget / (1 << 20), (double)st.overhead <= budget ? "met" : "NOT met");
	}
}

/* (z): the snapshot compressed in zstd frames, served lazily in both
 * modes, against decompressing it all; write touches. */
struct mode_name {
	enum libuffd_engine_mode mode;
	const char *tag;
};

static void zstd_rows(const char *dir, const struct mode_name *modes,
		      const char *const *pattern_names)
{
#ifdef HAVE_ZSTD
	static const enum pattern pats[] = { SEQUENTIAL, SPARSE_RUNS, SPARSE_PAGES, RANDOM };
	double lazy_ratio[2][4] = { { NAN, NAN, NAN, NAN }, { NAN, NAN, NAN, NAN } };
	char name[128], sect[128];

	if (zstd_frame == 0 || zstd_frame > ZSTD_SNAPSHOT_FRAME_MAX)
		die("-z: the frame size", EINVAL);
	double tc = now_s();
	make_zstd_file(dir);
	tc = now_s() - tc;
	section = "zstd";
	printf("\n(z) the snapshot compressed with zstd (level 3) in independent frames of %zu KiB:\n"
	       "%.1f MiB, %.2fx smaller (written in %.2f s, not counted); a hot file, mapped.\n"
	       "Lazy: the engine's CALLBACK source decompresses the frames a fault needs\n"
	       "(examples/zstd-snapshot.c; the walk of the frame headers counts); eager:\n"
	       "ZSTD_decompressDCtx of the whole into fresh memory.  Write touches.\n",
	       zstd_frame >> 10, (double)zstd_len / (1 << 20), (double)size / (double)zstd_len, tc);
	printf("Each lazy round runs right after an eager round: the ratio is the median of\n"
	       "the rounds' ratios (the load of a shared machine drifts), 'eager' the median\n"
	       "of the eager rounds beside that row; 'served' is the share of the region's\n"
	       "pages the engine made present (decompressed and copied).\n");
	printf("%-50s %9s %9s %9s %8s %8s\n", "", "us/page", "", "eager", "vs", "");
	printf("%-50s %9s %9s %9s %8s %8s\n", "", "or p50 us", "p99 us", "us/page", "eager",
	       "served");
	for (int k = 0; k < 4; k++) {
		snprintf(sect, sizeof(sect), "-- zstd, write touch, %s", pattern_names[pats[k]]);
		printf("%s\n", sect);
		for (int m = 0; m < 2; m++) {
			engine_mode = modes[m].mode;
			snprintf(name, sizeof(name), "engine %s, zstd callback", modes[m].tag);
			if (!selected(name))
				continue;
			double *lz = calloc(rounds, sizeof(double)), *ea = calloc(rounds, sizeof(double)),
			       *ra = calloc(rounds, sizeof(double)), *p50 = calloc(rounds, sizeof(double)),
			       *p99 = calloc(rounds, sizeof(double)), *sv = calloc(rounds, sizeof(double));
			struct result res, eres;
			if (!lz || !ea || !ra || !p50 || !p99 || !sv)
				die("calloc", ENOMEM);
			memset(&res, 0, sizeof(res));
			run_engine_zstd(pats[k], &res); /* untimed */
			for (unsigned int i = 0; i < rounds; i++) {
				memset(&eres, 0, sizeof(eres));
				run_eager_zstd(SEQUENTIAL, &eres);
				memset(&res, 0, sizeof(res));
				run_engine_zstd(pats[k], &res);
				lz[i] = res.seconds;
				ea[i] = eres.seconds;
				ra[i] = eres.seconds / res.seconds;
				p50[i] = res.p50;
				p99[i] = res.p99;
				sv[i] = (double)last_stats.pages / (double)npages;
			}
			lazy_ratio[m][k] = median(ra, rounds);
			if (pats[k] == RANDOM)
				printf("  %-48s %9.2f %9.2f", name, median(p50, rounds) * 1e6,
				       median(p99, rounds) * 1e6);
			else
				printf("  %-48s %9.3f %9s", name,
				       median(lz, rounds) * 1e6 / (double)npages, "");
			/* The whole pass, latency rows too: the k random touches. */
			printf(" %9.3f %7.2fx %7.1f%%\n", median(ea, rounds) * 1e6 / (double)npages,
			       lazy_ratio[m][k], median(sv, rounds) * 100);
			free(lz);
			free(ea);
			free(ra);
			free(p50);
			free(p99);
			free(sv);
		}
	}
	section = "";
	printf("(the random row's ratio compares the whole pass of %zu touches)\n",
	       random_touches < npages ? random_touches : npages);
	for (int m = 0; m < 2; m++) {
		double f = lazy_ratio[m][1];
		printf("  %-9s zstd 10 %% sparse (64 KiB runs) >= 5x eager decompression: %.2fx: %s\n",
		       modes[m].tag, f, verdict(f >= 5, f));
	}
#else
	(void)dir;
	(void)modes;
	(void)pattern_names;
	printf("\n(z) zstd rows left out: built without libzstd (Debian package libzstd-dev)\n");
#endif
}

int main(int argc, char **argv)
{
	size_t mib = 1024;
	const char *dir = "/var/tmp";
	int c;

	while ((c = getopt(argc, argv, "s:r:t:k:d:f:z:ph")) != -1) {
		switch (c) {
		case 's': mib = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 't': threads = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'k': random_touches = strtoul(optarg, NULL, 0); break;
		case 'd': dir = optarg; break;
		case 'f': only = optarg; break;
		case 'p': cache_in_pages = 1; break;
#ifdef HAVE_ZSTD
		case 'z': zstd_frame = strtoul(optarg, NULL, 0) << 10; break;
#endif
		default:
			fprintf(stderr, "usage: %s [-s MiB (1024)] [-r rounds (5)] "
				"[-t handler-threads (2)] [-k random-touches (20000)] "
				"[-d directory (/var/tmp)] [-z zstd-frame-KiB (32)] "
				"[-f only-rows-matching] [-p (hot file cached in single pages)]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!mib || !rounds || !random_touches) {
		fprintf(stderr, "bench-engine: sizes and counts must be positive\n");
		return 2;
	}
	pg = (size_t)sysconf(_SC_PAGESIZE);
	size = mib << 20;
	npages = size / pg;

	/* The source (the "snapshot"): resident, every page distinct. */
	source = map_fresh(size, MAP_POPULATE);
	for (size_t i = 0; i < size; i += 8)
		*(uint64_t *)(source + i) = i * 0x9E3779B97F4A7C15ull;

	/* Warm-up: a VM's very first touch of guest memory also pays the
	 * hypervisor's fault.  Touch and free twice the size once, so every
	 * round reuses guest pages the host has already backed. */
	double tw = now_s();
	char *w = map_fresh(2 * size, 0);
	for (size_t i = 0; i < 2 * size; i += pg)
		w[i] = 1;
	munmap(w, 2 * size);
	tw = now_s() - tw;

	/* The same bytes as a file, written through and synced, so that
	 * dropping it from the page cache is immediate. */
	char path[4096];
	snprintf(path, sizeof(path), "%s/bench-engine.XXXXXX", dir);
	source_fd = mkstemp(path);
	if (source_fd < 0)
		die(path, errno);
	unlink(path);
	for (size_t off = 0; off < size;) {
		ssize_t n = pwrite(source_fd, source + off, size - off, (off_t)off);
		if (n <= 0)
			die("write of the source file", n < 0 ? errno : EIO);
		off += (size_t)n;
	}
	if (fsync(source_fd) < 0)
		die("fsync", errno);
	memfd = memfd_create("bench-engine", MFD_CLOEXEC);
	if (memfd < 0)
		die("memfd_create", errno);
	for (size_t off = 0; off < size;) {
		ssize_t n = pwrite(memfd, source + off, size - off, (off_t)off);
		if (n <= 0)
			die("write of the memfd", n < 0 ? errno : EIO);
		off += (size_t)n;
	}
	cold = 1;
	set_cache_state();
	double cold_share = cached_share();
	cold = 0;

	printf("bench-engine: %zu MiB region (%zu pages of %zu bytes), %u rounds, medians; "
	       "%u handler thread(s)\n", mib, npages, pg, rounds, threads);
	printf("warm-up: wrote and freed %zu MiB of fresh anonymous memory once (%.2f s) so "
	       "that the host has backed the guest pages, then one untimed round per row\n",
	       2 * mib, tw);
	printf("source: a resident %zu MiB buffer, and the same bytes in a file in %s\n"
	       "and in a memfd (the SHMEM source, against mmap(MAP_SHARED) of it; its write\n"
	       "touches write the memfd); cold rows drop that file from the page cache before\n"
	       "every round with POSIX_FADV_DONTNEED (%.1f %% of it stayed cached when checked);\n"
	       "hot rows find it in the page cache %s\n\n",
	       mib, dir, cold_share * 100,
	       cache_in_pages ? "in single pages, read back one at a time with no read-ahead (-p)" :
				"as one sequential read of the whole leaves it");

	/* Eager: the whole snapshot, whatever is touched later. */
	struct row eager_copy = measure("eager: map+populate+memcpy all", run_eager, SEQUENTIAL);
	struct row eager_hot = measure("eager: map+populate+pread all, hot", run_eager_pread,
				       SEQUENTIAL);
	cold = 1;
	struct row eager_cold = measure("eager: map+populate+pread all, cold", run_eager_pread,
					SEQUENTIAL);
	cold = 0;

	static const struct mode_name modes[] = {
		{ LIBUFFD_ENGINE_IN_THREAD, "in-thread" },
		{ LIBUFFD_ENGINE_HANDLER_THREADS, "handler" },
	};
	/* Engine sources, each with the eager and mmap rows it competes with. */
	enum { S_MEMORY, S_FILE, S_FILE_COLD, S_CALLBACK_COLD, NSRC };
	static const struct {
		enum libuffd_engine_source_kind kind;
		int cold;
		const char *tag;
	} sources[NSRC] = {
		{ LIBUFFD_ENGINE_SOURCE_MEMORY, 0, "memory" },
		{ LIBUFFD_ENGINE_SOURCE_FILE, 0, "file" },
		{ LIBUFFD_ENGINE_SOURCE_FILE, 1, "file, cold" },
		{ LIBUFFD_ENGINE_SOURCE_CALLBACK, 1, "pread callback, cold" },
	};
	static const char *const pattern_names[] = {
		[SEQUENTIAL] = "sequential full touch",
		[RANDOM] = "random single page (latency)",
		[SPARSE_RUNS] = "10 % sparse, 64 KiB runs",
		[SPARSE_PAGES] = "10 % sparse, single pages",
	};
	static const char *const touch_names[] = { "write", "read" };
	struct row native[2][4], mm[2][2][4], pop[2];
	struct row eng[2][2][NSRC][4]; /* [touch][mode][source][pattern] */
	struct row mmsh[2][4], eshm[2][2][4]; /* the memfd: mmap, the SHMEM source by mode */
	struct row erem[2][4]; /* handler threads, memory, serving another process */
	char name[128], sect[128], rname[160];

	printf("Ratios are the other row's time over this row's (> 1: this row is faster);\n"
	       "latency rows compare p50 with the other row's p50.  'eager' is the memcpy row\n"
	       "for the memory source, pread for the file ones; 'mmap' is the hot or cold\n"
	       "mmap row as the source is.  'another process': the handler engine serves a\n"
	       "forked process's region (libuffd_engine_share() over a Unix socket), which\n"
	       "times its own touches from the share on.  'memory's': a hot file row's time\n"
	       "over the memory source's, each round right after a memory round.\n\n");
	printf("%-50s %9s %9s %8s %8s %8s\n", "", "us/page", "", "vs", "vs", "vs");
	printf("%-50s %9s %9s %8s %8s %8s\n", "", "or p50 us", "p99 us", "native", "eager", "mmap");
	printf("%-50s %9.3f\n%-50s %9.3f\n%-50s %9.3f\n", eager_copy.name,
	       eager_copy.seconds * 1e6 / (double)npages, eager_hot.name,
	       eager_hot.seconds * 1e6 / (double)npages, eager_cold.name,
	       eager_cold.seconds * 1e6 / (double)npages);
	for (int t = 0; t < 2; t++) {
		touch_reads = t;
		snprintf(name, sizeof(name), "mmap+MAP_POPULATE, %s", touch_names[t]);
		pop[t] = measure(name, run_mmap_populate, SEQUENTIAL);
		print_table_row(&pop[t], NULL, &eager_hot, NULL);
		for (int pat = 0; pat < 4; pat++) {
			snprintf(sect, sizeof(sect), "-- %s touch, %s", touch_names[t],
				 pattern_names[pat]);
			section = sect;
			printf("%s\n", sect);
			snprintf(name, sizeof(name), "native first touch");
			native[t][pat] = measure(name, run_native, (enum pattern)pat);
			print_table_row(&native[t][pat], NULL, NULL, NULL);
			for (int cd = 0; cd < 2; cd++) {
				cold = cd;
				snprintf(name, sizeof(name), "mmap(MAP_PRIVATE) of the file%s",
					 cd ? ", cold" : "");
				mm[t][cd][pat] = measure(name, run_mmap, (enum pattern)pat);
				print_table_row(&mm[t][cd][pat], &native[t][pat],
						cd ? &eager_cold : &eager_hot, NULL);
			}
			cold = 0;
			for (size_t m = 0; m < 2; m++) {
				engine_mode = modes[m].mode;
				int handler = engine_mode == LIBUFFD_ENGINE_HANDLER_THREADS;
				for (int k = 0; k < NSRC; k++) {
					engine_source = sources[k].kind;
					cold = sources[k].cold;
					snprintf(name, sizeof(name), "engine %s, %s", modes[m].tag,
						 sources[k].tag);
					struct row *r = &eng[t][m][k][pat];
					/* Served to another process too, and then the
					 * reference of that row whatever -f says. */
					int remote = handler && k == S_MEMORY;
					snprintf(rname, sizeof(rname), "%s, another process", name);
					reference = remote && selected(rname);
					pair_with_memory = k == S_FILE;
					*r = measure(name, run_engine, (enum pattern)pat);
					pair_with_memory = 0;
					reference = 0;
					print_table_row(r, &native[t][pat],
							k == S_MEMORY ? &eager_copy :
							cold ? &eager_cold : &eager_hot,
							&mm[t][cold][pat]);
					if (remote)
						erem[t][pat] = measure_remote(
							rname, (enum pattern)pat, &native[t][pat],
							&eager_copy, &mm[t][cold][pat]);
				}
				cold = 0;
			}
			/* A memfd: mmap(MAP_SHARED) of it, and the SHMEM source. */
			mmsh[t][pat] = measure("mmap(MAP_SHARED) of the memfd", run_mmap_memfd,
					       (enum pattern)pat);
			print_table_row(&mmsh[t][pat], &native[t][pat], &eager_copy, NULL);
			engine_source = LIBUFFD_ENGINE_SOURCE_SHMEM;
			for (size_t m = 0; m < 2; m++) {
				engine_mode = modes[m].mode;
				snprintf(name, sizeof(name), "engine %s, memfd (SHMEM)", modes[m].tag);
				eshm[t][m][pat] = measure(name, run_engine, (enum pattern)pat);
				print_table_row(&eshm[t][m][pat], &native[t][pat], &eager_copy,
						&mmsh[t][pat]);
			}
		}
	}
	touch_reads = 0;
	engine_source = LIBUFFD_ENGINE_SOURCE_MEMORY;
	section = "";
	zstd_rows(dir, modes, pattern_names);

	/* The naive handler and the floors, write touches, memory source. */
	struct row a = native[0][SEQUENTIAL], b = eager_copy;
	double native_page = a.seconds * 1e6 / (double)npages;
	printf("\n%-44s %9s %9s %8s %9s %8s\n", "write touches, memory source", "us/page", "",
	       "GB/s", "vs (a)", "vs (b)");
	printf("%-44s %9s %9s %8s %9s %8s\n", "(a) native sequential, (b) eager memcpy",
	       "or p50 us", "p99 us", "", "faster", "faster");
	struct row d = measure("(d) naive handler, 1 page/fault, sequential", run_naive,
			       SEQUENTIAL);
	print_row(&d, a.seconds, b.seconds, native_page);
	d = measure("(d) naive handler, random single page", run_naive, RANDOM);
	print_row(&d, a.seconds, b.seconds, native_page);

	/* The floors, by mode (same order as modes[]). */
	static const struct {
		void (*fn)(enum pattern, struct result *);
		const char *what;
	} floors[] = {
		{ run_in_thread_floor, "in-thread: SIGBUS + 1 copy" },
		{ run_handler_floor, "handler: plain thread per CPU" },
	};
	static const char *const from_names[] = { [FROM_PREAD] = "pread", [FROM_MAPPING] =
								  "mapped" };
	struct row frnd[2], fpages[2], fruns[2], fshm[2];
	/* By mode and shape (random single page, scattered single pages, 64 KiB
	 * runs, sequential), the cheaper way from the file: its paired ratio
	 * to the memory floor, and for the random page its p50. */
	static const enum pattern file_pats[] = { RANDOM, SPARSE_PAGES, SPARSE_RUNS, SEQUENTIAL };
	static const char *const file_pat_names[] = { "random", "sparse pages", "64 KiB runs",
						      "sequential" };
	enum { NFILE_PATS = sizeof(file_pats) / sizeof(file_pats[0]) };
	double file_floor[2][NFILE_PATS], file_floor_p50[2];
	for (int m = 0; m < 2; m++) {
		snprintf(name, sizeof(name), "(e) floor %s, random", floors[m].what);
		frnd[m] = measure(name, floors[m].fn, RANDOM);
		print_row(&frnd[m], a.seconds, b.seconds, native_page);
		snprintf(name, sizeof(name), "(e) floor %s, sparse pages", floors[m].what);
		fpages[m] = measure(name, floors[m].fn, SPARSE_PAGES);
		print_row(&fpages[m], a.seconds, b.seconds, native_page);
		snprintf(name, sizeof(name), "(e) floor %s, 64 KiB runs", floors[m].what);
		fruns[m] = measure(name, floors[m].fn, SPARSE_RUNS);
		print_row(&fruns[m], a.seconds, b.seconds, native_page);
		file_floor_p50[m] = NAN;
		for (int k = 0; k < NFILE_PATS; k++) {
			file_floor[m][k] = NAN;
			for (int f = FROM_PREAD; f <= FROM_MAPPING; f++) {
				floor_from = (enum floor_from)f;
				snprintf(name, sizeof(name), "(e) floor %s, %s, file %s",
					 floors[m].what, file_pat_names[k], from_names[f]);
				pair_with_memory = 1; /* as the file source's rows are */
				struct row fr = measure(name, floors[m].fn, file_pats[k]);
				pair_with_memory = 0;
				print_row(&fr, a.seconds, b.seconds, native_page);
				double v = fr.vs_memory; /* NaN: left out by -f */
				if (!isnan(v) && !(v >= file_floor[m][k])) {
					file_floor[m][k] = v;
					if (!k)
						file_floor_p50[m] = fr.p50;
				}
			}
		}
		/* The memfd's 64 KiB runs, read touches, as the SHMEM rows. */
		floor_from = FROM_MEMFD;
		touch_reads = 1;
		snprintf(name, sizeof(name), "(e) floor %s, 64 KiB runs, memfd read", floors[m].what);
		fshm[m] = measure(name, floors[m].fn, SPARSE_RUNS);
		print_row(&fshm[m], a.seconds, b.seconds, native_page);
		touch_reads = 0;
		floor_from = FROM_MEMORY;
	}
	printf("\n(d) runs on the first %lu MiB and its time is scaled to the full size.\n"
	       "(e) does the least either mode must do per fault, one page (64 KiB runs: the\n"
	       "whole run at its first fault, as a prefetcher that knew where runs end;\n"
	       "sequential: the engine's largest window, 2 MiB, at each fault): a\n"
	       "SIGBUS handler that only copies; a plain poll+read+copy thread bound to each\n"
	       "CPU; with 'file', the pages come from the hot file, by pread(2) into a buffer\n"
	       "or from a MAP_SHARED mapping made with the region (the copy faults them in);\n"
	       "with 'memfd', the region maps the memfd and UFFDIO_CONTINUE maps its pages.\n"
	       "A sequential engine row can take less time than its floor (the engine's\n"
	       "threads copy the next window while the toucher works): there, only the\n"
	       "floor's ratio to the memory source bounds the file rows' ratio.\n"
	       "Ratios: total time of (a) or (b) over this row's total time, for the same size;\n"
	       "for latency rows, p50 over (a)'s cost per page.  'vs' > 1 means this row is faster\n"
	       "(latency rows: the multiple of (a)'s per-page cost, lower is better).\n\n",
	       (unsigned long)((size < NAIVE_MAX ? size : NAIVE_MAX) >> 20));
	printf("targets (this run; 'floor' is what (e) reaches, no engine can beat it here):\n");
	for (int m = 0; m < 2; m++) {
		const char *tag = modes[m].tag;
		const struct row *seq = &eng[0][m][S_MEMORY][SEQUENTIAL],
				 *rnd = &eng[0][m][S_MEMORY][RANDOM],
				 *runs = &eng[0][m][S_MEMORY][SPARSE_RUNS],
				 *pages = &eng[0][m][S_MEMORY][SPARSE_PAGES];
		double fa = a.seconds / seq->seconds, fb = b.seconds / seq->seconds;
		printf("  %-9s sequential >= 1.5x (a) and >= (b): %.2fx, %.2fx: %s\n", tag, fa, fb,
		       verdict(fa >= 1.5 && fb >= 1.0, fa + fb));
		double sb = b.seconds / runs->seconds;
		printf("  %-9s 10 %% sparse >= 5x (b), 64 KiB runs: %.2fx (floor %.2fx): %s\n", tag,
		       sb, b.seconds / fruns[m].seconds, verdict(sb >= 5, sb));
		sb = b.seconds / pages->seconds;
		printf("  %-9s 10 %% sparse >= 5x (b), single pages: %.2fx (floor %.2fx): %s\n", tag,
		       sb, b.seconds / fpages[m].seconds, verdict(sb >= 5, sb));
		double limit = modes[m].mode == LIBUFFD_ENGINE_IN_THREAD ? 2 : 4;
		double ra = rnd->p50 * 1e6 / native_page;
		printf("  %-9s random p50 <= %.0fx (a): %.2fx (floor %.2fx): %s\n", tag, limit, ra,
		       frnd[m].p50 * 1e6 / native_page, verdict(ra <= limit, ra));
	}
	/* The file source against the memory source, round by round. */
	for (int m = 0; m < 2; m++) {
		const char *tag = modes[m].tag;
		double worst = NAN;
		char where[96] = "";
		for (int t = 0; t < 2; t++)
			for (int pat = 0; pat < 4; pat++) {
				double f = eng[t][m][S_FILE][pat].vs_memory;
				if (isnan(f) || f <= worst) /* NaN: a row left out by -f */
					continue;
				worst = f;
				snprintf(where, sizeof(where), "%s touch, %s", touch_names[t],
					 pattern_names[pat]);
			}
		printf("  %-9s file source within 10 %% of memory on every row, each file round "
		       "paired with a memory round: worst %.2fx the time (%s) (floor, random single "
		       "page: %.2fx; sparse pages: %.2fx; 64 KiB runs: %.2fx; sequential: %.2fx): "
		       "%s\n", tag, worst, where, file_floor[m][0], file_floor[m][1],
		       file_floor[m][2], file_floor[m][3], verdict(worst <= 1.10, worst));
	}
	for (int t = 0; t < 2; t++) {
		double r = row_time(&mm[t][0][RANDOM]) / row_time(&eng[t][0][S_FILE][RANDOM]);
		printf("  in-thread random single page, %s, >= 0.6x mmap: %.2fx (floor %.2fx): %s\n",
		       touch_names[t], r, row_time(&mm[t][0][RANDOM]) / file_floor_p50[0],
		       verdict(r >= 0.6, r));
	}
	for (int m = 0; m < 2; m++) {
		/* Zero-copy: read touches within 2x of mmap of the same memfd. */
		double worst = INFINITY;
		for (int pat = 0; pat < 4; pat++) {
			double f = row_time(&mmsh[1][pat]) / row_time(&eshm[1][m][pat]);
			worst = isnan(f) || f < worst ? f : worst; /* NaN: a row left out */
		}
		printf("  %-9s memfd (SHMEM) read touches within 2x of mmap(MAP_SHARED) of it, "
		       "every row: worst %.2fx (floor, 64 KiB runs: %.2fx): %s\n", modes[m].tag,
		       worst, row_time(&mmsh[1][SPARSE_RUNS]) / row_time(&fshm[m]),
		       verdict(worst >= 0.5, worst));
	}
	for (int t = 0; t < 2; t++) {
		double r = row_time(&mm[t][1][SEQUENTIAL]) /
			   row_time(&eng[t][0][S_FILE_COLD][SEQUENTIAL]);
		printf("  in-thread cold sequential %s, >= 1x mmap: %.2fx (floor, the eager pread "
		       "of the cold file: %.2fx): %s\n", touch_names[t], r,
		       row_time(&mm[t][1][SEQUENTIAL]) / eager_cold.seconds, verdict(r >= 1, r));
		/* mmap's p50 below the cheapest fault: that touch found its page
		 * mapped; the engine's would have to find its page resolved. */
		r = row_time(&eng[t][0][S_CALLBACK_COLD][RANDOM]) / row_time(&mm[t][1][RANDOM]);
		printf("  in-thread cold random pread-callback page, %s, <= 2x mmap's p50: %.2fx "
		       "(mmap's p50 %.2f us, the cheapest fault's %.2f us): %s\n", touch_names[t],
		       r, mm[t][1][RANDOM].p50 * 1e6, frnd[0].p50 * 1e6, verdict(r <= 2, r));
	}
	/* No target: what serving another process costs, in one place
	 * (eng[][1]: modes[1], handler threads). */
	double worst = INFINITY, best = -INFINITY;
	for (int t = 0; t < 2; t++)
		for (int pat = 0; pat < 4; pat++) {
			double f = row_time(&eng[t][1][S_MEMORY][pat]) / row_time(&erem[t][pat]);
			if (!isnan(f)) {
				worst = f < worst ? f : worst;
				best = f > best ? f : best;
			}
		}
	printf("  another process: handler-thread engine's time over the same engine serving "
	       "another process");
	if (worst <= best)
		printf(", every row: worst %.2fx, best %.2fx\n", worst, best);
	else
		printf(": %s\n", remote_unsupported ? "left out (kernel older than 6.6, no "
		       "UFFDIO_POISON)" : "not measured");
	overhead();
	return 0;
}
