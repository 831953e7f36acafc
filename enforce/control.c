// SPDX-License-Identifier: GPL-2.0-or-later
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "control.h"
#include "trusted-path.h"

#define STATE_MAX 4096
#define VALUE_MAX 32 /* longer than any valid value with blanks */

int control_parse_value(const char *text, size_t len, int *value)
{
	size_t i = 0, end = len;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n'))
		i++;
	while (end > i && (text[end - 1] == ' ' || text[end - 1] == '\t' || text[end - 1] == '\n'))
		end--;
	if (i == end)
		return 1;
	if (end - i != 1 || (text[i] != '0' && text[i] != '1'))
		return -EINVAL;
	*value = text[i] - '0';
	return 0;
}

static bool dir_is_empty(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	bool empty = true;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

static int write_new_knob(int dirfd, const struct policy_knob *k, int value)
{
	char v[2] = { (char)('0' + value), '\n' }, tmp[NAME_MAX + 1];
	int r;

	/* Made whole under another name, then given its own: whoever sees the
	 * file sees its value, and a file of that name is never replaced. */
	snprintf(tmp, sizeof(tmp), ".%s.new", k->name);
	{
		cleanup_close int fd = openat(dirfd, tmp,
					      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		r = write(fd, v, 2) == 2 ? 0 : -EIO;
	}
	if (r == 0 && renameat2(dirfd, tmp, dirfd, k->name, RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	return r;
}

static void forget_watches(struct control *c)
{
	if (c->dir_wd >= 0)
		inotify_rm_watch(c->inotify_fd, c->dir_wd);
	if (c->parent_wd >= 0 && c->parent_wd != c->dir_wd)
		inotify_rm_watch(c->inotify_fd, c->parent_wd);
	c->dir_wd = c->parent_wd = -1;
}

/* Make or take the directory at c->path; c->dirfd on success. */
static int open_dir(struct control *c, const struct policy *p, char *err, size_t err_size)
{
	char name[NAME_MAX + 1], why[1024];
	cleanup_close int parent = -1;
	struct stat st;
	size_t made = 0; /* knob files this call made: all it removes on failure */
	int r;

	c->created_dir = false;
	r = trusted_path_resolve(c->path, &parent, name, why, sizeof(why));
	if (r < 0)
		goto fail_why;
	/* Before anything is made: mkdir in cgroupfs makes a cgroup. */
	r = trusted_ordinary_fs(parent, c->path, why, sizeof(why));
	if (r < 0)
		goto fail_why;
	if (mkdirat(parent, name, 0700) == 0)
		c->created_dir = true;
	else if (errno != EEXIST)
		goto fail_errno;
	c->dirfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->dirfd < 0)
		goto fail_errno;
	r = trusted_ordinary_fs(c->dirfd, c->path, why, sizeof(why)); /* a mount point */
	if (r < 0)
		goto fail_why;
	if (fstat(c->dirfd, &st) < 0)
		goto fail_errno;
	/* Whoever can write the knob files sets the policy. */
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, sizeof(why),
			 "%s is owned by another user or writable by group or others; give a "
			 "new path (uffdguard creates the directory) or an empty directory of "
			 "uid %u with mode 0700 or 0755",
			 c->path, (unsigned)geteuid());
		r = -EPERM;
		goto fail_why;
	}
	/* Only what uffdguard put there is a knob: never an existing file. */
	if (!c->created_dir && !dir_is_empty(c->dirfd)) {
		snprintf(why, sizeof(why),
			 "%s is not empty; uffdguard keeps its knob files only in a directory of "
			 "its own: give a new path (it creates the directory) or an empty "
			 "directory",
			 c->path);
		r = -ENOTEMPTY;
		goto fail_why;
	}
	for (size_t i = 0; i < POLICY_N_KNOBS; i++) {
		r = write_new_knob(c->dirfd, &policy_knobs[i], policy_knob_get(p, &policy_knobs[i]));
		if (r < 0) {
			snprintf(why, sizeof(why), "%s/%s: %s", c->path, policy_knobs[i].name,
				 strerror(-r));
			goto fail_why;
		}
		made++;
	}
	/* Watch the directory opened, not whatever the path names now; after
	 * the files are made, so that they raise no event. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", c->dirfd);
	c->dir_wd = inotify_add_watch(c->inotify_fd, self,
				      IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
					      IN_ONLYDIR);
	if (c->dir_wd < 0)
		goto fail_errno;
	/* While uffdguard holds the directory open, its removal raises no
	 * IN_DELETE_SELF: the parent's events about its name tell. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", parent);
	c->parent_wd = inotify_add_watch(c->inotify_fd, self, IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR);
	if (c->parent_wd < 0)
		goto fail_errno;
	snprintf(c->name, sizeof(c->name), "%s", name);
	return 0;
fail_errno:
	r = -errno;
	snprintf(why, sizeof(why), "%s: %s", c->path, strerror(-r));
fail_why:
	snprintf(err, err_size, "control directory: %s", why);
	forget_watches(c);
	if (c->dirfd >= 0) {
		/* Also in a directory that was there: else the next start finds
		 * it not empty. */
		for (size_t i = 0; i < made; i++)
			unlinkat(c->dirfd, policy_knobs[i].name, 0);
		close(c->dirfd);
		c->dirfd = -1;
	}
	if (c->created_dir)
		unlinkat(parent, name, AT_REMOVEDIR);
	c->created_dir = false;
	return r;
}

