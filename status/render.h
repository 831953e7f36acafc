/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The facts and the assessment of `uffdguard status`, written down: as
 * the text table or as JSON (schema in uffdguard-status(1)).  Each returns
 * the whole text in a string the caller frees, or NULL when memory ran
 * out; where it goes is the command line's business.
 */
#ifndef UFFDGUARD_STATUS_RENDER_H
#define UFFDGUARD_STATUS_RENDER_H

#include "assess.h"
#include "facts.h"

/* exit_code: what the command will exit with, which both outputs show;
 * colour: mark the verdict and the fixes with SGR sequences. */
char *status_render_text(const struct status_facts *f, const struct assessment *a, int exit_code,
			 bool colour);
/* version: the uffdguard version the document names. */
char *status_render_json(const struct status_facts *f, const struct assessment *a, int exit_code,
			 const char *version);

/* The Prometheus text exposition format, for node_exporter's textfile
 * collector (metric names in uffdguard-status(1)). */
char *status_render_prometheus(const struct status_facts *f, const struct assessment *a,
			       int exit_code, const char *version);

#endif
