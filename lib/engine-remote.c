// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Serving another process's memory.  A userfaultfd acts on the address
 * space of the process that opened it, whoever holds it: the owner of a
 * region opens one and sends it over a Unix socket with the region's
 * description; the server registers the region on it and answers; the
 * owner returns only then, so that it never touches the region before it
 * is registered (a page touched earlier would be plain zero memory, never
 * served).  The server, not the owner, does UFFDIO_API and
 * UFFDIO_REGISTER: the engine chooses its features (once per
 * descriptor) and reads the ioctls the kernel allows on the region.
 *
 * Messages, host byte order (both ends are on one machine):
 *   hello, owner -> server, with exactly one SCM_RIGHTS descriptor;
 *   answer, server -> owner, no descriptor: 0 or the server's -errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine-internal.h"

#define SHARE_MAGIC 0x64666675u /* "uffd" */
#define SHARE_VERSION 1
#define SHARE_KERNEL_FAULTS (1u << 0) /* no UFFD_USER_MODE_ONLY */
#define MAX_FDS 4 /* room to see that a message carried more than one */

struct share_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t size;      /* sizeof(struct share_hello) */
	uint32_t flags;     /* SHARE_KERNEL_FAULTS */
	uint32_t page_size; /* the owner's */
	uint64_t addr, len;
	uint64_t reserved[4]; /* zero */
};

struct share_answer {
	uint32_t magic;
	uint16_t version;
	uint16_t size;   /* sizeof(struct share_answer) */
	int32_t status;  /* 0 or -errno */
	uint32_t reserved;
};

/* ---- Messages ------------------------------------------------------------ */

static int send_msg(int sock, const void *data, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)data, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	int n = uffd_sys_sendmsg(sock, &m, MSG_NOSIGNAL);
	if (n < 0)
		return n == -EPIPE ? -ECONNRESET : n;
	return (size_t)n == len ? 0 : -EPROTO;
}

/*
 * Receive one message of exactly len bytes into data.  *fd: the one
 * descriptor it carried, or -1; every other descriptor is closed.
 * Returns 0, -ECONNRESET (the peer hung up), -EPROTO (another size),
 * -EBADMSG (more than one descriptor, or some lost to a short control
 * buffer), or recvmsg's error.  On error no descriptor is left open.
 */
static int recv_msg(int sock, void *data, size_t len, int *fd)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	char one_more;
	struct iovec iov[2] = { { data, len }, { &one_more, 1 } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	int nfds = 0;

	*fd = -1;
	int n = uffd_sys_recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int got;
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds++ == 0)
				*fd = got;
			else
				uffd_sys_close(got);
		}
	}
	int r = 0;
	if (n == 0 && nfds == 0)
		r = -ECONNRESET;
	else if ((size_t)n != len || (m.msg_flags & MSG_TRUNC))
		r = -EPROTO;
	else if (nfds > 1 || (m.msg_flags & MSG_CTRUNC))
		r = -EBADMSG;
	if (r < 0 && *fd >= 0) {
		uffd_sys_close(*fd);
		*fd = -1;
	}
	return r;
}

/* The server's answer: best effort (an owner that hung up hears nothing). */
static int send_answer(int sock, int status)
{
	struct share_answer a = { .magic = SHARE_MAGIC, .version = SHARE_VERSION,
				  .size = sizeof(a), .status = status };
	return send_msg(sock, &a, sizeof(a), -1);
}

