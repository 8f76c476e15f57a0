/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 transport headers: the opcode table, the decoder that validates a
 * received packet, and the encoder (PROTOCOL.md §1.5-§1.10).
 */
#include "transport/wire.h"

#include <string.h>

/* BTH + the extension headers in @h (enum roce_hdr), as a constant expression. */
#define HAS(h, hdr, len) ((hdr) & (h) ? (len) : 0)
#define HDRS_LEN(h)                                                                                \
	(ROCE_BTH_LEN + HAS(h, ROCE_HDR_XRCETH, ROCE_XRCETH_LEN) +                                 \
	 HAS(h, ROCE_HDR_RDETH, ROCE_RDETH_LEN) + HAS(h, ROCE_HDR_DETH, ROCE_DETH_LEN) +           \
	 HAS(h, ROCE_HDR_FETH, ROCE_FETH_LEN) + HAS(h, ROCE_HDR_RETH, ROCE_RETH_LEN) +             \
	 HAS(h, ROCE_HDR_ATOMICETH, ROCE_ATOMICETH_LEN) + HAS(h, ROCE_HDR_AETH, ROCE_AETH_LEN) +   \
	 HAS(h, ROCE_HDR_ATOMICACKETH, ROCE_ATOMICACKETH_LEN) +                                    \
	 HAS(h, ROCE_HDR_IMMDT, ROCE_IMMDT_LEN) + HAS(h, ROCE_HDR_IETH, ROCE_IETH_LEN) +           \
	 HAS(h, ROCE_HDR_CNP, ROCE_CNP_RSVD_LEN))

#define OP(code, nm, h, f)                                                                         \
	[code] = {.name = (nm), .hdrs = (h), .flags = (f), .hdr_len = HDRS_LEN(h)}

#define REQ_SEND  (ROCE_OPF_REQUEST | ROCE_OPF_SEND | ROCE_OPF_PAYLOAD)
#define REQ_WRITE (ROCE_OPF_REQUEST | ROCE_OPF_WRITE | ROCE_OPF_PAYLOAD)
#define RESP_READ (ROCE_OPF_RESPONSE | ROCE_OPF_READ | ROCE_OPF_PAYLOAD)
#define IMM       ROCE_OPF_IMM
#define FIRST     ROCE_OPF_FIRST
#define MIDDLE    ROCE_OPF_MIDDLE
#define LAST      ROCE_OPF_LAST
#define ONLY      ROCE_OPF_ONLY

/*
 * The operations that RC, UC, RD and XRC share, SEND and RDMA WRITE
 * (0x00..0x0B). @req: the headers every request of the transport carries
 * ahead of the operation's own (RD: RDETH, DETH; XRC: XRCETH).
 */
#define SEND_WRITE_OPS(tr, pfx, req)                                                               \
	OP((tr) | ROCE_OP_SEND_FIRST, pfx "SEND_FIRST", (req), REQ_SEND | FIRST),                  \
		OP((tr) | ROCE_OP_SEND_MIDDLE, pfx "SEND_MIDDLE", (req), REQ_SEND | MIDDLE),       \
		OP((tr) | ROCE_OP_SEND_LAST, pfx "SEND_LAST", (req), REQ_SEND | LAST),             \
		OP((tr) | ROCE_OP_SEND_LAST_IMM, pfx "SEND_LAST_WITH_IMMEDIATE",                   \
		   (req) | ROCE_HDR_IMMDT, REQ_SEND | LAST | IMM),                                 \
		OP((tr) | ROCE_OP_SEND_ONLY, pfx "SEND_ONLY", (req), REQ_SEND | ONLY),             \
		OP((tr) | ROCE_OP_SEND_ONLY_IMM, pfx "SEND_ONLY_WITH_IMMEDIATE",                   \
		   (req) | ROCE_HDR_IMMDT, REQ_SEND | ONLY | IMM),                                 \
		OP((tr) | ROCE_OP_WRITE_FIRST, pfx "RDMA_WRITE_FIRST", (req) | ROCE_HDR_RETH,      \
		   REQ_WRITE | FIRST),                                                             \
		OP((tr) | ROCE_OP_WRITE_MIDDLE, pfx "RDMA_WRITE_MIDDLE", (req),                    \
		   REQ_WRITE | MIDDLE),                                                            \
		OP((tr) | ROCE_OP_WRITE_LAST, pfx "RDMA_WRITE_LAST", (req), REQ_WRITE | LAST),     \
		OP((tr) | ROCE_OP_WRITE_LAST_IMM, pfx "RDMA_WRITE_LAST_WITH_IMMEDIATE",            \
		   (req) | ROCE_HDR_IMMDT, REQ_WRITE | LAST | IMM),                                \
		OP((tr) | ROCE_OP_WRITE_ONLY, pfx "RDMA_WRITE_ONLY", (req) | ROCE_HDR_RETH,        \
		   REQ_WRITE | ONLY),                                                              \
		OP((tr) | ROCE_OP_WRITE_ONLY_IMM, pfx "RDMA_WRITE_ONLY_WITH_IMMEDIATE",            \
		   (req) | ROCE_HDR_RETH | ROCE_HDR_IMMDT, REQ_WRITE | ONLY | IMM)

