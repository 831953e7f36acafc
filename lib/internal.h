/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef LIBUFFD_INTERNAL_H
#define LIBUFFD_INTERNAL_H

#include "libuffd.h"
#include "compat.h"
#include "sys.h"

#define LIBUFFD_EXPORT __attribute__((visibility("default")))

/* Reserved input fields must be zero: they may mean something later. */
#define LIBUFFD_RESERVED_ZERO(r)                                        \
	({                                                              \
		int zero_ = 1;                                          \
		for (size_t i_ = 0; i_ < sizeof(r) / sizeof((r)[0]); i_++) \
			zero_ &= (r)[i_] == 0;                          \
		zero_;                                                  \
	})

#endif
