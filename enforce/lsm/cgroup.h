/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup v2 paths as the BPF LSM's entries name them ("/user.slice", as
 * /proc/PID/cgroup writes them) and the ids the kernel knows them by. */
#ifndef UFFDGUARD_LSM_CGROUP_H
#define UFFDGUARD_LSM_CGROUP_H

#include <stddef.h>
#include <stdint.h>

/* 0 if path can name an entry: absolute, no empty, "." or ".."
 * component, no trailing slash, not "/" itself (that is the host
 * default), at most LSM_PATH_MAX - 2 characters and LSM_MAX_DEPTH levels.
 * Else -EINVAL with a sentence. */
int cgroup_path_check(const char *path, char *err, size_t err_size);

/* Where the cgroup v2 hierarchy is mounted (say "/sys/fs/cgroup"), or
 * -ENOENT. */
int cgroup2_mount_point(char *buf, size_t size);

/* The id of the cgroup at path (its kernfs inode), or -ENOENT if there
 * is no such cgroup now, or another -errno. */
int cgroup_id_of(const char *path, uint64_t *id);

/* The path of the cgroup with this id, or -ENOENT if it is gone. */
int cgroup_path_of(uint64_t id, char *buf, size_t size);

#endif
