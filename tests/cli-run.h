/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running the uffdguard binary ($UFFDGUARD, set by tests/meson.build) as
 * a given identity, and reading its JSON. */
#ifndef UFFDGUARD_TEST_CLI_RUN_H
#define UFFDGUARD_TEST_CLI_RUN_H

#include <json-c/json.h>

#include "util.h"

struct cli_result {
	int status; /* exit code, or 128 + signal */
	char *out, *err;
	json_object *json; /* stdout parsed by cli_json() */
};

/* When set, called in the child just before it runs the binary: to give
 * it a limit or a capability set the test itself must not have. */
extern void (*cli_pre_exec)(void);

/* Run $UFFDGUARD args... as `who`, capturing stdout and stderr. */
void cli_run(enum who who, const char *const *args, struct cli_result *r);
#define CLI(who, r, ...) cli_run(who, (const char *const[]){ __VA_ARGS__, NULL }, r)
const char *cli_path(void);

/* Parse r->out as JSON (fails the test if it is not) and return it. */
json_object *cli_json(struct cli_result *r);

/* The value at a dotted path ("verdict.status", "probe.identities.0.uid");
 * fails the test when the path does not exist.  A JSON null is NULL. */
json_object *jat(json_object *root, const char *path);
const char *jstr(json_object *root, const char *path); /* "null" for null */
long long jint(json_object *root, const char *path);
int jbool(json_object *root, const char *path);

/* Files the command reads and writes: the whole text of a file (into
 * buf, NUL-terminated, failing the test if it cannot be read), a file
 * created with `text`, and how many entries a directory has (to see
 * that no temporary file was left behind). */
void read_text(const char *path, char *buf, size_t size);
void write_text(const char *path, const char *text);
size_t dir_entries(const char *dir);
/* path is a symbolic link to target (fails the test otherwise). */
void assert_link(const char *path, const char *target);
/* rm -rf of a test's private temporary directory. */
void remove_tree(const char *dir);

#define ASSERT_STREQ(a, b)                                                          \
	do {                                                                        \
		const char *a_ = (a), *b_ = (b);                                    \
		if (!a_ || !b_ || strcmp(a_, b_))                                   \
			FAIL("%s is \"%s\", want \"%s\"", #a, a_ ? a_ : "(null)", b_); \
	} while (0)
#define ASSERT_CONTAINS(hay, needle)                                                \
	do {                                                                        \
		if (!strstr((hay), (needle)))                                       \
			FAIL("%s lacks \"%s\":\n%s", #hay, (needle), (hay));        \
	} while (0)

#endif
