/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What test-run and run-helper agree on. */
#ifndef UFFDGUARD_TEST_RUN_HELPER_H
#define UFFDGUARD_TEST_RUN_HELPER_H

#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>

/* none, the flag, known flags, unknown bits, upper-half garbage */
static const uint64_t run_flags[] = {
	0,
	1,
	O_CLOEXEC,
	O_CLOEXEC | O_NONBLOCK | 1,
	2,
	2 | 1,
	0xffffffff00000000ull,
	0xffffffff00000000ull | 1,
	0xdeadbeef00000000ull | O_CLOEXEC,
};
#define N_RUN_FLAGS (sizeof(run_flags) / sizeof(run_flags[0]))

/* The creations of each thread of `run-helper threads`, in turn. */
static const uint64_t run_thread_flags[4] = { 0, 1, 1 | O_CLOEXEC, 2 | 1 };

#endif
