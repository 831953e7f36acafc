/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What `uffdguard status` finds out: the kernel, vm.unprivileged_userfaultfd,
 * /dev/userfaultfd and who may open it, this process's seccomp state and
 * the uffdguard marker, the BPF LSM, FUSE, and the live probe (probe.h).
 * Gathering only: assess.h concludes, render.h writes it down.
 */
#ifndef UFFDGUARD_STATUS_FACTS_H
#define UFFDGUARD_STATUS_FACTS_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "libuffd.h"
#include "loader.h"
#include "marker.h"
#include "policy.h"
#include "probe.h"

/* A short list of sentences.  Adding to a full list drops the item; an
 * allocation failure is remembered in `failed`. */
#define STATUS_LIST_MAX 16
struct status_list {
	char *item[STATUS_LIST_MAX];
	int n;
	bool failed;
};

__attribute__((format(printf, 2, 3))) void status_list_add(struct status_list *l,
							   const char *fmt, ...);
void status_list_free(struct status_list *l);

struct acl_entry {
	const char *tag; /* "user", "group", "mask", ... */
	long id;         /* -1 for the *_obj, mask and other entries */
	unsigned perm;   /* rwx bits, 4 2 1 */
};

/* The BPF LSM (enforce/lsm/): whether it can work here, what is pinned
 * and in force, and the scope that decides where the probe runs. */
struct status_lsm {
	struct lsm_support support;
	int support_err; /* lsm_support_check(): 0 or -errno */
	char why_not[512];
	int state_err; /* lsm_state_read(): 0 or -errno (-EPERM: not root) */
	char state_why[512];
	struct lsm_state state;
	/* Its program is attached, its maps are of this build's format, and
	 * the kernel runs BPF LSM programs. */
	bool enforcing;
	char cgroup[4096]; /* this process's cgroup (v2 hierarchy) */
	ssize_t own_scope; /* the index in state.scopes of the one deciding there, or -1 */
};

struct status_facts {
	/* kernel */
	char release[65];
	bool new_semantics;
	bool has_userfaultfd;
	int flag_result; /* userfaultfd(UFFD_USER_MODE_ONLY) by the caller: 0 or -errno */
	char flag_why[PROBE_WHY_SIZE];
	int api_result;
	struct libuffd_api api;
	/* procfs at /proc: without it the sysctl, the seccomp state and the
	 * cgroup cannot be read */
	bool proc_mounted;
	/* vm.unprivileged_userfaultfd */
	int sysctl; /* value or -errno */
	/* vm.unprivileged_userfaultfd_covers_dev: value or -errno (-ENOENT: a
	 * kernel without the series in kernel/, where the device ignores the
	 * first knob) */
	int covers_dev;
	/* device */
	const char *device;
	bool device_testing; /* not the default path (status --device) */
	int device_stat; /* 0 or -errno */
	struct stat device_st;
	bool device_is_uffd; /* its rdev is the userfaultfd misc device */
	struct acl_entry *acl; /* every entry: the access check needs them all */
	int n_acl;
	struct status_list device_access; /* non-root identities that can open it */
	bool device_world;
	/* this process */
	uid_t uid, euid;
	long seccomp, seccomp_filters; /* -1: not reported */
	int marker_err;
	bool marker_ours;
	enum enforcer marker_enforcer;
	struct policy marker_policy;
	/* the BPF LSM */
	struct status_lsm lsm;
	/* probes */
	int probe_result; /* probe_run(): 0 or -errno */
	struct probe_report probe;
	/* FUSE */
	int fuse_stat;
	struct stat fuse_st;
	struct status_list fusermount; /* setuid-root fusermount binaries */
};

/* Gather every fact and run the probe with *po (its device_path is the
 * device examined).  Returns 0, or -errno when the probe could not start
 * or memory ran out; release with status_facts_fini() either way. */
int status_gather(struct status_facts *f, const struct probe_options *po);
void status_facts_fini(struct status_facts *f);

/* The identity whose results stand for "an unprivileged process": the
 * unused uid, or the caller itself when it could not switch and lacks
 * CAP_SYS_PTRACE; NULL when neither ran. */
const struct probe_identity *status_unprivileged(const struct status_facts *f);

/* The errno's name ("EPERM"; "ok" for 0; either sign), a user's and a
 * group's name ("?" when unknown). */
const char *status_errname(int err);
const char *status_user_name(uid_t uid);
const char *status_group_name(gid_t gid);

#endif
