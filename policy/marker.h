/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How `uffdguard status` learns, from inside, that `uffdguard run` is
 * enforcing a policy on it.  The filter (and the supervisor) answer one
 * otherwise meaningless call, userfaultfd(UFFDGUARD_MARKER_FLAGS), with an
 * errno that encodes the mode and the policy.  The kernel alone answers
 * that call with EINVAL (unknown flag bits), so asking has no effect.
 * Only the low 32 bits of the argument are compared, like every rule.
 */
#ifndef UFFDGUARD_MARKER_H
#define UFFDGUARD_MARKER_H

#include <stdbool.h>

#include "policy.h"

#define UFFDGUARD_MARKER_FLAGS 0x55464700u /* "UFG", unknown to the kernel */
#define UFFDGUARD_MARKER_ERRNO_BASE 3000

enum marker_mode {
	MARKER_MODE_FILTER = 0,
	MARKER_MODE_SUPERVISE = 1,
};

/* errno = BASE + (mode << 3 | cover_device << 2 | user_mode_only << 1 | unprivileged) */
static inline int marker_errno(enum marker_mode mode, const struct policy *p)
{
	return UFFDGUARD_MARKER_ERRNO_BASE +
	       ((int)mode << 3 | (p->cover_device ? 1 : 0) << 2 |
		(p->unprivileged_userfaultfd_user_mode_only ? 1 : 0) << 1 |
		(p->unprivileged_userfaultfd ? 1 : 0));
}

/* Decodes an errno from the marker call (the policy with the privilege
 * test of that mode); false if it is not ours. */
static inline bool marker_decode(int err, enum marker_mode *mode, struct policy *p)
{
	int v = err - UFFDGUARD_MARKER_ERRNO_BASE;

	if (v < 0 || v > 15)
		return false;
	*p = POLICY_DEFAULT;
	p->unprivileged_userfaultfd = v & 1;
	p->unprivileged_userfaultfd_user_mode_only = v >> 1 & 1;
	p->cover_device = v >> 2 & 1;
	*mode = (enum marker_mode)(v >> 3 & 1);
	/* The mode implies the privilege test (see uffdguard-run(1)). */
	p->privilege = *mode == MARKER_MODE_FILTER ? POLICY_PRIV_NOBODY : POLICY_PRIV_CAP_SYS_PTRACE;
	return true;
}

#endif
