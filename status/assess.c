// SPDX-License-Identifier: GPL-2.0-or-later
/* The conclusion of `uffdguard status`, with its reasons. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assess.h"
#include "sysctl.h"

/* The command that removes the reason just added (none when the list
 * was full and dropped it). */
__attribute__((format(printf, 3, 4))) static void fix(struct assessment *a, int reasons_before,
						     const char *fmt, ...)
{
	int i = a->reasons.n - 1;
	va_list ap;

	if (i < reasons_before || a->fix[i])
		return;
	va_start(ap, fmt);
	if (vasprintf(&a->fix[i], fmt, ap) < 0) {
		a->fix[i] = NULL;
		a->reasons.failed = true;
	}
	va_end(ap);
}

/* What closes userfaultfd(2) without the flag for unprivileged callers:
 * the kernel's own knob, now and at boot. */
static const char *sysctl_fix(const struct status_facts *f)
{
	return f->new_semantics
		       ? "uffdguard sysctl apply user-mode-only --persist (sets "
			 "vm.unprivileged_userfaultfd = 0 now and at every boot)"
		       : "uffdguard sysctl apply deny --persist --force (before Linux 5.11, "
			 "vm.unprivileged_userfaultfd = 0 denies unprivileged callers)";
}

/* What closes a device node others can open: its file mode, kept at boot
 * by a udev rule; or the BPF LSM, which decides whoever opens it. */
static void device_fix(const struct status_facts *f, struct assessment *a, int before)
{
	fix(a, before,
	    "%s%s%schown root:root %s && chmod 0600 %s (keep it at boot with a udev rule: "
	    "KERNEL==\"userfaultfd\", OWNER=\"root\", GROUP=\"root\", MODE=\"0600\"), "
	    "or 'uffdguard lsm apply --host --policy user-mode-only', which decides the "
	    "device's descriptors whoever opens it",
	    f->n_acl ? "setfacl -b " : "", f->n_acl ? f->device : "", f->n_acl ? " && " : "",
	    f->device, f->device);
}

/* Whether the attempt was made and created a descriptor. */
static bool created(const struct probe_identity *u, enum probe_way way)
{
	return u->attempts[way].tried && u->attempts[way].result == 0;
}

/* A flag-less attempt that failed before any permission check (out of
 * descriptors or memory, interrupted, cut off by the deadline) proves
 * nothing either way.  An errno a seccomp filter gives every userfaultfd
 * call (the marker call got it too) is that filter's refusal. */
static bool inconclusive(const struct status_facts *f, const struct probe_identity *u,
			 enum probe_way way)
{
	const struct probe_attempt *a = &u->attempts[way];
	int e = -a->result;

	if (!a->tried)
		return true;
	if (way == PROBE_SYSCALL && !f->marker_ours && e == f->marker_err)
		return false;
	return e == EMFILE || e == ENFILE || e == ENOMEM || e == EAGAIN || e == EINTR;
}

/* Whether the kernel makes USERFAULTFD_IOC_NEW follow the sysctl (the
 * series in kernel/) and the sysctl refuses unprivileged callers a
 * flag-less descriptor: then opening the device gives them nothing more. */
static bool kernel_covers_device(const struct status_facts *f)
{
	return f->covers_dev == 1 && f->sysctl != 1;
}

/* Whether p lets an unprivileged caller create a descriptor without the
 * flag by this path. */
static bool allows_flagless(const struct policy *p, enum call_path path)
{
	struct call c = { .path = path, .flags = 0 };
	return policy_decide(p, false, &c) == VERDICT_ALLOW;
}

static const char *scope_name(const struct lsm_scope_state *s, char *buf, size_t size)
{
	if (!s->cgroup[0])
		return "the host default";
	snprintf(buf, size, "cgroup %s", s->cgroup);
	return buf;
}

/* What the BPF LSM does for the exposure, in a's lists.  *exposed: a
 * scope the probe did not run in lets unprivileged processes hold the
 * kernel.  Returns whether every process is under a scope that refuses
 * them a flag-less USERFAULTFD_IOC_NEW (the device is covered, whoever
 * can open it). */
