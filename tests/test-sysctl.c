// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard sysctl show | apply, on the real knobs (restored after each
 * case by the harness) and with drop-ins in a private directory; and the
 * kernel's own answers for every value of the knobs, against
 * policy_decide(). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

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

/* On a kernel with the series, the device follows the knob, as apply's
 * default (cover_device=1) asks: so that only vm.unprivileged_userfaultfd
 * decides whether apply would change anything. */
static void covers_dev_as_apply_sets_it(void)
{
	if (covers_dev_get() >= 0)
		covers_dev_set(1);
}

static void require_series(void)
{
	if (covers_dev_get() < 0)
		SKIP("%s is missing: a kernel without the patch in kernel/ that adds "
		     "vm.unprivileged_userfaultfd=2", SYSCTL_COVERS_DEV_PATH);
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
	/* The device: governed by the second knob where the kernel has it. */
	if (covers_dev_get() < 0)
		ASSERT_CONTAINS(r.out, "/dev/userfaultfd is not governed by the knob on this kernel");
	else
		ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd_covers_dev = 1: ");
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
		SKIP("this kernel has the patch in kernel/ that adds "
		     "vm.unprivileged_userfaultfd=2: deny is expressible "
		     "(deny_writes_2_and_covers_the_device checks it)");
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "deny");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_CONTAINS(r.err, "cannot express deny");
	ASSERT_CONTAINS(r.err, "uffdguard lsm apply --host --policy deny\n");
	ASSERT_CONTAINS(r.err, "uffdguard run --policy deny -- COMMAND\n");
	ASSERT_CONTAINS(r.err, "uffdguard profile --policy deny --format oci \\\n");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "2");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(sysctl_get(), 1);
	/* The exemption asked for: only run's supervise mode can keep it. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "deny", "--set", "ignore_cap_sys_ptrace=0");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.err, "uffdguard run --mode supervise --policy deny --set "
			       "ignore_cap_sys_ptrace=0 -- COMMAND\n");
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
		{ "sysctl", "apply", "allow", "--assume-kernel", "garbage" },
		{ "sysctl", "show", "--bogus" },
	};
	struct cli_result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[7] = { 0 };
		memcpy(args, bad[i], sizeof(bad[i]));
		cli_run(WHO_ROOT, args, &r);
		ASSERT_EQ(r.status, 2);
		ASSERT_CONTAINS(r.err, "Usage: uffdguard sysctl");
	}
	static const char *const help[][4] = {
		{ "sysctl", "--help" }, { "sysctl", "-h" }, { "sysctl", "show", "--help" },
		{ "sysctl", "show", "-h" }, { "sysctl", "apply", "--help" }, { "sysctl", "apply", "-h" },
	};
	for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++) {
		cli_run(WHO_ROOT, help[i], &r);
		ASSERT_EQ(r.status, 0);
		ASSERT_CONTAINS(r.out, "Usage: uffdguard sysctl show");
		ASSERT_EQ(r.err[0], '\0');
	}
}

/* The kernel's capable(CAP_SYS_PTRACE) exempts its holders at every value
 * of the knob: ignore_cap_sys_ptrace=1 is refused, not dropped, except
 * under allow, which checks nobody. */
TEST(a_knob_the_kernel_cannot_express_is_refused)
{
	static const char *const policies[] = { "user-mode-only", "deny" };
	struct cli_result r;

	require_root();
	sysctl_set(1);
	for (size_t i = 0; i < 2; i++) {
		for (int check = 0; check < 2; check++) {
			CLI(WHO_ROOT, &r, "sysctl", "apply", policies[i], "--set",
			    "ignore_cap_sys_ptrace=1", check ? "--check" : "--json");
			if (r.status != 3)
				FAIL("%s ignore_cap_sys_ptrace=1%s: exit %d, want 3: %s%s", policies[i],
				     check ? " --check" : "", r.status, r.out, r.err);
			ASSERT_CONTAINS(r.err, "cannot express ignore_cap_sys_ptrace=1");
			ASSERT_CONTAINS(r.err, "CAP_SYS_PTRACE");
			char want[128];
			snprintf(want, sizeof(want),
				 "uffdguard lsm apply --host --policy %s --set ignore_cap_sys_ptrace=1\n",
				 policies[i]);
			ASSERT_CONTAINS(r.err, want);
			ASSERT_EQ(r.out[0], '\0');
			ASSERT_EQ(sysctl_get(), 1);
		}
	}
	/* Under allow nobody is checked: the knob changes nothing. */
	covers_dev_as_apply_sets_it();
	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow", "--set", "ignore_cap_sys_ptrace=1", "--check");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "\nunchanged\n");
}

