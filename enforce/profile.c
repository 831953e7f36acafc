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
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/ioctl.h>

#include <linux/userfaultfd.h>

#include "profile.h"

/* _IO(0xAA, 0): the generic ioctl encoding, as on x86. */
#define IOC_NEW ((uint32_t)USERFAULTFD_IOC_NEW)
#define LOW32 0xffffffffull
#define PTRACE_CAP "CAP_SYS_PTRACE"
#define MAX_CELLS 40

const char *const profile_arches[3] = { "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32" };

static const struct {
	const char *name;
	bool permits; /* the call reaches the kernel */
	bool uses_errno;
} known_actions[] = {
	{ "SCMP_ACT_KILL", false, false },	  { "SCMP_ACT_KILL_PROCESS", false, false },
	{ "SCMP_ACT_KILL_THREAD", false, false }, { "SCMP_ACT_TRAP", false, false },
	{ "SCMP_ACT_ERRNO", false, true },	  { "SCMP_ACT_TRACE", false, true },
	{ "SCMP_ACT_ALLOW", true, false },	  { "SCMP_ACT_LOG", true, false },
	{ "SCMP_ACT_NOTIFY", false, false },
};
#define N_ACTIONS (sizeof(known_actions) / sizeof(known_actions[0]))

static const char *const known_ops[] = {
	"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",	    "SCMP_CMP_EQ",
	"SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ",
};

struct action {
	int kind; /* index in known_actions */
	int64_t errno_ret; /* when uses_errno; runc's default is EPERM */
};

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

struct ctx {
	const struct policy *p;
	enum profile_format fmt;
	struct profile_error *err;
	struct action def;
	struct json_object *out; /* the new syscalls array */
};

static const struct action eperm_action = { 4, EPERM };
static const struct action allow_action = { 6, 0 };

__attribute__((format(printf, 3, 4))) static int bad(struct profile_error *e, const char *where,
						     const char *fmt, ...)
{
	va_list ap;

	snprintf(e->where, sizeof(e->where), "%s", where);
	va_start(ap, fmt);
	vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool action_equal(const struct action *a, const struct action *b)
{
	return a->kind == b->kind &&
	       (!known_actions[a->kind].uses_errno || a->errno_ret == b->errno_ret);
}

static bool is_int(struct json_object *o)
{
	return json_object_is_type(o, json_type_int);
}

static int parse_action(struct json_object *name, struct json_object *errno_ret,
			const char *where, const char *errno_where, struct action *a,
			struct profile_error *e)
{
	if (!json_object_is_type(name, json_type_string))
		return bad(e, where, "missing or not a string (an action such as SCMP_ACT_ERRNO)");
	const char *s = json_object_get_string(name);
	a->kind = -1;
	for (size_t i = 0; i < N_ACTIONS; i++)
		if (!strcmp(s, known_actions[i].name))
			a->kind = (int)i;
	if (a->kind < 0)
		return bad(e, where, "unknown action '%s'", s);
	a->errno_ret = EPERM;
	if (errno_ret && !json_object_is_type(errno_ret, json_type_null)) {
		if (!is_int(errno_ret) || json_object_get_int64(errno_ret) < 0)
			return bad(e, errno_where, "not a non-negative integer");
		a->errno_ret = json_object_get_int64(errno_ret);
	}
	return 0;
}

static bool str_array_has(struct json_object *arr, const char *s)
{
	if (!json_object_is_type(arr, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s))
			return true;
	return false;
}

static int check_str_array(struct json_object *arr, const char *where, struct profile_error *e)
{
	char w[160];

	if (!json_object_is_type(arr, json_type_array))
		return bad(e, where, "not an array of strings");
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		if (!json_object_is_type(json_object_array_get_idx(arr, i), json_type_string)) {
			snprintf(w, sizeof(w), "%s[%zu]", where, i);
			return bad(e, w, "not a string");
		}
	}
	return 0;
}

static bool arch_covered(const char *a)
{
	for (size_t i = 0; i < 3; i++)
		if (!strcmp(a, profile_arches[i]))
			return true;
	return false;
}

static int check_arch_list(struct json_object *arr, const char *where, struct profile_error *e)
{
	char w[160];
	int r = check_str_array(arr, where, e);

	if (r < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(arr, i));
		snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if (!arch_covered(a))
			return bad(e, w,
				   "architecture '%s' is not covered: the rules are written for "
				   "SCMP_ARCH_X86_64, SCMP_ARCH_X86 and SCMP_ARCH_X32 only", a);
	}
	return 0;
}

/* archMap lists per host architecture what a filter covers; other hosts
 * keep the base's own rules (see PROFILE_HOST_ARCH), so only the x86-64
 * entry must stay within what we cover. */
