// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard sysctl show | apply, on the real knob (restored after each
 * case by the harness) and with drop-ins in a private directory. */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cli-run.h"
#include "harness.h"
#include "util.h"

HARNESS_GUARD_FILE(sysctl, SYSCTL_PATH)
HARNESS_GUARD_FILE(covers_dev, SYSCTL_COVERS_DEV_PATH)

/* vm.unprivileged_userfaultfd_covers_dev, or -1 on a kernel without the
 * series in kernel/. */
static int covers_dev_get(void)
{
	FILE *f = fopen(SYSCTL_COVERS_DEV_PATH, "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		FAIL("cannot parse %s", SYSCTL_COVERS_DEV_PATH);
	fclose(f);
	return v;
}

static void covers_dev_set(int value)
{
	char text[16];

	snprintf(text, sizeof(text), "%d\n", value);
	write_text(SYSCTL_COVERS_DEV_PATH, text);
}

static void require_series(void)
{
	if (covers_dev_get() < 0)
		SKIP("%s is missing: a kernel without the vm.unprivileged_userfaultfd=2 patch "
		     "series (kernel/)", SYSCTL_COVERS_DEV_PATH);
}

TEST(show_tells_the_value_and_its_meaning)
{
	struct cli_result r;

	require_root();
	sysctl_set(0);
	CLI(WHO_ROOT, &r, "sysctl", "show");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 0\n");
	ASSERT_CONTAINS(r.out, "policy:     user-mode-only:");
	ASSERT_CONTAINS(r.out, "the 5.11+ meaning");
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "show");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 1\n");
	ASSERT_CONTAINS(r.out, "policy:     allow:");
}

TEST(apply_sets_the_knob)
{
	struct cli_result r;

	require_root();
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 0 (user-mode-only)");
	ASSERT_CONTAINS(r.out, "/dev/userfaultfd is not governed by the knob");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 1);
	/* The knob's own values name the presets, as the kernel numbers them. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "0");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 0 (user-mode-only)");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "1");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 1);
}

TEST(deny_is_not_expressible_and_points_elsewhere)
{
	struct cli_result r;

	require_root();
	if (covers_dev_get() >= 0)
		SKIP("this kernel has the vm.unprivileged_userfaultfd=2 patch series: deny is "
		     "expressible (deny_writes_2_and_covers_the_device checks it)");
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "deny");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_CONTAINS(r.err, "cannot express deny");
	ASSERT_CONTAINS(r.err, "uffdguard run --policy");
	ASSERT_CONTAINS(r.err, "uffdguard profile");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "2");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(sysctl_get(), 1);
}

/* On a kernel with the series: deny is 2, and the device follows the knob
 * unless cover_device=0 is asked for. */
TEST(deny_writes_2_and_covers_the_device)
{
	struct cli_result r;

	require_root();
	require_series();
	sysctl_set(1);
	covers_dev_set(0);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "deny");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 2);
	ASSERT_EQ(covers_dev_get(), 1);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 2 (deny): ");
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd_covers_dev = 1: ");
	ASSERT_TRUE(!strstr(r.out, "not governed"));

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--set", "cover_device=0");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	ASSERT_EQ(covers_dev_get(), 0);
	ASSERT_CONTAINS(r.out, "/dev/userfaultfd is not governed by the knob (--set cover_device=0)");

	CLI(WHO_ROOT, &r, "sysctl", "show", "--json");
	ASSERT_EQ(r.status, 0);
	json_object *j = cli_json(&r);
	ASSERT_EQ(jint(j, "knobs.0.value"), 0);
	ASSERT_STREQ(jstr(j, "knobs.1.name"), SYSCTL_COVERS_DEV_NAME);
	ASSERT_EQ(jint(j, "knobs.1.value"), 0);
	ASSERT_EQ(jbool(j, "deny_expressible"), 1);

	/* The kernel refuses what is out of range; the command names it. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "2", "--set", "cover_device=1");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 2);
	CLI(WHO_ROOT, &r, "sysctl", "show");
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 2\n  policy:     deny: ");
	ASSERT_CONTAINS(r.out, "/dev/userfaultfd follows the knob");
}

/* Configuration management tells "changed" from "unchanged", and --check
 * changes nothing. */