/* --assume-kernel takes a release as uname -r gives it, nothing else;
 * the running kernel's own release is read leniently. */
TEST(assume_kernel_refuses_what_is_not_a_release)
{
	static const char *const bad[] = { "garbage", "6", "6.", "6.x", " 6.1", "-6.1", "6.1x", "" };
	static const char *const good[] = { "6.1.0-28-amd64", "5.11", "6.12.9+bpo-amd64",
					     "5.15.0_rc1" };
	struct cli_result r;
	int ma, mi;

	require_root();
	sysctl_set(0);
	covers_dev_as_apply_sets_it();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--check", "--assume-kernel",
		    bad[i]);
		if (r.status != 2)
			FAIL("--assume-kernel '%s': exit %d, want 2: %s", bad[i], r.status, r.err);
		ASSERT_CONTAINS(r.err, "is not a kernel release");
		ASSERT_TRUE(!sysctl_parse_release(bad[i], &ma, &mi));
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--check", "--assume-kernel",
		    good[i]);
		if (r.status != 0)
			FAIL("--assume-kernel '%s': exit %d, want 0: %s", good[i], r.status, r.err);
	}
	ASSERT_TRUE(sysctl_parse_release("6.1.0-28-amd64", &ma, &mi));
	ASSERT_EQ(ma, 6);
	ASSERT_EQ(mi, 1);
	/* Before 5.11: refused as before, not taken for a new kernel. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--check", "--assume-kernel",
	    "5.10.0-23-amd64");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.err, "before 5.11");
	ASSERT_TRUE(!sysctl_new_semantics("5.10.0-23-amd64"));
	ASSERT_TRUE(sysctl_new_semantics("6.1.0-28-amd64"));
	ASSERT_TRUE(sysctl_new_semantics("6.1custom"));
}

/* "--persist FILE POLICY" reads FILE as the policy: say how to write it. */
TEST(persist_file_before_the_policy_says_how_to_write_it)
{
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", path[PATH_MAX];
	struct cli_result r;

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/x.conf", dir);
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "--persist", path, "user-mode-only", "--check");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "give FILE after POLICY, or use --persist=FILE");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "--persist", path, "user-mode-only");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "give FILE after POLICY, or use --persist=FILE");
	CLI(WHO_ROOT, &r, "sysctl", "apply", "--persist", path, "--check");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "give FILE after POLICY, or use --persist=FILE");
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_EQ(dir_entries(dir), 0);
	/* Where it goes: after the policy. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", path, "--check");
	ASSERT_EQ(r.status, 4);
	ASSERT_CONTAINS(r.out, "would persist in ");
	remove_tree(dir);
}

/* A dry run by a user says that apply needs root, and still answers. */
TEST(check_as_a_user_says_apply_needs_root)
{
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", path[PATH_MAX];
	struct cli_result r;

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_SYS(chmod(dir, 0755)); /* readable, not writable, by the user */
	snprintf(path, sizeof(path), "%s/60-uffdguard.conf", dir);
	sysctl_set(0);

	CLI(WHO_UNPRIV, &r, "sysctl", "apply", "user-mode-only", "--check", "--persist", path);
	ASSERT_EQ(r.status, 4);
	ASSERT_CONTAINS(r.out, "would persist in ");
	ASSERT_CONTAINS(r.out, "note: apply needs root: cannot write ");
	ASSERT_CONTAINS(r.out, "Permission denied\nwould change\n");
	ASSERT_EQ(r.err[0], '\0');
	ASSERT_EQ(dir_entries(dir), 0);

	CLI(WHO_UNPRIV, &r, "sysctl", "apply", "allow", "--check", "--json");
	ASSERT_EQ(r.status, 4);
	json_object *j = cli_json(&r);
	ASSERT_CONTAINS(jstr(j, "needs_root"), SYSCTL_PATH);
	ASSERT_EQ(sysctl_get(), 0);

	/* Nothing to write: nothing to say. */
	covers_dev_as_apply_sets_it();
	CLI(WHO_UNPRIV, &r, "sysctl", "apply", "user-mode-only", "--check", "--json");
	ASSERT_EQ(r.status, 0);
	ASSERT_TRUE(jat(cli_json(&r), "needs_root") == NULL);
	remove_tree(dir);
}

