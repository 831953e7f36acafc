/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vm.unprivileged_userfaultfd, the kernel's own knob, and what it means on
 * the running kernel: `uffdguard sysctl` sets it, `uffdguard status`
 * reports it.  A kernel with uffdguard's patch (kernel/ of the source,
 * after the knobs of the 2020 series) also accepts 2 (deny unprivileged
 * callers altogether) and has a second knob,
 * vm.unprivileged_userfaultfd_covers_dev, that makes /dev/userfaultfd
 * follow the first.
 */
#ifndef UFFDGUARD_SYSCTL_H
#define UFFDGUARD_SYSCTL_H

#include <stdbool.h>

#include "policy.h"

#define SYSCTL_NAME "vm.unprivileged_userfaultfd"
#define SYSCTL_PATH "/proc/sys/vm/unprivileged_userfaultfd"
#define SYSCTL_COVERS_DEV_NAME "vm.unprivileged_userfaultfd_covers_dev"
#define SYSCTL_COVERS_DEV_PATH "/proc/sys/vm/unprivileged_userfaultfd_covers_dev"
/* The value of vm.unprivileged_userfaultfd that denies unprivileged
 * callers, on a kernel with the series (which also has the second knob). */
#define SYSCTL_DENY 2

/* A kernel release as uname -r gives it: MAJOR.MINOR, then nothing or
 * one of ".-+_~" and anything ("6.1.0-28-amd64").  False for anything
 * else ("garbage", "6", "6.x"). */
bool sysctl_parse_release(const char *release, int *major, int *minor);
/* Linux 5.11 changed the meaning of 0 (see sysctl_meaning()).  Lenient,
 * for the running kernel's release: MAJOR.MINOR at its start is enough,
 * and one without even that counts as new. */
bool sysctl_new_semantics(const char *release);

/* The value of vm.unprivileged_userfaultfd (0 or more), or -errno
 * (-ENOENT: no userfaultfd). */
int sysctl_read(void);
/* Write it; 0 or -errno (-EINVAL: a value this kernel refuses). */
int sysctl_write(int value);
/* vm.unprivileged_userfaultfd_covers_dev the same way (-ENOENT: a kernel
 * without the series). */
int sysctl_covers_dev_read(void);
int sysctl_covers_dev_write(int value);

/* The policy a value amounts to for unprivileged callers on such a kernel
 * (a preset: the knob says nothing about the device); false for a value
 * this tool does not know. */
bool sysctl_policy(int value, bool new_semantics, struct policy *p);
/* Its name ("allow", "user-mode-only", "deny"), or "unknown". */
const char *sysctl_policy_name(int value, bool new_semantics);
/* A sentence saying what the value means. */
const char *sysctl_meaning(int value, bool new_semantics);
/* The same for vm.unprivileged_userfaultfd_covers_dev. */
const char *sysctl_covers_dev_meaning(int value);

/* The knob of p no value of the kernel's knobs can express, or NULL:
 * ignore_cap_sys_ptrace=1 (the kernel always exempts CAP_SYS_PTRACE)
 * unless p is allow, which checks nobody anyway. */
const char *sysctl_unexpressed_knob(const struct policy *p);
/* The value whose effect on unprivileged callers is p's on such a kernel,
 * or -1 when none is: deny on 5.11 and later without the series
 * (has_deny false), user-mode-only before 5.11, or a policy with a knob
 * sysctl_unexpressed_knob() names. */
int sysctl_value(const struct policy *p, bool new_semantics, bool has_deny);

#endif