static int check_arches(struct ctx *c, struct json_object *root)
{
	struct json_object *flat = NULL, *map = NULL;
	char w[160];

	json_object_object_get_ex(root, "architectures", &flat);
	json_object_object_get_ex(root, "archMap", &map);
	if (flat && !json_object_is_type(flat, json_type_null)) {
		int r = check_arch_list(flat, "architectures", c->err);
		if (r < 0)
			return r;
	}
	if (!map || json_object_is_type(map, json_type_null))
		return 0;
	if (c->fmt == PROFILE_FORMAT_OCI)
		return bad(c->err, "archMap",
			   "an archMap is Docker profile format: use --format docker, or an OCI "
			   "base with an 'architectures' list");
	if (!json_object_is_type(map, json_type_array))
		return bad(c->err, "archMap", "not an array");
	for (size_t i = 0; i < json_object_array_length(map); i++) {
		struct json_object *ent = json_object_array_get_idx(map, i), *a, *subs;
		snprintf(w, sizeof(w), "archMap[%zu].architecture", i);
		if (!json_object_is_type(ent, json_type_object) ||
		    !json_object_object_get_ex(ent, "architecture", &a) ||
		    !json_object_is_type(a, json_type_string))
			return bad(c->err, w, "missing or not a string");
		if (strcmp(json_object_get_string(a), profile_arches[0]))
			continue;
		snprintf(w, sizeof(w), "archMap[%zu].subArchitectures", i);
		if (json_object_object_get_ex(ent, "subArchitectures", &subs) &&
		    !json_object_is_type(subs, json_type_null)) {
			int r = check_arch_list(subs, w, c->err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int check_filter(struct ctx *c, struct json_object *f, const char *where)
{
	char w[160];

	if (!f || json_object_is_type(f, json_type_null))
		return 0;
	if (!json_object_is_type(f, json_type_object))
		return bad(c->err, where, "not an object");
	if (c->fmt == PROFILE_FORMAT_OCI && json_object_object_length(f))
		return bad(c->err, where,
			   "conditions on capabilities, architectures or kernel versions are "
			   "Docker profile format: use --format docker");
	json_object_object_foreach(f, key, val)
	{
		snprintf(w, sizeof(w), "%.80s.%.40s", where, key);
		if (!strcmp(key, "caps") || !strcmp(key, "arches")) {
			if (!json_object_is_type(val, json_type_null)) {
				int r = check_str_array(val, w, c->err);
				if (r < 0)
					return r;
			}
		} else if (strcmp(key, "minKernel")) {
			return bad(c->err, w, "unknown condition (known: caps, arches, minKernel)");
		}
	}
	return 0;
}

struct rule_info {
	struct action action;
	bool conditional;
	bool filtered; /* includes/excludes restrict it to some containers */
	bool names_uffd, names_ioctl;
};

/* Whether a Docker-format includes/excludes object sets any condition. */
static bool filter_restricts(struct json_object *f)
{
	if (!json_object_is_type(f, json_type_object))
		return false;
	json_object_object_foreach(f, key, val)
	{
		(void)key;
		if (json_object_is_type(val, json_type_array) ? json_object_array_length(val) > 0
		    : json_object_is_type(val, json_type_string) ? *json_object_get_string(val) != '\0'
								   : !json_object_is_type(val, json_type_null))
			return true;
	}
	return false;
}

static int check_rule(struct ctx *c, struct json_object *r, size_t idx, struct rule_info *ri)
{
	char where[48], w[96];
	struct json_object *names = NULL, *name = NULL, *act = NULL, *eret = NULL, *args = NULL,
			   *f = NULL;
	int ret;

	snprintf(where, sizeof(where), "syscalls[%zu]", idx);
	if (!json_object_is_type(r, json_type_object))
		return bad(c->err, where, "not an object");
	json_object_object_get_ex(r, "names", &names);
	json_object_object_get_ex(r, "name", &name);
	if (names && name)
		return bad(c->err, where, "both 'name' and 'names'");
	snprintf(w, sizeof(w), "%s.%s", where, name ? "name" : "names");
	if (name) {
		if (!json_object_is_type(name, json_type_string))
			return bad(c->err, w, "not a string");
	} else if (!names) {
		return bad(c->err, where, "no 'names'");
	} else if ((ret = check_str_array(names, w, c->err)) < 0) {
		return ret;
	}
	const char *single = name ? json_object_get_string(name) : NULL;
	ri->names_uffd = single ? !strcmp(single, "userfaultfd") : str_array_has(names, "userfaultfd");
	ri->names_ioctl = single ? !strcmp(single, "ioctl") : str_array_has(names, "ioctl");

	json_object_object_get_ex(r, "action", &act);
	json_object_object_get_ex(r, "errnoRet", &eret);
	char ew[96];
	snprintf(w, sizeof(w), "%s.action", where);
	snprintf(ew, sizeof(ew), "%s.errnoRet", where);
	if ((ret = parse_action(act, eret, w, ew, &ri->action, c->err)) < 0)
		return ret;

	ri->conditional = false;
	json_object_object_get_ex(r, "args", &args);
	snprintf(w, sizeof(w), "%s.args", where);
	if (args && !json_object_is_type(args, json_type_null)) {
		if (!json_object_is_type(args, json_type_array))
			return bad(c->err, w, "not an array");
		for (size_t i = 0; i < json_object_array_length(args); i++) {
			struct json_object *a = json_object_array_get_idx(args, i), *v;
			char aw[160];
			snprintf(aw, sizeof(aw), "%s[%zu]", w, i);
			if (!json_object_is_type(a, json_type_object))
				return bad(c->err, aw, "not an object");
			snprintf(aw, sizeof(aw), "%s[%zu].index", w, i);
			if (!json_object_object_get_ex(a, "index", &v) || !is_int(v) ||
			    json_object_get_int64(v) < 0 || json_object_get_int64(v) > 5)
				return bad(c->err, aw, "missing or not an argument index 0..5");
			static const char *const nums[] = { "value", "valueTwo" };
			for (size_t k = 0; k < 2; k++) {
				snprintf(aw, sizeof(aw), "%s[%zu].%s", w, i, nums[k]);
				if (json_object_object_get_ex(a, nums[k], &v) &&
				    !json_object_is_type(v, json_type_null) &&
				    (!is_int(v) || json_object_get_int64(v) < 0))
					return bad(c->err, aw, "not an unsigned 64-bit integer");
			}
			snprintf(aw, sizeof(aw), "%s[%zu].op", w, i);
			if (!json_object_object_get_ex(a, "op", &v) ||
			    !json_object_is_type(v, json_type_string))
				return bad(c->err, aw, "missing or not a string");
			bool known = false;
			for (size_t k = 0; k < sizeof(known_ops) / sizeof(known_ops[0]); k++)
				known |= !strcmp(json_object_get_string(v), known_ops[k]);
			if (!known)
				return bad(c->err, aw, "unknown operator '%s'", json_object_get_string(v));
		}
		ri->conditional = json_object_array_length(args) > 0;
	}
	static const char *const filters[] = { "includes", "excludes" };
	ri->filtered = false;
	for (size_t k = 0; k < 2; k++) {
		snprintf(w, sizeof(w), "%s.%s", where, filters[k]);
		f = NULL;
		json_object_object_get_ex(r, filters[k], &f);
		if ((ret = check_filter(c, f, w)) < 0)
			return ret;
		ri->filtered |= filter_restricts(f);
	}
	snprintf(w, sizeof(w), "%s.args", where);
	if (ri->names_ioctl && ri->conditional && c->p->cover_device)
		return bad(c->err, w,
			   "a conditional rule for ioctl is not supported: its conditions could "
			   "overlap USERFAULTFD_IOC_NEW (0x%x)", IOC_NEW);
	/* The containers such a rule leaves out get ioctl from a permitting
	 * default, and so need our refusal of USERFAULTFD_IOC_NEW; where it
	 * applies too, its other errno would overlap that refusal. */
	if (ri->names_ioctl && ri->filtered && c->p->cover_device &&
	    known_actions[c->def.kind].permits && !known_actions[ri->action.kind].permits &&
	    !action_equal(&ri->action, &eperm_action))
		return bad(c->err, where,
			   "a rule that refuses ioctl to some containers only is not supported in a "
			   "base whose default action permits: the others need a refusal of "
			   "USERFAULTFD_IOC_NEW that would overlap it with another action");
	return 0;
}

/* ---- Cells ----------------------------------------------------------- */

/* EINVAL (unknown flag bits) is left to the kernel, which rejects the very
 * same bits: only EPERM needs a rule. */
static bool refuses(const struct policy *p, bool privileged, enum call_path path, uint32_t flags)
{
	struct call call = { .path = path, .flags = flags };
	return policy_decide(p, privileged, &call) == VERDICT_EPERM;
}

/* The seed's decision depends on one flag bit, UFFD_USER_MODE_ONLY. */
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
	const struct cond is_new = { 1, LOW32, IOC_NEW };
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
					    .conds = { { 1, 1ull << bit, ~IOC_NEW & (1u << bit) } } };
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
	if (!str_array_has(arr, s))
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
				     const struct action *a, struct json_object *tmpl,
				     enum caps_gate gate)
{
	struct json_object *r = json_object_new_object(), *args = json_object_new_array();

	json_object_object_add(r, "names", str_array(name));
	json_object_object_add(r, "action", json_object_new_string(known_actions[a->kind].name));
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
			if (!str_array_has(arches, PROFILE_HOST_ARCH)) {
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
	if (known_actions[a->kind].uses_errno)
		json_object_object_add(r, "errnoRet", json_object_new_int64(a->errno_ret));
	return r;
}

static void emit_cells(struct ctx *c, const char *name, const struct cell *cells, int n,
		       const struct action *permit, struct json_object *tmpl, enum caps_gate gate)
{
	for (int i = 0; i < n; i++) {
		const struct action *a = cells[i].refuse ? &eperm_action : permit;
		if (action_equal(a, &c->def))
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
 * CAP_SYS_PTRACE is the seed's privileged caller. */
static void emit_call(struct ctx *c, const char *name, const struct action *permit,
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

int profile_merge(struct json_object *base, const struct policy *p, enum profile_format fmt,
		  struct profile_error *err)
{
	struct ctx c = { .p = p, .fmt = fmt, .err = err };
	struct json_object *def, *defe = NULL, *syscalls = NULL;
	int ret;

	if (!json_object_is_type(base, json_type_object))
		return bad(err, "(top level)", "not an object: a seccomp profile is a JSON object");
	json_object_object_get_ex(base, "defaultErrnoRet", &defe);
	if (!json_object_object_get_ex(base, "defaultAction", &def))
		return bad(err, "defaultAction", "missing");
	if ((ret = parse_action(def, defe, "defaultAction", "defaultErrnoRet", &c.def, err)) < 0)
		return ret;
	if ((ret = check_arches(&c, base)) < 0)
		return ret;
	if (json_object_object_get_ex(base, "syscalls", &syscalls) &&
	    !json_object_is_type(syscalls, json_type_null) &&
	    !json_object_is_type(syscalls, json_type_array))
		return bad(err, "syscalls", "not an array");

	size_t n = syscalls && json_object_is_type(syscalls, json_type_array)
			   ? json_object_array_length(syscalls)
			   : 0;
	struct rule_info *info = calloc(n ? n : 1, sizeof(*info));
	if (!info)
		return bad(err, "syscalls", "out of memory");
	for (size_t i = 0; i < n; i++) {
		if ((ret = check_rule(&c, json_object_array_get_idx(syscalls, i), i, &info[i])) < 0) {
			free(info);
			return ret;
		}
	}

	/* Validated: now rebuild the array, rules in their order, ours at the
	 * place of the rules they replace. */
	c.out = json_object_new_array();
	bool uffd_done = false, ioctl_named = false;
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(syscalls, i);
		const struct rule_info *ri = &info[i];
		bool split_ioctl = p->cover_device && ri->names_ioctl &&
				   known_actions[ri->action.kind].permits;

		/* A rule for some containers only leaves the others to the default. */
		ioctl_named |= p->cover_device && ri->names_ioctl && !ri->filtered;
		if (!ri->names_uffd && !split_ioctl) {
			json_object_array_add(c.out, json_object_get(r));
			continue;
		}
		struct json_object *orig = NULL;
		json_object_deep_copy(r, &orig, NULL);
		if (remove_names(r, ri->names_uffd ? "userfaultfd" : NULL,
				 split_ioctl ? "ioctl" : NULL))
			json_object_array_add(c.out, json_object_get(r));
		if (ri->names_uffd) {
			emit_displaced(&c, orig, "userfaultfd");
			if (!uffd_done)
				emit_call(&c, "userfaultfd", &allow_action, NULL);
			uffd_done = true;
		}
		if (split_ioctl) {
			emit_displaced(&c, orig, "ioctl");
			emit_call(&c, "ioctl", &ri->action, orig);
		}
		json_object_put(orig);
	}
	free(info);
	if (!uffd_done)
		emit_call(&c, "userfaultfd", &allow_action, NULL);
	/* No rule names ioctl for every container: the default action decides
	 * it, for all or for the containers the rules leave out. */
	if (p->cover_device && !ioctl_named && known_actions[c.def.kind].permits)
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
	if (profile_merge(o, p, fmt, &err) < 0)
		abort(); /* our own skeleton is always valid */
	return o;
}

struct json_object *profile_parse(const char *text, size_t len, struct profile_error *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t end;

	if (!tok) {
		bad(err, "(top level)", "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue)
		jerr = json_tokener_error_parse_eof;
	if (jerr == json_tokener_success) {
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
		if (end < len) {
			json_object_put(o);
			o = NULL;
		}
	}
	if (!o) {
		unsigned line = 1, col = 1;
		for (size_t i = 0; i < end && i < len; i++, col++)
			if (text[i] == '\n')
				line++, col = 0;
		char where[64];
		snprintf(where, sizeof(where), "line %u, column %u", line, col);
		bad(err, where, "%s", jerr == json_tokener_success ? "unexpected content after the profile"
								   : json_tokener_error_desc(jerr));
	}
	json_tokener_free(tok);
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
