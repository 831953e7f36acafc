// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a runtime makes of a profile: the rules that apply to a container
 * (includes/excludes resolved as Docker and containers/common resolve
 * them, or ignored as a runtime-spec reader ignores them), then, for each
 * call, the action of the rules whose conditions hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "profile-view.h"

#define HOST_ARCH PROFILE_HOST_ARCH
#define TCGETS_CMD 0x5401u

const struct profile_runtime profile_runtimes[4] = {
	{ "docker", PROFILE_READER_DOCKER, "the Docker profile format" },
	{ "podman", PROFILE_READER_DOCKER, "the Docker profile format (containers/common)" },
	{ "crio", PROFILE_READER_DOCKER, "the Docker profile format (containers/common)" },
	{ "containerd", PROFILE_READER_OCI, "the runtime-spec linux.seccomp format" },
};

/* The capabilities Docker and containerd give a container by default. */
static const char *const default_caps[] = {
	"CAP_CHOWN",	  "CAP_DAC_OVERRIDE", "CAP_FSETID",	     "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW",	  "CAP_SETGID",	      "CAP_SETUID",	     "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
};

const char *profile_call_text(enum profile_call c)
{
	switch (c) {
	case PROFILE_CALL_UFFD:
		return "userfaultfd without UFFD_USER_MODE_ONLY";
	case PROFILE_CALL_UFFD_UMO:
		return "userfaultfd with UFFD_USER_MODE_ONLY";
	case PROFILE_CALL_IOC_NEW:
		return "ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY";
	case PROFILE_CALL_IOC_NEW_UMO:
		return "ioctl USERFAULTFD_IOC_NEW with UFFD_USER_MODE_ONLY";
	case PROFILE_CALL_IOCTL_OTHER:
		return "other ioctl commands";
	case PROFILE_N_CALLS:
		break;
	}
	return "?";
}

bool profile_call_is_creation(enum profile_call c, struct call *out)
{
	bool umo = c == PROFILE_CALL_UFFD_UMO || c == PROFILE_CALL_IOC_NEW_UMO;

	if (c == PROFILE_CALL_IOCTL_OTHER || c >= PROFILE_N_CALLS)
		return false;
	out->path = c <= PROFILE_CALL_UFFD_UMO ? CALL_SYSCALL : CALL_DEVICE_IOCTL;
	out->flags = 02000000u | (umo ? POLICY_UFFD_USER_MODE_ONLY : 0);
	return true;
}

const char *profile_class_text(enum profile_class k)
{
	switch (k) {
	case PROFILE_CLASS_UNPRIVILEGED:
		return "containers without CAP_SYS_PTRACE";
	case PROFILE_CLASS_PTRACE:
		return "containers with CAP_SYS_PTRACE";
	case PROFILE_CLASS_EVERY:
		return "every container";
	case PROFILE_N_CLASSES:
		break;
	}
	return "?";
}

const char *profile_change_kind_name(enum profile_change_kind k)
{
	return k == PROFILE_LOOSENED ? "loosened" : k == PROFILE_TIGHTENED ? "tightened" : "changed";
}

bool profile_outcome_permits(const struct profile_outcome *o)
{
	return o->valid && profile_action_permits(&o->action);
}

bool profile_outcome_equal(const struct profile_outcome *a, const struct profile_outcome *b)
{
	return a->valid == b->valid && a->unclear == b->unclear && a->varies == b->varies &&
	       (!a->valid || profile_action_equal(&a->action, &b->action));
}

/* "refused (errno 1) by syscalls[3]", "allowed by default". */
static void action_text(bool valid, const struct profile_action *a, int rule, char *buf,
			size_t size)
{
	const char *name = valid ? profile_action_name(a) : "";
	const char *what = !valid			       ? "an action no runtime knows"
			   : !strcmp(name, "SCMP_ACT_ALLOW")   ? "allowed"
			   : !strcmp(name, "SCMP_ACT_LOG")     ? "allowed and logged"
			   : !strcmp(name, "SCMP_ACT_TRACE")   ? "left to a tracer"
			   : !strcmp(name, "SCMP_ACT_NOTIFY")  ? "left to a seccomp supervisor"
			   : !strcmp(name, "SCMP_ACT_TRAP")    ? "refused with SIGSYS"
			   : !strcmp(name, "SCMP_ACT_ERRNO")   ? "refused"
			   : !strcmp(name, "SCMP_ACT_KILL_PROCESS") ? "refused, killing the process"
								    : "refused, killing the thread";
	char from[48];

	if (rule < 0)
		snprintf(from, sizeof(from), "by default");
	else
		snprintf(from, sizeof(from), "by syscalls[%d]", rule);
	if (valid && profile_action_uses_errno(a))
		snprintf(buf, size, "%s (errno %" PRId64 ") %s", what, a->errno_ret, from);
	else
		snprintf(buf, size, "%s %s", what, from);
}

