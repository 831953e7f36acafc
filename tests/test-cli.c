// SPDX-License-Identifier: GPL-2.0-or-later
/* The command line: --help, --version, and usage errors (exit 2). */
#include <fcntl.h>
#include <sys/wait.h>

#include "harness.h"

struct outcome {
	int status;
	char out[8192];
	char err[8192];
};

static void slurp(int fd, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;
	while (used < size - 1 && (n = read(fd, buf + used, size - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	close(fd);
}

/* Run $UFFDGUARD with args; stdout and stderr captured (small outputs). */
static struct outcome *uffdguard(const char *const *args)
{
	static struct outcome o;
	const char *bin = getenv("UFFDGUARD");
	int out[2], err[2];

	if (!bin)
		FAIL("UFFDGUARD is not set (run through meson test)");
	ASSERT_SYS(pipe(out));
	ASSERT_SYS(pipe(err));
	pid_t pid = ASSERT_SYS(fork());
	if (pid == 0) {
		const char *argv[16] = { bin };
		for (int i = 0; args[i] && i < 14; i++)
			argv[i + 1] = args[i];
		dup2(out[1], 1);
		dup2(err[1], 2);
		execv(bin, (char **)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	slurp(out[0], o.out, sizeof(o.out));
	slurp(err[0], o.err, sizeof(o.err));
	ASSERT_SYS(waitpid(pid, &o.status, 0));
	ASSERT_TRUE(WIFEXITED(o.status));
	o.status = WEXITSTATUS(o.status);
	return &o;
}

#define RUN(...) uffdguard((const char *const[]){ __VA_ARGS__, NULL })

TEST(help_lists_the_commands_on_stdout)
{
	struct outcome *o = RUN("--help");
	ASSERT_EQ(o->status, 0);
	ASSERT_TRUE(strstr(o->out, "Usage: uffdguard"));
	ASSERT_TRUE(strstr(o->out, "  status "));
	ASSERT_EQ(o->err[0], '\0');
}

TEST(version)
{
	struct outcome *o = RUN("--version");
	ASSERT_EQ(o->status, 0);
	ASSERT_TRUE(!strncmp(o->out, "uffdguard ", 10));
}

TEST(no_command_is_a_usage_error)
{
	struct outcome *o = uffdguard((const char *const[]){ NULL });
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "Usage: uffdguard"));
	ASSERT_EQ(o->out[0], '\0');
}

TEST(unknown_command_and_option_are_usage_errors)
{
	struct outcome *o = RUN("frobnicate");
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "unknown command 'frobnicate'"));
	ASSERT_TRUE(strstr(o->err, "Usage: uffdguard"));
	o = RUN("--frobnicate");
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "unknown option '--frobnicate'"));
}

TEST(subcommand_unknown_option_is_a_usage_error)
{
	struct outcome *o = RUN("status", "--frobnicate");
	ASSERT_EQ(o->status, 2);
	ASSERT_TRUE(strstr(o->err, "Usage: uffdguard status"));
	ASSERT_EQ(o->out[0], '\0');
	o = RUN("status", "--help");
	ASSERT_EQ(o->status, 0);
	ASSERT_TRUE(strstr(o->out, "Usage: uffdguard status"));
}
