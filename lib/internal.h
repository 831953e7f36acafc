/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef LIBUFFD_INTERNAL_H
#define LIBUFFD_INTERNAL_H

#include "libuffd.h"
#include "compat.h"

#define LIBUFFD_EXPORT __attribute__((visibility("default")))

/* Reserved input fields must be zero: they may mean something later. */
#define LIBUFFD_RESERVED_ZERO(r)                                        \
	({                                                              \
		int zero_ = 1;                                          \
		for (size_t i_ = 0; i_ < sizeof(r) / sizeof((r)[0]); i_++) \
			zero_ &= (r)[i_] == 0;                          \
		zero_;                                                  \
	})

/* The raw system call layer (sys.c): -errno, never errno. */
int uffd_sys_userfaultfd(int flags);
int uffd_sys_ioctl(int fd, unsigned long cmd, void *arg);
int uffd_sys_read(int fd, void *buf, size_t len);
int uffd_sys_device_new(const char *path, int flags);
int uffd_sys_madvise(void *addr, size_t len, int advice);
int uffd_sys_mincore(void *addr, size_t len, unsigned char *vec);

#endif
