/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libuffd: userfaultfd with UFFD_USER_MODE_ONLY by default.
 *
 * Conventions (as liburing): every function returns 0 or a positive value
 * on success and a negative errno on failure.  The library never writes
 * errno, never prints and never exits.  See libuffd(3).
 */
#ifndef LIBUFFD_H
#define LIBUFFD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBUFFD_VERSION_MAJOR 0
#define LIBUFFD_VERSION_MINOR 1

/* ---- Opening a descriptor ------------------------------------------- */

/* Flags for struct libuffd_open_opts.flags.  The default (0) is a
 * user-mode-only, close-on-exec, non-blocking descriptor opened by the
 * best path available. */
#define LIBUFFD_OPEN_KERNEL_FAULTS (1u << 0) /* opt in: also handle faults taken in kernel mode */
#define LIBUFFD_OPEN_BLOCKING      (1u << 1) /* no O_NONBLOCK */
#define LIBUFFD_OPEN_INHERIT       (1u << 2) /* no O_CLOEXEC */
#define LIBUFFD_OPEN_SYSCALL_ONLY  (1u << 3) /* only userfaultfd(2) */
#define LIBUFFD_OPEN_DEVICE_ONLY   (1u << 4) /* only /dev/userfaultfd + USERFAULTFD_IOC_NEW */

#define LIBUFFD_DEVICE_PATH "/dev/userfaultfd"

/* Input structures carry reserved fields that must be zero (initialise
 * the whole structure), so that later versions can give them a meaning;
 * output structures have room to grow. */
struct libuffd_open_opts {
	unsigned int flags;      /* LIBUFFD_OPEN_* */
	const char *device_path; /* NULL: LIBUFFD_DEVICE_PATH */
	uint64_t reserved[4];    /* must be zero */
};

/* Which path produced (or refused) a descriptor. */
enum libuffd_path {
	LIBUFFD_PATH_NONE = 0,
	LIBUFFD_PATH_SYSCALL = 1,
	LIBUFFD_PATH_DEVICE = 2,
};

/* What libuffd_open() tried; input to libuffd_explain_open(). */
struct libuffd_open_report {
	unsigned int open_flags;   /* the LIBUFFD_OPEN_* flags asked for */
	int kernel_flags;          /* flags passed to the kernel */
	enum libuffd_path path;    /* path that succeeded, or NONE */
	int syscall_error;         /* 0: not tried or succeeded; else -errno */
	int device_error;          /* 0: not tried or succeeded; else -errno */
	char device_path[108];     /* device path that was (or would be) used */
	uint64_t reserved[4];
};

/* Open a userfaultfd.  Returns the descriptor or a negative errno.
 * With the default path, userfaultfd(2) is tried first and the device is
 * tried when the syscall is refused (EPERM, EACCES, ENOSYS: a sysctl, a
 * capability, a security module or a seccomp filter).
 * UFFD_USER_MODE_ONLY is never dropped silently: a kernel that does not
 * know it fails with -EINVAL.  opts and report may be NULL. */
int libuffd_open(const struct libuffd_open_opts *opts,
		 struct libuffd_open_report *report);

/* One sentence naming the real cause of a failed open (err is the value
 * libuffd_open() returned, report what it filled).  Reads the system
 * state (sysctl, capabilities, device permissions, seccomp, kernel
 * version) at the time of the call.  Returns the length the full text
 * needs, excluding the NUL, like snprintf(), or a negative errno. */
int libuffd_explain_open(int err, const struct libuffd_open_report *report,
			 char *buf, size_t size);

/* ---- API handshake -------------------------------------------------- */

