/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How `uffdguard status` learns, from inside, that uffdguard is enforcing
 * a policy on it.  The enforcer answers one otherwise meaningless call,
 * userfaultfd(UFFDGUARD_MARKER_FLAGS), with an errno that encodes which
 * enforcer it is and the policy.  The kernel alone answers that call with
 * EINVAL (unknown flag bits), so asking has no effect.  Only the low 32
 * bits of the argument are compared, like every rule.
 */
#ifndef UFFDGUARD_MARKER_H
#define UFFDGUARD_MARKER_H

#include <stdbool.h>

#include "policy.h"

#define UFFDGUARD_MARKER_FLAGS 0x55464700u /* "UFG", unknown to the kernel */
#define UFFDGUARD_MARKER_ERRNO_BASE 3000

/* Who decides: the modes of `uffdguard run`.  The marker has two bits
 * for it, room for two more enforcers. */
enum enforcer {
	ENFORCER_FILTER = 0,
	ENFORCER_SUPERVISOR = 1,
	ENFORCER_N
};
#define MARKER_ENFORCER_BITS 2

struct enforcer_info {
	const char *mode; /* the name of `uffdguard run --mode` and of status' JSON */
	const char *noun; /* what status calls it in a sentence */
	/* The privilege test it can make (see uffdguard-run(1)). */
	enum policy_privilege privilege;
};

static inline const struct enforcer_info *enforcer_info(enum enforcer e)
{
	static const struct enforcer_info info[ENFORCER_N] = {
		/* A filter cannot see capabilities at call time. */
		[ENFORCER_FILTER] = { "filter", "filter", POLICY_PRIV_NOBODY },
		[ENFORCER_SUPERVISOR] = { "supervise", "supervisor", POLICY_PRIV_CAP_SYS_PTRACE },
	};
	return (unsigned)e < ENFORCER_N ? &info[e] : 0;
}

/* errno = BASE + (enforcer << POLICY_N_KNOBS | knobs): knob i of
 * policy_knobs[] is bit i. */
static inline int marker_errno(enum enforcer e, const struct policy *p)
{
	int v = (int)e << POLICY_N_KNOBS;

	for (int i = 0; i < POLICY_N_KNOBS; i++)
		v |= (policy_knob_get(p, &policy_knobs[i]) ? 1 : 0) << i;
	return UFFDGUARD_MARKER_ERRNO_BASE + v;
}

/* Decodes an errno from the marker call (the policy, with no privilege
 * test where the enforcer cannot make one); false if it is not ours, or
 * from an enforcer this build does not know. */
static inline bool marker_decode(int err, enum enforcer *e, struct policy *p)
{
	int v = err - UFFDGUARD_MARKER_ERRNO_BASE;

	if (v < 0 || v >= 1 << (POLICY_N_KNOBS + MARKER_ENFORCER_BITS) ||
	    v >> POLICY_N_KNOBS >= ENFORCER_N)
		return false;
	*p = POLICY_DEFAULT;
	for (int i = 0; i < POLICY_N_KNOBS; i++)
		policy_knob_put(p, &policy_knobs[i], v >> i & 1);
	*e = (enum enforcer)(v >> POLICY_N_KNOBS);
	if (enforcer_info(*e)->privilege == POLICY_PRIV_NOBODY)
		p->privilege = POLICY_PRIV_NOBODY;
	return true;
}

#endif
