// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard profile, offline: generation, merging into allow-list and
 * deny-list bases, refused bases, the CLI's atomic -o.  The meaning of a
 * generated profile is checked the way a runtime builds it: the rules a
 * container gets (includes/excludes resolved like containers/common) are
 * compiled with libseccomp, the BPF program is exported and run by a
 * small classic-BPF interpreter on a table of (arch, syscall, arguments),
 * and every result must be what policy_decide() says.  The rules are
 * compiled in their order and in reverse order, and for each input the
 * matching rules must all carry one action: libseccomp's precedence
 * between rules never decides anything.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "profile-view.h"
#include "profile.h"
#include "cli-run.h"
#include "bpf.h"
#include "harness.h"

#define IOC_NEW 0xAA00u
#define X32_BIT 0x40000000u
#define RET_EPERM (SECCOMP_RET_ERRNO | 1u)
#define RET_ENOSYS (SECCOMP_RET_ERRNO | 38u)

/* ---- A runtime's view of a profile ------------------------------------ */

struct rule_view {
	uint32_t action;
	int nargs;
	struct scmp_arg_cmp args[6];
};

struct view {
	uint32_t def;
	uint32_t arches[8];
	int narches;
	/* rules for userfaultfd [0] and ioctl [1] */
	struct rule_view rules[2][256];
	int nrules[2];
};

static uint32_t action_value(const char *name, struct json_object *errno_ret)
{
	uint32_t e = errno_ret ? (uint32_t)json_object_get_int64(errno_ret) : 1;

	if (!strcmp(name, "SCMP_ACT_ALLOW"))
		return SECCOMP_RET_ALLOW;
	if (!strcmp(name, "SCMP_ACT_LOG"))
		return SECCOMP_RET_LOG;
	if (!strcmp(name, "SCMP_ACT_ERRNO"))
		return SECCOMP_RET_ERRNO | (e & 0xffff);
	if (!strcmp(name, "SCMP_ACT_TRACE"))
		return SECCOMP_RET_TRACE | (e & 0xffff);
	if (!strcmp(name, "SCMP_ACT_NOTIFY"))
		return SECCOMP_RET_USER_NOTIF;
	FAIL("unexpected action %s in a test profile", name);
}

static uint32_t arch_token(const char *name)
{
	if (!strcmp(name, "SCMP_ARCH_X86_64"))
		return SCMP_ARCH_X86_64;
	if (!strcmp(name, "SCMP_ARCH_X86"))
		return SCMP_ARCH_X86;
	if (!strcmp(name, "SCMP_ARCH_X32"))
		return SCMP_ARCH_X32;
	FAIL("unexpected architecture %s", name);
}

static bool has_str(struct json_object *arr, const char *s)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s))
			return true;
	return false;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	json_object_object_get_ex(o, key, &v);
	return v && !json_object_is_type(v, json_type_null) ? v : NULL;
}

/* containers/common's setupSeccomp, on an amd64 host, for a container
 * whose bounding set has CAP_SYS_PTRACE or not. */
static bool rule_applies(struct json_object *r, bool ptrace)
{
	struct json_object *inc = get(r, "includes"), *exc = get(r, "excludes");

	if (exc && has_str(get(exc, "arches"), "amd64"))
		return false;
	if (exc && ptrace && has_str(get(exc, "caps"), "CAP_SYS_PTRACE"))
		return false;
	if (inc && get(inc, "arches") && json_object_array_length(get(inc, "arches")) &&
	    !has_str(get(inc, "arches"), "amd64"))
		return false;
	struct json_object *caps = inc ? get(inc, "caps") : NULL;
	for (size_t i = 0; caps && i < json_object_array_length(caps); i++)
		if (!ptrace || strcmp(json_object_get_string(json_object_array_get_idx(caps, i)),
				      "CAP_SYS_PTRACE"))
			return false;
	return true;
}

static void view_of(struct json_object *prof, bool ptrace, struct view *v)
{
	memset(v, 0, sizeof(*v));
	v->def = action_value(json_object_get_string(get(prof, "defaultAction")),
			      get(prof, "defaultErrnoRet"));
	struct json_object *arches = get(prof, "architectures"), *map = get(prof, "archMap");
	for (size_t i = 0; arches && i < json_object_array_length(arches); i++)
		v->arches[v->narches++] =
			arch_token(json_object_get_string(json_object_array_get_idx(arches, i)));
	for (size_t i = 0; map && i < json_object_array_length(map); i++) {
		struct json_object *ent = json_object_array_get_idx(map, i);
		if (strcmp(json_object_get_string(get(ent, "architecture")), "SCMP_ARCH_X86_64"))
			continue;
		v->arches[v->narches++] = SCMP_ARCH_X86_64;
		struct json_object *subs = get(ent, "subArchitectures");
		for (size_t k = 0; subs && k < json_object_array_length(subs); k++)
			v->arches[v->narches++] =
				arch_token(json_object_get_string(json_object_array_get_idx(subs, k)));
	}
	struct json_object *rules = get(prof, "syscalls");
	for (size_t i = 0; rules && i < json_object_array_length(rules); i++) {
		struct json_object *r = json_object_array_get_idx(rules, i);
		if (!rule_applies(r, ptrace))
			continue;
		for (int t = 0; t < 2; t++) {
			if (!has_str(get(r, "names"), t ? "ioctl" : "userfaultfd"))
				continue;
			ASSERT_LT(v->nrules[t], 256);
			struct rule_view *rv = &v->rules[t][v->nrules[t]++];
			rv->action = action_value(json_object_get_string(get(r, "action")),
						  get(r, "errnoRet"));
			struct json_object *args = get(r, "args");
			unsigned seen = 0;
			for (size_t k = 0; args && k < json_object_array_length(args); k++) {
				struct json_object *a = json_object_array_get_idx(args, k);
				unsigned idx = (unsigned)json_object_get_int64(get(a, "index"));
				/* runc ORs the conditions of a rule that
				 * names one argument twice: never do that */
				ASSERT_EQ(seen & (1u << idx), 0);
				seen |= 1u << idx;
				const char *op = json_object_get_string(get(a, "op"));
				if (strcmp(op, "SCMP_CMP_MASKED_EQ"))
					FAIL("generated rule with operator %s", op);
				rv->args[rv->nargs++] = SCMP_A0(SCMP_CMP_MASKED_EQ, 0, 0);
				rv->args[rv->nargs - 1].arg = idx;
				rv->args[rv->nargs - 1].datum_a = json_object_get_uint64(get(a, "value"));
				rv->args[rv->nargs - 1].datum_b =
					json_object_get_uint64(get(a, "valueTwo"));
			}
		}
	}
}

/* ---- libseccomp and a classic-BPF interpreter ------------------------- */

static void compile(const struct view *v, bool reverse, struct bpf_prog *out)
{
	scmp_filter_ctx ctx = seccomp_init(v->def);
	ASSERT_TRUE(ctx != NULL);
	for (int i = 0; i < v->narches; i++) {
		int r = seccomp_arch_add(ctx, v->arches[i]);
		if (r != -EEXIST)
			ASSERT_OK(r);
	}
	for (int t = 0; t < 2; t++) {
		for (int k = 0; k < v->nrules[t]; k++) {
			const struct rule_view *rv = &v->rules[t][reverse ? v->nrules[t] - 1 - k : k];
			int nr = seccomp_syscall_resolve_name(t ? "ioctl" : "userfaultfd");
			ASSERT_OK(seccomp_rule_add_array(ctx, rv->action, nr, (unsigned)rv->nargs,
							 rv->args));
		}
	}
	bpf_export(ctx, out);
	seccomp_release(ctx);
}

/* ---- Expected results ---------------------------------------------- */

static const uint64_t flag_inputs[] = {
	0, 1, 02000000, 02000001, 04001, 0100, 0101, 1ull << 32, (1ull << 32) | 1,
	0xffffffff00000000ull, 0xffffffff00000001ull, 0xfffffffeull, 0xffffffffull,
	0x80000000ull, 0x8000000000000001ull,
};
static const uint64_t cmd_inputs[] = {
	IOC_NEW, IOC_NEW | (1ull << 32), IOC_NEW | 0xffffffff00000000ull, 0x5401, 0x541b,
	IOC_NEW | 1, IOC_NEW ^ 0x8000, 0x2000AA00, 0xAB00, IOC_NEW | (1ull << 63), 0,
	0xffffffffull, 0x8000AA00, 0xc018aa3f, 0xffffffff00000000ull,
};

struct abi {
	const char *name;
	uint32_t audit_arch;
	uint32_t scmp_arch;
	int nr_uffd, nr_ioctl;
	bool wide; /* 64-bit argument registers */
};
static const struct abi abis[] = {
	{ "x86_64", AUDIT_ARCH_X86_64, SCMP_ARCH_X86_64, 323, 16, true },
	{ "i386", AUDIT_ARCH_I386, SCMP_ARCH_X86, 374, 54, false },
	{ "x32", AUDIT_ARCH_X86_64, SCMP_ARCH_X32, 323 | X32_BIT, 514 | X32_BIT, true },
};

