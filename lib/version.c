// SPDX-License-Identifier: LGPL-2.1-or-later
/* The version of the library a program runs with, which may be newer than
 * the one it was built against. */
#include "internal.h"
#include "libuffd-version.h"

LIBUFFD_EXPORT const char *libuffd_version(void)
{
	return LIBUFFD_VERSION;
}
