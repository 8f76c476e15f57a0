/* SPDX-License-Identifier: MIT */
#include "tools/demo/conversation.h"

#include <arpa/inet.h>
#include <assert.h>
#include <string.h>

/* Host A 192.168.1.1 (fd00::1), host B 192.168.1.2 (fd00::2). */
static const uint8_t ADDR_A[4] = {192, 168, 1, 1};
static const uint8_t ADDR_B[4] = {192, 168, 1, 2};
static const uint8_t ADDR6_A[16] = {0xfd, [15] = 1};
static const uint8_t ADDR6_B[16] = {0xfd, [15] = 2};

enum {
	QP_A = 0x000011, /* RC, IPv4 */
	QP_B = 0x000012,
	UD_QP_A = 0x000021,
	UD_QP_B = 0x000022,
	QP6_A = 0x000031, /* RC, IPv6 */
	QP6_B = 0x000032,
	/*
	 * rdma_cm flow label 0x1C8CB (ports 37000 -> 18515) folded into the
	 * UDP source port both sides use (PROTOCOL.md §1.4).
	 */
	RC_SPORT = 0xC8CC,
	/* rxe's pick for UD QP 0x21: 0xC000 + hash_32(qpn, 14) (§1.4). */
	UD_SPORT = 0xE6B6,
	TTL = 64,
};

/* ECN codepoints in the IP TOS byte (RFC 3168); the ICRC masks them (PROTOCOL.md §1.2). */
enum { ECN_ECT0 = 0x02, ECN_CE = 0x03 };
/* CNPs go out with DSCP 48, the usual RoCE NIC default for congestion notifications. */
#define CNP_TOS (48u << 2)

/* A's first PSN, two below the wrap, so the RDMA WRITE crosses 0xFFFFFF -> 0 (§3.1). */
#define START_PSN 0xFFFFFEu
#define RKEY_B    0x00004a17u
#define VA_B      0x00007f3a5c001000ull

#define US 1000ull

static const char HELLO[] = "Hello from uroce!";

static void flow_v4(struct roce_ipudp *f, const uint8_t src[4], const uint8_t dst[4],
		    uint16_t sport, uint8_t tos)
{
	/* ID 0 with DF, as uroce's sockets send (icrc.h). */
	*f = (struct roce_ipudp){.sport = sport,
				 .dport = ROCE_UDP_PORT,
				 .tos = tos,
				 .ttl = TTL,
				 .ip_frag = ROCE_IPV4_DF};
	roce_gid_from_v4(f->sgid, src);
	roce_gid_from_v4(f->dgid, dst);
}

static struct demo_frame *add(struct demo_conversation *c, const char *dir,
			      const struct roce_ipudp *ip, uint8_t opcode, uint32_t dqpn,
			      uint32_t psn, uint64_t gap_ns)
{
	struct demo_frame *fr;

	assert(c->count < DEMO_MAX_FRAMES);
	fr = &c->frames[c->count++];
	*fr = (struct demo_frame){.dir = dir, .note = "", .ip = *ip, .gap_ns = gap_ns};
	fr->pkt.bth = (struct roce_bth){
		.opcode = opcode, .pkey = ROCE_DEFAULT_PKEY, .dqpn = dqpn, .psn = psn};
	return fr;
}

static void payload(struct demo_frame *fr, const uint8_t *p, uint32_t len)
{
	fr->pkt.payload = p;
	fr->pkt.payload_len = len;
}

static struct roce_aeth ack(uint32_t msn)
{
	return (struct roce_aeth){roce_aeth_syndrome(ROCE_AETH_ACK, ROCE_AETH_CREDIT_INVALID), msn};
}