/* What the base lets the two calls through with: userfaultfd where the
 * policy permits it, ioctl for every command it does not refuse. */
struct bases {
	uint32_t uffd, ioctl;
};

static uint32_t expected(const struct policy *p, bool privileged, bool ioctl, uint64_t cmd,
			 uint64_t flags, struct bases base)
{
	if (ioctl && (uint32_t)cmd != IOC_NEW)
		return base.ioctl;
	struct call c = { .path = ioctl ? CALL_DEVICE_IOCTL : CALL_SYSCALL, .flags = flags };
	if (policy_decide(p, privileged, &c) == VERDICT_EPERM)
		return RET_EPERM;
	return ioctl ? base.ioctl : base.uffd;
}

static bool rule_matches(const struct rule_view *r, const __u64 *args)
{
	for (int i = 0; i < r->nargs; i++)
		if ((args[r->args[i].arg] & r->args[i].datum_a) != r->args[i].datum_b)
			return false;
	return true;
}

/* Check every input on every ABI; returns the number of inputs checked. */
static int check_meaning_bases(struct json_object *prof, const struct policy *p, bool ptrace,
			       bool privileged, struct bases base)
{
	struct view v;
	static struct bpf_prog fwd, rev;
	int checked = 0;

	view_of(prof, ptrace, &v);
	compile(&v, false, &fwd);
	compile(&v, true, &rev);
	for (size_t a = 0; a < sizeof(abis) / sizeof(abis[0]); a++) {
		bool listed = false;
		for (int i = 0; i < v.narches; i++)
			listed |= v.arches[i] == abis[a].scmp_arch;
		if (!listed)
			FAIL("profile does not list %s", abis[a].name);
		for (int t = 0; t < 2; t++) {
			size_t ncmd = t ? sizeof(cmd_inputs) / sizeof(cmd_inputs[0]) : 1;
			for (size_t ci = 0; ci < ncmd; ci++) {
				for (size_t fi = 0; fi < sizeof(flag_inputs) / sizeof(flag_inputs[0]);
				     fi++) {
					uint64_t mask = abis[a].wide ? ~0ull : 0xffffffffull;
					uint64_t cmd = cmd_inputs[ci] & mask,
						 flags = flag_inputs[fi] & mask;
					struct seccomp_data d = { .arch = abis[a].audit_arch };
					d.nr = t ? abis[a].nr_ioctl : abis[a].nr_uffd;
					if (t) {
						d.args[0] = 3;
						d.args[1] = cmd;
						d.args[2] = flags;
					} else {
						d.args[0] = flags;
					}
					uint32_t want = expected(p, privileged, t, cmd, flags, base);
					uint32_t got = bpf_run(&fwd, &d), got_rev = bpf_run(&rev, &d);
					if (got != want || got_rev != want)
						FAIL("%s %s cmd=0x%llx flags=0x%llx: got 0x%x "
						     "(reversed 0x%x), want 0x%x",
						     abis[a].name, t ? "ioctl" : "userfaultfd",
						     (unsigned long long)cmd,
						     (unsigned long long)flags, got, got_rev, want);
					/* No two matching rules disagree. */
					uint32_t seen = 0;
					bool any = false;
					for (int k = 0; k < v.nrules[t]; k++) {
						if (!rule_matches(&v.rules[t][k], d.args))
							continue;
						if (any && seen != v.rules[t][k].action)
							FAIL("%s cmd=0x%llx flags=0x%llx: rules "
							     "with actions 0x%x and 0x%x both match",
							     t ? "ioctl" : "userfaultfd",
							     (unsigned long long)cmd,
							     (unsigned long long)flags, seen,
							     v.rules[t][k].action);
						seen = v.rules[t][k].action;
						any = true;
					}
					checked++;
				}
			}
		}
	}
	return checked;
}

/* The same for a base that lets userfaultfd through with SCMP_ACT_ALLOW. */
static int check_meaning(struct json_object *prof, const struct policy *p, bool ptrace,
			 bool privileged, uint32_t ioctl_base)
{
	return check_meaning_bases(prof, p, ptrace, privileged,
				   (struct bases){ SECCOMP_RET_ALLOW, ioctl_base });
}

static struct policy preset(const char *name)
{
	struct policy p;
	char err[256];
	ASSERT_OK(policy_preset(name, &p, err, sizeof(err)));
	return p;
}

static const char *const presets[] = { "allow", "user-mode-only", "deny" };

static struct json_object *parse_ok(const char *text)
{
	struct profile_error e;
	struct json_object *o = profile_parse(text, strlen(text), &e);
	if (!o)
		FAIL("parse: %s: %s", e.where, e.reason);
	return o;
}

/* The base text merged for policy p; fails the test if it is refused. */
static struct json_object *merge_ok(const char *text, size_t len, const struct policy *p,
				    enum profile_format fmt)
{
	struct profile_error e;
	struct json_object *prof = profile_parse(text, len, &e);
	if (!prof)
		FAIL("parse: %s: %s", e.where, e.reason);
	if (profile_merge(prof, p, fmt, &e) < 0)
		FAIL("merge: %s: %s", e.where, e.reason);
	return prof;
}

/* ---- Standalone fragments ------------------------------------------ */

TEST(standalone_fragments_mean_the_policy)
{
	for (size_t i = 0; i < 3; i++) {
		for (int fmt = 0; fmt < 2; fmt++) {
			struct policy p = preset(presets[i]);
			struct json_object *prof = profile_standalone(&p, (enum profile_format)fmt);
			/* OCI cannot see capabilities: every container is
			 * unprivileged, CAP_SYS_PTRACE or not. */
			bool docker = fmt == PROFILE_FORMAT_DOCKER;
			ASSERT_GT(check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW), 0);
			check_meaning(prof, &p, true, docker, SECCOMP_RET_ALLOW);
			json_object_put(prof);
		}
	}
}

TEST(knobs_compile_like_presets)
{
	/* Every knob combination: device covered or not, CAP_SYS_PTRACE
	 * exempt or not. */
	for (int bits = 0; bits < 1 << POLICY_N_KNOBS; bits++) {
		struct policy p = POLICY_DEFAULT;
		for (int k = 0; k < POLICY_N_KNOBS; k++)
			policy_knob_put(&p, &policy_knobs[k], bits >> k & 1);
		struct json_object *prof = profile_standalone(&p, PROFILE_FORMAT_DOCKER);
		check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
		check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
		json_object_put(prof);
	}
}

TEST(user_mode_only_fragment_has_the_documented_rule)
{
	struct policy p = preset("user-mode-only");
	struct json_object *prof = profile_standalone(&p, PROFILE_FORMAT_OCI);
	char *text = profile_serialize(prof);
	struct json_object *rules = get(prof, "syscalls");

	ASSERT_EQ(json_object_array_length(rules), 2);
	struct json_object *r0 = json_object_array_get_idx(rules, 0);
	ASSERT_TRUE(has_str(get(r0, "names"), "userfaultfd"));
	ASSERT_TRUE(!strcmp(json_object_get_string(get(r0, "action")), "SCMP_ACT_ERRNO"));
	ASSERT_EQ(json_object_get_int64(get(r0, "errnoRet")), 1);
	struct json_object *a0 = json_object_array_get_idx(get(r0, "args"), 0);
	ASSERT_EQ(json_object_get_int64(get(a0, "value")), 1);
	ASSERT_EQ(json_object_get_int64(get(a0, "valueTwo")), 0);
	ASSERT_TRUE(strstr(text, "\"op\": \"SCMP_CMP_MASKED_EQ\"") != NULL);
	ASSERT_TRUE(strstr(text, "\"architectures\"") != NULL);
	ASSERT_TRUE(strstr(text, "includes") == NULL);
	free(text);
	json_object_put(prof);
}

/* ---- Merging ------------------------------------------------------- */

/* An allow-list base in the shape of Podman's: ENOSYS by default,
 * userfaultfd refused by name, ioctl allowed unconditionally, per-host
 * archMap, conditional rules and capability conditions elsewhere. */
