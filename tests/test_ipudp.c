/* SPDX-License-Identifier: MIT */
/*
 * IP/UDP header model (transport/ipudp.h): GID helpers, the header writer
 * against the reference frames (PROTOCOL.md §2.5, Appendix A) and real
 * kernel-rxe captures, checksums checked by RFC 1071 sums computed here, and
 * every parser error on mutated frames.
 */
#include <criterion/criterion.h>

#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/vectors.h"
#include "transport/ipudp.h"

#define ETH_LEN     14
#define MAX_VECTORS 32

static struct test_vector vec[MAX_VECTORS];
static int nvec;

static void load_vectors(void)
{
	nvec = test_vectors_load(UROCE_TEST_DATA "/vectors.json", vec, MAX_VECTORS);
	cr_assert_eq(nvec, 19);
}

TestSuite(ipudp, .init = load_vectors);

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* RFC 1071 ones' complement sum of big-endian 16-bit words, folded. */
static uint32_t ones_sum(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += be16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return sum;
}

/* True if the UDP checksum of the IP packet @ip (IPv4 or IPv6) is valid. */
static bool udp_csum_ok(const uint8_t *ip)
{
	bool v4 = ip[0] >> 4 == 4;
	const uint8_t *udp = ip + (v4 ? 20 : 40);
	size_t udp_len = be16(udp + 4);
	uint32_t sum = 17 + (uint32_t)udp_len;

	sum = ones_sum(sum, ip + (v4 ? 12 : 8), v4 ? 8 : 32); /* both addresses */
	return ones_sum(sum, udp, udp_len) == 0xFFFF;
}

Test(ipudp, gid_helpers)
{
	static const uint8_t a[4] = {192, 168, 1, 1};
	static const uint8_t mapped[16] = {[10] = 0xFF, 0xFF, 192, 168, 1, 1};
	static const uint8_t compat[16] = {[12] = 192, 168, 1, 1}; /* ::a.b.c.d, not mapped */
	static const uint8_t v6[16] = {0xfd, [15] = 1};
	uint8_t gid[16];
	struct roce_ipudp f = {0};

	memset(gid, 0xAA, sizeof(gid));
	roce_gid_from_v4(gid, a);
	cr_assert_arr_eq(gid, mapped, 16);
	cr_assert(roce_gid_is_v4(mapped));
	cr_assert_not(roce_gid_is_v4(compat));
	cr_assert_not(roce_gid_is_v4(v6));

	memcpy(f.sgid, mapped, 16);
	memcpy(f.dgid, mapped, 16);
	cr_assert(roce_ipudp_is_v4(&f));
	cr_assert_eq(roce_ipudp_hdr_len(&f), 28);
	memcpy(f.dgid, v6, 16);
	cr_assert_not(roce_ipudp_is_v4(&f));
	cr_assert_eq(roce_ipudp_hdr_len(&f), 48);
}

/*
 * Parse the IP/UDP headers of a frame (Ethernet + IP + UDP + RoCE), write
 * them back from the parsed values and compare with the original bytes.
 */
static void rewrite_frame(const uint8_t *frame, size_t frame_len, const char *what)
{
	const uint8_t *ip = frame + ETH_LEN, *payload;
	size_t ip_len = frame_len - ETH_LEN, udp_len, hdr_len;
	struct roce_ipudp f;
	uint8_t out[48];
	bool v4 = ip[0] >> 4 == 4;
	uint16_t csum;

	cr_assert_eq(roce_ipudp_parse(ip, ip_len, &f, &payload, &udp_len), ROCE_IPUDP_OK, "%s",
		     what);
	hdr_len = v4 ? 28 : 48;
	cr_assert_eq(payload, ip + hdr_len, "%s", what);
	cr_assert_eq(udp_len, ip_len - hdr_len, "%s", what);
	csum = be16(ip + hdr_len - 2);
	cr_assert_eq(f.udp_csum, csum, "%s", what);
	memset(out, 0xAA, sizeof(out));
	cr_assert_eq(roce_ipudp_write(out, &f, payload, udp_len,
				      csum ? ROCE_UDP_CSUM_FULL : ROCE_UDP_CSUM_ZERO),
		     hdr_len, "%s", what);
	cr_assert_arr_eq(out, ip, hdr_len, "%s: headers differ", what);
	if (v4)
		cr_assert_eq(ones_sum(0, out, 20), 0xFFFF, "%s: IPv4 checksum", what);
	if (csum)
		cr_assert(udp_csum_ok(ip), "%s: UDP checksum of the reference", what);
}

