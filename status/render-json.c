// SPDX-License-Identifier: GPL-2.0-or-later
/* `uffdguard status --json`: the schema of uffdguard-status(1). */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "render.h"
#include "scope-json.h"
#include "sysctl.h"

#define STATUS_SCHEMA_VERSION 1

static json_object *jlist(const struct status_list *l)
{
	json_object *a = json_object_new_array();
	for (int i = 0; i < l->n; i++)
		json_object_array_add(a, json_object_new_string(l->item[i]));
	return a;
}

static json_object *jerr(int err)
{
	return err ? json_object_new_string(status_errname(err)) : NULL;
}

#define ADD(obj, key, val) json_object_object_add(obj, key, val)

static json_object *json_mask(uint64_t mask, const char *(*name)(unsigned int))
{
	json_object *a = json_object_new_array();
	char hex[24];
	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(mask >> bit & 1))
			continue;
		const char *n = name(bit);
		snprintf(hex, sizeof(hex), "0x%llx", 1ull << bit);
		json_object_array_add(a, json_object_new_string(n ? n : hex));
	}
	return a;
}

static json_object *json_identity(const struct probe_identity *id, enum probe_who w)
{
	json_object *o = json_object_new_object();

	ADD(o, "name", json_object_new_string(probe_who_name(w)));
	ADD(o, "ran", json_object_new_boolean(id->ran));
	ADD(o, "why_not", id->ran ? NULL : json_object_new_string(id->why_not));
	if (!id->ran)
		return o;
	ADD(o, "uid", json_object_new_int64(id->uid));
	ADD(o, "cap_sys_ptrace", json_object_new_boolean(id->has_ptrace));
	ADD(o, "timed_out", json_object_new_boolean(id->timed_out));
	json_object *att = json_object_new_array();
	for (int way = 0; way < PROBE_N_WAYS; way++) {
		const struct probe_attempt *a = &id->attempts[way];
		json_object *e = json_object_new_object();
		ADD(e, "way", json_object_new_string(probe_way_name((enum probe_way)way)));
		ADD(e, "path", json_object_new_string(way >= PROBE_DEVICE ? "device" : "syscall"));
		ADD(e, "user_mode_only",
		    json_object_new_boolean(way == PROBE_SYSCALL_UMO || way == PROBE_DEVICE_UMO));
		ADD(e, "tried", json_object_new_boolean(a->tried));
		ADD(e, "ok", json_object_new_boolean(a->tried && a->result == 0));
		ADD(e, "errno", jerr(a->result));
		ADD(e, "why", a->result ? json_object_new_string(a->why) : NULL);
		json_object_array_add(att, e);
	}
	ADD(o, "attempts", att);
	ADD(o, "fuse_open", json_object_new_string(status_errname(id->fuse_open)));
	if (w == PROBE_PTRACE)
		return o;

	json_object *st = json_object_new_object();
	ADD(st, "ran", json_object_new_boolean(id->stall_run));
	ADD(st, "why_not", id->stall_run ? NULL : json_object_new_string(id->stall_why_not));
	ADD(st, "descriptor",
	    id->stall_way >= 0
		    ? json_object_new_string(probe_way_name((enum probe_way)id->stall_way))
		    : NULL);
	json_object *pts = json_object_new_array();
	for (int p = 0; id->stall_run && p < STALL_N_POINTS; p++) {
		const struct stall_result *r = &id->stall[p];
		json_object *e = json_object_new_object();
		ADD(e, "point", json_object_new_string(stall_point_name((enum stall_point)p)));
		ADD(e, "outcome", json_object_new_string(stall_outcome_name(r->outcome)));
		ADD(e, "held", json_object_new_boolean(r->delivered));
		ADD(e, "held_ms", r->delivered ? json_object_new_int64((int64_t)r->held_ms) : NULL);
		ADD(e, "took_us", r->delivered ? NULL : json_object_new_int64((int64_t)r->took_us));
		ADD(e, "errno", jerr(r->err));
		json_object_array_add(pts, e);
	}
	ADD(st, "points", pts);
	ADD(o, "stall", st);
	return o;
}

