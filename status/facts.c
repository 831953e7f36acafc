// SPDX-License-Identifier: GPL-2.0-or-later
/* Gathering the facts of `uffdguard status`. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "facts.h"
#include "sysctl.h"

void status_list_add(struct status_list *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (l->n == STATUS_LIST_MAX)
		return;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		l->failed = true;
	else
		l->item[l->n++] = s;
}

void status_list_free(struct status_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->item[i]);
	l->n = 0;
}

const char *status_errname(int err)
{
	if (err < 0)
		err = -err;
	if (!err)
		return "ok";
	const char *n = strerrorname_np(err);
	return n ? n : "unknown errno";
}

static void gather_kernel(struct status_facts *f)
{
	struct utsname u;
	struct libuffd_open_report rep;

	uname(&u);
	snprintf(f->release, sizeof(f->release), "%s", u.release);
	f->new_semantics = sysctl_new_semantics(f->release);
	struct statfs sfs;
	f->proc_mounted = statfs("/proc", &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
	f->sysctl = sysctl_read();
	f->covers_dev = sysctl_covers_dev_read();

	int fd = libuffd_open(&(struct libuffd_open_opts){ .flags = LIBUFFD_OPEN_SYSCALL_ONLY },
			      &rep);
	f->flag_result = fd < 0 ? fd : 0;
	if (fd >= 0)
		close(fd);
	else
		libuffd_explain_open(fd, &rep, f->flag_why, sizeof(f->flag_why));
	/* The sysctl exists exactly when the kernel has CONFIG_USERFAULTFD;
	 * ENOSYS alone may be a seccomp filter.  (Without /proc nothing
	 * tells them apart: the attempt decides.) */
	f->has_userfaultfd = (f->proc_mounted && f->sysctl != -ENOENT) || f->flag_result != -ENOSYS;
	f->api_result = libuffd_kernel_api(&f->api);
}

static const char *acl_tag(unsigned tag)
{
	switch (tag) {
	case 0x01: return "user_obj";
	case 0x02: return "user";
	case 0x04: return "group_obj";
	case 0x08: return "group";
	case 0x10: return "mask";
	case 0x20: return "other";
	default: return "unknown";
	}
}

/* system.posix_acl_access: a version word, then {u16 tag, u16 perm, u32 id}. */
static void read_acl(struct status_facts *f)
{
	ssize_t n = getxattr(f->device, "system.posix_acl_access", NULL, 0);
	cleanup_free unsigned char *buf = n > 4 ? malloc((size_t)n) : NULL;

	f->n_acl = 0;
	if (buf)
		n = getxattr(f->device, "system.posix_acl_access", buf, (size_t)n);
	if (buf && n > 4)
		f->acl = calloc((size_t)(n - 4) / 8, sizeof(*f->acl));
	if (!f->acl)
		return;
	for (ssize_t off = 4; off + 8 <= n; off += 8) {
		uint16_t tag, perm;
		uint32_t id;
		memcpy(&tag, buf + off, 2);
		memcpy(&perm, buf + off + 2, 2);
		memcpy(&id, buf + off + 4, 4);
		f->acl[f->n_acl++] =
			(struct acl_entry){ .tag = acl_tag(tag),
					    .id = (tag == 0x02 || tag == 0x08) ? (long)id : -1,
					    .perm = perm & 7 };
	}
}

const char *status_user_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	return pw ? pw->pw_name : "?";
}

const char *status_group_name(gid_t gid)
{
	struct group *gr = getgrgid(gid);
	return gr ? gr->gr_name : "?";
}

#define RW(perm) (((perm) & 6) == 6)

/* Who besides root can open the device for reading and writing. */
static void device_access(struct status_facts *f)
{
	const struct stat *st = &f->device_st;
	unsigned mask = 7, group_perm = (st->st_mode >> 3) & 7;
	bool have_acl = f->n_acl > 0;

	for (int i = 0; i < f->n_acl; i++)
		if (!strcmp(f->acl[i].tag, "mask"))
			mask = f->acl[i].perm;
	if (have_acl)
		for (int i = 0; i < f->n_acl; i++)
			if (!strcmp(f->acl[i].tag, "group_obj"))
				group_perm = f->acl[i].perm;

	if (st->st_uid != 0 && RW(st->st_mode >> 6))
		status_list_add(&f->device_access, "user %s (uid %u, the owner)",
				status_user_name(st->st_uid), (unsigned)st->st_uid);
	if (RW(group_perm & mask))
		status_list_add(&f->device_access, "members of group %s (gid %u, the group)",
				status_group_name(st->st_gid), (unsigned)st->st_gid);
	for (int i = 0; i < f->n_acl; i++) {
		const struct acl_entry *a = &f->acl[i];
		if (a->id < 0 || !RW(a->perm & mask))
			continue;
		if (!strcmp(a->tag, "user") && a->id != 0)
			status_list_add(&f->device_access, "user %s (uid %ld, by ACL)",
					status_user_name((uid_t)a->id), a->id);
		else if (!strcmp(a->tag, "group"))
			status_list_add(&f->device_access, "members of group %s (gid %ld, by ACL)",
					status_group_name((gid_t)a->id), a->id);
	}
	f->device_world = RW(st->st_mode);
	if (f->device_world)
		status_list_add(&f->device_access,
				"everyone (the mode grants read and write to others)");
}

