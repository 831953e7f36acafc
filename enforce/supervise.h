/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The user-notification supervisor of `uffdguard run --mode supervise`:
 * decides each intercepted userfaultfd() / USERFAULTFD_IOC_NEW with the
 * calling thread's credentials at that moment, answers EPERM or EINVAL or
 * lets the kernel continue, appends one JSON line per decision to the
 * audit file, and takes live knob changes from a control directory.
 */
#ifndef UFFDGUARD_SUPERVISE_H
#define UFFDGUARD_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

/* The supervisor reports what goes wrong while it serves (a bad value in
 * a control file, a failed audit write) through this function, once per
 * event; it never prints. */
typedef void supervisor_warn_fn(void *data, const char *message);

struct supervisor_options {
	struct policy policy;
	const char *audit_path;  /* NULL: no audit */
	const char *control_dir; /* NULL: no live knobs; else one file per
				  * policy_knobs[] entry, holding "0" or "1" */
	supervisor_warn_fn *warn;
	void *warn_data;
};

struct supervisor {
	struct policy policy;
	int listener;    /* seccomp user-notification fd, -1 until set */
	int audit_fd;    /* -1: no audit */
	int inotify_fd;  /* -1: no control directory */
	int control_dirfd;
	char *control_dir;
	bool created_dir;
	bool audit_failed; /* warned once */
	supervisor_warn_fn *warn;
	void *warn_data;
	void *req, *resp;  /* struct seccomp_notif{,_resp} of the kernel's size */
	size_t req_size, resp_size;
};

/* Make this process non-dumpable, check that /proc is our pid namespace's,
 * open the audit file (appending, created 0600) and create the control
 * directory.  Returns 0 or -errno with a message. */
int supervisor_init(struct supervisor *s, const struct supervisor_options *o, char *err,
		    size_t err_size);

/* Take the filter's listener.  Asks the kernel (6.6+) to wake the
 * supervisor on the caller's CPU; older kernels refuse, which changes
 * nothing but the latency. */
void supervisor_attach(struct supervisor *s, int listener);

/* Serve one notification from s->listener.  Returns 0 (also when the
 * caller went away meanwhile) or -errno when the listener failed. */
int supervisor_handle(struct supervisor *s);

/* Apply pending knob changes from the control directory. */
void supervisor_control(struct supervisor *s);

/* Remove the knob files (and the directory if it was created), close. */
void supervisor_fini(struct supervisor *s);

#endif
