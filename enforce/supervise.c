// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "identity.h"
#include "marker.h"
#include "seccomp-filter.h"
#include "supervise.h"

/* A warning to whoever runs the supervisor, through the I/O thread. */
__attribute__((format(printf, 2, 3))) static void report(struct supervisor *s, const char *fmt,
							 ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	audit_warn(s->audit, msg);
}

int supervisor_init(struct supervisor *s, const struct supervisor_options *o, char *err,
		    size_t err_size)
{
	*s = (struct supervisor){ .policy = o->policy, .listener = -1,
				  .control = { .dirfd = -1, .inotify_fd = -1, .dir_wd = -1, .parent_wd = -1 },
				  .state = { .dirfd = -1 } };
	/* The tree may run as our user: undumpable, it can neither ptrace us
	 * nor pidfd_getfd() the listener and answer "continue" itself. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		snprintf(err, err_size, "PR_SET_DUMPABLE: %s", strerror(errno));
		return -errno;
	}
	/* Notifications name threads in our pid namespace: a /proc of another
	 * one (unshare -p without a new /proc) would lend us the credentials
	 * of whatever process has that number there. */
	char self[32];
	ssize_t len = readlink("/proc/self", self, sizeof(self) - 1);
	if (len <= 0 || (self[len] = '\0', strtol(self, NULL, 10) != getpid())) {
		snprintf(err, err_size, "/proc is not the procfs of this pid namespace, so the "
			 "callers' credentials cannot be read");
		return -ESRCH;
	}
	struct seccomp_notif_sizes sizes;
	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
		snprintf(err, err_size, "seccomp user notification unavailable: %s", strerror(errno));
		return -errno;
	}
	s->req_size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif
									  : sizeof(struct seccomp_notif);
	s->resp_size = sizes.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
			       ? sizes.seccomp_notif_resp
			       : sizeof(struct seccomp_notif_resp);
	s->req = calloc(1, s->req_size);
	s->resp = calloc(1, s->resp_size);
	if (!s->req || !s->resp) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	struct audit_options ao = { .destination = o->audit, .rate = o->audit_rate,
				    .warn = o->warn, .warn_data = o->warn_data };
	int r = audit_open(&s->audit, &ao, err, err_size);
	if (r < 0)
		return r;
	if (o->state_path) {
		char note[1024];
		r = control_state_open(&s->state, o->state_path, &s->policy, note, sizeof(note), err,
				       err_size);
		if (r < 0)
			return r;
		if (note[0] && o->warn)
			o->warn(o->warn_data, note);
	}
	if (o->control_dir)
		return control_open(&s->control, o->control_dir, &s->policy, err, err_size);
	return 0;
}

/* What control_update() did: audited, and told when it went wrong;
 * an applied change is kept in the state file. */
static void control_event(void *data, const struct audit_control *ev)
{
	struct supervisor *s = data;

	audit_control(s->audit, ev);
	if (!ev->applied) {
		s->refused++;
		report(s, "control: %s", ev->message);
		return;
	}
	if (!ev->knob[0]) /* the directory, made again */
		report(s, "control: %s", ev->message);
	if (ev->knob[0] && s->state.path) {
		char err[1024];
		if (control_state_save(&s->state, &s->policy, err, sizeof(err)) < 0)
			report(s, "%s; it will not survive a restart", err);
	}
}

int supervisor_control_fd(const struct supervisor *s)
{
	return s->control.inotify_fd;
}

void supervisor_control(struct supervisor *s)
{
	control_update(&s->control, &s->policy, control_event, s);
}

void supervisor_reload(struct supervisor *s)
{
	audit_reopen(s->audit);
	control_retry(&s->control, &s->policy, control_event, s);
}

/* What /proc tells about the calling thread. */
struct caller {
	pid_t tgid;
	long uid;
	uint64_t cap_eff;
	ino_t user_ns; /* 0: unreadable */
	char comm[64];
	char exe[PATH_MAX];
};

