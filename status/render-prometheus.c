// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `uffdguard status` in the Prometheus text exposition format (version
 * 0.0.4), for node_exporter's textfile collector: the verdict as a state
 * set, then the facts it rests on.  Names: uffdguard_<what>[_<unit>];
 * booleans are 0/1 gauges; a fact that could not be read is left out
 * rather than given a made-up value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "render.h"
#include "sysctl.h"

/* A label value with \, " and newline escaped, as the format wants. */
static void put_label(FILE *out, const char *value)
{
	for (const char *c = value; *c; c++) {
		if (*c == '\\' || *c == '"')
			fputc('\\', out);
		if (*c == '\n')
			fputs("\\n", out);
		else
			fputc(*c, out);
	}
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void write_probe(FILE *out, const struct probe_report *pr)
{
	family(out, "uffdguard_probe_created", "gauge",
	       "Whether the probe's identity created a userfaultfd this way (1) or was refused "
	       "(0); ways not tried are left out.");
	for (int w = 0; w < PROBE_N_WHO; w++) {
		const struct probe_identity *id = &pr->who[w];
		for (int way = 0; id->ran && way < PROBE_N_WAYS; way++) {
			if (!id->attempts[way].tried)
				continue;
			fprintf(out, "uffdguard_probe_created{identity=\"%s\",way=\"%s\"} %d\n",
				probe_who_name((enum probe_who)w),
				probe_way_name((enum probe_way)way),
				id->attempts[way].result == 0);
		}
	}
	family(out, "uffdguard_stall_held", "gauge",
	       "Whether an unprivileged process held the kernel at this stall point (1) or the "
	       "call failed at once (0).");
	for (int w = 0; w < PROBE_N_WHO; w++) {
		const struct probe_identity *id = &pr->who[w];
		for (int p = 0; id->ran && id->stall_run && p < STALL_N_POINTS; p++)
			if (id->stall[p].outcome != STALL_NOT_RUN)
				fprintf(out, "uffdguard_stall_held{identity=\"%s\",point=\"%s\"} %d\n",
					probe_who_name((enum probe_who)w),
					stall_point_name((enum stall_point)p),
					id->stall[p].delivered);
	}
	family(out, "uffdguard_stall_duration_seconds", "gauge",
	       "How long the call at this stall point stayed in the kernel: the whole hold when "
	       "held, else until it failed.");
	for (int w = 0; w < PROBE_N_WHO; w++) {
		const struct probe_identity *id = &pr->who[w];
		for (int p = 0; id->ran && id->stall_run && p < STALL_N_POINTS; p++) {
			const struct stall_result *r = &id->stall[p];
			if (r->outcome == STALL_NOT_RUN)
				continue;
			fprintf(out,
				"uffdguard_stall_duration_seconds{identity=\"%s\",point=\"%s\"} %.6f\n",
				probe_who_name((enum probe_who)w),
				stall_point_name((enum stall_point)p),
				r->delivered ? r->held_ms / 1e3 : r->took_us / 1e6);
		}
	}
	family(out, "uffdguard_stall_hold_seconds", "gauge",
	       "How long the stall probe's handler holds each fault.");
	fprintf(out, "uffdguard_stall_hold_seconds %.3f\n", pr->hold_ms / 1e3);
}

static void write_prometheus(FILE *out, const struct status_facts *f, const struct assessment *a,
			     int exit_code, const char *version)
{
	family(out, "uffdguard_build_info", "gauge",
	       "The uffdguard version and the kernel release it checked.");
	fprintf(out, "uffdguard_build_info{version=\"");
	put_label(out, version);
	fprintf(out, "\",kernel=\"");
	put_label(out, f->release);
	fprintf(out, "\"} 1\n");

	family(out, "uffdguard_status", "gauge",
	       "The verdict: 1 for the state that holds, 0 for the others.");
	for (int e = 0; e < EXPOSURE_N; e++)
		fprintf(out, "uffdguard_status{status=\"%s\"} %d\n", exposure_name((enum exposure)e),
			e == (int)a->exposure);
	family(out, "uffdguard_status_exit_code", "gauge", "The exit status of uffdguard status.");
	fprintf(out, "uffdguard_status_exit_code %d\n", exit_code);
	family(out, "uffdguard_status_complete", "gauge",
	       "Whether everything could be checked (0: see uffdguard status).");
	fprintf(out, "uffdguard_status_complete %d\n", a->complete);
	family(out, "uffdguard_status_reasons", "gauge",
	       "How many reasons the verdict gives, and how many come with a fix.");
	int fixes = 0;
	for (int i = 0; i < a->reasons.n; i++)
		fixes += a->fix[i] != NULL;
	fprintf(out, "uffdguard_status_reasons{kind=\"reason\"} %d\n", a->reasons.n);
	fprintf(out, "uffdguard_status_reasons{kind=\"fix\"} %d\n", fixes);
	fprintf(out, "uffdguard_status_reasons{kind=\"warning\"} %d\n", a->warnings.n);
	fprintf(out, "uffdguard_status_reasons{kind=\"not_checked\"} %d\n", a->not_checked.n);
	family(out, "uffdguard_status_last_run_timestamp_seconds", "gauge",
	       "When this check ran, in seconds since the epoch.");
	fprintf(out, "uffdguard_status_last_run_timestamp_seconds %lld\n", (long long)time(NULL));

	family(out, "uffdguard_kernel_userfaultfd", "gauge",
	       "Whether the kernel has userfaultfd, and the UFFD_USER_MODE_ONLY flag.");
	fprintf(out, "uffdguard_kernel_userfaultfd{feature=\"userfaultfd\"} %d\n",
		f->has_userfaultfd);
	if (f->flag_result == 0 || f->flag_result == -EINVAL)
		fprintf(out, "uffdguard_kernel_userfaultfd{feature=\"user_mode_only\"} %d\n",
			f->flag_result == 0);
	if (f->sysctl >= 0) {
		family(out, "uffdguard_sysctl_unprivileged_userfaultfd", "gauge",
		       "The value of vm.unprivileged_userfaultfd.");
		fprintf(out, "uffdguard_sysctl_unprivileged_userfaultfd %d\n", f->sysctl);
	}
	family(out, "uffdguard_device_present", "gauge",
	       "Whether the device node (/dev/userfaultfd) exists.");
	fprintf(out, "uffdguard_device_present{path=\"");
	put_label(out, f->device);
	fprintf(out, "\"} %d\n", f->device_stat == 0);
	family(out, "uffdguard_device_unprivileged_access", "gauge",
	       "How many identities other than root can open the device node (owner, group, "
	       "ACL entries, others).");
	fprintf(out, "uffdguard_device_unprivileged_access{path=\"");
	put_label(out, f->device);
	fprintf(out, "\"} %d\n", f->device_access.n);

	const struct status_lsm *l = &f->lsm;
	if (l->state_err == 0) {
		family(out, "uffdguard_bpf_lsm_enforcing", "gauge",
		       "Whether uffdguard's BPF LSM program is attached and enforcing.");
		fprintf(out, "uffdguard_bpf_lsm_enforcing %d\n", l->enforcing);
	}
	if (l->state_err == 0 && l->enforcing) {
		family(out, "uffdguard_bpf_lsm_scopes", "gauge",
		       "The BPF LSM's scopes (the host default and cgroup entries).");
		fprintf(out, "uffdguard_bpf_lsm_scopes %zu\n", l->state.n_scopes);
		family(out, "uffdguard_bpf_lsm_audit_dropped_total", "counter",
		       "BPF LSM audit records lost because the ring buffer was full.");
		fprintf(out, "uffdguard_bpf_lsm_audit_dropped_total %llu\n",
			(unsigned long long)l->state.dropped);
	}
	if (f->marker_ours) {
		family(out, "uffdguard_process_policy_info", "gauge",
		       "The uffdguard policy in force on the process tree status ran in.");
		fprintf(out, "uffdguard_process_policy_info{mode=\"%s\",policy=\"%s\"} 1\n",
			enforcer_info(f->marker_enforcer)->mode, policy_name(&f->marker_policy));
	}
	write_probe(out, &f->probe);
}

char *status_render_prometheus(const struct status_facts *f, const struct assessment *a,
			       int exit_code, const char *version)
{
	char *text = NULL;
	size_t len;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	write_prometheus(out, f, a, exit_code, version);
	if (ferror(out) | fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}
