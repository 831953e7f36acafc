// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <string.h>

#include "seccomp-filter.h"

#define LOW32 0xffffffffu

/* The ABIs whose entries reach new_userfaultfd(): libseccomp token, the
 * arch value a notification carries, and a name for the audit record. */
static const struct abi {
	uint32_t token, audit_arch;
	const char *name;
} abis[] = {
#if defined(__x86_64__)
	{ SCMP_ARCH_X86_64, AUDIT_ARCH_X86_64, "x86_64" },
	{ SCMP_ARCH_X32, AUDIT_ARCH_X86_64, "x32" }, /* nr | __X32_SYSCALL_BIT */
	{ SCMP_ARCH_X86, AUDIT_ARCH_I386, "i386" },  /* int 0x80, syscall 374 */
#else
	{ SCMP_ARCH_NATIVE, 0, "native" },
#endif
};
#define N_ABIS (sizeof(abis) / sizeof(abis[0]))

static int add_rule(scmp_filter_ctx ctx, uint32_t action, enum call_path path, uint32_t mask,
		    uint32_t value)
{
	/* SCMP_CMP32 masks with 0xffffffff: the upper half is never compared. */
	if (path == CALL_SYSCALL)
		return seccomp_rule_add(ctx, action, SCMP_SYS(userfaultfd), 1,
					SCMP_A0_32(SCMP_CMP_MASKED_EQ, mask, value));
	return seccomp_rule_add(ctx, action, SCMP_SYS(ioctl), 2,
				SCMP_A1_32(SCMP_CMP_MASKED_EQ, LOW32, USERFAULTFD_IOC_NEW),
				SCMP_A2_32(SCMP_CMP_MASKED_EQ, mask, value));
}

/*
 * Rules of different actions must not overlap: libseccomp does not define
 * which of two matching rules wins.  The marker value has UFFD_USER_MODE_ONLY
 * clear, so an EPERM rule for that half would also match it; cut the marker
 * out: (mask, value) minus one point is the union, over each bit b not in
 * mask, of the values that differ from the marker in bit b.
 */
static int add_rule_except_marker(scmp_filter_ctx ctx, uint32_t action, uint32_t mask,
				  uint32_t value)
{
	if ((UFFDGUARD_MARKER_FLAGS & mask) != value)
		return add_rule(ctx, action, CALL_SYSCALL, mask, value);
	for (unsigned b = 0; b < 32; b++) {
		uint32_t bit = 1u << b;
		if (mask & bit)
			continue;
		int r = add_rule(ctx, action, CALL_SYSCALL, mask | bit,
				 value | (~UFFDGUARD_MARKER_FLAGS & bit));
		if (r < 0)
			return r;
	}
	return 0;
}

static int build_enforcing(scmp_filter_ctx ctx, const struct policy *p)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)marker_errno(ENFORCER_FILTER, p)),
				 SCMP_SYS(userfaultfd), 1,
				 SCMP_A0_32(SCMP_CMP_MASKED_EQ, LOW32, UFFDGUARD_MARKER_FLAGS));
	if (r < 0)
		return r;
	/* The series' EPERM depends on the flags only through
	 * UFFD_USER_MODE_ONLY: ask policy_decide() about each half. */
	for (int path = CALL_SYSCALL; path <= CALL_DEVICE_IOCTL; path++) {
		for (uint32_t umo = 0; umo <= POLICY_UFFD_USER_MODE_ONLY; umo++) {
			struct call c = { .path = (enum call_path)path, .flags = umo };
			if (policy_decide(p, false, &c) != VERDICT_EPERM)
				continue;
			r = path == CALL_SYSCALL
				    ? add_rule_except_marker(ctx, SCMP_ACT_ERRNO(EPERM),
							     POLICY_UFFD_USER_MODE_ONLY, umo)
				    : add_rule(ctx, SCMP_ACT_ERRNO(EPERM), CALL_DEVICE_IOCTL,
					       POLICY_UFFD_USER_MODE_ONLY, umo);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int build_notifying(scmp_filter_ctx ctx)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(userfaultfd), 0);
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
			     SCMP_A1_32(SCMP_CMP_MASKED_EQ, LOW32, USERFAULTFD_IOC_NEW));
	if (r < 0)
		return r;
	/* Of two filters answering USER_NOTIF the newest wins, and the kernel
	 * refuses a second listener (EBUSY) only while ours is open: once the
	 * supervisor is gone, the tree could stack its own listener and
	 * continue every call itself.  Keep the EBUSY for good. */
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EBUSY), SCMP_SYS(seccomp), 2,
				SCMP_A0_32(SCMP_CMP_MASKED_EQ, LOW32, SECCOMP_SET_MODE_FILTER),
				SCMP_A1_32(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
					   SECCOMP_FILTER_FLAG_NEW_LISTENER));
}

int filter_build(const struct policy *p, enum enforcer mode, scmp_filter_ctx *out, char *err,
		 size_t err_size)
{
	const char *stage = "seccomp_init";
	int r = -ENOMEM;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx)
		goto fail;
	/* Real errnos from seccomp_load(), not -ECANCELED. */
	stage = "seccomp_attr_set";
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
		goto fail;
	for (size_t i = 0; i < N_ABIS; i++) {
		if (abis[i].token == SCMP_ARCH_NATIVE || seccomp_arch_exist(ctx, abis[i].token) == 0)
			continue;
		stage = "seccomp_arch_add";
		if ((r = seccomp_arch_add(ctx, abis[i].token)) < 0)
			goto fail;
	}
	if (mode == ENFORCER_SUPERVISOR && seccomp_api_get() < 5) {
		r = -EOPNOTSUPP;
		stage = "seccomp user notification";
		goto fail;
	}
	stage = "adding the rules";
	r = mode == ENFORCER_FILTER ? build_enforcing(ctx, p) : build_notifying(ctx);
	if (r < 0)
		goto fail;
	*out = ctx;
	return 0;
fail:
	snprintf(err, err_size, "%s: %s", stage, strerror(-r));
	if (ctx)
		seccomp_release(ctx);
	return r;
}

bool filter_classify(const struct seccomp_data *d, struct call *c, const char **abi)
{
	/* Resolving by name walks libseccomp's tables: once. */
	static int nr_uffd[N_ABIS], nr_ioctl[N_ABIS];
	static bool resolved;

	if (!resolved) {
		for (size_t i = 0; i < N_ABIS; i++) {
			nr_uffd[i] = seccomp_syscall_resolve_name_arch(abis[i].token, "userfaultfd");
			nr_ioctl[i] = seccomp_syscall_resolve_name_arch(abis[i].token, "ioctl");
		}
		resolved = true;
	}
	for (size_t i = 0; i < N_ABIS; i++) {
		uint32_t arch = abis[i].audit_arch ? abis[i].audit_arch : d->arch;
		if (d->arch != arch)
			continue;
		if (d->nr == nr_uffd[i]) {
			*c = (struct call){ .path = CALL_SYSCALL, .flags = d->args[0] };
			*abi = abis[i].name;
			return true;
		}
		if (d->nr == nr_ioctl[i] &&
		    (uint32_t)d->args[1] == (uint32_t)USERFAULTFD_IOC_NEW) {
			*c = (struct call){ .path = CALL_DEVICE_IOCTL, .flags = d->args[2] };
			*abi = abis[i].name;
			return true;
		}
	}
	return false;
}
