/* SPDX-License-Identifier: MIT */
/*
 * transport/wire: the opcode table, roce_decode() and roce_encode() against
 * the reference frames (PROTOCOL.md §2.5, Appendix A), a ConnectX-4 Lx CNP,
 * Linux rxe captures, synthetic packets of every header shape, and every
 * kind of malformed packet.
 *
 * Expected values are written here from PROTOCOL.md, never taken from the
 * code under test. Packets are decoded from exact-size heap copies, so an
 * ASan build catches any read past the end.
 */
#include <criterion/criterion.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/frames.h"
#include "tests/support/vectors.h"
#include "transport/wire.h"

/* What payload an opcode takes (PROTOCOL.md §1.7). */
enum pl { NONE, ANY, EIGHT };

/*
 * PROTOCOL.md §1.7 written out: every defined opcode, its name, BTH +
 * extension header bytes, payload and position in a message (First,
 * Middle, Last, Only; 0 for CNP). XRC requests carry a 4-byte XRCETH, XRC
 * responses are RC's; RD requests carry RDETH + DETH (12), RD responses
 * RDETH (4).
 */
static const struct op_row {
	uint8_t op;
	const char *name;
	uint8_t hdr_len;
	enum pl pl;
	char pos;
} op_rows[] = {
	{0x00, "RC_SEND_FIRST", 12, ANY, 'F'},
	{0x01, "RC_SEND_MIDDLE", 12, ANY, 'M'},
	{0x02, "RC_SEND_LAST", 12, ANY, 'L'},
	{0x03, "RC_SEND_LAST_WITH_IMMEDIATE", 16, ANY, 'L'},
	{0x04, "RC_SEND_ONLY", 12, ANY, 'O'},
	{0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", 16, ANY, 'O'},
	{0x06, "RC_RDMA_WRITE_FIRST", 28, ANY, 'F'},
	{0x07, "RC_RDMA_WRITE_MIDDLE", 12, ANY, 'M'},
	{0x08, "RC_RDMA_WRITE_LAST", 12, ANY, 'L'},
	{0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", 16, ANY, 'L'},
	{0x0A, "RC_RDMA_WRITE_ONLY", 28, ANY, 'O'},
	{0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, ANY, 'O'},
	{0x0C, "RC_RDMA_READ_REQUEST", 28, NONE, 'O'},
	{0x0D, "RC_RDMA_READ_RESPONSE_FIRST", 16, ANY, 'F'},
	{0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", 12, ANY, 'M'},
	{0x0F, "RC_RDMA_READ_RESPONSE_LAST", 16, ANY, 'L'},
	{0x10, "RC_RDMA_READ_RESPONSE_ONLY", 16, ANY, 'O'},
	{0x11, "RC_ACKNOWLEDGE", 16, NONE, 'O'},
	{0x12, "RC_ATOMIC_ACKNOWLEDGE", 24, NONE, 'O'},
	{0x13, "RC_COMPARE_SWAP", 40, NONE, 'O'},
	{0x14, "RC_FETCH_ADD", 40, NONE, 'O'},
	{0x16, "RC_SEND_LAST_WITH_INVALIDATE", 16, ANY, 'L'},
	{0x17, "RC_SEND_ONLY_WITH_INVALIDATE", 16, ANY, 'O'},
	{0x1C, "RC_FLUSH", 32, NONE, 'O'},
	{0x1D, "RC_ATOMIC_WRITE", 28, EIGHT, 'O'},

	{0x20, "UC_SEND_FIRST", 12, ANY, 'F'},
	{0x21, "UC_SEND_MIDDLE", 12, ANY, 'M'},
	{0x22, "UC_SEND_LAST", 12, ANY, 'L'},
	{0x23, "UC_SEND_LAST_WITH_IMMEDIATE", 16, ANY, 'L'},
	{0x24, "UC_SEND_ONLY", 12, ANY, 'O'},
	{0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", 16, ANY, 'O'},
	{0x26, "UC_RDMA_WRITE_FIRST", 28, ANY, 'F'},
	{0x27, "UC_RDMA_WRITE_MIDDLE", 12, ANY, 'M'},
	{0x28, "UC_RDMA_WRITE_LAST", 12, ANY, 'L'},
	{0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", 16, ANY, 'L'},
	{0x2A, "UC_RDMA_WRITE_ONLY", 28, ANY, 'O'},
	{0x2B, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, ANY, 'O'},

	{0x40, "RD_SEND_FIRST", 24, ANY, 'F'},
	{0x41, "RD_SEND_MIDDLE", 24, ANY, 'M'},
	{0x42, "RD_SEND_LAST", 24, ANY, 'L'},
	{0x43, "RD_SEND_LAST_WITH_IMMEDIATE", 28, ANY, 'L'},
	{0x44, "RD_SEND_ONLY", 24, ANY, 'O'},
	{0x45, "RD_SEND_ONLY_WITH_IMMEDIATE", 28, ANY, 'O'},
	{0x46, "RD_RDMA_WRITE_FIRST", 40, ANY, 'F'},
	{0x47, "RD_RDMA_WRITE_MIDDLE", 24, ANY, 'M'},
	{0x48, "RD_RDMA_WRITE_LAST", 24, ANY, 'L'},
	{0x49, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE", 28, ANY, 'L'},
	{0x4A, "RD_RDMA_WRITE_ONLY", 40, ANY, 'O'},
	{0x4B, "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 44, ANY, 'O'},
	{0x4C, "RD_RDMA_READ_REQUEST", 40, NONE, 'O'},
	{0x4D, "RD_RDMA_READ_RESPONSE_FIRST", 20, ANY, 'F'},
	{0x4E, "RD_RDMA_READ_RESPONSE_MIDDLE", 16, ANY, 'M'},
	{0x4F, "RD_RDMA_READ_RESPONSE_LAST", 20, ANY, 'L'},
	{0x50, "RD_RDMA_READ_RESPONSE_ONLY", 20, ANY, 'O'},
	{0x51, "RD_ACKNOWLEDGE", 20, NONE, 'O'},
	{0x52, "RD_ATOMIC_ACKNOWLEDGE", 28, NONE, 'O'},
	{0x53, "RD_COMPARE_SWAP", 52, NONE, 'O'},
	{0x54, "RD_FETCH_ADD", 52, NONE, 'O'},
	{0x55, "RD_RESYNC", 24, NONE, 'O'},

	{0x64, "UD_SEND_ONLY", 20, ANY, 'O'},
	{0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", 24, ANY, 'O'},

	{0x81, "CNP", 28, NONE, 0},

	{0xA0, "XRC_SEND_FIRST", 16, ANY, 'F'},
	{0xA1, "XRC_SEND_MIDDLE", 16, ANY, 'M'},
	{0xA2, "XRC_SEND_LAST", 16, ANY, 'L'},
	{0xA3, "XRC_SEND_LAST_WITH_IMMEDIATE", 20, ANY, 'L'},
	{0xA4, "XRC_SEND_ONLY", 16, ANY, 'O'},
	{0xA5, "XRC_SEND_ONLY_WITH_IMMEDIATE", 20, ANY, 'O'},
	{0xA6, "XRC_RDMA_WRITE_FIRST", 32, ANY, 'F'},
	{0xA7, "XRC_RDMA_WRITE_MIDDLE", 16, ANY, 'M'},
	{0xA8, "XRC_RDMA_WRITE_LAST", 16, ANY, 'L'},
	{0xA9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", 20, ANY, 'L'},
	{0xAA, "XRC_RDMA_WRITE_ONLY", 32, ANY, 'O'},
	{0xAB, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 36, ANY, 'O'},
	{0xAC, "XRC_RDMA_READ_REQUEST", 32, NONE, 'O'},
	{0xAD, "XRC_RDMA_READ_RESPONSE_FIRST", 16, ANY, 'F'},
	{0xAE, "XRC_RDMA_READ_RESPONSE_MIDDLE", 12, ANY, 'M'},
	{0xAF, "XRC_RDMA_READ_RESPONSE_LAST", 16, ANY, 'L'},
	{0xB0, "XRC_RDMA_READ_RESPONSE_ONLY", 16, ANY, 'O'},
	{0xB1, "XRC_ACKNOWLEDGE", 16, NONE, 'O'},
	{0xB2, "XRC_ATOMIC_ACKNOWLEDGE", 24, NONE, 'O'},
	{0xB3, "XRC_COMPARE_SWAP", 44, NONE, 'O'},
	{0xB4, "XRC_FETCH_ADD", 44, NONE, 'O'},
	{0xB6, "XRC_SEND_LAST_WITH_INVALIDATE", 20, ANY, 'L'},
	{0xB7, "XRC_SEND_ONLY_WITH_INVALIDATE", 20, ANY, 'O'},
};

#define N_ROWS (sizeof(op_rows) / sizeof(op_rows[0]))

static const struct op_row *find_row(uint8_t op)
{
	for (size_t i = 0; i < N_ROWS; i++)
		if (op_rows[i].op == op)
			return &op_rows[i];
	return NULL;
}

/* A copy of @len bytes in a heap block of exactly that size. */
static uint8_t *heap_copy(const uint8_t *p, size_t len)
{
	uint8_t *c = malloc(len);
	cr_assert(c || !len, "out of memory");
	if (len)
		memcpy(c, p, len);
	return c;
}

/*
 * The error roce_decode() must give for the first @n bytes of @p, from the
 * order documented in wire.h and this file's opcode table.
 */
static enum roce_decode_err expected_err(const uint8_t *p, size_t n)
{
	if (n < 16)
		return ROCE_ERR_TRUNCATED;
	const struct op_row *row = find_row(p[0]);
	if (!row)
		return ROCE_ERR_OPCODE;
	if (p[1] & 0x0F)
		return ROCE_ERR_TVER;
	if (n < row->hdr_len + 4u)
		return ROCE_ERR_HDR_LEN;
	if (n % 4)
		return ROCE_ERR_ALIGN;
	size_t area = n - row->hdr_len - 4, pad = (p[1] >> 4) & 3;
	if (pad > area || (pad && row->pl == NONE))
		return ROCE_ERR_PAD;
	size_t plen = area - pad;
	if ((row->pl == NONE && plen) || (row->pl == EIGHT && plen != 8) || plen > 4096)
		return ROCE_ERR_PAYLOAD_LEN;
	if ((p[2] << 8 | p[3]) % 0x8000 != 0x7FFF)
		return ROCE_ERR_PKEY;
	if (!(p[5] | p[6] | p[7]))
		return ROCE_ERR_DQPN;
	return ROCE_OK;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void assert_bytes_eq(const uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(got[i], want[i], "%s: byte %zu is %02x, expected %02x", what, i,
			     got[i], want[i]);
}

/*
 * Decode every prefix of @p (@len bytes) from an exact-size copy, and check
 * each against expected_err(); the whole packet must decode.
 */
static void check_truncations(const uint8_t *p, size_t len, const char *what)
{
	cr_assert_eq(expected_err(p, len), ROCE_OK, "%s: the reference packet itself is bad", what);
	for (size_t n = 0; n <= len; n++) {
		uint8_t *c = heap_copy(p, n);
		struct roce_pkt pkt;
		enum roce_decode_err err = roce_decode(c, n, &pkt), want = expected_err(p, n);
		cr_assert_eq(err, want, "%s cut to %zu bytes: %s, expected %s", what, n,
			     roce_decode_strerror(err), roce_decode_strerror(want));
		if (err == ROCE_OK) {
			const struct op_row *row = find_row(p[0]);
			cr_assert_eq(pkt.payload, c + row->hdr_len);
			cr_assert_eq(pkt.payload_len, n - row->hdr_len - 4 - ((p[1] >> 4) & 3));
			cr_assert_eq(pkt.icrc, le32(p + n - 4));
		}
		free(c);
	}
}

/*
 * Decode @p (an exact-size copy), encode the result again, and compare:
 * roce_encode() must give back every byte but the ICRC, which it zeroes.
 */
static void check_roundtrip(const uint8_t *p, size_t len, const char *what)
{
	uint8_t *c = heap_copy(p, len);
	struct roce_pkt pkt;
	enum roce_decode_err err = roce_decode(c, len, &pkt);
	cr_assert_eq(err, ROCE_OK, "%s: %s", what, roce_decode_strerror(err));
	cr_assert_eq(pkt.icrc, le32(p + len - 4), "%s: ICRC", what);

	static uint8_t out[ROCE_MAX_PMTU + 256];
	memset(out, 0xA5, sizeof(out));
	size_t n = roce_encode(out, sizeof(out), &pkt);
	cr_assert_eq(n, len, "%s: encoded %zu bytes, expected %zu", what, n, len);
	assert_bytes_eq(out, p, len - 4, what);
	static const uint8_t zero[4];
	assert_bytes_eq(out + len - 4, zero, 4, what);
	cr_assert_eq(out[len], 0xA5, "%s: wrote past the packet", what);

	/* The headers alone are the same bytes. */
	memset(out, 0xA5, sizeof(out));
	cr_assert_eq(roce_encode_hdrs(out, sizeof(out), &pkt), pkt.info->hdr_len);
	assert_bytes_eq(out, p, pkt.info->hdr_len, what);
	cr_assert_eq(out[pkt.info->hdr_len], 0xA5, "%s: headers overran", what);
	free(c);
}

/* The RoCEv2 part (BTH..ICRC) of an Ethernet/IP/UDP frame, which must be one. */
static const uint8_t *roce_of_frame(const uint8_t *f, size_t flen, size_t *len)
{
	const uint8_t *roce = test_roce_of_frame(f, flen, len);
	cr_assert_not_null(roce, "not a RoCEv2 frame (%zu bytes)", flen);
	return roce;
}

static struct test_vector vectors[32];

static int load_vectors(void)
{
	int n = test_vectors_load(UROCE_TEST_DATA "/vectors.json", vectors, 32);
	cr_assert_eq(n, 19, "vectors.json: %d frames", n);
	return n;
}

/* Expected fields of the 19 frames (PROTOCOL.md §2.5 and Appendix A). */
struct vec_expect {
	int frame;
	uint8_t opcode, pad;
	uint32_t dqpn, psn;
	bool ack_req;
	uint16_t hdrs;
	struct roce_deth deth;
	struct roce_aeth aeth;
	struct roce_reth reth;
	uint32_t payload_len;
	const char *payload; /* its first payload_cmp bytes */
	size_t payload_cmp;
	uint32_t crc; /* "CRC-32 value" of Appendix A */
};

#define CM(n, psn_, crc_)                                                                          \
	{                                                                                          \
		.frame = n, .opcode = 0x64, .dqpn = 1, .psn = psn_, .hdrs = ROCE_HDR_DETH,         \
		.deth = {0x80010000, 1}, .payload_len = 256, .payload = "\x01\x07\x02\x03",        \
		.payload_cmp = 4, .crc = crc_                                                      \
	}

static const struct vec_expect vec_expect[] = {
	CM(1, 0, 0x168980b8),
	CM(2, 0, 0xa7ac4e6b),
	CM(3, 1, 0xd65b256b),
	{.frame = 4,
	 .opcode = 0x04,
	 .pad = 1,
	 .dqpn = 0x12,
	 .psn = 0x123456,
	 .ack_req = true,
	 .payload_len = 11,
	 .payload = "Hello RoCE!",
	 .payload_cmp = 11,
	 .crc = 0xf2993686},
	{.frame = 5,
	 .opcode = 0x11,
	 .dqpn = 0x11,
	 .psn = 0x123456,
	 .hdrs = ROCE_HDR_AETH,
	 .aeth = {0x1F, 1},
	 .crc = 0x0c6d46c2},
	{.frame = 6,
	 .opcode = 0x0A,
	 .dqpn = 0x12,
	 .psn = 0x123457,
	 .ack_req = true,
	 .hdrs = ROCE_HDR_RETH,
	 .reth = {0x00007f0000001000, 0x1234, 16},
	 .payload_len = 16,
	 .payload = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
	 .payload_cmp = 16,
	 .crc = 0x30977bd4},
	{.frame = 7,
	 .opcode = 0x11,
	 .dqpn = 0x11,
	 .psn = 0x123457,
	 .hdrs = ROCE_HDR_AETH,
	 .aeth = {0x2E, 1},
	 .crc = 0x799af0b6},
	{.frame = 8,
	 .opcode = 0x11,
	 .dqpn = 0x11,
	 .psn = 0x123457,
	 .hdrs = ROCE_HDR_AETH,
	 .aeth = {0x60, 1},
	 .crc = 0x0251dfb8},
	{.frame = 9,
	 .opcode = 0x0C,
	 .dqpn = 0x12,
	 .psn = 0x123458,
	 .ack_req = true,
	 .hdrs = ROCE_HDR_RETH,
	 .reth = {0x00007f0000002000, 0x5678, 8},
	 .crc = 0x2be19a3c},
	{.frame = 10,
	 .opcode = 0x10,
	 .dqpn = 0x11,
	 .psn = 0x123458,
	 .hdrs = ROCE_HDR_AETH,
	 .aeth = {0x1F, 3},
	 .payload_len = 8,
	 .payload = "ABCDEFGH",
	 .payload_cmp = 8,
	 .crc = 0xd2d340ea},
	CM(11, 2, 0x7ee588f6),
	CM(12, 1, 0x641fdabf),
	CM(13, 2, 0x38727ea0),
	CM(14, 3, 0x4e6395f5),
	CM(15, 4, 0x48e6cb23),
	CM(16, 3, 0xf344f478),
	CM(17, 5, 0x1fdc8476),
	{.frame = 18,
	 .opcode = 0x64,
	 .dqpn = 0x13,
	 .psn = 0x100,
	 .hdrs = ROCE_HDR_DETH,
	 .deth = {0x01234567, 0x14},
	 .payload_len = 8,
	 .payload = "datagram",
	 .payload_cmp = 8,
	 .crc = 0xb8c5cd3c},
	{.frame = 19,
	 .opcode = 0x04,
	 .pad = 1,
	 .dqpn = 0x12,
	 .psn = 0x123456,
	 .ack_req = true,
	 .payload_len = 11,
	 .payload = "Hello RoCE!",
	 .payload_cmp = 11,
	 .crc = 0x10c369f8},
};

static void check_expect(const struct roce_pkt *pkt, const struct vec_expect *e)
{
	int f = e->frame;
	cr_assert_eq(pkt->bth.opcode, e->opcode, "frame %d", f);
	cr_assert_eq(pkt->info, roce_opcode(e->opcode), "frame %d", f);
	cr_assert(!pkt->bth.se && !pkt->bth.mig && !pkt->bth.fecn && !pkt->bth.becn, "frame %d", f);
	cr_assert_eq(pkt->bth.pad, e->pad, "frame %d", f);
	cr_assert_eq(pkt->bth.tver, 0, "frame %d", f);
	cr_assert_eq(pkt->bth.pkey, 0xFFFF, "frame %d", f);
	cr_assert_eq(pkt->bth.dqpn, e->dqpn, "frame %d", f);
	cr_assert_eq(pkt->bth.ack_req, e->ack_req, "frame %d", f);
	cr_assert_eq(pkt->bth.psn, e->psn, "frame %d: PSN %#x", f, pkt->bth.psn);
	cr_assert_eq(pkt->bth.resv6 | pkt->bth.resv7, 0, "frame %d", f);
	cr_assert_eq(pkt->hdrs, e->hdrs, "frame %d", f);
	cr_assert_eq(pkt->deth.qkey, e->deth.qkey, "frame %d", f);
	cr_assert_eq(pkt->deth.src_qpn, e->deth.src_qpn, "frame %d", f);
	cr_assert_eq(pkt->aeth.syndrome, e->aeth.syndrome, "frame %d", f);
	cr_assert_eq(pkt->aeth.msn, e->aeth.msn, "frame %d", f);
	cr_assert_eq(pkt->reth.va, e->reth.va, "frame %d: VA %#llx", f,
		     (unsigned long long)pkt->reth.va);
	cr_assert_eq(pkt->reth.rkey, e->reth.rkey, "frame %d", f);
	cr_assert_eq(pkt->reth.len, e->reth.len, "frame %d", f);
	cr_assert_eq(pkt->payload_len, e->payload_len, "frame %d", f);
	if (e->payload_cmp)
		assert_bytes_eq(pkt->payload, (const uint8_t *)e->payload, e->payload_cmp,
				"payload");
	cr_assert_eq(pkt->icrc, e->crc, "frame %d: ICRC %#x", f, pkt->icrc);
}

Test(wire, reference_frames_decode_to_their_fields)
{
	int n = load_vectors();
	cr_assert_eq((size_t)n, sizeof(vec_expect) / sizeof(vec_expect[0]));
	for (int i = 0; i < n; i++) {
		const struct test_vector *v = &vectors[i];
		const struct vec_expect *e = &vec_expect[i];
		cr_assert_eq(v->frame, e->frame);
		size_t len;
		const uint8_t *roce = roce_of_frame(v->bytes, v->len, &len);
		cr_assert_eq(roce + len, v->bytes + v->len, "frame %d: bytes after the UDP payload",
			     v->frame);
		cr_assert_eq(le32(v->icrc), e->crc, "frame %d: vectors.json ICRC", v->frame);

		uint8_t *c = heap_copy(roce, len);
		struct roce_pkt pkt;
		enum roce_decode_err err = roce_decode(c, len, &pkt);
		cr_assert_eq(err, ROCE_OK, "frame %d: %s", v->frame, roce_decode_strerror(err));
		check_expect(&pkt, e);
		cr_assert(roce_payload_fits_pmtu(&pkt, 1024), "frame %d", v->frame);
		free(c);
	}
}

Test(wire, reference_frames_reencode_bit_exact)
{
	int n = load_vectors();
	for (int i = 0; i < n; i++) {
		char what[32];
		size_t len;
		const uint8_t *roce = roce_of_frame(vectors[i].bytes, vectors[i].len, &len);
		snprintf(what, sizeof(what), "frame %d", vectors[i].frame);
		check_roundtrip(roce, len, what);
		assert_bytes_eq(roce + len - 4, vectors[i].icrc, 4, what);
	}
}

Test(wire, reference_frames_every_truncation)
{
	int n = load_vectors();
	for (int i = 0; i < n; i++) {
		char what[32];
		size_t len;
		const uint8_t *roce = roce_of_frame(vectors[i].bytes, vectors[i].len, &len);
		snprintf(what, sizeof(what), "frame %d", vectors[i].frame);
		check_truncations(roce, len, what);
	}
}

/* Call @fn on every frame of a capture; returns the frame count. */
static int for_each_frame(const char *path, void (*fn)(const uint8_t *, size_t, void *), void *arg)
{
	int n = test_for_each_frame(path, fn, arg);

	cr_assert_geq(n, 0, "%s: not a whole Ethernet capture (see stderr)", path);
	return n;
}

static void copy_roce(const uint8_t *frame, size_t flen, void *arg)
{
	struct test_vector *v = arg;
	size_t len;
	const uint8_t *roce = roce_of_frame(frame, flen, &len);
	cr_assert_leq(len, sizeof(v->bytes));
	memcpy(v->bytes, roce, len);
	v->len = len;
}

/* PROTOCOL.md §2.5 V0: the CNP a ConnectX-4 Lx sent (the only hardware frame). */
Test(wire, hardware_cnp)
{
	static struct test_vector cnp;
	int n = for_each_frame(UROCE_TEST_DATA "/cx4_cnp.pcap", copy_roce, &cnp);
	cr_assert_eq(n, 1);
	cr_assert_eq(cnp.len, 32u); /* BTH + 16 reserved + ICRC */

	uint8_t *c = heap_copy(cnp.bytes, cnp.len);
	struct roce_pkt pkt;
	cr_assert_eq(roce_decode(c, cnp.len, &pkt), ROCE_OK);
	cr_assert_eq(pkt.bth.opcode, 0x81);
	cr_assert_str_eq(pkt.info->name, "CNP");
	cr_assert_eq(pkt.hdrs, ROCE_HDR_CNP);
	cr_assert(pkt.bth.becn && !pkt.bth.fecn && !pkt.bth.ack_req && !pkt.bth.se);
	cr_assert_eq(pkt.bth.pkey, 0xFFFF);
	cr_assert_eq(pkt.bth.dqpn, 0x000118);
	cr_assert_eq(pkt.bth.psn, 0);
	cr_assert_eq(pkt.bth.pad, 0);
	cr_assert_eq(pkt.payload_len, 0u);
	cr_assert_eq(pkt.icrc, 0x2A00FD82u);
	free(c);

	check_roundtrip(cnp.bytes, cnp.len, "CNP");
	check_truncations(cnp.bytes, cnp.len, "CNP");
}

/* PROTOCOL.md §2.5 V1 and V2: scapy's UC SEND_ONLY over IPv4 and IPv6. */
static const char *const scapy_uc[2] = {
	"248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007c00012b7002caca22460ff"
	"ff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3",
	"248a07a8fa22248a07a8fa2286dd6e21face002c11ff2022000000000000000000000000102320230000000000"
	"000000000000001024c00012b7002ce7c52460ffff000000d300cf17104630818be28935d90e9a95505401be88"
	"5e5000003e5b743b",
};

Test(wire, scapy_uc_vectors)
{
	static const uint32_t crc[2] = {0xf353f378, 0x3b745b3e};
	for (int i = 0; i < 2; i++) {
		uint8_t frame[256];
		int flen = test_hex_decode(scapy_uc[i], strlen(scapy_uc[i]), frame, sizeof(frame));
		cr_assert_gt(flen, 0);
		size_t len;
		const uint8_t *roce = roce_of_frame(frame, (size_t)flen, &len);
		cr_assert_eq(len, 36u);

		uint8_t *c = heap_copy(roce, len);
		struct roce_pkt pkt;
		cr_assert_eq(roce_decode(c, len, &pkt), ROCE_OK);
		cr_assert_eq(pkt.bth.opcode, 0x24);
		cr_assert_str_eq(pkt.info->name, "UC_SEND_ONLY");
		cr_assert(pkt.bth.mig && !pkt.bth.se && !pkt.bth.ack_req);
		cr_assert_eq(pkt.bth.pad, 2);
		cr_assert_eq(pkt.bth.pkey, 0xFFFF);
		cr_assert_eq(pkt.bth.dqpn, 211u);
		cr_assert_eq(pkt.bth.psn, 13571856u);
		cr_assert_eq(pkt.payload_len, 18u);
		assert_bytes_eq(pkt.payload,
				(const uint8_t *)"\x46\x30\x81\x8b\xe2\x89\x35\xd9\x0e\x9a\x95\x50"
						 "\x54\x01\xbe\x88\x5e\x50",
				18, "V1/V2 payload");
		cr_assert_eq(pkt.icrc, crc[i]);
		free(c);

		check_roundtrip(roce, len, i ? "V2" : "V1");
		check_truncations(roce, len, i ? "V2" : "V1");
	}
}

/*
 * Synthetic packets of every header shape, with a distinct value in every
 * field (ICRC bytes arbitrary, reserved bytes zero so they re-encode).
 */
static const uint8_t xrc_write_imm[] = {
	0xab, 0x90, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42, 0x80, 0x00, 0x00, 0x07, /* BTH */
	0x00, 0x12, 0x34, 0x56,                                                 /* XRCETH */
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, /* RETH */
	0x00, 0x00, 0x00, 0x03,                                                 /* RETH length */
	0xde, 0xad, 0xbe, 0xef,                                                 /* ImmDt */
	0x01, 0x02, 0x03, 0x00,                                                 /* payload, pad */
	0x11, 0x22, 0x33, 0x44,                                                 /* ICRC */
};
static const uint8_t rd_cmp_swap[] = {
	0x53, 0x00, 0x7f, 0xff, 0x00, 0x00, 0x00, 0x05, 0x80, 0xab, 0xcd, 0xef, /* BTH */
	0x00, 0x00, 0x00, 0x09,                                                 /* RDETH */
	0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x0a,                         /* DETH */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x77, /* AtomicETH */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,                         /* swap data */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06,                         /* compare data */
	0x01, 0x02, 0x03, 0x04,                                                 /* ICRC */
};
static const uint8_t rd_atomic_ack[] = {
	0x52, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x05, /* BTH */
	0x00, 0x00, 0x00, 0x09,                                                 /* RDETH */
	0x00, 0x00, 0x00, 0x2a,                                                 /* AETH */
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,                         /* AtomicAckETH */
	0x00, 0x00, 0x00, 0x00,                                                 /* ICRC */
};
static const uint8_t rc_atomic_ack[] = {
	0x12, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x05, /* BTH */
	0x1f, 0x00, 0x00, 0x2b,                                                 /* AETH */
	0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,                         /* AtomicAckETH */
	0xff, 0xff, 0xff, 0xff,                                                 /* ICRC */
};
static const uint8_t rc_flush[] = {
	0x1c, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x00, 0x10, /* BTH */
	0x00, 0x00, 0x00, 0x21,                                                 /* FETH */
	0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x43, 0x21, /* RETH */
	0x00, 0x00, 0x01, 0x00,                                                 /* RETH length */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t rc_atomic_write[] = {
	0x1d, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x00, 0x11, /* BTH */
	0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x30, 0x08, 0x00, 0x00, 0x43, 0x21, /* RETH */
	0x00, 0x00, 0x00, 0x08,                                                 /* RETH length */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,                         /* payload */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t rc_send_inv[] = {
	0x17, 0x80, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x00, 0x12, /* BTH */
	0x00, 0x00, 0xab, 0xcd,                                                 /* IETH */
	0x61, 0x62, 0x63, 0x64,                                                 /* payload */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t ud_send_imm[] = {
	0x65, 0x20, 0xff, 0xff, 0x00, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, /* BTH */
	0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x00, 0x07,                         /* DETH */
	0x00, 0x00, 0x00, 0x2a,                                                 /* ImmDt */
	0x68, 0x69, 0x00, 0x00,                                                 /* payload, pad */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t rd_write_imm[] = {
	0x4b, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x00, 0x13, /* BTH */
	0x00, 0x00, 0x00, 0x09,                                                 /* RDETH */
	0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x0a,                         /* DETH */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x05, /* RETH */
	0x00, 0x00, 0x00, 0x04,                                                 /* RETH length */
	0x00, 0x00, 0x00, 0x63,                                                 /* ImmDt */
	0x61, 0x62, 0x63, 0x64,                                                 /* payload */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t rd_read_resp_middle[] = {
	0x4e, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x14, /* BTH */
	0x00, 0x00, 0x00, 0x09,                                                 /* RDETH */
	0x61, 0x62, 0x63, 0x64,                                                 /* payload */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t xrc_ack[] = {
	0xb1, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x15, /* BTH */
	0x61, 0x00, 0x00, 0x07,                                                 /* AETH */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};
static const uint8_t cnp_fecn[] = {
	0x81, 0x00, 0xff, 0xff, 0xc0, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x00, /* BTH */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                         /* reserved */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                         /* reserved */
	0x0a, 0x0b, 0x0c, 0x0d,                                                 /* ICRC */
};

static const struct {
	const char *name;
	const uint8_t *bytes;
	size_t len;
} shapes[] = {
	{"xrc_write_imm", xrc_write_imm, sizeof(xrc_write_imm)},
	{"rd_cmp_swap", rd_cmp_swap, sizeof(rd_cmp_swap)},
	{"rd_atomic_ack", rd_atomic_ack, sizeof(rd_atomic_ack)},
	{"rc_atomic_ack", rc_atomic_ack, sizeof(rc_atomic_ack)},
	{"rc_flush", rc_flush, sizeof(rc_flush)},
	{"rc_atomic_write", rc_atomic_write, sizeof(rc_atomic_write)},
	{"rc_send_inv", rc_send_inv, sizeof(rc_send_inv)},
	{"ud_send_imm", ud_send_imm, sizeof(ud_send_imm)},
	{"rd_write_imm", rd_write_imm, sizeof(rd_write_imm)},
	{"xrc_ack", xrc_ack, sizeof(xrc_ack)},
	{"rd_read_resp_middle", rd_read_resp_middle, sizeof(rd_read_resp_middle)},
	{"cnp_fecn", cnp_fecn, sizeof(cnp_fecn)},
};

static struct roce_pkt decode_ok(const uint8_t *p, size_t len, uint8_t **copy)
{
	struct roce_pkt pkt;
	*copy = heap_copy(p, len);
	enum roce_decode_err err = roce_decode(*copy, len, &pkt);
	cr_assert_eq(err, ROCE_OK, "opcode %#x: %s", p[0], roce_decode_strerror(err));
	return pkt;
}

Test(wire, header_shapes_fields)
{
	uint8_t *c;
	struct roce_pkt p = decode_ok(xrc_write_imm, sizeof(xrc_write_imm), &c);
	cr_assert_str_eq(p.info->name, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE");
	cr_assert_eq(p.hdrs, ROCE_HDR_XRCETH | ROCE_HDR_RETH | ROCE_HDR_IMMDT);
	cr_assert(p.bth.se && !p.bth.mig && p.bth.ack_req);
	cr_assert_eq(p.bth.pad, 1);
	cr_assert_eq(p.bth.dqpn, 0x42u);
	cr_assert_eq(p.bth.psn, 7u);
	cr_assert_eq(p.xrc_srqn, 0x123456u);
	cr_assert_eq(p.reth.va, 0x1122334455667788u);
	cr_assert_eq(p.reth.rkey, 0x99aabbccu);
	cr_assert_eq(p.reth.len, 3u);
	assert_bytes_eq((const uint8_t *)&p.imm_be, (const uint8_t *)"\xde\xad\xbe\xef", 4, "imm");
	cr_assert_eq(p.payload_len, 3u);
	assert_bytes_eq(p.payload, (const uint8_t *)"\x01\x02\x03", 3, "payload");
	cr_assert_eq(p.icrc, 0x44332211u);
	free(c);

	p = decode_ok(rd_cmp_swap, sizeof(rd_cmp_swap), &c);
	cr_assert_str_eq(p.info->name, "RD_COMPARE_SWAP");
	cr_assert_eq(p.hdrs, ROCE_HDR_RDETH | ROCE_HDR_DETH | ROCE_HDR_ATOMICETH);
	cr_assert_eq(p.bth.pkey, 0x7FFF);
	cr_assert_eq(p.bth.psn, 0xabcdefu);
	cr_assert_eq(p.rd_eecn, 9u);
	cr_assert_eq(p.deth.qkey, 0x01020304u);
	cr_assert_eq(p.deth.src_qpn, 0x0au);
	cr_assert_eq(p.atomic.va, 0x0000000100001000u);
	cr_assert_eq(p.atomic.rkey, 0x77u);
	cr_assert_eq(p.atomic.swap_add, 5u);
	cr_assert_eq(p.atomic.compare, 6u);
	cr_assert_eq(p.payload_len, 0u);
	free(c);

	p = decode_ok(rd_atomic_ack, sizeof(rd_atomic_ack), &c);
	cr_assert_eq(p.hdrs, ROCE_HDR_RDETH | ROCE_HDR_AETH | ROCE_HDR_ATOMICACKETH);
	cr_assert_eq(p.rd_eecn, 9u);
	cr_assert_eq(p.aeth.syndrome, 0);
	cr_assert_eq(p.aeth.msn, 0x2au);
	cr_assert_eq(p.atomic_orig, 0x0123456789abcdefu);
	free(c);

	p = decode_ok(rc_atomic_ack, sizeof(rc_atomic_ack), &c);
	cr_assert_eq(p.hdrs, ROCE_HDR_AETH | ROCE_HDR_ATOMICACKETH);
	cr_assert_eq(p.aeth.syndrome, 0x1f);
	cr_assert_eq(p.aeth.msn, 0x2bu);
	cr_assert_eq(p.atomic_orig, 0xfedcba9876543210u);
	cr_assert_eq(p.icrc, 0xffffffffu);
	free(c);

	p = decode_ok(rc_flush, sizeof(rc_flush), &c);
	cr_assert_str_eq(p.info->name, "RC_FLUSH");
	cr_assert_eq(p.hdrs, ROCE_HDR_FETH | ROCE_HDR_RETH);
	cr_assert_eq(p.feth, 0x21); /* selectivity 2, placement type 1 */
	cr_assert_eq(p.reth.va, 0x00007f0000003000u);
	cr_assert_eq(p.reth.rkey, 0x4321u);
	cr_assert_eq(p.reth.len, 0x100u);
	free(c);

	p = decode_ok(rc_atomic_write, sizeof(rc_atomic_write), &c);
	cr_assert_str_eq(p.info->name, "RC_ATOMIC_WRITE");
	cr_assert_eq(p.reth.va, 0x00007f0000003008u);
	cr_assert_eq(p.reth.len, 8u);
	cr_assert_eq(p.payload_len, 8u);
	assert_bytes_eq(p.payload, rc_atomic_write + 28, 8, "payload");
	free(c);

	p = decode_ok(rc_send_inv, sizeof(rc_send_inv), &c);
	cr_assert_eq(p.hdrs, ROCE_HDR_IETH);
	cr_assert(p.bth.se);
	cr_assert_eq(p.ieth_rkey, 0xabcdu);
	cr_assert_eq(p.payload_len, 4u);
	free(c);

	p = decode_ok(ud_send_imm, sizeof(ud_send_imm), &c);
	cr_assert_eq(p.hdrs, ROCE_HDR_DETH | ROCE_HDR_IMMDT);
	cr_assert_eq(p.bth.dqpn, ROCE_MCAST_QPN);
	cr_assert_eq(p.deth.qkey, 0x11111111u);
	cr_assert_eq(p.deth.src_qpn, 7u);
	assert_bytes_eq((const uint8_t *)&p.imm_be, (const uint8_t *)"\x00\x00\x00\x2a", 4, "imm");
	cr_assert_eq(p.bth.pad, 2);
	cr_assert_eq(p.payload_len, 2u);
	free(c);

	p = decode_ok(rd_write_imm, sizeof(rd_write_imm), &c);
	cr_assert_eq(p.hdrs, ROCE_HDR_RDETH | ROCE_HDR_DETH | ROCE_HDR_RETH | ROCE_HDR_IMMDT);
	cr_assert_eq(p.rd_eecn, 9u);
	cr_assert_eq(p.deth.qkey, 0x01020304u);
	cr_assert_eq(p.reth.va, 0x2000u);
	cr_assert_eq(p.reth.rkey, 5u);
	cr_assert_eq(p.reth.len, 4u);
	assert_bytes_eq((const uint8_t *)&p.imm_be, (const uint8_t *)"\x00\x00\x00\x63", 4, "imm");
	assert_bytes_eq(p.payload, (const uint8_t *)"abcd", 4, "payload");
	free(c);

	p = decode_ok(rd_read_resp_middle, sizeof(rd_read_resp_middle), &c);
	cr_assert_eq(p.hdrs, ROCE_HDR_RDETH);
	assert_bytes_eq(p.payload, (const uint8_t *)"abcd", 4, "payload");
	free(c);

	p = decode_ok(xrc_ack, sizeof(xrc_ack), &c);
	cr_assert_str_eq(p.info->name, "XRC_ACKNOWLEDGE");
	cr_assert_eq(p.hdrs, ROCE_HDR_AETH); /* XRC responses carry no XRCETH */
	cr_assert_eq(p.aeth.syndrome, 0x61);
	cr_assert_eq(roce_aeth_class(p.aeth.syndrome), ROCE_AETH_NAK);
	cr_assert_eq(roce_aeth_value(p.aeth.syndrome), ROCE_NAK_INVALID_REQ);
	free(c);

	p = decode_ok(cnp_fecn, sizeof(cnp_fecn), &c);
	cr_assert(p.bth.fecn && p.bth.becn);
	cr_assert_eq(p.bth.psn, 0u);
	free(c);
}

Test(wire, header_shapes_reencode_and_truncate)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		check_roundtrip(shapes[i].bytes, shapes[i].len, shapes[i].name);
		check_truncations(shapes[i].bytes, shapes[i].len, shapes[i].name);
	}
}

/*
 * A packet of opcode @op whose headers are this file's length for it,
 * followed by @area bytes of payload and pad, PadCnt @pad, P_Key 0xFFFF,
 * DestQP 0x12, and an ICRC. Returns its length.
 */
static size_t build(uint8_t *buf, size_t cap, uint8_t op, size_t area, unsigned pad)
{
	const struct op_row *row = find_row(op);
	size_t len = (row ? row->hdr_len : 12u) + area + 4;
	if (len > cap)
		abort(); /* a test table bug; abort() also tells the compiler len fits */
	memset(buf, 0, len);
	buf[0] = op;
	buf[1] = (uint8_t)(pad << 4);
	buf[2] = buf[3] = 0xFF;
	buf[7] = 0x12;
	for (size_t i = 12; i < len; i++)
		buf[i] = (uint8_t)(i * 7);
	return len;
}

static enum roce_decode_err decode_buf(const uint8_t *p, size_t len, struct roce_pkt *pkt)
{
	uint8_t *c = heap_copy(p, len);
	enum roce_decode_err err = roce_decode(c, len, pkt);
	free(c); /* pkt->payload must not be used after this */
	return err;
}

Test(wire, all_256_opcodes)
{
	static uint8_t buf[8192];
	for (unsigned op = 0; op < 256; op++) {
		const struct op_row *row = find_row((uint8_t)op);
		const struct roce_opcode_info *info = roce_opcode((uint8_t)op);
		struct roce_pkt pkt;
		cr_assert_not_null(info);
		if (!row) {
			cr_assert_null(info->name, "opcode %#x is %s", op, info->name);
			static const size_t lens[] = {16, 20, 64, 4096 + 64};
			for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
				size_t len = build(buf, sizeof(buf), (uint8_t)op, lens[i] - 16, 0);
				cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_OPCODE,
					     "opcode %#x", op);
			}
			continue;
		}
		cr_assert_str_eq(info->name, row->name, "opcode %#x", op);
		cr_assert_eq(info->hdr_len, row->hdr_len, "%s", row->name);
		cr_assert_eq(!!(info->flags & ROCE_OPF_PAYLOAD), row->pl != NONE, "%s", row->name);
		cr_assert_eq(!!(info->flags & ROCE_OPF_FIXED8), row->pl == EIGHT, "%s", row->name);
		uint16_t pos = info->flags &
			       (ROCE_OPF_FIRST | ROCE_OPF_MIDDLE | ROCE_OPF_LAST | ROCE_OPF_ONLY);
		uint16_t want = row->pos == 'F'   ? ROCE_OPF_FIRST
				: row->pos == 'M' ? ROCE_OPF_MIDDLE
				: row->pos == 'L' ? ROCE_OPF_LAST
				: row->pos == 'O' ? ROCE_OPF_ONLY
						  : 0;
		cr_assert_eq(pos, want, "%s: position flags %#x", row->name, info->flags);
		/* XRCETH on XRC requests; XRC responses (0xAD..0xB2) are laid out as RC's. */
		bool xrceth = (op & 0xE0) == 0xA0 && !(op >= 0xAD && op <= 0xB2);
		cr_assert_eq(!!(info->hdrs & ROCE_HDR_XRCETH), xrceth, "%s", row->name);

		/* The smallest packet, and one with payload (5 bytes + 3 pad) where allowed. */
		size_t plen = row->pl == EIGHT ? 8 : row->pl == ANY ? 5 : 0;
		unsigned pad = (unsigned)(-plen & 3);
		size_t len = build(buf, sizeof(buf), (uint8_t)op, plen + pad, pad);
		uint8_t *c = heap_copy(buf, len);
		enum roce_decode_err err = roce_decode(c, len, &pkt);
		cr_assert_eq(err, ROCE_OK, "%s: %s", row->name, roce_decode_strerror(err));
		cr_assert_eq(pkt.info, info);
		cr_assert_eq(pkt.hdrs, info->hdrs);
		cr_assert_eq(pkt.payload, c + row->hdr_len, "%s", row->name);
		cr_assert_eq(pkt.payload_len, plen, "%s", row->name);
		cr_assert_eq(pkt.bth.pad, pad);
		free(c);
		if (row->pl == ANY) {
			len = build(buf, sizeof(buf), (uint8_t)op, 0, 0);
			cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "%s, no payload",
				     row->name);
			cr_assert_eq(pkt.payload_len, 0u);
		}
	}
}

/* A datagram's packets back to back: opcodes at 0, seg, 2 * seg, ...; the last @tail long. */
static size_t datagram(uint8_t *buf, const uint8_t *ops, size_t n, uint16_t seg, size_t tail)
{
	memset(buf, 0, (n - 1) * seg + tail);
	for (size_t i = 0; i < n; i++)
		buf[i * seg] = ops[i];
	return (n - 1) * seg + tail;
}

Test(wire, datagram_continues_after_first_or_middle_packets)
{
	enum { SEG = 1040 };
	static uint8_t buf[8 * SEG];
	const uint8_t rc = ROCE_TR_RC, ud = ROCE_TR_UD;
	struct {
		uint8_t ops[4];
		size_t n, tail;
		bool continues;
	} c[] = {
		{{rc | ROCE_OP_SEND_ONLY}, 1, 20, false},
		{{rc | ROCE_OP_SEND_ONLY, rc | ROCE_OP_ACK}, 2, 20, false}, /* a ping-pong's hop */
		{{rc | ROCE_OP_SEND_FIRST}, 1, SEG, true},
		{{rc | ROCE_OP_SEND_FIRST, rc | ROCE_OP_SEND_MIDDLE}, 2, SEG, true},
		{{rc | ROCE_OP_WRITE_MIDDLE, rc | ROCE_OP_WRITE_LAST}, 2, 100, false},
		/* an ACK riding at the end of a train: the packet before it tells */
		{{rc | ROCE_OP_SEND_FIRST, rc | ROCE_OP_SEND_MIDDLE, rc | ROCE_OP_ACK},
		 3,
		 20,
		 true},
		{{rc | ROCE_OP_SEND_MIDDLE, rc | ROCE_OP_SEND_LAST, rc | ROCE_OP_ACK},
		 3,
		 20,
		 false},
		{{rc | ROCE_OP_READ_RESP_FIRST, rc | ROCE_OP_READ_RESP_MIDDLE}, 2, SEG, true},
		{{rc | ROCE_OP_READ_RESP_LAST}, 1, 300, false},
		{{ROCE_TR_UC | ROCE_OP_WRITE_FIRST}, 1, SEG, true},
		{{ud | ROCE_OP_SEND_ONLY, ud | ROCE_OP_SEND_ONLY}, 2, SEG, false},
		{{0xC0}, 1, 64, false}, /* not an opcode */
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t len = datagram(buf, c[i].ops, c[i].n, SEG, c[i].tail);

		cr_assert_eq(roce_datagram_continues(buf, len, c[i].n > 1 ? SEG : 0),
			     c[i].continues, "case %zu", i);
	}
	cr_assert_not(roce_datagram_continues(buf, 0, SEG), "an empty datagram");
}

/*
 * A datagram worth a steered receive next: several packets, the first a FIRST or MIDDLE of an
 * RC or UC WRITE or of READ responses, and the message going on.
 */
Test(wire, datagram_steerable_after_write_packets_that_go_on)
{
	enum { SEG = 1040 };
	static uint8_t buf[8 * SEG];
	const uint8_t rc = ROCE_TR_RC, uc = ROCE_TR_UC;
	struct {
		uint8_t ops[4];
		size_t n, tail;
		bool steerable;
	} c[] = {
		{{rc | ROCE_OP_WRITE_FIRST, rc | ROCE_OP_WRITE_MIDDLE}, 2, SEG, true},
		{{rc | ROCE_OP_WRITE_MIDDLE, rc | ROCE_OP_WRITE_MIDDLE}, 2, SEG, true},
		{{uc | ROCE_OP_WRITE_MIDDLE, uc | ROCE_OP_WRITE_MIDDLE}, 2, SEG, true},
		{{rc | ROCE_OP_WRITE_MIDDLE, rc | ROCE_OP_WRITE_MIDDLE, rc | ROCE_OP_ACK},
		 3,
		 20,
		 true},
		{{rc | ROCE_OP_WRITE_MIDDLE, rc | ROCE_OP_WRITE_LAST}, 2, SEG, false}, /* it ends */
		{{rc | ROCE_OP_WRITE_FIRST}, 1, SEG, false}, /* one packet */
		{{rc | ROCE_OP_SEND_MIDDLE, rc | ROCE_OP_SEND_MIDDLE}, 2, SEG, false},
		{{rc | ROCE_OP_READ_RESP_FIRST, rc | ROCE_OP_READ_RESP_MIDDLE}, 2, SEG, true},
		{{rc | ROCE_OP_READ_RESP_MIDDLE, rc | ROCE_OP_READ_RESP_LAST}, 2, SEG, false},
		{{ROCE_TR_XRC | ROCE_OP_WRITE_MIDDLE, ROCE_TR_XRC | ROCE_OP_WRITE_MIDDLE},
		 2,
		 SEG,
		 false},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t len = datagram(buf, c[i].ops, c[i].n, SEG, c[i].tail);

		cr_assert_eq(roce_datagram_steerable(buf, len, c[i].n > 1 ? SEG : 0),
			     c[i].steerable, "case %zu", i);
	}
}

/* roce_steer_fits: the length, opcode, pad, version, QP and PSN of packet k of the plan. */
Test(wire, steer_fits_packet_k_of_the_plan)
{
	const struct roce_steer plan = {.qpn = 0x123456,
					.psn = 0xFFFFFE,
					.pmtu = 1024,
					.hdr_len = ROCE_BTH_LEN,
					.opcode = ROCE_TR_RC | ROCE_OP_WRITE_MIDDLE,
					.count = 4};
	const size_t len = ROCE_BTH_LEN + 1024 + ROCE_ICRC_LEN;
	uint8_t bth[ROCE_BTH_LEN] = {
		ROCE_TR_RC | ROCE_OP_WRITE_MIDDLE, 0, 0xFF, 0xFF, 0, 0x12, 0x34, 0x56, 0, 0, 0, 1};

	cr_assert(roce_steer_fits(&plan, bth, len, 3), "PSN 1 is packet 3 (the PSN wraps)");
	cr_assert_not(roce_steer_fits(&plan, bth, len, 2));
	cr_assert_not(roce_steer_fits(&plan, bth, len - 4, 3), "a shorter packet");
	bth[1] = 0x10; /* PadCnt 1 */
	cr_assert_not(roce_steer_fits(&plan, bth, len, 3));
	bth[1] = 0x01; /* TVer 1 */
	cr_assert_not(roce_steer_fits(&plan, bth, len, 3));
	bth[1] = 0x80; /* SE: not the plan's business */
	cr_assert(roce_steer_fits(&plan, bth, len, 3));
	bth[7] = 0x57;
	cr_assert_not(roce_steer_fits(&plan, bth, len, 3), "another QP");
	bth[7] = 0x56;
	bth[0] = ROCE_TR_RC | ROCE_OP_WRITE_LAST;
	cr_assert_not(roce_steer_fits(&plan, bth, len, 3), "another opcode");
}

/* A train of packets @ops[0..n) with lengths @lens, each filled with its index + 1. */
static size_t train(uint8_t *buf, const uint8_t *ops, const uint16_t *lens, unsigned int n)
{
	size_t off = 0;

	for (unsigned int i = 0; i < n; off += lens[i], i++) {
		memset(buf + off, (int)(i + 1), lens[i]);
		buf[off] = ops[i];
	}
	return off;
}

Test(wire, train_ack_last_moves_an_ack_behind_requests_of_one_length)
{
	const uint8_t rc = ROCE_TR_RC, ack = ROCE_TR_RC | ROCE_OP_ACK;
	const uint8_t send = ROCE_TR_RC | ROCE_OP_SEND_ONLY,
		      write = ROCE_TR_RC | ROCE_OP_WRITE_ONLY;
	struct {
		uint8_t ops[4];
		uint16_t lens[4];
		unsigned int n;
		size_t max;
		bool moved;
	} c[] = {
		{{ack, send}, {20, 24}, 2, 16384, true}, /* a ping-pong's hop */
		{{ack, send}, {20, 20}, 2, 16384, true},
		{{ack, send, send, send}, {20, 84, 84, 84}, 4, 16384, true},
		{{ack, write, send}, {20, 48, 48}, 3, 16384, true},
		{{ack, send}, {20, 24}, 2, 23, false},              /* more than @max */
		{{ack, send, send}, {20, 84, 60}, 3, 16384, false}, /* two lengths */
		{{ack, send}, {24, 20}, 2, 16384, false},           /* the ACK longer */
		{{send, ack}, {24, 20}, 2, 16384, false},           /* no ACK ahead */
		{{ack}, {20}, 1, 16384, false},
		{{ack, ack}, {20, 20}, 2, 16384, false},
		{{ack, rc | ROCE_OP_READ_RESP_ONLY}, {20, 40}, 2, 16384, false}, /* a response */
		{{ROCE_TR_UC | ROCE_OP_ACK, send}, {20, 24}, 2, 16384, false},   /* not RC */
		{{ack, send}, {12, 24}, 2, 16384, false}, /* too short for an ACK */
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint8_t buf[512], want[512];
		uint16_t lens[4];
		size_t len = train(buf, c[i].ops, c[i].lens, c[i].n);

		memcpy(lens, c[i].lens, sizeof(lens));
		memcpy(want, buf, len);
		cr_assert_eq(roce_train_ack_last(buf, lens, c[i].n, c[i].max), c[i].moved,
			     "case %zu", i);
		if (!c[i].moved) {
			cr_assert_eq(memcmp(buf, want, len), 0, "case %zu: the train changed", i);
			cr_assert_eq(memcmp(lens, c[i].lens, sizeof(lens)), 0, "case %zu", i);
			continue;
		}
		/* The requests as they were, then the ACK. */
		cr_assert_eq(memcmp(buf, want + c[i].lens[0], len - c[i].lens[0]), 0, "case %zu",
			     i);
		cr_assert_eq(memcmp(buf + len - c[i].lens[0], want, c[i].lens[0]), 0, "case %zu",
			     i);
		for (unsigned int k = 0; k + 1 < c[i].n; k++)
			cr_assert_eq(lens[k], c[i].lens[k + 1], "case %zu", i);
		cr_assert_eq(lens[c[i].n - 1], c[i].lens[0], "case %zu", i);
	}
}

/* A NAK (or an RNR NAK) stays ahead: it may fail the QP before the requests behind it. */
Test(wire, train_ack_last_leaves_a_nak_ahead)
{
	const uint8_t ops[] = {ROCE_TR_RC | ROCE_OP_ACK, ROCE_TR_RC | ROCE_OP_SEND_ONLY};
	const uint8_t syndromes[] = {roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_INVALID_REQ),
				     roce_aeth_syndrome(ROCE_AETH_RNR_NAK, 5)};

	for (size_t i = 0; i < sizeof(syndromes); i++) {
		uint8_t buf[64];
		uint16_t lens[] = {20, 24};

		train(buf, ops, lens, 2);
		buf[ROCE_BTH_LEN] = syndromes[i];
		cr_assert_not(roce_train_ack_last(buf, lens, 2, 16384), "syndrome %#x",
			      syndromes[i]);
		cr_assert_eq(buf[0], ops[0]);
		cr_assert_eq(lens[0], 20);
	}
}

Test(wire, datagram_acks_first_takes_an_ack_behind_requests_first)
{
	enum { SEG = 84 };
	static uint8_t buf[8 * SEG];
	const uint8_t rc = ROCE_TR_RC, ack = ROCE_TR_RC | ROCE_OP_ACK;
	const uint8_t send = ROCE_TR_RC | ROCE_OP_SEND_ONLY;
	struct {
		uint8_t ops[4];
		size_t n, tail;
		bool first;
	} c[] = {
		{{send, ack}, 2, 20, true},
		{{send, rc | ROCE_OP_WRITE_MIDDLE, ack}, 3, 20, true},
		{{send, ack}, 2, 12, false}, /* too short for an ACK */
		{{send}, 1, 20, false},
		{{ack}, 1, 20, false},
		{{ack, send}, 2, 20, false},
		{{rc | ROCE_OP_READ_RESP_MIDDLE, ack}, 2, 20, false}, /* a response ahead */
		{{send, rc | ROCE_OP_ATOMIC_ACK}, 2, 20, false},
		{{send, send}, 2, 20, false},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t len = datagram(buf, c[i].ops, c[i].n, SEG, c[i].tail);

		cr_assert_eq(roce_datagram_acks_first(buf, len, c[i].n > 1 ? SEG : 0), c[i].first,
			     "case %zu", i);
	}
	/* A NAK behind requests is taken in its place: it may fail the QP. */
	{
		const uint8_t ops[] = {send, ack};
		size_t len = datagram(buf, ops, 2, SEG, 20);

		buf[SEG + ROCE_BTH_LEN] = roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_REMOTE_ACCESS);
		cr_assert_not(roce_datagram_acks_first(buf, len, SEG), "a NAK");
	}
}

/* What each packet calls for, as a put-off receive batch judges it (fabric/progress_rx.c). */
Test(wire, answer_of_a_packet)
{
	const uint8_t rc = ROCE_TR_RC, xrc = ROCE_TR_XRC;
	struct {
		uint8_t op, syndrome;
		enum roce_answer answer;
	} c[] = {
		{rc | ROCE_OP_ACK, 0, ROCE_ANSWER_NONE},
		{rc | ROCE_OP_ACK, roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_PSN_SEQ),
		 ROCE_ANSWER_NOW},
		{rc | ROCE_OP_ACK, roce_aeth_syndrome(ROCE_AETH_RNR_NAK, 1), ROCE_ANSWER_NOW},
		{rc | ROCE_OP_SEND_ONLY, 0, ROCE_ANSWER_ACK},
		{rc | ROCE_OP_SEND_FIRST, 0, ROCE_ANSWER_ACK},
		{rc | ROCE_OP_SEND_LAST_IMM, 0, ROCE_ANSWER_ACK},
		{rc | ROCE_OP_SEND_ONLY_INV, 0, ROCE_ANSWER_ACK},
		{xrc | ROCE_OP_SEND_ONLY, 0, ROCE_ANSWER_ACK},
		{rc | ROCE_OP_WRITE_ONLY, 0, ROCE_ANSWER_NOW},
		{rc | ROCE_OP_WRITE_ONLY_IMM, 0, ROCE_ANSWER_NOW},
		{rc | ROCE_OP_READ_REQUEST, 0, ROCE_ANSWER_NOW},
		{rc | ROCE_OP_FETCH_ADD, 0, ROCE_ANSWER_NOW},
		{rc | ROCE_OP_READ_RESP_ONLY, 0, ROCE_ANSWER_NOW},
		{rc | ROCE_OP_ATOMIC_ACK, 0, ROCE_ANSWER_NOW},
		{ROCE_TR_UD | ROCE_OP_SEND_ONLY, 0, ROCE_ANSWER_NOW},
		{ROCE_TR_UC | ROCE_OP_SEND_ONLY, 0, ROCE_ANSWER_NOW},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint8_t pkt[64] = {c[i].op};

		pkt[ROCE_BTH_LEN] = c[i].syndrome;
		cr_assert_eq(roce_answer_of(pkt, sizeof(pkt)), c[i].answer, "case %zu (%#x)", i,
			     c[i].op);
	}
	cr_assert_eq(roce_answer_of(NULL, 0), ROCE_ANSWER_NOW, "an empty packet");
}

/* The opcode table's hdr_len is the sum of its headers' sizes (PROTOCOL.md §1.5, §1.6). */
Test(wire, opcode_hdr_len_is_sum_of_headers)
{
	static const struct {
		uint16_t hdr;
		unsigned len;
	} sizes[] = {
		{ROCE_HDR_XRCETH, 4}, {ROCE_HDR_RDETH, 4},        {ROCE_HDR_DETH, 8},
		{ROCE_HDR_RETH, 16},  {ROCE_HDR_ATOMICETH, 28},   {ROCE_HDR_AETH, 4},
		{ROCE_HDR_IMMDT, 4},  {ROCE_HDR_ATOMICACKETH, 8}, {ROCE_HDR_IETH, 4},
		{ROCE_HDR_FETH, 4},   {ROCE_HDR_CNP, 16},
	};
	for (unsigned op = 0; op < 256; op++) {
		const struct roce_opcode_info *info = roce_opcode((uint8_t)op);
		if (!info->name)
			continue;
		unsigned sum = 12;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (info->hdrs & sizes[i].hdr)
				sum += sizes[i].len;
		cr_assert_eq(info->hdr_len, sum, "%s", info->name);
	}
}

Test(wire, err_truncated)
{
	struct roce_pkt pkt;
	cr_assert_eq(roce_decode(NULL, 0, &pkt), ROCE_ERR_TRUNCATED);
	uint8_t buf[16];
	build(buf, sizeof(buf), 0x04, 0, 0);
	for (size_t n = 0; n < 16; n++)
		cr_assert_eq(decode_buf(buf, n, &pkt), ROCE_ERR_TRUNCATED, "%zu bytes", n);
	cr_assert_eq(decode_buf(buf, 16, &pkt), ROCE_OK);
}

Test(wire, err_tver)
{
	uint8_t buf[64];
	struct roce_pkt pkt;
	size_t len = build(buf, sizeof(buf), 0x04, 4, 0);
	for (unsigned t = 1; t < 16; t++) {
		buf[1] = (uint8_t)t;
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_TVER, "TVer %u", t);
	}
	/* TVer is checked before the length against the opcode's headers... */
	build(buf, sizeof(buf), 0x0A, 0, 0);
	buf[1] = 1;
	cr_assert_eq(decode_buf(buf, 16, &pkt), ROCE_ERR_TVER);
	/* ...and after the opcode. */
	buf[0] = 0x15;
	cr_assert_eq(decode_buf(buf, 16, &pkt), ROCE_ERR_OPCODE);
}

Test(wire, err_hdr_len)
{
	uint8_t buf[64];
	struct roce_pkt pkt;
	/* RC COMPARE_SWAP: 40 bytes of headers + ICRC. */
	build(buf, sizeof(buf), 0x13, 0, 0);
	for (size_t n = 16; n < 44; n++)
		cr_assert_eq(decode_buf(buf, n, &pkt), ROCE_ERR_HDR_LEN, "%zu bytes", n);
	cr_assert_eq(decode_buf(buf, 44, &pkt), ROCE_OK);
}

Test(wire, err_align)
{
	uint8_t buf[64];
	struct roce_pkt pkt;
	size_t len = build(buf, sizeof(buf), 0x04, 8, 0);
	for (size_t n = len - 3; n < len; n++)
		cr_assert_eq(decode_buf(buf, n, &pkt), ROCE_ERR_ALIGN, "%zu bytes", n);
	/* Alignment is checked before the pad: PadCnt 3 on 17 bytes. */
	buf[1] = 0x30;
	cr_assert_eq(decode_buf(buf, 17, &pkt), ROCE_ERR_ALIGN);
}

Test(wire, err_pad_on_opcode_without_payload)
{
	static const uint8_t ops[] = {0x0C, 0x11, 0x12, 0x13, 0x14, 0x1C, 0x51, 0x55, 0x81, 0xB1};
	uint8_t buf[64];
	struct roce_pkt pkt;
	for (size_t i = 0; i < sizeof(ops); i++) {
		for (unsigned pad = 1; pad < 4; pad++) {
			size_t len = build(buf, sizeof(buf), ops[i], 0, pad);
			cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAD, "opcode %#x pad %u",
				     ops[i], pad);
			/* Even with room for it: the pad rule comes before the payload rule. */
			len = build(buf, sizeof(buf), ops[i], 4, pad);
			cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAD, "opcode %#x pad %u",
				     ops[i], pad);
		}
		size_t len = build(buf, sizeof(buf), ops[i], 0, 0);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "opcode %#x", ops[i]);
	}
}

Test(wire, err_pad_over_payload_area)
{
	uint8_t buf[64];
	struct roce_pkt pkt;
	for (unsigned pad = 1; pad < 4; pad++) {
		size_t len = build(buf, sizeof(buf), 0x04, 0, pad);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAD, "pad %u, no payload", pad);
		len = build(buf, sizeof(buf), 0x04, 4, pad);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "pad %u of 4", pad);
		cr_assert_eq(pkt.payload_len, 4 - pad);
	}
}

Test(wire, err_payload_on_opcode_without_payload)
{
	static const uint8_t ops[] = {0x0C, 0x11, 0x12, 0x13, 0x14, 0x1C, 0x52, 0x81, 0xAC};
	static uint8_t buf[4200];
	struct roce_pkt pkt;
	for (size_t i = 0; i < sizeof(ops); i++) {
		size_t len = build(buf, sizeof(buf), ops[i], 4, 0);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAYLOAD_LEN, "opcode %#x",
			     ops[i]);
		len = build(buf, sizeof(buf), ops[i], 4096, 0);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAYLOAD_LEN, "opcode %#x",
			     ops[i]);
	}
}

Test(wire, err_payload_over_4096)
{
	static const uint8_t ops[] = {0x04, 0x01, 0x0A, 0x10, 0x24, 0x64, 0x65, 0xA4};
	static uint8_t buf[4200];
	struct roce_pkt pkt;
	for (size_t i = 0; i < sizeof(ops); i++) {
		size_t len = build(buf, sizeof(buf), ops[i], 4096, 0);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "opcode %#x", ops[i]);
		cr_assert_eq(pkt.payload_len, 4096u);
		len = build(buf, sizeof(buf), ops[i], 4100, 0);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAYLOAD_LEN, "opcode %#x",
			     ops[i]);
		len = build(buf, sizeof(buf), ops[i], 4100, 3); /* 4097 + 3 pad */
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAYLOAD_LEN, "opcode %#x",
			     ops[i]);
		len = build(buf, sizeof(buf), ops[i], 4096, 3); /* 4093 + 3 pad */
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "opcode %#x", ops[i]);
		cr_assert_eq(pkt.payload_len, 4093u);
	}
}

