// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine's threads: they poll the descriptor, read fault messages in
 * batches and resolve them, read the address-space events, and copy the
 * queued read-ahead.  They are the handler-threads mode; the in-thread
 * mode runs one of them for the events.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"

#define PENDING 1024      /* fault messages a handler thread can hold */
#define AHEAD_CHUNK 16 /* pages a read-ahead copy at a time */
#define THREAD_STACK (256u << 10)

/* ---- A fault that cannot be served ends in SIGBUS ------------------------ */

/* From /proc/TID/status: the thread's group, and whether it blocks SIGBUS.
 * Left as they are (this process, not blocked) without /proc. */
static void thread_status(pid_t tid, pid_t *tgid, int *blocks_sigbus)
{
	char path[32], buf[4096];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (uffd_sys_read_file(path, buf, sizeof(buf)) <= 0)
		return;
	const char *t = strstr(buf, "\nTgid:");
	const char *b = strstr(buf, "\nSigBlk:");
	if (t)
		*tgid = (pid_t)strtol(t + strlen("\nTgid:"), NULL, 10);
	if (b)
		*blocks_sigbus = strtoull(b + strlen("\nSigBlk:"), NULL, 16) >> (SIGBUS - 1) & 1;
}

/* What the kernel does with the SIGBUS of a fault that is ignored or
 * blocked (force_sig_fault()): the default action, which kills the
 * process.  From this thread, which unblocks it for itself. */
static void die_of_sigbus(void)
{
	struct sigaction dfl;
	sigset_t bus;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	uffd_sys_sigaction(SIGBUS, &dfl, NULL);
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	uffd_sys_sigprocmask(SIG_UNBLOCK, &bus, NULL);
	uffd_sys_raise(SIGBUS);
}

/*
 * Before Linux 6.6 there is no UFFDIO_POISON: SIGBUS goes to the faulting
 * thread itself, named by the fault message (UFFD_FEATURE_THREAD_ID).  The
 * thread waits in the fault interruptibly: the signal wakes it, the fault
 * returns to user mode with the signal pending, and the kernel delivers it
 * there, before the access is retried (fault_signal_pending() in the
 * architecture's fault handler).  No UFFDIO_WAKE: a thread woken without
 * the signal would fault again at once, for ever.  A fault taken in kernel
 * mode would be retried inside the kernel instead: threads_start()
 * refuses descriptors that take them.
 */
static void signal_fault(const struct libuffd_event *ev, int err)
{
	pid_t tgid = uffd_sys_getpid();
	int blocked = 0;
	struct sigaction now;

	thread_status(ev->pagefault.tid, &tgid, &blocked);
	if (blocked || (uffd_sys_sigaction(SIGBUS, NULL, &now) == 0 &&
			!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN)) {
		die_of_sigbus();
		return;
	}
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = ENGINE_SIGBUS_CODE;
	si.si_errno = -err;
	si.si_addr = (void *)(uintptr_t)ev->pagefault.address;
	uffd_sys_sigqueue_thread(tgid, ev->pagefault.tid, SIGBUS, &si);
}

/* The access of fault message ev cannot be served (err: the source's
 * error, or the kernel's): it ends in SIGBUS, as in the in-thread mode. */
static void fail_fault(struct libuffd_engine *e, const struct libuffd_event *ev, int err)
{
	void *page = (void *)(uintptr_t)(ev->pagefault.address & ~(uint64_t)(e->page - 1));

	if (err == -ENOENT || err == -ESRCH) {
		/* Not ours any more (unmapped, say): the kernel answers the
		 * retried access. */
		libuffd_wake(e->uffd, page, e->page);
		return;
	}
	if (e->ioctls & LIBUFFD_IOCTL_POISON) {
		/* The retried access gets SIGBUS from the kernel.  If that
		 * fails (a racer resolved the page, an event is pending), the
		 * retry faults again and is answered again. */
		if (libuffd_poison(e->uffd, page, e->page, 0, NULL) < 0)
			libuffd_wake(e->uffd, page, e->page);
		return;
	}
	signal_fault(ev, err);
}

/* ---- Handler threads ------------------------------------------------------ */

static int cmp_fault(const void *a, const void *b)
{
	uint64_t x = ((const struct libuffd_event *)a)->pagefault.address;
	uint64_t y = ((const struct libuffd_event *)b)->pagefault.address;
	return x < y ? -1 : x > y;
}

/* Resolve a batch of fault messages, sorted so that duplicates and
 * faults inside an earlier prefetch window fold into one resolution. */
