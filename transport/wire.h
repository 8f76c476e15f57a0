/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 transport headers: the BTH and its extension headers, the opcode
 * table, and the decoder that validates a received packet.
 *
 * Everything here works on the RoCEv2 part of a UDP payload: BTH, extension
 * headers, payload, pad and the 4-byte ICRC (PROTOCOL.md §1). All fields on
 * the wire are big-endian; the structs below hold host-order values, except
 * ImmDt, which is opaque and kept in network order as ibv_wc.imm_data is.
 *
 * Pure code: no allocation, no I/O. Every function is safe to call from any
 * thread on distinct buffers.
 */
#ifndef UROCE_TRANSPORT_WIRE_H
#define UROCE_TRANSPORT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Header sizes in bytes (PROTOCOL.md §1.5, §1.6). */
enum {
	ROCE_BTH_LEN = 12,
	ROCE_RDETH_LEN = 4,
	ROCE_DETH_LEN = 8,
	ROCE_RETH_LEN = 16,
	ROCE_ATOMICETH_LEN = 28,
	ROCE_AETH_LEN = 4,
	ROCE_ATOMICACKETH_LEN = 8,
	ROCE_IMMDT_LEN = 4,
	ROCE_IETH_LEN = 4,
	ROCE_XRCETH_LEN = 4,
	ROCE_FETH_LEN = 4,
	ROCE_CNP_RSVD_LEN = 16, /* CNP: 16 reserved bytes after the BTH */
	ROCE_ICRC_LEN = 4,
	ROCE_UDP_PORT = 4791,
	ROCE_MAX_PMTU = 4096,
};

/* Well-known values. */
#define ROCE_DEFAULT_PKEY 0xFFFFu     /* the one partition of a RoCE port */
#define ROCE_GSI_QPN      1u          /* QP1: CM MADs */
#define ROCE_GSI_QKEY     0x80010000u /* QP1's controlled Q_Key (§4.1) */
#define ROCE_MCAST_QPN    0xFFFFFFu   /* DestQP of multicast UD packets */
#define ROCE_PSN_MASK     0xFFFFFFu
#define ROCE_QPN_MASK     0xFFFFFFu

/* Transport prefixes: bits 7..5 of the opcode (PROTOCOL.md §1.5). */
enum roce_transport {
	ROCE_TR_RC = 0x00,
	ROCE_TR_UC = 0x20,
	ROCE_TR_RD = 0x40,
	ROCE_TR_UD = 0x60,
	ROCE_TR_CNP = 0x80,
	ROCE_TR_XRC = 0xA0,
};

/* The transport prefix of BTH opcode @opcode. */
static inline enum roce_transport roce_opcode_transport(uint8_t opcode)
{
	return (enum roce_transport)(opcode & 0xE0);
}

/* Operations: bits 4..0 of the opcode. Combine with a transport prefix. */
enum roce_op {
	ROCE_OP_SEND_FIRST = 0x00,
	ROCE_OP_SEND_MIDDLE = 0x01,
	ROCE_OP_SEND_LAST = 0x02,
	ROCE_OP_SEND_LAST_IMM = 0x03,
	ROCE_OP_SEND_ONLY = 0x04,
	ROCE_OP_SEND_ONLY_IMM = 0x05,
	ROCE_OP_WRITE_FIRST = 0x06,
	ROCE_OP_WRITE_MIDDLE = 0x07,
	ROCE_OP_WRITE_LAST = 0x08,
	ROCE_OP_WRITE_LAST_IMM = 0x09,
	ROCE_OP_WRITE_ONLY = 0x0A,
	ROCE_OP_WRITE_ONLY_IMM = 0x0B,
	ROCE_OP_READ_REQUEST = 0x0C,
	ROCE_OP_READ_RESP_FIRST = 0x0D,
	ROCE_OP_READ_RESP_MIDDLE = 0x0E,
	ROCE_OP_READ_RESP_LAST = 0x0F,
	ROCE_OP_READ_RESP_ONLY = 0x10,
	ROCE_OP_ACK = 0x11,
	ROCE_OP_ATOMIC_ACK = 0x12,
	ROCE_OP_CMP_SWAP = 0x13,
	ROCE_OP_FETCH_ADD = 0x14,
	ROCE_OP_RESYNC = 0x15, /* RD only */
	ROCE_OP_SEND_LAST_INV = 0x16,
	ROCE_OP_SEND_ONLY_INV = 0x17,
	ROCE_OP_FLUSH = 0x1C,
	ROCE_OP_ATOMIC_WRITE = 0x1D,
};

