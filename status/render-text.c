// SPDX-License-Identifier: GPL-2.0-or-later
/* `uffdguard status` as a table for people. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "render.h"
#include "sysctl.h"

static void mode_string(mode_t m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	out[0] = S_ISCHR(m) ? 'c' : S_ISBLK(m) ? 'b' : S_ISDIR(m) ? 'd' : S_ISREG(m) ? '-' : '?';
	for (int i = 0; i < 9; i++)
		out[i + 1] = m & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

/* SGR sequences, or nothing when the output is not for a colour terminal. */
struct colours {
	const char *verdict, *fix, *off;
};

static void write_list(FILE *out, const char *title, const struct status_list *l,
		       char *const *fix, const struct colours *c)
{
	for (int i = 0; i < l->n; i++) {
		fprintf(out, "  %s %s\n", title, l->item[i]);
		if (fix && fix[i])
			fprintf(out, "    %sfix:%s %s\n", c->fix, c->off, fix[i]);
	}
}

static void write_stall(FILE *out, const struct stall_result *r)
{
	switch (r->outcome) {
	case STALL_HELD:
		fprintf(out, "held %.0f ms (unbounded)\n", r->held_ms);
		break;
	case STALL_REFUSED:
		fprintf(out, "refused with EFAULT in %.0f µs\n", r->took_us);
		break;
	case STALL_TIMEOUT:
		fprintf(out, "%s at the deadline after %.0f ms\n",
			r->delivered ? "still held" : "still running", r->held_ms);
		break;
	case STALL_ERROR:
		fprintf(out, "failed with %s in %.0f µs, no fault delivered\n",
			status_errname(r->err), r->took_us);
		break;
	default:
		fprintf(out, "not run\n");
	}
}

static void write_lsm(FILE *out, const struct status_lsm *l)
{
	const struct lsm_state *st = &l->state;
	size_t entries = 0;

	for (size_t i = 0; i < st->n_scopes; i++)
		entries += st->scopes[i].cgroup[0] != 0;
	fprintf(out, "bpf lsm         ");
	if (l->state_err == -EPERM)
		fprintf(out, "not read (needs root); %s\n",
			l->support_err ? l->why_not : "it can work here");
	else if (l->enforcing)
		fprintf(out, "enforcing (program id %u): %zu scope%s, %zu of them cgroup entries; "
			"here: %s\n", st->prog_id, st->n_scopes, st->n_scopes == 1 ? "" : "s", entries,
			l->own_scope < 0			   ? "no scope"
			: st->scopes[l->own_scope].cgroup[0] ? st->scopes[l->own_scope].cgroup
							      : "the host default");
	else if (st->pinned)
		fprintf(out, "pinned in %s but not enforcing\n", LSM_PIN_DIR);
	else if (l->support_err)
		fprintf(out, "not loaded; it cannot work here: %s\n", l->why_not);
	else
		fprintf(out, "not loaded (active LSMs: %s)\n", l->support.active_lsms);
}