Test(ipudp, rewrite_vectors)
{
	for (int i = 0; i < nvec; i++)
		rewrite_frame(vec[i].bytes, vec[i].len, vec[i].name);
}

/* Frame 19 is the one with a real UDP checksum (PROTOCOL.md §2.5): 0xdb71. */
Test(ipudp, ipv6_udp_checksum)
{
	const struct test_vector *v = &vec[18];
	const uint8_t *ip = v->bytes + ETH_LEN, *payload;
	struct roce_ipudp f;
	uint8_t out[48];
	size_t udp_len;

	cr_assert_eq(v->frame, 19);
	cr_assert_eq(roce_ipudp_parse(ip, v->len - ETH_LEN, &f, &payload, &udp_len), ROCE_IPUDP_OK);
	cr_assert_not(roce_ipudp_is_v4(&f));
	cr_assert_eq(f.udp_csum, 0xdb71);
	cr_assert_eq(f.tos, 0x68);
	cr_assert_eq(f.flow_label, 0x1C8CB);
	cr_assert_eq(f.ttl, 64);
	cr_assert_eq(roce_ipudp_write(out, &f, payload, udp_len, ROCE_UDP_CSUM_FULL), 48);
	cr_assert_eq(be16(out + 46), 0xdb71);
	cr_assert_eq(roce_ipudp_write(out, &f, NULL, udp_len, ROCE_UDP_CSUM_ZERO), 48);
	cr_assert_eq(be16(out + 46), 0);
}

/* V0 (ConnectX-4 Lx CNP, ToS 0xC2, ID 0x718C) and scapy's V1 (§2.5). */
Test(ipudp, rewrite_foreign_frames)
{
	static const char *hex[] = {
		"e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b700"
		"2800008100ffff40000118000000000000000000000000000000000000000082fd002a",
		"248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007c00012b700"
		"2caca22460ffff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3",
		"248a07a8fa22248a07a8fa2286dd6e21face002c11ff20220000000000000000000000001023202"
		"30000000000000000000000001024c00012b7002ce7c52460ffff000000d300cf17104630818be2"
		"8935d90e9a95505401be885e5000003e5b743b",
	};
	uint8_t frame[128];

	for (size_t i = 0; i < sizeof(hex) / sizeof(hex[0]); i++) {
		int n = test_hex_decode(hex[i], strlen(hex[i]), frame, sizeof(frame));

		cr_assert_gt(n, 0);
		rewrite_frame(frame, (size_t)n, hex[i]);
	}
}

/* Real IPv4 IDs and checksums: every frame of a kernel rxe capture. */
Test(ipudp, rewrite_kernel_rxe)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(UROCE_TEST_DATA "/kernel-rxe/rping.pcap", err);
	struct pcap_pkthdr *h;
	const u_char *data;
	int frames = 0;

	cr_assert_not_null(p, "%s", err);
	while (pcap_next_ex(p, &h, &data) == 1) {
		cr_assert_eq(h->caplen, h->len);
		rewrite_frame(data, h->caplen, "rping.pcap");
		frames++;
	}
	pcap_close(p);
	cr_assert_eq(frames, 145);
}

Test(ipudp, write_full_checksum_v4)
{
	struct roce_ipudp f = {.sport = 0xC000, .dport = 4791, .ttl = 1, .ip_frag = ROCE_IPV4_DF};
	static const uint8_t a[4] = {10, 0, 0, 1}, b[4] = {10, 0, 0, 255};
	uint8_t pkt[28 + 37];

	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, b);
	for (size_t i = 0; i < 37; i++)
		pkt[28 + i] = (uint8_t)(i * 37 + 1); /* odd length: the last byte is padded */
	cr_assert_eq(roce_ipudp_write(pkt, &f, pkt + 28, 37, ROCE_UDP_CSUM_FULL), 28);
	cr_assert_neq(be16(pkt + 26), 0);
	cr_assert(udp_csum_ok(pkt));
	cr_assert_eq(be16(pkt + 2), 65);
	cr_assert_eq(be16(pkt + 24), 45);
	cr_assert_eq(ones_sum(0, pkt, 20), 0xFFFF);
}