/* The CNP opcode (PROTOCOL.md §1.9: 0x81, not the 0x80 prefix). */
#define ROCE_OPCODE_CNP 0x81u

/*
 * Which headers a packet carries. On the wire they follow the BTH in the
 * order of these bits, except FETH, which comes first (FLUSH: FETH, RETH).
 * No opcode carries both XRCETH and RDETH/DETH.
 */
enum roce_hdr {
	ROCE_HDR_XRCETH = 1u << 0,
	ROCE_HDR_RDETH = 1u << 1,
	ROCE_HDR_DETH = 1u << 2,
	ROCE_HDR_RETH = 1u << 3,
	ROCE_HDR_ATOMICETH = 1u << 4,
	ROCE_HDR_AETH = 1u << 5,
	ROCE_HDR_ATOMICACKETH = 1u << 6,
	ROCE_HDR_IMMDT = 1u << 7,
	ROCE_HDR_IETH = 1u << 8,
	ROCE_HDR_FETH = 1u << 9,
	ROCE_HDR_CNP = 1u << 10, /* the 16 reserved bytes of a CNP */
};

/* What an opcode means, beyond its headers. */
enum roce_op_flag {
	ROCE_OPF_PAYLOAD = 1u << 0, /* carries payload */
	ROCE_OPF_FIRST = 1u << 1,   /* first packet of a multi-packet message */
	ROCE_OPF_MIDDLE = 1u << 2,
	ROCE_OPF_LAST = 1u << 3,
	ROCE_OPF_ONLY = 1u << 4,     /* whole message in one packet */
	ROCE_OPF_REQUEST = 1u << 5,  /* requester → responder */
	ROCE_OPF_RESPONSE = 1u << 6, /* responder → requester */
	/*
	 * A SEND: its payload goes to a receive WQE. An RDMA WRITE with
	 * immediate (WRITE|IMM) also consumes one, at its last packet.
	 */
	ROCE_OPF_SEND = 1u << 7,
	ROCE_OPF_WRITE = 1u << 8,
	ROCE_OPF_READ = 1u << 9,
	ROCE_OPF_ATOMIC = 1u << 10,
	ROCE_OPF_IMM = 1u << 11,
	ROCE_OPF_INV = 1u << 12,
	ROCE_OPF_FIXED8 = 1u << 13, /* payload is exactly 8 bytes (ATOMIC_WRITE) */
};

/*
 * RDMA READ requests, atomics, FLUSH and ACKs are ONLY packets (a message of
 * one packet); READ responses are FIRST/MIDDLE/LAST/ONLY like SENDs. CNP has
 * no flags. ATOMIC_WRITE is WRITE|ONLY|FIXED8 and is acknowledged by an ACK.
 */
struct roce_opcode_info {
	const char *name; /* e.g. "RC_SEND_ONLY"; NULL for an invalid opcode */
	uint16_t hdrs;    /* enum roce_hdr mask */
	uint16_t flags;   /* enum roce_op_flag mask */
	uint8_t hdr_len;  /* BTH + extension headers, in bytes */
};

