/* SPDX-License-Identifier: MIT */
/*
 * The ICRC (transport/icrc.h) against every reference frame of PROTOCOL.md
 * §2.5 (software vectors, a ConnectX-4 Lx CNP, scapy's IPv4 and IPv6
 * vectors), against a reference implementation written here from the §2.3
 * pseudo-code (zlib over a masked copy of the raw bytes), and the IPv4 ID
 * recovery on real kernel-rxe captures, whose IDs are all non-zero. The
 * frame builder rebuilds reference frames bit-exact from their fields.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <pcap/pcap.h>
#include <string.h>
#include <zlib.h>

#include "tests/support/vectors.h"
#include "transport/frame.h"
#include "transport/icrc.h"

#define ETH_LEN     14
#define MAX_VECTORS 32
#define MAX_FRAMES  600
#define FRAME_CAP   1600

static struct test_vector vec[MAX_VECTORS];
static int nvec;

static void load_vectors(void)
{
	nvec = test_vectors_load(UROCE_TEST_DATA "/vectors.json", vec, MAX_VECTORS);
	cr_assert_eq(nvec, 19);
}

TestSuite(icrc, .init = load_vectors);

struct capture {
	int n;
	size_t len[MAX_FRAMES];
	uint8_t data[MAX_FRAMES][FRAME_CAP];
};

static struct capture cap;

/* Read every frame of tests/vectors/@name with libpcap; returns the count. */
static int read_pcap(const char *name, struct capture *c)
{
	char path[256], err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	pcap_t *p;

	snprintf(path, sizeof(path), "%s/%s", UROCE_TEST_DATA, name);
	p = pcap_open_offline(path, err);
	cr_assert_not_null(p, "%s: %s", path, err);
	cr_assert_eq(pcap_datalink(p), DLT_EN10MB);
	c->n = 0;
	while (pcap_next_ex(p, &h, &data) == 1) {
		cr_assert_lt(c->n, MAX_FRAMES, "%s: too many frames", name);
		cr_assert_eq(h->caplen, h->len, "%s: truncated capture", name);
		cr_assert_leq(h->caplen, FRAME_CAP);
		memcpy(c->data[c->n], data, h->caplen);
		c->len[c->n++] = h->caplen;
	}
	pcap_close(p);
	return c->n;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A RoCEv2 frame split as the receive path sees it. */
struct rx {
	struct roce_ipudp f;
	const uint8_t *roce; /* BTH .. ICRC */
	size_t len;
};

static struct rx parse_frame(const uint8_t *frame, size_t len)
{
	struct rx r;

	cr_assert_gt(len, ETH_LEN);
	cr_assert_eq(roce_ipudp_parse(frame + ETH_LEN, len - ETH_LEN, &r.f, &r.roce, &r.len),
		     ROCE_IPUDP_OK);
	cr_assert_eq(r.f.dport, 4791);
	cr_assert_geq(r.len, 16);
	return r;
}

/*
 * Reference: PROTOCOL.md §2.3 literally. Copies 8 x 0xFF and the IP packet
 * @ip (without its ICRC) into @out and masks the variant bytes; returns the
 * pseudo-packet length.
 */
static size_t ref_pseudo(const uint8_t *ip, size_t ip_len, uint8_t *out)
{
	uint8_t *b = out + 8;
	size_t u;

	memset(out, 0xFF, 8);
	memcpy(b, ip, ip_len - 4);
	if (ip[0] >> 4 == 4) {
		b[1] = b[8] = b[10] = b[11] = 0xFF;
		u = 20;
	} else {
		b[0] |= 0x0F;
		b[1] = b[2] = b[3] = b[7] = 0xFF;
		u = 40;
	}
	b[u + 6] = b[u + 7] = 0xFF;
	b[u + 8 + 4] = 0xFF;
	return 8 + ip_len - 4;
}

static uint32_t ref_icrc(const uint8_t *ip, size_t ip_len)
{
	static uint8_t b[70000];

	return (uint32_t)crc32(0, b, (uInt)ref_pseudo(ip, ip_len, b));
}

/* A frame's ICRC as computed, as in the reference, as on the wire, and as verified. */
static void check_frame(const uint8_t *frame, size_t len, uint32_t expect, const char *what)
{
	struct rx r = parse_frame(frame, len);
	uint16_t id = r.f.ip_id;

	cr_assert_eq(le32(r.roce + r.len - 4), expect, "%s: wire ICRC", what);
	cr_assert_eq(roce_icrc(&r.f, r.roce, r.len - 4), expect, "%s: roce_icrc", what);
	cr_assert_eq(ref_icrc(frame + ETH_LEN, len - ETH_LEN), expect, "%s: reference", what);
	cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), ROCE_ICRC_OK, "%s: verify", what);
	cr_assert_eq(r.f.ip_id, id);
}