TEST(apply_says_changed_or_unchanged_and_check_changes_nothing)
{
	struct cli_result r;
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", path[PATH_MAX];

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/60-uffdguard.conf", dir);
	sysctl_set(1);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--check", "--persist", path);
	ASSERT_EQ(r.status, 4);
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_EQ(dir_entries(dir), 0);
	ASSERT_CONTAINS(r.out, "(now 1)");
	ASSERT_CONTAINS(r.out, "\nwould change\n");

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", path);
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	ASSERT_CONTAINS(r.out, "(was 1)");
	ASSERT_CONTAINS(r.out, "\nchanged\n");

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", path);
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "already persisted in ");
	ASSERT_CONTAINS(r.out, "\nunchanged\n");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--check", "--persist", path);
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "\nunchanged\n");

	/* The drop-in alone differing is a change too. */
	write_text(path, "# edited by hand\n");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--json", "--persist", path);
	ASSERT_EQ(r.status, 0);
	json_object *j = cli_json(&r);
	ASSERT_EQ(jbool(j, "changed"), 1);
	ASSERT_STREQ(jstr(j, "result"), "changed");
	ASSERT_EQ(jbool(j, "persist.changed"), 1);
	ASSERT_EQ(jint(j, "knobs.0.before"), 0);
	ASSERT_EQ(jint(j, "knobs.0.after"), 0);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow", "--json", "--check");
	ASSERT_EQ(r.status, 4);
	j = cli_json(&r);
	ASSERT_EQ(jbool(j, "changed"), 1);
	ASSERT_STREQ(jstr(j, "result"), "would change");
	ASSERT_EQ(jint(j, "knobs.0.before"), 0);
	ASSERT_EQ(jint(j, "knobs.0.after"), 1);
	ASSERT_EQ(sysctl_get(), 0);

	/* --check needs no privileges: it only reads. */
	CLI(WHO_UNPRIV, &r, "sysctl", "apply", "user-mode-only", "--check");
	ASSERT_EQ(r.status, 0);
	remove_tree(dir);
}

TEST(show_json_reports_the_knobs_and_the_drop_ins)
{
	struct cli_result r;

	require_root();
	sysctl_set(0);
	CLI(WHO_UNPRIV, &r, "sysctl", "show", "--json");
	ASSERT_EQ(r.status, 0);
	json_object *j = cli_json(&r);
	ASSERT_STREQ(jstr(j, "knobs.0.name"), SYSCTL_NAME);
	ASSERT_EQ(jint(j, "knobs.0.value"), 0);
	ASSERT_STREQ(jstr(j, "knobs.0.policy"), "user-mode-only");
	ASSERT_STREQ(jstr(j, "semantics"), "5.11+");
	ASSERT_EQ(json_object_get_type(jat(j, "persisted")), json_type_array);
	ASSERT_EQ(jbool(j, "deny_expressible"), covers_dev_get() >= 0);
	sysctl_set(1);
	CLI(WHO_UNPRIV, &r, "sysctl", "show", "--json");
	ASSERT_EQ(jint(cli_json(&r), "knobs.0.value"), 1);
}

