/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One input of lsm_decide() and its answer, as the BPF program of
 * test-lsm-decide receives it in its context. */
#ifndef UFFDGUARD_LSM_DECIDE_CASE_H
#define UFFDGUARD_LSM_DECIDE_CASE_H

#include "lsm.h"

struct lsm_decide_case {
	struct policy policy;
	__u64 flags;
	__u32 entry;
	__u32 privileged;
	/* out */
	__u32 reason;
	__u32 err;
};

#endif
