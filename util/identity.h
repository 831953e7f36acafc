/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Becoming an unprivileged caller, for tests and the status probe. */
#ifndef UFFDGUARD_IDENTITY_H
#define UFFDGUARD_IDENTITY_H

#include <stdbool.h>
#include <sys/types.h>

/* A uid (also used as gid) that no account and no running process uses. */
uid_t identity_unused_id(void);

/* Drop this process to uid/gid `id` with no supplementary groups and no
 * capabilities, or, with keep_ptrace, with only CAP_SYS_PTRACE
 * (effective and permitted).  Returns 0 or -errno. */
int identity_drop(uid_t id, bool keep_ptrace);

/* Whether this thread has `cap` in its effective set. */
bool identity_has_cap(int cap);

#endif
