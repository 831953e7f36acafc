// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The BPF LSM program decides with lsm_decide() (enforce/lsm/lsm.h), which
 * calls policy_decide_reason() (policy/decide.h).  Here the same functions,
 * compiled by clang for BPF as the program compiles them, run in the
 * kernel (BPF_PROG_TEST_RUN of a syscall program, which loads where LSM
 * programs do not) over every input, and must answer exactly what the C
 * build answers: every knob value x privilege test x privileged x entry
 * point x flags.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>

#include "harness.h"
#include "lsm-decide.h"
#include "lsm-decide.skel.h"
#include "policy.h"

_Static_assert(EPERM == 1 && EINVAL == 22, "lsm_reason_errno() spells errno values as numbers");

/* none, the flag, the other known flags, unknown bits, upper-half garbage;
 * then every single bit, alone and with the flag, in both halves */
static const uint64_t flag_cases[] = {
	0,
	UFFD_USER_MODE_ONLY,
	O_CLOEXEC,
	O_NONBLOCK,
	O_CLOEXEC | O_NONBLOCK,
	O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY,
	0xfffffffeu,
	0xffffffffu,
	0xdeadbeef00000000ull,
	0xdeadbeef00000000ull | UFFD_USER_MODE_ONLY,
	0xffffffff00000000ull | O_CLOEXEC,
	0xffffffffffffffffull,
};
#define N_FLAG_CASES (sizeof(flag_cases) / sizeof(flag_cases[0]))
#define N_FLAGS (N_FLAG_CASES + 128)

static uint64_t flags_at(unsigned i)
{
	if (i < N_FLAG_CASES)
		return flag_cases[i];
	i -= N_FLAG_CASES;
	return (1ull << (i % 64)) | (i >= 64 ? UFFD_USER_MODE_ONLY : 0);
}

/* Knob values beyond 0 and 1 too: the decision reads them as C truth
 * values on both sides. */
static const int32_t unpriv_values[] = { 0, 1, 2, -1 };
static const int32_t umo_values[] = { 0, 1, 7 };
/* Every entry point, and two values no program produces. */
#define N_ENTRY_VALUES (LSM_N_ENTRIES + 2)
static uint32_t entry_at(unsigned i)
{
	return i < LSM_N_ENTRIES ? i : i == LSM_N_ENTRIES ? 0x7fffffffu : 0xffffffffu;
}

static struct lsm_decide_bpf *open_program(void)
{
	libbpf_set_print(NULL);
	struct lsm_decide_bpf *skel = lsm_decide_bpf__open_and_load();
	if (!skel) {
		int err = errno;
		if (err == EPERM || err == EACCES)
			SKIP("the kernel refused to load a BPF syscall program (%s): needs root "
			     "(CAP_BPF)", strerror(err));
		if (err == EINVAL || err == EOPNOTSUPP)
			SKIP("BPF syscall programs (Linux 5.14) are not available: %s",
			     strerror(err));
		FAIL("loading the BPF program: %s", strerror(err));
	}
	return skel;
}

static void run_case(int prog_fd, struct lsm_decide_case *c)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = c, .ctx_size_in = sizeof(*c));
	int r = bpf_prog_test_run_opts(prog_fd, &opts);
	if (r < 0)
		FAIL("BPF_PROG_TEST_RUN: %s", strerror(-r));
	ASSERT_EQ(opts.retval, 0);
}

