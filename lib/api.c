// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <string.h>

#include "internal.h"

static int api_ioctl(int fd, uint64_t features, struct uffdio_api *out)
{
	memset(out, 0, sizeof(*out));
	out->api = UFFD_API;
	out->features = features;
	return uffd_sys_ioctl(fd, UFFDIO_API, out);
}

LIBUFFD_EXPORT int libuffd_kernel_api(struct libuffd_api *api)
{
	/* The kernel's offer does not change while it runs: cache it.  Racing
	 * first callers store the same values; every access is atomic so that
	 * a reader never sees a half-written cache. */
	static uint64_t cached_features, cached_ioctls;
	static int have_cache;
	struct uffdio_api raw;

	if (!__atomic_load_n(&have_cache, __ATOMIC_ACQUIRE)) {
		int fd = libuffd_open(NULL, NULL);
		if (fd < 0)
			return fd;
		int ret = api_ioctl(fd, 0, &raw);
		uffd_sys_close(fd);
		if (ret < 0)
			return ret;
		__atomic_store_n(&cached_features, raw.features, __ATOMIC_RELAXED);
		__atomic_store_n(&cached_ioctls, raw.ioctls, __ATOMIC_RELAXED);
		__atomic_store_n(&have_cache, 1, __ATOMIC_RELEASE);
	}
	memset(api, 0, sizeof(*api));
	api->features = __atomic_load_n(&cached_features, __ATOMIC_RELAXED);
	api->ioctls = __atomic_load_n(&cached_ioctls, __ATOMIC_RELAXED);
	return 0;
}

LIBUFFD_EXPORT int libuffd_api_handshake(int fd, uint64_t requested, uint64_t required,
					 struct libuffd_api *api)
{
	struct uffdio_api raw;
	struct libuffd_api offer;
	uint64_t want = requested | required;
	uint64_t missing;

	memset(api, 0, sizeof(*api));
	/* Ask the kernel only for what it offers: not every kernel refuses
	 * the rest.  Before 6.10 (and its stable backports) it enabled,
	 * unchecked, features its architecture or configuration masks from
	 * the offer, and failed an unknown feature with EINVAL before
	 * EVENT_FORK without CAP_SYS_PTRACE with EPERM; from 6.0 until the
	 * 2023 revert it silently dropped features it did not know.  The
	 * offer comes from a throw-away descriptor (cached); without it, ask
	 * for everything and judge by the answer. */
	int have_offer = want && libuffd_kernel_api(&offer) == 0;
	if (have_offer) {
		missing = required & ~offer.features;
		if (missing) {
			api->missing = missing;
			return -EOPNOTSUPP;
		}
		want = required | (requested & offer.features);
	}
	int ret = api_ioctl(fd, want, &raw);
	if (ret == -EPERM && (want & LIBUFFD_FEATURE_EVENT_FORK)) {
		/* Only EVENT_FORK needs CAP_SYS_PTRACE at handshake.  A failed
		 * UFFDIO_API leaves the descriptor uninitialised: retry. */
		if (required & LIBUFFD_FEATURE_EVENT_FORK) {
			api->missing = LIBUFFD_FEATURE_EVENT_FORK;
			return -EPERM;
		}
		want &= ~(uint64_t)LIBUFFD_FEATURE_EVENT_FORK;
		ret = api_ioctl(fd, want, &raw);
	}
	if (ret < 0)
		return ret;
	/* raw.features is the kernel's whole offer, not what it enabled. */
	missing = required & ~raw.features;
	if (missing) {
		/* Only without the offer: an older kernel took what it lacks.
		 * The descriptor's one handshake is spent. */
		api->missing = missing;
		return -EOPNOTSUPP;
	}
	api->features = want & raw.features;
	/* The kernel enables WP_UNPOPULATED with WP_ASYNC. */
	if (api->features & LIBUFFD_FEATURE_WP_ASYNC)
		api->features |= LIBUFFD_FEATURE_WP_UNPOPULATED;
	api->ioctls = raw.ioctls;
	return 0;
}
