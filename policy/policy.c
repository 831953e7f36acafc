// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

enum verdict policy_decide(const struct policy *p, bool privileged, const struct call *c)
{
	/* Both paths reach new_userfaultfd(int flags): 32 bits count. */
	uint32_t flags = (uint32_t)c->flags;

	if (c->path == CALL_DEVICE_IOCTL && !p->cover_device)
		return VERDICT_ALLOW;
	if (p->privilege == POLICY_PRIV_NOBODY)
		privileged = false;

	/* Patch 2/2, fs/userfaultfd.c, SYSCALL_DEFINE1(userfaultfd): */
	bool need_cap_check = false;
	if (!p->unprivileged_userfaultfd)
		need_cap_check = true;
	if (p->unprivileged_userfaultfd_user_mode_only && (flags & POLICY_UFFD_USER_MODE_ONLY) == 0)
		need_cap_check = true;
	if (need_cap_check && !privileged)
		return VERDICT_EPERM;
	/* Patch 1/2: unknown flag bits. */
	if (flags & ~POLICY_KNOWN_FLAGS)
		return VERDICT_EINVAL;
	return VERDICT_ALLOW;
}

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
