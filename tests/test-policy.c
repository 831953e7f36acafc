// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The decision function as a truth table, offline: every knob combination
 * x privileged or not x flags x path, against an independent transcription
 * of the seed's check (patch 2/2), plus hand-written rows.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>

#include "harness.h"
#include "marker.h"
#include "policy.h"

/* fs/userfaultfd.c with the seed applied; the kernel's own names. */
static enum verdict seed_syscall(int sysctl_unprivileged_userfaultfd,
				 int sysctl_unprivileged_userfaultfd_user_mode_only, bool capable,
				 int flags)
{
	bool need_cap_check = false;

	if (!sysctl_unprivileged_userfaultfd)
		need_cap_check = true;

	if (sysctl_unprivileged_userfaultfd_user_mode_only && (flags & UFFD_USER_MODE_ONLY) == 0)
		need_cap_check = true;

	if (need_cap_check && !capable)
		return VERDICT_EPERM;

	if (flags & ~(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY))
		return VERDICT_EINVAL;
	return VERDICT_ALLOW;
}

static enum verdict expected(const struct policy *p, bool privileged, const struct call *c)
{
	if (c->path == CALL_DEVICE_IOCTL && !p->cover_device)
		return VERDICT_ALLOW;
	bool capable = privileged && p->privilege == POLICY_PRIV_CAP_SYS_PTRACE;
	/* The register is truncated to the kernel's int. */
	return seed_syscall(p->unprivileged_userfaultfd, p->unprivileged_userfaultfd_user_mode_only,
			    capable, (int)(uint32_t)c->flags);
}

/* none, the flag, the other known flags, unknown bits, upper-half garbage */
static const uint64_t flag_cases[] = {
	0,
	UFFD_USER_MODE_ONLY,
	O_CLOEXEC,
	O_NONBLOCK,
	O_CLOEXEC | O_NONBLOCK,
	O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY,
	2,
	2 | UFFD_USER_MODE_ONLY,
	0x80000000u,
	0x80000000u | UFFD_USER_MODE_ONLY,
	0xfffffffeu,
	0xffffffffu,
	UFFDGUARD_MARKER_FLAGS,
	0xdeadbeef00000000ull,
	0xdeadbeef00000000ull | UFFD_USER_MODE_ONLY,
	0xffffffff00000000ull | O_CLOEXEC,
	0x0000000100000001ull,
	0xffffffff00000002ull | UFFD_USER_MODE_ONLY,
};
#define N_FLAG_CASES (sizeof(flag_cases) / sizeof(flag_cases[0]))

TEST(truth_table_matches_the_seed)
{
	unsigned rows = 0;

	for (int bits = 0; bits < 16; bits++) {
		struct policy p = {
			.unprivileged_userfaultfd = bits & 1,
			.unprivileged_userfaultfd_user_mode_only = bits >> 1 & 1,
			.cover_device = bits >> 2 & 1,
			.privilege = bits >> 3 & 1 ? POLICY_PRIV_NOBODY : POLICY_PRIV_CAP_SYS_PTRACE,
		};
		for (int priv = 0; priv <= 1; priv++)
			for (int path = CALL_SYSCALL; path <= CALL_DEVICE_IOCTL; path++) {
				/* The listed cases, then every single bit alone and
				 * with the flag, in both halves of the register. */
				for (unsigned i = 0; i < N_FLAG_CASES + 128; i++) {
					uint64_t f = i < N_FLAG_CASES ? flag_cases[i]
						   : (1ull << ((i - N_FLAG_CASES) % 64)) |
							     ((i - N_FLAG_CASES) >= 64 ? 1 : 0);
					struct call c = { .path = (enum call_path)path, .flags = f };
					enum verdict got = policy_decide(&p, priv, &c);
					enum verdict want = expected(&p, priv, &c);
					if (got != want)
						FAIL("knobs %d/%d cover_device=%d privilege=%d "
						     "privileged=%d path=%d flags=0x%llx: %s, want %s",
						     p.unprivileged_userfaultfd,
						     p.unprivileged_userfaultfd_user_mode_only,
						     p.cover_device, p.privilege, priv, path,
						     (unsigned long long)f, verdict_name(got),
						     verdict_name(want));
					rows++;
				}
			}
	}
	ASSERT_EQ(rows, 16 * 2 * 2 * (N_FLAG_CASES + 128));
}

