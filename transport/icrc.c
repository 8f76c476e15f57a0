/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 ICRC (PROTOCOL.md §2) on top of a CRC-32 library, and the
 * recovery of the IPv4 Identification a receiver cannot see.
 *
 * Both libraries compute the IEEE CRC-32 value (zlib convention: initial
 * register ~0, reflected, final inversion) and continue a CRC when given the
 * value returned for the bytes before, so the pseudo-packet is hashed as
 * three pieces: the constant 8-byte LRH stand-in (folded into a seed),
 * a masked copy of the IP/UDP/BTH headers, and the rest of the packet in
 * place -- or, for a short rest, copied behind the headers and hashed in the
 * same call (SHORT_REST).
 */
#include "transport/icrc.h"

#include <stdbool.h>
#include <string.h>

#include "transport/wire.h"

#if defined(UROCE_CRC32_ISAL)
#include <isa-l/crc.h>
#define CRC32_BACKEND "isal"

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * ISA-L 2.30's AVX-512 CRC-32 (crc32_gzip_refl_by16_10, the one it picks on CPUs that have
 * AVX-512 and VPCLMULQDQ) returns without VZEROUPPER after a buffer of 256 bytes or more: the
 * upper halves of the vector registers stay dirty, and from then on every SSE instruction the
 * thread runs -- this library's code and glibc's, built for baseline x86-64 -- pays for it.
 * One 300-byte CRC (a CM MAD: every rdma_cm user sends some) slows every later packet of the
 * process (docs/PERFORMANCE.md, ICRC); a VZEROUPPER after the call ends it. It exists wherever
 * AVX does.
 */
static bool have_avx;

__attribute__((constructor)) static void detect_avx(void)
{
	__builtin_cpu_init();
	have_avx = __builtin_cpu_supports("avx");
}

__attribute__((target("avx"))) static void zero_upper(void)
{
	_mm256_zeroupper();
}
#endif

static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t v = crc32_gzip_refl(crc, p, len);

#if defined(__x86_64__)
	if (have_avx)
		zero_upper();
#endif
	return v;
}
#elif defined(UROCE_CRC32_ZLIB)
#include <zlib.h>
#define CRC32_BACKEND "zlib"
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	return (uint32_t)crc32_z(crc, p, len);
}
#else
#error "define UROCE_CRC32_ISAL or UROCE_CRC32_ZLIB (CMake option UROCE_CRC32)"
#endif

/* CRC-32 value of the 8 bytes 0xFF standing in for the LRH: the inverse of
 * rxe's register seed 0xDEBB20E3 (PROTOCOL.md §2.2). */
#define CRC32_LRH_SEED 0x2144DF1Cu

/* Masked IP + UDP + BTH: at most 40 + 8 + 12 bytes (IPv6). */
enum { PSEUDO_HDR_MAX = ROCE_IPV6_HDR_LEN + ROCE_UDP_HDR_LEN + ROCE_BTH_LEN };

/*
 * A rest of the packet up to this long is copied behind the masked headers and hashed with
 * them in one call: for a small packet (a 2-byte SEND, an ACK) a call to the CRC library
 * costs more than the copy (docs/PERFORMANCE.md, ICRC), and each hop of a ping-pong computes
 * four.
 */
enum { SHORT_REST = 128 };

/* Bytes of the IPv4 header after the Identification field (offsets 4-5). */
enum { IPV4_AFTER_ID = ROCE_IPV4_HDR_LEN - 6 };

/*
 * The pseudo-packet's IP, UDP and BTH headers for @f and a RoCE packet of
 * @len bytes (BTH up to the ICRC), built directly with the variant fields
 * as ones (PROTOCOL.md §2.1 table, §2.3): what roce_ipudp_write() would
 * write, masked, without computing the checksums the masks hide. Returns
 * the length, or 0 if @len does not fit the IP length fields.
 */
