// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

const struct policy_knob policy_knobs[POLICY_N_KNOBS] = {
	{ "unprivileged_userfaultfd", offsetof(struct policy, unprivileged_userfaultfd), true },
	{ "unprivileged_userfaultfd_user_mode_only",
	  offsetof(struct policy, unprivileged_userfaultfd_user_mode_only), true },
	{ "cover_device", offsetof(struct policy, cover_device), false },
	{ "ignore_cap_sys_ptrace", offsetof(struct policy, privilege), false },
};
/* The privilege test is a knob like the others: its field holds 0 or 1. */
_Static_assert(sizeof(enum policy_privilege) == sizeof(__s32) && POLICY_PRIV_CAP_SYS_PTRACE == 0 &&
		       POLICY_PRIV_NOBODY == 1,
	       "ignore_cap_sys_ptrace is the privilege field read as 0 or 1");

const struct policy_preset policy_presets[POLICY_N_PRESETS] = {
	{ "allow", "1", 1, 0 },
	{ "user-mode-only", "0", 1, 1 },
	{ "deny", "2", 0, 0 },
};

int policy_knob_get(const struct policy *p, const struct policy_knob *k)
{
	__s32 v;

	memcpy(&v, (const char *)p + k->offset, sizeof(v));
	return v;
}

void policy_knob_put(struct policy *p, const struct policy_knob *k, int value)
{
	__s32 v = value;

	memcpy((char *)p + k->offset, &v, sizeof(v));
}

/* "a, b, c" of the knob names, for messages. */
static void knob_list(char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < POLICY_N_KNOBS && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
					 policy_knobs[i].name);
}

int policy_preset(const char *name, struct policy *p, char *err, size_t err_size)
{
	const struct policy_preset *ps = policy_presets;

	for (size_t i = 0; i < POLICY_N_PRESETS; i++) {
		if (strcmp(name, ps[i].name) && strcmp(name, ps[i].single_knob))
			continue;
		*p = POLICY_DEFAULT;
		p->unprivileged_userfaultfd = ps[i].unprivileged_userfaultfd;
		p->unprivileged_userfaultfd_user_mode_only = ps[i].unprivileged_userfaultfd_user_mode_only;
		return 0;
	}
	snprintf(err, err_size,
		 "unknown policy '%s': valid policies are %s, %s, %s "
		 "(or the vm.unprivileged_userfaultfd value %s = %s, %s = %s, %s = %s)",
		 name, ps[0].name, ps[1].name, ps[2].name, ps[0].single_knob, ps[0].name,
		 ps[1].single_knob, ps[1].name, ps[2].single_knob, ps[2].name);
	return -EINVAL;
}

int policy_set_knob(struct policy *p, const char *assignment, char *err, size_t err_size)
{
	const char *eq = strchr(assignment, '=');
	char knobs[160];

	knob_list(knobs, sizeof(knobs));
	if (!eq) {
		snprintf(err, err_size, "'%s' is not KNOB=VALUE (knobs: %s)", assignment, knobs);
		return -EINVAL;
	}
	size_t len = (size_t)(eq - assignment);
	const char *value = eq + 1;
	const struct policy_knob *k = NULL;
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		if (strlen(policy_knobs[i].name) == len && !strncmp(assignment, policy_knobs[i].name, len))
			k = &policy_knobs[i];
	if (!k) {
		snprintf(err, err_size, "unknown knob '%.*s' (knobs: %s)", (int)len, assignment, knobs);
		return -EINVAL;
	}
	if (strcmp(value, "0") && strcmp(value, "1")) {
		snprintf(err, err_size, "bad value '%s' for %s: valid values are 0 and 1", value,
			 k->name);
		return -EINVAL;
	}
	policy_knob_put(p, k, value[0] - '0');
	return 0;
}

int policy_build(const char *preset, const char *const *sets, size_t n_sets, struct policy *p,
		 char *err, size_t err_size)
{
	int r = policy_preset(preset, p, err, err_size);
	for (size_t i = 0; r == 0 && i < n_sets; i++)
		r = policy_set_knob(p, sets[i], err, err_size);
	return r;
}

/* Without unprivileged callers, user-mode-only has nothing to restrict. */
const char *policy_name(const struct policy *p)
{
	int unpriv = p->unprivileged_userfaultfd != 0;
	int umo = unpriv && p->unprivileged_userfaultfd_user_mode_only;

	for (size_t i = 0; i < POLICY_N_PRESETS; i++)
		if (policy_presets[i].unprivileged_userfaultfd == unpriv &&
		    policy_presets[i].unprivileged_userfaultfd_user_mode_only == umo)
			return policy_presets[i].name;
	return "?";
}

int policy_format(const struct policy *p, char *buf, size_t size)
{
	size_t used = 0;

	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		used += (size_t)snprintf(buf + (used < size ? used : size), used < size ? size - used : 0,
					 "%s%s=%d", i ? " " : "", policy_knobs[i].name,
					 policy_knob_get(p, &policy_knobs[i]) ? 1 : 0);
	return (int)used;
}

const char *verdict_name(enum verdict v)
{
	switch (v) {
	case VERDICT_ALLOW:
		return "allow";
	case VERDICT_EPERM:
		return "eperm";
	case VERDICT_EINVAL:
		return "einval";
	}
	return "?";
}

const char *policy_reason_text(enum policy_reason r)
{
	switch (r) {
	case POLICY_REASON_DEVICE_NOT_COVERED:
		return "cover_device=0: /dev/userfaultfd is left to its file permissions";
	case POLICY_REASON_UNPRIVILEGED_DENIED:
		return "unprivileged_userfaultfd=0 and the caller lacks CAP_SYS_PTRACE";
	case POLICY_REASON_FLAG_REQUIRED:
		return "unprivileged_userfaultfd_user_mode_only=1, UFFD_USER_MODE_ONLY not set, "
		       "and the caller lacks CAP_SYS_PTRACE";
	case POLICY_REASON_UNKNOWN_FLAGS:
		return "unknown flag bits";
	case POLICY_REASON_PRIVILEGED:
		return "the caller has CAP_SYS_PTRACE in the initial user namespace";
	case POLICY_REASON_FLAG_SET:
		return "UFFD_USER_MODE_ONLY set";
	case POLICY_REASON_UNPRIVILEGED_ALLOWED:
		return "unprivileged_userfaultfd=1";
	case POLICY_N_REASONS:
		break;
	}
	return "?";
}
