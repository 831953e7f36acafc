// SPDX-License-Identifier: GPL-2.0-or-later
/* What every verb shares: messages, usage errors, exit codes, --policy/--set. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const struct subcommand *cli_verb;

__attribute__((format(printf, 2, 0))) static void vmessage(const char *kind, const char *fmt,
							 va_list ap)
{
	if (cli_verb)
		fprintf(stderr, "uffdguard %s: %s", cli_verb->name, kind);
	else
		fprintf(stderr, "uffdguard: %s", kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
	exit(code);
}

/* Words of text, wrapped at 78 columns; *col is the current column. */
static void put_wrapped(FILE *out, const char *text, int *col)
{
	while (*text) {
		size_t len = strcspn(text, " ");
		if (*col > 0 && *col + 1 + (int)len > 78) {
			fputc('\n', out);
			*col = 0;
		} else if (*col > 0) {
			fputc(' ', out);
			(*col)++;
		}
		*col += fprintf(out, "%.*s", (int)len, text);
		text += len + strspn(text + len, " ");
	}
}

/* "Exit status: 0 done, 1 failed, 2 usage error, ...": the verb's table,
 * with the shared EXIT_USAGE in its place. */
void cli_usage(FILE *out)
{
	const struct exit_code usage = { EXIT_USAGE, "usage error" };
	const struct exit_code *e = cli_verb->exit_codes;
	/* A verb with its own usage code lists it in its table. */
	bool usage_said = cli_verb->exit_usage != 0;
	char item[256];
	int col = 0;

	cli_verb->usage(out);
	fputs("\n", out);
	put_wrapped(out, "Exit status:", &col);
	for (;;) {
		const struct exit_code *x = e;
		if (!usage_said && (!e->meaning || e->code > EXIT_USAGE)) {
			x = &usage;
			usage_said = true;
		} else if (!e->meaning) {
			break;
		} else {
			e++;
		}
		bool last = usage_said && !e->meaning;
		if (x->code < 0)
			snprintf(item, sizeof(item), "%s%s", x->meaning, last ? "." : ",");
		else
			snprintf(item, sizeof(item), "%d %s%s", x->code, x->meaning, last ? "." : ",");
		put_wrapped(out, item, &col);
	}
	fputs("\n", out);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_usage(stderr);
	exit(cli_verb && cli_verb->exit_usage ? cli_verb->exit_usage : EXIT_USAGE);
}

void cli_bad_option(int c, char **argv)
{
	if (c == ':')
		usage_error("option '%s' needs an argument", argv[optind - 1]);
	usage_error("unknown option '%s'", argv[optind - 1]);
}

bool cli_policy_option(struct cli_policy *o, int c, const char *arg)
{
	if (c == 'p') {
		if (o->preset)
			usage_error("--policy given twice ('%s', then '%s'): give it once, and "
				    "--set for each knob to change",
				    o->preset, arg);
		o->preset = arg;
		return true;
	}
	if (c != 's')
		return false;
	const char **sets = realloc(o->sets, (o->n_sets + 1) * sizeof(*sets));
	if (!sets)
		die(cli_verb->exit_failure, "out of memory");
	sets[o->n_sets++] = arg;
	o->sets = sets;
	return true;
}

struct policy cli_policy_build(struct cli_policy *o, const char *fallback)
{
	struct policy p;
	char err[512];
	int r = policy_build(o->preset ? o->preset : fallback, o->sets, o->n_sets, &p, err,
			     sizeof(err));

	free(o->sets);
	*o = (struct cli_policy){ 0 };
	if (r < 0)
		usage_error("%s", err);
	return p;
}

bool cli_sets_ask_exemption(const char *const *sets, size_t n_sets)
{
	/* The sets alone, on a policy that exempts nobody. */
	struct policy p = { .privilege = POLICY_PRIV_NOBODY };
	char err[256];

	for (size_t i = 0; i < n_sets; i++)
		policy_set_knob(&p, sets[i], err, sizeof(err)); /* a bad one is refused elsewhere */
	return p.privilege == POLICY_PRIV_CAP_SYS_PTRACE;
}

void cli_policy_help(FILE *out, const char *fallback)
{
	const struct policy_preset *ps = policy_presets;

	fputs("  -p, --policy P     ", out);
	for (size_t i = 0; i < POLICY_N_PRESETS; i++)
		fprintf(out, "%s%s%s", i == 0 ? "" : i + 1 < POLICY_N_PRESETS ? ", " : " or ",
			ps[i].name, strcmp(ps[i].name, fallback) ? "" : " (default)");
	fputs(", or the\n                     vm.unprivileged_userfaultfd value", out);
	for (size_t i = 0; i < POLICY_N_PRESETS; i++)
		fprintf(out, "%s %s = %s", i ? "," : "", ps[i].single_knob, ps[i].name);
	fputs("\n  -s, --set K=V      then set a knob to 0 or 1 (repeatable, in order):\n", out);
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		fprintf(out, "                     %s\n", policy_knobs[i].name);
}