/*
 * RDMA READ, atomics and acknowledgements (0x0C..0x14), shared by RC, RD
 * and XRC. @resp: the headers every response carries ahead of the
 * operation's own (RD: RDETH; XRC responses have none, as RC's).
 */
#define READ_ATOMIC_OPS(tr, pfx, req, resp)                                                        \
	OP((tr) | ROCE_OP_READ_REQUEST, pfx "RDMA_READ_REQUEST", (req) | ROCE_HDR_RETH,            \
	   ROCE_OPF_REQUEST | ROCE_OPF_READ | ONLY),                                               \
		OP((tr) | ROCE_OP_READ_RESP_FIRST, pfx "RDMA_READ_RESPONSE_FIRST",                 \
		   (resp) | ROCE_HDR_AETH, RESP_READ | FIRST),                                     \
		OP((tr) | ROCE_OP_READ_RESP_MIDDLE, pfx "RDMA_READ_RESPONSE_MIDDLE", (resp),       \
		   RESP_READ | MIDDLE),                                                            \
		OP((tr) | ROCE_OP_READ_RESP_LAST, pfx "RDMA_READ_RESPONSE_LAST",                   \
		   (resp) | ROCE_HDR_AETH, RESP_READ | LAST),                                      \
		OP((tr) | ROCE_OP_READ_RESP_ONLY, pfx "RDMA_READ_RESPONSE_ONLY",                   \
		   (resp) | ROCE_HDR_AETH, RESP_READ | ONLY),                                      \
		OP((tr) | ROCE_OP_ACK, pfx "ACKNOWLEDGE", (resp) | ROCE_HDR_AETH,                  \
		   ROCE_OPF_RESPONSE | ONLY),                                                      \
		OP((tr) | ROCE_OP_ATOMIC_ACK, pfx "ATOMIC_ACKNOWLEDGE",                            \
		   (resp) | ROCE_HDR_AETH | ROCE_HDR_ATOMICACKETH,                                 \
		   ROCE_OPF_RESPONSE | ROCE_OPF_ATOMIC | ONLY),                                    \
		OP((tr) | ROCE_OP_CMP_SWAP, pfx "COMPARE_SWAP", (req) | ROCE_HDR_ATOMICETH,        \
		   ROCE_OPF_REQUEST | ROCE_OPF_ATOMIC | ONLY),                                     \
		OP((tr) | ROCE_OP_FETCH_ADD, pfx "FETCH_ADD", (req) | ROCE_HDR_ATOMICETH,          \
		   ROCE_OPF_REQUEST | ROCE_OPF_ATOMIC | ONLY)

/* SEND with invalidate (0x16, 0x17): RC and XRC. */
#define INV_OPS(tr, pfx, req)                                                                      \
	OP((tr) | ROCE_OP_SEND_LAST_INV, pfx "SEND_LAST_WITH_INVALIDATE", (req) | ROCE_HDR_IETH,   \
	   REQ_SEND | LAST | ROCE_OPF_INV),                                                        \
		OP((tr) | ROCE_OP_SEND_ONLY_INV, pfx "SEND_ONLY_WITH_INVALIDATE",                  \
		   (req) | ROCE_HDR_IETH, REQ_SEND | ONLY | ROCE_OPF_INV)

