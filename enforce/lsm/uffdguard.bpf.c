// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy of the 2020 patch series "Control over userfaultfd
 * kernel-fault handling", enforced by the kernel for every process of the
 * host: a BPF LSM program on inode_init_security_anon, the hook every
 * userfaultfd passes through when new_userfaultfd() or a fork event
 * creates its anonymous inode "[userfaultfd]".
 *
 * Kernel structures are read with direct loads, which the verifier
 * checks against BTF and CO-RE relocates (vmlinux.h marks every type
 * preserve_access_index): cheaper than a helper call per field.
 *
 * The hook does not see the flags.  They come from the caller's saved
 * system call registers, where the system call number also says which
 * entry it came through (x86-64, i386, x32; the syscall or
 * USERFAULTFD_IOC_NEW): the very values the kernel passes on, whether or
 * not it inlines new_userfaultfd(), with nothing kept per task.
 *
 * Scopes: a host default and entries for cgroup v2 paths.  An entry is
 * kept by path (scope_paths) and, for a cgroup that exists, by id
 * (scopes); the two tracepoint programs keep the ids as cgroups come and
 * go, so an entry for user-1000.slice holds from the user's next login.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "decide.h"
#include "lsm.h"

char LICENSE[] SEC("license") = "GPL";

/* cgroup id (LSM_HOST_KEY: the host default) -> policy in force */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * LSM_MAX_SCOPES);
	__type(key, __u64);
	__type(value, struct lsm_scope);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} scopes SEC(".maps");

/* cgroup path -> policy, for the cgroups created later */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LSM_MAX_SCOPES);
	__type(key, struct lsm_cgroup_path);
	__type(value, struct lsm_scope);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} scope_paths SEC(".maps");

/* slot -> decisions by reason, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LSM_MAX_SCOPES);
	__type(key, __u32);
	__type(value, struct lsm_counts);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} decision_counts SEC(".maps");

/* one struct lsm_record per decision */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} audit_records SEC(".maps");

/* records that found the ring buffer full, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} dropped_records SEC(".maps");

/* struct lsm_format, written by the loader */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lsm_format);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} format SEC(".maps");

/* x86-64 system call numbers (arch/x86/entry/syscalls/) */
#define NR_IOCTL 16
#define NR_USERFAULTFD 323
#define NR_X32_COMPAT_IOCTL 514
#define NR_I386_IOCTL 54
#define NR_I386_USERFAULTFD 374
#define X32_SYSCALL_BIT 0x40000000u
#define USERFAULTFD_IOC_NEW 0xaa00u
#define CAP_SYS_PTRACE 19

static const char uffd_name[] = "[userfaultfd]";

static __always_inline _Bool is_userfaultfd(const struct qstr *name)
{
	char buf[sizeof(uffd_name)] = {};

	if (bpf_probe_read_kernel_str(buf, sizeof(buf), name->name) !=
	    sizeof(uffd_name))
		return 0;
	for (int i = 0; i < (int)sizeof(uffd_name); i++)
		if (buf[i] != uffd_name[i])
			return 0;
	return 1;
}

/* The entry point and the flags register, from the registers the caller's
 * system call saved.  The number alone tells the table apart: the four
 * numbers that reach new_userfaultfd() are unused, or other calls, in the
 * other tables. */
static __always_inline enum lsm_entry read_entry(struct task_struct *task, __u64 *flags)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u32 nr = (__u32)regs->orig_ax;
	_Bool x32 = nr & X32_SYSCALL_BIT;

	nr &= ~X32_SYSCALL_BIT;
	if (nr == NR_USERFAULTFD) {
		*flags = regs->di;
		return x32 ? LSM_ENTRY_X32_SYSCALL : LSM_ENTRY_SYSCALL;
	}
	if (nr == NR_I386_USERFAULTFD && !x32) {
		*flags = regs->bx;
		return LSM_ENTRY_I386_SYSCALL;
	}
	if ((nr == NR_IOCTL && !x32) || (nr == NR_X32_COMPAT_IOCTL && x32)) {
		if ((__u32)regs->si != USERFAULTFD_IOC_NEW)
			return LSM_ENTRY_UNKNOWN;
		*flags = regs->dx;
		return x32 ? LSM_ENTRY_X32_IOCTL : LSM_ENTRY_IOCTL;
	}
	if (nr == NR_I386_IOCTL && !x32) {
		if ((__u32)regs->cx != USERFAULTFD_IOC_NEW)
			return LSM_ENTRY_UNKNOWN;
		*flags = regs->dx;
		return LSM_ENTRY_COMPAT_IOCTL;
	}
	return LSM_ENTRY_UNKNOWN;
}

/* capable(CAP_SYS_PTRACE): the bit in the effective set of the task's
 * subjective credentials, whose user namespace is the initial one. */
static __always_inline _Bool privileged(struct task_struct *task)
{
	const struct cred *cred = task->cred;
	__u64 effective = 0;

	/* kernel_cap_t is a __u32[2] before 6.3 and a __u64 since: read as a
	 * little-endian __u64, bit n is capability n in both. */
	bpf_core_read(&effective, sizeof(effective), &cred->cap_effective);
	return (effective >> CAP_SYS_PTRACE & 1) && cred->user_ns->level == 0;
}

/* The deepest cgroup entry on the caller's path to the root, else the
 * host default; copied under the lock.  The walk starts at the caller's
 * own level: most processes sit a few levels down. */
