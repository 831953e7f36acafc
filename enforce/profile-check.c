// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Validating a base profile: every field uffdguard reads or must keep
 * intact is checked, and each refusal names its place as a JSON path.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile-check.h"

const char *const profile_arches[3] = { "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32" };

/* `permits`: the action can let the call reach the kernel.  A tracer
 * (SCMP_ACT_TRACE) or a user-space supervisor (SCMP_ACT_NOTIFY, with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE) may let it through, so both count as
 * permitting: a rule that gives them ioctl must not cover
 * USERFAULTFD_IOC_NEW without the flag.  SCMP_ACT_TRAP does not: the
 * signal handler can only make the call again, through the same filter. */
static const struct {
	const char *name;
	bool permits;
	bool uses_errno;
} known_actions[] = {
	{ "SCMP_ACT_KILL", false, false },	  { "SCMP_ACT_KILL_PROCESS", false, false },
	{ "SCMP_ACT_KILL_THREAD", false, false }, { "SCMP_ACT_TRAP", false, false },
	{ "SCMP_ACT_ERRNO", false, true },	  { "SCMP_ACT_TRACE", true, true },
	{ "SCMP_ACT_ALLOW", true, false },	  { "SCMP_ACT_LOG", true, false },
	{ "SCMP_ACT_NOTIFY", true, false },
};
#define N_ACTIONS (sizeof(known_actions) / sizeof(known_actions[0]))

static const char *const known_ops[] = {
	"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",	    "SCMP_CMP_EQ",
	"SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ",
};

/* Indices in known_actions[]. */
const struct profile_action profile_action_eperm = { 4, EPERM }; /* SCMP_ACT_ERRNO */
const struct profile_action profile_action_allow = { 6, 0 };     /* SCMP_ACT_ALLOW */

const char *profile_action_name(const struct profile_action *a)
{
	return known_actions[a->kind].name;
}

bool profile_action_permits(const struct profile_action *a)
{
	return known_actions[a->kind].permits;
}

bool profile_action_uses_errno(const struct profile_action *a)
{
	return known_actions[a->kind].uses_errno;
}

bool profile_action_equal(const struct profile_action *a, const struct profile_action *b)
{
	return a->kind == b->kind && (!profile_action_uses_errno(a) || a->errno_ret == b->errno_ret);
}

struct check {
	const struct policy *p;
	enum profile_format fmt;
	struct profile_error *err;
	struct profile_action def;
};

int profile_error_set(struct profile_error *e, const char *where, const char *fmt, ...)
{
	va_list ap;

	snprintf(e->where, sizeof(e->where), "%s", where);
	va_start(ap, fmt);
	vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool is_int(struct json_object *o)
{
	return json_object_is_type(o, json_type_int);
}

static int parse_action(struct json_object *name, struct json_object *errno_ret,
			const char *where, const char *errno_where, struct profile_action *a,
			struct profile_error *e)
{
	if (!json_object_is_type(name, json_type_string))
		return profile_error_set(e, where, "missing or not a string (an action such as SCMP_ACT_ERRNO)");
	const char *s = json_object_get_string(name);
	a->kind = -1;
	for (size_t i = 0; i < N_ACTIONS; i++)
		if (!strcmp(s, known_actions[i].name))
			a->kind = (int)i;
	if (a->kind < 0)
		return profile_error_set(e, where, "unknown action '%s'", s);
	a->errno_ret = EPERM;
	if (errno_ret && !json_object_is_type(errno_ret, json_type_null)) {
		if (!is_int(errno_ret) || json_object_get_int64(errno_ret) < 0)
			return profile_error_set(e, errno_where, "not a non-negative integer");
		a->errno_ret = json_object_get_int64(errno_ret);
	}
	return 0;
}

int profile_action_read(struct json_object *name, struct json_object *errno_ret,
			struct profile_action *a)
{
	struct profile_error e;

	return parse_action(name, errno_ret, "", "", a, &e);
}

bool profile_str_array_has(struct json_object *arr, const char *s)
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
		return profile_error_set(e, where, "not an array of strings");
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		if (!json_object_is_type(json_object_array_get_idx(arr, i), json_type_string)) {
			snprintf(w, sizeof(w), "%s[%zu]", where, i);
			return profile_error_set(e, w, "not a string");
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
			return profile_error_set(e, w,
				   "architecture '%s' is not covered: the rules are written for "
				   "SCMP_ARCH_X86_64, SCMP_ARCH_X86 and SCMP_ARCH_X32 only", a);
	}
	return 0;
}

