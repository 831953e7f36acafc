// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The parts of `uffdguard lsm` that need no kernel: the configuration
 * file, cgroup paths, and the sentence for each reason it cannot work.
 */
#include <limits.h>

#include "cgroup.h"
#include "cli-run.h"
#include "harness.h"
#include "lsm-config.h"
#include "loader.h"

static int parse(const char *text, struct lsm_scope_spec **specs, size_t *n, char *err,
		 size_t size)
{
	*specs = NULL;
	*n = 0;
	err[0] = '\0';
	return lsm_config_parse(text, strlen(text), "lsm.conf", specs, n, err, size);
}

TEST(a_configuration_gives_the_host_default_and_cgroup_entries)
{
	const char *text = "# the host\n"
			   "host user-mode-only\n"
			   "\n"
			   "   # indented comment\n"
			   "/user.slice\tdeny\n"
			   "/system.slice/qemu.service  allow cover_device=0\r\n"
			   "/user.slice/user-1000.slice 2 unprivileged_userfaultfd_user_mode_only=0";
	struct lsm_scope_spec *s;
	size_t n;
	char err[512];

	ASSERT_OK(parse(text, &s, &n, err, sizeof(err)));
	ASSERT_EQ(n, 4);
	ASSERT_STREQ(s[0].cgroup, "");
	ASSERT_EQ(s[0].policy.unprivileged_userfaultfd, 1);
	ASSERT_EQ(s[0].policy.unprivileged_userfaultfd_user_mode_only, 1);
	ASSERT_STREQ(s[1].cgroup, "/user.slice");
	ASSERT_EQ(s[1].policy.unprivileged_userfaultfd, 0);
	ASSERT_STREQ(s[2].cgroup, "/system.slice/qemu.service");
	ASSERT_EQ(s[2].policy.unprivileged_userfaultfd, 1);
	ASSERT_EQ(s[2].policy.unprivileged_userfaultfd_user_mode_only, 0);
	ASSERT_EQ(s[2].policy.cover_device, 0);
	ASSERT_STREQ(s[3].cgroup, "/user.slice/user-1000.slice");
	ASSERT_EQ(s[3].policy.unprivileged_userfaultfd_user_mode_only, 0);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(s[i].policy.privilege, POLICY_PRIV_CAP_SYS_PTRACE);
	free(s);

	ASSERT_OK(parse("# nothing\n\n", &s, &n, err, sizeof(err)));
	ASSERT_EQ(n, 0);
	free(s);
}

