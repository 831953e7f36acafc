/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef UFFDGUARD_ATOMIC_FILE_H
#define UFFDGUARD_ATOMIC_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Replace path with text, atomically: a temporary file in the same
 * directory, written, given `mode`, fsync'd and renamed over path, then
 * the directory fsync'd.  On failure nothing is left behind and path is
 * unchanged.  Only a missing path or a regular file is replaced: anything
 * else at the last component is refused before anything is written (see
 * atomic_file_check()); links among the directories are followed as
 * usual.  Returns 0 or -errno. */
int write_file_atomic(const char *path, const char *text, mode_t mode);

/* Whether write_file_atomic() would replace path, by lstat(): 0 when it
 * is missing or a regular file, -ELOOP for a symbolic link (dangling or
 * not; a link to /dev/null is how systemd masks a file), -EISDIR for a
 * directory, -EINVAL for anything else (fifo, socket, device); other
 * -errno when lstat() fails otherwise (ENOENT is "missing").  Then its
 * directory: -ENOENT when it is missing, -ENOTDIR when it (or a component
 * above) is not a directory, -EACCES when it is not writable. */
int atomic_file_check(const char *path);

/* When err is one of the refusals above and path is indeed not a regular
 * file, write "PATH is a symbolic link (to TARGET); uffdguard replaces
 * regular files only: remove it or write elsewhere" (or "is a directory",
 * "is a fifo", ...) to buf and return true; otherwise false (the caller
 * then reports strerror(-err)). */
#define ATOMIC_FILE_REFUSAL_SIZE (2 * PATH_MAX + 128) /* enough for any buf */
bool atomic_file_refusal(const char *path, int err, char *buf, size_t size);

#endif