void profile_outcome_text(const struct profile_outcome *o, char *buf, size_t size)
{
	char first[96], other[96];

	action_text(o->valid, &o->action, o->rule, first, sizeof(first));
	if (o->unclear)
		snprintf(buf, size,
			 "unclear: syscalls[%d] and syscalls[%d] both match with different actions, "
			 "and libseccomp's merge of them decides",
			 o->rule, o->other_rule);
	else if (o->varies && o->varied_rule == -2)
		snprintf(buf, size,
			 "%s as checked, but its rules look at its arguments in more ways than "
			 "can all be tried: another form of the same call may fare otherwise",
			 first);
	else if (o->varies) {
		const uint64_t *x = o->varied_args;
		action_text(o->varied_valid, &o->varied_action, o->varied_rule, other, sizeof(other));
		snprintf(buf, size,
			 "not the same in every form of the call: %s as checked, %s with arguments "
			 "(0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 "), the same call to the kernel",
			 first, other, x[0], x[1], x[2]);
	} else
		snprintf(buf, size, "%s", first);
}

/* ---- Reading a rule as a runtime does --------------------------------- */

static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object))
		return NULL;
	json_object_object_get_ex(o, key, &v);
	return json_object_is_type(v, json_type_null) ? NULL : v;
}

static bool array_has(struct json_object *arr, const char *s)
{
	if (!json_object_is_type(arr, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		if (json_object_is_type(e, json_type_string) && !strcmp(json_object_get_string(e), s))
			return true;
	}
	return false;
}

static bool nonempty(struct json_object *f)
{
	if (!json_object_is_type(f, json_type_object))
		return false;
	json_object_object_foreach(f, key, val)
	{
		(void)key;
		if (json_object_is_type(val, json_type_array) ? json_object_array_length(val) > 0
		    : json_object_is_type(val, json_type_string) ? *json_object_get_string(val) != '\0'
								   : val != NULL)
			return true;
	}
	return false;
}

static bool has_cap(bool ptrace, const char *cap)
{
	if (!strcmp(cap, "CAP_SYS_PTRACE"))
		return ptrace;
	for (size_t i = 0; i < sizeof(default_caps) / sizeof(default_caps[0]); i++)
		if (!strcmp(cap, default_caps[i]))
			return true;
	return false;
}

/* Docker and containers/common: every listed capability for includes, any
 * for excludes; the host's architecture; minKernel taken as met. */
static bool applies(struct json_object *rule, enum profile_reader rd, bool ptrace)
{
	struct json_object *inc = field(rule, "includes"), *exc = field(rule, "excludes");
	struct json_object *arches, *caps;

	if (rd == PROFILE_READER_OCI)
		return true;
	if ((arches = field(inc, "arches")) && json_object_is_type(arches, json_type_array) &&
	    json_object_array_length(arches) > 0 && !array_has(arches, HOST_ARCH))
		return false;
	if (array_has(field(exc, "arches"), HOST_ARCH))
		return false;
	if ((caps = field(inc, "caps")) && json_object_is_type(caps, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(caps); i++) {
			struct json_object *c = json_object_array_get_idx(caps, i);
			if (!json_object_is_type(c, json_type_string) ||
			    !has_cap(ptrace, json_object_get_string(c)))
				return false;
		}
	}
	if ((caps = field(exc, "caps")) && json_object_is_type(caps, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(caps); i++) {
			struct json_object *c = json_object_array_get_idx(caps, i);
			if (json_object_is_type(c, json_type_string) &&
			    has_cap(ptrace, json_object_get_string(c)))
				return false;
		}
	}
	return true;
}

static bool names_call(struct json_object *rule, enum profile_reader rd, const char *name)
{
	struct json_object *single = field(rule, "name");

	if (rd == PROFILE_READER_DOCKER && json_object_is_type(single, json_type_string) &&
	    !strcmp(json_object_get_string(single), name))
		return true;
	return array_has(field(rule, "names"), name);
}

static bool read_u64(struct json_object *o, uint64_t *v)
{
	if (!o) {
		*v = 0;
		return true;
	}
	if (!json_object_is_type(o, json_type_int))
		return false;
	*v = json_object_get_uint64(o);
	return true;
}

/* Whether every condition holds for args; a condition that cannot be read
 * holds for nothing. */
static bool conditions_hold(struct json_object *rule, const uint64_t *args, bool *conditional)
{
	struct json_object *conds = field(rule, "args");

	*conditional = false;
	if (!json_object_is_type(conds, json_type_array))
		return true;
	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i), *idx = field(c, "index"),
				   *op = field(c, "op");
		uint64_t a, b;
		*conditional = true;
		if (!json_object_is_type(idx, json_type_int) || !json_object_is_type(op, json_type_string) ||
		    !read_u64(field(c, "value"), &a) || !read_u64(field(c, "valueTwo"), &b))
			return false;
		int64_t k = json_object_get_int64(idx);
		if (k < 0 || k > 5)
			return false;
		uint64_t x = args[k];
		const char *o = json_object_get_string(op);
		bool ok = !strcmp(o, "SCMP_CMP_NE")	    ? x != a
			  : !strcmp(o, "SCMP_CMP_LT")	    ? x < a
			  : !strcmp(o, "SCMP_CMP_LE")	    ? x <= a
			  : !strcmp(o, "SCMP_CMP_EQ")	    ? x == a
			  : !strcmp(o, "SCMP_CMP_GE")	    ? x >= a
			  : !strcmp(o, "SCMP_CMP_GT")	    ? x > a
			  : !strcmp(o, "SCMP_CMP_MASKED_EQ") ? (x & a) == b
							     : false;
		if (!ok)
			return false;
	}
	return true;
}