Test(wire, err_atomic_write_not_8_bytes)
{
	static const struct {
		size_t area;
		unsigned pad;
	} bad[] = {{0, 0}, {4, 0}, {4, 1}, {8, 1}, {8, 3}, {12, 0}, {12, 3}, {16, 0}};
	uint8_t buf[64];
	struct roce_pkt pkt;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = build(buf, sizeof(buf), 0x1D, bad[i].area, bad[i].pad);
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PAYLOAD_LEN, "%zu bytes, pad %u",
			     bad[i].area, bad[i].pad);
	}
	size_t len = build(buf, sizeof(buf), 0x1D, 8, 0);
	cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK);
	cr_assert_eq(pkt.payload_len, 8u);
}

Test(wire, err_pkey)
{
	static const uint16_t bad[] = {0x0000, 0x8000, 0x7FFE, 0xFFFE, 0x0001, 0x8001, 0x3FFF};
	static const uint16_t good[] = {0x7FFF, 0xFFFF};
	uint8_t buf[64];
	struct roce_pkt pkt;
	size_t len = build(buf, sizeof(buf), 0x04, 4, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf[2] = (uint8_t)(bad[i] >> 8);
		buf[3] = (uint8_t)bad[i];
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PKEY, "P_Key %#x", bad[i]);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		buf[2] = (uint8_t)(good[i] >> 8);
		buf[3] = (uint8_t)good[i];
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "P_Key %#x", good[i]);
		cr_assert_eq(pkt.bth.pkey, good[i]);
	}
	/* The P_Key is checked before DestQP. */
	buf[3] = 0xFE;
	buf[7] = 0;
	cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_PKEY);
}

