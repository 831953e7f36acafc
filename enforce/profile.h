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

#include <json-c/json.h>

#include "policy.h"
#include "profile-check.h"

/* Rewrite base in place for policy p.  Returns 0, or -EINVAL with *err
 * filled and base left in an unspecified state (write nothing). */
int profile_merge(struct json_object *base, const struct policy *p, enum profile_format fmt,
		  struct profile_error *err);

/* A standalone fragment: default action allow, only the policy's rules;
 * NULL when memory ran out. */
struct json_object *profile_standalone(const struct policy *p, enum profile_format fmt);

/* The Kubernetes Security Profiles Operator's SeccompProfile object
 * (security-profiles-operator.x-k8s.io/v1beta1) holding a runtime-spec
 * profile: self-contained (no baseProfileName), with the fields its CRD
 * defines only.  NULL with *err filled when the profile cannot be said
 * that way (an errno other than EPERM). */
struct json_object *profile_seccompprofile(struct json_object *oci, const char *name,
					   const char *description, struct profile_error *err);
/* Whether name is a valid object name (a DNS subdomain, RFC 1123). */
bool profile_object_name_ok(const char *name);
/* Where the operator writes it, relative to the kubelet's seccomp
 * directory (/var/lib/kubelet/seccomp): "operator/NAME.json", or
 * "operator/NAMESPACE/NAME.json" in releases with namespaced profiles. */
#define PROFILE_SPO_DIR "operator"

/* The profile as text (tab-indented, final newline); caller frees. */
char *profile_serialize(struct json_object *profile);

#endif
