/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy as a seccomp profile for container runtimes: a standalone
 * fragment, or a base profile (Docker/Podman or OCI runtime-spec format)
 * whose name-only userfaultfd rules are replaced by flag-aware ones.
 *
 * Every generated rule compares only the low 32 bits of an argument
 * (SCMP_CMP_MASKED_EQ), and for any (syscall, arguments) the rules that
 * match all carry the same action: the result never depends on the order
 * in which libseccomp weighs an unconditional rule against a conditional
 * one.
 */
#ifndef UFFDGUARD_PROFILE_H
#define UFFDGUARD_PROFILE_H

#include <stddef.h>

#include <json-c/json.h>

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

/* The architectures whose userfaultfd ABI (syscall by name, ioctl number
 * USERFAULTFD_IOC_NEW = 0xAA00) the rules are written for. */
extern const char *const profile_arches[3];
/* Docker-format rules apply on this host architecture only ("amd64", as
 * libseccomp names it); other hosts keep the base's own rules. */
#define PROFILE_HOST_ARCH "amd64"

/* Parse a profile (profile-check.c).  NULL with *err filled on a syntax
 * error. */
struct json_object *profile_parse(const char *text, size_t len, struct profile_error *err);

/* Rewrite base in place for policy p.  Returns 0, or -EINVAL with *err
 * filled and base left in an unspecified state (write nothing). */
int profile_merge(struct json_object *base, const struct policy *p, enum profile_format fmt,
		  struct profile_error *err);

/* A standalone fragment: default action allow, only the policy's rules;
 * NULL when memory ran out. */
struct json_object *profile_standalone(const struct policy *p, enum profile_format fmt);

/* The profile as text (tab-indented, final newline); caller frees. */
char *profile_serialize(struct json_object *profile);

#endif
