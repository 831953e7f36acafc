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
	/* The values of Peter Xu's single-knob suggestion are presets too: 2 = user-mode-only. */
	CLI(WHO_ROOT, &r, "sysctl", "apply", "2");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(sysctl_get(), 0);
}

TEST(deny_is_not_expressible_and_points_elsewhere)
{
	struct cli_result r;

	require_root();
	sysctl_set(1);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "deny");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(sysctl_get(), 1);
	ASSERT_CONTAINS(r.err, "cannot express deny");
	ASSERT_CONTAINS(r.err, "uffdguard run --policy");
	ASSERT_CONTAINS(r.err, "uffdguard profile");
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

	/* A directory that does not exist: the knob is set, the drop-in is
	 * reported as failed. */
	char missing[PATH_MAX];
	snprintf(missing, sizeof(missing), "%s/nodir/x.conf", dir);
	CLI(WHO_ROOT, &r, "sysctl", "apply", "user-mode-only", "--persist", missing);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "could not be written");
	unlink(path);
	rmdir(dir);
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
	static const char *const bad[][4] = {
		{ "sysctl", NULL },
		{ "sysctl", "bogus", NULL },
		{ "sysctl", "show", "extra", NULL },
		{ "sysctl", "apply", NULL },
		{ "sysctl", "apply", "nonsense", NULL },
		{ "sysctl", "apply", "allow", "--bogus" },
		{ "sysctl", "apply", "allow", "extra" },
		{ "sysctl", "apply", "--assume-kernel", NULL },
	};
	struct cli_result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[5] = { 0 };
		memcpy(args, bad[i], sizeof(bad[i]));
		cli_run(WHO_ROOT, args, &r);
		ASSERT_EQ(r.status, 2);
		ASSERT_CONTAINS(r.err, "Usage: uffdguard sysctl");
	}
	CLI(WHO_ROOT, &r, "sysctl", "--help");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "Usage: uffdguard sysctl show");
}