/* A UDP checksum that computes to 0 is sent as 0xFFFF (RFC 768). */
Test(ipudp, write_checksum_zero_is_ffff)
{
	struct roce_ipudp f = {.dport = 4791};
	static const uint8_t a[4] = {1, 2, 3, 4};
	uint8_t pkt[28 + 2] = {0};
	uint32_t sum;

	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, a);
	/* Choose the two payload bytes so that the sum of everything is 0xFFFF. */
	cr_assert_eq(roce_ipudp_write(pkt, &f, pkt + 28, 2, ROCE_UDP_CSUM_ZERO), 28);
	sum = ones_sum(17 + 10, pkt + 12, 8);
	sum = ones_sum(sum, pkt + 20, 8);
	pkt[28] = (uint8_t)(~sum >> 8);
	pkt[29] = (uint8_t)~sum;
	cr_assert_eq(roce_ipudp_write(pkt, &f, pkt + 28, 2, ROCE_UDP_CSUM_FULL), 28);
	cr_assert_eq(be16(pkt + 26), 0xFFFF);
	cr_assert(udp_csum_ok(pkt));
}

Test(ipudp, write_limits)
{
	struct roce_ipudp f4 = {0}, f6 = {.sgid = {0xfd}, .dgid = {0xfd}};
	static const uint8_t a[4] = {1, 2, 3, 4};
	uint8_t buf[48];

	roce_gid_from_v4(f4.sgid, a);
	roce_gid_from_v4(f4.dgid, a);
	cr_assert_eq(roce_ipudp_write(buf, &f4, NULL, 65535 - 28, ROCE_UDP_CSUM_ZERO), 28);
	cr_assert_eq(be16(buf + 2), 65535);
	cr_assert_eq(roce_ipudp_write(buf, &f4, NULL, 65535 - 27, ROCE_UDP_CSUM_ZERO), 0);
	cr_assert_eq(roce_ipudp_write(buf, &f6, NULL, 65535 - 8, ROCE_UDP_CSUM_ZERO), 48);
	cr_assert_eq(be16(buf + 4), 65535);
	cr_assert_eq(roce_ipudp_write(buf, &f6, NULL, 65535 - 7, ROCE_UDP_CSUM_ZERO), 0);
	cr_assert_eq(roce_ipudp_write(buf, &f6, NULL, 16, ROCE_UDP_CSUM_FULL), 0);
}

/* Parse @len bytes of @pkt from a buffer of exactly that size (so ASan sees overreads). */
static enum roce_ipudp_err parse_exact(const uint8_t *pkt, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct roce_ipudp f;
	const uint8_t *payload;
	size_t udp_len;
	enum roce_ipudp_err err;

	cr_assert_not_null(copy);
	memcpy(copy, pkt, len);
	err = roce_ipudp_parse(copy, len, &f, &payload, &udp_len);
	free(copy);
	return err;
}

Test(ipudp, parse_every_prefix)
{
	for (int i = 0; i < nvec; i++) {
		const uint8_t *ip = vec[i].bytes + ETH_LEN;
		size_t ip_len = vec[i].len - ETH_LEN;

		for (size_t n = 0; n < ip_len; n++)
			cr_assert_eq(parse_exact(ip, n), ROCE_IPUDP_TRUNCATED, "%s, %zu bytes",
				     vec[i].name, n);
		cr_assert_eq(parse_exact(ip, ip_len), ROCE_IPUDP_OK);
	}
}

/* Link-layer padding after the IP length is not part of the packet. */
Test(ipudp, parse_ignores_padding)
{
	const struct test_vector *v = &vec[4]; /* 62-byte ACK: Ethernet pads it to 60 + FCS */
	uint8_t pkt[128] = {0};
	const uint8_t *payload;
	struct roce_ipudp f;
	size_t udp_len;

	memcpy(pkt, v->bytes + ETH_LEN, v->len - ETH_LEN);
	cr_assert_eq(roce_ipudp_parse(pkt, v->len - ETH_LEN + 10, &f, &payload, &udp_len),
		     ROCE_IPUDP_OK);
	cr_assert_eq(udp_len, v->len - ETH_LEN - 28);
	cr_assert_eq(f.sport, 0xC8CC);
	cr_assert_eq(f.dport, 4791);
	cr_assert_eq(f.ttl, 64);
	cr_assert_eq(f.ip_id, 0);
	cr_assert_eq(f.ip_frag, ROCE_IPV4_DF);
}

