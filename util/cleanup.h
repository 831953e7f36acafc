/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Release on leaving scope, as crun and systemd do: a variable declared
 * `cleanup_free char *s = ...` is freed on every return path.  Each
 * function leaves errno as it found it, so a cleanup never hides the
 * error a caller is about to report.
 */
#ifndef UFFDGUARD_CLEANUP_H
#define UFFDGUARD_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
	int saved = errno;
	free(*(void **)p);
	errno = saved;
}

static inline void cleanup_closep(int *fd)
{
	int saved = errno;
	if (*fd >= 0)
		close(*fd);
	errno = saved;
}

static inline void cleanup_filep(FILE **f)
{
	int saved = errno;
	if (*f)
		fclose(*f);
	errno = saved;
}

#define cleanup_free __attribute__((cleanup(cleanup_freep)))
#define cleanup_close __attribute__((cleanup(cleanup_closep)))
#define cleanup_file __attribute__((cleanup(cleanup_filep)))

#endif