Test(icrc, vectors)
{
	for (int i = 0; i < nvec; i++) {
		cr_assert_eq(vec[i].frame, i + 1);
		cr_assert_arr_eq(vec[i].bytes + vec[i].len - 4, vec[i].icrc, 4, "%s", vec[i].name);
		check_frame(vec[i].bytes, vec[i].len, le32(vec[i].icrc), vec[i].name);
	}
	/* Spot checks against the table of §2.5, independently of the JSON. */
	cr_assert_eq(le32(vec[4].icrc), 0x0c6d46c2);
	cr_assert_eq(le32(vec[18].icrc), 0x10c369f8);
}

/* The reference's pseudo-packet is the one spelt out for frame 5 in §2.5. */
Test(icrc, reference_pseudo_packet)
{
	static const char hex[] = "ffffffffffffffff"
				  "45ff003000004000ff11ffffc0a80102c0a80101"
				  "c8cc12b7001cffff"
				  "1100ffffff00001100123456"
				  "1f000001";
	uint8_t want[52], got[64];

	cr_assert_eq(test_hex_decode(hex, strlen(hex), want, sizeof(want)), 52);
	cr_assert_eq(ref_pseudo(vec[4].bytes + ETH_LEN, vec[4].len - ETH_LEN, got), 52);
	cr_assert_arr_eq(got, want, 52);
	cr_assert_eq(crc32(0, want, 52), 0x0C6D46C2);
}

Test(icrc, roce_vectors_pcap)
{
	cr_assert_eq(read_pcap("roce_vectors.pcap", &cap), 19);
	for (int i = 0; i < cap.n; i++) {
		cr_assert_eq(cap.len[i], vec[i].len, "frame %d", i + 1);
		cr_assert_arr_eq(cap.data[i], vec[i].bytes, vec[i].len, "frame %d", i + 1);
	}
}

/* V0: the only hardware frame, CRC value 0x2A00FD82 (wire 82 fd 00 2a). */
Test(icrc, hardware_cnp)
{
	cr_assert_eq(read_pcap("cx4_cnp.pcap", &cap), 1);
	cr_assert_eq(cap.len[0], 74);
	check_frame(cap.data[0], cap.len[0], 0x2A00FD82, "ConnectX-4 Lx CNP");
}

/* V1/V2: scapy's UC SEND_ONLY over IPv4 and IPv6 (masked fields non-zero). */
Test(icrc, scapy_vectors)
{
	static const char v1[] =
		"248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007c00012b7002c"
		"aca22460ffff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3";
	static const char v2[] =
		"248a07a8fa22248a07a8fa2286dd6e21face002c11ff202200000000000000000000000010232023"
		"0000000000000000000000001024c00012b7002ce7c52460ffff000000d300cf17104630818be289"
		"35d90e9a95505401be885e5000003e5b743b";
	uint8_t frame[128];
	int n;

	n = test_hex_decode(v1, strlen(v1), frame, sizeof(frame));
	check_frame(frame, (size_t)n, 0xf353f378, "V1");
	n = test_hex_decode(v2, strlen(v2), frame, sizeof(frame));
	check_frame(frame, (size_t)n, 0x3b745b3e, "V2");
}

/* Frame 5 with a wrong last ICRC byte: no IPv4 ID explains it. */
Test(icrc, bad_icrc_rejected)
{
	struct rx r;

	cr_assert_eq(read_pcap("bad_icrc.pcap", &cap), 1);
	r = parse_frame(cap.data[0], cap.len[0]);
	cr_assert_eq(r.f.ip_id, 0);
	cr_assert_eq(roce_icrc(&r.f, r.roce, r.len - 4), 0x0c6d46c2);
	cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), ROCE_ICRC_BAD);
	cr_assert_eq(r.f.ip_id, 0, "a rejected frame leaves the ID alone");
}