static bool assess_lsm(const struct status_facts *f, struct assessment *a, bool *exposed)
{
	const struct status_lsm *l = &f->lsm;
	const struct lsm_state *st = &l->state;
	/* What the kernel alone (the sysctl) and the device's permissions
	 * leave open to unprivileged callers. */
	bool sysctl_allows_flagless = f->sysctl == 1;
	bool device_open = f->device_is_uffd && f->device_access.n > 0 && !kernel_covers_device(f);
	char name[LSM_PATH_MAX + 16];

	*exposed = false;
	if (l->state_err == -EPERM) {
		a->complete = false;
		status_list_add(&a->not_checked,
				"the BPF LSM state: reading " LSM_PIN_DIR " needs root");
		return false;
	}
	if (l->state_err < 0) {
		a->complete = false;
		status_list_add(&a->not_checked, "the BPF LSM state: %s", l->state_why);
		return false;
	}
	if (st->pinned && !st->format_ok) {
		status_list_add(&a->warnings,
				"%s holds BPF LSM maps of format %u, which this uffdguard does not "
				"read: 'uffdguard lsm remove' removes them",
				LSM_PIN_DIR, st->format_version);
		return false;
	}
	if (st->pinned && !st->enforcing) {
		status_list_add(&a->warnings,
				"the BPF LSM maps are pinned but its program is not attached: it "
				"enforces nothing ('uffdguard lsm apply' or 'remove')");
		return false;
	}
	if (st->enforcing && !l->support.bpf_active) {
		status_list_add(&a->warnings, "the BPF LSM program is loaded but never runs: %s",
				l->why_not);
		return false;
	}
	if (!l->enforcing)
		return false;

	if (l->own_scope >= 0) {
		const struct lsm_scope_state *s = &st->scopes[l->own_scope];
		char knobs[256];
		policy_format(&s->policy, knobs, sizeof(knobs));
		status_list_add(&a->reasons,
				"the BPF LSM program (id %u) decides for this process's cgroup %s "
				"with %s: %s (%s)",
				st->prog_id, l->cgroup[0] ? l->cgroup : "?",
				scope_name(s, name, sizeof(name)), policy_name(&s->policy), knobs);
	} else {
		status_list_add(&a->reasons,
				"the BPF LSM program (id %u) is loaded, but no scope covers this "
				"process's cgroup %s: the kernel decides alone there",
				st->prog_id, l->cgroup[0] ? l->cgroup : "?");
	}

	/* The scopes the probe did not run in.  Without a host default,
	 * processes outside every entry are the kernel's alone. */
	bool host = false, covers = true;
	for (size_t i = 0; i < st->n_scopes; i++) {
		const struct lsm_scope_state *s = &st->scopes[i];
		host |= !s->cgroup[0];
		bool sys = allows_flagless(&s->policy, CALL_SYSCALL) && sysctl_allows_flagless;
		bool dev = allows_flagless(&s->policy, CALL_DEVICE_IOCTL);
		covers &= !dev;
		if ((ssize_t)i == l->own_scope || !(sys || (dev && device_open)))
			continue;
		*exposed = true;
		int before = a->reasons.n;
		status_list_add(&a->reasons,
				"unprivileged processes under %s can create descriptors that handle "
				"kernel-mode faults: the BPF LSM policy there is %s%s",
				scope_name(s, name, sizeof(name)), policy_name(&s->policy),
				sys ? " and vm.unprivileged_userfaultfd allows it"
				    : ", which leaves /dev/userfaultfd to its file permissions");
		if (s->cgroup[0])
			fix(a, before, "uffdguard lsm apply --cgroup %s --policy user-mode-only",
			    s->cgroup);
		else
			fix(a, before, "uffdguard lsm apply --host --policy user-mode-only");
	}
	if (!host && l->own_scope >= 0 && (sysctl_allows_flagless || device_open)) {
		*exposed = true;
		int before = a->reasons.n;
		status_list_add(&a->reasons,
				"unprivileged processes outside every BPF LSM cgroup entry are left "
				"to the kernel, which lets them create descriptors that handle "
				"kernel-mode faults (no host default is applied)");
		fix(a, before, "uffdguard lsm apply --host --policy user-mode-only");
	}
	if (st->dropped)
		status_list_add(&a->warnings,
				"%" PRIu64 " BPF LSM audit records were lost (the ring buffer was "
				"full): is uffdguard-lsm-audit.service running?",
				st->dropped);
	return host && covers;
}

static void conclude(const struct status_facts *f, bool lsm_exposed, bool lsm_covers_device,
		     struct assessment *a)
{
	const struct probe_identity *u = status_unprivileged(f);
	char held[256] = "";
	size_t used = 0;