/* Parse a copy of IP packet @v with byte @off set to @val. */
static enum roce_ipudp_err parse_with(const struct test_vector *v, size_t off, uint8_t val)
{
	uint8_t pkt[1600];
	size_t len = v->len - ETH_LEN;

	memcpy(pkt, v->bytes + ETH_LEN, len);
	pkt[off] = val;
	return parse_exact(pkt, len);
}

Test(ipudp, parse_errors_v4)
{
	const struct test_vector *v = &vec[3]; /* 56-byte IPv4 packet: total length 0x0038 */

	cr_assert_eq(parse_with(v, 0, 0x55), ROCE_IPUDP_VERSION);
	cr_assert_eq(parse_with(v, 0, 0x05), ROCE_IPUDP_VERSION);
	cr_assert_eq(parse_with(v, 0, 0x46), ROCE_IPUDP_OPTIONS);
	cr_assert_eq(parse_with(v, 0, 0x44), ROCE_IPUDP_LENGTH);
	cr_assert_eq(parse_with(v, 3, 27), ROCE_IPUDP_LENGTH);      /* < IP + UDP headers */
	cr_assert_eq(parse_with(v, 3, 0x39), ROCE_IPUDP_TRUNCATED); /* beyond the buffer */
	cr_assert_eq(parse_with(v, 2, 0x01), ROCE_IPUDP_TRUNCATED);
	cr_assert_eq(parse_with(v, 3, 0x34), ROCE_IPUDP_LENGTH);   /* UDP length disagrees */
	cr_assert_eq(parse_with(v, 6, 0x60), ROCE_IPUDP_FRAGMENT); /* DF + MF */
	cr_assert_eq(parse_with(v, 7, 0x01), ROCE_IPUDP_FRAGMENT); /* offset 8 */
	cr_assert_eq(parse_with(v, 6, 0x00), ROCE_IPUDP_OK);       /* DF clear is no fragment */
	cr_assert_eq(parse_with(v, 9, 6), ROCE_IPUDP_NOT_UDP);
	cr_assert_eq(parse_with(v, 25, 0x23), ROCE_IPUDP_LENGTH); /* UDP length 0x0023 */
	cr_assert_eq(parse_with(v, 25, 0x25), ROCE_IPUDP_LENGTH);
	cr_assert_eq(parse_with(v, 25, 0x24), ROCE_IPUDP_OK);
}

Test(ipudp, parse_errors_v6)
{
	const struct test_vector *v = &vec[18]; /* 76-byte IPv6 packet: payload length 0x0024 */
	uint8_t pkt[128];
	size_t len = v->len - ETH_LEN;

	cr_assert_eq(parse_with(v, 6, 0), ROCE_IPUDP_OPTIONS);
	cr_assert_eq(parse_with(v, 6, 60), ROCE_IPUDP_OPTIONS);
	cr_assert_eq(parse_with(v, 6, 43), ROCE_IPUDP_OPTIONS);
	cr_assert_eq(parse_with(v, 6, 44), ROCE_IPUDP_FRAGMENT);
	cr_assert_eq(parse_with(v, 6, 58), ROCE_IPUDP_NOT_UDP);
	cr_assert_eq(parse_with(v, 5, 7), ROCE_IPUDP_LENGTH);
	cr_assert_eq(parse_with(v, 5, 0x25), ROCE_IPUDP_TRUNCATED);
	cr_assert_eq(parse_with(v, 5, 0x20), ROCE_IPUDP_LENGTH); /* UDP length disagrees */
	cr_assert_eq(parse_with(v, 0, 0x76), ROCE_IPUDP_VERSION);

	/* Both addresses IPv4-mapped: not representable, refused. */
	memcpy(pkt, v->bytes + ETH_LEN, len);
	memset(pkt + 8, 0, 32);
	pkt[18] = pkt[19] = pkt[34] = pkt[35] = 0xFF;
	cr_assert_eq(parse_exact(pkt, len), ROCE_IPUDP_VERSION);
	pkt[34] = 0; /* one mapped address is an ordinary IPv6 packet */
	cr_assert_eq(parse_exact(pkt, len), ROCE_IPUDP_OK);
}
