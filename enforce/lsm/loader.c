// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The loader: checks what the kernel offers, loads uffdguard.bpf.c from its
 * skeleton, pins its links and maps in bpffs so that enforcement outlives
 * the command, and reads and writes the scopes.  libbpf's own messages go
 * to a buffer (lsm_libbpf_log()); a failure becomes one sentence.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "loader.h"
#include "uffdguard.skel.h"

#define BPF_FS "/sys/fs/bpf"
#define BPF_FS_MAGIC 0xcafe4a11
#define SECURITYFS "/sys/kernel/security"
#define SECURITYFS_MAGIC 0x73636673
#define AUDIT_LOCK_DIR "/run/uffdguard"
#define AUDIT_LOCK AUDIT_LOCK_DIR "/lsm-audit.lock"

/* The pins, in LSM_PIN_DIR: maps by their names (libbpf), links by their
 * programs' names. */
static const char *const link_pins[] = { "uffd_create", "scope_on_mkdir", "scope_on_rmdir" };
#define N_LINKS (sizeof(link_pins) / sizeof(link_pins[0]))
static const char *const map_pins[] = { "scopes",          "scope_paths",     "decision_counts",
					"audit_records",   "dropped_records", "format" };
#define N_MAPS (sizeof(map_pins) / sizeof(map_pins[0]))

static void say(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
}

/* ---- libbpf's messages ------------------------------------------------ */

static char libbpf_log[32768];
static size_t libbpf_log_len;

/* libbpf's print callback: the format is libbpf's own. */
__attribute__((format(printf, 2, 0)))
static int capture(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || libbpf_log_len >= sizeof(libbpf_log) - 1)
		return 0;
	int n = vsnprintf(libbpf_log + libbpf_log_len, sizeof(libbpf_log) - libbpf_log_len, fmt, ap);
	if (n > 0)
		libbpf_log_len += (size_t)n < sizeof(libbpf_log) - libbpf_log_len
					  ? (size_t)n : sizeof(libbpf_log) - libbpf_log_len - 1;
	return 0;
}

const char *lsm_libbpf_log(void)
{
	return libbpf_log;
}

static void capture_start(void)
{
	libbpf_log_len = 0;
	libbpf_log[0] = '\0';
	libbpf_set_print(capture);
}

/* The last line of the verifier's log that says why, if libbpf passed
 * one on: the kernel's own words. */
static const char *verifier_reason(char *buf, size_t size)
{
	const char *end = strstr(libbpf_log, "-- END PROG LOAD LOG --");
	if (!end)
		return NULL;
	const char *begin = strstr(libbpf_log, "-- BEGIN PROG LOAD LOG --");
	const char *line = NULL;
	for (const char *p = begin ? begin : libbpf_log; p < end; p = strchr(p, '\n') + 1) {
		const char *nl = strchr(p, '\n');
		if (!nl || nl >= end)
			break;
		/* Skip the statistics libbpf and the kernel append. */
		if (nl > p && strncmp(p, "processed ", 10) && strncmp(p, "verification time", 17) &&
		    strncmp(p, "stack depth", 11) && strncmp(p, "-- BEGIN", 8))
			line = p;
	}
	if (!line)
		return NULL;
	size_t n = (size_t)(strchr(line, '\n') - line);
	snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), line);
	return buf;
}

/* ---- what the kernel offers ------------------------------------------- */

static bool fs_is(const char *path, long magic)
{
	struct statfs st;
	return statfs(path, &st) == 0 && st.f_type == magic;
}

