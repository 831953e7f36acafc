// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard status: can an unprivileged process on this machine hold the
 * kernel inside a system call with userfaultfd, and why.  Everything that
 * can be tried is tried (probe.c); the static facts explain the result.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <json-c/json.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "sysctl.h"
#include "libuffd.h"
#include "marker.h"
#include "policy.h"
#include "probe.h"

/* Exit codes: the verdict.  2 is EXIT_USAGE. */
#define EXIT_PROTECTED 0
#define EXIT_EXPOSED 1
#define EXIT_UNAVAILABLE 3
#define EXIT_ERROR 4

#define STATUS_SCHEMA_VERSION 1
#define DEFAULT_HOLD_MS 50
#define MAX_LIST 16

enum verdict_kind { V_PROTECTED, V_EXPOSED, V_UNAVAILABLE, V_UNKNOWN };

struct list {
	char *item[MAX_LIST];
	int n;
};

__attribute__((format(printf, 2, 3))) static void list_add(struct list *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (l->n == MAX_LIST)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		die(EXIT_ERROR, "out of memory");
	va_end(ap);
	l->item[l->n++] = s;
}

static void list_free(struct list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->item[i]);
	l->n = 0;
}

struct acl_entry {
	const char *tag; /* "user", "group", "mask", ... */
	long id;         /* -1 for the *_obj, mask and other entries */
	unsigned perm;   /* rwx bits, 4 2 1 */
};

struct facts {
	/* kernel */
	char release[65];
	bool new_semantics;
	bool has_userfaultfd;
	int flag_result; /* userfaultfd(UFFD_USER_MODE_ONLY) by the caller: 0 or -errno */
	char flag_why[PROBE_WHY_SIZE];
	int api_result;
	struct libuffd_api api;
	/* sysctl */
	int knob; /* value or -errno */
	/* device */
	const char *device;
	bool device_testing; /* --device was given */
	int device_stat; /* 0 or -errno */
	struct stat device_st;
	bool device_is_uffd; /* its rdev is the userfaultfd misc device */
	struct acl_entry *acl; /* every entry: the access check needs them all */
	int n_acl;
	struct list device_access; /* non-root identities that can open it */
	bool device_world;
	/* this process */
	uid_t uid, euid;
	long seccomp, seccomp_filters; /* -1: not reported */
	int marker_err;
	bool marker_ours;
	enum enforcer marker_enforcer;
	struct policy marker_policy;
	/* probes */
	int probe_result;
	struct probe_report probe;
	/* FUSE */
	int fuse_stat;
	struct stat fuse_st;
	struct list fusermount; /* setuid-root fusermount binaries */
	/* verdict */
	enum verdict_kind verdict;
	bool complete;
	struct list reasons, not_checked, warnings;
};

/* ---- gathering ------------------------------------------------------- */

static const char *errname(int err)
{
	if (err < 0)
		err = -err;
	if (!err)
		return "ok";
	const char *n = strerrorname_np(err);
	return n ? n : "unknown errno";
}

static void gather_kernel(struct facts *f)
{
	struct utsname u;
	struct libuffd_open_report rep;

	uname(&u);
	snprintf(f->release, sizeof(f->release), "%s", u.release);
	f->new_semantics = sysctl_new_semantics(f->release);
	f->knob = sysctl_read();

	int fd = libuffd_open(&(struct libuffd_open_opts){ .flags = LIBUFFD_OPEN_SYSCALL_ONLY }, &rep);
	f->flag_result = fd < 0 ? fd : 0;
	if (fd >= 0)
		close(fd);
	else
		libuffd_explain_open(fd, &rep, f->flag_why, sizeof(f->flag_why));
	/* The sysctl exists exactly when the kernel has CONFIG_USERFAULTFD;
	 * ENOSYS alone may be a seccomp filter. */
	f->has_userfaultfd = f->knob != -ENOENT || f->flag_result != -ENOSYS;
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
static void read_acl(struct facts *f)
{
	ssize_t n = getxattr(f->device, "system.posix_acl_access", NULL, 0);
	unsigned char *buf = n > 4 ? malloc((size_t)n) : NULL;

	f->n_acl = 0;
	if (buf)
		n = getxattr(f->device, "system.posix_acl_access", buf, (size_t)n);
	if (buf && n > 4)
		f->acl = calloc((size_t)(n - 4) / 8, sizeof(*f->acl));
	if (!f->acl) {
		free(buf);
		return;
	}
	for (ssize_t off = 4; off + 8 <= n; off += 8) {
		uint16_t tag, perm;
		uint32_t id;
		memcpy(&tag, buf + off, 2);
		memcpy(&perm, buf + off + 2, 2);
		memcpy(&id, buf + off + 4, 4);
		f->acl[f->n_acl++] = (struct acl_entry){
			.tag = acl_tag(tag), .id = (tag == 0x02 || tag == 0x08) ? (long)id : -1,
			.perm = perm & 7 };
	}
	free(buf);
}

static const char *user_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	return pw ? pw->pw_name : "?";
}

