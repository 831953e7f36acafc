// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fault-serving engine: page sources, prefetch, resolution with the
 * kernel's partial-progress errors, events, handler threads, populate.
 * Everything on the fault path (engine_fault() and below) is
 * async-signal-safe: the in-thread mode calls it from a SIGBUS handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine-internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#define BATCH 64          /* messages per read */
#define PENDING 1024      /* fault messages a handler thread can hold */
#define SCRATCH_MAX (256u << 10)
#define AHEAD_CHUNK 16 /* pages a read-ahead copy at a time */
#define THREAD_STACK (256u << 10)
#define BITS_PER_WORD (sizeof(unsigned long) * CHAR_BIT)

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---- Pages removed by events read as zero ---------------------------- */

static int is_zeroed(struct libuffd_engine *e, size_t p)
{
	return (LOAD(&e->zeroed[p / BITS_PER_WORD]) >> (p % BITS_PER_WORD)) & 1;
}

static void mark_zeroed(struct libuffd_engine *e, uintptr_t start, uintptr_t end)
{
	uintptr_t base = LOAD(&e->base);
	uintptr_t lo = start > base ? start : base, hi = end < base + e->len ? end : base + e->len;

	for (uintptr_t a = lo; a < hi; a += e->page) {
		size_t p = (a - base) >> e->shift;
		__atomic_fetch_or(&e->zeroed[p / BITS_PER_WORD], 1ul << (p % BITS_PER_WORD),
				  __ATOMIC_RELEASE);
	}
}

/* ---- Prefetch ---------------------------------------------------------
 * A few streams remember where the next sequential fault would land
 * (encoded as (next page + 1) << 8 | window order).  A fault there grows
 * the window and, from the stream's second window on, queues the window
 * after it as read-ahead for the engine's own threads, which copy it while
 * the faulting thread works on the first; any other fault starts a new
 * stream with a single page.
 * Races between faulting threads only blur the prediction. */

struct window {
	size_t n;               /* pages to resolve now, from the fault */
	size_t ahead_p, ahead_n; /* read-ahead to queue (ahead_n 0: none) */
};

static uint64_t stream_enc(size_t next, unsigned int order)
{
	return ((uint64_t)(next + 1) << 8) | order;
}

static void prefetch_window(struct libuffd_engine *e, size_t p, struct window *w)
{
	w->ahead_n = 0;
	for (int i = 0; i < ENGINE_STREAMS; i++) {
		uint64_t s = LOAD(&e->streams[i]);
		if (!s)
			continue;
		size_t next = (size_t)(s >> 8) - 1;
		unsigned int order = s & 0xff;
		size_t last = (size_t)1 << order;
		if (p != next) {
			if (order && p < next && p + last >= next) {
				/* In the read-ahead not done yet: finish it now. */
				w->n = next - p;
				return;
			}
			continue;
		}
		order = order < e->min_order ? e->min_order : order + 1;
		if (order > e->max_order)
			order = e->max_order;
		w->n = (size_t)1 << order;
		next = p + w->n;
		/* Read ahead once the stream has outgrown its first window: a
		 * short run (a clustered working set) ends inside that window,
		 * and copying past it would only waste pages and a wake-up. */
		if (order > e->min_order) {
			w->ahead_p = next;
			w->ahead_n = w->n;
			next += w->n;
		}
		STORE(&e->streams[i], stream_enc(next, order));
		return;
	}
	unsigned int i = __atomic_fetch_add(&e->stream_next, 1, __ATOMIC_RELAXED) % ENGINE_STREAMS;
	STORE(&e->streams[i], stream_enc(p + 1, 0));
	w->n = 1;
}

/* Queue read-ahead (best effort: a full ring overwrites the oldest). */
static void queue_ahead(struct libuffd_engine *e, const struct window *w, int wr, int kick)
{
	if (!w->ahead_n || w->ahead_p >= e->npages)
		return;
	unsigned int order = (unsigned int)__builtin_ctzl(w->ahead_n);
	unsigned int i = __atomic_fetch_add(&e->ahead_next, 1, __ATOMIC_RELAXED) % ENGINE_AHEAD;
	STORE(&e->ahead[i], ((uint64_t)(w->ahead_p + 1) << 9) | (uint64_t)!!wr << 8 | order);
	uint64_t one = 1;
	if (kick && write(e->kick_efd, &one, sizeof(one)) < 0)
		return; /* the counter is full: a kick is pending anyway */
}

