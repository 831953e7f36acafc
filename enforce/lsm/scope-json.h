/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A scope of the BPF LSM as JSON: its cgroup, policy and decision counts,
 * as `uffdguard lsm show --json` and `uffdguard status --json` give it. */
#ifndef UFFDGUARD_LSM_SCOPE_JSON_H
#define UFFDGUARD_LSM_SCOPE_JSON_H

#include <json-c/json.h>

#include "loader.h"

json_object *lsm_scope_json(const struct lsm_scope_state *s);

#endif
