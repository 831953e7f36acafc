/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the engine's files.  Dependencies run one way:
 *   engine-remote.c   another process's region: the socket protocol
 *   engine.c          its life: creation, destruction, populate, stats
 *     -> a mode, through struct engine_mode:
 *        engine-threads.c  handler threads (and the thread that reads
 *                          events in the other mode)
 *        engine-sigbus.c   in-thread: SIGBUS in the faulting thread
 *     -> engine-fault.c    the fault path, async-signal-safe
 */
#ifndef LIBUFFD_ENGINE_INTERNAL_H
#define LIBUFFD_ENGINE_INTERNAL_H

#include <pthread.h>
#include <signal.h>

#include "libuffd-engine.h"
#include "internal.h"

#include <limits.h>

/* Fault-around for slow sources (engine-fault.c): a read of the source
 * this slow (ns) waited for I/O; the window then, log2 pages (128 KiB
 * with 4 KiB pages: the kernel's read-around of a cold file). */
#define ENGINE_SLOW_SOURCE_NS 40000u
#define ENGINE_AROUND_ORDER 5u
/* A FILE whose last ENGINE_HOT_READS reads were fast has its copies of
 * up to ENGINE_TIMED_COPY_MAX bytes made through its mapping without
 * asking mincore(2) first, timed instead: short enough that a wait for
 * the disk stands out (engine-fault.c, via_mapping()). */
#define ENGINE_HOT_READS 16u
#define ENGINE_TIMED_COPY_MAX (64u << 10)
/* One single page of a hot FILE in this many goes the way that has cost
 * more lately, to keep its cost known (engine-fault.c). */
#define ENGINE_SINGLE_PROBE 16u
/* A fault in a file's mapping maps the pages around it in aligned blocks
 * of this many, log2 (64 KiB of 4 KiB pages: the kernel's default
 * fault_around_bytes); the FILE source keeps a bit per block. */
#define ENGINE_MAP_BLOCK_ORDER 4u

#define ENGINE_STREAMS 8
#define ENGINE_AHEAD 16
#define ENGINE_LINE 64 /* bytes in a cache line */

struct engine_counters {
	uint64_t faults, folded, pages, eexist, eagain, events;
};

struct engine_mode;

struct libuffd_engine {
	int uffd;
	const struct engine_mode *mode;
	uint64_t features;  /* enabled at UFFDIO_API */
	uint64_t ioctls;    /* allowed on the region by UFFDIO_REGISTER */
	int kernel_faults;  /* the descriptor takes faults in kernel mode too */
	int remote;         /* the region is another process's (engine-remote.c) */
	int gone;           /* atomic: that process's address space is gone */
	uintptr_t base; /* atomic: moves with a whole-region mremap */
	size_t len, npages;
	size_t page;
	unsigned int shift;
	unsigned int min_order, max_order; /* prefetch windows, log2 pages */

	/* The source, reduced to spans of bytes (see source_span()). */
	struct libuffd_engine_source src;
	const char *body;   /* MEMORY: buf */
	size_t body_len;    /* MEMORY: whole pages of buf; FILE: the file's bytes in the region */
	char *tail;         /* MEMORY: the partial last page, zero padded */
	const char *file_map; /* FILE: the file mapped read-only; NULL: not mappable */
	char *zeros;        /* read-only zeros, the copy source of zero runs */
	size_t zeros_len;

	/* FILE and CALLBACK scratch buffers, taken with a lock-free bit mask
	 * (scratch_busy, below). */
	char *scratch;
	size_t scratch_len;
	unsigned int nscratch;

	unsigned long *zeroed; /* pages removed by an event: serve zero */
	unsigned long *left;   /* of those, pages unmapped or moved away (one allocation) */
	unsigned int ev_readers; /* threads between read() of events and applying them */
	/* One reader at a time: events apply in the order the kernel queued
	 * them (a move's remap, then the unmap of the place it left). */
	pthread_mutex_t ev_lock;
	unsigned long *block_bits; /* FILE: see below */
	size_t block_words;

