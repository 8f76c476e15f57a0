/* SPDX-License-Identifier: MIT */
/*
 * Placing a request's payload in the responder's memory as an RNIC's DMA does: each byte
 * written once, in ascending address order.
 *
 * Programs poll the memory an RDMA WRITE fills (perftest's ib_write_lat and riostream spin on
 * the last byte of the buffer, and riostream then writes its answer into that same buffer).
 * The C library's memcpy may store a byte twice (two overlapping vector stores cover sizes
 * between two vector widths: glibc copies 64 bytes as the first and the last 32 or 64, and
 * 32, 8, 4 or 2 bytes as the same block stored twice), so a program that saw the last byte and
 * overwrote it could have its own store undone by the copy's second store, and then wait for
 * ever for an answer it had itself written over. Here every block is stored once, in order
 * (x86 makes stores visible in program order), so a byte seen is final, and the last byte
 * comes last.
 *
 * Not memcpy, not even of a fixed size: the compiler makes that a call to the C library's at
 * -O0 (the debug and sanitizer builds) and may at any level. A block is one load and one store
 * of a type of its size that may alias anything and sit at any address.
 */
#ifndef UROCE_TRANSPORT_PLACE_H
#define UROCE_TRANSPORT_PLACE_H

#include <stddef.h>
#include <stdint.h>

typedef uint8_t roce_place_16 __attribute__((vector_size(16), may_alias, aligned(1)));
typedef uint64_t roce_place_8 __attribute__((may_alias, aligned(1)));
typedef uint32_t roce_place_4 __attribute__((may_alias, aligned(1)));
typedef uint16_t roce_place_2 __attribute__((may_alias, aligned(1)));

/* Store the block of type T at @src once at @dst (tests/test_place.c traces it). */
#ifndef ROCE_PLACE_BLOCK
#define ROCE_PLACE_BLOCK(dst, src, T) (*(T *)(void *)(dst) = *(const T *)(const void *)(src))
#endif

/* Copy @n bytes from @src to @dst, each byte of @dst stored once, lowest address first. */
static inline void roce_place(uint8_t *dst, const uint8_t *src, size_t n)
{
	/*
	 * Blocks of 16 bytes, then of 8, 4, 2 and 1 for the rest, none overlapping. The empty
	 * asm keeps the compiler from merging the loops into a call to memcpy (loop-idiom
	 * recognition).
	 */
	for (; n >= 16; n -= 16, dst += 16, src += 16) {
		ROCE_PLACE_BLOCK(dst, src, roce_place_16);
		__asm__ volatile("" ::: "memory");
	}
	if (n & 8) {
		ROCE_PLACE_BLOCK(dst, src, roce_place_8);
		dst += 8;
		src += 8;
	}
	if (n & 4) {
		ROCE_PLACE_BLOCK(dst, src, roce_place_4);
		dst += 4;
		src += 4;
	}
	if (n & 2) {
		ROCE_PLACE_BLOCK(dst, src, roce_place_2);
		dst += 2;
		src += 2;
	}
	if (n & 1)
		*dst = *src;
}

#endif
