// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard profile: the policy compiled to seccomp profile rules.
 *
 * For each call the policy covers, the argument space is cut into cells
 * that each get exactly one action: refuse (errno EPERM) or permit (the
 * action the base gives the call).  Cells are expressed with masked
 * compares on the low 32 bits only, because the kernel truncates both
 * userfaultfd's flags and ioctl's command to 32 bits.  "cmd != 0xAA00"
 * has no masked form, so it is the union of 32 one-bit cells ("bit b of
 * cmd differs from bit b of 0xAA00"), all with the same action.  Cells
 * whose action equals the default action are left out.  Hence no input
 * matches two rules with different actions, and libseccomp's (undocumented)
 * precedence between them never matters.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define LOW32 0xffffffffull
#define PTRACE_CAP "CAP_SYS_PTRACE"
#define MAX_CELLS 40

struct cond {
	unsigned index;
	uint64_t mask, datum;
};

struct cell {
	bool refuse;
	int nconds;
	struct cond conds[2];
};

enum caps_gate { GATE_ANY, GATE_PRIVILEGED, GATE_UNPRIVILEGED };

/* The base's rules that permit ioctl, told apart by what the generated
 * rules copy from them: action, includes and excludes.  Rules alike share
 * one set of cells, so a base with many such rules grows by one set. */
struct ioctl_group {
	struct profile_action action;
	struct json_object *includes, *excludes; /* NULL: none */
};

struct ctx {
	const struct policy *p;
	enum profile_format fmt;
	struct profile_action def;
	struct json_object *out; /* the new syscalls array */
	struct ioctl_group groups[PROFILE_MAX_IOCTL_GROUPS];
	size_t n_groups;
};

/* ---- Cells ----------------------------------------------------------- */

/* EINVAL (unknown flag bits) is left to the kernel, which rejects the very
 * same bits: only EPERM needs a rule. */
static bool refuses(const struct policy *p, bool privileged, enum call_path path, uint32_t flags)
{
	struct call call = { .path = path, .flags = flags };
	return policy_decide(p, privileged, &call) == VERDICT_EPERM;
}

/* The series' decision depends on one flag bit, UFFD_USER_MODE_ONLY. */
static int flag_cells(const struct policy *p, bool privileged, enum call_path path,
		      unsigned flag_index, const struct cond *prefix, struct cell *cells)
{
	bool r0 = refuses(p, privileged, path, 0);
	bool r1 = refuses(p, privileged, path, POLICY_UFFD_USER_MODE_ONLY);
	int n = 0;

	if (r0 == r1) {
		cells[n] = (struct cell){ .refuse = r0 };
		if (prefix)
			cells[n].conds[cells[n].nconds++] = *prefix;
		return n + 1;
	}
	for (int bit = 1; bit >= 0; bit--) {
		struct cell *cl = &cells[n++];
		*cl = (struct cell){ .refuse = bit ? r1 : r0 };
		if (prefix)
			cl->conds[cl->nconds++] = *prefix;
		cl->conds[cl->nconds++] = (struct cond){ flag_index, POLICY_UFFD_USER_MODE_ONLY,
							 bit ? POLICY_UFFD_USER_MODE_ONLY : 0 };
	}
	return n;
}

static int syscall_cells(const struct policy *p, bool privileged, struct cell *cells)
{
	return flag_cells(p, privileged, CALL_SYSCALL, 0, NULL, cells);
}

/* ioctl(fd, cmd, flags): cmd == USERFAULTFD_IOC_NEW is decided by the
 * flags; every other cmd is permitted, as 32 one-bit cells. */
static int ioctl_cells(const struct policy *p, bool privileged, struct cell *cells)
{
	const struct cond is_new = { 1, LOW32, PROFILE_IOC_NEW };
	int n = flag_cells(p, privileged, CALL_DEVICE_IOCTL, 2, &is_new, cells);
	bool any_refused = false;

	for (int i = 0; i < n; i++)
		any_refused |= cells[i].refuse;
	if (!any_refused) {
		cells[0] = (struct cell){ .refuse = false };
		return 1;
	}
	for (unsigned bit = 0; bit < 32; bit++)
		cells[n++] = (struct cell){ .refuse = false,
					    .nconds = 1,
					    .conds = { { 1, 1ull << bit, ~PROFILE_IOC_NEW & (1u << bit) } } };
	return n;
}

/* ---- Rules ----------------------------------------------------------- */

static struct json_object *str_array(const char *s)
{
	struct json_object *a = json_object_new_array();
	json_object_array_add(a, json_object_new_string(s));
	return a;
}

static void add_to_set(struct json_object *filter, const char *key, const char *s)
{
	struct json_object *arr;

	if (!json_object_object_get_ex(filter, key, &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		json_object_object_add(filter, key, str_array(s));
		return;
	}
	if (!profile_str_array_has(arr, s))
		json_object_array_add(arr, json_object_new_string(s));
}

static struct json_object *filter_copy(struct json_object *tmpl, const char *key)
{
	struct json_object *f = NULL, *copy = NULL;

	if (tmpl && json_object_object_get_ex(tmpl, key, &f) &&
	    json_object_is_type(f, json_type_object) && json_object_deep_copy(f, &copy, NULL) == 0)
		return copy;
	return json_object_new_object();
}

static const char *cell_comment(const struct cell *cl, const char *name)
{
	if (!cl->nconds)
		return cl->refuse ? "uffdguard: refused by the policy" : "uffdguard: permitted";
	if (!strcmp(name, "ioctl") && cl->nconds == 1)
		return "uffdguard: any command but USERFAULTFD_IOC_NEW (one bit differs)";
	if (cl->refuse)
		return "uffdguard: creation without UFFD_USER_MODE_ONLY";
	return "uffdguard: creation with UFFD_USER_MODE_ONLY";
}

/* One generated rule; NULL when its conditions can never hold together. */
static struct json_object *cell_rule(struct ctx *c, const char *name, const struct cell *cl,
				     const struct profile_action *a, struct json_object *tmpl,
				     enum caps_gate gate)
{
	struct json_object *r = json_object_new_object(), *args = json_object_new_array();

	json_object_object_add(r, "names", str_array(name));
	json_object_object_add(r, "action", json_object_new_string(profile_action_name(a)));
	for (int i = 0; i < cl->nconds; i++) {
		struct json_object *arg = json_object_new_object();
		json_object_object_add(arg, "index", json_object_new_int64(cl->conds[i].index));
		json_object_object_add(arg, "value", json_object_new_uint64(cl->conds[i].mask));
		json_object_object_add(arg, "valueTwo", json_object_new_uint64(cl->conds[i].datum));
		json_object_object_add(arg, "op", json_object_new_string("SCMP_CMP_MASKED_EQ"));
		json_object_array_add(args, arg);
	}
	json_object_object_add(r, "args", args);
	if (c->fmt == PROFILE_FORMAT_DOCKER) {
		struct json_object *inc = filter_copy(tmpl, "includes"),
				   *exc = filter_copy(tmpl, "excludes"), *arches;
		json_object_object_add(r, "comment", json_object_new_string(cell_comment(cl, name)));
		if (json_object_object_get_ex(inc, "arches", &arches) &&
		    json_object_is_type(arches, json_type_array) &&
		    json_object_array_length(arches) > 0) {
			if (!profile_str_array_has(arches, PROFILE_HOST_ARCH)) {
				json_object_put(inc);
				json_object_put(exc);
				json_object_put(r);
				return NULL;
			}
		}
		json_object_object_add(inc, "arches", str_array(PROFILE_HOST_ARCH));
		if (gate == GATE_PRIVILEGED)
			add_to_set(inc, "caps", PTRACE_CAP);
		else if (gate == GATE_UNPRIVILEGED)
			add_to_set(exc, "caps", PTRACE_CAP);
		json_object_object_add(r, "includes", inc);
		json_object_object_add(r, "excludes", exc);
	}
	if (profile_action_uses_errno(a))
		json_object_object_add(r, "errnoRet", json_object_new_int64(a->errno_ret));
	return r;
}

static void emit_cells(struct ctx *c, const char *name, const struct cell *cells, int n,
		       const struct profile_action *permit, struct json_object *tmpl, enum caps_gate gate)
{
	for (int i = 0; i < n; i++) {
		const struct profile_action *a = cells[i].refuse ? &profile_action_eperm : permit;
		if (profile_action_equal(a, &c->def))
			continue; /* the default action already does it */
		struct json_object *r = cell_rule(c, name, &cells[i], a, tmpl, gate);
		if (r)
			json_object_array_add(c->out, r);
	}
}

static bool cells_equal(const struct cell *a, int na, const struct cell *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++) {
		if (a[i].refuse != b[i].refuse || a[i].nconds != b[i].nconds)
			return false;
		for (int k = 0; k < a[i].nconds; k++)
			if (a[i].conds[k].index != b[i].conds[k].index ||
			    a[i].conds[k].mask != b[i].conds[k].mask ||
			    a[i].conds[k].datum != b[i].conds[k].datum)
				return false;
	}
	return true;
}

/* The rules for one call.  In Docker format a container granted
 * CAP_SYS_PTRACE is the series' privileged caller. */
static void emit_call(struct ctx *c, const char *name, const struct profile_action *permit,
		      struct json_object *tmpl)
{
	int (*cells_of)(const struct policy *, bool, struct cell *) =
		strcmp(name, "ioctl") ? syscall_cells : ioctl_cells;
	struct cell unpriv[MAX_CELLS], priv[MAX_CELLS];
	int nu = cells_of(c->p, false, unpriv);
	if (c->fmt == PROFILE_FORMAT_DOCKER) {
		int np = cells_of(c->p, true, priv);
		if (!cells_equal(unpriv, nu, priv, np)) {
			emit_cells(c, name, priv, np, permit, tmpl, GATE_PRIVILEGED);
			emit_cells(c, name, unpriv, nu, permit, tmpl, GATE_UNPRIVILEGED);
			return;
		}
	}
	emit_cells(c, name, unpriv, nu, permit, tmpl, GATE_ANY);
}

/* Docker format: the base's rule for `name`, kept for hosts other than
 * PROFILE_HOST_ARCH, where our rules do not apply. */
static void emit_displaced(struct ctx *c, struct json_object *rule, const char *name)
{
	struct json_object *copy = NULL, *exc;

	if (c->fmt != PROFILE_FORMAT_DOCKER || json_object_deep_copy(rule, &copy, NULL) != 0)
		return;
	if (json_object_object_get_ex(copy, "names", NULL))
		json_object_object_add(copy, "names", str_array(name));
	if (!json_object_object_get_ex(copy, "excludes", &exc) ||
	    !json_object_is_type(exc, json_type_object)) {
		exc = json_object_new_object();
		json_object_object_add(copy, "excludes", exc);
	}
	add_to_set(exc, "arches", PROFILE_HOST_ARCH);
	json_object_array_add(c->out, copy);
}

/* Drop `drop` (NULL: none) and `drop2` from the rule's names; false if
 * no name is left. */
static bool remove_names(struct json_object *rule, const char *drop, const char *drop2)
{
	struct json_object *names, *name;

	/* check_rule(): a "name" that is not null is a string, else "names"
	 * is an array of strings. */
	if (json_object_object_get_ex(rule, "name", &name) && name) {
		const char *s = json_object_get_string(name);
		return !((drop && !strcmp(s, drop)) || (drop2 && !strcmp(s, drop2)));
	}
	json_object_object_get_ex(rule, "names", &names);
	struct json_object *kept = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(names); i++) {
		struct json_object *n = json_object_array_get_idx(names, i);
		const char *s = json_object_get_string(n);
		if ((drop && !strcmp(s, drop)) || (drop2 && !strcmp(s, drop2)))
			continue;
		json_object_array_add(kept, json_object_get(n));
	}
	size_t left = json_object_array_length(kept);
	json_object_object_add(rule, "names", kept); /* replaced in place: key order kept */
	return left > 0;
}

