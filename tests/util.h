/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the tests on the real kernel. */
#ifndef UFFDGUARD_TEST_UTIL_H
#define UFFDGUARD_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sysctl.h" /* SYSCTL_PATH */

/* Who runs a function in run_as(). */
enum who {
	WHO_ROOT,          /* this process's identity */
	WHO_UNPRIV,        /* an unused uid/gid, no capabilities */
	WHO_UNPRIV_PTRACE, /* the same, keeping only CAP_SYS_PTRACE */
};

/* Run fn(arg) in a forked child as `who` and return its result; a
 * failure to drop privileges or a crash fails the calling test. */
int run_as(enum who who, int (*fn)(void *), void *arg);

void require_root(void);
int sysctl_get(void);
void sysctl_set(int value); /* the harness restores it after the case */

/* A fresh anonymous mapping of n pages, not populated. */
void *map_pages(size_t n);
size_t page_size(void);
double now_ms(void);

/* Installs in this process a seccomp filter that is not uffdguard's (as a
 * container runtime's profile): every userfaultfd(2) fails with errno
 * err.  Returns 0 or -errno. */
int refuse_userfaultfd_by_seccomp(int err);

/* Make a private /dev/userfaultfd node (major:minor from sysfs) in a new
 * temporary directory, owned by uid:gid with the given mode.  The path is
 * written to path (PATH_MAX); skips the test if the kernel has no device. */
void make_private_device(char *path, uid_t uid, gid_t gid, mode_t mode);
void remove_private_device(const char *path);

#endif
