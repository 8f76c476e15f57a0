/* SPDX-License-Identifier: MIT */
/*
 * IP and UDP headers of RoCEv2 packets (PROTOCOL.md §1.2-1.4): the writer
 * used by the frame builder and the capture tap, and the parser used on
 * captured or test frames.
 */
#include "transport/ipudp.h"

#include <string.h>

#include "transport/wire.h"

#define IPV4_FRAG_MASK 0x3FFFu /* MF flag + fragment offset */

/* The IPv4-mapped GID prefix ::ffff:0:0/96 (RFC 4291 §2.5.5.2). */
static const uint8_t v4_mapped_prefix[12] = {[10] = 0xFF, [11] = 0xFF};

bool roce_gid_is_v4(const uint8_t gid[16])
{
	return memcmp(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0;
}

bool roce_gid_is_multicast(const uint8_t gid[16])
{
	return gid[0] == 0xff || (roce_gid_is_v4(gid) && (gid[12] & 0xf0) == 0xe0);
}

void roce_gid_from_v4(uint8_t gid[16], const uint8_t addr[4])
{
	memcpy(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix));
	memcpy(gid + 12, addr, 4);
}

bool roce_ipudp_is_v4(const struct roce_ipudp *f)
{
	return roce_gid_is_v4(f->sgid) && roce_gid_is_v4(f->dgid);
}

size_t roce_ipudp_hdr_len(const struct roce_ipudp *f)
{
	return (roce_ipudp_is_v4(f) ? ROCE_IPV4_HDR_LEN : ROCE_IPV6_HDR_LEN) + ROCE_UDP_HDR_LEN;
}

