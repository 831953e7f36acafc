// SPDX-License-Identifier: GPL-2.0-or-later
/* The command line: --help, --version, and usage errors (exit 2; run's
 * exit 125, as env(1)'s, apart from its command's own codes). */
#include <fcntl.h>
#include <unistd.h>

#include "cli-run.h"
#include "harness.h"
#include "libuffd.h"

static struct cli_result result;

#define RUN(...) (CLI(WHO_ROOT, &result, __VA_ARGS__), &result)

TEST(help_lists_the_commands_on_stdout)
{
	struct cli_result *o = RUN("--help");
	ASSERT_EQ(o->status, 0);
	ASSERT_TRUE(strstr(o->out, "Usage: uffdguard"));
	ASSERT_TRUE(strstr(o->out, "  status "));
	ASSERT_EQ(o->err[0], '\0');
}

/* One version everywhere: the tool's and the library's (asked at run
 * time) come from meson.build (the man pages': tests/check-man). */
TEST(version)
{
	struct cli_result *o = RUN("--version");
	char tool[32], lib[32];
	ASSERT_EQ(o->status, 0);
	ASSERT_EQ(sscanf(o->out, "uffdguard %31s (libuffd %31[^)])", tool, lib), 2);
	ASSERT_STREQ(lib, tool);
	ASSERT_STREQ(libuffd_version(), tool); /* the library this test runs with */
}

TEST(no_command_is_a_usage_error)
{
	struct cli_result *o = &result;
	cli_run(WHO_ROOT, (const char *const[]){ NULL }, o);
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "Usage: uffdguard"));
	ASSERT_EQ(o->out[0], '\0');
}

TEST(unknown_command_and_option_are_usage_errors)
{
	struct cli_result *o = RUN("frobnicate");
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "unknown command 'frobnicate'"));
	ASSERT_TRUE(strstr(o->err, "Usage: uffdguard"));
	o = RUN("--frobnicate");
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "unknown option '--frobnicate'"));
}

TEST(subcommand_unknown_option_is_a_usage_error)
{
	struct cli_result *o = RUN("status", "--frobnicate");
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "Usage: uffdguard status"));
	ASSERT_EQ(o->out[0], '\0');
	o = RUN("status", "--help");
	ASSERT_EQ(o->status, 0);
	ASSERT_TRUE(strstr(o->out, "Usage: uffdguard status"));
}

/* --help and -h, after every verb and every action of one, show its help
 * on standard output and do nothing else. */
TEST(every_verb_and_action_takes_help)
{
	static const char *const cases[][2] = {
		{ "status", NULL },   { "run", NULL },	      { "sysctl", NULL },
		{ "sysctl", "show" }, { "sysctl", "apply" },  { "profile", NULL },
		{ "lsm", NULL },      { "lsm", "apply" },     { "lsm", "show" },
		{ "lsm", "remove" },  { "lsm", "audit" },
	};
	static const char *const flags[] = { "--help", "-h" };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (size_t f = 0; f < 2; f++) {
			const char *args[4] = { cases[i][0], cases[i][1] ? cases[i][1] : flags[f],
						cases[i][1] ? flags[f] : NULL, NULL };
			char want[64];
			cli_run(WHO_ROOT, args, &result);
			snprintf(want, sizeof(want), "Usage: uffdguard %s", cases[i][0]);
			if (result.status != 0 || !strstr(result.out, want) || result.err[0])
				FAIL("uffdguard %s %s %s: exit %d, stdout \"%.60s\", stderr \"%s\"",
				     args[0], args[1], args[2] ? args[2] : "", result.status,
				     result.out, result.err);
		}
	}
}

