// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard sysctl: the policy through the kernel's own knobs, where the
 * kernel can express it.  Since Linux 5.11 vm.unprivileged_userfaultfd=0
 * is user-mode-only and 1 is allow; a kernel with the patch series in
 * kernel/ adds 2 = deny and
 * vm.unprivileged_userfaultfd_covers_dev, which makes /dev/userfaultfd
 * follow the first knob.  Elsewhere "deny" and the
 * device have no native setting, and the command says what to use instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <json-c/json.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "atomic-file.h"
#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "sysctl.h"
#include "libuffd.h"
#include "policy.h"

enum {
	EXIT_FAILED = 1,
	EXIT_REFUSED = 3,
	EXIT_WOULD_CHANGE = 4,
};

static const struct exit_code sysctl_exit_codes[] = {
	{ 0, "done: the knobs (and the drop-in) are as asked; with --check, nothing to change" },
	{ EXIT_FAILED, "failed; nothing was changed" },
	{ EXIT_REFUSED, "refused (not expressible on this kernel); nothing was changed" },
	{ EXIT_WOULD_CHANGE, "--check: apply would change something" },
	{ 0, NULL },
};

#define DEFAULT_DROPIN "/etc/sysctl.d/60-uffdguard.conf"
#define MAX_SETS 8

/* What enforces a policy the knobs cannot express, widest scope first,
 * each command as it runs.  `args` is "--policy P [--set K=V]..."; with
 * `exemption` (ignore_cap_sys_ptrace=0 asked), run needs supervise mode. */
static void print_instead(FILE *out, const char *args, bool exemption)
{
	fprintf(out,
		"  the whole host (BPF LSM):  uffdguard lsm apply --host %s\n"
		"  one process tree:          uffdguard run %s%s -- COMMAND\n"
		"  containers (runc, crun, containerd; Docker and Podman: uffdguard-profile(1)):\n"
		"    uffdguard profile %s --format oci \\\n"
		"      --base " UFFDGUARD_DATADIR "/containerd-default.json -o uffd.json\n",
		args, exemption ? "--mode supervise " : "", args, args);
}

/* "--policy NAME --set K=V ...", as the user gave them. */
static void policy_args(char *buf, size_t size, const char *name, const char *const *sets,
			size_t n_sets)
{
	int used = snprintf(buf, size, "--policy %s", name);
	for (size_t i = 0; i < n_sets && used >= 0 && (size_t)used < size; i++)
		used += snprintf(buf + used, size - (size_t)used, " --set %s", sets[i]);
}

static void sysctl_usage(FILE *out)
{
	fputs("Usage: uffdguard sysctl show [--json]\n"
	      "       uffdguard sysctl apply POLICY [--set cover_device=0|1] [--check] [--json]\n"
	      "                              [--persist[=FILE] | --persist FILE] [--force]\n\n"
	      "Show or set vm.unprivileged_userfaultfd, the kernel's own knob, and on a\n"
	      "kernel built with the patch series that uffdguard's source carries in its\n"
	      "directory kernel/ (it adds 2 = deny) also vm.unprivileged_userfaultfd_covers_dev.\n"
	      "POLICY is named as the kernel numbers the knob: user-mode-only (0) or\n"
	      "allow (1) on Linux 5.11 or later, deny (2) on a kernel with the series.\n"
	      "Elsewhere deny is refused and /dev/userfaultfd follows only its file\n"
	      "permissions; ignore_cap_sys_ptrace=1 is refused but under allow (the kernel\n"
	      "always exempts CAP_SYS_PTRACE).  For those, use uffdguard lsm, run or\n"
	      "profile, as the refusal says.\n\n"
	      "Options of show:\n"
	      "  --json                the same as one JSON object\n"
	      "Options of apply:\n"
	      "  --set cover_device=V  1 (the default): on a kernel with the series,\n"
	      "                        /dev/userfaultfd follows the knob\n"
	      "                        (vm.unprivileged_userfaultfd_covers_dev=1); 0 leaves\n"
	      "                        it to its file permissions\n"
	      "  --check               change nothing: say what apply would change (and\n"
	      "                        whether it needs root), and exit 4 if anything,\n"
	      "                        0 if nothing\n"
	      "  --json                report as one JSON object (\"changed\": true/false)\n"
	      "  --persist [FILE]      also write a sysctl.d drop-in, atomically\n"
	      "                        (default " DEFAULT_DROPIN "; FILE\n"
	      "                        after POLICY, or --persist=FILE); a FILE that\n"
	      "                        is a symbolic link (say a mask to /dev/null), a\n"
	      "                        directory or another non-regular file, or whose\n"
	      "                        directory is missing or not writable, is refused\n"
	      "                        and nothing is changed\n"
	      "  --force               write the knob although this kernel gives it\n"
	      "                        another meaning (before 5.11)\n"
	      "  --assume-kernel REL   act as on kernel release REL, as uname -r gives it\n"
	      "                        (testing)\n"
	      "  -h, --help            show this help\n"
	      "The last line of apply's text is \"changed\" or \"unchanged\" (with --check:\n"
	      "\"would change\" or \"unchanged\").\n",
	      out);
}

