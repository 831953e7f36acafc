// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard lsm: the policy for the whole host and per cgroup, enforced by
 * the kernel with a BPF LSM program (enforce/lsm/).  apply, show, remove,
 * and audit (follow the records of every decision).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup.h"
#include "cleanup.h"
#include "cli.h"
#include "lsm-config.h"
#include "loader.h"
#include "policy.h"
#include "scope-json.h"

#define DEFAULT_POLICY "user-mode-only"

enum {
	EXIT_FAILED = 1,
	EXIT_REFUSED = 3,
};

static const struct exit_code lsm_exit_codes[] = {
	{ 0, "done" },
	{ EXIT_FAILED, "failed" },
	{ EXIT_REFUSED, "refused: this kernel or this user cannot have a BPF LSM program (the "
			"message says why and what to do)" },
	{ 0, NULL },
};

static void lsm_usage(FILE *out)
{
	fputs("Usage: uffdguard lsm apply (--host | --cgroup PATH) [--policy P] [--set KNOB=V]...\n"
	      "                         [--verbose]\n"
	      "       uffdguard lsm apply --config FILE [--check] [--verbose]\n"
	      "       uffdguard lsm show [--json]\n"
	      "       uffdguard lsm remove [--host | --cgroup PATH]\n"
	      "       uffdguard lsm audit [--journal]\n\n"
	      "Enforce the policy in the kernel, for every process of the host, with a BPF\n"
	      "LSM program: every userfaultfd(2) and USERFAULTFD_IOC_NEW (any ABI) is decided\n"
	      "with the caller's credentials at the time of the call; no other system call\n"
	      "pays anything.  A cgroup entry (a container, a service, a user's slice)\n"
	      "overrides the host default for the processes under it; the deepest entry\n"
	      "wins.  The program and its maps are pinned in " LSM_PIN_DIR ": enforcement\n"
	      "outlives the command, and changes take effect at the next call.\n\n"
	      "  apply              load the program if it is not, and set the policy of a\n"
	      "                     scope\n"
	      "  show               what is in force, per scope, with decision counts\n"
	      "  remove             remove one scope, or with neither --host nor --cgroup\n"
	      "                     the program, its maps and pins altogether\n"
	      "  audit              print a JSON line per decision until interrupted\n\n"
	      "Options of apply, and --host and --cgroup of remove:\n"
	      "      --host         the host default: every process without a cgroup entry\n"
	      "      --cgroup PATH  a cgroup v2 path as /proc/PID/cgroup gives it\n"
	      "                     (/user.slice/user-1000.slice); it may not exist yet\n",
	      out);
	cli_policy_help(out, DEFAULT_POLICY);
	fputs("      --config FILE  make the scopes in force exactly those of FILE (its\n"
	      "                     format is in uffdguard-lsm(8))\n"
	      "      --check        only check FILE\n"
	      "      --verbose      on failure, also print what libbpf and the kernel said\n"
	      "Options of show and audit:\n"
	      "      --json         show: as JSON\n"
	      "      --journal      audit: write to the systemd journal instead\n"
	      "  -h, --help         show this help\n\n"
	      "See uffdguard-lsm(8).\n",
	      out);
}

static int exit_for(int r)
{
	return r == -EOPNOTSUPP || r == -EPERM || r == -ENOSYS ? EXIT_REFUSED : EXIT_FAILED;
}

static __attribute__((noreturn)) void fail(int r, bool verbose, const char *err)
{
	if (verbose && lsm_libbpf_log()[0])
		fputs(lsm_libbpf_log(), stderr);
	die(exit_for(r), "%s", err);
}

/* ---- apply ------------------------------------------------------------ */