static void serve_batch(struct libuffd_engine *e, struct libuffd_event *ev, unsigned int n,
			struct pending *more)
{
	uintptr_t covered_end = 0, failed = 0;
	int failed_err = 0;

	qsort(ev, n, sizeof(ev[0]), cmp_fault);
	for (unsigned int k = 0; k < n; k++) {
		/* Another thread may have read a remap that it has not applied
		 * yet: the kernel no longer holds resolutions back for it. */
		engine_wait_event_readers(e);
		uintptr_t base = LOAD(&e->base);
		uintptr_t a = ev[k].pagefault.address & ~(uintptr_t)(e->page - 1);
		int write = !!(ev[k].pagefault.flags & LIBUFFD_FAULT_WRITE);
		if (a < covered_end) {
			/* Each thread that faulted on a page that failed gets
			 * its own answer. */
			if (a == failed)
				fail_fault(e, &ev[k], failed_err);
			else
				ENGINE_COUNT(e, folded, 1);
			continue;
		}
		size_t covered = 0;
		if (a - base >= e->len) {
			/* Not where we serve (a part moved by mremap): zero
			 * (SHMEM: the file's page), so that nobody waits forever. */
			engine_resolve_stray(e, a, 0);
			libuffd_wake(e->uffd, (void *)a, e->page);
			covered_end = a + e->page;
			continue;
		}
		size_t p = (a - base) >> e->shift;
		struct window w;
		engine_prefetch_window(e, p, &w);
		/* An idle handler thread takes the read-ahead at once; with one
		 * thread, this one reads ahead after the batch. */
		engine_queue_ahead(e, &w, write, e->nthreads_wanted > 1);
		int r = engine_resolve(e, base, p, min_sz(w.n, e->npages - p),
				       (write ? ENGINE_WRITE : 0) | ENGINE_FAULT, more, &covered);
		if (r < 0) {
			fail_fault(e, &ev[k], r);
			failed = a;
			failed_err = r;
		} else {
			ENGINE_COUNT(e, faults, 1);
		}
		covered_end = a + ((covered ? covered : 1) << e->shift);
	}
}

static double now_us(void)
{
	return (double)uffd_sys_monotonic_ns() / 1e3;
}

/* Resolve the queued read-ahead; faults read meanwhile go to pd.
 * Returns whether there was any. */
static int read_ahead(struct libuffd_engine *e, struct pending *pd)
{
	int any = 0;

	for (int i = 0; i < ENGINE_AHEAD; i++) {
		/* A plain load first: most slots are empty, and an exchange
		 * would take each cache line exclusive for nothing. */
		if (!LOAD(&e->ahead[i]))
			continue;
		uint64_t v = __atomic_exchange_n(&e->ahead[i], 0, __ATOMIC_ACQ_REL);
		if (!v)
			continue;
		size_t p = (size_t)(v >> 9) - 1, covered;
		if (p >= e->npages)
			continue;
		size_t end = p + min_sz((size_t)1 << (v & 0xff), e->npages - p);
		/* From the end backwards: a thread that faults in this window
		 * meanwhile resolves it forwards, and the two meet once
		 * (EEXIST) instead of colliding page after page. */
		for (size_t hi = end; hi > p;) {
			size_t lo = hi - p > AHEAD_CHUNK ? hi - AHEAD_CHUNK : p;
			if (engine_resolve(e, LOAD(&e->base), lo, hi - lo,
					   (v >> 8) & 1 ? ENGINE_WRITE : 0, pd, &covered) ||
			    covered < hi - lo)
				break;
			hi = lo;
		}
		any = 1;
	}
	return any;
}

