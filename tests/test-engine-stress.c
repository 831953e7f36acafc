// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine under the scenarios of the kernel's uffd-stress selftest, in
 * both modes, with the data verified page by page.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"

/* Sanitizers run this 5 to 15 times slower: a quarter of the pages. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

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
	st.npages = env ? strtoul(env, NULL, 0) : UNDER_SANITIZER ? 4096 : 16384;
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