static const char *group_name(gid_t gid)
{
	struct group *gr = getgrgid(gid);
	return gr ? gr->gr_name : "?";
}

#define RW(perm) (((perm) & 6) == 6)

/* Who besides root can open the device for reading and writing. */
static void device_access(struct facts *f)
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
		list_add(&f->device_access, "user %s (uid %u, the owner)", user_name(st->st_uid),
			 (unsigned)st->st_uid);
	if (RW(group_perm & mask))
		list_add(&f->device_access, "members of group %s (gid %u, the group)",
			 group_name(st->st_gid), (unsigned)st->st_gid);
	for (int i = 0; i < f->n_acl; i++) {
		const struct acl_entry *a = &f->acl[i];
		if (a->id < 0 || !RW(a->perm & mask))
			continue;
		if (!strcmp(a->tag, "user") && a->id != 0)
			list_add(&f->device_access, "user %s (uid %ld, by ACL)",
				 user_name((uid_t)a->id), a->id);
		else if (!strcmp(a->tag, "group"))
			list_add(&f->device_access, "members of group %s (gid %ld, by ACL)",
				 group_name((gid_t)a->id), a->id);
	}
	f->device_world = RW(st->st_mode);
	if (f->device_world)
		list_add(&f->device_access, "everyone (the mode grants read and write to others)");
}

static void gather_device(struct facts *f)
{
	f->device_stat = stat(f->device, &f->device_st) < 0 ? -errno : 0;
	if (f->device_stat < 0)
		return;
	unsigned maj, min;
	FILE *d = fopen("/sys/devices/virtual/misc/userfaultfd/dev", "re");
	if (d && fscanf(d, "%u:%u", &maj, &min) == 2)
		f->device_is_uffd = S_ISCHR(f->device_st.st_mode) &&
				    f->device_st.st_rdev == makedev(maj, min);
	if (d)
		fclose(d);
	read_acl(f);
	device_access(f);
}

static long status_field(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, name, len) && line[len] == ':')
			return strtol(line + len + 1, NULL, 10);
	return -1;
}

static void gather_process(struct facts *f)
{
	char buf[8192];
	size_t n = 0;
	FILE *s = fopen("/proc/self/status", "re");

	f->uid = getuid();
	f->euid = geteuid();
	if (s) {
		n = fread(buf, 1, sizeof(buf) - 1, s);
		fclose(s);
	}
	buf[n] = '\0';
	f->seccomp = status_field(buf, "Seccomp");
	f->seccomp_filters = status_field(buf, "Seccomp_filters");

	/* The marker call: see common/marker.h. */
	long fd = syscall(__NR_userfaultfd, (int)UFFDGUARD_MARKER_FLAGS);
	f->marker_err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close((int)fd);
	f->marker_ours = fd < 0 && marker_decode(f->marker_err, &f->marker_enforcer, &f->marker_policy);
}

static void gather_fuse(struct facts *f)
{
	static const char *const paths[] = {
		"/usr/bin/fusermount3", "/usr/bin/fusermount", "/bin/fusermount3", "/bin/fusermount",
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
		list_add(&f->fusermount, "%s", paths[i]);
	}
}

/* ---- the verdict ----------------------------------------------------- */

/* The identity whose results stand for "an unprivileged process". */
static const struct probe_identity *unprivileged(const struct facts *f)
{
	const struct probe_identity *u = &f->probe.who[PROBE_UNPRIV];
	if (u->ran)
		return u;
	u = &f->probe.who[PROBE_SELF];
	return u->ran && !u->has_ptrace ? u : NULL;
}

/* Whether the attempt was made and created a descriptor. */
static bool created(const struct probe_identity *u, enum probe_way way)
{
	return u->attempts[way].tried && u->attempts[way].result == 0;
}

/* A flag-less attempt that failed before any permission check (out of
 * descriptors or memory, interrupted, cut off by the deadline) proves
 * nothing either way.  An errno a seccomp filter gives every userfaultfd
 * call (the marker call got it too) is that filter's refusal. */
static bool inconclusive(const struct facts *f, const struct probe_identity *u, enum probe_way way)
{
	const struct probe_attempt *a = &u->attempts[way];
	int e = -a->result;

	if (!a->tried)
		return true;
	if (way == PROBE_SYSCALL && !f->marker_ours && e == f->marker_err)
		return false;
	return e == EMFILE || e == ENFILE || e == ENOMEM || e == EAGAIN || e == EINTR;
}

