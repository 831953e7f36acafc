// SPDX-License-Identifier: GPL-2.0-or-later
/* uffdguard run: the 2020 series' knobs enforced for one process tree. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "marker.h"
#include "policy.h"
#include "seccomp-filter.h"
#include "run-options.h"
#include "supervise.h"

#define DEFAULT_POLICY "user-mode-only"

/* As env(1) and podman run: 125 uffdguard failed (a usage error too), 126 not
 * executable, 127 not found; anything else is the command's. */
enum {
	EXIT_RUN_FAILED = 125,
	EXIT_CANNOT_EXEC = 126,
	EXIT_NOT_FOUND = 127,
};

static const struct exit_code run_exit_codes[] = {
	{ -1, "the command's (128+N if killed by signal N)" },
	{ EXIT_RUN_FAILED, "uffdguard failed before starting the command: a usage error, or it "
			   "cannot enforce the policy" },
	{ EXIT_CANNOT_EXEC, "the command cannot be executed" },
	{ EXIT_NOT_FOUND, "the command was not found" },
	{ 0, NULL },
};

static void run_usage(FILE *out)
{
	fputs("Usage: uffdguard run [--policy P] [--set KNOB=V ...] [--mode filter|supervise]\n"
	      "                     [--audit FILE|journal] [--audit-rate N] [--control DIR]\n"
	      "                     [--state FILE] [--ready started|command] -- CMD [ARGS]\n\n"
	      "Run CMD with the userfaultfd knobs of the 2020 series \"Control over\n"
	      "userfaultfd kernel-fault handling\" enforced on it and on every process it\n"
	      "starts.  The command runs with no_new_privs set.\n\n",
	      out);
	cli_policy_help(out, DEFAULT_POLICY);
	fprintf(out,
		"  -m, --mode M       filter (default): a seccomp filter decides; the whole\n"
		"                     tree counts as unprivileged, root included.\n"
		"                     supervise: a supervisor decides each call with the\n"
		"                     caller's CAP_SYS_PTRACE at that moment\n"
		"  -a, --audit DEST   supervise: record each decision, as a JSON line\n"
		"                     appended to the file DEST (a regular file of root or\n"
		"                     yours, created 0600 if missing), or in the systemd\n"
		"                     journal if DEST is \"journal\"; SIGHUP reopens the file\n"
		"  -r, --audit-rate N supervise: record at most N decisions a second (default\n"
		"                     %d, 0 for all), saying how many were suppressed\n"
		"  -c, --control DIR  supervise: knob files in DIR (a new directory, or an\n"
		"                     empty one); writing 0 or 1 to one changes the policy\n"
		"                     from the next call on\n"
		"      --state FILE   supervise: keep the knobs changed in DIR in FILE, and\n"
		"                     restore them at the next start with the same policy\n"
		"      --ready WHEN   under systemd (Type=notify): started (default), tell it\n"
		"                     once CMD runs under the policy; command, CMD tells it\n"
		"  -h, --help         show this help\n\n"
		"Signals: SIGINT, SIGTERM, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to CMD;\n"
		"SIGHUP too in filter mode, while in supervise mode it reopens the audit\n"
		"file.  See uffdguard-run(1).\n",
		AUDIT_DEFAULT_RATE);
}

