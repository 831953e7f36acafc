/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The audit trail of the supervisor: one record per decision and per
 * change of the live knobs, to a file (one JSON object a line) or to the
 * systemd journal (structured fields).
 *
 * A decision never waits on audit I/O: the supervisor only copies a
 * record into a bounded queue; a thread of its own writes it.  Output is
 * bounded by a rate limit (records per second, as the kernel's audit and
 * printk bound theirs) with a record saying how many were suppressed; a
 * record is written whole or not at all; records that could not be
 * queued or written are counted and reported (a "lost" record as soon as
 * writing works again, a warning, and the counts at audit_close()).
 */
#ifndef UFFDGUARD_AUDIT_H
#define UFFDGUARD_AUDIT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define AUDIT_DEFAULT_RATE 100 /* decisions recorded per second */

/* The value of --audit: "journal", or the path of a file. */
struct audit_destination {
	bool journal;
	const char *path; /* the file; NULL for the journal */
};
/* Returns 0, or -EINVAL with a message (an empty value). */
int audit_parse_destination(const char *value, struct audit_destination *d, char *err,
			    size_t err_size);

/* The value of --audit-rate: decimal records per second, 0 for no limit,
 * at most 1000000.  Returns 0, or -EINVAL with a message. */
int audit_parse_rate(const char *value, unsigned *rate, char *err, size_t err_size);

/* Called once for each problem worth an administrator's attention, from
 * the supervisor's thread or the audit thread: it must be thread-safe. */
typedef void audit_warn_fn(void *data, const char *message);

struct audit_options {
	struct audit_destination destination;
	unsigned rate; /* decisions per second, 0: no limit */
	audit_warn_fn *warn;
	void *warn_data;
};

struct audit_decision {
	pid_t pid, tid;
	long uid;
	char comm[64];
	const char *exe; /* copied by audit_decision() */
	const char *call, *abi; /* static strings */
	uint64_t flags;
	bool privileged;
	const char *verdict, *reason; /* static strings */
};

/* A change written to the control directory, or what happened to it. */
struct audit_control {
	char knob[48];     /* empty: about the directory itself */
	char value[40];    /* as written, printable */
	bool applied;
	char message[256]; /* a sentence */
};

struct audit;

/* Open the destination (a file with the rules of trusted_path_resolve()
 * and trusted_regular_file(), on an ordinary file system, created 0600 if
 * missing; the journal only if it answers).  The thread starts with
 * audit_start().  Returns 0 or -errno with a message. */
int audit_open(struct audit **a, const struct audit_options *o, char *err, size_t err_size);

/* Start the writing thread (after any fork(): the caller's signal mask,
 * all blocked, is the thread's).  Returns 0 or -errno. */
int audit_start(struct audit *a);

/* Whether a decision made now is to be recorded (the rate limit counts
 * it); if not, it is counted as suppressed.  Cheap: ask before gathering
 * what the record holds. */
bool audit_admit(struct audit *a);

/* Queue a record; never blocks on I/O.  A full queue counts it as lost. */
void audit_decision(struct audit *a, const struct audit_decision *d);
void audit_control(struct audit *a, const struct audit_control *c);

/* Hand a warning to the writing thread, which passes it to o->warn: the
 * supervisor's thread never writes to a terminal or a pipe that may
 * block.  Before audit_start(), o->warn is called at once. */
void audit_warn(struct audit *a, const char *message);

/* Close the file and open the path again (rotation, on SIGHUP): records
 * queued before go to the old file, those after to the new one.  If the path
 * cannot be opened, writing goes on to the file already open, with a
 * warning.  Asynchronous; no effect on the journal. */
void audit_reopen(struct audit *a);

struct audit_stats {
	uint64_t written, suppressed, lost;
	int last_error; /* errno of the last failed write, 0 if none */
};

/* Write what is queued, waiting as long as the writer makes progress
 * (records queued after `stall_s` seconds without progress count as
 * lost), then stop the thread and close; the final counts in *stats
 * (may be NULL).  NULL is fine for a. */
void audit_close(struct audit *a, double stall_s, struct audit_stats *stats);

#endif
