// SPDX-License-Identifier: GPL-2.0-or-later
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "identity.h"

static bool id_runs_a_process(uid_t id)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool used = false;

	if (!d)
		return false;
	while (!used && (e = readdir(d))) {
		char path[300];
		struct stat st;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s", e->d_name);
		if (stat(path, &st) == 0 && st.st_uid == id)
			used = true;
	}
	closedir(d);
	return used;
}

uid_t identity_unused_id(void)
{
	/* High, below the 32-bit overflow ids, away from system ranges. */
	for (uid_t id = 61000; id > 60000; id--) {
		if (getpwuid(id) || getgrgid(id) || id_runs_a_process(id))
			continue;
		return id;
	}
	return 65534;
}

int identity_drop(uid_t id, bool keep_ptrace)
{
	if (setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0)
		return -errno;
	if (keep_ptrace && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return -errno;
	if (setresuid(id, id, id) < 0)
		return -errno;

	cap_t caps = cap_init(); /* all clear */
	if (!caps)
		return -errno;
	int ret = 0;
	if (keep_ptrace) {
		cap_value_t v = CAP_SYS_PTRACE;
		if (cap_set_flag(caps, CAP_PERMITTED, 1, &v, CAP_SET) < 0 ||
		    cap_set_flag(caps, CAP_EFFECTIVE, 1, &v, CAP_SET) < 0)
			ret = -errno;
	}
	if (!ret && cap_set_proc(caps) < 0)
		ret = -errno;
	cap_free(caps);
	if (!ret && keep_ptrace && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		ret = -errno;
	return ret;
}

bool identity_has_cap(int cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (!caps)
		return false;
	cap_get_flag(caps, (cap_value_t)cap, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v == CAP_SET;
}

bool identity_privileged(uint64_t cap_eff, ino_t user_ns_ino)
{
	return (cap_eff >> CAP_SYS_PTRACE & 1) && user_ns_ino == IDENTITY_INIT_USER_NS_INO;
}
