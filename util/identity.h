/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Becoming an unprivileged caller, for tests and the status probe. */
#ifndef UFFDGUARD_IDENTITY_H
#define UFFDGUARD_IDENTITY_H

#include <linux/capability.h> /* CAP_SYS_PTRACE, CAP_SETUID: the kernel's numbers */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The inode of the initial user namespace (PROC_USER_INIT_INO in the
 * kernel's include/linux/proc_ns.h), as /proc/PID/ns/user shows it. */
#define IDENTITY_INIT_USER_NS_INO 0xEFFFFFFDu

/* A uid (also used as gid) that no account and no running process uses. */
uid_t identity_unused_id(void);

/* Drop this process to uid/gid `id` with no supplementary groups and no
 * capabilities, or, with keep_ptrace, with only CAP_SYS_PTRACE
 * (effective and permitted).  Returns 0 or -errno. */
int identity_drop(uid_t id, bool keep_ptrace);

/* The series' privilege test, capable(CAP_SYS_PTRACE), from what /proc
 * shows of another thread: its effective set (CapEff) and the inode of its
 * user namespace.  A capability held inside a user namespace does not
 * count. */
bool identity_privileged(uint64_t cap_eff, ino_t user_ns_ino);

/* Whether this thread has `cap` in its effective set. */
bool identity_has_cap(int cap);

#endif