/* Rows written by hand from the patch text, not computed. */
static const struct row {
	const char *policy;
	bool privileged;
	enum call_path path;
	uint64_t flags;
	enum verdict want;
} rows[] = {
	{ "allow", false, CALL_SYSCALL, 0, VERDICT_ALLOW },
	{ "allow", false, CALL_SYSCALL, 1, VERDICT_ALLOW },
	{ "allow", false, CALL_SYSCALL, 2, VERDICT_EINVAL },
	{ "allow", false, CALL_DEVICE_IOCTL, O_CLOEXEC, VERDICT_ALLOW },
	{ "allow", false, CALL_SYSCALL, 0xdeadbeef00000000ull, VERDICT_ALLOW },
	{ "user-mode-only", false, CALL_SYSCALL, 0, VERDICT_EPERM },
	{ "user-mode-only", false, CALL_SYSCALL, O_CLOEXEC | O_NONBLOCK, VERDICT_EPERM },
	{ "user-mode-only", false, CALL_SYSCALL, 1, VERDICT_ALLOW },
	{ "user-mode-only", false, CALL_SYSCALL, 1 | O_CLOEXEC, VERDICT_ALLOW },
	{ "user-mode-only", false, CALL_SYSCALL, 2, VERDICT_EPERM },  /* EPERM before EINVAL */
	{ "user-mode-only", false, CALL_SYSCALL, 3, VERDICT_EINVAL },
	{ "user-mode-only", true, CALL_SYSCALL, 0, VERDICT_ALLOW },
	{ "user-mode-only", true, CALL_SYSCALL, 2, VERDICT_EINVAL },
	{ "user-mode-only", false, CALL_SYSCALL, 0x100000000ull, VERDICT_EPERM }, /* upper bit: not the flag */
	{ "user-mode-only", false, CALL_SYSCALL, 0xffffffff00000001ull, VERDICT_ALLOW },
	{ "user-mode-only", false, CALL_DEVICE_IOCTL, 0, VERDICT_EPERM },
	{ "user-mode-only", false, CALL_DEVICE_IOCTL, 1, VERDICT_ALLOW },
	{ "0", false, CALL_SYSCALL, 0, VERDICT_EPERM },
	{ "0", false, CALL_SYSCALL, 1, VERDICT_ALLOW },
	{ "deny", false, CALL_SYSCALL, 1, VERDICT_EPERM },
	{ "deny", false, CALL_SYSCALL, 2, VERDICT_EPERM },
	{ "deny", false, CALL_DEVICE_IOCTL, 1, VERDICT_EPERM },
	{ "deny", true, CALL_SYSCALL, 0, VERDICT_ALLOW },
	{ "deny", true, CALL_SYSCALL, 2, VERDICT_EINVAL },
	{ "2", false, CALL_SYSCALL, 1, VERDICT_EPERM },
	{ "1", false, CALL_SYSCALL, 0, VERDICT_ALLOW },
};

TEST(hand_written_rows)
{
	char err[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct policy p;
		ASSERT_OK(policy_preset(rows[i].policy, &p, err, sizeof(err)));
		struct call c = { .path = rows[i].path, .flags = rows[i].flags };
		enum verdict got = policy_decide(&p, rows[i].privileged, &c);
		if (got != rows[i].want)
			FAIL("row %zu (%s privileged=%d path=%d flags=0x%llx): %s, want %s", i,
			     rows[i].policy, rows[i].privileged, rows[i].path,
			     (unsigned long long)rows[i].flags, verdict_name(got),
			     verdict_name(rows[i].want));
	}
}

