// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine's life: creation (page sources, options, the descriptor),
 * destruction, populate and the EFAULT retry, introspection.
 */
#include <errno.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine-internal.h"

#define SCRATCH_MAX (256u << 10)
/* What both modes use, asked of the kernel all the same: UFFDIO_API's
 * answer, then UFFDIO_REGISTER's. */
#define ENGINE_API_IOCTLS (LIBUFFD_IOCTL_API | LIBUFFD_IOCTL_REGISTER | LIBUFFD_IOCTL_UNREGISTER)
#define ENGINE_RANGE_IOCTLS (LIBUFFD_IOCTL_COPY | LIBUFFD_IOCTL_ZEROPAGE | LIBUFFD_IOCTL_WAKE)
/* A SHMEM source: minor faults, resolved in place. */
#define ENGINE_SHMEM_IOCTLS (LIBUFFD_IOCTL_CONTINUE | LIBUFFD_IOCTL_WAKE)
/* Window of a SHMEM fault with no stream, log2 pages: the kernel's
 * fault-around (64 KiB), which a minor-fault range does without. */
#define ENGINE_SHMEM_AROUND_ORDER 4u

/* ---- Creation ------------------------------------------------------------- */

static int order_of(size_t bytes, unsigned int shift, unsigned int *order)
{
	size_t pages = bytes >> shift;

	if (!pages || (pages << shift) != bytes || (pages & (pages - 1)))
		return -EINVAL;
	*order = (unsigned int)__builtin_ctzl(pages);
	return 0;
}

/* The buffers that FILE and CALLBACK sources read into, and copy from. */
static int setup_scratch(struct libuffd_engine *e, unsigned int nscratch)
{
	e->scratch_len = min_sz(SCRATCH_MAX, e->page << e->max_order);
	e->nscratch = nscratch;
	if (uffd_sys_mmap(e->scratch_len * e->nscratch, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, (void **)&e->scratch) < 0)
		return -ENOMEM;
	e->overhead += e->scratch_len * e->nscratch;
	return 0;
}

static int setup_source(struct libuffd_engine *e, const struct libuffd_engine_source *src,
			unsigned int nscratch)
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
		int r = uffd_sys_fstat(src->fd, &st);
		if (r < 0)
			return r;
		if (!S_ISREG(st.st_mode)) /* no size to read up to */
			return -EINVAL;
		char none;
		r = uffd_sys_pread(src->fd, &none, 0, (off_t)src->offset); /* -EBADF: not readable */
		if (r < 0)
			return r;
		if ((uint64_t)st.st_size > src->offset)
			e->body_len = min_sz((size_t)((uint64_t)st.st_size - src->offset), e->len);
		if (!e->body_len)
			return 0; /* empty: all zero */
		/* Pages in the page cache are copied through a mapping of the
		 * file, where mincore(2) says which pages are: it tells the
		 * file's owner and a capable process (CAP_FOWNER: root), and
		 * answers "all cached" to others, whose reads would then wait
		 * for I/O inside the copy.  Those, and a file that cannot be
		 * mapped, are read with pread(2) alone. */
		uid_t me = uffd_sys_geteuid();
		if (st.st_uid == me || me == 0) /* file_map: NULL on failure */
			(void)uffd_sys_mmap(e->body_len, PROT_READ, MAP_SHARED, src->fd,
					    (off_t)src->offset, (void **)&e->file_map);
		if (e->file_map) {
			/* A bit per block the mapping meets (engine-fault.c). */
			size_t blocks = ((e->body_len >> e->shift) >> ENGINE_MAP_BLOCK_ORDER) + 2;
			e->block_words = (blocks + BITS_PER_WORD - 1) / BITS_PER_WORD;
			e->block_bits = calloc(3 * e->block_words, sizeof(unsigned long));
			if (!e->block_bits)
				return -ENOMEM;
			e->overhead += 3 * e->block_words * sizeof(unsigned long);
		}
		return setup_scratch(e, nscratch);
	}
	case LIBUFFD_ENGINE_SOURCE_SHMEM: {
		/* The region maps the file itself: the engine only checks that
		 * the kernel resolves minor faults there (shmem; hugetlbfs
		 * pages are not served by this source). */
		struct statfs sfs;
		struct stat st;
		if (src->fd < 0 || src->offset % e->page || src->buf || src->size || src->fill)
			return -EINVAL;
		int r = uffd_sys_fstat(src->fd, &st);
		if (r < 0)
			return r;
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		r = uffd_sys_fstatfs(src->fd, &sfs);
		if (r < 0)
			return r;
		if (sfs.f_type != TMPFS_MAGIC)
			return -EOPNOTSUPP;
		e->around_order = (unsigned int)min_sz(ENGINE_SHMEM_AROUND_ORDER, e->max_order);
		return 0;
	}
	case LIBUFFD_ENGINE_SOURCE_CALLBACK:
		if (!src->fill)
			return -EINVAL;
		return setup_scratch(e, nscratch);
	}
	return -EINVAL;
}