TEST(old_kernel_meaning_is_refused_unless_forced)
{
	struct cli_result r;

	require_root();
	sysctl_set(0);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow", "--assume-kernel", "5.10.200");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.err, "before 5.11");
	ASSERT_CONTAINS(r.err, "--force");
	ASSERT_EQ(sysctl_get(), 0);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow", "--assume-kernel", "5.10.200", "--force");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 1);
	/* Before 5.11, 0 is deny, and user-mode-only does not exist. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "deny", "--assume-kernel", "5.10.200", "--force");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--assume-kernel", "4.19", "--force");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.err, "no UFFD_USER_MODE_ONLY");
	ASSERT_EQ(sysctl_get(), 1);
}

TEST(persist_writes_a_drop_in_atomically)
{
	struct cli_result r;
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", path[PATH_MAX], text[512];
	struct stat st;

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/60-uffdguard.conf", dir);
	write_text(path, "vm.unprivileged_userfaultfd = 1\n# old\n");

	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", path);
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	ASSERT_CONTAINS(r.out, "persisted in ");
	read_text(path, text, sizeof(text));
	ASSERT_CONTAINS(text, "\nvm.unprivileged_userfaultfd = 0\n");
	ASSERT_TRUE(!strstr(text, "# old"));
	ASSERT_SYS(stat(path, &st));
	ASSERT_EQ(st.st_mode & 07777, 0644);
	ASSERT_EQ(dir_entries(dir), 1); /* no temporary file left */

	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow", "");
	ASSERT_EQ(r.status, 2); /* an empty extra argument */
	char opt[PATH_MAX + 16];
	snprintf(opt, sizeof(opt), "--persist=%s", path);
	CLI(WHO_ROOT, &r, "sysctl", "apply", opt, "allow");
	ASSERT_EQ(r.status, 0);
	read_text(path, text, sizeof(text));
	ASSERT_CONTAINS(text, "\nvm.unprivileged_userfaultfd = 1\n");
	ASSERT_EQ(dir_entries(dir), 1);

	unlink(path);
	rmdir(dir);
}

/* A drop-in that cannot be written (its directory missing, or a file
 * where a directory should be) is found out before the knob is touched:
 * nothing changes. */
