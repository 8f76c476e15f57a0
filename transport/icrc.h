/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 invariant CRC (PROTOCOL.md §2).
 *
 * The ICRC is the IEEE CRC-32 of a pseudo-packet: 8 bytes of 0xFF, the IP
 * header and UDP header with their variant fields forced to ones, the BTH
 * with byte 4 forced to ones, then everything up to the ICRC. The value is
 * sent least-significant byte first.
 *
 * The IPv4 Identification field is covered, is chosen by the kernel, and
 * is not visible to a UDP socket on receive. uroce sends with ID 0 and DF
 * (what an unconnected IP_PMTUDISC_DO socket produces), so a uroce frame
 * verifies as is. A frame from another stack (kernel rxe, hardware) is
 * verified by recovering the ID: the CRC is affine in those 16 bits, so
 * the one ID that makes the CRC match is found by solving a small linear
 * system over GF(2). A recovered match proves 16 fewer bits than a direct
 * one (a random corruption passes with probability 2^-16 instead of
 * 2^-32); roce_icrc_verify() says which kind of match it was.
 *
 * Pure code: no allocation, no I/O.
 */
#ifndef UROCE_TRANSPORT_ICRC_H
#define UROCE_TRANSPORT_ICRC_H

#include <stddef.h>
#include <stdint.h>

#include "transport/ipudp.h"

/*
 * The ICRC value of a RoCEv2 packet whose IP/UDP headers are @f and whose
 * bytes from the BTH up to (not including) the ICRC are @roce[0..@len).
 * IP total length and UDP length are derived from @len. @len must be at
 * least 12 (a BTH).
 */
uint32_t roce_icrc(const struct roce_ipudp *f, const uint8_t *roce, size_t len);

/*
 * Compute the ICRC of @roce (@len bytes including the 4-byte ICRC field)
 * and store it in its last 4 bytes, least-significant byte first.
 * @len must be at least 16.
 */
void roce_icrc_fill(const struct roce_ipudp *f, uint8_t *roce, size_t len);

enum roce_icrc_result {
	ROCE_ICRC_OK,		/* matches with the IPv4 ID in @f (or IPv6) */
	ROCE_ICRC_OK_ID,	/* matches once the IPv4 ID was recovered */
	ROCE_ICRC_BAD,		/* no IPv4 ID makes it match */
};

/*
 * Verify the ICRC at the end of @roce (@len bytes including the ICRC).
 * For IPv4, if the ICRC does not match with f->ip_id, recover the one ID
 * that makes it match; if there is one, store it in f->ip_id and return
 * ROCE_ICRC_OK_ID. @len below 16 gives ROCE_ICRC_BAD.
 */
enum roce_icrc_result roce_icrc_verify(struct roce_ipudp *f, const uint8_t *roce, size_t len);

/* Name of the CRC-32 implementation in use (for benchmarks and logs). */
const char *roce_icrc_backend(void);

#endif