/* The words of a printed command, from `start` to the end of its line (a
 * trailing backslash continues it): into argv, NULL-terminated. */
static int command_words(const char *start, char *buf, size_t size, const char **argv, int max)
{
	size_t len = 0;
	int n = 0;

	for (const char *s = start; *s && len + 1 < size; s++) {
		if (*s == '\\' && s[1] == '\n') {
			s++;
			continue;
		}
		if (*s == '\n')
			break;
		buf[len++] = *s;
	}
	buf[len] = '\0';
	for (char *save, *w = strtok_r(buf, " ", &save); w && n + 1 < max;
	     w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return n;
}

/* What a refusal suggests runs as printed: run with a command in place
 * of COMMAND, and the profile (its --base from the source tree when
 * uffdguard is not installed).  lsm apply would change the host: only
 * its presence is checked. */
TEST(suggested_commands_work_as_printed)
{
	char dir[] = "/tmp/uffdguard-sysctl.XXXXXX", out[PATH_MAX], base[PATH_MAX], buf[1024];
	const char *argv[32];
	struct cli_result r, c;

	require_root();
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s/uffd.json", dir);
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--set", "ignore_cap_sys_ptrace=1",
	    "--check");
	ASSERT_EQ(r.status, 3);

	const char *lsm = strstr(r.err, "uffdguard lsm apply --host ");
	ASSERT_TRUE(lsm != NULL);
	const char *run = strstr(r.err, "uffdguard run ");
	ASSERT_TRUE(run != NULL);
	int n = command_words(run, buf, sizeof(buf), argv, 32);
	ASSERT_STREQ(argv[n - 1], "COMMAND");
	argv[n - 1] = "true";
	cli_run(WHO_ROOT, argv + 1, &c);
	if (c.status != 0)
		FAIL("%s: exit %d: %s", run, c.status, c.err);

	const char *profile = strstr(r.err, "uffdguard profile ");
	ASSERT_TRUE(profile != NULL);
	n = command_words(profile, buf, sizeof(buf), argv, 32);
	bool had_base = false, had_out = false;
	for (int i = 1; i + 1 < n; i++) {
		if (!strcmp(argv[i], "--base")) {
			had_base = true;
			const char *data = getenv("UFFDGUARD_DATA");
			ASSERT_TRUE(strstr(argv[i + 1], "/containerd-default.json") != NULL);
			if (access(argv[i + 1], R_OK) < 0 && data) {
				snprintf(base, sizeof(base), "%s/containerd-default.json", data);
				argv[i + 1] = base;
			}
		} else if (!strcmp(argv[i], "-o")) {
			had_out = true;
			argv[i + 1] = out;
		}
	}
	ASSERT_TRUE(had_base && had_out);
	cli_run(WHO_ROOT, argv + 1, &c);
	if (c.status != 0)
		FAIL("%s: exit %d: %s", profile, c.status, c.err);
	ASSERT_EQ(dir_entries(dir), 1);
	remove_tree(dir);

	/* Under allow the device can do nothing the syscall cannot: no note. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "allow", "--check");
	ASSERT_TRUE(r.status == 0 || r.status == 4); /* unchanged, or would change */
	ASSERT_CONTAINS(r.out, "vm.unprivileged_userfaultfd");
	ASSERT_TRUE(!strstr(r.out, "note: /dev/userfaultfd"));
}

