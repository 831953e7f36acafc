/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef UFFDGUARD_CLI_H
#define UFFDGUARD_CLI_H

#include <stdio.h>

/* Exit codes shared by every subcommand. */
#define EXIT_USAGE 2

struct subcommand {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	void (*usage)(FILE *out);
};

extern const struct subcommand cmd_status;
extern const struct subcommand cmd_run;
extern const struct subcommand cmd_sysctl;
extern const struct subcommand cmd_profile;

/* die() and warn() exist only in the command line tool, never in libuffd. */
__attribute__((noreturn, format(printf, 2, 3))) void die(int code, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);

/* Print "uffdguard NAME: MSG", the subcommand's usage, and exit 2. */
__attribute__((noreturn, format(printf, 2, 3)))
void usage_error(const struct subcommand *cmd, const char *fmt, ...);

#endif