static void decide(struct facts *f, const struct probe_options *po)
{
	const struct probe_identity *u = unprivileged(f);
	char held[256] = "";
	size_t used = 0;

	f->complete = true;
	if (!f->has_userfaultfd) {
		f->verdict = V_UNAVAILABLE;
		list_add(&f->reasons, "this kernel has no userfaultfd (no %s, userfaultfd(2) fails with ENOSYS)",
			 SYSCTL_PATH);
		return;
	}
	if (f->marker_ours) {
		char desc[256];
		policy_format(&f->marker_policy, desc, sizeof(desc));
		list_add(&f->reasons, "uffdguard %s enforces policy %s on this process tree (%s)",
			 enforcer_info(f->marker_enforcer)->noun,
			 policy_name(&f->marker_policy), desc);
	}
	if (!u) {
		/* Nothing was tried as an unprivileged process: no evidence
		 * either way, so no "protected". */
		f->complete = false;
		f->verdict = V_UNKNOWN;
		list_add(&f->not_checked, "no unprivileged probe could run: %s",
			 f->probe.who[PROBE_SELF].ran ? "the caller cannot switch to another uid, "
							"and has CAP_SYS_PTRACE itself"
			 : f->probe.who[PROBE_UNPRIV].why_not[0] ? f->probe.who[PROBE_UNPRIV].why_not
								 : f->probe.who[PROBE_SELF].why_not);
		list_add(&f->reasons, "not determined: no process without privileges could be tried");
		return;
	}

	int n_held = 0;
	double least = 0;
	bool cut = false; /* a hold was cut short by the deadline */
	for (int p = 0; p < STALL_N_POINTS; p++) {
		if (!u->stall[p].delivered)
			continue;
		if (!n_held || u->stall[p].held_ms < least)
			least = u->stall[p].held_ms;
		cut |= u->stall[p].outcome == STALL_TIMEOUT;
		n_held++;
		used += (size_t)snprintf(held + used, used < sizeof(held) ? sizeof(held) - used : 0,
					 "%s%s", n_held > 1 ? ", " : "", stall_point_name((enum stall_point)p));
	}
	bool flagless = created(u, PROBE_SYSCALL) || created(u, PROBE_DEVICE);
	/* The device ignores the sysctl: whoever else can open it (a group,
	 * an ACL entry, a non-root owner) can hold the kernel, unless the
	 * uffdguard policy in force refuses its flag-less ioctl. */
	struct call dev_call = { .path = CALL_DEVICE_IOCTL, .flags = 0 };
	bool device_covered = f->marker_ours &&
			      policy_decide(&f->marker_policy, false, &dev_call) == VERDICT_EPERM;
	bool device_open_to_others = f->device_is_uffd && f->device_access.n && !device_covered &&
				     !created(u, PROBE_DEVICE);
	if (n_held) {
		f->verdict = V_EXPOSED;
		list_add(&f->reasons, "a process as uid %u without capabilities held the kernel inside %s "
				      "for %s %.0f ms, with a descriptor from %s",
			 (unsigned)u->uid, held, cut ? "at least" : "the whole hold,", least,
			 probe_way_name((enum probe_way)u->stall_way));
	} else if (flagless) {
		/* The stall probe could not show it, but the descriptor says it. */
		f->verdict = V_EXPOSED;
		list_add(&f->reasons, "a process as uid %u without capabilities created a descriptor that "
				      "handles kernel-mode faults (%s)", (unsigned)u->uid,
			 u->attempts[PROBE_SYSCALL].result == 0 ? "userfaultfd(2) without the flag"
								 : "the device without the flag");
	} else if (device_open_to_others) {
		f->verdict = V_EXPOSED;
		list_add(&f->reasons, "%s can open %s, which handles kernel-mode faults whatever %s "
				      "says", f->device_access.item[0], f->device, SYSCTL_NAME);
	} else if (inconclusive(f, u, PROBE_SYSCALL)) {
		f->verdict = V_UNKNOWN;
		list_add(&f->reasons, "not determined: the flag-less userfaultfd(2) attempt failed "
				      "for a reason that is no refusal");
	} else {
		f->verdict = V_PROTECTED;
	}
	static const enum probe_way flagless_ways[] = { PROBE_SYSCALL, PROBE_DEVICE };
	for (size_t i = 0; i < 2; i++) {
		enum probe_way w = flagless_ways[i];
		if (created(u, w) || !inconclusive(f, u, w))
			continue;
		f->complete = false;
		list_add(&f->not_checked, "the %s attempt %s%s, which is no refusal",
			 probe_way_name(w), u->attempts[w].tried ? "failed with " : "was not made",
			 u->attempts[w].tried ? errname(u->attempts[w].result) : "");
	}
	if (created(u, PROBE_SYSCALL))
		list_add(&f->reasons, "userfaultfd(2) without UFFD_USER_MODE_ONLY is allowed to "
				      "unprivileged processes (%s = %d: %s)", SYSCTL_NAME, f->knob,
			 sysctl_meaning(f->knob, f->new_semantics));
	else
		list_add(&f->reasons, "userfaultfd(2) without UFFD_USER_MODE_ONLY is refused to "
				      "unprivileged processes (%s)", errname(u->attempts[PROBE_SYSCALL].result));
	if (created(u, PROBE_DEVICE))
		list_add(&f->reasons, "%s is open to unprivileged processes and ignores %s", f->device,
			 SYSCTL_NAME);
	else
		list_add(&f->reasons, "%s is not usable by unprivileged processes (%s)", f->device,
			 errname(u->attempts[PROBE_DEVICE].result));
	if (!n_held && u->stall_run) {
		bool all_refused = true;
		for (int p = 0; p < STALL_N_POINTS; p++)
			all_refused &= u->stall[p].outcome == STALL_REFUSED;
		if (all_refused)
			list_add(&f->reasons, "with the best descriptor it could get (%s) every stall "
					      "point failed at once with EFAULT",
				 probe_way_name((enum probe_way)u->stall_way));
	}
	if (u->timed_out) {
		f->complete = false;
		list_add(&f->not_checked, "the probe was stopped at its deadline (%d ms)", f->probe.timeout_ms);
	}
	if (u == &f->probe.who[PROBE_SELF]) {
		f->complete = false;
		list_add(&f->not_checked, "not root: the probe ran as the caller (uid %u), not as an unused "
					  "uid; identities with other groups or ACL entries were not tried",
			 (unsigned)f->uid);
		list_add(&f->not_checked, "not root: the CAP_SYS_PTRACE probe was skipped");
	}
	for (int i = 0; i < f->device_access.n; i++)
		if (!created(u, PROBE_DEVICE))
			list_add(&f->warnings, "%s can open %s, which ignores %s%s",
				 f->device_access.item[i], f->device, SYSCTL_NAME,
				 device_covered ? " (the uffdguard policy in force covers it here)"
						: ": they can hold the kernel");
	if (u->fuse_open == 0 || f->fusermount.n)
		list_add(&f->warnings, "unprivileged FUSE is possible (%s): a FUSE server can also stall "
				       "the kernel, which no userfaultfd policy closes",
			 u->fuse_open == 0 ? "/dev/fuse is open to it" : f->fusermount.item[0]);
}