static void read_action(struct json_object *name, struct json_object *errno_ret,
			struct profile_outcome *o)
{
	o->valid = profile_action_read(name, errno_ret, &o->action) == 0;
}

/* The outcome of one call, name(args), as the runtime's filter decides it. */
static void decide(struct json_object *prof, enum profile_reader rd, bool ptrace, const char *name,
		   const uint64_t *args, struct profile_outcome *o)
{
	*o = (struct profile_outcome){ .rule = -1, .other_rule = -1 };
	read_action(field(prof, "defaultAction"), field(prof, "defaultErrnoRet"), o);

	struct json_object *rules = field(prof, "syscalls");
	bool found = false;
	for (size_t i = 0; json_object_is_type(rules, json_type_array) &&
			   i < json_object_array_length(rules);
	     i++) {
		struct json_object *r = json_object_array_get_idx(rules, i);
		bool conditional;
		if (!names_call(r, rd, name) || !applies(r, rd, ptrace) ||
		    !conditions_hold(r, args, &conditional))
			continue;
		struct profile_outcome m = { .rule = (int)i, .other_rule = -1 };
		read_action(field(r, "action"), field(r, "errnoRet"), &m);
		if (!found) {
			*o = m;
			found = true;
		} else if (!o->unclear && !profile_outcome_equal(o, &m)) {
			o->unclear = true;
			o->other_rule = (int)i;
		}
	}
}

/* ---- The same call in other words ------------------------------------- */

/* The kernel reads userfaultfd(2)'s flags, and USERFAULTFD_IOC_NEW's, as
 * an int, and ioctl(2)'s fd and command as unsigned ints; a filter compares
 * all 64 bits of every argument.  So a rule can refuse a call in one form
 * and let the same call through in another: with O_NONBLOCK, without
 * O_CLOEXEC, with bits above 32 set, or with any value in an argument the
 * call does not use.  Each argument a rule's condition looks at is tried
 * with values of both kinds: the edges of each condition, and the forms
 * above; the outcome must be one for all of them. */
#define ARG_VALUES_MAX 24
#define ARG_TRIES_MAX 4096 /* combinations tried per call, at most */
#define HIGH32 0xffffffff00000000ull

struct arg_values {
	uint64_t v[6][ARG_VALUES_MAX];
	int n[6];
	bool full; /* a value was left out: not every form can be tried */
};

/* Whether the kernel takes x, as argument k of the call, for what the
 * checked value means. */
static bool same_for_kernel(bool syscall, bool umo, int k, uint64_t x)
{
	uint32_t lo = (uint32_t)x;
	int flags_at = syscall ? 0 : 2;

	if (k == flags_at)
		return !(lo & ~POLICY_KNOWN_FLAGS) && !!(lo & POLICY_UFFD_USER_MODE_ONLY) == umo;
	if (!syscall && k == 1)
		return lo == PROFILE_IOC_NEW;
	return true; /* the fd, or an argument the call does not use */
}