	a->complete = true;
	if (!f->has_userfaultfd) {
		a->exposure = EXPOSURE_UNAVAILABLE;
		status_list_add(
			&a->reasons,
			"this kernel has no userfaultfd (no %s, userfaultfd(2) fails with ENOSYS)",
			SYSCTL_PATH);
		return;
	}
	if (f->marker_ours) {
		char desc[256];
		policy_format(&f->marker_policy, desc, sizeof(desc));
		status_list_add(&a->reasons,
				"uffdguard %s enforces policy %s on this process tree (%s)",
				enforcer_info(f->marker_enforcer)->noun,
				policy_name(&f->marker_policy), desc);
	}
	/* Another seccomp filter answered for this process: the verdict is
	 * that filter's, while processes outside it follow the host's knob. */
	if (!f->marker_ours && f->marker_err != EINVAL && f->new_semantics && f->sysctl == 1 &&
	    !f->lsm.enforcing)
		status_list_add(&a->warnings,
				"a seccomp filter that is not uffdguard's answers userfaultfd(2) "
				"here with %s: the verdict is that filter's, and processes outside "
				"it follow %s = 1, which lets them create descriptors that handle "
				"kernel-mode faults (run uffdguard status outside the filter, e.g. "
				"outside the container, to see the host's own policy)",
				status_errname(f->marker_err), SYSCTL_NAME);
	if (!u) {
		/* Nothing was tried as an unprivileged process: no evidence
		 * either way, so no "protected". */
		a->complete = false;
		a->exposure = EXPOSURE_UNDETERMINED;
		status_list_add(
			&a->not_checked, "no unprivileged probe could run: %s",
			f->probe.who[PROBE_SELF].ran ? "the caller cannot switch to another uid, "
						       "and has CAP_SYS_PTRACE itself"
			: f->probe.who[PROBE_UNPRIV].why_not[0] ? f->probe.who[PROBE_UNPRIV].why_not
								: f->probe.who[PROBE_SELF].why_not);
		status_list_add(&a->reasons,
				"not determined: no process without privileges could be tried");
		return;
	}

