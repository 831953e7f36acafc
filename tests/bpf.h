/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running a libseccomp filter offline: export it as classic BPF and
 * interpret it on a seccomp_data, as the kernel would. */
#ifndef UFFDGUARD_TEST_BPF_H
#define UFFDGUARD_TEST_BPF_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_prog {
	struct sock_filter insns[BPF_MAXINSNS];
	size_t len;
};

/* Export ctx's program into out (fails the test on error). */
void bpf_export(scmp_filter_ctx ctx, struct bpf_prog *out);

/* The filter's return value (SECCOMP_RET_*) for d. */
uint32_t bpf_run(const struct bpf_prog *p, const struct seccomp_data *d);

#endif