/* run's own usage errors exit 125, so that the command's 2 stays its own. */
TEST(run_usage_errors_exit_125_apart_from_the_commands_2)
{
	struct cli_result *o = RUN("run", "--", "sh", "-c", "exit 2");
	ASSERT_EQ(o->status, 2);
	ASSERT_EQ(o->err[0], '\0');
	static const char *const bad[][5] = {
		{ "run", NULL },
		{ "run", "--bogus", "--", "true" },
		{ "run", "true", NULL },
		{ "run", "--policy", "permissive", "--" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cli_run(WHO_ROOT, bad[i], &result);
		if (result.status != 125)
			FAIL("uffdguard %s %s: exit %d, want 125", bad[i][0], bad[i][1] ? bad[i][1] : "",
			     result.status);
		ASSERT_CONTAINS(result.err, "Usage: uffdguard run");
	}
}

/* Every verb has the same shape: --policy at most once and --set any
 * number of times (run and profile), one wording for a missing argument,
 * "uffdguard VERB: " before every message, and its exit codes in --help. */
TEST(policy_given_twice_is_a_usage_error_in_every_verb)
{
	static const char *const verbs[][3] = { { "run", "--", "true" }, { "profile", "--allow-by-default", NULL } };

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		struct cli_result *o = RUN(verbs[i][0], "--policy", "deny", "-p", "allow", verbs[i][1],
					   verbs[i][2]);
		ASSERT_EQ(o->status, strcmp(verbs[i][0], "run") ? 2 : 125);
		ASSERT_TRUE(strstr(o->err, "--policy given twice ('deny', then 'allow')"));
		ASSERT_TRUE(!strncmp(o->err, "uffdguard ", 10) &&
			    !strncmp(o->err + 10, verbs[i][0], strlen(verbs[i][0])));
		ASSERT_EQ(o->out[0], '\0');
		/* --set repeats, in order: the last one stands. */
		o = RUN(verbs[i][0], "-s", "cover_device=0", "--set", "cover_device=1", "-s",
			"unprivileged_userfaultfd=0", verbs[i][1], verbs[i][2]);
		ASSERT_EQ(o->status, 0);
	}
}

TEST(missing_arguments_read_the_same_in_every_verb)
{
	static const char *const cases[][3] = {
		{ "run", "--policy", "--policy" },   { "run", "-m", "-m" },
		{ "profile", "--set", "--set" },     { "profile", "-o", "-o" },
		{ "status", "--hold", "--hold" },    { "sysctl", "apply", "--assume-kernel" },
		{ "lsm", "apply", "--cgroup" },      { "lsm", "apply", "-s" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[128];
		struct cli_result *o = RUN(cases[i][0], cases[i][1],
					   strcmp(cases[i][1], cases[i][2]) ? cases[i][2] : NULL);
		snprintf(want, sizeof(want), "uffdguard %s: option '%s' needs an argument\n\nUsage: ",
			 cases[i][0], cases[i][2]);
		ASSERT_EQ(o->status, strcmp(cases[i][0], "run") ? 2 : 125);
		if (strncmp(o->err, want, strlen(want)))
			FAIL("%s %s: stderr is \"%s\", want it to start \"%s\"", cases[i][0],
			     cases[i][1], o->err, want);
	}
}

TEST(every_verb_lists_its_exit_codes_in_its_help)
{
	static const char *const verbs[] = { "status", "run", "sysctl", "profile", "lsm" };

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		struct cli_result *o = RUN(verbs[i], "--help");
		ASSERT_EQ(o->status, 0);
		const char *e = strstr(o->out, "\nExit status: ");
		ASSERT_TRUE(e != NULL);
		char text[2048]; /* as one line: --help wraps it */
		snprintf(text, sizeof(text), "%s", e + 1);
		for (char *c = text; *c; c++)
			*c = *c == '\n' ? ' ' : *c;
		/* run's usage errors are 125, as env(1)'s. */
		ASSERT_CONTAINS(text, strcmp(verbs[i], "run") ? " 2 usage error"
							      : " 125 uffdguard failed before starting "
								"the command: a usage error");
		ASSERT_EQ(o->out[strlen(o->out) - 2], '.');
	}
}

/* Standard output that cannot be written (a full disk, a closed
 * descriptor) is an error with a message, never a silent verdict. */
static void stdout_to_full(void)
{
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 1) < 0)
		_exit(126);
}

static void stdout_closed(void)
{
	close(1);
}

TEST(reports_that_cannot_be_written_fail_with_a_message)
{
	static const struct {
		const char *args[8];
		int code; /* the verb's "uffdguard itself failed" */
	} reports[] = {
		{ { "status", "--device", "/nonexistent/userfaultfd", "--hold", "1", NULL }, 4 },
		{ { "status", "--json", "--device", "/nonexistent/userfaultfd", "--hold", "1", NULL },
		  4 },
		{ { "sysctl", "show", NULL }, 1 },
		{ { "--version", NULL }, 1 },
		{ { "status", "--help", NULL }, 4 },
	};
	void (*ways[])(void) = { stdout_to_full, stdout_closed };
	struct cli_result r;

	for (size_t w = 0; w < 2; w++) {
		for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++) {
			cli_pre_exec = ways[w];
			cli_run(WHO_ROOT, reports[i].args, &r);
			cli_pre_exec = NULL;
			if (r.status != reports[i].code)
				FAIL("uffdguard %s %s with stdout %s: exit %d, want %d (stderr: %s)",
				     reports[i].args[0], reports[i].args[1] ? reports[i].args[1] : "",
				     w ? "closed" : "on /dev/full", r.status, reports[i].code, r.err);
			ASSERT_CONTAINS(r.err, "standard output: ");
		}
	}
}