void demo_conversation_init(struct demo_conversation *c)
{
	struct roce_ipudp a_b, b_a, a_b_ce, cnp, ud, v6;
	const uint8_t *hello = (const uint8_t *)HELLO;
	uint32_t psn = START_PSN, msn = 0;
	struct demo_frame *fr;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(c->data); i++)
		c->data[i] = (uint8_t)(i * 31 + 7);

	flow_v4(&a_b, ADDR_A, ADDR_B, RC_SPORT, ECN_ECT0);
	flow_v4(&b_a, ADDR_B, ADDR_A, RC_SPORT, ECN_ECT0);
	flow_v4(&a_b_ce, ADDR_A, ADDR_B, RC_SPORT, ECN_CE);
	flow_v4(&cnp, ADDR_B, ADDR_A, RC_SPORT, CNP_TOS);
	flow_v4(&ud, ADDR_A, ADDR_B, UD_SPORT, 0);

	/* SEND with AckReq, acknowledged (MSN counts completed messages, §1.6). */
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_SEND_ONLY, QP_B, psn, 0);
	fr->pkt.bth.ack_req = true;
	payload(fr, hello, sizeof(HELLO) - 1);
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_ACK, QP_A, psn, 8 * US);
	fr->note = "ACK";
	fr->pkt.aeth = ack(++msn);
	psn = roce_psn_add(psn, 1);

	/*
	 * 2500-byte RDMA WRITE at PMTU 1024: FIRST and MIDDLE carry exactly
	 * the PMTU, LAST the rest (§1.8). A switch marks the MIDDLE packet CE,
	 * so B sends A a CNP before acknowledging.
	 */
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_WRITE_FIRST, QP_B, psn, 20 * US);
	fr->note = "2500 bytes in 3 packets";
	fr->pkt.reth = (struct roce_reth){VA_B, RKEY_B, DEMO_DATA_LEN};
	payload(fr, c->data, DEMO_PMTU);
	fr = add(c, "A->B", &a_b_ce, ROCE_TR_RC | ROCE_OP_WRITE_MIDDLE, QP_B, roce_psn_add(psn, 1),
		 1 * US);
	fr->note = "ECN CE, marked by a switch";
	payload(fr, c->data + DEMO_PMTU, DEMO_PMTU);
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_WRITE_LAST, QP_B, roce_psn_add(psn, 2),
		 1 * US);
	fr->pkt.bth.ack_req = true;
	payload(fr, c->data + 2 * DEMO_PMTU, DEMO_DATA_LEN - 2 * DEMO_PMTU);
	fr = add(c, "B->A", &cnp, ROCE_OPCODE_CNP, QP_A, 0, 4 * US);
	fr->note = "congestion notification";
	fr->pkt.bth.becn = true; /* §1.9 */
	psn = roce_psn_add(psn, 2);
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_ACK, QP_A, psn, 4 * US);
	fr->note = "ACK";
	fr->pkt.aeth = ack(++msn);
	psn = roce_psn_add(psn, 1);

	/* 1500-byte RDMA READ: one request, ceil(1500 / 1024) = 2 responses. */
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_READ_REQUEST, QP_B, psn, 30 * US);
	fr->note = "1500 bytes";
	fr->pkt.reth = (struct roce_reth){VA_B + 0x1000, RKEY_B, 1500};
	++msn; /* a READ counts when accepted (§1.6) */
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_READ_RESP_FIRST, QP_A, psn, 9 * US);
	fr->pkt.aeth = ack(msn);
	payload(fr, c->data, DEMO_PMTU);
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_READ_RESP_LAST, QP_A, roce_psn_add(psn, 1),
		 1 * US);
	fr->pkt.aeth = ack(msn);
	payload(fr, c->data + DEMO_PMTU, 1500 - DEMO_PMTU);
	psn = roce_psn_add(psn, 2);

	/* Compare-and-swap taking a lock word (0 -> 1); B returns the old value. */
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_CMP_SWAP, QP_B, psn, 25 * US);
	fr->note = "if 0 then 1";
	fr->pkt.bth.ack_req = true;
	fr->pkt.atomic = (struct roce_atomiceth){
		.va = VA_B + 0x2000, .rkey = RKEY_B, .swap_add = 1, .compare = 0};
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_ATOMIC_ACK, QP_A, psn, 7 * US);
	fr->note = "was 0";
	fr->pkt.aeth = ack(++msn);
	fr->pkt.atomic_orig = 0;
	psn = roce_psn_add(psn, 1);

	/*
	 * B has no receive WQE posted: RNR NAK with timer code 14 (1.28 ms,
	 * §3.5); A sends the same PSN again once the timer ran out.
	 */
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_SEND_ONLY, QP_B, psn, 40 * US);
	fr->note = "B has no receive WQE";
	fr->pkt.bth.ack_req = true;
	payload(fr, hello, sizeof(HELLO) - 1);
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_ACK, QP_A, psn, 8 * US);
	fr->note = "RNR NAK, retry in 1.28 ms";
	fr->pkt.aeth = (struct roce_aeth){roce_aeth_syndrome(ROCE_AETH_RNR_NAK, 14), msn};
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_SEND_ONLY, QP_B, psn, 1280 * US);
	fr->note = "retry";
	fr->pkt.bth.ack_req = true;
	payload(fr, hello, sizeof(HELLO) - 1);
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_ACK, QP_A, psn, 8 * US);
	fr->note = "ACK";
	fr->pkt.aeth = ack(++msn);
	psn = roce_psn_add(psn, 1);

	/*
	 * The next SEND is lost on the way; B sees the one after it and NAKs
	 * with a PSN sequence error carrying the PSN it expected (§3.6).
	 */
	fr = add(c, "A->B", &a_b, ROCE_TR_RC | ROCE_OP_SEND_ONLY, QP_B, roce_psn_add(psn, 1),
		 30 * US);
	fr->note = "the SEND before it was lost";
	fr->pkt.bth.ack_req = true;
	payload(fr, c->data, 64);
	fr = add(c, "B->A", &b_a, ROCE_TR_RC | ROCE_OP_ACK, QP_A, psn, 8 * US);
	fr->note = "NAK: PSN sequence error";
	fr->pkt.aeth = (struct roce_aeth){roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_PSN_SEQ), msn};

	/* UD SEND with immediate data, with rdma_cm's UD Q_Key (RDMA_UDP_QKEY). */
	fr = add(c, "A->B", &ud, ROCE_TR_UD | ROCE_OP_SEND_ONLY_IMM, UD_QP_B, 0x000001, 50 * US);
	fr->note = "UD";
	fr->pkt.deth = (struct roce_deth){.qkey = 0x01234567, .src_qpn = UD_QP_A};
	fr->pkt.imm_be = htonl(0x0badcafe);
	payload(fr, hello, sizeof(HELLO) - 1);

	/* RC SEND over IPv6, flow label 0x1C8CB as rdma_cm sets it (§1.3, §1.4). */
	v6 = (struct roce_ipudp){
		.sport = RC_SPORT, .dport = ROCE_UDP_PORT, .ttl = TTL, .flow_label = 0x1C8CB};
	memcpy(v6.sgid, ADDR6_A, sizeof(v6.sgid));
	memcpy(v6.dgid, ADDR6_B, sizeof(v6.dgid));
	fr = add(c, "A->B", &v6, ROCE_TR_RC | ROCE_OP_SEND_ONLY, QP6_B, 0x000100, 50 * US);
	fr->note = "IPv6";
	fr->pkt.bth.ack_req = true;
	payload(fr, hello, sizeof(HELLO) - 1);
}