/* Feature bits, the kernel's UFFD_FEATURE_* values. */
#define LIBUFFD_FEATURE_PAGEFAULT_FLAG_WP  (1ull << 0)
#define LIBUFFD_FEATURE_EVENT_FORK         (1ull << 1)
#define LIBUFFD_FEATURE_EVENT_REMAP        (1ull << 2)
#define LIBUFFD_FEATURE_EVENT_REMOVE       (1ull << 3)
#define LIBUFFD_FEATURE_MISSING_HUGETLBFS  (1ull << 4)
#define LIBUFFD_FEATURE_MISSING_SHMEM      (1ull << 5)
#define LIBUFFD_FEATURE_EVENT_UNMAP        (1ull << 6)
#define LIBUFFD_FEATURE_SIGBUS             (1ull << 7)
#define LIBUFFD_FEATURE_THREAD_ID          (1ull << 8)
#define LIBUFFD_FEATURE_MINOR_HUGETLBFS    (1ull << 9)
#define LIBUFFD_FEATURE_MINOR_SHMEM        (1ull << 10)
#define LIBUFFD_FEATURE_EXACT_ADDRESS      (1ull << 11)
#define LIBUFFD_FEATURE_WP_HUGETLBFS_SHMEM (1ull << 12)
#define LIBUFFD_FEATURE_WP_UNPOPULATED     (1ull << 13)
#define LIBUFFD_FEATURE_POISON             (1ull << 14)
#define LIBUFFD_FEATURE_WP_ASYNC           (1ull << 15)
#define LIBUFFD_FEATURE_MOVE               (1ull << 16)

/* ioctl bits, 1 << _UFFDIO_* as the kernel reports them. */
#define LIBUFFD_IOCTL_REGISTER     (1ull << 0x00)
#define LIBUFFD_IOCTL_UNREGISTER   (1ull << 0x01)
#define LIBUFFD_IOCTL_WAKE         (1ull << 0x02)
#define LIBUFFD_IOCTL_COPY         (1ull << 0x03)
#define LIBUFFD_IOCTL_ZEROPAGE     (1ull << 0x04)
#define LIBUFFD_IOCTL_MOVE         (1ull << 0x05)
#define LIBUFFD_IOCTL_WRITEPROTECT (1ull << 0x06)
#define LIBUFFD_IOCTL_CONTINUE     (1ull << 0x07)
#define LIBUFFD_IOCTL_POISON       (1ull << 0x08)
#define LIBUFFD_IOCTL_API          (1ull << 0x3f)

struct libuffd_api {
	uint64_t features; /* enabled on the descriptor (after a handshake)
			    * or offered by the kernel (libuffd_kernel_api) */
	uint64_t ioctls;   /* descriptor ioctls the kernel reports */
	uint64_t missing;  /* required features the kernel refused */
	uint64_t reserved[4];
};

/* UFFDIO_API on fd.  Enables required | (requested & what the kernel
 * offers, as libuffd_kernel_api() reports it): nothing else is asked
 * for.  A required feature the kernel lacks: -EOPNOTSUPP with
 * api->missing naming it, before any UFFDIO_API (fd stays usable);
 * UFFD_FEATURE_EVENT_FORK without CAP_SYS_PTRACE: -EPERM with
 * api->missing set when required, dropped when only requested.
 * api->features is what is enabled.  The handshake can be done once per
 * descriptor; a second one fails with -EINVAL.  See libuffd(3) for when
 * the offer cannot be learnt. */
int libuffd_api_handshake(int fd, uint64_t requested, uint64_t required,
			  struct libuffd_api *api);

/* What this kernel offers, learnt once on a throw-away user-mode-only
 * descriptor and cached.  Returns 0 or the error of that open. */
int libuffd_kernel_api(struct libuffd_api *api);

/* Names: "sigbus", "thread_id", ... and "copy", "zeropage", ...
 * NULL for a bit without a name.  bit is the bit number (0..63). */
const char *libuffd_feature_name(unsigned int bit);
const char *libuffd_ioctl_name(unsigned int bit);

/* Format a mask as names separated by sep ("0x..." for unnamed bits).
 * Returns the length needed, like snprintf(). */
int libuffd_format_features(uint64_t mask, const char *sep, char *buf, size_t size);
int libuffd_format_ioctls(uint64_t mask, const char *sep, char *buf, size_t size);

/* ---- Ranges --------------------------------------------------------- */

#define LIBUFFD_REGISTER_MISSING (1u << 0)
#define LIBUFFD_REGISTER_WP      (1u << 1)
#define LIBUFFD_REGISTER_MINOR   (1u << 2)

/* Register [addr, addr+len) (page aligned).  *ioctls (may be NULL)
 * receives the resolving ioctls the kernel allows on the range. */
