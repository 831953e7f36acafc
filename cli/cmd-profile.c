// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard profile: the policy as a seccomp profile for container runtimes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic-file.h"
#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "policy.h"
#include "profile-view.h"
#include "profile.h"

#define DEFAULT_POLICY "user-mode-only"
#define KUBELET_SECCOMP_DIR "/var/lib/kubelet/seccomp/"

enum {
	EXIT_FAILED = 1,
	EXIT_NOT_ENFORCED = 3,
};

static const struct exit_code profile_exit_codes[] = {
	{ 0, "written (--dry-run: would be; --check: the runtime enforces the policy)" },
	{ EXIT_FAILED, "the base is unreadable or refused, the result would let through what "
		       "the base refuses without the policy asking, or the output cannot be "
		       "written (nothing is written then)" },
	{ EXIT_NOT_ENFORCED, "--check: the runtime would not enforce the policy" },
	{ 0, NULL },
};

static void profile_usage(FILE *out)
{
	fputs("Usage: uffdguard profile [--policy P] [--set KNOB=V ...] [--base FILE]\n"
	      "                         [--format docker|oci|kubernetes] [--name NAME]\n"
	      "                         [--allow-by-default] [--dry-run] [--json] [-o FILE]\n"
	      "       uffdguard profile --check FILE --runtime docker|podman|crio|containerd\n"
	      "                         [--policy P] [--set KNOB=V ...] [--json]\n\n"
	      "Write a seccomp profile that enforces the policy on userfaultfd(2) and on\n"
	      "ioctl(USERFAULTFD_IOC_NEW), for x86-64, x32 and i386 callers: the base profile\n"
	      "with its name-only userfaultfd rules replaced by flag-aware ones.  Standard\n"
	      "error says every way the result differs from the base for userfaultfd and\n"
	      "ioctl; a result that would let through a call the base refused without the\n"
	      "policy asking for it is not written.\n\n",
	      out);
	cli_policy_help(out, DEFAULT_POLICY);
	fputs("      --base FILE    the profile to merge into: Podman's\n"
	      "                     /usr/share/containers/seccomp.json, Docker's default.json,\n"
	      "                     or for containerd and Kubernetes\n"
	      "                     " UFFDGUARD_DATADIR "/containerd-default.json\n"
	      "      --format F     docker (default): Docker/Podman/CRI-O format; a container\n"
	      "                     granted CAP_SYS_PTRACE is exempt, as in the kernel (unless\n"
	      "                     --set ignore_cap_sys_ptrace=1).\n"
	      "                     oci: the runtime-spec linux.seccomp object (containerd,\n"
	      "                     runc, crun); every container counts as unprivileged.\n"
	      "                     kubernetes: a Security Profiles Operator SeccompProfile\n"
	      "                     object holding the oci profile\n"
	      "      --name NAME    the SeccompProfile's name (default uffdguard-POLICY)\n"
	      "      --allow-by-default  write a profile whose default action lets calls\n"
	      "                     through (without --base: a fragment); a runtime using it\n"
	      "                     loses its own default filtering\n"
	      "      --dry-run      report what would change; write nothing\n"
	      "      --json         the report as JSON on standard output (with -o or\n"
	      "                     --dry-run)\n"
	      "  -o, --output FILE  write FILE atomically instead of standard output; a\n"
	      "                     FILE that is a symbolic link, directory or other\n"
	      "                     non-regular file is refused\n"
	      "      --check FILE   say what a runtime makes of FILE and whether it enforces\n"
	      "                     the policy\n"
	      "      --runtime R    with --check: docker, podman, crio (the Docker format) or\n"
	      "                     containerd (the runtime-spec format)\n"
	      "  -h, --help         show this help\n\n"
	      "See uffdguard-profile(1).\n",
	      out);
}

/* At most PROFILE_MAX_SIZE + 1 bytes: enough for profile_parse() to refuse
 * a larger file (or /dev/zero) without reading all of it. */
static char *read_file(const char *path, size_t *len)
{
	cleanup_file FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		die(EXIT_FAILED, "%s: %s", path, strerror(errno));
	while (n <= PROFILE_MAX_SIZE) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > PROFILE_MAX_SIZE + 1)
				cap = PROFILE_MAX_SIZE + 1;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				die(EXIT_FAILED, "%s: out of memory", path);
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
		die(EXIT_FAILED, "%s: %s", path, strerror(errno));
	buf[n] = '\0';
	*len = n;
	return buf;
}

