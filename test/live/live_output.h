/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the live tests check of mrlease-stat's output, whatever file it
 * read: JSON that a parser takes, text that a terminal shows as text.
 */
#ifndef LIVE_OUTPUT_H
#define LIVE_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* Where out (out_len bytes) is not well-formed UTF-8 or, with terminal,
 * holds a control character other than a newline (a C0 or C1 control,
 * DEL: what a terminal would obey); NULL if nowhere. */
const char *live_output_bad(const char *out, size_t out_len, bool terminal);

/* Whether out is one JSON value (RFC 8259), nesting at most 32 deep. */
bool live_json_valid(const char *out, size_t out_len);

#endif /* LIVE_OUTPUT_H */