Test(wire, err_dqpn)
{
	uint8_t buf[64];
	struct roce_pkt pkt;
	size_t len = build(buf, sizeof(buf), 0x04, 4, 0);
	buf[7] = 0;
	cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_DQPN);
	buf[4] = 0xFF; /* FECN, BECN, resv6 are not part of DestQP */
	cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_ERR_DQPN);
	static const uint32_t good[] = {1, 0x100, 0x10000, 0xFFFFFF};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		buf[5] = (uint8_t)(good[i] >> 16);
		buf[6] = (uint8_t)(good[i] >> 8);
		buf[7] = (uint8_t)good[i];
		cr_assert_eq(decode_buf(buf, len, &pkt), ROCE_OK, "DestQP %#x", good[i]);
		cr_assert_eq(pkt.bth.dqpn, good[i]);
	}
}

Test(wire, strerror_names_every_error)
{
	static const char *const want[ROCE_ERR__COUNT] = {
		"ok",        "truncated", "bad-opcode",      "bad-tver", "short-headers",
		"unaligned", "bad-pad",   "bad-payload-len", "bad-pkey", "bad-dqpn",
	};
	for (int e = 0; e < ROCE_ERR__COUNT; e++)
		cr_assert_str_eq(roce_decode_strerror((enum roce_decode_err)e), want[e]);
	cr_assert_str_eq(roce_decode_strerror(ROCE_ERR__COUNT), "unknown");
	cr_assert_str_eq(roce_decode_strerror((enum roce_decode_err) - 1), "unknown");
}

