// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A real CALLBACK source: a snapshot compressed with zstd in independent
 * frames (examples/zstd-snapshot.c), served lazily by the engine in both
 * modes.  Every byte of a multi-MiB snapshot with zero, compressible and
 * incompressible parts is compared after sequential, random and
 * concurrent touches; a corrupted frame raises SIGBUS at the access; what
 * is not a whole sequence of zstd frames is refused.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_writeSkippableFrame */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "engine-util.h"
#include "harness.h"
#include "util.h"
#include "zstd-snapshot.h"

/* Not a whole number of pages: the last page is partly past the end. */
#define SNAP_LEN ((6u << 20) + 5 * 4096 + 123)

static uint64_t rng_state;

static uint64_t next_rand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Stretches of 90000 bytes (so that they straddle frames and pages) of
 * zeros, text-like words, random bytes and a counting pattern, in turn. */
static unsigned char *make_data(size_t len, uint64_t seed)
{
	static const char *const words[] = { "page ", "fault ", "engine ", "snapshot ",
					     "frame ", "zstd ", "region ", "window " };
	unsigned char *d = malloc(len);
	ASSERT_TRUE(d);
	rng_state = seed | 1;
	for (size_t at = 0; at < len;) {
		size_t end = at + 90000 < len ? at + 90000 : len;
		switch ((at / 90000) % 4) {
		case 0:
			memset(d + at, 0, end - at);
			at = end;
			break;
		case 1:
			while (at < end) {
				const char *w = words[next_rand() % 8];
				while (*w && at < end)
					d[at++] = (unsigned char)*w++;
			}
			break;
		case 2:
			for (; at < end; at++)
				d[at] = (unsigned char)next_rand();
			break;
		default:
			for (; at < end; at++)
				d[at] = (unsigned char)(at * 7 + at / 4096);
		}
	}
	return d;
}

/* The compressed snapshot, read back into a private writable mapping
 * (corruption cases change it). */