/*
 * PROTOCOL.md §1.7; header sets as Linux rxe_opcode.c (RC, UC, RD, UD; FLUSH
 * and ATOMIC_WRITE from Linux >= 6.2), RD RESYNC and XRC as Wireshark and
 * the rxe XRC patches lay them out. XRC defines no RESYNC, FLUSH or
 * ATOMIC_WRITE (no source gives them an XRC opcode).
 */
static const struct roce_opcode_info opcodes[256] = {
	SEND_WRITE_OPS(ROCE_TR_RC, "RC_", 0),
	READ_ATOMIC_OPS(ROCE_TR_RC, "RC_", 0, 0),
	INV_OPS(ROCE_TR_RC, "RC_", 0),
	OP(ROCE_TR_RC | ROCE_OP_FLUSH, "RC_FLUSH", ROCE_HDR_FETH | ROCE_HDR_RETH,
	   ROCE_OPF_REQUEST | ONLY),
	OP(ROCE_TR_RC | ROCE_OP_ATOMIC_WRITE, "RC_ATOMIC_WRITE", ROCE_HDR_RETH,
	   REQ_WRITE | ONLY | ROCE_OPF_FIXED8),

	SEND_WRITE_OPS(ROCE_TR_UC, "UC_", 0),

	SEND_WRITE_OPS(ROCE_TR_RD, "RD_", ROCE_HDR_RDETH | ROCE_HDR_DETH),
	READ_ATOMIC_OPS(ROCE_TR_RD, "RD_", ROCE_HDR_RDETH | ROCE_HDR_DETH, ROCE_HDR_RDETH),
	OP(ROCE_TR_RD | ROCE_OP_RESYNC, "RD_RESYNC", ROCE_HDR_RDETH | ROCE_HDR_DETH,
	   ROCE_OPF_REQUEST | ONLY),

	OP(ROCE_TR_UD | ROCE_OP_SEND_ONLY, "UD_SEND_ONLY", ROCE_HDR_DETH, REQ_SEND | ONLY),
	OP(ROCE_TR_UD | ROCE_OP_SEND_ONLY_IMM, "UD_SEND_ONLY_WITH_IMMEDIATE",
	   ROCE_HDR_DETH | ROCE_HDR_IMMDT, REQ_SEND | ONLY | IMM),

	OP(ROCE_OPCODE_CNP, "CNP", ROCE_HDR_CNP, 0),

	SEND_WRITE_OPS(ROCE_TR_XRC, "XRC_", ROCE_HDR_XRCETH),
	READ_ATOMIC_OPS(ROCE_TR_XRC, "XRC_", ROCE_HDR_XRCETH, 0),
	INV_OPS(ROCE_TR_XRC, "XRC_", ROCE_HDR_XRCETH),
};

const struct roce_opcode_info *roce_opcode(uint8_t opcode)
{
	return &opcodes[opcode];
}

bool roce_datagram_continues(const uint8_t *data, size_t len, uint16_t seg)
{
	size_t at = seg && len > seg ? (len - 1) / seg * seg : 0;
	const struct roce_opcode_info *op;

	if (!len)
		return false;
	op = roce_opcode(data[at]);
	if (!(op->flags & ROCE_OPF_PAYLOAD) && at)
		op = roce_opcode(data[at - seg]);
	return op->flags & (ROCE_OPF_FIRST | ROCE_OPF_MIDDLE);
}

void roce_pkt_gap_fill(uint8_t *pkt, const struct roce_pkt_gap *gap)
{
	if (gap->len)
		memcpy(pkt + gap->off, gap->src, gap->len);
}

