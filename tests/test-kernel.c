// SPDX-License-Identifier: GPL-2.0-or-later
#include "harness.h"
HARNESS_GUARD_FILE(sysctl, "/proc/sys/vm/unprivileged_userfaultfd")
