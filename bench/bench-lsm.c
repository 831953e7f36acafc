// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cost of `uffdguard lsm`, side by side in one run.
 *
 * In this process: the BPF LSM program is loaded (not pinned; host policy
 * user-mode-only) and its link attached and detached round after round;
 * each round times a getpid() loop, an ioctl(FIONREAD) loop and single
 * userfaultfd() calls (with the flag: allowed, decided and audited; the
 * records are read between chunks, outside the timing) with the program
 * and without it, in alternating order, plus a second "without" whose
 * ratio to the first is the noise of this machine.  Ratios are taken
 * within each round, so that drift cancels.
 *
 * Then userfaultfd() under `uffdguard run --mode supervise`, in fresh
 * processes alternating with bare ones.
 *
 * Prints medians and ratios; run as root on a kernel that loads BPF LSM
 * programs.  Not a test: under emulation only the ratios mean something,
 * and on a shared host they carry its noise (the "noise" column); QEMU's
 * -icount shift=0,sleep=off makes the guest's clock count instructions,
 * which gives ratios of the work done, the same run after run.
 *
 *   bench-lsm [--uffdguard PATH] [--rounds N]
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lsm.h"
#include "calls.h"
#include "uffdguard.skel.h"

#define LOOP_ITERS 20000
#define UFFD_CALLS 200
#define SUPERVISED_RUNS 5
#define SETTLE_US 50000

static double getpid_loop(void)
{
	return getpid_ns(LOOP_ITERS);
}

static int pipe_fds[2];

static double ioctl_loop(void)
{
	int n;
	double t0 = now_ns();
	for (int i = 0; i < LOOP_ITERS; i++)
		ioctl(pipe_fds[0], FIONREAD, &n);
	return (now_ns() - t0) / LOOP_ITERS;
}

/* Median of single userfaultfd() calls, the close not counted. */
static double uffd_latency(void)
{
	static double v[UFFD_CALLS];
	return uffd_create_median_ns(v, UFFD_CALLS, "bench-lsm");
}

static double (*const loops[3])(void) = { getpid_loop, ioctl_loop, uffd_latency };
static const char *const names[3] = { "getpid loop (ns/call)", "ioctl FIONREAD (ns/call)",
				      "userfaultfd() latency (ns)" };

static int count_record(void *ctx, void *data, size_t size)
{
	(*(long *)ctx)++;
	return 0;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-lsm: %s: %s\n", what, strerror(err));
	exit(1);
}

