// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-engine: the libuffd engine against native first touch, eager
 * copy and a naive one-page-per-fault handler thread.  Prints one table;
 * every figure is the median of several rounds in this run.
 *
 *   bench-engine [-s MiB (1024)] [-r rounds (5)] [-t handler-threads (2)]
 *                [-k random-touches (20000)]
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "libuffd-engine.h"
#include "stats.h"

#define NAIVE_MAX (64ul << 20) /* the naive handler is slow: a slice of the size */

static size_t pg, size, npages;
static unsigned int rounds = 5, threads = 2;
static size_t random_touches = 20000;
static char *source;

static double now_s(void)
{
	return now_ns() / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-engine: %s: %s\n", what, strerror(err));
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

static void touch(char *r, enum pattern pat, struct result *res)
{
	double t0 = now_s();

	if (pat == SEQUENTIAL) {
		for (size_t i = 0; i < npages; i++)
			((volatile char *)r)[i * pg] = 1;
	} else if (pat == SPARSE_RUNS) {
		for (size_t g = 0; g + 10 * RUN_PAGES <= npages; g += 10 * RUN_PAGES) {
			size_t first = g + next_rand() % (9 * RUN_PAGES + 1);
			for (size_t i = first; i < first + RUN_PAGES; i++)
				((volatile char *)r)[i * pg] = 1;
		}
	} else if (pat == SPARSE_PAGES) {
		for (size_t g = 0; g + 10 <= npages; g += 10)
			((volatile char *)r)[(g + next_rand() % 10) * pg] = 1;
	} else {
		size_t k = random_touches < npages ? random_touches : npages;
		size_t *perm = random_pages(k);
		double *lat = malloc(k * sizeof(*lat));
		if (!lat)
			die("malloc", ENOMEM);
		t0 = now_s();
		for (size_t i = 0; i < k; i++) {
			double a = now_s();
			((volatile char *)r)[perm[i] * pg] = 1;
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

/* ---- (c) the engine ------------------------------------------------------ */

static enum libuffd_engine_mode engine_mode;
static unsigned int engine_spin;
static struct libuffd_engine_stats last_stats;

static void run_engine(enum pattern pat, struct result *res)
{
	struct libuffd_engine_source src = { .kind = LIBUFFD_ENGINE_SOURCE_MEMORY, .buf = source,
					     .size = size };
	struct libuffd_engine_opts o = { .mode = engine_mode, .threads = threads,
					 .spin_us = engine_spin };
	struct libuffd_engine *e;
	char *r = map_fresh(size, 0);
	double t0 = now_s();
	int err = libuffd_engine_create(r, size, &src, &o, &e);
	if (err < 0)
		die("libuffd_engine_create", -err);
	double setup = now_s() - t0;
	touch(r, pat, res);
	res->seconds += setup; /* lazy costs count from the moment the region exists */
	libuffd_engine_get_stats(e, &last_stats);
	libuffd_engine_destroy(e);
	munmap(r, size);
}

/* ---- (d) the naive handler, and the floors ------------------------------
 * A plain handler thread: one message, one page, one copy.  (d) is the
 * one most programs write (one thread, wherever the scheduler puts it).
 * The handler floor is the same loop with a thread bound to each CPU, the
 * wake-up structure the engine uses; the in-thread floor is a SIGBUS
 * handler that only copies.  Neither does anything an engine can skip:
 * they bound from below what either mode can cost on this machine. */

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

	if (n->cpu >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(n->cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
	for (;;) {
		poll(pfd, 2, -1);
		if (pfd[1].revents)
			return NULL;
		if (libuffd_read_events(n->uffd, &ev, 1) != 1 || ev.type != LIBUFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t a = ev.pagefault.address & ~(uint64_t)(pg - 1);
		int r = libuffd_copy(n->uffd, (void *)(uintptr_t)a,
				     source + (a - (uintptr_t)n->region), pg, 0, NULL);
		if (r == -EEXIST)
			libuffd_wake(n->uffd, (void *)(uintptr_t)a, pg);
	}
}

static int plain_uffd(uint64_t features, char *region, size_t len)
{
	struct libuffd_api api;
	uint64_t ioctls = 0;
	int fd = libuffd_open(NULL, NULL);
	int r = fd < 0 ? fd : libuffd_api_handshake(fd, features, features, &api);
	if (r == 0)
		r = libuffd_register(fd, region, len, LIBUFFD_REGISTER_MISSING, &ioctls);
	if (r < 0)
		die("plain handler setup", -r);
	/* The plain handlers copy, and wake after EEXIST. */
	if ((ioctls & (LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_WAKE)) !=
	    (LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_WAKE))
		die("plain handler setup: UFFDIO_REGISTER offers no UFFDIO_COPY or UFFDIO_WAKE",
		    EOPNOTSUPP);
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
	char *region = map_fresh(len, 0);
	double t0 = now_s();
	int fd = plain_uffd(0, region, len);
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
	munmap(region, len);
}

static void run_naive(enum pattern pat, struct result *res)
{
	run_plain(pat, res, 0);
}

static void run_handler_floor(enum pattern pat, struct result *res)
{
	run_plain(pat, res, 1);
}

static int floor_uffd;
static char *floor_region;

static void floor_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr & ~(uintptr_t)(pg - 1);
	libuffd_copy(floor_uffd, (void *)a, source + (a - (uintptr_t)floor_region), pg,
		     LIBUFFD_DONTWAKE, NULL);
}

static void run_in_thread_floor(enum pattern pat, struct result *res)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = floor_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);

	floor_region = map_fresh(size, 0);
	double t0 = now_s();
	floor_uffd = plain_uffd(LIBUFFD_FEATURE_SIGBUS, floor_region, size);
	sigaction(SIGBUS, &sa, &old); /* the engine's handler is put back below */
	double setup = now_s() - t0;
	touch(floor_region, pat, res);
	res->seconds += setup;
	sigaction(SIGBUS, &old, NULL);
	close(floor_uffd);
	munmap(floor_region, size);
}

/* ---- Rounds and the table -------------------------------------------------- */

struct row {
	const char *name;
	double seconds, p50, p99;
	int has_latency;
};

static struct row measure(const char *name, void (*fn)(enum pattern, struct result *),
			  enum pattern pat)
{
	double *s = calloc(rounds, sizeof(double)), *p50 = calloc(rounds, sizeof(double)),
	       *p99 = calloc(rounds, sizeof(double));
	struct result res;

	if (!s || !p50 || !p99)
		die("calloc", ENOMEM);
	memset(&res, 0, sizeof(res));
	fn(pat, &res); /* one untimed round: caches, page allocator, code */
	for (unsigned int i = 0; i < rounds; i++) {
		memset(&res, 0, sizeof(res));
		fn(pat, &res);
		s[i] = res.seconds;
		p50[i] = res.p50;
		p99[i] = res.p99;
	}
	struct row row = { name, median(s, rounds), median(p50, rounds), median(p99, rounds),
			   pat == RANDOM };
	free(s);
	free(p50);
	free(p99);
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

int main(int argc, char **argv)
{
	size_t mib = 1024;
	int c;

	while ((c = getopt(argc, argv, "s:r:t:k:h")) != -1) {
		switch (c) {
		case 's': mib = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 't': threads = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'k': random_touches = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [-s MiB (1024)] [-r rounds (5)] "
				"[-t handler-threads (2)] [-k random-touches (20000)]\n", argv[0]);
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

	printf("bench-engine: %zu MiB region (%zu pages of %zu bytes), %u rounds, medians; "
	       "%u handler thread(s)\n", mib, npages, pg, rounds, threads);
	printf("warm-up: wrote and freed %zu MiB of fresh anonymous memory once (%.2f s) so "
	       "that the host has backed the guest pages, then one untimed round per row\n",
	       2 * mib, tw);
	printf("source: a resident %zu MiB buffer; native and eager have no source to read\n\n",
	       mib);
	printf("%-44s %9s %9s %8s %9s %8s\n", "", "us/page", "", "GB/s", "vs (a)", "vs (b)");
	printf("%-44s %9s %9s %8s %9s %8s\n", "", "or p50 us", "p99 us", "", "faster", "faster");

	struct row a = measure("(a) native first-touch write, sequential", run_native, SEQUENTIAL);
	double native_page = a.seconds * 1e6 / (double)npages;
	struct row b = measure("(b) eager: map+populate+copy all", run_eager, SEQUENTIAL);
	print_row(&a, a.seconds, b.seconds, native_page);
	print_row(&b, a.seconds, b.seconds, native_page);
	struct row ar = measure("(a) native, random single page (latency)", run_native, RANDOM);
	printf("%-44s %9.2f %9.2f %8s %8.2fx %8s\n", ar.name, ar.p50 * 1e6, ar.p99 * 1e6, "-",
	       ar.p50 * 1e6 / native_page, "-");

	static const struct {
		enum libuffd_engine_mode mode;
		unsigned int spin;
		const char *tag;
	} modes[] = {
		{ LIBUFFD_ENGINE_IN_THREAD, 0, "in-thread" },
		{ LIBUFFD_ENGINE_HANDLER_THREADS, 0, "handler" },
		{ LIBUFFD_ENGINE_HANDLER_THREADS, 200, "handler+spin200us" },
	};
	char name[96];
	struct row seq[3], rnd[3], runs[3], pages[3];
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		engine_mode = modes[m].mode;
		engine_spin = modes[m].spin;
		snprintf(name, sizeof(name), "(c) %s: sequential full touch", modes[m].tag);
		seq[m] = measure(name, run_engine, SEQUENTIAL);
		print_row(&seq[m], a.seconds, b.seconds, native_page);
		snprintf(name, sizeof(name), "(c) %s: random single page (latency)", modes[m].tag);
		rnd[m] = measure(name, run_engine, RANDOM);
		print_row(&rnd[m], a.seconds, b.seconds, native_page);
		snprintf(name, sizeof(name), "(c) %s: 10 %% sparse, 64 KiB runs", modes[m].tag);
		runs[m] = measure(name, run_engine, SPARSE_RUNS);
		print_row(&runs[m], a.seconds, b.seconds, native_page);
		snprintf(name, sizeof(name), "(c) %s: 10 %% sparse, single pages", modes[m].tag);
		pages[m] = measure(name, run_engine, SPARSE_PAGES);
		print_row(&pages[m], a.seconds, b.seconds, native_page);
	}
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
	struct row frnd[2], fpages[2];
	for (int m = 0; m < 2; m++) {
		snprintf(name, sizeof(name), "(e) floor %s, random", floors[m].what);
		frnd[m] = measure(name, floors[m].fn, RANDOM);
		print_row(&frnd[m], a.seconds, b.seconds, native_page);
		snprintf(name, sizeof(name), "(e) floor %s, sparse pages", floors[m].what);
		fpages[m] = measure(name, floors[m].fn, SPARSE_PAGES);
		print_row(&fpages[m], a.seconds, b.seconds, native_page);
	}
	printf("\n(d) runs on the first %lu MiB and its time is scaled to the full size.\n"
	       "(e) does the least either mode must do per fault, one page: a SIGBUS handler\n"
	       "that only copies it; a plain poll+read+copy thread bound to each CPU.\n"
	       "Ratios: total time of (a) or (b) over this row's total time, for the same size;\n"
	       "for latency rows, p50 over (a)'s cost per page.  'vs' > 1 means this row is faster\n"
	       "(latency rows: the multiple of (a)'s per-page cost, lower is better).\n\n",
	       (unsigned long)((size < NAIVE_MAX ? size : NAIVE_MAX) >> 20));
	printf("targets (this run; 'floor' is what (e) reaches, no engine can beat it here):\n");
	for (int m = 0; m < 2; m++) {
		const char *tag = modes[m].tag;
		double fa = a.seconds / seq[m].seconds, fb = b.seconds / seq[m].seconds;
		printf("  %-9s sequential >= 1.5x (a) and >= (b): %.2fx, %.2fx: %s\n", tag, fa, fb,
		       fa >= 1.5 && fb >= 1.0 ? "met" : "NOT met");
		double sb = b.seconds / runs[m].seconds;
		printf("  %-9s 10 %% sparse >= 5x (b), 64 KiB runs: %.2fx: %s\n", tag, sb,
		       sb >= 5 ? "met" : "NOT met");
		sb = b.seconds / pages[m].seconds;
		printf("  %-9s 10 %% sparse >= 5x (b), single pages: %.2fx (floor %.2fx): %s\n", tag,
		       sb, b.seconds / fpages[m].seconds, sb >= 5 ? "met" : "NOT met");
		double limit = modes[m].mode == LIBUFFD_ENGINE_IN_THREAD ? 2 : 4;
		double ra = rnd[m].p50 * 1e6 / native_page;
		printf("  %-9s random p50 <= %.0fx (a): %.2fx (floor %.2fx): %s\n", tag, limit, ra,
		       frnd[m].p50 * 1e6 / native_page, ra <= limit ? "met" : "NOT met");
	}
	overhead();
	return 0;
}
