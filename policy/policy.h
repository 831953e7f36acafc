/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy: the seed's two knobs (../shared/reference, patch 2/2) plus
 * our extensions, and the one pure function that decides a call.  Every
 * enforcement mechanism (filter, supervisor, profile, sysctl) compiles
 * from this; nothing else decides.
 */
#ifndef UFFDGUARD_POLICY_H
#define UFFDGUARD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Who counts as privileged. */
enum policy_privilege {
	/* CAP_SYS_PTRACE in the caller's effective set, against the initial
	 * user namespace, at the time of the call: capable() in the seed. */
	POLICY_PRIV_CAP_SYS_PTRACE = 0,
	/* Nobody: every caller is unprivileged (seccomp filter mode, which
	 * cannot see capabilities at call time). */
	POLICY_PRIV_NOBODY = 1,
};

struct policy {
	/* vm.unprivileged_userfaultfd of the seed: 0 denies unprivileged
	 * callers altogether, 1 (default) allows them. */
	int unprivileged_userfaultfd;
	/* vm.unprivileged_userfaultfd_user_mode_only of the seed: 1 makes
	 * unprivileged callers pass UFFD_USER_MODE_ONLY; default 0. */
	int unprivileged_userfaultfd_user_mode_only;
	/* Extension: USERFAULTFD_IOC_NEW on /dev/userfaultfd follows the same
	 * rule as the syscall (default true); false leaves it to file
	 * permissions, as upstream Linux does. */
	bool cover_device;
	enum policy_privilege privilege;
};

/* The seed's defaults: {1, 0}, device covered, CAP_SYS_PTRACE. */
#define POLICY_DEFAULT                                                            \
	((struct policy){ .unprivileged_userfaultfd = 1,                          \
			  .unprivileged_userfaultfd_user_mode_only = 0,           \
			  .cover_device = true,                                   \
			  .privilege = POLICY_PRIV_CAP_SYS_PTRACE })

enum call_path {
	CALL_SYSCALL = 0,      /* userfaultfd(flags) on any ABI */
	CALL_DEVICE_IOCTL = 1, /* ioctl(fd, USERFAULTFD_IOC_NEW, flags) */
};

struct call {
	enum call_path path;
	/* The raw 64-bit argument register.  The kernel truncates it to
	 * 32 bits (int flags, or the ioctl's int after new_userfaultfd()),
	 * and so does policy_decide(). */
	uint64_t flags;
};

enum verdict {
	VERDICT_ALLOW = 0, /* let the kernel decide (it may still refuse) */
	VERDICT_EPERM = 1,
	VERDICT_EINVAL = 2,
};

/* Flags the seed accepts: O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY. */
#define POLICY_UFFD_USER_MODE_ONLY 1u
#define POLICY_KNOWN_FLAGS (02000000u | 04000u | POLICY_UFFD_USER_MODE_ONLY)

/* The seed's check, line for line: EPERM before EINVAL.  `privileged` is
 * the result of the privilege test for the caller (ignored, i.e. false,
 * with POLICY_PRIV_NOBODY).  A device ioctl when the device is not covered
 * is always ALLOW. */
enum verdict policy_decide(const struct policy *p, bool privileged, const struct call *c);

/* Presets: "allow" {1,0}, "user-mode-only" {1,1}, "deny" {0,0}, and the
 * reviewer's single knob "0" (deny), "1" (allow), "2" (user-mode-only).
 * Returns 0, or -EINVAL with a message listing the valid names. */
int policy_preset(const char *name, struct policy *p, char *err, size_t err_size);

/* What --policy PRESET --set KNOB=V ... mean, for every command: the
 * preset first, then each knob on top of it, whatever their order on the
 * command line.  Returns 0 or -EINVAL with a message. */
int policy_build(const char *preset, const char *const *sets, size_t n_sets, struct policy *p,
		 char *err, size_t err_size);

/* Apply "KNOB=VALUE": unprivileged_userfaultfd=0|1,
 * unprivileged_userfaultfd_user_mode_only=0|1, cover_device=0|1.
 * Returns 0 or -EINVAL with a message (the valid knobs and values). */
int policy_set_knob(struct policy *p, const char *assignment, char *err, size_t err_size);

/* The preset whose effect on unprivileged callers the knobs have ("allow",
 * "user-mode-only", "deny"), and a one-line description of every field. */
const char *policy_name(const struct policy *p);
int policy_format(const struct policy *p, char *buf, size_t size);

const char *verdict_name(enum verdict v);

#endif