static void free_engine(struct libuffd_engine *e)
{
	if (e->uffd >= 0)
		uffd_sys_close(e->uffd);
	if (e->stop_efd >= 0)
		uffd_sys_close(e->stop_efd);
	if (e->kick_efd >= 0)
		uffd_sys_close(e->kick_efd);
	if (e->scratch)
		uffd_sys_munmap(e->scratch, e->scratch_len * e->nscratch);
	if (e->zeros)
		uffd_sys_munmap(e->zeros, e->zeros_len);
	if (e->file_map)
		uffd_sys_munmap((void *)e->file_map, e->body_len);
	free(e->tail);
	free(e->zeroed);
	free(e->block_bits);
	free(e->threads);
	pthread_mutex_destroy(&e->ev_lock);
	free(e);
}

static int create(struct libuffd_engine *e, void *addr, size_t len,
		  const struct libuffd_engine_source *src, const struct libuffd_engine_opts *o)
{
	struct libuffd_open_opts oo = { 0 };
	struct libuffd_api api;
	unsigned int threads = o->threads ? o->threads : 1;
	int shmem = src->kind == LIBUFFD_ENGINE_SOURCE_SHMEM;
	uint64_t range_ioctls = shmem ? ENGINE_SHMEM_IOCTLS : ENGINE_RANGE_IOCTLS;

	switch (o->mode) {
	case LIBUFFD_ENGINE_HANDLER_THREADS:
		e->mode = &engine_handler_threads;
		break;
	case LIBUFFD_ENGINE_IN_THREAD:
		/* SIGBUS goes to the faulting thread: in the owner, not here. */
		if (e->remote)
			return -EINVAL;
		e->mode = &engine_in_thread;
		break;
	default:
		return -EINVAL;
	}
	if (e->remote && o->open_opts)
		return -EINVAL; /* the owner opened the descriptor */
	e->spin_us = o->spin_us;
	if (order_of(o->prefetch_min ? o->prefetch_min : LIBUFFD_ENGINE_PREFETCH_MIN_DEFAULT,
		     e->shift, &e->min_order) ||
	    order_of(o->prefetch_max ? o->prefetch_max : LIBUFFD_ENGINE_PREFETCH_MAX_DEFAULT,
		     e->shift, &e->max_order) || e->max_order > 30)
		return -EINVAL;
	if (e->min_order > e->max_order)
		e->min_order = e->max_order;

	int r = setup_source(e, src, e->mode->scratch ? e->mode->scratch :
				     threads < 64 ? threads : 64);
	if (r < 0)
		return r;

	e->zeros_len = e->page << e->max_order;
	if (uffd_sys_mmap(e->zeros_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			  (void **)&e->zeros) < 0)
		return -ENOMEM;
	/* Zero-page PTEs (Linux 5.14; without, the first copies fault them). */
	uffd_sys_madvise(e->zeros, e->zeros_len, MADV_POPULATE_READ);
	e->overhead += sizeof(*e) + e->zeros_len / 512;

	if (!e->remote) {
		if (o->open_opts)
			oo = *o->open_opts;
		oo.flags &= ~LIBUFFD_OPEN_BLOCKING; /* our reads must not block */
		e->kernel_faults = !!(oo.flags & LIBUFFD_OPEN_KERNEL_FAULTS);
		e->uffd = libuffd_open(&oo, NULL);
		if (e->uffd < 0)
			return e->uffd;
	}
	/* Without the events, removed pages would read the source again and
	 * a moved region would read zero. */
	uint64_t events = LIBUFFD_FEATURE_EVENT_REMOVE | LIBUFFD_FEATURE_EVENT_UNMAP |
			  LIBUFFD_FEATURE_EVENT_REMAP;
	if (shmem)
		events |= LIBUFFD_FEATURE_MINOR_SHMEM; /* Linux 5.14 */
	r = libuffd_api_handshake(e->uffd, e->mode->requested, events | e->mode->features, &api);
	if (r < 0)
		return r;
	if ((api.ioctls & ENGINE_API_IOCTLS) != ENGINE_API_IOCTLS)
		return -EOPNOTSUPP;
	e->features = api.features;
	e->stop_efd = uffd_sys_eventfd(EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->stop_efd < 0)
		return e->stop_efd;
	e->kick_efd = uffd_sys_eventfd(EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->kick_efd < 0)
		return e->kick_efd;
	/* Only minor faults for SHMEM: a hole is filled by the kernel, as
	 * with mmap alone. */
	r = libuffd_register(e->uffd, addr, len,
			     shmem ? LIBUFFD_REGISTER_MINOR : LIBUFFD_REGISTER_MISSING, &e->ioctls);
	if (r < 0)
		return r;
	if ((e->ioctls & range_ioctls) != range_ioctls) {
		libuffd_unregister(e->uffd, addr, len);
		return -EOPNOTSUPP;
	}
	/* Sized by the region: allocated once the kernel has found the range
	 * valid, so that a range it refuses (one that wraps around the
	 * address space, say) is -EINVAL, not -ENOMEM. */
	size_t words = (e->npages + BITS_PER_WORD - 1) / BITS_PER_WORD;
	e->zeroed = calloc(2 * words, sizeof(unsigned long));
	if (!e->zeroed) {
		libuffd_unregister(e->uffd, addr, len);
		return -ENOMEM;
	}
	e->left = e->zeroed + words;
	e->overhead += 2 * words * sizeof(unsigned long);
	return e->mode->start(e, threads);
}

