/* SPDX-License-Identifier: MIT */
/*
 * Reference frames for tests: tests/vectors/vectors.json (copied from the
 * project's shared wire reference, PROTOCOL.md Appendix A). Each frame is
 * Ethernet (14 bytes, untagged) + IP + UDP + RoCEv2 through the ICRC.
 */
#ifndef UROCE_TEST_VECTORS_H
#define UROCE_TEST_VECTORS_H

#include <stddef.h>
#include <stdint.h>

struct test_vector {
	int frame; /* 1-based number, as in PROTOCOL.md §2.5 */
	char name[64];
	uint8_t bytes[1600];
	size_t len;
	uint8_t icrc[4]; /* ICRC wire bytes */
};

/*
 * Load every vector from @path into @out (at most @max). Returns the number
 * loaded, or -1 if the file cannot be read or a record is malformed.
 */
int test_vectors_load(const char *path, struct test_vector *out, int max);

/*
 * The 256-byte CM MAD of reference frame @frame (a UD SEND to QP 1: after BTH and DETH) among
 * @v[0..@n), or NULL if there is no such frame or it holds no whole MAD.
 */
const uint8_t *test_vector_mad(const struct test_vector *v, int n, int frame);

/* Parse hex digits into bytes; returns the byte count or -1. */
int test_hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t cap);

#endif