static const char allow_list_base[] =
	"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"x-vendor\": [1, 2],"
	" \"archMap\": [{\"architecture\": \"SCMP_ARCH_X86_64\", \"subArchitectures\":"
	" [\"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"]}, {\"architecture\": \"SCMP_ARCH_AARCH64\","
	" \"subArchitectures\": [\"SCMP_ARCH_ARM\"]}],"
	" \"syscalls\": ["
	"{\"names\": [\"bdflush\", \"userfaultfd\", \"kexec_load\"], \"action\": \"SCMP_ACT_ERRNO\","
	" \"args\": [], \"comment\": \"\", \"includes\": {}, \"excludes\": {}, \"errnoRet\": 1,"
	" \"errno\": \"EPERM\"},"
	"{\"names\": [\"read\", \"ioctl\", \"write\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [],"
	" \"comment\": \"\", \"includes\": {}, \"excludes\": {}},"
	"{\"names\": [\"personality\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0,"
	" \"value\": 4294967295, \"valueTwo\": 0, \"op\": \"SCMP_CMP_EQ\"}]},"
	"{\"names\": [\"kcmp\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": null,"
	" \"includes\": {\"caps\": [\"CAP_SYS_PTRACE\"]}, \"excludes\": {}}"
	"]}";

/* A deny-list base: allow by default, a few calls refused. */
static const char deny_list_base[] =
	"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86_64\","
	" \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": ["
	"{\"names\": [\"kexec_load\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1},"
	"{\"names\": [\"userfaultfd\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1},"
	"{\"names\": [\"ptrace\"], \"action\": \"SCMP_ACT_KILL\"}]}";

static bool names_target(struct json_object *r)
{
	return has_str(get(r, "names"), "userfaultfd") || has_str(get(r, "names"), "ioctl");
}

/* Everything but the userfaultfd and ioctl rules is the base's, in order;
 * and the top-level keys keep their order. */
static void check_rest_kept(const char *base_text, struct json_object *merged)
{
	struct json_object *base = parse_ok(base_text);
	struct json_object *bs = get(base, "syscalls"), *ms = get(merged, "syscalls");
	size_t mi = 0;

	const char *bkeys[32], *mkeys[32];
	size_t nb = 0, nm = 0;
	json_object_object_foreach(base, bk, bv)
	{
		ASSERT_LT(nb, 32);
		bkeys[nb++] = bk;
		if (strcmp(bk, "syscalls"))
			ASSERT_TRUE(json_object_equal(bv, get(merged, bk)));
	}
	json_object_object_foreach(merged, mk, mv)
	{
		(void)mv;
		ASSERT_LT(nm, 32);
		mkeys[nm++] = mk;
	}
	ASSERT_EQ(nb, nm);
	for (size_t i = 0; i < nb; i++)
		ASSERT_TRUE(!strcmp(bkeys[i], mkeys[i]));
	for (size_t i = 0; i < json_object_array_length(bs); i++) {
		struct json_object *b = json_object_array_get_idx(bs, i);
		if (names_target(b)) {
			/* the other names of that rule stay in one rule, in place */
			continue;
		}
		while (mi < json_object_array_length(ms) &&
		       !json_object_equal(json_object_array_get_idx(ms, mi), b))
			mi++;
		if (mi == json_object_array_length(ms))
			FAIL("base rule syscalls[%zu] lost or changed", i);
	}
	/* The names that shared a rule with userfaultfd or ioctl survive. */
	static const char *const companions[] = { "bdflush", "kexec_load", "read", "write" };
	for (size_t k = 0; k < sizeof(companions) / sizeof(companions[0]); k++) {
		bool found = false;
		for (size_t i = 0; i < json_object_array_length(ms); i++) {
			struct json_object *r = json_object_array_get_idx(ms, i);
			found |= has_str(get(r, "names"), companions[k]);
		}
		if (strstr(base_text, companions[k]) && !found)
			FAIL("%s lost", companions[k]);
	}
	json_object_put(base);
}

TEST(merge_into_allow_list_base)
{
	for (size_t i = 0; i < 3; i++) {
		struct policy p = preset(presets[i]);
		struct json_object *prof =
			merge_ok(allow_list_base, strlen(allow_list_base), &p, PROFILE_FORMAT_DOCKER);
		check_rest_kept(allow_list_base, prof);
		check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
		check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
		json_object_put(prof);
	}
}

TEST(merge_into_deny_list_base)
{
	for (size_t i = 0; i < 3; i++) {
		for (int fmt = 0; fmt < 2; fmt++) {
			struct policy p = preset(presets[i]);
			struct json_object *prof = merge_ok(deny_list_base, strlen(deny_list_base), &p,
							    (enum profile_format)fmt);
			check_rest_kept(deny_list_base, prof);
			check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
			check_meaning(prof, &p, true, fmt == PROFILE_FORMAT_DOCKER,
				      SECCOMP_RET_ALLOW);
			json_object_put(prof);
		}
	}
}

/* A deny-list base whose ioctl rule holds for some containers only: the
 * others get ioctl, USERFAULTFD_IOC_NEW included, from the default. */
TEST(merge_keeps_the_policy_where_a_conditional_ioctl_rule_does_not_apply)
{
	static const char base[] =
		"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86_64\","
		" \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": ["
		"{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_LOG\","
		" \"includes\": {\"caps\": [\"CAP_SYS_ADMIN\"]}}]}";
	static const char refusing[] =
		"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
		"{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 13,"
		" \"excludes\": {\"caps\": [\"CAP_SYS_ADMIN\"]}}]}";

	for (size_t i = 0; i < 3; i++) {
		struct policy p = preset(presets[i]);
		struct json_object *prof = merge_ok(base, strlen(base), &p, PROFILE_FORMAT_DOCKER);
		/* Containers without CAP_SYS_ADMIN: the rule does not apply. */
		check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
		check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
		json_object_put(prof);
	}
	/* Refusing ioctl with another errno to some containers only cannot be
	 * combined without overlap: refused, with the place. */
	struct policy p = preset("user-mode-only");
	struct json_object *prof = parse_ok(refusing);
	struct profile_error e;
	ASSERT_EQ(profile_merge(prof, &p, PROFILE_FORMAT_DOCKER, &e), -EINVAL);
	ASSERT_TRUE(!strcmp(e.where, "syscalls[0]"));
	json_object_put(prof);
}

/* A tracer (SCMP_ACT_TRACE) or a supervisor (SCMP_ACT_NOTIFY) may let a
 * call through: a base that gives them ioctl still gets the refusal of
 * USERFAULTFD_IOC_NEW without the flag, and the calls the policy permits
 * stay with them rather than being allowed outright. */
TEST(trace_and_notify_in_a_base_count_as_permitting)
{
	static const struct {
		const char *text;
		struct bases base;
	} cases[] = {
		{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"SCMP_ARCH_X86_64\","
		  " \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": ["
		  "{\"names\": [\"read\", \"ioctl\"], \"action\": \"SCMP_ACT_TRACE\"},"
		  "{\"names\": [\"userfaultfd\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}",
		  { SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE | 1 } },
		{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"SCMP_ARCH_X86_64\","
		  " \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": ["
		  "{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}",
		  { SECCOMP_RET_ALLOW, SECCOMP_RET_USER_NOTIF } },
		{ "{\"defaultAction\": \"SCMP_ACT_TRACE\", \"defaultErrnoRet\": 7, \"architectures\":"
		  " [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": ["
		  "{\"names\": [\"kexec_load\"], \"action\": \"SCMP_ACT_ERRNO\"}]}",
		  { SECCOMP_RET_TRACE | 7, SECCOMP_RET_TRACE | 7 } },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (size_t i = 0; i < 3; i++) {
			for (int fmt = 0; fmt < 2; fmt++) {
				struct policy p = preset(presets[i]);
				struct json_object *prof = merge_ok(cases[k].text, strlen(cases[k].text),
								    &p, (enum profile_format)fmt);
				bool docker = fmt == PROFILE_FORMAT_DOCKER;
				check_meaning_bases(prof, &p, false, false, cases[k].base);
				check_meaning_bases(prof, &p, true, docker, cases[k].base);
				json_object_put(prof);
			}
		}
	}
}

/* JSON nulls where a base may leave a field out mean "absent". */
TEST(merge_reads_null_fields_as_absent)
{
	static const char *const bases[] = {
		/* null conditions are no conditions (and no crash) */
		"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"SCMP_ARCH_X86_64\","
		" \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": [{\"names\": [\"read\","
		" \"ioctl\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"arches\": null,"
		" \"caps\": null}, \"excludes\": {\"caps\": null}}]}",
		/* a null "name" beside "names" is no name */
		"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"SCMP_ARCH_X86_64\","
		" \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"], \"syscalls\": [{\"name\": null,"
		" \"names\": [\"userfaultfd\", \"ioctl\", \"read\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
	};
	for (size_t b = 0; b < 2; b++) {
		for (size_t i = 0; i < 3; i++) {
			struct policy p = preset(presets[i]);
			struct json_object *prof =
				merge_ok(bases[b], strlen(bases[b]), &p, PROFILE_FORMAT_DOCKER);
			check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
			check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
			char *text = profile_serialize(prof);
			ASSERT_TRUE(strstr(text, "\"read\"") != NULL);
			free(text);
			json_object_put(prof);
		}
	}
}

TEST(merge_into_podmans_default_profile)
{
	static const char path[] = "/usr/share/containers/seccomp.json";
	FILE *f = fopen(path, "re");
	if (!f)
		FAIL("%s: %s (Debian package golang-github-containers-common, in "
		     "scripts/packages-test.txt)", path, strerror(errno));
	static char text[1 << 20];
	size_t len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	for (size_t i = 0; i < 3; i++) {
		struct policy p = preset(presets[i]);
		struct json_object *prof = merge_ok(text, len, &p, PROFILE_FORMAT_DOCKER);
		check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
		check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
		json_object_put(prof);
	}
}

/* ignore_cap_sys_ptrace=1: deny means deny for every container, also one
 * started with CAP_SYS_PTRACE, which Podman's base refuses userfaultfd too. */
TEST(deny_without_the_privileged_exemption_refuses_every_container)
{
	static const char path[] = "/usr/share/containers/seccomp.json";
	static char text[1 << 20];
	char err[256];
	struct policy p;
	FILE *f = fopen(path, "re");
	if (!f)
		FAIL("%s: %s (Debian package golang-github-containers-common, in "
		     "scripts/packages-test.txt)", path, strerror(errno));
	size_t len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	const char *sets[] = { "ignore_cap_sys_ptrace=1" };
	ASSERT_OK(policy_build("deny", sets, 1, &p, err, sizeof(err)));
	struct json_object *prof = merge_ok(text, len, &p, PROFILE_FORMAT_DOCKER);
	check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
	struct view v;
	view_of(prof, true, &v);
	static struct bpf_prog fwd;
	compile(&v, false, &fwd);
	struct seccomp_data d = { .nr = 323, .arch = AUDIT_ARCH_X86_64, .args = { 1 } };
	ASSERT_EQ(bpf_run(&fwd, &d), RET_EPERM);
	json_object_put(prof);
}

TEST(unmodified_allow_list_base_refuses_by_name_only)
{
	/* The contrast: the base alone is not what any policy means (ioctl
	 * USERFAULTFD_IOC_NEW gets through), so the checker must say so. */
	struct json_object *prof = parse_ok(allow_list_base);
	struct policy p = preset("user-mode-only");
	struct view v;
	static struct bpf_prog fwd;
	view_of(prof, false, &v);
	compile(&v, false, &fwd);
	struct seccomp_data d = { .nr = 16, .arch = AUDIT_ARCH_X86_64, .args = { 3, IOC_NEW, 0 } };
	ASSERT_EQ(bpf_run(&fwd, &d), SECCOMP_RET_ALLOW);
	ASSERT_EQ(expected(&p, false, true, IOC_NEW, 0,
			   (struct bases){ SECCOMP_RET_ALLOW, SECCOMP_RET_ALLOW }),
		  RET_EPERM);
	d = (struct seccomp_data){ .nr = 323, .arch = AUDIT_ARCH_X86_64, .args = { 1 } };
	ASSERT_EQ(bpf_run(&fwd, &d), RET_EPERM);
	json_object_put(prof);
}

/* ---- Size ------------------------------------------------------------ */

/* An allow-list base of n rules that permit ioctl, in `groups` kinds
 * (different includes), and a userfaultfd refusal. */
static char *many_ioctl_rules(size_t n, size_t groups)
{
	size_t cap = 200 + n * 160, used;
	char *t = malloc(cap);
	ASSERT_TRUE(t != NULL);
	used = (size_t)snprintf(t, cap, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\":"
				" 38, \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\","
				" \"SCMP_ARCH_X32\"], \"syscalls\": [{\"names\": [\"userfaultfd\"],"
				" \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}");
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(t + used, cap - used,
					 ", {\"names\": [\"ioctl\", \"read\"], \"action\":"
					 " \"SCMP_ACT_ALLOW\", \"includes\": {\"minKernel\": \"4.%zu\"}}",
					 i % groups);
	snprintf(t + used, cap - used, "]}");
	return t;
}

/* A base is read up to a bound: a larger file, or an endless one such as
 * /dev/zero, is refused without being read whole. */
TEST(a_base_larger_than_the_bound_is_refused)
{
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", big[PATH_MAX];
	struct cli_result r;
	struct profile_error e;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(big, sizeof(big), "%s/big.json", dir);
	/* A valid profile, padded with blanks past the bound. */
	FILE *f = fopen(big, "we");
	ASSERT_TRUE(f != NULL);
	fputs("{\"defaultAction\": \"SCMP_ACT_ALLOW\"", f);
	for (size_t i = 0; i <= PROFILE_MAX_SIZE / 4096; i++)
		fprintf(f, "%4096s", "");
	fputs("}\n", f);
	ASSERT_EQ(fclose(f), 0);
	CLI(WHO_ROOT, &r, "profile", "--base", big);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "big.json: (top level): larger than 4 MiB");
	ASSERT_STREQ(r.out, "");

	CLI(WHO_ROOT, &r, "profile", "--base", "/dev/zero");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "/dev/zero: (top level): larger than 4 MiB");

	static char just[PROFILE_MAX_SIZE + 2];
	memset(just, ' ', sizeof(just) - 1);
	just[0] = '{';
	just[PROFILE_MAX_SIZE] = '}';
	ASSERT_TRUE(profile_parse(just, PROFILE_MAX_SIZE + 1, &e) == NULL);
	ASSERT_CONTAINS(e.reason, "larger than");
	remove_tree(dir);
}

/* 20 000 rules that permit ioctl alike (as one would get by splitting a
 * base into a rule per call) make one set of rules for ioctl, not one
 * each: the profile grows linearly, by a small factor. */
TEST(many_ioctl_rules_grow_the_profile_linearly)
{
	static const size_t n = 20000;
	char *text = many_ioctl_rules(n, 3);
	size_t len = strlen(text);

	for (size_t i = 0; i < 3; i++) {
		struct policy p = preset(presets[i]);
		struct json_object *prof = merge_ok(text, len, &p, PROFILE_FORMAT_DOCKER);
		char *out = profile_serialize(prof);
		size_t rules = json_object_array_length(get(prof, "syscalls"));
		/* Each base rule: itself without ioctl, and its ioctl rule kept
		 * for other host architectures; then at most 34 rules for each
		 * kind, and those for userfaultfd. */
		if (rules > 1 + 2 * n + 3 * 34 + 8)
			FAIL("%s: %zu rules from %zu", presets[i], rules, n + 1);
		if (strlen(out) > 4 * len)
			FAIL("%s: %zu bytes from %zu", presets[i], strlen(out), len);
		free(out);
		json_object_put(prof);
	}
	free(text);

	/* The meaning, on a base small enough for the checker's view. */
	text = many_ioctl_rules(40, 2);
	for (size_t i = 0; i < 3; i++) {
		struct policy p = preset(presets[i]);
		struct json_object *prof = merge_ok(text, strlen(text), &p, PROFILE_FORMAT_DOCKER);
		check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
		check_meaning(prof, &p, true, true, SECCOMP_RET_ALLOW);
		json_object_put(prof);
	}
	free(text);

	/* Past PROFILE_MAX_IOCTL_GROUPS kinds: refused, with the place. */
	text = many_ioctl_rules(PROFILE_MAX_IOCTL_GROUPS + 1, PROFILE_MAX_IOCTL_GROUPS + 1);
	struct policy p = preset("user-mode-only");
	struct json_object *prof = parse_ok(text);
	struct profile_error e;
	ASSERT_EQ(profile_merge(prof, &p, PROFILE_FORMAT_DOCKER, &e), -EINVAL);
	ASSERT_STREQ(e.where, "syscalls[65]");
	ASSERT_CONTAINS(e.reason, "more than 64 rules permit ioctl");
	json_object_put(prof);
	free(text);
}

/* ---- Refused bases --------------------------------------------------- */

static const struct {
	const char *text;
	enum profile_format fmt;
	const char *where, *reason;
} bad_bases[] = {
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\",\n \"syscalls\": [}", 0, "line 2, column 15",
	  "unexpected" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\"} {}", 0, "line 1, column 37", "after" },
	{ "[1]", 0, "(top level)", "not an object" },
	{ "{\"syscalls\": []}", 0, "defaultAction", "missing" },
	{ "{\"defaultAction\": \"SCMP_ACT_FOO\"}", 0, "defaultAction", "unknown action" },
	{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": \"x\"}", 0,
	  "defaultErrnoRet", "integer" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"],"
	  " \"action\": \"SCMP_ACT_ALLOW\"}, {\"names\": [\"x\"], \"action\": \"BOGUS\"}]}",
	  0, "syscalls[1].action", "unknown action 'BOGUS'" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"],"
	  " \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1,"
	  " \"op\": \"SCMP_CMP_SORTA\"}]}]}",
	  0, "syscalls[0].args[0].op", "unknown operator 'SCMP_CMP_SORTA'" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"],"
	  " \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 7, \"value\": 1,"
	  " \"op\": \"SCMP_CMP_EQ\"}]}]}",
	  0, "syscalls[0].args[0].index", "0..5" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\", 3],"
	  " \"action\": \"SCMP_ACT_ALLOW\"}]}",
	  0, "syscalls[0].names[1]", "not a string" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86_64\","
	  " \"SCMP_ARCH_AARCH64\"]}",
	  1, "architectures[1]", "not covered" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"archMap\": [{\"architecture\":"
	  " \"SCMP_ARCH_X86_64\", \"subArchitectures\": [\"SCMP_ARCH_X86\", \"SCMP_ARCH_PPC\"]}]}",
	  0, "archMap[0].subArchitectures[1]", "not covered" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"archMap\": []}", 1, "archMap",
	  "--format docker" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"chroot\"],"
	  " \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"caps\": [\"CAP_SYS_CHROOT\"]}}]}",
	  1, "syscalls[0].includes", "--format docker" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"chroot\"],"
	  " \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"moonPhase\": \"full\"}}]}",
	  0, "syscalls[0].includes.moonPhase", "unknown condition" },
	{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"ioctl\"],"
	  " \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 1, \"value\": 21505,"
	  " \"op\": \"SCMP_CMP_EQ\"}]}]}",
	  0, "syscalls[0].args", "USERFAULTFD_IOC_NEW" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": {}}", 0, "syscalls",
	  "not an array" },
	{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"name\": \"ioctl\","
	  " \"action\": \"SCMP_ACT_ALLOW\"}]}",
	  1, "syscalls[0].name", "runtime-spec format has 'names' only" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"name\": \"read\","
	  " \"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
	  0, "syscalls[0]", "both" },
};

TEST(malformed_or_unsupported_bases_are_refused_with_the_place)
{
	struct policy p = preset("user-mode-only");

	for (size_t i = 0; i < sizeof(bad_bases) / sizeof(bad_bases[0]); i++) {
		struct profile_error e = { "", "" };
		struct json_object *o = profile_parse(bad_bases[i].text, strlen(bad_bases[i].text), &e);
		int r = o ? profile_merge(o, &p, bad_bases[i].fmt, &e) : -EINVAL;
		json_object_put(o);
		if (r != -EINVAL || strcmp(e.where, bad_bases[i].where) ||
		    !strstr(e.reason, bad_bases[i].reason))
			FAIL("case %zu: got %d '%s: %s', want '%s: ...%s...'", i, r, e.where,
			     e.reason, bad_bases[i].where, bad_bases[i].reason);
	}
}

/* ---- The command line -------------------------------------------------- */

TEST(cli_writes_atomically_and_nothing_on_error)
{
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", base[PATH_MAX], badb[PATH_MAX],
	     out[PATH_MAX];
	struct cli_result r;
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(base, sizeof(base), "%s/base.json", dir);
	snprintf(badb, sizeof(badb), "%s/bad.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	write_text(base, deny_list_base);
	write_text(badb, "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\":"
			 " [\"read\"], \"action\": \"SCMP_ACT_NOPE\"}]}");

	/* An error writes nothing and names the place. */
	CLI(WHO_ROOT, &r, "profile", "--base", badb, "-o", out);
	ASSERT_EQ(r.status, 1);
	ASSERT_TRUE(access(out, F_OK) < 0);
	ASSERT_EQ(dir_entries(dir), 2);
	ASSERT_CONTAINS(r.err, "bad.json: syscalls[0].action: unknown action 'SCMP_ACT_NOPE'");

	/* Success replaces the file (a new inode), leaves no temporary. */
	write_text(out, "old");
	struct stat before, after;
	ASSERT_SYS(stat(out, &before));
	CLI(WHO_ROOT, &r, "profile", "--policy", "deny", "--base", base, "--format", "oci",
	    "--allow-by-default", "-o",
	    out);
	ASSERT_EQ(r.status, 0);
	ASSERT_SYS(stat(out, &after));
	ASSERT_NE(before.st_ino, after.st_ino);
	ASSERT_EQ(dir_entries(dir), 3);
	static char text[1 << 16];
	read_text(out, text, sizeof(text));
	struct json_object *prof = parse_ok(text);
	struct policy p = preset("deny");
	check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
	json_object_put(prof);

	/* A failing run leaves the previous output as it was. */
	CLI(WHO_ROOT, &r, "profile", "--base", badb, "-o", out);
	ASSERT_EQ(r.status, 1);
	ASSERT_SYS(stat(out, &before));
	ASSERT_EQ(before.st_ino, after.st_ino);
	ASSERT_EQ(dir_entries(dir), 3);

	/* Usage errors are exit 2. */
	CLI(WHO_ROOT, &r, "profile", "--format", "yaml");
	ASSERT_EQ(r.status, 2);
	CLI(WHO_ROOT, &r, "profile", "--set", "cover_device=7");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "cover_device");
	remove_tree(dir);
}

/* -o never replaces a link (a file someone else manages, or a mask to
 * /dev/null) or anything else that is not a regular file; a linked
 * directory on the way is fine. */
TEST(cli_output_refuses_what_is_not_a_regular_file)
{
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", target[PATH_MAX], link[PATH_MAX],
	     mask[PATH_MAX], sub[PATH_MAX], real[64], via[64], out[PATH_MAX],
	     want[3 * PATH_MAX], buf[PATH_MAX];
	static char text[1 << 16];
	struct cli_result r;
	struct stat st;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(target, sizeof(target), "%s/managed.json", dir);
	snprintf(link, sizeof(link), "%s/uffd.json", dir);
	snprintf(mask, sizeof(mask), "%s/masked.json", dir);
	snprintf(sub, sizeof(sub), "%s/sub.json", dir);
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(via, sizeof(via), "%s/via", dir);
	snprintf(out, sizeof(out), "%s/uffd.json", via);
	write_text(target, "managed");
	ASSERT_SYS(symlink(target, link));
	ASSERT_SYS(symlink("/dev/null", mask));
	ASSERT_SYS(mkdir(sub, 0755));
	ASSERT_SYS(mkdir(real, 0755));
	ASSERT_SYS(symlink(real, via));

	CLI(WHO_ROOT, &r, "profile", "--allow-by-default", "-o", link);
	ASSERT_EQ(r.status, 1);
	snprintf(want, sizeof(want),
		 "uffdguard profile: %s is a symbolic link (to %s); uffdguard replaces regular files"
		 " only: remove it or write elsewhere\n", link, target);
	ASSERT_STREQ(r.err, want);
	ASSERT_STREQ(r.out, "");
	assert_link(link, target);
	read_text(target, text, sizeof(text));
	ASSERT_STREQ(text, "managed");

	CLI(WHO_ROOT, &r, "profile", "--allow-by-default", "--output", mask);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "masked.json is a symbolic link (to /dev/null); ");
	ASSERT_SYS(lstat(mask, &st));
	ASSERT_TRUE(S_ISLNK(st.st_mode));

	CLI(WHO_ROOT, &r, "profile", "--allow-by-default", "-o", sub);
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "sub.json is a directory; uffdguard replaces regular files only");
	ASSERT_EQ(dir_entries(sub), 0);
	ASSERT_EQ(dir_entries(dir), 6); /* nothing written, no temporary left */

	/* Through a linked directory: written, twice (the second replaces). */
	CLI(WHO_ROOT, &r, "profile", "--allow-by-default", "-o", out);
	ASSERT_EQ(r.status, 0);
	snprintf(buf, sizeof(buf), "%s/uffd.json", real);
	struct stat before;
	ASSERT_SYS(lstat(buf, &before));
	ASSERT_TRUE(S_ISREG(before.st_mode));
	CLI(WHO_ROOT, &r, "profile", "--policy", "deny", "--allow-by-default", "-o", out);
	ASSERT_EQ(r.status, 0);
	ASSERT_SYS(lstat(buf, &st));
	ASSERT_TRUE(S_ISREG(st.st_mode));
	ASSERT_NE(before.st_ino, st.st_ino);
	read_text(buf, text, sizeof(text));
	json_object_put(parse_ok(text));
	ASSERT_SYS(lstat(via, &st));
	ASSERT_TRUE(S_ISLNK(st.st_mode));
	ASSERT_EQ(dir_entries(real), 1);

	remove_tree(dir);
}

/* ---- How the result differs from the base ------------------------------ */

/* The (kind, call, containers) of every change in a --json report, one
 * "kind|call|containers" line each, in order. */
static void report_lines(struct cli_result *r, char *buf, size_t size)
{
	json_object *changes = jat(cli_json(r), "changes");
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(changes); i++) {
		json_object *c = json_object_array_get_idx(changes, i);
		used += (size_t)snprintf(buf + used, size - used, "%s|%s|%s\n", jstr(c, "kind"),
					 jstr(c, "call"), jstr(c, "containers"));
		ASSERT_LT(used, size);
	}
}

/* Podman's shape refuses userfaultfd to every container: each container
 * class and call that the result lets through now, or refuses now, is
 * named, on standard error and in --json, and --dry-run writes nothing. */
TEST(cli_reports_every_change_from_the_base)
{
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", base[PATH_MAX], out[PATH_MAX];
	char lines[4096];
	struct cli_result r;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(base, sizeof(base), "%s/base.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	write_text(base, allow_list_base);

	CLI(WHO_ROOT, &r, "profile", "--base", base, "--dry-run");
	ASSERT_EQ(r.status, 0);
	ASSERT_STREQ(r.out, "");
	ASSERT_EQ(dir_entries(dir), 1);
	ASSERT_CONTAINS(r.err, "as Docker, Podman and CRI-O read it:\n");
	ASSERT_CONTAINS(r.err, "  loosened, as the policy asks: userfaultfd with UFFD_USER_MODE_ONLY,"
			       " containers without CAP_SYS_PTRACE: was refused (errno 1) by"
			       " syscalls[0], now allowed by syscalls[");
	ASSERT_CONTAINS(r.err, "  tightened: ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY,"
			       " containers without CAP_SYS_PTRACE: was allowed by syscalls[1],"
			       " now refused (errno 1) by syscalls[");
	ASSERT_CONTAINS(r.err, "  loosened, as the policy asks: userfaultfd without"
			       " UFFD_USER_MODE_ONLY, containers with CAP_SYS_PTRACE: was refused"
			       " (errno 1) by syscalls[0], now allowed by syscalls[");
	ASSERT_CONTAINS(r.err, "--set ignore_cap_sys_ptrace=1 holds it to the same rule");
	ASSERT_CONTAINS(r.err, "uffdguard profile: --dry-run: nothing written\n");

	CLI(WHO_ROOT, &r, "profile", "--base", base, "--dry-run", "--json");
	ASSERT_EQ(r.status, 0);
	report_lines(&r, lines, sizeof(lines));
	ASSERT_STREQ(lines,
		     "loosened|userfaultfd with UFFD_USER_MODE_ONLY|containers without CAP_SYS_PTRACE\n"
		     "tightened|ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY|containers without"
		     " CAP_SYS_PTRACE\n"
		     "loosened|userfaultfd without UFFD_USER_MODE_ONLY|containers with CAP_SYS_PTRACE\n"
		     "loosened|userfaultfd with UFFD_USER_MODE_ONLY|containers with CAP_SYS_PTRACE\n");
	ASSERT_EQ(jbool(r.json, "written"), 0);
	ASSERT_EQ(jint(r.json, "changes.0.before.errno"), 1);
	ASSERT_EQ(jbool(r.json, "changes.0.after.permits"), 1);
	ASSERT_EQ(jbool(r.json, "changes.0.policy_allows"), 1);
	ASSERT_EQ(jbool(r.json, "changes.1.policy_allows"), 0);
	ASSERT_EQ(dir_entries(dir), 1);

	/* deny without the privileged exemption: nothing is loosened. */
	CLI(WHO_ROOT, &r, "profile", "--base", base, "--policy", "deny", "--set",
	    "ignore_cap_sys_ptrace=1", "--json", "-o", out);
	ASSERT_EQ(r.status, 0);
	report_lines(&r, lines, sizeof(lines));
	ASSERT_STREQ(lines,
		     "tightened|ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY|containers without"
		     " CAP_SYS_PTRACE\n"
		     "tightened|ioctl USERFAULTFD_IOC_NEW with UFFD_USER_MODE_ONLY|containers without"
		     " CAP_SYS_PTRACE\n"
		     "tightened|ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY|containers with"
		     " CAP_SYS_PTRACE\n"
		     "tightened|ioctl USERFAULTFD_IOC_NEW with UFFD_USER_MODE_ONLY|containers with"
		     " CAP_SYS_PTRACE\n");
	ASSERT_EQ(jbool(r.json, "written"), 1);
	ASSERT_STREQ(jstr(r.json, "output"), out);
	ASSERT_EQ(dir_entries(dir), 2);

	/* The runtime-spec format has no capability conditions. */
	write_text(base, deny_list_base);
	CLI(WHO_ROOT, &r, "profile", "--base", base, "--format", "oci", "--allow-by-default",
	    "--dry-run", "--json");
	ASSERT_EQ(r.status, 0);
	report_lines(&r, lines, sizeof(lines));
	ASSERT_STREQ(lines,
		     "loosened|userfaultfd with UFFD_USER_MODE_ONLY|every container\n"
		     "tightened|ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY|every container\n");

	CLI(WHO_ROOT, &r, "profile", "--base", base, "--dry-run", "-o", out);
	ASSERT_EQ(r.status, 2);
	CLI(WHO_ROOT, &r, "profile", "--base", base, "--json");
	ASSERT_EQ(r.status, 2);
	remove_tree(dir);
}

/* The last guard before writing: a result that lets through what its
 * base refused, without the policy allowing it, or that touches other
 * ioctl commands, is refused with the call and the containers. */
TEST(a_result_that_loosens_what_the_policy_does_not_ask_is_refused)
{
	static const struct {
		const char *before, *after, *policy, *where;
		enum profile_format fmt;
	} cases[] = {
		{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}", "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}",
		  "user-mode-only", "userfaultfd without UFFD_USER_MODE_ONLY, every container",
		  PROFILE_FORMAT_OCI },
		{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}", "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}",
		  "deny", "userfaultfd without UFFD_USER_MODE_ONLY, containers without CAP_SYS_PTRACE",
		  PROFILE_FORMAT_DOCKER },
		/* allowed, but by another action than the base's tracer */
		{ "{\"defaultAction\": \"SCMP_ACT_TRACE\"}", "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}",
		  "allow", "userfaultfd without UFFD_USER_MODE_ONLY, every container",
		  PROFILE_FORMAT_OCI },
		{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}",
		  "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"ioctl\"],"
		  " \"action\": \"SCMP_ACT_ERRNO\"}]}",
		  "deny", "other ioctl commands, every container",
		  PROFILE_FORMAT_OCI },
		/* deny with the exemption switched off grants nothing */
		{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"userfaultfd\"],"
		  " \"action\": \"SCMP_ACT_ERRNO\"}]}",
		  "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"userfaultfd\"],"
		  " \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"caps\": [\"CAP_SYS_PTRACE\"]}}]}",
		  "deny-nobody", "userfaultfd without UFFD_USER_MODE_ONLY, containers with CAP_SYS_PTRACE",
		  PROFILE_FORMAT_DOCKER },
	};
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *b = parse_ok(cases[i].before), *a = parse_ok(cases[i].after);
		struct profile_report rep;
		struct profile_error e = { "", "" };
		struct policy p;
		const char *nobody[] = { "ignore_cap_sys_ptrace=1" };
		bool nb = !strcmp(cases[i].policy, "deny-nobody");
		ASSERT_OK(policy_build(nb ? "deny" : cases[i].policy, nobody, nb ? 1 : 0, &p, err,
				       sizeof(err)));
		int ret = profile_compare(b, a, cases[i].fmt, &p, &rep, &e);
		if (ret != -EINVAL || strcmp(e.where, cases[i].where))
			FAIL("case %zu: got %d '%s: %s', want '%s'", i, ret, e.where, e.reason,
			     cases[i].where);
		/* A tracer's decision replaced: said so, with what to do. */
		ASSERT_CONTAINS(e.reason, strstr(cases[i].before, "SCMP_ACT_TRACE")
						  ? "the base leaves this call to its own action"
						  : "which the policy does not ask for; nothing is written");
		ASSERT_GT(rep.n, 0);
		json_object_put(b);
		json_object_put(a);
	}

	/* A base that is itself unclear: said so, not blamed on the result. */
	struct json_object *amb = parse_ok("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\":"
					   " [{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_TRACE\"},"
					   " {\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\"}]}");
	struct policy pd = preset("deny");
	struct profile_report rp;
	struct profile_error ep;
	ASSERT_EQ(profile_compare(amb, amb, PROFILE_FORMAT_OCI, &pd, &rp, &ep), -EINVAL);
	ASSERT_STREQ(ep.where, "ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY, every container");
	ASSERT_CONTAINS(ep.reason, "in the base, syscalls[0] and syscalls[1] both match");
	json_object_put(amb);

	/* And what it does ask for passes. */
	struct json_object *b = parse_ok("{\"defaultAction\": \"SCMP_ACT_ERRNO\"}");
	struct json_object *a = parse_ok("{\"defaultAction\": \"SCMP_ACT_ALLOW\"}");
	struct policy p = preset("allow");
	struct profile_report rep;
	struct profile_error e;
	ASSERT_EQ(profile_compare(b, a, PROFILE_FORMAT_OCI, &p, &rep, &e), -EINVAL);
	ASSERT_STREQ(e.where, "other ioctl commands, every container");
	json_object_put(a);
	a = parse_ok("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\":"
		     " [\"userfaultfd\"], \"action\": \"SCMP_ACT_ALLOW\"}]}");
	ASSERT_EQ(profile_compare(b, a, PROFILE_FORMAT_OCI, &p, &rep, &e), 0);
	ASSERT_EQ(rep.n, 2);
	ASSERT_EQ(rep.changes[0].kind, PROFILE_LOOSENED);
	ASSERT_TRUE(rep.changes[0].asked);
	json_object_put(a);
	json_object_put(b);
}

