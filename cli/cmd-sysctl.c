// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard sysctl: the policy through the kernel's own knob, where the
 * kernel can express it.  Since Linux 5.11 vm.unprivileged_userfaultfd=0
 * is user-mode-only and 1 is allow; "deny" and /dev/userfaultfd have no
 * native setting, and the command says what to use instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
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
#include "sysctl.h"
#include "libuffd.h"
#include "policy.h"

enum {
	EXIT_FAILED = 1,
	EXIT_REFUSED = 3,
};

static const struct exit_code sysctl_exit_codes[] = {
	{ 0, "done" },
	{ EXIT_FAILED, "failed" },
	{ EXIT_REFUSED, "refused (not expressible on this kernel)" },
	{ 0, NULL },
};

#define DEFAULT_DROPIN "/etc/sysctl.d/60-uffdguard.conf"

/* What enforces a policy the knob cannot express. */
static void print_instead(FILE *out, const char *policy)
{
	fprintf(out,
		"  for one process tree:  uffdguard run --policy %s -- COMMAND\n"
		"  for containers:        uffdguard profile --policy %s (an OCI seccomp profile)\n",
		policy, policy);
}

static void sysctl_usage(FILE *out)
{
	fputs("Usage: uffdguard sysctl show\n"
	      "       uffdguard sysctl apply POLICY [--persist[=FILE] | --persist FILE] [--force]\n\n"
	      "Show or set vm.unprivileged_userfaultfd, the kernel's own knob.  POLICY is\n"
	      "user-mode-only (0) or allow (1), on Linux 5.11 or later; deny and\n"
	      "/dev/userfaultfd cannot be expressed with the knob (see uffdguard run and\n"
	      "uffdguard profile).\n\n"
	      "Options of apply:\n"
	      "  --persist [FILE]      also write a sysctl.d drop-in, atomically\n"
	      "                        (default " DEFAULT_DROPIN "); a FILE that\n"
	      "                        is a symbolic link (say a mask to /dev/null), a\n"
	      "                        directory or another non-regular file is refused\n"
	      "                        and the knob left unchanged\n"
	      "  --force               write the knob although this kernel gives it\n"
	      "                        another meaning (before 5.11)\n"
	      "  --assume-kernel REL   act as on kernel release REL (testing)\n"
	      "  -h, --help            show this help\n",
	      out);
}

static const char *release_now(char *buf, size_t size)
{
	struct utsname u;
	uname(&u);
	snprintf(buf, size, "%s", u.release);
	return buf;
}

/* sysctl.d(5) accepts "vm/unprivileged_userfaultfd" as well. */
static bool is_sysctl_name(const char *s)
{
	for (size_t i = 0; SYSCTL_NAME[i]; i++)
		if (s[i] != SYSCTL_NAME[i] && !(SYSCTL_NAME[i] == '.' && s[i] == '/'))
			return false;
	return true;
}

/* Print each line of the file that sets the knob; how many there were. */
static int show_settings_in(const char *path)
{
	cleanup_file FILE *f = fopen(path, "re");
	char line[512];
	int found = 0;

	while (f && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t-");
		if (!is_sysctl_name(s))
			continue;
		s += strlen(SYSCTL_NAME);
		s += strspn(s, " \t");
		if (*s != '=')
			continue;
		s += 1 + strspn(s + 1, " \t");
		s[strcspn(s, " \t\r\n")] = '\0';
		printf("  persisted:  %s sets %s\n", path, s);
		found++;
	}
	return found;
}

/* Settings of the knob in the sysctl configuration files, directory by
 * directory.  systemd-sysctl applies the *.conf files of all of them in
 * the order of their names (a name in /etc hides it in the others);
 * Debian links /etc/sysctl.conf in as /etc/sysctl.d/99-sysctl.conf. */
static void show_persisted(void)
{
	static const char *const patterns[] = {
		"/etc/sysctl.conf",          "/etc/sysctl.d/*.conf",       "/run/sysctl.d/*.conf",
		"/usr/local/lib/sysctl.d/*.conf", "/usr/lib/sysctl.d/*.conf", "/lib/sysctl.d/*.conf",
	};
	int found = 0;

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;
		if (glob(patterns[i], 0, NULL, &g) != 0)
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++)
			found += show_settings_in(g.gl_pathv[j]);
		globfree(&g);
	}
	if (!found)
		printf("  persisted:  in no sysctl.d file (the kernel's default applies at boot)\n");
}

static void show_device_note(void)
{
	struct stat st;

	if (stat(LIBUFFD_DEVICE_PATH, &st) < 0)
		return;
	printf("  device:     %s (owner %u, group %u, mode %04o) is not governed by the knob:\n"
	       "              whoever can open it may handle kernel faults.\n",
	       LIBUFFD_DEVICE_PATH, (unsigned)st.st_uid, (unsigned)st.st_gid,
	       (unsigned)(st.st_mode & 07777));
}

static int sysctl_show(void)
{
	char rel[65];
	release_now(rel, sizeof(rel));
	bool new_sem = sysctl_new_semantics(rel);
	int v = sysctl_read();

	if (v < 0) {
		die(EXIT_FAILED, "%s: %s%s", SYSCTL_PATH, strerror(-v),
		    v == -ENOENT ? " (a kernel without userfaultfd)" : "");
	}
	printf("%s = %d\n", SYSCTL_NAME, v);
	printf("  policy:     %s: %s\n", sysctl_policy_name(v, new_sem), sysctl_meaning(v, new_sem));
	printf("  kernel:     Linux %s (%s meaning of the knob)\n", rel,
	       new_sem ? "the 5.11+" : "the pre-5.11");
	show_persisted();
	show_device_note();
	return 0;
}

