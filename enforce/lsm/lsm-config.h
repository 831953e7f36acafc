/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration file of `uffdguard lsm apply --config`: one scope a
 * line, the host default or a cgroup path, then a policy as --policy and
 * --set take it:
 *
 *     # SCOPE                       POLICY          [KNOB=VALUE...]
 *     host                          user-mode-only
 *     /user.slice                   deny
 *     /system.slice/qemu.service    allow           cover_device=0
 *
 * Blank lines and lines starting with '#' are ignored.  A scope may be
 * given once.  The whole file is checked before anything is applied.
 */
#ifndef UFFDGUARD_LSM_CONFIG_H
#define UFFDGUARD_LSM_CONFIG_H

#include <stddef.h>

#include "loader.h"

/* Parse text (len bytes, named name in messages).  Returns 0 with a
 * malloc'd array in *specs (n entries, possibly 0), or -EINVAL with
 * "NAME:LINE: why" in err. */
int lsm_config_parse(const char *text, size_t len, const char *name,
		     struct lsm_scope_spec **specs, size_t *n, char *err, size_t err_size);

/* The same from a file. */
int lsm_config_load(const char *path, struct lsm_scope_spec **specs, size_t *n, char *err,
		    size_t err_size);

#endif
