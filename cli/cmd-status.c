// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uffdguard status: can an unprivileged process on this machine hold the
 * kernel inside a system call with userfaultfd, and why.  The verb only:
 * status/ gathers the facts (facts.c, probe.c), concludes (assess.c) and
 * writes them down (render-text.c, render-json.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "assess.h"
#include "atomic-file.h"
#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "facts.h"
#include "render.h"

/* The exit code is the exposure. */
enum {
	EXIT_PROTECTED = 0,
	EXIT_EXPOSED = 1,
	EXIT_UNAVAILABLE = 3,
	EXIT_UNDETERMINED = 4,
};

static const struct exit_code status_exit_codes[] = {
	{ EXIT_PROTECTED, "protected" },
	{ EXIT_EXPOSED, "exposed" },
	{ EXIT_UNAVAILABLE, "userfaultfd unavailable" },
	{ EXIT_UNDETERMINED, "undetermined (the check was incomplete, or uffdguard failed)" },
	{ 0, NULL },
};

#define DEFAULT_HOLD_MS 50

static int exit_code(enum exposure e)
{
	static const int codes[EXPOSURE_N] = {
		[EXPOSURE_PROTECTED] = EXIT_PROTECTED,
		[EXPOSURE_EXPOSED] = EXIT_EXPOSED,
		[EXPOSURE_UNAVAILABLE] = EXIT_UNAVAILABLE,
		[EXPOSURE_UNDETERMINED] = EXIT_UNDETERMINED,
	};
	return codes[e];
}

static void status_usage(FILE *out)
{
	fputs("Usage: uffdguard status [--json | --quiet] [--prometheus FILE] [--accept-partial]\n"
	      "                        [--color WHEN] [--hold MS] [--probe-timeout MS]\n"
	      "                        [--device PATH]\n\n"
	      "Tell whether an unprivileged process on this machine can hold the kernel\n"
	      "inside a system call with userfaultfd, and why: the kernel, the sysctl,\n"
	      "/dev/userfaultfd, the seccomp state of this process, a live probe in\n"
	      "forked unprivileged children, and a verdict; when exposed, the command\n"
	      "that fixes each reason.\n\n"
	      "Options:\n"
	      "  --json            the same facts as JSON (schema in uffdguard-status(1))\n"
	      "  -q, --quiet       print nothing; the exit code is the verdict\n"
	      "  --prometheus FILE also write the verdict and its facts to FILE, atomically,\n"
	      "                    in the Prometheus text format (node_exporter's textfile\n"
	      "                    collector: a FILE ending in .prom in its directory)\n"
	      "  --accept-partial  when part of the check could not be made (not root, no\n"
	      "                    /proc...), give the verdict of what could be checked\n"
	      "                    instead of 'undetermined'\n"
	      "  --color WHEN      colour the verdict: auto (default: on a terminal, unless\n"
	      "                    NO_COLOR is set), always or never\n"
	      "  --hold MS         how long the stall probe holds each fault (default 50)\n"
	      "  --device PATH     check and probe PATH instead of /dev/userfaultfd (testing)\n"
	      "  --probe-timeout MS  deadline for each probe child (default 1000 + 10 x hold)\n"
	      "  -h, --help        show this help\n",
	      out);
}

static int parse_ms(const char *opt, const char *s, int min, int max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error("%s: '%s' is not a number of milliseconds from %d to %d", opt,
			    s, min, max);
	return (int)v;
}

/* https://no-color.org: a non-empty NO_COLOR turns colour off; so does a
 * dumb terminal, and anything but a terminal. */
static bool use_colour(const char *when)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");

	if (!strcmp(when, "always"))
		return true;
	if (!strcmp(when, "never") || (no && *no) || (term && !strcmp(term, "dumb")))
		return false;
	return isatty(STDOUT_FILENO);
}