static void write_text(FILE *out, const struct status_facts *f, const struct assessment *a,
		       int exit_code, bool colour)
{
	char buf[1024], mode[11];

	fprintf(out, "kernel          Linux %s\n", f->release);
	if (f->flag_result == -ENOSYS)
		fprintf(out, "userfaultfd(2)  %s: %s\n", f->has_userfaultfd ? "blocked" : "absent",
			f->flag_why);
	else if (f->flag_result == -EINVAL)
		fprintf(out,
			"userfaultfd(2)  present; UFFD_USER_MODE_ONLY not supported (EINVAL)\n");
	else if (f->flag_result < 0)
		fprintf(out, "userfaultfd(2)  present; UFFD_USER_MODE_ONLY not checked: %s\n",
			f->flag_why);
	else
		fprintf(out, "userfaultfd(2)  present; UFFD_USER_MODE_ONLY supported\n");
	if (f->api_result == 0) {
		libuffd_format_features(f->api.features, " ", buf, sizeof(buf));
		fprintf(out, "features        %s\n", buf);
		libuffd_format_ioctls(f->api.ioctls, " ", buf, sizeof(buf));
		fprintf(out, "ioctls          %s\n", buf);
	}
	if (f->sysctl >= 0)
		fprintf(out, "sysctl          %s = %d (%s): %s\n", SYSCTL_NAME, f->sysctl,
			sysctl_policy_name(f->sysctl, f->new_semantics),
			sysctl_meaning(f->sysctl, f->new_semantics));
	else if (!f->proc_mounted)
		fprintf(out, "sysctl          %s: could not read %s: /proc is not mounted\n",
			SYSCTL_NAME, SYSCTL_PATH);
	else
		fprintf(out, "sysctl          %s: could not read %s: %s\n", SYSCTL_NAME,
			SYSCTL_PATH, strerror(-f->sysctl));
	write_lsm(out, &f->lsm);

	if (f->device_stat < 0) {
		fprintf(out, "device          %s: %s\n", f->device, strerror(-f->device_stat));
	} else {
		mode_string(f->device_st.st_mode, mode);
		fprintf(out, "device          %s%s: %s %s:%s%s%s\n", f->device,
			f->device_testing ? " (--device)" : "", mode,
			status_user_name(f->device_st.st_uid),
			status_group_name(f->device_st.st_gid), f->n_acl ? " +ACL" : "",
			f->device_is_uffd ? "" : " (not the userfaultfd device)");
		if (!f->device_access.n)
			fprintf(out, "                only root can open it\n");
		for (int i = 0; i < f->device_access.n; i++)
			fprintf(out, "                %s can open it%s\n", f->device_access.item[i],
				i == f->device_access.n - 1 ? ", bypassing the sysctl" : "");
	}

	static const char *const seccomp_modes[] = { "disabled", "strict", "filter" };
	fprintf(out, "process         uid %u; ", (unsigned)f->uid);
	if (f->seccomp >= 0 && f->seccomp <= 2 && f->seccomp_filters >= 0)
		fprintf(out, "seccomp %s, %ld filter%s; ", seccomp_modes[f->seccomp],
			f->seccomp_filters, f->seccomp_filters == 1 ? "" : "s");
	else
		fprintf(out, "seccomp state could not be read from /proc/self/status%s; ",
			f->proc_mounted ? "" : " (/proc is not mounted)");
	if (f->marker_ours)
		fprintf(out, "uffdguard %s in force, policy %s\n",
			enforcer_info(f->marker_enforcer)->noun, policy_name(&f->marker_policy));
	else if (f->marker_err == EINVAL)
		fprintf(out, "no uffdguard policy in force\n");
	else
		fprintf(out, "no uffdguard policy; a seccomp filter answers userfaultfd with %s\n",
			status_errname(f->marker_err));

	const struct probe_report *pr = &f->probe;
	/* One row a way, one column an identity that ran. */
	fprintf(out, "\nlive probe (forked children)\n");
	for (int row = -1; row < PROBE_N_WAYS; row++) {
		int used = snprintf(buf, sizeof(buf), "  %-24s",
				    row < 0 ? "" : probe_way_name((enum probe_way)row));
		for (int w = 0; w < PROBE_N_WHO; w++) {
			char cell[64];
			if (!pr->who[w].ran)
				continue;
			if (row < 0)
				snprintf(cell, sizeof(cell), "uid %u%s", (unsigned)pr->who[w].uid,
					 w == PROBE_PTRACE ? " +CAP_SYS_PTRACE"
					 : w == PROBE_SELF ? " (caller)"
							   : "");
			else
				snprintf(cell, sizeof(cell), "%s",
					 status_errname(pr->who[w].attempts[row].result));
			used += snprintf(buf + used, sizeof(buf) - (size_t)used, "%-26s", cell);
		}
		while (used > 0 && buf[used - 1] == ' ')
			buf[--used] = '\0';
		fprintf(out, "%s\n", buf);
	}
	for (int w = 0; w < PROBE_N_WHO && !pr->who[PROBE_SELF].ran; w++)
		if (!pr->who[w].ran && w != PROBE_SELF)
			fprintf(out, "  %s probe not run: %s\n", probe_who_name((enum probe_who)w),
				pr->who[w].why_not);

	const struct probe_identity *u = status_unprivileged(f);
	if (u && u->stall_run) {
		fprintf(out, "\nstall probe (uid %u, descriptor %s, hold %d ms)\n",
			(unsigned)u->uid, probe_way_name((enum probe_way)u->stall_way),
			pr->hold_ms);
		for (int p = 0; p < STALL_N_POINTS; p++) {
			fprintf(out, "  %-24s", stall_point_label((enum stall_point)p));
			write_stall(out, &u->stall[p]);
		}
	} else if (u) {
		fprintf(out, "\nstall probe not run: %s\n", u->stall_why_not);
	}

	fprintf(out, "\nnot closed by userfaultfd policy\n  FUSE          ");
	if (f->fuse_stat < 0) {
		fprintf(out, "/dev/fuse: %s", strerror(-f->fuse_stat));
	} else {
		mode_string(f->fuse_st.st_mode, mode);
		fprintf(out, "/dev/fuse %s %s:%s", mode, status_user_name(f->fuse_st.st_uid),
			status_group_name(f->fuse_st.st_gid));
		if (u)
			fprintf(out, ", unprivileged open: %s", status_errname(u->fuse_open));
	}
	fprintf(out, "; setuid fusermount: %s\n", f->fusermount.n ? f->fusermount.item[0] : "none");

	static const char *const verdict_sgr[EXPOSURE_N] = {
		[EXPOSURE_PROTECTED] = "\033[1;32m",
		[EXPOSURE_EXPOSED] = "\033[1;31m",
		[EXPOSURE_UNAVAILABLE] = "\033[1m",
		[EXPOSURE_UNDETERMINED] = "\033[1;33m",
	};
	const struct colours c = colour ? (struct colours){ verdict_sgr[a->exposure], "\033[1m",
							    "\033[0m" }
					: (struct colours){ "", "", "" };
	fprintf(out, "\nverdict: %s%s%s (exit %d)\n", c.verdict, exposure_name(a->exposure), c.off,
		exit_code);
	write_list(out, "-", &a->reasons, a->fix, &c);
	write_list(out, "! warning:", &a->warnings, NULL, &c);
	write_list(out, "? not checked:", &a->not_checked, NULL, &c);
}

char *status_render_text(const struct status_facts *f, const struct assessment *a, int exit_code,
			 bool colour)
{
	char *text = NULL;
	size_t len;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	write_text(out, f, a, exit_code, colour);
	if (ferror(out) | fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}