int control_open(struct control *c, const char *path, const struct policy *p, char *err,
		 size_t err_size)
{
	*c = (struct control){ .dirfd = -1, .inotify_fd = -1, .dir_wd = -1, .parent_wd = -1,
			       .path = strdup(path) };
	if (!c->path) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->inotify_fd < 0) {
		int e = errno;
		snprintf(err, err_size, "control directory: inotify: %s", strerror(e));
		return -e;
	}
	return open_dir(c, p, err, err_size);
}

/* Printable, for a message: what a file held. */
static void printable(char *dst, size_t size, const char *src, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; i < len && j + 5 < size; i++) {
		unsigned char ch = (unsigned char)src[i];
		if (ch == '\n' && i + 1 == len)
			break;
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			dst[j++] = (char)ch;
		else
			j += (size_t)snprintf(dst + j, size - j, "\\x%02x", ch);
	}
	dst[j] = '\0';
}

/* Take knob k from its file. */
static void read_knob(struct control *c, struct policy *p, const struct policy_knob *k,
		      control_report_fn *report, void *data)
{
	struct audit_control ev = { .applied = false };
	char text[VALUE_MAX + 1];
	int in_force = policy_knob_get(p, k), value;
	struct stat st;

	snprintf(ev.knob, sizeof(ev.knob), "%s", k->name);
	/* O_NONBLOCK: a fifo put there must not stop the supervisor. */
	cleanup_close int fd = openat(c->dirfd, k->name,
				      O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return; /* removed: its next write makes it again */
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(ev.message, sizeof(ev.message), "%s/%s: %s; %s stays %d", c->path,
			 k->name, strerror(errno), k->name, in_force);
		report(data, &ev);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(ev.message, sizeof(ev.message),
			 "%s/%s is not a regular file; %s stays %d", c->path, k->name, k->name,
			 in_force);
		report(data, &ev);
		return;
	}
	ssize_t len = read(fd, text, sizeof(text));
	if (len < 0) {
		snprintf(ev.message, sizeof(ev.message), "%s/%s: %s; %s stays %d", c->path,
			 k->name, strerror(errno), k->name, in_force);
		report(data, &ev);
		return;
	}
	printable(ev.value, sizeof(ev.value), text, (size_t)len);
	int r = len > VALUE_MAX ? -EINVAL : control_parse_value(text, (size_t)len, &value);
	if (r == 1)
		return; /* a write in progress: its close brings the value */
	if (r < 0) {
		snprintf(ev.message, sizeof(ev.message),
			 "%s: '%s%s' is not a valid value: valid values are 0 and 1; %s stays %d "
			 "(the file is left as written)",
			 k->name, ev.value, len > VALUE_MAX ? "..." : "", k->name, in_force);
		report(data, &ev);
		return;
	}
	if (value == in_force)
		return;
	policy_knob_put(p, k, value);
	ev.applied = true;
	snprintf(ev.message, sizeof(ev.message), "%s: %d, was %d", k->name, value, in_force);
	report(data, &ev);
}

