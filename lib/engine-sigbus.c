// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The in-thread mode: with UFFD_FEATURE_SIGBUS a missing page raises
 * SIGBUS in the faulting thread, which resolves it in the handler below
 * and returns to retry the access (as Android's garbage collector does).
 * Everything here is async-signal-safe: atomics, ioctl, read, sigaction.
 */
#include <errno.h>
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
/* Handlers that may be using an engine, counted in two halves by epoch
 * parity (as SRCU does): detach flips the epoch and waits for the old
 * half only, so handlers that keep arriving cannot starve it. */
static unsigned int epoch;
static unsigned int inflight[2];

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

/* A SIGBUS that is not the retried access of a fault: kill(2), sigqueue(3),
 * or an action-optional memory error (a handler thread's, for a fault it
 * could not serve, is a fault). */
static int asynchronous(const siginfo_t *si)
{
	return (si->si_code <= 0 && !engine_sigbus_is_fault(si)) || si->si_code == BUS_MCEERR_AO;
}

/* SA_RESETHAND: the previous handler has had its one delivery. */
static int previous_spent;

static void chain(int sig, siginfo_t *si, void *uc)
{
	int is_handler = (previous.sa_flags & SA_SIGINFO) ||
			 (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN);

	/* The kernel resets a one-shot handler to the default on delivery. */
	if (is_handler && (previous.sa_flags & SA_RESETHAND) &&
	    __atomic_exchange_n(&previous_spent, 1, __ATOMIC_ACQ_REL))
		is_handler = 0;
	if (is_handler) {
		/* With the mask it would have had from the kernel: the
		 * thread's at the signal, the signals it asked to block, and
		 * this one unless it asked for SA_NODEFER (ours blocks all). */
		const sigset_t *at = &((const ucontext_t *)uc)->uc_sigmask;
		sigset_t old, mask = previous.sa_mask;
		for (int s = 1; s < NSIG; s++) /* the kernel fills NSIG - 1 bits of it */
			if (sigismember(at, s))
				sigaddset(&mask, s);
		if (!(previous.sa_flags & SA_NODEFER))
			sigaddset(&mask, sig);
		uffd_sys_sigprocmask(SIG_SETMASK, &mask, &old);
		if (previous.sa_flags & SA_SIGINFO)
			previous.sa_sigaction(sig, si, uc);
		else
			previous.sa_handler(sig);
		uffd_sys_sigprocmask(SIG_SETMASK, &old, NULL);
		return;
	}
	if (previous.sa_handler == SIG_IGN && asynchronous(si))
		return; /* ignored, as before us (the kernel kills for a fault) */
	/* Default action: raised again, the signal is delivered once this
	 * handler returns, and kills.  A fault is not left to kill by its
	 * retried access: that may pass (a file extended meanwhile), and the
	 * process would go on without our handler. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	uffd_sys_sigaction(sig, &dfl, NULL);
	uffd_sys_raise(sig);
}

/* The address this thread last let retry without resolving it (static
 * TLS: nothing is allocated in the handler). */
static __thread uintptr_t retried __attribute__((tls_model("initial-exec")));

/* A fault on a page that was ours a moment ago (unregistered, unmapped or
 * moved meanwhile) retries the access once; a second SIGBUS at the same
 * address is not ours and must not loop forever. */
static int retry_once(uintptr_t a)
{
	if (retried == a) {
		retried = 0;
		return 0;
	}
	retried = a;
	return 1;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int handled = 0, saved_errno = errno;

	unsigned int half;
	for (;;) {
		/* Counted in the half of an epoch that was still current once
		 * counted: a detach that flips later waits for us. */
		unsigned int e0 = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
		half = e0 & 1;
		__atomic_add_fetch(&inflight[half], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&epoch, __ATOMIC_SEQ_CST) == e0)
			break;
		__atomic_sub_fetch(&inflight[half], 1, __ATOMIC_RELEASE);
	}
	/* The second pass waits for the event readers: the thread that called
	 * mremap() returns once the event is read, before its engine has
	 * moved to the new address.  Two engines hold the address when one's
	 * region moved onto the range of the other (mremap(MREMAP_FIXED)),
	 * whose pages there the move unmapped: the kernel lets any
	 * userfaultfd fill any registered page, so the other would serve the
	 * moved region with its own answer (zero).  An engine that lost the
	 * page to an event serves it only if no other engine holds it. */
	struct libuffd_engine *e = NULL, *lost = NULL;
	size_t p = 0, lost_p = 0;
	for (int pass = 0; pass < 2 && !e && si->si_code == BUS_ADRERR; pass++) {
		for (int i = 0; i < SLOTS; i++) {
			struct libuffd_engine *x = __atomic_load_n(&slots[i].eng, __ATOMIC_SEQ_CST);
			if (!x)
				continue;
			if (pass)
				engine_wait_event_readers(x);
			uintptr_t base = __atomic_load_n(&x->base, __ATOMIC_ACQUIRE);
			if (a - base >= x->len)
				continue;
			size_t px = (a - base) >> x->shift;
			if (!engine_page_left(x, px)) {
				e = x;
				p = px;
				break;
			}
			if (!lost) {
				lost = x;
				lost_p = px;
			}
		}
	}
	if (!e && lost) {
		e = lost;
		p = lost_p;
	}
	if (e) {
		int r = engine_fault(e, p, fault_is_write(uc));
		if (r == 0)
			retried = 0;
		handled = r == 0 || ((r == -ENOENT || r == -ESRCH) && retry_once(a));
		goto done;
	}
	for (int i = 0; i < SLOTS && si->si_code == BUS_ADRERR; i++) {
		if (a >= __atomic_load_n(&slots[i].start, __ATOMIC_ACQUIRE) &&
		    a < __atomic_load_n(&slots[i].end, __ATOMIC_ACQUIRE)) {
			/* Raised just before its engine unregistered the range. */
			handled = retry_once(a);
			goto done;
		}
	}
	/* Registered with one of our descriptors but outside its region: a
	 * part moved away by mremap(), or a tail it grew.  No source covers
	 * it: zero (SHMEM: the file's page), as handler threads answer (the
	 * ioctl fails with ENOENT wherever that descriptor has nothing
	 * registered; EAGAIN while an event is pending: retry once the
	 * engine thread has read it). */
	for (int i = 0; i < SLOTS && si->si_code == BUS_ADRERR; i++) {
		struct libuffd_engine *x = __atomic_load_n(&slots[i].eng, __ATOMIC_SEQ_CST);
		if (!x)
			continue;
		uintptr_t pa = a & ~(uintptr_t)(x->page - 1);
		int r = engine_resolve_stray(x, pa, LIBUFFD_DONTWAKE);
		if (r == 0 || r == -EEXIST || r == -EAGAIN) {
			handled = 1;
			break;
		}
	}
done:
	__atomic_sub_fetch(&inflight[half], 1, __ATOMIC_RELEASE);
	errno = saved_errno;
	if (!handled)
		chain(sig, si, uc);
}

static int overlaps(const struct libuffd_engine *x, uintptr_t start, uintptr_t end)
{
	uintptr_t b = __atomic_load_n(&x->base, __ATOMIC_ACQUIRE);
	return start < b + x->len && b < end;
}

/* A forked child has none of the parent's engines: its copy of the region
 * is not registered, and their descriptors would resolve in the parent's
 * address space.  It forgets them, and the locks and counts of threads
 * that it does not have. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&slots_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&slots_lock);
}

static void atfork_child(void)
{
	memset(slots, 0, sizeof(slots));
	inflight[0] = inflight[1] = 0;
	pthread_mutex_init(&slots_lock, NULL);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_error;

static void register_atfork(void)
{
	atfork_error = -pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static int attach(struct libuffd_engine *e)
{
	pthread_once(&atfork_once, register_atfork);
	if (atfork_error)
		return atfork_error;

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
		/* A handler of another signal run inside ours, while it
		 * resolves, could touch an in-thread region: SIGBUS is
		 * blocked here, and the kernel would kill.  (The kernel blocks
		 * SIGBUS itself while ours runs.) */
		engine_deferrable_signals(&sa.sa_mask);
		r = uffd_sys_sigaction(SIGBUS, &sa, &previous);
		if (r < 0)
			goto out;
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

static void detach(struct libuffd_engine *e)
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
	/* A handler that loaded e before it was cleared is counted in the
	 * half it entered with, which the flip closes to newcomers. */
	unsigned int old = __atomic_fetch_add(&epoch, 1, __ATOMIC_SEQ_CST) & 1;
	while (__atomic_load_n(&inflight[old], __ATOMIC_SEQ_CST))
		uffd_sys_yield();
	pthread_mutex_unlock(&slots_lock);
}

/* ---- The mode ------------------------------------------------------------ */

static void in_thread_stop(struct libuffd_engine *e)
{
	/* Unregistering first makes faulting threads retry natively;
	 * detaching then waits for the handlers still inside.  The region
	 * is where the last remap event put it. */
	engine_wait_event_readers(e);
	libuffd_unregister(e->uffd, (void *)LOAD(&e->base), e->len);
	detach(e);
	engine_threads_stop(e);
}

static int in_thread_start(struct libuffd_engine *e, unsigned int threads)
{
	int r = attach(e);

	if (r < 0) {
		libuffd_unregister(e->uffd, (void *)LOAD(&e->base), e->len);
		return r;
	}
	/* One thread reads the events: madvise, munmap, mremap wait for it. */
	r = engine_threads_start(e, 1);
	if (r < 0)
		in_thread_stop(e);
	return r;
}

const struct engine_mode engine_in_thread = {
	.features = LIBUFFD_FEATURE_SIGBUS,
	/* Nobody waits in the kernel: no wake after a copy. */
	.copy_mode = LIBUFFD_DONTWAKE,
	.scratch = 8,
	.start = in_thread_start,
	.stop = in_thread_stop,
};