/* What the base lets userfaultfd through with, for the calls the policy
 * permits: the one permitting action of its rules naming userfaultfd (or
 * of its default action, if no rule names it for every container), or
 * SCMP_ACT_ALLOW where the base refuses it everywhere: then the policy
 * grants what the base refused, and the report says so. */
static int uffd_permit(const struct profile_base *b, struct profile_action *out,
		       struct profile_error *err)
{
	const struct profile_action *found = NULL;
	bool every_container = false;
	char where[48];

	for (size_t i = 0; i < b->n_rules; i++) {
		const struct profile_rule *ri = &b->rules[i];
		if (!ri->names_uffd)
			continue;
		every_container |= !ri->filtered;
		if (!profile_action_permits(&ri->action))
			continue;
		snprintf(where, sizeof(where), "syscalls[%zu].action", i);
		if (found && !profile_action_equal(found, &ri->action))
			return profile_error_set(
				err, where,
				"userfaultfd is let through with %s here and with %s by an earlier "
				"rule: uffdguard gives the calls its policy permits one action, so "
				"give these rules one",
				profile_action_name(&ri->action), profile_action_name(found));
		found = &ri->action;
	}
	if (!every_container && profile_action_permits(&b->def)) {
		if (found && !profile_action_equal(found, &b->def))
			return profile_error_set(
				err, "defaultAction",
				"userfaultfd is let through with %s by default and with %s by a rule "
				"for some containers: uffdguard gives the calls its policy permits "
				"one action, so give them one",
				profile_action_name(&b->def), profile_action_name(found));
		found = &b->def;
	}
	*out = found ? *found : profile_action_allow;
	return 0;
}

