// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A zstd snapshot in independent frames, served lazily through the libuffd
 * engine's CALLBACK source: see zstd-snapshot.h.
 *
 * The fill callback may run in a SIGBUS handler (the engine's in-thread
 * mode) and in several threads at once, so it allocates nothing: the
 * decompression contexts are static ones in workspaces allocated at open,
 * one per slot, and a slot is taken with a lock-free bit mask.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticDCtx, ZSTD_estimateDCtxSize */
#include "zstd-snapshot.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

struct frame {
	uint64_t at;  /* offset of the compressed frame in the buffer */
	uint64_t len; /* its compressed length */
};

struct slot {
	ZSTD_DCtx *dctx;
	unsigned char *scratch; /* frame_size bytes */
	uint64_t held;          /* 1 + the frame decompressed in scratch, 0: none */
};

struct zstd_snapshot {
	const unsigned char *buf;
	uint64_t size;        /* uncompressed */
	size_t frame_size;
	size_t nframes;
	struct frame *frames;
	unsigned int nslots;
	unsigned long busy;   /* slots taken, a bit each */
	void *workspace;
	struct slot slots[];
};

/* ---- Writing ------------------------------------------------------------ */

static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		ssize_t n = write(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

int zstd_snapshot_write(int fd, const void *data, size_t len, size_t frame_size, int level)
{
	if (!frame_size)
		frame_size = ZSTD_SNAPSHOT_FRAME_DEFAULT;
	if (!len || frame_size > ZSTD_SNAPSHOT_FRAME_MAX || fd < 0 || !data)
		return -EINVAL;
	size_t cap = ZSTD_compressBound(frame_size);
	void *out = malloc(cap);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	int r = out && cctx ? 0 : -ENOMEM;
	/* Each frame on its own, with its content size (the reader's index)
	 * and a checksum (a corrupted frame fails instead of serving wrong
	 * bytes). */
	if (!r && (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) ||
		   ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1)) ||
		   ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1))))
		r = -EINVAL;
	for (size_t off = 0; !r && off < len; off += frame_size) {
		size_t n = len - off < frame_size ? len - off : frame_size;
		size_t c = ZSTD_compress2(cctx, out, cap, (const char *)data + off, n);
		r = ZSTD_isError(c) ? -EIO : write_all(fd, out, c);
	}
	ZSTD_freeCCtx(cctx);
	free(out);
	return r;
}

/* ---- Reading: the frames from their headers ------------------------------ */

/* The data frames of buf[0, len), or -EBADMSG.  With frames NULL, only
 * counts them. */
static int walk(const unsigned char *buf, size_t len, struct frame *frames, size_t *nframes,
		size_t *frame_size, uint64_t *size)
{
	size_t at = 0, n = 0;
	uint64_t total = 0, first = 0, last = 0;

	while (at < len) {
		size_t c = ZSTD_findFrameCompressedSize(buf + at, len - at);
		if (ZSTD_isError(c) || c == 0 || c > len - at)
			return -EBADMSG; /* garbage, or a frame cut short */
		if (ZSTD_isSkippableFrame(buf + at, len - at)) {
			at += c;
			continue;
		}
		unsigned long long content = ZSTD_getFrameContentSize(buf + at, c);
		if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR ||
		    content == 0 || content > ZSTD_SNAPSHOT_FRAME_MAX ||
		    ZSTD_getDictID_fromFrame(buf + at, c) != 0)
			return -EBADMSG;
		/* Every frame holds as much as the first, but the last may hold less. */
		if (n == 0)
			first = content;
		else if (last != first || content > first)
			return -EBADMSG;
		if (frames)
			frames[n] = (struct frame){ at, c };
		last = content;
		total += content;
		n++;
		at += c;
	}
	if (n == 0)
		return -EBADMSG;
	*nframes = n;
	*frame_size = (size_t)first;
	*size = total;
	return 0;
}

int zstd_snapshot_open(const void *buf, size_t len, unsigned int slots,
		       struct zstd_snapshot **out)
{
	size_t nframes, frame_size;
	uint64_t size;