/* A profile that lets through every call it does not name replaces the
 * runtime's own default filtering: written only when asked for. */
TEST(cli_refuses_a_default_allow_profile_unless_asked)
{
	struct cli_result r;
	static const char *const formats[] = { "oci", "docker", "kubernetes" };

	for (size_t i = 0; i < 3; i++) {
		CLI(WHO_ROOT, &r, "profile", "--format", formats[i]);
		ASSERT_EQ(r.status, 1);
		ASSERT_STREQ(r.out, "");
		ASSERT_CONTAINS(r.err, "the profile would let every call it does not name through"
				       " (defaultAction SCMP_ACT_ALLOW)");
		ASSERT_CONTAINS(r.err, "--allow-by-default");
		CLI(WHO_ROOT, &r, "profile", "--format", formats[i], "--allow-by-default");
		ASSERT_EQ(r.status, 0);
		json_object_put(parse_ok(r.out));
	}
}

/* ---- Runtime-spec bases and what a runtime makes of a file ---------------- */

/* data/containerd-default.json (the source tree's, through meson). */
static const char *containerd_default(char *buf, size_t size)
{
	const char *dir = getenv("UFFDGUARD_DATA");
	if (!dir)
		FAIL("UFFDGUARD_DATA is not set (run through meson test)");
	snprintf(buf, size, "%s/containerd-default.json", dir);
	return buf;
}

