/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The loader of the BPF LSM program (uffdguard.bpf.c): what the kernel
 * offers, loading and pinning, the scopes in force, and the audit
 * records.  Nothing here prints: every function returns 0 or -errno and,
 * on failure, one sentence in err saying why and what to do.
 */
#ifndef UFFDGUARD_LSM_LOADER_H
#define UFFDGUARD_LSM_LOADER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lsm.h"
#include "policy.h"

/* The oldest kernel it supports; see lsm_support_check(). */
#define LSM_MIN_KERNEL_MAJOR 6
#define LSM_MIN_KERNEL_MINOR 1

/* What the running kernel offers, read without loading anything. */
struct lsm_support {
	char release[65];
	bool kernel_ok;         /* 6.1 or later */
	bool btf;               /* /sys/kernel/btf/vmlinux */
	bool lsm_list_known;    /* securityfs was readable */
	char active_lsms[256];  /* /sys/kernel/security/lsm */
	bool bpf_active;        /* "bpf" is among them */
	bool capable;           /* CAP_BPF and CAP_SYS_ADMIN, effective */
};

/* Fill *s.  With may_mount, mounts securityfs if it is not (it says
 * which LSMs are active). */
void lsm_support_probe(struct lsm_support *s, bool may_mount);
/* 0 if nothing in *s stands in the way, else -errno (-EPERM, -ENOSYS,
 * -EOPNOTSUPP) and one sentence: why, and what to do. */
int lsm_support_check(const struct lsm_support *s, char *err, size_t err_size);

/* A scope and the policy for it. */
struct lsm_scope_spec {
	char cgroup[LSM_PATH_MAX]; /* "" : the host default */
	struct policy policy;
};

/* Load and pin the programs if they are not (or if this binary's differ
 * from the pinned ones, replacing them without a gap), then put these
 * scopes in force; with exact, also remove every scope not in specs.
 * Applying the same twice changes nothing.  On failure nothing is
 * changed.  Every spec must pass cgroup_path_check(). */
int lsm_apply(const struct lsm_scope_spec *specs, size_t n, bool exact, char *err,
	      size_t err_size);

/* Remove one scope (cgroup NULL or "": the host default); -ENOENT if it
 * has none.  The programs stay loaded. */
int lsm_remove_scope(const char *cgroup, char *err, size_t err_size);

/* Unpin everything: with the links gone the kernel detaches and frees
 * the programs and maps.  0 also if nothing was pinned. */
int lsm_remove_all(char *err, size_t err_size);

struct lsm_scope_state {
	char cgroup[LSM_PATH_MAX]; /* "" : the host default */
	struct policy policy;
	uint32_t slot;
	uint64_t cgroup_id; /* 0: no such cgroup now */
	uint64_t counts[LSM_N_REASONS];
};

/* What is pinned and in force. */
struct lsm_state {
	bool pinned;            /* LSM_PIN_DIR holds something */
	bool enforcing;         /* the link of the LSM program is pinned */
	bool format_ok;         /* the pinned maps are this binary's format */
	uint32_t format_version;
	bool same_program;      /* the pinned program is this binary's */
	uint32_t prog_id;       /* the LSM program's id, 0 if none */
	uint64_t dropped;       /* audit records the ring buffer had no room for */
	struct lsm_scope_state *scopes; /* the host default first, then by path */
	size_t n_scopes;
};

/* Read the state (not root: -EPERM and a sentence).  Nothing pinned is
 * not an error: pinned is false. */
int lsm_state_read(struct lsm_state *st, char *err, size_t err_size);
void lsm_state_free(struct lsm_state *st);

/* Names for the audit records and reports. */
const char *lsm_entry_name(enum lsm_entry e);   /* "syscall", "i386 syscall", ... */
const char *lsm_entry_call(enum lsm_entry e);   /* "userfaultfd", "USERFAULTFD_IOC_NEW", ... */
const char *lsm_entry_abi(enum lsm_entry e);    /* "x86_64", "i386", "x32", "" */
const char *lsm_reason_text(enum lsm_reason r);
const char *lsm_reason_verdict(enum lsm_reason r); /* "allow", "eperm", "einval" */
const char *lsm_reason_key(enum lsm_reason r);     /* "flag_required", ... for JSON */

/* An audit record with what user space adds to it; or, with dropped
 * non-zero, a report that the ring buffer had no room for that many
 * records (rec is then empty). */
struct lsm_event {
	uint64_t dropped;
	struct lsm_record rec;
	int64_t realtime_ns;      /* when, on CLOCK_REALTIME */
	char cgroup[4096];        /* the caller's cgroup, or "" if it is gone */
	char scope[LSM_PATH_MAX]; /* the scope that decided: "" host default */
};

/* Call fn for each audit record, oldest first, until *stop is set or fn
 * returns non-zero (which is returned), or the programs are removed
 * (-ENOENT with a sentence).  Only one reader at a time: -EBUSY. */
int lsm_audit_follow(int (*fn)(const struct lsm_event *ev, void *arg), void *arg,
		     volatile sig_atomic_t *stop, char *err, size_t err_size);

/* What libbpf said during the last call, for --verbose. */
const char *lsm_libbpf_log(void);

#endif
