/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The live probe of `uffdguard status`: forked children, each as one
 * identity, try every way to create a userfaultfd; the unprivileged one
 * then measures how long it can hold the kernel inside the classic stall
 * points.  Every child runs in its own process group under a deadline,
 * and the whole group is killed and reaped on every path.
 */
#ifndef UFFDGUARD_PROBE_H
#define UFFDGUARD_PROBE_H

#include <stdbool.h>
#include <sys/types.h>

/* Ways to create a descriptor. */
enum probe_way {
	PROBE_SYSCALL = 0,     /* userfaultfd(O_CLOEXEC | O_NONBLOCK) */
	PROBE_SYSCALL_UMO = 1, /* ... | UFFD_USER_MODE_ONLY */
	PROBE_DEVICE = 2,      /* USERFAULTFD_IOC_NEW on the device, no flag */
	PROBE_DEVICE_UMO = 3,  /* ... with UFFD_USER_MODE_ONLY */
	PROBE_N_WAYS
};

/* Who a probe child runs as. */
enum probe_who {
	PROBE_UNPRIV = 0, /* an unused uid/gid, no capabilities */
	PROBE_PTRACE = 1, /* the same uid, keeping only CAP_SYS_PTRACE */
	PROBE_SELF = 2,   /* the caller, unchanged (when it cannot switch) */
	PROBE_N_WHO
};

/* The classic points where a kernel-mode fault pauses a system call. */
enum stall_point {
	STALL_SETXATTR = 0, /* the value of fsetxattr() */
	STALL_MSGSND = 1,   /* the payload of msgsnd() */
	STALL_PIPE_WRITE = 2,
	STALL_SENDMSG = 3,  /* the data of sendmsg() on a unix socket */
	STALL_READ = 4,     /* read() from a pipe into a registered page */
	STALL_N_POINTS
};

enum stall_outcome {
	STALL_NOT_RUN = 0,
	STALL_HELD,    /* the fault reached the handler: the kernel waited */
	STALL_REFUSED, /* failed with EFAULT without waiting */
	STALL_ERROR,   /* failed otherwise (err), no fault delivered */
	STALL_TIMEOUT, /* the probe's deadline passed during this point */
};

struct stall_result {
	enum stall_outcome outcome;
	bool delivered; /* the fault reached the unprivileged handler */
	int err;        /* errno of the call, 0 if it succeeded */
	double held_ms; /* HELD/TIMEOUT: time spent in the call */
	double took_us; /* REFUSED/ERROR: time spent in the call */
};

#define PROBE_WHY_SIZE 320

struct probe_attempt {
	bool tried;
	int result; /* 0 (a descriptor was created) or -errno */
	char why[PROBE_WHY_SIZE]; /* libuffd_explain_open() of a failure */
};

struct probe_identity {
	bool ran;         /* false: skipped, see why_not */
	char why_not[160];
	uid_t uid;
	bool has_ptrace;  /* CAP_SYS_PTRACE effective in the child */
	bool timed_out;   /* the deadline passed: results may be partial */
	struct probe_attempt attempts[PROBE_N_WAYS];
	/* The stall probe (PROBE_UNPRIV and PROBE_SELF only). */
	bool stall_run;
	int stall_way;    /* enum probe_way of the descriptor used, -1: none */
	char stall_why_not[160];
	struct stall_result stall[STALL_N_POINTS];
	/* FUSE, the stall vector userfaultfd policy cannot close. */
	int fuse_open;    /* open("/dev/fuse") by this identity: 0 or -errno */
};

struct probe_options {
	const char *device_path; /* NULL: /dev/userfaultfd */
	int hold_ms;             /* how long the handler holds each fault */
	int timeout_ms;          /* deadline for each child, 0: derived from hold */
};

struct probe_report {
	struct probe_identity who[PROBE_N_WHO];
	int hold_ms;
	int timeout_ms;
};

/* Run the probe children (the unprivileged and the CAP_SYS_PTRACE ones
 * when the caller can switch identity, else one as the caller), in
 * parallel, and fill *out.  Returns 0 or -errno (fork, mmap failures). */
int probe_run(const struct probe_options *opts, struct probe_report *out);

const char *probe_way_name(enum probe_way way);
const char *probe_who_name(enum probe_who who);
const char *stall_point_name(enum stall_point point);  /* the JSON name */
const char *stall_point_label(enum stall_point point); /* for the text table */
const char *stall_outcome_name(enum stall_outcome outcome);

/* Whether the caller can switch to another uid (root with CAP_SETUID). */
bool probe_can_switch_identity(void);

#endif
