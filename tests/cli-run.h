/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running the uffdguard binary ($UFFDGUARD, set by tests/meson.build) as
 * a given identity, and reading its JSON. */
#ifndef UFFDGUARD_TEST_CLI_RUN_H
#define UFFDGUARD_TEST_CLI_RUN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "util.h"

struct cli_result {
	int status; /* exit code, or 128 + signal */
	char *out, *err;
	json_object *json; /* stdout parsed by cli_json() */
};

/* When set, called in the child just before it runs the binary: to give
 * it a limit or a capability set the test itself must not have. */
extern void (*cli_pre_exec)(void);

/* Skips the case unless a user other than root can run $UFFDGUARD (every
 * directory above it searchable by others). */
void cli_require_reachable_by_others(void);

/* Run $UFFDGUARD args... as `who`, capturing stdout and stderr (skips the
 * case where `who` cannot reach it). */
void cli_run(enum who who, const char *const *args, struct cli_result *r);
#define CLI(who, r, ...) cli_run(who, (const char *const[]){ __VA_ARGS__, NULL }, r)

/* For `status`: a deadline for its probe children that no slow machine
 * reaches (its default, 1 s and ten holds, is sized for a user's machine,
 * not for an emulated guest sharing its CPUs with others), where a test
 * asserts what the probe found rather than when it is stopped. */
#define PROBE_DEADLINE "--probe-timeout", "120000"

const char *cli_path(void);

/* Start $UFFDGUARD args... (as this process) without waiting for it:
 * its standard output and error on pipes returned in *out and *err (each
 * may be NULL: then /dev/null); hook, if any, runs in the child before
 * exec. */
pid_t cli_spawn(const char *const *args, int *out, int *err, void (*hook)(void));

/* Text read from a descriptor as it comes. */
struct reader {
	int fd;
	char *buf;
	size_t used, size;
	bool eof;
};
/* Read until `needle` is in r->buf (true) or the descriptor ends
 * (false); fails the test after `seconds`. */
bool read_until(struct reader *r, const char *needle, int seconds);
/* Read until the end. */
void read_rest(struct reader *r);

/* The exit status of pid (exit code, or 128 + signal); fails the test,
 * killing it, if it has not exited after `seconds`. */
int wait_exit(pid_t pid, int seconds);

/* The path of run-helper, the program test-run and test-supervise run
 * under `uffdguard run` (beside the test program). */
const char *run_helper_path(void);

/* The value of the line "NAME VALUE" in a helper's output; fails the
 * test if there is none. */
int line_value(const char *out, const char *name);

/* `uffdguard args...` as root must fail with want_status and a message
 * containing want_msg, without starting its command: an argument
 * "TOUCH" is replaced by the path of a file the command would create. */
void cli_refused(int want_status, const char *want_msg, const char *const *args);

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
/* The failure shows the end of a long haystack: the report holds 1 KiB,
 * and a command's verdict comes last. */
#define ASSERT_CONTAINS(hay, needle)                                                \
	do {                                                                        \
		const char *h_ = (hay);                                             \
		size_t l_ = strlen(h_);                                             \
		if (!strstr(h_, (needle)))                                          \
			FAIL("%s lacks \"%s\"%s:\n%s", #hay, (needle),                 \
			     l_ > 800 ? " (its last 800 bytes)" : "",                 \
			     l_ > 800 ? h_ + l_ - 800 : h_);                          \
	} while (0)

#endif
