// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdint.h>

#include "scope-json.h"

json_object *lsm_scope_json(const struct lsm_scope_state *s)
{
	json_object *o = json_object_new_object(), *p = json_object_new_object();
	uint64_t allow = 0, eperm = 0, einval = 0;

	json_object_object_add(o, "scope", json_object_new_string(s->cgroup[0] ? "cgroup" : "host"));
	json_object_object_add(o, "cgroup", s->cgroup[0] ? json_object_new_string(s->cgroup) : NULL);
	json_object_object_add(o, "cgroup_id", s->cgroup[0] && s->cgroup_id
		? json_object_new_int64((int64_t)s->cgroup_id) : NULL);
	json_object_object_add(p, "name", json_object_new_string(policy_name(&s->policy)));
	for (size_t i = 0; i < POLICY_N_KNOBS; i++)
		json_object_object_add(p, policy_knobs[i].name,
				       json_object_new_int(policy_knob_get(&s->policy, &policy_knobs[i])
							   ? 1 : 0));
	json_object_object_add(o, "policy", p);
	json_object *by = json_object_new_object();
	for (int k = 0; k < LSM_N_REASONS; k++) {
		int e = lsm_reason_errno((enum lsm_reason)k);
		*(e == EPERM ? &eperm : e == EINVAL ? &einval : &allow) += s->counts[k];
		json_object_object_add(by, lsm_reason_key((enum lsm_reason)k),
				       json_object_new_int64((int64_t)s->counts[k]));
	}
	json_object *d = json_object_new_object();
	json_object_object_add(d, "allow", json_object_new_int64((int64_t)allow));
	json_object_object_add(d, "eperm", json_object_new_int64((int64_t)eperm));
	json_object_object_add(d, "einval", json_object_new_int64((int64_t)einval));
	json_object_object_add(d, "by_reason", by);
	json_object_object_add(o, "decisions", d);
	return o;
}
