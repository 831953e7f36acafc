/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel UAPI definitions newer than the build host's headers. */
#ifndef LIBUFFD_COMPAT_H
#define LIBUFFD_COMPAT_H

#include <linux/types.h>
#include <sys/ioctl.h>
#include <linux/userfaultfd.h>
#include <sys/syscall.h>

#ifndef __NR_userfaultfd
#define __NR_userfaultfd 323
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC 0xAA
#define USERFAULTFD_IOC_NEW _IO(USERFAULTFD_IOC, 0x00)
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
#endif
#ifndef _UFFDIO_POISON
#define _UFFDIO_POISON (0x08)
#endif
#ifndef UFFDIO_CONTINUE_MODE_WP
#define UFFDIO_CONTINUE_MODE_WP ((__u64)1 << 1)
#endif
#ifndef UFFDIO_POISON
struct uffdio_poison {
	struct uffdio_range range;
#define UFFDIO_POISON_MODE_DONTWAKE ((__u64)1 << 0)
	__u64 mode;
	__s64 updated;
};
#define UFFDIO_POISON _IOWR(UFFDIO, _UFFDIO_POISON, struct uffdio_poison)
#endif
#ifndef UFFDIO_MOVE
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
#define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
	__u64 mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif

#endif
