/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What `uffdguard status` learns about the BPF LSM: whether it can work
 * here, whether the program enforces, the scopes in force, and what that
 * means for its verdict.  One call gathers, one gives the sentences.
 */
#ifndef UFFDGUARD_LSM_REPORT_H
#define UFFDGUARD_LSM_REPORT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "loader.h"

struct lsm_report {
	struct lsm_support support;
	int support_err;         /* lsm_support_check(): 0 or -errno */
	char why_not[512];
	int state_err;           /* lsm_state_read(): 0 or -errno (-EPERM: not root) */
	char state_why[512];
	struct lsm_state state;
	char cgroup[4096];       /* this process's cgroup, where status probes */
	ssize_t own_scope;       /* the scope that decides there, or -1 */
};

/* Gather (never fails: what cannot be read is said in the report). */
void lsm_report_read(struct lsm_report *r);
void lsm_report_free(struct lsm_report *r);

/* What the rest of the report knows and the BPF LSM needs: whether the
 * kernel alone (the sysctl) lets unprivileged callers create descriptors
 * without UFFD_USER_MODE_ONLY, and whether unprivileged users can open
 * /dev/userfaultfd. */
struct lsm_context {
	bool sysctl_allows_flagless;
	bool device_open;
};

enum lsm_note {
	LSM_NOTE_REASON,      /* what the program does for the verdict */
	LSM_NOTE_EXPOSED,     /* a scope where unprivileged callers can hold the kernel */
	LSM_NOTE_WARNING,
	LSM_NOTE_NOT_CHECKED,
};

/* Call note() with each sentence.  Returns true if every scope refuses a
 * flag-less USERFAULTFD_IOC_NEW to unprivileged callers (the device is
 * covered whoever can open it). */
bool lsm_report_notes(const struct lsm_report *r, const struct lsm_context *c,
		      void (*note)(enum lsm_note kind, const char *text, void *arg), void *arg);

/* A scope as JSON: its cgroup, policy and decision counts (also what
 * `uffdguard lsm show --json` prints per scope). */
json_object *lsm_scope_json(const struct lsm_scope_state *s);

/* One line for the text report, and the JSON object. */
void lsm_report_line(const struct lsm_report *r, char *buf, size_t size);
json_object *lsm_report_json(const struct lsm_report *r);

#endif
