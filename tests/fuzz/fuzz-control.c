// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzzer entry for what a control directory and a state file hold: the
 * value written to a knob file (by whoever may write there) and the text
 * of --state FILE.  A knob value is 0 or 1 with blanks around, blank (a
 * write in progress) or refused; a state file either parses to knobs in
 * {0, 1} for every knob, or is refused with a message. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

static void check_value(const char *text, size_t len)
{
	int value = -1;
	int r = control_parse_value(text, len, &value);
	size_t i = 0, end = len;

	while (i < end && blank(text[i]))
		i++;
	while (end > i && blank(text[end - 1]))
		end--;
	if (r == 1) {
		if (i != end)
			abort(); /* "blank" with something in it */
	} else if (r == 0) {
		if (end - i != 1 || text[i] != '0' + value || (value != 0 && value != 1))
			abort();
	} else if (r != -EINVAL || (end - i == 1 && (text[i] == '0' || text[i] == '1'))) {
		abort();
	}
}

static void check_state(const char *text, size_t len)
{
	struct policy base = POLICY_DEFAULT, knobs = POLICY_DEFAULT;
	char err[1024] = "";
	int r = control_state_parse(text, len, &base, &knobs, err, sizeof(err));

	if (r != 0 && (r != -EINVAL || !err[0]))
		abort();
	if (r == 0)
		for (size_t i = 0; i < POLICY_N_KNOBS; i++)
			if ((unsigned)policy_knob_get(&base, &policy_knobs[i]) > 1 ||
			    (unsigned)policy_knob_get(&knobs, &policy_knobs[i]) > 1)
				abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Copies of their own, so that a read past the end is seen. */
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	check_value(text, size);
	check_state(text, size);
	free(text);
	return 0;
}
