// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "audit.h"
#include "cleanup.h"
#include "trusted-path.h"

/* Records between the supervisor and the writer: a burst of a few
 * thousand decisions (64 threads calling at once) fits. */
#define QUEUE_SIZE 4096
#define INTERVAL_NS 1000000000LL

/* MESSAGE_ID of each kind of journal entry (systemd-id128 new). */
#define MSGID_DECISION "5d0eb4ef78684b5eb6fcfb1f026a97cd"
#define MSGID_SUPPRESSED "0209ed1956914267adcf8acc0066ec6d"
#define MSGID_LOST "06b7be26c3e543c78029073452020c51"
#define MSGID_CONTROL "1cf158e496be4ed9bff09a23c0ddb97a"
#define MSGID_START "bc348af5769c407aadddc219e6190e3b"

int audit_parse_destination(const char *value, struct audit_destination *d, char *err,
			    size_t err_size)
{
	if (!*value) {
		snprintf(err, err_size,
			 "--audit needs a value: \"journal\" or the path of a file");
		return -EINVAL;
	}
	*d = (struct audit_destination){ .journal = !strcmp(value, "journal"),
					 .path = strcmp(value, "journal") ? value : NULL };
	return 0;
}

int audit_parse_rate(const char *value, unsigned *rate, char *err, size_t err_size)
{
	unsigned long v = 0;
	const char *p = value;

	for (; *p >= '0' && *p <= '9' && v <= 1000000; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (p == value || *p || v > 1000000) {
		snprintf(err, err_size,
			 "--audit-rate '%.32s%s': give a number of records a second, from 0 (no "
			 "limit) to 1000000",
			 value, strlen(value) > 32 ? "..." : "");
		return -EINVAL;
	}
	*rate = (unsigned)v;
	return 0;
}

enum record_type { REC_DECISION, REC_CONTROL, REC_SUPPRESSED, REC_LOST, REC_WARNING };

struct record {
	enum record_type type;
	struct timespec when; /* CLOCK_REALTIME */
	union {
		struct audit_decision decision; /* exe: ours, malloc'ed */
		struct audit_control control;
		uint64_t count; /* suppressed, lost */
		char warning[512];
	};
};

struct audit {
	struct audit_options o;
	bool sink; /* a destination: file or journal */
	char *path;
	int fd;
	bool losing; /* the last write failed (warned) */

	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* to the writer */
	pthread_cond_t idle;  /* to audit_close() */
	/* Under lock: */
	struct record *queue;
	size_t head, count;
	bool reopen, stop, exited;
	size_t reopen_after; /* records queued before the reopen, to the old file */
	uint64_t progress;
	long long window_start; /* the rate limit's current second, ns */
	unsigned window_count;
	uint64_t window_suppressed;
	uint64_t lost_unreported;
	struct audit_stats stats;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * INTERVAL_NS + ts.tv_nsec;
}

/* Open the audit file by the rules of audit_open(). */
static int open_file(const char *path, int *out, char *err, size_t err_size)
{
	const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	char name[NAME_MAX + 1];
	cleanup_close int dirfd = -1;
	struct stat st;
	int fd, r;

	r = trusted_path_resolve(path, &dirfd, name, err, err_size);
	if (r < 0)
		return r;
	r = trusted_ordinary_fs(dirfd, path, err, err_size);
	if (r < 0)
		return r;
	/* Look first: opening a fifo or a device is already an action. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		r = trusted_regular_file(path, &st, err, err_size);
		if (r < 0)
			return r;
		fd = openat(dirfd, name, flags);
	} else if (errno == ENOENT) {
		fd = openat(dirfd, name, flags | O_CREAT | O_EXCL, 0600);
	} else {
		fd = -1;
	}
	if (fd < 0) {
		r = -errno;
		snprintf(err, err_size, "%s: %s", path, strerror(-r));
		return r;
	}
	/* What was opened, not what was looked at. */
	if (fstat(fd, &st) < 0 || (r = trusted_regular_file(path, &st, err, err_size)) < 0 ||
	    (r = trusted_ordinary_fs(fd, path, err, err_size)) < 0) {
		if (!r) {
			r = -errno;
			snprintf(err, err_size, "%s: %s", path, strerror(-r));
		}
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

int audit_open(struct audit **out, const struct audit_options *o, char *err, size_t err_size)
{
	struct audit *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a || !(a->queue = calloc(QUEUE_SIZE, sizeof(*a->queue)))) {
		free(a);
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	a->o = *o;
	a->fd = -1;
	a->sink = o->destination.journal || o->destination.path;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->wake, &ca);
	pthread_cond_init(&a->idle, &ca);
	pthread_condattr_destroy(&ca);
	*out = a;

	if (o->destination.path) {
		char why[1024];
		a->path = strdup(o->destination.path);
		int r = a->path ? open_file(a->path, &a->fd, why, sizeof(why)) : -ENOMEM;
		if (r < 0) {
			snprintf(err, err_size, "cannot open the audit file: %s",
				 r == -ENOMEM ? "out of memory" : why);
			return r;
		}
	} else if (o->destination.journal) {
		int r = sd_journal_send("MESSAGE=uffdguard run: supervising; its audit records go "
					"to the journal",
					"MESSAGE_ID=" MSGID_START, "PRIORITY=%i", LOG_INFO,
					"SYSLOG_IDENTIFIER=uffdguard", "UFFDGUARD_TYPE=start", NULL);
		if (r < 0) {
			snprintf(err, err_size,
				 "the systemd journal does not answer (%s): is systemd-journald "
				 "running?  Give --audit FILE otherwise",
				 strerror(-r));
			return r;
		}
	}
	return 0;
}

static void iso_time(const struct timespec *ts, char *buf, size_t size)
{
	struct tm tm;

	gmtime_r(&ts->tv_sec, &tm);
	size_t off = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + off, size - off, ".%06ldZ", ts->tv_nsec / 1000);
}

static const char *type_name(enum record_type t)
{
	switch (t) {
	case REC_DECISION:
		return "decision";
	case REC_CONTROL:
		return "control";
	case REC_SUPPRESSED:
		return "suppressed";
	case REC_LOST:
		return "lost";
	default:
		return "warning";
	}
}

static const char *lost_reason(struct audit *a, int last_error)
{
	return last_error ? strerror(last_error)
			  : "the destination did not keep up and the queue was full";
}

/* Write a whole record to the file, or nothing: a short write (a full
 * disk, a file size limit) is cut back to where the record began. */
static int write_whole(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		int e = n < 0 ? errno : EIO;
		if (done) {
			off_t end = lseek(fd, 0, SEEK_END);
			if (end >= (off_t)done && ftruncate(fd, end - (off_t)done) < 0)
				e = errno;
		}
		return -e;
	}
	return 0;
}