/* The drop-in, written to a temporary file in the same directory and
 * renamed over the target, so a reader sees the old file or the new. */
static int persist(const char *path, const char *policy, int value, const char *meaning)
{
	char text[512];

	snprintf(text, sizeof(text), "# Written by uffdguard sysctl apply %s.\n# %s\n%s = %d\n",
		 policy, meaning, SYSCTL_NAME, value);
	return write_file_atomic(path, text, 0644);
}

static int sysctl_apply(int argc, char **argv)
{
	const char *name = NULL, *persist_path = NULL, *release = NULL;
	bool force = false;
	char rel[65], err[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--force")) {
			force = true;
		} else if (!strncmp(a, "--persist=", 10)) {
			if (!a[10])
				usage_error("--persist=: empty file name");
			persist_path = a + 10;
		} else if (!strcmp(a, "--persist")) {
			/* An optional FILE follows, once the policy is known. */
			persist_path = DEFAULT_DROPIN;
			if (name && i + 1 < argc && argv[i + 1][0] != '-')
				persist_path = argv[++i];
		} else if (!strcmp(a, "--assume-kernel")) {
			if (i + 1 >= argc)
				usage_error("option '--assume-kernel' needs an argument");
			release = argv[++i];
		} else if (a[0] == '-') {
			usage_error("unknown option '%s'", a);
		} else if (!name) {
			name = a;
		} else {
			usage_error("unexpected argument '%s'", a);
		}
	}
	if (!name)
		usage_error("apply needs a POLICY: user-mode-only or allow");
	struct policy p;
	if (policy_preset(name, &p, err, sizeof(err)) < 0)
		usage_error("%s", err);
	if (!release)
		release = release_now(rel, sizeof(rel));
	bool new_sem = sysctl_new_semantics(release);

	if (!new_sem && !force) {
		die(EXIT_REFUSED,
		    "refusing: on Linux %s (before 5.11) %s has another meaning:\n"
		    "  0 denies userfaultfd(2) to processes without CAP_SYS_PTRACE, 1 allows it to all,\n"
		    "  and the kernel has no UFFD_USER_MODE_ONLY.  Pass --force to set it with that\n"
		    "  meaning (allow = 1, deny = 0).",
		    release, SYSCTL_NAME);
	}
	const char *preset = policy_name(&p);
	int value = sysctl_value(&p, new_sem);
	if (value < 0 && new_sem) {
		cli_error("refusing: %s cannot express deny on Linux %s: since 5.11\n"
			  "  its 0 lets unprivileged processes create user-mode-only descriptors, and no\n"
			  "  value denies them altogether.  The closest native setting is user-mode-only.\n"
			  "  To deny unprivileged callers, use uffdguard's own enforcement:",
			  SYSCTL_NAME, release);
		print_instead(stderr, "deny");
		return EXIT_REFUSED;
	} else if (value < 0) {
		die(EXIT_REFUSED,
		    "refusing: Linux %s has no UFFD_USER_MODE_ONLY, so %s cannot\n"
		    "  express user-mode-only (its 0 would deny unprivileged callers altogether).",
		    release, SYSCTL_NAME);
	}

	/* A drop-in that would be refused is refused before the knob is
	 * touched: nothing changes.  write_file_atomic() checks again. */
	char why[ATOMIC_FILE_REFUSAL_SIZE];
	int ret = persist_path ? atomic_file_check(persist_path) : 0;
	if (ret < 0 && atomic_file_refusal(persist_path, ret, why, sizeof(why)))
		die(EXIT_FAILED, "not applied: %s", why);
	ret = sysctl_write(value);
	if (ret < 0)
		die(EXIT_FAILED, "cannot write %s: %s%s", SYSCTL_PATH, strerror(-ret),
		    ret == -EACCES || ret == -EPERM ? " (this needs root)" : "");
	const char *meaning = sysctl_meaning(value, new_sem);
	printf("%s = %d (%s): %s\n", SYSCTL_NAME, value, preset, meaning);
	if (persist_path) {
		ret = persist(persist_path, preset, value, meaning);
		if (ret < 0 && atomic_file_refusal(persist_path, ret, why, sizeof(why)))
			die(EXIT_FAILED, "the knob is set, but %s", why);
		else if (ret < 0)
			die(EXIT_FAILED, "the knob is set, but %s could not be written: %s",
			    persist_path, strerror(-ret));
		printf("persisted in %s\n", persist_path);
	}
	printf("note: %s is not governed by the knob; to cover it too:\n", LIBUFFD_DEVICE_PATH);
	print_instead(stdout, preset);
	return 0;
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
		if (argc > 2)
			usage_error("unexpected argument '%s'", argv[2]);
		return sysctl_show();
	}
	if (!strcmp(action, "apply"))
		return sysctl_apply(argc - 1, argv + 1);
	usage_error("unknown action '%s': show or apply", action);
}

const struct subcommand cmd_sysctl = {
	.name = "sysctl",
	.summary = "show or set the kernel's own knob, where it can express the policy",
	.run = sysctl_run,
	.usage = sysctl_usage,
	.exit_codes = sysctl_exit_codes,
	.exit_failure = EXIT_FAILED,
};
