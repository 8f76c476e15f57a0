/* SPDX-License-Identifier: MIT */
/*
 * The IP and UDP headers around a RoCEv2 packet, as values.
 *
 * uroce never writes these headers to a socket (the kernel does), but the
 * ICRC covers most of their fields (PROTOCOL.md §2.1), captures show them,
 * and tests build whole frames. Addresses are held as GIDs: an IPv4
 * address is the IPv4-mapped GID ::ffff:a.b.c.d (PROTOCOL.md §4.7), so one
 * struct serves both families.
 *
 * Pure code: no allocation, no I/O.
 */
#ifndef UROCE_TRANSPORT_IPUDP_H
#define UROCE_TRANSPORT_IPUDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	ROCE_IPV4_HDR_LEN = 20,
	ROCE_IPV6_HDR_LEN = 40,
	ROCE_UDP_HDR_LEN = 8,
};

#define ROCE_IPV4_DF 0x4000u /* IPv4 flags/fragment word with Don't Fragment */

struct roce_ipudp {
	uint8_t sgid[16];	/* source address as a GID */
	uint8_t dgid[16];	/* destination address as a GID */
	uint16_t sport;		/* UDP source port */
	uint16_t dport;		/* UDP destination port, normally 4791 */
	uint8_t tos;		/* IPv4 TOS or IPv6 traffic class (ICRC-masked) */
	uint8_t ttl;		/* IPv4 TTL or IPv6 hop limit (ICRC-masked) */
	uint32_t flow_label;	/* IPv6 only, 20 bits (ICRC-masked) */
	uint16_t ip_id;		/* IPv4 Identification (covered by the ICRC) */
	uint16_t ip_frag;	/* IPv4 flags + fragment offset (covered) */
	uint16_t udp_csum;	/* UDP checksum as parsed; ICRC-masked */
};

/* True if @gid is an IPv4-mapped GID (::ffff:a.b.c.d). */
bool roce_gid_is_v4(const uint8_t gid[16]);

/* Make the IPv4-mapped GID of an IPv4 address given in network order. */
void roce_gid_from_v4(uint8_t gid[16], const uint8_t addr[4]);

/* True if both addresses of @f are IPv4 (the packet is IPv4). */
bool roce_ipudp_is_v4(const struct roce_ipudp *f);

/* Length of the IP + UDP headers: 28 for IPv4, 48 for IPv6. */
size_t roce_ipudp_hdr_len(const struct roce_ipudp *f);

/* How the UDP checksum is written. */
enum roce_udp_csum {
	ROCE_UDP_CSUM_ZERO,	/* 0, as rxe transmits (PROTOCOL.md §1.4) */
	ROCE_UDP_CSUM_FULL,	/* the real checksum, as a kernel UDP socket sends */
};

/*
 * Write the IP and UDP headers for a UDP payload of @udp_len bytes at
 * @buf, which must have room for roce_ipudp_hdr_len(@f) bytes. IPv4 gets
 * version/IHL 0x45, protocol 17 and a correct header checksum; IPv6 gets
 * next header 17. With ROCE_UDP_CSUM_FULL, @udp_payload (the @udp_len
 * bytes that will follow) is read to compute the checksum; it may be NULL
 * with ROCE_UDP_CSUM_ZERO. Returns the header length, or 0 if the packet
 * would exceed the IP length limits.
 */
size_t roce_ipudp_write(uint8_t *buf, const struct roce_ipudp *f, const uint8_t *udp_payload,
			size_t udp_len, enum roce_udp_csum csum);

/* Why roce_ipudp_parse() refused a packet. */
enum roce_ipudp_err {
	ROCE_IPUDP_OK = 0,
	ROCE_IPUDP_TRUNCATED,	/* shorter than its headers say */
	ROCE_IPUDP_VERSION,	/* not IPv4 or IPv6 */
	ROCE_IPUDP_OPTIONS,	/* IPv4 options or IPv6 extension headers */
	ROCE_IPUDP_NOT_UDP,
	ROCE_IPUDP_FRAGMENT,	/* an IPv4 fragment */
	ROCE_IPUDP_LENGTH,	/* IP and UDP lengths disagree */
};

/*
 * Parse an IP packet (no link-layer header) carrying UDP: fill @f and
 * point @udp_payload/@udp_len at the UDP payload. Never reads outside
 * pkt[0..len). Bytes after the IP length (link-layer padding) are ignored.
 */
enum roce_ipudp_err roce_ipudp_parse(const uint8_t *pkt, size_t len, struct roce_ipudp *f,
				     const uint8_t **udp_payload, size_t *udp_len);

#endif
