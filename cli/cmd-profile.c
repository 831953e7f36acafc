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

static void profile_usage(FILE *out)
{
	fputs("Usage: uffdguard profile [--policy P | --set KNOB=V ...] [--base FILE]\n"
	      "                         [--format docker|oci] [-o FILE]\n\n"
	      "Write a seccomp profile that enforces the policy on userfaultfd(2) and on\n"
	      "ioctl(USERFAULTFD_IOC_NEW), for x86-64, x32 and i386 callers.  With --base,\n"
	      "the base profile (e.g. /usr/share/containers/seccomp.json) with its name-only\n"
	      "userfaultfd rules replaced by flag-aware ones; without, a fragment whose\n"
	      "default action is allow.\n\n"
	      "  --policy P        allow, user-mode-only (default) or deny (or 1, 2, 0)\n"
	      "  --set KNOB=V      unprivileged_userfaultfd=0|1,\n"
	      "                    unprivileged_userfaultfd_user_mode_only=0|1, cover_device=0|1\n"
	      "  --base FILE       the profile to merge into\n"
	      "  --format F        docker (default): Docker/Podman format; a container granted\n"
	      "                    CAP_SYS_PTRACE is exempt, as in the kernel.  oci: the\n"
	      "                    runtime-spec linux.seccomp object; every container is\n"
	      "                    treated as unprivileged\n"
	      "  -o, --output FILE write FILE atomically instead of standard output; a\n"
	      "                    FILE that is a symbolic link, directory or other\n"
	      "                    non-regular file is refused\n", out);
}

static char *read_file(const char *path, size_t *len)
{
	cleanup_file FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		die(1, "%s: %s", path, strerror(errno));
	for (;;) {
		if (n + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap);
			if (!nb)
				die(1, "%s: out of memory", path);
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
		die(1, "%s: %s", path, strerror(errno));
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Write to a temporary file in the same directory, then rename(): a
 * reader sees the old profile or the new one, never half of one. */
static int profile_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "policy", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },
		{ "base", required_argument, NULL, 'b' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	struct policy pol;
	char err[512];
	const char *base_path = NULL, *output = NULL, *preset = NULL;
	enum profile_format fmt = PROFILE_FORMAT_DOCKER;
	int c, nsets = 0;
	cleanup_free const char **sets = calloc((size_t)argc, sizeof(*sets));

	if (!sets)
		die(1, "out of memory");
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			profile_usage(stdout);
			return 0;
		case 'p':
			if (preset)
				usage_error(&cmd_profile, "--policy given twice");
			preset = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'b':
			base_path = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "docker"))
				fmt = PROFILE_FORMAT_DOCKER;
			else if (!strcmp(optarg, "oci"))
				fmt = PROFILE_FORMAT_OCI;
			else
				usage_error(&cmd_profile, "unknown format '%s' (docker or oci)", optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case ':':
			usage_error(&cmd_profile, "option '%s' needs a value", argv[optind - 1]);
		default:
			usage_error(&cmd_profile, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error(&cmd_profile, "unexpected argument '%s'", argv[optind]);

	if (policy_build(preset ? preset : "user-mode-only", sets, (size_t)nsets, &pol, err,
			 sizeof(err)) < 0)
		usage_error(&cmd_profile, "%s", err);

	struct json_object *prof;
	if (base_path) {
		size_t len;
		cleanup_free char *text = read_file(base_path, &len);
		struct profile_error perr;
		prof = profile_parse(text, len, &perr);
		if (!prof || profile_merge(prof, &pol, fmt, &perr) < 0)
			die(1, "%s: %s: %s", base_path, perr.where, perr.reason);
	} else {
		prof = profile_standalone(&pol, fmt);
		if (!prof)
			die(1, "out of memory");
	}
	cleanup_free char *out = profile_serialize(prof);
	json_object_put(prof);
	if (!out)
		die(1, "out of memory");
	if (output) {
		mode_t um = umask(0);
		umask(um);
		int r = write_file_atomic(output, out, 0666 & ~um);
		char why[ATOMIC_FILE_REFUSAL_SIZE];
		if (r < 0 && atomic_file_refusal(output, r, why, sizeof(why)))
			die(1, "%s", why);
		else if (r < 0)
			die(1, "%s: %s", output, strerror(-r));
	} else if (fputs(out, stdout) == EOF || fflush(stdout) == EOF) {
		die(1, "standard output: %s", strerror(errno));
	}
	return 0;
}

const struct subcommand cmd_profile = {
	.name = "profile",
	.summary = "a flag-aware seccomp profile for Docker, Podman, containerd, Kubernetes",
	.run = profile_run,
	.usage = profile_usage,
};