static struct json_object *filter_of(struct json_object *rule, const char *key)
{
	struct json_object *f = NULL;

	json_object_object_get_ex(rule, key, &f);
	return json_object_is_type(f, json_type_object) && json_object_object_length(f) ? f : NULL;
}

/* Whether the cells for this ioctl rule are new; -EINVAL past the limit. */
static int ioctl_group_is_new(struct ctx *c, struct json_object *rule,
			      const struct profile_action *a, size_t idx, struct profile_error *err)
{
	struct json_object *inc = filter_of(rule, "includes"), *exc = filter_of(rule, "excludes");
	char where[48];

	for (size_t i = 0; i < c->n_groups; i++) {
		const struct ioctl_group *g = &c->groups[i];
		if (profile_action_equal(&g->action, a) && json_object_equal(g->includes, inc) &&
		    json_object_equal(g->excludes, exc))
			return 0;
	}
	snprintf(where, sizeof(where), "syscalls[%zu]", idx);
	if (c->n_groups == PROFILE_MAX_IOCTL_GROUPS)
		return profile_error_set(
			err, where,
			"more than %d rules permit ioctl with different actions, includes or "
			"excludes: each needs up to %d rules to keep USERFAULTFD_IOC_NEW apart, so "
			"uffdguard takes at most %d; merge rules that permit ioctl alike",
			PROFILE_MAX_IOCTL_GROUPS, 34, PROFILE_MAX_IOCTL_GROUPS);
	c->groups[c->n_groups++] = (struct ioctl_group){ *a, inc, exc };
	return 1;
}

