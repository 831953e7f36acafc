/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The calls bench-run and bench-lsm time, each under its own mechanism. */
#ifndef UFFDGUARD_BENCH_CALLS_H
#define UFFDGUARD_BENCH_CALLS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stats.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* Nanoseconds per getpid(), over iters calls. */
static inline double getpid_ns(int iters)
{
	double t0 = now_ns();
	for (int i = 0; i < iters; i++)
		syscall(SYS_getpid);
	return (now_ns() - t0) / iters;
}

/* Median of n single userfaultfd() calls (v holds n), the close not
 * counted; a refused call ends the benchmark, named by prog. */
static inline double uffd_create_median_ns(double *v, int n, const char *prog)
{
	for (int i = 0; i < n; i++) {
		double t0 = now_ns();
		long fd = syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY | O_CLOEXEC);
		v[i] = now_ns() - t0;
		if (fd < 0) {
			fprintf(stderr, "%s: userfaultfd: %s\n", prog, strerror(errno));
			exit(1);
		}
		close((int)fd);
	}
	return median(v, (size_t)n);
}

/* [--uffdguard PATH] [--rounds N] from argv[1...]; 0, or 2 after the
 * usage line on standard error. */
static inline int bench_args(int argc, char **argv, const char *prog, const char **uffdguard,
			     int *rounds)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--uffdguard") && i + 1 < argc)
			*uffdguard = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			*rounds = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--uffdguard PATH] [--rounds N]\n", prog);
			return 2;
		}
	}
	return 0;
}

#endif
