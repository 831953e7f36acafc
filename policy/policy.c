// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static const struct {
	const char *name;
	const char *alias; /* the reviewer's single knob */
	int unpriv, user_mode_only;
} presets[] = {
	{ "deny", "0", 0, 0 },
	{ "allow", "1", 1, 0 },
	{ "user-mode-only", "2", 1, 1 },
};
#define N_PRESETS (sizeof(presets) / sizeof(presets[0]))

int policy_preset(const char *name, struct policy *p, char *err, size_t err_size)
{
	for (size_t i = 0; i < N_PRESETS; i++) {
		if (strcmp(name, presets[i].name) && strcmp(name, presets[i].alias))
			continue;
		*p = POLICY_DEFAULT;
		p->unprivileged_userfaultfd = presets[i].unpriv;
		p->unprivileged_userfaultfd_user_mode_only = presets[i].user_mode_only;
		return 0;
	}
	snprintf(err, err_size,
		 "unknown policy '%s': valid policies are allow, user-mode-only, deny "
		 "(or the single knob 1 = allow, 2 = user-mode-only, 0 = deny)", name);
	return -EINVAL;
}

static int parse_bool01(const char *s, int *out)
{
	if (!strcmp(s, "0") || !strcmp(s, "1")) {
		*out = s[0] - '0';
		return 0;
	}
	return -EINVAL;
}

int policy_set_knob(struct policy *p, const char *assignment, char *err, size_t err_size)
{
	static const char knobs[] = "unprivileged_userfaultfd, "
				    "unprivileged_userfaultfd_user_mode_only, cover_device";
	const char *eq = strchr(assignment, '=');
	int v;

	if (!eq) {
		snprintf(err, err_size, "'%s' is not KNOB=VALUE (knobs: %s)", assignment, knobs);
		return -EINVAL;
	}
	size_t klen = (size_t)(eq - assignment);
	const char *value = eq + 1;
#define KNOB_IS(n) (klen == strlen(n) && !strncmp(assignment, n, klen))
	if (!KNOB_IS("unprivileged_userfaultfd") &&
	    !KNOB_IS("unprivileged_userfaultfd_user_mode_only") && !KNOB_IS("cover_device")) {
		snprintf(err, err_size, "unknown knob '%.*s' (knobs: %s)", (int)klen, assignment,
			 knobs);
		return -EINVAL;
	}
	if (parse_bool01(value, &v) < 0) {
		snprintf(err, err_size, "bad value '%s' for %.*s: valid values are 0 and 1", value,
			 (int)klen, assignment);
		return -EINVAL;
	}
	if (KNOB_IS("unprivileged_userfaultfd"))
		p->unprivileged_userfaultfd = v;
	else if (KNOB_IS("unprivileged_userfaultfd_user_mode_only"))
		p->unprivileged_userfaultfd_user_mode_only = v;
	else
		p->cover_device = v;
#undef KNOB_IS
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

const char *policy_name(const struct policy *p)
{
	if (!p->unprivileged_userfaultfd)
		return "deny";
	return p->unprivileged_userfaultfd_user_mode_only ? "user-mode-only" : "allow";
}

int policy_format(const struct policy *p, char *buf, size_t size)
{
	return snprintf(buf, size,
			"unprivileged_userfaultfd=%d unprivileged_userfaultfd_user_mode_only=%d "
			"cover_device=%d privileged=%s",
			p->unprivileged_userfaultfd, p->unprivileged_userfaultfd_user_mode_only,
			p->cover_device ? 1 : 0,
			p->privilege == POLICY_PRIV_NOBODY ? "nobody" : "cap_sys_ptrace");
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