static const char *release_now(char *buf, size_t size)
{
	struct utsname u;
	uname(&u);
	snprintf(buf, size, "%s", u.release);
	return buf;
}

/* Standard output written in full, or a failure: a report that did not
 * reach its reader is no report. */
static int finish_output(int status)
{
	if (fflush(stdout) == EOF || ferror(stdout))
		die(EXIT_FAILED, "cannot write to standard output: %s", strerror(errno));
	return status;
}

static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* sysctl.d(5) accepts "vm/unprivileged_userfaultfd" as well.  The name
 * must end there: the first knob's name begins the second's. */
static size_t sysctl_name_length(const char *s)
{
	static const char *const names[] = { SYSCTL_COVERS_DEV_NAME, SYSCTL_NAME };

	for (size_t n = 0; n < 2; n++) {
		size_t i = 0;
		for (; names[n][i]; i++)
			if (s[i] != names[n][i] && !(names[n][i] == '.' && s[i] == '/'))
				break;
		if (!names[n][i] && (s[i] == '=' || s[i] == ' ' || s[i] == '\t'))
			return i;
	}
	return 0;
}

/* Each line of the file that sets one of the knobs, into `list` as
 * {file, name, value}. */
static void settings_in(const char *path, json_object *list)
{
	cleanup_file FILE *f = fopen(path, "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t-");
		size_t len = sysctl_name_length(s);
		if (!len)
			continue;
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)len, s);
		for (char *c = name; *c; c++)
			*c = *c == '/' ? '.' : *c;
		s += len;
		s += strspn(s, " \t");
		if (*s != '=')
			continue;
		s += 1 + strspn(s + 1, " \t");
		s[strcspn(s, " \t\r\n")] = '\0';
		json_object *o = json_object_new_object();
		json_object_object_add(o, "file", json_object_new_string(path));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "value", json_object_new_string(s));
		json_object_array_add(list, o);
	}
}

/* Settings of the knobs in the sysctl configuration files, directory by
 * directory.  systemd-sysctl applies the *.conf files of all of them in
 * the order of their names (a name in /etc hides it in the others);
 * Debian links /etc/sysctl.conf in as /etc/sysctl.d/99-sysctl.conf. */