static void read_caller(pid_t tid, bool want_exe, struct caller *c)
{
	char path[96];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	*c = (struct caller){ .tgid = -1, .uid = -1 };
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	/* Line by line, each whole: a Groups: line of 65536 groups is some
	 * 700 KiB, and CapEff: comes after it.  Missing lines leave the
	 * caller unprivileged (cap_eff 0): the test fails closed. */
	cleanup_file FILE *f = fopen(path, "re");
	while (f && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (!strncmp(line, "Name:\t", 6))
			snprintf(c->comm, sizeof(c->comm), "%s", line + 6);
		else if (!strncmp(line, "Tgid:", 5))
			c->tgid = (pid_t)strtol(line + 5, NULL, 10);
		else if (!strncmp(line, "Uid:", 4))
			c->uid = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "CapEff:", 7))
			c->cap_eff = strtoull(line + 7, NULL, 16);
	}
	free(line);
	/* Unreadable means not initial: the test fails closed. */
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/ns/user", tid, tid);
	c->user_ns = stat(path, &st) == 0 ? st.st_ino : 0;
	if (want_exe) {
		snprintf(path, sizeof(path), "/proc/%d/exe", tid);
		ssize_t len = readlink(path, c->exe, sizeof(c->exe) - 1);
		c->exe[len > 0 ? len : 0] = '\0';
	}
}

int supervisor_handle(struct supervisor *s)
{
	struct seccomp_notif *req = s->req;
	struct seccomp_notif_resp *resp = s->resp;

	memset(req, 0, s->req_size);
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		/* ENOENT: the caller was interrupted before we got it. */
		return errno == ENOENT || errno == EINTR ? 0 : -errno;

	supervisor_control(s); /* a knob written before this call holds for it */

	struct call call;
	const char *abi = "?", *verdict_text = "", *why = "";
	struct caller c = { .tgid = -1, .uid = -1 };
	bool ours = filter_classify(&req->data, &call, &abi), privileged = false;
	bool recorded = false;
	memset(resp, 0, s->resp_size);
	resp->id = req->id;
	if (!ours) {
		/* The filter sends nothing else; should it, fail closed. */
		resp->error = -EPERM;
	} else {
		/* Asked first: a suppressed record costs no readlink. */
		recorded = audit_admit(s->audit);
		read_caller((pid_t)req->pid, recorded, &c);
		/* What we read belongs to the caller only if it is still
		 * blocked in this call (the tid may have been reused). */
		if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
			return 0;
		if (filter_is_marker(&call)) {
			resp->error = -marker_errno(ENFORCER_SUPERVISOR, &s->policy);
			verdict_text = "marker";
			why = "uffdguard status marker";
		} else {
			privileged = identity_privileged(c.cap_eff, c.user_ns);
			enum policy_reason r = policy_decide_reason(&s->policy, privileged, &call);
			enum verdict v = policy_reason_verdict(r);
			resp->error = v == VERDICT_EPERM ? -EPERM : v == VERDICT_EINVAL ? -EINVAL : 0;
			if (v == VERDICT_ALLOW)
				resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			verdict_text = verdict_name(v);
			why = policy_reason_text(r);
		}
	}
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0)
		return errno == ENOENT ? 0 : -errno; /* ENOENT: the caller went away */
	if (recorded) {
		struct audit_decision d = {
			.pid = c.tgid, .tid = (pid_t)req->pid, .uid = c.uid,
			.call = call.path == CALL_SYSCALL ? "userfaultfd" : "USERFAULTFD_IOC_NEW",
			.abi = abi, .flags = call.flags, .privileged = privileged,
			.verdict = verdict_text, .reason = why,
		};
		memcpy(d.comm, c.comm, sizeof(d.comm));
		d.exe = c.exe;
		audit_decision(s->audit, &d);
	}
	return 0;
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

int supervisor_attach(struct supervisor *s, int listener, char *err, size_t err_size)
{
	s->listener = listener;
	/* The caller sleeps until we answer: running on its CPU saves a
	 * cross-CPU wake-up each way, tens of µs in a VM. */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
	int r = audit_start(s->audit);
	if (r < 0)
		snprintf(err, err_size, "cannot start the audit thread: %s", strerror(-r));
	return r;
}

void supervisor_fini(struct supervisor *s, struct audit_stats *audit, unsigned *refused)
{
	control_close(&s->control);
	control_state_close(&s->state);
	/* Without progress for this long, the destination is stuck. */
	audit_close(s->audit, 5.0, audit);
	*refused = s->refused;
	s->audit = NULL;
	if (s->listener >= 0)
		close(s->listener);
	free(s->req);
	free(s->resp);
}
