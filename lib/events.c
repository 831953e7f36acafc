// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <string.h>

#include "internal.h"

#define BATCH 64

static void decode(const struct uffd_msg *m, struct libuffd_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = (enum libuffd_event_type)m->event;
	switch (m->event) {
	case UFFD_EVENT_PAGEFAULT:
		ev->pagefault.address = m->arg.pagefault.address;
		ev->pagefault.flags = (uint32_t)m->arg.pagefault.flags;
		ev->pagefault.tid = (pid_t)m->arg.pagefault.feat.ptid;
		break;
	case UFFD_EVENT_FORK:
		ev->fork.fd = (int)m->arg.fork.ufd;
		break;
	case UFFD_EVENT_REMAP:
		ev->remap.from = m->arg.remap.from;
		ev->remap.to = m->arg.remap.to;
		ev->remap.len = m->arg.remap.len;
		break;
	case UFFD_EVENT_REMOVE:
	case UFFD_EVENT_UNMAP:
		ev->remove.start = m->arg.remove.start;
		ev->remove.end = m->arg.remove.end;
		break;
	}
}

LIBUFFD_EXPORT int libuffd_read_events(int fd, struct libuffd_event *events, unsigned int max)
{
	struct uffd_msg msgs[BATCH];

	if (max == 0)
		return -EINVAL;
	if (max > BATCH)
		max = BATCH;
	/* One read returns as many whole messages as are pending and fit. */
	int n = uffd_sys_read(fd, msgs, max * sizeof(msgs[0]));
	if (n < 0)
		return n;
	if (n == 0 || n % (int)sizeof(msgs[0]))
		return -EIO;
	int count = n / (int)sizeof(msgs[0]);
	for (int i = 0; i < count; i++)
		decode(&msgs[i], &events[i]);
	return count;
}
