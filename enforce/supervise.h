/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The user-notification supervisor of `uffdguard run --mode supervise`:
 * decides each intercepted userfaultfd() / USERFAULTFD_IOC_NEW with the
 * calling thread's credentials at that moment, answers EPERM or EINVAL or
 * lets the kernel continue, records each decision (audit.h), and takes
 * live knob changes from a control directory (control.h).
 */
#ifndef UFFDGUARD_SUPERVISE_H
#define UFFDGUARD_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>

#include "audit.h"
#include "control.h"
#include "policy.h"

/* The supervisor reports what an administrator should know while it
 * serves (a refused knob value, a lost audit record) through this
 * function, once per event, from its I/O thread (so that a blocked
 * standard error never delays a decision): it must be thread-safe.  It
 * never prints. */
typedef void supervisor_warn_fn(void *data, const char *message);

struct supervisor_options {
	struct policy policy;
	struct audit_destination audit; /* neither journal nor path: no audit */
	unsigned audit_rate;             /* decisions recorded a second, 0: all */
	const char *control_dir; /* NULL: no live knobs; else one file per
				  * policy_knobs[] entry, holding "0" or "1" */
	const char *state_path;  /* NULL: live changes are not kept */
	supervisor_warn_fn *warn;
	void *warn_data;
};

struct supervisor {
	struct policy policy; /* in force */
	int listener;         /* seccomp user-notification fd, -1 until set */
	struct audit *audit;  /* the I/O thread: records and warnings */
	struct control control;
	struct control_state state;
	unsigned refused;     /* knob values that could not be applied */
	void *req, *resp;     /* struct seccomp_notif{,_resp} of the kernel's size */
	size_t req_size, resp_size;
};

/* Make this process non-dumpable, check that /proc is our pid namespace's,
 * restore the knobs of the state file, open the audit destination and
 * create the control directory.  The policy in force is then s->policy.
 * Returns 0 or -errno with a message. */
int supervisor_init(struct supervisor *s, const struct supervisor_options *o, char *err,
		    size_t err_size);

/* Take the filter's listener and start the I/O thread (after fork()).
 * Asks the kernel (6.6+) to wake the supervisor on the caller's CPU;
 * older kernels refuse, which changes nothing but the latency.  Returns 0
 * or -errno with a message. */
int supervisor_attach(struct supervisor *s, int listener, char *err, size_t err_size);

/* Serve one notification from s->listener.  Returns 0 (also when the
 * caller went away meanwhile) or -errno when the listener failed. */
int supervisor_handle(struct supervisor *s);

/* The descriptor to poll for knob changes (-1: none), and taking them. */
int supervisor_control_fd(const struct supervisor *s);
void supervisor_control(struct supervisor *s);

/* SIGHUP: open the audit file again (rotation) and, if the control
 * directory was lost, try to make it again. */
void supervisor_reload(struct supervisor *s);

/* Remove the knob files (and the directory if it was created), write
 * what the audit queue holds (giving up after a few seconds without
 * progress), close.  What was suppressed, lost and refused in *audit
 * and *refused, for a last word. */
void supervisor_fini(struct supervisor *s, struct audit_stats *audit, unsigned *refused);

#endif