/* ---- the kernel against policy_decide() ------------------------------ */

/* Flags as the raw 64-bit argument: none, the flag, the fcntl flags,
 * unknown bits with and without the flag, and garbage in the upper half
 * (the kernel takes an int: only the lower 32 bits count). */
static const uint64_t truth_flags[] = {
	0,
	UFFD_USER_MODE_ONLY,
	O_CLOEXEC | O_NONBLOCK,
	O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY,
	0x2,
	0x2 | UFFD_USER_MODE_ONLY,
	0x80000000u,
	0x80000000u | UFFD_USER_MODE_ONLY,
	0xdeadbeef00000000ull,
	0xdeadbeef00000000ull | UFFD_USER_MODE_ONLY,
	0xffffffff00000002ull,
};
#define N_TRUTH_FLAGS (sizeof(truth_flags) / sizeof(truth_flags[0]))

/* The callers: who runs them, whether capable(CAP_SYS_PTRACE) holds. */
static const struct {
	const char *name;
	enum who who;
	bool userns; /* root of a new user namespace */
	bool privileged;
} truth_callers[] = {
	{ "unused uid", WHO_UNPRIV, false, false },
	{ "unused uid with CAP_SYS_PTRACE", WHO_UNPRIV_PTRACE, false, true },
	{ "root of a user namespace", WHO_ROOT, true, false },
};
#define N_TRUTH_CALLERS (sizeof(truth_callers) / sizeof(truth_callers[0]))

/* In shared memory: the child writes what the kernel said. */
struct truth_calls {
	const char *dev;
	bool userns;
	int result[2][N_TRUTH_FLAGS]; /* [path][flags]: 0 or -errno */
	int open_err;                 /* opening the private node */
};