static struct json_object *read_profile(const char *path)
{
	size_t len;
	cleanup_free char *text = read_file(path, &len);
	struct profile_error perr;
	struct json_object *o = profile_parse(text, len, &perr);

	if (!o)
		die(EXIT_FAILED, "%s: %s: %s", path, perr.where, perr.reason);
	return o;
}

static struct json_object *jstring(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static struct json_object *policy_json(const struct policy *p)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(policy_name(p)));
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		json_object_object_add(o, policy_knobs[i].name,
				       json_object_new_int(policy_knob_get(p, &policy_knobs[i]) ? 1 : 0));
	return o;
}

static struct json_object *outcome_json(const struct profile_outcome *o)
{
	struct json_object *j = json_object_new_object();
	char text[256];

	profile_outcome_text(o, text, sizeof(text));
	json_object_object_add(j, "action", o->valid ? jstring(profile_action_name(&o->action)) : NULL);
	json_object_object_add(j, "errno", o->valid && profile_action_uses_errno(&o->action)
						   ? json_object_new_int64(o->action.errno_ret)
						   : NULL);
	json_object_object_add(j, "permits", json_object_new_boolean(profile_outcome_permits(o)));
	json_object_object_add(j, "rule", o->rule >= 0 ? json_object_new_int(o->rule) : NULL);
	json_object_object_add(j, "unclear", json_object_new_boolean(o->unclear));
	json_object_object_add(j, "varies", json_object_new_boolean(o->varies));
	json_object_object_add(j, "text", json_object_new_string(text));
	return j;
}

static void print_json(struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s || puts(s) == EOF || fflush(stdout) == EOF)
		die(EXIT_FAILED, "standard output: %s", strerror(errno));
}

/* ---- --check ------------------------------------------------------------ */

static int check_file(const char *path, const char *runtime_name, const struct policy *p, bool json)
{
	const struct profile_runtime *rt = NULL;
	for (size_t i = 0; i < sizeof(profile_runtimes) / sizeof(profile_runtimes[0]); i++)
		if (!strcmp(runtime_name, profile_runtimes[i].name))
			rt = &profile_runtimes[i];
	if (!rt)
		usage_error("unknown runtime '%s': valid runtimes are docker, podman, crio and "
			    "containerd",
			    runtime_name);

	struct json_object *prof = read_profile(path), *kind = NULL, *spec = NULL;
	struct json_object *subject = prof;
	bool spo = json_object_object_get_ex(prof, "kind", &kind) &&
		   !strcmp(json_object_get_string(kind), "SeccompProfile") &&
		   json_object_object_get_ex(prof, "spec", &spec);
	if (spo)
		subject = spec; /* the operator writes its spec for the kubelet */

	struct profile_notes notes;
	struct profile_view v;
	struct profile_error why = { "", "" };
	profile_reader_notes(subject, rt->reader, &notes);
	profile_view_of(subject, rt->reader, &v);
	bool enforces = !notes.refused && profile_view_enforces(&v, p, &why);
	if (notes.refused)
		snprintf(why.reason, sizeof(why.reason), "%s refuses the profile", rt->name);

	if (json) {
		struct json_object *o = json_object_new_object(), *jn = json_object_new_array(),
				   *jo = json_object_new_array();
		json_object_object_add(o, "file", json_object_new_string(path));
		json_object_object_add(o, "runtime", json_object_new_string(rt->name));
		json_object_object_add(o, "reads", json_object_new_string(rt->reads));
		json_object_object_add(o, "seccompprofile_object", json_object_new_boolean(spo));
		json_object_object_add(o, "policy", policy_json(p));
		for (size_t i = 0; i < notes.n; i++)
			json_object_array_add(jn, json_object_new_string(notes.text[i]));
		json_object_object_add(o, "notes", jn);
		json_object_object_add(o, "notes_not_shown", json_object_new_int64((int64_t)notes.more));
		for (int k = 0; k < PROFILE_N_CLASSES; k++) {
			for (int c = 0; v.classes[k] && c < PROFILE_N_CALLS; c++) {
				struct json_object *e = outcome_json(&v.outcomes[k][c]);
				json_object_object_add(e, "containers",
						       json_object_new_string(profile_class_text(k)));
				json_object_object_add(e, "call", json_object_new_string(profile_call_text(c)));
				json_object_array_add(jo, e);
			}
		}
		json_object_object_add(o, "outcomes", jo);
		json_object_object_add(o, "enforces_policy", json_object_new_boolean(enforces));
		struct json_object *mm = NULL;
		if (!enforces) {
			mm = json_object_new_object();
			json_object_object_add(mm, "where", json_object_new_string(why.where));
			json_object_object_add(mm, "reason", json_object_new_string(why.reason));
		}
		json_object_object_add(o, "mismatch", mm);
		print_json(o);
		json_object_put(o);
	} else {
		char text[256];
		printf("%s as %s reads it (%s)%s:\n", path, rt->name, rt->reads,
		       spo ? ", from the SeccompProfile's spec" : "");
		for (size_t i = 0; i < notes.n; i++)
			printf("  note: %s\n", notes.text[i]);
		if (notes.more)
			printf("  note: and %zu more like these\n", notes.more);
		for (int k = 0; k < PROFILE_N_CLASSES; k++) {
			for (int c = 0; v.classes[k] && c < PROFILE_N_CALLS; c++) {
				profile_outcome_text(&v.outcomes[k][c], text, sizeof(text));
				printf("  %s, %s: %s\n", profile_call_text(c), profile_class_text(k), text);
			}
		}
		char desc[256];
		policy_format(p, desc, sizeof(desc));
		if (enforces)
			printf("%s enforces the policy %s (%s) with this file.\n", rt->name,
			       policy_name(p), desc);
		else
			printf("%s does not enforce the policy %s (%s) with this file: %s%s%s.\n",
			       rt->name, policy_name(p), desc, why.where, why.where[0] ? ": " : "",
			       why.reason);
		if (fflush(stdout) == EOF || ferror(stdout))
			die(EXIT_FAILED, "standard output: %s", strerror(errno));
	}
	json_object_put(prof);
	return enforces ? 0 : EXIT_NOT_ENFORCED;
}

