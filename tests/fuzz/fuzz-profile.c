// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzzer entry for the profile reader and merger: any input is refused
 * with a place and a reason, or merges into a profile that serialises to
 * JSON that parses again and that differs from its base only as the
 * policy asks (profile_compare).  What a runtime makes of a file
 * (profile-view.h) reads any JSON at all. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile-check.h"
#include "profile-view.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal the merge cannot avoid: among the changes compare refuses,
 * only calls the base lets through by an action of its own (a tracer, a
 * notifier, the log) that a rule of the policy would replace. */
static bool only_actions_replaced(const struct profile_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		const struct profile_change *ch = &rep->changes[i];
		bool pb = profile_outcome_permits(&ch->before), pa = profile_outcome_permits(&ch->after);
		if (pa && pb && strcmp(profile_action_name(&ch->before.action), "SCMP_ACT_ALLOW"))
			continue;
		if (ch->after.unclear || ch->call == PROFILE_CALL_IOCTL_OTHER ||
		    (pa && (!ch->asked || pb)))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const presets[] = { "allow", "user-mode-only", "deny" };
	struct profile_error e;
	char err[256];

	for (int fmt = 0; fmt < 2; fmt++) {
		for (size_t i = 0; i < 3; i++) {
			struct policy p;
			if (policy_preset(presets[i], &p, err, sizeof(err)) < 0)
				abort();
			p.cover_device = (size & 1) == 0;
			memset(&e, 0, sizeof(e));
			struct json_object *o = profile_parse((const char *)data, size, &e);
			if (!o) {
				if (!e.where[0] || !e.reason[0])
					abort();
				return 0;
			}
			struct json_object *base = profile_parse((const char *)data, size, &e);
			if (i == 0) {
				struct profile_notes notes;
				struct profile_view v;
				profile_reader_notes(base, (enum profile_reader)fmt, &notes);
				profile_view_of(base, (enum profile_reader)fmt, &v);
				(void)profile_view_enforces(&v, &p, &e);
			}
			int r = profile_merge(o, &p, (enum profile_format)fmt, &e);
			if (r == -EINVAL && (!e.where[0] || !e.reason[0]))
				abort();
			if (r != 0 && r != -EINVAL)
				abort();
			if (r == 0) {
				char *text = profile_serialize(o);
				struct json_object *again = text ? profile_parse(text, strlen(text), &e) : NULL;
				if (!again)
					abort();
				json_object_put(again);
				free(text);
				struct profile_report rep;
				memset(&e, 0, sizeof(e));
				if (profile_compare(base, o, (enum profile_format)fmt, &p, &rep, &e) != 0 &&
				    !strstr(e.reason, "in the base,") && !only_actions_replaced(&rep))
					abort();
				if (fmt == PROFILE_FORMAT_OCI) {
					struct json_object *spo =
						profile_seccompprofile(o, "fuzz", "fuzz", &e);
					if (!spo && (!e.where[0] || !e.reason[0]))
						abort();
					json_object_put(spo);
				}
			}
			json_object_put(base);
			json_object_put(o);
		}
	}
	return 0;
}