/*
 * The opcode table: info for every one of the 256 opcode values
 * (PROTOCOL.md §1.7). Defined: RC 0x00-0x14, 0x16, 0x17, FLUSH 0x1C and
 * ATOMIC_WRITE 0x1D; UC 0x20-0x2B; RD 0x40-0x55 (decoding only); UD 0x64,
 * 0x65; CNP 0x81; XRC 0xA0-0xB4, 0xB6, 0xB7, whose requests carry an XRCETH
 * and whose responses (READ responses, ACKs) are laid out as RC's. Names
 * are the transport and the operation as in Linux ib_pack.h:
 * "RC_SEND_ONLY", "XRC_RDMA_WRITE_FIRST", "UD_SEND_ONLY_WITH_IMMEDIATE",
 * "CNP". Every other value, including the manufacturer range 0xC0..0xFF,
 * has name == NULL. Never returns NULL.
 */
const struct roce_opcode_info *roce_opcode(uint8_t opcode);

/*
 * Whether more of a message is to follow a UDP datagram of @len bytes at @data holding RoCE
 * packets back to back in segments of @seg bytes (the last may be shorter: a UDP GRO receive;
 * 0: one packet): its last packet is the FIRST or a MIDDLE packet of a message, or, when that
 * one carries no payload (an ACK riding at the end of a train), the packet before it is. Only
 * BTH opcodes are read; false for an empty datagram.
 */
bool roce_datagram_continues(const uint8_t *data, size_t len, uint16_t seg);

/*
 * A packet whose payload is not in its buffer: bytes [@off, @off + @len) of the packet are the
 * @len bytes at @src, and the packet's buffer holds all the others at their places (its own
 * bytes in the gap are not the packet's). A sender leaves the payload in the application's
 * memory and gathers the pieces as it sends (transport/qp.h: roce_qp_write_pkt_gap); a receive
 * that steers each payload straight to where the responder places it (struct roce_steer)
 * leaves such gaps too. @len 0: no gap, the buffer holds the whole packet.
 */
struct roce_pkt_gap {
	const uint8_t *src;
	uint16_t off;
	uint16_t len;
};

/* Copy the bytes of @gap into the packet @pkt, which then holds all of itself. */
void roce_pkt_gap_fill(uint8_t *pkt, const struct roce_pkt_gap *gap);

/*
 * A receive steered into place (transport/qp.h: roce_qp_steer): the UDP GRO segments
 * [0, @count) of a datagram, each of @hdr_len + @pmtu + ROCE_ICRC_LEN bytes, are expected to be
 * packets of opcode @opcode to QP @qpn with PSNs @psn, @psn + 1, ..., each carrying @pmtu
 * bytes of payload (no pad) that the responder would place at @at + k * @pmtu for packet k.
 * The receiver gathers each payload there, and checks each packet with roce_steer_fits()
 * before it hands it on with the gap (a packet that does not fit gets its payload back into
 * its buffer: roce_pkt_gap_fill).
 */
struct roce_steer {
	uint8_t *at;
	uint32_t qpn;
	uint32_t psn;
	uint32_t pmtu;
	uint16_t hdr_len;
	uint8_t opcode;
	uint8_t count;
};

/* The most packets one steered receive takes: a UDP datagram's worth of 256-byte payloads. */
#define ROCE_STEER_MAX 255u

/*
 * Whether the packet of @len bytes at @pkt is packet @k of @plan as expected: its length,
 * opcode, no pad, transport version 0, QP and PSN. Only the BTH is read.
 */
bool roce_steer_fits(const struct roce_steer *plan, const uint8_t *pkt, size_t len, unsigned int k);

/*
 * Whether a UDP datagram of @len bytes at @data in GRO segments of @seg bytes (0: one packet)
 * looks like part of a stream a steered receive could take next: more than one packet, and
 * its first is the FIRST or a MIDDLE packet of an RC or UC RDMA WRITE or of an RDMA READ's
 * responses, and its message goes on
 * (roce_datagram_continues). A guess that saves looking at the next datagram's headers when
 * it would not be steered; only BTH opcodes are read.
 */
bool roce_datagram_steerable(const uint8_t *data, size_t len, uint16_t seg);