static int lsm_apply_run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_POLICY_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ "host", no_argument, NULL, 'H' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "config", required_argument, NULL, 'f' },
		{ "check", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 },
	};
	const char *cgroup = NULL, *config = NULL;
	struct cli_policy po = { 0 };
	bool host = false, check = false, verbose = false;
	char err[1024];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:" CLI_POLICY_SHORT "h", opts, NULL)) != -1) {
		if (cli_policy_option(&po, c, optarg))
			continue;
		switch (c) {
		case 'h':
			cli_usage(stdout);
			return 0;
		case 'H':
			host = true;
			break;
		case 'c':
			cgroup = optarg;
			break;
		case 'f':
			config = optarg;
			break;
		case 'C':
			check = true;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if ((host || cgroup) && config)
		usage_error("--config gives every scope: no --host or --cgroup with it");
	if (config && (po.preset || po.n_sets))
		usage_error("--config gives every policy: no --policy or --set with it");
	if (check && !config)
		usage_error("--check checks a --config FILE");
	if (host && cgroup)
		usage_error("one scope at a time: --host or --cgroup PATH");
	if (!host && !cgroup && !config)
		usage_error("which scope? --host, --cgroup PATH or --config FILE");

	cleanup_free struct lsm_scope_spec *specs = NULL;
	size_t n = 0;
	int r;
	if (config) {
		r = lsm_config_load(config, &specs, &n, err, sizeof(err));
		if (r < 0)
			die(EXIT_FAILED, "%s", err);
		if (check)
			return 0;
	} else {
		specs = calloc(1, sizeof(*specs));
		if (!specs)
			die(EXIT_FAILED, "out of memory");
		n = 1;
		specs[0].policy = cli_policy_build(&po, DEFAULT_POLICY);
		if (cgroup) {
			if (cgroup_path_check(cgroup, err, sizeof(err)) < 0)
				usage_error("%s", err);
			snprintf(specs[0].cgroup, sizeof(specs[0].cgroup), "%s", cgroup);
		}
	}
	r = lsm_apply(specs, n, config != NULL, err, sizeof(err));
	if (r < 0)
		fail(r, verbose, err);
	return 0;
}

/* ---- show ------------------------------------------------------------- */

static void totals(const struct lsm_scope_state *s, uint64_t *allowed, uint64_t *eperm,
		   uint64_t *einval)
{
	*allowed = *eperm = *einval = 0;
	for (int r = 0; r < LSM_N_REASONS; r++) {
		int e = lsm_reason_errno((enum lsm_reason)r);
		*(e == EPERM ? eperm : e == EINVAL ? einval : allowed) += s->counts[r];
	}
}

static void show_json(const struct lsm_support *sup, int support, const char *why,
		      const struct lsm_state *st)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "kernel", json_object_new_string(sup->release));
	json_object_object_add(o, "active_lsms", sup->lsm_list_known
		? json_object_new_string(sup->active_lsms) : NULL);
	json_object_object_add(o, "bpf_lsm_active", json_object_new_boolean(sup->bpf_active));
	json_object_object_add(o, "supported", json_object_new_boolean(support == 0));
	json_object_object_add(o, "why_not", support ? json_object_new_string(why) : NULL);
	json_object_object_add(o, "pinned", json_object_new_boolean(st->pinned));
	json_object_object_add(o, "enforcing", json_object_new_boolean(st->enforcing));
	json_object_object_add(o, "program_id", json_object_new_int64(st->prog_id));
	json_object_object_add(o, "format", json_object_new_int64(st->format_version));
	json_object_object_add(o, "format_ok", json_object_new_boolean(st->format_ok));
	json_object_object_add(o, "same_program", json_object_new_boolean(st->same_program));
	json_object_object_add(o, "audit_records_dropped", json_object_new_int64((int64_t)st->dropped));
	json_object *scopes = json_object_new_array();
	for (size_t i = 0; i < st->n_scopes; i++)
		json_object_array_add(scopes, lsm_scope_json(&st->scopes[i]));
	json_object_object_add(o, "scopes", scopes);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static void show_text(const struct lsm_support *sup, int support, const char *why,
		      const struct lsm_state *st)
{
	printf("Kernel %s; active LSMs: %s\n", sup->release,
	       sup->lsm_list_known ? sup->active_lsms : "unknown (securityfs not mounted)");
	if (!st->pinned) {
		printf("No BPF LSM policy is in force.\n");
		if (support)
			printf("It cannot be applied here: %s.\n", why);
		return;
	}
	if (!st->format_ok) {
		printf("%s holds BPF LSM maps of format %u, which this uffdguard (format %d) does "
		       "not read; 'uffdguard lsm remove' removes them.\n", LSM_PIN_DIR,
		       st->format_version, LSM_FORMAT_VERSION);
		return;
	}
	if (st->enforcing)
		printf("BPF LSM program: enforcing (program id %u), pinned in %s%s\n", st->prog_id,
		       LSM_PIN_DIR, st->same_program ? ""
			       : "; loaded by another build of uffdguard, replaced at the next apply");
	else
		printf("BPF LSM program: NOT enforcing: its maps are pinned in %s but its link is "
		       "not; apply again or remove\n", LSM_PIN_DIR);
	if (!st->n_scopes)
		printf("No scope has a policy: the kernel decides alone.\n");
	for (size_t i = 0; i < st->n_scopes; i++) {
		const struct lsm_scope_state *s = &st->scopes[i];
		char knobs[256], where[64] = "";
		uint64_t a, p, v;
		policy_format(&s->policy, knobs, sizeof(knobs));
		if (s->cgroup[0])
			snprintf(where, sizeof(where), s->cgroup_id ? " (cgroup id %" PRIu64 ")"
								   : " (no such cgroup yet)",
				 s->cgroup_id);
		totals(s, &a, &p, &v);
		printf("\n%s%s: %s\n  %s\n  decisions: %" PRIu64 " allowed, %" PRIu64
		       " refused with EPERM, %" PRIu64 " with EINVAL\n",
		       s->cgroup[0] ? s->cgroup : "host default", where, policy_name(&s->policy),
		       knobs, a, p, v);
	}
	if (st->dropped)
		printf("\nAudit records dropped (ring buffer full): %" PRIu64 "\n", st->dropped);
}