/* Masked fields (PROTOCOL.md §2.1) do not change the ICRC; covered ones do. */
static void check_masks(const struct test_vector *v)
{
	struct rx r = parse_frame(v->bytes, v->len);
	uint8_t roce[FRAME_CAP];
	size_t len = r.len - 4;
	uint32_t crc = le32(v->icrc);
	struct roce_ipudp g;

	memcpy(roce, r.roce, r.len);
	g = r.f;
	g.tos ^= 0xA5;
	g.ttl ^= 0x3C;
	g.flow_label ^= 0xFFFFF;
	g.udp_csum ^= 0x1234;
	roce[4] ^= 0xC0; /* FECN, BECN */
	cr_assert_eq(roce_icrc(&g, roce, len), crc, "%s: masked fields", v->name);
	roce[4] = r.roce[4];

#define COVERED(field, val)                                                                        \
	do {                                                                                       \
		g = r.f;                                                                           \
		g.field = (val);                                                                   \
		cr_assert_neq(roce_icrc(&g, roce, len), crc, "%s: " #field, v->name);              \
	} while (0)
	COVERED(sport, r.f.sport ^ 1);
	COVERED(dport, 4790);
	COVERED(sgid[15], r.f.sgid[15] ^ 0x80);
	COVERED(dgid[12], r.f.dgid[12] ^ 1);
	if (roce_ipudp_is_v4(&r.f)) {
		COVERED(ip_id, 1);
		COVERED(ip_frag, 0);
	}
#undef COVERED
	for (size_t i = 0; i < len; i++) {
		if (i == 4)
			continue;
		roce[i] ^= 0x10;
		cr_assert_neq(roce_icrc(&r.f, roce, len), crc, "%s: byte %zu", v->name, i);
		roce[i] ^= 0x10;
	}
	cr_assert_neq(roce_icrc(&r.f, roce, len - 4), crc, "%s: length", v->name);
}

Test(icrc, masked_and_covered)
{
	check_masks(&vec[3]);  /* IPv4 RC SEND_ONLY */
	check_masks(&vec[18]); /* IPv6 */
}

/* xorshift64: a seeded generator, so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Random headers and packets of every length class against the reference. */
Test(icrc, random_packets_match_reference)
{
	static uint8_t ip[48 + 4200];

	for (int i = 0; i < 400; i++) {
		struct roce_ipudp f = {.sport = (uint16_t)rng(),
				       .dport = (uint16_t)rng(),
				       .tos = (uint8_t)rng(),
				       .ttl = (uint8_t)rng(),
				       .ip_id = (uint16_t)rng(),
				       .ip_frag = (uint16_t)rng()};
		/* Every length up to 215 bytes (a rest past the BTH short enough to be copied
		 * behind the headers, and longer: icrc.c SHORT_REST), then random ones. */
		size_t len = i < 200 ? 16 + (size_t)i : 16 + rng() % 4180, hdr;

		for (size_t k = 0; k < 16; k++) {
			f.sgid[k] = (uint8_t)rng();
			f.dgid[k] = (uint8_t)rng();
		}
		if (i & 1) {
			roce_gid_from_v4(f.sgid, f.sgid + 12);
			roce_gid_from_v4(f.dgid, f.dgid + 12);
		} else {
			f.sgid[0] = 0xfd; /* not IPv4-mapped */
			f.flow_label = (uint32_t)rng() & 0xFFFFF;
		}
		hdr = roce_ipudp_hdr_len(&f);
		for (size_t k = 0; k < len; k++)
			ip[hdr + k] = (uint8_t)rng();
		cr_assert_eq(roce_ipudp_write(ip, &f, NULL, len, ROCE_UDP_CSUM_ZERO), hdr);
		cr_assert_eq(roce_icrc(&f, ip + hdr, len - 4), ref_icrc(ip, hdr + len),
			     "packet %d, %zu bytes", i, len);
		roce_icrc_fill(&f, ip + hdr, len);
		cr_assert_eq(le32(ip + hdr + len - 4), ref_icrc(ip, hdr + len));
		cr_assert_eq(roce_icrc_verify(&f, ip + hdr, len), ROCE_ICRC_OK);
	}
}

/*
 * roce_icrc_fill_gap: the ICRC of a packet whose payload is elsewhere equals roce_icrc_fill's
 * of the whole packet, whatever the buffer holds in the gap, for every placement of the gap
 * after the BTH; a gap outside that leaves the packet as it was.
 */
Test(icrc, fill_gap_is_the_fill_of_the_whole_packet)
{
	static const uint8_t a[4] = {10, 0, 0, 1}, b[4] = {10, 0, 0, 2};
	uint8_t whole[600], split[600], src[600];
	struct roce_ipudp f = {.sport = 49152, .dport = ROCE_UDP_PORT, .ip_id = 7};

	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, b);
	for (int i = 0; i < 300; i++) {
		size_t len = 16 + rng() % (sizeof(whole) - 16);
		size_t off = 12 + rng() % (len - 16 + 1);
		size_t gap = rng() % (len - 4 - off + 1);

		for (size_t k = 0; k < len; k++)
			whole[k] = (uint8_t)rng();
		memcpy(split, whole, len);
		memcpy(src, whole + off, gap);
		memset(split + off, 0xA5, gap);
		roce_icrc_fill(&f, whole, len);
		roce_icrc_fill_gap(&f, split, len,
				   &(struct roce_pkt_gap){src, (uint16_t)off, (uint16_t)gap});
		cr_assert_eq(le32(split + len - 4), le32(whole + len - 4),
			     "%zu bytes, gap of %zu at %zu", len, gap, off);
	}
	/* A gap in the BTH or over the ICRC: nothing written. */
	memset(split, 0x5A, sizeof(split));
	roce_icrc_fill_gap(&f, split, 100, &(struct roce_pkt_gap){src, 11, 10});
	roce_icrc_fill_gap(&f, split, 100, &(struct roce_pkt_gap){src, 90, 7});
	for (size_t i = 0; i < sizeof(split); i++)
		cr_assert_eq(split[i], 0x5A);
}