/* Add @len bytes to a ones' complement sum of big-endian 16-bit words (RFC 1071). */
static uint64_t csum_add(uint64_t sum, const uint8_t *p, size_t len)
{
	for (; len >= 2; p += 2, len -= 2)
		sum += roce_get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * The UDP checksum over the pseudo-header, the UDP header at @udp (checksum
 * field zero) and the payload. Both pseudo-headers sum to the same words:
 * addresses, the protocol and the UDP length (RFC 768; RFC 8200 §8.1).
 */
static uint16_t udp_csum(const uint8_t *src, const uint8_t *dst, size_t addr_len,
			 const uint8_t *udp, const uint8_t *payload, size_t payload_len)
{
	uint64_t sum = ROCE_IP_PROTO_UDP + ROCE_UDP_HDR_LEN + payload_len;
	uint16_t c;

	sum = csum_add(sum, src, addr_len);
	sum = csum_add(sum, dst, addr_len);
	sum = csum_add(sum, udp, ROCE_UDP_HDR_LEN);
	sum = csum_add(sum, payload, payload_len);
	c = csum_fold(sum);
	return c ? c : 0xFFFF; /* 0 means "no checksum" (RFC 768) */
}

static void write_v4(uint8_t *ip, const struct roce_ipudp *f, size_t udp_total)
{
	ip[0] = 0x45; /* version 4, IHL 5: no options (§1.2) */
	ip[1] = f->tos;
	roce_put16(ip + 2, (uint16_t)(ROCE_IPV4_HDR_LEN + udp_total));
	roce_put16(ip + 4, f->ip_id);
	roce_put16(ip + 6, f->ip_frag);
	ip[8] = f->ttl;
	ip[9] = ROCE_IP_PROTO_UDP;
	roce_put16(ip + 10, 0);
	memcpy(ip + 12, f->sgid + 12, 4);
	memcpy(ip + 16, f->dgid + 12, 4);
	roce_put16(ip + 10, csum_fold(csum_add(0, ip, ROCE_IPV4_HDR_LEN)));
}

static void write_v6(uint8_t *ip, const struct roce_ipudp *f, size_t udp_total)
{
	/* Version 6, traffic class, 20-bit flow label (§1.3). */
	roce_put32(ip, 6u << 28 | (uint32_t)f->tos << 20 | (f->flow_label & 0xFFFFF));
	roce_put16(ip + 4, (uint16_t)udp_total);
	ip[6] = ROCE_IP_PROTO_UDP;
	ip[7] = f->ttl;
	memcpy(ip + 8, f->sgid, 16);
	memcpy(ip + 24, f->dgid, 16);
}

size_t roce_ipudp_write(uint8_t *buf, const struct roce_ipudp *f, const uint8_t *udp_payload,
			size_t udp_len, enum roce_udp_csum csum)
{
	bool v4 = roce_ipudp_is_v4(f);
	size_t ip_len = v4 ? ROCE_IPV4_HDR_LEN : ROCE_IPV6_HDR_LEN;
	size_t udp_total = ROCE_UDP_HDR_LEN + udp_len;
	uint8_t *udp = buf + ip_len;

	/* IPv4 total length covers the IP header too; IPv6 payload length does not. */
	if (udp_len > ROCE_IP_LEN_MAX - ROCE_UDP_HDR_LEN - (v4 ? ROCE_IPV4_HDR_LEN : 0))
		return 0;
	if (csum == ROCE_UDP_CSUM_FULL && !udp_payload)
		return 0;

	if (v4)
		write_v4(buf, f, udp_total);
	else
		write_v6(buf, f, udp_total);
	roce_put16(udp, f->sport);
	roce_put16(udp + 2, f->dport);
	roce_put16(udp + 4, (uint16_t)udp_total);
	roce_put16(udp + 6, 0);
	if (csum == ROCE_UDP_CSUM_FULL) {
		size_t off = v4 ? 12 : 0, alen = v4 ? 4 : 16;

		roce_put16(udp + 6,
			   udp_csum(f->sgid + off, f->dgid + off, alen, udp, udp_payload, udp_len));
	}
	return ip_len + ROCE_UDP_HDR_LEN;
}

/* IPv6 extension headers (IANA "IPv6 Extension Header Types", RFC 7045). */
static bool is_v6_ext_hdr(uint8_t nh)
{
	switch (nh) {
	case 0:   /* hop-by-hop options */
	case 43:  /* routing */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253: /* experimental */
	case 254:
		return true;
	default:
		return false;
	}
}

static enum roce_ipudp_err parse_v4(const uint8_t *pkt, size_t len, struct roce_ipudp *f,
				    size_t *ip_payload_len)
{
	size_t ihl, total;

	if (len < ROCE_IPV4_HDR_LEN)
		return ROCE_IPUDP_TRUNCATED;
	ihl = (pkt[0] & 0x0Fu) * 4u;
	if (ihl < ROCE_IPV4_HDR_LEN)
		return ROCE_IPUDP_LENGTH;
	if (ihl > ROCE_IPV4_HDR_LEN)
		return ROCE_IPUDP_OPTIONS;
	total = roce_get16(pkt + 2);
	if (total < ROCE_IPV4_HDR_LEN + ROCE_UDP_HDR_LEN)
		return ROCE_IPUDP_LENGTH;
	if (total > len)
		return ROCE_IPUDP_TRUNCATED;
	/* Checked before the protocol: a non-first fragment has no UDP header. */
	if (roce_get16(pkt + 6) & IPV4_FRAG_MASK)
		return ROCE_IPUDP_FRAGMENT;
	if (pkt[9] != ROCE_IP_PROTO_UDP)
		return ROCE_IPUDP_NOT_UDP;

	f->tos = pkt[1];
	f->ip_id = roce_get16(pkt + 4);
	f->ip_frag = roce_get16(pkt + 6);
	f->ttl = pkt[8];
	f->flow_label = 0;
	roce_gid_from_v4(f->sgid, pkt + 12);
	roce_gid_from_v4(f->dgid, pkt + 16);
	*ip_payload_len = total - ROCE_IPV4_HDR_LEN;
	return ROCE_IPUDP_OK;
}

static enum roce_ipudp_err parse_v6(const uint8_t *pkt, size_t len, struct roce_ipudp *f,
				    size_t *ip_payload_len)
{
	size_t plen;

	if (len < ROCE_IPV6_HDR_LEN)
		return ROCE_IPUDP_TRUNCATED;
	if (roce_gid_is_v4(pkt + 8) && roce_gid_is_v4(pkt + 24))
		return ROCE_IPUDP_VERSION;
	if (pkt[6] == 44)
		return ROCE_IPUDP_FRAGMENT;
	if (is_v6_ext_hdr(pkt[6]))
		return ROCE_IPUDP_OPTIONS;
	if (pkt[6] != ROCE_IP_PROTO_UDP)
		return ROCE_IPUDP_NOT_UDP;
	plen = roce_get16(pkt + 4);
	if (plen < ROCE_UDP_HDR_LEN)
		return ROCE_IPUDP_LENGTH;
	if (ROCE_IPV6_HDR_LEN + plen > len)
		return ROCE_IPUDP_TRUNCATED;

	f->tos = (uint8_t)(roce_get16(pkt) >> 4);
	f->flow_label = roce_get32(pkt) & 0xFFFFF;
	f->ttl = pkt[7];
	f->ip_id = 0;
	f->ip_frag = 0;
	memcpy(f->sgid, pkt + 8, 16);
	memcpy(f->dgid, pkt + 24, 16);
	*ip_payload_len = plen;
	return ROCE_IPUDP_OK;
}

enum roce_ipudp_err roce_ipudp_parse(const uint8_t *pkt, size_t len, struct roce_ipudp *f,
				     const uint8_t **udp_payload, size_t *udp_len)
{
	enum roce_ipudp_err err;
	const uint8_t *udp;
	size_t ip_payload_len;

	if (len < 1)
		return ROCE_IPUDP_TRUNCATED;
	switch (pkt[0] >> 4) {
	case 4:
		err = parse_v4(pkt, len, f, &ip_payload_len);
		udp = pkt + ROCE_IPV4_HDR_LEN;
		break;
	case 6:
		err = parse_v6(pkt, len, f, &ip_payload_len);
		udp = pkt + ROCE_IPV6_HDR_LEN;
		break;
	default:
		return ROCE_IPUDP_VERSION;
	}
	if (err != ROCE_IPUDP_OK)
		return err;
	/* The parsers checked that the IP payload holds a UDP header. */
	if (roce_get16(udp + 4) != ip_payload_len)
		return ROCE_IPUDP_LENGTH;
	f->sport = roce_get16(udp);
	f->dport = roce_get16(udp + 2);
	f->udp_csum = roce_get16(udp + 6);
	*udp_payload = udp + ROCE_UDP_HDR_LEN;
	*udp_len = ip_payload_len - ROCE_UDP_HDR_LEN;
	return ROCE_IPUDP_OK;
}