static int emit_file(struct audit *a, const struct record *r, int last_error)
{
	char when[64], flags[24];
	json_object *o = json_object_new_object();

	iso_time(&r->when, when, sizeof(when));
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "type", json_object_new_string(type_name(r->type)));
	if (r->type == REC_DECISION) {
		const struct audit_decision *d = &r->decision;
		snprintf(flags, sizeof(flags), "0x%" PRIx64, d->flags);
		json_object_object_add(o, "pid", json_object_new_int(d->pid));
		json_object_object_add(o, "tid", json_object_new_int(d->tid));
		json_object_object_add(o, "uid", json_object_new_int64(d->uid));
		json_object_object_add(o, "comm", json_object_new_string(d->comm));
		json_object_object_add(o, "exe", json_object_new_string(d->exe));
		json_object_object_add(o, "call", json_object_new_string(d->call));
		json_object_object_add(o, "abi", json_object_new_string(d->abi));
		json_object_object_add(o, "flags", json_object_new_string(flags));
		json_object_object_add(o, "privileged", json_object_new_boolean(d->privileged));
		json_object_object_add(o, "verdict", json_object_new_string(d->verdict));
		json_object_object_add(o, "reason", json_object_new_string(d->reason));
	} else if (r->type == REC_CONTROL) {
		const struct audit_control *c = &r->control;
		json_object_object_add(o, "knob", c->knob[0] ? json_object_new_string(c->knob)
							     : NULL);
		json_object_object_add(o, "value", json_object_new_string(c->value));
		json_object_object_add(o, "applied", json_object_new_boolean(c->applied));
		json_object_object_add(o, "message", json_object_new_string(c->message));
	} else {
		json_object_object_add(o, "count", json_object_new_int64((int64_t)r->count));
		if (r->type == REC_SUPPRESSED)
			json_object_object_add(o, "rate", json_object_new_int64(a->o.rate));
		else
			json_object_object_add(o, "reason",
					       json_object_new_string(lost_reason(a, last_error)));
	}
	size_t len;
	const char *text = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	char *line = malloc(len + 1);
	int ret = -ENOMEM;
	if (line) {
		memcpy(line, text, len);
		line[len] = '\n';
		ret = write_whole(a->fd, line, len + 1);
		free(line);
	}
	json_object_put(o);
	return ret;
}

