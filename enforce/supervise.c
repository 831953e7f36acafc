// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "identity.h"
#include "marker.h"
#include "seccomp-filter.h"
#include "supervise.h"

/* A warning to whoever runs the supervisor (supervisor_options.warn). */
__attribute__((format(printf, 2, 3))) static void report(struct supervisor *s, const char *fmt,
							 ...)
{
	char msg[512];
	va_list ap;

	if (!s->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->warn(s->warn_data, msg);
}

static int write_knob(struct supervisor *s, const struct policy_knob *k)
{
	char v[3] = { (char)('0' + policy_knob_get(&s->policy, k)), '\n', 0 };
	cleanup_close int fd = openat(s->control_dirfd, k->name,
				      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	return write(fd, v, 2) == 2 ? 0 : -EIO;
}

static int control_init(struct supervisor *s, const char *dir, char *err, size_t err_size)
{
	const char *stage = "mkdir";

	if (mkdir(dir, 0700) == 0)
		s->created_dir = true;
	else if (errno != EEXIST)
		goto fail;
	stage = "open";
	/* Not through a symlink: the checks below must be about DIR itself. */
	s->control_dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->control_dirfd < 0)
		goto fail;
	/* Whoever can write the knob files sets the policy. */
	struct stat st;
	stage = "owned by another user or writable by others; refusing it";
	if (fstat(s->control_dirfd, &st) < 0)
		goto fail;
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		errno = EPERM;
		goto fail;
	}
	s->control_dir = strdup(dir);
	for (size_t i = 0; i < POLICY_N_KNOBS; i++) {
		int r = write_knob(s, &policy_knobs[i]);
		if (r < 0) {
			errno = -r;
			stage = policy_knobs[i].name;
			goto fail;
		}
	}
	/* Watch after writing, so our own files raise no event. */
	stage = "inotify";
	s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->inotify_fd < 0 || inotify_add_watch(s->inotify_fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, err_size, "control directory %s: %s: %s", dir, stage, strerror(errno));
	return -errno;
}

int supervisor_init(struct supervisor *s, const struct supervisor_options *o, char *err,
		    size_t err_size)
{
	*s = (struct supervisor){ .policy = o->policy, .listener = -1, .audit_fd = -1,
				  .inotify_fd = -1, .control_dirfd = -1, .warn = o->warn,
				  .warn_data = o->warn_data };
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
	if (o->audit_path) {
		s->audit_fd = open(o->audit_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
				   0600);
		if (s->audit_fd < 0) {
			snprintf(err, err_size, "cannot open audit file %s: %s", o->audit_path,
				 strerror(errno));
			return -errno;
		}
	}
	if (o->control_dir)
		return control_init(s, o->control_dir, err, err_size);
	return 0;
}

/* Take knob k from its file, or put the value in force back into it. */
static void read_knob(struct supervisor *s, const struct policy_knob *k)
{
	char value[32] = "", assignment[128], err[256];
	cleanup_close int fd = openat(s->control_dirfd, k->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t len = fd >= 0 ? read(fd, value, sizeof(value) - 1) : -1;

	value[len > 0 ? len : 0] = '\0';
	value[strcspn(value, " \t\n")] = '\0';
	snprintf(assignment, sizeof(assignment), "%s=%s", k->name, value);
	if (policy_set_knob(&s->policy, assignment, err, sizeof(err)) < 0) {
		report(s, "control: %s; keeping %s=%d", err, k->name, policy_knob_get(&s->policy, k));
		write_knob(s, k); /* show the value in force */
	}
}

void supervisor_control(struct supervisor *s)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (s->inotify_fd < 0)
		return;
	while ((n = read(s->inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *ptr = buf; ptr < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)ptr;
			ptr += sizeof(*ev) + ev->len;
			/* Events were lost: any knob may have changed. */
			bool all = ev->mask & IN_Q_OVERFLOW;
			for (size_t i = 0; i < POLICY_N_KNOBS; i++)
				if (all || (ev->len && !strcmp(ev->name, policy_knobs[i].name)))
					read_knob(s, &policy_knobs[i]);
		}
	}
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
	char path[96], buf[4096];

	*c = (struct caller){ .tgid = -1, .uid = -1 };
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tid, tid);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "Name:\t", 6))
			snprintf(c->comm, sizeof(c->comm), "%s", line + 6);
		else if (!strncmp(line, "Tgid:", 5))
			c->tgid = (pid_t)strtol(line + 5, NULL, 10);
		else if (!strncmp(line, "Uid:", 4))
			c->uid = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "CapEff:", 7))
			c->cap_eff = strtoull(line + 7, NULL, 16);
	}
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