TEST(persist_to_an_unwritable_place_changes_nothing)
{
	struct cli_result r;
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", missing[PATH_MAX], file[PATH_MAX],
	     below[PATH_MAX];

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(missing, sizeof(missing), "%s/nodir/x.conf", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(below, sizeof(below), "%s/file/x.conf", dir);
	write_text(file, "not a directory\n");
	int cov = covers_dev_get();
	sysctl_set(1);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", missing);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "not applied: cannot write ");
	ASSERT_CONTAINS(r.err, "No such file or directory");
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_EQ(covers_dev_get(), cov);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", below);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "Not a directory");
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_EQ(covers_dev_get(), cov);
	ASSERT_EQ(r.out[0], '\0');
	ASSERT_EQ(dir_entries(dir), 1);
	remove_tree(dir);
}

/* A link in sysctl.d is someone else's: a mask (to /dev/null) or a
 * managed file.  Refused before the knob is touched; nothing written. */
TEST(persist_refuses_what_is_not_a_regular_file)
{
	struct cli_result r;
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", target[PATH_MAX], link[PATH_MAX],
	     mask[PATH_MAX], sub[PATH_MAX], fifo[PATH_MAX], want[3 * PATH_MAX], text[512];
	struct stat st;

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(target, sizeof(target), "%s/managed.conf", dir);
	snprintf(link, sizeof(link), "%s/60-uffdguard.conf", dir);
	snprintf(mask, sizeof(mask), "%s/50-masked.conf", dir);
	snprintf(sub, sizeof(sub), "%s/70-dir.conf", dir);
	snprintf(fifo, sizeof(fifo), "%s/80-fifo.conf", dir);
	write_text(target, "vm.unprivileged_userfaultfd = 1\n# managed\n");
	ASSERT_SYS(symlink(target, link));
	ASSERT_SYS(symlink("/dev/null", mask));
	ASSERT_SYS(mkdir(sub, 0755));
	ASSERT_SYS(mkfifo(fifo, 0644));
	sysctl_set(1);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", link);
	ASSERT_EQ(r.status, 1);
	snprintf(want, sizeof(want),
		 "uffdguard sysctl: not applied: %s is a symbolic link (to %s); uffdguard replaces"
		 " regular files only: remove it or write elsewhere\n", link, target);
	ASSERT_STREQ(r.err, want);
	ASSERT_EQ(sysctl_get(), 1);
	assert_link(link, target);
	read_text(target, text, sizeof(text));
	ASSERT_STREQ(text, "vm.unprivileged_userfaultfd = 1\n# managed\n");

	char opt[PATH_MAX + 16];
	snprintf(opt, sizeof(opt), "--persist=%s", mask);
	CLI(WHO_ROOT, &r, "sysctl", "apply", opt, "user-mode-only");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, " is a symbolic link (to /dev/null); ");
	ASSERT_EQ(sysctl_get(), 1);
	assert_link(mask, "/dev/null");
	ASSERT_SYS(stat("/dev/null", &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", sub);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "70-dir.conf is a directory; uffdguard replaces regular files only");
	ASSERT_SYS(lstat(sub, &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(dir_entries(sub), 0);

	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", fifo);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "80-fifo.conf is a fifo; ");
	ASSERT_SYS(lstat(fifo, &st));
	ASSERT_TRUE(S_ISFIFO(st.st_mode));

	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_EQ(dir_entries(dir), 5); /* no temporary file, nothing new */
	remove_tree(dir);
}

/* Only the last component matters: a linked directory is followed, and
 * a regular file in it is replaced as anywhere else. */
TEST(persist_follows_a_linked_directory)
{
	struct cli_result r;
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", real[64], via[64], path[PATH_MAX],
	     inreal[PATH_MAX], text[512];
	struct stat before, after;

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(real, sizeof(real), "%s/real.d", dir);
	snprintf(via, sizeof(via), "%s/sysctl.d", dir);
	snprintf(path, sizeof(path), "%s/60-uffdguard.conf", via);
	snprintf(inreal, sizeof(inreal), "%s/60-uffdguard.conf", real);
	ASSERT_SYS(mkdir(real, 0755));
	ASSERT_SYS(symlink(real, via));
	write_text(inreal, "# old\n");
	ASSERT_SYS(stat(inreal, &before));

	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", path);
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
	read_text(inreal, text, sizeof(text));
	ASSERT_CONTAINS(text, "\nvm.unprivileged_userfaultfd = 0\n");
	ASSERT_SYS(lstat(inreal, &after));
	ASSERT_TRUE(S_ISREG(after.st_mode));
	ASSERT_NE(before.st_ino, after.st_ino); /* replaced, not written in place */
	ASSERT_SYS(lstat(via, &after));
	ASSERT_TRUE(S_ISLNK(after.st_mode));
	ASSERT_EQ(dir_entries(real), 1);
	ASSERT_EQ(dir_entries(dir), 2);
	remove_tree(dir);
}

TEST(non_root_cannot_apply)
{
	struct cli_result r;

	require_root();
	sysctl_set(1);
	CLI(WHO_UNPRIV, &r, "sysctl", "apply", "user-mode-only");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "needs root");
	ASSERT_EQ(sysctl_get(), 1);
	CLI(WHO_UNPRIV, &r, "sysctl", "show");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd = 1\n");
}

TEST(usage_errors_exit_2)
{
	static const char *const bad[][6] = {
		{ "sysctl", NULL },
		{ "sysctl", "bogus", NULL },
		{ "sysctl", "show", "extra", NULL },
		{ "sysctl", "show", "--json", "extra" },
		{ "sysctl", "apply", "allow", "--set" },
		{ "sysctl", "apply", "allow", "--set", "cover_device=2" },
		{ "sysctl", "apply", NULL },
		{ "sysctl", "apply", "nonsense", NULL },
		{ "sysctl", "apply", "allow", "--bogus" },
		{ "sysctl", "apply", "allow", "extra" },
		{ "sysctl", "apply", "--assume-kernel", NULL },
	};
	struct cli_result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[7] = { 0 };
		memcpy(args, bad[i], sizeof(bad[i]));
		cli_run(WHO_ROOT, args, &r);
		ASSERT_EQ(r.status, 2);
		ASSERT_CONTAINS(r.err, "Usage: uffdguard sysctl");
	}
	CLI(WHO_ROOT, &r, "sysctl", "--help");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "Usage: uffdguard sysctl show");
}