static void add_value(struct arg_values *av, bool syscall, bool umo, int k, uint64_t x)
{
	if (!same_for_kernel(syscall, umo, k, x))
		return;
	for (int i = 0; i < av->n[k]; i++)
		if (av->v[k][i] == x)
			return;
	if (av->n[k] == ARG_VALUES_MAX)
		av->full = true;
	else
		av->v[k][av->n[k]++] = x;
}

/* The values to try for each argument of name(checked): the checked one
 * first; for an argument some condition looks at, also its other forms
 * and each condition's edges (a constant, its neighbours, and for a mask
 * the checked value with the masked bits made to match or not). */
static void arg_values(struct json_object *prof, enum profile_reader rd, const char *name,
		       bool syscall, bool umo, const uint64_t *checked, struct arg_values *av)
{
	struct json_object *rules = field(prof, "syscalls");

	av->full = false;
	for (int k = 0; k < 6; k++) {
		av->n[k] = 0;
		add_value(av, syscall, umo, k, checked[k]);
	}
	for (size_t i = 0; json_object_is_type(rules, json_type_array) &&
			   i < json_object_array_length(rules);
	     i++) {
		struct json_object *r = json_object_array_get_idx(rules, i), *conds = field(r, "args");
		if (!names_call(r, rd, name) || !json_object_is_type(conds, json_type_array))
			continue;
		for (size_t j = 0; j < json_object_array_length(conds); j++) {
			struct json_object *c = json_object_array_get_idx(conds, j), *idx = field(c, "index");
			uint64_t a, b;
			if (!json_object_is_type(idx, json_type_int) || !read_u64(field(c, "value"), &a) ||
			    !read_u64(field(c, "valueTwo"), &b))
				continue; /* such a rule holds for nothing */
			int64_t k = json_object_get_int64(idx);
			if (k < 0 || k > 5)
				continue;
			uint64_t x = checked[k], forms[] = {
				x ^ 04000u,	       /* O_NONBLOCK */
				x ^ 02000000u,	       /* O_CLOEXEC */
				x ^ 02004000u,	       /* both */
				x | HIGH32,	       /* the high 32 bits */
				x ^ (1ull << 32),
				(x & ~a) | (b & a),    /* a mask's bits made to match */
				(x & ~a) | (~b & a),   /* and not to */
				x ^ (a & -a),	       /* its lowest bit flipped */
				a, a - 1, a + 1, b,
				(uint32_t)a | (x & HIGH32), /* a's low half in x's form */
			};
			for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++)
				add_value(av, syscall, umo, (int)k, forms[f]);
		}
	}
}

static void outcome_of(struct json_object *prof, enum profile_reader rd, bool ptrace,
		       enum profile_call call, struct profile_outcome *o)
{
	struct call c;
	uint64_t args[6] = { 0 };
	const char *name = "ioctl";
	bool creation = profile_call_is_creation(call, &c);

	if (!creation) {
		args[0] = 3;
		args[1] = TCGETS_CMD;
	} else if (c.path == CALL_SYSCALL) {
		name = "userfaultfd";
		args[0] = c.flags;
	} else {
		args[0] = 3;
		args[1] = PROFILE_IOC_NEW;
		args[2] = c.flags;
	}
	decide(prof, rd, ptrace, name, args, o);
	if (!creation) /* any other command: the checked one stands for them */
		return;

	struct arg_values av;
	arg_values(prof, rd, name, c.path == CALL_SYSCALL, c.flags & POLICY_UFFD_USER_MODE_ONLY, args,
		   &av);
	/* Every combination, as an odometer; the first (all digits 0) is the
	 * call already decided. */
	int digit[6] = { 0 };
	int tries = 0;
	for (; tries < ARG_TRIES_MAX; tries++) {
		int k = 0;
		while (k < 6 && ++digit[k] == av.n[k])
			digit[k++] = 0;
		if (k == 6)
			break;
		uint64_t x[6];
		for (int i = 0; i < 6; i++)
			x[i] = av.v[i][digit[i]];
		struct profile_outcome m;
		decide(prof, rd, ptrace, name, x, &m);
		if (profile_outcome_equal(o, &m))
			continue;
		o->varies = true;
		memcpy(o->varied_args, x, sizeof(x));
		o->varied_action = m.action;
		o->varied_rule = m.rule;
		o->varied_valid = m.valid;
		return;
	}
	/* Too many forms to try them all: say so rather than vouch. */
	if (av.full || tries == ARG_TRIES_MAX) {
		o->varies = true;
		o->varied_rule = -2;
	}
}

