// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compiled filter as a truth table, offline: filter_build() for every
 * knob combination and both modes, exported as BPF and run here on
 * seccomp_data for each ABI x call x flags, against policy_decide().
 */
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <linux/userfaultfd.h>
#include <sys/mman.h>

#include "seccomp-filter.h"
#include "bpf.h"
#include "harness.h"
#include "marker.h"
#include "policy.h"

#define X32_BIT 0x40000000

static void compile(const struct policy *p, enum enforcer mode, struct bpf_prog *out)
{
	char err[256];
	scmp_filter_ctx ctx;

	if (filter_build(p, mode, &ctx, err, sizeof(err)) < 0)
		FAIL("filter_build: %s", err);
	bpf_export(ctx, out);
	seccomp_release(ctx);
}

static const struct abi {
	uint32_t arch;
	int nr_uffd, nr_ioctl, nr_seccomp;
	const char *name;
} abis[] = {
	{ AUDIT_ARCH_X86_64, 323, 16, 317, "x86_64" },
	{ AUDIT_ARCH_X86_64, X32_BIT | 323, X32_BIT | 514, X32_BIT | 317, "x32" },
	{ AUDIT_ARCH_I386, 374, 54, 354, "i386" },
};

/* Flag values: every bit alone and with the flag, known sets, the marker,
 * and upper-half garbage over each. */
static size_t flag_values(uint64_t *v)
{
	size_t n = 0;
	static const uint64_t base[] = { 0, 1, O_CLOEXEC, O_NONBLOCK | 1, O_CLOEXEC | O_NONBLOCK,
					 UFFDGUARD_MARKER_FLAGS, UFFDGUARD_MARKER_FLAGS | 1,
					 UFFDGUARD_MARKER_FLAGS ^ 0x100, 0xffffffff, 0xfffffffe };
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		v[n++] = base[i];
	for (int b = 0; b < 32; b++) {
		v[n++] = 1ull << b;
		v[n++] = 1ull << b | 1;
	}
	size_t low = n;
	for (size_t i = 0; i < low; i++) {
		v[n++] = v[i] | 0xffffffff00000000ull;
		v[n++] = v[i] | 0x0000000100000000ull;
	}
	return n;
}

static uint32_t expected(const struct policy *p, enum enforcer mode, enum call_path path,
			 uint64_t flags)
{
	if (mode == ENFORCER_SUPERVISOR)
		return SECCOMP_RET_USER_NOTIF;
	struct call c = { path, flags };
	if (filter_is_marker(&c))
		return SECCOMP_RET_ERRNO | (uint32_t)marker_errno(mode, p);
	/* The filter treats everyone as unprivileged; EINVAL is the kernel's. */
	return policy_decide(p, false, &c) == VERDICT_EPERM ? SECCOMP_RET_ERRNO | EPERM
							    : SECCOMP_RET_ALLOW;
}