int profile_merge(struct json_object *base, const struct policy *p, enum profile_format fmt,
		  struct profile_error *err)
{
	struct ctx c = { .p = p, .fmt = fmt };
	struct profile_base b;
	struct profile_action uffd;
	int ret = profile_check(base, p, fmt, &b, err);

	if (ret < 0)
		return ret;
	if ((ret = uffd_permit(&b, &uffd, err)) < 0) {
		profile_base_fini(&b);
		return ret;
	}
	c.def = b.def;
	/* Validated: now rebuild the array, rules in their order, ours at the
	 * place of the rules they replace. */
	c.out = json_object_new_array();
	bool uffd_done = false, ioctl_named = false;
	for (size_t i = 0; i < b.n_rules; i++) {
		struct json_object *r = json_object_array_get_idx(b.syscalls, i);
		const struct profile_rule *ri = &b.rules[i];
		bool split_ioctl = p->cover_device && ri->names_ioctl &&
				   profile_action_permits(&ri->action);

		/* A rule for some containers only leaves the others to the default. */
		ioctl_named |= p->cover_device && ri->names_ioctl && !ri->filtered;
		if (!ri->names_uffd && !split_ioctl) {
			json_object_array_add(c.out, json_object_get(r));
			continue;
		}
		int new_group = split_ioctl ? ioctl_group_is_new(&c, r, &ri->action, i, err) : 0;
		if (new_group < 0) {
			ret = new_group;
			break;
		}
		struct json_object *orig = NULL;
		json_object_deep_copy(r, &orig, NULL);
		if (remove_names(r, ri->names_uffd ? "userfaultfd" : NULL,
				 split_ioctl ? "ioctl" : NULL))
			json_object_array_add(c.out, json_object_get(r));
		if (ri->names_uffd) {
			emit_displaced(&c, orig, "userfaultfd");
			if (!uffd_done)
				emit_call(&c, "userfaultfd", &uffd, NULL);
			uffd_done = true;
		}
		if (split_ioctl) {
			emit_displaced(&c, orig, "ioctl");
			if (new_group)
				emit_call(&c, "ioctl", &ri->action, orig);
		}
		json_object_put(orig);
	}
	profile_base_fini(&b);
	if (ret < 0) {
		json_object_put(c.out);
		return ret;
	}
	if (!uffd_done)
		emit_call(&c, "userfaultfd", &uffd, NULL);
	/* No rule names ioctl for every container: the default action decides
	 * it, for all or for the containers the rules leave out. */
	if (p->cover_device && !ioctl_named && profile_action_permits(&c.def))
		emit_call(&c, "ioctl", &c.def, NULL);
	json_object_object_add(base, "syscalls", c.out);
	return 0;
}

