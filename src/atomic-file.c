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

int write_file_atomic(const char *path, const char *text, mode_t mode)
{
	char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	const char *d = dirname(dir);
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", d, basename(base)) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;

	int err = 0;
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
	if (!err && rename(tmp, path) < 0)
		err = -errno;
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
