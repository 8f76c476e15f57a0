/* SPDX-License-Identifier: MIT */
/*
 * Placing a request's payload in the responder's memory as an RNIC's DMA does: each byte
 * written once, in ascending address order.
 *
 * Programs poll the memory an RDMA WRITE fills (perftest's ib_write_lat and riostream spin on
 * the last byte of the buffer, and riostream then writes its answer into that same buffer).
 * The C library's memcpy may store a byte twice (two overlapping vector stores cover sizes
 * between two vector widths: glibc copies 64 bytes as the first and the last 32 or 64), so a
 * program that saw the last byte and overwrote it could have its own store undone by the copy's
 * second store, and then wait for ever for an answer it had itself written over. Here every
 * block is stored once, in order (x86 makes stores visible in program order), so a byte seen
 * is final, and the last byte comes last.
 */
#ifndef UROCE_TRANSPORT_PLACE_H
#define UROCE_TRANSPORT_PLACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copy @n bytes from @src to @dst, each byte of @dst stored once, lowest address first. */
static inline void roce_place(uint8_t *dst, const uint8_t *src, size_t n)
{
	/*
	 * Fixed-size copies of 32 bytes, then of 8, 4, 2 and 1 for the rest: each a load and a
	 * store of its own, none overlapping. The empty asm keeps the compiler from merging the
	 * loop back into a call to memcpy (loop-idiom recognition).
	 */
	for (; n >= 32; n -= 32, dst += 32, src += 32) {
		memcpy(dst, src, 32);
		__asm__ volatile("" ::: "memory");
	}
	for (; n >= 8; n -= 8, dst += 8, src += 8) {
		memcpy(dst, src, 8);
		__asm__ volatile("" ::: "memory");
	}
	if (n & 4) {
		memcpy(dst, src, 4);
		dst += 4;
		src += 4;
	}
	if (n & 2) {
		memcpy(dst, src, 2);
		dst += 2;
		src += 2;
	}
	if (n & 1)
		*dst = *src;
}

#endif
