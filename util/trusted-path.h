/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Paths a privileged process opens on an administrator's word (`run
 * --audit FILE`, `--control DIR`, `--state FILE`).  Whoever owns a
 * symbolic link on the way chooses where it leads, and whoever owns a
 * directory on the way what it holds, so only the links and directories
 * of the trusted users are taken: root and the invoking user (and a
 * directory everyone may write only if it is sticky).  The path is walked
 * one component at a time with openat(), so what was checked is what is
 * opened.
 */
#ifndef UFFDGUARD_TRUSTED_PATH_H
#define UFFDGUARD_TRUSTED_PATH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Root, or the real or effective uid of this process. */
bool trusted_owner(uid_t uid);

/* Resolve path down to its last component, following the symbolic links
 * of trusted owners (the last component's too) and refusing any other
 * link, and any directory on the way that is not a trusted owner's or is
 * writable by everyone without the sticky bit.  On success *dirfd is an O_PATH descriptor of the directory that
 * holds the last component, and name (NAME_MAX + 1 bytes) its name, which
 * is not a link and may not exist.  Returns 0, or -errno with a sentence
 * in err that names the component and says what to do. */
int trusted_path_resolve(const char *path, int *dirfd, char *name, char *err, size_t err_size);

/* Whether an existing file may be written on the administrator's word: a
 * regular file with one name, owned by a trusted user, not writable by
 * group or others.  st is from fstat() of the descriptor to be used.
 * Returns 0, or -EPERM / -EINVAL with a sentence about `path` in err. */
int trusted_regular_file(const char *path, const struct stat *st, char *err, size_t err_size);

/* Whether fd (a file or directory) is on a file system that only stores
 * files: a disk file system or tmpfs, not procfs, sysfs, cgroupfs or
 * another whose files are the kernel's knobs, nor a network or FUSE file
 * system whose server decides what a file holds.  Returns 0, or -EPERM
 * with a sentence about `path` in err. */
int trusted_ordinary_fs(int fd, const char *path, char *err, size_t err_size);

#endif