static bool effective(cap_t caps, cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;
	return caps && cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

void lsm_support_probe(struct lsm_support *s, bool may_mount)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	*s = (struct lsm_support){ 0 };
	uname(&u);
	snprintf(s->release, sizeof(s->release), "%s", u.release);
	if (sscanf(u.release, "%u.%u", &major, &minor) == 2)
		s->kernel_ok = major > LSM_MIN_KERNEL_MAJOR ||
			       (major == LSM_MIN_KERNEL_MAJOR && minor >= LSM_MIN_KERNEL_MINOR);
	s->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;

	if (may_mount && !fs_is(SECURITYFS, SECURITYFS_MAGIC))
		(void)mount("securityfs", SECURITYFS, "securityfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			    NULL);
	cleanup_file FILE *f = fopen(SECURITYFS "/lsm", "re");
	if (f) {
		s->lsm_list_known = fgets(s->active_lsms, sizeof(s->active_lsms), f) != NULL;
		s->active_lsms[strcspn(s->active_lsms, "\n")] = '\0';
		char list[sizeof(s->active_lsms)], *save = NULL;
		snprintf(list, sizeof(list), "%s", s->active_lsms);
		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (!strcmp(t, "bpf"))
				s->bpf_active = true;
	}

	cap_t caps = cap_get_proc();
	/* CAP_BPF is 39; libcap may be older than the kernel's name for it. */
	s->capable = effective(caps, CAP_SYS_ADMIN) && effective(caps, 39);
	if (caps)
		cap_free(caps);
}

int lsm_support_check(const struct lsm_support *s, char *err, size_t err_size)
{
	if (!s->kernel_ok) {
		say(err, err_size,
		    "this kernel is %s; uffdguard lsm needs Linux %d.%d or later, the first "
		    "release where both ways to create a userfaultfd (the system call and "
		    "/dev/userfaultfd) pass the LSM hook it uses and the release it is tested on: "
		    "use uffdguard run, uffdguard profile or uffdguard sysctl instead",
		    s->release, LSM_MIN_KERNEL_MAJOR, LSM_MIN_KERNEL_MINOR);
		return -ENOSYS;
	}
	if (!s->capable) {
		say(err, err_size,
		    "loading a BPF LSM program needs root (CAP_BPF and CAP_SYS_ADMIN in the "
		    "effective set): run this command as root");
		return -EPERM;
	}
	if (!s->btf) {
		say(err, err_size,
		    "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing), which BPF LSM "
		    "programs need: it must be built with CONFIG_DEBUG_INFO_BTF=y (Debian's "
		    "kernels are); use uffdguard run, profile or sysctl instead");
		return -EOPNOTSUPP;
	}
	if (!s->lsm_list_known) {
		say(err, err_size,
		    "cannot read the list of active LSMs (%s/lsm): mount securityfs there "
		    "(mount -t securityfs securityfs %s)", SECURITYFS, SECURITYFS);
		return -EOPNOTSUPP;
	}
	if (!s->bpf_active) {
		say(err, err_size,
		    "the BPF LSM is not active (active LSMs: %s): add lsm=%s,bpf to the kernel "
		    "command line (on Debian, in GRUB_CMDLINE_LINUX in /etc/default/grub, then "
		    "update-grub) and reboot; the kernel must have CONFIG_BPF_LSM=y",
		    s->active_lsms, s->active_lsms);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* ---- pins ------------------------------------------------------------- */

static void pin_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", LSM_PIN_DIR, name);
}

static int obj_get(const char *name)
{
	char path[PATH_MAX];
	pin_path(path, sizeof(path), name);
	int fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

static bool pinned(const char *name)
{
	char path[PATH_MAX];
	pin_path(path, sizeof(path), name);
	return access(path, F_OK) == 0;
}

static int mount_bpffs(char *err, size_t err_size)
{
	if (fs_is(BPF_FS, BPF_FS_MAGIC))
		return 0;
	/* As bpftool does where the service manager has not. */
	if (mount("bpf", BPF_FS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0) {
		int e = errno;
		say(err, err_size, "cannot mount bpffs on %s to pin the programs in: %s", BPF_FS,
		    strerror(e));
		return -e;
	}
	return 0;
}

/* The pin directory, created (*created: by this call), open and locked
 * against other loaders. */
static int lock_pin_dir(bool create, bool *created, char *err, size_t err_size)
{
	if (created)
		*created = false;
	for (;;) {
		if (create) {
			int r = mount_bpffs(err, err_size);
			if (r < 0)
				return r;
			if (mkdir(LSM_PIN_DIR, 0700) == 0) {
				if (created)
					*created = true;
			} else if (errno != EEXIST) {
				int e = errno;
				say(err, err_size, "cannot create %s: %s", LSM_PIN_DIR, strerror(e));
				return -e;
			}
		}
		int fd = open(LSM_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			if (e != ENOENT)
				say(err, err_size, "cannot open %s: %s", LSM_PIN_DIR, strerror(e));
			return -e;
		}
		if (flock(fd, LOCK_EX) < 0) {
			int e = errno;
			close(fd);
			say(err, err_size, "cannot lock %s: %s", LSM_PIN_DIR, strerror(e));
			return -e;
		}
		/* The loader that held the lock may have removed the directory
		 * (a failed first load undoes itself): lock the one in place. */
		struct stat held, now;
		bool replaced = fstat(fd, &held) == 0 &&
				(stat(LSM_PIN_DIR, &now) < 0 ? errno == ENOENT
							      : held.st_dev != now.st_dev ||
								held.st_ino != now.st_ino);
		if (!replaced)
			return fd;
		close(fd);
		if (created)
			*created = false;
	}
}

/* ---- the object and its format ---------------------------------------- */

/* FNV-1a over the BPF object this binary carries. */
static uint64_t object_id(void)
{
	size_t size;
	const unsigned char *p = uffdguard_bpf__elf_bytes(&size);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < size; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int read_format(struct lsm_format *f)
{
	cleanup_close int fd = obj_get("format");
	if (fd < 0)
		return fd;
	__u32 zero = 0;
	return bpf_map_lookup_elem(fd, &zero, f) < 0 ? -errno : 0;
}

static void format_mismatch(const struct lsm_format *f, char *err, size_t err_size)
{
	say(err, err_size,
	    "the BPF LSM maps pinned in %s have format %u, and this uffdguard uses format %d "
	    "(another version of uffdguard pinned them): remove them with 'uffdguard lsm "
	    "remove' (which works whatever their format) and apply the policy again",
	    LSM_PIN_DIR, f->version, LSM_FORMAT_VERSION);
}

/* Turn a failed load into one sentence. */
static void load_failure(int e, char *err, size_t err_size)
{
	char why[256];

	if (strstr(libbpf_log, "couldn't reuse pinned map")) {
		say(err, err_size,
		    "the BPF LSM maps pinned in %s do not have the layout this uffdguard expects "
		    "(another version of uffdguard pinned them): remove them with 'uffdguard lsm "
		    "remove' and apply the policy again", LSM_PIN_DIR);
	} else if (e == EPERM) {
		cleanup_file FILE *f = fopen(SECURITYFS "/lockdown", "re");
		char mode[128] = "";
		if (f && !fgets(mode, sizeof(mode), f))
			mode[0] = '\0';
		if (strstr(mode, "[confidentiality]"))
			say(err, err_size,
			    "the kernel refused to load the BPF LSM program (EPERM): kernel lockdown "
			    "is in confidentiality mode, which forbids BPF programs to read kernel "
			    "memory; use uffdguard run, uffdguard profile or uffdguard sysctl instead");
		else
			say(err, err_size,
			    "the kernel refused to load the BPF LSM program (EPERM) although this "
			    "process has CAP_BPF and CAP_SYS_ADMIN: it does not allow "
			    "trampoline-based BPF programs (fentry, fexit, lsm), as some "
			    "virtualised kernels do not; use uffdguard run, uffdguard profile or "
			    "uffdguard sysctl instead");
	} else if (verifier_reason(why, sizeof(why))) {
		say(err, err_size,
		    "the kernel's verifier rejected the BPF LSM program on %s: \"%s\" (please "
		    "report this with 'uffdguard lsm apply --verbose' output)",
		    "this kernel", why);
	} else if (e == ESRCH || e == ENOENT) {
		say(err, err_size,
		    "this kernel lacks what the BPF LSM program attaches to (the LSM hook "
		    "inode_init_security_anon, or the tracepoints cgroup_mkdir and cgroup_rmdir): "
		    "%s", strerror(e));
	} else {
		say(err, err_size, "loading the BPF LSM program failed: %s", strerror(e));
	}
}

/* bpffs reserves names with a dot. */
#define NEXT_SUFFIX "_next"

/* What a load changed, to put back if a later step fails: nothing
 * half-applied. */
struct load_undo {
	bool created_dir;           /* LSM_PIN_DIR made by this command */
	bool maps_pinned;           /* the load pinned the maps of map_new */
	bool map_new[N_MAPS];       /* not pinned before the load */
	bool link_pinned[N_LINKS];  /* this load's link is at its pin */
	int old_link[N_LINKS];      /* the link it replaced there, or -1 */
	bool format_written;
	bool had_format;
	bool format_stuck;          /* the old format could not be written back */
	struct lsm_format old_format;
};

static void load_undo_init(struct load_undo *u, bool created_dir)
{
	*u = (struct load_undo){ .created_dir = created_dir };
	for (size_t i = 0; i < N_LINKS; i++)
		u->old_link[i] = -1;
}

static void load_undo_end(struct load_undo *u)
{
	for (size_t i = 0; i < N_LINKS; i++)
		if (u->old_link[i] >= 0) {
			close(u->old_link[i]);
			u->old_link[i] = -1;
		}
}

/* Whether the load replaced a pinned program (rather than loading the
 * first one). */
static bool load_replaced(const struct load_undo *u)
{
	for (size_t i = 0; i < N_LINKS; i++)
		if (u->old_link[i] >= 0)
			return true;
	return u->had_format;
}

/* Pin fd at path by way of path_next: whatever was at path stays until
 * the new object is there, so enforcement has no gap. */
static int pin_over(int fd, const char *path)
{
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s" NEXT_SUFFIX, path);
	unlink(tmp);
	int r = bpf_obj_pin(fd, tmp) < 0 ? -errno : 0;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Pin the link of link_pins[i], replacing a pin of an older program only
 * once the new one is attached; the older link is held in *u. */
static int pin_link(struct bpf_link *link, size_t i, struct load_undo *u, char *err,
		    size_t err_size)
{
	char path[PATH_MAX];

	pin_path(path, sizeof(path), link_pins[i]);
	/* Held, so that undoing this load can pin it back. */
	int old = obj_get(link_pins[i]);
	if (old < 0 && old != -ENOENT) {
		say(err, err_size, "cannot open the BPF link pinned at %s to replace it: %s", path,
		    strerror(-old));
		return old;
	}
	int r = pin_over(bpf_link__fd(link), path);
	if (r < 0) {
		if (old >= 0)
			close(old);
		say(err, err_size, "cannot pin the BPF link %s: %s", path, strerror(-r));
		return r;
	}
	u->old_link[i] = old < 0 ? -1 : old;
	u->link_pinned[i] = true;
	return 0;
}

/* Put back what the load changed, in the reverse order: the format, the
 * links (the LSM hook's first: it was attached last), the maps, the
 * directory.  Goes on past a failure; the first one is said in why. */
static int load_undo(struct load_undo *u, char *why, size_t why_size)
{
	char path[PATH_MAX];
	int r = 0;

#define UNDO_FAILED(e, ...)                                        \
	do {                                                       \
		if (r == 0) {                                      \
			r = (e);                                   \
			say(why, why_size, __VA_ARGS__);           \
		}                                                  \
	} while (0)

	if (u->format_written && u->had_format) {
		cleanup_close int fd = obj_get("format");
		__u32 zero = 0;
		int e = fd < 0 ? fd
		    : bpf_map_update_elem(fd, &zero, &u->old_format, BPF_ANY) < 0 ? -errno : 0;
		u->format_stuck = e < 0;
		if (e < 0)
			UNDO_FAILED(e, "cannot write back the format of the BPF LSM maps: %s",
				    strerror(-e));
	}
	u->format_written = false;
	for (size_t i = 0; i < N_LINKS; i++) {
		if (!u->link_pinned[i])
			continue;
		pin_path(path, sizeof(path), link_pins[i]);
		if (u->old_link[i] >= 0) {
			int e = pin_over(u->old_link[i], path);
			if (e < 0)
				UNDO_FAILED(e, "cannot pin the replaced BPF link back at %s: %s", path,
					    strerror(-e));
		} else if (unlink(path) < 0 && errno != ENOENT) {
			UNDO_FAILED(-errno, "cannot unpin %s: %s", path, strerror(errno));
		}
		u->link_pinned[i] = false;
	}
	for (size_t i = N_MAPS; u->maps_pinned && i-- > 0;) {
		pin_path(path, sizeof(path), map_pins[i]);
		if (u->map_new[i] && unlink(path) < 0 && errno != ENOENT)
			UNDO_FAILED(-errno, "cannot unpin %s: %s", path, strerror(errno));
	}
	u->maps_pinned = false;
	if (u->created_dir && rmdir(LSM_PIN_DIR) < 0 && errno != ENOENT)
		UNDO_FAILED(-errno, "cannot remove %s: %s", LSM_PIN_DIR, strerror(errno));
	u->created_dir = false;
#undef UNDO_FAILED
	return r;
}

/* After a failure said in err: undo the load and, if that fails too,
 * add what is left and what to do. */
static void load_undo_or_say(struct load_undo *u, char *err, size_t err_size)
{
	char why[512];
	bool replaced = load_replaced(u);

	if (load_undo(u, why, sizeof(why)) == 0)
		return;
	size_t len = strlen(err);
	if (replaced)
		snprintf(err + len, err_size - len,
			 "; putting back the BPF LSM program that was in force failed too (%s): "
			 "the links pinned in %s are partly this build's program, partly the one "
			 "that was in force, both reading the scopes in force; %s",
			 why, LSM_PIN_DIR,
			 /* The format says this build's: apply would see nothing to do. */
			 u->format_stuck ? "remove the program with 'uffdguard lsm remove', then "
					   "apply the policy again"
					 : "apply again to finish the replacement, or remove the "
					   "program with 'uffdguard lsm remove'");
	else
		snprintf(err + len, err_size - len,
			 "; removing what this command pinned failed too (%s): the BPF LSM program "
			 "is partly pinned in %s; remove it with 'uffdguard lsm remove', then "
			 "apply again", why, LSM_PIN_DIR);
}

/* Load, attach and pin, unless this very object is already pinned and
 * attached.  Called with the pin directory locked.  On failure, what it
 * changed is put back; on success *u says how to put it back. */
static int ensure_loaded(struct load_undo *u, char *err, size_t err_size)
{
	struct lsm_format f = { 0 };
	bool have_format = read_format(&f) == 0;
	uint64_t id = object_id();

	if (have_format && f.version != LSM_FORMAT_VERSION) {
		format_mismatch(&f, err, err_size);
		return -EEXIST;
	}
	bool all_links = true;
	for (size_t i = 0; i < N_LINKS; i++)
		all_links &= pinned(link_pins[i]);
	if (have_format && f.object_id == id && all_links)
		return 0;
	u->had_format = have_format;
	u->old_format = f;
	for (size_t i = 0; i < N_MAPS; i++)
		u->map_new[i] = !pinned(map_pins[i]);

	capture_start();
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = LSM_PIN_DIR);
	struct uffdguard_bpf *skel = uffdguard_bpf__open_opts(&opts);
	if (!skel) {
		int e = errno;
		say(err, err_size, "cannot open the BPF LSM program: %s", strerror(e));
		load_undo_or_say(u, err, err_size);
		return -e;
	}
	/* A failed load unpins the maps it pinned itself. */
	int r = uffdguard_bpf__load(skel);
	if (r < 0) {
		load_failure(-r, err, err_size);
		goto out;
	}
	u->maps_pinned = true;
	struct bpf_program *progs[N_LINKS] = { skel->progs.uffd_create, skel->progs.scope_on_mkdir,
					       skel->progs.scope_on_rmdir };
	/* The cgroup tracepoints first: by the time the hook decides,
	 * cgroups created meanwhile are already in the map. */
	for (size_t i = N_LINKS; i-- > 0;) {
		struct bpf_link *link = bpf_program__attach(progs[i]);
		if (!link) {
			r = -errno;
			say(err, err_size, "the kernel refused to attach the BPF program %s: %s",
			    link_pins[i], strerror(-r));
			goto out;
		}
		r = pin_link(link, i, u, err, err_size);
		bpf_link__destroy(link); /* the pin holds it */
		if (r < 0)
			goto out;
	}
	struct lsm_format now = { .version = LSM_FORMAT_VERSION, .object_id = id };
	__u32 zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.format), &zero, &now, BPF_ANY) < 0) {
		r = -errno;
		say(err, err_size, "cannot write the format of the BPF LSM maps: %s", strerror(-r));
		goto out;
	}
	u->format_written = true;
out:
	uffdguard_bpf__destroy(skel);
	if (r < 0) {
		bool loaded = u->maps_pinned;
		size_t len = strlen(err);
		load_undo_or_say(u, err, err_size);
		if (loaded && strlen(err) == len)
			snprintf(err + len, err_size - len, "; nothing was changed");
	}
	return r;
}

/* ---- scopes ----------------------------------------------------------- */

struct maps {
	int scopes, scope_paths, counts, dropped;
};

static void maps_close(struct maps *m)
{
	int *fds[] = { &m->scopes, &m->scope_paths, &m->counts, &m->dropped };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
}

static int maps_open(struct maps *m, char *err, size_t err_size)
{
	*m = (struct maps){ obj_get("scopes"), obj_get("scope_paths"), obj_get("decision_counts"),
			    obj_get("dropped_records") };
	int bad = m->scopes < 0 ? m->scopes : m->scope_paths < 0 ? m->scope_paths
					    : m->counts < 0 ? m->counts : m->dropped;
	if (bad < 0) {
		maps_close(m);
		say(err, err_size, "cannot open the BPF LSM maps pinned in %s: %s", LSM_PIN_DIR,
		    strerror(-bad));
		return bad;
	}
	return 0;
}

/* The entries by path, and the host default (cgroup ""). */
struct entries {
	struct lsm_scope_spec spec[LSM_MAX_SCOPES];
	uint32_t slot[LSM_MAX_SCOPES];
	size_t n;
};

static int entries_read(const struct maps *m, struct entries *e)
{
	struct lsm_cgroup_path key, next;
	struct lsm_scope v;
	__u64 host = LSM_HOST_KEY;

	e->n = 0;
	if (bpf_map_lookup_elem_flags(m->scopes, &host, &v, BPF_F_LOCK) == 0) {
		e->spec[0] = (struct lsm_scope_spec){ .cgroup = "", .policy = v.policy };
		e->slot[0] = LSM_HOST_SLOT;
		e->n = 1;
	} else if (errno != ENOENT) {
		return -errno;
	}
	void *prev = NULL;
	while (bpf_map_get_next_key(m->scope_paths, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem_flags(m->scope_paths, &key, &v, BPF_F_LOCK) < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (e->n == LSM_MAX_SCOPES)
			return -E2BIG;
		snprintf(e->spec[e->n].cgroup, sizeof(e->spec[e->n].cgroup), "%.*s",
			 LSM_PATH_MAX - 1, key.path);
		e->spec[e->n].policy = v.policy;
		e->slot[e->n] = v.slot;
		e->n++;
	}
	return errno == ENOENT ? 0 : -errno;
}

static ssize_t entries_find(const struct entries *e, const char *cgroup)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->spec[i].cgroup, cgroup))
			return (ssize_t)i;
	return -1;
}

