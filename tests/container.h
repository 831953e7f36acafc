/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the container tests share: a root file system of busybox-static
 * and the static probe (tests/uffd-probe.c), a profile made by uffdguard,
 * running a command that starts a container and reading what the probe
 * could do.  test-podman runs it under Podman, test-runc under runc
 * directly with a bundle, as containerd and CRI-O do.
 */
#ifndef UFFDGUARD_TEST_CONTAINER_H
#define UFFDGUARD_TEST_CONTAINER_H

#include <stdbool.h>

struct box {
	char dir[64];     /* temporary directory: rootfs/, profile.json, ... */
	char rootfs[96];
	char profile[96];
	char out[8192];   /* the probe's key=value lines */
};

/* What the container runs: the probe through busybox sh, so that the
 * shell's own calls are checked too. */
#define BOX_COMMAND "echo shell | /bin/busybox cat && /bin/uffd-probe"

bool on_path(const char *prog);
void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A temporary directory named for the test, holding rootfs/ with
 * busybox-static and the probe. */
void box_setup(struct box *b, const char *name);
void box_cleanup(struct box *b);
/* uffdguard profile -o b->profile args... (a NULL-terminated list). */
void box_profile(struct box *b, const char *const *args);
/* Run cmd (a shell command that starts the container), with
 * vm.unprivileged_userfaultfd at 1 so that whatever is refused, the
 * profile refused, and keep the probe's output. */
void box_run(struct box *b, const char *cmd);

/* Assert "key=want" in the probe's output; the i386 entry only where
 * the kernel offers it (the probe says "i386=unavailable" otherwise). */
void expect(const struct box *b, const char *key, const char *want);
/* The container could open /dev/userfaultfd. */
bool has_device(const struct box *b);
/* What user-mode-only means for a caller without CAP_SYS_PTRACE (device:
 * check the ioctl too). */
void expect_user_mode_only(const struct box *b, bool device);
/* Everything but creation under deny: EPERM. */
void expect_deny(const struct box *b);
/* Under allow, with vm.unprivileged_userfaultfd at 1: every creation and
 * the device's ioctls succeed; the probe's user-mode-only descriptor still
 * fails its kernel-mode access. */
void expect_allow(const struct box *b);
/* An unmodified base, which refuses userfaultfd by name: every creation
 * refused, but /dev/userfaultfd's ioctl, the gap such a rule leaves. */
void expect_refused_by_name_only(const struct box *b);
/* The base's other rules keep their meaning; default_errno is what the
 * base answers for a call it does not list ("ENOSYS", "EPERM"). */
void expect_base_kept(const struct box *b, const char *default_errno);

#endif