static int status_run(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_HOLD, OPT_DEVICE, OPT_TIMEOUT, OPT_PARTIAL, OPT_COLOR,
	       OPT_PROMETHEUS };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "probe-timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "accept-partial", no_argument, NULL, OPT_PARTIAL },
		{ "color", required_argument, NULL, OPT_COLOR },
		{ "prometheus", required_argument, NULL, OPT_PROMETHEUS },
		{ 0 },
	};
	struct probe_options po = { .device_path = LIBUFFD_DEVICE_PATH, .hold_ms = DEFAULT_HOLD_MS };
	bool json = false, quiet = false, testing_device = false, accept_partial = false;
	const char *color = "auto", *prometheus = NULL;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hq", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cli_usage(stdout);
			return 0;
		case OPT_JSON:
			json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_HOLD:
			po.hold_ms = parse_ms("--hold", optarg, 1, 10000);
			break;
		case OPT_DEVICE:
			if (!*optarg || strlen(optarg) >= sizeof(((struct libuffd_open_report *)0)->device_path))
				usage_error("--device: the path must be 1 to 107 bytes long");
			po.device_path = optarg;
			testing_device = true;
			break;
		case OPT_TIMEOUT:
			po.timeout_ms = parse_ms("--probe-timeout", optarg, 1, 600000);
			break;
		case OPT_PROMETHEUS:
			if (!*optarg)
				usage_error("--prometheus: the file name is empty");
			prometheus = optarg;
			break;
		case OPT_PARTIAL:
			accept_partial = true;
			break;
		case OPT_COLOR:
			if (strcmp(optarg, "auto") && strcmp(optarg, "always") &&
			    strcmp(optarg, "never"))
				usage_error("--color: '%s' is not auto, always or never", optarg);
			color = optarg;
			break;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (json && quiet)
		usage_error("--json and --quiet exclude each other");
	/* Refuse a link or a non-regular file before the probe, not after. */
	char why[ATOMIC_FILE_REFUSAL_SIZE];
	int check = prometheus ? atomic_file_check(prometheus) : 0;
	if (check < 0 && check != -ENOENT && atomic_file_refusal(prometheus, check, why, sizeof(why)))
		die(EXIT_UNDETERMINED, "--prometheus: %s", why);

	struct status_facts f = { .device_testing = testing_device };
	int r = status_gather(&f, &po);
	if (r < 0)
		die(EXIT_UNDETERMINED, "%s%s", f.probe_result < 0 ? "the probe could not start: " : "",
		    strerror(-r));
	struct assessment a;
	if (status_assess(&f, accept_partial, &a) < 0)
		die(EXIT_UNDETERMINED, "out of memory");
	int code = exit_code(a.exposure);
	cleanup_free char *text = json    ? status_render_json(&f, &a, code, UFFDGUARD_VERSION)
				  : quiet ? NULL
					  : status_render_text(&f, &a, code, use_colour(color));
	if (!quiet && !text)
		die(EXIT_UNDETERMINED, "out of memory");
	if (prometheus) {
		/* Written whole or not at all: the collector may read it at
		 * any moment.  Readable by node_exporter's user. */
		cleanup_free char *metrics =
			status_render_prometheus(&f, &a, code, UFFDGUARD_VERSION);
		int w = metrics ? write_file_atomic(prometheus, metrics, 0644) : -ENOMEM;
		if (w < 0 && atomic_file_refusal(prometheus, w, why, sizeof(why)))
			die(EXIT_UNDETERMINED, "--prometheus: %s", why);
		if (w < 0)
			die(EXIT_UNDETERMINED, "--prometheus: %s: %s", prometheus, strerror(-w));
	}
	if (text && (fputs(text, stdout) == EOF || fflush(stdout) == EOF))
		die(EXIT_UNDETERMINED, "standard output: %s", strerror(errno));
	assessment_fini(&a);
	status_facts_fini(&f);
	return code;
}

const struct subcommand cmd_status = {
	.name = "status",
	.summary = "what userfaultfd this machine allows, and why",
	.run = status_run,
	.usage = status_usage,
	.exit_codes = status_exit_codes,
	.exit_failure = EXIT_UNDETERMINED,
};