void profile_view_of(struct json_object *profile, enum profile_reader reader, struct profile_view *v)
{
	*v = (struct profile_view){ .reader = reader };
	for (int k = 0; k < PROFILE_N_CLASSES; k++) {
		v->classes[k] = reader == PROFILE_READER_DOCKER ? k != PROFILE_CLASS_EVERY
								: k == PROFILE_CLASS_EVERY;
		if (!v->classes[k])
			continue;
		for (int c = 0; c < PROFILE_N_CALLS; c++) {
			if (profile)
				outcome_of(profile, reader, k == PROFILE_CLASS_PTRACE,
					   (enum profile_call)c, &v->outcomes[k][c]);
			else /* no filter at all */
				v->outcomes[k][c] = (struct profile_outcome){
					.action = profile_action_allow, .rule = -1, .other_rule = -1,
					.valid = true
				};
		}
	}
}

/* ---- What a reader ignores ---------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void note(struct profile_notes *n, const char *fmt, ...)
{
	va_list ap;

	if (n->n == sizeof(n->text) / sizeof(n->text[0])) {
		n->more++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(n->text[n->n++], sizeof(n->text[0]), fmt, ap);
	va_end(ap);
}

void profile_reader_notes(struct json_object *prof, enum profile_reader rd, struct profile_notes *n)
{
	struct json_object *rules = field(prof, "syscalls"), *def = field(prof, "defaultAction");
	struct profile_action a;

	*n = (struct profile_notes){ 0 };
	if (!json_object_is_type(prof, json_type_object)) {
		n->refused = true;
		note(n, "not a JSON object: every runtime refuses it");
		return;
	}
	if (profile_action_read(def, field(prof, "defaultErrnoRet"), &a) < 0) {
		n->refused = true;
		note(n, "defaultAction: missing or unknown: the runtime refuses the profile");
	} else if (profile_action_permits(&a))
		note(n, "defaultAction: %s: every call no rule names is let through, the runtime's "
			"own default filtering included",
		     profile_action_name(&a));
	if (rd == PROFILE_READER_OCI && field(prof, "archMap"))
		note(n, "archMap: ignored (Docker profile format): the filter lists only the "
			"architectures in 'architectures', and calls from i386 or x32 processes "
			"then meet the runtime's action for architectures it does not list");
	if (rd == PROFILE_READER_DOCKER && field(prof, "archMap") && field(prof, "architectures")) {
		n->refused = true;
		note(n, "'architectures' and 'archMap' together: Docker and containers/common "
			"refuse the profile");
	}
	for (size_t i = 0; json_object_is_type(rules, json_type_array) &&
			   i < json_object_array_length(rules);
	     i++) {
		struct json_object *r = json_object_array_get_idx(rules, i);
		if (profile_action_read(field(r, "action"), field(r, "errnoRet"), &a) < 0) {
			n->refused = true;
			note(n, "syscalls[%zu].action: missing or unknown: the runtime refuses the "
				"profile",
			     i);
		}
		if (rd == PROFILE_READER_OCI) {
			static const char *const keys[] = { "includes", "excludes" };
			for (size_t k = 0; k < 2; k++)
				if (nonempty(field(r, keys[k])))
					note(n, "syscalls[%zu].%s: ignored (Docker profile format): the "
						"rule applies to every container",
					     i, keys[k]);
			if (field(r, "name") && !field(r, "names"))
				note(n, "syscalls[%zu].name: ignored (the runtime-spec format has "
					"'names' only): the rule matches no call",
				     i);
		} else {
			struct json_object *mk = field(field(r, "includes"), "minKernel");
			if (json_object_is_type(mk, json_type_string) && *json_object_get_string(mk))
				note(n, "syscalls[%zu].includes.minKernel: the rule applies from Linux "
					"%s on; taken here to hold",
				     i, json_object_get_string(mk));
		}
	}
}

/* ---- Comparing -------------------------------------------------------- */

static bool policy_allows(const struct policy *p, enum profile_class k, enum profile_call c)
{
	struct call call;

	return profile_call_is_creation(c, &call) &&
	       policy_decide(p, k == PROFILE_CLASS_PTRACE, &call) == VERDICT_ALLOW;
}

