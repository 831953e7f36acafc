/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The first half of the profile mechanism: reading a base profile and
 * validating all of it before anything is compiled into it, as libseccomp
 * checks its input in api.c before it reaches db.c.  What the compiler
 * (profile.h) needs to know of each rule is recorded on the way.
 */
#ifndef UFFDGUARD_PROFILE_CHECK_H
#define UFFDGUARD_PROFILE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include "policy.h"

enum profile_format {
	/* Docker/Podman profile: archMap, includes/excludes.  The series'
	 * CAP_SYS_PTRACE exemption holds per container (includes.caps). */
	PROFILE_FORMAT_DOCKER = 0,
	/* runtime-spec linux.seccomp: no conditions on capabilities, so every
	 * container counts as unprivileged. */
	PROFILE_FORMAT_OCI = 1,
};

/* Where (a JSON path such as "syscalls[12].action", or "line 3, column
 * 7" for a syntax error) and why a base was refused. */
struct profile_error {
	char where[128];
	char reason[384];
};

/* Fill *e and return -EINVAL. */
__attribute__((format(printf, 3, 4))) int profile_error_set(struct profile_error *e,
							    const char *where, const char *fmt,
							    ...);

/* The architectures whose userfaultfd ABI (syscall by name, ioctl number
 * USERFAULTFD_IOC_NEW = 0xAA00) the rules are written for. */
extern const char *const profile_arches[3];
/* Docker-format rules apply on this host architecture only ("amd64", as
 * libseccomp names it); other hosts keep the base's own rules. */
#define PROFILE_HOST_ARCH "amd64"

/* The largest base read: Docker's and Podman's default profiles are
 * under 40 KiB, the largest runtime-spec profiles in use a few hundred. */
#define PROFILE_MAX_SIZE (4u << 20)
/* Distinct (action, includes, excludes) among the base's rules that permit
 * ioctl: each costs 34 generated rules (profile.c). */
#define PROFILE_MAX_IOCTL_GROUPS 64

/* Parse a profile of at most PROFILE_MAX_SIZE bytes.  NULL with *err filled on a syntax error. */
struct json_object *profile_parse(const char *text, size_t len, struct profile_error *err);

/* _IO(0xAA, 0): the generic ioctl encoding, as on x86. */
#define PROFILE_IOC_NEW ((uint32_t)USERFAULTFD_IOC_NEW)

/* A seccomp action as a profile names it. */
struct profile_action {
	int kind;          /* index in the table of known actions */
	int64_t errno_ret; /* when it carries one; runc's default is EPERM */
};
extern const struct profile_action profile_action_eperm; /* SCMP_ACT_ERRNO, EPERM */
extern const struct profile_action profile_action_allow; /* SCMP_ACT_ALLOW */

/* An action and its errnoRet as a profile gives them; -EINVAL if name is
 * not a known action or errno_ret (may be NULL) not a valid number. */
int profile_action_read(struct json_object *name, struct json_object *errno_ret,
			struct profile_action *a);
const char *profile_action_name(const struct profile_action *a);
/* The action can let the call reach the kernel: ALLOW, LOG, and TRACE and
 * NOTIFY, whose tracer or supervisor may let it through. */
bool profile_action_permits(const struct profile_action *a);
bool profile_action_uses_errno(const struct profile_action *a);
bool profile_action_equal(const struct profile_action *a, const struct profile_action *b);

/* What the compiler needs of one rule of the base. */
struct profile_rule {
	struct profile_action action;
	bool conditional; /* has argument conditions */
	bool filtered;    /* includes/excludes restrict it to some containers */
	bool names_uffd, names_ioctl;
};

/* A base that passed the checks. */
struct profile_base {
	struct profile_action def;    /* defaultAction (and defaultErrnoRet) */
	struct json_object *syscalls; /* the base's array, borrowed; NULL if none */
	size_t n_rules;
	struct profile_rule *rules;   /* one per element of syscalls */
};

/* Check the whole of base for policy p in format fmt.  Returns 0 with *out
 * filled (release with profile_base_fini()), or -EINVAL with *err naming
 * the place and the reason. */
int profile_check(struct json_object *base, const struct policy *p, enum profile_format fmt,
		  struct profile_base *out, struct profile_error *err);
void profile_base_fini(struct profile_base *b);

/* Whether arr is an array holding the string s. */
bool profile_str_array_has(struct json_object *arr, const char *s);

#endif
