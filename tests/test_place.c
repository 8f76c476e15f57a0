// SPDX-License-Identifier: MIT
/*
 * transport/place.h: a WRITE's payload reaches the responder's memory as an RNIC's DMA puts it
 * there, each byte stored once and in ascending order, so that a program polling a byte may
 * write over it once seen (riostream answers in the very buffer its peer writes).
 *   - the blocks roce_place stores (ROCE_PLACE_BLOCK, traced here) never overlap, ascend,
 *     and cover the payload exactly, for every length up to 300;
 *   - the bytes arrive right, at every alignment, and nothing outside is touched.
 * Programs prove the rest (a double store is a race): rsocket_riostream_64, riostream's
 * 64-byte ping-pong in one buffer, stopped within a few thousand rounds with memcpy, and now
 * and then in the ASan build while place.h still copied its blocks with memcpy (-O0 calls the
 * C library's, which stores 32 bytes as the same block twice).
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

/* roce_place with each of its blocks recorded: offset and length into the trace. */
static uint8_t *trace_base;
static size_t trace_off[64], trace_len[64];
static unsigned int trace_n;

static void traced_copy(void *dst, const void *src, size_t n)
{
	trace_off[trace_n] = (size_t)((uint8_t *)dst - trace_base);
	trace_len[trace_n++] = n;
	for (size_t i = 0; i < n; i++)
		((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
}

#define roce_place                    traced_place
#define ROCE_PLACE_BLOCK(dst, src, T) traced_copy(dst, src, sizeof(T))
#include "transport/place.h"
#undef ROCE_PLACE_BLOCK
#undef roce_place
#undef UROCE_TRANSPORT_PLACE_H
#include "transport/place.h"

Test(place, blocks_ascend_without_overlap)
{
	static uint8_t src[300], dst[300];

	for (size_t n = 0; n <= sizeof(dst); n++) {
		size_t next = 0;

		trace_base = dst;
		trace_n = 0;
		traced_place(dst, src, n);
		for (unsigned int i = 0; i < trace_n; i++) {
			cr_assert_eq(trace_off[i], next,
				     "length %zu: block %u starts at %zu, not %zu", n, i,
				     trace_off[i], next);
			next += trace_len[i];
		}
		/* Whatever the blocks left (n & 1) is the one byte stored last, by itself. */
		cr_assert(next == n || next + 1 == n, "length %zu: blocks cover %zu bytes", n,
			  next);
	}
}

Test(place, bytes_arrive_right_at_every_alignment)
{
	uint8_t src[320], dst[336];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (size_t so = 0; so < 8; so++)
		for (size_t d_o = 0; d_o < 8; d_o++)
			for (size_t n = 0; n + so <= 300; n++) {
				memset(dst, 0xEE, sizeof(dst));
				roce_place(dst + 8 + d_o, src + so, n);
				cr_assert_eq(memcmp(dst + 8 + d_o, src + so, n), 0, "length %zu",
					     n);
				for (size_t k = 0; k < 8 + d_o; k++)
					cr_assert_eq(dst[k], 0xEE,
						     "a byte before the payload changed");
				for (size_t k = 8 + d_o + n; k < sizeof(dst); k++)
					cr_assert_eq(dst[k], 0xEE,
						     "a byte after the payload changed");
			}
}