/* ---- Generating ----------------------------------------------------------- */

struct gen {
	const char *base_path, *output, *name;
	enum profile_format fmt; /* the profile's; kubernetes wraps an oci one */
	bool kubernetes, allow_by_default, dry_run, json;
};

static void print_report(const struct gen *g, const struct profile_report *r)
{
	enum profile_reader rd = g->fmt == PROFILE_FORMAT_DOCKER ? PROFILE_READER_DOCKER
								  : PROFILE_READER_OCI;
	char before[256], after[256];

	fprintf(stderr, "uffdguard profile: compared with %s, as %s read it:\n",
		g->base_path ? g->base_path : "no filter at all",
		rd == PROFILE_READER_DOCKER ? "Docker, Podman and CRI-O"
					    : "containerd, runc and crun (the runtime-spec format)");
	if (!r->n)
		fputs("  nothing changes for userfaultfd and ioctl\n", stderr);
	for (size_t i = 0; i < r->n; i++) {
		const struct profile_change *c = &r->changes[i];
		profile_outcome_text(&c->before, before, sizeof(before));
		profile_outcome_text(&c->after, after, sizeof(after));
		fprintf(stderr, "  %s%s: %s, %s: was %s, now %s\n", profile_change_kind_name(c->kind),
			c->kind == PROFILE_LOOSENED ? ", as the policy asks" : "",
			profile_call_text(c->call), profile_class_text(c->cls), before, after);
	}
	for (size_t i = 0; i < r->n; i++) {
		if (r->changes[i].kind == PROFILE_LOOSENED && r->changes[i].cls == PROFILE_CLASS_PTRACE) {
			fputs("  (a container with CAP_SYS_PTRACE is the privileged caller of the 2020 "
			      "patch series; --set ignore_cap_sys_ptrace=1 holds it to the same rule)\n",
			      stderr);
			break;
		}
	}
}

static struct json_object *report_json(const struct gen *g, const struct policy *p,
				       const struct profile_report *r)
{
	struct json_object *o = json_object_new_object(), *ch = json_object_new_array();

	json_object_object_add(o, "base", jstring(g->base_path));
	json_object_object_add(o, "format",
			       json_object_new_string(g->kubernetes ? "kubernetes"
						      : g->fmt == PROFILE_FORMAT_DOCKER ? "docker"
											 : "oci"));
	json_object_object_add(o, "policy", policy_json(p));
	for (size_t i = 0; i < r->n; i++) {
		const struct profile_change *c = &r->changes[i];
		struct json_object *e = json_object_new_object();
		json_object_object_add(e, "kind", json_object_new_string(profile_change_kind_name(c->kind)));
		json_object_object_add(e, "call", json_object_new_string(profile_call_text(c->call)));
		json_object_object_add(e, "containers", json_object_new_string(profile_class_text(c->cls)));
		json_object_object_add(e, "policy_allows", json_object_new_boolean(c->asked));
		json_object_object_add(e, "before", outcome_json(&c->before));
		json_object_object_add(e, "after", outcome_json(&c->after));
		json_object_array_add(ch, e);
	}
	json_object_object_add(o, "changes", ch);
	json_object_object_add(o, "output", g->dry_run ? NULL : jstring(g->output));
	json_object_object_add(o, "written", json_object_new_boolean(!g->dry_run));
	return o;
}