static int exit_code(enum verdict_kind v)
{
	static const int codes[] = { [V_PROTECTED] = EXIT_PROTECTED, [V_EXPOSED] = EXIT_EXPOSED,
				     [V_UNAVAILABLE] = EXIT_UNAVAILABLE, [V_UNKNOWN] = EXIT_ERROR };
	return codes[v];
}

static const char *verdict_word(enum verdict_kind v)
{
	static const char *const words[] = { [V_PROTECTED] = "protected", [V_EXPOSED] = "exposed",
					     [V_UNAVAILABLE] = "unavailable", [V_UNKNOWN] = "unknown" };
	return words[v];
}

/* ---- text ------------------------------------------------------------ */

static void mode_string(mode_t m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	out[0] = S_ISCHR(m) ? 'c' : S_ISBLK(m) ? 'b' : S_ISDIR(m) ? 'd' : S_ISREG(m) ? '-' : '?';
	for (int i = 0; i < 9; i++)
		out[i + 1] = m & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

static void print_list(const char *title, const struct list *l)
{
	for (int i = 0; i < l->n; i++)
		printf("  %s %s\n", title, l->item[i]);
}

static void print_stall(const struct stall_result *r)
{
	switch (r->outcome) {
	case STALL_HELD:
		printf("held %.0f ms (unbounded)\n", r->held_ms);
		break;
	case STALL_REFUSED:
		printf("refused with EFAULT in %.0f µs\n", r->took_us);
		break;
	case STALL_TIMEOUT:
		printf("%s at the deadline after %.0f ms\n",
		       r->delivered ? "still held" : "still running", r->held_ms);
		break;
	case STALL_ERROR:
		printf("failed with %s in %.0f µs, no fault delivered\n", errname(r->err), r->took_us);
		break;
	default:
		printf("not run\n");
	}
}

static void print_text(const struct facts *f)
{
	char buf[1024], mode[11];

	printf("kernel          Linux %s\n", f->release);
	if (f->flag_result == -ENOSYS)
		printf("userfaultfd(2)  %s: %s\n", f->has_userfaultfd ? "blocked" : "absent", f->flag_why);
	else if (f->flag_result == -EINVAL)
		printf("userfaultfd(2)  present; UFFD_USER_MODE_ONLY not supported (EINVAL)\n");
	else if (f->flag_result < 0)
		printf("userfaultfd(2)  present; UFFD_USER_MODE_ONLY not checked: %s\n", f->flag_why);
	else
		printf("userfaultfd(2)  present; UFFD_USER_MODE_ONLY supported\n");
	if (f->api_result == 0) {
		libuffd_format_features(f->api.features, " ", buf, sizeof(buf));
		printf("features        %s\n", buf);
		libuffd_format_ioctls(f->api.ioctls, " ", buf, sizeof(buf));
		printf("ioctls          %s\n", buf);
	}
	if (f->knob >= 0)
		printf("sysctl          %s = %d (%s): %s\n", SYSCTL_NAME, f->knob,
		       sysctl_policy_name(f->knob, f->new_semantics), sysctl_meaning(f->knob, f->new_semantics));
	else
		printf("sysctl          %s: %s\n", SYSCTL_NAME, strerror(-f->knob));

	if (f->device_stat < 0) {
		printf("device          %s: %s\n", f->device, strerror(-f->device_stat));
	} else {
		mode_string(f->device_st.st_mode, mode);
		printf("device          %s%s: %s %s:%s%s%s\n", f->device,
		       f->device_testing ? " (--device)" : "", mode, user_name(f->device_st.st_uid),
		       group_name(f->device_st.st_gid), f->n_acl ? " +ACL" : "",
		       f->device_is_uffd ? "" : " (not the userfaultfd device)");
		if (!f->device_access.n)
			printf("                only root can open it\n");
		for (int i = 0; i < f->device_access.n; i++)
			printf("                %s can open it%s\n", f->device_access.item[i],
			       i == f->device_access.n - 1 ? ", bypassing the sysctl" : "");
	}

	static const char *const seccomp_modes[] = { "disabled", "strict", "filter" };
	printf("process         uid %u; seccomp %s, %ld filter%s; ", (unsigned)f->uid,
	       f->seccomp >= 0 && f->seccomp <= 2 ? seccomp_modes[f->seccomp] : "unknown",
	       f->seccomp_filters, f->seccomp_filters == 1 ? "" : "s");
	if (f->marker_ours)
		printf("uffdguard %s in force, policy %s\n",
		       enforcer_info(f->marker_enforcer)->noun,
		       policy_name(&f->marker_policy));
	else if (f->marker_err == EINVAL)
		printf("no uffdguard policy in force\n");
	else
		printf("no uffdguard policy; a seccomp filter answers userfaultfd with %s\n",
		       errname(f->marker_err));

	const struct probe_report *pr = &f->probe;
	/* One row a way, one column an identity that ran. */
	printf("\nlive probe (forked children)\n");
	for (int row = -1; row < PROBE_N_WAYS; row++) {
		int used = snprintf(buf, sizeof(buf), "  %-24s",
				    row < 0 ? "" : probe_way_name((enum probe_way)row));
		for (int w = 0; w < PROBE_N_WHO; w++) {
			char cell[64];
			if (!pr->who[w].ran)
				continue;
			if (row < 0)
				snprintf(cell, sizeof(cell), "uid %u%s", (unsigned)pr->who[w].uid,
					 w == PROBE_PTRACE ? " +CAP_SYS_PTRACE"
					 : w == PROBE_SELF ? " (caller)" : "");
			else
				snprintf(cell, sizeof(cell), "%s", errname(pr->who[w].attempts[row].result));
			used += snprintf(buf + used, sizeof(buf) - (size_t)used, "%-26s", cell);
		}
		while (used > 0 && buf[used - 1] == ' ')
			buf[--used] = '\0';
		printf("%s\n", buf);
	}
	for (int w = 0; w < PROBE_N_WHO && !pr->who[PROBE_SELF].ran; w++)
		if (!pr->who[w].ran && w != PROBE_SELF)
			printf("  %s probe not run: %s\n", probe_who_name((enum probe_who)w), pr->who[w].why_not);

	const struct probe_identity *u = unprivileged(f);
	if (u && u->stall_run) {
		printf("\nstall probe (uid %u, descriptor %s, hold %d ms)\n", (unsigned)u->uid,
		       probe_way_name((enum probe_way)u->stall_way), pr->hold_ms);
		for (int p = 0; p < STALL_N_POINTS; p++) {
			printf("  %-24s", stall_point_label((enum stall_point)p));
			print_stall(&u->stall[p]);
		}
	} else if (u) {
		printf("\nstall probe not run: %s\n", u->stall_why_not);
	}

	printf("\nnot closed by userfaultfd policy\n  FUSE          ");
	if (f->fuse_stat < 0) {
		printf("/dev/fuse: %s", strerror(-f->fuse_stat));
	} else {
		mode_string(f->fuse_st.st_mode, mode);
		printf("/dev/fuse %s %s:%s", mode, user_name(f->fuse_st.st_uid),
		       group_name(f->fuse_st.st_gid));
		if (u)
			printf(", unprivileged open: %s", errname(u->fuse_open));
	}
	printf("; setuid fusermount: %s\n", f->fusermount.n ? f->fusermount.item[0] : "none");

	printf("\nverdict: %s (exit %d)\n", verdict_word(f->verdict), exit_code(f->verdict));
	print_list("-", &f->reasons);
	print_list("! warning:", &f->warnings);
	print_list("? not checked:", &f->not_checked);
}

/* ---- JSON ------------------------------------------------------------ */

static json_object *jlist(const struct list *l)
{
	json_object *a = json_object_new_array();
	for (int i = 0; i < l->n; i++)
		json_object_array_add(a, json_object_new_string(l->item[i]));
	return a;
}

static json_object *jerr(int err)
{
	return err ? json_object_new_string(errname(err)) : NULL;
}

#define ADD(obj, key, val) json_object_object_add(obj, key, val)

static json_object *json_mask(uint64_t mask, const char *(*name)(unsigned int))
{
	json_object *a = json_object_new_array();
	char hex[24];
	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(mask >> bit & 1))
			continue;
		const char *n = name(bit);
		snprintf(hex, sizeof(hex), "0x%llx", 1ull << bit);
		json_object_array_add(a, json_object_new_string(n ? n : hex));
	}
	return a;
}

