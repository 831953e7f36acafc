/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the facts of `uffdguard status` amount to: can an unprivileged
 * process hold the kernel inside a system call with userfaultfd here?
 * (The policy's own answer for one call is policy_decide(); this is the
 * machine's exposure, concluded from what the probe could do.)
 */
#ifndef UFFDGUARD_STATUS_ASSESS_H
#define UFFDGUARD_STATUS_ASSESS_H

#include <stdbool.h>

#include "facts.h"

enum exposure {
	EXPOSURE_PROTECTED = 0, /* the unprivileged probe could not */
	EXPOSURE_EXPOSED,       /* it could, or someone else can open the device */
	EXPOSURE_UNAVAILABLE,   /* the kernel has no userfaultfd */
	EXPOSURE_UNDETERMINED,  /* nothing conclusive, or not everything, could be tried */
	EXPOSURE_N
};

struct assessment {
	enum exposure exposure;
	bool complete; /* false: see not_checked */
	struct status_list reasons, not_checked, warnings;
	/* fix[i]: the command that removes reasons.item[i], or NULL. */
	char *fix[STATUS_LIST_MAX];
};

/* Conclude from f.  A check that is not complete is "undetermined" where
 * it would have been "protected", unless accept_partial.  Returns 0, or
 * -ENOMEM when a sentence could not be kept; release with
 * assessment_fini() either way. */
int status_assess(const struct status_facts *f, bool accept_partial, struct assessment *a);
void assessment_fini(struct assessment *a);

/* "protected", "exposed", "unavailable", "undetermined": the word both outputs
 * give as the verdict. */
const char *exposure_name(enum exposure e);

#endif
