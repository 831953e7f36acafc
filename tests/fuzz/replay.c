// SPDX-License-Identifier: GPL-2.0-or-later
/* Runs a fuzzer entry over every file given on the command line, so the
 * corpus is exercised by the ordinary test suite (TAP, one case a file). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	printf("TAP version 13\n1..%d\n", argc - 1);
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		static uint8_t buf[1 << 20];
		size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
		if (!f) {
			printf("not ok %d %s # cannot open\n", i, argv[i]);
			continue;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n); /* aborts on a violated invariant */
		printf("ok %d %s\n", i, argv[i]);
	}
	return 0;
}