/*
 * roce_icrc_verify_gap: a packet whose payload was received elsewhere verifies as the whole
 * packet does, with the IPv4 ID recovered the same way; a byte changed in the gap's memory
 * fails it, whatever the buffer holds there; a gap in the BTH or over the ICRC fails.
 */
Test(icrc, verify_gap_is_the_verify_of_the_whole_packet)
{
	static const uint8_t a[4] = {10, 0, 0, 1}, b[4] = {10, 0, 0, 2};
	uint8_t whole[600], split[600], src[600];
	struct roce_ipudp f = {.sport = 49152, .dport = ROCE_UDP_PORT, .ip_id = 7}, g;

	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, b);
	for (int i = 0; i < 300; i++) {
		size_t len = 16 + rng() % (sizeof(whole) - 16);
		size_t off = 12 + rng() % (len - 16 + 1);
		struct roce_pkt_gap gap = {.src = src, .off = (uint16_t)off};

		gap.len = (uint16_t)(rng() % (len - 4 - off + 1));
		for (size_t k = 0; k < len; k++)
			whole[k] = (uint8_t)rng();
		f.ip_id = 7;
		roce_icrc_fill(&f, whole, len);
		memcpy(split, whole, len);
		memcpy(src, whole + off, gap.len);
		memset(split + off, 0xA5, gap.len);
		g = f;
		cr_assert_eq(roce_icrc_verify_gap(&g, split, len, &gap), ROCE_ICRC_OK);
		g.ip_id = 9; /* the ID guessed wrong: recovered */
		cr_assert_eq(roce_icrc_verify_gap(&g, split, len, &gap), ROCE_ICRC_OK_ID);
		cr_assert_eq(g.ip_id, 7);
		if (gap.len) {
			src[rng() % gap.len] ^= 0x10;
			g = f;
			cr_assert_eq(roce_icrc_verify_gap(&g, split, len, &gap), ROCE_ICRC_BAD,
				     "%zu bytes, gap of %u at %zu", len, gap.len, off);
		}
	}
	g = f;
	cr_assert_eq(roce_icrc_verify_gap(&g, split, 100, &(struct roce_pkt_gap){src, 11, 10}),
		     ROCE_ICRC_BAD);
	cr_assert_eq(roce_icrc_verify_gap(&g, split, 100, &(struct roce_pkt_gap){src, 90, 7}),
		     ROCE_ICRC_BAD);
}