static void audit(struct supervisor *s, const struct seccomp_notif *req, const struct caller *c,
		  const struct call *call, const char *abi, bool privileged, const char *verdict,
		  const char *why)
{
	struct timespec ts;
	struct tm tm;
	char when[64], flags[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t off = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + off, sizeof(when) - off, ".%06ldZ", ts.tv_nsec / 1000);
	snprintf(flags, sizeof(flags), "0x%" PRIx64, (uint64_t)call->flags);

	json_object *o = json_object_new_object();
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "pid", json_object_new_int(c->tgid));
	json_object_object_add(o, "tid", json_object_new_int((int)req->pid));
	json_object_object_add(o, "uid", json_object_new_int64(c->uid));
	json_object_object_add(o, "comm", json_object_new_string(c->comm));
	json_object_object_add(o, "exe", json_object_new_string(c->exe));
	json_object_object_add(o, "call", json_object_new_string(call->path == CALL_SYSCALL
									  ? "userfaultfd"
									  : "USERFAULTFD_IOC_NEW"));
	json_object_object_add(o, "abi", json_object_new_string(abi));
	json_object_object_add(o, "flags", json_object_new_string(flags));
	json_object_object_add(o, "privileged", json_object_new_boolean(privileged));
	json_object_object_add(o, "verdict", json_object_new_string(verdict));
	json_object_object_add(o, "reason", json_object_new_string(why));

	size_t len;
	const char *text = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	char *line = malloc(len + 1);
	if (line) {
		memcpy(line, text, len);
		line[len] = '\n';
		/* One write per line: O_APPEND keeps lines whole. */
		if (write(s->audit_fd, line, len + 1) != (ssize_t)(len + 1) && !s->audit_failed) {
			report(s, "audit file: %s", strerror(errno));
			s->audit_failed = true;
		}
		free(line);
	}
	json_object_put(o);
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
	memset(resp, 0, s->resp_size);
	resp->id = req->id;
	if (!ours) {
		/* The filter sends nothing else; should it, fail closed. */
		resp->error = -EPERM;
	} else if (filter_is_marker(&call)) {
		resp->error = -marker_errno(ENFORCER_SUPERVISOR, &s->policy);
		verdict_text = "marker";
		why = "uffdguard status marker";
	} else {
		read_caller((pid_t)req->pid, s->audit_fd >= 0, &c);
		privileged = identity_privileged(c.cap_eff, c.user_ns);
		/* What we read belongs to the caller only if it is still
		 * blocked in this call (the tid may have been reused). */
		if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
			return 0;
		enum policy_reason r = policy_decide_reason(&s->policy, privileged, &call);
		enum verdict v = policy_reason_verdict(r);
		resp->error = v == VERDICT_EPERM ? -EPERM : v == VERDICT_EINVAL ? -EINVAL : 0;
		if (v == VERDICT_ALLOW)
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		verdict_text = verdict_name(v);
		why = policy_reason_text(r);
	}
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0)
		return errno == ENOENT ? 0 : -errno; /* ENOENT: the caller went away */
	if (ours && s->audit_fd >= 0) {
		if (c.tgid < 0) /* the marker: no need to decide, but say who asked */
			read_caller((pid_t)req->pid, true, &c);
		audit(s, req, &c, &call, abi, privileged, verdict_text, why);
	}
	return 0;
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

void supervisor_attach(struct supervisor *s, int listener)
{
	s->listener = listener;
	/* The caller sleeps until we answer: running on its CPU saves a
	 * cross-CPU wake-up each way, tens of µs in a VM. */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
}

void supervisor_fini(struct supervisor *s)
{
	if (s->control_dirfd >= 0) {
		for (size_t i = 0; i < POLICY_N_KNOBS; i++)
			unlinkat(s->control_dirfd, policy_knobs[i].name, 0);
		close(s->control_dirfd);
		if (s->created_dir)
			rmdir(s->control_dir);
	}
	free(s->control_dir);
	if (s->inotify_fd >= 0)
		close(s->inotify_fd);
	if (s->audit_fd >= 0)
		close(s->audit_fd);
	if (s->listener >= 0)
		close(s->listener);
	free(s->req);
	free(s->resp);
}
