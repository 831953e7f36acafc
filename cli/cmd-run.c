// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard run: the 2020 series' knobs enforced for one process tree. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "marker.h"
#include "policy.h"
#include "seccomp-filter.h"
#include "supervise.h"

#define DEFAULT_POLICY "user-mode-only"

/* As env(1) and podman: 125 uffdguard failed, 126 not executable, 127 not found. */
enum {
	EXIT_RUN_FAILED = 125,
	EXIT_CANNOT_EXEC = 126,
	EXIT_NOT_FOUND = 127,
};

static const struct exit_code run_exit_codes[] = {
	{ -1, "the command's (128+N if killed by signal N)" },
	{ EXIT_RUN_FAILED, "uffdguard cannot enforce the policy (the command is then not started)" },
	{ EXIT_CANNOT_EXEC, "the command cannot be executed" },
	{ EXIT_NOT_FOUND, "the command was not found" },
	{ 0, NULL },
};

static void run_usage(FILE *out)
{
	fputs("Usage: uffdguard run [--policy P] [--set KNOB=V ...] [--mode filter|supervise]\n"
	      "                     [--audit FILE] [--control DIR] -- CMD [ARGS]\n\n"
	      "Run CMD with the userfaultfd knobs of the 2020 series \"Control over\n"
	      "userfaultfd kernel-fault handling\" enforced on it and on every process it\n"
	      "starts.  The command runs with no_new_privs set.\n\n",
	      out);
	cli_policy_help(out, DEFAULT_POLICY);
	fputs("  -m, --mode M       filter (default): a seccomp filter decides; the whole\n"
	      "                     tree counts as unprivileged, root included.\n"
	      "                     supervise: a supervisor decides each call with the\n"
	      "                     caller's CAP_SYS_PTRACE at that moment\n"
	      "  -a, --audit FILE   supervise: append one JSON line per decision\n"
	      "  -c, --control DIR  supervise: knob files in DIR; writing 0 or 1 to one\n"
	      "                     changes the policy from the next call on\n"
	      "  -h, --help         show this help\n\n"
	      "See uffdguard-run(1).\n",
	      out);
}

static void print_warning(void *data, const char *message)
{
	warn("%s", message);
}

static int send_fd(int sock, int fd)
{
	char data = 0;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u = { 0 };
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char data;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };

	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EPROTO;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The child: protect itself, hand over the listener, then become CMD.
 * Nothing here may run CMD unprotected. */
