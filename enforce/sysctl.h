/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vm.unprivileged_userfaultfd and what it means on the running kernel:
 * shared by `status` and `sysctl`. */
#ifndef UFFDGUARD_KNOB_H
#define UFFDGUARD_KNOB_H

#include <stdbool.h>

#define KNOB_NAME "vm.unprivileged_userfaultfd"
#define KNOB_PATH "/proc/sys/vm/unprivileged_userfaultfd"

/* Linux 5.11 changed the meaning of 0 (see knob_meaning()); an
 * unparsable release ("6.18.44-...") counts as new. */
bool knob_new_semantics(const char *release);

/* The knob's value (0 or more), or -errno (-ENOENT: no userfaultfd). */
int knob_read(void);
/* Write the value; 0 or -errno. */
int knob_write(int value);

/* The policy preset the value amounts to on such a kernel ("allow",
 * "user-mode-only", "deny"), and a sentence saying what it means. */
const char *knob_policy(int value, bool new_semantics);
const char *knob_meaning(int value, bool new_semantics);

#endif