/* containerd's default as a base: refused by name and by default before,
 * the policy after, for every container; the rest of it unchanged. */
TEST(containerd_default_base_is_merged_in_the_runtime_spec_format)
{
	char path[PATH_MAX];
	static char text[1 << 20];

	read_text(containerd_default(path, sizeof(path)), text, sizeof(text));
	struct json_object *base = parse_ok(text);
	struct profile_action def;
	ASSERT_OK(profile_action_read(get(base, "defaultAction"), get(base, "defaultErrnoRet"),
				      &def));
	ASSERT_EQ(def.errno_ret, EPERM);
	ASSERT_TRUE(!profile_action_permits(&def));
	json_object_put(base);
	for (size_t i = 0; i < 3; i++) {
		struct policy p = preset(presets[i]);
		struct json_object *prof = merge_ok(text, strlen(text), &p, PROFILE_FORMAT_OCI);
		check_meaning(prof, &p, false, false, SECCOMP_RET_ALLOW);
		struct profile_view v;
		struct profile_error e;
		profile_view_of(prof, PROFILE_READER_OCI, &v);
		if (!profile_view_enforces(&v, &p, &e))
			FAIL("%s: %s: %s", presets[i], e.where, e.reason);
		json_object_put(prof);
	}
}

/* --check: a file as one runtime reads it.  A Docker-format profile
 * handed to containerd loses its includes, excludes and archMap; an
 * unmodified default enforces nothing of the policy. */