__attribute__((noreturn)) static void child_main(scmp_filter_ctx ctx, int sock,
						 const sigset_t *mask, const struct sigaction *chld,
						 char **cmd)
{
	sigaction(SIGCHLD, chld, NULL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		cli_error("PR_SET_NO_NEW_PRIVS: %s; not starting %s", strerror(errno), cmd[0]);
		_exit(EXIT_RUN_FAILED);
	}
	int r = seccomp_load(ctx);
	if (r < 0) {
		cli_error("cannot install the seccomp filter: %s; not starting %s", strerror(-r),
			  cmd[0]);
		_exit(EXIT_RUN_FAILED);
	}
	if (sock >= 0) {
		int fd = seccomp_notify_fd(ctx);
		char ack;
		if (fd < 0 || (r = send_fd(sock, fd)) < 0) {
			cli_error("cannot pass the notification fd: %s; not starting %s",
				  strerror(fd < 0 ? -fd : -r), cmd[0]);
			_exit(EXIT_RUN_FAILED);
		}
		close(fd);
		/* Start only once the supervisor holds the listener. */
		if (read(sock, &ack, 1) != 1)
			_exit(EXIT_RUN_FAILED);
		close(sock);
	}
	execvp(cmd[0], cmd);
	int e = errno;
	cli_error("cannot execute %s: %s", cmd[0], strerror(e));
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

static int exit_status(int status)
{
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* Forward signals, serve notifications and knob changes until the child
 * exits.  Returns its wait status. */
static int supervise_child(pid_t child, int sigfd, struct supervisor *sup)
{
	bool listening = sup && sup->listener >= 0;

	for (;;) {
		struct pollfd pfd[3] = { { .fd = sigfd, .events = POLLIN },
					 { .fd = listening ? sup->listener : -1, .events = POLLIN },
					 { .fd = sup ? sup->inotify_fd : -1, .events = POLLIN } };
		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_RUN_FAILED, "poll: %s", strerror(errno));
		}
		if (pfd[1].revents & POLLIN) {
			int r = supervisor_handle(sup);
			if (r < 0) {
				warn("supervisor: %s; intercepted calls now fail with ENOSYS",
				     strerror(-r));
				close(sup->listener);
				sup->listener = -1;
				listening = false;
			}
		} else if (pfd[1].revents & (POLLHUP | POLLERR)) {
			listening = false; /* no task uses the filter any more */
		}
		if (pfd[2].revents & POLLIN)
			supervisor_control(sup);
		if (!(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sigfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			int status;
			if (waitpid(child, &status, WNOHANG) == child)
				return status;
		} else if (si.ssi_code != SI_KERNEL) {
			/* A terminal's signals (SI_KERNEL) already reach the
			 * whole foreground group; kill(2)'s are forwarded. */
			kill(child, (int)si.ssi_signo);
		}
	}
}

static int run_run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_POLICY_OPTIONS,
		{ "mode", required_argument, NULL, 'm' },
		{ "audit", required_argument, NULL, 'a' },
		{ "control", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *audit_path = NULL, *control_dir = NULL;
	struct cli_policy po = { 0 };
	enum enforcer mode = ENFORCER_FILTER;
	char err[512];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:" CLI_POLICY_SHORT "m:a:c:h", opts, NULL)) != -1) {
		if (cli_policy_option(&po, c, optarg))
			continue;
		switch (c) {
		case 'm':
			for (mode = 0; mode < ENFORCER_N; mode++)
				if (!strcmp(optarg, enforcer_info(mode)->mode))
					break;
			if (mode == ENFORCER_N)
				usage_error("unknown mode '%s': valid modes are filter and supervise",
					    optarg);
			break;
		case 'a':
			audit_path = optarg;
			break;
		case 'c':
			control_dir = optarg;
			break;
		case 'h':
			cli_usage(stdout);
			return 0;
		default:
			cli_bad_option(c, argv);
		}
	}
	if (optind < 2 || strcmp(argv[optind - 1], "--"))
		usage_error(optind < argc ? "missing '--' before the command '%s'"
					  : "missing '--' and a command%s",
			    optind < argc ? argv[optind] : "");
	if (optind == argc)
		usage_error("missing the command after '--'");

	struct policy policy = cli_policy_build(&po, DEFAULT_POLICY);
	if (mode == ENFORCER_FILTER && (audit_path || control_dir))
		usage_error("--audit and --control need --mode supervise");
	/* The filter cannot see capabilities: ignore_cap_sys_ptrace=1 always. */
	if (enforcer_info(mode)->privilege == POLICY_PRIV_NOBODY)
		policy.privilege = POLICY_PRIV_NOBODY;

	scmp_filter_ctx ctx;
	if (filter_build(&policy, mode, &ctx, err, sizeof(err)) < 0)
		die(EXIT_RUN_FAILED, "cannot compile the policy: %s; not starting %s", err,
		    argv[optind]);
	struct supervisor sup;
	int sock[2] = { -1, -1 };
	if (mode == ENFORCER_SUPERVISOR) {
		struct supervisor_options so = { .policy = policy, .audit_path = audit_path,
						 .control_dir = control_dir, .warn = print_warning };
		if (supervisor_init(&sup, &so, err, sizeof(err)) < 0)
			die(EXIT_RUN_FAILED, "%s; not starting %s", err, argv[optind]);
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0)
			die(EXIT_RUN_FAILED, "socketpair: %s; not starting %s", strerror(errno),
			    argv[optind]);
	}

	/* An inherited SIG_IGN would have the kernel reap the child unseen
	 * (no SIGCHLD, no status): ours is the default, CMD gets it back. */
	struct sigaction dfl = { .sa_handler = SIG_DFL }, chld;
	sigaction(SIGCHLD, &dfl, &chld);
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	cleanup_close int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sigfd < 0)
		die(EXIT_RUN_FAILED, "signalfd: %s; not starting %s", strerror(errno), argv[optind]);

	fflush(NULL);
	pid_t child = fork();
	if (child < 0)
		die(EXIT_RUN_FAILED, "fork: %s; not starting %s", strerror(errno), argv[optind]);
	if (child == 0) {
		close(sigfd);
		if (sock[0] >= 0)
			close(sock[0]);
		child_main(ctx, sock[1], &old, &chld, argv + optind);
	}
	seccomp_release(ctx);

	if (mode == ENFORCER_SUPERVISOR) {
		close(sock[1]);
		int fd = recv_fd(sock[0]);
		if (fd < 0) {
			/* A child that failed said why; kill one that did not. */
			int status;
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != EXIT_RUN_FAILED)
				cli_error("no notification fd from the child: %s", strerror(-fd));
			supervisor_fini(&sup);
			return EXIT_RUN_FAILED;
		}
		supervisor_attach(&sup, fd);
		if (write(sock[0], "", 1) != 1)
			die(EXIT_RUN_FAILED, "cannot start the command: %s", strerror(errno));
		close(sock[0]);
	}
	int status = supervise_child(child, sigfd, mode == ENFORCER_SUPERVISOR ? &sup : NULL);
	if (mode == ENFORCER_SUPERVISOR)
		supervisor_fini(&sup);
	return exit_status(status);
}

const struct subcommand cmd_run = {
	.name = "run",
	.summary = "run a command with the userfaultfd policy enforced",
	.run = run_run,
	.usage = run_usage,
	.exit_codes = run_exit_codes,
	.exit_failure = EXIT_RUN_FAILED,
};