struct json_object *profile_standalone(const struct policy *p, enum profile_format fmt)
{
	struct json_object *o = json_object_new_object(), *arches = json_object_new_array();
	struct profile_error err;

	json_object_object_add(o, "defaultAction", json_object_new_string("SCMP_ACT_ALLOW"));
	for (size_t i = fmt == PROFILE_FORMAT_DOCKER ? 1 : 0; i < 3; i++)
		json_object_array_add(arches, json_object_new_string(profile_arches[i]));
	if (fmt == PROFILE_FORMAT_DOCKER) {
		struct json_object *map = json_object_new_array(), *ent = json_object_new_object();
		json_object_object_add(ent, "architecture", json_object_new_string(profile_arches[0]));
		json_object_object_add(ent, "subArchitectures", arches);
		json_object_array_add(map, ent);
		json_object_object_add(o, "archMap", map);
	} else {
		json_object_object_add(o, "architectures", arches);
	}
	json_object_object_add(o, "syscalls", json_object_new_array());
	/* Our own skeleton passes the checks: only memory can fail. */
	if (profile_merge(o, p, fmt, &err) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

bool profile_object_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 253 || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", name[0]) ||
	    !strchr("abcdefghijklmnopqrstuvwxyz0123456789", name[len - 1]))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") == len;
}

/* A copy of o's keys that are in keys[], in that order. */
static struct json_object *only(struct json_object *o, const char *const *keys, size_t n)
{
	struct json_object *out = json_object_new_object(), *v;

	for (size_t i = 0; i < n; i++)
		if (json_object_object_get_ex(o, keys[i], &v) && !json_object_is_type(v, json_type_null))
			json_object_object_add(out, keys[i], json_object_get(v));
	return out;
}

/* The operator's CRD has no defaultErrnoRet, and its errnoRet is a string
 * in some releases and a number in others: only EPERM, what runc and crun
 * return for SCMP_ACT_ERRNO without an errno, can be said by leaving it out. */
