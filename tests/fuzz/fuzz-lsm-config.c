// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzzer entry for the configuration file of `uffdguard lsm`: every input
 * either fails with a message naming a line, or gives scopes that the
 * loader accepts: each once, valid cgroup paths, knobs in {0, 1}. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "lsm-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lsm_scope_spec *specs = NULL;
	size_t n = 0;
	char err[512] = "";

	int r = lsm_config_parse((const char *)data, size, "f", &specs, &n, err, sizeof(err));
	if (r == -EINVAL || r == -ENOMEM) {
		if (strncmp(err, "f:", 2) && r == -EINVAL)
			abort();
		return 0;
	}
	if (r != 0 || n > LSM_MAX_SCOPES)
		abort();
	for (size_t i = 0; i < n; i++) {
		const struct lsm_scope_spec *s = &specs[i];
		if (s->cgroup[0] && cgroup_path_check(s->cgroup, err, sizeof(err)) != 0)
			abort();
		if ((unsigned)s->policy.unprivileged_userfaultfd > 1 ||
		    (unsigned)s->policy.unprivileged_userfaultfd_user_mode_only > 1 ||
		    s->policy.privilege != POLICY_PRIV_CAP_SYS_PTRACE)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(specs[j].cgroup, s->cgroup))
				abort();
	}
	free(specs);
	return 0;
}
