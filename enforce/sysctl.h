/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vm.unprivileged_userfaultfd, the kernel's own knob, and what it means on
 * the running kernel: `uffdguard sysctl` sets it, `uffdguard status`
 * reports it.
 */
#ifndef UFFDGUARD_SYSCTL_H
#define UFFDGUARD_SYSCTL_H

#include <stdbool.h>

#include "policy.h"

#define SYSCTL_NAME "vm.unprivileged_userfaultfd"
#define SYSCTL_PATH "/proc/sys/vm/unprivileged_userfaultfd"

/* Linux 5.11 changed the meaning of 0 (see sysctl_meaning()); an
 * unparsable release ("6.18.44-...") counts as new. */
bool sysctl_new_semantics(const char *release);

/* The value (0 or more), or -errno (-ENOENT: no userfaultfd). */
int sysctl_read(void);
/* Write the value; 0 or -errno. */
int sysctl_write(int value);

/* The policy a value amounts to for unprivileged callers on such a kernel
 * (a preset: the knob says nothing about the device); false for a value
 * this tool does not know. */
bool sysctl_policy(int value, bool new_semantics, struct policy *p);
/* Its name ("allow", "user-mode-only", "deny"), or "unknown". */
const char *sysctl_policy_name(int value, bool new_semantics);
/* A sentence saying what the value means. */
const char *sysctl_meaning(int value, bool new_semantics);

/* The value whose effect on unprivileged callers is p's on such a kernel,
 * or -1 when none is: deny since 5.11, user-mode-only before. */
int sysctl_value(const struct policy *p, bool new_semantics);

#endif