/*
 * A responder's ACK and the requests its QP sends next. An RNIC sends the ACK of a request as
 * the request arrives, before the reply the application posts once it sees the completion, and
 * a peer that waits for both completions on one channel (perftest's -e) needs the send
 * completion the ACK makes before the receive completion the reply makes. An ACK is shorter
 * than most requests, and only the last datagram of a UDP GSO send may be shorter than the
 * others: so [ACK][reply] takes two sends, each delivered and received on its own, where
 * [reply][ACK] takes one. Between two processes that both follow these two rules, a train
 * travels in the second order and is taken in the first:
 *
 * roce_train_ack_last: if the train of @n packets at @buf (lengths @lens, back to back) is one
 * RC ACK (not a NAK) followed by requests of one length, not shorter than the ACK and @max bytes at
 * most together, move the ACK behind them (in @buf and @lens) and return true; else change nothing
 * and return false.
 *
 * roce_datagram_acks_first: whether the receiver of a UDP datagram of @len bytes at @data
 * holding RoCE packets in segments of @seg bytes (a UDP GRO receive; 0: one packet) takes its
 * last packet first: it is an RC ACK (not a NAK, which may fail the QP before the requests ahead
 * of it arrive) and every packet before it is a request. Always allowed:
 * a QP's requests and the ACKs for its own requests are two streams, and the IBA orders the
 * completions of each work queue, not those of a send queue against a receive queue's.
 */
bool roce_train_ack_last(uint8_t *buf, uint16_t *lens, unsigned int n, size_t max);
bool roce_datagram_acks_first(const uint8_t *data, size_t len, uint16_t seg);

/*
 * What a received packet calls for from its receiver, for a receive path that may put its
 * answers off a little (fabric/progress_rx.c: an application that polls is likely to post its
 * own answer soon, which takes an ACK along). ROCE_ANSWER_NONE: nothing of its own (an RC ACK
 * that acknowledges). ROCE_ANSWER_ACK: an ACK (an RC or XRC SEND request). ROCE_ANSWER_NOW:
 * anything else, which is not to wait: a READ or atomic response, a NAK's retransmission, the
 * ACK of a WRITE nobody answers.
 */
enum roce_answer { ROCE_ANSWER_NONE, ROCE_ANSWER_ACK, ROCE_ANSWER_NOW };
enum roce_answer roce_answer_of(const uint8_t *roce, size_t len);

struct roce_bth {
	uint8_t opcode;
	bool se;      /* solicited event */
	bool mig;     /* MigReq */
	uint8_t pad;  /* PadCnt, 0..3 */
	uint8_t tver; /* must be 0 */
	uint16_t pkey;
	bool fecn, becn;
	uint8_t resv6;
	uint32_t dqpn; /* 24 bits */
	bool ack_req;
	uint8_t resv7;
	uint32_t psn; /* 24 bits */
};

struct roce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

struct roce_atomiceth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add; /* swap value (CmpSwap) or addend (FetchAdd) */
	uint64_t compare;
};

struct roce_deth {
	uint32_t qkey;
	uint32_t src_qpn; /* 24 bits */
};

struct roce_aeth {
	uint8_t syndrome;
	uint32_t msn; /* 24 bits */
};

/* AETH syndrome classes (bits 6..5) and NAK codes (PROTOCOL.md §1.6). */
enum roce_aeth_class {
	ROCE_AETH_ACK = 0,
	ROCE_AETH_RNR_NAK = 1,
	ROCE_AETH_RESERVED = 2,
	ROCE_AETH_NAK = 3,
};
enum roce_nak_code {
	ROCE_NAK_PSN_SEQ = 0,
	ROCE_NAK_INVALID_REQ = 1,
	ROCE_NAK_REMOTE_ACCESS = 2,
	ROCE_NAK_REMOTE_OP = 3,
	ROCE_NAK_INVALID_RD_REQ = 4,
};
#define ROCE_AETH_CREDIT_INVALID 0x1Fu /* "no credit information" */