TEST(the_bpf_build_of_the_decision_agrees_with_the_c_build_on_every_input)
{
	struct lsm_decide_bpf *skel = open_program();
	int fd = bpf_program__fd(skel->progs.decide_case);
	unsigned long rows = 0, denied = 0, invalid = 0;

	for (unsigned u = 0; u < sizeof(unpriv_values) / sizeof(unpriv_values[0]); u++)
	for (unsigned m = 0; m < sizeof(umo_values) / sizeof(umo_values[0]); m++)
	for (int cover = 0; cover <= 1; cover++)
	for (int privilege = POLICY_PRIV_CAP_SYS_PTRACE; privilege <= POLICY_PRIV_NOBODY; privilege++)
	for (int priv = 0; priv <= 1; priv++)
	for (unsigned e = 0; e < N_ENTRY_VALUES; e++)
	for (unsigned f = 0; f < N_FLAGS; f++) {
		struct policy p = {
			.unprivileged_userfaultfd = unpriv_values[u],
			.unprivileged_userfaultfd_user_mode_only = umo_values[m],
			.cover_device = cover,
			.privilege = (enum policy_privilege)privilege,
		};
		struct lsm_decide_case c = { .policy = p, .flags = flags_at(f),
					     .entry = entry_at(e), .privileged = (uint32_t)priv,
					     .reason = 0xdead, .err = 0xdead };
		run_case(fd, &c);
		enum lsm_reason want = lsm_decide(&p, priv, (enum lsm_entry)c.entry, c.flags);
		int want_err = lsm_reason_errno(want);
		if (c.reason != (uint32_t)want || c.err != (uint32_t)want_err)
			FAIL("knobs %d/%d cover_device=%d privilege=%d privileged=%d entry=%u "
			     "flags=0x%llx: BPF says reason %u errno %u, C says reason %d errno %d",
			     p.unprivileged_userfaultfd, p.unprivileged_userfaultfd_user_mode_only,
			     cover, privilege, priv, c.entry, (unsigned long long)c.flags,
			     c.reason, c.err, (int)want, want_err);
		rows++;
		denied += want_err == EPERM;
		invalid += want_err == EINVAL;
	}
	ASSERT_EQ(rows, 4ul * 3 * 2 * 2 * 2 * N_ENTRY_VALUES * N_FLAGS);
	/* The table is not degenerate: every answer occurs. */
	ASSERT_GT(denied, 0);
	ASSERT_GT(invalid, 0);
	ASSERT_GT(rows - denied - invalid, 0);
	lsm_decide_bpf__destroy(skel);
}

/* The C build itself against policy_decide_reason(), entry by entry: the
 * system calls are the syscall path, the ioctls the device path, a fork
 * event is allowed, anything else refused. */
TEST(entries_map_to_the_policy_paths)
{
	for (int bits = 0; bits < 16; bits++) {
		struct policy p = {
			.unprivileged_userfaultfd = bits & 1,
			.unprivileged_userfaultfd_user_mode_only = bits >> 1 & 1,
			.cover_device = bits >> 2 & 1,
			.privilege = bits >> 3 & 1 ? POLICY_PRIV_NOBODY : POLICY_PRIV_CAP_SYS_PTRACE,
		};
		for (int priv = 0; priv <= 1; priv++)
		for (unsigned f = 0; f < N_FLAGS; f++) {
			uint64_t flags = flags_at(f);
			struct call sys = { CALL_SYSCALL, flags }, dev = { CALL_DEVICE_IOCTL, flags };
			int want_sys = (int)policy_decide_reason(&p, priv, &sys);
			int want_dev = (int)policy_decide_reason(&p, priv, &dev);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_SYSCALL, flags), want_sys);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_I386_SYSCALL, flags), want_sys);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_X32_SYSCALL, flags), want_sys);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_IOCTL, flags), want_dev);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_COMPAT_IOCTL, flags), want_dev);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_X32_IOCTL, flags), want_dev);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_FORK_EVENT, flags), LSM_REASON_FORK_EVENT);
			ASSERT_EQ(lsm_decide(&p, priv, LSM_ENTRY_UNKNOWN, flags),
				  LSM_REASON_UNKNOWN_ENTRY);
			enum verdict v = policy_reason_verdict((enum policy_reason)want_sys);
			ASSERT_EQ(lsm_reason_errno((enum lsm_reason)want_sys),
				  v == VERDICT_EPERM ? EPERM : v == VERDICT_EINVAL ? EINVAL : 0);
		}
	}
	ASSERT_EQ(lsm_reason_errno(LSM_REASON_FORK_EVENT), 0);
	ASSERT_EQ(lsm_reason_errno(LSM_REASON_UNKNOWN_ENTRY), EPERM);
}