/* How a Pod uses the profile: the SeccompProfile's file, or the -o file
 * when it is in the kubelet's seccomp directory. */
static const char *localhost_profile(const struct gen *g, char *buf, size_t size)
{
	char real[PATH_MAX];

	if (g->kubernetes) {
		snprintf(buf, size, PROFILE_SPO_DIR "/%s.json", g->name);
		return buf;
	}
	if (g->output && realpath(g->output, real) &&
	    !strncmp(real, KUBELET_SECCOMP_DIR, strlen(KUBELET_SECCOMP_DIR))) {
		snprintf(buf, size, "%s", real + strlen(KUBELET_SECCOMP_DIR));
		return buf;
	}
	return NULL;
}

static int generate(struct gen *g, const struct policy *p)
{
	struct json_object *before = NULL, *prof;
	struct profile_error perr;
	char default_name[64], desc[256];

	if (g->base_path) {
		before = read_profile(g->base_path);
		if (json_object_deep_copy(before, &prof, NULL) != 0)
			die(EXIT_FAILED, "out of memory");
		if (profile_merge(prof, p, g->fmt, &perr) < 0)
			die(EXIT_FAILED, "%s: %s: %s", g->base_path, perr.where, perr.reason);
	} else {
		prof = profile_standalone(p, g->fmt);
		if (!prof)
			die(EXIT_FAILED, "out of memory");
	}

	struct profile_action def;
	if (profile_action_read(json_object_object_get(prof, "defaultAction"),
				json_object_object_get(prof, "defaultErrnoRet"), &def) == 0 &&
	    profile_action_permits(&def) && !g->allow_by_default)
		die(EXIT_FAILED,
		    "the profile would let every call it does not name through (defaultAction %s): "
		    "a runtime using it loses its own default filtering.  Merge into the runtime's "
		    "default with --base (for containerd and Kubernetes: %s/containerd-default.json), "
		    "or give --allow-by-default if that is what you want",
		    profile_action_name(&def), UFFDGUARD_DATADIR);

	struct profile_report report;
	if (profile_compare(before, prof, g->fmt, p, &report, &perr) < 0)
		die(EXIT_FAILED, "%s: %s: %s", g->base_path ? g->base_path : "the fragment",
		    perr.where, perr.reason);

	policy_format(p, desc, sizeof(desc));
	if (g->kubernetes) {
		if (!g->name) {
			snprintf(default_name, sizeof(default_name), "uffdguard-%s", policy_name(p));
			g->name = default_name;
		}
		char description[512];
		snprintf(description, sizeof(description),
			 "uffdguard profile --policy %s: userfaultfd and /dev/userfaultfd under the "
			 "2020 patch series' knobs (%s)%s%s",
			 policy_name(p), desc, g->base_path ? ", merged into " : "",
			 g->base_path ? g->base_path : "");
		struct json_object *obj = profile_seccompprofile(prof, g->name, description, &perr);
		if (!obj)
			die(EXIT_FAILED, "--format kubernetes: %s: %s", perr.where, perr.reason);
		json_object_put(prof);
		prof = obj;
	}

	cleanup_free char *out = profile_serialize(prof);
	if (!out)
		die(EXIT_FAILED, "out of memory");
	if (g->dry_run) {
		/* nothing written */
	} else if (g->output) {
		/* A temporary file in the same directory, then rename(): a
		 * reader sees the old profile or the new one, never half. */
		mode_t um = umask(0);
		umask(um);
		int r = write_file_atomic(g->output, out, 0666 & ~um);
		char why[ATOMIC_FILE_REFUSAL_SIZE];
		if (r < 0 && atomic_file_refusal(g->output, r, why, sizeof(why)))
			die(EXIT_FAILED, "%s", why);
		else if (r < 0)
			die(EXIT_FAILED, "%s: %s", g->output, strerror(-r));
	} else if (fputs(out, stdout) == EOF || fflush(stdout) == EOF) {
		die(EXIT_FAILED, "standard output: %s", strerror(errno));
	}

	char lp[PATH_MAX];
	const char *localhost = localhost_profile(g, lp, sizeof(lp));
	if (g->json) {
		struct json_object *o = report_json(g, p, &report);
		if (localhost) {
			struct json_object *k = json_object_new_object();
			json_object_object_add(k, "localhostProfile", json_object_new_string(localhost));
			json_object_object_add(o, "kubernetes", k);
		}
		print_json(o);
		json_object_put(o);
	} else {
		print_report(g, &report);
		if (g->dry_run)
			fputs("uffdguard profile: --dry-run: nothing written\n", stderr);
		if (localhost)
			fprintf(stderr,
				"uffdguard profile: a Pod uses it with\n"
				"  securityContext:\n"
				"    seccompProfile:\n"
				"      type: Localhost\n"
				"      localhostProfile: %s\n"
				"%s",
				localhost,
				g->kubernetes ? "  once the Security Profiles Operator has installed it on "
						"the node: its status.localhostProfile gives the path "
						"(" PROFILE_SPO_DIR "/NAMESPACE/NAME.json in releases "
						"whose profiles are namespaced)\n"
					      : "");
	}
	json_object_put(before);
	json_object_put(prof);
	return 0;
}