int libuffd_register(int fd, void *addr, size_t len, unsigned int modes,
		     uint64_t *ioctls);
int libuffd_unregister(int fd, void *addr, size_t len);

/* ---- Resolving faults ----------------------------------------------- */

/* Mode flags; the ones that do not apply to an operation are -EINVAL. */
#define LIBUFFD_DONTWAKE        (1u << 0) /* resolve, wake later with libuffd_wake() */
#define LIBUFFD_WP              (1u << 1) /* copy/continue: map write-protected */
#define LIBUFFD_MOVE_SRC_HOLES  (1u << 2) /* move: holes in src are not an error */

/*
 * Each resolver returns 0 when the whole range was resolved and stores in
 * *done (may be NULL) the bytes resolved, also on failure.  Errors:
 *  -EAGAIN  only *done bytes were resolved: the address space is changing (an
 *           event such as fork, remap or remove is pending) or a later page
 *           failed; read the pending events, then retry the rest, which
 *           reports the error if there is one.
 *  -EEXIST  the first page of the range is already present (another
 *           resolver won) and nothing was done: a fault on that page is
 *           resolved (wake if DONTWAKE was given); the rest of the range
 *           is not.
 *  -ENOENT  the range is not (or no longer) registered or mapped, or does
 *           not lie within one mapping (a partial munmap or mprotect split
 *           it): nothing was done; resolve each side separately.
 *  -ESRCH   the address space that owns the descriptor is gone.
 *  -EINVAL  misaligned or bad arguments; -ENOMEM, -EFAULT as the kernel.
 */
int libuffd_copy(int fd, void *dst, const void *src, size_t len,
		 unsigned int mode, size_t *done);
int libuffd_zeropage(int fd, void *dst, size_t len, unsigned int mode, size_t *done);
int libuffd_continue(int fd, void *dst, size_t len, unsigned int mode, size_t *done);
int libuffd_poison(int fd, void *dst, size_t len, unsigned int mode, size_t *done);
int libuffd_move(int fd, void *dst, void *src, size_t len, unsigned int mode,
		 size_t *done);
/* Write-protect (protect != 0) or un-protect [addr, addr+len). */
int libuffd_writeprotect(int fd, void *addr, size_t len, int protect,
			 unsigned int mode);
/* Wake the threads waiting on [addr, addr+len). */
int libuffd_wake(int fd, void *addr, size_t len);

/* ---- Events --------------------------------------------------------- */

enum libuffd_event_type {
	LIBUFFD_EVENT_PAGEFAULT = 0x12,
	LIBUFFD_EVENT_FORK = 0x13,
	LIBUFFD_EVENT_REMAP = 0x14,
	LIBUFFD_EVENT_REMOVE = 0x15,
	LIBUFFD_EVENT_UNMAP = 0x16,
};

#define LIBUFFD_FAULT_WRITE (1u << 0)
#define LIBUFFD_FAULT_WP    (1u << 1)
#define LIBUFFD_FAULT_MINOR (1u << 2)

struct libuffd_event {
	enum libuffd_event_type type;
	union {
		struct {
			uint64_t address; /* page aligned unless EXACT_ADDRESS */
			uint32_t flags;   /* LIBUFFD_FAULT_* */
			pid_t tid;        /* 0 unless UFFD_FEATURE_THREAD_ID */
		} pagefault;
		struct {
			int fd;           /* the child's new descriptor: caller owns it */
		} fork;
		struct {
			uint64_t from, to, len;
		} remap;
		struct {
			uint64_t start, end;
		} remove; /* REMOVE (madvise) and UNMAP */
		uint64_t reserved[4]; /* fixes the size for later event types */
	};
};

/* Read up to max events.  Returns how many (>= 1), -EAGAIN when none is
 * pending on a non-blocking descriptor, or another negative errno. */
int libuffd_read_events(int fd, struct libuffd_event *events, unsigned int max);

/* The version of the libuffd the program runs with ("0.1.0"): that of the
 * uffdguard release it came with.  A static string. */
const char *libuffd_version(void);

#ifdef __cplusplus
}
#endif
#endif