Test(icrc, impossible_lengths)
{
	static uint8_t big[65536];
	struct roce_ipudp f = {0};
	static const uint8_t a[4] = {10, 0, 0, 1};
	uint8_t small[16];

	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, a);
	memset(small, 0x5A, sizeof(small));
	cr_assert_eq(roce_icrc(&f, small, 11), 0);
	cr_assert_neq(roce_icrc(&f, small, 12), 0);
	for (size_t len = 0; len < 16; len++)
		cr_assert_eq(roce_icrc_verify(&f, small, len), ROCE_ICRC_BAD);
	roce_icrc_fill(&f, small, 15);
	for (size_t i = 0; i < sizeof(small); i++)
		cr_assert_eq(small[i], 0x5A);

	/* IPv4 total length 20 + 8 + len <= 65535. */
	cr_assert_neq(roce_icrc(&f, big, 65535 - 32), 0);
	cr_assert_eq(roce_icrc(&f, big, 65535 - 31), 0);
	roce_icrc_fill(&f, big, 65535 - 27);
	cr_assert_eq(le32(big + 65535 - 31), 0);
	cr_assert_eq(roce_icrc_verify(&f, big, 65535 - 27), ROCE_ICRC_BAD);
	roce_icrc_fill(&f, big, 65535 - 28);
	cr_assert_eq(roce_icrc_verify(&f, big, 65535 - 28), ROCE_ICRC_OK);
}

Test(icrc, backend)
{
	cr_assert_str_eq(roce_icrc_backend(), UROCE_CRC32_NAME);
}

/* --- IPv4 ID recovery on frames from Linux rxe (every ID is non-zero) --- */

TestSuite(icrc_id, .init = load_vectors);

static const char *const rxe_captures[] = {
	"kernel-rxe/rc.pcap",     "kernel-rxe/rping.pcap", "kernel-rxe/ucma.pcap",
	"kernel-rxe/udaddy.pcap", "kernel-rxe/wsend.pcap",
};

Test(icrc_id, recovers_kernel_rxe_ids)
{
	int frames = 0, nonzero = 0;

	for (size_t c = 0; c < sizeof(rxe_captures) / sizeof(rxe_captures[0]); c++) {
		read_pcap(rxe_captures[c], &cap);
		for (int i = 0; i < cap.n; i++) {
			struct rx r = parse_frame(cap.data[i], cap.len[i]);
			uint16_t id = r.f.ip_id;
			enum roce_icrc_result want = id ? ROCE_ICRC_OK_ID : ROCE_ICRC_OK;

			cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), ROCE_ICRC_OK);
			r.f.ip_id = 0;
			cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), want, "%s #%d",
				     rxe_captures[c], i + 1);
			cr_assert_eq(r.f.ip_id, id, "%s #%d", rxe_captures[c], i + 1);
			r.f.ip_id = (uint16_t)(id ^ (rng() | 1));
			cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), ROCE_ICRC_OK_ID);
			cr_assert_eq(r.f.ip_id, id);
			frames++;
			nonzero += id != 0;
		}
	}
	cr_assert_eq(frames, 300 + 145 + 42 + 10 + 600);
	cr_assert_eq(nonzero, frames, "every kernel-rxe frame has a non-zero ID");
}

/*
 * Recovery at lengths from the shortest (a bare BTH) to the longest IPv4
 * allows: 38 and 65529 bytes follow the ID field up to the ICRC, whose
 * bits between them select every power of x the recovery uses.
 */
Test(icrc_id, recovers_at_every_length)
{
	static uint8_t roce[65536];
	static const size_t lens[] = {12, 13, 61, 1000, 4096 + 60, 9001, 40000, 65503};
	static const uint8_t a[4] = {10, 77, 0, 3}, b[4] = {10, 77, 0, 2};
	struct roce_ipudp f = {.sport = 0xC123, .dport = 4791, .ip_frag = ROCE_IPV4_DF};

	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, b);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = lens[i] + 4;

		for (size_t k = 0; k < len; k++)
			roce[k] = (uint8_t)rng();
		for (int t = 0; t < 20; t++) {
			uint16_t id = (uint16_t)rng(), guess = (uint16_t)rng();

			f.ip_id = id;
			roce_icrc_fill(&f, roce, len);
			f.ip_id = guess;
			cr_assert_eq(roce_icrc_verify(&f, roce, len),
				     guess == id ? ROCE_ICRC_OK : ROCE_ICRC_OK_ID, "%zu bytes",
				     len);
			cr_assert_eq(f.ip_id, id, "%zu bytes", len);
		}
	}
}

