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
#include "policy.h"
#include "profile.h"

#define DEFAULT_POLICY "user-mode-only"

enum {
	EXIT_FAILED = 1,
};

static const struct exit_code profile_exit_codes[] = {
	{ 0, "written" },
	{ EXIT_FAILED, "the base is unreadable or refused, or the output cannot be written "
		       "(nothing is written then)" },
	{ 0, NULL },
};

static void profile_usage(FILE *out)
{
	fputs("Usage: uffdguard profile [--policy P] [--set KNOB=V ...] [--base FILE]\n"
	      "                         [--format docker|oci] [-o FILE]\n\n"
	      "Write a seccomp profile that enforces the policy on userfaultfd(2) and on\n"
	      "ioctl(USERFAULTFD_IOC_NEW), for x86-64, x32 and i386 callers.  With --base,\n"
	      "the base profile (e.g. /usr/share/containers/seccomp.json) with its name-only\n"
	      "userfaultfd rules replaced by flag-aware ones; without, a fragment whose\n"
	      "default action is allow.\n\n",
	      out);
	cli_policy_help(out, DEFAULT_POLICY);
	fputs("      --base FILE    the profile to merge into\n"
	      "      --format F     docker (default): Docker/Podman format; a container\n"
	      "                     granted CAP_SYS_PTRACE is exempt, as in the kernel.\n"
	      "                     oci: the runtime-spec linux.seccomp object; every\n"
	      "                     container is treated as unprivileged\n"
	      "  -o, --output FILE  write FILE atomically instead of standard output; a\n"
	      "                     FILE that is a symbolic link, directory or other\n"
	      "                     non-regular file is refused\n"
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

static int profile_run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_POLICY_OPTIONS,
		{ "base", required_argument, NULL, 'b' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *base_path = NULL, *output = NULL;
	struct cli_policy po = { 0 };
	enum profile_format fmt = PROFILE_FORMAT_DOCKER;
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
			base_path = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "docker"))
				fmt = PROFILE_FORMAT_DOCKER;
			else if (!strcmp(optarg, "oci"))
				fmt = PROFILE_FORMAT_OCI;
			else
				usage_error("unknown format '%s': valid formats are docker and oci",
					    optarg);
			break;
		case 'o':
			output = optarg;
			break;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	struct policy pol = cli_policy_build(&po, DEFAULT_POLICY);

	struct json_object *prof;
	if (base_path) {
		size_t len;
		cleanup_free char *text = read_file(base_path, &len);
		struct profile_error perr;
		prof = profile_parse(text, len, &perr);
		if (!prof || profile_merge(prof, &pol, fmt, &perr) < 0)
			die(EXIT_FAILED, "%s: %s: %s", base_path, perr.where, perr.reason);
	} else {
		prof = profile_standalone(&pol, fmt);
		if (!prof)
			die(EXIT_FAILED, "out of memory");
	}
	cleanup_free char *out = profile_serialize(prof);
	json_object_put(prof);
	if (!out)
		die(EXIT_FAILED, "out of memory");
	if (output) {
		/* A temporary file in the same directory, then rename(): a
		 * reader sees the old profile or the new one, never half. */
		mode_t um = umask(0);
		umask(um);
		int r = write_file_atomic(output, out, 0666 & ~um);
		char why[ATOMIC_FILE_REFUSAL_SIZE];
		if (r < 0 && atomic_file_refusal(output, r, why, sizeof(why)))
			die(EXIT_FAILED, "%s", why);
		else if (r < 0)
			die(EXIT_FAILED, "%s: %s", output, strerror(-r));
	} else if (fputs(out, stdout) == EOF || fflush(stdout) == EOF) {
		die(EXIT_FAILED, "standard output: %s", strerror(errno));
	}
	return 0;
}

const struct subcommand cmd_profile = {
	.name = "profile",
	.summary = "a flag-aware seccomp profile for Docker, Podman, containerd, Kubernetes",
	.run = profile_run,
	.usage = profile_usage,
	.exit_codes = profile_exit_codes,
	.exit_failure = EXIT_FAILED,
};
