// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "run-options.h"

static int path_value(const char *option, const char *value, const char **out, char *err,
		      size_t err_size)
{
	if (!*value) {
		snprintf(err, err_size, "--%s needs a path", option);
		return -EINVAL;
	}
	*out = value;
	return 0;
}

int run_option(struct run_options *o, const char *name, const char *value, char *err,
	       size_t err_size)
{
	if (!strcmp(name, "mode")) {
		for (int m = 0; m < ENFORCER_N; m++) {
			if (!strcmp(value, enforcer_info((enum enforcer)m)->mode)) {
				o->mode = (enum enforcer)m;
				return 0;
			}
		}
		snprintf(err, err_size, "unknown mode '%.64s': valid modes are filter and supervise",
			 value);
		return -EINVAL;
	}
	if (!strcmp(name, "audit"))
		return audit_parse_destination(value, &o->audit, err, err_size);
	if (!strcmp(name, "audit-rate")) {
		o->audit_rate_given = true;
		return audit_parse_rate(value, &o->audit_rate, err, err_size);
	}
	if (!strcmp(name, "control"))
		return path_value(name, value, &o->control_dir, err, err_size);
	if (!strcmp(name, "state"))
		return path_value(name, value, &o->state_path, err, err_size);
	if (!strcmp(name, "ready")) {
		if (!strcmp(value, "started") || !strcmp(value, "command")) {
			o->ready = value[0] == 's' ? RUN_READY_STARTED : RUN_READY_COMMAND;
			return 0;
		}
		snprintf(err, err_size,
			 "unknown --ready '%.64s': valid values are started (uffdguard tells "
			 "systemd once the command runs) and command (the command tells it)",
			 value);
		return -EINVAL;
	}
	snprintf(err, err_size, "unknown option --%.64s", name);
	return -EINVAL;
}

int run_options_check(const struct run_options *o, char *err, size_t err_size)
{
	bool supervisor_only = o->audit.journal || o->audit.path || o->audit_rate_given ||
			       o->control_dir || o->state_path;

	if (o->mode != ENFORCER_SUPERVISOR && supervisor_only) {
		snprintf(err, err_size,
			 "--audit, --audit-rate, --control and --state need --mode supervise");
		return -EINVAL;
	}
	if (o->audit_rate_given && !o->audit.journal && !o->audit.path) {
		snprintf(err, err_size, "--audit-rate limits what --audit records: give --audit too");
		return -EINVAL;
	}
	if (o->state_path && !o->control_dir) {
		snprintf(err, err_size,
			 "--state keeps what is changed through --control: give --control too");
		return -EINVAL;
	}
	return 0;
}