static json_object *persisted_settings(void)
{
	static const char *const patterns[] = {
		"/etc/sysctl.conf",          "/etc/sysctl.d/*.conf",       "/run/sysctl.d/*.conf",
		"/usr/local/lib/sysctl.d/*.conf", "/usr/lib/sysctl.d/*.conf", "/lib/sysctl.d/*.conf",
	};
	json_object *list = json_object_new_array();

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;
		if (glob(patterns[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++)
			settings_in(g.gl_pathv[j], list);
		globfree(&g);
	}
	return list;
}

/* What show reports, as JSON; the text is written from it. */
static json_object *show_report(const char *rel, bool new_sem, int v, int cov)
{
	json_object *o = json_object_new_object(), *knobs = json_object_new_array();
	json_object *k = json_object_new_object();
	struct stat st;

	json_object_object_add(o, "kernel", json_object_new_string(rel));
	json_object_object_add(o, "semantics",
			       json_object_new_string(new_sem ? "5.11+" : "pre-5.11"));
	json_object_object_add(k, "name", json_object_new_string(SYSCTL_NAME));
	json_object_object_add(k, "value", json_object_new_int(v));
	json_object_object_add(k, "policy",
			       json_object_new_string(sysctl_policy_name(v, new_sem)));
	json_object_object_add(k, "meaning", json_object_new_string(sysctl_meaning(v, new_sem)));
	json_object_array_add(knobs, k);
	if (cov >= 0) {
		k = json_object_new_object();
		json_object_object_add(k, "name", json_object_new_string(SYSCTL_COVERS_DEV_NAME));
		json_object_object_add(k, "value", json_object_new_int(cov));
		json_object_object_add(k, "meaning",
				       json_object_new_string(sysctl_covers_dev_meaning(cov)));
		json_object_array_add(knobs, k);
	}
	json_object_object_add(o, "knobs", knobs);
	json_object_object_add(o, "deny_expressible", json_object_new_boolean(new_sem && cov >= 0));
	json_object_object_add(o, "persisted", persisted_settings());
	json_object *dev = NULL;
	if (stat(LIBUFFD_DEVICE_PATH, &st) == 0) {
		dev = json_object_new_object();
		json_object_object_add(dev, "path", json_object_new_string(LIBUFFD_DEVICE_PATH));
		json_object_object_add(dev, "uid", json_object_new_int64(st.st_uid));
		json_object_object_add(dev, "gid", json_object_new_int64(st.st_gid));
		json_object_object_add(dev, "mode", json_object_new_int(st.st_mode & 07777));
		json_object_object_add(dev, "follows_knob", json_object_new_boolean(cov == 1));
	}
	json_object_object_add(o, "device", dev);
	return o;
}

static int sysctl_show(bool json)
{
	char rel[65];
	release_now(rel, sizeof(rel));
	bool new_sem = sysctl_new_semantics(rel);
	int v = sysctl_read(), cov = sysctl_covers_dev_read();

	if (v < 0) {
		die(EXIT_FAILED, "%s: %s%s", SYSCTL_PATH, strerror(-v),
		    v == -ENOENT ? " (a kernel without userfaultfd)" : "");
	}
	json_object *o = show_report(rel, new_sem, v, cov);
	if (json) {
		print_json(o);
		return finish_output(0);
	}
	printf("%s = %d\n", SYSCTL_NAME, v);
	printf("  policy:     %s: %s\n", sysctl_policy_name(v, new_sem), sysctl_meaning(v, new_sem));
	if (cov >= 0)
		printf("%s = %d\n  meaning:    %s\n", SYSCTL_COVERS_DEV_NAME, cov,
		       sysctl_covers_dev_meaning(cov));
	printf("  kernel:     Linux %s (%s meaning of the knob%s)\n", rel,
	       new_sem ? "the 5.11+" : "the pre-5.11",
	       new_sem && cov >= 0 ? "; 2 denies: the kernel has the patch series in uffdguard's source" : "");
	json_object *list = json_object_object_get(o, "persisted");
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *e = json_object_array_get_idx(list, i);
		printf("  persisted:  %s sets %s = %s\n",
		       json_object_get_string(json_object_object_get(e, "file")),
		       json_object_get_string(json_object_object_get(e, "name")),
		       json_object_get_string(json_object_object_get(e, "value")));
	}
	if (!json_object_array_length(list))
		printf("  persisted:  in no sysctl.d file (the kernel's default applies at boot)\n");
	json_object *dev = json_object_object_get(o, "device");
	if (dev && cov != 1)
		printf("  device:     %s (owner %d, group %d, mode %04o) is not governed by the knob:\n"
		       "              whoever can open it may handle kernel faults.\n",
		       LIBUFFD_DEVICE_PATH, json_object_get_int(json_object_object_get(dev, "uid")),
		       json_object_get_int(json_object_object_get(dev, "gid")),
		       json_object_get_int(json_object_object_get(dev, "mode")));
	else if (dev)
		printf("  device:     %s follows the knob\n", LIBUFFD_DEVICE_PATH);
	json_object_put(o);
	return finish_output(0);
}

/* One knob apply sets: its value before, the one asked for. */
struct knob_plan {
	const char *name, *path;
	int (*write)(int value);
	int before, after;
	const char *meaning;
};

/* The drop-in: the knobs apply sets, in the order it sets them. */
static void dropin_text(char *buf, size_t size, const char *policy, const struct knob_plan *k,
			int n)
{
	int used = snprintf(buf, size, "# Written by uffdguard sysctl apply %s.\n", policy);
	for (int i = 0; i < n && used < (int)size; i++)
		used += snprintf(buf + used, size - (size_t)used, "# %s\n%s = %d\n", k[i].meaning,
				 k[i].name, k[i].after);
}

