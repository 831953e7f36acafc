/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shape every verb has: a struct subcommand with its exit codes, one
 * prefix for its messages ("uffdguard VERB: "), one failure helper, and
 * one parser and help text for --policy/--set.  Only cli/ prints or
 * exits; the layers below report through return values and callbacks.
 */
#ifndef UFFDGUARD_CLI_H
#define UFFDGUARD_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "policy.h"

/* The exit code of bad usage (the verb's usage follows the message on
 * standard error), for every verb but one that sets exit_usage. */
#define EXIT_USAGE 2

/* One exit code of a verb, as its --help and its man page list it. */
struct exit_code {
	int code;
	const char *meaning;
};

struct subcommand {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	/* Synopsis, description and options; cli_usage() adds the exit codes. */
	void (*usage)(FILE *out);
	/* Every code the verb exits with but EXIT_USAGE, ending with a NULL
	 * meaning; a negative code stands for "the command's own". */
	const struct exit_code *exit_codes;
	/* Among them, the one for "uffdguard itself failed" (out of memory). */
	int exit_failure;
	/* 0: usage errors exit EXIT_USAGE.  Else their code, one of
	 * exit_codes whose meaning says so (run: 125, as env(1) and podman
	 * run, since the command's own 2 must not read as ours). */
	int exit_usage;
};

extern const struct subcommand cmd_status;
extern const struct subcommand cmd_run;
extern const struct subcommand cmd_sysctl;
extern const struct subcommand cmd_profile;
extern const struct subcommand cmd_lsm;

/* The verb being run: main() sets it before calling it, and every message
 * below starts with "uffdguard VERB: " ("uffdguard: " before that). */
extern const struct subcommand *cli_verb;

/* The verb's usage and then its exit codes, its usage error's among them. */
void cli_usage(FILE *out);

/* A message on standard error with the prefix: the one way to report. */
__attribute__((format(printf, 1, 2))) void cli_error(const char *fmt, ...);
/* The same with "warning: " after the prefix; the verb goes on. */
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
/* cli_error(), then exit with `code`. */
__attribute__((noreturn, format(printf, 2, 3))) void die(int code, const char *fmt, ...);
/* cli_error(), a blank line and the verb's usage on standard error, then
 * exit EXIT_USAGE (or the verb's exit_usage). */
__attribute__((noreturn, format(printf, 1, 2))) void usage_error(const char *fmt, ...);
/* For getopt_long() with opterr = 0 and an optstring starting "+:": the
 * usage error for what it returned ':' (a missing argument) or '?' for. */
__attribute__((noreturn)) void cli_bad_option(int c, char **argv);

/* --policy P and --set KNOB=V, as every verb that takes a policy takes
 * them: --policy at most once, --set any number of times, applied in
 * order on top of the preset. */
#define CLI_POLICY_OPTIONS \
	{ "policy", required_argument, NULL, 'p' }, { "set", required_argument, NULL, 's' }
#define CLI_POLICY_SHORT "p:s:"

struct cli_policy {
	const char *preset; /* NULL: not given */
	const char **sets;
	size_t n_sets;
};

/* Take option c ('p' or 's') with its argument; false for another option. */
bool cli_policy_option(struct cli_policy *o, int c, const char *arg);
/* The policy asked for (preset `fallback` when --policy was not given);
 * a usage error if it is not valid.  Frees what the options held. */
struct policy cli_policy_build(struct cli_policy *o, const char *fallback);
/* Whether the last of sets (K=V strings) naming ignore_cap_sys_ptrace
 * asks for the CAP_SYS_PTRACE exemption (=0), which only run's supervise
 * mode can give. */
bool cli_sets_ask_exemption(const char *const *sets, size_t n_sets);
/* The help lines of the two options, aligned with a verb's others. */
void cli_policy_help(FILE *out, const char *fallback);

#endif