/* The supervisor's I/O thread warns too: one message at a time. */
static void print_warning(void *data, const char *message)
{
	flockfile(stderr);
	warn("%s", message);
	funlockfile(stderr);
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

/* Signals passed on to CMD (SIGHUP too in filter mode). */
static const int forwarded[] = { SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2 };
/* Signals uffdguard itself must survive: a write to a closed pipe or
 * past the file size limit is an error to report, not a death. */
static const int ignored[] = { SIGPIPE, SIGXFSZ, SIGCHLD };
#define N_IGNORED (sizeof(ignored) / sizeof(ignored[0]))

/* The child: protect itself, hand over the listener, then become CMD.
 * Nothing here may run CMD unprotected.  `sock` stays open until exec:
 * the parent sees it close (ready) or reads our errno (exec failed). */
__attribute__((noreturn)) static void child_main(scmp_filter_ctx ctx, bool supervised, int sock,
						 const sigset_t *mask,
						 const struct sigaction saved[N_IGNORED],
						 char **cmd)
{
	for (size_t i = 0; i < N_IGNORED; i++)
		sigaction(ignored[i], &saved[i], NULL);
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
	if (supervised) {
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
	}
	execvp(cmd[0], cmd);
	int e = errno;
	cli_error("cannot execute %s: %s", cmd[0], strerror(e));
	(void)!send(sock, &e, sizeof(e), MSG_NOSIGNAL);
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

static int exit_status(int status)
{
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

struct runner {
	pid_t child;
	int sigfd;
	int exec_sock;            /* open until CMD was executed */
	struct supervisor *sup;   /* NULL in filter mode */
	enum run_ready ready;
	const char *status_text;  /* systemd's STATUS= */
};

/* CMD runs (its exec closed the socket): tell systemd, if it asked. */
static void started(struct runner *r)
{
	int e;
	ssize_t n = recv(r->exec_sock, &e, sizeof(e), MSG_DONTWAIT);

	if (n == 0 && r->ready == RUN_READY_STARTED)
		sd_notifyf(0, "READY=1\nSTATUS=%s", r->status_text);
	else if (n == 0)
		sd_notifyf(0, "STATUS=%s", r->status_text);
	if (n >= 0 || errno != EAGAIN) {
		close(r->exec_sock);
		r->exec_sock = -1;
	}
}

/* SIGHUP in supervise mode: reopen the audit file, as systemd expects a
 * reload to be announced (a service of Type=notify). */
static void reload(struct runner *r)
{
	bool announce = r->ready == RUN_READY_STARTED && r->exec_sock < 0;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (announce)
		sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
			   (unsigned long long)ts.tv_sec * 1000000ULL +
				   (unsigned long long)ts.tv_nsec / 1000);
	supervisor_reload(r->sup);
	if (announce)
		sd_notifyf(0, "READY=1\nSTATUS=%s", r->status_text);
}

/* Pass signals on, serve notifications and knob changes until the child
 * exits.  Returns its wait status. */
static int supervise_child(struct runner *r)
{
	struct supervisor *sup = r->sup;
	bool listening = sup && sup->listener >= 0;

	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = r->sigfd, .events = POLLIN },
			{ .fd = listening ? sup->listener : -1, .events = POLLIN },
			{ .fd = sup ? supervisor_control_fd(sup) : -1, .events = POLLIN },
			{ .fd = r->exec_sock, .events = POLLIN },
		};
		if (poll(pfd, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_RUN_FAILED, "poll: %s", strerror(errno));
		}
		if (pfd[1].revents & POLLIN) {
			int err = supervisor_handle(sup);
			if (err < 0) {
				warn("supervisor: %s; intercepted calls now fail with ENOSYS",
				     strerror(-err));
				close(sup->listener);
				sup->listener = -1;
				listening = false;
			}
		} else if (pfd[1].revents & (POLLHUP | POLLERR)) {
			listening = false; /* no task uses the filter any more */
		}
		if (pfd[2].revents & POLLIN)
			supervisor_control(sup);
		if (pfd[3].revents)
			started(r);
		if (!(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			int status;
			if (waitpid(r->child, &status, WNOHANG) == r->child)
				return status;
		} else if (si.ssi_signo == SIGHUP && sup) {
			reload(r);
		} else if (si.ssi_code != SI_KERNEL) {
			/* A terminal's signals (SI_KERNEL) already reach the
			 * whole foreground group; kill(2)'s are passed on. */
			kill(r->child, (int)si.ssi_signo);
		}
	}
}

/* The last word of a supervisor whose audit or control lost something. */
static void final_report(const struct audit_stats *st, unsigned rate, unsigned refused)
{
	if (st->suppressed)
		warn("audit: %llu records suppressed by the rate limit of %u a second "
		     "(--audit-rate)",
		     (unsigned long long)st->suppressed, rate);
	if (st->lost)
		warn("audit: %llu records lost%s%s", (unsigned long long)st->lost,
		     st->last_error ? ": " : " (the destination did not keep up)",
		     st->last_error ? strerror(st->last_error) : "");
	if (refused)
		warn("control: %u change%s could not be applied (each was reported as it came)",
		     refused, refused == 1 ? "" : "s");
}

/* The supervisor once made: a failure before CMD runs takes back what it
 * made (the knob files, the control directory) before exiting. */
static struct supervisor *made_sup;

__attribute__((noreturn, format(printf, 1, 2))) static void fail_start(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (made_sup) {
		struct audit_stats st;
		unsigned refused;
		supervisor_fini(made_sup, &st, &refused);
	}
	die(EXIT_RUN_FAILED, "%s", msg);
}