static json_object *json_lsm(const struct status_lsm *l)
{
	json_object *o = json_object_new_object();
	const struct lsm_state *st = &l->state;

	ADD(o, "active_lsms",
	    l->support.lsm_list_known ? json_object_new_string(l->support.active_lsms) : NULL);
	ADD(o, "bpf_lsm_active", json_object_new_boolean(l->support.bpf_active));
	ADD(o, "supported", json_object_new_boolean(l->support_err == 0));
	ADD(o, "why_not", l->support_err ? json_object_new_string(l->why_not) : NULL);
	ADD(o, "readable", json_object_new_boolean(l->state_err == 0));
	ADD(o, "enforcing", json_object_new_boolean(l->enforcing));
	ADD(o, "program_id", st->prog_id ? json_object_new_int64(st->prog_id) : NULL);
	json_object *scopes = json_object_new_array();
	for (size_t i = 0; i < st->n_scopes; i++)
		json_object_array_add(scopes, lsm_scope_json(&st->scopes[i]));
	ADD(o, "scopes", scopes);
	ADD(o, "cgroup", l->cgroup[0] ? json_object_new_string(l->cgroup) : NULL);
	ADD(o, "own_scope",
	    l->own_scope < 0 ? NULL
			     : json_object_new_string(st->scopes[l->own_scope].cgroup[0]
							      ? st->scopes[l->own_scope].cgroup
							      : "host"));
	ADD(o, "audit_records_dropped", json_object_new_int64((int64_t)st->dropped));
	return o;
}

