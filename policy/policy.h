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

#include "decide.h"

/* The series' defaults: {1, 0}, device covered, CAP_SYS_PTRACE. */
#define POLICY_DEFAULT                                                            \
	((struct policy){ .unprivileged_userfaultfd = 1,                          \
			  .unprivileged_userfaultfd_user_mode_only = 0,           \
			  .cover_device = true,                                   \
			  .privilege = POLICY_PRIV_CAP_SYS_PTRACE })

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

/* A sentence for each reason, as the audit records give it. */
const char *policy_reason_text(enum policy_reason r);

#endif
