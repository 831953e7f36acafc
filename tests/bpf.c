// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdbool.h>
#include <sys/mman.h>

#include "bpf.h"
#include "harness.h"

void bpf_export(scmp_filter_ctx ctx, struct bpf_prog *out)
{
	int fd = ASSERT_SYS(memfd_create("bpf", MFD_CLOEXEC));
	ASSERT_OK(seccomp_export_bpf(ctx, fd));
	off_t size = ASSERT_SYS(lseek(fd, 0, SEEK_END));
	ASSERT_TRUE(size > 0 && size % (off_t)sizeof(struct sock_filter) == 0);
	ASSERT_LE((size_t)size, sizeof(out->insns));
	ASSERT_EQ(pread(fd, out->insns, (size_t)size, 0), size);
	out->len = (size_t)size / sizeof(struct sock_filter);
	close(fd);
}

/* Classic BPF as the kernel runs it for seccomp (the subset libseccomp emits). */
uint32_t bpf_run(const struct bpf_prog *p, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };

	for (size_t pc = 0; pc < p->len; pc++) {
		const struct sock_filter *f = &p->insns[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? x : f->k;
		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			if (BPF_MODE(f->code) == BPF_ABS) {
				ASSERT_TRUE(f->k % 4 == 0 && f->k + 4 <= sizeof(*d));
				memcpy(&a, (const char *)d + f->k, 4);
			} else if (BPF_MODE(f->code) == BPF_IMM) {
				a = f->k;
			} else if (BPF_MODE(f->code) == BPF_MEM) {
				a = mem[f->k];
			} else {
				FAIL("ld mode 0x%x", f->code);
			}
			break;
		case BPF_LDX:
			x = BPF_MODE(f->code) == BPF_MEM ? mem[f->k] : f->k;
			break;
		case BPF_ST:
			mem[f->k] = a;
			break;
		case BPF_STX:
			mem[f->k] = x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			default: FAIL("alu op 0x%x", f->code);
			}
			break;
		case BPF_JMP: {
			bool t;
			switch (BPF_OP(f->code)) {
			case BPF_JA: pc += f->k; continue;
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: FAIL("jmp op 0x%x", f->code);
			}
			pc += t ? f->jt : f->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : f->k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		}
	}
	FAIL("BPF program fell off its end");
}
