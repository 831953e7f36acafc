/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy: the two knobs of the 2020 series (../shared/reference, patch
 * 2/2) plus our extension, their presets, and how they are read and
 * written.  The decision itself is in decide.h.  Every enforcement
 * mechanism compiles from these; nothing else decides.
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
			  .cover_device = 1,                                      \
			  .privilege = POLICY_PRIV_CAP_SYS_PTRACE })

/* The knobs, each 0 or 1: the series' two, cover_device, and
 * ignore_cap_sys_ptrace (the privilege field: 1 = POLICY_PRIV_NOBODY, so
 * that deny means deny for every caller).  This table is the only place their names are
 * spelled: --set, the supervisor's control files, the formatted policy
 * and `uffdguard status` all go through it.  Knob i is bit i of the
 * marker errno (marker.h), so the order is part of that protocol. */
struct policy_knob {
	const char *name;
	size_t offset;    /* of its __s32 field in struct policy */
	bool from_series; /* one of the series' sysctls; else our extension */
};
#define POLICY_N_KNOBS 4
extern const struct policy_knob policy_knobs[POLICY_N_KNOBS];

int policy_knob_get(const struct policy *p, const struct policy_knob *k);
void policy_knob_put(struct policy *p, const struct policy_knob *k, int value);

/* The presets: "allow" {1,0}, "user-mode-only" {1,1}, "deny" {0,0}, each
 * also by its value of the single knob vm.unprivileged_userfaultfd ("1",
 * "0", "2"): Linux 5.11 and later give 0 and 1 these meanings, the series
 * in kernel/ adds 2. */
struct policy_preset {
	const char *name;
	const char *single_knob;
	int unprivileged_userfaultfd, unprivileged_userfaultfd_user_mode_only;
};
#define POLICY_N_PRESETS 3
extern const struct policy_preset policy_presets[POLICY_N_PRESETS];

/* The preset by name or single-knob value.  Returns 0, or -EINVAL with a
 * message listing the valid names. */
int policy_preset(const char *name, struct policy *p, char *err, size_t err_size);

/* What --policy PRESET --set KNOB=V ... mean, for every command: the
 * preset first, then each knob on top of it, in order.  Returns 0 or
 * -EINVAL with a message. */
int policy_build(const char *preset, const char *const *sets, size_t n_sets, struct policy *p,
		 char *err, size_t err_size);

/* Apply "KNOB=VALUE" (a knob of the table, 0 or 1).  Returns 0 or
 * -EINVAL with a message naming the valid knobs and values; p is then
 * unchanged. */
int policy_set_knob(struct policy *p, const char *assignment, char *err, size_t err_size);

/* The preset whose effect on unprivileged callers the knobs have ("allow",
 * "user-mode-only", "deny"), and a one-line description of every field. */
const char *policy_name(const struct policy *p);
int policy_format(const struct policy *p, char *buf, size_t size);

const char *verdict_name(enum verdict v);

/* A sentence for each reason, as the audit records give it. */
const char *policy_reason_text(enum policy_reason r);

#endif
