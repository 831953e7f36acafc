/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the BPF LSM program (uffdguard.bpf.c) and its loader (loader.c) share:
 * the layout of the pinned maps, the audit record, and the one function
 * that turns a creation of a userfaultfd into a decision.  Freestanding,
 * like policy/decide.h: the BPF program includes it after vmlinux.h.
 */
#ifndef UFFDGUARD_LSM_H
#define UFFDGUARD_LSM_H

#ifndef __VMLINUX_H__
#include <linux/bpf.h> /* struct bpf_spin_lock */
#include <linux/types.h>
#endif

#include "decide.h"

/* Bumped whenever a map's layout or meaning changes: a binary refuses to
 * work with pinned maps of another format rather than misread them. */
#define LSM_FORMAT_VERSION 1

/* Where the links and maps are pinned, in bpffs. */
#define LSM_PIN_DIR "/sys/fs/bpf/uffdguard"

/* A cgroup path as /proc/PID/cgroup gives it ("/user.slice/user-1000.slice"),
 * NUL included. */
#define LSM_PATH_MAX 256
/* The deepest cgroup level an entry may name; callers deeper than this
 * are still found through their ancestors. */
#define LSM_MAX_DEPTH 32
/* Scopes: the host default (slot 0) and up to 1023 cgroup entries. */
#define LSM_MAX_SCOPES 1024
#define LSM_HOST_SLOT 0
/* The key of the host default in the map of cgroups (no cgroup has id 0). */
#define LSM_HOST_KEY 0

/* How the caller reached new_userfaultfd(), read from its saved system
 * call registers; the fork event from the context inode. */
enum lsm_entry {
	LSM_ENTRY_SYSCALL = 0,       /* userfaultfd(2), x86-64 */
	LSM_ENTRY_I386_SYSCALL,      /* userfaultfd(2), i386 (int $0x80, 32-bit processes) */
	LSM_ENTRY_X32_SYSCALL,       /* userfaultfd(2), x32 */
	LSM_ENTRY_IOCTL,             /* USERFAULTFD_IOC_NEW on /dev/userfaultfd, x86-64 */
	LSM_ENTRY_COMPAT_IOCTL,      /* the same from an i386 process */
	LSM_ENTRY_X32_IOCTL,         /* the same from an x32 process */
	LSM_ENTRY_FORK_EVENT,        /* UFFD_EVENT_FORK: a copy of an existing context */
	LSM_ENTRY_UNKNOWN,           /* none of these: refused */
	LSM_N_ENTRIES
};

/* The reasons of policy_decide_reason(), and two of the program's own. */
enum lsm_reason {
	/* A fork event copies a context that was itself decided when it was
	 * created, and UFFD_FEATURE_EVENT_FORK already needs CAP_SYS_PTRACE:
	 * allowed, like the 2020 series does. */
	LSM_REASON_FORK_EVENT = POLICY_N_REASONS,
	/* A userfaultfd created from neither system call: refused. */
	LSM_REASON_UNKNOWN_ENTRY,
	LSM_N_REASONS
};

/* The value of both maps of scopes: the policy and the slot of its
 * counters.  User space writes it with BPF_F_LOCK, the program copies it
 * under the lock, so a call never sees half of an update. */
struct lsm_scope {
	struct bpf_spin_lock lock;
	__u32 slot;
	struct policy policy;
};

/* The key of the map of cgroup paths. */
struct lsm_cgroup_path {
	char path[LSM_PATH_MAX];
};

/* Decisions per scope (a per-CPU array indexed by slot). */
struct lsm_counts {
	__u64 by_reason[LSM_N_REASONS];
};

/* One audit record per decision, through the ring buffer. */
struct lsm_record {
	__u64 boot_ns;   /* bpf_ktime_get_boot_ns(): CLOCK_BOOTTIME */
	__u64 cgroup_id; /* the caller's cgroup (v2 hierarchy) */
	__u64 flags;     /* the flags register, all 64 bits as passed */
	__u32 pid;
	__u32 tid;
	__u32 uid;       /* real uid */
	__u32 slot;      /* the scope that decided */
	__u8 entry;      /* enum lsm_entry */
	__u8 reason;     /* enum lsm_reason */
	__u8 privileged; /* CAP_SYS_PTRACE, effective, initial user namespace */
	__u8 reserved;
	char comm[16];
	char exe[64];    /* the executable's file name (not its path) */
};

/* The one element of the map "format". */
struct lsm_format {
	__u32 version;    /* LSM_FORMAT_VERSION */
	__u32 reserved;
	__u64 object_id;  /* a hash of the BPF object that is loaded */
};

/* The decision for a creation of a userfaultfd: policy_decide_reason()
 * for the two system call paths, the program's own reasons otherwise.
 * The BPF program and user space both call this, and a test runs it as
 * BPF and as C over every input. */
static inline enum lsm_reason lsm_decide(const struct policy *p, _Bool privileged,
					 enum lsm_entry entry, __u64 flags)
{
	struct call c = { .flags = flags };

	switch (entry) {
	case LSM_ENTRY_SYSCALL:
	case LSM_ENTRY_I386_SYSCALL:
	case LSM_ENTRY_X32_SYSCALL:
		c.path = CALL_SYSCALL;
		break;
	case LSM_ENTRY_IOCTL:
	case LSM_ENTRY_COMPAT_IOCTL:
	case LSM_ENTRY_X32_IOCTL:
		c.path = CALL_DEVICE_IOCTL;
		break;
	case LSM_ENTRY_FORK_EVENT:
		return LSM_REASON_FORK_EVENT;
	default:
		return LSM_REASON_UNKNOWN_ENTRY;
	}
	return (enum lsm_reason)policy_decide_reason(p, privileged, &c);
}

/* The errno the hook returns: 0 (the kernel goes on), EPERM or EINVAL. */
static inline int lsm_reason_errno(enum lsm_reason r)
{
	if (r == LSM_REASON_UNKNOWN_ENTRY)
		return 1; /* EPERM */
	if (r == LSM_REASON_FORK_EVENT)
		return 0;
	switch (policy_reason_verdict((enum policy_reason)r)) {
	case VERDICT_EPERM:
		return 1;  /* EPERM */
	case VERDICT_EINVAL:
		return 22; /* EINVAL */
	default:
		return 0;
	}
}

#endif