static int zero_counts(int fd, uint32_t slot)
{
	int ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0)
		return ncpus;
	cleanup_free void *zeros = calloc((size_t)ncpus, sizeof(struct lsm_counts));
	if (!zeros)
		return -ENOMEM;
	return bpf_map_update_elem(fd, &slot, zeros, BPF_ANY) < 0 ? -errno : 0;
}

/* Delete every cgroup id whose entry uses slot (the current cgroup, and
 * any that was being created while the entry changed). */
static int forget_slot(int scopes_fd, uint32_t slot)
{
	__u64 key, next;
	void *prev = NULL;
	struct lsm_scope v;
	int r = 0;

	while (bpf_map_get_next_key(scopes_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (key == LSM_HOST_KEY)
			continue;
		if (bpf_map_lookup_elem_flags(scopes_fd, &key, &v, BPF_F_LOCK) == 0 &&
		    v.slot == slot && bpf_map_delete_elem(scopes_fd, &key) < 0 && errno != ENOENT)
			r = -errno;
	}
	return r;
}

static int write_entry(const struct maps *m, const struct lsm_scope_spec *s, uint32_t slot)
{
	struct lsm_scope v = { .slot = slot, .policy = s->policy };

	if (!s->cgroup[0]) {
		__u64 host = LSM_HOST_KEY;
		return bpf_map_update_elem(m->scopes, &host, &v, BPF_F_LOCK) < 0 ? -errno : 0;
	}
	struct lsm_cgroup_path key = { 0 };
	snprintf(key.path, sizeof(key.path), "%s", s->cgroup);
	/* By path first: a cgroup created from now on finds it. */
	if (bpf_map_update_elem(m->scope_paths, &key, &v, BPF_F_LOCK) < 0)
		return -errno;
	uint64_t id;
	int r = cgroup_id_of(s->cgroup, &id);
	if (r == -ENOENT)
		return 0; /* not created yet */
	if (r < 0)
		return r;
	return bpf_map_update_elem(m->scopes, &id, &v, BPF_F_LOCK) < 0 ? -errno : 0;
}

static int delete_entry(const struct maps *m, const struct lsm_scope_spec *s, uint32_t slot)
{
	if (!s->cgroup[0]) {
		__u64 host = LSM_HOST_KEY;
		return bpf_map_delete_elem(m->scopes, &host) < 0 && errno != ENOENT ? -errno : 0;
	}
	struct lsm_cgroup_path key = { 0 };
	snprintf(key.path, sizeof(key.path), "%s", s->cgroup);
	if (bpf_map_delete_elem(m->scope_paths, &key) < 0 && errno != ENOENT)
		return -errno;
	return forget_slot(m->scopes, slot);
}

/* A scope as messages name it. */
static const char *scope_name(char *buf, size_t size, const char *cgroup)
{
	if (cgroup[0])
		snprintf(buf, size, "cgroup %s", cgroup);
	else
		snprintf(buf, size, "the host default");
	return buf;
}

/* Make the entries in force exactly *want (slots decided), from *have;
 * *failed is the spec of the first failure.  Stops there, unless
 * undo: putting *have back goes on past a failure (*n_failed counts
 * them) and leaves the counts of every slot as they are. */
static int entries_write(const struct maps *m, const struct entries *have,
			 const struct entries *want, bool undo,
			 const struct lsm_scope_spec **failed,
			 size_t *n_failed)
{
	int r = 0;
	*n_failed = 0;
#define WROTE(spec, e)                                    \
	do {                                              \
		int e_ = (e);                             \
		if (e_ < 0 && (*n_failed)++ == 0) {       \
			r = e_;                           \
			*failed = (spec);                 \
		}                                         \
	} while (0)
	for (size_t i = 0; i < have->n && (undo || r == 0); i++)
		if (entries_find(want, have->spec[i].cgroup) < 0)
			WROTE(&have->spec[i], delete_entry(m, &have->spec[i], have->slot[i]));
	for (size_t i = 0; i < want->n && (undo || r == 0); i++) {
		ssize_t j = entries_find(have, want->spec[i].cgroup);
		if (j >= 0 && !memcmp(&have->spec[j].policy, &want->spec[i].policy,
				      sizeof(struct policy)))
			continue;
		int e = j < 0 && !undo ? zero_counts(m->counts, want->slot[i]) : 0;
		if (e == 0)
			e = write_entry(m, &want->spec[i], want->slot[i]);
		WROTE(&want->spec[i], e);
	}
#undef WROTE
	return r;
}

/* Put specs in force; on failure, put back what was.  *undo_why says
 * why that failed too, or is left empty. */
static int apply_locked(const struct lsm_scope_spec *specs, size_t n, bool exact, char *err,
			size_t err_size, char *undo_why, size_t undo_why_size)
{
	struct maps m;
	int r = maps_open(&m, err, err_size);
	if (r < 0)
		return r;
	cleanup_free struct entries *have = calloc(1, sizeof(*have));
	cleanup_free struct entries *want = calloc(1, sizeof(*want));
	if (!have || !want) {
		r = -ENOMEM;
		say(err, err_size, "out of memory");
		goto out;
	}
	r = entries_read(&m, have);
	if (r < 0) {
		say(err, err_size, "cannot read the BPF LSM scopes: %s", strerror(-r));
		goto out;
	}
	if (!exact)
		*want = *have;
	size_t cgroups = 0;
	for (size_t i = 0; i < want->n; i++)
		cgroups += want->spec[i].cgroup[0] != '\0';
	for (size_t i = 0; i < n; i++) {
		ssize_t j = entries_find(want, specs[i].cgroup);
		if (j >= 0) {
			want->spec[j].policy = specs[i].policy;
			continue;
		}
		/* The host has its slot; the cgroups share the others. */
		if (specs[i].cgroup[0] && cgroups++ == LSM_MAX_SCOPES - 1) {
			r = -E2BIG;
			say(err, err_size, "too many scopes: at most %d cgroup entries",
			    LSM_MAX_SCOPES - 1);
			goto out;
		}
		want->spec[want->n] = specs[i];
		/* A path already in force keeps its slot (and counts). */
		ssize_t k = entries_find(have, specs[i].cgroup);
		want->slot[want->n] = k >= 0 ? have->slot[k] : specs[i].cgroup[0] ? UINT32_MAX
											 : LSM_HOST_SLOT;
		want->n++;
	}
	bool used[LSM_MAX_SCOPES] = { [LSM_HOST_SLOT] = true };
	bool had[LSM_MAX_SCOPES] = { false };
	for (size_t i = 0; i < want->n; i++)
		if (want->slot[i] < LSM_MAX_SCOPES)
			used[want->slot[i]] = true;
	for (size_t i = 0; i < have->n; i++)
		if (have->slot[i] < LSM_MAX_SCOPES)
			had[have->slot[i]] = true;
	for (size_t i = 0; i < want->n; i++) {
		if (want->slot[i] != UINT32_MAX)
			continue;
		/* A slot no entry in force uses, if there is one: putting
		 * those entries back after a failure finds their counts. */
		size_t s = 1;
		while (s < LSM_MAX_SCOPES && (used[s] || had[s]))
			s++;
		if (s == LSM_MAX_SCOPES)
			for (s = 1; used[s]; s++)
				;
		want->slot[i] = (uint32_t)s;
		used[s] = true;
	}
	const struct lsm_scope_spec *failed = NULL, *undo_failed = NULL;
	size_t n_failed, n_undo_failed;
	r = entries_write(&m, have, want, false, &failed, &n_failed);
	if (r < 0) {
		char what[LSM_PATH_MAX + 16];
		scope_name(what, sizeof(what), failed->cgroup);
		if (r == -E2BIG)
			say(err, err_size, "cannot write the BPF LSM scope of %s: a map of the "
			    "BPF LSM program is full", what);
		else
			say(err, err_size, "cannot write the BPF LSM scope of %s: %s", what,
			    strerror(-r));
		/* Put back what was in force: nothing half-applied. */
		int u = entries_write(&m, want, have, true, &undo_failed, &n_undo_failed);
		if (u < 0) {
			char knobs[256], sets[512] = "", which[LSM_PATH_MAX + 16], todo[2048];
			const char *c = undo_failed->cgroup;
			/* An entry in force before, or one this command added. */
			bool old = undo_failed >= have->spec && undo_failed < have->spec + have->n;
			scope_name(what, sizeof(what), c);
			snprintf(which, sizeof(which), "%s%s", c[0] ? "--cgroup " : "--host", c);
			policy_format(&undo_failed->policy, knobs, sizeof(knobs));
			for (char *save = NULL, *k = strtok_r(knobs, " ", &save); k;
			     k = strtok_r(NULL, " ", &save))
				snprintf(sets + strlen(sets), sizeof(sets) - strlen(sets), " --set %s", k);
			if (old)
				snprintf(todo, sizeof(todo),
					 "it is not in force as it was; to put it back, run 'uffdguard "
					 "lsm remove %s' (if 'uffdguard lsm show' lists it), then "
					 "'uffdguard lsm apply %s%s'", which, which, sets);
			else
				snprintf(todo, sizeof(todo),
					 "it may be in force although it was not; remove it with "
					 "'uffdguard lsm remove %s'", which);
			say(undo_why, undo_why_size,
			    "putting back the scopes in force before failed too, for %zu of them "
			    "(%s%s: %s): %s%s", n_undo_failed, n_undo_failed > 1 ? "the first: " : "",
			    what, strerror(-u), todo,
			    n_undo_failed > 1 ? "; 'uffdguard lsm show' lists what is in force"
					      : "; the others are as they were");
		}
	}
out:
	maps_close(&m);
	return r;
}

int lsm_apply(const struct lsm_scope_spec *specs, size_t n, bool exact, char *err,
	      size_t err_size)
{
	struct lsm_support s;

	for (size_t i = 0; i < n; i++) {
		int r = specs[i].cgroup[0] ? cgroup_path_check(specs[i].cgroup, err, err_size) : 0;
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(specs[i].cgroup, specs[j].cgroup)) {
				say(err, err_size, "%s is given twice",
				    specs[i].cgroup[0] ? specs[i].cgroup : "the host default");
				return -EINVAL;
			}
	}
	/* A path that cannot be a cgroup (a component is a file, say) is
	 * refused now, not half-way through the writes. */
	for (size_t i = 0; i < n; i++) {
		uint64_t id;
		int r = specs[i].cgroup[0] ? cgroup_id_of(specs[i].cgroup, &id) : 0;
		if (r < 0 && r != -ENOENT) {
			say(err, err_size, "cgroup %s: %s", specs[i].cgroup, strerror(-r));
			return r;
		}
	}
	lsm_support_probe(&s, true);
	int r = lsm_support_check(&s, err, err_size);
	if (r < 0)
		return r;
	bool created;
	cleanup_close int dir = lock_pin_dir(true, &created, err, err_size);
	if (dir < 0)
		return dir;
	struct load_undo u;
	load_undo_init(&u, created);
	r = ensure_loaded(&u, err, err_size);
	if (r < 0) {
		load_undo_end(&u); /* put back already: the links it held */
		return r;
	}
	char scopes_why[1024] = "";
	r = apply_locked(specs, n, exact, err, err_size, scopes_why, sizeof(scopes_why));
	if (r < 0) {
		/* Maps this command pinned go with the load: their scopes too. */
		bool fresh = u.maps_pinned && !load_replaced(&u);
		for (size_t i = 0; i < N_MAPS; i++)
			fresh &= u.map_new[i];
		size_t len = strlen(err);
		if (scopes_why[0] && !fresh)
			snprintf(err + len, err_size - len, "; %s", scopes_why);
		load_undo_or_say(&u, err, err_size);
		if (strlen(err) == len)
			snprintf(err + len, err_size - len, "; nothing was changed");
	}
	load_undo_end(&u);
	return r;
}