static inline enum roce_aeth_class roce_aeth_class(uint8_t syndrome)
{
	return (enum roce_aeth_class)((syndrome >> 5) & 3);
}
static inline uint8_t roce_aeth_value(uint8_t syndrome)
{
	return syndrome & 0x1F;
}
static inline uint8_t roce_aeth_syndrome(enum roce_aeth_class c, uint8_t value)
{
	return (uint8_t)(((unsigned)c << 5) | (value & 0x1F));
}

/* A decoded packet. Pointers refer into the buffer given to roce_decode(). */
struct roce_pkt {
	struct roce_bth bth;
	const struct roce_opcode_info *info;
	uint16_t hdrs;     /* enum roce_hdr mask: which of the fields below are valid */
	uint32_t xrc_srqn; /* XRCETH: 24 bits */
	uint32_t rd_eecn;  /* RDETH: 24 bits */
	struct roce_deth deth;
	struct roce_reth reth; /* also VA/R_Key of a FLUSH */
	struct roce_atomiceth atomic;
	struct roce_aeth aeth;
	uint64_t atomic_orig; /* AtomicAckETH */
	uint32_t imm_be;      /* ImmDt, network byte order */
	uint32_t ieth_rkey;   /* IETH: R_Key to invalidate */
	uint8_t feth;         /* FETH bits 5..4 selectivity, 3..0 placement type */
	const uint8_t *payload;
	uint32_t payload_len; /* without pad */
	uint32_t icrc;        /* ICRC value as read from the wire (LE) */
};

/*
 * Why a received packet was refused. One distinct value per kind of bad
 * packet, so the engine can count them separately (PROTOCOL.md §1.10).
 */
enum roce_decode_err {
	ROCE_OK = 0,
	ROCE_ERR_TRUNCATED,   /* shorter than BTH + ICRC */
	ROCE_ERR_OPCODE,      /* opcode RoCE does not define */
	ROCE_ERR_TVER,        /* TVer != 0 */
	ROCE_ERR_HDR_LEN,     /* too short for the opcode's headers + ICRC */
	ROCE_ERR_ALIGN,       /* length not a multiple of 4 bytes */
	ROCE_ERR_PAD,         /* PadCnt over the payload area, or on an opcode without payload */
	ROCE_ERR_PAYLOAD_LEN, /* payload where none is allowed, > 4096, or not 8 (ATOMIC_WRITE) */
	ROCE_ERR_PKEY,        /* P_Key does not match the port's partition */
	ROCE_ERR_DQPN,        /* DestQP 0 */
	ROCE_ERR__COUNT
};

/*
 * A short stable name for an error ("truncated", "bad-opcode", ...), for
 * logs and counters; "unknown" for a value outside the enum.
 */
const char *roce_decode_strerror(enum roce_decode_err err);

/*
 * Decode and validate the RoCEv2 part of a UDP payload: @buf holds @len
 * bytes from the BTH through the ICRC. Validates everything a receiver can
 * check without queue-pair state (PROTOCOL.md §1.10), in this order; the
 * first failed check is the error returned:
 *
 *  1. ROCE_ERR_TRUNCATED    len < 16 (BTH + ICRC)
 *  2. ROCE_ERR_OPCODE       roce_opcode(opcode)->name == NULL
 *  3. ROCE_ERR_TVER         TVer != 0
 *  4. ROCE_ERR_HDR_LEN      len < hdr_len + 4
 *  5. ROCE_ERR_ALIGN        len % 4 != 0 (IBA counts packet length in
 *                           4-byte words; PadCnt exists to keep it so)
 *  6. ROCE_ERR_PAD          PadCnt != 0 on an opcode without payload, or
 *                           PadCnt > len - hdr_len - 4
 *  7. ROCE_ERR_PAYLOAD_LEN  payload_len = len - hdr_len - PadCnt - 4 is
 *                           not 0 on an opcode without payload, is over
 *                           4096 (ROCE_MAX_PMTU), or is not 8 on
 *                           ATOMIC_WRITE (ROCE_OPF_FIXED8)
 *  8. ROCE_ERR_PKEY         P_Key bits 14..0 != 0x7FFF: not the port's one
 *                           partition (0xFFFF, full member, so a limited
 *                           member's 0x7FFF is accepted too)
 *  9. ROCE_ERR_DQPN         DestQP == 0
 *
 * Checks against the path MTU are left to roce_payload_fits_pmtu(). The
 * ICRC is read (least-significant byte first) but not verified (icrc.h).
 * @pkt->payload points at buf + hdr_len, also when payload_len is 0.
 * Header fields of headers the opcode does not carry are 0.
 *
 * Never reads outside buf[0..len). Returns ROCE_OK and fills @pkt, or the
 * reason the packet is bad (@pkt is then unspecified).
 */