TEST(cli_check_says_what_each_runtime_makes_of_a_file)
{
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", docker[PATH_MAX], oci[PATH_MAX],
	     cd[PATH_MAX];
	struct cli_result r;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(docker, sizeof(docker), "%s/docker.json", dir);
	snprintf(oci, sizeof(oci), "%s/oci.json", dir);
	write_text(oci, allow_list_base);
	CLI(WHO_ROOT, &r, "profile", "--base", oci, "-o", docker);
	ASSERT_EQ(r.status, 0);
	CLI(WHO_ROOT, &r, "profile", "--base", containerd_default(cd, sizeof(cd)), "--format",
	    "oci", "-o", oci);
	ASSERT_EQ(r.status, 0);

	static const char *const docker_readers[] = { "docker", "podman", "crio" };
	for (size_t i = 0; i < 3; i++) {
		CLI(WHO_ROOT, &r, "profile", "--check", docker, "--runtime", docker_readers[i]);
		ASSERT_EQ(r.status, 0);
		ASSERT_CONTAINS(r.out, " enforces the policy user-mode-only ");
		ASSERT_CONTAINS(r.out, "  userfaultfd without UFFD_USER_MODE_ONLY, containers with"
				       " CAP_SYS_PTRACE: allowed by syscalls[");
		/* The runtime-spec result has no exemption: in the Docker
		 * format it is the policy without one. */
		CLI(WHO_ROOT, &r, "profile", "--check", oci, "--runtime", docker_readers[i]);
		ASSERT_EQ(r.status, 3);
		ASSERT_CONTAINS(r.out, "userfaultfd without UFFD_USER_MODE_ONLY, containers with"
				       " CAP_SYS_PTRACE: refused (errno 1) by default; the policy"
				       " allows it.\n");
		CLI(WHO_ROOT, &r, "profile", "--check", oci, "--runtime", docker_readers[i], "--set",
		    "ignore_cap_sys_ptrace=1");
		ASSERT_EQ(r.status, 0);
	}

	CLI(WHO_ROOT, &r, "profile", "--check", docker, "--runtime", "containerd");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "note: archMap: ignored (Docker profile format)");
	ASSERT_CONTAINS(r.out, ".includes: ignored (Docker profile format): the rule applies to"
			       " every container");
	ASSERT_CONTAINS(r.out, "containerd does not enforce the policy user-mode-only");
	CLI(WHO_ROOT, &r, "profile", "--check", docker, "--runtime", "containerd", "--json");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(jbool(cli_json(&r), "enforces_policy"), 0);
	ASSERT_STREQ(jstr(r.json, "outcomes.0.containers"), "every container");

	CLI(WHO_ROOT, &r, "profile", "--check", oci, "--runtime", "containerd", "--json");
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(jbool(cli_json(&r), "enforces_policy"), 1);
	ASSERT_STREQ(jstr(r.json, "outcomes.1.call"), "userfaultfd with UFFD_USER_MODE_ONLY");
	ASSERT_EQ(jbool(r.json, "outcomes.1.permits"), 1);
	/* ... but not deny, which it was not made for. */
	CLI(WHO_ROOT, &r, "profile", "--check", oci, "--runtime", "containerd", "--policy", "deny");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "userfaultfd with UFFD_USER_MODE_ONLY, every container: allowed by"
			       " syscalls[");

	/* The base alone: name-only, and the device's ioctl gets through. */
	CLI(WHO_ROOT, &r, "profile", "--check", cd, "--runtime", "containerd", "--policy", "deny");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY, every"
			       " container: allowed by syscalls[");

	/* A profile the runtime would not load at all, though the fields it
	 * ignores come first and fill the notes. */
	char text[8192] = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [";
	for (int i = 0; i < 20; i++)
		strcat(text, "{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\":"
			     " {\"caps\": [\"CAP_KILL\"]}}, ");
	strcat(text, "{\"names\": [\"x\"], \"action\": \"SCMP_ACT_SOMETIMES\"}]}");
	snprintf(cd, sizeof(cd), "%s/refused.json", dir);
	write_text(cd, text);
	CLI(WHO_ROOT, &r, "profile", "--check", cd, "--runtime", "containerd");
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "note: and 5 more like these\n");
	ASSERT_CONTAINS(r.out, "with this file: containerd refuses the profile.\n");

	CLI(WHO_ROOT, &r, "profile", "--check", oci, "--runtime", "lxc");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "valid runtimes are docker, podman, crio and containerd");
	CLI(WHO_ROOT, &r, "profile", "--check", oci);
	ASSERT_EQ(r.status, 2);
	remove_tree(dir);
}