	int n_held = 0;
	double least = 0;
	bool cut = false; /* a hold was cut short by the deadline */
	for (int p = 0; p < STALL_N_POINTS; p++) {
		if (!u->stall[p].delivered)
			continue;
		if (!n_held || u->stall[p].held_ms < least)
			least = u->stall[p].held_ms;
		cut |= u->stall[p].outcome == STALL_TIMEOUT;
		n_held++;
		used += (size_t)snprintf(held + used, used < sizeof(held) ? sizeof(held) - used : 0,
					 "%s%s", n_held > 1 ? ", " : "",
					 stall_point_name((enum stall_point)p));
	}
	bool flagless = created(u, PROBE_SYSCALL) || created(u, PROBE_DEVICE);
	/* The device ignores the sysctl: whoever else can open it (a group,
	 * an ACL entry, a non-root owner) can hold the kernel, unless the
	 * uffdguard policy in force refuses its flag-less ioctl. */
	struct call dev_call = { .path = CALL_DEVICE_IOCTL, .flags = 0 };
	bool device_covered = (f->marker_ours &&
			       policy_decide(&f->marker_policy, false, &dev_call) == VERDICT_EPERM) ||
			      lsm_covers_device || kernel_covers_device(f);
	bool device_open_to_others = f->device_is_uffd && f->device_access.n && !device_covered &&
				     !created(u, PROBE_DEVICE);
	if (n_held) {
		a->exposure = EXPOSURE_EXPOSED;
		status_list_add(
			&a->reasons,
			"a process as uid %u without capabilities held the kernel inside %s "
			"for %s %.0f ms, with a descriptor from %s",
			(unsigned)u->uid, held, cut ? "at least" : "the whole hold,", least,
			probe_way_name((enum probe_way)u->stall_way));
	} else if (flagless) {
		/* The stall probe could not show it, but the descriptor says it. */
		a->exposure = EXPOSURE_EXPOSED;
		status_list_add(
			&a->reasons,
			"a process as uid %u without capabilities created a descriptor that "
			"handles kernel-mode faults (%s)",
			(unsigned)u->uid,
			u->attempts[PROBE_SYSCALL].result == 0 ? "userfaultfd(2) without the flag"
							       : "the device without the flag");
	} else if (device_open_to_others) {
		a->exposure = EXPOSURE_EXPOSED;
		int before = a->reasons.n;
		status_list_add(&a->reasons,
				"%s can open %s, which handles kernel-mode faults whatever %s "
				"says",
				f->device_access.item[0], f->device, SYSCTL_NAME);
		device_fix(f, a, before);
	} else if (lsm_exposed) {
		a->exposure = EXPOSURE_EXPOSED; /* the reason is the BPF LSM's */
	} else if (inconclusive(f, u, PROBE_SYSCALL)) {
		a->exposure = EXPOSURE_UNDETERMINED;
		status_list_add(&a->reasons,
				"not determined: the flag-less userfaultfd(2) attempt failed "
				"for a reason that is no refusal");
	} else {
		a->exposure = EXPOSURE_PROTECTED;
	}
	static const enum probe_way flagless_ways[] = { PROBE_SYSCALL, PROBE_DEVICE };
	for (size_t i = 0; i < 2; i++) {
		enum probe_way w = flagless_ways[i];
		if (created(u, w) || !inconclusive(f, u, w))
			continue;
		a->complete = false;
		status_list_add(&a->not_checked, "the %s attempt %s%s, which is no refusal",
				probe_way_name(w),
				u->attempts[w].tried ? "failed with " : "was not made",
				u->attempts[w].tried ? status_errname(u->attempts[w].result) : "");
	}
	int before = a->reasons.n;
	if (created(u, PROBE_SYSCALL) && f->sysctl >= 0)
		status_list_add(&a->reasons,
				"userfaultfd(2) without UFFD_USER_MODE_ONLY is allowed to "
				"unprivileged processes (%s = %d: %s)",
				SYSCTL_NAME, f->sysctl,
				sysctl_meaning(f->sysctl, f->new_semantics));
	else if (created(u, PROBE_SYSCALL))
		status_list_add(&a->reasons,
				"userfaultfd(2) without UFFD_USER_MODE_ONLY is allowed to "
				"unprivileged processes (%s could not be read: %s)",
				SYSCTL_NAME, strerror(-f->sysctl));
	else
		status_list_add(&a->reasons,
				"userfaultfd(2) without UFFD_USER_MODE_ONLY is refused to "
				"unprivileged processes (%s)",
				status_errname(u->attempts[PROBE_SYSCALL].result));
	if (created(u, PROBE_SYSCALL))
		fix(a, before, "%s", sysctl_fix(f));
	before = a->reasons.n;
	if (created(u, PROBE_DEVICE) && f->covers_dev == 1) {
		status_list_add(&a->reasons, "%s is open to unprivileged processes and follows %s, "
				"which allows it", f->device, SYSCTL_NAME);
		fix(a, before, "%s", sysctl_fix(f));
	} else if (created(u, PROBE_DEVICE)) {
		status_list_add(&a->reasons, "%s is open to unprivileged processes and ignores %s",
				f->device, SYSCTL_NAME);
		device_fix(f, a, before);
	} else
		status_list_add(&a->reasons, "%s is not usable by unprivileged processes (%s)",
				f->device, status_errname(u->attempts[PROBE_DEVICE].result));
	if (!n_held && u->stall_run) {
		bool all_refused = true;
		for (int p = 0; p < STALL_N_POINTS; p++)
			all_refused &= u->stall[p].outcome == STALL_REFUSED;
		if (all_refused)
			status_list_add(&a->reasons,
					"with the best descriptor it could get (%s) every stall "
					"point failed at once with EFAULT",
					probe_way_name((enum probe_way)u->stall_way));
	}
	if (f->sysctl < 0 && f->sysctl != -ENOENT) {
		a->complete = false;
		status_list_add(&a->not_checked, "%s could not be read: %s", SYSCTL_PATH,
				strerror(-f->sysctl));
	}
	if (!f->proc_mounted) {
		a->complete = false;
		status_list_add(&a->not_checked,
				"/proc is not mounted here: %s, this process's seccomp state "
				"and its cgroup could not be read (mount it: mount -t proc proc "
				"/proc)",
				SYSCTL_PATH);
	}
	if (u->timed_out) {
		a->complete = false;
		status_list_add(&a->not_checked, "the probe was stopped at its deadline (%d ms)",
				f->probe.timeout_ms);
	}
	if (u == &f->probe.who[PROBE_SELF]) {
		a->complete = false;
		status_list_add(&a->not_checked,
				"not root: the probe ran as the caller (uid %u), not as an unused "
				"uid; identities with other groups or ACL entries were not tried",
				(unsigned)f->uid);
		status_list_add(&a->not_checked, "not root: the CAP_SYS_PTRACE probe was skipped");
	}
	if (f->covers_dev >= 0)
		status_list_add(&a->reasons, "%s = %d: %s", SYSCTL_COVERS_DEV_NAME, f->covers_dev,
				sysctl_covers_dev_meaning(f->covers_dev));
	for (int i = 0; i < f->device_access.n; i++)
		if (!created(u, PROBE_DEVICE) && kernel_covers_device(f))
			status_list_add(&a->warnings, "%s can open %s, which follows %s (%s = 1)",
					f->device_access.item[i], f->device, SYSCTL_NAME,
					SYSCTL_COVERS_DEV_NAME);
		else if (!created(u, PROBE_DEVICE))
			status_list_add(&a->warnings, "%s can open %s, which ignores %s%s",
					f->device_access.item[i], f->device, SYSCTL_NAME,
					device_covered
						? " (the uffdguard policy in force covers it here)"
						: ": they can hold the kernel");
	if (u->fuse_open == 0 || f->fusermount.n)
		status_list_add(&a->warnings,
				"unprivileged FUSE is possible (%s): a FUSE server can also stall "
				"the kernel, which no userfaultfd policy closes",
				u->fuse_open == 0 ? "/dev/fuse is open to it"
						  : f->fusermount.item[0]);
}

