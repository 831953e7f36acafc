/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A snapshot compressed with zstd in independent frames, served lazily by
 * the libuffd engine's CALLBACK source (an example of a real callback
 * source; see libuffd-engine(3)).
 *
 * The file format is zstd's own and nothing else: a concatenation of
 * ordinary zstd frames, each holding frame_size bytes of the snapshot (the
 * last one fewer), each with its content size and checksum in its header.
 * `zstd -d` restores the whole snapshot from it.  The reader finds the
 * frames by walking their headers (ZSTD_findFrameCompressedSize()); there
 * is no index of its own.  Skippable frames are passed over.
 *
 *	struct zstd_snapshot *z;
 *	zstd_snapshot_open(compressed, compressed_len, 0, &z);
 *	struct libuffd_engine_source src = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
 *					     .fill = zstd_snapshot_fill, .ctx = z };
 *	libuffd_engine_create(region, len, &src, NULL, &eng);
 *	...
 *	libuffd_engine_destroy(eng);
 *	zstd_snapshot_close(z);
 *
 * Every function returns 0 (or a positive value) or a negative errno.
 */
#ifndef ZSTD_SNAPSHOT_H
#define ZSTD_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#define ZSTD_SNAPSHOT_FRAME_DEFAULT (32u << 10)
#define ZSTD_SNAPSHOT_FRAME_MAX (64u << 20)
#define ZSTD_SNAPSHOT_SLOTS_DEFAULT 8u
#define ZSTD_SNAPSHOT_SLOTS_MAX 64u

/* Compress data[0, len) to fd (written from its current offset) as
 * independent frames of frame_size bytes (0: the default; at most
 * ZSTD_SNAPSHOT_FRAME_MAX) at zstd level `level`.  Smaller frames make a
 * fault cheaper and compress a little worse; the default, 32 KiB, is what
 * bench-engine found best for clustered touches (the engine asks for
 * windows of 64 KiB and more).  -EINVAL for an empty
 * snapshot or a bad frame size, -ENOMEM, -EIO when zstd fails, or
 * write(2)'s error. */
int zstd_snapshot_write(int fd, const void *data, size_t len, size_t frame_size, int level);

struct zstd_snapshot;

/* Serve the snapshot compressed in buf[0, len) (a mapping of the file, or
 * memory): buf must stay readable and unchanged until zstd_snapshot_close().
 * slots: how many fills may decompress at once (0: the default, 8, the
 * in-thread engine's most; at most ZSTD_SNAPSHOT_SLOTS_MAX; give a handler-
 * threads engine one per thread); more wait for a slot.  Each slot holds
 * a zstd decompression context and a frame's worth of scratch, allocated
 * here.  Refused with -EBADMSG: anything that is not a whole sequence of
 * zstd frames (garbage, a truncated frame, bytes after the last frame), a
 * frame without its content size or needing a dictionary, frames of
 * different sizes other than a shorter last one, no frame at all.  Also
 * -EINVAL, -ENOMEM. */
int zstd_snapshot_open(const void *buf, size_t len, unsigned int slots,
		       struct zstd_snapshot **out);

/* The snapshot's size in bytes, and the frames' (uncompressed) size. */
uint64_t zstd_snapshot_size(const struct zstd_snapshot *z);
size_t zstd_snapshot_frame_size(const struct zstd_snapshot *z);

/* A libuffd_engine_fill_fn, ctx the snapshot: decompress the frames that
 * cover [offset, offset + len) and copy that part to dst; bytes past the
 * snapshot's end read as zero.  A frame covered whole is decompressed
 * straight into dst; one covered in part goes through the slot's scratch,
 * which keeps it for the next fill that wants the same frame.
 * Async-signal-safe (no allocation: the contexts are static, see
 * ZSTD_initStaticDCtx) and safe to call from several threads at once.
 * -EIO when a frame does not decompress or fails its checksum: the engine
 * then raises SIGBUS at the access. */
int zstd_snapshot_fill(void *ctx, uint64_t offset, void *dst, size_t len);

void zstd_snapshot_close(struct zstd_snapshot *z);

#endif