static json_object *json_identity(const struct probe_identity *id, enum probe_who w)
{
	json_object *o = json_object_new_object();

	ADD(o, "name", json_object_new_string(probe_who_name(w)));
	ADD(o, "ran", json_object_new_boolean(id->ran));
	ADD(o, "why_not", id->ran ? NULL : json_object_new_string(id->why_not));
	if (!id->ran)
		return o;
	ADD(o, "uid", json_object_new_int64(id->uid));
	ADD(o, "cap_sys_ptrace", json_object_new_boolean(id->has_ptrace));
	ADD(o, "timed_out", json_object_new_boolean(id->timed_out));
	json_object *att = json_object_new_array();
	for (int way = 0; way < PROBE_N_WAYS; way++) {
		const struct probe_attempt *a = &id->attempts[way];
		json_object *e = json_object_new_object();
		ADD(e, "way", json_object_new_string(probe_way_name((enum probe_way)way)));
		ADD(e, "path", json_object_new_string(way >= PROBE_DEVICE ? "device" : "syscall"));
		ADD(e, "user_mode_only", json_object_new_boolean(way == PROBE_SYSCALL_UMO ||
								 way == PROBE_DEVICE_UMO));
		ADD(e, "tried", json_object_new_boolean(a->tried));
		ADD(e, "ok", json_object_new_boolean(a->tried && a->result == 0));
		ADD(e, "errno", jerr(a->result));
		ADD(e, "why", a->result ? json_object_new_string(a->why) : NULL);
		json_object_array_add(att, e);
	}
	ADD(o, "attempts", att);
	ADD(o, "fuse_open", json_object_new_string(errname(id->fuse_open)));
	if (w == PROBE_PTRACE)
		return o;

	json_object *st = json_object_new_object();
	ADD(st, "ran", json_object_new_boolean(id->stall_run));
	ADD(st, "why_not", id->stall_run ? NULL : json_object_new_string(id->stall_why_not));
	ADD(st, "descriptor", id->stall_way >= 0
		    ? json_object_new_string(probe_way_name((enum probe_way)id->stall_way)) : NULL);
	json_object *pts = json_object_new_array();
	for (int p = 0; id->stall_run && p < STALL_N_POINTS; p++) {
		const struct stall_result *r = &id->stall[p];
		json_object *e = json_object_new_object();
		ADD(e, "point", json_object_new_string(stall_point_name((enum stall_point)p)));
		ADD(e, "outcome", json_object_new_string(stall_outcome_name(r->outcome)));
		ADD(e, "held", json_object_new_boolean(r->delivered));
		ADD(e, "held_ms", r->delivered ? json_object_new_int64((int64_t)r->held_ms) : NULL);
		ADD(e, "took_us", r->delivered ? NULL : json_object_new_int64((int64_t)r->took_us));
		ADD(e, "errno", jerr(r->err));
		json_object_array_add(pts, e);
	}
	ADD(st, "points", pts);
	ADD(o, "stall", st);
	return o;
}