static size_t pseudo_hdr(uint8_t b[PSEUDO_HDR_MAX], const struct roce_ipudp *f, const uint8_t *bth,
			 size_t len)
{
	size_t udp_len = ROCE_UDP_HDR_LEN + len + ROCE_ICRC_LEN;
	uint8_t *udp;

	if (roce_ipudp_is_v4(f)) {
		if (udp_len > ROCE_IP_LEN_MAX - ROCE_IPV4_HDR_LEN)
			return 0;
		b[0] = 0x45;
		b[1] = 0xFF; /* TOS */
		roce_put16(b + 2, (uint16_t)(ROCE_IPV4_HDR_LEN + udp_len));
		roce_put16(b + 4, f->ip_id);
		roce_put16(b + 6, f->ip_frag);
		b[8] = 0xFF; /* TTL */
		b[9] = ROCE_IP_PROTO_UDP;
		b[10] = b[11] = 0xFF; /* header checksum */
		memcpy(b + 12, f->sgid + 12, 4);
		memcpy(b + 16, f->dgid + 12, 4);
		udp = b + ROCE_IPV4_HDR_LEN;
	} else {
		if (udp_len > ROCE_IP_LEN_MAX)
			return 0;
		/* Version 6, then traffic class and flow label as ones. */
		b[0] = 0x6F;
		b[1] = b[2] = b[3] = 0xFF;
		roce_put16(b + 4, (uint16_t)udp_len);
		b[6] = ROCE_IP_PROTO_UDP;
		b[7] = 0xFF; /* hop limit */
		memcpy(b + 8, f->sgid, 16);
		memcpy(b + 24, f->dgid, 16);
		udp = b + ROCE_IPV6_HDR_LEN;
	}
	roce_put16(udp, f->sport);
	roce_put16(udp + 2, f->dport);
	roce_put16(udp + 4, (uint16_t)udp_len);
	udp[6] = udp[7] = 0xFF; /* UDP checksum */
	memcpy(udp + ROCE_UDP_HDR_LEN, bth, ROCE_BTH_LEN);
	udp[ROCE_UDP_HDR_LEN + 4] = 0xFF; /* BTH byte 4: FECN, BECN, resv6 */
	return (size_t)(udp - b) + ROCE_UDP_HDR_LEN + ROCE_BTH_LEN;
}

/* The ICRC of @roce[0..@len) (BTH up to the ICRC); false if no packet has that length. */
static bool icrc(const struct roce_ipudp *f, const uint8_t *roce, size_t len, uint32_t *crc)
{
	uint8_t b[PSEUDO_HDR_MAX + SHORT_REST];
	size_t n, rest;

	if (len < ROCE_BTH_LEN)
		return false;
	n = pseudo_hdr(b, f, roce, len);
	if (!n)
		return false;
	rest = len - ROCE_BTH_LEN;
	if (rest <= SHORT_REST) {
		memcpy(b + n, roce + ROCE_BTH_LEN, rest);
		*crc = crc32_update(CRC32_LRH_SEED, b, n + rest);
	} else {
		*crc = crc32_update(crc32_update(CRC32_LRH_SEED, b, n), roce + ROCE_BTH_LEN, rest);
	}
	return true;
}

/*
 * icrc() of a packet whose bytes [gap->off, gap->off + gap->len) are at gap->src (wire.h):
 * false also for a gap that is not after the BTH and within @len.
 */
static bool icrc_gap(const struct roce_ipudp *f, const uint8_t *roce, size_t len,
		     const struct roce_pkt_gap *gap, uint32_t *crc)
{
	uint8_t b[PSEUDO_HDR_MAX];
	size_t n, end;

	if (!gap->len)
		return icrc(f, roce, len, crc);
	end = (size_t)gap->off + gap->len;
	if (gap->off < ROCE_BTH_LEN || end > len)
		return false;
	n = pseudo_hdr(b, f, roce, len);
	if (!n)
		return false;
	*crc = crc32_update(CRC32_LRH_SEED, b, n);
	*crc = crc32_update(*crc, roce + ROCE_BTH_LEN, gap->off - ROCE_BTH_LEN);
	*crc = crc32_update(*crc, gap->src, gap->len);
	*crc = crc32_update(*crc, roce + end, len - end);
	return true;
}