bool roce_steer_fits(const struct roce_steer *plan, const uint8_t *pkt, size_t len, unsigned int k)
{
	return len == (size_t)plan->hdr_len + plan->pmtu + ROCE_ICRC_LEN &&
	       pkt[0] == plan->opcode && !(pkt[1] & 0x3F) /* PadCnt 0, TVer 0 */ &&
	       roce_get24(pkt + 5) == plan->qpn &&
	       roce_get24(pkt + 9) == roce_psn_add(plan->psn, k);
}

bool roce_datagram_steerable(const uint8_t *data, size_t len, uint16_t seg)
{
	const struct roce_opcode_info *op;
	enum roce_transport tr;

	if (!seg || len <= seg)
		return false;
	op = roce_opcode(data[0]);
	tr = roce_opcode_transport(data[0]);
	return (tr == ROCE_TR_RC || tr == ROCE_TR_UC) &&
	       (op->flags & (ROCE_OPF_WRITE | ROCE_OPF_READ)) && (op->flags & ROCE_OPF_PAYLOAD) &&
	       (op->flags & (ROCE_OPF_FIRST | ROCE_OPF_MIDDLE)) &&
	       roce_datagram_continues(data, len, seg);
}

/*
 * Whether the packet of @len bytes at @p is an RC ACK that acknowledges (the AETH and ICRC
 * included). Not a NAK: one may fail the QP, and the requests ahead of it must reach the
 * responder first.
 */
static bool is_rc_ack(const uint8_t *p, size_t len)
{
	return len >= ROCE_BTH_LEN + ROCE_AETH_LEN + ROCE_ICRC_LEN &&
	       p[0] == (ROCE_TR_RC | ROCE_OP_ACK) &&
	       roce_aeth_class(p[ROCE_BTH_LEN]) == ROCE_AETH_ACK;
}

enum roce_answer roce_answer_of(const uint8_t *roce, size_t len)
{
	const struct roce_opcode_info *op;
	enum roce_transport tr;

	if (is_rc_ack(roce, len))
		return ROCE_ANSWER_NONE;
	if (!len)
		return ROCE_ANSWER_NOW;
	op = roce_opcode(roce[0]);
	tr = roce_opcode_transport(roce[0]);
	if ((op->flags & (ROCE_OPF_REQUEST | ROCE_OPF_SEND)) ==
		    (ROCE_OPF_REQUEST | ROCE_OPF_SEND) &&
	    (tr == ROCE_TR_RC || tr == ROCE_TR_XRC))
		return ROCE_ANSWER_ACK;
	return ROCE_ANSWER_NOW;
}

/* An ACK moved behind a train (roce_train_ack_last) is at most this long: its own headers. */
#define ACK_LEN_MAX 64u

bool roce_train_ack_last(uint8_t *buf, uint16_t *lens, unsigned int n, size_t max)
{
	uint8_t ack[ACK_LEN_MAX];
	uint16_t a = lens[0];
	size_t rest = 0;

	if (n < 2 || a > ACK_LEN_MAX || !is_rc_ack(buf, a) || lens[1] < a)
		return false;
	for (unsigned int i = 1; i < n; rest += lens[i], i++)
		if (lens[i] != lens[1] || !(roce_opcode(buf[a + rest])->flags & ROCE_OPF_REQUEST))
			return false;
	if (rest > max)
		return false;
	memcpy(ack, buf, a);
	memmove(buf, buf + a, rest);
	memcpy(buf + rest, ack, a);
	for (unsigned int i = 0; i + 1 < n; i++)
		lens[i] = lens[i + 1];
	lens[n - 1] = a;
	return true;
}

bool roce_datagram_acks_first(const uint8_t *data, size_t len, uint16_t seg)
{
	size_t last;

	if (!seg || len <= seg)
		return false;
	last = (len - 1) / seg * seg;
	if (!is_rc_ack(data + last, len - last))
		return false;
	for (size_t off = 0; off < last; off += seg)
		if (!(roce_opcode(data[off])->flags & ROCE_OPF_REQUEST))
			return false;
	return true;
}

