/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared between engine.c (core, handler threads) and engine-sigbus.c. */
#ifndef LIBUFFD_ENGINE_INTERNAL_H
#define LIBUFFD_ENGINE_INTERNAL_H

#include <pthread.h>

#include "libuffd-engine.h"
#include "internal.h"

#define ENGINE_STREAMS 8
#define ENGINE_AHEAD 16

struct engine_counters {
	uint64_t faults, folded, pages, eexist, eagain, events;
};

struct libuffd_engine {
	int uffd;
	enum libuffd_engine_mode mode;
	uintptr_t base; /* atomic: moves with a whole-region mremap */
	size_t len, npages;
	size_t page;
	unsigned int shift;
	unsigned int min_order, max_order; /* prefetch windows, log2 pages */

	/* The source, reduced to spans of bytes (see source_span()). */
	struct libuffd_engine_source src;
	const char *body;   /* MEMORY buf or FILE mapping */
	size_t body_len;    /* whole pages of body */
	char *tail;         /* MEMORY: the partial last page, zero padded */
	void *file_map;
	size_t file_map_len;
	char *zeros;        /* read-only zeros, the copy source of zero runs */
	size_t zeros_len;

	/* CALLBACK scratch buffers, taken with a lock-free bit mask. */
	char *scratch;
	size_t scratch_len;
	unsigned int nscratch;
	unsigned long scratch_busy;

	unsigned long *zeroed; /* pages removed by an event: serve zero */
	unsigned int ev_readers; /* threads between read() of events and applying them */
	uint64_t streams[ENGINE_STREAMS];
	unsigned int stream_next;
	/* Read-ahead for the engine's threads: (page + 1) << 9 | write << 8 | order. */
	uint64_t ahead[ENGINE_AHEAD];
	unsigned int ahead_next;

	int stop_efd; /* readable once destroy has begun */
	int kick_efd; /* read-ahead queued */
	int stopping;
	unsigned int spin_us;
	pthread_t *threads;
	unsigned int nthreads, nthreads_wanted;
	unsigned int thread_seq; /* numbers the threads as they start */

	size_t overhead;
	struct engine_counters c;
};

#define ENGINE_COUNT(e, field, n) __atomic_fetch_add(&(e)->c.field, (n), __ATOMIC_RELAXED)

/* Resolve the fault at region page p (write: the access is a write);
 * async-signal-safe.  Returns 0 when page p is present afterwards, else a
 * negative errno (-ENOENT, -ESRCH: the page is no longer registered or
 * mapped, or the address space is gone). */
int engine_fault(struct libuffd_engine *e, size_t p, int write);

/* Read and apply pending events without blocking; fault messages are
 * dropped unless faults is given (stored up to *nfaults capacity,
 * updated).  Async-signal-safe.  Returns the number of messages read. */
int engine_drain_events(struct libuffd_engine *e, struct libuffd_event *faults,
			unsigned int *nfaults, unsigned int cap);

/* Wait until no thread is between reading events and applying them;
 * async-signal-safe. */
void engine_wait_event_readers(struct libuffd_engine *e);

/* engine-sigbus.c: the in-thread mode. */
int engine_sigbus_attach(struct libuffd_engine *e);
void engine_sigbus_detach(struct libuffd_engine *e);

#endif
