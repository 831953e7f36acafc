/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What every benchmark here needs: a clock and a median. */
#ifndef UFFDGUARD_BENCH_STATS_H
#define UFFDGUARD_BENCH_STATS_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