const char *roce_decode_strerror(enum roce_decode_err err)
{
	static const char *const names[ROCE_ERR__COUNT] = {
		[ROCE_OK] = "ok",
		[ROCE_ERR_TRUNCATED] = "truncated",
		[ROCE_ERR_OPCODE] = "bad-opcode",
		[ROCE_ERR_TVER] = "bad-tver",
		[ROCE_ERR_HDR_LEN] = "short-headers",
		[ROCE_ERR_ALIGN] = "unaligned",
		[ROCE_ERR_PAD] = "bad-pad",
		[ROCE_ERR_PAYLOAD_LEN] = "bad-payload-len",
		[ROCE_ERR_PKEY] = "bad-pkey",
		[ROCE_ERR_DQPN] = "bad-dqpn",
	};
	if ((unsigned)err >= ROCE_ERR__COUNT)
		return "unknown";
	return names[err];
}

/* Whether an opcode may carry a payload of @len bytes (PROTOCOL.md §1.7, §1.8). */
static bool payload_len_ok(const struct roce_opcode_info *info, size_t len)
{
	if (!(info->flags & ROCE_OPF_PAYLOAD))
		return len == 0;
	if (info->flags & ROCE_OPF_FIXED8)
		return len == 8; /* ATOMIC_WRITE carries one 8-byte value */
	return len <= ROCE_MAX_PMTU;
}

static void decode_bth(const uint8_t *p, struct roce_bth *bth)
{
	bth->opcode = p[0];
	bth->se = p[1] & 0x80;
	bth->mig = p[1] & 0x40;
	bth->pad = (p[1] >> 4) & 3;
	bth->tver = p[1] & 0x0F;
	bth->pkey = roce_get16(p + 2);
	bth->fecn = p[4] & 0x80;
	bth->becn = p[4] & 0x40;
	bth->resv6 = p[4] & 0x3F;
	bth->dqpn = roce_get24(p + 5);
	bth->ack_req = p[8] & 0x80;
	bth->resv7 = p[8] & 0x7F;
	bth->psn = roce_get24(p + 9);
}

/* The extension headers in @hdrs, from @p on, in wire order (PROTOCOL.md §1.6). */
static void decode_ext(const uint8_t *p, uint16_t hdrs, struct roce_pkt *pkt)
{
	if (hdrs & ROCE_HDR_XRCETH) {
		pkt->xrc_srqn = roce_get24(p + 1);
		p += ROCE_XRCETH_LEN;
	}
	if (hdrs & ROCE_HDR_RDETH) {
		pkt->rd_eecn = roce_get24(p + 1);
		p += ROCE_RDETH_LEN;
	}
	if (hdrs & ROCE_HDR_DETH) {
		pkt->deth.qkey = roce_get32(p);
		pkt->deth.src_qpn = roce_get24(p + 5);
		p += ROCE_DETH_LEN;
	}
	if (hdrs & ROCE_HDR_FETH) {
		pkt->feth = p[3] & 0x3F;
		p += ROCE_FETH_LEN;
	}
	if (hdrs & ROCE_HDR_RETH) {
		pkt->reth.va = roce_get64(p);
		pkt->reth.rkey = roce_get32(p + 8);
		pkt->reth.len = roce_get32(p + 12);
		p += ROCE_RETH_LEN;
	}
	if (hdrs & ROCE_HDR_ATOMICETH) {
		pkt->atomic.va = roce_get64(p);
		pkt->atomic.rkey = roce_get32(p + 8);
		pkt->atomic.swap_add = roce_get64(p + 12);
		pkt->atomic.compare = roce_get64(p + 20);
		p += ROCE_ATOMICETH_LEN;
	}
	if (hdrs & ROCE_HDR_AETH) {
		pkt->aeth.syndrome = p[0];
		pkt->aeth.msn = roce_get24(p + 1);
		p += ROCE_AETH_LEN;
	}
	if (hdrs & ROCE_HDR_ATOMICACKETH) {
		pkt->atomic_orig = roce_get64(p);
		p += ROCE_ATOMICACKETH_LEN;
	}
	if (hdrs & ROCE_HDR_IMMDT) {
		memcpy(&pkt->imm_be, p, ROCE_IMMDT_LEN);
		p += ROCE_IMMDT_LEN;
	}
	if (hdrs & ROCE_HDR_IETH)
		pkt->ieth_rkey = roce_get32(p);
	/* A CNP's 16 reserved bytes carry nothing (PROTOCOL.md §1.9). */
}

