// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The live probe and the stall probe of `uffdguard status`.  The results
 * live in a shared anonymous mapping, so a child killed at its deadline
 * still leaves what it had found, including the stall point it was held
 * at.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "identity.h"
#include "libuffd.h"
#include "probe.h"

#define PAYLOAD 64

/* In a probe child: it has an IPC namespace of its own (child_main()). */
static bool own_ipc_namespace;

/* Shared between a child and the parent. */
struct probe_slot {
	struct probe_identity id;
	/* Written by the child: when the current stall point started, on
	 * CLOCK_MONOTONIC, which every process shares. */
	_Atomic int current_point; /* -1: none */
	_Atomic double started_ms;
	_Atomic int msq; /* a message queue to remove if the child dies, or -1 */
	_Atomic bool done;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *probe_way_name(enum probe_way way)
{
	static const char *const names[] = {
		[PROBE_SYSCALL] = "syscall",
		[PROBE_SYSCALL_UMO] = "syscall+user-mode-only",
		[PROBE_DEVICE] = "device",
		[PROBE_DEVICE_UMO] = "device+user-mode-only",
	};
	return (unsigned)way < PROBE_N_WAYS ? names[way] : "none";
}

const char *probe_who_name(enum probe_who who)
{
	static const char *const names[] = {
		[PROBE_UNPRIV] = "unprivileged",
		[PROBE_PTRACE] = "cap_sys_ptrace",
		[PROBE_SELF] = "caller",
	};
	return (unsigned)who < PROBE_N_WHO ? names[who] : "?";
}

static const struct {
	const char *name, *label;
} stall_points[] = {
	[STALL_SETXATTR] = { "setxattr", "setxattr value" },
	[STALL_MSGSND] = { "msgsnd", "msgsnd payload" },
	[STALL_PIPE_WRITE] = { "pipe_write", "pipe write" },
	[STALL_SENDMSG] = { "sendmsg", "sendmsg data" },
	[STALL_READ] = { "read", "read into page" },
};

const char *stall_point_name(enum stall_point point)
{
	return (unsigned)point < STALL_N_POINTS ? stall_points[point].name : "?";
}

const char *stall_point_label(enum stall_point point)
{
	return (unsigned)point < STALL_N_POINTS ? stall_points[point].label : "?";
}

const char *stall_outcome_name(enum stall_outcome outcome)
{
	static const char *const names[] = {
		[STALL_NOT_RUN] = "not_run",
		[STALL_HELD] = "held",
		[STALL_REFUSED] = "refused",
		[STALL_ERROR] = "error",
		[STALL_TIMEOUT] = "timeout",
	};
	return (unsigned)outcome <= STALL_TIMEOUT ? names[outcome] : "?";
}

bool probe_can_switch_identity(void)
{
	return geteuid() == 0 && identity_has_cap(CAP_SETUID);
}

/* ---- in the child ---------------------------------------------------- */

static const unsigned int way_flags[PROBE_N_WAYS] = {
	[PROBE_SYSCALL] = LIBUFFD_OPEN_KERNEL_FAULTS | LIBUFFD_OPEN_SYSCALL_ONLY,
	[PROBE_SYSCALL_UMO] = LIBUFFD_OPEN_SYSCALL_ONLY,
	[PROBE_DEVICE] = LIBUFFD_OPEN_KERNEL_FAULTS | LIBUFFD_OPEN_DEVICE_ONLY,
	[PROBE_DEVICE_UMO] = LIBUFFD_OPEN_DEVICE_ONLY,
};

/* The descriptor the stall probe prefers: one that handles kernel faults. */
static const enum probe_way preference[PROBE_N_WAYS] = {
	PROBE_SYSCALL, PROBE_DEVICE, PROBE_SYSCALL_UMO, PROBE_DEVICE_UMO,
};

/* Try every way; returns the best descriptor (or -1) in *best. */
static void try_all_ways(struct probe_identity *id, const char *device, int *best)
{
	int fds[PROBE_N_WAYS];

	*best = -1;
	for (int w = 0; w < PROBE_N_WAYS; w++) {
		struct libuffd_open_opts o = { .flags = way_flags[w], .device_path = device };
		struct libuffd_open_report rep;
		struct probe_attempt *a = &id->attempts[w];

		fds[w] = libuffd_open(&o, &rep);
		a->tried = true;
		a->result = fds[w] < 0 ? fds[w] : 0;
		if (fds[w] < 0)
			libuffd_explain_open(fds[w], &rep, a->why, sizeof(a->why));
	}
	for (int i = 0; i < PROBE_N_WAYS; i++) {
		int w = preference[i];
		if (fds[w] >= 0 && *best < 0) {
			*best = fds[w];
			id->stall_way = w;
		} else if (fds[w] >= 0) {
			close(fds[w]);
		}
	}
}

struct handler {
	int uffd;
	int hold_ms;
	struct probe_slot *slot;
	void *fill; /* a page of 0x01 bytes */
	_Atomic int faults;
	_Atomic bool stop;
};

/* Serve each fault after holding it for hold_ms: the pause an attacker
 * would get, bounded so the probe stays fast. */
static void *handler_main(void *arg)
{
	struct handler *h = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	while (!atomic_load(&h->stop)) {
		struct pollfd p = { .fd = h->uffd, .events = POLLIN };
		struct libuffd_event ev;

		if (poll(&p, 1, 20) != 1 || libuffd_read_events(h->uffd, &ev, 1) != 1 ||
		    ev.type != LIBUFFD_EVENT_PAGEFAULT)
			continue;
		int point = atomic_load(&h->slot->current_point);
		if (point >= 0)
			h->slot->id.stall[point].delivered = true;
		atomic_fetch_add(&h->faults, 1);
		struct timespec ts = { h->hold_ms / 1000, (long)(h->hold_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		void *dst = (void *)(uintptr_t)(ev.pagefault.address & ~(uint64_t)(page - 1));
		if (libuffd_copy(h->uffd, dst, h->fill, page, 0, NULL) < 0)
			libuffd_wake(h->uffd, dst, page); /* never leave the caller asleep */
	}
	return NULL;
}

/* One stall point: target is the start of a registered missing page,
 * preceded by a populated one. */
static int stall_call(struct probe_slot *slot, enum stall_point point, char *target)
{
	int fds[2] = { -1, -1 }, ret = 0;

	switch (point) {
	case STALL_SETXATTR:
		fds[0] = memfd_create("uffdguard-probe", MFD_CLOEXEC);
		if (fds[0] < 0 || fsetxattr(fds[0], "user.uffdguard", target, PAYLOAD, 0) < 0)
			ret = -errno;
		break;
	case STALL_MSGSND: {
		/* mtype on the populated page, the payload on the registered one. */
		struct msgbuf *m = (struct msgbuf *)(target - sizeof(long));
		m->mtype = 1;
		int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
		/* Outlives the process, unless the child has an IPC namespace
		 * of its own (child_main()): else the parent removes it if we
		 * are killed.  (An id in our namespace must never reach it: in
		 * the parent's it names another queue.) */
		if (!own_ipc_namespace)
			atomic_store(&slot->msq, q);
		if (q < 0 || msgsnd(q, m, PAYLOAD, IPC_NOWAIT) < 0)
			ret = -errno;
		if (q >= 0 && msgctl(q, IPC_RMID, NULL) == 0)
			atomic_store(&slot->msq, -1);
		break;
	}
	case STALL_PIPE_WRITE:
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0 || write(fds[1], target, PAYLOAD) < 0)
			ret = -errno;
		break;
	case STALL_SENDMSG: {
		struct iovec iov = { .iov_base = target, .iov_len = PAYLOAD };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds) < 0 ||
		    sendmsg(fds[0], &msg, MSG_DONTWAIT) < 0)
			ret = -errno;
		break;
	}
	case STALL_READ:
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0 || write(fds[1], "data", 4) != 4 ||
		    read(fds[0], target, 4) < 0)
			ret = -errno;
		break;
	default:
		ret = -EINVAL;
	}
	int saved = errno;
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	errno = saved;
	return ret;
}