int lsm_remove_scope(const char *cgroup, char *err, size_t err_size)
{
	const char *name = cgroup && cgroup[0] ? cgroup : "";
	cleanup_close int dir = lock_pin_dir(false, NULL, err, err_size);
	if (dir == -ENOENT) {
		say(err, err_size, "no BPF LSM policy is in force");
		return -ENOENT;
	}
	if (dir < 0)
		return dir;
	struct maps m;
	cleanup_free struct entries *have = calloc(1, sizeof(*have));
	int r = have ? maps_open(&m, err, err_size) : -ENOMEM;
	if (r == 0) {
		r = entries_read(&m, have);
		ssize_t i = r == 0 ? entries_find(have, name) : -1;
		if (r < 0) {
			say(err, err_size, "cannot read the BPF LSM scopes: %s", strerror(-r));
		} else if (i < 0) {
			r = -ENOENT;
			say(err, err_size, "%s%s has no BPF LSM policy", name[0] ? "cgroup " : "",
			    name[0] ? name : "the host default");
		} else if ((r = delete_entry(&m, &have->spec[i], have->slot[i])) < 0) {
			say(err, err_size, "cannot remove the scope: %s", strerror(-r));
		}
		maps_close(&m);
	} else if (r == -ENOMEM) {
		say(err, err_size, "out of memory");
	}
	return r;
}

