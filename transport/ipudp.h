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
	ROCE_IP_PROTO_UDP = 17,   /* IPv4 protocol / IPv6 next header */
	ROCE_IP_LEN_MAX = 0xFFFF, /* IPv4 total length, IPv6 payload and UDP lengths are 16-bit */
};

#define ROCE_IPV4_DF 0x4000u /* IPv4 flags/fragment word with Don't Fragment */

struct roce_ipudp {
	uint8_t sgid[16];    /* source address as a GID */
	uint8_t dgid[16];    /* destination address as a GID */
	uint16_t sport;      /* UDP source port */
	uint16_t dport;      /* UDP destination port, normally 4791 */
	uint8_t tos;         /* IPv4 TOS or IPv6 traffic class (ICRC-masked) */
	uint8_t ttl;         /* IPv4 TTL or IPv6 hop limit (ICRC-masked) */
	uint32_t flow_label; /* IPv6 only, 20 bits (ICRC-masked) */
	uint16_t ip_id;      /* IPv4 Identification (covered by the ICRC) */
	uint16_t ip_frag;    /* IPv4 flags + fragment offset (covered) */
	uint16_t udp_csum;   /* UDP checksum as parsed; ICRC-masked */
};

/* True if @gid is an IPv4-mapped GID (::ffff:a.b.c.d). */
bool roce_gid_is_v4(const uint8_t gid[16]);

/* True if @gid is a multicast address: IPv6 ff00::/8 or IPv4-mapped 224.0.0.0/4. */
bool roce_gid_is_multicast(const uint8_t gid[16]);

/* Make the IPv4-mapped GID of an IPv4 address given in network order. */
void roce_gid_from_v4(uint8_t gid[16], const uint8_t addr[4]);

/* True if both addresses of @f are IPv4 (the packet is IPv4). */
bool roce_ipudp_is_v4(const struct roce_ipudp *f);

/* Length of the IP + UDP headers: 28 for IPv4, 48 for IPv6. */
size_t roce_ipudp_hdr_len(const struct roce_ipudp *f);

/* How the UDP checksum is written. */
enum roce_udp_csum {
	ROCE_UDP_CSUM_ZERO, /* 0, as rxe transmits (PROTOCOL.md §1.4) */
	ROCE_UDP_CSUM_FULL, /* the real checksum, as a kernel UDP socket sends */
};

/*
 * Write the IP and UDP headers for a UDP payload of @udp_len bytes at
 * @buf, which must have room for roce_ipudp_hdr_len(@f) bytes. IPv4 gets
 * version/IHL 0x45, protocol 17 and a correct header checksum; IPv6 gets
 * next header 17. With ROCE_UDP_CSUM_FULL, @udp_payload (the @udp_len
 * bytes that will follow) is read to compute the checksum over the IPv4 or
 * IPv6 pseudo-header (RFC 768, RFC 8200 §8.1); a computed 0 is sent as
 * 0xFFFF. @udp_payload may be NULL with ROCE_UDP_CSUM_ZERO.
 *
 * Returns the header length, or 0 (nothing written) if the packet would
 * exceed the 16-bit IP or UDP length fields, or if ROCE_UDP_CSUM_FULL is
 * asked for without @udp_payload.
 */
size_t roce_ipudp_write(uint8_t *buf, const struct roce_ipudp *f, const uint8_t *udp_payload,
			size_t udp_len, enum roce_udp_csum csum);

/* Why roce_ipudp_parse() refused a packet. */
enum roce_ipudp_err {
	ROCE_IPUDP_OK = 0,
	/* Shorter than its headers say. */
	ROCE_IPUDP_TRUNCATED,
	/* Not IPv4 or IPv6, or IPv6 between two IPv4-mapped addresses (which
	 * @f could not tell from IPv4; RFC 4291 §2.5.5.2 keeps them off the wire). */
	ROCE_IPUDP_VERSION,
	/* IPv4 options or IPv6 extension headers. */
	ROCE_IPUDP_OPTIONS,
	/* Another protocol or next header. */
	ROCE_IPUDP_NOT_UDP,
	/* An IPv4 fragment (MF or an offset) or an IPv6 fragment header. */
	ROCE_IPUDP_FRAGMENT,
	/* IPv4 IHL below 5, an IP length too small for the IP and UDP headers,
	 * or IP and UDP lengths that disagree. */
	ROCE_IPUDP_LENGTH,
};

/*
 * Parse an IP packet (no link-layer header) carrying UDP: fill @f and
 * point @udp_payload/@udp_len at the UDP payload. Never reads outside
 * pkt[0..len). Bytes after the IP length (link-layer padding) are ignored.
 * Checksums are not verified: the IPv4 header checksum and UDP checksum are
 * the kernel's business on receive, and the ICRC does not cover them.
 * For IPv6, ip_id and ip_frag are set to 0. Returns ROCE_IPUDP_OK, or why
 * the packet was refused (@f and the payload pointers are then unspecified).
 */
enum roce_ipudp_err roce_ipudp_parse(const uint8_t *pkt, size_t len, struct roce_ipudp *f,
				     const uint8_t **udp_payload, size_t *udp_len);

#endif