TEST(device_not_covered_and_nobody_privileged)
{
	char err[256];
	struct policy p;

	ASSERT_OK(policy_preset("deny", &p, err, sizeof(err)));
	ASSERT_OK(policy_set_knob(&p, "cover_device=0", err, sizeof(err)));
	ASSERT_EQ(policy_decide(&p, false, &(struct call){ CALL_DEVICE_IOCTL, 0 }), VERDICT_ALLOW);
	ASSERT_EQ(policy_decide(&p, false, &(struct call){ CALL_SYSCALL, 1 }), VERDICT_EPERM);
	ASSERT_EQ(policy_decide(&p, true, &(struct call){ CALL_SYSCALL, 1 }), VERDICT_ALLOW);
	ASSERT_OK(policy_set_knob(&p, "ignore_cap_sys_ptrace=1", err, sizeof(err)));
	ASSERT_EQ(p.privilege, POLICY_PRIV_NOBODY);
	ASSERT_EQ(policy_decide(&p, true, &(struct call){ CALL_SYSCALL, 1 }), VERDICT_EPERM);
}

TEST(presets_and_aliases)
{
	static const struct {
		const char *name;
		int unpriv, umo;
	} want[] = { { "allow", 1, 0 }, { "1", 1, 0 }, { "user-mode-only", 1, 1 },
		     { "0", 1, 1 },     { "deny", 0, 0 }, { "2", 0, 0 } };
	char err[256];

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct policy p;
		ASSERT_OK(policy_preset(want[i].name, &p, err, sizeof(err)));
		ASSERT_EQ(p.unprivileged_userfaultfd, want[i].unpriv);
		ASSERT_EQ(p.unprivileged_userfaultfd_user_mode_only, want[i].umo);
		ASSERT_TRUE(p.cover_device);
		ASSERT_EQ(p.privilege, POLICY_PRIV_CAP_SYS_PTRACE);
		const char *name = want[i].umo ? "user-mode-only" : want[i].unpriv ? "allow" : "deny";
		ASSERT_TRUE(!strcmp(policy_name(&p), name));
	}
}

TEST(bad_values_are_rejected_with_the_valid_ones)
{
	static const char *const bad_presets[] = { "3", "permissive", "", "Allow", "user_mode_only" };
	static const char *const bad_knobs[] = { "unprivileged_userfaultfd=2",
						 "unprivileged_userfaultfd_user_mode_only=2",
						 "cover_device=yes", "unprivileged_userfaultfd=",
						 "unprivileged_userfaultfd", "no_such_knob=1",
						 "unprivileged_userfaultfd=01" };
	char err[256];
	struct policy p = POLICY_DEFAULT;

	for (size_t i = 0; i < sizeof(bad_presets) / sizeof(bad_presets[0]); i++) {
		err[0] = '\0';
		ASSERT_ERR(policy_preset(bad_presets[i], &p, err, sizeof(err)), -EINVAL);
		ASSERT_TRUE(strstr(err, "allow") && strstr(err, "user-mode-only") && strstr(err, "deny"));
	}
	for (size_t i = 0; i < sizeof(bad_knobs) / sizeof(bad_knobs[0]); i++) {
		err[0] = '\0';
		ASSERT_ERR(policy_set_knob(&p, bad_knobs[i], err, sizeof(err)), -EINVAL);
		ASSERT_TRUE(strstr(err, "0 and 1") || strstr(err, "unprivileged_userfaultfd_user_mode_only"));
	}
	/* Nothing changed on the way. */
	ASSERT_EQ(p.unprivileged_userfaultfd, 1);
	ASSERT_EQ(p.unprivileged_userfaultfd_user_mode_only, 0);
	ASSERT_TRUE(p.cover_device);
}

