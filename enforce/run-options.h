/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The values of `uffdguard run`'s options, parsed without printing: the
 * command line and the fuzzer share this one parser.
 */
#ifndef UFFDGUARD_RUN_OPTIONS_H
#define UFFDGUARD_RUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "audit.h"
#include "marker.h"

/* When a service run under systemd (NOTIFY_SOCKET) is ready. */
enum run_ready {
	RUN_READY_STARTED, /* uffdguard says so once CMD runs under the policy */
	RUN_READY_COMMAND, /* CMD says so itself (NotifyAccess=all) */
};

struct run_options {
	enum enforcer mode;
	struct audit_destination audit; /* neither: no audit */
	unsigned audit_rate;
	bool audit_rate_given;
	const char *control_dir, *state_path; /* NULL: not given */
	enum run_ready ready;
};
#define RUN_OPTIONS_DEFAULT \
	((struct run_options){ .mode = ENFORCER_FILTER, .audit_rate = AUDIT_DEFAULT_RATE })

/* Take option `name` (its long name: "mode", "audit", "audit-rate",
 * "control", "state", "ready") with its value.  Returns 0, or -EINVAL
 * with a message saying what is valid. */
int run_option(struct run_options *o, const char *name, const char *value, char *err,
	       size_t err_size);

/* Whether the options given go together (those of the supervisor need
 * --mode supervise).  Returns 0 or -EINVAL with a message. */
int run_options_check(const struct run_options *o, char *err, size_t err_size);

#endif
