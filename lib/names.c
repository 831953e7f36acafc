// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdio.h>

#include "internal.h"

static const char *const feature_names[] = {
	[0] = "pagefault_flag_wp",
	[1] = "event_fork",
	[2] = "event_remap",
	[3] = "event_remove",
	[4] = "missing_hugetlbfs",
	[5] = "missing_shmem",
	[6] = "event_unmap",
	[7] = "sigbus",
	[8] = "thread_id",
	[9] = "minor_hugetlbfs",
	[10] = "minor_shmem",
	[11] = "exact_address",
	[12] = "wp_hugetlbfs_shmem",
	[13] = "wp_unpopulated",
	[14] = "poison",
	[15] = "wp_async",
	[16] = "move",
};

static const char *const ioctl_names[] = {
	[_UFFDIO_REGISTER] = "register",
	[_UFFDIO_UNREGISTER] = "unregister",
	[_UFFDIO_WAKE] = "wake",
	[_UFFDIO_COPY] = "copy",
	[_UFFDIO_ZEROPAGE] = "zeropage",
	[_UFFDIO_MOVE] = "move",
	[_UFFDIO_WRITEPROTECT] = "writeprotect",
	[_UFFDIO_CONTINUE] = "continue",
	[_UFFDIO_POISON] = "poison",
	[_UFFDIO_API] = "api",
};

#define NAME_AT(table, bit) \
	((bit) < sizeof(table) / sizeof((table)[0]) ? (table)[bit] : NULL)

LIBUFFD_EXPORT const char *libuffd_feature_name(unsigned int bit)
{
	return NAME_AT(feature_names, bit);
}

LIBUFFD_EXPORT const char *libuffd_ioctl_name(unsigned int bit)
{
	return NAME_AT(ioctl_names, bit);
}

static int format_mask(uint64_t mask, const char *(*name)(unsigned int),
		       const char *sep, char *buf, size_t size)
{
	size_t used = 0;
	int first = 1;

	if (size)
		buf[0] = '\0';
	for (unsigned int bit = 0; bit < 64; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		const char *n = name(bit);
		char unnamed[24];
		if (!n) {
			snprintf(unnamed, sizeof(unnamed), "0x%llx", 1ull << bit);
			n = unnamed;
		}
		int w = snprintf(used < size ? buf + used : NULL, used < size ? size - used : 0,
				 "%s%s", first ? "" : sep, n);
		if (w < 0)
			return -EINVAL;
		used += (size_t)w;
		first = 0;
	}
	return (int)used;
}

LIBUFFD_EXPORT int libuffd_format_features(uint64_t mask, const char *sep, char *buf, size_t size)
{
	return format_mask(mask, libuffd_feature_name, sep, buf, size);
}

LIBUFFD_EXPORT int libuffd_format_ioctls(uint64_t mask, const char *sep, char *buf, size_t size)
{
	return format_mask(mask, libuffd_ioctl_name, sep, buf, size);
}