	int stop_efd; /* readable once destroy has begun */
	int kick_efd; /* read-ahead queued */
	int stopping;
	unsigned int spin_us;
	pthread_t *threads;
	unsigned int nthreads, nthreads_wanted;
	unsigned int thread_seq; /* numbers the threads as they start */

	size_t overhead;

	/* Written on every fault by whichever thread resolves it: each group
	 * on cache lines of its own, away from the fields above, which every
	 * fault reads (the engine is allocated ENGINE_LINE aligned). */
	_Alignas(ENGINE_LINE) unsigned int copiers; /* threads between a last look at zeroed and their copy */
	unsigned long scratch_busy; /* the scratch buffers taken */

	_Alignas(ENGINE_LINE) uint64_t streams[ENGINE_STREAMS];
	unsigned int stream_next;
	/* Read-ahead for the engine's threads: (page + 1) << 9 | write << 8 | order. */
	_Alignas(ENGINE_LINE) uint64_t ahead[ENGINE_AHEAD];
	unsigned int ahead_next;

	_Alignas(ENGINE_LINE) unsigned int around_order; /* window of a fault with no stream, log2 pages */
	unsigned int slow_reads;   /* slow reads of the source in a row */
	unsigned int fast_reads;   /* fast ones in a row, up to ENGINE_HOT_READS */
	/* FILE: what a single page has cost lately (ns, moving averages, by
	 * enum single_way): read with pread(2), copied through the mapping
	 * from a block of it not mapped yet, or from a block already mapped;
	 * the share, in 256ths, of blocks a single page touched first that
	 * were resolved from again, whichever way; a count of the single
	 * pages of a hot file (one in ENGINE_SINGLE_PROBE goes the dearer
	 * way); and per block of the mapping (ENGINE_MAP_BLOCK_ORDER) three
	 * bitmaps of block_words words each, one after the other: touched by
	 * a single page, reused since, and mapped by a copy. */
	unsigned int single_ns[3];
	unsigned int seen_share;
	unsigned int singles;

	_Alignas(ENGINE_LINE) struct engine_counters c;
};

/* ---- engine.c: the engine's life, for engine-remote.c ------------------- */

/* The arguments of a create that can be checked before anything else:
 * 0 or -EINVAL. */
int engine_check_args(const struct libuffd_engine_source *src, const struct libuffd_engine_opts *o);

/* Serve [addr, addr + len) of the address space of uffd, a userfaultfd
 * another process opened (kernel_faults: without UFFD_USER_MODE_ONLY),
 * on which no UFFDIO_API was done yet.  Takes uffd: it is closed on
 * failure, and by libuffd_engine_destroy() after success. */
int engine_create_remote(int uffd, int kernel_faults, void *addr, size_t len,
			 const struct libuffd_engine_source *src,
			 const struct libuffd_engine_opts *opts, struct libuffd_engine **out);

/* How faults reach the engine.  The engine's life calls these; a mode
 * calls the fault path below it, never the life above. */
struct engine_mode {
	uint64_t features;      /* required at UFFDIO_API */
	uint64_t requested;     /* used where the kernel offers them */
	unsigned int copy_mode; /* LIBUFFD_DONTWAKE when nobody waits in the kernel */
	unsigned int scratch;   /* CALLBACK scratch buffers; 0: one per thread */
	/* Serve the registered region with up to `threads` threads; on
	 * failure nothing is left running and the region is unregistered. */
	int (*start)(struct libuffd_engine *e, unsigned int threads);
	/* Unregister the region and stop serving: nobody is left waiting. */
	void (*stop)(struct libuffd_engine *e);
};

extern const struct engine_mode engine_handler_threads; /* engine-threads.c */
extern const struct engine_mode engine_in_thread;       /* engine-sigbus.c */

/* Handler threads raise SIGBUS for a fault they cannot serve, where the
 * kernel lacks UFFDIO_POISON, with this si_code and the error in si_errno:
 * such a SIGBUS stands for a fault, not for a signal sent with kill(2). */