uint32_t roce_icrc(const struct roce_ipudp *f, const uint8_t *roce, size_t len)
{
	uint32_t crc = 0;

	icrc(f, roce, len, &crc);
	return crc;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void roce_icrc_fill_gap(const struct roce_ipudp *f, uint8_t *roce, size_t len,
			const struct roce_pkt_gap *gap)
{
	uint32_t crc;

	if (len < ROCE_ICRC_LEN || !icrc_gap(f, roce, len - ROCE_ICRC_LEN, gap, &crc))
		return;
	/* Least-significant byte first (PROTOCOL.md §2.4). */
	for (size_t i = 0; i < ROCE_ICRC_LEN; i++)
		roce[len - ROCE_ICRC_LEN + i] = (uint8_t)(crc >> (8 * i));
}

void roce_icrc_fill(const struct roce_ipudp *f, uint8_t *roce, size_t len)
{
	static const struct roce_pkt_gap none;

	roce_icrc_fill_gap(f, roce, len, &none);
}

/*
 * Polynomials modulo the CRC-32 generator P, in the reflected form the CRC
 * register uses: bit 31 is the coefficient of x^0, bit 0 that of x^31.
 */
#define GF_POLY 0xEDB88320u /* P without its x^32 term */
#define GF_ONE  0x80000000u

/*
 * x^-(8 * 2^k) mod P for k = 0..15, enough for the byte counts of an IP
 * packet (below 2^16). x is a unit mod P (P has a constant term): x^-1 = (P + 1) / x
 * = 0xDB710641; entry 0 is its 8th power and each entry squares the one
 * before. The ID recovery tests in tests/test_icrc.c use every entry.
 */
static const uint32_t gf_x_inv_bytes_2k[16] = {
	0x6567CB95, 0xD7125358, 0x5B358FD3, 0x2E9BB40B, 0x12A59A49, 0x8DF9403D,
	0x5139DE12, 0xBA340226, 0x29C45641, 0x12FBC105, 0xECD30C55, 0x3755EBD8,
	0x24EE460C, 0x23783FCF, 0x479933FC, 0xA39442A5,
};

static uint32_t gf_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (; a; a <<= 1) {
		p ^= b & -(a >> 31);
		b = (b >> 1) ^ (GF_POLY & -(b & 1)); /* b *= x */
	}
	return p;
}

/* x^-(8 * @n) mod P for @n < 2^16 (higher bits are ignored): one product per bit of @n. */
static uint32_t gf_x_inv_bytes(uint16_t n)
{
	uint32_t r = GF_ONE;

	for (unsigned k = 0; n; k++, n >>= 1)
		if (n & 1)
			r = gf_mul(r, gf_x_inv_bytes_2k[k]);
	return r;
}

/*
 * The IPv4 ID change that turns a CRC value into another, if there is one.
 *
 * The CRC is affine: for pseudo-packets of equal length that differ by D,
 * the two CRC values differ by the raw CRC of D (zero initial register, no
 * final inversion), which is D(x) * x^32 mod P. Here D is the 16-bit ID
 * change d (first byte in the highest powers) followed by @tail bytes, so
 * the difference is d(x) * x^(8 * tail + 32) mod P: the 32x16 GF(2) system
 * "columns of single-bit ID flips times d = @diff" factors into that
 * multiplication, which is invertible (x is a unit mod P), and the
 * embedding of the 16 bits of d. So the system is solved exactly by
 * d(x) = @diff * x^-(8 * (tail + 4)): it is consistent iff d has degree
 * below 16, i.e. the register's low 16 bits (x^16..x^31) are zero. @tail
 * is below 2^16 - 4 for any packet the IP length fields allow.
 * Returns true and sets @d, or false if no ID change explains @diff.
 */
static bool id_change(uint32_t diff, size_t tail, uint16_t *d)
{
	uint32_t r = gf_mul(diff, gf_x_inv_bytes((uint16_t)(tail + 4)));

	if (r & 0xFFFFu)
		return false;
	/* Bit k of the first ID byte is x^(15-k), register bit 16+k; bit k of the
	 * second byte is x^(7-k), register bit 24+k. */
	*d = (uint16_t)(((r >> 16) & 0xFF) << 8 | r >> 24);
	return true;
}

enum roce_icrc_result roce_icrc_verify_gap(struct roce_ipudp *f, const uint8_t *roce, size_t len,
					   const struct roce_pkt_gap *gap)
{
	uint32_t crc, wire;
	uint16_t d;

	if (len < ROCE_ICRC_LEN || !icrc_gap(f, roce, len - ROCE_ICRC_LEN, gap, &crc))
		return ROCE_ICRC_BAD;
	len -= ROCE_ICRC_LEN;
	wire = get_le32(roce + len);
	if (crc == wire)
		return ROCE_ICRC_OK;
	if (!roce_ipudp_is_v4(f) ||
	    !id_change(crc ^ wire, IPV4_AFTER_ID + ROCE_UDP_HDR_LEN + len, &d))
		return ROCE_ICRC_BAD;
	f->ip_id ^= d;
	return ROCE_ICRC_OK_ID;
}

enum roce_icrc_result roce_icrc_verify(struct roce_ipudp *f, const uint8_t *roce, size_t len)
{
	static const struct roce_pkt_gap none;

	return roce_icrc_verify_gap(f, roce, len, &none);
}

const char *roce_icrc_backend(void)
{
	return CRC32_BACKEND;
}

void roce_icrc_prime(void)
{
	/* 300 bytes: a CM MAD's packet, long enough for ISA-L's widest (AVX-512) path. */
	static const uint8_t zeros[300];
	volatile uint32_t sink = crc32_update(0, zeros, sizeof(zeros));

	(void)sink;
}