static int spo_errno_ok(struct json_object *action, struct json_object *errno_ret,
			const char *where, struct profile_error *err)
{
	struct profile_action a;

	if (profile_action_read(action, errno_ret, &a) == 0 &&
	    (!profile_action_uses_errno(&a) || a.errno_ret == EPERM))
		return 0;
	return profile_error_set(err, where,
				 "a SeccompProfile can only refuse with EPERM (its schema has no "
				 "defaultErrnoRet, and errnoRet is a string in some operator "
				 "releases and a number in others): merge into a base that refuses "
				 "with EPERM, such as containerd's default, or use --format oci for "
				 "a file on the node (type Localhost)");
}

struct json_object *profile_seccompprofile(struct json_object *oci, const char *name,
					   const char *description, struct profile_error *err)
{
	static const char *const spec_keys[] = { "defaultAction", "architectures", "flags" };
	static const char *const rule_keys[] = { "names", "action" };
	static const char *const arg_keys[] = { "index", "value", "valueTwo", "op" };
	struct json_object *rules = NULL;
	char where[128];

	if (spo_errno_ok(json_object_object_get(oci, "defaultAction"),
			 json_object_object_get(oci, "defaultErrnoRet"), "defaultErrnoRet of the profile",
			 err) < 0)
		return NULL;
	if (json_object_object_get_ex(oci, "syscalls", &rules) &&
	    json_object_is_type(rules, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(rules); i++) {
			struct json_object *r = json_object_array_get_idx(rules, i);
			struct json_object *names = json_object_object_get(r, "names");
			if (!json_object_is_type(names, json_type_array) ||
			    !json_object_array_length(names)) {
				snprintf(where, sizeof(where), "syscalls[%zu] of the profile", i);
				profile_error_set(err, where,
						  "a SeccompProfile rule needs 'names' (a single "
						  "'name' is the Docker profile format, which the "
						  "runtime-spec format ignores): name the calls in "
						  "'names' in the base");
				return NULL;
			}
			snprintf(where, sizeof(where), "syscalls[%zu].errnoRet (%s) of the profile", i,
				 json_object_get_string(json_object_array_get_idx(names, 0)));
			if (spo_errno_ok(json_object_object_get(r, "action"),
					 json_object_object_get(r, "errnoRet"), where, err) < 0)
				return NULL;
		}
	}
	struct json_object *spec = only(oci, spec_keys, 3), *out_rules = json_object_new_array();
	for (size_t i = 0; json_object_is_type(rules, json_type_array) &&
			   i < json_object_array_length(rules);
	     i++) {
		struct json_object *r = json_object_array_get_idx(rules, i), *args;
		struct json_object *nr = only(r, rule_keys, 2);
		if (json_object_object_get_ex(r, "args", &args) &&
		    json_object_is_type(args, json_type_array) && json_object_array_length(args)) {
			struct json_object *na = json_object_new_array();
			for (size_t k = 0; k < json_object_array_length(args); k++)
				json_object_array_add(
					na, only(json_object_array_get_idx(args, k), arg_keys, 4));
			json_object_object_add(nr, "args", na);
		}
		json_object_array_add(out_rules, nr);
	}
	json_object_object_add(spec, "syscalls", out_rules);

	struct json_object *o = json_object_new_object(), *meta = json_object_new_object(),
			   *ann = json_object_new_object();
	json_object_object_add(o, "apiVersion",
			       json_object_new_string("security-profiles-operator.x-k8s.io/v1beta1"));
	json_object_object_add(o, "kind", json_object_new_string("SeccompProfile"));
	json_object_object_add(meta, "name", json_object_new_string(name));
	json_object_object_add(ann, "description", json_object_new_string(description));
	json_object_object_add(meta, "annotations", ann);
	json_object_object_add(o, "metadata", meta);
	json_object_object_add(o, "spec", spec);
	return o;
}

char *profile_serialize(struct json_object *profile)
{
	const char *s = json_object_to_json_string_ext(
		profile, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_PRETTY_TAB |
				 JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *out = NULL;

	if (s && asprintf(&out, "%s\n", s) < 0)
		out = NULL;
	return out;
}