/* Brute force over all 65536 IDs: exactly one makes the CRC match. */
Test(icrc_id, recovered_id_is_the_only_one)
{
	read_pcap("kernel-rxe/rping.pcap", &cap);
	for (int i = 0; i < cap.n; i += 72) { /* frames 1, 73 and 145 */
		struct rx r = parse_frame(cap.data[i], cap.len[i]);
		uint32_t wire = le32(r.roce + r.len - 4);
		uint16_t id = r.f.ip_id, found = 0;
		int matches = 0;

		for (uint32_t cand = 0; cand <= 0xFFFF; cand++) {
			r.f.ip_id = (uint16_t)cand;
			if (roce_icrc(&r.f, r.roce, r.len - 4) == wire) {
				matches++;
				found = (uint16_t)cand;
			}
		}
		cr_assert_eq(matches, 1, "frame %d", i + 1);
		cr_assert_eq(found, id);
		r.f.ip_id = 0;
		cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), ROCE_ICRC_OK_ID);
		cr_assert_eq(r.f.ip_id, id);
	}
}

/*
 * Corrupted frames with an unknown ID. A recovered match holds 16 bits of
 * evidence instead of 32, so each corruption passes with probability about
 * 2^-16: over the 8000 trials below about 0.12 are expected to pass. The
 * bound of 2 makes the test fail if the recovery accepted anything much
 * more often than the mathematics allows. With the true ID given, a
 * single-bit error must never give a direct match (CRC-32 detects every
 * single-bit error).
 */
Test(icrc_id, corruption_detection)
{
	static struct capture rxe;
	int accepted = 0, trials = 0;

	read_pcap("kernel-rxe/rc.pcap", &rxe);
	for (int t = 0; t < 4000; t++) {
		int i = (int)(rng() % (uint64_t)rxe.n);
		struct rx r = parse_frame(rxe.data[i], rxe.len[i]);
		uint8_t *roce = (uint8_t *)r.roce; /* our own copy of the capture */
		size_t bit = rng() % (8 * r.len);
		uint16_t id = r.f.ip_id;

		if (bit / 8 == 4)
			bit += 8; /* BTH byte 4 is masked: flipping it is no corruption */
		roce[bit / 8] ^= (uint8_t)(1u << bit % 8);
		cr_assert_neq(roce_icrc_verify(&r.f, roce, r.len), ROCE_ICRC_OK);
		r.f.ip_id = (uint16_t)rng();
		accepted += roce_icrc_verify(&r.f, roce, r.len) != ROCE_ICRC_BAD;
		roce[bit / 8] ^= (uint8_t)(1u << bit % 8);
		r.f.ip_id = id;
		trials++;
	}
	for (int t = 0; t < 4000; t++) {
		int i = (int)(rng() % (uint64_t)rxe.n);
		struct rx r = parse_frame(rxe.data[i], rxe.len[i]);
		uint8_t *icrc = (uint8_t *)r.roce + r.len - 4, saved[4];
		uint32_t v = (uint32_t)rng();

		memcpy(saved, icrc, 4);
		for (int k = 0; k < 4; k++)
			icrc[k] = (uint8_t)(v >> 8 * k);
		r.f.ip_id = (uint16_t)rng();
		accepted +=
			le32(saved) != v && roce_icrc_verify(&r.f, r.roce, r.len) != ROCE_ICRC_BAD;
		memcpy(icrc, saved, 4);
		trials++;
	}
	cr_log_info("ID recovery: %d of %d corrupted frames accepted", accepted, trials);
	cr_assert_leq(accepted, 2, "%d of %d corrupted frames accepted", accepted, trials);
}

/* IPv6 has no ID: a mismatch is final. */
Test(icrc_id, ipv6_no_recovery)
{
	struct rx r = parse_frame(vec[18].bytes, vec[18].len);

	((uint8_t *)r.roce)[r.len - 1] ^= 1;
	cr_assert_eq(roce_icrc_verify(&r.f, r.roce, r.len), ROCE_ICRC_BAD);
}

/* --- Frame builder: reference frames rebuilt from their fields (Appendix A) --- */

TestSuite(frame, .init = load_vectors);