/* PROTOCOL.md §1.8: FIRST/MIDDLE exactly PMTU, LAST 1..PMTU, ONLY 0..PMTU. */
Test(wire, payload_fits_pmtu)
{
	static const uint32_t mtus[] = {256, 512, 1024, 2048, 4096};
	static const struct {
		uint8_t op;
		char pos;
	} ops[] = {{0x00, 'F'}, {0x01, 'M'}, {0x02, 'L'}, {0x04, 'O'}, {0x06, 'F'},
		   {0x07, 'M'}, {0x09, 'L'}, {0x0D, 'F'}, {0x0E, 'M'}, {0x0F, 'L'},
		   {0x10, 'O'}, {0x24, 'O'}, {0x64, 'O'}, {0xA1, 'M'}, {0xB6, 'L'}};
	struct roce_pkt pkt = {0};
	for (size_t m = 0; m < sizeof(mtus) / sizeof(mtus[0]); m++) {
		uint32_t mtu = mtus[m];
		const uint32_t lens[] = {0, 1, 4, mtu - 1, mtu, mtu + 1, 2 * mtu};
		for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
			pkt.bth.opcode = ops[o].op;
			pkt.info = roce_opcode(ops[o].op);
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
				uint32_t len = lens[l];
				bool want = ops[o].pos == 'F' || ops[o].pos == 'M' ? len == mtu
					    : ops[o].pos == 'L' ? len >= 1 && len <= mtu
								: len <= mtu;
				pkt.payload_len = len;
				cr_assert_eq(roce_payload_fits_pmtu(&pkt, mtu), want,
					     "opcode %#x, %u bytes, PMTU %u", ops[o].op, len, mtu);
			}
		}
		/* Opcodes without payload fit with none. */
		pkt.bth.opcode = 0x11;
		pkt.payload_len = 0;
		cr_assert(roce_payload_fits_pmtu(&pkt, mtu));
		pkt.payload_len = 4;
		cr_assert_not(roce_payload_fits_pmtu(&pkt, mtu));
	}
	/* Not an IB MTU, or not an opcode. */
	pkt.bth.opcode = 0x04;
	pkt.payload_len = 100;
	static const uint32_t bad_mtus[] = {0, 128, 1000, 1500, 8192, 0xFFFFFFFF};
	for (size_t i = 0; i < sizeof(bad_mtus) / sizeof(bad_mtus[0]); i++)
		cr_assert_not(roce_payload_fits_pmtu(&pkt, bad_mtus[i]), "PMTU %u", bad_mtus[i]);
	pkt.bth.opcode = 0x15;
	pkt.payload_len = 0;
	cr_assert_not(roce_payload_fits_pmtu(&pkt, 1024));
}