/* The directory went away: let go of it and make it again. */
static void lost_dir(struct control *c, struct policy *p, const char *how,
		     control_report_fn *report, void *data)
{
	struct audit_control ev = { .applied = false };
	char err[1024];

	/* Events still queued for the old directory are not about the new. */
	forget_watches(c);
	if (c->dirfd >= 0) {
		/* Moved: the knob files there are ours and mean nothing now. */
		for (size_t i = 0; i < POLICY_N_KNOBS; i++)
			unlinkat(c->dirfd, policy_knobs[i].name, 0);
		close(c->dirfd);
		c->dirfd = -1;
	}
	if (open_dir(c, p, err, sizeof(err)) < 0) {
		snprintf(ev.message, sizeof(ev.message),
			 "the control directory %s was %s and cannot be made again (%.120s): "
			 "live changes are off until SIGHUP to uffdguard run or a restart",
			 c->path, how, err);
		report(data, &ev);
		return;
	}
	ev.applied = true;
	snprintf(ev.message, sizeof(ev.message),
		 "the control directory %s was %s; uffdguard made it again, its files "
		 "holding the values in force",
		 c->path, how);
	report(data, &ev);
	/* The tree runs on: a knob written between its file's making and the
	 * watch raised no event. */
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		read_knob(c, p, &policy_knobs[i], report, data);
}

static bool dir_unlinked(int dirfd)
{
	struct stat st;
	return fstat(dirfd, &st) == 0 && st.st_nlink == 0;
}

void control_update(struct control *c, struct policy *p, control_report_fn *report, void *data)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (c->inotify_fd < 0)
		return;
	while ((n = read(c->inotify_fd, buf, sizeof(buf))) > 0) {
		const char *gone = NULL;
		bool changed[POLICY_N_KNOBS] = { false };
		for (char *ptr = buf; ptr < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)ptr;
			ptr += sizeof(*ev) + ev->len;
			/* Events were lost: any knob may have changed, and the
			 * directory may be gone. */
			bool all = ev->mask & IN_Q_OVERFLOW;
			if (all && c->dirfd >= 0 && dir_unlinked(c->dirfd))
				gone = "removed";
			if (ev->wd == c->parent_wd && ev->wd != c->dir_wd) {
				if (ev->len && !strcmp(ev->name, c->name))
					gone = ev->mask & IN_DELETE	 ? "removed"
					       : ev->mask & IN_MOVED_FROM ? "moved away"
									  : "replaced";
				continue;
			}
			if (!all && ev->wd != c->dir_wd)
				continue; /* a directory given up */
			if (ev->mask & IN_DELETE_SELF)
				gone = "removed";
			else if (ev->mask & IN_MOVE_SELF)
				gone = "moved away";
			else if (ev->mask & IN_UNMOUNT)
				gone = "unmounted";
			for (size_t i = 0; i < POLICY_N_KNOBS; i++)
				changed[i] |= all || (ev->len && !strcmp(ev->name, policy_knobs[i].name));
		}
		/* Each file once per batch: its content is the latest anyway. */
		for (size_t i = 0; c->dirfd >= 0 && !gone && i < POLICY_N_KNOBS; i++)
			if (changed[i])
				read_knob(c, p, &policy_knobs[i], report, data);
		if (gone)
			lost_dir(c, p, gone, report, data);
	}
}

void control_retry(struct control *c, struct policy *p, control_report_fn *report, void *data)
{
	if (c->path && c->dirfd < 0 && c->inotify_fd >= 0)
		lost_dir(c, p, "lost earlier", report, data);
}