static int kernel_call(enum call_path path, int dev, uint64_t flags)
{
	int fd = path == CALL_SYSCALL ? (int)syscall(__NR_userfaultfd, (unsigned long)flags)
				      : ioctl(dev, USERFAULTFD_IOC_NEW, (unsigned long)flags);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int make_truth_calls(void *arg)
{
	struct truth_calls *t = arg;

	if (t->userns && unshare(CLONE_NEWUSER) < 0)
		return -errno;
	int dev = open(t->dev, O_RDWR | O_CLOEXEC);
	t->open_err = dev < 0 ? -errno : 0;
	for (size_t i = 0; i < N_TRUTH_FLAGS; i++) {
		t->result[CALL_SYSCALL][i] = kernel_call(CALL_SYSCALL, dev, truth_flags[i]);
		t->result[CALL_DEVICE_IOCTL][i] =
			dev < 0 ? t->open_err : kernel_call(CALL_DEVICE_IOCTL, dev, truth_flags[i]);
	}
	if (dev >= 0)
		close(dev);
	return 0;
}

/* What the kernel should answer when the policy says v: EPERM and EINVAL
 * as they are, and for "allow" the kernel's own check of the flags. */
static int expected_errno(enum verdict v, uint64_t flags)
{
	if (v == VERDICT_EPERM)
		return -EPERM;
	if (v == VERDICT_EINVAL || ((uint32_t)flags & ~POLICY_KNOWN_FLAGS))
		return -EINVAL;
	return 0;
}

static bool sysctl_accepts(const char *path, int value)
{
	char text[16];
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		FAIL("%s: %s", path, strerror(errno));
	int len = snprintf(text, sizeof(text), "%d\n", value);
	bool ok = write(fd, text, (size_t)len) == len;
	int e = errno;
	close(fd);
	if (!ok && e != EINVAL)
		FAIL("writing %d to %s: %s", value, path, strerror(e));
	return ok;
}

/* Every value each knob accepts (vm.unprivileged_userfaultfd: 0 and 1 on
 * Linux 5.11+, also 2 with the series; covers_dev 0 and 1 with the
 * series, else the device ignores the knob) x the three callers x both
 * paths x every flag value: the kernel's answer is policy_decide()'s for
 * the policy the knobs amount to (sysctl_policy(), cover_device from
 * covers_dev). */
TEST(kernel_answers_equal_policy_decide)
{
	char dev[PATH_MAX];
	int mismatches = 0, calls = 0;

	struct utsname un;

	require_root();
	uname(&un);
	if (!sysctl_new_semantics(un.release))
		SKIP("Linux %s is older than 5.11: no UFFD_USER_MODE_ONLY", un.release);
	bool series = covers_dev_get() >= 0;
	struct truth_calls *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(t != MAP_FAILED);
	make_private_device(dev, 0, 0, 0666);
	for (int u = 0; u <= SYSCTL_DENY; u++) {
		if (!sysctl_accepts(SYSCTL_PATH, u)) {
			if (u == SYSCTL_DENY && !series)
				continue; /* Linux without the series: 0 and 1 only */
			FAIL("the kernel refuses %s = %d", SYSCTL_NAME, u);
		}
		for (int c = 0; c <= (series ? 1 : 0); c++) {
			if (series)
				sysctl_accepts(SYSCTL_COVERS_DEV_PATH, c);
			struct policy p;
			ASSERT_TRUE(sysctl_policy(u, true, &p));
			p.cover_device = c;
			for (size_t w = 0; w < N_TRUTH_CALLERS; w++) {
				memset(t, 0, sizeof(*t));
				t->dev = dev;
				t->userns = truth_callers[w].userns;
				int r = run_as(truth_callers[w].who, make_truth_calls, t);
				if (r < 0) {
					remove_private_device(dev);
					if (t->userns)
						SKIP("unshare(CLONE_NEWUSER): %s", strerror(-r));
					FAIL("%s: %s", truth_callers[w].name, strerror(-r));
				}
				if (t->open_err) {
					remove_private_device(dev);
					FAIL("%s cannot open the private node %s: %s",
					     truth_callers[w].name, dev, strerror(-t->open_err));
				}
				for (int path = CALL_SYSCALL; path <= CALL_DEVICE_IOCTL; path++)
					for (size_t i = 0; i < N_TRUTH_FLAGS; i++) {
						struct call call = { .path = (enum call_path)path,
								     .flags = truth_flags[i] };
						int want = expected_errno(
							policy_decide(&p, truth_callers[w].privileged,
								      &call),
							truth_flags[i]);
						int got = t->result[path][i];
						calls++;
						if (got == want)
							continue;
						mismatches++;
						printf("# %s=%d covers_dev=%d %s %s flags=0x%llx: kernel "
						       "%s, policy_decide() %s\n",
						       SYSCTL_NAME, u, c, truth_callers[w].name,
						       path == CALL_SYSCALL ? "userfaultfd(2)"
									    : "USERFAULTFD_IOC_NEW",
						       (unsigned long long)truth_flags[i],
						       got ? strerror(-got) : "a descriptor",
						       want ? strerror(-want) : "a descriptor");
					}
			}
		}
	}
	remove_private_device(dev);
	munmap(t, sizeof(*t));
	printf("# %d calls, %d different from policy_decide()%s\n", calls, mismatches,
	       series ? "" : " (a kernel without the vm.unprivileged_userfaultfd=2 series: "
			     "0 and 1, the device uncovered)");
	ASSERT_EQ(mismatches, 0);
}

/* The kernel takes exactly the values it documents: 0..1 without the
 * series, 0..2 with it, and covers_dev 0..1. */
TEST(sysctl_refuses_out_of_range_values)
{
	require_root();
	bool series = covers_dev_get() >= 0;
	int top = series ? SYSCTL_DENY : 1;

	for (int v = -1; v <= 3; v++) {
		bool in_range = v >= 0 && v <= top;
		sysctl_set(1);
		ASSERT_EQ(sysctl_accepts(SYSCTL_PATH, v), in_range);
		ASSERT_EQ(sysctl_get(), in_range ? v : 1); /* a refused write changes nothing */
	}
	if (!series)
		SKIP("%s is missing: a kernel without the patch in kernel/ that adds "
		     "vm.unprivileged_userfaultfd=2; it takes 0 and 1 here, as it should",
		     SYSCTL_COVERS_DEV_PATH);
	for (int v = -1; v <= 2; v++) {
		bool in_range = v == 0 || v == 1;
		covers_dev_set(1);
		ASSERT_EQ(sysctl_accepts(SYSCTL_COVERS_DEV_PATH, v), in_range);
		ASSERT_EQ(covers_dev_get(), in_range ? v : 1);
	}
}

/* What `uffdguard status` found, kept across runs. */
struct status_seen {
	int exit;
	char verdict[32];
	bool stall_ran;
	int stall_refused; /* stall points refused */
	int attempts_wrong;
};

/* `uffdguard status` as root with a private world-accessible node, and
 * how many of the unprivileged probe's attempts (0 syscall, 1 syscall +
 * flag, 2 device, 3 device + flag) ended otherwise than `want` (errno
 * names; "null": a descriptor).  Fails nothing: the caller removes the
 * node first. */
static struct status_seen status_run(const char *dev, const char *const want[4])
{
	struct cli_result r;
	struct status_seen s = { 0 };
	char path[64];

	CLI(WHO_ROOT, &r, "status", "--json", "--device", dev, "--hold", "50", PROBE_DEADLINE);
	json_object *j = cli_json(&r);
	s.exit = r.status;
	snprintf(s.verdict, sizeof(s.verdict), "%s", jstr(j, "verdict.status"));
	for (int w = 0; w < 4; w++) {
		snprintf(path, sizeof(path), "probe.identities.0.attempts.%d.errno", w);
		if (strcmp(jstr(j, path), want[w])) {
			printf("# %s is %s, want %s\n", path, jstr(j, path), want[w]);
			s.attempts_wrong++;
		}
	}
	s.stall_ran = jbool(j, "probe.identities.0.stall.ran");
	for (int p = 0; s.stall_ran && p < 5; p++) {
		snprintf(path, sizeof(path), "probe.identities.0.stall.points.%d.outcome", p);
		s.stall_refused += !strcmp(jstr(j, path), "refused");
	}
	return s;
}

/* Where the knobs demand UFFD_USER_MODE_ONLY (0) or refuse everything
 * (2), with the device following them (covers_dev=1), the stall probe
 * of `status` gets no kernel-fault descriptor even through a node anyone
 * can open: every stall point is refused, and the verdict is protected.
 * With covers_dev=0 the same node still holds the kernel. */
TEST(status_stall_probe_is_refused_where_the_knob_demands_the_flag)
{
	char dev[PATH_MAX];

	require_root();
	require_series();
	make_private_device(dev, 0, 0, 0666);
	covers_dev_set(1);
	sysctl_set(0);
	struct status_seen flag = status_run(dev, (const char *const[]){ "EPERM", "null", "EPERM", "null" });
	sysctl_set(SYSCTL_DENY);
	struct status_seen deny = status_run(dev, (const char *const[]){ "EPERM", "EPERM", "EPERM", "EPERM" });
	covers_dev_set(0);
	sysctl_set(0);
	struct status_seen open = status_run(dev, (const char *const[]){ "EPERM", "null", "null", "null" });
	remove_private_device(dev);

	ASSERT_EQ(flag.attempts_wrong + deny.attempts_wrong + open.attempts_wrong, 0);
	ASSERT_TRUE(flag.stall_ran);
	ASSERT_EQ(flag.stall_refused, 5);
	ASSERT_STREQ(flag.verdict, "protected");
	ASSERT_EQ(flag.exit, 0);
	ASSERT_TRUE(!deny.stall_ran); /* no descriptor at all to stall with */
	ASSERT_STREQ(deny.verdict, "protected");
	ASSERT_EQ(deny.exit, 0);
	ASSERT_STREQ(open.verdict, "exposed");
	ASSERT_EQ(open.exit, 1);
}