TEST(a_bad_configuration_is_refused_with_its_line_and_why)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "host\n", "lsm.conf:1: expected a scope (host or a cgroup path) and a policy" },
		{ "host allow\nhost deny\n", "lsm.conf:2: the host default is already given on line 1" },
		{ "/a deny\n\n/a allow\n", "lsm.conf:3: /a is already given on line 1" },
		{ "host permissive\n", "lsm.conf:1: unknown policy 'permissive'" },
		{ "host allow cover_device=2\n", "lsm.conf:1: bad value '2' for cover_device" },
		{ "host allow nosuch=1\n", "lsm.conf:1: unknown knob 'nosuch'" },
		{ "user.slice deny\n", "lsm.conf:1: 'user.slice' is not a cgroup path" },
		{ "/ deny\n", "lsm.conf:1: '/' is the whole host" },
		{ "/a/../b deny\n", "has an empty, '.' or '..' component" },
		{ "/a//b deny\n", "has an empty, '.' or '..' component" },
		{ "/a/ deny\n", "has an empty, '.' or '..' component" },
		{ "host allow a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1\n", "too many words" },
	};
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lsm_scope_spec *s;
		size_t n;
		ASSERT_ERR(parse(bad[i].text, &s, &n, err, sizeof(err)), -EINVAL);
		ASSERT_CONTAINS(err, bad[i].says);
	}
	/* A NUL byte, and a line too long to be one. */
	struct lsm_scope_spec *s;
	size_t n;
	ASSERT_ERR(lsm_config_parse("host allow\0x\n", 12, "c", &s, &n, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "c:1: a NUL byte");
	char *longline = malloc(5000);
	memset(longline, 'a', 4999);
	longline[0] = '/';
	longline[4999] = '\0';
	ASSERT_ERR(parse(longline, &s, &n, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "lsm.conf:1: line longer than");
	free(longline);
}

TEST(cgroup_paths_are_checked_for_length_and_depth)
{
	char err[512], path[LSM_PATH_MAX + 8];

	ASSERT_OK(cgroup_path_check("/user.slice/user-1000.slice", err, sizeof(err)));
	ASSERT_OK(cgroup_path_check("/a", err, sizeof(err)));
	/* LSM_PATH_MAX - 2 characters fit (the program reads the path of a
	 * new cgroup into LSM_PATH_MAX bytes); one more does not. */
	memset(path, 'x', sizeof(path));
	path[0] = '/';
	path[LSM_PATH_MAX - 2] = '\0';
	ASSERT_OK(cgroup_path_check(path, err, sizeof(err)));
	path[LSM_PATH_MAX - 2] = 'x';
	path[LSM_PATH_MAX - 1] = '\0';
	ASSERT_ERR(cgroup_path_check(path, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "at most 254");
	/* LSM_MAX_DEPTH levels fit; one more does not. */
	char deep[4 * (LSM_MAX_DEPTH + 1) + 1] = "";
	for (int i = 0; i < LSM_MAX_DEPTH; i++)
		strcat(deep, "/ab");
	ASSERT_OK(cgroup_path_check(deep, err, sizeof(err)));
	strcat(deep, "/ab");
	ASSERT_ERR(cgroup_path_check(deep, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "levels deep");
}

/* Each reason the BPF LSM cannot work, and the sentence that says what
 * to do.  The kernels of the test matrix can show only some of them (see
 * test-lsm); the words are checked here for all. */
TEST(each_reason_it_cannot_work_has_its_sentence)
{
	const struct lsm_support ok = { .release = "6.12.1", .kernel_ok = true, .btf = true,
					 .lsm_list_known = true,
					 .active_lsms = "lockdown,capability,bpf",
					 .bpf_active = true, .capable = true };
	struct lsm_support s;
	char err[1024];

	ASSERT_OK(lsm_support_check(&ok, err, sizeof(err)));

	s = ok;
	s.kernel_ok = false;
	snprintf(s.release, sizeof(s.release), "5.15.0");
	ASSERT_ERR(lsm_support_check(&s, err, sizeof(err)), -ENOSYS);
	ASSERT_CONTAINS(err, "this kernel is 5.15.0; uffdguard lsm needs Linux 6.1 or later");
	ASSERT_CONTAINS(err, "use uffdguard run, uffdguard profile or uffdguard sysctl instead");

	s = ok;
	s.capable = false;
	ASSERT_ERR(lsm_support_check(&s, err, sizeof(err)), -EPERM);
	ASSERT_CONTAINS(err, "needs root (CAP_BPF and CAP_SYS_ADMIN");

	s = ok;
	s.btf = false;
	ASSERT_ERR(lsm_support_check(&s, err, sizeof(err)), -EOPNOTSUPP);
	ASSERT_CONTAINS(err, "no BTF");
	ASSERT_CONTAINS(err, "CONFIG_DEBUG_INFO_BTF=y");

	s = ok;
	s.bpf_active = false;
	snprintf(s.active_lsms, sizeof(s.active_lsms), "lockdown,capability,apparmor");
	ASSERT_ERR(lsm_support_check(&s, err, sizeof(err)), -EOPNOTSUPP);
	ASSERT_CONTAINS(err, "add lsm=lockdown,capability,apparmor,bpf to the kernel command line");

	s = ok;
	s.lsm_list_known = false;
	ASSERT_ERR(lsm_support_check(&s, err, sizeof(err)), -EOPNOTSUPP);
	ASSERT_CONTAINS(err, "mount -t securityfs");
}

TEST(the_command_checks_a_configuration_file_without_applying_it)
{
	char dir[] = "/tmp/uffdguard-lsm-conf.XXXXXX", path[PATH_MAX];
	struct cli_result r;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/lsm.conf", dir);
	write_text(path, "host user-mode-only\n/user.slice deny\n");
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", path, "--check");
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(r.err, "");
	write_text(path, "host user-mode-only\n/user.slice deny cover_device=maybe\n");
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", path, "--check");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "lsm.conf:2: bad value 'maybe' for cover_device");
	/* The same refusal without --check: nothing is loaded first. */
	CLI(WHO_ROOT, &r, "lsm", "apply", "--config", path);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "lsm.conf:2:");
	remove_tree(dir);
}

TEST(usage_errors_exit_2)
{
	struct cli_result r;

	CLI(WHO_ROOT, &r, "lsm");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "which action?");
	CLI(WHO_ROOT, &r, "lsm", "apply", "--policy", "deny");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "which scope?");
	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--cgroup", "/a");
	ASSERT_EQ(r.status, 2);
	CLI(WHO_ROOT, &r, "lsm", "apply", "--cgroup", "user.slice");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "is not a cgroup path");
	CLI(WHO_ROOT, &r, "lsm", "apply", "--host", "--policy", "permissive");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "unknown policy 'permissive'");
	CLI(WHO_ROOT, &r, "lsm", "frobnicate");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "unknown action 'frobnicate'");
}