	if (!buf || !out || slots > ZSTD_SNAPSHOT_SLOTS_MAX)
		return -EINVAL;
	if (!slots)
		slots = ZSTD_SNAPSHOT_SLOTS_DEFAULT;
	int r = walk(buf, len, NULL, &nframes, &frame_size, &size);
	if (r < 0)
		return r;
	struct zstd_snapshot *z = calloc(1, sizeof(*z) + slots * sizeof(z->slots[0]));
	if (!z)
		return -ENOMEM;
	z->buf = buf;
	z->size = size;
	z->frame_size = frame_size;
	z->nframes = nframes;
	z->nslots = slots;
	z->frames = calloc(nframes, sizeof(*z->frames));
	/* Per slot: a static decompression context (8-byte aligned
	 * workspace), then the scratch. */
	size_t dsize = (ZSTD_estimateDCtxSize() + 63) & ~(size_t)63;
	size_t per = dsize + ((frame_size + 63) & ~(size_t)63);
	z->workspace = aligned_alloc(64, per * slots);
	if (!z->frames || !z->workspace) {
		zstd_snapshot_close(z);
		return -ENOMEM;
	}
	walk(buf, len, z->frames, &nframes, &frame_size, &size);
	for (unsigned int i = 0; i < slots; i++) {
		unsigned char *w = (unsigned char *)z->workspace + per * i;
		z->slots[i].dctx = ZSTD_initStaticDCtx(w, dsize);
		z->slots[i].scratch = w + dsize;
		if (!z->slots[i].dctx) {
			zstd_snapshot_close(z);
			return -ENOMEM;
		}
	}
	*out = z;
	return 0;
}

uint64_t zstd_snapshot_size(const struct zstd_snapshot *z)
{
	return z->size;
}

size_t zstd_snapshot_frame_size(const struct zstd_snapshot *z)
{
	return z->frame_size;
}

void zstd_snapshot_close(struct zstd_snapshot *z)
{
	if (!z)
		return;
	free(z->workspace); /* the static contexts live in it */
	free(z->frames);
	free(z);
}

/* ---- Serving ------------------------------------------------------------- */

/* A free slot, preferably one whose scratch holds frame `want` (1 +
 * its index).  All taken: wait (the engine calls at most as many fills
 * at once as it has scratch buffers of its own). */
static unsigned int slot_take(struct zstd_snapshot *z, uint64_t want)
{
	unsigned long all = z->nslots >= 64 ? ~0ul : (1ul << z->nslots) - 1;

	for (;;) {
		unsigned long busy = __atomic_load_n(&z->busy, __ATOMIC_RELAXED);
		unsigned long avail = ~busy & all;
		if (!avail) {
			sched_yield();
			continue;
		}
		unsigned int i = (unsigned int)__builtin_ctzl(avail);
		for (unsigned long a = avail; a; a &= a - 1) {
			unsigned int j = (unsigned int)__builtin_ctzl(a);
			if (__atomic_load_n(&z->slots[j].held, __ATOMIC_RELAXED) == want) {
				i = j;
				break;
			}
		}
		if (__atomic_compare_exchange_n(&z->busy, &busy, busy | (1ul << i), 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return i;
	}
}

static void slot_give(struct zstd_snapshot *z, unsigned int i)
{
	__atomic_fetch_and(&z->busy, ~(1ul << i), __ATOMIC_RELEASE);
}

/* Frame f, whole, into dst (its content size). */
static int decompress(struct zstd_snapshot *z, struct slot *s, size_t f, void *dst, size_t len)
{
	const struct frame *fr = &z->frames[f];
	size_t n = ZSTD_decompressDCtx(s->dctx, dst, len, z->buf + fr->at, fr->len);
	return ZSTD_isError(n) || n != len ? -EIO : 0;
}

int zstd_snapshot_fill(void *ctx, uint64_t offset, void *dst, size_t len)
{
	struct zstd_snapshot *z = ctx;
	unsigned char *to = dst;
	size_t fs = z->frame_size;
	int r = 0;

	if (offset >= z->size) {
		memset(dst, 0, len);
		return 0;
	}
	unsigned int si = slot_take(z, offset / fs + 1);
	struct slot *s = &z->slots[si];
	while (len && !r) {
		if (offset >= z->size) { /* past the end */
			memset(to, 0, len);
			break;
		}
		size_t f = (size_t)(offset / fs), in = (size_t)(offset - (uint64_t)f * fs);
		size_t flen = f + 1 < z->nframes ? fs : (size_t)(z->size - (uint64_t)f * fs);
		size_t n = len < flen - in ? len : flen - in;
		uint64_t held = __atomic_load_n(&s->held, __ATOMIC_RELAXED);
		if (held == f + 1) {
			memcpy(to, s->scratch + in, n);
		} else if (in == 0 && n == flen) {
			r = decompress(z, s, f, to, n); /* covered whole: straight there */
		} else {
			__atomic_store_n(&s->held, 0, __ATOMIC_RELAXED);
			r = decompress(z, s, f, s->scratch, flen);
			if (!r) {
				__atomic_store_n(&s->held, f + 1, __ATOMIC_RELAXED);
				memcpy(to, s->scratch + in, n);
			}
		}
		to += n;
		offset += n;
		len -= n;
	}
	slot_give(z, si);
	return r;
}
