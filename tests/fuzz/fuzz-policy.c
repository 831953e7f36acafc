// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzzer entry for the policy parsers: preset names and KNOB=VALUE.
 * Every parse either fails with a message or yields knobs in {0, 1}, and
 * the decision function answers for any flags. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	char err[256];
	struct policy p = POLICY_DEFAULT;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	int a = policy_preset(s, &p, err, sizeof(err));
	int b = policy_set_knob(&p, s, err, sizeof(err));
	if ((a != 0 && a != -22) || (b != 0 && b != -22))
		abort();
	if ((unsigned)p.unprivileged_userfaultfd > 1 ||
	    (unsigned)p.unprivileged_userfaultfd_user_mode_only > 1)
		abort();
	uint64_t flags = 0;
	memcpy(&flags, data, size < sizeof(flags) ? size : sizeof(flags));
	for (int path = 0; path < 2; path++) {
		struct call c = { .path = (enum call_path)path, .flags = flags };
		enum verdict v = policy_decide(&p, size & 1, &c);
		if (v != VERDICT_ALLOW && v != VERDICT_EPERM && v != VERDICT_EINVAL)
			abort();
	}
	free(s);
	return 0;
}