static unsigned char *compress(const void *data, size_t len, size_t frame, size_t *clen)
{
	int fd = ASSERT_SYS(memfd_create("zstd-snapshot", 0));
	ASSERT_OK(zstd_snapshot_write(fd, data, len, frame, 3));
	off_t n = ASSERT_SYS(lseek(fd, 0, SEEK_END));
	unsigned char *c = mmap(NULL, (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_TRUE(c != MAP_FAILED);
	close(fd);
	*clen = (size_t)n;
	return c;
}

struct fixture {
	unsigned char *data, *comp;
	size_t len, clen, region_len;
	struct zstd_snapshot *z;
	char *region;
	struct libuffd_engine *e;
};

/* The snapshot, compressed. */
static void make_snapshot(struct fixture *f, size_t frame)
{
	f->len = SNAP_LEN;
	f->data = make_data(f->len, 0x5eed);
	f->comp = compress(f->data, f->len, frame, &f->clen);
}

/* Served by an engine, on a region three pages longer (read as zeros). */
static void serve_region(struct fixture *f, size_t frame, enum libuffd_engine_mode mode,
			 unsigned int threads, unsigned int slots)
{
	size_t pg = page_size();
	ASSERT_OK(zstd_snapshot_open(f->comp, f->clen, slots, &f->z));
	ASSERT_EQ(zstd_snapshot_size(f->z), f->len);
	ASSERT_EQ(zstd_snapshot_frame_size(f->z), frame);
	f->region_len = ((f->len + pg - 1) / pg + 3) * pg;
	f->region = map_pages(f->region_len / pg);
	struct libuffd_engine_source s = { .kind = LIBUFFD_ENGINE_SOURCE_CALLBACK,
					   .fill = zstd_snapshot_fill, .ctx = f->z };
	f->e = serve(f->region, f->region_len, &s, mode, threads);
}

static void serve_snapshot(struct fixture *f, size_t frame, enum libuffd_engine_mode mode,
			   unsigned int threads, unsigned int slots)
{
	make_snapshot(f, frame);
	serve_region(f, frame, mode, threads, slots);
}

static void unserve(struct fixture *f)
{
	ASSERT_OK(libuffd_engine_destroy(f->e));
	zstd_snapshot_close(f->z);
	munmap(f->region, f->region_len);
	munmap(f->comp, f->clen);
	free(f->data);
}

/* Page i of the region against the snapshot (zeros past its end). */
static int page_matches(const struct fixture *f, size_t i)
{
	size_t pg = page_size(), at = i * pg;
	for (size_t b = at; b < at + pg; b++)
		if ((unsigned char)f->region[b] != (b < f->len ? f->data[b] : 0))
			return 0;
	return 1;
}

static void assert_every_byte(const struct fixture *f)
{
	for (size_t b = 0; b < f->region_len; b++)
		if ((unsigned char)f->region[b] != (b < f->len ? f->data[b] : 0))
			FAIL("byte %zu (frame %zu) is %#x, want %#x", b,
			     b / zstd_snapshot_frame_size(f->z), (unsigned char)f->region[b],
			     b < f->len ? f->data[b] : 0);
}

/* The pages in a random order. */
static size_t *shuffled(size_t n, uint64_t seed)
{
	size_t *p = malloc(n * sizeof(*p));
	ASSERT_TRUE(p);
	for (size_t i = 0; i < n; i++)
		p[i] = i;
	rng_state = seed | 1;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = next_rand() % (i + 1), t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

BOTH_MODES(every_byte_sequential)
{
	struct fixture f;
	serve_snapshot(&f, ZSTD_SNAPSHOT_FRAME_DEFAULT, mode, 2, 0);
	assert_every_byte(&f); /* reads in order: windows up to the largest */
	unserve(&f);
}

/* Serve a snapshot of frames of frame bytes and touch its pages in a
 * random order (seed), each checked as it comes, then every byte. */
static void serve_and_touch_in_random_order(enum libuffd_engine_mode mode, size_t frame,
					    uint64_t seed)
{
	struct fixture f;
	serve_snapshot(&f, frame, mode, 2, 0);
	size_t n = f.region_len / page_size(), *order = shuffled(n, seed);
	for (size_t i = 0; i < n; i++)
		if (!page_matches(&f, order[i]))
			FAIL("page %zu, touched %zu-th, differs", order[i], i);
	assert_every_byte(&f);
	free(order);
	unserve(&f);
}

BOTH_MODES(every_byte_random_order)
{
	serve_and_touch_in_random_order(mode, ZSTD_SNAPSHOT_FRAME_DEFAULT, 42);
}

/* Frames that end inside pages: every fill covers frames in part. */
BOTH_MODES(every_byte_with_frames_across_pages)
{
	serve_and_touch_in_random_order(mode, (40u << 10) + 1000, 7);
}

/* Threads touching every page each, in their own random orders, through
 * fewer slots than threads; each page is checked as it is touched. */
#define TOUCHERS 4

struct toucher {
	const struct fixture *f;
	uint64_t seed;
	long bad; /* a page that differed, or -1 */
};

static void *touch_all(void *arg)
{
	struct toucher *t = arg;
	size_t n = t->f->region_len / page_size();
	size_t *order = malloc(n * sizeof(*order));
	t->bad = -1;
	if (!order) {
		t->bad = -2;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	uint64_t r = t->seed | 1;
	for (size_t i = n - 1; i > 0; i--) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		size_t j = r % (i + 1), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	for (size_t i = 0; i < n && t->bad == -1; i++)
		if (!page_matches(t->f, order[i]))
			t->bad = (long)order[i];
	free(order);
	return NULL;
}

BOTH_MODES(every_byte_from_concurrent_threads)
{
	struct fixture f;
	pthread_t th[TOUCHERS];
	struct toucher t[TOUCHERS];
	serve_snapshot(&f, ZSTD_SNAPSHOT_FRAME_DEFAULT, mode, 3, 2);
	for (int i = 0; i < TOUCHERS; i++) {
		t[i] = (struct toucher){ &f, 1000 + (uint64_t)i, -1 };
		ASSERT_EQ(pthread_create(&th[i], NULL, touch_all, &t[i]), 0);
	}
	for (int i = 0; i < TOUCHERS; i++) {
		ASSERT_EQ(pthread_join(th[i], NULL), 0);
		ASSERT_EQ(t[i].bad, -1);
	}
	assert_every_byte(&f);
	unserve(&f);
}

/* The callback alone, from more threads than slots, at any page-aligned
 * offset and length the engine may ask for (up to 256 KiB). */
struct filler {
	struct zstd_snapshot *z;
	const unsigned char *data;
	size_t len;
	uint64_t seed;
	int bad;
};

static void *fill_randomly(void *arg)
{
	struct filler *fl = arg;
	size_t pg = page_size(), max = 64 * pg;
	unsigned char *buf = malloc(max);
	uint64_t r = fl->seed | 1;
	fl->bad = !buf;
	for (int k = 0; k < 300 && !fl->bad; k++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		size_t off = (r % ((fl->len + max) / pg)) * pg, n = (1 + (r >> 32) % 64) * pg;
		if (zstd_snapshot_fill(fl->z, off, buf, n) != 0)
			fl->bad = 1;
		for (size_t b = 0; b < n && !fl->bad; b++)
			if (buf[b] != (off + b < fl->len ? fl->data[off + b] : 0))
				fl->bad = 1;
	}
	free(buf);
	return NULL;
}

TEST_TIMEOUT(fill_from_more_threads_than_slots, 60)
{
	size_t clen, len = SNAP_LEN;
	unsigned char *data = make_data(len, 3);
	unsigned char *comp = compress(data, len, (24u << 10) + 4, &clen);
	struct zstd_snapshot *z;
	pthread_t th[6];
	struct filler fl[6];
	ASSERT_OK(zstd_snapshot_open(comp, clen, 2, &z));
	for (int i = 0; i < 6; i++) {
		fl[i] = (struct filler){ z, data, len, 77 + (uint64_t)i, 0 };
		ASSERT_EQ(pthread_create(&th[i], NULL, fill_randomly, &fl[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(pthread_join(th[i], NULL), 0);
		ASSERT_EQ(fl[i].bad, 0);
	}
	zstd_snapshot_close(z);
	munmap(comp, clen);
	free(data);
}

/* The compressed bytes of data frame nr (skippable frames are not written). */
static unsigned char *frame_at(unsigned char *comp, size_t clen, size_t nr, size_t *flen)
{
	size_t at = 0;
	for (size_t i = 0;; i++) {
		size_t c = ZSTD_findFrameCompressedSize(comp + at, clen - at);
		ASSERT_TRUE(!ZSTD_isError(c));
		if (i == nr) {
			*flen = c;
			return comp + at;
		}
		at += c;
	}
}

/* A flipped byte in an incompressible frame (its checksum fails) and in a
 * compressible one: the accesses there raise SIGBUS, the frames around
 * them are served. */
BOTH_MODES(corrupted_frame_raises_sigbus)
{
	struct fixture f;
	size_t pg = page_size(), fs = 64u << 10, flen;
	/* Frame 1, bytes [64 KiB, 128 KiB): zeros, then words (a compressed
	 * block); frame 3, [192 KiB, 256 KiB): random bytes only (a stored
	 * block, which only the checksum guards). */
	static const size_t bad[] = { 1, 3 };

	make_snapshot(&f, fs);
	for (size_t k = 0; k < 2; k++) {
		unsigned char *fr = frame_at(f.comp, f.clen, bad[k], &flen);
		ASSERT_GT(flen, 64);
		fr[flen / 2] ^= 0x5a;
	}
	install_test_sigbus(); /* before the engine's, which chains to it */
	serve_region(&f, fs, mode, 2, 0);
	for (size_t k = 0; k < 2; k++) {
		char *first = f.region + bad[k] * fs;
		ASSERT_TRUE(page_matches(&f, (bad[k] * fs - pg) / pg)); /* the page before */
		ASSERT_TRUE(read_raises_sigbus(first + 100));
		ASSERT_TRUE(bus_addr == first + 100);
		ASSERT_TRUE(read_raises_sigbus(first + fs - 1));
		ASSERT_TRUE(bus_addr == first + fs - 1);
		ASSERT_TRUE(page_matches(&f, (bad[k] + 1) * fs / pg)); /* the page after */
		ASSERT_TRUE(read_raises_sigbus(first + fs / 2)); /* again: still failing */
	}
	/* Everything else, every byte. */
	for (size_t i = 0; i < f.region_len / pg; i++)
		if (i * pg / fs != bad[0] && i * pg / fs != bad[1] && !page_matches(&f, i))
			FAIL("page %zu differs", i);
	unserve(&f);
}

TEST(what_is_not_whole_zstd_frames_is_refused)
{
	size_t clen, clen2, len = 1u << 20, fs = 64u << 10;
	unsigned char *data = make_data(len, 9);
	unsigned char *comp = compress(data, len, fs, &clen);
	struct zstd_snapshot *z;
	size_t flen;

	/* Whole: accepted. */
	ASSERT_OK(zstd_snapshot_open(comp, clen, 0, &z));
	ASSERT_EQ(zstd_snapshot_size(z), len);
	zstd_snapshot_close(z);
	/* Nothing; a frame cut short anywhere; the header alone. */
	ASSERT_ERR(zstd_snapshot_open(comp, 0, 0, &z), -EBADMSG);
	ASSERT_ERR(zstd_snapshot_open(comp, clen - 1, 0, &z), -EBADMSG);
	frame_at(comp, clen, 7, &flen);
	ASSERT_ERR(zstd_snapshot_open(comp, clen - flen / 2, 0, &z), -EBADMSG);
	ASSERT_ERR(zstd_snapshot_open(comp, 5, 0, &z), -EBADMSG);
	/* Garbage; garbage after the last frame. */
	unsigned char *junk = malloc(clen + 64);
	ASSERT_TRUE(junk);
	rng_state = 99;
	for (size_t i = 0; i < clen + 64; i++)
		junk[i] = (unsigned char)next_rand();
	ASSERT_ERR(zstd_snapshot_open(junk, clen, 0, &z), -EBADMSG);
	memcpy(junk, comp, clen);
	ASSERT_ERR(zstd_snapshot_open(junk, clen + 64, 0, &z), -EBADMSG);
	/* A frame header whose magic is damaged, in the middle. */
	unsigned char *fr = frame_at(junk, clen, 4, &flen);
	fr[0] ^= 1;
	ASSERT_ERR(zstd_snapshot_open(junk, clen, 0, &z), -EBADMSG);
	free(junk);

	/* Two snapshots one after the other: frames of another size, or a
	 * short frame that is not the last. */
	unsigned char *other = compress(data, len - 1000, fs / 2, &clen2);
	unsigned char *two = malloc(clen + clen2);
	ASSERT_TRUE(two);
	memcpy(two, comp, clen);
	memcpy(two + clen, other, clen2);
	ASSERT_ERR(zstd_snapshot_open(two, clen + clen2, 0, &z), -EBADMSG);
	munmap(other, clen2);
	other = compress(data, len - 1000, fs, &clen2);
	memcpy(two, other, clen2);
	memcpy(two + clen2, comp, clen);
	ASSERT_ERR(zstd_snapshot_open(two, clen + clen2, 0, &z), -EBADMSG);
	munmap(other, clen2);

	/* A frame without its content size. */
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ASSERT_TRUE(cctx);
	ASSERT_TRUE(!ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)));
	ZSTD_inBuffer in = { data, fs, 0 };
	ZSTD_outBuffer out = { two, clen + clen2, 0 };
	ASSERT_EQ(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end), 0);
	ZSTD_freeCCtx(cctx);
	ASSERT_EQ(ZSTD_getFrameContentSize(two, out.pos), ZSTD_CONTENTSIZE_UNKNOWN);
	ASSERT_ERR(zstd_snapshot_open(two, out.pos, 0, &z), -EBADMSG);

	/* A skippable frame after the last one is passed over. */
	memcpy(two, comp, clen);
	size_t skip = ZSTD_writeSkippableFrame(two + clen, clen2, "note", 4, 3);
	ASSERT_TRUE(!ZSTD_isError(skip));
	ASSERT_OK(zstd_snapshot_open(two, clen + skip, 0, &z));
	ASSERT_EQ(zstd_snapshot_size(z), len);
	zstd_snapshot_close(z);

	free(two);
	munmap(comp, clen);
	free(data);
}

TEST(writer_refuses_what_it_cannot_write)
{
	char c = 0;
	int fd = ASSERT_SYS(memfd_create("zstd-snapshot", 0));
	ASSERT_ERR(zstd_snapshot_write(fd, &c, 0, 0, 3), -EINVAL);
	ASSERT_ERR(zstd_snapshot_write(fd, &c, 1, ZSTD_SNAPSHOT_FRAME_MAX + 1, 3), -EINVAL);
	ASSERT_ERR(zstd_snapshot_write(-1, &c, 1, 0, 3), -EINVAL);
	ASSERT_EQ(lseek(fd, 0, SEEK_END), 0);
	close(fd);
	struct zstd_snapshot *z;
	ASSERT_ERR(zstd_snapshot_open(&c, 1, ZSTD_SNAPSHOT_SLOTS_MAX + 1, &z), -EINVAL);
}

/* The file is plain zstd: one ordinary decompression restores it all. */
TEST(snapshot_is_plain_zstd)
{
	size_t clen, len = SNAP_LEN;
	unsigned char *data = make_data(len, 5);
	unsigned char *comp = compress(data, len, 0, &clen);
	unsigned char *back = malloc(len + 1);
	ASSERT_TRUE(back);
	size_t n = ZSTD_decompress(back, len + 1, comp, clen);
	ASSERT_TRUE(!ZSTD_isError(n));
	ASSERT_EQ(n, len);
	ASSERT_TRUE(!memcmp(back, data, len));
	ASSERT_LT(clen, len * 3 / 4); /* and the compressible parts did compress */
	free(back);
	munmap(comp, clen);
	free(data);
}