int lsm_remove_all(char *err, size_t err_size)
{
	char path[PATH_MAX];
	cleanup_close int dir = lock_pin_dir(false, NULL, err, err_size);
	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	int r = 0;
	/* The links first: the programs stop deciding before their maps go. */
	for (size_t i = 0; i < N_LINKS; i++) {
		for (int tmp = 0; tmp <= 1; tmp++) {
			snprintf(path, sizeof(path), "%s/%s%s", LSM_PIN_DIR, link_pins[i],
				 tmp ? NEXT_SUFFIX : "");
			if (unlink(path) < 0 && errno != ENOENT && r == 0)
				r = -errno;
		}
	}
	for (size_t i = 0; i < N_MAPS; i++) {
		pin_path(path, sizeof(path), map_pins[i]);
		if (unlink(path) < 0 && errno != ENOENT && r == 0)
			r = -errno;
	}
	if (r == 0 && rmdir(LSM_PIN_DIR) < 0 && errno != ENOENT)
		r = -errno;
	if (r < 0)
		say(err, err_size, "cannot remove %s: %s", LSM_PIN_DIR, strerror(-r));
	return r;
}

/* ---- state ------------------------------------------------------------ */

static uint64_t sum_percpu_u64(int fd, uint32_t key, size_t words, size_t word)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t sum = 0;
	if (ncpus <= 0)
		return 0;
	cleanup_free uint64_t *v = calloc((size_t)ncpus * words, sizeof(uint64_t));
	if (v && bpf_map_lookup_elem(fd, &key, v) == 0)
		for (int c = 0; c < ncpus; c++)
			sum += v[(size_t)c * words + word];
	return sum;
}