/* archMap lists per host architecture what a filter covers; other hosts
 * keep the base's own rules (see PROFILE_HOST_ARCH), so only the x86-64
 * entry must stay within what we cover. */
static int check_arches(struct check *c, struct json_object *root)
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
		return profile_error_set(c->err, "archMap",
			   "an archMap is Docker profile format: use --format docker, or an OCI "
			   "base with an 'architectures' list");
	if (!json_object_is_type(map, json_type_array))
		return profile_error_set(c->err, "archMap", "not an array");
	for (size_t i = 0; i < json_object_array_length(map); i++) {
		struct json_object *ent = json_object_array_get_idx(map, i), *a, *subs;
		snprintf(w, sizeof(w), "archMap[%zu].architecture", i);
		if (!json_object_is_type(ent, json_type_object) ||
		    !json_object_object_get_ex(ent, "architecture", &a) ||
		    !json_object_is_type(a, json_type_string))
			return profile_error_set(c->err, w, "missing or not a string");
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

static int check_filter(struct check *c, struct json_object *f, const char *where)
{
	char w[160];

	if (!f || json_object_is_type(f, json_type_null))
		return 0;
	if (!json_object_is_type(f, json_type_object))
		return profile_error_set(c->err, where, "not an object");
	if (c->fmt == PROFILE_FORMAT_OCI && json_object_object_length(f))
		return profile_error_set(c->err, where,
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
			return profile_error_set(c->err, w, "unknown condition (known: caps, arches, minKernel)");
		}
	}
	return 0;
}

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