TEST_TIMEOUT(filter_agrees_with_policy_decide_on_every_abi, 120)
{
	static struct bpf_prog prog;
	uint64_t flags[512];
	size_t n_flags = flag_values(flags);
	unsigned checked = 0;

	for (int mode = 0; mode < 2; mode++) {
		for (int bits = 0; bits < 8; bits++) {
			struct policy p = { .unprivileged_userfaultfd = bits & 1,
					    .unprivileged_userfaultfd_user_mode_only = bits >> 1 & 1,
					    .cover_device = bits >> 2 & 1,
					    .privilege = POLICY_PRIV_NOBODY };
			compile(&p, (enum enforcer)mode, &prog);
			for (size_t a = 0; a < sizeof(abis) / sizeof(abis[0]); a++) {
				bool compat = abis[a].arch == AUDIT_ARCH_I386;
				for (size_t i = 0; i < n_flags; i++) {
					/* The i386 entry passes 32-bit registers. */
					uint64_t f = compat ? (uint32_t)flags[i] : flags[i];
					struct seccomp_data d = { .nr = abis[a].nr_uffd,
								  .arch = abis[a].arch,
								  .args = { f, 0x1234, 0 } };
					uint32_t got = bpf_run(&prog, &d),
						 want = expected(&p, (enum enforcer)mode,
								 CALL_SYSCALL, f);
					if (got != want)
						FAIL("mode %d knobs %d: %s userfaultfd(0x%llx): 0x%x, want 0x%x",
						     mode, bits, abis[a].name, (unsigned long long)f, got, want);
					/* The device: garbage in the command's upper half too. */
					uint64_t cmds[] = { USERFAULTFD_IOC_NEW,
							    0xffffffff00000000ull | USERFAULTFD_IOC_NEW };
					for (int k = 0; k < (compat ? 1 : 2); k++) {
						d = (struct seccomp_data){ .nr = abis[a].nr_ioctl,
									   .arch = abis[a].arch,
									   .args = { 3, cmds[k], f } };
						got = bpf_run(&prog, &d);
						want = expected(&p, (enum enforcer)mode,
								CALL_DEVICE_IOCTL, f);
						if (mode == ENFORCER_FILTER && !p.cover_device)
							want = SECCOMP_RET_ALLOW;
						if (got != want)
							FAIL("mode %d knobs %d: %s ioctl(0x%llx, 0x%llx): 0x%x, want 0x%x",
							     mode, bits, abis[a].name,
							     (unsigned long long)cmds[k],
							     (unsigned long long)f, got, want);
						checked++;
					}
					/* Other ioctls and other syscalls: untouched. */
					d = (struct seccomp_data){ .nr = abis[a].nr_ioctl,
								   .arch = abis[a].arch,
								   .args = { 3, FIONREAD, f } };
					ASSERT_EQ(bpf_run(&prog, &d), SECCOMP_RET_ALLOW);
					d.args[1] = USERFAULTFD_IOC_NEW + 1;
					ASSERT_EQ(bpf_run(&prog, &d), SECCOMP_RET_ALLOW);
					d.nr = compat ? 20 : 39; /* getpid */
					ASSERT_EQ(bpf_run(&prog, &d), SECCOMP_RET_ALLOW);
					checked += 4;
				}
			}
		}
	}
	ASSERT_GT(checked, 10000);
}

/* Supervise mode: no second listener, even once the supervisor is gone. */
TEST(supervise_refuses_a_second_listener_on_every_abi)
{
	static struct bpf_prog prog;
	static const struct {
		uint64_t op, flags;
		bool refused;
	} cases[] = {
		{ SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, true },
		{ SECCOMP_SET_MODE_FILTER,
		  SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC, true },
		{ SECCOMP_SET_MODE_FILTER | 0xffffffff00000000ull,
		  SECCOMP_FILTER_FLAG_NEW_LISTENER | 0xffffffff00000000ull, true },
		{ SECCOMP_SET_MODE_FILTER, 0, false },
		{ SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, false },
		{ SECCOMP_GET_NOTIF_SIZES, SECCOMP_FILTER_FLAG_NEW_LISTENER, false },
	};
	struct policy p = POLICY_DEFAULT;

	for (int mode = 0; mode < 2; mode++) {
		compile(&p, (enum enforcer)mode, &prog);
		for (size_t a = 0; a < sizeof(abis) / sizeof(abis[0]); a++) {
			bool compat = abis[a].arch == AUDIT_ARCH_I386;
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
				/* The i386 entry passes 32-bit registers. */
				uint64_t op = compat ? (uint32_t)cases[i].op : cases[i].op,
					 flags = compat ? (uint32_t)cases[i].flags : cases[i].flags;
				struct seccomp_data d = { .nr = abis[a].nr_seccomp,
							  .arch = abis[a].arch,
							  .args = { op, flags, 0x1000 } };
				uint32_t got = bpf_run(&prog, &d),
					 want = mode == ENFORCER_SUPERVISOR && cases[i].refused
							? SECCOMP_RET_ERRNO | EBUSY
							: SECCOMP_RET_ALLOW;
				if (got != want)
					FAIL("mode %d %s seccomp(0x%llx, 0x%llx): 0x%x, want 0x%x",
					     mode, abis[a].name, (unsigned long long)op,
					     (unsigned long long)flags, got, want);
			}
		}
	}
}

/* The program does not grow past what the kernel accepts. */
TEST(filter_fits_the_kernel_limit)
{
	static struct bpf_prog prog;
	struct policy deny = { .unprivileged_userfaultfd = 0, .cover_device = true,
			       .privilege = POLICY_PRIV_NOBODY };
	compile(&deny, ENFORCER_FILTER, &prog);
	ASSERT_LT(prog.len, 1024);
}