/* The options of a subcommand that takes no argument and one switch,
 * --NAME, besides --help: 1 or 0 for the switch, -1 once --help is shown. */
static int parse_one_switch(int argc, char **argv, const char *name)
{
	const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ name, no_argument, NULL, 's' },
		{ 0 },
	};
	int c, on = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cli_usage(stdout);
			return -1;
		case 's':
			on = 1;
			break;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	return on;
}

static int lsm_show_run(int argc, char **argv)
{
	int json = parse_one_switch(argc, argv, "json");
	if (json < 0)
		return 0;

	struct lsm_support sup;
	struct lsm_state st;
	char why[1024], err[1024];
	lsm_support_probe(&sup, false);
	int support = lsm_support_check(&sup, why, sizeof(why));
	int r = lsm_state_read(&st, err, sizeof(err));
	if (r < 0)
		die(exit_for(r), "%s", err);
	if (json)
		show_json(&sup, support, why, &st);
	else
		show_text(&sup, support, why, &st);
	lsm_state_free(&st);
	return 0;
}

/* ---- remove ----------------------------------------------------------- */

static int lsm_remove_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "host", no_argument, NULL, 'H' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ 0 },
	};
	const char *cgroup = NULL;
	bool host = false;
	char err[1024];
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cli_usage(stdout);
			return 0;
		case 'H':
			host = true;
			break;
		case 'c':
			cgroup = optarg;
			break;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (host && cgroup)
		usage_error("one scope at a time: --host or --cgroup PATH");
	if (host || cgroup)
		r = lsm_remove_scope(cgroup, err, sizeof(err));
	else
		r = lsm_remove_all(err, sizeof(err));
	if (r < 0)
		die(exit_for(r), "%s", err);
	return 0;
}

/* ---- audit ------------------------------------------------------------ */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void iso_time(int64_t ns, char *buf, size_t size)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t off = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + off, size - off, ".%06dZ", (int)(ns % 1000000000 / 1000));
}

static json_object *event_json(const struct lsm_event *ev)
{
	char when[64], flags[24];
	json_object *o = json_object_new_object();

	iso_time(ev->realtime_ns, when, sizeof(when));
	json_object_object_add(o, "time", json_object_new_string(when));
	if (ev->dropped) {
		json_object_object_add(o, "dropped", json_object_new_int64((int64_t)ev->dropped));
		json_object_object_add(o, "message", json_object_new_string(
			"audit records lost: the ring buffer was full (no reader, or a slow one)"));
		return o;
	}
	const struct lsm_record *r = &ev->rec;
	snprintf(flags, sizeof(flags), "0x%" PRIx64, (uint64_t)r->flags);
	json_object_object_add(o, "pid", json_object_new_int64(r->pid));
	json_object_object_add(o, "tid", json_object_new_int64(r->tid));
	json_object_object_add(o, "uid", json_object_new_int64(r->uid));
	json_object_object_add(o, "comm", json_object_new_string(r->comm));
	json_object_object_add(o, "exe", json_object_new_string(r->exe));
	json_object_object_add(o, "call", json_object_new_string(lsm_entry_call(r->entry)));
	json_object_object_add(o, "abi", json_object_new_string(lsm_entry_abi(r->entry)));
	json_object_object_add(o, "entry", json_object_new_string(lsm_entry_name(r->entry)));
	json_object_object_add(o, "flags", r->entry == LSM_ENTRY_FORK_EVENT
		? NULL : json_object_new_string(flags));
	json_object_object_add(o, "privileged", json_object_new_boolean(r->privileged));
	json_object_object_add(o, "verdict", json_object_new_string(lsm_reason_verdict(r->reason)));
	json_object_object_add(o, "reason", json_object_new_string(lsm_reason_text(r->reason)));
	json_object_object_add(o, "cgroup", ev->cgroup[0] ? json_object_new_string(ev->cgroup)
							   : NULL);
	json_object_object_add(o, "cgroup_id", json_object_new_int64((int64_t)r->cgroup_id));
	json_object_object_add(o, "scope", json_object_new_string(ev->scope[0] ? ev->scope
									     : "host"));
	return o;
}

