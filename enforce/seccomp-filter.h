/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A policy compiled to a seccomp filter with libseccomp.  Only
 * userfaultfd(2) (x86-64, x32, i386) and ioctl(2) with the low 32 bits of
 * the command equal to USERFAULTFD_IOC_NEW get rules (and seccomp(2) in
 * supervise mode); every other system call is allowed unconditionally, so
 * the kernel's seccomp action cache skips the filter for it.
 */
#ifndef UFFDGUARD_FILTER_H
#define UFFDGUARD_FILTER_H

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>

#include "marker.h"
#include "policy.h"

/* ENFORCER_FILTER: the filter answers every call itself, treating every
 * caller as unprivileged: EPERM where policy_decide() says so, the marker
 * errno for userfaultfd(UFFDGUARD_MARKER_FLAGS); the kernel's own flag
 * check gives the EINVAL.  ENFORCER_SUPERVISOR: every userfaultfd() and
 * every USERFAULTFD_IOC_NEW goes to the user-notification listener (the
 * knobs may change while it runs, so any of them may be refused), and
 * seccomp(SECCOMP_SET_MODE_FILTER) with SECCOMP_FILTER_FLAG_NEW_LISTENER
 * fails with EBUSY even after the supervisor is gone.
 * Returns 0 or -errno with a message in err. */
int filter_build(const struct policy *p, enum enforcer mode, scmp_filter_ctx *ctx,
		 char *err, size_t err_size);

/* Which call a seccomp notification is: fills *c and *abi ("x86_64",
 * "x32", "i386") and returns true for userfaultfd() and for ioctl() with
 * the command USERFAULTFD_IOC_NEW (low 32 bits), false otherwise. */
bool filter_classify(const struct seccomp_data *d, struct call *c, const char **abi);

static inline bool filter_is_marker(const struct call *c)
{
	return c->path == CALL_SYSCALL && (uint32_t)c->flags == UFFDGUARD_MARKER_FLAGS;
}

#endif
