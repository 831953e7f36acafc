/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef UFFDGUARD_ATOMIC_FILE_H
#define UFFDGUARD_ATOMIC_FILE_H

#include <sys/types.h>

/* Replace path with text, atomically: a temporary file in the same
 * directory, written, given `mode`, fsync'd and renamed over path, then
 * the directory fsync'd.  On failure nothing is left behind and path is
 * unchanged.  Returns 0 or -errno. */
int write_file_atomic(const char *path, const char *text, mode_t mode);

#endif
