// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine's fault path: pages removed by events, prefetch windows,
 * page sources, resolution with the kernel's partial-progress errors, and
 * reading events.  Everything here is async-signal-safe: the in-thread
 * mode calls it from a SIGBUS handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "engine-internal.h"

#define BATCH 64          /* messages per read */

/* ---- Pages removed by events read as zero ----------------------------
 * Pages that left the region (unmapped, or moved away) read as zero too
 * if they are ever ours again, and are marked apart: another region may
 * have been moved onto them (mremap(MREMAP_FIXED)), and the kernel lets
 * any userfaultfd fill any registered page. */

static int page_bit(const unsigned long *bits, size_t p)
{
	return (LOAD(&bits[p / BITS_PER_WORD]) >> (p % BITS_PER_WORD)) & 1;
}

static int is_zeroed(struct libuffd_engine *e, size_t p)
{
	return page_bit(e->zeroed, p);
}

/* Set (or clear) the bits of the region's pages in [start, end). */
static void mark_pages(struct libuffd_engine *e, unsigned long *bits, uintptr_t start,
		       uintptr_t end, int set)
{
	uintptr_t base = LOAD(&e->base);
	uintptr_t lo = start > base ? start : base, hi = end < base + e->len ? end : base + e->len;

	for (uintptr_t a = lo; a < hi; a += e->page) {
		size_t p = (a - base) >> e->shift;
		unsigned long bit = 1ul << (p % BITS_PER_WORD);
		if (set)
			__atomic_fetch_or(&bits[p / BITS_PER_WORD], bit, __ATOMIC_RELEASE);
		else
			__atomic_fetch_and(&bits[p / BITS_PER_WORD], ~bit, __ATOMIC_RELEASE);
	}
}

/* The first page of [i, end) that left the region, or end (a word of
 * the bitmap at a time: on the path of every fault). */
static size_t first_left(struct libuffd_engine *e, size_t i, size_t end)
{
	while (i < end) {
		unsigned long w = LOAD(&e->left[i / BITS_PER_WORD]) >> (i % BITS_PER_WORD);
		if (w)
			return min_sz(i + (size_t)__builtin_ctzl(w), end);
		i = (i / BITS_PER_WORD + 1) * BITS_PER_WORD;
	}
	return end;
}

/* ---- Prefetch ---------------------------------------------------------
 * A few streams remember where the next sequential fault would land
 * (encoded as (next page + 1) << 8 | window order).  A fault there grows
 * the window and, from the stream's second window on, queues the window
 * after it as read-ahead for the engine's own threads, which copy it while
 * the faulting thread works on the first; any other fault starts a new
 * stream with a single page.
 * Races between faulting threads only blur the prediction. */

static uint64_t stream_enc(size_t next, unsigned int order)
{
	return ((uint64_t)(next + 1) << 8) | order;
}

/* SHMEM: a fault a little past where a stream would land, by less than
 * the stream's last window, continues it: a forward sweep that skips
 * pages (one page in each ten, say).  Mapping the pages it skips costs a
 * page-table entry each and no memory (the file holds them), less than
 * the faults it saves; a copying source would allocate and fill them. */
static int skips_ahead(const struct libuffd_engine *e, size_t p, size_t next, unsigned int order)
{
	unsigned int around = LOAD(&e->around_order);

	return e->src.kind == LIBUFFD_ENGINE_SOURCE_SHMEM && p > next &&
	       p - next < (size_t)1 << (order > around ? order : around);
}