static void *handler_main(void *arg)
{
	struct libuffd_engine *e = arg;
	/* With several threads the first answers faults only (and is the
	 * only one to spin), so that another reads ahead meanwhile. */
	unsigned int seq = __atomic_fetch_add(&e->thread_seq, 1, __ATOMIC_RELAXED);
	int reads_ahead = seq > 0 || e->nthreads_wanted == 1;
	int spins = e->spin_us && seq == 0;
	/* On the stack (64 KiB of THREAD_STACK): a thread that could not
	 * allocate them would leave faults and events unread for ever. */
	struct libuffd_event bufs[2 * PENDING];
	struct pending cur = { bufs, 0, PENDING }, more = { bufs + PENDING, 0, PENDING };
	/* Every thread polls the descriptor: the one woken on the faulting
	 * CPU usually answers first, which on a VM beats waking one thread
	 * (EPOLLEXCLUSIVE measured ten times slower here). */
	struct pollfd pfd[3] = { { .fd = e->uffd, .events = POLLIN },
				 { .fd = e->stop_efd, .events = POLLIN },
				 { .fd = e->kick_efd, .events = POLLIN } };
	nfds_t nfds = reads_ahead ? 3 : 2;
	double spin_until = 0;

	for (;;) {
		int timeout = -1;
		/* The address space is gone: no fault can come, none waits. */
		if (LOAD(&e->gone))
			break;
		if (!cur.n) {
			/* Poll before reading: a reader holds back resolvers
			 * (engine_wait_event_readers()), so it must not read blindly. */
			timeout = spin_until && now_us() < spin_until ? 0 : -1;
			if (uffd_sys_poll(pfd, nfds, timeout) < 0)
				continue;
			if (nfds == 3 && pfd[2].revents) {
				uint64_t v; /* fails when another thread reset it */
				uffd_sys_read(e->kick_efd, &v, sizeof(v));
			}
			if (pfd[0].revents)
				engine_drain_events(e, cur.ev, &cur.n, cur.cap);
		}
		if (cur.n) {
			/* Faults read while resolving (EAGAIN) are served next. */
			while (cur.n) {
				serve_batch(e, cur.ev, cur.n, &more);
				struct pending t = cur;
				cur = more;
				more = t;
				more.n = 0;
			}
			if (reads_ahead)
				read_ahead(e, &cur); /* its faults: next round, without waiting */
			if (spins)
				spin_until = now_us() + e->spin_us;
			continue;
		}
		if (reads_ahead && read_ahead(e, &cur))
			continue;
		/* Stop only once nothing is pending: no fault is left waiting. */
		if (LOAD(&e->stopping) && !(pfd[0].revents & POLLIN))
			break;
		if (timeout == -1)
			spin_until = 0;
	}
	return NULL;
}

int engine_threads_start(struct libuffd_engine *e, unsigned int n)
{
	pthread_attr_t attr;
	sigset_t all, old;

	e->nthreads_wanted = n;
	e->threads = calloc(n, sizeof(*e->threads));
	if (!e->threads)
		return -ENOMEM;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	/* The application's signals are not for our threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Thread i runs on the i-th CPU we may use: whichever CPU a fault is
	 * taken on, a handler there is woken as the faulting thread sleeps,
	 * instead of a cross-CPU wake-up (tens of µs on a VM). */
	cpu_set_t allowed;
	int ncpus = 0, cpus[CPU_SETSIZE];
	if (n > 1 && uffd_sys_getaffinity(&allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpus++] = c;
	int r = 0;
	for (; e->nthreads < n; e->nthreads++) {
		if (ncpus > 1) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpus[e->nthreads % (unsigned int)ncpus], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		r = -pthread_create(&e->threads[e->nthreads], &attr, handler_main, e);
		if (r)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	e->overhead += (size_t)n * (THREAD_STACK + 2 * PENDING * sizeof(struct libuffd_event));
	return r;
}

void engine_threads_stop(struct libuffd_engine *e)
{
	uint64_t one = 1;

	STORE(&e->stopping, 1);
	/* Cannot fail: the counter goes from 0 to 1 once. */
	if (e->nthreads)
		uffd_sys_write(e->stop_efd, &one, sizeof(one));
	for (unsigned int i = 0; i < e->nthreads; i++)
		pthread_join(e->threads[i], NULL);
	e->nthreads = 0;
}

/* ---- The mode ------------------------------------------------------------ */

static void threads_stop(struct libuffd_engine *e)
{
	/* Serve what is pending first, then unregister: that wakes anyone
	 * who faulted after the last read. */
	engine_threads_stop(e);
	libuffd_unregister(e->uffd, (void *)LOAD(&e->base), e->len);
}

static int threads_start(struct libuffd_engine *e, unsigned int threads)
{
	/* A fault that cannot be served ends in SIGBUS: by UFFDIO_POISON,
	 * or else by a signal to the faulting thread (see signal_fault()),
	 * which must be ours: the thread ID of a fault message is in the
	 * faulting process's PID namespace, and another process's thread
	 * cannot be named reliably. */
	int can_fail = (e->ioctls & LIBUFFD_IOCTL_POISON) ||
		       ((e->features & LIBUFFD_FEATURE_THREAD_ID) && !e->kernel_faults && !e->remote);
	int r = can_fail ? engine_threads_start(e, threads) : -EOPNOTSUPP;

	if (r < 0)
		threads_stop(e);
	return r;
}

const struct engine_mode engine_handler_threads = {
	/* Used without UFFDIO_POISON; the exact address for si_addr. */
	.requested = LIBUFFD_FEATURE_THREAD_ID | LIBUFFD_FEATURE_EXACT_ADDRESS,
	.start = threads_start,
	.stop = threads_stop,
};