/* Move from's sentences to the end of to (dropping what does not fit,
 * as status_list_add() does), with their fixes when there are any. */
static void list_append(struct status_list *to, char **to_fix, struct status_list *from,
			char **from_fix)
{
	for (int i = 0; i < from->n; i++) {
		char *fx = from_fix ? from_fix[i] : NULL;
		if (to->n < STATUS_LIST_MAX) {
			if (to_fix)
				to_fix[to->n] = fx;
			to->item[to->n++] = from->item[i];
		} else {
			free(from->item[i]);
			free(fx);
		}
		if (from_fix)
			from_fix[i] = NULL;
	}
	to->failed |= from->failed;
	from->n = 0;
}

/* An exposure whose reasons name no fix of their own: the scopes that
 * decide for every process. */
static void generic_fix(const struct status_facts *f, struct assessment *a)
{
	for (int i = 0; i < a->reasons.n; i++)
		if (a->fix[i])
			return;
	if (!a->reasons.n)
		return;
	if (asprintf(&a->fix[0], "%s",
		     f->lsm.support_err == 0
			     ? "uffdguard lsm apply --host --policy user-mode-only (the BPF "
			       "LSM decides every creation on this host)"
			     : "uffdguard run --policy user-mode-only -- COMMAND, for each "
			       "service that must not hold the kernel (this kernel cannot run "
			       "the BPF LSM)") < 0) {
		a->fix[0] = NULL;
		a->reasons.failed = true;
	}
}

int status_assess(const struct status_facts *f, bool accept_partial, struct assessment *a)
{
	/* The BPF LSM first, for the verdict; its sentences come after the
	 * probe's. */
	struct assessment lsm = { .complete = true };
	bool lsm_exposed;
	bool lsm_covers_device = assess_lsm(f, &lsm, &lsm_exposed);

	*a = (struct assessment){ 0 };
	conclude(f, lsm_exposed, lsm_covers_device, a);
	list_append(&a->reasons, a->fix, &lsm.reasons, lsm.fix);
	list_append(&a->warnings, NULL, &lsm.warnings, NULL);
	list_append(&a->not_checked, NULL, &lsm.not_checked, NULL);
	a->complete &= lsm.complete;
	if (a->exposure == EXPOSURE_EXPOSED)
		generic_fix(f, a);
	/* What could not be checked may be what exposes the host: no
	 * "protected" from part of the evidence, unless asked for. */
	if (a->exposure == EXPOSURE_PROTECTED && !a->complete) {
		if (accept_partial) {
			status_list_add(&a->reasons,
					"protected as far as it could be checked (--accept-partial): "
					"see what was not checked");
		} else {
			a->exposure = EXPOSURE_UNDETERMINED;
			status_list_add(&a->reasons,
					"not determined: the check is incomplete (see what was not "
					"checked); run it as root, or pass --accept-partial to take "
					"the verdict of what could be checked");
		}
	}
	return a->reasons.failed || a->not_checked.failed || a->warnings.failed ? -ENOMEM : 0;
}

void assessment_fini(struct assessment *a)
{
	for (int i = 0; i < STATUS_LIST_MAX; i++) {
		free(a->fix[i]);
		a->fix[i] = NULL;
	}
	status_list_free(&a->reasons);
	status_list_free(&a->not_checked);
	status_list_free(&a->warnings);
}

const char *exposure_name(enum exposure e)
{
	static const char *const names[EXPOSURE_N] = {
		[EXPOSURE_PROTECTED] = "protected",
		[EXPOSURE_EXPOSED] = "exposed",
		[EXPOSURE_UNAVAILABLE] = "unavailable",
		[EXPOSURE_UNDETERMINED] = "undetermined",
	};
	return (unsigned)e < EXPOSURE_N ? names[e] : "?";
}
