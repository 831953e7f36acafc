// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard status: what this kernel offers. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "libuffd.h"

static void status_usage(FILE *out)
{
	fputs("Usage: uffdguard status [--help]\n\n"
	      "Report the kernel's userfaultfd support: the system call, the\n"
	      "UFFD_USER_MODE_ONLY flag, and the features and ioctls it offers.\n", out);
}

static int status_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			status_usage(stdout);
			return 0;
		default:
			usage_error(&cmd_status, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error(&cmd_status, "unexpected argument '%s'", argv[optind]);

	struct utsname u;
	uname(&u);
	printf("kernel:            %s %s\n", u.sysname, u.release);

	struct libuffd_open_report rep;
	char why[512];
	int fd = libuffd_open(&(struct libuffd_open_opts){ .flags = LIBUFFD_OPEN_SYSCALL_ONLY }, &rep);
	if (fd == -ENOSYS) {
		libuffd_explain_open(fd, &rep, why, sizeof(why));
		printf("userfaultfd(2):    absent (ENOSYS): %s\n", why);
		return 1;
	}
	printf("userfaultfd(2):    present\n");
	if (fd == -EINVAL) {
		printf("user-mode-only:    not supported by this kernel (EINVAL)\n");
		return 1;
	}
	if (fd < 0) {
		libuffd_explain_open(fd, &rep, why, sizeof(why));
		printf("user-mode-only:    could not check: %s\n", why);
		return 1;
	}
	close(fd);
	printf("user-mode-only:    supported (UFFD_USER_MODE_ONLY accepted)\n");

	struct libuffd_api api;
	int ret = libuffd_kernel_api(&api);
	if (ret < 0) {
		printf("features:          unknown (UFFDIO_API failed: %s)\n", strerror(-ret));
		return 1;
	}
	char names[1024];
	libuffd_format_features(api.features, " ", names, sizeof(names));
	printf("features:          %s\n", names);
	libuffd_format_ioctls(api.ioctls, " ", names, sizeof(names));
	printf("ioctls:            %s\n", names);
	return 0;
}

const struct subcommand cmd_status = {
	.name = "status",
	.summary = "what userfaultfd this machine allows, and why",
	.run = status_run,
	.usage = status_usage,
};