#define ENGINE_SIGBUS_CODE SI_QUEUE

static inline int engine_sigbus_is_fault(const siginfo_t *si)
{
	return si->si_code == ENGINE_SIGBUS_CODE && si->si_errno > 0;
}

/* The signals a thread that resolves holds back: every one but those a
 * fault raises, which the kernel delivers at once whatever the mask (a
 * blocked one is reset to its default action, and kills). */
static inline void engine_deferrable_signals(sigset_t *set)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };

	sigfillset(set);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(set, faults[i]);
}

#define ENGINE_COUNT(e, field, n) __atomic_fetch_add(&(e)->c.field, (n), __ATOMIC_RELAXED)

#define BITS_PER_WORD (sizeof(unsigned long) * CHAR_BIT)
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static inline size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---- engine-fault.c: the fault path, async-signal-safe ---------------- */

struct window {
	size_t n;               /* pages to resolve now, from the fault */
	size_t ahead_p, ahead_n; /* read-ahead to queue (ahead_n 0: none) */
};

/* Fault messages read while resolving, for handler threads to serve. */
struct pending {
	struct libuffd_event *ev;
	unsigned int n, cap;
};

/* The window to resolve for a fault at page p, and read-ahead to queue. */
void engine_prefetch_window(struct libuffd_engine *e, size_t p, struct window *w);

/* Queue w's read-ahead for the engine's threads; kick: wake one. */
void engine_queue_ahead(struct libuffd_engine *e, const struct window *w, int wr, int kick);

/* How engine_resolve() resolves: for a write (pages then writable), and
 * for a fault at page p (else, read-ahead or populate: a page that left
 * the region is skipped, -ENOENT). */
#define ENGINE_WRITE 1u
#define ENGINE_FAULT 2u

/* Resolve pages [p, p + n) at base (see engine-fault.c).  Returns 0 when
 * page p is present afterwards; -ENOENT or -ESRCH when it is no longer
 * registered or mapped, or the address space is gone (the kernel's
 * answer: -ESRCH also sets gone and wakes the engine's threads, which
 * then stop); another -errno when it cannot be served (the source's
 * error, or the kernel's). */
int engine_resolve(struct libuffd_engine *e, uintptr_t base, size_t p, size_t n, unsigned int how,
		   struct pending *pd, size_t *covered);

/* A page registered with e's descriptor outside its region (a part moved
 * away by mremap()): no source covers it.  Zero, or for SHMEM the file's
 * page, which the mapping still names.  The kernel's answer. */
int engine_resolve_stray(struct libuffd_engine *e, uintptr_t page, unsigned int mode);

/* Resolve the fault at region page p (write: the access is a write);
 * async-signal-safe.  Returns 0 when page p is present afterwards, else a
 * negative errno (-ENOENT, -ESRCH: the page is no longer registered or
 * mapped, or the address space is gone). */
int engine_fault(struct libuffd_engine *e, size_t p, int write);

/* Read and apply pending events without blocking; fault messages are
 * dropped unless faults is given (stored up to *nfaults capacity,
 * updated).  Takes ev_lock: for the engine's threads, never a signal
 * handler.  Returns the number of messages read. */
int engine_drain_events(struct libuffd_engine *e, struct libuffd_event *faults,
			unsigned int *nfaults, unsigned int cap);

/* Whether region page p left the region (munmap(), moved away by
 * mremap()), once the events read are applied; async-signal-safe. */
int engine_page_left(struct libuffd_engine *e, size_t p);

/* Wait until no thread is between reading events and applying them;
 * async-signal-safe. */
void engine_wait_event_readers(const struct libuffd_engine *e);

/* ---- engine-threads.c: the engine's threads, for both modes ------------ */

int engine_threads_start(struct libuffd_engine *e, unsigned int n);
void engine_threads_stop(struct libuffd_engine *e);

#endif