int engine_check_args(const struct libuffd_engine_source *src, const struct libuffd_engine_opts *o)
{
	if (!src || !LIBUFFD_RESERVED_ZERO(src->reserved) || (o && !LIBUFFD_RESERVED_ZERO(o->reserved)))
		return -EINVAL;
	return 0;
}

/* uffd: another process's descriptor (taken), or -1 to open one. */
static int new_engine(int uffd, int kernel_faults, void *addr, size_t len,
		      const struct libuffd_engine_source *src,
		      const struct libuffd_engine_opts *opts, struct libuffd_engine **out)
{
	static const struct libuffd_engine_opts defaults;
	long pg = sysconf(_SC_PAGESIZE);
	int saved = errno;

	if (!out || !addr || !len || ((uintptr_t)addr | len) % (size_t)pg ||
	    engine_check_args(src, opts) < 0) {
		if (uffd >= 0)
			uffd_sys_close(uffd);
		return -EINVAL;
	}
	*out = NULL;
	struct libuffd_engine *e = aligned_alloc(ENGINE_LINE, sizeof(*e));
	if (!e) {
		if (uffd >= 0)
			uffd_sys_close(uffd);
		return -ENOMEM;
	}
	memset(e, 0, sizeof(*e));
	e->uffd = uffd;
	e->remote = uffd >= 0;
	e->kernel_faults = kernel_faults;
	e->stop_efd = e->kick_efd = -1;
	pthread_mutex_init(&e->ev_lock, NULL);
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

LIBUFFD_EXPORT int libuffd_engine_create(void *addr, size_t len,
					 const struct libuffd_engine_source *src,
					 const struct libuffd_engine_opts *opts,
					 struct libuffd_engine **out)
{
	return new_engine(-1, 0, addr, len, src, opts, out);
}

int engine_create_remote(int uffd, int kernel_faults, void *addr, size_t len,
			 const struct libuffd_engine_source *src,
			 const struct libuffd_engine_opts *opts, struct libuffd_engine **out)
{
	return new_engine(uffd, kernel_faults, addr, len, src, opts, out);
}

LIBUFFD_EXPORT int libuffd_engine_destroy(struct libuffd_engine *e)
{
	int saved = errno;

	if (!e)
		return -EINVAL;
	e->mode->stop(e);
	free_engine(e);
	errno = saved;
	return 0;
}

/* ---- Kernel-mode access ------------------------------------------------------ */

/* Clamp [addr, addr+len) to the region, in pages; 0 when disjoint. */
static int clamp(struct libuffd_engine *e, void *addr, size_t len, uintptr_t *base, size_t *p0,
		 size_t *p1)
{
	engine_wait_event_readers(e); /* a region just moved: its new place */
	uintptr_t b = LOAD(&e->base), a = (uintptr_t)addr, end = a + len;

	if (end < a || !len || end <= b || a >= b + e->len)
		return 0;
	*base = b;
	*p0 = a <= b ? 0 : (a - b) >> e->shift;
	*p1 = end >= b + e->len ? e->npages : (end - b + e->page - 1) >> e->shift;
	return 1;
}

/* Resolve pages [p0, p1), writable: populate is for syscalls that write
 * too.  Where mincore() cannot say which pages are present — a SHMEM
 * region (it tells the page cache, not the page tables) or another
 * process's region (not our address space) —, every page, and the
 * kernel's EEXIST says.  A page that is no longer registered (-ENOENT:
 * unmapped, maybe since mincore(2) looked, or mapped again by someone
 * else; for SHMEM also a hole, which the kernel fills in kernel mode
 * too), or that left the region, is skipped. */
static int resolve_each(struct libuffd_engine *e, uintptr_t base, size_t p0, size_t p1)
{
	for (size_t q = p0, covered; q < p1; q += covered ? covered : 1) {
		int r = engine_resolve(e, base, q, p1 - q, ENGINE_WRITE, NULL, &covered);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

/* Which pages of [p, p + n) at base are present, into vec; a page not
 * mapped (a part of the region unmapped) counts as present: there is
 * nothing to populate there.  mincore(2) fails with ENOMEM for the whole
 * range as soon as one page of it is not mapped: then page by page. */
static int present_pages(struct libuffd_engine *e, uintptr_t base, size_t p, size_t n,
			 unsigned char *vec)
{
	int r = uffd_sys_mincore((void *)(base + (p << e->shift)), n << e->shift, vec);

	for (size_t i = 0; r == -ENOMEM && i < n; i++) {
		int ri = uffd_sys_mincore((void *)(base + ((p + i) << e->shift)), e->page, &vec[i]);
		if (ri == -ENOMEM)
			vec[i] = 1;
		else if (ri < 0)
			return ri;
	}
	return r == -ENOMEM ? 0 : r;
}

static int populate(struct libuffd_engine *e, uintptr_t base, size_t p0, size_t p1)
{
	unsigned char vec[256];

	if (e->src.kind == LIBUFFD_ENGINE_SOURCE_SHMEM || e->remote)
		return resolve_each(e, base, p0, p1);
	for (size_t p = p0; p < p1;) {
		size_t chunk = min_sz(sizeof(vec), p1 - p);
		int r = present_pages(e, base, p, chunk, vec);
		if (r < 0)
			return r;
		for (size_t i = 0; i < chunk; i++) {
			if (vec[i] & 1)
				continue;
			size_t j = i + 1;
			while (j < chunk && !(vec[j] & 1))
				j++;
			r = resolve_each(e, base, p + i, p + j);
			if (r < 0)
				return r;
			i = j;
		}
		p += chunk;
	}
	return 0;
}

LIBUFFD_EXPORT int libuffd_engine_populate(struct libuffd_engine *e, void *addr, size_t len)
{
	uintptr_t base;
	size_t p0, p1;
	sigset_t all, old;

	if (!e)
		return -EINVAL;
	if (!clamp(e, addr, len, &base, &p0, &p1))
		return 0;
	/* This thread resolves as a handler does, holding a scratch buffer
	 * or the count of copies under way (engine-fault.c).  A signal
	 * handler run meanwhile that touched an unresolved page of the region
	 * would wait for a resolver that waits for those (for a free buffer,
	 * or for the copies to end before it reads events): for ever.  So
	 * signals wait until populate is done, but for those of a fault. */
	engine_deferrable_signals(&all);
	uffd_sys_sigprocmask(SIG_SETMASK, &all, &old);
	int r = populate(e, base, p0, p1);
	uffd_sys_sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

LIBUFFD_EXPORT long libuffd_engine_retry_efault(struct libuffd_engine *e, void *addr, size_t len,
						long (*fn)(void *arg), void *arg)
{
	uintptr_t base;
	size_t p0, p1;

	/* A system call here cannot touch another process's region. */
	if (!e || !fn || e->remote)
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
	/* mremap() returns once its event is read, maybe not yet applied. */
	engine_wait_event_readers(e);
	return (void *)LOAD(&e->base);
}