static uint32_t link_prog_id(const char *name)
{
	cleanup_close int fd = obj_get(name);
	if (fd < 0)
		return 0;
	struct bpf_link_info info = { 0 };
	__u32 len = sizeof(info);
	return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.prog_id : 0;
}

int lsm_state_read(struct lsm_state *st, char *err, size_t err_size)
{
	*st = (struct lsm_state){ 0 };
	if (access(LSM_PIN_DIR, F_OK) < 0) {
		if (errno == EACCES) {
			say(err, err_size, "cannot read %s: reading the BPF LSM state needs root",
			    LSM_PIN_DIR);
			return -EPERM;
		}
		return 0;
	}
	int dir = open(LSM_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		int e = errno;
		say(err, err_size, "cannot read %s: %s", LSM_PIN_DIR, strerror(e));
		return e == EACCES ? -EPERM : -e;
	}
	close(dir);
	for (size_t i = 0; i < N_LINKS; i++)
		st->pinned |= pinned(link_pins[i]);
	for (size_t i = 0; i < N_MAPS; i++)
		st->pinned |= pinned(map_pins[i]);
	st->prog_id = link_prog_id("uffd_create");
	st->enforcing = st->prog_id != 0;
	struct lsm_format f = { 0 };
	if (read_format(&f) == 0) {
		st->format_version = f.version;
		st->format_ok = f.version == LSM_FORMAT_VERSION;
		st->same_program = st->format_ok && f.object_id == object_id();
	}
	if (!st->format_ok)
		return 0; /* not ours to read */

	struct maps m;
	int r = maps_open(&m, err, err_size);
	if (r < 0)
		return r;
	cleanup_free struct entries *e = calloc(1, sizeof(*e));
	r = e ? entries_read(&m, e) : -ENOMEM;
	if (r == 0 && e->n) {
		st->scopes = calloc(e->n, sizeof(*st->scopes));
		r = st->scopes ? 0 : -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < e->n; i++) {
		struct lsm_scope_state *s = &st->scopes[i];
		snprintf(s->cgroup, sizeof(s->cgroup), "%s", e->spec[i].cgroup);
		s->policy = e->spec[i].policy;
		s->slot = e->slot[i];
		if (s->cgroup[0] && cgroup_id_of(s->cgroup, &s->cgroup_id) < 0)
			s->cgroup_id = 0;
		for (size_t k = 0; k < LSM_N_REASONS; k++)
			s->counts[k] = sum_percpu_u64(m.counts, s->slot, LSM_N_REASONS, k);
		st->n_scopes++;
	}
	st->dropped = sum_percpu_u64(m.dropped, 0, 1, 0);
	if (r < 0)
		say(err, err_size, "cannot read the BPF LSM scopes: %s", strerror(-r));
	maps_close(&m);
	return r;
}