int profile_compare(struct json_object *before, struct json_object *after, enum profile_format fmt,
		    const struct policy *p, struct profile_report *r, struct profile_error *err)
{
	enum profile_reader rd = fmt == PROFILE_FORMAT_DOCKER ? PROFILE_READER_DOCKER
							      : PROFILE_READER_OCI;
	struct profile_view vb, va;
	char b[256], a[256];
	int ret = 0;

	profile_view_of(before, rd, &vb);
	profile_view_of(after, rd, &va);
	r->n = 0;
	/* A base that is itself unclear cannot be compared with. */
	for (int k = 0; k < PROFILE_N_CLASSES; k++) {
		for (int c = 0; vb.classes[k] && c < PROFILE_N_CALLS; c++) {
			const struct profile_outcome *o = &vb.outcomes[k][c];
			if (!o->unclear)
				continue;
			char where[128];
			snprintf(where, sizeof(where), "%s, %s", profile_call_text((enum profile_call)c),
				 profile_class_text((enum profile_class)k));
			return profile_error_set(err, where,
						 "in the base, syscalls[%d] and syscalls[%d] both match "
						 "with different actions, so libseccomp's merge of them "
						 "decides (or the runtime refuses the profile): make "
						 "them agree in the base",
						 o->rule, o->other_rule);
		}
	}
	for (int k = 0; k < PROFILE_N_CLASSES; k++) {
		if (!va.classes[k])
			continue;
		for (int c = 0; c < PROFILE_N_CALLS; c++) {
			const struct profile_outcome *ob = &vb.outcomes[k][c], *oa = &va.outcomes[k][c];
			if (profile_outcome_equal(ob, oa))
				continue;
			struct profile_change *ch = &r->changes[r->n++];
			bool pb = profile_outcome_permits(ob), pa = profile_outcome_permits(oa);
			*ch = (struct profile_change){
				.kind = !pb && pa ? PROFILE_LOOSENED
					: pb && !pa ? PROFILE_TIGHTENED
						    : PROFILE_CHANGED,
				.cls = (enum profile_class)k,
				.call = (enum profile_call)c,
				.before = *ob,
				.after = *oa,
				.asked = policy_allows(p, (enum profile_class)k, (enum profile_call)c),
			};
			if (ret < 0)
				continue;
			/* What the policy does not ask for: a call let through
			 * that was refused, or with another action; anything
			 * about other ioctl commands; an unclear outcome. */
			if (oa->unclear || oa->varies || c == PROFILE_CALL_IOCTL_OTHER ||
			    (pa && (!ch->asked || pb))) {
				profile_outcome_text(ob, b, sizeof(b));
				profile_outcome_text(oa, a, sizeof(a));
				char where[128];
				snprintf(where, sizeof(where), "%s, %s", profile_call_text(ch->call),
					 profile_class_text(ch->cls));
				/* A base that lets the call through by another action
				 * (a tracer, a notifier, the log) keeps that decision:
				 * the policy's rule would take it away. */
				ret = pa && pb
					? profile_error_set(err, where,
							    "the result would change %s to %s: the base "
							    "leaves this call to its own action, which the "
							    "policy's rule would replace; nothing is "
							    "written: give a base that allows or refuses "
							    "userfaultfd and ioctl itself",
							    b, a)
					: profile_error_set(err, where,
							    "the result would change %s to %s, which the "
							    "policy does not ask for; nothing is written",
							    b, a);
			}
		}
	}
	return ret;
}

bool profile_view_enforces(const struct profile_view *v, const struct policy *p,
			   struct profile_error *err)
{
	char what[256];

	for (int k = 0; k < PROFILE_N_CLASSES; k++) {
		if (!v->classes[k])
			continue;
		for (int c = 0; c < PROFILE_N_CALLS; c++) {
			const struct profile_outcome *o = &v->outcomes[k][c];
			struct call call;
			bool want_permit = true, creation = profile_call_is_creation(c, &call);
			if (creation)
				want_permit = policy_decide(p, k == PROFILE_CLASS_PTRACE, &call) !=
					      VERDICT_EPERM;
			if (!o->unclear && !o->varies &&
			    (!creation || profile_outcome_permits(o) == want_permit))
				continue;
			profile_outcome_text(o, what, sizeof(what));
			char where[128];
			snprintf(where, sizeof(where), "%s, %s", profile_call_text((enum profile_call)c),
				 profile_class_text((enum profile_class)k));
			profile_error_set(err, where, "%s; the policy %s it", what,
					  want_permit ? "allows" : "refuses");
			return false;
		}
	}
	return true;
}