static __always_inline _Bool find_scope(struct task_struct *task, struct lsm_scope *out)
{
	struct lsm_scope *s = 0;
	int depth = task->cgroups->dfl_cgrp->level;

	for (int i = 0; i < LSM_MAX_DEPTH && !s; i++) {
		/* Deeper than any entry may be: its ancestors still count. */
		int level = (depth < LSM_MAX_DEPTH ? depth : LSM_MAX_DEPTH) - i;
		if (level <= 0)
			break;
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		if (id)
			s = bpf_map_lookup_elem(&scopes, &id);
	}
	if (!s) {
		__u64 host = LSM_HOST_KEY;
		s = bpf_map_lookup_elem(&scopes, &host);
	}
	if (!s)
		return 0;
	bpf_spin_lock(&s->lock);
	out->slot = s->slot;
	out->policy = s->policy;
	bpf_spin_unlock(&s->lock);
	return 1;
}

static __always_inline void count(__u32 slot, enum lsm_reason reason)
{
	struct lsm_counts *c = bpf_map_lookup_elem(&decision_counts, &slot);

	/* Atomic although per CPU: a preempted program shares the CPU. */
	if (c && reason < LSM_N_REASONS)
		__sync_fetch_and_add(&c->by_reason[reason], 1);
}

static __always_inline void audit(struct task_struct *task, const struct lsm_scope *s,
				  enum lsm_entry entry, __u64 flags, _Bool priv,
				  enum lsm_reason reason)
{
	struct lsm_record *r = bpf_ringbuf_reserve(&audit_records, sizeof(*r), 0);

	if (!r) {
		__u32 zero = 0;
		__u64 *dropped = bpf_map_lookup_elem(&dropped_records, &zero);
		if (dropped)
			__sync_fetch_and_add(dropped, 1);
		return;
	}
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	r->boot_ns = bpf_ktime_get_boot_ns();
	r->cgroup_id = bpf_get_current_cgroup_id();
	r->flags = flags;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->uid = (__u32)bpf_get_current_uid_gid();
	r->slot = s->slot;
	r->entry = entry;
	r->reason = reason;
	r->privileged = priv;
	r->reserved = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	/* No mm (a kernel thread): the read fails and leaves "". */
	r->exe[0] = 0;
	bpf_probe_read_kernel_str(r->exe, sizeof(r->exe),
				  task->mm->exe_file->f_path.dentry->d_name.name);
	bpf_ringbuf_submit(r, 0);
}

SEC("lsm/inode_init_security_anon")
int BPF_PROG(uffd_create, struct inode *inode, const struct qstr *name,
	     const struct inode *context_inode, int ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lsm_scope s;
	__u64 context = 0, flags = 0;
	enum lsm_entry entry;

	if (ret)
		return ret; /* already refused */
	if (!is_userfaultfd(name))
		return 0;
	if (!find_scope(task, &s))
		return 0; /* no policy anywhere: the kernel decides alone */

	/* The context inode is NULL for a new context and the parent's inode
	 * for a fork event.  Read as a scalar: the verifier treats the hook's
	 * pointer arguments as never NULL on some kernels and would prune a
	 * test of the pointer itself, taking every creation for a fork. */
	bpf_probe_read_kernel(&context, sizeof(context), &ctx[2]);
	if (context)
		entry = LSM_ENTRY_FORK_EVENT;
	else
		entry = read_entry(task, &flags);

	_Bool priv = privileged(task);
	enum lsm_reason reason = lsm_decide(&s.policy, priv, entry, flags);
	count(s.slot, reason);
	audit(task, &s, entry, flags, priv, reason);
	return -lsm_reason_errno(reason);
}

/* The default hierarchy (cgroup v2) is hierarchy 0. */
static __always_inline _Bool on_default_hierarchy(struct cgroup *cgrp)
{
	return cgrp->root->hierarchy_id == 0;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(scope_on_mkdir, struct cgroup *cgrp, const char *path)
{
	struct lsm_cgroup_path key = {};
	struct lsm_scope value = {};

	if (!on_default_hierarchy(cgrp))
		return 0;
	/* A path that does not fit cannot be an entry's (the loader refuses
	 * those): a truncated one must not match a shorter entry. */
	long n = bpf_probe_read_kernel_str(key.path, sizeof(key.path), path);
	if (n <= 0 || n >= (long)sizeof(key.path))
		return 0;
	__u64 id = cgrp->kn->id;
	/* Twice: an entry changed or removed by user space between our
	 * lookup and our update is seen by the second lookup, or user
	 * space's own write (or scan for the removed entry's ids) comes
	 * after our update. */
	for (int pass = 0; pass < 2; pass++) {
		struct lsm_scope *want = bpf_map_lookup_elem(&scope_paths, &key);
		if (!want) {
			if (pass)
				bpf_map_delete_elem(&scopes, &id);
			return 0;
		}
		bpf_spin_lock(&want->lock);
		value.slot = want->slot;
		value.policy = want->policy;
		bpf_spin_unlock(&want->lock);
		bpf_map_update_elem(&scopes, &id, &value, BPF_ANY);
	}
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(scope_on_rmdir, struct cgroup *cgrp, const char *path)
{
	if (!on_default_hierarchy(cgrp))
		return 0;
	__u64 id = cgrp->kn->id;
	bpf_map_delete_elem(&scopes, &id);
	return 0;
}
