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
 * is not visible to a UDP socket on receive (PROTOCOL.md §2.1). uroce
 * sends with ID 0 and DF (what an unconnected IP_PMTUDISC_DO socket
 * produces), so a uroce frame verifies as is. A frame from another stack
 * (kernel rxe, hardware) is verified by recovering the ID: the CRC is
 * affine in those 16 bits, so the one ID that makes the CRC match is found
 * by solving a small linear system over GF(2) (no search over IDs).
 *
 * Detection trade-off: a recovered match proves 16 fewer bits than a
 * direct one. Of the 2^32 possible differences between computed and
 * received CRC, 2^16 - 1 are explained by some ID, so a random corruption
 * passes with probability about 2^-16 instead of 2^-32, and an error that
 * touches only the ID field is not detected at all (the ID is unknown to
 * the receiver anyway). The UDP layer below still drops frames whose
 * non-zero UDP checksum is wrong, and Ethernet's FCS guards each link; the
 * ICRC's own job, end-to-end detection across switches, keeps its full
 * strength only for frames sent with the ID the receiver assumes.
 * roce_icrc_verify() says which kind of match it was, so callers can
 * count or refuse recovered matches.
 *
 * Pure code: no allocation, no I/O.
 */
#ifndef UROCE_TRANSPORT_ICRC_H
#define UROCE_TRANSPORT_ICRC_H

#include <stddef.h>
#include <stdint.h>

#include "transport/ipudp.h"

struct roce_pkt_gap; /* transport/wire.h */

/*
 * The ICRC value of a RoCEv2 packet whose IP/UDP headers are @f and whose
 * bytes from the BTH up to (not including) the ICRC are @roce[0..@len).
 * IP total length and UDP length are derived from @len; the fields of @f
 * that the ICRC masks (tos, ttl, flow_label, udp_csum) do not matter.
 * Returns 0 for a @len no packet can have: below 12 (a BTH) or too long for
 * the 16-bit IP and UDP length fields.
 */
uint32_t roce_icrc(const struct roce_ipudp *f, const uint8_t *roce, size_t len);

/*
 * Compute the ICRC of @roce (@len bytes including the 4-byte ICRC field)
 * and store it in its last 4 bytes, least-significant byte first
 * (PROTOCOL.md §2.4). Does nothing for a @len below 16 or too long for the
 * IP length fields.
 */
void roce_icrc_fill(const struct roce_ipudp *f, uint8_t *roce, size_t len);

/*
 * roce_icrc_fill() of a packet whose bytes [gap->off, gap->off + gap->len) are at gap->src,
 * not in @roce (a payload left in the sender's memory: wire.h, struct roce_pkt_gap; gap->len
 * 0: none). Does nothing for a gap that is not after the BTH and before the ICRC.
 */
void roce_icrc_fill_gap(const struct roce_ipudp *f, uint8_t *roce, size_t len,
			const struct roce_pkt_gap *gap);

enum roce_icrc_result {
	ROCE_ICRC_OK,    /* matches with the IPv4 ID in @f (or IPv6) */
	ROCE_ICRC_OK_ID, /* matches once the IPv4 ID was recovered */
	ROCE_ICRC_BAD,   /* no IPv4 ID makes it match */
};

/*
 * Verify the ICRC at the end of @roce (@len bytes including the ICRC).
 * For IPv4, if the ICRC does not match with f->ip_id, recover the one ID
 * that makes it match; if there is one, store it in f->ip_id and return
 * ROCE_ICRC_OK_ID (f is otherwise not modified). A @len below 16 or too
 * long for the IP length fields gives ROCE_ICRC_BAD. Allocation-free; the
 * recovery adds at most about a thousand GF(2) shift-and-xor steps to the CRC.
 */
enum roce_icrc_result roce_icrc_verify(struct roce_ipudp *f, const uint8_t *roce, size_t len);

/*
 * roce_icrc_verify() of a packet whose bytes [gap->off, gap->off + gap->len) are at gap->src,
 * not in @roce (transport/wire.h: struct roce_pkt_gap; gap->len 0: none). ROCE_ICRC_BAD also
 * for a gap that is not after the BTH and before the ICRC.
 */
enum roce_icrc_result roce_icrc_verify_gap(struct roce_ipudp *f, const uint8_t *roce, size_t len,
					   const struct roce_pkt_gap *gap);

/* The CRC-32 library in use, as the CMake option UROCE_CRC32 names it: "isal" or "zlib". */
const char *roce_icrc_backend(void);

/*
 * Run the CRC-32 library once over a MAD-sized buffer, so that what its first call costs (ISA-L
 * picks its code with CPUID, which a hypervisor traps; its code and tables are faulted in) is
 * paid here rather than by the first packet a process sends or receives. Never fails.
 */
void roce_icrc_prime(void);

#endif