static int emit_journal(struct audit *a, const struct record *r, int last_error)
{
	char when[64];

	iso_time(&r->when, when, sizeof(when));
	switch (r->type) {
	case REC_DECISION: {
		const struct audit_decision *d = &r->decision;
		int prio = !strcmp(d->verdict, "allow")	 ? LOG_INFO
			   : !strcmp(d->verdict, "marker") ? LOG_DEBUG
							   : LOG_NOTICE;
		return sd_journal_send(
			"MESSAGE=%s(flags 0x%" PRIx64 ") by pid %d (%s), uid %ld: %s: %s", d->call,
			d->flags, d->pid, d->comm, d->uid, d->verdict, d->reason,
			"MESSAGE_ID=" MSGID_DECISION, "PRIORITY=%i", prio,
			"SYSLOG_IDENTIFIER=uffdguard", "UFFDGUARD_TYPE=decision", "UFFDGUARD_TIME=%s",
			when, "UFFDGUARD_PID=%d", d->pid, "UFFDGUARD_TID=%d", d->tid,
			"UFFDGUARD_UID=%ld", d->uid, "UFFDGUARD_COMM=%s", d->comm, "UFFDGUARD_EXE=%s",
			d->exe, "UFFDGUARD_CALL=%s", d->call, "UFFDGUARD_ABI=%s", d->abi,
			"UFFDGUARD_FLAGS=0x%" PRIx64, d->flags, "UFFDGUARD_PRIVILEGED=%d",
			d->privileged, "UFFDGUARD_VERDICT=%s", d->verdict, "UFFDGUARD_REASON=%s",
			d->reason, NULL);
	}
	case REC_CONTROL: {
		const struct audit_control *c = &r->control;
		return sd_journal_send("MESSAGE=control: %s", c->message,
				       "MESSAGE_ID=" MSGID_CONTROL, "PRIORITY=%i",
				       c->applied ? LOG_NOTICE : LOG_WARNING,
				       "SYSLOG_IDENTIFIER=uffdguard", "UFFDGUARD_TYPE=control",
				       "UFFDGUARD_TIME=%s", when, "UFFDGUARD_KNOB=%s", c->knob,
				       "UFFDGUARD_VALUE=%s", c->value, "UFFDGUARD_APPLIED=%d",
				       c->applied, NULL);
	}
	case REC_SUPPRESSED:
		return sd_journal_send("MESSAGE=%" PRIu64 " audit records suppressed by the rate "
				       "limit of %u a second",
				       r->count, a->o.rate, "MESSAGE_ID=" MSGID_SUPPRESSED,
				       "PRIORITY=%i", LOG_WARNING, "SYSLOG_IDENTIFIER=uffdguard",
				       "UFFDGUARD_TYPE=suppressed", "UFFDGUARD_TIME=%s", when,
				       "UFFDGUARD_COUNT=%" PRIu64, r->count, "UFFDGUARD_RATE=%u",
				       a->o.rate, NULL);
	default:
		return sd_journal_send("MESSAGE=%" PRIu64 " audit records lost: %s", r->count,
				       lost_reason(a, last_error), "MESSAGE_ID=" MSGID_LOST,
				       "PRIORITY=%i", LOG_WARNING, "SYSLOG_IDENTIFIER=uffdguard",
				       "UFFDGUARD_TYPE=lost", "UFFDGUARD_TIME=%s", when,
				       "UFFDGUARD_COUNT=%" PRIu64, r->count, NULL);
	}
}

__attribute__((format(printf, 2, 3))) static void warnf(struct audit *a, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!a->o.warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	a->o.warn(a->o.warn_data, msg);
}

static const char *dest_name(struct audit *a)
{
	return a->path ? a->path : "the journal";
}

static int emit(struct audit *a, const struct record *r, int last_error)
{
	return a->path ? emit_file(a, r, last_error) : emit_journal(a, r, last_error);
}