static void print_json(const struct facts *f)
{
	json_object *root = json_object_new_object(), *o;
	char octal[8];

	ADD(root, "schema_version", json_object_new_int(STATUS_SCHEMA_VERSION));
	ADD(root, "uffdguard_version", json_object_new_string(UFFDGUARD_VERSION));

	o = json_object_new_object();
	ADD(o, "release", json_object_new_string(f->release));
	ADD(o, "userfaultfd", json_object_new_boolean(f->has_userfaultfd));
	ADD(o, "syscall_errno", jerr(f->flag_result == -EINVAL ? 0 : f->flag_result));
	ADD(o, "user_mode_only", f->flag_result == 0 ? json_object_new_boolean(true)
			       : f->flag_result == -EINVAL ? json_object_new_boolean(false) : NULL);
	ADD(o, "features", f->api_result == 0 ? json_mask(f->api.features, libuffd_feature_name) : NULL);
	ADD(o, "ioctls", f->api_result == 0 ? json_mask(f->api.ioctls, libuffd_ioctl_name) : NULL);
	ADD(root, "kernel", o);

	o = json_object_new_object();
	ADD(o, "name", json_object_new_string(SYSCTL_NAME));
	ADD(o, "value", f->knob >= 0 ? json_object_new_int(f->knob) : NULL);
	ADD(o, "errno", f->knob < 0 ? jerr(f->knob) : NULL);
	ADD(o, "semantics", json_object_new_string(f->new_semantics ? "5.11+" : "pre-5.11"));
	ADD(o, "policy", f->knob >= 0 ? json_object_new_string(sysctl_policy_name(f->knob, f->new_semantics)) : NULL);
	ADD(o, "meaning", f->knob >= 0 ? json_object_new_string(sysctl_meaning(f->knob, f->new_semantics)) : NULL);
	ADD(root, "sysctl", o);

	o = json_object_new_object();
	ADD(o, "path", json_object_new_string(f->device));
	ADD(o, "present", json_object_new_boolean(f->device_stat == 0));
	if (f->device_stat == 0) {
		snprintf(octal, sizeof(octal), "%04o", (unsigned)(f->device_st.st_mode & 07777));
		ADD(o, "userfaultfd_device", json_object_new_boolean(f->device_is_uffd));
		ADD(o, "owner", json_object_new_int64(f->device_st.st_uid));
		ADD(o, "group", json_object_new_int64(f->device_st.st_gid));
		ADD(o, "mode", json_object_new_string(octal));
		json_object *acl = json_object_new_array();
		for (int i = 0; i < f->n_acl; i++) {
			json_object *e = json_object_new_object();
			char perm[4] = { f->acl[i].perm & 4 ? 'r' : '-', f->acl[i].perm & 2 ? 'w' : '-',
					 f->acl[i].perm & 1 ? 'x' : '-', 0 };
			ADD(e, "tag", json_object_new_string(f->acl[i].tag));
			ADD(e, "id", f->acl[i].id >= 0 ? json_object_new_int64(f->acl[i].id) : NULL);
			ADD(e, "perm", json_object_new_string(perm));
			json_object_array_add(acl, e);
		}
		ADD(o, "acl", acl);
		ADD(o, "unprivileged_access", jlist(&f->device_access));
		ADD(o, "world_accessible", json_object_new_boolean(f->device_world));
	} else {
		ADD(o, "errno", jerr(f->device_stat));
	}
	ADD(root, "device", o);

	o = json_object_new_object();
	ADD(o, "uid", json_object_new_int64(f->uid));
	ADD(o, "euid", json_object_new_int64(f->euid));
	ADD(o, "seccomp", f->seccomp >= 0 ? json_object_new_int64(f->seccomp) : NULL);
	ADD(o, "seccomp_filters", f->seccomp_filters >= 0 ? json_object_new_int64(f->seccomp_filters) : NULL);
	ADD(o, "marker_errno", json_object_new_string(f->marker_err < UFFDGUARD_MARKER_ERRNO_BASE
							      ? errname(f->marker_err) : "uffdguard"));
	json_object *g = NULL;
	if (f->marker_ours) {
		g = json_object_new_object();
		ADD(g, "mode", json_object_new_string(enforcer_info(f->marker_enforcer)->mode));
		ADD(g, "policy", json_object_new_string(policy_name(&f->marker_policy)));
		ADD(g, "unprivileged_userfaultfd",
		    json_object_new_int(f->marker_policy.unprivileged_userfaultfd));
		ADD(g, "unprivileged_userfaultfd_user_mode_only",
		    json_object_new_int(f->marker_policy.unprivileged_userfaultfd_user_mode_only));
		ADD(g, "cover_device", json_object_new_boolean(f->marker_policy.cover_device));
	}
	ADD(o, "uffdguard", g);
	ADD(root, "process", o);

	o = json_object_new_object();
	ADD(o, "hold_ms", json_object_new_int(f->probe.hold_ms));
	ADD(o, "timeout_ms", json_object_new_int(f->probe.timeout_ms));
	ADD(o, "errno", jerr(f->probe_result));
	json_object *ids = json_object_new_array();
	for (int w = 0; w < PROBE_N_WHO; w++)
		json_object_array_add(ids, json_identity(&f->probe.who[w], (enum probe_who)w));
	ADD(o, "identities", ids);
	ADD(root, "probe", o);

	o = json_object_new_object();
	const struct probe_identity *u = unprivileged(f);
	ADD(o, "device_present", json_object_new_boolean(f->fuse_stat == 0));
	if (f->fuse_stat == 0) {
		snprintf(octal, sizeof(octal), "%04o", (unsigned)(f->fuse_st.st_mode & 07777));
		ADD(o, "device_mode", json_object_new_string(octal));
	}
	ADD(o, "unprivileged_open", u ? json_object_new_string(errname(u->fuse_open)) : NULL);
	ADD(o, "setuid_fusermount", jlist(&f->fusermount));
	ADD(o, "unprivileged_fuse", json_object_new_boolean((u && u->fuse_open == 0) || f->fusermount.n));
	ADD(root, "fuse", o);

	o = json_object_new_object();
	ADD(o, "status", json_object_new_string(verdict_word(f->verdict)));
	ADD(o, "exit_code", json_object_new_int(exit_code(f->verdict)));
	ADD(o, "complete", json_object_new_boolean(f->complete));
	ADD(o, "reasons", jlist(&f->reasons));
	ADD(o, "warnings", jlist(&f->warnings));
	ADD(o, "not_checked", jlist(&f->not_checked));
	ADD(root, "verdict", o);

	puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

/* ---- the command ----------------------------------------------------- */

static void status_usage(FILE *out)
{
	fputs("Usage: uffdguard status [--json | --quiet] [--hold MS]\n\n"
	      "Tell whether an unprivileged process on this machine can hold the kernel\n"
	      "inside a system call with userfaultfd, and why: the kernel, the sysctl,\n"
	      "/dev/userfaultfd, the seccomp state of this process, a live probe in\n"
	      "forked unprivileged children, and a verdict.\n\n"
	      "Options:\n"
	      "  --json            the same facts as JSON (schema in uffdguard-status(1))\n"
	      "  -q, --quiet       print nothing; the exit code is the verdict\n"
	      "  --hold MS         how long the stall probe holds each fault (default 50)\n"
	      "  --device PATH     check and probe PATH instead of /dev/userfaultfd (testing)\n"
	      "  --probe-timeout MS  deadline for each probe child (default 1000 + 10 x hold)\n"
	      "  -h, --help        this text\n\n"
	      "Exit status: 0 protected, 1 exposed, 2 usage error, 3 userfaultfd\n"
	      "unavailable, 4 the status could not be determined (unknown).\n", out);
}

static int parse_ms(const char *opt, const char *s, int min, int max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error(&cmd_status, "%s: '%s' is not a number of milliseconds from %d to %d", opt,
			    s, min, max);
	return (int)v;
}

static int status_run(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_HOLD, OPT_DEVICE, OPT_TIMEOUT };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "probe-timeout", required_argument, NULL, OPT_TIMEOUT },
		{ 0 },
	};
	struct probe_options po = { .device_path = LIBUFFD_DEVICE_PATH, .hold_ms = DEFAULT_HOLD_MS };
	bool json = false, quiet = false, testing_device = false;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hq", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			status_usage(stdout);
			return 0;
		case OPT_JSON:
			json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_HOLD:
			po.hold_ms = parse_ms("--hold", optarg, 1, 10000);
			break;
		case OPT_DEVICE:
			if (!*optarg || strlen(optarg) >= sizeof(((struct libuffd_open_report *)0)->device_path))
				usage_error(&cmd_status, "--device: the path must be 1 to 107 bytes long");
			po.device_path = optarg;
			testing_device = true;
			break;
		case OPT_TIMEOUT:
			po.timeout_ms = parse_ms("--probe-timeout", optarg, 1, 600000);
			break;
		case ':':
			usage_error(&cmd_status, "option '%s' needs an argument", argv[optind - 1]);
		default:
			usage_error(&cmd_status, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error(&cmd_status, "unexpected argument '%s'", argv[optind]);
	if (json && quiet)
		usage_error(&cmd_status, "--json and --quiet exclude each other");

	struct facts f = { .device = po.device_path, .device_testing = testing_device };
	gather_kernel(&f);
	gather_device(&f);
	gather_process(&f);
	gather_fuse(&f);
	f.probe_result = probe_run(&po, &f.probe);
	if (f.probe_result < 0)
		die(EXIT_ERROR, "the probe could not start: %s", strerror(-f.probe_result));
	decide(&f, &po);

	if (json)
		print_json(&f);
	else if (!quiet)
		print_text(&f);
	fflush(stdout);
	int code = exit_code(f.verdict);
	list_free(&f.device_access);
	list_free(&f.fusermount);
	list_free(&f.reasons);
	list_free(&f.warnings);
	list_free(&f.not_checked);
	free(f.acl);
	return code;
}

const struct subcommand cmd_status = {
	.name = "status",
	.summary = "what userfaultfd this machine allows, and why",
	.run = status_run,
	.usage = status_usage,
};
