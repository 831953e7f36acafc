/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The live knobs of `uffdguard run --mode supervise`: a control directory
 * with one file per knob (written like a sysctl), and a state file that
 * keeps the changes made there across restarts.
 *
 * Rules, so that root never writes where it should not: the directory is
 * created by uffdguard, or is an empty one it can prove is its user's and
 * on an ordinary file system (never procfs, sysfs, cgroupfs...); the knob
 * files are created there once and never written again, so a file an
 * administrator writes is never rewritten; a value is read only when it
 * is complete (an empty file is a write in progress); every change, and
 * every refusal, is reported.
 */
#ifndef UFFDGUARD_CONTROL_H
#define UFFDGUARD_CONTROL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "audit.h"
#include "policy.h"

struct control {
	char *path;     /* as given */
	int dirfd;      /* -1: none (not asked for, or lost) */
	int inotify_fd; /* -1: none */
	int dir_wd;     /* the watch of the directory's files */
	int parent_wd;  /* the watch of its parent: removed or moved away */
	char name[NAME_MAX + 1]; /* its name in the parent */
	bool created_dir;
};

/* Create (or take) the directory and a file per knob holding its value
 * in p.  Returns 0, or -errno with a message that says what to do. */
int control_open(struct control *c, const char *path, const struct policy *p, char *err,
		 size_t err_size);

/* How control_update() tells what it did: a change applied, a value
 * refused, what happened to the directory. */
typedef void control_report_fn(void *data, const struct audit_control *event);

/* Take the pending events: apply each complete, valid value to *p (which
 * holds the values in force), report each change and each refusal; if
 * the directory was removed, moved or unmounted, create it again at its
 * path (same rules as control_open) and report what happened. */
void control_update(struct control *c, struct policy *p, control_report_fn *report, void *data);

/* If the directory was lost and could not be made again, try again (on
 * SIGHUP), reporting as control_update() does. */
void control_retry(struct control *c, struct policy *p, control_report_fn *report, void *data);

/* Remove the knob files, and the directory if it was created. */
void control_close(struct control *c);

/* The content of a knob file: "0" or "1" with optional blanks around.
 * Returns 0 with *value set, 1 for an empty or blank file (no value yet:
 * a writer truncated it and has not written), -EINVAL otherwise. */
int control_parse_value(const char *text, size_t len, int *value);

/* The state file (--state FILE): the knobs in force, and the policy of
 * the command line they were changed from.  Restored at start only when
 * that policy is the same, so that a changed command line wins. */
struct control_state {
	char *path;
	int dirfd; /* the directory holding it, -1: none */
	char name[NAME_MAX + 1];
	struct policy base; /* the command line's */
};

/* Open the state file's directory (trusted path rules) and read the file
 * if it exists.  *p is the command line's policy on entry; on return,
 * the restored one.  note (may be empty) says what was restored or why
 * not.  Returns 0, or -errno with a message (an unreadable or malformed
 * file is an error: uffdguard does not guess a policy). */
int control_state_open(struct control_state *st, const char *path, struct policy *p,
		       char *note, size_t note_size, char *err, size_t err_size);

/* Replace the file (atomically, fsync'd) with the knobs of p.  Returns 0
 * or -errno with a message. */
int control_state_save(const struct control_state *st, const struct policy *p, char *err,
		       size_t err_size);

void control_state_close(struct control_state *st);

/* The state file's text (at most 4096 bytes): '#' comments, a line
 * "base KNOB=V ..." and one line KNOB=V per knob, every knob given in
 * each.  Returns 0 with *base and *knobs, or -EINVAL with a message. */
int control_state_parse(const char *text, size_t len, struct policy *base, struct policy *knobs,
			char *err, size_t err_size);

#endif
