/* SPDX-License-Identifier: MIT */
/*
 * What the requester, responder and completer of qp.h share. Internal to transport/.
 */
#ifndef UROCE_TRANSPORT_QP_INT_H
#define UROCE_TRANSPORT_QP_INT_H

#include "transport/qp.h"

/* Delay of an ACK nobody asked for yet (coalescing bound; AckReq packets are ACKed at once). */
#define ROCE_ACK_DELAY_NS 20000u

/* RC and both halves of XRC are reliable connections: ACKs, retries, READ and atomics. */
static inline bool roce_qp_reliable(const struct roce_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}

/* The transport bits of the QP's opcodes (IBA 9.2, BTH OpCode bits 7..5). */
static inline uint8_t roce_qp_tr(const struct roce_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:
		return ROCE_TR_UC;
	case IBV_QPT_UD:
		return ROCE_TR_UD;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return ROCE_TR_XRC;
	default:
		return ROCE_TR_RC;
	}
}

/* A READ or an atomic: it takes one of the responder's RDMA READ/atomic resources. */
static inline bool roce_wqe_is_rd_atomic(const struct roce_send_wqe *wqe)
{
	return roce_wr_flags(wqe->opcode) & (ROCE_WR_READ | ROCE_WR_ATOMIC);
}

static inline bool roce_wqe_is_atomic(const struct roce_send_wqe *wqe)
{
	return roce_wr_flags(wqe->opcode) & ROCE_WR_ATOMIC;
}

/* Packets (PSNs) of a message of @len bytes: at least one (IBA 9.7.1: a 0-byte message). */
static inline uint32_t roce_npkts(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

static inline struct roce_send_wqe *roce_sq_wqe(const struct roce_qp *qp, uint32_t counter)
{
	return roce_wq_slot(qp->sq, counter);
}

/* The error completion or fatal NAK already happened: stop both sides, tell the owner. */
void roce_qp_fatal(struct roce_qp *qp);
/*
 * UC/UD: a send WQE completed in error (it already did): the send queue stops in SQE while the
 * receive side goes on (IBA 10.3.1, 11.6.2); the owner flushes the rest of the send queue.
 */
void roce_qp_sq_error(struct roce_qp *qp);

/*
 * Copy between a linear buffer and a scatter/gather list at byte @offset of the list, through
 * the owner's memory keys (local keys, so no remote access bits). @to_sgl writes into the list
 * (needs IBV_ACCESS_LOCAL_WRITE). Returns ROCE_MEM_OK, or why a key refused (an entry its
 * region does not hold is ROCE_MEM_BOUNDS); a list shorter than @offset + @len is
 * ROCE_MEM_SHORT.
 */
enum roce_mem_err roce_sgl_copy(struct roce_qp *qp, const struct ibv_sge *sge, uint32_t nsge,
				uint32_t offset, uint8_t *buf, uint32_t len, bool to_sgl);

/*
 * The host address of bytes [@offset, @offset + @len) of a scatter/gather list through the
 * owner's local keys (read access), when they lie in one entry and its key allows them; else
 * NULL (roce_sgl_copy then copies them, or says why not).
 */
const uint8_t *roce_sgl_ref(struct roce_qp *qp, const struct ibv_sge *sge, uint32_t nsge,
			    uint32_t offset, uint32_t len);

/* Requester (requester.c): the next request into @buf; @gap as roce_qp_write_pkt_gap (NULL:
 * copy the payload). */
size_t roce_req_write(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest, uint64_t now,
		      struct roce_pkt_gap *gap);
/* Go back to PSN @psn of a started WQE (go-back-N, IBA 9.7.5.1.3). */
void roce_req_rewind(struct roce_qp *qp, uint32_t psn);
/* Complete the WQE at the SQ tail with @status, freeing its READ/atomic credit. */
void roce_req_complete(struct roce_qp *qp, struct roce_send_wqe *wqe, enum ibv_wc_status status);

/* Completer (completer.c). */
void roce_comp_recv(struct roce_qp *qp, const struct roce_pkt *pkt, uint64_t now);
void roce_comp_timeout(struct roce_qp *qp, uint64_t now);
/* The requester sent an RC packet that needs an ACK: start the ACK timer if it is not running. */
void roce_comp_arm(struct roce_qp *qp, uint64_t now);

/* Responder (responder.c). */
void roce_resp_recv(struct roce_qp *qp, const struct roce_pkt *pkt, const struct roce_ipudp *ip,
		    uint64_t now);
size_t roce_resp_write(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest);
/*
 * Start @plan (wire.h: struct roce_steer) for MIDDLE packets of @opcode from PSN @psn, of a
 * message with @left bytes still to come, in a datagram of @total bytes in segments of @seg:
 * as many whole segments as it holds, but never the packet that ends the message. Returns how
 * many (0: none, also for segments that are not whole MIDDLE packets); plan->at is the
 * caller's, the memory of that many times the MTU.
 */
uint32_t roce_steer_begin(const struct roce_qp *qp, uint8_t opcode, uint32_t psn, uint16_t seg,
			  size_t total, uint32_t left, struct roce_steer *plan);
/* roce_qp_steer() of an RC or UC QP that receives: WRITE requests, READ responses. */
bool roce_resp_steer(struct roce_qp *qp, const uint8_t *bth, uint16_t seg, size_t total,
		     struct roce_steer *plan);
bool roce_comp_steer(struct roce_qp *qp, const uint8_t *bth, uint16_t seg, size_t total,
		     struct roce_steer *plan);
/* Pending responder output that goes out even in the Error state (a final NAK). */
bool roce_resp_has_output(const struct roce_qp *qp);

/*
 * Encode @pkt's headers into @buf, then @payload_len bytes already placed after them by the
 * caller, the pad and room for the ICRC. Returns the packet length.
 */
size_t roce_pkt_finish(uint8_t *buf, struct roce_pkt *pkt, size_t hdr_len);

#endif
