// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic-file.h"

/* lstat(), not stat(): rename() replaces the name itself, so a link is
 * judged as a link, never by what it points to. */
static int check(const char *path, bool *exists)
{
	struct stat st;

	*exists = false;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	*exists = true;
	if (S_ISREG(st.st_mode))
		return 0;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
}

/* The directory the temporary file goes into: there, a directory (links
 * to one are fine), and writable. */
static int check_dir(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	const char *dir = dirname(buf);
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(dir, W_OK | X_OK) < 0 ? -errno : 0;
}

int atomic_file_check(const char *path)
{
	bool exists;
	int err = check(path, &exists);

	return err ? err : check_dir(path);
}

bool atomic_file_refusal(const char *path, int err, char *buf, size_t size)
{
	struct stat st;
	char what[PATH_MAX + 32];

	if ((err != -ELOOP && err != -EISDIR && err != -EINVAL) || lstat(path, &st) < 0 ||
	    S_ISREG(st.st_mode))
		return false;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			snprintf(what, sizeof(what), "a symbolic link");
		else
			snprintf(what, sizeof(what), "a symbolic link (to %.*s)", (int)n, target);
	} else {
		snprintf(what, sizeof(what), "%s",
			 S_ISDIR(st.st_mode)    ? "a directory"
			 : S_ISFIFO(st.st_mode) ? "a fifo"
			 : S_ISSOCK(st.st_mode) ? "a socket"
			 : S_ISCHR(st.st_mode)  ? "a character device"
			 : S_ISBLK(st.st_mode)  ? "a block device"
						: "not a regular file");
	}
	snprintf(buf, size,
		 "%s is %s; uffdguard replaces regular files only: remove it or write elsewhere",
		 path, what);
	return true;
}

/* Look again just before the rename, which would replace whatever name
 * is there.  Where nothing was, RENAME_NOREPLACE keeps a link created
 * since from being replaced; a regular file swapped for a link after the
 * check is the race rename() has anyway (the name may change right after
 * it too). */
static int replace(const char *tmp, const char *path)
{
	bool exists;
	int err = check(path, &exists);

	if (err)
		return err;
	if (!exists) {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EEXIST) {
			err = check(path, &exists);
			if (err)
				return err;
		} else if (errno != EINVAL && errno != ENOSYS) {
			/* EINVAL: a file system without rename flags. */
			return -errno;
		}
	}
	return rename(tmp, path) < 0 ? -errno : 0;
}

int write_file_atomic(const char *path, const char *text, mode_t mode)
{
	char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX];

	/* Refuse before anything is written. */
	int err = atomic_file_check(path);
	if (err)
		return err;
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	const char *d = dirname(dir);
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", d, basename(base)) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;

	size_t len = strlen(text);
	if (fchmod(fd, mode) < 0)
		err = -errno;
	for (size_t off = 0; !err && off < len;) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err)
		err = replace(tmp, path);
	if (err) {
		unlink(tmp);
		return err;
	}
	/* The rename is durable once the directory is. */
	int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}