static const uint8_t host_a[4] = {192, 168, 1, 1}, host_b[4] = {192, 168, 1, 2};

/* Appendix A's common IPv4 parameters: ID 0, DF, TTL 64, ToS 0, data sport 0xC8CC. */
static struct roce_ipudp flow(const uint8_t *src, const uint8_t *dst)
{
	struct roce_ipudp f = {.sport = 0xC8CC, .dport = 4791, .ttl = 64, .ip_frag = ROCE_IPV4_DF};

	roce_gid_from_v4(f.sgid, src);
	roce_gid_from_v4(f.dgid, dst);
	return f;
}

static void check_build(int frame, const struct roce_ipudp *f, const struct roce_pkt *pkt,
			enum roce_udp_csum csum)
{
	const struct test_vector *v = &vec[frame - 1];
	uint8_t buf[FRAME_CAP];
	size_t len;

	memset(buf, 0xAA, sizeof(buf));
	len = roce_frame_build(buf, sizeof(buf), f, pkt, csum);
	cr_assert_eq(len, v->len - ETH_LEN, "frame %d: length", frame);
	cr_assert_arr_eq(buf, v->bytes + ETH_LEN, len, "frame %d differs", frame);
	/* Exactly as much room as needed is enough; one byte less is not. */
	cr_assert_eq(roce_frame_build(buf, len, f, pkt, csum), len);
	cr_assert_eq(roce_frame_build(buf, len - 1, f, pkt, csum), 0);
}

static const char hello[] = "Hello RoCE!";

/* 4: RC SEND_ONLY A->B "Hello RoCE!" + 1 pad byte, AckReq, PSN 0x123456. */
static struct roce_pkt send_only(void)
{
	return (struct roce_pkt){
		.bth = {.opcode = ROCE_TR_RC | ROCE_OP_SEND_ONLY,
			.pkey = 0xFFFF,
			.dqpn = 0x12,
			.ack_req = true,
			.psn = 0x123456},
		.payload = (const uint8_t *)hello,
		.payload_len = sizeof(hello) - 1,
	};
}

Test(frame, rc_send_only)
{
	struct roce_ipudp f = flow(host_a, host_b);
	struct roce_pkt pkt = send_only();

	check_build(4, &f, &pkt, ROCE_UDP_CSUM_ZERO);
}

/* 5: RC ACK B->A, syndrome 0x1F (ACK, no credit information), MSN 1. */
Test(frame, rc_ack)
{
	struct roce_ipudp f = flow(host_b, host_a);
	struct roce_pkt pkt = {
		.bth = {.opcode = ROCE_TR_RC | ROCE_OP_ACK,
			.pkey = 0xFFFF,
			.dqpn = 0x11,
			.psn = 0x123456},
		.aeth = {.syndrome = roce_aeth_syndrome(ROCE_AETH_ACK, ROCE_AETH_CREDIT_INVALID),
			 .msn = 1},
	};

	check_build(5, &f, &pkt, ROCE_UDP_CSUM_ZERO);
}

/* 6: RC RDMA_WRITE_ONLY A->B, 16 bytes 00..0f to VA 0x7f0000001000, R_Key 0x1234. */
Test(frame, rc_write_only)
{
	struct roce_ipudp f = flow(host_a, host_b);
	uint8_t data[16];
	struct roce_pkt pkt = {
		.bth = {.opcode = ROCE_TR_RC | ROCE_OP_WRITE_ONLY,
			.pkey = 0xFFFF,
			.dqpn = 0x12,
			.ack_req = true,
			.psn = 0x123457},
		.reth = {.va = 0x00007f0000001000ull, .rkey = 0x1234, .len = 16},
		.payload = data,
		.payload_len = sizeof(data),
	};

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	check_build(6, &f, &pkt, ROCE_UDP_CSUM_ZERO);
}

/* 18: UD SEND_ONLY A->B to QP 0x13, PSN 0x100, Q_Key 0x01234567, source QP 0x14, "datagram". */
Test(frame, ud_send_only)
{
	struct roce_ipudp f = flow(host_a, host_b);
	static const char text[] = "datagram";
	struct roce_pkt pkt = {
		.bth = {.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY,
			.pkey = 0xFFFF,
			.dqpn = 0x13,
			.psn = 0x100},
		.deth = {.qkey = 0x01234567, .src_qpn = 0x14},
		.payload = (const uint8_t *)text,
		.payload_len = sizeof(text) - 1,
	};

	check_build(18, &f, &pkt, ROCE_UDP_CSUM_ZERO);
}

