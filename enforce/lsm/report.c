// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

void lsm_report_read(struct lsm_report *r)
{
	*r = (struct lsm_report){ .own_scope = -1 };
	lsm_support_probe(&r->support, false);
	r->support_err = lsm_support_check(&r->support, r->why_not, sizeof(r->why_not));
	r->state_err = lsm_state_read(&r->state, r->state_why, sizeof(r->state_why));

	/* "0::/path" in /proc/self/cgroup: the v2 hierarchy. */
	char line[4200];
	FILE *f = fopen("/proc/self/cgroup", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(r->cgroup, sizeof(r->cgroup), "%.4095s", line + 3);
		}
	if (f)
		fclose(f);

	/* The deepest entry on the path to the root, else the host default. */
	char path[sizeof(r->cgroup)];
	snprintf(path, sizeof(path), "%s", r->cgroup);
	while (r->own_scope < 0 && path[0] == '/' && path[1]) {
		for (size_t i = 0; i < r->state.n_scopes; i++)
			if (!strcmp(r->state.scopes[i].cgroup, path))
				r->own_scope = (ssize_t)i;
		*strrchr(path, '/') = '\0';
	}
	for (size_t i = 0; r->own_scope < 0 && i < r->state.n_scopes; i++)
		if (!r->state.scopes[i].cgroup[0])
			r->own_scope = (ssize_t)i;
}

void lsm_report_free(struct lsm_report *r)
{
	lsm_state_free(&r->state);
}

static bool enforcing(const struct lsm_report *r)
{
	return r->state_err == 0 && r->state.enforcing && r->state.format_ok &&
	       r->support.bpf_active;
}

static const char *scope_name(const struct lsm_scope_state *s, char *buf, size_t size)
{
	if (!s->cgroup[0])
		return "the host default";
	snprintf(buf, size, "cgroup %s", s->cgroup);
	return buf;
}

/* Whether the policy lets an unprivileged caller create a descriptor
 * without the flag by this path. */
static bool allows_flagless(const struct policy *p, enum call_path path)
{
	struct call c = { .path = path, .flags = 0 };
	return policy_decide(p, false, &c) == VERDICT_ALLOW;
}

bool lsm_report_notes(const struct lsm_report *r, const struct lsm_context *c,
		      void (*note)(enum lsm_note kind, const char *text, void *arg), void *arg)
{
	char text[6144], name[LSM_PATH_MAX + 16];

	if (r->state_err == -EPERM) {
		note(LSM_NOTE_NOT_CHECKED, "the BPF LSM state: reading " LSM_PIN_DIR " needs root",
		     arg);
		return false;
	}
	if (r->state_err < 0) {
		snprintf(text, sizeof(text), "the BPF LSM state: %s", r->state_why);
		note(LSM_NOTE_NOT_CHECKED, text, arg);
		return false;
	}
	const struct lsm_state *st = &r->state;
	if (st->pinned && !st->format_ok) {
		snprintf(text, sizeof(text),
			 "%s holds BPF LSM maps of format %u, which this uffdguard does not read: "
			 "'uffdguard lsm remove' removes them", LSM_PIN_DIR, st->format_version);
		note(LSM_NOTE_WARNING, text, arg);
		return false;
	}
	if (st->pinned && !st->enforcing) {
		note(LSM_NOTE_WARNING, "the BPF LSM maps are pinned but its program is not attached: "
				       "it enforces nothing ('uffdguard lsm apply' or 'remove')", arg);
		return false;
	}
	if (st->enforcing && !r->support.bpf_active) {
		snprintf(text, sizeof(text), "the BPF LSM program is loaded but never runs: %s",
			 r->why_not);
		note(LSM_NOTE_WARNING, text, arg);
		return false;
	}
	if (!enforcing(r))
		return false;

	if (r->own_scope >= 0) {
		const struct lsm_scope_state *s = &st->scopes[r->own_scope];
		char knobs[256];
		policy_format(&s->policy, knobs, sizeof(knobs));
		*strstr(knobs, " privileged=") = '\0';
		snprintf(text, sizeof(text),
			 "the BPF LSM program (id %u) decides for this process's cgroup %s with "
			 "%s: %s (%s)", st->prog_id, r->cgroup[0] ? r->cgroup : "?",
			 scope_name(s, name, sizeof(name)), policy_name(&s->policy), knobs);
	} else {
		snprintf(text, sizeof(text),
			 "the BPF LSM program (id %u) is loaded, but no scope covers this process's "
			 "cgroup %s: the kernel decides alone there", st->prog_id,
			 r->cgroup[0] ? r->cgroup : "?");
	}
	note(LSM_NOTE_REASON, text, arg);

	/* The scopes the probe did not run in.  Without a host default,
	 * processes outside every entry are the kernel's alone. */
	bool host = false, covers = true;
	for (size_t i = 0; i < st->n_scopes; i++) {
		const struct lsm_scope_state *s = &st->scopes[i];
		host |= !s->cgroup[0];
		bool sys = allows_flagless(&s->policy, CALL_SYSCALL) && c->sysctl_allows_flagless;
		bool dev = allows_flagless(&s->policy, CALL_DEVICE_IOCTL);
		covers &= !dev;
		if ((ssize_t)i == r->own_scope || !(sys || (dev && c->device_open)))
			continue;
		snprintf(text, sizeof(text),
			 "unprivileged processes under %s can create descriptors that handle "
			 "kernel-mode faults: the BPF LSM policy there is %s%s",
			 scope_name(s, name, sizeof(name)), policy_name(&s->policy),
			 sys ? " and vm.unprivileged_userfaultfd allows it"
			     : ", which leaves /dev/userfaultfd to its file permissions");
		note(LSM_NOTE_EXPOSED, text, arg);
	}
	if (!host && r->own_scope >= 0 && (c->sysctl_allows_flagless || c->device_open))
		note(LSM_NOTE_EXPOSED, "unprivileged processes outside every BPF LSM cgroup entry "
				       "are left to the kernel, which lets them create descriptors "
				       "that handle kernel-mode faults (no host default is applied)",
		     arg);
	if (st->dropped) {
		snprintf(text, sizeof(text),
			 "%" PRIu64 " BPF LSM audit records were lost (the ring buffer was full): is "
			 "uffdguard-lsm-audit.service running?", st->dropped);
		note(LSM_NOTE_WARNING, text, arg);
	}
	return host && covers;
}