void control_close(struct control *c)
{
	if (c->dirfd >= 0) {
		for (size_t i = 0; i < POLICY_N_KNOBS; i++)
			unlinkat(c->dirfd, policy_knobs[i].name, 0);
		close(c->dirfd);
		if (c->created_dir)
			rmdir(c->path); /* fails, as it should, if someone added a file */
	}
	if (c->inotify_fd >= 0)
		close(c->inotify_fd);
	free(c->path);
	*c = (struct control){ .dirfd = -1, .inotify_fd = -1, .dir_wd = -1, .parent_wd = -1 };
}

/* The knob named at the start of "KNOB=V", or NULL. */
static int knob_index(const char *assignment)
{
	size_t len = strcspn(assignment, "=");

	for (int i = 0; i < POLICY_N_KNOBS; i++)
		if (strlen(policy_knobs[i].name) == len &&
		    !strncmp(policy_knobs[i].name, assignment, len))
			return i;
	return -1;
}

/* Apply the blank-separated assignments of line to *p, marking *seen. */
static int apply_line(char *line, struct policy *p, unsigned *seen, char *err, size_t err_size)
{
	char *save;

	for (char *a = strtok_r(line, " \t", &save); a; a = strtok_r(NULL, " \t", &save)) {
		char why[512];
		int i = knob_index(a);
		if (policy_set_knob(p, a, why, sizeof(why)) < 0) {
			snprintf(err, err_size, "%s", why);
			return -EINVAL;
		}
		*seen |= 1u << i; /* valid, so i >= 0 */
	}
	return 0;
}