enum roce_decode_err roce_decode(const uint8_t *buf, size_t len, struct roce_pkt *pkt);

/*
 * Check pkt->payload_len against the path MTU for the packet's position in
 * its message: FIRST and MIDDLE carry exactly @pmtu bytes, LAST 1..@pmtu,
 * ONLY 0..@pmtu (PROTOCOL.md §1.8); an opcode without payload carries 0.
 * The opcode is taken from pkt->bth.opcode. Returns false if @pmtu is not
 * 256, 512, 1024, 2048 or 4096, or the opcode is not defined.
 */
bool roce_payload_fits_pmtu(const struct roce_pkt *pkt, uint32_t pmtu);

/* Pad bytes that follow a payload of @len bytes: (-len) & 3 (§1.8). */
static inline uint8_t roce_pad_len(uint32_t len)
{
	return (uint8_t)(-len & 3u);
}

/*
 * Encode the headers of @pkt: the BTH (PadCnt computed from
 * pkt->payload_len; every other BTH field, TVer and the reserved bits
 * included, taken from pkt->bth and cut to its width) and the extension
 * headers its opcode carries, taken from the fields of @pkt, with their
 * reserved bits (and a CNP's 16 reserved bytes) zero. pkt->info,
 * pkt->hdrs and pkt->bth.pad are ignored; the opcode decides.
 * Returns the header length, or 0 (nothing written) if @cap is too small,
 * the opcode is not defined, or pkt->payload_len is one roce_decode()
 * would refuse (payload on an opcode without payload, over 4096, not 8 on
 * ATOMIC_WRITE). The caller places payload, pad and ICRC after it.
 */
size_t roce_encode_hdrs(uint8_t *buf, size_t cap, const struct roce_pkt *pkt);

/*
 * Encode a whole packet from @pkt as roce_encode_hdrs() does, followed by
 * pkt->payload_len bytes of pkt->payload (which may overlap @buf), zero
 * pad, and 4 zero bytes where the ICRC goes (fill it in with
 * roce_icrc_fill()). The inverse of roce_decode() up to reserved bits, pad
 * bytes and the ICRC. Returns the total length, or 0 (nothing written) for
 * the errors of roce_encode_hdrs() or if @cap is below the total length.
 */
size_t roce_encode(uint8_t *buf, size_t cap, const struct roce_pkt *pkt);

/* PSN arithmetic modulo 2^24 (PROTOCOL.md §3.1). */
static inline uint32_t roce_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}
/* > 0 if a is after b, < 0 if before, 0 if equal. */
static inline int32_t roce_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

/* Big-endian loads and stores used by all codecs. */
static inline uint16_t roce_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t roce_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t roce_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t roce_get64(const uint8_t *p)
{
	return (uint64_t)roce_get32(p) << 32 | roce_get32(p + 4);
}
static inline void roce_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void roce_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}
static inline void roce_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void roce_put64(uint8_t *p, uint64_t v)
{
	roce_put32(p, (uint32_t)(v >> 32));
	roce_put32(p + 4, (uint32_t)v);
}

#endif