/* `profile --check` of a file holding text, for runtime. */
static void check_text(const char *path, const char *text, const char *runtime,
		       struct cli_result *r)
{
	write_text(path, text);
	CLI(WHO_ROOT, r, "profile", "--check", path, "--runtime", runtime);
}

/* --check tries each call in every form the kernel takes for it: a rule
 * that compares all 64 bits of ioctl's command, or the flags with one
 * value, refuses one form and lets the same call through in another. */
TEST(cli_check_tries_every_form_of_a_call)
{
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", path[PATH_MAX];
	struct cli_result r;
	static const char *const refuse = "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [";
	/* userfaultfd without the flag, the ioctl's flags too: right. */
	static const char *const flag_tests =
		"{\"names\": [\"userfaultfd\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\":"
		" [{\"index\": 0, \"value\": 1, \"valueTwo\": 0, \"op\": \"SCMP_CMP_MASKED_EQ\"}]}";
	static const char *const ioctl_low32 =
		"{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\":"
		" [{\"index\": 1, \"value\": 4294967295, \"valueTwo\": 43520,"
		" \"op\": \"SCMP_CMP_MASKED_EQ\"},"
		" {\"index\": 2, \"value\": 1, \"valueTwo\": 0, \"op\": \"SCMP_CMP_MASKED_EQ\"}]}";
	/* All 64 bits of the command: 0x10000aa00 is the same ioctl. */
	static const char *const ioctl_64 =
		"{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\":"
		" [{\"index\": 1, \"value\": 43520, \"op\": \"SCMP_CMP_EQ\"},"
		" {\"index\": 2, \"value\": 1, \"valueTwo\": 0, \"op\": \"SCMP_CMP_MASKED_EQ\"}]}";
	/* One value of the flags: O_CLOEXEC; 0 is the same call. */
	static const char *const flags_one =
		"{\"names\": [\"userfaultfd\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\":"
		" [{\"index\": 0, \"value\": 524288, \"op\": \"SCMP_CMP_EQ\"}]}";
	char text[2048];

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/p.json", dir);

	snprintf(text, sizeof(text), "%s%s, %s]}", refuse, flag_tests, ioctl_low32);
	check_text(path, text, "containerd", &r);
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "containerd enforces the policy user-mode-only");

	snprintf(text, sizeof(text), "%s%s, %s]}", refuse, flag_tests, ioctl_64);
	check_text(path, text, "containerd", &r);
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "ioctl USERFAULTFD_IOC_NEW without UFFD_USER_MODE_ONLY, every"
			       " container: not the same in every form of the call: refused (errno 1)"
			       " by syscalls[1] as checked, allowed by default with arguments (0x");
	CLI(WHO_ROOT, &r, "profile", "--check", path, "--runtime", "containerd", "--json");
	ASSERT_EQ(r.status, 3);
	ASSERT_EQ(jbool(cli_json(&r), "enforces_policy"), 0);
	ASSERT_EQ(jbool(r.json, "outcomes.2.varies"), 1);
	ASSERT_EQ(jbool(r.json, "outcomes.0.varies"), 0);

	/* More values of one argument than are tried: not vouched for. */
	static char many[8192];
	int used = snprintf(many, sizeof(many), "%s%s, %s", refuse, flag_tests, ioctl_low32);
	for (int k = 1; k <= 30; k++)
		used += snprintf(many + used, sizeof(many) - (size_t)used,
				 ", {\"names\": [\"userfaultfd\"], \"action\": \"SCMP_ACT_ERRNO\","
				 " \"args\": [{\"index\": 0, \"value\": %llu, \"op\": \"SCMP_CMP_EQ\"}]}",
				 (unsigned long long)k << 32 | 02000000);
	snprintf(many + used, sizeof(many) - (size_t)used, "]}");
	check_text(path, many, "containerd", &r);
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "userfaultfd without UFFD_USER_MODE_ONLY, every container: refused"
			       " (errno 1) by syscalls[0] as checked, but its rules look at its arguments"
			       " in more ways than can all be tried");

	snprintf(text, sizeof(text), "%s%s, %s]}", refuse, flags_one, ioctl_low32);
	check_text(path, text, "docker", &r);
	ASSERT_EQ(r.status, 3);
	ASSERT_CONTAINS(r.out, "userfaultfd without UFFD_USER_MODE_ONLY, containers without"
			       " CAP_SYS_PTRACE: not the same in every form of the call: refused"
			       " (errno 1) by syscalls[0] as checked, allowed by default with arguments");
	remove_tree(dir);
}