/* PROTOCOL.md §3.1: 24-bit PSNs compared by the sign of their difference. */
Test(wire, psn_arithmetic_wraps)
{
	cr_assert_eq(roce_psn_add(0xFFFFFF, 1), 0u);
	cr_assert_eq(roce_psn_add(0xFFFFF0, 0x20), 0x10u);
	cr_assert_eq(roce_psn_add(5, 0), 5u);
	cr_assert_eq(roce_psn_add(0x123456, 0x1000000), 0x123456u);
	cr_assert_eq(roce_psn_cmp(5, 5), 0);
	cr_assert_gt(roce_psn_cmp(6, 5), 0);
	cr_assert_lt(roce_psn_cmp(5, 6), 0);
	cr_assert_gt(roce_psn_cmp(0, 0xFFFFFF), 0); /* 0 follows 0xFFFFFF */
	cr_assert_lt(roce_psn_cmp(0xFFFFFF, 0), 0);
	cr_assert_gt(roce_psn_cmp(0x10, 0xFFFFF0), 0);
	cr_assert_gt(roce_psn_cmp(0x7FFFFF, 0), 0); /* 2^23 - 1 ahead: after */
	cr_assert_lt(roce_psn_cmp(0, 0x7FFFFF), 0);
	cr_assert_lt(roce_psn_cmp(0x800001, 0), 0); /* 2^23 + 1 ahead: before, wrapped */
	cr_assert_gt(roce_psn_cmp(0x100000, 0x900001), 0);
	/* Exactly 2^23 apart, each is "before" the other, as in rxe's psn_compare(). */
	cr_assert_lt(roce_psn_cmp(0x100000, 0x900000), 0);
	cr_assert_lt(roce_psn_cmp(0x900000, 0x100000), 0);
	for (uint32_t a = 0; a < 0x1000000; a += 0x3FFFF) {
		cr_assert_gt(roce_psn_cmp(roce_psn_add(a, 1), a), 0, "PSN %#x", a);
		cr_assert_lt(roce_psn_cmp(a, roce_psn_add(a, 0x7FFFFF)), 0, "PSN %#x", a);
	}
}