/* 19: frame 4 over IPv6 fd00::1 -> fd00::2, TC 0x68, flow 0x1C8CB, valid UDP checksum. */
Test(frame, ipv6_send_only)
{
	struct roce_ipudp f = {.sgid = {0xfd, [15] = 1},
			       .dgid = {0xfd, [15] = 2},
			       .sport = 0xC8CC,
			       .dport = 4791,
			       .tos = 0x68,
			       .ttl = 64,
			       .flow_label = 0x1C8CB};
	struct roce_pkt pkt = send_only();

	check_build(19, &f, &pkt, ROCE_UDP_CSUM_FULL);
}

/* What the builder writes, a receiver parses and verifies, ID recovery included. */
Test(frame, build_parse_verify)
{
	struct roce_ipudp f = flow(host_a, host_b), g;
	struct roce_pkt pkt = send_only();
	const uint8_t *roce;
	uint8_t buf[128];
	size_t len, roce_len;

	f.ip_id = 0xBEEF;
	f.tos = 0x02;
	len = roce_frame_build(buf, sizeof(buf), &f, &pkt, ROCE_UDP_CSUM_FULL);
	cr_assert_eq(len, 20 + 8 + 12 + 12 + 4);
	cr_assert_eq(roce_ipudp_parse(buf, len, &g, &roce, &roce_len), ROCE_IPUDP_OK);
	cr_assert_eq(g.ip_id, 0xBEEF);
	cr_assert_eq(g.tos, 0x02);
	cr_assert_neq(g.udp_csum, 0);
	cr_assert_eq(roce_icrc_verify(&g, roce, roce_len), ROCE_ICRC_OK);
	g.ip_id = 0; /* as a UDP socket receiver sees it */
	cr_assert_eq(roce_icrc_verify(&g, roce, roce_len), ROCE_ICRC_OK_ID);
	cr_assert_eq(g.ip_id, 0xBEEF);
}

Test(frame, build_errors)
{
	struct roce_ipudp f = flow(host_a, host_b);
	struct roce_pkt pkt = send_only();
	uint8_t buf[128];

	cr_assert_eq(roce_frame_build(buf, 27, &f, &pkt, ROCE_UDP_CSUM_ZERO), 0);
	cr_assert_eq(roce_frame_build(buf, 28, &f, &pkt, ROCE_UDP_CSUM_ZERO), 0);
	pkt.bth.opcode = 0xC0; /* manufacturer range: not defined */
	cr_assert_eq(roce_frame_build(buf, sizeof(buf), &f, &pkt, ROCE_UDP_CSUM_ZERO), 0);
}

#if defined(__x86_64__)
#include <cpuid.h>

/* Whether XGETBV with ECX = 1 (XINUSE) is there: CPUID leaf 0xD, sub-leaf 1, EAX bit 2. */
static bool xinuse_supported(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid_count(0xD, 1, &a, &b, &c, &d) && (a & 4);
}

/* The state components not in their initial state. Bit 2: the upper halves of the YMM
 * registers. */
static uint64_t xinuse(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}

/*
 * An ICRC leaves the vector registers' upper halves clean (icrc.c: ISA-L's AVX-512 CRC leaves
 * them dirty after 256 bytes or more, and every SSE instruction afterwards paid for it). Without
 * AVX-512 nothing dirties them and the test proves nothing; without XINUSE it is skipped.
 */
Test(icrc, leaves_the_upper_vector_state_clean)
{
	static uint8_t pkt[4096];
	struct roce_ipudp f = {0};
	static const uint8_t a[4] = {10, 0, 0, 1};
	uint64_t in_use;

	if (!__builtin_cpu_supports("avx") || !xinuse_supported())
		cr_skip_test("no AVX, or the CPU cannot say which vector state is in use");
	roce_gid_from_v4(f.sgid, a);
	roce_gid_from_v4(f.dgid, a);
	for (size_t len = 256; len <= sizeof(pkt); len *= 2) {
		roce_icrc_fill(&f, pkt, len);
		in_use = xinuse();
		cr_assert_eq(in_use & 4, 0, "YMM upper state in use after a %zu-byte ICRC", len);
	}
}
#endif