static int check_rule(struct check *c, struct json_object *r, size_t idx, struct profile_rule *ri)
{
	char where[48], w[96];
	struct json_object *names = NULL, *name = NULL, *act = NULL, *eret = NULL, *args = NULL,
			   *f = NULL;
	int ret;

	snprintf(where, sizeof(where), "syscalls[%zu]", idx);
	if (!json_object_is_type(r, json_type_object))
		return profile_error_set(c->err, where, "not an object");
	json_object_object_get_ex(r, "names", &names);
	json_object_object_get_ex(r, "name", &name);
	if (names && name)
		return profile_error_set(c->err, where, "both 'name' and 'names'");
	snprintf(w, sizeof(w), "%s.%s", where, name ? "name" : "names");
	if (name) {
		if (!json_object_is_type(name, json_type_string))
			return profile_error_set(c->err, w, "not a string");
		if (c->fmt == PROFILE_FORMAT_OCI)
			return profile_error_set(c->err, w,
				   "a single 'name' is Docker profile format: the runtime-spec "
				   "format has 'names' only, and its readers ignore 'name' (use "
				   "'names', or --format docker)");
	} else if (!names) {
		return profile_error_set(c->err, where, "no 'names'");
	} else if ((ret = check_str_array(names, w, c->err)) < 0) {
		return ret;
	}
	const char *single = name ? json_object_get_string(name) : NULL;
	ri->names_uffd = single ? !strcmp(single, "userfaultfd") : profile_str_array_has(names, "userfaultfd");
	ri->names_ioctl = single ? !strcmp(single, "ioctl") : profile_str_array_has(names, "ioctl");

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
			return profile_error_set(c->err, w, "not an array");
		for (size_t i = 0; i < json_object_array_length(args); i++) {
			struct json_object *a = json_object_array_get_idx(args, i), *v;
			char aw[160];
			snprintf(aw, sizeof(aw), "%s[%zu]", w, i);
			if (!json_object_is_type(a, json_type_object))
				return profile_error_set(c->err, aw, "not an object");
			snprintf(aw, sizeof(aw), "%s[%zu].index", w, i);
			if (!json_object_object_get_ex(a, "index", &v) || !is_int(v) ||
			    json_object_get_int64(v) < 0 || json_object_get_int64(v) > 5)
				return profile_error_set(c->err, aw, "missing or not an argument index 0..5");
			static const char *const nums[] = { "value", "valueTwo" };
			for (size_t k = 0; k < 2; k++) {
				snprintf(aw, sizeof(aw), "%s[%zu].%s", w, i, nums[k]);
				if (json_object_object_get_ex(a, nums[k], &v) &&
				    !json_object_is_type(v, json_type_null) &&
				    (!is_int(v) || json_object_get_int64(v) < 0))
					return profile_error_set(c->err, aw, "not an unsigned 64-bit integer");
			}
			snprintf(aw, sizeof(aw), "%s[%zu].op", w, i);
			if (!json_object_object_get_ex(a, "op", &v) ||
			    !json_object_is_type(v, json_type_string))
				return profile_error_set(c->err, aw, "missing or not a string");
			bool known = false;
			for (size_t k = 0; k < sizeof(known_ops) / sizeof(known_ops[0]); k++)
				known |= !strcmp(json_object_get_string(v), known_ops[k]);
			if (!known)
				return profile_error_set(c->err, aw, "unknown operator '%s'", json_object_get_string(v));
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
		return profile_error_set(c->err, w,
			   "a conditional rule for ioctl is not supported: its conditions could "
			   "overlap USERFAULTFD_IOC_NEW (0x%x)", PROFILE_IOC_NEW);
	/* The containers such a rule leaves out get ioctl from a permitting
	 * default, and so need our refusal of USERFAULTFD_IOC_NEW; where it
	 * applies too, its other errno would overlap that refusal. */
	if (ri->names_ioctl && ri->filtered && c->p->cover_device &&
	    profile_action_permits(&c->def) && !profile_action_permits(&ri->action) &&
	    !profile_action_equal(&ri->action, &profile_action_eperm))
		return profile_error_set(c->err, where,
			   "a rule that refuses ioctl to some containers only is not supported in a "
			   "base whose default action permits: the others need a refusal of "
			   "USERFAULTFD_IOC_NEW that would overlap it with another action");
	return 0;
}

int profile_check(struct json_object *base, const struct policy *p, enum profile_format fmt,
		  struct profile_base *out, struct profile_error *err)
{
	struct check c = { .p = p, .fmt = fmt, .err = err };
	struct json_object *def, *defe = NULL, *syscalls = NULL;
	int ret;

	*out = (struct profile_base){ 0 };
	if (!json_object_is_type(base, json_type_object))
		return profile_error_set(err, "(top level)", "not an object: a seccomp profile is a JSON object");
	json_object_object_get_ex(base, "defaultErrnoRet", &defe);
	if (!json_object_object_get_ex(base, "defaultAction", &def))
		return profile_error_set(err, "defaultAction", "missing");
	if ((ret = parse_action(def, defe, "defaultAction", "defaultErrnoRet", &c.def, err)) < 0)
		return ret;
	if ((ret = check_arches(&c, base)) < 0)
		return ret;
	if (json_object_object_get_ex(base, "syscalls", &syscalls) &&
	    !json_object_is_type(syscalls, json_type_null) &&
	    !json_object_is_type(syscalls, json_type_array))
		return profile_error_set(err, "syscalls", "not an array");

	size_t n = syscalls && json_object_is_type(syscalls, json_type_array)
			   ? json_object_array_length(syscalls)
			   : 0;
	struct profile_rule *rules = calloc(n ? n : 1, sizeof(*rules));
	if (!rules)
		return profile_error_set(err, "syscalls", "out of memory");
	for (size_t i = 0; i < n; i++) {
		if ((ret = check_rule(&c, json_object_array_get_idx(syscalls, i), i, &rules[i])) < 0) {
			free(rules);
			return ret;
		}
	}
	*out = (struct profile_base){ .def = c.def, .syscalls = n ? syscalls : NULL, .n_rules = n,
				      .rules = rules };
	return 0;
}

void profile_base_fini(struct profile_base *b)
{
	free(b->rules);
	b->rules = NULL;
}

struct json_object *profile_parse(const char *text, size_t len, struct profile_error *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t end;

	if (len > PROFILE_MAX_SIZE) {
		profile_error_set(err, "(top level)",
				  "larger than %u MiB: seccomp profiles are a few tens of KiB "
				  "(Docker's and Podman's defaults are under 40 KiB); is it the "
				  "right file?",
				  PROFILE_MAX_SIZE >> 20);
		json_tokener_free(tok);
		return NULL;
	}
	if (!tok) {
		profile_error_set(err, "(top level)", "out of memory");
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
		profile_error_set(err, where, "%s", jerr == json_tokener_success ? "unexpected content after the profile"
								   : json_tokener_error_desc(jerr));
	}
	json_tokener_free(tok);
	return o;
}
