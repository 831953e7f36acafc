// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cleanup.h"
#include "lsm-config.h"

#define MAX_LINE 4096
#define MAX_SETS 8

static int parse_line(char *line, struct lsm_scope_spec *spec, char *err, size_t err_size)
{
	char *words[2 + MAX_SETS], *save = NULL;
	size_t n = 0;

	for (char *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
		if (n == sizeof(words) / sizeof(words[0])) {
			snprintf(err, err_size, "too many words: a scope, a policy and at most %d "
				 "KNOB=VALUE", MAX_SETS);
			return -EINVAL;
		}
		words[n++] = w;
	}
	if (n < 2) {
		snprintf(err, err_size, "expected a scope (host or a cgroup path) and a policy");
		return -EINVAL;
	}
	if (!strcmp(words[0], "host")) {
		spec->cgroup[0] = '\0';
	} else {
		int r = cgroup_path_check(words[0], err, err_size);
		if (r < 0)
			return r;
		snprintf(spec->cgroup, sizeof(spec->cgroup), "%s", words[0]);
	}
	return policy_build(words[1], (const char *const *)&words[2], n - 2, &spec->policy, err,
			    err_size);
}

int lsm_config_parse(const char *text, size_t len, const char *name,
		     struct lsm_scope_spec **specs, size_t *n, char *err, size_t err_size)
{
	struct lsm_scope_spec *out = NULL;
	size_t count = 0, cap = 0, lineno = 0;
	cleanup_free int *lines = NULL;
	int r = 0;
	char why[512];

	for (size_t pos = 0; pos < len && r == 0;) {
		const char *end = memchr(text + pos, '\n', len - pos);
		size_t l = end ? (size_t)(end - (text + pos)) : len - pos;
		char line[MAX_LINE];
		lineno++;
		if (l >= sizeof(line)) {
			snprintf(err, err_size, "%s:%zu: line longer than %d characters", name, lineno,
				 MAX_LINE - 1);
			r = -EINVAL;
			break;
		}
		memcpy(line, text + pos, l);
		line[l] = '\0';
		pos += l + 1;
		if (strlen(line) != l) {
			snprintf(err, err_size, "%s:%zu: a NUL byte in the line", name, lineno);
			r = -EINVAL;
			break;
		}
		size_t skip = strspn(line, " \t\r");
		if (!line[skip] || line[skip] == '#')
			continue;
		if (count == cap) {
			cap = cap ? cap * 2 : 16;
			if (cap > LSM_MAX_SCOPES) {
				snprintf(err, err_size, "%s:%zu: more than %d scopes", name, lineno,
					 LSM_MAX_SCOPES);
				r = -EINVAL;
				break;
			}
			struct lsm_scope_spec *o = realloc(out, cap * sizeof(*out));
			int *ln = realloc(lines, cap * sizeof(*lines));
			if (o)
				out = o;
			if (ln)
				lines = ln;
			if (!o || !ln) {
				snprintf(err, err_size, "out of memory");
				r = -ENOMEM;
				break;
			}
		}
		memset(&out[count], 0, sizeof(out[count]));
		if (parse_line(line + skip, &out[count], why, sizeof(why)) < 0) {
			snprintf(err, err_size, "%s:%zu: %s", name, lineno, why);
			r = -EINVAL;
			break;
		}
		for (size_t i = 0; i < count; i++)
			if (!strcmp(out[i].cgroup, out[count].cgroup)) {
				snprintf(err, err_size, "%s:%zu: %s is already given on line %d", name,
					 lineno, out[count].cgroup[0] ? out[count].cgroup
								      : "the host default",
					 lines[i]);
				r = -EINVAL;
				break;
			}
		lines[count++] = (int)lineno;
	}
	if (r < 0) {
		free(out);
		return r;
	}
	*specs = out;
	*n = count;
	return 0;
}

int lsm_config_load(const char *path, struct lsm_scope_spec **specs, size_t *n, char *err,
		    size_t err_size)
{
	cleanup_file FILE *f = fopen(path, "re");
	cleanup_free char *text = NULL;
	size_t size = 0;

	if (!f) {
		int e = errno;
		snprintf(err, err_size, "%s: %s", path, strerror(e));
		return -e;
	}
	FILE *mem = open_memstream(&text, &size);
	char buf[8192];
	size_t got;
	int r = mem ? 0 : -ENOMEM;
	while (r == 0 && (got = fread(buf, 1, sizeof(buf), f)) > 0)
		if (fwrite(buf, 1, got, mem) != got)
			r = -ENOMEM;
	if (r == 0 && ferror(f))
		r = -EIO;
	if (mem)
		fclose(mem); /* text and size are complete from here */
	if (r < 0)
		snprintf(err, err_size, "%s: %s", path, strerror(-r));
	else
		r = lsm_config_parse(text, size, path, specs, n, err, err_size);
	return r;
}
