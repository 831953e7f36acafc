/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a container runtime makes of a profile, for the calls uffdguard
 * cares about: the action a container gets for userfaultfd and for
 * ioctl(USERFAULTFD_IOC_NEW), with and without UFFD_USER_MODE_ONLY, and
 * for another ioctl command.  Used to report how a merged profile differs
 * from its base, to refuse a merge that would allow what the base refused
 * without the policy asking for it, and to say what a given runtime will
 * do with a given file.  It reads any profile, not only one that
 * profile_check() accepts, and notes what a runtime would ignore.
 */
#ifndef UFFDGUARD_PROFILE_VIEW_H
#define UFFDGUARD_PROFILE_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "policy.h"
#include "profile-check.h"

/* How a runtime reads a profile file. */
enum profile_reader {
	/* Docker (moby) and containers/common (Podman, CRI-O): archMap,
	 * includes and excludes are resolved per container. */
	PROFILE_READER_DOCKER = 0,
	/* The runtime-spec linux.seccomp object (containerd, and runc or
	 * crun given a bundle): archMap, includes, excludes, comment and a
	 * single "name" are not part of it and are ignored. */
	PROFILE_READER_OCI = 1,
};

/* The runtimes --check knows, and the reader each uses. */
struct profile_runtime {
	const char *name;
	enum profile_reader reader;
	const char *reads; /* "the Docker profile format", ... */
};
extern const struct profile_runtime profile_runtimes[4];

/* The calls looked at. */
enum profile_call {
	PROFILE_CALL_UFFD,        /* userfaultfd(O_CLOEXEC) */
	PROFILE_CALL_UFFD_UMO,    /* userfaultfd(O_CLOEXEC | UFFD_USER_MODE_ONLY) */
	PROFILE_CALL_IOC_NEW,     /* ioctl(fd, USERFAULTFD_IOC_NEW, O_CLOEXEC) */
	PROFILE_CALL_IOC_NEW_UMO, /* ... O_CLOEXEC | UFFD_USER_MODE_ONLY */
	PROFILE_CALL_IOCTL_OTHER, /* ioctl(fd, TCGETS, ...): any other command */
	PROFILE_N_CALLS
};
/* "userfaultfd without UFFD_USER_MODE_ONLY", ... */
const char *profile_call_text(enum profile_call c);
/* The policy's question for it; false for PROFILE_CALL_IOCTL_OTHER. */
bool profile_call_is_creation(enum profile_call c, struct call *out);

/* The containers told apart: a Docker-format reader tests the bounding
 * set for CAP_SYS_PTRACE (a container otherwise with the runtime's default
 * capabilities); a runtime-spec reader cannot. */
enum profile_class {
	PROFILE_CLASS_UNPRIVILEGED = 0, /* without CAP_SYS_PTRACE */
	PROFILE_CLASS_PTRACE = 1,       /* with CAP_SYS_PTRACE */
	PROFILE_CLASS_EVERY = 2,        /* every container (runtime-spec) */
	PROFILE_N_CLASSES
};
const char *profile_class_text(enum profile_class k);

/* What one container gets for one call. */
struct profile_outcome {
	struct profile_action action;
	int rule;        /* index in syscalls of a rule that decides; -1: the default */
	int other_rule;  /* with `unclear`: a matching rule with another action */
	bool unclear;    /* matching rules disagree: libseccomp's merge decides */
	bool valid;      /* the action could be read at all */
	/* The same call to the kernel, with other values in bits the kernel
	 * ignores (a flag it does not test, the high 32 bits, an unused
	 * argument), gets another outcome: varied_* is that one. */
	bool varies;
	uint64_t varied_args[6];
	struct profile_action varied_action;
	int varied_rule;
	bool varied_valid;
};
bool profile_outcome_permits(const struct profile_outcome *o);
bool profile_outcome_equal(const struct profile_outcome *a, const struct profile_outcome *b);
/* "refused with errno 1", "allowed", "left to a tracer", ... */
void profile_outcome_text(const struct profile_outcome *o, char *buf, size_t size);

/* A profile as one reader sees it, for the classes that reader tells
 * apart: outcomes[class][call]. */
struct profile_view {
	enum profile_reader reader;
	bool classes[PROFILE_N_CLASSES]; /* which rows are filled */
	struct profile_outcome outcomes[PROFILE_N_CLASSES][PROFILE_N_CALLS];
};
void profile_view_of(struct json_object *profile, enum profile_reader reader,
		     struct profile_view *v);

/* Fields the reader ignores or refuses, one sentence each, for --check. */
struct profile_notes {
	size_t n;
	char text[16][256];
	size_t more;  /* notes beyond those kept */
	bool refused; /* the runtime would not load the profile at all */
};
void profile_reader_notes(struct json_object *profile, enum profile_reader reader,
			  struct profile_notes *notes);

/* One way a result differs from its base. */
enum profile_change_kind {
	PROFILE_LOOSENED,  /* refused before, let through now */
	PROFILE_TIGHTENED, /* let through before, refused now */
	PROFILE_CHANGED,   /* another action of the same kind */
};
struct profile_change {
	enum profile_change_kind kind;
	enum profile_class cls;
	enum profile_call call;
	struct profile_outcome before, after;
	bool asked; /* the policy allows it (a loosening it asks for) */
};
struct profile_report {
	size_t n;
	struct profile_change changes[PROFILE_N_CLASSES * PROFILE_N_CALLS];
};
const char *profile_change_kind_name(enum profile_change_kind k);

/* How `after` differs from `before` (NULL: no filter at all) for a
 * runtime reading `fmt`, and whether policy p asks for each loosening.
 * Returns 0, or -EINVAL with *err naming the first change p does not
 * ask for (a loosening, or any change to other ioctl commands), or a
 * call the base itself matches with rules of different actions. */
int profile_compare(struct json_object *before, struct json_object *after, enum profile_format fmt,
		    const struct policy *p, struct profile_report *r, struct profile_error *err);

/* Whether the view enforces p: every creation p refuses is refused, every
 * one it allows is let through, no outcome is unclear.  Fills *err with
 * the first (class, call) that does not hold. */
bool profile_view_enforces(const struct profile_view *v, const struct policy *p,
			   struct profile_error *err);

#endif
