/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Checks of mrlease-stat's output (live_output.h).
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "live_output.h"

/* The length (1 to 4) of the well-formed UTF-8 sequence at s, of at most n
 * bytes, 0 if there is none; *cp its code point. Written apart from the
 * tool's: a check that shared its code would share its mistakes. */
static size_t
utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] < 0x80	   ? 1 :
		     (s[0] & 0xe0) == 0xc0 ? 2 :
		     (s[0] & 0xf0) == 0xe0 ? 3 :
		     (s[0] & 0xf8) == 0xf0 ? 4 :
					     0;
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t c;

	if (!len || len > n)
		return 0;
	c = len == 1 ? s[0] : s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
		return 0;
	*cp = c;
	return len;
}

const char *
live_output_bad(const char *out, size_t out_len, bool terminal)
{
	for (size_t i = 0; i < out_len;) {
		uint32_t cp = 0;
		size_t l = utf8_len((const unsigned char *) out + i,
				    out_len - i, &cp);

		if (!l)
			return out + i;
		if (terminal &&
		    ((cp < 0x20 && cp != '\n') || (cp >= 0x7f && cp < 0xa0)))
			return out + i;
		i += l;
	}
	return NULL;
}

/* A small JSON grammar check (RFC 8259), bounded in depth. */
struct js {
	const char *p, *end;
	int depth;
};

static void
js_ws(struct js *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool
js_string(struct js *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	for (j->p++; j->p < j->end;) {
		unsigned char c = (unsigned char) *j->p++;

		if (c == '"')
			return true;
		if (c < 0x20)
			return false;
		if (c != '\\')
			continue;
		if (j->p >= j->end)
			return false;
		c = (unsigned char) *j->p++;
		if (c == 'u') {
			for (int k = 0; k < 4; k++)
				if (j->p >= j->end || !isxdigit(*j->p++))
					return false;
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return false;
		}
	}
	return false;
}

static bool
js_number(struct js *j)
{
	const char *start;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	start = j->p;
	while (j->p < j->end && isdigit(*j->p))
		j->p++;
	if (j->p == start || (*start == '0' && j->p - start > 1))
		return false;
	if (j->p < j->end && *j->p == '.') {
		start = ++j->p;
		while (j->p < j->end && isdigit(*j->p))
			j->p++;
		if (j->p == start)
			return false;
	}
	return true;
}

static bool js_value(struct js *j);

/* An object's members or an array's values up to `close`. */
static bool
js_members(struct js *j, char close, bool keys)
{
	j->p++;
	js_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return true;
	}
	for (;;) {
		js_ws(j);
		if (keys) {
			if (!js_string(j))
				return false;
			js_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
		}
		if (!js_value(j))
			return false;
		js_ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		return *j->p++ == close;
	}
}

static bool
js_value(struct js *j)
{
	bool ok;

	js_ws(j);
	if (j->p >= j->end || ++j->depth > 32)
		return false;
	switch (*j->p) {
	case '{':
		ok = js_members(j, '}', true);
		break;
	case '[':
		ok = js_members(j, ']', false);
		break;
	case '"':
		ok = js_string(j);
		break;
	case 't':
	case 'f':
	case 'n': {
		const char *lit = *j->p == 't' ? "true" :
				  *j->p == 'f' ? "false" :
						 "null";
		size_t n = strlen(lit);

		ok = (size_t) (j->end - j->p) >= n && !memcmp(j->p, lit, n);
		j->p += ok ? n : 0;
		break;
	}
	default:
		ok = js_number(j);
	}
	j->depth--;
	return ok;
}

bool
live_json_valid(const char *out, size_t out_len)
{
	struct js j = {out, out + out_len, 0};

	if (!js_value(&j))
		return false;
	js_ws(&j);
	return j.p == j.end;
}