static int print_json_line(const struct lsm_event *ev, void *arg)
{
	(void)arg;
	json_object *o = event_json(ev);
	int r = 0;
	if (puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE)) == EOF ||
	    fflush(stdout) == EOF)
		r = -errno;
	json_object_put(o);
	return r;
}

/* A record in the journal: a sentence, and the same fields as the JSON
 * line (UFFDGUARD_*) for journalctl to select on. */
static int send_journal(const struct lsm_event *ev, void *arg)
{
	(void)arg;
	if (ev->dropped)
		return -sd_journal_send("MESSAGE=%" PRIu64 " BPF LSM audit records lost: the ring "
					"buffer was full", ev->dropped,
					"PRIORITY=%d", LOG_WARNING,
					"UFFDGUARD_DROPPED=%" PRIu64, ev->dropped, NULL);
	const struct lsm_record *r = &ev->rec;
	const char *verdict = lsm_reason_verdict(r->reason);
	char flags[24] = "";
	if (r->entry != LSM_ENTRY_FORK_EVENT)
		snprintf(flags, sizeof(flags), "0x%" PRIx64, (uint64_t)r->flags);
	return sd_journal_send(
		"MESSAGE=%s %s (%s%s%s) by %s[%u] uid %u in %s: %s: %s", lsm_entry_call(r->entry),
		strcmp(verdict, "allow") ? "refused" : "allowed", lsm_entry_name(r->entry),
		flags[0] ? ", flags " : "", flags, r->comm, r->pid, r->uid,
		ev->cgroup[0] ? ev->cgroup : "?", verdict, lsm_reason_text(r->reason),
		"PRIORITY=%d", strcmp(verdict, "allow") ? LOG_WARNING : LOG_INFO,
		"UFFDGUARD_PID=%u", r->pid, "UFFDGUARD_TID=%u", r->tid, "UFFDGUARD_UID=%u", r->uid,
		"UFFDGUARD_COMM=%s", r->comm, "UFFDGUARD_EXE=%s", r->exe,
		"UFFDGUARD_CALL=%s", lsm_entry_call(r->entry), "UFFDGUARD_ABI=%s", lsm_entry_abi(r->entry),
		"UFFDGUARD_ENTRY=%s", lsm_entry_name(r->entry), "UFFDGUARD_FLAGS=%s", flags,
		"UFFDGUARD_PRIVILEGED=%d", r->privileged, "UFFDGUARD_VERDICT=%s", verdict,
		"UFFDGUARD_REASON=%s", lsm_reason_text(r->reason),
		"UFFDGUARD_CGROUP=%s", ev->cgroup, "UFFDGUARD_CGROUP_ID=%" PRIu64, (uint64_t)r->cgroup_id,
		"UFFDGUARD_SCOPE=%s", ev->scope[0] ? ev->scope : "host", NULL);
}

static int lsm_audit_run(int argc, char **argv)
{
	char err[1024] = "";
	int journal = parse_one_switch(argc, argv, "journal");
	if (journal < 0)
		return 0;
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: wake the poll */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	int r = lsm_audit_follow(journal ? send_journal : print_json_line, NULL, &stop, err,
				 sizeof(err));
	if (r == -EPIPE)
		return 0; /* the reader of our output went away */
	if (r < 0)
		die(exit_for(r), "%s", err[0] ? err : strerror(-r));
	return 0;
}

/* ---- the verb --------------------------------------------------------- */

static int lsm_run(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} verbs[] = {
		{ "apply", lsm_apply_run },
		{ "show", lsm_show_run },
		{ "remove", lsm_remove_run },
		{ "audit", lsm_audit_run },
	};

	if (argc < 2)
		usage_error("which action? apply, show, remove or audit");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[1], verbs[i].name))
			return verbs[i].run(argc - 1, argv + 1);
	usage_error("unknown action '%s' (apply, show, remove or audit)", argv[1]);
}

const struct subcommand cmd_lsm = {
	.name = "lsm",
	.summary = "the policy host-wide and per cgroup, in the kernel (BPF LSM)",
	.run = lsm_run,
	.usage = lsm_usage,
	.exit_codes = lsm_exit_codes,
	.exit_failure = EXIT_FAILED,
};