int control_state_parse(const char *text, size_t len, struct policy *base, struct policy *knobs,
			char *err, size_t err_size)
{
	char buf[STATE_MAX + 1];
	unsigned seen_base = 0, seen = 0, all = (1u << POLICY_N_KNOBS) - 1;
	bool have_base = false;
	int lineno = 0;

	if (len > STATE_MAX) {
		snprintf(err, err_size, "longer than %d bytes", STATE_MAX);
		return -EINVAL;
	}
	if (memchr(text, '\0', len)) {
		snprintf(err, err_size, "it holds a NUL byte");
		return -EINVAL;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	for (char *save, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char why[600];
		lineno++;
		line += strspn(line, " \t");
		if (!*line || *line == '#')
			continue;
		int r;
		if (!strncmp(line, "base", 4) && (line[4] == ' ' || line[4] == '\t')) {
			if (have_base) {
				snprintf(err, err_size, "line %d: a second base line", lineno);
				return -EINVAL;
			}
			have_base = true;
			r = apply_line(line + 5, base, &seen_base, why, sizeof(why));
		} else {
			unsigned before = seen;
			r = apply_line(line, knobs, &seen, why, sizeof(why));
			if (r == 0 && seen == before) {
				snprintf(why, sizeof(why), "no knob");
				r = -EINVAL;
			}
		}
		if (r < 0) {
			snprintf(err, err_size, "line %d: %s", lineno, why);
			return r;
		}
	}
	if (seen_base != all || seen != all) {
		snprintf(err, err_size, "%s", seen_base != all ? "the base line does not give every knob"
							       : "not every knob is given");
		return -EINVAL;
	}
	return 0;
}

static bool same_knobs(const struct policy *a, const struct policy *b)
{
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		if (policy_knob_get(a, &policy_knobs[i]) != policy_knob_get(b, &policy_knobs[i]))
			return false;
	return true;
}

int control_state_open(struct control_state *st, const char *path, struct policy *p,
		       char *note, size_t note_size, char *err, size_t err_size)
{
	char why[1024], text[STATE_MAX + 1];
	cleanup_close int fd = -1;
	struct stat sb;
	int r;

	*st = (struct control_state){ .dirfd = -1, .base = *p, .path = strdup(path) };
	note[0] = '\0';
	if (!st->path) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	r = trusted_path_resolve(path, &st->dirfd, st->name, why, sizeof(why));
	if (r == 0)
		r = trusted_ordinary_fs(st->dirfd, path, why, sizeof(why));
	if (r < 0)
		goto fail;
	fd = openat(st->dirfd, st->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0; /* nothing saved yet */
	if (fd < 0 || fstat(fd, &sb) < 0) {
		r = -errno;
		snprintf(why, sizeof(why), "%s: %s", path, strerror(-r));
		goto fail;
	}
	/* Whoever could write it would choose the policy. */
	r = trusted_regular_file(path, &sb, why, sizeof(why));
	if (r < 0)
		goto fail;
	ssize_t len = read(fd, text, sizeof(text));
	if (len < 0) {
		r = -errno;
		snprintf(why, sizeof(why), "%s: %s", path, strerror(-r));
		goto fail;
	}
	struct policy base = *p, knobs = *p;
	char perr[700];
	r = control_state_parse(text, (size_t)len, &base, &knobs, perr, sizeof(perr));
	if (r < 0) {
		snprintf(why, sizeof(why), "%s: %s; remove it to start from the command line's policy",
			 path, perr);
		goto fail;
	}
	if (!same_knobs(&base, p)) {
		snprintf(note, note_size,
			 "%s was saved under another --policy/--set; starting from the command "
			 "line's knobs, not from it",
			 path);
		return 0;
	}
	if (!same_knobs(&knobs, p)) {
		int n = snprintf(note, note_size, "restored from %s:", path);
		for (size_t i = 0; i < POLICY_N_KNOBS && n > 0 && (size_t)n < note_size; i++) {
			const struct policy_knob *k = &policy_knobs[i];
			if (policy_knob_get(&knobs, k) != policy_knob_get(p, k))
				n += snprintf(note + n, note_size - (size_t)n, " %s=%d (the command line: %d)",
					      k->name, policy_knob_get(&knobs, k), policy_knob_get(p, k));
		}
	}
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		policy_knob_put(p, &policy_knobs[i], policy_knob_get(&knobs, &policy_knobs[i]));
	return 0;
fail:
	snprintf(err, err_size, "state file: %s", why);
	return r;
}

int control_state_save(const struct control_state *st, const struct policy *p, char *err,
		       size_t err_size)
{
	char text[1024], tmp[NAME_MAX + 1];
	int n = snprintf(text, sizeof(text),
			 "# uffdguard run: the live knobs in force, restored at the next start\n"
			 "# with the same --policy and --set (the base line).\nbase");

	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, " %s=%d", policy_knobs[i].name,
			      policy_knob_get(&st->base, &policy_knobs[i]));
	n += snprintf(text + n, sizeof(text) - (size_t)n, "\n");
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "%s=%d\n", policy_knobs[i].name,
			      policy_knob_get(p, &policy_knobs[i]));

	/* A temporary name of our own beside it, then a rename over it. */
	snprintf(tmp, sizeof(tmp), ".%.200s.%d", st->name, (int)getpid());
	unlinkat(st->dirfd, tmp, 0);
	int fd = openat(st->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = 0;
	ssize_t w = fd >= 0 ? write(fd, text, (size_t)n) : -1;
	if (w < 0)
		r = -errno;
	else if (w != n)
		r = -EIO;
	else if (fsync(fd) < 0)
		r = -errno;
	if (fd >= 0 && close(fd) < 0 && !r)
		r = -errno;
	if (!r && renameat(st->dirfd, tmp, st->dirfd, st->name) < 0)
		r = -errno;
	if (r) {
		unlinkat(st->dirfd, tmp, 0);
		snprintf(err, err_size, "cannot save the live knobs to %s: %s", st->path,
			 strerror(-r));
		return r;
	}
	/* The rename is durable once the directory is (st->dirfd is O_PATH). */
	int dfd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

void control_state_close(struct control_state *st)
{
	if (st->dirfd >= 0)
		close(st->dirfd);
	free(st->path);
	*st = (struct control_state){ .dirfd = -1 };
}
