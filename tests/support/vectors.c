/* SPDX-License-Identifier: MIT */
#include "vectors.h"

#include "frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int test_hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t cap)
{
	if (hexlen % 2 || hexlen / 2 > cap)
		return -1;
	for (size_t i = 0; i < hexlen / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (int)(hexlen / 2);
}

/* The string value of "key": "value" on @line, or NULL. */
static const char *string_field(const char *line, const char *key, size_t *len)
{
	char pat[32];
	snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	const char *p = strstr(line, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	const char *end = strchr(p, '"');
	if (!end)
		return NULL;
	*len = (size_t)(end - p);
	return p;
}

int test_vectors_load(const char *path, struct test_vector *out, int max)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return -1;
	/* The file has one "key": value pair per line; a record ends at "hex". */
	char line[8192];
	int n = 0;
	struct test_vector cur = {0};
	while (fgets(line, sizeof(line), fp)) {
		const char *v;
		size_t len;
		if (strstr(line, "\"frame\":"))
			cur.frame = atoi(strchr(line, ':') + 1);
		else if ((v = string_field(line, "name", &len))) {
			if (len >= sizeof(cur.name))
				len = sizeof(cur.name) - 1;
			memcpy(cur.name, v, len);
			cur.name[len] = 0;
		} else if ((v = string_field(line, "icrc", &len))) {
			if (test_hex_decode(v, len, cur.icrc, 4) != 4)
				goto bad;
		} else if ((v = string_field(line, "hex", &len))) {
			int got = test_hex_decode(v, len, cur.bytes, sizeof(cur.bytes));
			if (got < 0 || n >= max)
				goto bad;
			cur.len = (size_t)got;
			out[n++] = cur;
			memset(&cur, 0, sizeof(cur));
		}
	}
	fclose(fp);
	return n;
bad:
	fclose(fp);
	return -1;
}

const uint8_t *test_vector_mad(const struct test_vector *v, int n, int frame)
{
	enum { BTH_DETH = 20, MAD = 256, ICRC = 4 };

	for (int i = 0; i < n; i++) {
		size_t len;
		const uint8_t *roce;

		if (v[i].frame != frame)
			continue;
		roce = test_roce_of_frame(v[i].bytes, v[i].len, &len);
		return roce && len >= BTH_DETH + MAD + ICRC ? roce + BTH_DETH : NULL;
	}
	return NULL;
}
