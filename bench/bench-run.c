// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cost of `uffdguard run`, side by side in one run: a getpid() loop and
 * an ioctl(FIONREAD) loop bare and under the filter, and the latency of one
 * userfaultfd() call bare, under the filter and under the supervisor.
 * Prints medians and ratios.  Not a test: timings are the machine's.
 *
 *   bench-run [--uffdguard PATH] [--rounds N]
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "calls.h"

#define LOOP_ITERS 200000
#define SAMPLES 9  /* per process, per round */
#define UFFD_CALLS 2000

static double getpid_loop(void)
{
	return getpid_ns(LOOP_ITERS);
}

static double ioctl_loop(void)
{
	int p[2], n;
	if (pipe(p) < 0)
		return -1;
	double t0 = now_ns();
	for (int i = 0; i < LOOP_ITERS; i++)
		ioctl(p[0], FIONREAD, &n);
	double t = (now_ns() - t0) / LOOP_ITERS;
	close(p[0]);
	close(p[1]);
	return t;
}

/* Median of single userfaultfd() calls, the close not counted. */
static double uffd_latency(void)
{
	static double v[UFFD_CALLS];
	return uffd_create_median_ns(v, UFFD_CALLS, "bench-run");
}

/* One line: SAMPLES samples of getpid, ioctl and userfaultfd each. */
static void measure(double *out)
{
	for (int s = 0; s < SAMPLES; s++) {
		out[s] = getpid_loop();
		out[SAMPLES + s] = ioctl_loop();
		out[2 * SAMPLES + s] = uffd_latency();
	}
}

static void measure_under(const char *uffdguard, const char *mode, double *out)
{
	char cmd[PATH_MAX * 3], self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		exit(1);
	self[n] = '\0';
	/* Bare runs in a fresh process too, started the same way. */
	if (!strcmp(mode, "bare"))
		snprintf(cmd, sizeof(cmd), "'%s' --inner", self);
	else if (!strcmp(mode, "null") || !strcmp(mode, "floor"))
		snprintf(cmd, sizeof(cmd), "'%s' --inner %s", self, mode);
	else
		snprintf(cmd, sizeof(cmd), "'%s' run --mode %s --policy user-mode-only -- '%s' --inner",
			 uffdguard, mode, self);
	FILE *f = popen(cmd, "r");
	for (int i = 0; f && i < 3 * SAMPLES; i++)
		if (fscanf(f, "%lf", &out[i]) != 1) {
			fprintf(stderr, "bench-run: no numbers from: %s\n", cmd);
			exit(1);
		}
	if (!f || pclose(f) != 0) {
		fprintf(stderr, "bench-run: %s failed\n", cmd);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	char def[PATH_MAX];
	const char *uffdguard = getenv("UFFDGUARD");
	int rounds = 3;

	if (argc > 1 && !strcmp(argv[1], "--inner")) {
		double v[3 * SAMPLES];
		/* null: a filter whose only rule is on userfaultfd, so getpid
		 * and ioctl hit the kernel's action cache.  floor: the same plus
		 * an ioctl rule that never matches, so that every ioctl runs
		 * the filter, as any filter that covers the device must. */
		bool null = argc > 2 && !strcmp(argv[2], "null");
		bool floor = argc > 2 && !strcmp(argv[2], "floor");
		if (null || floor) {
			scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
			if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(userfaultfd), 1,
						     SCMP_A0_32(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0xffffffffu)) < 0 ||
			    (floor && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
						       SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xffffffffu,
								  0xfffffffeu)) < 0) ||
			    seccomp_load(ctx) < 0)
				return 1;
			seccomp_release(ctx);
		}
		measure(v);
		for (int i = 0; i < 3 * SAMPLES; i++)
			printf("%.3f\n", v[i]);
		return 0;
	}
	if (bench_args(argc, argv, "bench-run", &uffdguard, &rounds))
		return 2;
	if (!uffdguard) {
		/* build/bench/bench-run -> build/cli/uffdguard */
		ssize_t n = readlink("/proc/self/exe", def, sizeof(def) - 32);
		if (n < 0)
			return 1;
		def[n] = '\0';
		*strrchr(def, '/') = '\0';
		strcpy(strrchr(def, '/') + 1, "cli/uffdguard");
		uffdguard = def;
	}
	if (rounds < 1 || rounds > 100)
		rounds = 3;

	/* [bare, null, floor, filter, supervise][getpid, ioctl, uffd][rounds * SAMPLES] */
	enum { M = 5 };
	size_t per = (size_t)rounds * SAMPLES;
	double *v = calloc(M * 3 * per, sizeof(double));
	const char *const modes[M] = { "bare", "null", "floor", "filter", "supervise" };
	for (int r = 0; r < rounds; r++) {
		/* Interleaved, so that drift hits every column alike. */
		for (int m = 0; m < M; m++) {
			double line[3 * SAMPLES];
			measure_under(uffdguard, modes[m], line);
			for (int k = 0; k < 3; k++)
				memcpy(&v[(m * 3 + k) * per + (size_t)r * SAMPLES], &line[k * SAMPLES],
				       SAMPLES * sizeof(double));
		}
	}
	double med[M][3];
	for (int m = 0; m < M; m++)
		for (int k = 0; k < 3; k++)
			med[m][k] = median(&v[(m * 3 + k) * per], per);

	printf("uffdguard run overhead: medians of %zu samples (policy user-mode-only)\n"
	       "null  = a seccomp filter with one rule, on userfaultfd: the kernel's own cost of\n"
	       "        having any filter (the syscall entry slow path)\n"
	       "floor = null plus an ioctl rule that never matches: the kernel's cost of running\n"
	       "        a filter on every ioctl, which any filter covering the device must\n\n",
	       per);
	printf("%-28s %8s %8s %8s %8s %8s %10s %8s\n", "", "bare", "null", "floor", "filter",
	       "ratio", "supervise", "ratio");
	static const char *const names[3] = { "getpid loop (ns/call)", "ioctl FIONREAD (ns/call)",
					      "userfaultfd() latency (ns)" };
	for (int k = 0; k < 3; k++)
		printf("%-28s %8.1f %8.1f %8.1f %8.1f %8.3f %10.1f %8.3f\n", names[k], med[0][k],
		       med[1][k], med[2][k], med[3][k], med[3][k] / med[0][k], med[4][k],
		       med[4][k] / med[0][k]);
	printf("\ntargets vs bare: getpid <= 1.005 (%.3f), ioctl <= 1.020 (%.3f)\n"
	       "what uffdguard's rules add over the kernel's floor: getpid %.3f (vs null), "
	       "ioctl %.3f (vs floor)\n",
	       med[3][0] / med[0][0], med[3][1] / med[0][1], med[3][0] / med[1][0],
	       med[3][1] / med[2][1]);
	free(v);
	return 0;
}