/* Whether path holds exactly text (a missing or unreadable file does not). */
static bool file_holds(const char *path, const char *text)
{
	char buf[2048];
	cleanup_file FILE *f = fopen(path, "re");

	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return !ferror(f) && n < sizeof(buf) - 1 && !strcmp(buf, text);
}

/* Put back the knobs written so far, after a later step failed. */
static void undo(const struct knob_plan *k, int written)
{
	while (written-- > 0)
		if (k[written].write(k[written].before) < 0)
			cli_error("could not restore %s to %d: set it by hand", k[written].name,
				  k[written].before);
}

static int sysctl_apply(int argc, char **argv)
{
	const char *name = NULL, *persist_path = NULL, *release = NULL, *sets[MAX_SETS];
	size_t n_sets = 0;
	bool force = false, check = false, json = false;
	/* "--persist FILE POLICY": FILE was taken for the policy. */
	int bare_persist = -1;
	bool name_after_persist = false;
	char rel[65], err[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--force")) {
			force = true;
		} else if (!strcmp(a, "--check")) {
			check = true;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strncmp(a, "--persist=", 10)) {
			if (!a[10])
				usage_error("--persist=: empty file name");
			persist_path = a + 10;
		} else if (!strcmp(a, "--persist")) {
			/* An optional FILE follows, once the policy is known. */
			persist_path = DEFAULT_DROPIN;
			if (name && i + 1 < argc && argv[i + 1][0] != '-')
				persist_path = argv[++i];
			else if (!name)
				bare_persist = i;
		} else if (!strcmp(a, "--set") || !strcmp(a, "-s")) {
			if (i + 1 >= argc)
				usage_error("option '%s' needs an argument", a);
			if (n_sets == MAX_SETS)
				usage_error("more than %d --set options", MAX_SETS);
			sets[n_sets++] = argv[++i];
		} else if (!strcmp(a, "--assume-kernel")) {
			int ma, mi;
			if (i + 1 >= argc)
				usage_error("option '--assume-kernel' needs an argument");
			release = argv[++i];
			if (!sysctl_parse_release(release, &ma, &mi))
				usage_error("--assume-kernel: '%s' is not a kernel release: give it "
					    "as uname -r does (5.10, 6.1.0-28-amd64)",
					    release);
		} else if (a[0] == '-') {
			usage_error("unknown option '%s'", a);
		} else if (!name) {
			name = a;
			name_after_persist = bare_persist == i - 1;
		} else if (name_after_persist) {
			usage_error("'%s' after --persist was taken for the POLICY: give FILE after "
				    "POLICY, or use --persist=FILE",
				    name);
		} else {
			usage_error("unexpected argument '%s'", a);
		}
	}
	if (!name)
		usage_error("apply needs a POLICY: user-mode-only, allow or deny");
	struct policy p;
	if (policy_build(name, sets, n_sets, &p, err, sizeof(err)) < 0) {
		if (name_after_persist)
			usage_error("%s ('%s' follows --persist: give FILE after POLICY, or use "
				    "--persist=FILE)",
				    err, name);
		usage_error("%s", err);
	}
	char args[512];
	policy_args(args, sizeof(args), name, sets, n_sets);
	const char *knob = sysctl_unexpressed_knob(&p);
	if (knob) {
		cli_error("refusing: %s cannot express %s=1:\n"
			  "  the kernel always lets a process with CAP_SYS_PTRACE create any\n"
			  "  userfaultfd descriptor, whatever the knob says.  To hold such processes\n"
			  "  to the policy too, use uffdguard's own enforcement:",
			  SYSCTL_NAME, knob);
		print_instead(stderr, args, false); /* the sets exempt nobody here */
		return EXIT_REFUSED;
	}
	if (!release)
		release = release_now(rel, sizeof(rel));
	bool new_sem = sysctl_new_semantics(release);
	/* The series adds both: the second knob says the first takes 2. */
	int cov = sysctl_covers_dev_read();
	bool series = new_sem && cov >= 0;

	if (!new_sem && !force) {
		die(EXIT_REFUSED,
		    "refusing: on Linux %s (before 5.11) %s has another meaning:\n"
		    "  0 denies userfaultfd(2) to processes without CAP_SYS_PTRACE, 1 allows it to all,\n"
		    "  and the kernel has no UFFD_USER_MODE_ONLY.  Pass --force to set it with that\n"
		    "  meaning (allow = 1, deny = 0).",
		    release, SYSCTL_NAME);
	}
	const char *preset = policy_name(&p);
	int value = sysctl_value(&p, new_sem, series);
	if (value < 0 && new_sem) {
		cli_error("refusing: %s cannot express deny on Linux %s: since 5.11\n"
			  "  its 0 lets unprivileged processes create user-mode-only descriptors;\n"
			  "  only a kernel built with the patch series that uffdguard's source\n"
			  "  carries in its directory kernel/ (it adds 2 = deny and %s)\n"
			  "  denies them altogether, and this one lacks it.\n"
			  "  The closest native setting is user-mode-only.  To deny unprivileged\n"
			  "  callers here, use uffdguard's own enforcement:",
			  SYSCTL_NAME, release, SYSCTL_COVERS_DEV_NAME);
		print_instead(stderr, args, cli_sets_ask_exemption(sets, n_sets));
		return EXIT_REFUSED;
	} else if (value < 0) {
		die(EXIT_REFUSED,
		    "refusing: Linux %s has no UFFD_USER_MODE_ONLY, so %s cannot\n"
		    "  express user-mode-only (its 0 would deny unprivileged callers altogether).",
		    release, SYSCTL_NAME);
	}

	struct knob_plan knobs[2];
	int n = 0, now = sysctl_read();
	if (now < 0)
		die(EXIT_FAILED, "cannot read %s: %s%s", SYSCTL_PATH, strerror(-now),
		    now == -ENOENT ? " (a kernel without userfaultfd)" : "");
	knobs[n++] = (struct knob_plan){ SYSCTL_NAME, SYSCTL_PATH, sysctl_write, now, value,
					  sysctl_meaning(value, new_sem) };
	if (series)
		knobs[n++] = (struct knob_plan){ SYSCTL_COVERS_DEV_NAME, SYSCTL_COVERS_DEV_PATH,
						  sysctl_covers_dev_write, cov, p.cover_device ? 1 : 0,
						  sysctl_covers_dev_meaning(p.cover_device ? 1 : 0) };

	/* Everything that can be checked is, before anything is written:
	 * nothing changes unless everything will. */
	char text[1024], why[ATOMIC_FILE_REFUSAL_SIZE], needs_root[1024] = "";
	bool dropin_changes = false;
	if (persist_path) {
		int ret = atomic_file_check(persist_path);
		if (ret < 0 && atomic_file_refusal(persist_path, ret, why, sizeof(why)))
			die(EXIT_FAILED, "not applied: %s", why);
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", persist_path);
		if (check && (ret == -EACCES || ret == -EPERM)) {
			/* A dry run by a user: say that apply needs root. */
			snprintf(needs_root, sizeof(needs_root), "cannot write %s in %s: %s",
				 persist_path, dirname(dir), strerror(-ret));
		} else if (ret < 0) {
			die(EXIT_FAILED, "not applied: cannot write %s in %s: %s%s", persist_path,
			    dirname(dir), strerror(-ret),
			    ret == -ENOENT ? " (create the directory first)" : "");
		}
		dropin_text(text, sizeof(text), preset, knobs, n);
		dropin_changes = !file_holds(persist_path, text);
		if (!dropin_changes)
			needs_root[0] = '\0'; /* nothing to write */
	}
	bool changes = dropin_changes;
	for (int i = 0; i < n; i++) {
		changes |= knobs[i].before != knobs[i].after;
		if (check && !needs_root[0] && knobs[i].before != knobs[i].after &&
		    access(knobs[i].path, W_OK) < 0 && (errno == EACCES || errno == EPERM))
			snprintf(needs_root, sizeof(needs_root), "cannot write %s: %s", knobs[i].path,
				 strerror(errno));
	}

	int written = 0;
	for (; !check && written < n; written++) {
		if (knobs[written].before == knobs[written].after)
			continue;
		int ret = knobs[written].write(knobs[written].after);
		if (ret < 0) {
			undo(knobs, written);
			die(ret == -EINVAL ? EXIT_REFUSED : EXIT_FAILED,
			    "not applied: cannot write %s = %d: %s%s", knobs[written].name,
			    knobs[written].after, strerror(-ret),
			    ret == -EACCES || ret == -EPERM ? " (this needs root)"
			    : ret == -EINVAL		    ? " (this kernel does not accept the value)"
							    : "");
		}
	}
	if (!check && dropin_changes) {
		int ret = write_file_atomic(persist_path, text, 0644);
		if (ret < 0) {
			undo(knobs, written);
			if (atomic_file_refusal(persist_path, ret, why, sizeof(why)))
				die(EXIT_FAILED, "not applied: %s", why);
			die(EXIT_FAILED, "not applied: %s could not be written: %s", persist_path,
			    strerror(-ret));
		}
	}

	const char *result = !changes ? "unchanged" : check ? "would change" : "changed";
	bool device_governed = series && p.cover_device;
	if (json) {
		json_object *o = json_object_new_object(), *list = json_object_new_array();
		json_object_object_add(o, "policy", json_object_new_string(preset));
		json_object_object_add(o, "check", json_object_new_boolean(check));
		json_object_object_add(o, "changed", json_object_new_boolean(changes));
		json_object_object_add(o, "result", json_object_new_string(result));
		for (int i = 0; i < n; i++) {
			json_object *k = json_object_new_object();
			json_object_object_add(k, "name", json_object_new_string(knobs[i].name));
			json_object_object_add(k, "before", json_object_new_int(knobs[i].before));
			json_object_object_add(k, "after", json_object_new_int(knobs[i].after));
			json_object_object_add(k, "meaning", json_object_new_string(knobs[i].meaning));
			json_object_array_add(list, k);
		}
		json_object_object_add(o, "knobs", list);
		json_object *d = NULL;
		if (persist_path) {
			d = json_object_new_object();
			json_object_object_add(d, "path", json_object_new_string(persist_path));
			json_object_object_add(d, "changed", json_object_new_boolean(dropin_changes));
		}
		json_object_object_add(o, "persist", d);
		json_object_object_add(o, "device_follows_knob",
				       json_object_new_boolean(device_governed));
		/* --check: why apply, as this user, would fail (null: it would not). */
		json_object_object_add(o, "needs_root",
				       needs_root[0] ? json_object_new_string(needs_root) : NULL);
		print_json(o);
		return finish_output(check && changes ? EXIT_WOULD_CHANGE : 0);
	}
	for (int i = 0; i < n; i++) {
		printf("%s = %d", knobs[i].name, knobs[i].after);
		if (i == 0)
			printf(" (%s)", preset);
		printf(": %s", knobs[i].meaning);
		if (knobs[i].before != knobs[i].after)
			printf(" (%s %d)\n", check ? "now" : "was", knobs[i].before);
		else
			printf(" (already)\n");
	}
	if (persist_path)
		printf("%s %s\n", dropin_changes ? check ? "would persist in" : "persisted in"
						 : "already persisted in",
		       persist_path);
	/* Under allow the device can do nothing the syscall cannot. */
	if (!device_governed && strcmp(preset, "allow")) {
		char device_args[64];
		snprintf(device_args, sizeof(device_args), "--policy %s", preset);
		printf("note: %s is not governed by the knob%s; to cover it too:\n",
		       LIBUFFD_DEVICE_PATH,
		       series ? " (--set cover_device=0)" : " on this kernel");
		print_instead(stdout, device_args, false);
	}
	if (needs_root[0])
		printf("note: apply needs root: %s\n", needs_root);
	printf("%s\n", result);
	return finish_output(check && changes ? EXIT_WOULD_CHANGE : 0);
}

static int sysctl_run(int argc, char **argv)
{
	if (argc < 2)
		usage_error("missing action: show or apply");
	const char *action = argv[1];
	if (!strcmp(action, "--help") || !strcmp(action, "-h")) {
		cli_usage(stdout);
		return 0;
	}
	if (!strcmp(action, "show")) {
		bool json = false;
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
				cli_usage(stdout);
				return 0;
			} else if (!strcmp(argv[i], "--json")) {
				json = true;
			} else if (argv[i][0] == '-') {
				usage_error("unknown option '%s'", argv[i]);
			} else {
				usage_error("unexpected argument '%s'", argv[i]);
			}
		}
		return sysctl_show(json);
	}
	if (!strcmp(action, "apply"))
		return sysctl_apply(argc - 1, argv + 1);
	usage_error("unknown action '%s': show or apply", action);
}

const struct subcommand cmd_sysctl = {
	.name = "sysctl",
	.summary = "show or set the kernel's own knobs, where they can express the policy",
	.run = sysctl_run,
	.usage = sysctl_usage,
	.exit_codes = sysctl_exit_codes,
	.exit_failure = EXIT_FAILED,
};