Test(wire, aeth_syndrome_helpers)
{
	cr_assert_eq(roce_aeth_class(0x1F), ROCE_AETH_ACK);
	cr_assert_eq(roce_aeth_value(0x1F), ROCE_AETH_CREDIT_INVALID);
	cr_assert_eq(roce_aeth_class(0x2E), ROCE_AETH_RNR_NAK);
	cr_assert_eq(roce_aeth_value(0x2E), 14);
	cr_assert_eq(roce_aeth_class(0x60), ROCE_AETH_NAK);
	cr_assert_eq(roce_aeth_value(0x60), ROCE_NAK_PSN_SEQ);
	cr_assert_eq(roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_REMOTE_ACCESS), 0x62);
	cr_assert_eq(roce_aeth_syndrome(ROCE_AETH_RNR_NAK, 14), 0x2E);
	cr_assert_eq(roce_aeth_syndrome(ROCE_AETH_ACK, 0xFF), 0x1F);
}

static void fill(uint8_t *buf, size_t len)
{
	memset(buf, 0xA5, len);
}

static bool untouched(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != 0xA5)
			return false;
	return true;
}

Test(wire, encode_pad_and_icrc)
{
	static const uint8_t payload[7] = "payload";
	struct roce_pkt pkt = {.bth = {.opcode = 0x04, .pkey = 0xFFFF, .dqpn = 0x12, .psn = 9},
			       .payload = payload};
	uint8_t buf[64];
	for (uint32_t plen = 0; plen <= 7; plen++) {
		pkt.payload_len = plen;
		pkt.bth.pad = 3; /* ignored: PadCnt follows payload_len */
		unsigned pad = (4 - plen % 4) % 4;
		fill(buf, sizeof(buf));
		size_t n = roce_encode(buf, sizeof(buf), &pkt);
		cr_assert_eq(n, 12 + plen + pad + 4, "payload %u", plen);
		cr_assert_eq((buf[1] >> 4) & 3, pad, "payload %u", plen);
		assert_bytes_eq(buf + 12, payload, plen, "payload");
		for (size_t i = 12 + plen; i < n; i++)
			cr_assert_eq(buf[i], 0, "payload %u: pad/ICRC byte %zu", plen, i);
		cr_assert(untouched(buf + n, sizeof(buf) - n));
		struct roce_pkt back;
		cr_assert_eq(roce_decode(buf, n, &back), ROCE_OK);
		cr_assert_eq(back.payload_len, plen);
		cr_assert_eq(back.bth.pad, pad);
	}
}