enum roce_decode_err roce_decode(const uint8_t *buf, size_t len, struct roce_pkt *pkt)
{
	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return ROCE_ERR_TRUNCATED;
	const struct roce_opcode_info *info = &opcodes[buf[0]];
	if (!info->name)
		return ROCE_ERR_OPCODE;
	if (buf[1] & 0x0F)
		return ROCE_ERR_TVER; /* PROTOCOL.md §1.5: rxe drops TVer != 0 */
	if (len < (size_t)info->hdr_len + ROCE_ICRC_LEN)
		return ROCE_ERR_HDR_LEN;
	/* IBA counts packet length in 4-byte words; PadCnt keeps it so (§1.8). */
	if (len % 4)
		return ROCE_ERR_ALIGN;
	size_t area = len - info->hdr_len - ROCE_ICRC_LEN; /* payload + pad */
	unsigned pad = (buf[1] >> 4) & 3;
	if (pad > area || (pad && !(info->flags & ROCE_OPF_PAYLOAD)))
		return ROCE_ERR_PAD;
	if (!payload_len_ok(info, area - pad))
		return ROCE_ERR_PAYLOAD_LEN;
	/* §1.10: our port's one partition is 0xFFFF (full member), so only bits 14..0 matter. */
	if ((roce_get16(buf + 2) & 0x7FFF) != (ROCE_DEFAULT_PKEY & 0x7FFF))
		return ROCE_ERR_PKEY;
	if (!roce_get24(buf + 5))
		return ROCE_ERR_DQPN;

	memset(pkt, 0, sizeof(*pkt));
	decode_bth(buf, &pkt->bth);
	pkt->info = info;
	pkt->hdrs = info->hdrs;
	decode_ext(buf + ROCE_BTH_LEN, info->hdrs, pkt);
	pkt->payload = buf + info->hdr_len;
	pkt->payload_len = (uint32_t)(area - pad);
	/* The ICRC goes least-significant byte first (§2.4). */
	const uint8_t *icrc = buf + len - ROCE_ICRC_LEN;
	pkt->icrc = (uint32_t)icrc[0] | (uint32_t)icrc[1] << 8 | (uint32_t)icrc[2] << 16 |
		    (uint32_t)icrc[3] << 24;
	return ROCE_OK;
}

static bool pmtu_valid(uint32_t pmtu)
{
	return pmtu >= 256 && pmtu <= ROCE_MAX_PMTU && !(pmtu & (pmtu - 1));
}

bool roce_payload_fits_pmtu(const struct roce_pkt *pkt, uint32_t pmtu)
{
	const struct roce_opcode_info *info = &opcodes[pkt->bth.opcode];
	uint32_t len = pkt->payload_len;

	if (!info->name || !pmtu_valid(pmtu))
		return false;
	if (!(info->flags & ROCE_OPF_PAYLOAD))
		return len == 0;
	if (info->flags & (ROCE_OPF_FIRST | ROCE_OPF_MIDDLE))
		return len == pmtu;
	if (info->flags & ROCE_OPF_LAST)
		return len >= 1 && len <= pmtu;
	return len <= pmtu; /* ONLY: a zero-length message too */
}

static void encode_bth(uint8_t *p, const struct roce_bth *bth, uint8_t pad)
{
	p[0] = bth->opcode;
	p[1] = (uint8_t)(bth->se << 7 | bth->mig << 6 | pad << 4 | (bth->tver & 0x0F));
	roce_put16(p + 2, bth->pkey);
	p[4] = (uint8_t)(bth->fecn << 7 | bth->becn << 6 | (bth->resv6 & 0x3F));
	roce_put24(p + 5, bth->dqpn);
	p[8] = (uint8_t)(bth->ack_req << 7 | (bth->resv7 & 0x7F));
	roce_put24(p + 9, bth->psn);
}

