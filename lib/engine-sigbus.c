// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The in-thread mode: with UFFD_FEATURE_SIGBUS a missing page raises
 * SIGBUS in the faulting thread, which resolves it in the handler below
 * and returns to retry the access (as Android's garbage collector does).
 * Everything here is async-signal-safe: atomics, ioctl, read, sigaction.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "engine-internal.h"

#define SLOTS 64

/* A slot's engine is published with release and read with acquire.  A
 * destroyed engine leaves its range behind, so that a SIGBUS raised just
 * before the range was unregistered retries instead of killing. */
static struct slot {
	struct libuffd_engine *eng;
	uintptr_t start, end; /* range of a retired engine */
} slots[SLOTS];

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous;
static int installed;
static unsigned int inflight; /* handlers that may be using an engine */

static int fault_is_write(const void *uc)
{
#if defined(__x86_64__)
	/* The page fault error code: bit 1 is a write. */
	return !!(((const ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2);
#else
	(void)uc;
	return 1; /* unknown: a write is correct for reads too */
#endif
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, uc);
		return;
	}
	if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* Default action: the access is retried and raises it again. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int handled = 0, saved_errno = errno;

	__atomic_add_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < SLOTS && si->si_code == BUS_ADRERR; i++) {
		struct libuffd_engine *e = __atomic_load_n(&slots[i].eng, __ATOMIC_SEQ_CST);
		if (!e)
			continue;
		uintptr_t base = __atomic_load_n(&e->base, __ATOMIC_ACQUIRE);
		if (a - base >= e->len)
			continue;
		handled = engine_fault(e, (a - base) >> e->shift, fault_is_write(uc)) == 0;
		goto done;
	}
	for (int i = 0; i < SLOTS && si->si_code == BUS_ADRERR; i++) {
		if (a >= __atomic_load_n(&slots[i].start, __ATOMIC_ACQUIRE) &&
		    a < __atomic_load_n(&slots[i].end, __ATOMIC_ACQUIRE)) {
			handled = 1;
			break;
		}
	}
done:
	__atomic_sub_fetch(&inflight, 1, __ATOMIC_RELEASE);
	errno = saved_errno;
	if (!handled)
		chain(sig, si, uc);
}

static int overlaps(const struct libuffd_engine *x, uintptr_t start, uintptr_t end)
{
	uintptr_t b = __atomic_load_n(&x->base, __ATOMIC_ACQUIRE);
	return start < b + x->len && b < end;
}

int engine_sigbus_attach(struct libuffd_engine *e)
{
	uintptr_t start = e->base, end = e->base + e->len;
	int free_slot = -1, retired_slot = -1, r = 0;

	pthread_mutex_lock(&slots_lock);
	for (int i = 0; i < SLOTS; i++) {
		struct libuffd_engine *x = slots[i].eng;
		if (x && overlaps(x, start, end)) {
			r = -EBUSY;
			goto out;
		}
		if (!x && !slots[i].end && free_slot < 0)
			free_slot = i;
		if (!x && slots[i].end && retired_slot < 0)
			retired_slot = i;
	}
	int i = free_slot >= 0 ? free_slot : retired_slot;
	if (i < 0) {
		r = -EBUSY;
		goto out;
	}
	if (!installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &previous) < 0) {
			r = -errno;
			goto out;
		}
		installed = 1;
	}
	/* Retired ranges that we now serve are not retired any more. */
	for (int k = 0; k < SLOTS; k++) {
		if (k != i && (slots[k].eng || !(slots[k].start < end && start < slots[k].end)))
			continue;
		__atomic_store_n(&slots[k].start, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&slots[k].end, 0, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&slots[i].eng, e, __ATOMIC_SEQ_CST);
out:
	pthread_mutex_unlock(&slots_lock);
	return r;
}

void engine_sigbus_detach(struct libuffd_engine *e)
{
	pthread_mutex_lock(&slots_lock);
	for (int i = 0; i < SLOTS; i++) {
		if (slots[i].eng != e)
			continue;
		uintptr_t b = __atomic_load_n(&e->base, __ATOMIC_ACQUIRE);
		__atomic_store_n(&slots[i].start, b, __ATOMIC_RELEASE);
		__atomic_store_n(&slots[i].end, b + e->len, __ATOMIC_RELEASE);
		__atomic_store_n(&slots[i].eng, NULL, __ATOMIC_SEQ_CST);
	}
	/* A handler that loaded e before it was cleared is counted. */
	while (__atomic_load_n(&inflight, __ATOMIC_SEQ_CST))
		sched_yield();
	pthread_mutex_unlock(&slots_lock);
}
