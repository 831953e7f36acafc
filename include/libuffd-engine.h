/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libuffd engine: serve a registered region from a page source, lazily,
 * on a user-mode-only userfaultfd.  See libuffd-engine(3).
 *
 * Same conventions as libuffd.h: 0 or a positive value on success, a
 * negative errno on failure; errno is never written.
 */
#ifndef LIBUFFD_ENGINE_H
#define LIBUFFD_ENGINE_H

#include "libuffd.h"

#ifdef __cplusplus
extern "C" {
#endif

struct libuffd_engine;

/* ---- Page sources ----------------------------------------------------
 * The region's byte at offset o reads the source's byte at offset o.
 * Offsets past the end of a memory buffer or of the file (its size when
 * the engine is created) read as zero; SHMEM excepted (see below). */
enum libuffd_engine_source_kind {
	LIBUFFD_ENGINE_SOURCE_ZERO = 0,     /* zero pages */
	LIBUFFD_ENGINE_SOURCE_MEMORY = 1,   /* buf[0, size): must outlive the engine */
	LIBUFFD_ENGINE_SOURCE_FILE = 2,     /* fd from offset, through the page cache */
	LIBUFFD_ENGINE_SOURCE_CALLBACK = 3, /* fill() */
	/* fd is a memfd or tmpfs file and the region is the caller's own
	 * mapping of it (MAP_SHARED or MAP_PRIVATE) at offset: the file's
	 * pages are mapped in place (UFFDIO_CONTINUE), never copied.  Holes
	 * and pages past the end of the file behave as with mmap alone. */
	LIBUFFD_ENGINE_SOURCE_SHMEM = 4,
};

/* Fill dst[0, len) with the region's contents at offset (page aligned;
 * len a multiple of the page size, at most the scratch size).  Return 0
 * or a negative errno (the access then raises SIGBUS; -ENOENT and -ESRCH
 * are reported as -EIO).  In the in-thread mode it runs in a SIGBUS
 * handler: it must be async-signal-safe and must not touch the region (nor
 * any in-thread engine's: SIGBUS is blocked there, and a fault kills). */
typedef int (*libuffd_engine_fill_fn)(void *ctx, uint64_t offset, void *dst, size_t len);

struct libuffd_engine_source {
	enum libuffd_engine_source_kind kind;
	const void *buf;             /* MEMORY */
	size_t size;                 /* MEMORY */
	int fd;                      /* FILE: read while the engine lives
				      * (pread(2), mapping): keep it open;
				      * SHMEM: the file the region maps */
	uint64_t offset;             /* FILE, SHMEM: page aligned */
	libuffd_engine_fill_fn fill; /* CALLBACK */
	void *ctx;                   /* CALLBACK */
	uint64_t reserved[4];        /* must be zero */
};

/* ---- Creating an engine --------------------------------------------- */

enum libuffd_engine_mode {
	/* Handler threads read fault messages in batches and resolve them. */
	LIBUFFD_ENGINE_HANDLER_THREADS = 0,
	/* UFFD_FEATURE_SIGBUS: the faulting thread resolves its own fault in
	 * a SIGBUS handler.  One thread still reads the address-space events. */
	LIBUFFD_ENGINE_IN_THREAD = 1,
};

#define LIBUFFD_ENGINE_PREFETCH_MIN_DEFAULT (64u << 10)
#define LIBUFFD_ENGINE_PREFETCH_MAX_DEFAULT (2u << 20)

struct libuffd_engine_opts {
	enum libuffd_engine_mode mode;
	unsigned int threads;   /* HANDLER_THREADS: how many, 0 means 1 */
	unsigned int spin_us;   /* HANDLER_THREADS: the first thread polls
				 * busily this long after a batch before
				 * sleeping (0: never spin) */
	size_t prefetch_min;    /* first window on sequential access; 0: default */
	size_t prefetch_max;    /* largest window; 0: default; the page size
				 * disables prefetch */
	const struct libuffd_open_opts *open_opts; /* NULL: user-mode-only defaults */
	uint64_t reserved[4];   /* must be zero */
};

/* Serve [addr, addr+len), a private anonymous mapping (page aligned,
 * not yet touched), from src; for a SHMEM source, a mapping of src->fd
 * at src->offset.  opts may be NULL (one handler thread).
 * Errors: -EINVAL (alignment, a range that wraps or exceeds the address
 * space, options), -EOPNOTSUPP (the kernel lacks a
 * feature or ioctl the mode needs: see libuffd-engine(3)), -EBUSY
 * (in-thread: the region overlaps another engine's, or too many engines),
 * the errors of libuffd_open() and libuffd_register(), -ENOMEM. */
int libuffd_engine_create(void *addr, size_t len, const struct libuffd_engine_source *src,
			  const struct libuffd_engine_opts *opts, struct libuffd_engine **out);

/* Stop serving: pending faults are resolved, the region is unregistered
 * (pages not resolved yet then read as zero) and everything is freed. */
int libuffd_engine_destroy(struct libuffd_engine *eng);

/* ---- Kernel-mode access under user-mode-only ------------------------
 * A syscall that reads or writes an unresolved page of the region fails
 * with EFAULT (the kernel does not wait for a user-mode-only handler). */

/* Make [addr, addr+len) ∩ region resident, from the calling thread.
 * Pages already present are left alone.  Returns 0 or a negative errno
 * (-ESRCH: another process's region whose owner is gone). */
int libuffd_engine_populate(struct libuffd_engine *eng, void *addr, size_t len);

/* Call fn(arg); if it returns -EFAULT and [addr, addr+len) overlaps the
 * region, populate that range and call fn once more.  fn returns a value
 * >= 0 or a negative errno; its result is returned.  -EINVAL for another
 * process's region. */
long libuffd_engine_retry_efault(struct libuffd_engine *eng, void *addr, size_t len,
				 long (*fn)(void *arg), void *arg);

/* ---- Serving another process's memory --------------------------------
 * The process that owns a region and the one that serves it talk over a
 * connected Unix socket (socketpair(2), or connect(2)/accept(2)). */

/* Owner: open a userfaultfd (open_opts as libuffd_open(); NULL: the
 * user-mode-only default; LIBUFFD_OPEN_KERNEL_FAULTS only by choice, see
 * libuffd-engine(3)), send it over sock with the description of
 * [addr, addr+len) (page aligned, private anonymous, not yet touched),
 * and wait until the server has registered the region.  The caller keeps
 * no descriptor.  Returns 0, or the server's error, -ECONNRESET (it hung
 * up), -EPROTO (its answer is not the protocol's), the errors of
 * libuffd_open() and sendmsg(2). */
int libuffd_engine_share(int sock, void *addr, size_t len,
			 const struct libuffd_open_opts *open_opts);

/* Server: receive the owner's descriptor and region from sock and serve
 * the region from src, in handler-thread mode only (opts->mode
 * LIBUFFD_ENGINE_IN_THREAD and opts->open_opts are -EINVAL); answers the
 * owner with the result.  libuffd_engine_region() gives the owner's
 * address.  Errors: -EPROTO (a message of the wrong size, version or
 * contents), -EBADMSG (not exactly one descriptor, or not a
 * userfaultfd), -ECONNRESET (the owner hung up first), -EOPNOTSUPP
 * (before UFFDIO_POISON, Linux 6.6), those of libuffd_engine_create()
 * and recvmsg(2). */
int libuffd_engine_create_remote(int sock, const struct libuffd_engine_source *src,
				 const struct libuffd_engine_opts *opts,
				 struct libuffd_engine **out);

/* ---- Introspection -------------------------------------------------- */

struct libuffd_engine_stats {
	uint64_t faults;       /* faults resolved (after folding) */
	uint64_t folded;       /* fault messages covered by another resolution */
	uint64_t pages;        /* pages the engine made present */
	uint64_t eexist;       /* resolutions that found a page present */
	uint64_t eagain;       /* resolutions retried after events */
	uint64_t events;       /* remove, unmap and remap events applied */
	uint64_t overhead;     /* bytes the engine allocated (memory, stacks) */
	uint64_t reserved[8];
};

int libuffd_engine_get_stats(const struct libuffd_engine *eng, struct libuffd_engine_stats *st);

/* The region's current address (it follows a whole-region mremap); NULL
 * for a NULL engine. */
void *libuffd_engine_region(const struct libuffd_engine *eng, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