/* fd is a userfaultfd, as the kernel names it. */
static int is_userfaultfd(int fd)
{
	char path[40], target[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int n = uffd_sys_readlink(path, target, sizeof(target));
	if (n < 0)
		return n == -ENAMETOOLONG ? 0 : n;
	return strcmp(target, "anon_inode:[userfaultfd]") == 0;
}

/* A hello that this version can act on: 0 or -EPROTO. */
static int check_hello(const struct share_hello *h, size_t page)
{
	if (h->magic != SHARE_MAGIC || h->version != SHARE_VERSION || h->size != sizeof(*h) ||
	    (h->flags & ~SHARE_KERNEL_FAULTS) || !LIBUFFD_RESERVED_ZERO(h->reserved))
		return -EPROTO;
	/* One page size on one machine; an address this process can hold. */
	if (h->page_size != page || !h->len || (h->addr | h->len) % page ||
	    h->addr + h->len < h->addr || (uint64_t)(uintptr_t)h->addr != h->addr ||
	    (uint64_t)(size_t)h->len != h->len)
		return -EPROTO;
	return 0;
}

/* ---- The server ------------------------------------------------------------ */

LIBUFFD_EXPORT int libuffd_engine_create_remote(int sock, const struct libuffd_engine_source *src,
						const struct libuffd_engine_opts *opts,
						struct libuffd_engine **out)
{
	struct share_hello h;
	int saved = errno, fd;

	/* The caller's mistakes, before anything is read from the owner.
	 * A SHMEM source serves the caller's own mapping of its file. */
	if (sock < 0 || !out || engine_check_args(src, opts) < 0 ||
	    src->kind == LIBUFFD_ENGINE_SOURCE_SHMEM ||
	    (opts && (opts->mode != LIBUFFD_ENGINE_HANDLER_THREADS || opts->open_opts)))
		return -EINVAL;
	*out = NULL;
	int r = recv_msg(sock, &h, sizeof(h), &fd);
	if (r < 0 && r != -EPROTO && r != -EBADMSG) {
		errno = saved;
		return r; /* nothing read (-EAGAIN), or nobody to answer */
	}
	if (r == 0 && fd < 0)
		r = -EBADMSG;
	if (r == 0)
		r = check_hello(&h, (size_t)sysconf(_SC_PAGESIZE));
	if (r == 0) {
		int is = is_userfaultfd(fd);
		r = is < 0 ? is : is ? 0 : -EBADMSG;
	}
	if (r == 0) {
		/* Our reads must not block, whatever the owner opened. */
		int fl = uffd_sys_fcntl(fd, F_GETFL, 0);
		if (fl >= 0 && !(fl & O_NONBLOCK))
			fl = uffd_sys_fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		if (fl < 0)
			r = fl;
	}
	if (r < 0) {
		if (fd >= 0)
			uffd_sys_close(fd);
		send_answer(sock, r);
		errno = saved;
		return r;
	}
	struct libuffd_engine *e = NULL;
	r = engine_create_remote(fd, !!(h.flags & SHARE_KERNEL_FAULTS), (void *)(uintptr_t)h.addr,
				 (size_t)h.len, src, opts, &e);
	int sent = send_answer(sock, r);
	if (r == 0 && sent < 0) {
		/* The owner would wait for ever: serve nobody. */
		libuffd_engine_destroy(e);
		r = sent;
	}
	if (r == 0)
		*out = e;
	errno = saved;
	return r;
}

/* ---- The owner --------------------------------------------------------------- */

LIBUFFD_EXPORT int libuffd_engine_share(int sock, void *addr, size_t len,
					const struct libuffd_open_opts *open_opts)
{
	struct libuffd_open_opts oo = { 0 };
	long pg = sysconf(_SC_PAGESIZE);
	int saved = errno;

	if (sock < 0 || !addr || !len || ((uintptr_t)addr | len) % (size_t)pg ||
	    (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	if (open_opts)
		oo = *open_opts;
	/* The server's reads must not block; ours is closed at once. */
	oo.flags &= ~(LIBUFFD_OPEN_BLOCKING | LIBUFFD_OPEN_INHERIT);
	int fd = libuffd_open(&oo, NULL);
	if (fd < 0)
		return fd;
	struct share_hello h = { .magic = SHARE_MAGIC, .version = SHARE_VERSION, .size = sizeof(h),
				 .flags = oo.flags & LIBUFFD_OPEN_KERNEL_FAULTS ? SHARE_KERNEL_FAULTS : 0,
				 .page_size = (uint32_t)pg, .addr = (uintptr_t)addr, .len = len };
	int r = send_msg(sock, &h, sizeof(h), fd);
	/* The message holds its own reference: the server's is the only one
	 * left, and when it closes it the region is unregistered. */
	uffd_sys_close(fd);
	if (r < 0) {
		errno = saved;
		return r;
	}
	/* Wait for the answer, whatever the socket's O_NONBLOCK. */
	struct share_answer a;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	for (;;) {
		r = uffd_sys_poll(&pfd, 1, -1);
		if (r != -EINTR && r != -EAGAIN)
			break;
	}
	if (r >= 0) {
		do
			r = recv_msg(sock, &a, sizeof(a), &fd);
		while (r == -EINTR);
	}
	if (r == 0 && fd >= 0) {
		uffd_sys_close(fd);
		r = -EPROTO;
	}
	if (r == 0 && (a.magic != SHARE_MAGIC || a.version != SHARE_VERSION ||
		       a.size != sizeof(a) || a.reserved || a.status > 0 || a.status < -4095))
		r = -EPROTO;
	if (r == -EBADMSG)
		r = -EPROTO; /* descriptors in an answer */
	if (r == 0)
		r = a.status;
	errno = saved;
	return r;
}