/* The value at fraction q of sorted v. */
static double quantile(const double *v, size_t n, double q)
{
	return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static void ratio_cell(double *x, size_t n, char *buf, size_t size)
{
	double m = median(x, n); /* sorts x */
	snprintf(buf, size, "%.3f [%.3f, %.3f]", m, quantile(x, n, 0.25), quantile(x, n, 0.75));
}

/* userfaultfd() latency in a fresh process: bare, or under the supervisor. */
static double fresh_process(const char *cmd)
{
	double v = 0;
	FILE *f = popen(cmd, "r");
	if (!f || fscanf(f, "%lf", &v) != 1 || pclose(f) != 0) {
		fprintf(stderr, "bench-lsm: %s failed\n", cmd);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	char def[PATH_MAX], self[PATH_MAX];
	const char *uffdguard = getenv("UFFDGUARD");
	int rounds = 101;

	if (argc > 1 && !strcmp(argv[1], "--inner")) {
		printf("%.3f\n", uffd_latency());
		return 0;
	}
	if (bench_args(argc, argv, "bench-lsm", &uffdguard, &rounds))
		return 2;
	if (rounds < 5 || rounds > 10000)
		rounds = 101;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 1;
	self[n] = '\0';
	if (!uffdguard) {
		/* build/bench/bench-lsm -> build/cli/uffdguard */
		snprintf(def, sizeof(def), "%s", self);
		*strrchr(def, '/') = '\0';
		snprintf(strrchr(def, '/') + 1, sizeof(def) - (size_t)(strrchr(def, '/') + 1 - def),
			 "cli/uffdguard");
		uffdguard = def;
	}
	if (pipe(pipe_fds) < 0)
		die("pipe", errno);

	/* The program as `uffdguard lsm` loads it, but pinned nowhere. */
	struct uffdguard_bpf *skel = uffdguard_bpf__open();
	if (!skel)
		die("opening the BPF program", errno);
	struct bpf_map *maps[] = { skel->maps.scopes, skel->maps.scope_paths,
				   skel->maps.decision_counts, skel->maps.audit_records,
				   skel->maps.dropped_records, skel->maps.format };
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		bpf_map__set_pin_path(maps[i], NULL);
	int r = uffdguard_bpf__load(skel);
	if (r < 0)
		die("loading the BPF LSM program (see uffdguard lsm apply)", -r);
	__u64 host = LSM_HOST_KEY;
	struct lsm_scope scope = { .slot = LSM_HOST_SLOT,
				   .policy = { .unprivileged_userfaultfd = 1,
					       .unprivileged_userfaultfd_user_mode_only = 1,
					       .cover_device = 1 } };
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.scopes), &host, &scope, BPF_F_LOCK) < 0)
		die("setting the host policy", errno);
	long records = 0;
	struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(skel->maps.audit_records),
						  count_record, &records, NULL);
	if (!rb)
		die("the audit ring buffer", errno);

	/* [round][what]: none, lsm, none again */
	double *none = calloc((size_t)rounds * 3, sizeof(double));
	double *lsm = calloc((size_t)rounds * 3, sizeof(double));
	double *none2 = calloc((size_t)rounds * 3, sizeof(double));
	double *ratio = calloc((size_t)rounds, sizeof(double));
	double *noise = calloc((size_t)rounds, sizeof(double));
	for (int k = 0; k < 3; k++)
		loops[k](); /* warm up */
	for (int i = 0; i < rounds; i++) {
		/* Alternate the order: without, with, without / with, without, without. */
		for (int step = 0; step < 3; step++) {
			bool with = (i % 2 == 0) ? step == 1 : step == 0;
			double *out = with ? lsm : (step == 2 ? none2 : none);
			struct bpf_link *link = NULL;
			if (with && !(link = bpf_program__attach(skel->progs.uffd_create)))
				die("attaching the BPF LSM program", errno);
			/* Let the work that attaching or detaching leaves to
			 * kernel threads run before the clock does. */
			usleep(SETTLE_US);
			for (int k = 0; k < 3; k++)
				out[i * 3 + k] = loops[k]();
			bpf_link__destroy(link);
			ring_buffer__consume(rb);
		}
	}
	long expected = (long)rounds * UFFD_CALLS;

	/* The supervisor, in fresh processes, alternating with bare ones. */
	char bare_cmd[PATH_MAX + 16], sup_cmd[3 * PATH_MAX];
	snprintf(bare_cmd, sizeof(bare_cmd), "'%s' --inner", self);
	snprintf(sup_cmd, sizeof(sup_cmd),
		 "'%s' run --mode supervise --policy user-mode-only -- '%s' --inner", uffdguard, self);
	double bare[SUPERVISED_RUNS], sup[SUPERVISED_RUNS], sup_ratio[SUPERVISED_RUNS];
	for (int i = 0; i < SUPERVISED_RUNS; i++) {
		bare[i] = fresh_process(bare_cmd);
		sup[i] = fresh_process(sup_cmd);
		sup_ratio[i] = sup[i] / bare[i];
	}

	printf("uffdguard lsm overhead: %d rounds; median [first quartile, third quartile]\n"
	       "of the ratios taken within each round.  lsm = the BPF LSM program attached, host\n"
	       "policy user-mode-only, every creation decided and audited (%ld of %ld records\n"
	       "read); noise = the same without the program twice: what a ratio of 1 looks\n"
	       "like on this machine.\n\n",
	       rounds, records, expected);
	printf("%-28s %9s %9s  %-22s %-22s\n", "", "none", "lsm", "lsm/none", "noise");
	double med_ratio[3];
	double *col_none = calloc((size_t)rounds, sizeof(double));
	double *col_lsm = calloc((size_t)rounds, sizeof(double));
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < rounds; i++) {
			col_none[i] = none[i * 3 + k];
			col_lsm[i] = lsm[i * 3 + k];
			ratio[i] = col_lsm[i] / col_none[i];
			noise[i] = none2[i * 3 + k] / col_none[i];
		}
		char c1[64], c2[64];
		ratio_cell(ratio, (size_t)rounds, c1, sizeof(c1));
		med_ratio[k] = median(ratio, (size_t)rounds);
		ratio_cell(noise, (size_t)rounds, c2, sizeof(c2));
		printf("%-28s %9.1f %9.1f  %-22s %-22s\n", names[k], median(col_none, (size_t)rounds),
		       median(col_lsm, (size_t)rounds), c1, c2);
	}
	char c3[64];
	double med_bare = median(bare, SUPERVISED_RUNS), med_sup = median(sup, SUPERVISED_RUNS);
	ratio_cell(sup_ratio, SUPERVISED_RUNS, c3, sizeof(c3));
	printf("\nuserfaultfd() under uffdguard run --mode supervise, %d fresh processes:\n"
	       "%-28s %9.1f %9.1f  %-22s (supervise, supervise/bare)\n", SUPERVISED_RUNS,
	       "userfaultfd() latency (ns)", med_bare, med_sup, c3);
	printf("\ntargets: getpid and ioctl with the program <= 1.005 x none: %.3f, %.3f\n"
	       "userfaultfd() with the program / under the supervisor: %.3f\n",
	       med_ratio[0], med_ratio[1], med_ratio[2] * med_bare / med_sup);
	ring_buffer__free(rb);
	uffdguard_bpf__destroy(skel);
	return 0;
}