/* ---- The Security Profiles Operator's object ------------------------------ */

/* Whether o's keys are all in keys (a NULL-terminated list). */
static void only_keys(json_object *o, const char *const *keys, const char *what)
{
	ASSERT_TRUE(json_object_is_type(o, json_type_object));
	json_object_object_foreach(o, key, val)
	{
		(void)val;
		bool known = false;
		for (const char *const *k = keys; *k; k++)
			known |= !strcmp(*k, key);
		if (!known)
			FAIL("%s has '%s', which the SeccompProfile CRD does not define", what, key);
	}
}

/* --format kubernetes: a SeccompProfile (v1beta1) holding the same
 * profile as --format oci, self-contained, with only the fields the CRD
 * defines, and no errno but EPERM (which it says by leaving errnoRet out). */
TEST(cli_kubernetes_format_is_a_self_contained_seccompprofile)
{
	static const char *const top[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const spec_keys[] = { "defaultAction", "architectures", "flags",
						 "syscalls", NULL };
	static const char *const rule_keys[] = { "names", "action", "args", NULL };
	static const char *const arg_keys[] = { "index", "value", "valueTwo", "op", NULL };
	char dir[] = "/tmp/uffdguard-profile.XXXXXX", cd[PATH_MAX], spo[PATH_MAX], oci[PATH_MAX],
	     enosys[PATH_MAX];
	static char text[1 << 20];
	struct cli_result r;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(spo, sizeof(spo), "%s/spo.json", dir);
	snprintf(oci, sizeof(oci), "%s/oci.json", dir);
	snprintf(enosys, sizeof(enosys), "%s/enosys.json", dir);
	containerd_default(cd, sizeof(cd));

	CLI(WHO_ROOT, &r, "profile", "--base", cd, "--format", "kubernetes", "--name", "uffd",
	    "-o", spo);
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.err, "      type: Localhost\n      localhostProfile: operator/uffd.json\n");
	CLI(WHO_ROOT, &r, "profile", "--base", cd, "--format", "oci", "-o", oci);
	ASSERT_EQ(r.status, 0);

	read_text(spo, text, sizeof(text));
	struct json_object *o = parse_ok(text);
	only_keys(o, top, "the object");
	ASSERT_STREQ(json_object_get_string(get(o, "apiVersion")),
		     "security-profiles-operator.x-k8s.io/v1beta1");
	ASSERT_STREQ(json_object_get_string(get(o, "kind")), "SeccompProfile");
	ASSERT_STREQ(json_object_get_string(get(get(o, "metadata"), "name")), "uffd");
	struct json_object *spec = get(o, "spec"), *rules = get(spec, "syscalls");
	only_keys(spec, spec_keys, "spec");
	for (size_t i = 0; i < json_object_array_length(rules); i++) {
		struct json_object *rule = json_object_array_get_idx(rules, i), *args;
		only_keys(rule, rule_keys, "a rule");
		args = get(rule, "args");
		for (size_t k = 0; args && k < json_object_array_length(args); k++) {
			struct json_object *a = json_object_array_get_idx(args, k);
			only_keys(a, arg_keys, "an argument");
			ASSERT_TRUE(get(a, "index") && get(a, "op"));
			ASSERT_GE(json_object_get_int64(get(a, "value")), 0);
		}
	}

	/* The same meaning as the runtime-spec profile. */
	struct profile_view vs, vo;
	read_text(oci, text, sizeof(text));
	struct json_object *po = parse_ok(text);
	profile_view_of(spec, PROFILE_READER_OCI, &vs);
	profile_view_of(po, PROFILE_READER_OCI, &vo);
	for (int c = 0; c < PROFILE_N_CALLS; c++)
		ASSERT_TRUE(profile_outcome_permits(&vs.outcomes[PROFILE_CLASS_EVERY][c]) ==
			    profile_outcome_permits(&vo.outcomes[PROFILE_CLASS_EVERY][c]));
	struct policy p = preset("user-mode-only");
	check_meaning(spec, &p, false, false, SECCOMP_RET_ALLOW);
	json_object_put(po);
	json_object_put(o);

	/* What containerd makes of the file the operator writes. */
	CLI(WHO_ROOT, &r, "profile", "--check", spo, "--runtime", "containerd");
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "from the SeccompProfile's spec");

	/* An errno the object cannot carry: refused, nothing written. */
	write_text(enosys, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38,"
			   " \"syscalls\": [{\"names\": [\"read\", \"ioctl\"], \"action\":"
			   " \"SCMP_ACT_ALLOW\"}]}");
	CLI(WHO_ROOT, &r, "profile", "--base", enosys, "--format", "kubernetes");
	ASSERT_EQ(r.status, 1);
	ASSERT_STREQ(r.out, "");
	ASSERT_CONTAINS(r.err, "uffdguard profile: --format kubernetes: defaultErrnoRet of the"
			       " profile: a SeccompProfile can only refuse with EPERM");
	write_text(enosys, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\":"
			   " [\"read\", \"ioctl\"], \"action\": \"SCMP_ACT_ALLOW\"}, {\"names\":"
			   " [\"kexec_load\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 38}]}");
	CLI(WHO_ROOT, &r, "profile", "--base", enosys, "--format", "kubernetes");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, ".errnoRet (kexec_load) of the profile: a SeccompProfile can only"
			       " refuse with EPERM");

	/* A single "name", which runtime-spec readers ignore: no names to give. */
	write_text(enosys, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\":"
			   " [\"read\", \"ioctl\"], \"action\": \"SCMP_ACT_ALLOW\"}, {\"name\":"
			   " \"kexec_load\", \"action\": \"SCMP_ACT_ALLOW\"}]}");
	CLI(WHO_ROOT, &r, "profile", "--base", enosys, "--format", "kubernetes");
	ASSERT_EQ(r.status, 1);
	ASSERT_CONTAINS(r.err, "enosys.json: syscalls[1].name: a single 'name' is Docker profile"
			       " format: the runtime-spec format has 'names' only");
	struct json_object *single = parse_ok("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\":"
					      " [{\"name\": \"kexec_load\", \"action\":"
					      " \"SCMP_ACT_ALLOW\"}]}");
	struct profile_error e;
	ASSERT_TRUE(profile_seccompprofile(single, "x", "x", &e) == NULL);
	ASSERT_STREQ(e.where, "syscalls[0] of the profile");
	ASSERT_CONTAINS(e.reason, "a SeccompProfile rule needs 'names'");
	json_object_put(single);

	CLI(WHO_ROOT, &r, "profile", "--base", cd, "--format", "kubernetes", "--name", "Uffd_1");
	ASSERT_EQ(r.status, 2);
	ASSERT_CONTAINS(r.err, "'Uffd_1' is not a valid object name");
	CLI(WHO_ROOT, &r, "profile", "--base", cd, "--format", "oci", "--name", "uffd");
	ASSERT_EQ(r.status, 2);
	remove_tree(dir);
}