void engine_prefetch_window(struct libuffd_engine *e, size_t p, struct window *w)
{
	w->ahead_n = 0;
	for (int i = 0; i < ENGINE_STREAMS; i++) {
		uint64_t s = LOAD(&e->streams[i]);
		if (!s)
			continue;
		size_t next = (size_t)(s >> 8) - 1;
		unsigned int order = s & 0xff;
		size_t last = (size_t)1 << order;
		if (p != next && !skips_ahead(e, p, next, order)) {
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
	/* No stream: one page, or more around it while the source is slow
	 * (see note_source_cost()). */
	unsigned int i = __atomic_fetch_add(&e->stream_next, 1, __ATOMIC_RELAXED) % ENGINE_STREAMS;
	w->n = (size_t)1 << min_sz(LOAD(&e->around_order), e->max_order);
	STORE(&e->streams[i], stream_enc(p + w->n, 0));
}

/* ---- Fault-around for slow sources -------------------------------------
 * A single page is what a random fault needs when the source costs no
 * more than the copy (memory, the page cache).  A source that waits for
 * I/O costs about as much for 128 KiB as for a page: while its reads are
 * that slow, a fault with no stream resolves 1 << ENGINE_AROUND_ORDER pages from
 * the fault on, as the kernel reads around a fault in a cold file; each
 * fast read halves the window again.  One slow read alone may be the
 * scheduler's doing (a preempted thread, a busy host): only a second one
 * in a row counts as the source's, and only the time it waited: a source
 * slow by computing (decompression) costs as much per page for 128 KiB as
 * for one, and reading around would only make it compute pages nobody
 * touches.  Telling the two apart takes the thread's CPU time, a system
 * call: asked only once a read was slow (source_suspect()). */
static int source_suspect(const struct libuffd_engine *e)
{
	return LOAD(&e->slow_reads) || LOAD(&e->around_order);
}

/* A timed read's wall time, ns, less the CPU time the thread spent from
 * cpu0 on (0: not asked): the time it waited. */
static uint64_t waited_ns(uint64_t wall_ns, uint64_t cpu0)
{
	uint64_t cpu = cpu0 ? uffd_sys_thread_cpu_ns() : 0;

	if (!cpu)
		return wall_ns;
	cpu -= cpu0;
	return cpu < wall_ns ? wall_ns - cpu : 0;
}

static void note_source_cost(struct libuffd_engine *e, uint64_t ns)
{
	if (ns >= ENGINE_SLOW_SOURCE_NS) {
		if (LOAD(&e->fast_reads))
			STORE(&e->fast_reads, 0);
		if (__atomic_add_fetch(&e->slow_reads, 1, __ATOMIC_RELAXED) >= 2)
			STORE(&e->around_order, ENGINE_AROUND_ORDER);
		return;
	}
	if (LOAD(&e->fast_reads) < ENGINE_HOT_READS)
		__atomic_fetch_add(&e->fast_reads, 1, __ATOMIC_RELAXED);
	if (LOAD(&e->slow_reads))
		STORE(&e->slow_reads, 0);
	unsigned int o = LOAD(&e->around_order);
	if (o)
		STORE(&e->around_order, o - 1);
}

/* Queue read-ahead (best effort: a full ring overwrites the oldest). */
void engine_queue_ahead(struct libuffd_engine *e, const struct window *w, int wr, int kick)
{
	if (!w->ahead_n || w->ahead_p >= e->npages)
		return;
	unsigned int order = (unsigned int)__builtin_ctzl(w->ahead_n);
	unsigned int i = __atomic_fetch_add(&e->ahead_next, 1, __ATOMIC_RELAXED) % ENGINE_AHEAD;
	STORE(&e->ahead[i], ((uint64_t)(w->ahead_p + 1) << 9) | (uint64_t)!!wr << 8 | order);
	uint64_t one = 1;
	if (kick)
		uffd_sys_write(e->kick_efd, &one, sizeof(one)); /* fails only with a kick pending */
	/* A file: ask the kernel to start reading the window after that one
	 * now, so that nobody waits for its I/O when the stream gets there. */
	if (e->src.kind == LIBUFFD_ENGINE_SOURCE_FILE) {
		size_t from = (w->ahead_p + w->ahead_n) << e->shift, len = w->ahead_n << e->shift;
		if (from < e->body_len)
			uffd_sys_fadvise(e->src.fd, (off_t)(e->src.offset + from),
					 (off_t)min_sz(len, e->body_len - from), POSIX_FADV_WILLNEED);
	}
}

/* ---- Sources ---------------------------------------------------------- */

/* How a single page of a FILE was resolved (the index of its cost in
 * single_ns). */
enum single_way { SINGLE_PREAD, SINGLE_MAP_UNMAPPED, SINGLE_MAP_MAPPED };

struct span {
	const void *from; /* NULL: zeros */
	size_t len;
	int slot;         /* scratch slot to give back, or -1 */
	int mapped;       /* from: in the file's mapping */
	enum single_way way; /* a single page of a FILE */
};

static int scratch_take(struct libuffd_engine *e)
{
	unsigned long all = e->nscratch >= BITS_PER_WORD ? ~0ul : (1ul << e->nscratch) - 1;

	for (;;) {
		unsigned long busy = LOAD(&e->scratch_busy);
		unsigned long avail = ~busy & all;
		if (!avail) {
			uffd_sys_yield(); /* all taken: wait for one */
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

/* The FILE source: the file's bytes at region offset off into buf, read
 * with pread(2), and zeros past its end, or past where it ends now if it
 * shrank: all of the file that is not copied through its mapping (see
 * via_mapping()). */
static int read_file(struct libuffd_engine *e, size_t off, char *buf, size_t len)
{
	size_t done = 0;

	while (done < len && off + done < e->body_len) {
		int n = uffd_sys_pread(e->src.fd, buf + done,
				       min_sz(len - done, e->body_len - off - done),
				       (off_t)(e->src.offset + off + done));
		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (n == 0)
			break; /* the file shrank: zeros, as past its end */
		done += (size_t)n;
	}
	memset(buf + done, 0, len - done);
	return 0;
}

/* Whether the file's pages at region offset off, len bytes, are all in
 * the page cache: copying them through the mapping waits for no I/O. */
static int all_cached(const struct libuffd_engine *e, size_t off, size_t len)
{
	unsigned char vec[512]; /* the largest window: 2 MiB of 4 KiB pages */
	size_t n = len >> e->shift;

	if (n > sizeof(vec) ||
	    uffd_sys_mincore((void *)(e->file_map + off), len, vec) < 0)
		return 0;
	for (size_t k = 0; k < n; k++)
		if (!(vec[k] & 1))
			return 0;
	return 1;
}

/* The FILE source's bitmaps, a bit per block of its mapping
 * (ENGINE_MAP_BLOCK_ORDER): blocks as the kernel's fault-around aligns
 * them, by address.  Touched: a single page was resolved there; reused:
 * something was resolved there again after that; mapped: a copy went
 * through the mapping there. */
enum { BLOCK_TOUCHED, BLOCK_REUSED, BLOCK_MAPPED };

static size_t block_of(const struct libuffd_engine *e, size_t off)
{
	unsigned int order = e->shift + ENGINE_MAP_BLOCK_ORDER;

	return (((uintptr_t)e->file_map + off) >> order) - ((uintptr_t)e->file_map >> order);
}

/* Block b's bit, set if asked (an atomic write only when it was clear):
 * whether it was set before. */
static int block_bit(struct libuffd_engine *e, int which, size_t b, int set)
{
	unsigned long bit = 1ul << (b % BITS_PER_WORD);
	unsigned long *w = &e->block_bits[(size_t)which * e->block_words + b / BITS_PER_WORD];

	if (LOAD(w) & bit)
		return 1;
	if (set)
		__atomic_fetch_or(w, bit, __ATOMIC_RELAXED);
	return 0;
}

static void note_blocks_mapped(struct libuffd_engine *e, size_t off, size_t len)
{
	for (size_t b = block_of(e, off), last = block_of(e, off + len - 1); b <= last; b++)
		block_bit(e, BLOCK_MAPPED, b, 1);
}

/* The share, in 256ths, of blocks a single page touched first that are
 * resolved from again (reused): each first touch lowers it by 1/16,
 * each block's first reuse raises it by 16, so that it settles at
 * reuses over first touches. */
static void note_reuse(struct libuffd_engine *e, size_t b)
{
	if (block_bit(e, BLOCK_TOUCHED, b, 0) && !block_bit(e, BLOCK_REUSED, b, 1)) {
		unsigned int share = LOAD(&e->seen_share);
		STORE(&e->seen_share, share + 16 < 256 ? share + 16 : 256);
	}
}

/* A window of a hot file [off, off + len), more than a page: the blocks
 * where single pages went before it are reused. */
static void note_window_reuse(struct libuffd_engine *e, size_t off, size_t len)
{
	for (size_t b = block_of(e, off), last = block_of(e, off + len - 1); b <= last; b++)
		note_reuse(e, b);
}

/* A single page of a hot file: through the mapping, or with pread(2) and
 * a second copy, whichever costs less.  In a block that an earlier copy
 * mapped, the mapping costs only the copy.  Otherwise the copy's fault
 * maps the block (fault-around): next to nothing for a file cached in
 * large folios, more than the second copy for one cached in single
 * pages, and a saving for whatever is resolved in the block later: a
 * page, or the window of a run that starts with this page, which would
 * map the block itself if this page went by pread(2).  So the mapping is
 * reckoned at what it costs a block that a single page touches first:
 * the cost of a page in a block not mapped, less the fault it spares (the
 * unmapped cost less the mapped one) times the share of such blocks that
 * are reused.  That share is counted whichever way pages went, or
 * pread(2), once chosen, would leave every block unmapped and the
 * mapping looking dear.  One page in ENGINE_SINGLE_PROBE outside mapped
 * blocks goes the other way, so that a change of either cost is seen. */
static enum single_way single_way(struct libuffd_engine *e, size_t off)
{
	size_t b = block_of(e, off);

	if (block_bit(e, BLOCK_TOUCHED, b, 1)) {
		note_reuse(e, b);
	} else {
		unsigned int share = LOAD(&e->seen_share);
		if (share) /* steady at 0 while no block is reused */
			STORE(&e->seen_share, share - (share + 15) / 16);
	}
	if (block_bit(e, BLOCK_MAPPED, b, 0))
		return SINGLE_MAP_MAPPED;
	uint64_t share = LOAD(&e->seen_share);
	uint64_t mapping = ((256 - share) * LOAD(&e->single_ns[SINGLE_MAP_UNMAPPED]) +
			    share * LOAD(&e->single_ns[SINGLE_MAP_MAPPED])) / 256;
	int map = mapping <= LOAD(&e->single_ns[SINGLE_PREAD]);

	if (__atomic_fetch_add(&e->singles, 1, __ATOMIC_RELAXED) % ENGINE_SINGLE_PROBE == 0)
		map = !map;
	return map ? SINGLE_MAP_UNMAPPED : SINGLE_PREAD;
}

static void note_single_cost(struct libuffd_engine *e, enum single_way way, uint64_t ns)
{
	unsigned int avg = LOAD(&e->single_ns[way]);
	unsigned int x = (unsigned int)ns; /* below ENGINE_SLOW_SOURCE_NS */

	STORE(&e->single_ns[way], avg ? avg - avg / 8 + x / 8 : x);
}

/* Whether a FILE's bytes at region offset off, len bytes (whole pages
 * of the file), are copied through its mapping: in the page cache, that
 * saves a pread(2) into a buffer and a second copy (the kernel resolves
 * the mapping's faults 16 pages at a time: fault-around).  Not pages to
 * be read from disk, whose wait must be timed (note_source_cost()): a
 * window goes through the mapping if mincore(2) finds all of it cached,
 * and is read with pread(2), timed, if not.  For a single page, mincore
 * would cost what the mapping saves; once the file's reads have been fast
 * for a while (a hot file), a copy short enough to be timed goes through
 * the mapping unasked (a single page: see single_way()), and its
 * time is the read's: a page not in the page cache is read inside the
 * copy, the wait shows, and the next ones ask again. */
static int via_mapping(struct libuffd_engine *e, size_t off, size_t len, struct span *sp)
{
	if (LOAD(&e->fast_reads) >= ENGINE_HOT_READS) {
		if (len == e->page) {
			sp->way = single_way(e, off);
			return sp->way != SINGLE_PREAD;
		}
		note_window_reuse(e, off, len);
		if (len <= ENGINE_TIMED_COPY_MAX)
			return 1;
	}
	return len > e->page && all_cached(e, off, len);
}

/* The source bytes at region offset off, up to len (page multiples).
 * may_map: a FILE's bytes may come from its mapping. */
static int source_span(struct libuffd_engine *e, size_t off, size_t len, int may_map,
		       struct span *sp)
{
	sp->from = NULL;
	sp->len = len;
	sp->slot = -1;
	sp->mapped = 0;
	sp->way = SINGLE_PREAD;
	switch (e->src.kind) {
	case LIBUFFD_ENGINE_SOURCE_ZERO:
	case LIBUFFD_ENGINE_SOURCE_SHMEM: /* mapped in place by fill() */
		return 0;
	case LIBUFFD_ENGINE_SOURCE_MEMORY:
		if (off < e->body_len) {
			sp->from = e->body + off;
			sp->len = min_sz(len, e->body_len - off);
		} else if (e->tail && off == e->body_len) {
			sp->from = e->tail;
			sp->len = e->page;
		}
		return 0;
	case LIBUFFD_ENGINE_SOURCE_FILE:
	case LIBUFFD_ENGINE_SOURCE_CALLBACK: {
		int file = e->src.kind == LIBUFFD_ENGINE_SOURCE_FILE;
		if (file && off >= e->body_len)
			return 0; /* past the end of the file: zeros */
		/* Whole pages of the file, the last one zero padded (by the
		 * kernel in the mapping, by read_file() in a buffer). */
		if (file)
			sp->len = min_sz(len, (e->body_len - off + e->page - 1) & ~(e->page - 1));
		if (file && may_map && e->file_map && via_mapping(e, off, sp->len, sp)) {
			sp->from = e->file_map + off;
			sp->mapped = 1;
			return 0;
		}
		sp->slot = scratch_take(e);
		char *buf = e->scratch + (size_t)sp->slot * e->scratch_len;
		sp->len = min_sz(sp->len, e->scratch_len);
		int r = file ? read_file(e, off, buf, sp->len) :
			       e->src.fill(e->src.ctx, off, buf, sp->len);
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
	unsigned int mode = e->mode->copy_mode;

	/* The file's own pages, mapped where they are. */
	if (e->src.kind == LIBUFFD_ENGINE_SOURCE_SHMEM)
		return libuffd_continue(e->uffd, (void *)dst, sp->len, mode, done);
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
void engine_wait_event_readers(const struct libuffd_engine *e)
{
	while (LOAD(&e->ev_readers))
		uffd_sys_yield();
}

int engine_page_left(struct libuffd_engine *e, size_t p)
{
	engine_wait_event_readers(e);
	return page_bit(e->left, p);
}

/*
 * A remove event's madvise() zaps its pages once the event is read, not
 * once it is applied: a copy of source bytes that looked at zeroed before
 * the read and lands after the zap would stay, and the page read the
 * source after madvise() returned.  So a copy and a read of events never
 * overlap: a copier announces itself and backs off while a reader is
 * announced; a reader announces itself and waits for the copiers inside,
 * which never wait for anyone there (neither do they read the source
 * there: a slow one would hold the madvise() back).
 */
static void copy_begin(struct libuffd_engine *e)
{
	for (;;) {
		__atomic_add_fetch(&e->copiers, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&e->ev_readers, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(&e->copiers, 1, __ATOMIC_RELEASE);
		engine_wait_event_readers(e);
	}
}

static void copy_end(struct libuffd_engine *e)
{
	__atomic_sub_fetch(&e->copiers, 1, __ATOMIC_RELEASE);
}

/* The first page of [i, end) whose removal is not z, or end. */
static size_t zeroed_run_end(struct libuffd_engine *e, size_t i, size_t end, int z)
{
	while (i < end && is_zeroed(e, i) == z)
		i++;
	return i;
}

/* The address space the descriptor acts on is gone (its owner, another
 * process, exited): nothing is left to serve, and the engine's threads
 * stop (each sees stop_efd readable). */
static void note_gone(struct libuffd_engine *e)
{
	uint64_t one = 1;

	if (!__atomic_exchange_n(&e->gone, 1, __ATOMIC_ACQ_REL))
		uffd_sys_write(e->stop_efd, &one, sizeof(one));
}

/* A source's error, kept apart from the kernel's answers that
 * engine_resolve() gives a meaning. */
static int source_error(int err)
{
	return err == -ENOENT || err == -ESRCH ? -EIO : err;
}

/*
 * Resolve pages [p, p + n) at base.  *covered: pages from p known present
 * afterwards.  EEXIST is progress (a racer resolved the page); EAGAIN
 * means an event is pending: handler threads read it themselves (they
 * may be the only readers; fault messages go to pd), other callers wait
 * for the readers.  Returns 0, or -errno when page p is not resolved.
 */
int engine_resolve(struct libuffd_engine *e, uintptr_t base, size_t p, size_t n, unsigned int how,
		   struct pending *pd, size_t *covered)
{
	size_t i = p, end = p + n;

	*covered = 0;
	engine_wait_event_readers(e);
	/* SHMEM: the file holds what a page reads, removed or not (a page
	 * dropped from the region maps the file's again, as with mmap). */
	int shmem = e->src.kind == LIBUFFD_ENGINE_SOURCE_SHMEM;

	int may_map = 1; /* cleared when the file shrank under its mapping */
	int write = !!(how & ENGINE_WRITE);
	/* A page that left the region is answered only when it faults: its
	 * address may be another engine's now (see mark_pages()). */
	size_t ours = how & ENGINE_FAULT ? p + 1 : p;
	while (i < end) {
		int z = !shmem && is_zeroed(e, i);
		size_t j = shmem ? end : zeroed_run_end(e, i + 1, end, z);
		j = first_left(e, i < ours ? ours : i, j);
		if (j == i)
			return i == p ? -ENOENT : 0;
		size_t off = i << e->shift, done = 0;
		struct span sp = { .len = (j - i) << e->shift, .slot = -1 };
		/* A memory source costs nothing to read: only time the slow ones
		 * (a long copy through the file's mapping, of pages mincore(2)
		 * found cached, counts as a fast read). */
		int timed = !z && i == p && (e->src.kind == LIBUFFD_ENGINE_SOURCE_FILE ||
					     e->src.kind == LIBUFFD_ENGINE_SOURCE_CALLBACK);
		uint64_t t0 = timed ? uffd_sys_monotonic_ns() : 0;
		uint64_t cpu0 = timed && source_suspect(e) ? uffd_sys_thread_cpu_ns() : 0;
		int r = z ? 0 : source_span(e, off, sp.len, may_map, &sp);
		/* A short copy from the mapping: its time is the read's (below). */
		int copy_timed = timed && sp.mapped && sp.len <= ENGINE_TIMED_COPY_MAX;
		if (timed && !copy_timed)
			note_source_cost(e, sp.mapped ? 0 :
					 waited_ns(uffd_sys_monotonic_ns() - t0, cpu0));
		if (r < 0) {
			/* The source failed somewhere in the window: the
			 * faulting page alone, which alone must succeed. */
			if (i == p && end > p + 1) {
				end = p + 1;
				continue;
			}
			return i == p ? source_error(r) : 0;
		}
		/* SHMEM maps the file, removed or not (only the file's own
		 * page, wherever the mapping is).  Others: removed since, or
		 * left (zeros too: they are checked under the guard). */
		int guard = !shmem;
		if (guard)
			copy_begin(e);
		if (guard && ((!z && zeroed_run_end(e, i, j, 0) < j) ||
			      first_left(e, i < ours ? ours : i, j) < j)) {
			copy_end(e);
			span_release(e, &sp);
			continue;
		}
		r = fill(e, base + off, &sp, write, &done);
		if (guard)
			copy_end(e);
		if (timed) {
			uint64_t ns = uffd_sys_monotonic_ns() - t0;
			if (copy_timed)
				note_source_cost(e, waited_ns(ns, cpu0));
			/* What resolving a single page from the page cache cost. */
			if (e->src.kind == LIBUFFD_ENGINE_SOURCE_FILE && sp.from && sp.len == e->page &&
			    ns < ENGINE_SLOW_SOURCE_NS)
				note_single_cost(e, sp.way, ns);
		}
		if (sp.mapped && done)
			note_blocks_mapped(e, off, done);
		span_release(e, &sp);
		if (done) {
			ENGINE_COUNT(e, pages, done >> e->shift);
			i += done >> e->shift;
			*covered = i - p;
		}
		/* The copy met the end of a file that shrank after mincore(2)
		 * looked: the rest with pread(2), zeros past the new end. */
		if (r == -EFAULT && sp.mapped) {
			may_map = 0;
			continue;
		}
		if (r == 0)
			continue;
		if (r == -ESRCH)
			note_gone(e);
		/* SHMEM: a page the file does not hold (a hole, or past its
		 * end) stops the window.  The kernel answers such a page
		 * itself once the access is retried (it fills a hole, and
		 * raises SIGBUS past the end): for the faulting page, the
		 * page is not ours (-ENOENT). */
		if (shmem && (r == -EFAULT || r == -EINVAL)) {
			if (i == p)
				return -ENOENT;
			return 0;
		}
		/* SHMEM: a partial CONTINUE stopped at such a page, most
		 * likely; retry the rest at once (a pending event answers
		 * EAGAIN again with nothing done, and is waited for then). */
		if (r == -EAGAIN && shmem && done)
			continue;
		if (r == -EAGAIN) {
			ENGINE_COUNT(e, eagain, 1);
			if (!pd || !engine_drain_events(e, pd->ev, &pd->n, pd->cap))
				uffd_sys_yield();
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

int engine_resolve_stray(struct libuffd_engine *e, uintptr_t page, unsigned int mode)
{
	if (e->src.kind == LIBUFFD_ENGINE_SOURCE_SHMEM)
		return libuffd_continue(e->uffd, (void *)page, e->page, mode, NULL);
	return libuffd_zeropage(e->uffd, (void *)page, e->page, mode, NULL);
}

int engine_fault(struct libuffd_engine *e, size_t p, int write)
{
	struct window w;
	size_t covered;

	engine_prefetch_window(e, p, &w);
	/* The read-ahead first, so that it is copied while we copy ours. */
	engine_queue_ahead(e, &w, write, 1);
	int r = engine_resolve(e, LOAD(&e->base), p, min_sz(w.n, e->npages - p),
			       (write ? ENGINE_WRITE : 0) | ENGINE_FAULT, NULL, &covered);

	if (r == 0)
		ENGINE_COUNT(e, faults, 1);
	return r;
}

/* ---- Events ------------------------------------------------------------- */

static void apply_event(struct libuffd_engine *e, const struct libuffd_event *ev)
{
	switch (ev->type) {
	case LIBUFFD_EVENT_REMOVE:
		mark_pages(e, e->zeroed, ev->remove.start, ev->remove.end, 1);
		break;
	case LIBUFFD_EVENT_UNMAP:
		mark_pages(e, e->zeroed, ev->remove.start, ev->remove.end, 1);
		mark_pages(e, e->left, ev->remove.start, ev->remove.end, 1);
		break;
	case LIBUFFD_EVENT_REMAP:
		if (ev->remap.from == LOAD(&e->base) && ev->remap.len >= e->len) {
			STORE(&e->base, (uintptr_t)ev->remap.to);
			break;
		}
		/* A part moved away: its pages left, and read as zero if they
		 * come back; a part of ours moved into the range is ours again
		 * there (its pages not present read as zero: the unmap of that
		 * place before the move marked them). */
		mark_pages(e, e->zeroed, ev->remap.from, ev->remap.from + ev->remap.len, 1);
		mark_pages(e, e->left, ev->remap.from, ev->remap.from + ev->remap.len, 1);
		mark_pages(e, e->left, ev->remap.to, ev->remap.to + ev->remap.len, 0);
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
	while (__atomic_load_n(&e->copiers, __ATOMIC_SEQ_CST))
		uffd_sys_yield();
	pthread_mutex_lock(&e->ev_lock);
	int n = libuffd_read_events(e->uffd, ev, max);
	for (int i = 0; i < n; i++) {
		if (ev[i].type != LIBUFFD_EVENT_PAGEFAULT)
			apply_event(e, &ev[i]);
		else if (faults)
			faults[(*nfaults)++] = ev[i];
	}
	pthread_mutex_unlock(&e->ev_lock);
	__atomic_sub_fetch(&e->ev_readers, 1, __ATOMIC_RELEASE);
	return n > 0 ? n : 0;
}
