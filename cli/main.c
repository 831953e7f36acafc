// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard: the table of verbs, and the dispatch to them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "libuffd.h"

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

/* What went to standard output must have arrived (a full disk, a closed
 * descriptor, a reader gone): else say so and fail, whatever the verb
 * concluded, so that nobody takes a cut-off report for a whole one. */
static int finish_stdout(int code, int failure)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return code;
	/* errno is fflush()'s; a write that failed before left only ferror(). */
	int err = errno;
	cli_error("standard output: %s", err ? strerror(err) : "a write failed");
	return failure;
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
		return finish_stdout(0, 1);
	}
	if (!strcmp(name, "--version")) {
		printf("uffdguard %s (libuffd %s)\n", UFFDGUARD_VERSION, libuffd_version());
		return finish_stdout(0, 1);
	}
	for (size_t i = 0; i < N_SUBCOMMANDS; i++) {
		if (strcmp(name, subcommands[i]->name))
			continue;
		cli_verb = subcommands[i];
		int code = cli_verb->run(argc - 1, argv + 1);
		return finish_stdout(code, cli_verb->exit_failure);
	}
	cli_error("unknown %s '%s'\n", name[0] == '-' ? "option" : "command", name);
	usage(stderr);
	return EXIT_USAGE;
}