void lsm_state_free(struct lsm_state *st)
{
	free(st->scopes);
	st->scopes = NULL;
	st->n_scopes = 0;
}

/* ---- names ------------------------------------------------------------ */

const char *lsm_entry_name(enum lsm_entry e)
{
	static const char *const names[] = {
		[LSM_ENTRY_SYSCALL] = "syscall",      [LSM_ENTRY_I386_SYSCALL] = "i386 syscall",
		[LSM_ENTRY_X32_SYSCALL] = "x32 syscall", [LSM_ENTRY_IOCTL] = "ioctl",
		[LSM_ENTRY_COMPAT_IOCTL] = "compat ioctl", [LSM_ENTRY_X32_IOCTL] = "x32 ioctl",
		[LSM_ENTRY_FORK_EVENT] = "fork event", [LSM_ENTRY_UNKNOWN] = "unknown",
	};
	return (unsigned)e < LSM_N_ENTRIES ? names[e] : "unknown";
}

const char *lsm_entry_call(enum lsm_entry e)
{
	switch (e) {
	case LSM_ENTRY_SYSCALL:
	case LSM_ENTRY_I386_SYSCALL:
	case LSM_ENTRY_X32_SYSCALL:
		return "userfaultfd";
	case LSM_ENTRY_IOCTL:
	case LSM_ENTRY_COMPAT_IOCTL:
	case LSM_ENTRY_X32_IOCTL:
		return "USERFAULTFD_IOC_NEW";
	case LSM_ENTRY_FORK_EVENT:
		return "UFFD_EVENT_FORK";
	default:
		return "?";
	}
}

const char *lsm_entry_abi(enum lsm_entry e)
{
	switch (e) {
	case LSM_ENTRY_SYSCALL:
	case LSM_ENTRY_IOCTL:
		return "x86_64";
	case LSM_ENTRY_I386_SYSCALL:
	case LSM_ENTRY_COMPAT_IOCTL:
		return "i386";
	case LSM_ENTRY_X32_SYSCALL:
	case LSM_ENTRY_X32_IOCTL:
		return "x32";
	default:
		return "";
	}
}

const char *lsm_reason_text(enum lsm_reason r)
{
	if (r == LSM_REASON_FORK_EVENT)
		return "a fork event copies a context decided when it was created";
	if (r == LSM_REASON_UNKNOWN_ENTRY)
		return "created through neither userfaultfd(2) nor USERFAULTFD_IOC_NEW";
	return policy_reason_text((enum policy_reason)r);
}