static int run_run(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_POLICY_OPTIONS,
		{ "mode", required_argument, NULL, 'm' },
		{ "audit", required_argument, NULL, 'a' },
		{ "audit-rate", required_argument, NULL, 'r' },
		{ "control", required_argument, NULL, 'c' },
		{ "state", required_argument, NULL, 'S' },
		{ "ready", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run_options ro = RUN_OPTIONS_DEFAULT;
	struct cli_policy po = { 0 };
	char err[1024];
	int c, index;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:" CLI_POLICY_SHORT "m:a:r:c:h", opts, &index)) !=
	       -1) {
		if (cli_policy_option(&po, c, optarg))
			continue;
		if (c == 'h') {
			cli_usage(stdout);
			return 0;
		}
		const struct option *o = opts;
		while (o->name && o->val != c)
			o++;
		if (!o->name || c == ':' || c == '?')
			cli_bad_option(c, argv);
		if (run_option(&ro, o->name, optarg, err, sizeof(err)) < 0)
			usage_error("%s", err);
	}
	if (optind < 2 || strcmp(argv[optind - 1], "--"))
		usage_error(optind < argc ? "missing '--' before the command '%s'"
					  : "missing '--' and a command%s",
			    optind < argc ? argv[optind] : "");
	if (optind == argc)
		usage_error("missing the command after '--'");

	bool exemption_asked = cli_sets_ask_exemption(po.sets, po.n_sets);
	struct policy policy = cli_policy_build(&po, DEFAULT_POLICY);
	if (run_options_check(&ro, err, sizeof(err)) < 0)
		usage_error("%s", err);
	enum enforcer mode = ro.mode;
	bool supervised = mode == ENFORCER_SUPERVISOR;
	/* The filter cannot see capabilities: ignore_cap_sys_ptrace=1 always. */
	if (enforcer_info(mode)->privilege == POLICY_PRIV_NOBODY) {
		if (exemption_asked)
			usage_error("--set ignore_cap_sys_ptrace=0: the filter cannot see "
				    "capabilities, so it holds callers with CAP_SYS_PTRACE to the "
				    "policy too; use --mode supervise, which exempts them at the call");
		policy.privilege = POLICY_PRIV_NOBODY;
	}

	struct supervisor sup;
	if (supervised) {
		struct supervisor_options so = {
			.policy = policy, .audit = ro.audit, .audit_rate = ro.audit_rate,
			.control_dir = ro.control_dir, .state_path = ro.state_path,
			.warn = print_warning,
		};
		if (supervisor_init(&sup, &so, err, sizeof(err)) < 0)
			die(EXIT_RUN_FAILED, "%s; not starting %s", err, argv[optind]);
		made_sup = &sup;
		policy = sup.policy; /* with the knobs of the state file */
	}
	scmp_filter_ctx ctx;
	if (filter_build(&policy, mode, &ctx, err, sizeof(err)) < 0)
		fail_start("cannot compile the policy: %s; not starting %s", err, argv[optind]);
	int sock[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0)
		fail_start("socketpair: %s; not starting %s", strerror(errno), argv[optind]);

	/* An inherited SIG_IGN of SIGCHLD would have the kernel reap the
	 * child unseen (no SIGCHLD, no status): ours is the default, CMD gets
	 * what it had.  SIGPIPE and SIGXFSZ are ignored here, not in CMD. */
	struct sigaction saved[N_IGNORED];
	for (size_t i = 0; i < N_IGNORED; i++) {
		struct sigaction sa = { .sa_handler = ignored[i] == SIGCHLD ? SIG_DFL : SIG_IGN };
		sigaction(ignored[i], &sa, &saved[i]);
	}
	sigset_t mask, old;
	sigemptyset(&mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&mask, forwarded[i]);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	cleanup_close int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sigfd < 0)
		fail_start("signalfd: %s; not starting %s", strerror(errno), argv[optind]);

	fflush(NULL);
	pid_t child = fork();
	if (child < 0)
		fail_start("fork: %s; not starting %s", strerror(errno), argv[optind]);
	if (child == 0) {
		close(sigfd);
		close(sock[0]);
		child_main(ctx, supervised, sock[1], &old, saved, argv + optind);
	}
	seccomp_release(ctx);
	close(sock[1]);

	char status_text[256];
	snprintf(status_text, sizeof(status_text), "%s: policy %s",
		 supervised ? "supervising" : "filtering", policy_name(&policy));
	struct runner r = { .child = child, .sigfd = sigfd, .exec_sock = sock[0],
			    .sup = supervised ? &sup : NULL, .ready = ro.ready,
			    .status_text = status_text };
	if (supervised) {
		int fd = recv_fd(sock[0]);
		if (fd < 0) {
			/* A child that failed said why; kill one that did not. */
			int status;
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != EXIT_RUN_FAILED)
				cli_error("no notification fd from the child: %s", strerror(-fd));
			struct audit_stats st;
			unsigned refused;
			supervisor_fini(&sup, &st, &refused);
			return EXIT_RUN_FAILED;
		}
		if (supervisor_attach(&sup, fd, err, sizeof(err)) < 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			fail_start("%s; not starting %s", err, argv[optind]);
		}
		if (write(sock[0], "", 1) != 1) {
			int e = errno;
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			fail_start("cannot start the command: %s", strerror(e));
		}
		made_sup = NULL; /* CMD runs: the knob files are live until it ends */
	}
	int status = supervise_child(&r);
	if (r.exec_sock >= 0)
		close(r.exec_sock);
	if (supervised) {
		struct audit_stats st;
		unsigned refused;
		supervisor_fini(&sup, &st, &refused);
		final_report(&st, ro.audit_rate, refused);
	}
	return exit_status(status);
}

const struct subcommand cmd_run = {
	.name = "run",
	.summary = "run a command with the userfaultfd policy enforced",
	.run = run_run,
	.usage = run_usage,
	.exit_codes = run_exit_codes,
	.exit_failure = EXIT_RUN_FAILED,
	.exit_usage = EXIT_RUN_FAILED,
};