char *status_render_json(const struct status_facts *f, const struct assessment *a, int exit_code,
			 const char *version)
{
	json_object *root = json_object_new_object(), *o;
	char octal[8];

	ADD(root, "schema_version", json_object_new_int(STATUS_SCHEMA_VERSION));
	ADD(root, "uffdguard_version", json_object_new_string(version));

	o = json_object_new_object();
	ADD(o, "release", json_object_new_string(f->release));
	ADD(o, "userfaultfd", json_object_new_boolean(f->has_userfaultfd));
	ADD(o, "syscall_errno", jerr(f->flag_result == -EINVAL ? 0 : f->flag_result));
	ADD(o, "user_mode_only",
	    f->flag_result == 0		? json_object_new_boolean(true)
	    : f->flag_result == -EINVAL ? json_object_new_boolean(false)
					: NULL);
	ADD(o, "features",
	    f->api_result == 0 ? json_mask(f->api.features, libuffd_feature_name) : NULL);
	ADD(o, "ioctls", f->api_result == 0 ? json_mask(f->api.ioctls, libuffd_ioctl_name) : NULL);
	ADD(root, "kernel", o);

	o = json_object_new_object();
	ADD(o, "name", json_object_new_string(SYSCTL_NAME));
	ADD(o, "value", f->sysctl >= 0 ? json_object_new_int(f->sysctl) : NULL);
	ADD(o, "errno", f->sysctl < 0 ? jerr(f->sysctl) : NULL);
	ADD(o, "proc_mounted", json_object_new_boolean(f->proc_mounted));
	ADD(o, "semantics", json_object_new_string(f->new_semantics ? "5.11+" : "pre-5.11"));
	ADD(o, "policy",
	    f->sysctl >= 0 ? json_object_new_string(sysctl_policy_name(f->sysctl, f->new_semantics))
			   : NULL);
	ADD(o, "meaning",
	    f->sysctl >= 0 ? json_object_new_string(sysctl_meaning(f->sysctl, f->new_semantics))
			   : NULL);
	ADD(root, "sysctl", o);
	ADD(root, "bpf_lsm", json_lsm(&f->lsm));

	o = json_object_new_object();
	ADD(o, "path", json_object_new_string(f->device));
	ADD(o, "present", json_object_new_boolean(f->device_stat == 0));
	if (f->device_stat == 0) {
		snprintf(octal, sizeof(octal), "%04o", (unsigned)(f->device_st.st_mode & 07777));
		ADD(o, "userfaultfd_device", json_object_new_boolean(f->device_is_uffd));
		ADD(o, "owner", json_object_new_int64(f->device_st.st_uid));
		ADD(o, "group", json_object_new_int64(f->device_st.st_gid));
		ADD(o, "mode", json_object_new_string(octal));
		json_object *acl = json_object_new_array();
		for (int i = 0; i < f->n_acl; i++) {
			json_object *e = json_object_new_object();
			char perm[4] = { f->acl[i].perm & 4 ? 'r' : '-',
					 f->acl[i].perm & 2 ? 'w' : '-',
					 f->acl[i].perm & 1 ? 'x' : '-', 0 };
			ADD(e, "tag", json_object_new_string(f->acl[i].tag));
			ADD(e, "id",
			    f->acl[i].id >= 0 ? json_object_new_int64(f->acl[i].id) : NULL);
			ADD(e, "perm", json_object_new_string(perm));
			json_object_array_add(acl, e);
		}
		ADD(o, "acl", acl);
		ADD(o, "unprivileged_access", jlist(&f->device_access));
		ADD(o, "world_accessible", json_object_new_boolean(f->device_world));
	} else {
		ADD(o, "errno", jerr(f->device_stat));
	}
	ADD(root, "device", o);

	o = json_object_new_object();
	ADD(o, "uid", json_object_new_int64(f->uid));
	ADD(o, "euid", json_object_new_int64(f->euid));
	ADD(o, "seccomp", f->seccomp >= 0 ? json_object_new_int64(f->seccomp) : NULL);
	ADD(o, "seccomp_filters",
	    f->seccomp_filters >= 0 ? json_object_new_int64(f->seccomp_filters) : NULL);
	ADD(o, "marker_errno",
	    json_object_new_string(f->marker_err < UFFDGUARD_MARKER_ERRNO_BASE
					   ? status_errname(f->marker_err)
					   : "uffdguard"));
	json_object *g = NULL;
	if (f->marker_ours) {
		g = json_object_new_object();
		ADD(g, "mode", json_object_new_string(enforcer_info(f->marker_enforcer)->mode));
		ADD(g, "policy", json_object_new_string(policy_name(&f->marker_policy)));
		/* The series' sysctls are integers, as in /proc/sys; our
		 * extension is a switch. */
		for (size_t i = 0; i < POLICY_N_KNOBS; i++) {
			const struct policy_knob *k = &policy_knobs[i];
			int v = policy_knob_get(&f->marker_policy, k);
			ADD(g, k->name, k->from_series ? json_object_new_int(v)
						       : json_object_new_boolean(v));
		}
	}
	ADD(o, "uffdguard", g);
	ADD(root, "process", o);

	o = json_object_new_object();
	ADD(o, "hold_ms", json_object_new_int(f->probe.hold_ms));
	ADD(o, "timeout_ms", json_object_new_int(f->probe.timeout_ms));
	ADD(o, "errno", jerr(f->probe_result));
	json_object *ids = json_object_new_array();
	for (int w = 0; w < PROBE_N_WHO; w++)
		json_object_array_add(ids, json_identity(&f->probe.who[w], (enum probe_who)w));
	ADD(o, "identities", ids);
	ADD(root, "probe", o);

	o = json_object_new_object();
	const struct probe_identity *u = status_unprivileged(f);
	ADD(o, "device_present", json_object_new_boolean(f->fuse_stat == 0));
	if (f->fuse_stat == 0) {
		snprintf(octal, sizeof(octal), "%04o", (unsigned)(f->fuse_st.st_mode & 07777));
		ADD(o, "device_mode", json_object_new_string(octal));
	}
	ADD(o, "unprivileged_open",
	    u ? json_object_new_string(status_errname(u->fuse_open)) : NULL);
	ADD(o, "setuid_fusermount", jlist(&f->fusermount));
	ADD(o, "unprivileged_fuse",
	    json_object_new_boolean((u && u->fuse_open == 0) || f->fusermount.n));
	ADD(root, "fuse", o);

	o = json_object_new_object();
	ADD(o, "status", json_object_new_string(exposure_name(a->exposure)));
	ADD(o, "exit_code", json_object_new_int(exit_code));
	ADD(o, "complete", json_object_new_boolean(a->complete));
	ADD(o, "reasons", jlist(&a->reasons));
	json_object *fixes = json_object_new_array();
	for (int i = 0; i < a->reasons.n; i++) {
		if (!a->fix[i])
			continue;
		json_object *e = json_object_new_object();
		ADD(e, "reason", json_object_new_string(a->reasons.item[i]));
		ADD(e, "fix", json_object_new_string(a->fix[i]));
		json_object_array_add(fixes, e);
	}
	ADD(o, "fixes", fixes);
	ADD(o, "warnings", jlist(&a->warnings));
	ADD(o, "not_checked", jlist(&a->not_checked));
	ADD(root, "verdict", o);

	const char *s = json_object_to_json_string_ext(
		root,
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *text = NULL;
	if (s && asprintf(&text, "%s\n", s) < 0)
		text = NULL;
	json_object_put(root);
	return text;
}