static void stall_probe(struct probe_slot *slot, int uffd, int hold_ms)
{
	struct probe_identity *id = &slot->id;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct libuffd_api api;
	int ret = libuffd_api_handshake(uffd, 0, 0, &api);

	if (ret < 0) {
		snprintf(id->stall_why_not, sizeof(id->stall_why_not), "UFFDIO_API failed: %s",
			 strerror(-ret));
		return;
	}
	struct handler h = { .uffd = uffd, .hold_ms = hold_ms, .slot = slot };
	h.fill = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h.fill == MAP_FAILED) {
		snprintf(id->stall_why_not, sizeof(id->stall_why_not), "mmap: %s", strerror(errno));
		return;
	}
	memset(h.fill, 1, page);
	pthread_t thread;
	if ((ret = pthread_create(&thread, NULL, handler_main, &h)) != 0) {
		snprintf(id->stall_why_not, sizeof(id->stall_why_not), "pthread_create: %s",
			 strerror(ret));
		return;
	}
	id->stall_run = true;
	for (int p = 0; p < STALL_N_POINTS; p++) {
		struct stall_result *r = &id->stall[p];
		char *area = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area == MAP_FAILED) {
			*r = (struct stall_result){ .outcome = STALL_ERROR, .err = errno };
			continue;
		}
		area[0] = 0; /* populate the first page */
		ret = libuffd_register(uffd, area + page, page, LIBUFFD_REGISTER_MISSING, NULL);
		if (ret < 0) {
			*r = (struct stall_result){ .outcome = STALL_ERROR, .err = -ret };
			munmap(area, 2 * page);
			continue;
		}
		int before = atomic_load(&h.faults);
		double start = now_ms();
		atomic_store(&slot->started_ms, start);
		r->outcome = STALL_TIMEOUT; /* until the call returns */
		atomic_store(&slot->current_point, p);
		ret = stall_call(slot, (enum stall_point)p, area + page);
		double took = now_ms() - start;
		atomic_store(&slot->current_point, -1);
		r->err = -ret;
		if (atomic_load(&h.faults) != before) {
			r->outcome = STALL_HELD;
			r->held_ms = took;
		} else {
			r->outcome = ret == -EFAULT ? STALL_REFUSED : STALL_ERROR;
			r->took_us = took * 1e3;
		}
		munmap(area, 2 * page);
	}
	atomic_store(&h.stop, true);
	pthread_join(thread, NULL);
	munmap(h.fill, page);
}