/* ---- Sources ---------------------------------------------------------- */

struct span {
	const void *from; /* NULL: zeros */
	size_t len;
	int slot;         /* scratch slot to give back, or -1 */
};

static int scratch_take(struct libuffd_engine *e)
{
	unsigned long all = e->nscratch >= BITS_PER_WORD ? ~0ul : (1ul << e->nscratch) - 1;

	for (;;) {
		unsigned long busy = LOAD(&e->scratch_busy);
		unsigned long avail = ~busy & all;
		if (!avail) {
			sched_yield(); /* all taken: wait for one */
			continue;
		}
		int i = __builtin_ctzl(avail);
		if (__atomic_compare_exchange_n(&e->scratch_busy, &busy, busy | (1ul << i), 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return i;
	}
}

static void span_release(struct libuffd_engine *e, struct span *sp)
{
	if (sp->slot >= 0)
		__atomic_fetch_and(&e->scratch_busy, ~(1ul << sp->slot), __ATOMIC_RELEASE);
	sp->slot = -1;
}

/* The source bytes at region offset off, up to len (page multiples). */
static int source_span(struct libuffd_engine *e, size_t off, size_t len, struct span *sp)
{
	sp->from = NULL;
	sp->len = len;
	sp->slot = -1;
	switch (e->src.kind) {
	case LIBUFFD_ENGINE_SOURCE_ZERO:
		return 0;
	case LIBUFFD_ENGINE_SOURCE_MEMORY:
	case LIBUFFD_ENGINE_SOURCE_FILE:
		if (off < e->body_len) {
			sp->from = e->body + off;
			sp->len = min_sz(len, e->body_len - off);
			/* Map the page cache pages in one call: UFFDIO_COPY
			 * otherwise takes its slow path for each of them. */
			if (e->src.kind == LIBUFFD_ENGINE_SOURCE_FILE)
				uffd_sys_madvise((void *)sp->from, sp->len, MADV_POPULATE_READ);
		} else if (e->tail && off == e->body_len) {
			sp->from = e->tail;
			sp->len = e->page;
		}
		return 0;
	case LIBUFFD_ENGINE_SOURCE_CALLBACK: {
		sp->slot = scratch_take(e);
		char *buf = e->scratch + (size_t)sp->slot * e->scratch_len;
		sp->len = min_sz(len, e->scratch_len);
		int r = e->src.fill(e->src.ctx, off, buf, sp->len);
		if (r < 0) {
			span_release(e, sp);
			return r;
		}
		sp->from = buf;
		return 0;
	}
	}
	return -EINVAL;
}

/* Make [dst, dst + sp->len) present from the span. */
static int fill(struct libuffd_engine *e, uintptr_t dst, const struct span *sp, int write,
		size_t *done)
{
	/* With UFFD_FEATURE_SIGBUS nobody waits in the kernel: skip the wake. */
	unsigned int mode = e->mode == LIBUFFD_ENGINE_IN_THREAD ? LIBUFFD_DONTWAKE : 0;

	if (sp->from)
		return libuffd_copy(e->uffd, (void *)dst, sp->from, sp->len, mode, done);
	/* Zeros: the shared zero page for a read; for a write, real pages
	 * now rather than one copy-on-write fault per page later. */
	if (!write)
		return libuffd_zeropage(e->uffd, (void *)dst, sp->len, mode, done);
	return libuffd_copy(e->uffd, (void *)dst, e->zeros, min_sz(sp->len, e->zeros_len), mode,
			    done);
}

/* ---- Resolution -------------------------------------------------------- */

/* A thread that has read a remove event but not yet marked the pages
 * would let us copy the source into pages that must read as zero. */
void engine_wait_event_readers(struct libuffd_engine *e)
{
	while (LOAD(&e->ev_readers))
		sched_yield();
}

struct pending {
	struct libuffd_event *ev;
	unsigned int n, cap;
};

/*
 * Resolve pages [p, p + n) at base.  *covered: pages from p known present
 * afterwards.  EEXIST is progress (a racer resolved the page); EAGAIN
 * means an event is pending: handler threads read it themselves (they
 * may be the only readers; fault messages go to pd), other callers wait
 * for the readers.  Returns 0, or -errno when page p is not resolved.
 */
static int resolve(struct libuffd_engine *e, uintptr_t base, size_t p, size_t n, int write,
		   struct pending *pd, size_t *covered)
{
	size_t i = p, end = p + n;

	*covered = 0;
	engine_wait_event_readers(e);
	while (i < end) {
		int z = is_zeroed(e, i);
		size_t j = i + 1;
		while (j < end && is_zeroed(e, j) == z)
			j++;
		size_t off = i << e->shift, done = 0;
		struct span sp = { .len = (j - i) << e->shift, .slot = -1 };
		int r = z ? 0 : source_span(e, off, sp.len, &sp);
		if (r == 0)
			r = fill(e, base + off, &sp, write, &done);
		span_release(e, &sp);
		if (done) {
			ENGINE_COUNT(e, pages, done >> e->shift);
			i += done >> e->shift;
			*covered = i - p;
		}
		if (r == 0)
			continue;
		if (r == -EAGAIN) {
			ENGINE_COUNT(e, eagain, 1);
			if (!pd || !engine_drain_events(e, pd->ev, &pd->n, pd->cap))
				sched_yield();
			engine_wait_event_readers(e);
			continue;
		}
		if (r == -EEXIST) {
			ENGINE_COUNT(e, eexist, 1);
			/* Whoever resolved it woke its waiters; a fault message
			 * for it may still be ours to answer. */
			if (pd && i == p)
				libuffd_wake(e->uffd, (void *)(base + off), e->page);
			*covered = i + 1 - p;
			return 0;
		}
		/* A window that crosses the end of its VMA (a partial munmap or
		 * mprotect split the region) fails whole with ENOENT: halve it
		 * until it fits, down to the faulting page alone. */
		if (r == -ENOENT && i == p && end > p + 1) {
			end = p + (end - p) / 2;
			continue;
		}
		/* Prefetch is best effort: only the faulting page must succeed. */
		return i == p ? r : 0;
	}
	return 0;
}

int engine_fault(struct libuffd_engine *e, size_t p, int write)
{
	struct window w;
	size_t covered;

	prefetch_window(e, p, &w);
	/* The read-ahead first, so that it is copied while we copy ours. */
	queue_ahead(e, &w, write, 1);
	int r = resolve(e, LOAD(&e->base), p, min_sz(w.n, e->npages - p), write, NULL, &covered);

	if (r == 0)
		ENGINE_COUNT(e, faults, 1);
	return r;
}

/* ---- Events ------------------------------------------------------------- */

static void apply_event(struct libuffd_engine *e, const struct libuffd_event *ev)
{
	switch (ev->type) {
	case LIBUFFD_EVENT_REMOVE:
	case LIBUFFD_EVENT_UNMAP:
		mark_zeroed(e, ev->remove.start, ev->remove.end);
		break;
	case LIBUFFD_EVENT_REMAP:
		if (ev->remap.from == LOAD(&e->base) && ev->remap.len >= e->len)
			STORE(&e->base, (uintptr_t)ev->remap.to);
		else /* a part moved away: what stays reads as zero there */
			mark_zeroed(e, ev->remap.from, ev->remap.from + ev->remap.len);
		break;
	default:
		return;
	}
	ENGINE_COUNT(e, events, 1);
}

int engine_drain_events(struct libuffd_engine *e, struct libuffd_event *faults,
			unsigned int *nfaults, unsigned int cap)
{
	struct libuffd_event ev[BATCH];
	unsigned int max = BATCH;

	if (faults) {
		if (*nfaults >= cap)
			return 0; /* full: another reader will take them */
		max = min_sz(max, cap - *nfaults);
	}
	__atomic_add_fetch(&e->ev_readers, 1, __ATOMIC_SEQ_CST);
	int n = libuffd_read_events(e->uffd, ev, max);
	for (int i = 0; i < n; i++) {
		if (ev[i].type != LIBUFFD_EVENT_PAGEFAULT)
			apply_event(e, &ev[i]);
		else if (faults)
			faults[(*nfaults)++] = ev[i];
	}
	__atomic_sub_fetch(&e->ev_readers, 1, __ATOMIC_RELEASE);
	return n > 0 ? n : 0;
}

/* ---- Handler threads ------------------------------------------------------ */

static int cmp_fault(const void *a, const void *b)
{
	uint64_t x = ((const struct libuffd_event *)a)->pagefault.address;
	uint64_t y = ((const struct libuffd_event *)b)->pagefault.address;
	return x < y ? -1 : x > y;
}

/* Resolve a batch of fault messages, sorted so that duplicates and
 * faults inside an earlier prefetch window fold into one resolution. */
static void serve_batch(struct libuffd_engine *e, struct libuffd_event *ev, unsigned int n,
			struct pending *more)
{
	uintptr_t covered_end = 0;

	qsort(ev, n, sizeof(ev[0]), cmp_fault);
	for (unsigned int k = 0; k < n; k++) {
		/* Another thread may have read a remap that it has not applied
		 * yet: the kernel no longer holds resolutions back for it. */
		engine_wait_event_readers(e);
		uintptr_t base = LOAD(&e->base);
		uintptr_t a = ev[k].pagefault.address & ~(uintptr_t)(e->page - 1);
		int write = !!(ev[k].pagefault.flags & LIBUFFD_FAULT_WRITE);
		if (a < covered_end) {
			ENGINE_COUNT(e, folded, 1);
			continue;
		}
		size_t covered = 0;
		if (a - base >= e->len) {
			/* Not where we serve (a part moved by mremap): zero,
			 * so that nobody waits forever. */
			libuffd_zeropage(e->uffd, (void *)a, e->page, 0, NULL);
			libuffd_wake(e->uffd, (void *)a, e->page);
			covered_end = a + e->page;
			continue;
		}
		size_t p = (a - base) >> e->shift;
		struct window w;
		prefetch_window(e, p, &w);
		/* An idle handler thread takes the read-ahead at once; with one
		 * thread, this one reads ahead after the batch. */
		queue_ahead(e, &w, write, e->nthreads_wanted > 1);
		int r = resolve(e, base, p, min_sz(w.n, e->npages - p), write, more, &covered);
		if (r < 0) {
			/* The source failed: the access gets SIGBUS, as in the
			 * in-thread mode (or faults again where poison is missing). */
			if (libuffd_poison(e->uffd, (void *)a, e->page, 0, NULL) < 0)
				libuffd_wake(e->uffd, (void *)a, e->page);
		} else
			ENGINE_COUNT(e, faults, 1);
		covered_end = a + ((covered ? covered : 1) << e->shift);
	}
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Resolve the queued read-ahead; faults read meanwhile go to pd.
 * Returns whether there was any. */
static int read_ahead(struct libuffd_engine *e, struct pending *pd)
{
	int any = 0;

	for (int i = 0; i < ENGINE_AHEAD; i++) {
		/* A plain load first: most slots are empty, and an exchange
		 * would take each cache line exclusive for nothing. */
		if (!LOAD(&e->ahead[i]))
			continue;
		uint64_t v = __atomic_exchange_n(&e->ahead[i], 0, __ATOMIC_ACQ_REL);
		if (!v)
			continue;
		size_t p = (size_t)(v >> 9) - 1, covered;
		if (p >= e->npages)
			continue;
		size_t end = p + min_sz((size_t)1 << (v & 0xff), e->npages - p);
		/* From the end backwards: a thread that faults in this window
		 * meanwhile resolves it forwards, and the two meet once
		 * (EEXIST) instead of colliding page after page. */
		for (size_t hi = end; hi > p;) {
			size_t lo = hi - p > AHEAD_CHUNK ? hi - AHEAD_CHUNK : p;
			if (resolve(e, LOAD(&e->base), lo, hi - lo, (v >> 8) & 1, pd, &covered) ||
			    covered < hi - lo)
				break;
			hi = lo;
		}
		any = 1;
	}
	return any;
}

static void *handler_main(void *arg)
{
	struct libuffd_engine *e = arg;
	/* With several threads the first answers faults only (and is the
	 * only one to spin), so that another reads ahead meanwhile. */
	unsigned int seq = __atomic_fetch_add(&e->thread_seq, 1, __ATOMIC_RELAXED);
	int reads_ahead = seq > 0 || e->mode == LIBUFFD_ENGINE_IN_THREAD || e->nthreads_wanted == 1;
	int spins = e->spin_us && seq == 0;
	/* On the stack (64 KiB of THREAD_STACK): a thread that could not
	 * allocate them would leave faults and events unread for ever. */
	struct libuffd_event bufs[2 * PENDING];
	struct pending cur = { bufs, 0, PENDING }, more = { bufs + PENDING, 0, PENDING };
	/* Every thread polls the descriptor: the one woken on the faulting
	 * CPU usually answers first, which on a VM beats waking one thread
	 * (EPOLLEXCLUSIVE measured ten times slower here). */
	struct pollfd pfd[3] = { { .fd = e->uffd, .events = POLLIN },
				 { .fd = e->stop_efd, .events = POLLIN },
				 { .fd = e->kick_efd, .events = POLLIN } };
	nfds_t nfds = reads_ahead ? 3 : 2;
	double spin_until = 0;

	for (;;) {
		int timeout = -1;
		if (!cur.n) {
			/* Poll before reading: a reader holds back resolvers
			 * (engine_wait_event_readers()), so it must not read blindly. */
			timeout = spin_until && now_us() < spin_until ? 0 : -1;
			if (poll(pfd, nfds, timeout) < 0)
				continue;
			if (nfds == 3 && pfd[2].revents) {
				uint64_t v;
				if (read(e->kick_efd, &v, sizeof(v)) < 0)
					v = 0; /* another thread reset it */
			}
			if (pfd[0].revents)
				engine_drain_events(e, cur.ev, &cur.n, cur.cap);
		}
		if (cur.n) {
			/* Faults read while resolving (EAGAIN) are served next. */
			while (cur.n) {
				serve_batch(e, cur.ev, cur.n, &more);
				struct pending t = cur;
				cur = more;
				more = t;
				more.n = 0;
			}
			if (reads_ahead)
				read_ahead(e, &cur); /* its faults: next round, without waiting */
			if (spins)
				spin_until = now_us() + e->spin_us;
			continue;
		}
		if (reads_ahead && read_ahead(e, &cur))
			continue;
		/* Stop only once nothing is pending: no fault is left waiting. */
		if (LOAD(&e->stopping) && !(pfd[0].revents & POLLIN))
			break;
		if (timeout == -1)
			spin_until = 0;
	}
	return NULL;
}

static int start_threads(struct libuffd_engine *e, unsigned int n)
{
	pthread_attr_t attr;
	sigset_t all, old;

	e->nthreads_wanted = n;
	e->threads = calloc(n, sizeof(*e->threads));
	if (!e->threads)
		return -ENOMEM;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	/* The application's signals are not for our threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Thread i runs on the i-th CPU we may use: whichever CPU a fault is
	 * taken on, a handler there is woken as the faulting thread sleeps,
	 * instead of a cross-CPU wake-up (tens of µs on a VM). */
	cpu_set_t allowed;
	int ncpus = 0, cpus[CPU_SETSIZE];
	if (n > 1 && sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpus++] = c;
	int r = 0;
	for (; e->nthreads < n; e->nthreads++) {
		if (ncpus > 1) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpus[e->nthreads % (unsigned int)ncpus], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		r = -pthread_create(&e->threads[e->nthreads], &attr, handler_main, e);
		if (r)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	e->overhead += (size_t)n * (THREAD_STACK + 2 * PENDING * sizeof(struct libuffd_event));
	return r;
}

static void stop_threads(struct libuffd_engine *e)
{
	uint64_t one = 1;

	STORE(&e->stopping, 1);
	if (e->nthreads && write(e->stop_efd, &one, sizeof(one)) < 0)
		abort(); /* an eventfd write cannot fail here */
	for (unsigned int i = 0; i < e->nthreads; i++)
		pthread_join(e->threads[i], NULL);
	e->nthreads = 0;
}

/* ---- Creation ------------------------------------------------------------- */

static int order_of(size_t bytes, unsigned int shift, unsigned int *order)
{
	size_t pages = bytes >> shift;

	if (!pages || (pages << shift) != bytes || (pages & (pages - 1)))
		return -EINVAL;
	*order = (unsigned int)__builtin_ctzl(pages);
	return 0;
}

static int setup_source(struct libuffd_engine *e, const struct libuffd_engine_source *src)
{
	e->src = *src;
	switch (src->kind) {
	case LIBUFFD_ENGINE_SOURCE_ZERO:
		return 0;
	case LIBUFFD_ENGINE_SOURCE_MEMORY:
		if (!src->buf && src->size)
			return -EINVAL;
		e->body = src->buf;
		e->body_len = src->size & ~(e->page - 1);
		if (src->size % e->page) {
			e->tail = aligned_alloc(e->page, e->page);
			if (!e->tail)
				return -ENOMEM;
			memset(e->tail, 0, e->page);
			memcpy(e->tail, e->body + e->body_len, src->size % e->page);
			e->overhead += e->page;
		}
		return 0;
	case LIBUFFD_ENGINE_SOURCE_FILE: {
		struct stat st;
		if (src->fd < 0 || src->offset % e->page)
			return -EINVAL;
		if (fstat(src->fd, &st) < 0)
			return -errno;
		if ((uint64_t)st.st_size <= src->offset)
			return 0; /* all zero */
		size_t flen = (size_t)((uint64_t)st.st_size - src->offset);
		/* The page past EOF reads as zero through the mapping. */
		e->file_map_len = (min_sz(flen, e->len) + e->page - 1) & ~(e->page - 1);
		void *m = mmap(NULL, e->file_map_len, PROT_READ, MAP_SHARED, src->fd,
			       (off_t)src->offset);
		if (m == MAP_FAILED)
			return -errno;
		e->file_map = m;
		e->body = m;
		e->body_len = e->file_map_len;
		return 0;
	}
	case LIBUFFD_ENGINE_SOURCE_CALLBACK:
		if (!src->fill)
			return -EINVAL;
		e->scratch_len = min_sz(SCRATCH_MAX, e->page << e->max_order);
		e->nscratch = e->mode == LIBUFFD_ENGINE_IN_THREAD ? 8 :
			      (e->nthreads < 64 ? (unsigned int)e->nthreads : 64);
		if (e->nscratch == 0)
			e->nscratch = 1;
		e->scratch = mmap(NULL, e->scratch_len * e->nscratch, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (e->scratch == MAP_FAILED) {
			e->scratch = NULL;
			return -ENOMEM;
		}
		e->overhead += e->scratch_len * e->nscratch;
		return 0;
	}
	return -EINVAL;
}

static void free_engine(struct libuffd_engine *e)
{
	if (e->uffd >= 0)
		close(e->uffd);
	if (e->stop_efd >= 0)
		close(e->stop_efd);
	if (e->kick_efd >= 0)
		close(e->kick_efd);
	if (e->file_map)
		munmap(e->file_map, e->file_map_len);
	if (e->scratch)
		munmap(e->scratch, e->scratch_len * e->nscratch);
	if (e->zeros)
		munmap(e->zeros, e->zeros_len);
	free(e->tail);
	free(e->zeroed);
	free(e->threads);
	free(e);
}

static int create(struct libuffd_engine *e, void *addr, size_t len,
		  const struct libuffd_engine_source *src, const struct libuffd_engine_opts *o)
{
	struct libuffd_open_opts oo = { 0 };
	struct libuffd_api api;
	uint64_t ioctls;
	unsigned int threads = o->threads ? o->threads : 1;

	if (o->mode != LIBUFFD_ENGINE_HANDLER_THREADS && o->mode != LIBUFFD_ENGINE_IN_THREAD)
		return -EINVAL;
	e->mode = o->mode;
	e->spin_us = o->spin_us;
	e->nthreads = 0;
	if (order_of(o->prefetch_min ? o->prefetch_min : LIBUFFD_ENGINE_PREFETCH_MIN_DEFAULT,
		     e->shift, &e->min_order) ||
	    order_of(o->prefetch_max ? o->prefetch_max : LIBUFFD_ENGINE_PREFETCH_MAX_DEFAULT,
		     e->shift, &e->max_order) || e->max_order > 30)
		return -EINVAL;
	if (e->min_order > e->max_order)
		e->min_order = e->max_order;

	/* Handler threads count scratch buffers (one each). */
	e->nthreads = e->mode == LIBUFFD_ENGINE_IN_THREAD ? 1 : threads;
	int r = setup_source(e, src);
	e->nthreads = 0;
	if (r < 0)
		return r;

	e->zeros_len = e->page << e->max_order;
	e->zeros = mmap(NULL, e->zeros_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->zeros == MAP_FAILED) {
		e->zeros = NULL;
		return -ENOMEM;
	}
	uffd_sys_madvise(e->zeros, e->zeros_len, MADV_POPULATE_READ); /* zero-page PTEs */
	size_t words = (e->npages + BITS_PER_WORD - 1) / BITS_PER_WORD;
	e->zeroed = calloc(words, sizeof(unsigned long));
	if (!e->zeroed)
		return -ENOMEM;
	e->overhead += sizeof(*e) + words * sizeof(unsigned long) + e->zeros_len / 512;

	if (o->open_opts)
		oo = *o->open_opts;
	oo.flags &= ~LIBUFFD_OPEN_BLOCKING; /* our reads must not block */
	e->uffd = libuffd_open(&oo, NULL);
	if (e->uffd < 0)
		return e->uffd;
	uint64_t events = LIBUFFD_FEATURE_EVENT_REMOVE | LIBUFFD_FEATURE_EVENT_UNMAP |
			  LIBUFFD_FEATURE_EVENT_REMAP;
	uint64_t required = e->mode == LIBUFFD_ENGINE_IN_THREAD ? LIBUFFD_FEATURE_SIGBUS : 0;
	r = libuffd_api_handshake(e->uffd, events, required, &api);
	if (r < 0)
		return r;
	e->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->kick_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->stop_efd < 0 || e->kick_efd < 0)
		return -errno;
	r = libuffd_register(e->uffd, addr, len, LIBUFFD_REGISTER_MISSING, &ioctls);
	if (r < 0)
		return r;
	if ((ioctls & (LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_ZEROPAGE)) !=
	    (LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_ZEROPAGE)) {
		libuffd_unregister(e->uffd, addr, len);
		return -EOPNOTSUPP;
	}
	if (e->mode == LIBUFFD_ENGINE_IN_THREAD) {
		r = engine_sigbus_attach(e);
		if (r < 0) {
			libuffd_unregister(e->uffd, addr, len);
			return r;
		}
		/* One thread reads the events: madvise, munmap, mremap wait for it. */
		threads = 1;
	}
	r = start_threads(e, threads);
	if (r < 0) {
		libuffd_unregister(e->uffd, addr, len);
		stop_threads(e);
		if (e->mode == LIBUFFD_ENGINE_IN_THREAD)
			engine_sigbus_detach(e);
	}
	return r;
}

LIBUFFD_EXPORT int libuffd_engine_create(void *addr, size_t len,
					 const struct libuffd_engine_source *src,
					 const struct libuffd_engine_opts *opts,
					 struct libuffd_engine **out)
{
	static const struct libuffd_engine_opts defaults;
	long pg = sysconf(_SC_PAGESIZE);
	int saved = errno;

	if (!out || !src || !addr || !len || ((uintptr_t)addr | len) % (size_t)pg ||
	    !LIBUFFD_RESERVED_ZERO(src->reserved) || (opts && !LIBUFFD_RESERVED_ZERO(opts->reserved)))
		return -EINVAL;
	*out = NULL;
	struct libuffd_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->uffd = e->stop_efd = e->kick_efd = -1;
	e->base = (uintptr_t)addr;
	e->len = len;
	e->page = (size_t)pg;
	e->shift = (unsigned int)__builtin_ctzl(e->page);
	e->npages = len >> e->shift;
	int r = create(e, addr, len, src, opts ? opts : &defaults);
	if (r < 0) {
		free_engine(e);
		errno = saved;
		return r;
	}
	errno = saved;
	*out = e;
	return 0;
}

LIBUFFD_EXPORT int libuffd_engine_destroy(struct libuffd_engine *e)
{
	int saved = errno;

	if (!e)
		return -EINVAL;
	if (e->mode == LIBUFFD_ENGINE_HANDLER_THREADS) {
		/* Serve what is pending first, then unregister: that wakes
		 * anyone who faulted after the last read. */
		stop_threads(e);
		libuffd_unregister(e->uffd, (void *)LOAD(&e->base), e->len);
	} else {
		/* Unregistering first makes faulting threads retry natively;
		 * detaching then waits for the handlers still inside. */
		libuffd_unregister(e->uffd, (void *)LOAD(&e->base), e->len);
		engine_sigbus_detach(e);
		stop_threads(e);
	}
	free_engine(e);
	errno = saved;
	return 0;
}

/* ---- Kernel-mode access ------------------------------------------------------ */

/* Clamp [addr, addr+len) to the region, in pages; 0 when disjoint. */
static int clamp(struct libuffd_engine *e, void *addr, size_t len, uintptr_t *base, size_t *p0,
		 size_t *p1)
{
	uintptr_t b = LOAD(&e->base), a = (uintptr_t)addr, end = a + len;

	if (end < a || !len || end <= b || a >= b + e->len)
		return 0;
	*base = b;
	*p0 = a <= b ? 0 : (a - b) >> e->shift;
	*p1 = end >= b + e->len ? e->npages : (end - b + e->page - 1) >> e->shift;
	return 1;
}

LIBUFFD_EXPORT int libuffd_engine_populate(struct libuffd_engine *e, void *addr, size_t len)
{
	unsigned char vec[256];
	uintptr_t base;
	size_t p0, p1;

	if (!e)
		return -EINVAL;
	if (!clamp(e, addr, len, &base, &p0, &p1))
		return 0;
	for (size_t p = p0; p < p1;) {
		size_t chunk = min_sz(sizeof(vec), p1 - p);
		int r = uffd_sys_mincore((void *)(base + (p << e->shift)), chunk << e->shift, vec);
		if (r < 0)
			return r;
		for (size_t i = 0; i < chunk; i++) {
			if (vec[i] & 1)
				continue;
			size_t j = i + 1;
			while (j < chunk && !(vec[j] & 1))
				j++;
			/* Writable pages: populate is for syscalls that write too. */
			for (size_t q = p + i, covered; q < p + j; q += covered ? covered : 1) {
				r = resolve(e, base, q, p + j - q, 1, NULL, &covered);
				if (r < 0)
					return r;
			}
			i = j;
		}
		p += chunk;
	}
	return 0;
}

LIBUFFD_EXPORT long libuffd_engine_retry_efault(struct libuffd_engine *e, void *addr, size_t len,
						long (*fn)(void *arg), void *arg)
{
	uintptr_t base;
	size_t p0, p1;

	if (!e || !fn)
		return -EINVAL;
	long r = fn(arg);
	if (r != -EFAULT || !clamp(e, addr, len, &base, &p0, &p1))
		return r;
	if (libuffd_engine_populate(e, addr, len) < 0)
		return r;
	return fn(arg);
}

/* ---- Introspection ----------------------------------------------------------- */

LIBUFFD_EXPORT int libuffd_engine_get_stats(const struct libuffd_engine *e,
					    struct libuffd_engine_stats *st)
{
	if (!e || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->faults = LOAD(&e->c.faults);
	st->folded = LOAD(&e->c.folded);
	st->pages = LOAD(&e->c.pages);
	st->eexist = LOAD(&e->c.eexist);
	st->eagain = LOAD(&e->c.eagain);
	st->events = LOAD(&e->c.events);
	st->overhead = e->overhead;
	return 0;
}

LIBUFFD_EXPORT void *libuffd_engine_region(const struct libuffd_engine *e, size_t *len)
{
	if (!e)
		return NULL;
	if (len)
		*len = e->len;
	return (void *)LOAD(&e->base);
}