const char *lsm_reason_verdict(enum lsm_reason r)
{
	int e = lsm_reason_errno(r);
	return e == EPERM ? "eperm" : e == EINVAL ? "einval" : "allow";
}

const char *lsm_reason_key(enum lsm_reason r)
{
	static const char *const keys[LSM_N_REASONS] = {
		[POLICY_REASON_DEVICE_NOT_COVERED] = "device_not_covered",
		[POLICY_REASON_UNPRIVILEGED_DENIED] = "unprivileged_denied",
		[POLICY_REASON_FLAG_REQUIRED] = "flag_required",
		[POLICY_REASON_UNKNOWN_FLAGS] = "unknown_flags",
		[POLICY_REASON_PRIVILEGED] = "privileged",
		[POLICY_REASON_FLAG_SET] = "flag_set",
		[POLICY_REASON_UNPRIVILEGED_ALLOWED] = "unprivileged_allowed",
		[LSM_REASON_FORK_EVENT] = "fork_event",
		[LSM_REASON_UNKNOWN_ENTRY] = "unknown_entry",
	};
	return (unsigned)r < LSM_N_REASONS && keys[r] ? keys[r] : "unknown";
}

/* ---- audit records ---------------------------------------------------- */

struct follow {
	int (*fn)(const struct lsm_event *ev, void *arg);
	void *arg;
	int scope_paths; /* to name the scope of a slot */
	int64_t boot_to_real_ns;
	uint64_t last_cgroup_id;
	char last_cgroup[4096];
	int stop;
};

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void scope_of_slot(int fd, uint32_t slot, char *buf, size_t size)
{
	struct lsm_cgroup_path key, next;
	struct lsm_scope v;
	void *prev = NULL;

	snprintf(buf, size, "%s", "");
	if (slot == LSM_HOST_SLOT)
		return;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem_flags(fd, &key, &v, BPF_F_LOCK) == 0 && v.slot == slot) {
			snprintf(buf, size, "%.*s", LSM_PATH_MAX - 1, key.path);
			return;
		}
	}
	snprintf(buf, size, "(removed)");
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct follow *fw = ctx;
	struct lsm_event ev = { 0 };

	if (size < sizeof(ev.rec))
		return 0;
	memcpy(&ev.rec, data, sizeof(ev.rec));
	ev.rec.comm[sizeof(ev.rec.comm) - 1] = '\0';
	ev.rec.exe[sizeof(ev.rec.exe) - 1] = '\0';
	ev.realtime_ns = (int64_t)ev.rec.boot_ns + fw->boot_to_real_ns;
	if (ev.rec.cgroup_id != fw->last_cgroup_id) {
		if (cgroup_path_of(ev.rec.cgroup_id, fw->last_cgroup, sizeof(fw->last_cgroup)) < 0)
			fw->last_cgroup[0] = '\0';
		fw->last_cgroup_id = ev.rec.cgroup_id;
	}
	snprintf(ev.cgroup, sizeof(ev.cgroup), "%s", fw->last_cgroup);
	scope_of_slot(fw->scope_paths, ev.rec.slot, ev.scope, sizeof(ev.scope));
	int r = fw->fn(&ev, fw->arg);
	if (r) {
		fw->stop = r;
		return r;
	}
	return 0;
}

int lsm_audit_follow(int (*fn)(const struct lsm_event *ev, void *arg), void *arg,
		     volatile sig_atomic_t *stop, char *err, size_t err_size)
{
	struct follow fw = { .fn = fn, .arg = arg, .last_cgroup_id = UINT64_MAX };
	int ring = -1, dropped = -1, lock = -1, r;
	struct ring_buffer *rb = NULL;

	if (mkdir(AUDIT_LOCK_DIR, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		say(err, err_size, "cannot create %s: %s", AUDIT_LOCK_DIR, strerror(-r));
		return r;
	}
	lock = open(AUDIT_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		if (r == -EWOULDBLOCK)
			say(err, err_size,
			    "another reader is following the BPF LSM audit records (it holds %s); "
			    "the records go to one reader only", AUDIT_LOCK);
		else
			say(err, err_size, "cannot lock %s: %s", AUDIT_LOCK, strerror(-r));
		if (lock >= 0)
			close(lock);
		return r == -EWOULDBLOCK ? -EBUSY : r;
	}
	ring = obj_get("audit_records");
	dropped = obj_get("dropped_records");
	fw.scope_paths = obj_get("scope_paths");
	if (ring < 0 || dropped < 0 || fw.scope_paths < 0) {
		r = ring < 0 ? ring : dropped < 0 ? dropped : fw.scope_paths;
		if (r == -ENOENT)
			say(err, err_size, "no BPF LSM policy is in force (nothing pinned in %s): "
			    "apply one with 'uffdguard lsm apply'", LSM_PIN_DIR);
		else
			say(err, err_size, "cannot open the BPF LSM audit records: %s", strerror(-r));
		goto out;
	}
	capture_start();
	rb = ring_buffer__new(ring, on_record, &fw, NULL);
	if (!rb) {
		r = -errno;
		say(err, err_size, "cannot read the BPF LSM audit records: %s", strerror(-r));
		goto out;
	}
	uint64_t seen = 0;
	bool first = true;
	r = 0;
	while (!*stop && !fw.stop) {
		fw.boot_to_real_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME);
		int n = ring_buffer__poll(rb, 1000);
		if (n < 0 && n != -EINTR) {
			r = n;
			say(err, err_size, "reading the BPF LSM audit records: %s", strerror(-r));
			break;
		}
		/* Report drops as they are counted, and those before we came. */
		uint64_t d = sum_percpu_u64(dropped, 0, 1, 0);
		if (d > seen || (first && d)) {
			struct lsm_event ev = { .realtime_ns = clock_ns(CLOCK_REALTIME),
						.dropped = d - seen };
			if ((r = fn(&ev, arg)) != 0)
				break;
			seen = d;
		}
		first = false;
		if (!pinned("audit_records")) {
			r = -ENOENT;
			say(err, err_size, "the BPF LSM program was removed");
			break;
		}
	}
	if (fw.stop)
		r = fw.stop;
out:
	ring_buffer__free(rb);
	if (ring >= 0)
		close(ring);
	if (dropped >= 0)
		close(dropped);
	if (fw.scope_paths >= 0)
		close(fw.scope_paths);
	close(lock);
	return r;
}
