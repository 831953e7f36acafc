/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small test harness in the style of the kernel's kselftest_harness.h:
 * every case runs in its own forked process group with a timeout, results
 * are TAP, a case may skip with a reason.  Files listed with
 * HARNESS_GUARD_FILE() (a sysctl) are saved before each case and restored
 * after it by the parent, whatever happened to the case.
 */
#ifndef UFFDGUARD_HARNESS_H
#define UFFDGUARD_HARNESS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*harness_fn)(void);

void harness_register(const char *name, harness_fn fn, int timeout_s, int signal);
void harness_guard_file(const char *path);
__attribute__((noreturn, format(printf, 3, 4))) void harness_fail(const char *file, int line,
								  const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void harness_skip(const char *fmt, ...);

#define HARNESS_DEFAULT_TIMEOUT 30

#define TEST_FULL(name, secs, sig)                                       \
	static void name(void);                                          \
	__attribute__((constructor)) static void register_##name(void)   \
	{                                                                \
		harness_register(#name, name, secs, sig);                \
	}                                                                \
	static void name(void)
#define TEST_TIMEOUT(name, secs) TEST_FULL(name, secs, 0)
#define TEST(name) TEST_FULL(name, HARNESS_DEFAULT_TIMEOUT, 0)
/* A case that passes only when killed by signal sig. */
#define TEST_SIGNAL(name, sig) TEST_FULL(name, HARNESS_DEFAULT_TIMEOUT, sig)

#define HARNESS_GUARD_FILE(id, path)                                        \
	__attribute__((constructor)) static void guard_##id(void)            \
	{                                                                   \
		harness_guard_file(path);                                   \
	}

#define SKIP(...) harness_skip(__VA_ARGS__)
#define FAIL(...) harness_fail(__FILE__, __LINE__, __VA_ARGS__)

#define ASSERT_TRUE(cond)                                          \
	do {                                                       \
		if (!(cond))                                       \
			FAIL("assertion failed: %s", #cond);       \
	} while (0)

#define ASSERT_CMP(a, op, b)                                                            \
	do {                                                                            \
		long long a_ = (long long)(a), b_ = (long long)(b);                     \
		if (!(a_ op b_))                                                        \
			FAIL("%s %s %s: %lld vs %lld", #a, #op, #b, a_, b_);            \
	} while (0)
#define ASSERT_EQ(a, b) ASSERT_CMP(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_CMP(a, !=, b)
#define ASSERT_GE(a, b) ASSERT_CMP(a, >=, b)
#define ASSERT_LE(a, b) ASSERT_CMP(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_CMP(a, >, b)
#define ASSERT_LT(a, b) ASSERT_CMP(a, <, b)

/* A negative-errno result, printed by name. */
#define ASSERT_ERR(expr, err)                                                         \
	do {                                                                          \
		long long r_ = (long long)(expr);                                     \
		if (r_ != (long long)(err))                                           \
			FAIL("%s = %lld (%s), want %s", #expr, r_,                    \
			     r_ < 0 ? strerror((int)-r_) : "success", #err);          \
	} while (0)
#define ASSERT_OK(expr)                                                               \
	do {                                                                          \
		long long r_ = (long long)(expr);                                     \
		if (r_ < 0)                                                           \
			FAIL("%s = %lld (%s)", #expr, r_, strerror((int)-r_));        \
	} while (0)
/* A libc call that sets errno. */
#define ASSERT_SYS(expr)                                                              \
	({                                                                            \
		long long r_ = (long long)(expr);                                     \
		if (r_ < 0)                                                           \
			FAIL("%s: %s", #expr, strerror(errno));                       \
		r_;                                                                   \
	})

#endif
