// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "lsm.h"

int cgroup_path_check(const char *path, char *err, size_t err_size)
{
	size_t len = strlen(path);
	int depth = 0;

	if (path[0] != '/') {
		snprintf(err, err_size,
			 "'%s' is not a cgroup path: give it as /proc/PID/cgroup does, "
			 "from the root of the cgroup v2 hierarchy (say /user.slice/user-1000.slice)",
			 path);
		return -EINVAL;
	}
	if (len == 1) {
		snprintf(err, err_size, "'/' is the whole host: use the host default instead");
		return -EINVAL;
	}
	/* The tracepoint's path is read into LSM_PATH_MAX bytes: one that
	 * fills them may have been cut, so it never matches. */
	if (len > LSM_PATH_MAX - 2) {
		snprintf(err, err_size, "cgroup path '%.60s...' is %zu characters long; at most %d",
			 path, len, LSM_PATH_MAX - 2);
		return -EINVAL;
	}
	for (const char *c = path; *c; ) {
		const char *next = strchr(c + 1, '/');
		size_t n = (next ? (size_t)(next - c) : strlen(c)) - 1;
		if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.')) {
			snprintf(err, err_size,
				 "cgroup path '%s' has an empty, '.' or '..' component (or ends "
				 "with '/')", path);
			return -EINVAL;
		}
		depth++;
		c = next ? next : c + n + 1;
	}
	if (depth > LSM_MAX_DEPTH) {
		snprintf(err, err_size, "cgroup path '%s' is %d levels deep; entries may be at "
			 "most %d levels deep", path, depth, LSM_MAX_DEPTH);
		return -EINVAL;
	}
	return 0;
}

int cgroup2_mount_point(char *buf, size_t size)
{
	cleanup_file FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER */
	while (r < 0 && fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], point[PATH_MAX];
		const char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash, " - cgroup2 ", 11))
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
			continue;
		/* The hierarchy's root, not a subtree bind-mounted elsewhere;
		 * names with spaces are escaped (\040) and not ours to guess. */
		if (strcmp(root, "/") || strchr(point, '\\'))
			continue;
		if (snprintf(buf, size, "%s", point) < (int)size)
			r = 0;
	}
	return r;
}

int cgroup_id_of(const char *path, uint64_t *id)
{
	char mnt[PATH_MAX], full[PATH_MAX + LSM_PATH_MAX];
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	int mount_id, r = cgroup2_mount_point(mnt, sizeof(mnt));

	if (r < 0)
		return r;
	snprintf(full, sizeof(full), "%s%s", mnt, path);
	if (name_to_handle_at(AT_FDCWD, full, &h.fh, &mount_id, 0) < 0)
		return -errno;
	if (h.fh.handle_bytes != sizeof(uint64_t))
		return -EOPNOTSUPP;
	*id = h.id;
	return 0;
}

int cgroup_path_of(uint64_t id, char *buf, size_t size)
{
	char mnt[PATH_MAX], link[64], target[PATH_MAX];
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t), .fh.handle_type = 0xfe /* FILEID_KERNFS */,
		.id = id };
	int r = cgroup2_mount_point(mnt, sizeof(mnt));

	if (r < 0)
		return r;
	cleanup_close int mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	cleanup_close int fd = open_by_handle_at(mfd, &h.fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ESTALE ? -ENOENT : -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	size_t mlen = strlen(mnt);
	if (strncmp(target, mnt, mlen))
		return -ENOENT;
	const char *rel = target[mlen] ? target + mlen : "/";
	return snprintf(buf, size, "%s", rel) < (int)size ? 0 : -ENAMETOOLONG;
}