void lsm_report_line(const struct lsm_report *r, char *buf, size_t size)
{
	const struct lsm_state *st = &r->state;
	size_t entries = 0;

	for (size_t i = 0; i < st->n_scopes; i++)
		entries += st->scopes[i].cgroup[0] != 0;
	if (r->state_err == -EPERM)
		snprintf(buf, size, "not read (needs root); %s",
			 r->support_err ? r->why_not : "it can work here");
	else if (enforcing(r))
		snprintf(buf, size, "enforcing (program id %u): %zu scope%s, %zu of them cgroup "
			 "entries; here: %s", st->prog_id, st->n_scopes, st->n_scopes == 1 ? "" : "s",
			 entries, r->own_scope < 0 ? "no scope"
			 : st->scopes[r->own_scope].cgroup[0] ? st->scopes[r->own_scope].cgroup
							      : "the host default");
	else if (st->pinned)
		snprintf(buf, size, "pinned in %s but not enforcing", LSM_PIN_DIR);
	else if (r->support_err)
		snprintf(buf, size, "not loaded; it cannot work here: %s", r->why_not);
	else
		snprintf(buf, size, "not loaded (active LSMs: %s)", r->support.active_lsms);
}

json_object *lsm_scope_json(const struct lsm_scope_state *s)
{
	json_object *o = json_object_new_object(), *p = json_object_new_object();
	uint64_t allow = 0, eperm = 0, einval = 0;

	json_object_object_add(o, "scope", json_object_new_string(s->cgroup[0] ? "cgroup" : "host"));
	json_object_object_add(o, "cgroup", s->cgroup[0] ? json_object_new_string(s->cgroup) : NULL);
	json_object_object_add(o, "cgroup_id", s->cgroup[0] && s->cgroup_id
		? json_object_new_int64((int64_t)s->cgroup_id) : NULL);
	json_object_object_add(p, "name", json_object_new_string(policy_name(&s->policy)));
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		json_object_object_add(p, policy_knobs[i].name,
				       json_object_new_int(policy_knob_get(&s->policy, &policy_knobs[i])
							   ? 1 : 0));
	json_object_object_add(o, "policy", p);
	json_object *by = json_object_new_object();
	for (int k = 0; k < LSM_N_REASONS; k++) {
		int e = lsm_reason_errno((enum lsm_reason)k);
		*(e == EPERM ? &eperm : e == EINVAL ? &einval : &allow) += s->counts[k];
		json_object_object_add(by, lsm_reason_key((enum lsm_reason)k),
				       json_object_new_int64((int64_t)s->counts[k]));
	}
	json_object *d = json_object_new_object();
	json_object_object_add(d, "allow", json_object_new_int64((int64_t)allow));
	json_object_object_add(d, "eperm", json_object_new_int64((int64_t)eperm));
	json_object_object_add(d, "einval", json_object_new_int64((int64_t)einval));
	json_object_object_add(d, "by_reason", by);
	json_object_object_add(o, "decisions", d);
	return o;
}

json_object *lsm_report_json(const struct lsm_report *r)
{
	json_object *o = json_object_new_object();
	const struct lsm_state *st = &r->state;

	json_object_object_add(o, "active_lsms", r->support.lsm_list_known
		? json_object_new_string(r->support.active_lsms) : NULL);
	json_object_object_add(o, "bpf_lsm_active", json_object_new_boolean(r->support.bpf_active));
	json_object_object_add(o, "supported", json_object_new_boolean(r->support_err == 0));
	json_object_object_add(o, "why_not", r->support_err ? json_object_new_string(r->why_not) : NULL);
	json_object_object_add(o, "readable", json_object_new_boolean(r->state_err == 0));
	json_object_object_add(o, "enforcing", json_object_new_boolean(enforcing(r)));
	json_object_object_add(o, "program_id", st->prog_id ? json_object_new_int64(st->prog_id) : NULL);
	json_object *scopes = json_object_new_array();
	for (size_t i = 0; i < st->n_scopes; i++)
		json_object_array_add(scopes, lsm_scope_json(&st->scopes[i]));
	json_object_object_add(o, "scopes", scopes);
	json_object_object_add(o, "cgroup", r->cgroup[0] ? json_object_new_string(r->cgroup) : NULL);
	json_object_object_add(o, "own_scope", r->own_scope < 0 ? NULL
		: json_object_new_string(st->scopes[r->own_scope].cgroup[0]
						 ? st->scopes[r->own_scope].cgroup : "host"));
	json_object_object_add(o, "audit_records_dropped", json_object_new_int64((int64_t)st->dropped));
	return o;
}