static int profile_run(int argc, char **argv)
{
	enum { OPT_ALLOW = 0x100, OPT_DRY, OPT_JSON, OPT_CHECK, OPT_RUNTIME, OPT_NAME };
	static const struct option opts[] = {
		CLI_POLICY_OPTIONS,
		{ "base", required_argument, NULL, 'b' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "allow-by-default", no_argument, NULL, OPT_ALLOW },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "check", required_argument, NULL, OPT_CHECK },
		{ "runtime", required_argument, NULL, OPT_RUNTIME },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gen g = { .fmt = PROFILE_FORMAT_DOCKER };
	const char *check = NULL, *runtime = NULL;
	bool format_given = false;
	struct cli_policy po = { 0 };
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:" CLI_POLICY_SHORT "o:h", opts, NULL)) != -1) {
		if (cli_policy_option(&po, c, optarg))
			continue;
		switch (c) {
		case 'h':
			cli_usage(stdout);
			return 0;
		case 'b':
			g.base_path = optarg;
			break;
		case 'f':
			format_given = true;
			g.kubernetes = !strcmp(optarg, "kubernetes");
			if (!strcmp(optarg, "docker"))
				g.fmt = PROFILE_FORMAT_DOCKER;
			else if (!strcmp(optarg, "oci") || g.kubernetes)
				g.fmt = PROFILE_FORMAT_OCI;
			else
				usage_error("unknown format '%s': valid formats are docker, oci and "
					    "kubernetes",
					    optarg);
			break;
		case 'o':
			g.output = optarg;
			break;
		case OPT_NAME:
			g.name = optarg;
			break;
		case OPT_ALLOW:
			g.allow_by_default = true;
			break;
		case OPT_DRY:
			g.dry_run = true;
			break;
		case OPT_JSON:
			g.json = true;
			break;
		case OPT_CHECK:
			check = optarg;
			break;
		case OPT_RUNTIME:
			runtime = optarg;
			break;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	struct policy pol = cli_policy_build(&po, DEFAULT_POLICY);

	if (check || runtime) {
		if (!check || !runtime)
			usage_error("--check FILE and --runtime R go together");
		if (g.base_path || format_given || g.output || g.name || g.allow_by_default ||
		    g.dry_run)
			usage_error("--check takes only --runtime, --policy, --set and --json");
		return check_file(check, runtime, &pol, g.json);
	}
	if (g.name && !g.kubernetes)
		usage_error("--name is for --format kubernetes");
	if (g.name && !profile_object_name_ok(g.name))
		usage_error("'%s' is not a valid object name: lower-case letters, digits, '-' and "
			    "'.', starting and ending with a letter or digit, at most 253",
			    g.name);
	if (g.json && !g.output && !g.dry_run)
		usage_error("--json prints the report on standard output: give -o FILE for the "
			    "profile, or --dry-run");
	if (g.dry_run && g.output)
		usage_error("--dry-run writes nothing: leave out -o");
	return generate(&g, &pol);
}

const struct subcommand cmd_profile = {
	.name = "profile",
	.summary = "a flag-aware seccomp profile for Docker, Podman, containerd, Kubernetes",
	.run = profile_run,
	.usage = profile_usage,
	.exit_codes = profile_exit_codes,
	.exit_failure = EXIT_FAILED,
};
