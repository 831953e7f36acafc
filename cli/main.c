// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

static const struct subcommand *const subcommands[] = {
	&cmd_status,
	&cmd_run,
	&cmd_sysctl,
	&cmd_profile,
};
#define N_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

void die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("uffdguard: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	fputs("uffdguard: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void usage_error(const struct subcommand *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "uffdguard %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n\n", stderr);
	cmd->usage(stderr);
	exit(EXIT_USAGE);
}

static void usage(FILE *out)
{
	fputs("Usage: uffdguard [--help] [--version] COMMAND [ARGS]\n\n"
	      "Control over userfaultfd kernel-fault handling.\n\nCommands:\n", out);
	for (size_t i = 0; i < N_SUBCOMMANDS; i++)
		fprintf(out, "  %-10s %s\n", subcommands[i]->name, subcommands[i]->summary);
	fputs("\nRun 'uffdguard COMMAND --help' for a command's options.\n", out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version")) {
		printf("uffdguard %s\n", UFFDGUARD_VERSION);
		return 0;
	}
	for (size_t i = 0; i < N_SUBCOMMANDS; i++)
		if (!strcmp(name, subcommands[i]->name))
			return subcommands[i]->run(argc - 1, argv + 1);

	fprintf(stderr, "uffdguard: unknown %s '%s'\n\n", name[0] == '-' ? "option" : "command", name);
	usage(stderr);
	return EXIT_USAGE;
}