TEST(marker_round_trips_and_is_unknown_to_the_kernel)
{
	/* The kernel alone answers the marker call EINVAL. */
	struct policy p = POLICY_DEFAULT;
	ASSERT_EQ(policy_decide(&p, true, &(struct call){ CALL_SYSCALL, UFFDGUARD_MARKER_FLAGS }),
		  VERDICT_EINVAL);
	ASSERT_TRUE((UFFDGUARD_MARKER_FLAGS & (O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY)) == 0);
	for (int bits = 0; bits < 32; bits++) {
		struct policy q = { .unprivileged_userfaultfd = bits & 1,
				    .unprivileged_userfaultfd_user_mode_only = bits >> 1 & 1,
				    .cover_device = bits >> 2 & 1,
				    .privilege = bits >> 3 & 1 ? POLICY_PRIV_NOBODY
							       : POLICY_PRIV_CAP_SYS_PTRACE }, back;
		enum enforcer m = (enum enforcer)(bits >> 4), mback;
		int e = marker_errno(m, &q);
		ASSERT_TRUE(e > 133 && e < 4096); /* beyond libc's errnos, within MAX_ERRNO */
		ASSERT_TRUE(marker_decode(e, &mback, &back));
		ASSERT_EQ(mback, m);
		ASSERT_EQ(back.unprivileged_userfaultfd, q.unprivileged_userfaultfd);
		ASSERT_EQ(back.unprivileged_userfaultfd_user_mode_only,
			  q.unprivileged_userfaultfd_user_mode_only);
		ASSERT_EQ(back.cover_device, q.cover_device);
		/* The filter never sees CAP_SYS_PTRACE; the supervisor as asked. */
		ASSERT_EQ(back.privilege, m == ENFORCER_FILTER ? POLICY_PRIV_NOBODY : q.privilege);
	}
	enum enforcer m;
	ASSERT_TRUE(!marker_decode(EPERM, &m, &p) && !marker_decode(EINVAL, &m, &p));
}

/* The enforcer has two bits: a value this build does not know (a newer
 * enforcer's) is no marker, and no two (enforcer, policy) pairs share an
 * errno. */
TEST(marker_has_room_for_more_enforcers)
{
	bool seen[1 << (POLICY_N_KNOBS + MARKER_ENFORCER_BITS)] = { false };
	struct policy p;
	enum enforcer e;

	for (int bits = 0; bits < 1 << POLICY_N_KNOBS; bits++) {
		struct policy q = POLICY_DEFAULT;
		for (int k = 0; k < POLICY_N_KNOBS; k++)
			policy_knob_put(&q, &policy_knobs[k], bits >> k & 1);
		for (int m = 0; m < ENFORCER_N; m++) {
			int v = marker_errno((enum enforcer)m, &q) - UFFDGUARD_MARKER_ERRNO_BASE;
			ASSERT_TRUE(v >= 0 && v < (int)(sizeof(seen) / sizeof(seen[0])));
			ASSERT_TRUE(!seen[v]);
			seen[v] = true;
		}
		for (int m = ENFORCER_N; m < 1 << MARKER_ENFORCER_BITS; m++)
			ASSERT_TRUE(!marker_decode(UFFDGUARD_MARKER_ERRNO_BASE + (m << POLICY_N_KNOBS | bits),
						   &e, &p));
	}
	ASSERT_TRUE(ENFORCER_N < 1 << MARKER_ENFORCER_BITS); /* room for one more at least */
	ASSERT_TRUE(!marker_decode(UFFDGUARD_MARKER_ERRNO_BASE + (1 << (POLICY_N_KNOBS + MARKER_ENFORCER_BITS)),
				   &e, &p));
}

/* --policy P --set K=V: the preset, then the knobs on top of it. */
TEST(build_applies_knobs_over_the_preset)
{
	struct policy p;
	char err[256];
	const char *sets[] = { "unprivileged_userfaultfd=1", "cover_device=0" };

	ASSERT_OK(policy_build("deny", sets, 2, &p, err, sizeof(err)));
	ASSERT_EQ(p.unprivileged_userfaultfd, 1);
	ASSERT_EQ(p.unprivileged_userfaultfd_user_mode_only, 0);
	ASSERT_TRUE(!p.cover_device);
	const char *bad[] = { "cover_device=1", "unprivileged_userfaultfd=2" };
	ASSERT_ERR(policy_build("allow", bad, 2, &p, err, sizeof(err)), -EINVAL);
	ASSERT_TRUE(strstr(err, "valid values are 0 and 1") != NULL);
	ASSERT_ERR(policy_build("sometimes", NULL, 0, &p, err, sizeof(err)), -EINVAL);
}
