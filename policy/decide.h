/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The decision of the 2020 patch series "Control over userfaultfd
 * kernel-fault handling" (patch 2/2, SYSCALL_DEFINE1(userfaultfd)), with the
 * reason for it.  Every mechanism decides through policy_decide_reason():
 * the seccomp filter, the profile and the supervisor in user space, and the
 * BPF LSM program in the kernel.  So this header is freestanding: no libc,
 * only the kernel's fixed-size types (from vmlinux.h in a BPF program,
 * from <linux/types.h> elsewhere), and static inline functions.
 */
#ifndef UFFDGUARD_DECIDE_H
#define UFFDGUARD_DECIDE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Who counts as privileged. */
enum policy_privilege {
	/* CAP_SYS_PTRACE in the caller's effective set, against the initial
	 * user namespace, at the time of the call: capable() in the series. */
	POLICY_PRIV_CAP_SYS_PTRACE = 0,
	/* Nobody: every caller is unprivileged (seccomp filter mode, which
	 * cannot see capabilities at call time; or the knob
	 * ignore_cap_sys_ptrace=1, so that deny means deny for everyone). */
	POLICY_PRIV_NOBODY = 1,
};

/* Fixed-size fields: a BPF map holds this structure as it is. */
struct policy {
	/* vm.unprivileged_userfaultfd of the series: 0 denies unprivileged
	 * callers altogether, 1 (default) allows them. */
	__s32 unprivileged_userfaultfd;
	/* vm.unprivileged_userfaultfd_user_mode_only of the series: 1 makes
	 * unprivileged callers pass UFFD_USER_MODE_ONLY; default 0. */
	__s32 unprivileged_userfaultfd_user_mode_only;
	/* Extension: USERFAULTFD_IOC_NEW on /dev/userfaultfd follows the same
	 * rule as the syscall (default 1); 0 leaves it to file permissions,
	 * as upstream Linux does.  An __s32 like the two knobs above, so that
	 * one table (policy.h) reaches all three alike. */
	__s32 cover_device;
	/* Also the knob ignore_cap_sys_ptrace (policy.h): 0 or 1. */
	enum policy_privilege privilege;
};

enum call_path {
	CALL_SYSCALL = 0,      /* userfaultfd(flags) on any ABI */
	CALL_DEVICE_IOCTL = 1, /* ioctl(fd, USERFAULTFD_IOC_NEW, flags) */
};

struct call {
	enum call_path path;
	/* The raw 64-bit argument register.  The kernel truncates it to
	 * 32 bits (int flags, or the ioctl's int after new_userfaultfd()),
	 * and so does the decision. */
	__u64 flags;
};

enum verdict {
	VERDICT_ALLOW = 0, /* let the kernel decide (it may still refuse) */
	VERDICT_EPERM = 1,
	VERDICT_EINVAL = 2,
};

/* Why: each reason implies one verdict (policy_reason_verdict()). */
enum policy_reason {
	POLICY_REASON_DEVICE_NOT_COVERED = 0, /* allow: cover_device=0 */
	POLICY_REASON_UNPRIVILEGED_DENIED,    /* EPERM: unprivileged_userfaultfd=0 */
	POLICY_REASON_FLAG_REQUIRED,          /* EPERM: user-mode-only knob, no flag */
	POLICY_REASON_UNKNOWN_FLAGS,          /* EINVAL */
	POLICY_REASON_PRIVILEGED,             /* allow: a check was needed and passed */
	POLICY_REASON_FLAG_SET,               /* allow: the flag the knob asks for */
	POLICY_REASON_UNPRIVILEGED_ALLOWED,   /* allow: unprivileged_userfaultfd=1 */
	POLICY_N_REASONS
};

/* Flags the series accepts: O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY. */
#define POLICY_UFFD_USER_MODE_ONLY 1u
#define POLICY_KNOWN_FLAGS (02000000u | 04000u | POLICY_UFFD_USER_MODE_ONLY)

/* The series' check, line for line: EPERM before EINVAL.  `privileged` is
 * the result of the privilege test for the caller (ignored, i.e. false,
 * with POLICY_PRIV_NOBODY).  A device ioctl when the device is not
 * covered is always allowed. */
static inline enum policy_reason policy_decide_reason(const struct policy *p, _Bool privileged,
						      const struct call *c)
{
	/* Both paths reach new_userfaultfd(int flags): 32 bits count. */
	__u32 flags = (__u32)c->flags;
	_Bool need_cap_check = 0;

	if (c->path == CALL_DEVICE_IOCTL && !p->cover_device)
		return POLICY_REASON_DEVICE_NOT_COVERED;
	if (p->privilege == POLICY_PRIV_NOBODY)
		privileged = 0;

	/* Patch 2/2, fs/userfaultfd.c, SYSCALL_DEFINE1(userfaultfd): */
	if (!p->unprivileged_userfaultfd)
		need_cap_check = 1;
	if (p->unprivileged_userfaultfd_user_mode_only && (flags & POLICY_UFFD_USER_MODE_ONLY) == 0)
		need_cap_check = 1;
	if (need_cap_check && !privileged)
		return !p->unprivileged_userfaultfd ? POLICY_REASON_UNPRIVILEGED_DENIED
						    : POLICY_REASON_FLAG_REQUIRED;
	/* Patch 1/2: unknown flag bits. */
	if (flags & ~POLICY_KNOWN_FLAGS)
		return POLICY_REASON_UNKNOWN_FLAGS;
	if (need_cap_check)
		return POLICY_REASON_PRIVILEGED;
	return p->unprivileged_userfaultfd_user_mode_only ? POLICY_REASON_FLAG_SET
							  : POLICY_REASON_UNPRIVILEGED_ALLOWED;
}

static inline enum verdict policy_reason_verdict(enum policy_reason r)
{
	switch (r) {
	case POLICY_REASON_UNPRIVILEGED_DENIED:
	case POLICY_REASON_FLAG_REQUIRED:
		return VERDICT_EPERM;
	case POLICY_REASON_UNKNOWN_FLAGS:
		return VERDICT_EINVAL;
	default:
		return VERDICT_ALLOW;
	}
}

static inline enum verdict policy_decide(const struct policy *p, _Bool privileged,
					 const struct call *c)
{
	return policy_reason_verdict(policy_decide_reason(p, privileged, c));
}

#endif