static void gather_device(struct status_facts *f)
{
	f->device_stat = stat(f->device, &f->device_st) < 0 ? -errno : 0;
	if (f->device_stat < 0)
		return;
	unsigned maj, min;
	cleanup_file FILE *d = fopen("/sys/devices/virtual/misc/userfaultfd/dev", "re");
	if (d && fscanf(d, "%u:%u", &maj, &min) == 2)
		f->device_is_uffd =
			S_ISCHR(f->device_st.st_mode) && f->device_st.st_rdev == makedev(maj, min);
	read_acl(f);
	device_access(f);
}

static long status_field(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *line = text; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, name, len) && line[len] == ':')
			return strtol(line + len + 1, NULL, 10);
	return -1;
}

static void gather_process(struct status_facts *f)
{
	char buf[8192];
	cleanup_file FILE *s = fopen("/proc/self/status", "re");
	size_t n = s ? fread(buf, 1, sizeof(buf) - 1, s) : 0;

	f->uid = getuid();
	f->euid = geteuid();
	buf[n] = '\0';
	f->seccomp = status_field(buf, "Seccomp");
	f->seccomp_filters = status_field(buf, "Seccomp_filters");

	/* The marker call: see policy/marker.h. */
	long fd = syscall(__NR_userfaultfd, (int)UFFDGUARD_MARKER_FLAGS);
	f->marker_err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close((int)fd);
	f->marker_ours =
		fd < 0 && marker_decode(f->marker_err, &f->marker_enforcer, &f->marker_policy);
}

static void gather_lsm(struct status_lsm *l)
{
	l->own_scope = -1;
	lsm_support_probe(&l->support, false);
	l->support_err = lsm_support_check(&l->support, l->why_not, sizeof(l->why_not));
	l->state_err = lsm_state_read(&l->state, l->state_why, sizeof(l->state_why));
	l->enforcing = l->state_err == 0 && l->state.enforcing && l->state.format_ok &&
		       l->support.bpf_active;

	/* "0::/path" in /proc/self/cgroup: the v2 hierarchy. */
	char line[4200];
	cleanup_file FILE *f = fopen("/proc/self/cgroup", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(l->cgroup, sizeof(l->cgroup), "%.4095s", line + 3);
		}

	/* The deepest entry on the path to the root, else the host default. */
	char path[sizeof(l->cgroup)];
	snprintf(path, sizeof(path), "%s", l->cgroup);
	while (l->own_scope < 0 && path[0] == '/' && path[1]) {
		for (size_t i = 0; i < l->state.n_scopes; i++)
			if (!strcmp(l->state.scopes[i].cgroup, path))
				l->own_scope = (ssize_t)i;
		*strrchr(path, '/') = '\0';
	}
	for (size_t i = 0; l->own_scope < 0 && i < l->state.n_scopes; i++)
		if (!l->state.scopes[i].cgroup[0])
			l->own_scope = (ssize_t)i;
}

static void gather_fuse(struct status_facts *f)
{
	static const char *const paths[] = {
		"/usr/bin/fusermount3",
		"/usr/bin/fusermount",
		"/bin/fusermount3",
		"/bin/fusermount",
	};
	struct stat seen[4];
	int n_seen = 0;

	f->fuse_stat = stat("/dev/fuse", &f->fuse_st) < 0 ? -errno : 0;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct stat st;
		bool dup = false;
		if (stat(paths[i], &st) < 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0 ||
		    !(st.st_mode & S_IXOTH))
			continue;
		for (int j = 0; j < n_seen; j++) /* /bin is often /usr/bin */
			dup |= seen[j].st_dev == st.st_dev && seen[j].st_ino == st.st_ino;
		if (dup)
			continue;
		seen[n_seen++] = st;
		status_list_add(&f->fusermount, "%s", paths[i]);
	}
}

/* The identity whose results stand for "an unprivileged process". */
const struct probe_identity *status_unprivileged(const struct status_facts *f)
{
	const struct probe_identity *u = &f->probe.who[PROBE_UNPRIV];
	if (u->ran)
		return u;
	u = &f->probe.who[PROBE_SELF];
	return u->ran && !u->has_ptrace ? u : NULL;
}

int status_gather(struct status_facts *f, const struct probe_options *po)
{
	f->device = po->device_path;
	gather_kernel(f);
	gather_device(f);
	gather_process(f);
	gather_fuse(f);
	gather_lsm(&f->lsm);
	f->probe_result = probe_run(po, &f->probe);
	if (f->probe_result < 0)
		return f->probe_result;
	return f->device_access.failed || f->fusermount.failed ? -ENOMEM : 0;
}

void status_facts_fini(struct status_facts *f)
{
	status_list_free(&f->device_access);
	status_list_free(&f->fusermount);
	lsm_state_free(&f->lsm.state);
	free(f->acl);
	f->acl = NULL;
}