static void child_main(struct probe_slot *slot, enum probe_who who, uid_t uid,
		       const struct probe_options *o, pid_t parent)
{
	struct probe_identity *id = &slot->id;

	/* The msgsnd stall point's System V queue outlives its process: in
	 * an IPC namespace of the child's own it goes with the child, also
	 * when status is killed (SIGKILL) and cannot remove it.  That needs
	 * CAP_SYS_ADMIN (root): for the others the parent removes the queue,
	 * at the deadline or on a terminating signal (wait_children()). */
	own_ipc_namespace = who != PROBE_SELF && unshare(CLONE_NEWIPC) == 0;
	if (who != PROBE_SELF) {
		int ret = identity_drop(uid, who == PROBE_PTRACE);
		if (ret < 0) {
			snprintf(id->why_not, sizeof(id->why_not),
				 "cannot drop to uid %u: %s", (unsigned)uid, strerror(-ret));
			id->ran = false;
			return;
		}
	}
	/* A change of credentials clears the parent-death signal: set it
	 * now, so that a killed status never leaves a probe running. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	id->uid = getuid();
	id->has_ptrace = identity_has_cap(CAP_SYS_PTRACE);

	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	id->fuse_open = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);

	int best;
	try_all_ways(id, o->device_path, &best);
	if (who == PROBE_PTRACE) {
		if (best >= 0)
			close(best);
		return;
	}
	if (best < 0) {
		snprintf(id->stall_why_not, sizeof(id->stall_why_not),
			 "no descriptor could be created");
		return;
	}
	stall_probe(slot, best, o->hold_ms);
	close(best);
}

/* ---- in the parent --------------------------------------------------- */

struct child {
	pid_t pid;
	int pipe_fd; /* read end: EOF when the child has exited */
};

/* A terminating signal must not leave a System V queue behind (the
 * msgsnd stall point): while the children run, the signals that would
 * kill us by default are caught, and let through once they are cleaned
 * up.  caller_mask and caller_action are what the caller had. */
static const int term_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
#define N_TERM_SIGNALS (sizeof(term_signals) / sizeof(term_signals[0]))
static sigset_t caller_mask;
static struct sigaction caller_action[N_TERM_SIGNALS];
static bool caught[N_TERM_SIGNALS];
static volatile sig_atomic_t term_signal;

static void on_term_signal(int sig)
{
	term_signal = sig;
}

/* Catch the terminating signals left at their default action, and block
 * them but inside wait_children()'s ppoll(). */
static void catch_term_signals(void)
{
	sigset_t block;

	sigemptyset(&block);
	term_signal = 0;
	for (size_t i = 0; i < N_TERM_SIGNALS; i++) {
		struct sigaction sa = { .sa_handler = on_term_signal };
		sigemptyset(&sa.sa_mask);
		caught[i] = sigaction(term_signals[i], NULL, &caller_action[i]) == 0 &&
			    caller_action[i].sa_handler == SIG_DFL &&
			    sigaction(term_signals[i], &sa, NULL) == 0;
		if (caught[i])
			sigaddset(&block, term_signals[i]);
	}
	pthread_sigmask(SIG_BLOCK, &block, &caller_mask);
}

/* Give the caller its actions and mask back (children: at once). */
static void restore_term_signals(void)
{
	for (size_t i = 0; i < N_TERM_SIGNALS; i++)
		if (caught[i])
			sigaction(term_signals[i], &caller_action[i], NULL);
	pthread_sigmask(SIG_SETMASK, &caller_mask, NULL);
}

static int spawn(struct probe_slot *slot, enum probe_who who, uid_t uid,
		 const struct probe_options *o, struct child *c)
{
	int p[2];
	pid_t parent = getpid();

	slot->id.ran = true;
	slot->id.stall_way = -1;
	atomic_store(&slot->current_point, -1);
	atomic_store(&slot->msq, -1);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid == 0) {
		restore_term_signals();
		setpgid(0, 0);
		close(p[0]);
		child_main(slot, who, uid, o, parent);
		atomic_store(&slot->done, true);
		_exit(0);
	}
	setpgid(pid, pid); /* also here: kill(-pid) must work at once */
	close(p[1]);
	*c = (struct child){ .pid = pid, .pipe_fd = p[0] };
	return 0;
}