Test(wire, encode_refuses)
{
	uint8_t buf[128];
	struct roce_pkt pkt = {.bth = {.opcode = 0x0A, .pkey = 0xFFFF, .dqpn = 0x12},
			       .payload = (const uint8_t *)"0123456789",
			       .payload_len = 10};
	/* Too small: exact sizes work, one byte less writes nothing. */
	fill(buf, sizeof(buf));
	cr_assert_eq(roce_encode_hdrs(buf, 27, &pkt), 0u);
	cr_assert_eq(roce_encode(buf, 28 + 12 + 4 - 1, &pkt), 0u);
	cr_assert(untouched(buf, sizeof(buf)));
	cr_assert_eq(roce_encode_hdrs(buf, 28, &pkt), 28u);
	cr_assert_eq(roce_encode(buf, 28 + 12 + 4, &pkt), 44u);

	/* Undefined opcodes. */
	static const uint8_t undefined[] = {0x15, 0x18, 0x1E, 0x2C, 0x56,
					    0x60, 0x80, 0xB5, 0xC0, 0xFF};
	for (size_t i = 0; i < sizeof(undefined); i++) {
		pkt.bth.opcode = undefined[i];
		fill(buf, sizeof(buf));
		cr_assert_eq(roce_encode_hdrs(buf, sizeof(buf), &pkt), 0u, "%#x", undefined[i]);
		cr_assert_eq(roce_encode(buf, sizeof(buf), &pkt), 0u, "%#x", undefined[i]);
		cr_assert(untouched(buf, sizeof(buf)));
	}

	/* Payload lengths the decoder would refuse. */
	pkt.bth.opcode = 0x11; /* ACK */
	pkt.payload_len = 4;
	cr_assert_eq(roce_encode_hdrs(buf, sizeof(buf), &pkt), 0u);
	cr_assert_eq(roce_encode(buf, sizeof(buf), &pkt), 0u);
	pkt.bth.opcode = 0x1D; /* ATOMIC_WRITE */
	cr_assert_eq(roce_encode(buf, sizeof(buf), &pkt), 0u);
	pkt.payload_len = 8;
	cr_assert_eq(roce_encode(buf, sizeof(buf), &pkt), 40u);
	static uint8_t big[4200];
	pkt.bth.opcode = 0x04;
	pkt.payload = big;
	pkt.payload_len = 4097;
	cr_assert_eq(roce_encode(big, sizeof(big), &pkt), 0u);
	pkt.payload_len = 4096;
	cr_assert_eq(roce_encode_hdrs(buf, sizeof(buf), &pkt), 12u);
}