/* The inverse of decode_ext(); reserved bits and bytes are written as 0. */
static void encode_ext(uint8_t *p, uint16_t hdrs, const struct roce_pkt *pkt)
{
	if (hdrs & ROCE_HDR_XRCETH) {
		p[0] = 0;
		roce_put24(p + 1, pkt->xrc_srqn);
		p += ROCE_XRCETH_LEN;
	}
	if (hdrs & ROCE_HDR_RDETH) {
		p[0] = 0;
		roce_put24(p + 1, pkt->rd_eecn);
		p += ROCE_RDETH_LEN;
	}
	if (hdrs & ROCE_HDR_DETH) {
		roce_put32(p, pkt->deth.qkey);
		p[4] = 0;
		roce_put24(p + 5, pkt->deth.src_qpn);
		p += ROCE_DETH_LEN;
	}
	if (hdrs & ROCE_HDR_FETH) {
		roce_put32(p, pkt->feth & 0x3Fu);
		p += ROCE_FETH_LEN;
	}
	if (hdrs & ROCE_HDR_RETH) {
		roce_put64(p, pkt->reth.va);
		roce_put32(p + 8, pkt->reth.rkey);
		roce_put32(p + 12, pkt->reth.len);
		p += ROCE_RETH_LEN;
	}
	if (hdrs & ROCE_HDR_ATOMICETH) {
		roce_put64(p, pkt->atomic.va);
		roce_put32(p + 8, pkt->atomic.rkey);
		roce_put64(p + 12, pkt->atomic.swap_add);
		roce_put64(p + 20, pkt->atomic.compare);
		p += ROCE_ATOMICETH_LEN;
	}
	if (hdrs & ROCE_HDR_AETH) {
		p[0] = pkt->aeth.syndrome;
		roce_put24(p + 1, pkt->aeth.msn);
		p += ROCE_AETH_LEN;
	}
	if (hdrs & ROCE_HDR_ATOMICACKETH) {
		roce_put64(p, pkt->atomic_orig);
		p += ROCE_ATOMICACKETH_LEN;
	}
	if (hdrs & ROCE_HDR_IMMDT) {
		memcpy(p, &pkt->imm_be, ROCE_IMMDT_LEN);
		p += ROCE_IMMDT_LEN;
	}
	if (hdrs & ROCE_HDR_IETH)
		roce_put32(p, pkt->ieth_rkey);
	if (hdrs & ROCE_HDR_CNP)
		memset(p, 0, ROCE_CNP_RSVD_LEN);
}

/* The opcode's info if @pkt can be encoded, else NULL. */
static const struct roce_opcode_info *encodable(const struct roce_pkt *pkt)
{
	const struct roce_opcode_info *info = &opcodes[pkt->bth.opcode];

	if (!info->name || !payload_len_ok(info, pkt->payload_len))
		return NULL;
	return info;
}

size_t roce_encode_hdrs(uint8_t *buf, size_t cap, const struct roce_pkt *pkt)
{
	const struct roce_opcode_info *info = encodable(pkt);

	if (!info || cap < info->hdr_len)
		return 0;
	encode_bth(buf, &pkt->bth, roce_pad_len(pkt->payload_len));
	encode_ext(buf + ROCE_BTH_LEN, info->hdrs, pkt);
	return info->hdr_len;
}

size_t roce_encode(uint8_t *buf, size_t cap, const struct roce_pkt *pkt)
{
	const struct roce_opcode_info *info = encodable(pkt);
	if (!info)
		return 0;
	size_t plen = pkt->payload_len, pad = roce_pad_len(pkt->payload_len);
	size_t total = info->hdr_len + plen + pad + ROCE_ICRC_LEN;
	if (cap < total)
		return 0;

	/* Payload first: it may sit where the headers go if the caller reuses a buffer. */
	if (plen)
		memmove(buf + info->hdr_len, pkt->payload, plen);
	memset(buf + info->hdr_len + plen, 0, pad + ROCE_ICRC_LEN);
	encode_bth(buf, &pkt->bth, (uint8_t)pad);
	encode_ext(buf + ROCE_BTH_LEN, info->hdrs, pkt);
	return total;
}
