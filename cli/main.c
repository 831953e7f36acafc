// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard: the table of verbs, and the dispatch to them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"

static const struct subcommand *const subcommands[] = {
	&cmd_status,
	&cmd_run,
	&cmd_sysctl,
	&cmd_profile,
	&cmd_lsm,
};
#define N_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *out)
{
	fputs("Usage: uffdguard [--help] [--version] COMMAND [ARGS]\n\n"
	      "Control over userfaultfd kernel-fault handling.\n\nCommands:\n", out);
	for (size_t i = 0; i < N_SUBCOMMANDS; i++)
		fprintf(out, "  %-10s %s\n", subcommands[i]->name, subcommands[i]->summary);
	fputs("\nRun 'uffdguard COMMAND --help' for a command's options and exit codes.\n", out);
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
	for (size_t i = 0; i < N_SUBCOMMANDS; i++) {
		if (strcmp(name, subcommands[i]->name))
			continue;
		cli_verb = subcommands[i];
		return cli_verb->run(argc - 1, argv + 1);
	}
	cli_error("unknown %s '%s'\n", name[0] == '-' ? "option" : "command", name);
	usage(stderr);
	return EXIT_USAGE;
}
