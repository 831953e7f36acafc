// SPDX-License-Identifier: GPL-2.0-or-later
/* lsm_decide() compiled for BPF, as uffdguard.bpf.c compiles it, in a
 * program type that BPF_PROG_TEST_RUN runs on any kernel since 5.14: the
 * truth-table test feeds it every input and compares with the C build. */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "lsm-decide.h"

char LICENSE[] SEC("license") = "GPL";

SEC("syscall")
int decide_case(struct lsm_decide_case *ctx)
{
	struct lsm_decide_case c;

	/* Loads at constant offsets from the context, then work on the stack. */
	__builtin_memcpy(&c, ctx, sizeof(c));
	enum lsm_reason r = lsm_decide(&c.policy, c.privileged != 0, (enum lsm_entry)c.entry, c.flags);
	ctx->reason = r;
	ctx->err = lsm_reason_errno(r);
	return 0;
}
