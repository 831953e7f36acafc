// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzzer entry for the option values of `uffdguard run`, parsed by the
 * command line's own parser: the first byte picks the option, the rest is
 * its value.  Each value is taken or refused with a message; a rate is at
 * most 1000000 and is the number written; the options are then checked
 * together. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run-options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = { "mode", "audit", "audit-rate", "control", "state", "ready",
				     "unknown" };
#define N_NAMES (sizeof(names) / sizeof(names[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run_options o = RUN_OPTIONS_DEFAULT;
	char err[512];

	/* Several options in a row, separated by NUL bytes, as argv holds
	 * them. */
	while (size >= 1) {
		const char *name = names[data[0] % N_NAMES];
		const uint8_t *end = memchr(data + 1, '\0', size - 1);
		size_t len = end ? (size_t)(end - data) - 1 : size - 1;
		char *value = malloc(len + 1);
		if (!value)
			return 0;
		memcpy(value, data + 1, len);
		value[len] = '\0';
		err[0] = '\0';
		int r = run_option(&o, name, value, err, sizeof(err));
		if (r != 0 && (r != -EINVAL || !err[0]))
			abort();
		if (r == 0 && !strcmp(name, "audit-rate")) {
			if (o.audit_rate > 1000000 || strtoul(value, NULL, 10) != o.audit_rate ||
			    strspn(value, "0123456789") != len)
				abort();
		}
		if (r == 0 && !strcmp(name, "unknown"))
			abort();
		if (r == 0 && !strcmp(name, "audit") &&
		    (o.audit.journal == (o.audit.path != NULL) || (o.audit.path && !*o.audit.path)))
			abort();
		free(value);
		/* What the options point to is gone: only the checks remain. */
		o.audit.path = o.audit.path ? "" : NULL;
		o.control_dir = o.control_dir ? "" : NULL;
		o.state_path = o.state_path ? "" : NULL;
		if ((unsigned)o.mode >= ENFORCER_N || (o.ready != RUN_READY_STARTED &&
						       o.ready != RUN_READY_COMMAND))
			abort();
		size -= len + 1;
		data += len + 1;
		if (end) {
			size--;
			data++;
		}
	}
	int r = run_options_check(&o, err, sizeof(err));
	if (r != 0 && r != -EINVAL)
		abort();
	if (r == 0 && o.mode != ENFORCER_SUPERVISOR &&
	    (o.audit.journal || o.audit.path || o.control_dir || o.state_path))
		abort();
	return 0;
}