/* Write one record and account for it.  The writer thread only. */
static void write_record(struct audit *a, const struct record *r)
{
	pthread_mutex_lock(&a->lock);
	uint64_t lost = a->lost_unreported;
	int last_error = a->stats.last_error;
	pthread_mutex_unlock(&a->lock);

	/* First the loss, as soon as anything can be written again. */
	if (lost) {
		struct record l = { .type = REC_LOST, .count = lost };
		clock_gettime(CLOCK_REALTIME, &l.when);
		if (emit(a, &l, last_error) == 0) {
			warnf(a, "audit: %" PRIu64 " records lost (%s)", lost,
			      lost_reason(a, last_error));
			pthread_mutex_lock(&a->lock);
			a->lost_unreported -= lost;
			a->stats.last_error = 0;
			pthread_mutex_unlock(&a->lock);
			a->losing = false;
		}
	}
	int ret = emit(a, r, last_error);
	pthread_mutex_lock(&a->lock);
	if (ret < 0) {
		a->stats.lost++;
		a->lost_unreported++;
		a->stats.last_error = -ret;
	} else {
		a->stats.written++;
	}
	pthread_mutex_unlock(&a->lock);
	if (ret < 0 && !a->losing) {
		a->losing = true;
		warnf(a, "audit: cannot write to %s: %s; records are lost (and counted) until "
			 "writing works again",
		      dest_name(a), strerror(-ret));
	}
}

static void reopen_file(struct audit *a)
{
	char why[1024];
	int fd;

	if (!a->path)
		return;
	int r = open_file(a->path, &fd, why, sizeof(why));
	if (r < 0) {
		warnf(a, "audit: cannot open the audit file again (%s); writing on to the file "
			 "already open",
		      why);
		return;
	}
	close(a->fd);
	a->fd = fd;
}

/* Queue a record; false if the queue is full (the record counts as
 * lost).  Under a->lock. */
static bool push_locked(struct audit *a, const struct record *r)
{
	if (a->count == QUEUE_SIZE) {
		a->stats.lost++;
		a->lost_unreported++;
		return false;
	}
	a->queue[(a->head + a->count) % QUEUE_SIZE] = *r;
	a->count++;
	pthread_cond_signal(&a->wake);
	return true;
}

/* The rate limit's second is over: say what it suppressed.  Under lock. */
static void close_window_locked(struct audit *a)
{
	if (!a->window_suppressed)
		return;
	struct record r = { .type = REC_SUPPRESSED, .count = a->window_suppressed };
	clock_gettime(CLOCK_REALTIME, &r.when);
	a->window_suppressed = 0;
	push_locked(a, &r);
}

static void *writer(void *arg)
{
	struct audit *a = arg;
	struct record *r = malloc(sizeof(*r));

	pthread_mutex_lock(&a->lock);
	for (;;) {
		if (a->reopen && !a->reopen_after) {
			a->reopen = false;
			pthread_mutex_unlock(&a->lock);
			reopen_file(a);
			pthread_mutex_lock(&a->lock);
			continue;
		}
		if (a->count && r) {
			*r = a->queue[a->head];
			a->head = (a->head + 1) % QUEUE_SIZE;
			a->count--;
			if (a->reopen_after)
				a->reopen_after--;
			pthread_mutex_unlock(&a->lock);
			if (r->type == REC_WARNING)
				warnf(a, "%s", r->warning);
			else
				write_record(a, r);
			if (r->type == REC_DECISION)
				free((char *)r->decision.exe);
			pthread_mutex_lock(&a->lock);
			a->progress++;
			pthread_cond_broadcast(&a->idle);
			continue;
		}
		if (a->window_suppressed && (a->stop || now_ns() >= a->window_start + INTERVAL_NS)) {
			close_window_locked(a);
			continue;
		}
		if (a->stop)
			break;
		if (a->window_suppressed) {
			long long end = a->window_start + INTERVAL_NS;
			struct timespec ts = { end / INTERVAL_NS, end % INTERVAL_NS };
			pthread_cond_timedwait(&a->wake, &a->lock, &ts);
		} else {
			pthread_cond_wait(&a->wake, &a->lock);
		}
	}
	/* A loss at the very end is still reported in the trail. */
	uint64_t lost = a->lost_unreported;
	int last_error = a->stats.last_error;
	pthread_mutex_unlock(&a->lock);
	if (lost && a->sink) {
		struct record last = { .type = REC_LOST, .count = lost };
		clock_gettime(CLOCK_REALTIME, &last.when);
		if (emit(a, &last, last_error) == 0)
			warnf(a, "audit: %" PRIu64 " records lost (%s)", lost,
			      lost_reason(a, last_error));
	}
	free(r);
	pthread_mutex_lock(&a->lock);
	a->exited = true;
	pthread_cond_broadcast(&a->idle);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int audit_start(struct audit *a)
{
	sigset_t all, old;

	/* Signals are the supervisor's to take (signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = pthread_create(&a->thread, NULL, writer, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	a->started = true;
	return 0;
}

bool audit_admit(struct audit *a)
{
	bool ok = true;

	if (!a->sink)
		return false;
	if (!a->o.rate)
		return true;
	long long now = now_ns();
	pthread_mutex_lock(&a->lock);
	if (now - a->window_start >= INTERVAL_NS) {
		close_window_locked(a);
		a->window_start = now;
		a->window_count = 0;
	}
	if (a->window_count < a->o.rate) {
		a->window_count++;
	} else {
		ok = false;
		a->window_suppressed++;
		a->stats.suppressed++;
		pthread_cond_signal(&a->wake); /* to say so when the second is over */
	}
	pthread_mutex_unlock(&a->lock);
	return ok;
}

