// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Built with -m32 -static (lsm-helper32) and -mx32 -static
 * (lsm-helperx32): a process of another ABI for test-lsm, found next to
 * it.  Creates one userfaultfd and exits with the errno (0: created).
 *   lsm-helper32 syscall FLAGS
 *   lsm-helper32 ioctl DEVICE FLAGS
 * FLAGS in hexadecimal.  Nothing here may depend on the project: it is a
 * program of the other ABI.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define USERFAULTFD_IOC_NEW 0xaa00

int main(int argc, char **argv)
{
	long r;

	if (argc == 3 && !strcmp(argv[1], "syscall")) {
		r = syscall(SYS_userfaultfd, (int)strtoul(argv[2], NULL, 16));
	} else if (argc == 4 && !strcmp(argv[1], "ioctl")) {
		int fd = open(argv[2], O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return 125;
		r = ioctl(fd, USERFAULTFD_IOC_NEW, (int)strtoul(argv[3], NULL, 16));
	} else {
		return 126;
	}
	return r < 0 ? errno : 0;
}
