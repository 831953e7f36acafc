// SPDX-License-Identifier: GPL-2.0-or-later
/* The command line: --help, --version, and usage errors (exit 2). */
#include "cli-run.h"
#include "harness.h"

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

TEST(version)
{
	struct cli_result *o = RUN("--version");
	ASSERT_EQ(o->status, 0);
	ASSERT_TRUE(!strncmp(o->out, "uffdguard ", 10));
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