/* Wait for every child until the deadline or a terminating signal; then
 * kill each process group and reap, whatever happened. */
static void wait_children(struct child *kids, int n, struct probe_slot *slots[], double deadline)
{
	int open_fds = n;

	while (open_fds > 0 && !term_signal) {
		struct pollfd p[PROBE_N_WHO];
		double left = deadline - now_ms();
		if (left <= 0)
			break;
		long long ns = (long long)(left * 1e6);
		struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = kids[i].pipe_fd, .events = POLLIN };
		if (ppoll(p, (nfds_t)n, &ts, &caller_mask) < 0) {
			if (errno != EINTR)
				break;
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (kids[i].pipe_fd >= 0 && p[i].revents) {
				close(kids[i].pipe_fd);
				kids[i].pipe_fd = -1;
				open_fds--;
			}
		}
	}
	double killed_at = now_ms();
	for (int i = 0; i < n; i++) {
		struct probe_identity *id = &slots[i]->id;
		int status;

		kill(-kids[i].pid, SIGKILL);
		while (waitpid(kids[i].pid, &status, 0) < 0 && errno == EINTR)
			;
		int q = atomic_load(&slots[i]->msq);
		if (q >= 0)
			msgctl(q, IPC_RMID, NULL);
		if (kids[i].pipe_fd >= 0) {
			close(kids[i].pipe_fd);
			id->timed_out = true;
			int point = atomic_load(&slots[i]->current_point);
			if (point >= 0) {
				/* held_ms if the fault was delivered, else took_us */
				double ms = killed_at - atomic_load(&slots[i]->started_ms);
				id->stall[point].held_ms = ms;
				id->stall[point].took_us = ms * 1e3;
			}
		} else if (id->ran && !atomic_load(&slots[i]->done)) {
			snprintf(id->why_not, sizeof(id->why_not), "the probe child died (%s %d)",
				 WIFSIGNALED(status) ? "signal" : "exit status",
				 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			id->ran = false;
		}
	}
}

int probe_run(const struct probe_options *opts, struct probe_report *out)
{
	struct probe_options o = *opts;
	struct probe_slot *shared;
	struct child kids[PROBE_N_WHO];
	struct probe_slot *slots[PROBE_N_WHO];
	int n = 0, ret = 0;

	memset(out, 0, sizeof(*out));
	if (!o.device_path)
		o.device_path = LIBUFFD_DEVICE_PATH;
	if (o.timeout_ms <= 0)
		o.timeout_ms = 1000 + 10 * o.hold_ms;
	out->hold_ms = o.hold_ms;
	out->timeout_ms = o.timeout_ms;

	shared = mmap(NULL, sizeof(*shared) * PROBE_N_WHO, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -errno;
	memset(shared, 0, sizeof(*shared) * PROBE_N_WHO);

	catch_term_signals();
	bool can_switch = probe_can_switch_identity();
	uid_t uid = can_switch ? identity_unused_id() : getuid();
	for (int w = 0; w < PROBE_N_WHO; w++) {
		struct probe_identity *id = &shared[w].id;
		id->stall_way = -1;
		if ((w == PROBE_SELF) == can_switch) {
			snprintf(id->why_not, sizeof(id->why_not), "%s",
				 can_switch ? "not needed: the caller can switch identity"
				 : geteuid() == 0 ? "no CAP_SETUID: cannot switch to another uid"
						  : "not root: cannot switch to another uid");
			continue;
		}
		ret = spawn(&shared[w], (enum probe_who)w, uid, &o, &kids[n]);
		if (ret < 0)
			break;
		slots[n++] = &shared[w];
	}
	wait_children(kids, n, slots, now_ms() + o.timeout_ms);
	for (int w = 0; w < PROBE_N_WHO; w++)
		out->who[w] = shared[w].id;
	munmap(shared, sizeof(*shared) * PROBE_N_WHO);
	restore_term_signals();
	if (term_signal)
		raise(term_signal); /* the caller's action now: by default, the end */
	return ret;
}