Test(wire, encode_cuts_fields_to_width)
{
	struct roce_pkt pkt = {
		.bth = {.opcode = 0x11,
			.pkey = 0xFFFF,
			.dqpn = 0xAB123456,
			.psn = 0xFF654321,
			.tver = 0x13,
			.resv6 = 0xFF,
			.resv7 = 0xFF,
			.fecn = true},
		.aeth = {.syndrome = 0x1F, .msn = 0x12345678},
		.xrc_srqn = 0xFFFFFFFF, /* the opcode carries no XRCETH: not written */
	};
	uint8_t buf[64];
	cr_assert_eq(roce_encode(buf, sizeof(buf), &pkt), 20u);
	static const uint8_t want[16] = {0x11, 0x03, 0xFF, 0xFF, 0xBF, 0x12, 0x34, 0x56,
					 0x7F, 0x65, 0x43, 0x21, 0x1F, 0x34, 0x56, 0x78};
	assert_bytes_eq(buf, want, 16, "ACK");
}

Test(wire, encode_in_place)
{
	/* Decode a packet, then encode it back into the same buffer. */
	int n = load_vectors();
	for (int i = 0; i < n; i++) {
		size_t len;
		const uint8_t *roce = roce_of_frame(vectors[i].bytes, vectors[i].len, &len);
		uint8_t *c = heap_copy(roce, len);
		struct roce_pkt pkt;
		cr_assert_eq(roce_decode(c, len, &pkt), ROCE_OK);
		cr_assert_eq(roce_encode(c, len, &pkt), len);
		assert_bytes_eq(c, roce, len - 4, "in place");
		free(c);
	}
}

/*
 * Linux rxe captures (tests/vectors/kernel-rxe, path MTU 1024): every frame
 * decodes, fits the path MTU and re-encodes bit-exact; the opcode counts
 * are what tshark 4.0.17 reports for the same files.
 */
struct capture_stats {
	unsigned count[256];
};

static void check_kernel_frame(const uint8_t *frame, size_t flen, void *arg)
{
	struct capture_stats *st = arg;
	size_t len;
	const uint8_t *roce = roce_of_frame(frame, flen, &len);
	uint8_t *c = heap_copy(roce, len);
	struct roce_pkt pkt;
	enum roce_decode_err err = roce_decode(c, len, &pkt);
	cr_assert_eq(err, ROCE_OK, "opcode %#x: %s", roce[0], roce_decode_strerror(err));
	cr_assert(roce_payload_fits_pmtu(&pkt, 1024), "%s with %u bytes", pkt.info->name,
		  pkt.payload_len);
	free(c);
	check_roundtrip(roce, len, "kernel rxe frame");
	st->count[roce[0]]++;
}

Test(wire, kernel_rxe_captures)
{
	static const struct {
		const char *file;
		int frames;
		unsigned op[8][2]; /* opcode, count */
	} caps[] = {
		{"rc.pcap", 300, {{0x00, 60}, {0x01, 120}, {0x02, 60}, {0x11, 60}}},
		{"rping.pcap",
		 145,
		 {{0x64, 5},
		  {0x0C, 10},
		  {0x0D, 10},
		  {0x0F, 10},
		  {0x11, 50},
		  {0x04, 40},
		  {0x06, 10},
		  {0x08, 10}}},
		{"ucma.pcap", 42, {{0x64, 10}, {0x11, 16}, {0x04, 16}}},
		{"udaddy.pcap", 10, {{0x64, 2}, {0x65, 8}}},
		{"wsend.pcap", 600, {{0x11, 9}, {0x06, 10}, {0x07, 572}, {0x08, 9}}},
	};
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/kernel-rxe/%s", UROCE_TEST_DATA, caps[i].file);
		static struct capture_stats st;
		memset(&st, 0, sizeof(st));
		int n = for_each_frame(path, check_kernel_frame, &st);
		cr_assert_eq(n, caps[i].frames, "%s: %d frames", caps[i].file, n);
		unsigned total = 0;
		for (size_t k = 0; k < 8 && caps[i].op[k][1]; k++) {
			cr_assert_eq(st.count[caps[i].op[k][0]], caps[i].op[k][1], "%s: opcode %#x",
				     caps[i].file, caps[i].op[k][0]);
			total += caps[i].op[k][1];
		}
		cr_assert_eq(total, (unsigned)n, "%s: opcodes not in the table", caps[i].file);
	}
}
