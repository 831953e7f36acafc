// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "trusted-path.h"

#define MAX_LINKS 40 /* the kernel's own limit (MAXSYMLINKS) */

bool trusted_owner(uid_t uid)
{
	return uid == 0 || uid == getuid() || uid == geteuid();
}

/* The rest of the walk: components still to resolve, in a buffer that a
 * link's target is spliced into. */
struct walk {
	char todo[2 * PATH_MAX];
	size_t links;
};

/* Put target in front of what is left to walk. */
static int splice_target(struct walk *w, const char *target, const char *rest)
{
	char next[sizeof(w->todo)];
	int n = snprintf(next, sizeof(next), "%s%s%s", target, *rest ? "/" : "", rest);

	if (n < 0 || (size_t)n >= sizeof(next))
		return -ENAMETOOLONG;
	memcpy(w->todo, next, (size_t)n + 1);
	return 0;
}

/* Replace *dirfd by a descriptor of `dir` (O_PATH), shown as `shown` in
 * err.  Whoever may rename what a directory holds chooses what its paths
 * lead to, so a directory on the way must be a trusted user's, and one
 * that everyone may write must be sticky (as /tmp is). */
static int enter(int *dirfd, int at, const char *dir, const char *shown, char *err,
		 size_t err_size)
{
	int fd = openat(at, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = -errno;
		snprintf(err, err_size, "%s: %s", shown, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (!trusted_owner(st.st_uid)) {
		snprintf(err, err_size,
			 "the directory %s belongs to uid %u, neither root nor the invoking user, "
			 "who could rename or replace what it holds: give a path through "
			 "directories of root or the invoking user",
			 shown, (unsigned)st.st_uid);
		close(fd);
		return -EPERM;
	}
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		snprintf(err, err_size,
			 "the directory %s is writable by everyone and not sticky, so anyone "
			 "could rename or replace what it holds: give a path through another "
			 "directory, or make it sticky (chmod +t)",
			 shown);
		close(fd);
		return -EPERM;
	}
	if (*dirfd >= 0)
		close(*dirfd);
	*dirfd = fd;
	return 0;
}

int trusted_path_resolve(const char *path, int *dirfd, char *name, char *err, size_t err_size)
{
	struct walk w = { .links = 0 };
	char done[2 * PATH_MAX] = ""; /* what was walked, for messages */
	int fd = -1, r;

	*dirfd = -1;
	if (!*path) {
		snprintf(err, err_size, "an empty path");
		return -EINVAL;
	}
	if (strlen(path) >= PATH_MAX) {
		snprintf(err, err_size, "%.64s...: path too long", path);
		return -ENAMETOOLONG;
	}
	snprintf(w.todo, sizeof(w.todo), "%s", path);
	for (;;) {
		/* An absolute path (or link target) starts again at the root. */
		if (w.todo[0] == '/') {
			r = enter(&fd, AT_FDCWD, "/", "/", err, err_size);
			if (r < 0)
				goto fail;
			snprintf(done, sizeof(done), "/");
		} else if (fd < 0) {
			r = enter(&fd, AT_FDCWD, ".", "the current directory", err, err_size);
			if (r < 0)
				goto fail;
		}
		char *comp = w.todo + strspn(w.todo, "/");
		size_t len = strcspn(comp, "/");
		char *rest = comp + len + strspn(comp + len, "/");
		bool last = !*rest;

		if (len == 0) { /* the path was "/" (or ended in one) */
			snprintf(name, NAME_MAX + 1, ".");
			*dirfd = fd;
			return 0;
		}
		if (len > NAME_MAX) {
			snprintf(err, err_size, "%s: a component is longer than %d bytes", path,
				 NAME_MAX);
			r = -ENAMETOOLONG;
			goto fail;
		}
		char cur[NAME_MAX + 1];
		memcpy(cur, comp, len);
		cur[len] = '\0';
		size_t dl = strlen(done);
		snprintf(done + dl, sizeof(done) - dl, "%s%s", dl && done[dl - 1] != '/' ? "/" : "",
			 cur);

		/* The link itself, so its owner and its target are read from
		 * the same inode. */
		int lfd = openat(fd, cur, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (lfd < 0 && errno == ENOENT && last) {
			snprintf(name, NAME_MAX + 1, "%s", cur);
			*dirfd = fd;
			return 0;
		}
		if (lfd < 0 || fstat(lfd, &st) < 0) {
			r = -errno;
			if (lfd >= 0)
				close(lfd);
			snprintf(err, err_size, "%s: %s", done, strerror(-r));
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = trusted_owner(st.st_uid)
					    ? readlinkat(lfd, "", target, sizeof(target) - 1)
					    : -2;
			close(lfd);
			if (n == -2) {
				snprintf(err, err_size,
					 "%s is a symbolic link owned by uid %u, neither root nor the "
					 "invoking user, who could point it anywhere; uffdguard "
					 "follows only their links: give a path without it",
					 done, (unsigned)st.st_uid);
				r = -EPERM;
				goto fail;
			}
			if (n < 0) {
				r = -errno;
				snprintf(err, err_size, "%s: %s", done, strerror(-r));
				goto fail;
			}
			target[n] = '\0';
			if (++w.links > MAX_LINKS) {
				snprintf(err, err_size, "%s: too many levels of symbolic links", path);
				r = -ELOOP;
				goto fail;
			}
			/* The target is relative to the link's directory: fd. */
			done[dl] = '\0';
			char restcopy[sizeof(w.todo)];
			snprintf(restcopy, sizeof(restcopy), "%s", rest);
			r = splice_target(&w, target, restcopy);
			if (r < 0) {
				snprintf(err, err_size, "%s: path too long once links are followed",
					 path);
				goto fail;
			}
			continue;
		}
		close(lfd);
		if (last) {
			snprintf(name, NAME_MAX + 1, "%s", cur);
			*dirfd = fd;
			return 0;
		}
		r = enter(&fd, fd, cur, done, err, err_size);
		if (r < 0)
			goto fail;
		memmove(w.todo, rest, strlen(rest) + 1);
	}
fail:
	if (fd >= 0)
		close(fd);
	return r;
}

int trusted_regular_file(const char *path, const struct stat *st, char *err, size_t err_size)
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, err_size,
			 "%s is %s, not a regular file: give the path of a regular file (it is "
			 "created if missing)",
			 path,
			 S_ISDIR(st->st_mode)    ? "a directory"
			 : S_ISFIFO(st->st_mode) ? "a fifo"
			 : S_ISSOCK(st->st_mode) ? "a socket"
			 : S_ISCHR(st->st_mode)  ? "a character device"
			 : S_ISBLK(st->st_mode)  ? "a block device"
						 : "something else");
		return -EINVAL;
	}
	if (!trusted_owner(st->st_uid)) {
		snprintf(err, err_size,
			 "%s belongs to uid %u, neither root nor the invoking user: remove it, "
			 "or give another path (uffdguard creates the file itself)",
			 path, (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & 022) {
		snprintf(err, err_size,
			 "%s is writable by group or others (mode %04o): chmod go-w it, or give "
			 "another path",
			 path, (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	/* Another name may be anywhere, made by whoever could write here. */
	if (st->st_nlink != 1) {
		snprintf(err, err_size,
			 "%s has %lu names (hard links): one of them may be a file that must "
			 "not be appended to; give a file with one name",
			 path, (unsigned long)st->st_nlink);
		return -EPERM;
	}
	return 0;
}

/* The file systems that hold nothing but files (magic numbers of
 * <linux/magic.h>, and of out-of-tree ZFS and bcachefs). */
static const struct {
	unsigned long magic;
	const char *name;
} ordinary_fs[] = {
	{ 0xEF53, "ext4" },        { 0x58465342, "xfs" },     { 0x9123683E, "btrfs" },
	{ 0x01021994, "tmpfs" },   { 0x858458f6, "ramfs" },   { 0xF2F52010, "f2fs" },
	{ 0x794c7630, "overlay" }, { 0x2fc12fc1, "zfs" },     { 0xca451a4e, "bcachefs" },
	{ 0x3153464a, "jfs" },     { 0x52654973, "reiserfs" },
};

/* A few others by name, for the message. */
static const char *fs_name(unsigned long magic)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} known[] = {
		{ 0x9fa0, "procfs" },      { 0x62656572, "sysfs" },    { 0x27e0eb, "cgroup" },
		{ 0x63677270, "cgroup2" }, { 0x64626720, "debugfs" },  { 0x74726163, "tracefs" },
		{ 0x73636673, "securityfs" }, { 0xcafe4a11, "bpf" },   { 0x62656570, "configfs" },
		{ 0x6969, "nfs" },         { 0xFF534D42, "cifs" },     { 0x65735546, "fuse" },
		{ 0x1373, "devtmpfs" },    { 0x6e736673, "nsfs" },     { 0x42494e4d, "binfmt_misc" },
		{ 0x19830326, "fuse" },    { 0x01021997, "9p" },       { 0x73717368, "squashfs" },
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].magic == magic)
			return known[i].name;
	return NULL;
}

int trusted_ordinary_fs(int fd, const char *path, char *err, size_t err_size)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0) {
		int e = errno;
		snprintf(err, err_size, "%s: %s", path, strerror(e));
		return -e;
	}
	unsigned long magic = (unsigned long)(unsigned int)sf.f_type;
	for (size_t i = 0; i < sizeof(ordinary_fs) / sizeof(ordinary_fs[0]); i++)
		if (ordinary_fs[i].magic == magic)
			return 0;
	const char *name = fs_name(magic);
	char what[64];
	if (name)
		snprintf(what, sizeof(what), "%s", name);
	else
		snprintf(what, sizeof(what), "magic 0x%lx", magic);
	snprintf(err, err_size,
		 "%s is on a file system (%s) whose files are not plain files uffdguard may "
		 "write: give a path on a disk file system or tmpfs (for example under /run "
		 "or /var/log)",
		 path, what);
	return -EPERM;
}