static void submit(struct audit *a, const struct record *r)
{
	pthread_mutex_lock(&a->lock);
	push_locked(a, r);
	pthread_mutex_unlock(&a->lock);
}

void audit_decision(struct audit *a, const struct audit_decision *d)
{
	struct record r = { .type = REC_DECISION, .decision = *d };

	if (!a->sink)
		return;
	clock_gettime(CLOCK_REALTIME, &r.when);
	r.decision.exe = strdup(d->exe ? d->exe : "");
	pthread_mutex_lock(&a->lock);
	if (!r.decision.exe || !push_locked(a, &r))
		free((char *)r.decision.exe);
	pthread_mutex_unlock(&a->lock);
}

void audit_control(struct audit *a, const struct audit_control *c)
{
	struct record r = { .type = REC_CONTROL, .control = *c };

	if (!a->sink)
		return;
	clock_gettime(CLOCK_REALTIME, &r.when);
	submit(a, &r);
}

void audit_warn(struct audit *a, const char *message)
{
	struct record r = { .type = REC_WARNING };

	/* Before the thread or after it, the caller's thread is the only one. */
	if (!a->started) {
		warnf(a, "%s", message);
		return;
	}
	snprintf(r.warning, sizeof(r.warning), "%s", message);
	submit(a, &r);
}

void audit_reopen(struct audit *a)
{
	if (!a->path)
		return;
	pthread_mutex_lock(&a->lock);
	a->reopen = true;
	a->reopen_after = a->count;
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
}

void audit_close(struct audit *a, double stall_s, struct audit_stats *stats)
{
	if (stats)
		*stats = (struct audit_stats){ 0 };
	if (!a)
		return;
	if (a->started) {
		bool abandoned = false;
		pthread_mutex_lock(&a->lock);
		a->stop = true;
		pthread_cond_signal(&a->wake);
		uint64_t seen = a->progress;
		long long deadline = now_ns() + (long long)(stall_s * 1e9);
		/* As long as the writer makes progress. */
		while (!a->exited) {
			struct timespec d = { deadline / INTERVAL_NS, deadline % INTERVAL_NS };
			pthread_cond_timedwait(&a->idle, &a->lock, &d);
			if (a->progress != seen) {
				seen = a->progress;
				deadline = now_ns() + (long long)(stall_s * 1e9);
			} else if (!a->exited && now_ns() >= deadline) {
				/* Stuck in I/O: what is left is lost. */
				a->stats.lost += a->count;
				a->count = 0;
				abandoned = true;
				break;
			}
		}
		if (stats)
			*stats = a->stats;
		pthread_mutex_unlock(&a->lock);
		if (abandoned) {
			warnf(a, "audit: %s took no record for %.0f s; uffdguard stops waiting for it",
			      dest_name(a), stall_s);
			return; /* the thread may still use a: the process is ending */
		}
		pthread_join(a->thread, NULL);
	} else if (stats) {
		*stats = a->stats;
	}
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->wake);
	pthread_cond_destroy(&a->idle);
	free(a->queue);
	free(a->path);
	free(a);
}
